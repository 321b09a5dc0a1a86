/* A CPU's next chunk (chunk_refill.c): the part of the reservation slow path that takes,
 * installs and retires chunks of the capture file. */
#ifndef GT_CHUNK_REFILL_H
#define GT_CHUNK_REFILL_H

#include "capture_file.h"

/* A new chunk for cpu, nbytes reserved for the caller after the clock pair and dropped-facts
 * notice that ride along when due.  NULL with e->err 0: no chunk may open now (not
 * recording, or trimmed; final: also when stopped); NULL with e->err set: the file is full. */
uint64_t *gt_chunk_open(unsigned cpu, uint32_t nbytes, uint64_t tsc, int final,
			struct gt_file_error *e) GT_HIDDEN;
/* The file could not grow (err) at tsc: the header says so, and a notice goes into any
 * chunk with room left.  The caller stops recording. */
void gt_capture_stopped(int err, uint64_t tsc) GT_HIDDEN;
void gt_write_clock(uint64_t *r) GT_HIDDEN;  /* a clock pair into a reserved 32-byte record */
/* the next chunk of the file, grown and prefaulted (under the growth lock); NULL with e set
 * when the file cannot grow (ring.c) */
char *gt_chunk_new_locked(struct gt_file_error *e) GT_HIDDEN;

#endif
