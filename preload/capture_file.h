/* The capture file (capture_file.c): created, mapped, grown a chunk at a time, trimmed at the
 * end.  It reports failures to its caller, which decides what recording does about them. */
#ifndef GT_CAPTURE_FILE_H
#define GT_CAPTURE_FILE_H

#include "fastpath.h"

extern struct gt_file_header *gt_header GT_HIDDEN; /* NULL until mapped */
extern char gt_capture_path[GT_PATH_MAX] GT_HIDDEN; /* "" until created */
/* facts dropped (no chunk to be had), and how many of them a notice has reported */
extern _Atomic uint64_t gt_dropped GT_HIDDEN;
extern _Atomic uint64_t gt_dropped_reported GT_HIDDEN;

/* why the file could not be created or grown: a message prefix and an errno */
struct gt_file_error {
	const char *what;
	int err;
};

/* 0: created, mapped, one chunk long, header filled.  -1: e->what NULL when already
 * reported (the file could not be created), else the failure to report. */
int gt_capture_create(struct gt_file_error *e) GT_HIDDEN;
/* A new chunk for cpu, nbytes reserved for the caller after the clock pair and dropped-facts
 * notice that ride along when due.  NULL with e->err 0: no chunk may open now (not
 * recording, or trimmed; final: also when stopped); NULL with e->err set: the file is full. */
uint64_t *gt_chunk_open(unsigned cpu, uint32_t nbytes, uint64_t tsc, int final,
			struct gt_file_error *e) GT_HIDDEN;
/* The file could not grow (err) at tsc: the header says so, and a notice goes into any
 * chunk with room left.  The caller stops recording. */
void gt_capture_stopped(int err, uint64_t tsc) GT_HIDDEN;
void gt_write_clock(uint64_t *r) GT_HIDDEN;  /* a clock pair into a reserved 32-byte record */
void gt_slots_full(void) GT_HIDDEN;          /* every reservation takes the slow path */
void gt_capture_trim(void) GT_HIDDEN;        /* no chunk opens again; cut to the chunks in use */
void gt_capture_forget(void) GT_HIDDEN;      /* fork child: the parent's file is not its own */
/* Before a change of the effective uid to uid, while still privileged: the capture's length
 * reserved for growth without a descriptor, and <capture dir>/uid-<uid> (0700, the user's)
 * where the programs it runs as that user create their captures, when the capture directory
 * lets others in but not create (gotrace run's).  Returns uid. */
int64_t gt_capture_user_dir(uint32_t uid) GT_HIDDEN;

#endif
