/* capture_set: the records of several captures (the processes of one run) in one timestamp
 * order, for one trace.
 *
 * A k-way merge over per-capture readers (each already merges its own CPUs).  Captures are
 * ordered by the time their recording began (index 0: the earliest) and opened only when the
 * merge reaches that time, then closed once read: open files and memory follow the
 * processes that recorded at the same time, not the whole run.  All timestamps are on capture
 * 0's clock: the TSC is one counter for the whole machine, so captures on the same clock
 * source are merged as they are; a capture on another source (CLOCK_MONOTONIC where capture 0
 * has the TSC) is translated through the two headers' clock pairs.
 *
 * The merged stream has a lookahead, as one capture's reader has: a consumer that needs the
 * future of every process (which waiter a release in another process woke) peeks into it.
 * It holds the place of each record merged ahead, never a copy: the records stay in their
 * readers' own lookaheads. */
#ifndef GOTRACE_CAPTURE_SET_H
#define GOTRACE_CAPTURE_SET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture_reader.h"

struct gt_capture_set;

/* Reads the headers of paths.  A capture whose header cannot be read is left out of the
 * merge, with its error (gt_capture_set_error).  NULL only when memory runs out. */
struct gt_capture_set *gt_capture_set_open(const char *const *paths, size_t n);
size_t gt_capture_set_count(const struct gt_capture_set *s);
/* The i-th capture in start order: its path (as given), its header (NULL when unreadable),
 * its error (NULL when readable; one line). */
const char *gt_capture_set_path(const struct gt_capture_set *s, size_t i);
const struct gt_file_header *gt_capture_set_header(const struct gt_capture_set *s, size_t i);
const char *gt_capture_set_error(const struct gt_capture_set *s, size_t i);

enum gt_set_event {
	GT_SET_RECORD,     /* *out holds the next record (out->capture: its capture) */
	GT_SET_ENDED,      /* capture *index has no more records; its stats are final */
	GT_SET_DONE,       /* every capture is read */
};
/* The next record in the merged order, or the end of one capture, or of all.  The record
 * stays valid until the next call. */
enum gt_set_event gt_capture_set_next(struct gt_capture_set *s, struct gt_capture_record *out,
				      uint32_t *index);
/* The record i places after the one gt_capture_set_next delivered last (0: the next one), of
 * whichever capture, as gt_capture_set_next will deliver it (tsc on capture 0's clock,
 * capture set), without consuming anything; valid until the gt_capture_set_next call that
 * moves past it.  false at the end of every capture or beyond the lookahead: 4095 records,
 * what each capture's reader can show (gt_capture_peek), and 64 captures opened before the
 * merge delivers from them (captures that begin within it are opened for it). */
bool gt_capture_set_peek(struct gt_capture_set *s, size_t i, struct gt_capture_record *out);
/* Records delivered so far: the place in the merged order of the one peek 0 shows. */
uint64_t gt_capture_set_delivered(const struct gt_capture_set *s);
/* Records gt_capture_set_peek has shown, however often the same one: what looking ahead
 * cost its users. */
uint64_t gt_capture_set_peeked(const struct gt_capture_set *s);
/* Reader counters and truncation of capture i: final once it ended. */
void gt_capture_set_stats(const struct gt_capture_set *s, size_t i, struct gt_capture_stats *out,
			  bool *truncated);
/* Record bytes consumed and in all, over every capture (for a progress display). */
void gt_capture_set_progress(const struct gt_capture_set *s, uint64_t *done, uint64_t *total);
void gt_capture_set_close(struct gt_capture_set *s);

#endif
