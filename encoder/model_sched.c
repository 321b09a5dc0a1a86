/* model_sched: threads → Gs and CPUs → Ps (see model_internal.h).  Every event goes
 * through gtm_emit, which gives it max(wanted time, its P's last tick + 1, the last tick of
 * each G it concerns + 1): each P's stream strictly increases and every cross-P dependency
 * (create before start, block before unblock before start, preempt on the old P before
 * start on the new one) is strictly later in time, which both Go readers need (§2.3). */
#include "model_internal.h"
#include "syscalls.h"

#include <stdlib.h>
#include <string.h>

#include "common/grow.h"

#include "capture_set.h"
#include "critical_path.h"

/* Whether (capture, serial) of a merged trace was retired: its serials entry is gone. */
static bool serial_retired(const struct gt_model *m, uint64_t key)
{
	return m->n_retired && gt_u64map_bit(&m->serials_retired, key);
}

uint32_t gtm_serial(struct gt_model *m, uint32_t capture, uint32_t serial)
{
	if (!serial || serial >= MAX_SERIAL)
		return 0;
	if (!m->merged)
		return serial;
	uint64_t key = (uint64_t)capture << 32 | serial;
	if (serial_retired(m, key))
		return RETIRED_SERIAL;
	bool fresh;
	uint32_t ours = gtm_renumber(&m->serials, key, &m->next_serial, RETIRED_SERIAL, &fresh);
	if (fresh && serial == 1 && capture < m->n_caps)
		m->caps[capture].main_serial = ours;
	if (fresh && m->serials.n > m->threads_held_peak)
		m->threads_held_peak = m->serials.n;
	return ours;
}

uint32_t gtm_serial_find(const struct gt_model *m, uint32_t capture, uint32_t serial)
{
	if (!serial || serial >= MAX_SERIAL)
		return 0;
	if (!m->merged)
		return serial;
	uint64_t key = (uint64_t)capture << 32 | serial;
	if (serial_retired(m, key))
		return RETIRED_SERIAL;
	const uint64_t *v = gt_u64map_find(&m->serials, key);
	return v ? (uint32_t)*v : 0;
}

bool gtm_peek(const struct gt_model *m, size_t i, struct gt_capture_record *out)
{
	if (m->opt.set)
		return gt_capture_set_peek(m->opt.set, i, out);
	return m->opt.lookahead && gt_capture_peek(m->opt.lookahead, i, out);
}

uint64_t gtm_peek_base(const struct gt_model *m)
{
	if (m->opt.set)
		return gt_capture_set_delivered(m->opt.set);
	struct gt_capture_stats st = {0};
	if (m->opt.lookahead)
		gt_capture_stats(m->opt.lookahead, &st);
	return st.records;
}

struct mthread *gtm_thread_get(struct gt_model *m, uint32_t serial)
{
	if (!serial || (!m->merged && serial >= MAX_SERIAL))
		return NULL;
	if (serial == RETIRED_SERIAL || (m->n_retired && gt_u64map_bit(&m->retired, serial)))
		return &m->retired_thread;
	bool found;
	uint64_t *slot = gt_u64map_slot(&m->by_serial, serial, &found);
	if (!slot)
		return NULL;
	if (*slot)   /* 0: absent, or left by an allocation that failed */
		return (struct mthread *)(uintptr_t)*slot;
	struct mthread *t = NULL;
	if (m->n_threads == m->cap_threads) {
		size_t cap = m->cap_threads ? 2 * m->cap_threads : 64;
		struct mthread **bigger = realloc(m->threads, cap * sizeof *bigger);
		if (bigger) {
			m->threads = bigger;
			m->cap_threads = cap;
		}
	}
	if (m->n_threads < m->cap_threads)
		t = calloc(1, sizeof *t);
	if (!t)
		return NULL;
	t->serial = serial;
	/* a thread is first met through a fact of its own process */
	t->capture = m->fact_capture;
	t->label = m->caps ? m->caps[t->capture].label : 0;
	*slot = (uintptr_t)t;
	m->threads[m->n_threads++] = t;
	m->threads_met++;
	if (m->n_threads > m->threads_held_peak)
		m->threads_held_peak = m->n_threads;
	if (m->n_threads > 1 && m->threads[m->n_threads - 2]->serial > serial)
		m->threads_sorted = false;
	return t;
}

void gtm_thread_died(struct gt_model *m, struct mthread *t)
{
	t->state = T_DEAD;
	t->died_ns = m->now;
	/* no memory for the list: it is kept, as every thread once was */
	if (gt_grow(&m->dying, &m->cap_dying, m->n_dying + 1, sizeof *m->dying))
		m->dying[m->n_dying++] = t->serial;
}

/* A dead thread's CPU samples may follow its THREAD_END (its exit inside glibc and the
 * kernel) until the kernel's exit record; one that never comes is waited for this long. */
#define EXIT_WAIT_NS 100000000u
/* Samples are seen stamped after their thread's exit record too (one 0.25 ms after it, its
 * stack in the thread's own loop): the thread is held this long after its death. */
#define SAMPLE_SLACK_NS 10000000u

/* Whether something still refers to dead thread t: a wait list, a credit, a deferred
 * condition wait it is or lets in, a P, or CPU samples still to come. */
static bool still_referred(const struct gt_model *m, const struct mthread *t)
{
	if (t->in_wait_list || t->credit_count || t->defer_waiter)
		return true;
	const struct mthread *x = t->cond_releaser ? gtm_thread_find(m, t->cond_releaser) : NULL;
	if (x && x->defer_waiter == t->serial)
		return true;
	if ((t->p < m->n_ps && m->ps[t->p].running == t->serial) ||
	    (t->sys_p < m->n_ps && m->ps[t->sys_p].running == t->serial))
		return true;
	return m->kernel && t->k_seen &&
	       m->now - t->died_ns < (t->k_exited ? SAMPLE_SLACK_NS : EXIT_WAIT_NS);
}

/* Removes key from map when it still names serial (another thread may have it now). */
static void drop_if_owned(struct gt_u64map *map, uint64_t key, uint32_t serial)
{
	const uint64_t *v = gt_u64map_find(map, key);
	if (v && *v == serial)
		gt_u64map_remove(map, key);
}

/* Forgets dead t but for its serial's bit; false when memory runs out (it is kept). */
static bool retire(struct gt_model *m, struct mthread *t)
{
	if (!gt_u64map_set_bit(&m->retired, t->serial))
		return false;
	m->n_retired++;
	/* merged: its (capture, serial) as a bit, not an entry of the serials map (a thread
	 * the tracker never met keeps its entry: its capture's serial is not known here) */
	if (m->merged && t->facts) {
		uint64_t key = (uint64_t)t->facts->capture << 32 | t->facts->serial;
		if (gt_u64map_set_bit(&m->serials_retired, key))
			gt_u64map_remove(&m->serials, key);
	}
	gt_u64map_remove(&m->by_serial, t->serial);
	if (t->m_id && !(t->m_id >> 34))
		drop_if_owned(&m->m_owner, t->m_id, t->serial);
	if (gtm_tid(t))
		drop_if_owned(&m->by_tid, gtm_tid(t), t->serial);
	if (t->facts)
		gt_tracker_retire(m->tracker, t->facts->capture, t->facts->serial);
	/* the dead are mostly the last made: looked for from the end, the order kept */
	size_t i = m->n_threads;
	while (i && m->threads[i - 1] != t)
		i--;
	if (i) {
		memmove(&m->threads[i - 1], &m->threads[i], (m->n_threads - i) * sizeof *m->threads);
		m->n_threads--;
	}
	free(t);
	return true;
}

void gt_model_ended_before_window(struct gt_model *m, uint32_t capture, uint32_t serial)
{
	struct mthread *t = gtm_thread_find(m, gtm_serial_find(m, capture, serial));
	if (t && !t->g)
		retire(m, t);
}

void gtm_retire_dead(struct gt_model *m)
{
	/* looked at again once as many more died as are waiting: each death looked at a
	 * bounded number of times on average, whatever keeps some waiting */
	if (m->n_dying < m->dying_scan_at)
		return;
	size_t kept = 0;
	for (size_t i = 0; i < m->n_dying; i++) {
		struct mthread *t = gtm_thread_find(m, m->dying[i]);
		if (t && (still_referred(m, t) || !retire(m, t)))
			m->dying[kept++] = m->dying[i];
	}
	m->n_dying = kept;
	m->dying_scan_at = 2 * kept + 1;
}

static int by_serial(const void *a, const void *b)
{
	const struct mthread *x = *(struct mthread *const *)a, *y = *(struct mthread *const *)b;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

size_t gtm_threads_by_serial(struct gt_model *m)
{
	if (!m->threads_sorted && m->n_threads > 1)
		qsort(m->threads, m->n_threads, sizeof *m->threads, by_serial);
	m->threads_sorted = true;
	return 0;
}

uint64_t gtm_next_tick(const struct gt_model *m, uint32_t p, const struct mthread *a,
		       const struct mthread *b, uint64_t want)
{
	uint64_t t = want < m->floor ? m->floor : want;
	if (t <= m->ps[p].last)
		t = m->ps[p].last + 1;
	if (a && t <= a->dep)
		t = a->dep + 1;
	if (b && t <= b->dep)
		t = b->dep + 1;
	return t;
}

uint64_t gtm_take_tick(struct gt_model *m, uint32_t p, struct mthread *a, struct mthread *b,
		       uint64_t want)
{
	uint64_t t = gtm_next_tick(m, p, a, b, want);
	m->ps[p].last = t;
	if (a)
		a->dep = t;
	if (b)
		b->dep = t;
	return t;
}

/* t's M in the 1.22+ format: its TID (2^33 | g while unknown), moved off the ids the
 * viewer keeps for its own rows (1000000-1000005), and g << 34 | that when another live
 * thread has it still (a TID reused or duplicated across the captures).  Chosen here,
 * taken (m_take) once the writer has its first event. */
static uint64_t m_choose(struct gt_model *m, const struct mthread *t)
{
	if (t->m_id)
		return t->m_id;
	uint64_t id = gtm_tid(t) ? gtm_tid(t) : (1ull << 33) | t->g;
	if (id >= 1000000 && id <= 1000005)
		id |= 1ull << 32;
	const uint64_t *owner = gt_u64map_find(&m->m_owner, id);
	if (owner && *owner != t->serial && gtm_thread_at(m, (uint32_t)*owner)->state != T_DEAD)
		id |= t->g << 34;
	return id;
}

static void m_take(struct gt_model *m, struct mthread *t, uint64_t id)
{
	if (t->m_id)
		return;
	if (!(id >> 34)) {   /* its TID's (g << 34 | TID is its own) */
		bool found;
		uint64_t *owner = gt_u64map_slot(&m->m_owner, id, &found);
		if (!owner)
			return;   /* no memory: chosen again next time */
		*owner = t->serial;
	}
	t->m_id = id;
}

uint64_t gtm_m_id(struct gt_model *m, struct mthread *t)
{
	uint64_t id = m_choose(m, t);
	m_take(m, t, id);
	return id;
}

/* The live state at a generation boundary (gt_wire_options.live): every P, held by the M
 * of the thread on it (a thread created on it holds it before it starts; one whose syscall
 * blocked, until that syscall's PROC_STOP), then every G once the prologue has declared
 * the threads that existed at the start. */
void gt_model_live_state(const void *ctx, gt_wire_visit *visit, void *arg)
{
	struct gt_model *m = (struct gt_model *)ctx;
	for (uint32_t p = 0; p < m->n_ps; p++) {
		struct gt_wire_status s = {GT_WIRE_P_IDLE, p, 0};
		if (m->ps[p].running) {
			struct mthread *t = gtm_thread_at(m, m->ps[p].running);
			s.kind = t->state == T_SYSBLOCKED ? GT_WIRE_P_SYSCALL : GT_WIRE_P_RUNNING;
			s.m = gtm_m_id(m, t);
		}
		visit(arg, &s);
	}
	if (!m->prologue_closed)
		return;
	FOR_EACH_THREAD(m, t) {
		static const uint8_t kinds[] = {
			[T_RUNNABLE] = GT_WIRE_G_RUNNABLE, [T_RUNNING] = GT_WIRE_G_RUNNING,
			[T_WAITING] = GT_WIRE_G_WAITING, [T_SYSBLOCKED] = GT_WIRE_G_SYSCALL,
		};
		if (t->g && t->state != T_UNSEEN && t->state != T_DEAD)
			visit(arg, &(struct gt_wire_status){kinds[t->state], t->g, t->m_id});
	}
}

/* Who t is, for the critical path's recorder; zero for NULL. */
static struct gt_cp_who who_of(const struct gt_model *m, const struct mthread *t)
{
	if (!t || t == &m->retired_thread)
		return (struct gt_cp_who){0};
	bool process_main = t->serial == (m->merged ? m->caps[t->capture].main_serial : 1u);
	return (struct gt_cp_who){
		.g = t->g, .capture = t->capture, .pid = m->caps[t->capture].pid, .tid = gtm_tid(t),
		.name = gtm_name(t), .main = process_main && t->capture == 0,
		.process_main = process_main,
	};
}

/* Event e of a (about b) to the critical path's recorder, with what it needs beyond the
 * event: a's open block's object, its latest syscall. */
static void observe(struct gt_model *m, const struct gt_sched_event *e, const struct mthread *a,
		    const struct mthread *b)
{
	const struct gt_tracked_wait *w = a && a->facts ? &a->facts->wait : NULL;
	struct gt_cp_event ev = {
		.e = e, .a = who_of(m, a), .b = who_of(m, b),
		.obj = w && w->open && !w->syscall ? w->obj : 0,
		.sys_nr = a ? gtm_sys(a)->nr : 0,
	};
	gt_critpath_event(m->opt.critical_path, &ev);
}

void gtm_observe_process(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	const struct gt_p_process *p = r->payload;
	struct mthread *t = gtm_thread_find(m, gtm_rec_serial(m, r));
	if (!m->opt.critical_path || !t || r->payload_len < sizeof *p || p->err)
		return;
	uint32_t pid = p->child_pid ? p->child_pid : m->caps[m->fact_capture].pid;
	gt_critpath_process(m->opt.critical_path, ns, t->g, pid);
}

/* A generation boundary of the 1.22+ writer falls before an event and lists the state it
 * leaves (gt_model_live_state): every caller changes the model's state after its event. */
void gtm_emit(struct gt_model *m, struct gt_sched_event e, uint64_t want, struct mthread *a,
	      struct mthread *b)
{
	bool draw = gtm_cp_draws(m, &e, a);
	if (draw)
		gtm_cp_before(m, &e, want, a);
	if (a)
		e.who = (struct gt_wire_actor){a->g, m_choose(m, a)};
	e.ticks = gtm_take_tick(m, (uint32_t)e.p, a, b, want);
	gt_wire_sched(m->w, &e);
	if (a)
		m_take(m, a, e.who.m);   /* after: a boundary before this event lists a without */
	if (m->opt.critical_path)
		observe(m, &e, a, b);
	if (draw)
		gtm_cp_after(m, &e, a);
}

/* ---------------------------------------------------------------------------------------- */
/* creation and the prologue */

void gtm_create_in_prologue(struct gt_model *m, struct mthread *t, uint32_t serial,
			    bool waiting)
{
	t->g = serial == 1 ? 1 : m->next_g++;
	t->seq = 0;
	t->state = T_RUNNABLE;
	uint64_t ns = gtm_thread_routine_stack(m, t, serial == 1 ? S_MAIN : S_PREEXISTING);
	GTM_EMIT(m, m->t0, t, NULL, .kind = GT_SCHED_GO_CREATE, .p = 0, .g = t->g, .new_stack = ns,
		 .existing = true, .waiting = waiting);
	m->ctr.threads++;
}

/* Serial 1 is G1 and exists from the first event on: the earliest event is its GoCreate. */
void gtm_ensure_main(struct gt_model *m)
{
	struct mthread *main_t = gtm_thread_get(m, 1);
	if (main_t && !main_t->g)
		gtm_create_in_prologue(m, main_t, 1, false);
}

static void run_thread(struct gt_model *m, struct mthread *t, uint32_t cpu, uint64_t ns,
		       enum synth reason);

void gtm_close_prologue(struct gt_model *m)
{
	if (m->prologue_closed)
		return;
	gtm_ensure_main(m);
	/* Gomaxprocs strictly after every prologue event, strictly before every live one */
	GTM_EMIT(m, m->t0, NULL, NULL, .kind = GT_SCHED_PROCS, .p = 0, .n_procs = m->n_ps);
	m->floor = m->ps[0].last + 1;
	m->prologue_closed = true;
	FOR_EACH_THREAD(m, t) {
		/* where the kernel runs it, not at all when it has it off its CPU */
		uint32_t cpu = gtm_kernel_cpu(m, t, t->first_cpu);
		if (t->prologue_start && t->state == T_RUNNABLE && !m->ps[cpu + 1].running &&
		    !(m->kernel && t->k_seen && !t->k_on))
			run_thread(m, t, cpu, m->floor, S_UNKNOWN);
		t->prologue_start = false;
	}
}

/* ---------------------------------------------------------------------------------------- */

/* A thread met through a fact before any creation fact: created where it shows up. */
struct mthread *gtm_known_thread(struct gt_model *m, uint32_t serial)
{
	if (!serial)
		return NULL;
	struct mthread *t = gtm_thread_get(m, serial);
	if (!t)
		return NULL;
	if (!t->g && !m->prologue_closed) {
		if (serial != 1)
			gtm_ensure_main(m);
		gtm_create_in_prologue(m, t, serial, false);
	}
	return t;
}

/* ---------------------------------------------------------------------------------------- */
/* syscalls */

static bool fd_kind_is_net(uint8_t k)
{
	return k == GT_FD_SOCKET || k == GT_FD_POLL;
}

/* A select or poll over no descriptor (its n is 0): a sleep for its timeout, not a network
 * wait.  (epoll_wait's argument is its descriptor.) */
static bool selects_nothing(const struct gt_tracked_wait *s)
{
	return s->kind == GT_FD_POLL && s->arg == 0 &&
	       (s->nr == GT_SYS_select || s->nr == GT_SYS_pselect6 || s->nr == GT_SYS_poll ||
		s->nr == GT_SYS_ppoll);
}

/* Decides a pending syscall of t (running on sys_p since sys_ns): short → GoSysCall;
 * blocking → GoBlockNet for network kinds, else GoSysCall + GoSysBlock + ProcStop. */
void gtm_syscall_resolve(struct gt_model *m, struct mthread *t, uint64_t now, bool blocked)
{
	if (!t->in_syscall)
		return;
	t->in_syscall = false;
	t->sys_awaiting_end = blocked;
	uint32_t p = t->sys_p;
	uint64_t stk = gtm_captured_stack_of(m, t->capture, gtm_sys(t)->stack);
	/* with the kernel's switches, a syscall blocked exactly when it left its CPU */
	if (!blocked && (now - t->sys_ns <= m->opt.syscall_threshold_ns || (m->kernel && t->k_seen))) {
		GTM_EMIT(m, t->sys_ns, t, NULL, .kind = GT_SCHED_GO_SYSCALL_BEGIN, .p = p, .stack = stk,
			 .sys_end = now);
		m->ctr.syscalls_short++;
		return;
	}
	uint8_t kw = gtm_kobj_block(m, t);
	if (kw == WAIT_KERNEL) {
		/* a parent waiting for a child whose end is known: a wait with a waker */
		GTM_EMIT(m, t->sys_ns, t, NULL, .kind = GT_SCHED_GO_BLOCK, .p = p, .stack = stk,
			 .wait = {GT_WIRE_WAIT_CHILD, gtm_sys(t)->kind, gtm_sys(t)->nr});
		t->state = T_WAITING;
		t->wait_kind = WAIT_KERNEL;
		m->ctr.syscalls_blocking++;
	} else if (selects_nothing(gtm_sys(t)) && !kw) {
		GTM_EMIT(m, t->sys_ns, t, NULL, .kind = GT_SCHED_GO_BLOCK, .p = p, .stack = stk,
			 .wait = {GT_BK_SLEEP, gtm_sys(t)->kind, gtm_sys(t)->nr});
		t->state = T_WAITING;
		t->wait_kind = GT_BK_SLEEP;
		m->ctr.syscalls_blocking++;
	} else if ((fd_kind_is_net(gtm_sys(t)->kind) && !gtm_kobj_polls_pipe(t)) || kw) {
		GTM_EMIT(m, t->sys_ns, t, NULL, .kind = GT_SCHED_GO_BLOCK, .p = p, .stack = stk,
			 .wait = {GT_WIRE_WAIT_NET,
				  gtm_kobj_polls_pipe(t) ? GT_FD_PIPE : gtm_sys(t)->kind, gtm_sys(t)->nr});
		t->state = T_WAITING;
		t->wait_kind = WAIT_NET;
		m->ctr.net_waits++;
	} else {
		GTM_EMIT(m, t->sys_ns, t, NULL, .kind = GT_SCHED_GO_SYSCALL_BEGIN, .p = p, .stack = stk);
		t->state = T_SYSBLOCKED;   /* its M holds p in the syscall until the PROC_STOP */
		GTM_EMIT(m, t->sys_ns, t, NULL, .kind = GT_SCHED_GO_SYSCALL_BLOCKED, .p = p);
		GTM_EMIT(m, t->sys_ns, NULL, NULL, .kind = GT_SCHED_PROC_STOP, .p = p,
			 .who = {t->g, gtm_m_id(m, t)});
		m->ps[p].started = false;
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
	struct mthread *xt = gtm_thread_at(m, x);
	if (xt->in_syscall) {
		/* someone else runs on its CPU: the syscall blocked */
		gtm_syscall_resolve(m, xt, ns, true);
		return;
	}
	GTM_EMIT(m, ns, xt, NULL, .kind = GT_SCHED_GO_STOP, .p = p, .stop = GT_STOP_PREEMPTED);
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
	/* 2: migration: preempted on its old P strictly before it starts here; inside a
	 * syscall (the kernel ran it elsewhere with no switch-out between) the call blocked
	 * there, drawn before it moves so that nothing of it follows on the P it left */
	if (t->state == T_RUNNING && t->in_syscall)
		gtm_syscall_resolve(m, t, ns, true);
	if (t->state == T_RUNNING) {
		GTM_EMIT(m, ns, t, NULL, .kind = GT_SCHED_GO_STOP, .p = t->p, .stop = GT_STOP_PREEMPTED);
		m->ps[t->p].running = 0;
		t->state = T_RUNNABLE;
		m->ctr.migrations++;
	}
	/* 3: a stopped P starts (thread id = P id = cpu + 1, never 0) */
	if (!m->ps[p].started) {
		GTM_EMIT(m, ns, NULL, NULL, .kind = GT_SCHED_PROC_START, .p = p);
		m->ps[p].started = true;
	}
	bool created = !t->g;
	if (created) {
		/* first seen mid-capture: created right here, by no goroutine (the main thread of
		 * a process that began during the trace: "main"), its M taking p to do it */
		t->g = m->next_g++;
		t->seq = 0;
		bool main_t = t->serial == m->caps[t->capture].main_serial;
		GTM_EMIT(m, ns, t, NULL, .kind = GT_SCHED_GO_CREATE, .p = p, .g = t->g,
			 .new_stack = gtm_thread_routine_stack(m, t, main_t ? S_MAIN : S_PREEXISTING));
		t->state = T_RUNNABLE;
		m->ps[p].running = t->serial;   /* its M holds p from its creation */
		m->ctr.threads++;
	}
	/* 4: nobody known woke it */
	if (t->state == T_WAITING) {
		enum synth r = t->wait_kind == WAIT_NET ? S_NETPOLL
			     : t->wait_kind == GT_BK_SLEEP && reason == S_UNKNOWN ? S_TIMER
										 : reason;
		gtm_wait_remove(m, t);
		GTM_EMIT(m, ns, t, NULL, .kind = GT_SCHED_GO_UNBLOCK, .p = p, .g = t->g, .seq = ++t->seq,
			 .stack = gtm_synth_stack(m, r));
		t->state = T_RUNNABLE;
		/* the end of a wait no hook saw has no waker to name: counted apart, so that
		 * unknown wakers are those of the hooks' own waits */
		if (t->wait_kind == WAIT_UNTRACED)
			m->ctr.kernel_untraced_ends++;
		else if (reason != S_KILLED)
			m->ctr.unknown_wakeups++;
		if (t->cond_held && t->wait_kind == GT_BK_MUTEX && r == S_UNKNOWN)
			m->ctr.cond_release_unseen++;
	} else if (t->state == T_SYSBLOCKED) {
		GTM_EMIT(m, ns, t, NULL, .kind = GT_SCHED_GO_SYSCALL_END_BLOCKED, .p = p, .g = t->g,
			 .seq = ++t->seq);
		t->state = T_RUNNABLE;
	}
	/* 5 */
	bool new_label = t->label && t->label != t->label_shown;
	GTM_EMIT(m, ns, t, NULL, .kind = GT_SCHED_GO_START, .p = p, .g = t->g, .seq = ++t->seq,
		 .label = t->label, .new_label = new_label, .holds_p = created);
	if (new_label)
		t->label_shown = t->label;
	t->state = T_RUNNING;
	t->p = p;
	m->ps[p].running = t->serial;
}

void gtm_run_thread(struct gt_model *m, struct mthread *t, uint32_t cpu, uint64_t ns)
{
	run_thread(m, t, cpu, ns, S_UNKNOWN);
}

/* The thread of a fact, made running on its CPU; NULL when the fact is to be skipped. */
struct mthread *gtm_fact_thread(struct gt_model *m, const struct gt_capture_record *r,
				uint64_t ns, enum synth reason)
{
	struct mthread *t = gtm_known_thread(m, gtm_rec_serial(m, r));
	if (!t)
		return NULL;
	if (t->state == T_DEAD) {
		m->ctr.facts_after_end++;
		return NULL;
	}
	gtm_close_prologue(m);
	if (!t->g && r->rec->type != GT_THREAD_EXISTING)
		m->ctr.threads_appeared++;
	uint32_t cpu = gtm_kernel_cpu(m, t, r->cpu);
	if (t->in_syscall && r->rec->type != GT_SYSCALL_END)
		gtm_syscall_resolve(m, t, ns, cpu + 1 != t->sys_p);
	if (r->rec->type != GT_SYSCALL_END)
		t->sys_awaiting_end = false;
	if (m->kernel)
		gtm_kernel_take_cpu(m, t, cpu);
	run_thread(m, t, cpu, ns, reason);
	return t;
}

/* Pending syscalls are decided; every running G is descheduled and every running P stops
 * (Go 1.19 needs it). */
void gtm_sched_finish(struct gt_model *m)
{
	gtm_close_prologue(m);
	FOR_EACH_THREAD(m, t) {
		if (t->in_syscall)
			gtm_syscall_resolve(m, t, m->now, false);
	}
	for (uint32_t p = 1; p < m->n_ps; p++) {
		if (m->ps[p].running) {
			struct mthread *t = gtm_thread_at(m, m->ps[p].running);
			GTM_EMIT(m, m->now, t, NULL, .kind = GT_SCHED_GO_STOP, .p = p,
				 .stop = GT_STOP_PREEMPTED);
			t->state = T_RUNNABLE;
			m->ps[p].running = 0;
		}
		if (m->ps[p].started) {
			GTM_EMIT(m, m->now, NULL, NULL, .kind = GT_SCHED_PROC_STOP, .p = p);
			m->ps[p].started = false;
		}
	}
}

/* Capture's threads end at ns: the running ones (after a syscall they were in); the others
 * stay as they were (waiting or runnable), as at the end of a trace. */
static void end_capture_threads(struct gt_model *m, uint32_t capture, uint64_t ns)
{
	FOR_EACH_THREAD(m, t) {
		if (t->capture != capture || t->state == T_DEAD || !t->g)
			continue;
		if (t->in_syscall)
			gtm_syscall_resolve(m, t, ns, false);
		if (t->state == T_RUNNING) {
			GTM_EMIT(m, ns, t, NULL, .kind = GT_SCHED_GO_DESTROY, .p = t->p);
			m->ps[t->p].running = 0;
			gtm_thread_died(m, t);
		}
	}
}

/* The process image of capture ended: its threads end where it ran last, or, killed, where
 * it was reaped.  A trace of one capture whose process was not killed ends as it always did
 * (the epilogue deschedules them). */
void gt_model_capture_end(struct gt_model *m, uint32_t capture)
{
	gt_tracker_capture_end(m->tracker, capture);
	if (capture >= m->n_caps)
		return;
	struct mcapture *c = &m->caps[capture];
	if (!m->merged && c->reaped_ns <= c->last_ns)
		return;
	if (c->reaped_ns > c->last_ns) {
		/* killed later: a call it is in blocked (decided now, while its start is recent) */
		FOR_EACH_THREAD(m, t) {
			if (t->capture == capture && t->state != T_DEAD && t->in_syscall)
				gtm_syscall_resolve(m, t, c->last_ns, true);
		}
		c->end_pending = true;
		m->n_ends_pending++;
		return;
	}
	end_capture_threads(m, capture, c->last_ns);
}

const struct gt_tracker *gt_model_tracker(const struct gt_model *m)
{
	return m->tracker;
}

const struct gt_lock_order *gt_model_lock_order(const struct gt_model *m)
{
	return m->order;
}

const char *gt_model_object_name(struct gt_model *m, uint32_t capture, uint8_t kind,
				 uint64_t obj)
{
	return gtm_object_name(m, capture, kind, gtm_object_key_of(m, capture, obj), 0);
}

/* A P no thread runs on (t's own when none is free), for a thread that ends where nothing
 * of its own was recorded. */
static uint32_t free_cpu(const struct gt_model *m, const struct mthread *t)
{
	for (uint32_t p = 1; p < m->n_ps; p++)
		if (!m->ps[p].running)
			return p - 1;
	return t->p ? t->p - 1 : 0;
}

/* Capture's process was killed at ns: every thread of it ends there, out of whatever wait
 * it was in (a syscall it was in blocked until then). */
static void kill_capture_threads(struct gt_model *m, uint32_t capture, uint64_t ns)
{
	FOR_EACH_THREAD(m, t) {
		if (t->capture != capture || t->state == T_DEAD || !t->g)
			continue;
		if (t->in_syscall)
			gtm_syscall_resolve(m, t, ns, true);
		run_thread(m, t, free_cpu(m, t), ns, S_KILLED);
		GTM_EMIT(m, ns, t, NULL, .kind = GT_SCHED_GO_DESTROY, .p = t->p);
		m->ps[t->p].running = 0;
		t->state = T_DEAD;
	}
}

void gt_model_capture_reaped(struct gt_model *m, uint32_t capture, const struct gt_reap *r)
{
	if (capture >= m->n_caps || !r->mono_ns)
		return;
	if (!r->tsc) {
		m->caps[capture].reaped_ns = gtm_mono_ticks(m, r->mono_ns);
		return;
	}
	/* on the facts' clock; gotrace's pair is one more point of its fit, far from the
	 * others when the process blocked long before it was killed */
	m->caps[capture].reaped_ns = gt_clock_ticks(&m->clock, r->tsc);
	if (r->pair && m->h.clock_source == GT_CLOCK_TSC)
		gt_clock_add_pair(&m->clock, r->tsc, r->mono_ns);
}

void gtm_pending_ends(struct gt_model *m, uint64_t ns, bool all)
{
	for (uint32_t i = 0; m->n_ends_pending && i < m->n_caps; i++) {
		struct mcapture *c = &m->caps[i];
		if (!c->end_pending || (c->reaped_ns > ns && !all))
			continue;
		c->end_pending = false;
		m->n_ends_pending--;
		/* at the trace's end, a reap after every fact extends the trace to it */
		uint64_t at = c->reaped_ns < m->now ? m->now : c->reaped_ns;
		kill_capture_threads(m, i, at);
		m->now = at;
	}
}
