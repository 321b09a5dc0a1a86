/* The flight recorder (ring.c): GOTRACE_LAST keeps the most recent window of CPU chunks and
 * copies what outlives it into keep chunks (capture.h, "Ring captures").  Every function but
 * gt_ring_on runs under capture_file.c's growth lock. */
#ifndef GT_RING_H
#define GT_RING_H

#include "fastpath.h"

#include "capture_file.h"
#include "chunk_refill.h"
#include "config.h"

GT_INLINE int gt_ring_on(void) { return (gt_cfg.last_bytes | gt_cfg.last_ns) != 0; }

/* the header's ring fields, at creation */
void gt_ring_setup(struct gt_file_header *h) GT_HIDDEN;
/* chunk left its CPU's slot at tsc (replaced): it may be reused once the window is past it */
void gt_ring_retired(char *chunk, uint64_t tsc) GT_HIDDEN;
/* A chunk to reuse, carried to the keep chunks and zeroed (magic 0), or NULL: the window is
 * not full yet (take a new chunk from the file). */
char *gt_ring_reuse(void) GT_HIDDEN;
void gt_ring_forget(void) GT_HIDDEN; /* fork child: the parent's ring is not its own */

#endif
