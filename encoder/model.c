/* model: see model.h.  The §5.2 primitive is run_thread(); every fact handler first makes
 * its thread the running G of its CPU's P, then emits what the fact means (§5.3).
 *
 * Ticks: every event gets max(wanted time, its P's last tick + 1, the last tick of each G it
 * concerns + 1), so each P's stream strictly increases and every cross-P dependency (create
 * before start, block before unblock before start, preempt on the old P before start on the
 * new one) is strictly later in time, which is what both Go readers need (§2.3). */
#include "model.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer.h"

#define TICKS_OFFSET 1000000000ull      /* trace ticks = ns since the capture start + 1 s */
#define SYNTH_STACK_BASE ((1ull << 24) + 1)
#define SYNTH_PC_BASE 0xffff000000000000ull
#define JOIN_KEY_BIT (1ull << 63)

#define MAX_REGIONS 16   /* user regions open at once per thread */

enum tstate { T_UNSEEN = 0, T_RUNNABLE, T_RUNNING, T_WAITING, T_SYSBLOCKED, T_DEAD };

/* What a thread waits for, beyond enum gt_block_kind. */
#define WAIT_NET 100
#define WAIT_PROLOGUE 101

/* Synthetic frames (GO-TRACE-FORMAT.md §5.6): unique PCs outside real code. */
enum synth {
	S_TIMEOUT, S_SIGNAL, S_UNKNOWN, S_TIMER, S_NETPOLL, S_PREEXISTING, S_MAIN, S_EXIT,
	S_STACK_LOST, S_NO_FRAMES, S_WAKE, S_COUNT
};
static const char *const synth_names[S_COUNT] = {
	[S_TIMEOUT] = "[timeout]", [S_SIGNAL] = "[signal]", [S_UNKNOWN] = "[unknown wakeup]",
	[S_TIMER] = "[timer]", [S_NETPOLL] = "[netpoll]", [S_PREEXISTING] = "[pre-existing thread]",
	[S_MAIN] = "main", [S_EXIT] = "[thread exit]", [S_STACK_LOST] = "[stack lost]",
	[S_NO_FRAMES] = "[no frames]", [S_WAKE] = "[wake]",
};

struct mthread {
	uint64_t g;             /* 0: not created yet */
	uint64_t seq;           /* §2.3 counter */
	uint64_t dep;           /* tick of the last event concerning this G */
	uint64_t label;         /* string id of its name, 0 = none */
	uint64_t start_routine;
	uint64_t wait_obj;      /* hash key of the object waited on */
	uint64_t block_ns;      /* fact time of the block */
	uint64_t sys_ns;        /* fact time of the pending syscall */
	uint32_t sys_stack;
	uint32_t sys_p;
	uint32_t p;             /* P it runs on when T_RUNNING */
	uint32_t hnext;         /* next waiter in its wait bucket (serial), 0 = end */
	uint8_t state;
	uint8_t wait_kind;      /* gt_block_kind, WAIT_NET, WAIT_PROLOGUE */
	uint8_t sys_fd_kind;
	bool in_syscall;        /* a syscall began and is not yet resolved */
	bool sys_awaiting_end;  /* resolved as blocked before its end fact arrived */
	bool in_wait_list;
	bool prologue_start;    /* existed at start, running: start after the Gomaxprocs */
	uint32_t first_cpu;
	uint32_t serial;
	uint64_t ahead_head;    /* seq of its first fact waiting in the lookahead, 0 = none */
	uint64_t ahead_tail;    /* seq of its last one there */
	uint32_t ahead_tail_idx;
	uint8_t n_regions;      /* open user regions, innermost last */
	struct {
		uint64_t task, name;
	} regions[MAX_REGIONS];
};

struct mproc {
	uint32_t running;       /* thread serial, 0 = none */
	bool started;
	uint64_t last;          /* last tick on this P */
};

/* u64 -> u64 map, open addressing, no deletion (caches sized by start routines). */
struct u64map {
	uint64_t *keys, *vals;
	size_t n, cap;
};

/* The lookahead: facts wait here before the model processes them, so that a release can
 * see which of its waiters resumes first. */
#define AHEAD_RECORDS 4096u
#define AHEAD_BYTES (1u << 20)

struct ahead_entry {
	uint64_t seq;
	uint64_t tsc;
	uint64_t next_same;     /* seq of the next fact of the same thread, 0 = none */
	uint32_t off, len;      /* record bytes in the arena */
	uint32_t cpu;
};

struct gt_model {
	struct gt_wire *w;
	struct gt_model_options opt;
	struct gt_file_header h;
	struct gt_model_counters ctr;

	struct mthread *pages[(1u << 24) / 4096];  /* threads by serial, see thread_get */
	uint32_t max_serial;
	uint64_t next_g;

	struct mproc *ps;           /* P 0 (metadata, prologue) .. n_cpus */
	uint32_t n_ps;

	uint32_t *buckets;          /* wait lists: heads (serials) of waiter chains */
	size_t n_buckets;
	size_t n_waiting;

	bool prologue_closed;
	uint64_t floor;             /* live events are at or after this tick */
	uint64_t now;               /* latest fact time seen */
	uint64_t t0;                /* time of the first fact: where the prologue sits */
	char default_name[16];      /* the name threads inherit: the executable's, cut to 15 */
	bool seen_fact;

	uint64_t synth_stack[S_COUNT];
	struct u64map routine_stacks;
	struct u64map tasks;        /* user task id -> 1 while live */

	uint8_t *stack_defined, *stack_referenced;  /* bitmaps over captured stack ids */

	struct ahead_entry *ahead;
	uint8_t *ahead_arena;
	size_t ahead_first, ahead_n;      /* ring of entries */
	size_t arena_head, arena_tail;    /* bytes in use: [head, tail) with wrap */
	size_t arena_used;
	uint64_t ahead_seq;

	/* clock fit: sums over (tsc - tsc0, mono - mono0) */
	double fit_n, fit_sx, fit_sy, fit_sxx, fit_sxy;
	uint64_t fit_tsc0, fit_mono0;
};

/* ---------------------------------------------------------------------------------------- */

static bool u64map_grow(struct u64map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 256;
	uint64_t *k = calloc(cap, sizeof *k), *v = calloc(cap, sizeof *v);
	if (!k || !v) {
		free(k);
		free(v);
		return false;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		size_t j = (m->keys[i] * 0x9e3779b97f4a7c15ull) >> 7 & (cap - 1);
		while (k[j])
			j = (j + 1) & (cap - 1);
		k[j] = m->keys[i];
		v[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = k;
	m->vals = v;
	m->cap = cap;
	return true;
}

/* Slot of key (non-zero); *found tells whether it holds key already. */
static uint64_t *u64map_slot(struct u64map *m, uint64_t key, bool *found)
{
	*found = false;
	if ((m->n + 1) * 2 > m->cap && !u64map_grow(m))
		return NULL;
	size_t j = (key * 0x9e3779b97f4a7c15ull) >> 7 & (m->cap - 1);
	while (m->keys[j] && m->keys[j] != key)
		j = (j + 1) & (m->cap - 1);
	if (m->keys[j]) {
		*found = true;
	} else {
		m->keys[j] = key;
		m->n++;
	}
	return &m->vals[j];
}

/* ---------------------------------------------------------------------------------------- */

uint64_t gt_model_ticks(const struct gt_model *m, uint64_t tsc)
{
	const struct gt_file_header *h = &m->h;
	if (h->clock_source == GT_CLOCK_MONOTONIC || !h->tsc_hz) {
		if (tsc >= h->start_tsc)
			return TICKS_OFFSET + (tsc - h->start_tsc);
		uint64_t back = h->start_tsc - tsc;
		return back < TICKS_OFFSET ? TICKS_OFFSET - back : 0;
	}
	if (tsc >= h->start_tsc) {
		unsigned __int128 ns = (unsigned __int128)(tsc - h->start_tsc) * 1000000000u / h->tsc_hz;
		return TICKS_OFFSET + (uint64_t)ns;
	}
	unsigned __int128 back = (unsigned __int128)(h->start_tsc - tsc) * 1000000000u / h->tsc_hz;
	return back < TICKS_OFFSET ? TICKS_OFFSET - (uint64_t)back : 0;
}

static void fit_add(struct gt_model *m, uint64_t tsc, uint64_t mono)
{
	if (!m->fit_n) {
		m->fit_tsc0 = tsc;
		m->fit_mono0 = mono;
	}
	double x = (double)(int64_t)(tsc - m->fit_tsc0), y = (double)(int64_t)(mono - m->fit_mono0);
	m->fit_n += 1;
	m->fit_sx += x;
	m->fit_sy += y;
	m->fit_sxx += x * x;
	m->fit_sxy += x * y;
}

/* Frequency making the nominal-rate ticks read as fitted nanoseconds. */
static uint64_t fit_frequency(const struct gt_model *m)
{
	if (m->h.clock_source == GT_CLOCK_MONOTONIC || !m->h.tsc_hz || m->fit_n < 2)
		return GT_WIRE_FREQUENCY_NS;
	double den = m->fit_n * m->fit_sxx - m->fit_sx * m->fit_sx;
	if (den <= 0)
		return GT_WIRE_FREQUENCY_NS;
	double ns_per_tick = (m->fit_n * m->fit_sxy - m->fit_sx * m->fit_sy) / den;
	double span_ns = (m->fit_sxx / m->fit_n) > 0 ? ns_per_tick * 1.0 : 0;
	if (ns_per_tick <= 0 || span_ns <= 0)
		return GT_WIRE_FREQUENCY_NS;
	double fitted_hz = 1e9 / ns_per_tick;
	double ratio = fitted_hz / (double)m->h.tsc_hz;
	if (ratio < 0.99 || ratio > 1.01)   /* a bad fit: trust the header */
		return GT_WIRE_FREQUENCY_NS;
	return (uint64_t)(1e9 * ratio + 0.5);
}

/* ---------------------------------------------------------------------------------------- */

/* Two-level table (pages of 4096 threads) so that thread pointers never move. */
#define PAGE_THREADS 4096u
#define MAX_SERIAL (1u << 24)

static struct mthread *thread_get(struct gt_model *m, uint32_t serial)
{
	if (!serial || serial >= MAX_SERIAL)
		return NULL;
	struct mthread **page = &m->pages[serial / PAGE_THREADS];
	if (!*page) {
		*page = calloc(PAGE_THREADS, sizeof **page);
		if (!*page)
			return NULL;
		for (uint32_t i = 0; i < PAGE_THREADS; i++)
			(*page)[i].serial = (serial / PAGE_THREADS) * PAGE_THREADS + i;
	}
	if (serial > m->max_serial)
		m->max_serial = serial;
	return &(*page)[serial % PAGE_THREADS];
}

/* An existing entry (serial known to be allocated). */
static struct mthread *thread_at(const struct gt_model *m, uint32_t serial)
{
	return &m->pages[serial / PAGE_THREADS][serial % PAGE_THREADS];
}

static uint32_t serial_of(const struct gt_model *m, const struct mthread *t)
{
	(void)m;
	return t->serial;
}

/* Calls f on every allocated thread. */
#define FOR_EACH_THREAD(m, t)                                                              \
	for (uint32_t s_ = 1; s_ <= (m)->max_serial; s_++)                                \
		for (struct mthread *t = (m)->pages[s_ / PAGE_THREADS]                      \
					     ? thread_at((m), s_) : NULL;                   \
		     t; t = NULL)

static uint64_t take_tick(struct gt_model *m, uint32_t p, struct mthread *a, struct mthread *b,
			  uint64_t want)
{
	uint64_t t = want < m->floor ? m->floor : want;
	if (t <= m->ps[p].last)
		t = m->ps[p].last + 1;
	if (a && t <= a->dep)
		t = a->dep + 1;
	if (b && t <= b->dep)
		t = b->dep + 1;
	m->ps[p].last = t;
	if (a)
		a->dep = t;
	if (b)
		b->dep = t;
	return t;
}

static void emit(struct gt_model *m, uint32_t p, enum gt_go_event ev, uint64_t want,
		 struct mthread *a, struct mthread *b, uint64_t a0, uint64_t a1, uint64_t a2)
{
	uint64_t args[3] = {a0, a1, a2};
	gt_wire_event(m->w, p, ev, take_tick(m, p, a, b, want), args);
}

static void emit4(struct gt_model *m, uint32_t p, enum gt_go_event ev, uint64_t want,
		  struct mthread *a, uint64_t a0, uint64_t a1, uint64_t a2, uint64_t a3)
{
	uint64_t args[4] = {a0, a1, a2, a3};
	gt_wire_event(m->w, p, ev, take_tick(m, p, a, NULL, want), args);
}

/* ---------------------------------------------------------------------------------------- */
/* stacks */

static uint64_t synth_stack(struct gt_model *m, enum synth s)
{
	if (!m->synth_stack[s]) {
		struct gt_wire_frame f = {SYNTH_PC_BASE + (uint64_t)s + 1, synth_names[s], "[gotrace]", 0};
		m->synth_stack[s] = gt_wire_stack(m->w, &f, 1);
	}
	return m->synth_stack[s];
}

static bool bit_test(const uint8_t *b, uint32_t i)
{
	return b && (b[i >> 3] >> (i & 7)) & 1;
}

static void bit_set(uint8_t *b, uint32_t i)
{
	if (b)
		b[i >> 3] |= (uint8_t)(1u << (i & 7));
}

/* A captured stack id as written in events: the same number (they are 1 .. 2^24). */
static uint64_t captured_stack(struct gt_model *m, uint32_t id)
{
	if (!id || id >= (1u << 24))
		return 0;
	bit_set(m->stack_referenced, id);
	return id;
}

static void addr_name(char *buf, size_t len, uint64_t pc)
{
	snprintf(buf, len, "0x%" PRIx64, pc);
}

static void define_captured_stack(struct gt_model *m, const struct gt_p_stack *st, const uint64_t *pcs)
{
	if (!st->id || st->id >= (1u << 24) || bit_test(m->stack_defined, st->id))
		return;
	bit_set(m->stack_defined, st->id);
	size_t n = st->nframes;
	struct gt_frame frames[GT_WIRE_MAX_FRAMES];
	struct gt_wire_frame wf[GT_WIRE_MAX_FRAMES];
	char names[GT_WIRE_MAX_FRAMES][24];
	size_t k = 0;
	if (m->opt.sym) {
		k = gt_sym_stack(m->opt.sym, pcs, n, frames, GT_WIRE_MAX_FRAMES);
		for (size_t i = 0; i < k; i++)
			wf[i] = (struct gt_wire_frame){frames[i].pc, frames[i].func, frames[i].file,
						       frames[i].line};
	} else {
		/* no symbolizer: keep the innermost frames and the outermost one */
		for (size_t i = 0; i < n && k < GT_WIRE_MAX_FRAMES; i++) {
			size_t src = (k == GT_WIRE_MAX_FRAMES - 1 && n > GT_WIRE_MAX_FRAMES) ? n - 1 : i;
			uint64_t pc = pcs[src] ? pcs[src] - 1 : 0;
			addr_name(names[k], sizeof names[k], pc);
			wf[k] = (struct gt_wire_frame){pc, names[k], "?", 0};
			k++;
		}
	}
	if (!k) {
		/* every frame was the tracer's or start-up code: keep the stack non-empty so
		 * that profiles and unblock intervals still count it */
		wf[0] = (struct gt_wire_frame){SYNTH_PC_BASE + S_NO_FRAMES + 1, synth_names[S_NO_FRAMES],
					       "[gotrace]", 0};
		k = 1;
	}
	gt_wire_define_stack(m->w, st->id, wf, k);
}

/* One-frame new-stack of a start routine (its entry address: the same for every thread
 * started there, so the goroutine analysis groups them). */
static uint64_t routine_stack(struct gt_model *m, uint64_t entry, enum synth fallback)
{
	if (!entry)
		return synth_stack(m, fallback);
	bool found;
	uint64_t *slot = u64map_slot(&m->routine_stacks, entry, &found);
	if (slot && found)
		return *slot;
	struct gt_wire_frame f;
	char name[24];
	if (m->opt.sym) {
		struct gt_frame fr = gt_sym_function(m->opt.sym, entry);
		f = (struct gt_wire_frame){entry, fr.func, fr.file, fr.line};
	} else {
		addr_name(name, sizeof name, entry);
		f = (struct gt_wire_frame){entry, name, "?", 0};
	}
	uint64_t id = gt_wire_stack(m->w, &f, 1);
	if (slot)
		*slot = id;
	return id;
}

/* ---------------------------------------------------------------------------------------- */
/* wait lists: chains of waiting threads per hash bucket, in block order */

static size_t bucket_of(const struct gt_model *m, uint64_t key)
{
	return (size_t)((key * 0x9e3779b97f4a7c15ull) >> 17) & (m->n_buckets - 1);
}

static void wait_list_add(struct gt_model *m, struct mthread *t, uint64_t key);

static void wait_list_rehash(struct gt_model *m, size_t n_buckets)
{
	uint32_t *b = calloc(n_buckets, sizeof *b);
	if (!b)
		return;
	free(m->buckets);
	m->buckets = b;
	m->n_buckets = n_buckets;
	/* re-chain in block order: waiters sorted by block time within a key */
	FOR_EACH_THREAD(m, t) {
		if (!t->in_wait_list)
			continue;
		t->in_wait_list = false;
		m->n_waiting--;
		wait_list_add(m, t, t->wait_obj);
	}
}

static void wait_list_add(struct gt_model *m, struct mthread *t, uint64_t key)
{
	if (m->n_waiting * 2 >= m->n_buckets)
		wait_list_rehash(m, m->n_buckets ? m->n_buckets * 4 : 256);
	if (!m->n_buckets)
		return;
	uint32_t serial = serial_of(m, t);
	t->wait_obj = key;
	t->hnext = 0;
	uint32_t *link = &m->buckets[bucket_of(m, key)];
	/* insert keeping block order (ties: arrival order) */
	while (*link && thread_at(m, *link)->block_ns <= t->block_ns)
		link = &thread_at(m, *link)->hnext;
	t->hnext = *link;
	*link = serial;
	t->in_wait_list = true;
	m->n_waiting++;
}

static void wait_list_remove(struct gt_model *m, struct mthread *t)
{
	if (!t->in_wait_list)
		return;
	uint32_t serial = serial_of(m, t);
	uint32_t *link = &m->buckets[bucket_of(m, t->wait_obj)];
	while (*link && *link != serial)
		link = &thread_at(m, *link)->hnext;
	if (*link)
		*link = t->hnext;
	t->hnext = 0;
	t->in_wait_list = false;
	m->n_waiting--;
}

/* ---------------------------------------------------------------------------------------- */
/* creation */

static void create_in_prologue(struct gt_model *m, struct mthread *t, uint32_t serial)
{
	t->g = serial == 1 ? 1 : m->next_g++;
	t->seq = 0;
	t->state = T_RUNNABLE;
	uint64_t ns = routine_stack(m, t->start_routine, serial == 1 ? S_MAIN : S_PREEXISTING);
	emit(m, 0, GT_GO_GO_CREATE, m->t0, t, NULL, t->g, ns, 0);
	m->ctr.threads++;
}

/* Serial 1 is G1 and exists from the first event on: the earliest event is its GoCreate. */
static void ensure_main(struct gt_model *m)
{
	struct mthread *main_t = thread_get(m, 1);
	if (main_t && !main_t->g)
		create_in_prologue(m, main_t, 1);
}

static void run_thread(struct gt_model *m, struct mthread *t, uint32_t cpu, uint64_t ns,
		       enum synth reason);

static void close_prologue(struct gt_model *m)
{
	if (m->prologue_closed)
		return;
	ensure_main(m);
	/* Gomaxprocs strictly after every prologue event, strictly before every live one */
	emit(m, 0, GT_GO_GOMAXPROCS, m->t0, NULL, NULL, m->n_ps, 0, 0);
	m->floor = m->ps[0].last + 1;
	m->prologue_closed = true;
	FOR_EACH_THREAD(m, t) {
		if (t->prologue_start && t->state == T_RUNNABLE && !m->ps[t->first_cpu + 1].running)
			run_thread(m, t, t->first_cpu, m->floor, S_UNKNOWN);
		t->prologue_start = false;
	}
}

/* A thread met through a fact before any creation fact: created where it shows up. */
static struct mthread *known_thread(struct gt_model *m, uint32_t serial)
{
	if (!serial)
		return NULL;
	struct mthread *t = thread_get(m, serial);
	if (!t)
		return NULL;
	if (!t->g && !m->prologue_closed) {
		if (serial != 1)
			ensure_main(m);
		create_in_prologue(m, t, serial);
	}
	return t;
}

/* ---------------------------------------------------------------------------------------- */
/* syscalls */

static bool fd_kind_is_net(uint8_t k)
{
	return k == GT_FD_SOCKET || k == GT_FD_POLL;
}

/* Decides a pending syscall of t (running on sys_p since sys_ns): short → GoSysCall;
 * blocking → GoBlockNet for network kinds, else GoSysCall + GoSysBlock + ProcStop. */
static void syscall_resolve(struct gt_model *m, struct mthread *t, uint64_t now, bool blocked)
{
	if (!t->in_syscall)
		return;
	t->in_syscall = false;
	t->sys_awaiting_end = blocked;
	uint32_t p = t->sys_p;
	uint64_t stk = captured_stack(m, t->sys_stack);
	if (!blocked && now - t->sys_ns <= m->opt.syscall_threshold_ns) {
		emit(m, p, GT_GO_GO_SYSCALL, t->sys_ns, t, NULL, stk, 0, 0);
		m->ctr.syscalls_short++;
		return;
	}
	if (fd_kind_is_net(t->sys_fd_kind)) {
		emit(m, p, GT_GO_GO_BLOCK_NET, t->sys_ns, t, NULL, stk, 0, 0);
		t->state = T_WAITING;
		t->wait_kind = WAIT_NET;
		m->ctr.net_waits++;
	} else {
		emit(m, p, GT_GO_GO_SYSCALL, t->sys_ns, t, NULL, stk, 0, 0);
		emit(m, p, GT_GO_GO_SYSBLOCK, t->sys_ns, t, NULL, 0, 0, 0);
		emit(m, p, GT_GO_PROC_STOP, t->sys_ns, NULL, NULL, 0, 0, 0);
		m->ps[p].started = false;
		t->state = T_SYSBLOCKED;
		m->ctr.syscalls_blocking++;
	}
	m->ps[p].running = 0;
}

/* ---------------------------------------------------------------------------------------- */
/* the primitive (§5.2): thread t runs on CPU cpu at time ns */

static void deschedule_for(struct gt_model *m, uint32_t p, uint64_t ns)
{
	uint32_t x = m->ps[p].running;
	if (!x)
		return;
	struct mthread *xt = thread_at(m, x);
	if (xt->in_syscall) {
		/* someone else runs on its CPU: the syscall blocked */
		syscall_resolve(m, xt, ns, true);
		return;
	}
	emit(m, p, GT_GO_GO_PREEMPT, ns, xt, NULL, 0, 0, 0);
	xt->state = T_RUNNABLE;
	m->ps[p].running = 0;
	m->ctr.preemptions++;
}

static void run_thread(struct gt_model *m, struct mthread *t, uint32_t cpu, uint64_t ns,
		       enum synth reason)
{
	uint32_t p = cpu + 1;
	if (t->state == T_RUNNING && t->p == p)
		return;
	/* 1: another G on this P is preempted (invisible OS preemption) */
	if (m->ps[p].running && m->ps[p].running != t->serial)
		deschedule_for(m, p, ns);
	/* 2: migration: preempted on its old P strictly before it starts here */
	if (t->state == T_RUNNING) {
		emit(m, t->p, GT_GO_GO_PREEMPT, ns, t, NULL, 0, 0, 0);
		m->ps[t->p].running = 0;
		t->state = T_RUNNABLE;
		m->ctr.migrations++;
	}
	/* 3: a stopped P starts (thread id = P id = cpu + 1, never 0) */
	if (!m->ps[p].started) {
		emit(m, p, GT_GO_PROC_START, ns, NULL, NULL, p, 0, 0);
		m->ps[p].started = true;
	}
	if (!t->g) {
		/* first seen mid-capture: created right here, by no goroutine */
		t->g = m->next_g++;
		t->seq = 0;
		emit(m, p, GT_GO_GO_CREATE, ns, t, NULL, t->g,
		     routine_stack(m, t->start_routine, S_PREEXISTING), 0);
		t->state = T_RUNNABLE;
		m->ctr.threads++;
	}
	/* 4: nobody known woke it */
	if (t->state == T_WAITING) {
		enum synth r = t->wait_kind == WAIT_NET ? S_NETPOLL
			     : t->wait_kind == GT_BK_SLEEP && reason == S_UNKNOWN ? S_TIMER
										 : reason;
		wait_list_remove(m, t);
		emit(m, p, GT_GO_GO_UNBLOCK, ns, t, NULL, t->g, ++t->seq, synth_stack(m, r));
		m->ctr.unknown_wakeups++;
	} else if (t->state == T_SYSBLOCKED) {
		emit(m, p, GT_GO_GO_SYSEXIT, ns, t, NULL, t->g, ++t->seq, 0);
	}
	/* 5 */
	if (t->label)
		emit(m, p, GT_GO_GO_START_LABEL, ns, t, NULL, t->g, ++t->seq, t->label);
	else
		emit(m, p, GT_GO_GO_START, ns, t, NULL, t->g, ++t->seq, 0);
	t->state = T_RUNNING;
	t->p = p;
	m->ps[p].running = serial_of(m, t);
}

/* The thread of a fact, made running on its CPU; NULL when the fact is to be skipped. */
static struct mthread *fact_thread(struct gt_model *m, const struct gt_capture_record *r,
				   uint64_t ns, enum synth reason)
{
	struct mthread *t = known_thread(m, r->rec->thread);
	if (!t)
		return NULL;
	if (t->state == T_DEAD) {
		m->ctr.facts_after_end++;
		return NULL;
	}
	close_prologue(m);
	if (!t->g && r->rec->type != GT_THREAD_EXISTING)
		m->ctr.threads_appeared++;
	if (t->in_syscall && r->rec->type != GT_SYSCALL_END)
		syscall_resolve(m, t, ns, r->cpu + 1 != t->sys_p);
	if (r->rec->type != GT_SYSCALL_END)
		t->sys_awaiting_end = false;
	run_thread(m, t, r->cpu, ns, reason);
	return t;
}

/* ---------------------------------------------------------------------------------------- */
/* facts */

static enum synth end_reason(uint32_t result)
{
	switch (result) {
	case GT_BR_TIMEOUT: return S_TIMEOUT;
	case GT_BR_SIGNAL: return S_SIGNAL;
	default: return S_UNKNOWN;
	}
}

static void unblock_by(struct gt_model *m, struct mthread *waker, struct mthread *w,
		       uint64_t ns, uint64_t stack)
{
	wait_list_remove(m, w);
	emit(m, waker->p, GT_GO_GO_UNBLOCK, ns, waker, w, w->g, ++w->seq, stack);
	w->state = T_RUNNABLE;
	m->ctr.wakes_matched++;
}

/* Wakes up to count waiters on key that blocked strictly before ns.  When fewer may be woken
 * than wait, the ones whose next fact comes first in the lookahead are chosen (a mutex is not
 * FIFO: the waiter that resumes first is the one this release let in), then block order. */
static void wake_waiters(struct gt_model *m, struct mthread *waker, uint64_t key, uint32_t count,
			 uint64_t ns, uint64_t stack)
{
	if (!m->n_buckets)
		return;
	for (uint32_t s = m->buckets[bucket_of(m, key)]; s;) {
		struct mthread *w = thread_at(m, s);
		s = w->hnext;
		if (w->wait_obj == key && w->state == T_WAITING && w->block_ns >= ns)
			m->ctr.causal_fallbacks++;
	}
	while (count) {
		struct mthread *best = NULL;
		uint64_t best_seq = UINT64_MAX;
		for (uint32_t s = m->buckets[bucket_of(m, key)]; s;) {
			struct mthread *w = thread_at(m, s);
			s = w->hnext;
			if (w->wait_obj != key || w->state != T_WAITING || w->block_ns >= ns)
				continue;
			uint64_t seq = w->ahead_head ? w->ahead_head : UINT64_MAX;
			if (!best || seq < best_seq) {
				best = w;
				best_seq = seq;
			}
		}
		if (!best)
			break;
		unblock_by(m, waker, best, ns, stack);
		if (count != GT_WAKE_ALL)
			count--;
	}
}

static void fact_block_begin(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	const struct gt_p_block *b = r->payload;
	struct mthread *t = fact_thread(m, r, ns, S_UNKNOWN);
	if (!t)
		return;
	uint8_t kind = r->rec->aux;
	uint64_t stk = captured_stack(m, b->stack);
	enum gt_go_event ev = GT_GO_GO_BLOCK_SYNC;
	uint64_t key = b->obj;
	if (kind == GT_BK_JOIN) {
		struct mthread *target = b->obj < (1u << 24) ? thread_get(m, (uint32_t)b->obj) : NULL;
		if (target && target->state == T_DEAD)
			return; /* joining a dead thread does not block */
		key = b->obj | JOIN_KEY_BIT;
	} else if (kind == GT_BK_COND) {
		ev = GT_GO_GO_BLOCK_COND;
	} else if (kind == GT_BK_SLEEP) {
		ev = GT_GO_GO_SLEEP;
	}
	emit(m, t->p, ev, ns, t, NULL, stk, 0, 0);
	m->ps[t->p].running = 0;
	t->state = T_WAITING;
	t->wait_kind = kind;
	t->block_ns = ns;
	if (kind != GT_BK_SLEEP)
		wait_list_add(m, t, key);
}

static void fact_block_end(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	const struct gt_p_block_end *e = r->payload;
	struct mthread *t = known_thread(m, r->rec->thread);
	if (t && t->state != T_WAITING && t->state != T_RUNNABLE && t->state != T_DEAD && t->g &&
	    r->rec->aux != GT_BK_JOIN)
		m->ctr.ends_without_begin++;
	fact_thread(m, r, ns, end_reason(e->result));
}

static void fact_wake(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	const struct gt_p_wake *wk = r->payload;
	struct mthread *t = fact_thread(m, r, ns, S_UNKNOWN);
	if (!t)
		return;
	uint64_t stk = captured_stack(m, wk->stack);
	if (!stk)
		stk = synth_stack(m, S_WAKE);
	uint64_t key = r->rec->aux == GT_BK_JOIN ? wk->obj | JOIN_KEY_BIT : wk->obj;
	wake_waiters(m, t, key, wk->count ? wk->count : 1, ns, stk);
}

static void fact_thread_new(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	const struct gt_p_thread_new *n = r->payload;
	struct mthread *t = fact_thread(m, r, ns, S_UNKNOWN);
	if (!t)
		return;
	struct mthread *c = n->child ? thread_get(m, n->child) : NULL;
	if (!c || c == t)
		return;
	if (c->g) {
		m->ctr.duplicate_creates++;
		return;
	}
	c->start_routine = n->start_routine;
	c->g = m->next_g++;
	c->seq = 0;
	c->state = T_RUNNABLE;
	/* never an empty creator stack: Go 1.19's task analysis reads its first frame when the
	 * creator is inside a user region */
	uint64_t stk = captured_stack(m, n->stack);
	emit(m, t->p, GT_GO_GO_CREATE, ns, t, c, c->g, routine_stack(m, n->start_routine, S_PREEXISTING),
	     stk ? stk : synth_stack(m, S_NO_FRAMES));
	m->ctr.threads++;
}

static void fact_thread_start(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	const struct gt_p_thread_start *s = r->payload;
	struct mthread *t = thread_get(m, r->rec->thread);
	if (t && !t->g && s->start_routine)
		t->start_routine = s->start_routine;
	fact_thread(m, r, ns, S_UNKNOWN);
}

static void fact_thread_end(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	struct mthread *t = fact_thread(m, r, ns, S_UNKNOWN);
	if (!t)
		return;
	wake_waiters(m, t, serial_of(m, t) | JOIN_KEY_BIT, GT_WAKE_ALL, ns, synth_stack(m, S_EXIT));
	emit(m, t->p, GT_GO_GO_END, ns, t, NULL, 0, 0, 0);
	m->ps[t->p].running = 0;
	t->state = T_DEAD;
}

static void fact_existing(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	const struct gt_p_thread_start *s = r->payload;
	uint32_t serial = r->rec->thread;
	struct mthread *t = serial ? thread_get(m, serial) : NULL;
	if (!t || t->g) {
		if (t && m->prologue_closed && t->state != T_DEAD)
			fact_thread(m, r, ns, S_UNKNOWN);
		return;
	}
	t->start_routine = s->start_routine;
	if (m->prologue_closed) {
		/* met later by a hook: a live creation where it runs */
		fact_thread(m, r, ns, S_UNKNOWN);
		return;
	}
	if (serial != 1)
		ensure_main(m);
	create_in_prologue(m, t, serial);
	if (r->rec->aux & 1) {
		emit(m, 0, GT_GO_GO_WAITING, m->t0, t, NULL, t->g, 0, 0);
		t->seq++;
		t->state = T_WAITING;
		t->wait_kind = WAIT_PROLOGUE;
		t->block_ns = ns;
	} else {
		t->prologue_start = true;
		t->first_cpu = r->cpu;
	}
}

static void fact_syscall_begin(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	const struct gt_p_syscall *s = r->payload;
	struct mthread *t = fact_thread(m, r, ns, S_UNKNOWN);
	if (!t)
		return;
	t->in_syscall = true;
	t->sys_ns = ns;
	t->sys_stack = s->stack;
	t->sys_p = t->p;
	t->sys_fd_kind = r->rec->aux;
}

static void fact_syscall_end(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	struct mthread *t = known_thread(m, r->rec->thread);
	if (!t)
		return;
	if (t->in_syscall)
		syscall_resolve(m, t, ns, r->cpu + 1 != t->sys_p);
	else if (t->g && t->state != T_DEAD && !t->sys_awaiting_end)
		m->ctr.ends_without_begin++;
	t->sys_awaiting_end = false;
	fact_thread(m, r, ns, S_UNKNOWN);
}

static void fact_yield(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	const struct gt_p_stackonly *s = r->payload;
	struct mthread *t = fact_thread(m, r, ns, S_UNKNOWN);
	if (!t)
		return;
	emit(m, t->p, GT_GO_GO_SCHED, ns, t, NULL, captured_stack(m, s->stack), 0, 0);
	m->ps[t->p].running = 0;
	t->state = T_RUNNABLE;
}

static void fact_name(struct gt_model *m, const struct gt_capture_record *r)
{
	const struct gt_p_thread_name *n = r->payload;
	struct mthread *t = r->rec->thread ? thread_get(m, r->rec->thread) : NULL;
	if (!t)
		return;
	size_t len = strnlen(n->name, sizeof n->name);
	/* every thread starts with the process name: it tells nothing, label only real names */
	if (len == strlen(m->default_name) && !memcmp(n->name, m->default_name, len)) {
		t->label = 0;
		return;
	}
	t->label = gt_wire_string(m->w, n->name, len);
}

static void fact_module(struct gt_model *m, const struct gt_capture_record *r)
{
	const struct gt_p_module *mod = r->payload;
	if (!m->opt.sym)
		return;
	const uint8_t *build_id = (const uint8_t *)(mod + 1);
	char path[GT_PATH_MAX + 1];
	memcpy(path, build_id + mod->build_id_len, mod->path_len);
	path[mod->path_len] = 0;
	gt_sym_add_module(m->opt.sym, path, build_id, mod->build_id_len, mod->base, mod->lo, mod->hi,
			  mod->flags);
}

/* User tasks, regions and logs on the thread's G.  Readers reject a region end that is not
 * the innermost open region of its G and a task id live twice: such facts are skipped. */
static void fact_user(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	const struct gt_p_user *u = r->payload;
	struct mthread *t = fact_thread(m, r, ns, S_UNKNOWN);
	if (!t)
		return;
	const char *name = (const char *)(u + 1);
	const char *msg = name + u->name_len;
	uint64_t stk = captured_stack(m, u->stack);
	if (!stk)
		stk = synth_stack(m, S_NO_FRAMES);   /* region analysis reads the first frame */
	uint64_t name_id = u->name_len ? gt_wire_string(m->w, name, u->name_len)
				       : gt_wire_cstring(m->w, "[unnamed]");
	bool found = false;
	uint64_t *live = NULL;
	switch (r->rec->aux) {
	case GT_USER_TASK_BEGIN:
		live = u->id ? u64map_slot(&m->tasks, u->id, &found) : NULL;
		if (!live || (found && *live))
			break;
		*live = 1;
		emit4(m, t->p, GT_GO_USER_TASK_CREATE, ns, t, u->id, u->parent, name_id, stk);
		m->ctr.user_annotations++;
		return;
	case GT_USER_TASK_END:
		live = u->id ? u64map_slot(&m->tasks, u->id, &found) : NULL;
		if (!live || !found || !*live)
			break;
		*live = 0;
		emit(m, t->p, GT_GO_USER_TASK_END, ns, t, NULL, u->id, stk, 0);
		m->ctr.user_annotations++;
		return;
	case GT_USER_REGION_BEGIN:
		if (t->n_regions == MAX_REGIONS)
			break;
		t->regions[t->n_regions].task = u->id;
		t->regions[t->n_regions++].name = name_id;
		emit4(m, t->p, GT_GO_USER_REGION, ns, t, u->id, 0, name_id, stk);
		m->ctr.user_annotations++;
		return;
	case GT_USER_REGION_END:
		if (!t->n_regions || t->regions[t->n_regions - 1].task != u->id ||
		    t->regions[t->n_regions - 1].name != name_id)
			break;
		t->n_regions--;
		emit4(m, t->p, GT_GO_USER_REGION, ns, t, u->id, 1, name_id, stk);
		m->ctr.user_annotations++;
		return;
	case GT_USER_LOG:
		gt_wire_user_log(m->w, t->p, take_tick(m, t->p, t, NULL, ns), u->id, name_id, stk, msg,
				 u->msg_len);
		m->ctr.user_annotations++;
		return;
	default:
		break;
	}
	m->ctr.user_skipped++;
}

static bool fact_is_prologue(uint8_t type)
{
	switch (type) {
	case GT_THREAD_EXISTING: case GT_THREAD_NAME: case GT_STACK: case GT_MODULE:
	case GT_MODULE_UNLOAD: case GT_CLOCK: case GT_NOTICE: case GT_PROCESS:
		return true;
	default:
		return false;
	}
}

static void model_process(struct gt_model *m, const struct gt_capture_record *r)
{
	uint64_t ns = gt_model_ticks(m, r->tsc);
	if (!m->seen_fact) {
		m->seen_fact = true;
		m->t0 = ns;
	}
	if (ns > m->now)
		m->now = ns;
	m->ctr.facts++;
	uint8_t type = r->rec->type;
	if (!m->prologue_closed && !fact_is_prologue(type))
		close_prologue(m);
	switch (type) {
	case GT_THREAD_NEW: fact_thread_new(m, r, ns); break;
	case GT_THREAD_START: fact_thread_start(m, r, ns); break;
	case GT_THREAD_END: fact_thread_end(m, r, ns); break;
	case GT_THREAD_NAME: fact_name(m, r); break;
	case GT_THREAD_EXISTING: fact_existing(m, r, ns); break;
	case GT_BLOCK_BEGIN: fact_block_begin(m, r, ns); break;
	case GT_BLOCK_END: fact_block_end(m, r, ns); break;
	case GT_WAKE: fact_wake(m, r, ns); break;
	case GT_SYSCALL_BEGIN: fact_syscall_begin(m, r, ns); break;
	case GT_SYSCALL_END: fact_syscall_end(m, r, ns); break;
	case GT_YIELD: fact_yield(m, r, ns); break;
	case GT_STACK: {
		const struct gt_p_stack *st = r->payload;
		define_captured_stack(m, st, (const uint64_t *)(st + 1));
		break;
	}
	case GT_MODULE: fact_module(m, r); break;
	case GT_CLOCK: {
		const struct gt_p_clock *c = r->payload;
		fit_add(m, r->rec->tsc, c->mono_ns);
		break;
	}
	case GT_NOTICE: {
		const struct gt_p_notice *n = r->payload;
		if (r->rec->aux == GT_NOTICE_DROPPED)
			m->ctr.writer_dropped += n->value;
		else if (r->rec->aux == GT_NOTICE_STACKS_LOST)
			m->ctr.writer_stacks_lost += n->value;
		else if (r->rec->aux == GT_NOTICE_THREADS_LOST)
			m->ctr.writer_threads_lost += n->value;
		break;
	}
	case GT_USER: fact_user(m, r, ns); break;
	case GT_MODULE_UNLOAD: case GT_CAPTURE_END:
		break;
	default:
		m->ctr.facts_ignored++;
		break;
	}
}

/* Processes the oldest fact of the lookahead. */
static void ahead_pop(struct gt_model *m)
{
	struct ahead_entry *e = &m->ahead[m->ahead_first];
	const struct gt_rec *rec = (const struct gt_rec *)(m->ahead_arena + e->off);
	if (rec->thread) {
		struct mthread *t = thread_get(m, rec->thread);
		if (t) {
			t->ahead_head = e->next_same;
			if (t->ahead_tail == e->seq)
				t->ahead_tail = 0;
		}
	}
	struct gt_capture_record r = {
		.rec = rec,
		.payload = rec + 1,
		.payload_len = e->len - sizeof *rec,
		.cpu = e->cpu,
		.tsc = e->tsc,
	};
	m->ahead_first = (m->ahead_first + 1) % AHEAD_RECORDS;
	m->ahead_n--;
	model_process(m, &r);
	/* the record's bytes are free once processed */
	m->arena_head = e->off + e->len;
	m->arena_used -= e->len;
	if (!m->ahead_n)
		m->arena_head = m->arena_tail = m->arena_used = 0;
}

/* Arena offset for len bytes, processing old facts until they fit (contiguous, FIFO). */
static size_t ahead_alloc(struct gt_model *m, size_t len)
{
	for (;;) {
		if (!m->ahead_n)
			return 0;
		if (m->arena_tail >= m->arena_head) {
			if (m->arena_tail + len <= AHEAD_BYTES)
				return m->arena_tail;
			if (len < m->arena_head)
				return 0;   /* wrap to the start */
		} else if (m->arena_tail + len < m->arena_head) {
			return m->arena_tail;
		}
		ahead_pop(m);
	}
}

void gt_model_fact(struct gt_model *m, const struct gt_capture_record *r)
{
	size_t len = sizeof *r->rec + r->payload_len;
	if (m->ahead_n == AHEAD_RECORDS)
		ahead_pop(m);
	size_t off = ahead_alloc(m, len);
	memcpy(m->ahead_arena + off, r->rec, len);
	m->arena_tail = off + len;
	m->arena_used += len;
	size_t idx = (m->ahead_first + m->ahead_n) % AHEAD_RECORDS;
	uint64_t seq = ++m->ahead_seq;
	m->ahead[idx] = (struct ahead_entry){seq, r->tsc, 0, (uint32_t)off, (uint32_t)len, r->cpu};
	m->ahead_n++;
	struct mthread *t = r->rec->thread ? thread_get(m, r->rec->thread) : NULL;
	if (t) {
		if (t->ahead_tail)
			m->ahead[t->ahead_tail_idx].next_same = seq;
		else
			t->ahead_head = seq;
		t->ahead_tail = seq;
		t->ahead_tail_idx = (uint32_t)idx;
	}
}

struct gt_model *gt_model_new(struct gt_wire *w, const struct gt_file_header *h,
			      const struct gt_model_options *opt)
{
	struct gt_model *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	m->w = w;
	m->opt = *opt;
	m->h = *h;
	m->next_g = 2;
	m->n_ps = h->n_cpus + 1;
	m->ps = calloc(m->n_ps, sizeof *m->ps);
	/* bitmaps over 2^24 stack ids: only the pages touched become resident */
	m->stack_defined = calloc(1, (1u << 24) / 8);
	m->stack_referenced = calloc(1, (1u << 24) / 8);
	m->ahead = calloc(AHEAD_RECORDS, sizeof *m->ahead);
	m->ahead_arena = malloc(AHEAD_BYTES);
	if (!m->ps || !m->stack_defined || !m->stack_referenced || !thread_get(m, 1) || !m->ahead ||
	    !m->ahead_arena) {
		gt_model_free(m);
		return NULL;
	}
	gt_wire_set_stack_id_base(w, SYNTH_STACK_BASE);
	const char *exe = m->h.exe_path;
	m->h.exe_path[sizeof m->h.exe_path - 1] = 0;
	const char *slash = strrchr(exe, '/');
	const char *base = slash ? slash + 1 : exe;
	size_t blen = strnlen(base, sizeof m->default_name - 1);
	memcpy(m->default_name, base, blen);
	m->default_name[blen] = 0;
	if (h->clock_source != GT_CLOCK_MONOTONIC)
		fit_add(m, h->start_tsc, h->start_mono_ns);
	return m;
}

uint64_t gt_model_finish(struct gt_model *m)
{
	while (m->ahead_n)
		ahead_pop(m);
	close_prologue(m);
	FOR_EACH_THREAD(m, t) {
		if (t->in_syscall)
			syscall_resolve(m, t, m->now, false);
	}
	/* epilogue: every running G is descheduled, every running P stops (1.19 needs it) */
	for (uint32_t p = 1; p < m->n_ps; p++) {
		if (m->ps[p].running) {
			struct mthread *t = thread_at(m, m->ps[p].running);
			emit(m, p, GT_GO_GO_PREEMPT, m->now, t, NULL, 0, 0, 0);
			t->state = T_RUNNABLE;
			m->ps[p].running = 0;
		}
		if (m->ps[p].started) {
			emit(m, p, GT_GO_PROC_STOP, m->now, NULL, NULL, 0, 0, 0);
			m->ps[p].started = false;
		}
	}
	/* referenced stacks whose definition was lost get one synthetic frame */
	for (uint32_t i = 0; i < (1u << 24) / 8; i += 8) {
		uint64_t ref, def;
		memcpy(&ref, m->stack_referenced + i, 8);
		if (!ref)
			continue;
		memcpy(&def, m->stack_defined + i, 8);
		uint64_t missing = ref & ~def;
		while (missing) {
			uint32_t bit = (uint32_t)__builtin_ctzll(missing);
			missing &= missing - 1;
			uint32_t id = i * 8 + bit;
			struct gt_wire_frame f = {SYNTH_PC_BASE + S_STACK_LOST + 1, synth_names[S_STACK_LOST],
						  "[gotrace]", 0};
			gt_wire_define_stack(m->w, id, &f, 1);
			m->ctr.stacks_missing++;
		}
	}
	return fit_frequency(m);
}

void gt_model_counters(const struct gt_model *m, struct gt_model_counters *out)
{
	*out = m->ctr;
}

void gt_model_free(struct gt_model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < sizeof m->pages / sizeof m->pages[0]; i++)
		free(m->pages[i]);
	free(m->ps);
	free(m->buckets);
	free(m->routine_stacks.keys);
	free(m->routine_stacks.vals);
	free(m->tasks.keys);
	free(m->tasks.vals);
	free(m->ahead);
	free(m->ahead_arena);
	free(m->stack_defined);
	free(m->stack_referenced);
	free(m);
}
