/* window: see window.h. */
#include "window.h"

#include <stdlib.h>

#include "encoder.h"

struct gt_window {
	uint64_t from_tsc, to_tsc;
	bool started;
	struct gt_tracker *tracker;  /* the threads' state up to the window's start */
	size_t held_peak;            /* the most threads it held at once */
};

struct gt_window *gt_window_new(uint64_t from_tsc, uint64_t to_tsc)
{
	struct gt_window *w = calloc(1, sizeof *w);
	if (w && !(w->tracker = gt_tracker_new())) {
		free(w);
		return NULL;
	}
	if (w) {
		w->from_tsc = from_tsc;
		w->to_tsc = to_tsc;
	}
	return w;
}

void gt_window_free(struct gt_window *w)
{
	if (!w)
		return;
	gt_tracker_free(w->tracker);
	free(w);
}

bool gt_window_started(const struct gt_window *w)
{
	return w->started;
}

/* The records given to the model before the window: what later records refer to. */
static bool defines(const struct gt_window *w, const struct gt_capture_record *r)
{
	switch (r->rec->type) {
	case GT_STACK: case GT_MODULE: case GT_MODULE_UNLOAD: case GT_CLOCK: case GT_NOTICE:
	case GT_PROCESS_NAME:
		return true;
	case GT_THREAD_NAME: {
		/* of a thread alive now (one ended before the window is not in the trace) */
		const struct gt_tracked_thread *t =
			gt_tracker_thread(w->tracker, r->capture, r->rec->thread);
		return t && gt_tracked_live(t);
	}
	default:
		return false;
	}
}

/* The threads alive at the window's start, to the model: existing threads first (the
 * prologue), then the waits and syscalls they are in. */
static void start_window(struct gt_window *w, struct gt_model *m)
{
	uint64_t at = w->from_tsc - 1;   /* before every record of the window: a wake at the
					  * start is after the wait it ends */
	size_t pos = 0;
	for (const struct gt_tracked_thread *t; (t = gt_tracker_next_live(w->tracker, &pos));) {
		struct {
			struct gt_rec rec;
			struct gt_p_thread_start s;
		} ex = {
			.rec = {.type = GT_THREAD_EXISTING,
				.aux = t->blocked_at_start,
				.nwords = sizeof ex / 8,
				.thread = t->serial,
				.tsc = at},
			.s = {.start_routine = t->start_routine},
		};
		struct gt_capture_record r = {&ex.rec, &ex.s, sizeof ex.s, t->cpu, at, t->capture};
		gt_model_fact(m, &r);
	}
	pos = 0;
	for (const struct gt_tracked_thread *t; (t = gt_tracker_next_live(w->tracker, &pos));) {
		if (!t->raw_words)
			continue;
		const struct gt_rec *rec = (const struct gt_rec *)t->raw;
		struct gt_capture_record r = {rec, rec + 1, t->raw_payload_len, t->cpu, at,
					      t->capture};
		gt_model_fact(m, &r);
	}
}

bool gt_window_fact(struct gt_window *w, struct gt_model *m, const struct gt_capture_record *r)
{
	if (r->tsc > w->to_tsc)
		return false;
	if (!w->started && r->tsc >= w->from_tsc) {
		w->started = true;
		start_window(w, m);
	}
	if (w->started) {
		gt_model_fact(m, r);
		return true;
	}
	if (defines(w, r))
		gt_model_fact(m, r);
	gt_tracker_fact(w->tracker, r, NULL);
	/* a thread that ended is neither in the window nor given at its start: forgotten here
	 * and by the model (which met its name), as the model retires the dead, so that memory
	 * follows the live threads (a fact of it after its end, which the model skips, does
	 * not make it live again) */
	if (r->rec->type == GT_THREAD_END) {
		gt_tracker_retire(w->tracker, r->capture, r->rec->thread);
		gt_model_ended_before_window(m, r->capture, r->rec->thread);
	}
	size_t held = gt_tracker_count(w->tracker);
	if (held > w->held_peak)
		w->held_peak = held;
	return true;
}

size_t gt_window_threads_held(const struct gt_window *w)
{
	return w->held_peak;
}

void gt_window_capture_end(struct gt_window *w, uint32_t capture)
{
	if (!w->started)
		gt_tracker_capture_end(w->tracker, capture);
}
