/* window: see window.h. */
#include "window.h"

#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/u64map.h"

/* A BLOCK_BEGIN or SYSCALL_BEGIN (with its kernel-object tail) fits; longer ones are not
 * written by the recorder. */
#define PENDING_WORDS 8

struct wthread {
	uint32_t capture, serial;
	uint32_t cpu;               /* of its latest fact: where it shows up at the start */
	bool alive;
	bool blocked_at_start;      /* THREAD_EXISTING said so, and nothing since */
	uint64_t start_routine;
	uint16_t pending_words;     /* the wait or syscall it is in, 0 = none */
	uint64_t pending[PENDING_WORDS];
	size_t pending_payload_len;
};

struct gt_window {
	uint64_t from_tsc, to_tsc;
	bool started;
	struct gt_u64map index;     /* capture << 32 | serial -> position + 1 in threads */
	struct wthread *threads;
	size_t n, cap;
};

struct gt_window *gt_window_new(uint64_t from_tsc, uint64_t to_tsc)
{
	struct gt_window *w = calloc(1, sizeof *w);
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
	gt_u64map_free(&w->index);
	free(w->threads);
	free(w);
}

bool gt_window_started(const struct gt_window *w)
{
	return w->started;
}

/* The thread of (capture, serial), made when new; NULL when memory runs out. */
static struct wthread *thread_of(struct gt_window *w, uint32_t capture, uint32_t serial)
{
	bool found;
	uint64_t *slot = gt_u64map_slot(&w->index, (uint64_t)capture << 32 | serial, &found);
	if (!slot)
		return NULL;
	if (found)
		return &w->threads[*slot - 1];
	if (!gt_grow(&w->threads, &w->cap, w->n + 1, sizeof *w->threads))
		return NULL;
	*slot = w->n + 1;   /* the slot stays valid: no insertion since */
	struct wthread *t = &w->threads[w->n++];
	*t = (struct wthread){.capture = capture, .serial = serial};
	return t;
}

/* What a record before the window tells of its thread's state at the window's start. */
static void track(struct gt_window *w, const struct gt_capture_record *r)
{
	const struct gt_rec *rec = r->rec;
	if (!rec->thread)
		return;
	struct wthread *t = thread_of(w, r->capture, rec->thread);
	if (!t)
		return;
	t->cpu = r->cpu;
	t->alive = true;
	t->blocked_at_start = false;
	t->pending_words = 0;
	switch (rec->type) {
	case GT_THREAD_EXISTING:
	case GT_THREAD_START: {
		const struct gt_p_thread_start *s = r->payload;
		if (s->start_routine)
			t->start_routine = s->start_routine;
		t->blocked_at_start = rec->type == GT_THREAD_EXISTING && (rec->aux & 1);
		break;
	}
	case GT_THREAD_NEW: {
		const struct gt_p_thread_new *n = r->payload;
		uint32_t cpu = t->cpu;
		struct wthread *c = n->child ? thread_of(w, r->capture, n->child) : NULL;
		if (c && !c->alive) {
			c->alive = true;
			c->cpu = cpu;
			c->start_routine = n->start_routine;
		}
		break;
	}
	case GT_THREAD_END:
		t->alive = false;
		break;
	case GT_BLOCK_BEGIN:
	case GT_SYSCALL_BEGIN:
		if (rec->nwords <= PENDING_WORDS) {
			memcpy(t->pending, rec, (size_t)rec->nwords * 8);
			t->pending_words = rec->nwords;
			t->pending_payload_len = r->payload_len;
		}
		break;
	default:
		break;
	}
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
		const uint64_t *pos = gt_u64map_find(&w->index, (uint64_t)r->capture << 32 |
								r->rec->thread);
		return pos && w->threads[*pos - 1].alive;
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
	for (size_t i = 0; i < w->n; i++) {
		struct wthread *t = &w->threads[i];
		if (!t->alive)
			continue;
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
	for (size_t i = 0; i < w->n; i++) {
		struct wthread *t = &w->threads[i];
		if (!t->alive || !t->pending_words)
			continue;
		const struct gt_rec *rec = (const struct gt_rec *)t->pending;
		struct gt_capture_record r = {rec, rec + 1, t->pending_payload_len, t->cpu, at,
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
	if (r->rec->type == GT_CAPTURE_END)
		gt_window_capture_end(w, r->capture);
	else
		track(w, r);
	return true;
}

void gt_window_capture_end(struct gt_window *w, uint32_t capture)
{
	if (w->started)
		return;
	for (size_t i = 0; i < w->n; i++)
		if (w->threads[i].capture == capture)
			w->threads[i].alive = false;
}
