/* waitfor: the wait-for graph at a cut, from the tracker (see encoder.h). */
#include "encoder.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

const struct gt_tracked_thread *gt_tracker_waits_for(const struct gt_tracker *tr,
						     const struct gt_tracked_thread *t,
						     const struct gt_tracked_object **object,
						     uint32_t *holder_tid)
{
	const struct gt_tracked_wait *w = &t->wait;
	*object = NULL;
	*holder_tid = 0;
	if (w->open && !w->syscall && w->kind == GT_BK_JOIN) {
		const struct gt_tracked_thread *joined = gt_tracker_thread(tr, t->capture,
									   (uint32_t)w->obj);
		if (!joined || joined->life == GT_LIFE_ENDED || joined == t)
			return NULL;
		*holder_tid = joined->tid;
		return joined;
	}
	if (!w->open || w->syscall || !gt_lock_kind(w->kind))
		return NULL;
	const struct gt_tracked_object *o = gt_tracker_object(tr, t->capture, w->obj);
	*object = o;
	if (!o)
		return NULL;
	*holder_tid = o->holder_tid;
	/* its own lock back from a wait that named it (a recursive or error-checking mutex
	 * does not block on itself): nobody to wait for */
	if (!o->holder || o->holder == t->serial)
		return NULL;
	return gt_tracker_thread(tr, t->capture, o->holder);
}

size_t gt_tracker_deadlock(const struct gt_tracker *tr, const struct gt_tracked_thread *t,
			   const struct gt_tracked_thread **out, bool *lead)
{
	const struct gt_tracked_object *o;
	uint32_t tid;
	size_t n = 0;
	*lead = false;
	for (const struct gt_tracked_thread *at = t; at && n < GT_CYCLE_MAX;
	     at = gt_tracker_waits_for(tr, at, &o, &tid)) {
		if (n && at == t) {
			*lead = true;
			for (size_t i = 1; i < n; i++)
				if (out[i]->order < t->order)
					*lead = false;
			return n;
		}
		for (size_t i = 1; i < n; i++)
			if (out[i] == at)
				return 0;   /* a cycle further on, which t waits for: not t's */
		out[n++] = at;
	}
	return 0;
}

/* "name (thread N)", or "thread N" when it has no name of its own. */
static void thread_text(const struct gt_tracker *tr, const struct gt_tracked_thread *t, char *buf,
			size_t size)
{
	const char *own = gt_tracker_own_name(tr, t->capture, t->name);
	if (own)
		snprintf(buf, size, "%s (thread %u)", own, t->serial);
	else
		snprintf(buf, size, "thread %u", t->serial);
}

size_t gt_tracker_deadlock_text(const struct gt_tracker *tr, uint32_t capture, char *buf,
				size_t size,
				const char *(*name)(void *ctx, uint8_t kind, uint64_t obj),
				void *ctx)
{
	size_t found = 0, len = strlen(buf);
	size_t pos = 0;
	for (const struct gt_tracked_thread *t; (t = gt_tracker_next(tr, &pos));) {
		const struct gt_tracked_thread *cycle[GT_CYCLE_MAX];
		bool lead;
		size_t n = t->capture == capture && !t->end_seen ? gt_tracker_deadlock(tr, t, cycle, &lead)
								 : 0;
		if (!n || !lead)
			continue;
		found++;
		if (len + 1 >= size)
			continue;   /* counted, no room to say it */
		bool joins = false;
		for (size_t i = 0; i < n; i++)
			joins |= cycle[i]->wait.kind == GT_BK_JOIN;
		int k = snprintf(buf + len, size - len, "%s%zu threads, each waiting for %s",
				 len ? "\n" : "", n, joins ? "the next one" : "a lock the next one holds");
		len += k > 0 ? (size_t)k : 0;
		for (size_t i = 0; i < n && len < size; i++) {
			char who[48], holder[48];
			thread_text(tr, cycle[i], who, sizeof who);
			thread_text(tr, cycle[(i + 1) % n], holder, sizeof holder);
			const struct gt_tracked_wait *w = &cycle[i]->wait;
			char address[24];
			const char *object = name ? name(ctx, w->kind, w->obj) : NULL;
			snprintf(address, sizeof address, "%#" PRIx64, w->obj);
			if (w->kind == GT_BK_JOIN)
				k = snprintf(buf + len, size - len, "\n  %s waits for %s to end", who,
					     holder);
			else
				k = snprintf(buf + len, size - len, "\n  %s waits for %s %s held by %s",
					     who, w->kind == GT_BK_MUTEX ? "mutex" : "rwlock",
					     object ? object : address, holder);
			len += k > 0 ? (size_t)k : 0;
		}
	}
	if (len >= size && size > 4)
		memcpy(buf + size - 4, "...", 4);
	return found;
}

/* One fact of a live thread, as a capture would have it (at tsc 1, on CPU 0). */
static bool live_fact(struct gt_tracker *tr, uint8_t type, uint8_t aux, uint32_t serial,
		      const void *payload, size_t len)
{
	struct {
		struct gt_rec rec;
		uint64_t words[4];
	} f = {.rec = {.type = type, .aux = aux, .nwords = (uint16_t)(2 + (len + 7) / 8),
		       .thread = serial, .tsc = 1}};
	memcpy(f.words, payload, len);
	struct gt_capture_record r = {.rec = &f.rec, .payload = f.words, .payload_len = len,
				      .tsc = 1};
	return gt_tracker_fact(tr, &r, NULL);
}

struct gt_tracker *gt_tracker_of_live_waits(const struct gt_live_wait *w, size_t n)
{
	struct gt_tracker *tr = gt_tracker_new();
	bool ok = tr != NULL;
	/* every thread first, so that a wait names its holder by a tid already met */
	for (size_t i = 0; i < n && ok; i++) {
		struct gt_p_thread_start start = {.tid = w[i].tid};
		ok = live_fact(tr, GT_THREAD_EXISTING, w[i].kind != 0, (uint32_t)i + 1, &start,
			       sizeof start);
	}
	for (size_t i = 0; i < n && ok; i++) {
		if (!w[i].kind)
			continue;
		struct gt_p_block b = {.obj = w[i].obj};
		if (w[i].kind == GT_BK_JOIN) {
			const struct gt_tracked_thread *joined =
				gt_tracker_thread_by_tid(tr, 0, w[i].holder_tid);
			b.obj = joined ? joined->serial : 0;
		} else if (gt_lock_kind(w[i].kind)) {
			b.flags = gt_block_holder_tid((int)w[i].holder_tid);
		}
		ok = live_fact(tr, GT_BLOCK_BEGIN, w[i].kind, (uint32_t)i + 1, &b, sizeof b);
	}
	if (!ok) {
		gt_tracker_free(tr);
		return NULL;
	}
	return tr;
}
