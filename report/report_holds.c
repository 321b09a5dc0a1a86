/* report_holds: how long each lock is held, from the lock records of `gotrace run
 * --locks=all` (report_internal.h), mutrace's table with stacks.  Per lock: its
 * acquisitions (every one, a recursive mutex's inner ones included) and the share that
 * waited first; its holds, each from the outermost acquisition to the release that ends it
 * as the tracker pairs them, by total, mean and max, by the stack that took the lock and by
 * the thread that held it; what could not be paired: releases of a lock not known held, and
 * holds still open when the capture ends (listed with their holder).  In a flight
 * recorder's capture the facts before its window come first, as a summary stamped at the
 * window's start: they are not counted, and a hold that began before the window is counted
 * but not timed (its start is not known).  And where a holder
 * took a lock others began to wait for, for the holders of the contended objects. */
#include "report_internal.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "names.h"

/* Where one holder took a lock, counted at each wait on it that began while it held it. */
struct taken_by {
	uint32_t serial;
	struct stack_stat *stacks;
	size_t n, cap;
};

struct lock_holds {
	/* key: the lock, kind: mutex or rwlock (GT_BK_RWLOCK_WR for either mode); count,
	 * total_ns, max_ns: the holds ended; stacks: by the stack that took it; holders: by
	 * thread (count: holds, total_ns: held) */
	struct wait_site hold;
	uint64_t acquisitions, waited, tries, conds, ownerdead, reads;
	uint64_t nested;        /* acquisitions inside a hold of the same thread (recursive) */
	uint64_t unmatched;     /* releases the tracker found no acquisition for */
	uint64_t before_window; /* holds ended in the window that began before it: not timed */
	uint64_t open_at_end;   /* holds not ended when the capture ends */
	struct taken_by *taken;
	size_t n_taken, cap_taken;
};

struct gtr_holds {
	struct lock_holds *v;
	size_t n, cap;
	struct gt_u64map by_obj; /* lock -> index + 1 in v (the newest of its address) */
	size_t *order;           /* indexes into v by total hold (gtr_holds_finish) */
	uint64_t unmatched;
};

static uint8_t lock_kind_of(uint8_t kind)
{
	return kind == GT_BK_RWLOCK_RD ? GT_BK_RWLOCK_WR : kind;
}

/* Lock obj's entry; a lock of another kind at the same address (its memory reused) is a
 * new one. */
static struct lock_holds *lock_of(struct gtr_holds *h, uint64_t obj, uint8_t kind)
{
	bool found;
	uint64_t *index = gt_report_must(gt_u64map_slot(&h->by_obj, obj, &found));
	kind = lock_kind_of(kind);
	if (found && h->v[*index - 1].hold.kind == kind)
		return &h->v[*index - 1];
	h->v = gtr_grow(h->v, &h->cap, h->n + 1, sizeof *h->v);
	h->v[h->n] = (struct lock_holds){ .hold = { .key = obj, .kind = kind } };
	*index = ++h->n;
	return &h->v[h->n - 1];
}

static struct lock_holds *lock_found(const struct gtr_holds *h, uint64_t obj)
{
	const uint64_t *index = h ? gt_u64map_find(&h->by_obj, obj) : NULL;
	return index ? &h->v[*index - 1] : NULL;
}

static struct holder_stat *holder_of(struct wait_site *s, const struct gt_tracked_thread *t)
{
	for (size_t i = 0; i < s->n_holders; i++)
		if (s->holders[i].serial == t->serial)
			return &s->holders[i];
	s->holders = gtr_grow(s->holders, &s->cap_holders, s->n_holders + 1, sizeof *s->holders);
	s->holders[s->n_holders] = (struct holder_stat){ .serial = t->serial, .tid = t->tid };
	return &s->holders[s->n_holders++];
}

static void count_acquisition(struct lock_holds *l, uint8_t kind, uint32_t flags)
{
	l->acquisitions++;
	l->waited += (flags & GT_LOCK_WAITED) != 0;
	l->tries += (flags & GT_LOCK_TRY) != 0;
	l->conds += (flags & GT_LOCK_COND) != 0;
	l->ownerdead += (flags & GT_LOCK_OWNERDEAD) != 0;
	l->reads += kind == GT_BK_RWLOCK_RD;
}

static void add_hold(struct report *r, struct lock_holds *l, const struct gt_tracked_thread *t,
		     const struct gt_tracked_hold *hold, uint64_t now_ns)
{
	uint64_t begin_ns = gt_clock_ns(&r->clock, hold->since_tsc);
	uint64_t ns = now_ns > begin_ns ? now_ns - begin_ns : 0;
	struct wait_site *s = &l->hold;
	s->count++;
	s->total_ns += ns;
	if (ns > s->max_ns)
		s->max_ns = ns;
	gtr_stack_stat_add(&s->stacks, &s->n_stacks, &s->cap_stacks, hold->stack, ns);
	struct holder_stat *by = holder_of(s, t);
	by->count++;
	by->total_ns += ns;
}

/* A lock wait w of a thread just began: where its holder, when named, took the lock. */
static void note_taken(struct report *r, const struct gt_tracked_wait *w)
{
	const struct gt_tracked_thread *holder =
		w->holder ? gt_tracker_thread(r->tracker, 0, w->holder) : NULL;
	uint32_t stack = holder ? gtr_held_stack(holder, w->obj, NULL) : 0;
	if (!stack)
		return;
	struct lock_holds *l = lock_of(r->holds, w->obj, w->kind);
	struct taken_by *by = NULL;
	for (size_t i = 0; i < l->n_taken && !by; i++)
		if (l->taken[i].serial == w->holder)
			by = &l->taken[i];
	if (!by) {
		l->taken = gtr_grow(l->taken, &l->cap_taken, l->n_taken + 1, sizeof *l->taken);
		by = &l->taken[l->n_taken++];
		*by = (struct taken_by){ .serial = w->holder };
	}
	gtr_stack_stat_add(&by->stacks, &by->n, &by->cap, stack, 0);
}

/* At or before the start of a flight recorder's window (a ring capture's summary). */
static bool before_window(const struct report *r, uint64_t tsc)
{
	return r->window_tsc && tsc <= r->window_tsc;
}

void gtr_holds_fact(struct report *r, const struct gt_capture_record *cr,
		    const struct gt_tracker_change *change, uint64_t now_ns)
{
	const struct gt_rec *rec = cr->rec;
	if (rec->type == GT_LOCK_ACQUIRE || rec->type == GT_LOCK_RELEASE) {
		if (r->holds == NULL)
			r->holds = gt_report_must(calloc(1, sizeof *r->holds));
	} else if (rec->type != GT_BLOCK_BEGIN || r->holds == NULL) {
		return;
	}
	if (rec->type == GT_BLOCK_BEGIN) {
		const struct gt_tracked_thread *t = change->thread;
		if (t && !change->nested && t->wait.open && !t->wait.syscall &&
		    gt_lock_kind(t->wait.kind))
			note_taken(r, &t->wait);
		return;
	}
	const struct gt_p_lock *p = cr->payload;
	struct lock_holds *l = lock_of(r->holds, p->obj, rec->aux);
	if (before_window(r, cr->tsc))
		return; /* the ring's summary of what came before its window */
	if (rec->type == GT_LOCK_ACQUIRE)
		count_acquisition(l, rec->aux, p->flags);
	l->nested += rec->type == GT_LOCK_ACQUIRE && !change->hold_began;
	if (change->hold_ended && change->thread && before_window(r, change->hold.since_tsc))
		l->before_window++;
	else if (change->hold_ended && change->thread)
		add_hold(r, l, change->thread, &change->hold, now_ns);
	if (change->release_unmatched) {
		l->unmatched++;
		r->holds->unmatched++;
	}
}

/* ---- the end ------------------------------------------------------------------------- */

/* indexes into the holds' locks (ctx), by total hold */
static int by_total_hold_desc(const void *a, const void *b, void *ctx)
{
	const struct gtr_holds *h = ctx;
	const struct wait_site *x = &h->v[*(const size_t *)a].hold;
	const struct wait_site *y = &h->v[*(const size_t *)b].hold;
	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static int taken_by_count_desc(const void *a, const void *b)
{
	const struct stack_stat *x = a, *y = b;
	if (x->count != y->count)
		return x->count < y->count ? 1 : -1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

void gtr_holds_finish(struct report *r)
{
	struct gtr_holds *h = r->holds;
	if (h == NULL)
		return;
	size_t pos = 0;
	for (const struct gt_tracked_thread *t; (t = gt_tracker_next(r->tracker, &pos));)
		for (size_t i = 0; i < t->n_held; i++)
			lock_of(h, t->held[i].obj, t->held[i].kind)->open_at_end++;
	h->order = gt_report_must(malloc((h->n + 1) * sizeof *h->order));
	for (size_t i = 0; i < h->n; i++) {
		h->order[i] = i;
		gtr_site_fit(r, &h->v[i].hold);
		gtr_site_order(r, &h->v[i].hold);
		for (size_t k = 0; k < h->v[i].n_taken; k++)
			if (h->v[i].taken[k].n > 1)
				qsort(h->v[i].taken[k].stacks, h->v[i].taken[k].n,
				      sizeof *h->v[i].taken[k].stacks, taken_by_count_desc);
	}
	if (h->n > 1)
		qsort_r(h->order, h->n, sizeof *h->order, by_total_hold_desc, h);
}

void gtr_holds_free(struct report *r)
{
	struct gtr_holds *h = r->holds;
	if (h == NULL)
		return;
	for (size_t i = 0; i < h->n; i++) {
		free(h->v[i].hold.stacks);
		gtr_holders_free(&h->v[i].hold);
		for (size_t k = 0; k < h->v[i].n_taken; k++)
			free(h->v[i].taken[k].stacks);
		free(h->v[i].taken);
	}
	free(h->v);
	free(h->order);
	gt_u64map_free(&h->by_obj);
	free(h);
	r->holds = NULL;
}

uint32_t gtr_holds_taken_at(const struct report *r, uint64_t obj, uint32_t serial)
{
	const struct lock_holds *l = lock_found(r->holds, obj);
	for (size_t i = 0; l && i < l->n_taken; i++)
		if (l->taken[i].serial == serial && l->taken[i].n)
			return l->taken[i].stacks[0].stack;
	return 0;
}

uint32_t gtr_held_stack(const struct gt_tracked_thread *holder, uint64_t obj,
			const struct gt_tracked_object *o)
{
	for (size_t i = 0; holder && i < holder->n_held; i++)
		if (holder->held[i].obj == obj && holder->held[i].stack)
			return holder->held[i].stack;
	return o && holder && o->holder == holder->serial ? o->held_stack : 0;
}

/* ---- text ---------------------------------------------------------------------------- */

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

static double share(uint64_t part, uint64_t all)
{
	return all ? (double)part / (double)all : 0.0;
}

static void thread_name(struct report *r, uint32_t serial, char *buf, size_t size)
{
	const struct gt_tracked_thread *t = gt_tracker_thread(r->tracker, 0, serial);
	if (t && t->name[0])
		snprintf(buf, size, "%s (thread %u)", t->name, serial);
	else
		snprintf(buf, size, "thread %u", serial);
}

/* Appends "; " and the formatted part to line (of size, *len used) when on. */
static void detail(char *line, size_t size, size_t *len, bool on, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
static void detail(char *line, size_t size, size_t *len, bool on, const char *fmt, ...)
{
	if (!on || *len >= size)
		return;
	if (*len)
		*len += (size_t)snprintf(line + *len, size - *len, "; ");
	va_list ap;
	va_start(ap, fmt);
	if (*len < size)
		*len += (size_t)vsnprintf(line + *len, size - *len, fmt, ap);
	va_end(ap);
}

/* The line of what is special about l's acquisitions and holds, when anything is. */
static void text_details(FILE *out, const struct lock_holds *l)
{
	char line[512] = "";
	size_t len = 0, size = sizeof line;
	detail(line, size, &len, l->reads != 0, "%" PRIu64 " taken for reading", l->reads);
	detail(line, size, &len, l->tries != 0, "%" PRIu64 " taken by try-lock", l->tries);
	detail(line, size, &len, l->conds != 0, "%" PRIu64 " taken back by a condition wait",
	       l->conds);
	detail(line, size, &len, l->ownerdead != 0,
	       "%" PRIu64 " taken with EOWNERDEAD (its holder died)", l->ownerdead);
	detail(line, size, &len, l->before_window != 0,
	       "%" PRIu64 " %s before the recorder's window (counted, not timed)", l->before_window,
	       l->before_window == 1 ? "hold began" : "holds began");
	detail(line, size, &len, l->nested != 0,
	       "%" PRIu64 " taken again inside a hold of the same thread (timed with it)",
	       l->nested);
	detail(line, size, &len, l->open_at_end != 0, "%" PRIu64 " %s still open at the end",
	       l->open_at_end, l->open_at_end == 1 ? "hold" : "holds");
	detail(line, size, &len, l->unmatched != 0, "%" PRIu64 " %s not paired with an acquisition",
	       l->unmatched, l->unmatched == 1 ? "release" : "releases");
	if (len)
		fprintf(out, "      %s\n", line);
}

static void text_lock(FILE *out, struct report *r, const struct lock_holds *l, unsigned n_stacks)
{
	const struct wait_site *s = &l->hold;
	for (size_t k = 0; k < s->n_stacks && k < n_stacks; k++) {
		const struct stack_stat *st = &s->stacks[k];
		fprintf(out,
			"      %" PRIu64
			" %s, %.3f ms total, %.3f ms mean, %.3f ms max, taken at:\n",
			st->count, st->count == 1 ? "hold" : "holds", ms(st->total_ns),
			ms(st->total_ns) / (double)st->count, ms(st->max_ns));
		gtr_text_stack(out, r, st->stack, "        ");
	}
	if (s->n_stacks > n_stacks)
		fprintf(out, "      ... and %zu more stacks\n", s->n_stacks - n_stacks);
	char who[64];
	for (size_t k = 0; k < s->n_holders && k < n_stacks; k++) {
		const struct holder_stat *h = &s->holders[k];
		thread_name(r, h->serial, who, sizeof who);
		fprintf(out, "      held by %s: %" PRIu64 " %s, %.3f ms\n", who, h->count,
			h->count == 1 ? "hold" : "holds", ms(h->total_ns));
	}
	if (s->n_holders > n_stacks)
		fprintf(out, "      ... and %zu more holders\n", s->n_holders - n_stacks);
}

static void text_held_at_end(FILE *out, struct report *r)
{
	bool header = false;
	size_t pos = 0;
	for (const struct gt_tracked_thread *t; (t = gt_tracker_next(r->tracker, &pos));)
		for (size_t i = 0; i < t->n_held; i++) {
			const struct gt_tracked_hold *hold = &t->held[i];
			if (!header)
				fprintf(out, "\nLocks held when the capture ends\n");
			header = true;
			char who[64], object[GT_REPORT_NAME_MAX];
			thread_name(r, t->serial, who, sizeof who);
			fprintf(out, "  %s %s held by %s%s since %.3f ms",
				gt_report_block_kind_name(hold->kind),
				gtr_object_name(r, hold->obj, object, sizeof object), who,
				t->end_seen ? ", which ended holding it," : "",
				ms(gt_clock_fitted_ns(&r->clock,
						      gt_clock_ns(&r->clock, hold->since_tsc))));
			if (hold->depth > 1)
				fprintf(out, " (taken %u times over)", hold->depth);
			fputs(", taken at:\n", out);
			gtr_text_stack(out, r, hold->stack, "      ");
		}
}

void gtr_holds_text(FILE *out, struct report *r, const struct gt_report_options *opt)
{
	const struct gtr_holds *h = r->holds;
	if (h == NULL) {
		fprintf(out,
			"  hold times: not recorded (`gotrace run --locks=all` records them)\n");
		return;
	}
	unsigned top = opt->top ? opt->top : 10, n_stacks = opt->stacks ? opt->stacks : 3;
	char name[GT_REPORT_NAME_MAX];
	int width = 18; /* the lock column is as wide as its longest name: never cut */
	for (size_t i = 0; i < h->n && i < top; i++) {
		int len = (int)strlen(
			gtr_object_name(r, h->v[h->order[i]].hold.key, name, sizeof name));
		width = len > width ? len : width;
	}
	fprintf(out, "\nLock holds (--locks=all: from the outermost acquisition to its release; "
		     "by total hold)\n");
	if (h->n == 0)
		fprintf(out, "  none: no lock was acquired\n");
	else
		fprintf(out, "  %-3s %-*s %-7s %9s %9s %8s %12s %10s %10s\n", "#", width, "lock",
			"kind", "acquired", "contended", "holds", "total ms", "mean ms", "max ms");
	for (size_t i = 0; i < h->n && i < top; i++) {
		const struct lock_holds *l = &h->v[h->order[i]];
		const struct wait_site *s = &l->hold;
		fprintf(out,
			"  %-3zu %-*s %-7s %9" PRIu64 " %8.1f%% %8" PRIu64
			" %12.3f %10.3f %10.3f\n",
			i + 1, width, gtr_object_name(r, s->key, name, sizeof name),
			gt_report_block_kind_name(s->kind), l->acquisitions,
			100.0 * share(l->waited, l->acquisitions), s->count, ms(s->total_ns),
			s->count ? ms(s->total_ns) / (double)s->count : 0.0, ms(s->max_ns));
		text_details(out, l);
		text_lock(out, r, l, n_stacks);
	}
	if (h->n > top)
		fprintf(out, "  ... and %zu more\n", h->n - top);
	if (h->unmatched)
		fprintf(out,
			"  %" PRIu64 " %s of a lock not known held, not paired: taken before the "
			"capture began, or released by another thread than its taker\n",
			h->unmatched, h->unmatched == 1 ? "release" : "releases");
	text_held_at_end(out, r);
}

/* ---- JSON ---------------------------------------------------------------------------- */

static void json_thread(FILE *out, struct report *r, uint32_t serial)
{
	const struct gt_tracked_thread *t = gt_tracker_thread(r->tracker, 0, serial);
	fprintf(out, "\"serial\":%u,\"tid\":%u,\"name\":", serial, t ? t->tid : 0);
	gt_report_json_string(out, t ? t->name : "");
}

static void json_lock(FILE *out, struct report *r, const struct lock_holds *l, unsigned n_stacks)
{
	const struct wait_site *s = &l->hold;
	char name[GT_REPORT_NAME_MAX];
	fprintf(out, "{\"address\":\"%#" PRIx64 "\",\"kind\":\"%s\",\"name\":", s->key,
		gt_report_block_kind_name(s->kind));
	gt_report_json_string(out, gtr_object_name(r, s->key, name, sizeof name));
	fprintf(out,
		",\"acquisitions\":%" PRIu64 ",\"waited\":%" PRIu64 ",\"contended_share\":%.6f"
		",\"try_locks\":%" PRIu64 ",\"cond_retakes\":%" PRIu64 ",\"ownerdead\":%" PRIu64
		",\"reads\":%" PRIu64 ",\"holds\":%" PRIu64 ",\"total_ns\":%" PRIu64
		",\"mean_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64 ",\"unmatched_releases\":%" PRIu64
		",\"held_at_end\":%" PRIu64 ",\"before_window\":%" PRIu64 ",\"sites\":[",
		l->acquisitions, l->waited, share(l->waited, l->acquisitions), l->tries, l->conds,
		l->ownerdead, l->reads, s->count, s->total_ns,
		s->count ? s->total_ns / s->count : 0, s->max_ns, l->unmatched, l->open_at_end,
		l->before_window);
	for (size_t k = 0; k < s->n_stacks && k < n_stacks; k++) {
		const struct stack_stat *st = &s->stacks[k];
		fprintf(out,
			"%s{\"holds\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64
			",\"frames\":",
			k ? "," : "", st->count, st->total_ns, st->max_ns);
		gtr_json_stack(out, r, st->stack);
		fputc('}', out);
	}
	fputs("],\"holders\":[", out);
	for (size_t k = 0; k < s->n_holders && k < n_stacks; k++) {
		fputs(k ? ",{" : "{", out);
		json_thread(out, r, s->holders[k].serial);
		fprintf(out, ",\"holds\":%" PRIu64 ",\"total_ns\":%" PRIu64 "}",
			s->holders[k].count, s->holders[k].total_ns);
	}
	fputs("]}", out);
}

void gtr_holds_json(FILE *out, struct report *r, const struct gt_report_options *opt)
{
	const struct gtr_holds *h = r->holds;
	if (h == NULL) {
		fputs(",\"holds\":null", out);
		return;
	}
	unsigned top = opt->top ? opt->top : 10, n_stacks = opt->stacks ? opt->stacks : 3;
	fputs(",\"holds\":{\"locks\":[", out);
	for (size_t i = 0; i < h->n && i < top; i++) {
		if (i)
			fputc(',', out);
		json_lock(out, r, &h->v[h->order[i]], n_stacks);
	}
	fprintf(out, "],\"unmatched_releases\":%" PRIu64 ",\"held_at_end\":[", h->unmatched);
	bool first = true;
	size_t pos = 0;
	for (const struct gt_tracked_thread *t; (t = gt_tracker_next(r->tracker, &pos));)
		for (size_t i = 0; i < t->n_held; i++) {
			const struct gt_tracked_hold *hold = &t->held[i];
			char name[GT_REPORT_NAME_MAX];
			fputs(first ? "{" : ",{", out);
			first = false;
			json_thread(out, r, t->serial);
			fprintf(out,
				",\"thread_ended\":%s,\"kind\":\"%s\",\"address\":\"%#" PRIx64
				"\",\"object_name\":",
				t->end_seen ? "true" : "false",
				gt_report_block_kind_name(hold->kind), hold->obj);
			gt_report_json_string(out,
					      gtr_object_name(r, hold->obj, name, sizeof name));
			fprintf(out, ",\"since_ns\":%" PRIu64 ",\"depth\":%u,\"frames\":",
				gt_clock_fitted_ns(&r->clock,
						   gt_clock_ns(&r->clock, hold->since_tsc)),
				hold->depth);
			gtr_json_stack(out, r, hold->stack);
			fputc('}', out);
		}
	fputs("]}", out);
}
