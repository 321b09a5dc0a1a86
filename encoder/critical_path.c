/* critical_path: see critical_path.h and encoder.h.
 *
 * Recording: each thread (a goroutine of the model) keeps its intervals in time order, one
 * 24-byte entry per change of state, and its CPU samples.  Waits are interned once each (kind,
 * object, syscall, stack: their names resolved then).
 *
 * The walk goes back from the end of the chosen interval, in one thread at a time: a running,
 * runnable or unwoken waiting interval is that thread's own; a wait that a known thread ended
 * continues in that thread from the wake's time (from the interval's end when the wake comes
 * after it); the start of a thread continues in its creator
 * (a process's main thread: in the thread that forked it, the time between being the child's
 * "not traced yet").  Each step moves back in time or changes thread, so the segments cover the
 * interval exactly once; their boundaries are converted to ns once each, so their durations add
 * up to the interval's exactly. */
#include "critical_path.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/intern.h"
#include "common/u64map.h"

const char *const gt_cp_state_names[GT_CP_STATE_COUNT] = {
#define GT_CP_STATE_NAME(id, text) text,
	GT_CP_STATES(GT_CP_STATE_NAME)
#undef GT_CP_STATE_NAME
};

enum iv_state { IV_RUNNABLE, IV_RUNNING, IV_WAIT, IV_SYSCALL, IV_DEAD };

/* One interval of a thread: from at until the next one's. */
struct iv {
	uint64_t at;
	uint32_t wait;     /* IV_WAIT, IV_SYSCALL: index + 1 in waits, 0: not known */
	uint32_t other;    /* IV_WAIT, IV_SYSCALL: the thread that ended it + 1; IV_RUNNABLE: the
			    * one on the CPU it then ran on + 1; 0: none known */
	uint8_t state;
};

struct sample {
	uint64_t at;
	const char *function;   /* interned: equal names are equal pointers */
};

struct cp_thread {
	uint64_t g;
	uint32_t pid, tid;
	const char *name;
	bool main, process_main;
	uint32_t creator;          /* + 1, 0: none known */
	uint64_t born;             /* when its creator made it (its process's fork) */
	uint32_t pending_syscall;  /* the wait of its syscall begun, drawn blocked next */
	struct iv *iv;
	size_t n, cap;
	struct sample *samples;
	size_t n_samples, cap_samples;
};

/* The thread on a CPU, or the last that left it: since when, until when (0: still there). */
struct last_run {
	uint32_t thread;   /* + 1 */
	uint64_t since, at;
};

/* A process made by a thread (fork, spawn, exec). */
struct made {
	uint32_t thread;   /* + 1 */
	uint64_t at;
};

struct wait_key {
	uint64_t obj, stack;
	uint32_t capture, sys_nr;
	uint8_t kind, fd_kind, has_syscall;
};

struct gt_critpath {
	struct cp_thread *threads;
	size_t n_threads, cap_threads;
	uint32_t *by_g;            /* g -> thread + 1 */
	size_t cap_by_g;
	struct gt_cp_wait *waits;
	size_t n_waits, cap_waits;
	struct gt_intern wait_keys;
	uint64_t next_wait;
	struct gt_intern strings;
	struct last_run *procs;
	size_t cap_procs;
	struct gt_u64map made;     /* pid -> its maker (struct made packed: thread << 48 | at) */
	struct gt_u64map orphans;  /* pid -> its main thread + 1 that appeared with no creator */
	gt_cp_site_fn *site;
	void *site_ctx;
	uint64_t frequency, last;
	bool kernel, samples, failed;
};

struct gt_critpath *gt_critpath_new(void)
{
	struct gt_critpath *cp = calloc(1, sizeof *cp);
	if (cp)
		cp->next_wait = 1;
	return cp;
}

void gt_critpath_free(struct gt_critpath *cp)
{
	if (!cp)
		return;
	for (size_t i = 0; i < cp->n_threads; i++) {
		free(cp->threads[i].iv);
		free(cp->threads[i].samples);
	}
	free(cp->threads);
	free(cp->by_g);
	free(cp->waits);
	free(cp->procs);
	gt_intern_free(&cp->wait_keys);
	gt_intern_free(&cp->strings);
	gt_u64map_free(&cp->made);
	gt_u64map_free(&cp->orphans);
	free(cp);
}

void gt_critpath_site_source(struct gt_critpath *cp, gt_cp_site_fn *site, void *ctx)
{
	cp->site = site;
	cp->site_ctx = ctx;
}

/* A stable copy of s ("" for NULL), NULL when memory runs out. */
static const char *keep(struct gt_critpath *cp, const char *s)
{
	bool inserted;
	s = s ? s : "";
	const struct gt_intern_entry *e = gt_intern(&cp->strings, s, strlen(s), 1, &inserted);
	cp->failed |= !e;
	return e ? e->bytes : NULL;
}

/* The thread of who (made when new), NULL: none, or no memory. */
static struct cp_thread *thread_of(struct gt_critpath *cp, const struct gt_cp_who *who)
{
	if (!who->g || who->g > (1u << 30))
		return NULL;
	if (!gt_grow(&cp->by_g, &cp->cap_by_g, who->g + 1, sizeof *cp->by_g)) {
		cp->failed = true;
		return NULL;
	}
	uint32_t *slot = &cp->by_g[who->g];
	if (!*slot) {
		if (!gt_grow(&cp->threads, &cp->cap_threads, cp->n_threads + 1, sizeof *cp->threads)) {
			cp->failed = true;
			return NULL;
		}
		cp->threads[cp->n_threads] = (struct cp_thread){.g = who->g, .pid = who->pid,
								 .name = keep(cp, "")};
		*slot = (uint32_t)++cp->n_threads;
	}
	struct cp_thread *t = &cp->threads[*slot - 1];
	if (who->tid)
		t->tid = who->tid;
	if (who->name && t->name && strcmp(who->name, t->name) != 0)
		t->name = keep(cp, who->name);
	t->main |= who->main;
	t->process_main |= who->process_main;
	return t;
}

static uint32_t index_of(const struct gt_critpath *cp, const struct cp_thread *t)
{
	return (uint32_t)(t - cp->threads);
}

/* The thread's latest interval, NULL: none yet. */
static struct iv *latest(struct cp_thread *t)
{
	return t->n ? &t->iv[t->n - 1] : NULL;
}

static void push(struct gt_critpath *cp, struct cp_thread *t, uint64_t at, uint8_t state,
		 uint32_t wait, uint32_t other)
{
	struct iv *last = latest(t);
	if (last && last->at >= at) {
		last->state = state;   /* the model's ticks strictly increase per goroutine */
		last->wait = wait;
		last->other = other;
		return;
	}
	if (!gt_grow(&t->iv, &t->cap, t->n + 1, sizeof *t->iv)) {
		cp->failed = true;
		return;
	}
	t->iv[t->n++] = (struct iv){.at = at, .wait = wait, .other = other, .state = state};
}

/* The wait (index + 1) of kind on obj at stack, interned; 0 when memory runs out. */
static uint32_t wait_of(struct gt_critpath *cp, uint32_t capture, const struct gt_wire_wait *w,
			uint8_t kind, bool has_syscall, uint32_t sys_nr, uint64_t obj, uint64_t stack)
{
	struct wait_key key;
	memset(&key, 0, sizeof key);   /* its padding is hashed too */
	key.obj = obj;
	key.stack = stack;
	key.capture = capture;
	key.sys_nr = has_syscall ? sys_nr : 0;
	key.kind = kind;
	key.fd_kind = w ? w->fd_kind : 0;
	key.has_syscall = has_syscall;
	bool fresh;
	uint64_t id = gt_intern_id(&cp->wait_keys, &cp->next_wait, &key, sizeof key, &fresh);
	if (!id || (fresh && !gt_grow(&cp->waits, &cp->cap_waits, id, sizeof *cp->waits))) {
		cp->failed = true;
		return 0;
	}
	if (fresh) {
		char site[512];
		bool named = stack && cp->site && cp->site(cp->site_ctx, capture, stack, site,
							   sizeof site);
		cp->waits[id - 1] = (struct gt_cp_wait){
			.kind = kind, .fd_kind = key.fd_kind, .has_syscall = has_syscall,
			.sys_nr = key.sys_nr, .obj = obj,
			.object = w && w->object ? keep(cp, w->object) : NULL,
			.site = named ? keep(cp, site) : NULL,
		};
		cp->n_waits = id;
	}
	return (uint32_t)id;
}

/* Thread t left CPU p (P p: CPU p - 1) at ticks. */
static void left_cpu(struct gt_critpath *cp, const struct cp_thread *t, uint64_t p, uint64_t ticks)
{
	if (p > 4096 || !gt_grow(&cp->procs, &cp->cap_procs, p + 1, sizeof *cp->procs))
		return;
	struct last_run *r = &cp->procs[p];
	if (r->thread != index_of(cp, t) + 1)
		*r = (struct last_run){index_of(cp, t) + 1, ticks, ticks};
	r->at = ticks;
}

/* A process's main thread t, which appeared with no creator: made by the thread that forked
 * its process, when that is known (else once it is). */
static void link_maker(struct gt_critpath *cp, struct cp_thread *t)
{
	const uint64_t *v = gt_u64map_find(&cp->made, t->pid);
	if (v) {
		t->creator = (uint32_t)(*v >> 48);
		t->born = *v & ((1ull << 48) - 1);
		gt_u64map_remove(&cp->made, t->pid);
		return;
	}
	bool found;
	uint64_t *slot = gt_u64map_slot(&cp->orphans, t->pid, &found);
	if (slot)
		*slot = index_of(cp, t) + 1;
}

void gt_critpath_process(struct gt_critpath *cp, uint64_t ticks, uint64_t g, uint32_t pid)
{
	uint32_t maker = g < cp->cap_by_g ? cp->by_g[g] : 0;
	if (!maker || ticks >> 48 || maker >> 15)
		return;
	const uint64_t *orphan = gt_u64map_find(&cp->orphans, pid);
	if (orphan) {
		struct cp_thread *t = &cp->threads[*orphan - 1];
		t->creator = maker;
		t->born = t->n && t->iv[0].at < ticks ? t->iv[0].at : ticks;
		gt_u64map_remove(&cp->orphans, pid);
		return;
	}
	bool found;
	uint64_t *slot = gt_u64map_slot(&cp->made, pid, &found);
	if (slot)
		*slot = (uint64_t)maker << 48 | ticks;
}

static void created(struct gt_critpath *cp, const struct gt_cp_event *ev)
{
	const struct gt_sched_event *e = ev->e;
	struct cp_thread *maker = thread_of(cp, &ev->a);
	struct cp_thread *t = ev->b.g == e->g ? thread_of(cp, &ev->b) : maker;
	if (!t)
		return;
	if (t != maker && maker) {
		t->creator = index_of(cp, maker) + 1;
		t->born = e->ticks;
	} else if (t->process_main && !t->main) {
		link_maker(cp, t);
	}
	push(cp, t, e->ticks, e->waiting ? IV_WAIT : IV_RUNNABLE, 0, 0);
}

/* A thread that leaves a CPU hands it over to the next at once (the switch's two halves, a few
 * microseconds apart); a longer gap had something untraced there, or nothing. */
#define HAND_OVER_TICKS 50000u

/* Thread t starts on P p: the thread that left p just before, while t was runnable, held the
 * CPU it waited for since it got it (before, something else did: not known). */
static void started(struct gt_critpath *cp, struct cp_thread *t, uint64_t p, uint64_t ticks)
{
	struct iv *last = latest(t);
	const struct last_run *r = p < cp->cap_procs ? &cp->procs[p] : NULL;
	if (last && last->state == IV_RUNNABLE && r && r->thread && r->at &&
	    r->thread != index_of(cp, t) + 1 && r->at > last->at && ticks - r->at <= HAND_OVER_TICKS) {
		if (r->since > last->at)
			push(cp, t, r->since, IV_RUNNABLE, 0, r->thread);
		else
			last->other = r->thread;
	}
	push(cp, t, ticks, IV_RUNNING, 0, (uint32_t)p);
	if (p <= 4096 && gt_grow(&cp->procs, &cp->cap_procs, p + 1, sizeof *cp->procs))
		cp->procs[p] = (struct last_run){index_of(cp, t) + 1, ticks, 0};
}

void gt_critpath_event(struct gt_critpath *cp, const struct gt_cp_event *ev)
{
	const struct gt_sched_event *e = ev->e;
	if (e->ticks > cp->last)
		cp->last = e->ticks;
	struct cp_thread *a, *b;
	switch (e->kind) {
	case GT_SCHED_GO_CREATE:
		created(cp, ev);
		break;
	case GT_SCHED_GO_WAITING:
		if ((a = thread_of(cp, &ev->a)))
			push(cp, a, e->ticks, IV_WAIT, 0, 0);
		break;
	case GT_SCHED_GO_START:
		if ((a = thread_of(cp, &ev->a)))
			started(cp, a, e->p, e->ticks);
		break;
	case GT_SCHED_GO_STOP:
		if ((a = thread_of(cp, &ev->a))) {
			push(cp, a, e->ticks, IV_RUNNABLE, 0, 0);
			left_cpu(cp, a, e->p, e->ticks);
		}
		break;
	case GT_SCHED_GO_BLOCK: {
		if (!(a = thread_of(cp, &ev->a)))
			break;
		uint8_t k = e->wait.kind;
		bool sys = k == GT_WIRE_WAIT_NET || k == GT_WIRE_WAIT_CHILD ||
			   (k == GT_BK_SLEEP && e->wait.sys_nr);
		uint32_t w = wait_of(cp, ev->a.capture, &e->wait, k, sys, e->wait.sys_nr,
				     k < GT_BK_COUNT ? ev->obj : 0, e->stack);
		push(cp, a, e->ticks, IV_WAIT, w, 0);
		left_cpu(cp, a, e->p, e->ticks);
		break;
	}
	case GT_SCHED_GO_UNBLOCK:
		a = thread_of(cp, &ev->a);
		if (!(b = ev->b.g == e->g ? thread_of(cp, &ev->b) : a))
			break;
		/* a thread unblocked by itself: by no thread known (the model's unknown waker) */
		if (latest(b) && (latest(b)->state == IV_WAIT || latest(b)->state == IV_SYSCALL))
			latest(b)->other = a && a != b ? index_of(cp, a) + 1 : 0;
		push(cp, b, e->ticks, IV_RUNNABLE, 0, 0);
		break;
	case GT_SCHED_GO_DESTROY:
		if ((a = thread_of(cp, &ev->a))) {
			push(cp, a, e->ticks, IV_DEAD, 0, 0);
			left_cpu(cp, a, e->p, e->ticks);
		}
		break;
	case GT_SCHED_GO_SYSCALL_BEGIN:
		if (!e->sys_end && (a = thread_of(cp, &ev->a)))
			a->pending_syscall = wait_of(cp, ev->a.capture, NULL, GT_CP_WAIT_SYSCALL, true,
						     ev->sys_nr, 0, e->stack);
		break;
	case GT_SCHED_GO_SYSCALL_BLOCKED:
		if ((a = thread_of(cp, &ev->a))) {
			push(cp, a, e->ticks, IV_SYSCALL, a->pending_syscall, 0);
			left_cpu(cp, a, e->p, e->ticks);
		}
		break;
	case GT_SCHED_GO_SYSCALL_END_BLOCKED:
		if ((a = thread_of(cp, &ev->a)))
			push(cp, a, e->ticks, IV_RUNNABLE, 0, 0);
		break;
	default:   /* Ps, user annotations: no thread's state */
		break;
	}
}

void gt_critpath_sample(struct gt_critpath *cp, uint64_t ticks, uint64_t g, const char *function)
{
	uint32_t i = g < cp->cap_by_g ? cp->by_g[g] : 0;
	if (!i)
		return;
	struct cp_thread *t = &cp->threads[i - 1];
	if (!gt_grow(&t->samples, &t->cap_samples, t->n_samples + 1, sizeof *t->samples)) {
		cp->failed = true;
		return;
	}
	t->samples[t->n_samples++] = (struct sample){ticks, keep(cp, function)};
	cp->samples = true;
}

void gt_critpath_finish(struct gt_critpath *cp, uint64_t frequency, bool kernel)
{
	cp->frequency = frequency ? frequency : 1000000000u;
	cp->kernel = kernel;
}

/* ---- the walk ------------------------------------------------------------------------ */

/* Ticks as ns after the start of the first capture (the trace's Frequency applied), and back. */
static uint64_t ns_of(const struct gt_critpath *cp, uint64_t ticks)
{
	if (ticks <= GT_CLOCK_TICKS_OFFSET)
		return 0;
	return (uint64_t)((unsigned __int128)(ticks - GT_CLOCK_TICKS_OFFSET) * 1000000000u /
			  cp->frequency);
}

static uint64_t ticks_of(const struct gt_critpath *cp, uint64_t ns)
{
	return GT_CLOCK_TICKS_OFFSET +
	       (uint64_t)((unsigned __int128)ns * cp->frequency / 1000000000u);
}

/* The index of t's last interval that began before at, SIZE_MAX: none. */
static size_t interval_before(const struct cp_thread *t, uint64_t at)
{
	size_t lo = 0, hi = t->n;   /* the answer is below hi */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (t->iv[mid].at < at)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo ? lo - 1 : SIZE_MAX;
}

/* The thread a query names: a TID (digits), else a name (the first met of that name); the
 * main thread of the first process without one.  -1 after a line in err. */
static long choose_thread(const struct gt_critpath *cp, const char *want, char *err, size_t errlen)
{
	char *end = NULL;
	unsigned long tid = want ? strtoul(want, &end, 10) : 0;
	bool by_tid = want && *want && end && !*end;
	for (size_t i = 0; i < cp->n_threads; i++) {
		const struct cp_thread *t = &cp->threads[i];
		if (!t->n)
			continue;
		if (want ? (by_tid ? t->tid == tid : strcmp(t->name, want) == 0) : t->main)
			return (long)i;
	}
	if (want)
		snprintf(err, errlen, "no thread %s %s in the trace", by_tid ? "with TID" : "named",
			 want);
	else
		snprintf(err, errlen, "the trace has no main thread of its first process");
	return -1;
}

struct walk {
	const struct gt_critpath *cp;
	struct gt_cp_result *out;
	size_t cap_segments, cap_parts;
};

/* Segment [from, to) of thread x, prepended (the walk goes back; reversed at the end). */
static int add_segment(struct walk *w, uint32_t x, enum gt_cp_state state, uint32_t wait,
		       int32_t via, uint32_t holder, uint64_t from, uint64_t to)
{
	struct gt_cp_result *r = w->out;
	if (from >= to)
		return 0;
	if (!gt_grow(&r->segments, &w->cap_segments, r->n_segments + 1, sizeof *r->segments))
		return -1;
	/* start_ns and ns hold ticks until the conversion */
	r->segments[r->n_segments++] = (struct gt_cp_segment){
		.thread = x, .state = state, .wait = (int32_t)wait - 1, .via = via,
		.cpu_holder = (int32_t)holder - 1, .start_ns = from, .ns = to,
	};
	return 0;
}

static enum gt_cp_state state_of(const struct gt_critpath *cp, const struct iv *v)
{
	switch (v->state) {
	case IV_RUNNING: return GT_CP_RUNNING;
	case IV_RUNNABLE: return GT_CP_RUNNABLE;
	case IV_SYSCALL: return GT_CP_SYSCALL;
	case IV_WAIT:
		return v->wait && cp->waits[v->wait - 1].kind == GT_CP_WAIT_UNTRACED ? GT_CP_UNTRACED
										    : GT_CP_WAITING;
	default: return GT_CP_UNKNOWN;
	}
}

/* Walks back from end to start in thread x: the segments in reverse order. */
static int walk_back(struct walk *w, uint32_t x, uint64_t start, uint64_t end)
{
	const struct gt_critpath *cp = w->cp;
	uint64_t at = end;
	uint32_t cur = x;
	int32_t via = -1;
	size_t jumps = 0;   /* changes of thread without going back in time: at most one each */
	while (at > start) {
		const struct cp_thread *t = &cp->threads[cur];
		size_t i = interval_before(t, at);
		w->out->steps++;
		if (i == SIZE_MAX) {
			/* its start: in its creator, the time between its own "not traced yet" */
			if (t->creator && jumps <= cp->n_threads && t->born <= at) {
				uint64_t born = t->born > start ? t->born : start;
				if (add_segment(w, cur, GT_CP_UNKNOWN, 0, via, 0, born, at))
					return -1;
				jumps = born < at ? 0 : jumps + 1;
				at = born;
				cur = t->creator - 1;
				if (cur == x)
					via = -1;
				continue;
			}
			return add_segment(w, cur, GT_CP_UNKNOWN, 0, via, 0, start, at);
		}
		const struct iv *v = &t->iv[i];
		/* woken later (an interval cut inside the wait): its waker's work until then */
		bool woken = (v->state == IV_WAIT || v->state == IV_SYSCALL) && v->other &&
			     i + 1 < t->n;
		if (woken && jumps <= cp->n_threads) {
			/* the wait continues in the thread that ended it, from the wake back */
			via = (int32_t)v->wait - 1;
			cur = v->other - 1;
			if (cur == x)
				via = -1;
			jumps++;
			continue;
		}
		uint64_t from = v->at > start ? v->at : start;
		uint32_t holder = v->state == IV_RUNNABLE ? v->other : 0;
		uint32_t wait = v->state == IV_WAIT || v->state == IV_SYSCALL ? v->wait : 0;
		if (add_segment(w, cur, state_of(cp, v), wait, via, holder, from, at))
			return -1;
		at = from;
		jumps = 0;
	}
	return 0;
}

/* Segment s's parts: its CPU samples' functions (thread t's samples in [from, to) ticks), the
 * time split in proportion to their counts, the remainder to the most sampled; one part of no
 * function when none is.  Other states have none. */
static int add_parts(struct walk *w, struct gt_cp_segment *s, const struct cp_thread *t,
		     uint64_t from, uint64_t to)
{
	struct gt_cp_result *r = w->out;
	s->first_part = r->n_parts;
	if (s->state != GT_CP_RUNNING)
		return 0;
	size_t lo = 0, hi = t->n_samples;
	while (lo < hi) {   /* the first sample at or after from */
		size_t mid = lo + (hi - lo) / 2;
		if (t->samples[mid].at < from)
			lo = mid + 1;
		else
			hi = mid;
	}
	size_t first = r->n_parts, k = 0, top = first;
	for (size_t i = lo; i < t->n_samples && t->samples[i].at < to; i++, k++) {
		size_t j = first;
		while (j < r->n_parts && r->parts[j].function != t->samples[i].function)
			j++;
		if (j == r->n_parts) {
			if (!gt_grow(&r->parts, &w->cap_parts, j + 1, sizeof *r->parts))
				return -1;
			r->parts[r->n_parts++] = (struct gt_cp_part){t->samples[i].function, 0};
		}
		r->parts[j].ns++;   /* a count until the split */
		if (r->parts[j].ns > r->parts[top].ns)
			top = j;
	}
	if (!k) {
		if (!gt_grow(&r->parts, &w->cap_parts, first + 1, sizeof *r->parts))
			return -1;
		r->parts[r->n_parts++] = (struct gt_cp_part){NULL, s->ns};
	} else {
		uint64_t given = 0;
		for (size_t j = first; j < r->n_parts; j++) {
			r->parts[j].ns = (uint64_t)((unsigned __int128)s->ns * r->parts[j].ns / k);
			given += r->parts[j].ns;
		}
		r->parts[top].ns += s->ns - given;
	}
	s->n_parts = r->n_parts - first;
	return 0;
}

/* The segments in time order, their ticks as ns, their parts; the threads and waits. */
static int finish_result(struct walk *w)
{
	const struct gt_critpath *cp = w->cp;
	struct gt_cp_result *r = w->out;
	for (size_t i = 0, j = r->n_segments; i + 1 < j; i++, j--) {
		struct gt_cp_segment s = r->segments[i];
		r->segments[i] = r->segments[j - 1];
		r->segments[j - 1] = s;
	}
	for (size_t i = 0; i < r->n_segments; i++) {
		struct gt_cp_segment *s = &r->segments[i];
		uint64_t from = s->start_ns, to = s->ns;
		s->start_ns = ns_of(cp, from);
		s->ns = ns_of(cp, to) - s->start_ns;
		if (add_parts(w, s, &cp->threads[s->thread], from, to))
			return -1;
	}
	r->threads = calloc(cp->n_threads ? cp->n_threads : 1, sizeof *r->threads);
	r->waits = calloc(cp->n_waits ? cp->n_waits : 1, sizeof *r->waits);
	if (!r->threads || !r->waits)
		return -1;
	for (size_t i = 0; i < cp->n_threads; i++) {
		const struct cp_thread *t = &cp->threads[i];
		r->threads[i] = (struct gt_cp_thread){t->pid, t->tid, t->name, t->main};
	}
	r->n_threads = cp->n_threads;
	memcpy(r->waits, cp->waits, cp->n_waits * sizeof *r->waits);
	r->n_waits = cp->n_waits;
	return 0;
}

int gt_critpath_walk(const struct gt_critpath *cp, const struct gt_cp_query *q,
		     struct gt_cp_result *out, char *err, size_t errlen)
{
	memset(out, 0, sizeof *out);
	if (cp->failed || !cp->frequency) {
		snprintf(err, errlen, cp->failed ? "out of memory while recording the threads' "
						   "intervals" : "no conversion recorded the threads");
		return -1;
	}
	long x = choose_thread(cp, q->thread, err, errlen);
	if (x < 0)
		return -1;
	const struct cp_thread *t = &cp->threads[x];
	uint64_t start = t->iv[0].at;
	uint64_t end = t->iv[t->n - 1].state == IV_DEAD ? t->iv[t->n - 1].at : cp->last;
	if (q->from_ns && ticks_of(cp, q->from_ns) > start)
		start = ticks_of(cp, q->from_ns);
	if (q->to_ns && ticks_of(cp, q->to_ns) < end)
		end = ticks_of(cp, q->to_ns);
	if (end <= start) {
		snprintf(err, errlen, "the thread does not live between --from and --to");
		return -1;
	}
	struct walk w = {.cp = cp, .out = out};
	out->thread = (uint32_t)x;
	out->kernel = cp->kernel;
	out->samples = cp->samples;
	if (walk_back(&w, (uint32_t)x, start, end) || finish_result(&w)) {
		gt_cp_result_free(out);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	out->start_ns = ns_of(cp, start);
	out->end_ns = ns_of(cp, end);
	return 0;
}

void gt_cp_result_free(struct gt_cp_result *r)
{
	free(r->threads);
	free(r->waits);
	free(r->segments);
	free(r->parts);
	memset(r, 0, sizeof *r);
}

static int by_g_then_time(const void *a, const void *b)
{
	const struct gt_cp_stretch *x = a, *y = b;
	if (x->g != y->g)
		return x->g < y->g ? -1 : 1;
	return (x->from > y->from) - (x->from < y->from);
}

int gt_critpath_plan(const struct gt_critpath *cp, struct gt_cp_stretch **out, size_t *n)
{
	*out = NULL;
	*n = 0;
	char err[128];
	long x = cp->failed || !cp->frequency ? -1 : choose_thread(cp, NULL, err, sizeof err);
	if (x < 0)
		return -1;
	const struct cp_thread *t = &cp->threads[x];
	uint64_t end = t->iv[t->n - 1].state == IV_DEAD ? t->iv[t->n - 1].at : cp->last;
	struct gt_cp_result r = {0};
	struct walk w = {.cp = cp, .out = &r};
	if (end <= t->iv[0].at || walk_back(&w, (uint32_t)x, t->iv[0].at, end)) {
		gt_cp_result_free(&r);
		return -1;
	}
	/* back to front, their times still ticks: a stretch per change of thread */
	size_t cap = 0, last = 0;
	for (size_t i = r.n_segments; i-- > 0;) {
		const struct gt_cp_segment *s = &r.segments[i];
		uint64_t g = cp->threads[s->thread].g;
		if (*n && (*out)[*n - 1].g == g && (*out)[*n - 1].to == s->start_ns) {
			(*out)[*n - 1].to = s->ns;
			continue;
		}
		if (!gt_grow(out, &cap, *n + 1, sizeof **out)) {
			gt_cp_result_free(&r);
			free(*out);
			*out = NULL;
			*n = 0;
			return -1;
		}
		(*out)[(*n)++] = (struct gt_cp_stretch){.g = g, .from = s->start_ns, .to = s->ns};
	}
	gt_cp_result_free(&r);
	for (size_t i = 0; i < *n; i++)
		last = (*out)[i].to > (*out)[last].to ? i : last;
	if (*n)
		(*out)[last].last = true;
	if (*n > 1)
		qsort(*out, *n, sizeof **out, by_g_then_time);
	return 0;
}
