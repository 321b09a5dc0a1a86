/* window: a time window of the captures (gotrace convert --from/--to) as the model sees it.
 * The records before the window only change what the window starts from: stacks, modules,
 * clock pairs, names and notices go through as they are; the threads alive at its start are
 * given to the model there as existing threads (THREAD_EXISTING, in the prologue), each
 * followed by the wait or syscall it was in (its BLOCK_BEGIN or SYSCALL_BEGIN, stamped at
 * the start), so that a thread blocked across the start shows blocked there, with its
 * stack, and the wake that ends it inside the window is matched.  Records after the window
 * are not given. */
#ifndef GOTRACE_WINDOW_H
#define GOTRACE_WINDOW_H

#include <stdbool.h>
#include <stdint.h>

#include "capture_reader.h"
#include "model.h"

struct gt_window;

/* [from_tsc, to_tsc] in the records' timestamps (the first capture's clock); from_tsc > 0. */
struct gt_window *gt_window_new(uint64_t from_tsc, uint64_t to_tsc);
/* Record r of the merged stream: given to m as the window needs.  false once r is past the
 * window's end (nothing more is needed). */
bool gt_window_fact(struct gt_window *w, struct gt_model *m, const struct gt_capture_record *r);
/* Capture (its process image) has no more records: its threads are gone. */
void gt_window_capture_end(struct gt_window *w, uint32_t capture);
/* The most threads it held at once before the window's start (the live ones). */
size_t gt_window_threads_held(const struct gt_window *w);
/* Whether a record of the window was reached (else the captures end before it). */
bool gt_window_started(const struct gt_window *w);
void gt_window_free(struct gt_window *w);

#endif
