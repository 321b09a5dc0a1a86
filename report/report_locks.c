/* report_locks: who held each contended lock while others waited for it, and at the end of
 * the capture the wait-for graph (who waits for whom) and its cycles, the deadlocks
 * (report_internal.h).  The holders are the tracker's: the lock's owner, read by the hook of
 * the wait that blocked (capture.h GT_BLOCK_HOLDER_TID). */
#include "report_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"

/* ---- holders per lock ---------------------------------------------------------------- */

void gtr_holder_add(struct report *r, struct wait_site *s, const struct gt_tracked_wait *w,
		    uint64_t ns)
{
	if (!gt_lock_kind(w->kind) || (!w->holder && !w->holder_tid))
		return;
	struct holder_stat *h = NULL;
	for (size_t i = 0; i < s->n_holders && !h; i++)
		if (s->holders[i].serial == w->holder && s->holders[i].tid == w->holder_tid)
			h = &s->holders[i];
	if (!h) {
		s->holders = gtr_grow(s->holders, &s->cap_holders, s->n_holders + 1, sizeof *s->holders);
		h = &s->holders[s->n_holders++];
		*h = (struct holder_stat){.serial = w->holder, .tid = w->holder_tid};
	}
	h->count++;
	h->total_ns += ns;
	/* the release that let this wait in: the lock's last WAKE, when its holder's */
	const struct gt_tracked_object *o = gt_tracker_object(r->tracker, 0, w->obj);
	if (o && w->holder && o->released_by == w->holder && o->released_tsc >= w->since_tsc)
		gtr_stack_stat_add(&h->releases, &h->n_releases, &h->cap_releases,
				   o->released_stack, 0);
}

void gtr_holders_fit(struct report *r, struct wait_site *s)
{
	for (size_t i = 0; i < s->n_holders; i++)
		s->holders[i].total_ns = gt_clock_fitted_ns(&r->clock, s->holders[i].total_ns);
}

static int holder_by_total_desc(const void *a, const void *b)
{
	const struct holder_stat *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

static int release_by_count_desc(const void *a, const void *b)
{
	const struct stack_stat *x = a, *y = b;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

void gtr_holders_sort(struct wait_site *s)
{
	if (s->n_holders > 1)
		qsort(s->holders, s->n_holders, sizeof *s->holders, holder_by_total_desc);
	for (size_t i = 0; i < s->n_holders; i++)
		if (s->holders[i].n_releases > 1)
			qsort(s->holders[i].releases, s->holders[i].n_releases,
			      sizeof *s->holders[i].releases, release_by_count_desc);
}

void gtr_holders_free(struct wait_site *s)
{
	for (size_t i = 0; i < s->n_holders; i++)
		free(s->holders[i].releases);
	free(s->holders);
}

/* "name (thread N)", "thread N", or "tid T (not traced)" for a holder never met. */
static void thread_text(struct report *r, uint32_t serial, uint32_t tid, char *buf, size_t size)
{
	const struct gt_tracked_thread *t = serial ? gt_tracker_thread(r->tracker, 0, serial) : NULL;
	if (t && r->live_now_mono_ns)   /* a live process's: its tids are the ones seen now */
		snprintf(buf, size, "%s (thread %u, tid %u)", t->name[0] ? t->name : "-", serial,
			 t->tid);
	else if (t && t->name[0])
		snprintf(buf, size, "%s (thread %u)", t->name, serial);
	else if (serial)
		snprintf(buf, size, "thread %u", serial);
	else
		snprintf(buf, size, "tid %u (no fact of it recorded)", tid);
}

void gtr_holders_text(FILE *out, struct report *r, const struct wait_site *s, unsigned top)
{
	char who[64];
	for (size_t i = 0; i < s->n_holders && i < top; i++) {
		const struct holder_stat *h = &s->holders[i];
		thread_text(r, h->serial, h->tid, who, sizeof who);
		fprintf(out, "      held by %s during %" PRIu64 " %s, %.3f ms waited", who, h->count,
			h->count == 1 ? "wait" : "waits", (double)h->total_ns / 1e6);
		uint32_t taken = h->serial ? gtr_holds_taken_at(r, s->key, h->serial) : 0;
		if (taken) {   /* --locks=all */
			fputs("; took it at:\n", out);
			gtr_text_stack(out, r, taken, "        ");
		}
		if (!h->n_releases) {
			fputs(taken ? "" : "\n", out);
			continue;
		}
		fprintf(out, "%sreleased to %" PRIu64 " of them at:\n", taken ? "      " : "; ",
			h->releases[0].count);
		gtr_text_stack(out, r, h->releases[0].stack, "        ");
	}
	if (s->n_holders > top)
		fprintf(out, "      ... and %zu more holders\n", s->n_holders - top);
}

/* stack's frames, or null when none was recorded (0). */
static void json_stack_or_null(FILE *out, struct report *r, uint32_t stack)
{
	if (stack)
		gtr_json_stack(out, r, stack);
	else
		fputs("null", out);
}

static void json_thread(FILE *out, struct report *r, uint32_t serial, uint32_t tid)
{
	const struct gt_tracked_thread *t = serial ? gt_tracker_thread(r->tracker, 0, serial) : NULL;
	fprintf(out, "\"serial\":%u,\"tid\":%u,\"name\":", serial, t ? t->tid : tid);
	gt_report_json_string(out, t ? t->name : "");
}

void gtr_holders_json(FILE *out, struct report *r, const struct wait_site *s, unsigned top)
{
	fputs(",\"holders\":[", out);
	for (size_t i = 0; i < s->n_holders && i < top; i++) {
		const struct holder_stat *h = &s->holders[i];
		fputs(i ? ",{" : "{", out);
		json_thread(out, r, h->serial, h->tid);
		fprintf(out, ",\"waits\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"releases\":[",
			h->count, h->total_ns);
		for (size_t k = 0; k < h->n_releases && k < top; k++) {
			fprintf(out, "%s{\"count\":%" PRIu64 ",\"frames\":", k ? "," : "",
				h->releases[k].count);
			gtr_json_stack(out, r, h->releases[k].stack);
			fputc('}', out);
		}
		uint32_t taken = h->serial ? gtr_holds_taken_at(r, s->key, h->serial) : 0;
		fputs("],\"taken_at\":", out);
		json_stack_or_null(out, r, taken);
		fputc('}', out);
	}
	fputc(']', out);
}

/* ---- the wait-for graph at the end --------------------------------------------------- */

static const struct thread_row *row_of_serial(const struct report *r, uint32_t serial)
{
	size_t lo = 0, hi = r->n_threads;   /* rows by serial (rows_by_serial) */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		uint32_t at = r->threads[mid].t->serial;
		if (at == serial)
			return &r->threads[mid];
		if (at < serial)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

/* What thread t does at the end, in a few words. */
static void state_text(struct report *r, const struct gt_tracked_thread *t, char *buf,
		       size_t size)
{
	const struct thread_row *row = row_of_serial(r, t->serial);
	const struct gt_tracked_wait *w = &t->wait;
	char name[32], object[GT_REPORT_NAME_MAX];
	if (t->end_seen)
		snprintf(buf, size, "ended");
	else if (!w->open)
		snprintf(buf, size, "running");
	else if (w->syscall)
		snprintf(buf, size, "in %s since %.3f ms", gt_report_syscall_name(w->nr, name, sizeof name),
			 row ? (double)row->wait_since_ns / 1e6 : 0.0);
	else
		snprintf(buf, size, "blocked in %s %s since %.3f ms",
			 gt_report_block_kind_name(w->kind),
			 gtr_object_name(r, w->obj, object, sizeof object),
			 row ? (double)row->wait_since_ns / 1e6 : 0.0);
}

/* Threads blocked on a lock at the end (in serial order). */
static bool lock_waiter(const struct thread_row *t)
{
	return gtr_waiting_at_end(t) && !t->t->wait.syscall && gt_lock_kind(t->t->wait.kind);
}

/* The threads of the deadlock thread i is the first of (each cycle is reported once, from
 * its first thread met) into cycle: their number, 0 when it leads none. */
static size_t deadlock_led_by(const struct report *r, size_t i,
			      const struct gt_tracked_thread **cycle)
{
	bool lead = false;
	const struct thread_row *t = &r->threads[i];
	bool joins = gtr_waiting_at_end(t) && !t->t->wait.syscall && t->t->wait.kind == GT_BK_JOIN;
	size_t n = lock_waiter(t) || joins ? gt_tracker_deadlock(r->tracker, t->t, cycle, &lead) : 0;
	return lead ? n : 0;
}

static void text_deadlocks(FILE *out, struct report *r)
{
	size_t found = 0;
	for (size_t i = 0; i < r->n_threads; i++) {
		const struct gt_tracked_thread *cycle[GT_CYCLE_MAX];
		size_t n = deadlock_led_by(r, i, cycle);
		if (!n)
			continue;
		bool joins = false;
		for (size_t k = 0; k < n; k++)
			joins |= cycle[k]->wait.kind == GT_BK_JOIN;
		fprintf(out, "\nDeadlock %zu: %zu threads, each waiting for %s\n", ++found, n,
			joins ? "the next one" : "a lock the next one holds");
		for (size_t k = 0; k < n; k++) {
			const struct gt_tracked_thread *t = cycle[k], *next = cycle[(k + 1) % n];
			const struct gt_tracked_object *o;
			uint32_t tid;
			gt_tracker_waits_for(r->tracker, t, &o, &tid);
			char who[64], holder[64];
			thread_text(r, t->serial, t->tid, who, sizeof who);
			thread_text(r, next->serial, next->tid, holder, sizeof holder);
			if (t->wait.kind == GT_BK_JOIN) {   /* the graph follows joins too */
				fprintf(out, "  %s waits for %s to end, at:\n", who, holder);
				gtr_text_stack(out, r, t->wait.stack, "      ");
				continue;
			}
			char object[GT_REPORT_NAME_MAX];
			fprintf(out, "  %s waits for %s %s, held by %s, at:\n", who,
				gt_report_block_kind_name(t->wait.kind),
				gtr_object_name(r, t->wait.obj, object, sizeof object), holder);
			gtr_text_stack(out, r, t->wait.stack, "      ");
			uint32_t taken = gtr_held_stack(next, t->wait.obj, o);
			if (taken) {
				fprintf(out, "    which %s took at:\n", holder);
				gtr_text_stack(out, r, taken, "      ");
			} else {
				fprintf(out, "    where %s took it: not recorded (taken without "
					"waiting)\n", holder);
			}
		}
	}
}

void gtr_wait_for_text(FILE *out, struct report *r)
{
	bool header = false;
	for (size_t i = 0; i < r->n_threads; i++) {
		const struct thread_row *row = &r->threads[i];
		if (!lock_waiter(row))
			continue;
		if (!header)
			fprintf(out, "\nWait-for graph when the capture ends (threads blocked on a lock)\n");
		header = true;
		const struct gt_tracked_object *o;
		uint32_t tid;
		const struct gt_tracked_thread *h = gt_tracker_waits_for(r->tracker, row->t, &o, &tid);
		char who[64], holder[64], state[GT_REPORT_NAME_MAX + 96];
		thread_text(r, row->t->serial, row->t->tid, who, sizeof who);
		char object[GT_REPORT_NAME_MAX];
		fprintf(out, "  %s waits for %s %s, ", who, gt_report_block_kind_name(row->t->wait.kind),
			gtr_object_name(r, row->t->wait.obj, object, sizeof object));
		if (h) {
			thread_text(r, h->serial, h->tid, holder, sizeof holder);
			state_text(r, h, state, sizeof state);
			fprintf(out, "held by %s: %s", holder, state);
			struct gt_frame frames[REPORT_MAX_FRAMES];
			if (gtr_frames_of(r, gtr_held_stack(h, row->t->wait.obj, o), frames) > 0) {
				char site[1024];
				gtr_frame_text(&frames[0], site, sizeof site);
				fprintf(out, "; took it at %s", site);
			}
			fputc('\n', out);
		} else if (tid) {
			fprintf(out, "held by tid %u, of which no fact was recorded\n", tid);
		} else {
			fprintf(out, "holder not known\n");
		}
	}
	text_deadlocks(out, r);
}

static void json_deadlock(FILE *out, struct report *r, const struct gt_tracked_thread **cycle,
			  size_t n)
{
	fputs("{\"threads\":[", out);
	for (size_t k = 0; k < n; k++) {
		const struct gt_tracked_thread *t = cycle[k], *next = cycle[(k + 1) % n];
		const struct gt_tracked_object *o;
		uint32_t tid;
		gt_tracker_waits_for(r->tracker, t, &o, &tid);
		fputs(k ? ",{" : "{", out);
		json_thread(out, r, t->serial, t->tid);
		char object[GT_REPORT_NAME_MAX];
		fprintf(out, ",\"waits_for\":{\"kind\":\"%s\",\"object\":\"%#" PRIx64 "\","
			"\"object_name\":", gt_report_block_kind_name(t->wait.kind), t->wait.obj);
		gt_report_json_string(out, gtr_object_name(r, t->wait.obj, object, sizeof object));
		fprintf(out, "},\"held_by\":%u,\"frames\":", next->serial);
		gtr_json_stack(out, r, t->wait.stack);
		fputs(",\"held_taken_at\":", out);
		json_stack_or_null(out, r, gtr_held_stack(next, t->wait.obj, o));
		fputc('}', out);
	}
	fputs("]}", out);
}

void gtr_wait_for_json(FILE *out, struct report *r)
{
	fputs(",\"wait_for\":[", out);
	bool first = true;
	for (size_t i = 0; i < r->n_threads; i++) {
		const struct thread_row *row = &r->threads[i];
		if (!lock_waiter(row))
			continue;
		const struct gt_tracked_object *o;
		uint32_t tid;
		const struct gt_tracked_thread *h = gt_tracker_waits_for(r->tracker, row->t, &o, &tid);
		fputs(first ? "{\"waiter\":{" : ",{\"waiter\":{", out);
		first = false;
		json_thread(out, r, row->t->serial, row->t->tid);
		char object[GT_REPORT_NAME_MAX];
		fprintf(out, "},\"kind\":\"%s\",\"object\":\"%#" PRIx64 "\",\"object_name\":",
			gt_report_block_kind_name(row->t->wait.kind), row->t->wait.obj);
		gt_report_json_string(out, gtr_object_name(r, row->t->wait.obj, object, sizeof object));
		fputs(",\"holder\":", out);
		if (h || tid) {
			char state[GT_REPORT_NAME_MAX + 96] = "";
			if (h)
				state_text(r, h, state, sizeof state);
			fputc('{', out);
			json_thread(out, r, h ? h->serial : 0, tid);
			fputs(",\"state\":", out);
			gt_report_json_string(out, h ? state : "not traced");
			fputs(",\"taken_at\":", out);
			json_stack_or_null(out, r, h ? gtr_held_stack(h, row->t->wait.obj, o) : 0);
			fputc('}', out);
		} else {
			fputs("null", out);
		}
		fputc('}', out);
	}
	fputs("],\"deadlocks\":[", out);
	first = true;
	for (size_t i = 0; i < r->n_threads; i++) {
		const struct gt_tracked_thread *cycle[GT_CYCLE_MAX];
		size_t n = deadlock_led_by(r, i, cycle);
		if (!n)
			continue;
		if (!first)
			fputc(',', out);
		first = false;
		json_deadlock(out, r, cycle, n);
	}
	fputc(']', out);
}
