/* model_kernel: the kernel's context switches (docs/formats/kernel-records.md §7) placing the
 * threads (see model_internal.h).  Once switches are given, a thread the kernel reports
 * runs exactly from its switch-in to its switch-out, on the CPU the kernel ran it on (P =
 * CPU + 1): a switch-in starts it (after a hook's wake: the exact scheduler latency), on
 * another CPU it migrates, a switch-out still runnable is a preemption, and one with no hook
 * wait around it is an off-CPU wait the hooks did not see.  Hook facts keep what they know
 * best: what a thread waits for, with which stack, and who wakes it; their blocks are drawn
 * where the hook saw them (a few microseconds before the kernel's switch-out). */
#include "model_internal.h"

#include "cpu_samples.h"
#include "kernel/reader.h"

void gtm_kernel_tid(struct gt_model *m, struct mthread *t)
{
	bool found;
	uint64_t *slot = gtm_tid(t) ? gt_u64map_slot(&m->by_tid, gtm_tid(t), &found) : NULL;
	if (slot)
		*slot = t->serial;
}

uint32_t gtm_kernel_cpu(const struct gt_model *m, const struct mthread *t, uint32_t cpu)
{
	if (!m->kernel || !t->k_seen)
		return cpu;
	if (t->state == T_RUNNING)
		return t->p - 1;
	return t->k_on ? t->k_cpu : cpu;
}

void gtm_kernel_unblocked(struct gt_model *m, struct mthread *w, uint64_t ns)
{
	/* the kernel ran it before its waker's fact (the wake is stamped at the release, the
	 * switch-in may come first within the clocks' error): it runs from the wake on.  Not
	 * when it has not left its CPU since its block: the wake was stamped before the real
	 * release, which comes after the sleep that the kernel's switch-out will show. */
	if (m->kernel && w->k_seen && w->k_on && w->k_in_tsc > w->block_tsc &&
	    w->state == T_RUNNABLE && !m->ps[w->k_cpu + 1].running)
		gtm_run_thread(m, w, w->k_cpu, ns);
}

/* An untraced wait's stack: its frame, on the thread's start routine (so that a thread whose
 * first stack it is is still grouped by its routine); its PC below the synthetic frames of
 * model_stacks.c, whose PCs go up from SYNTH_PC_BASE. */
static uint64_t untraced_stack(struct gt_model *m, const struct mthread *t)
{
	static const struct gt_wire_frame f = {SYNTH_PC_BASE - 1,
					       "[off-CPU wait, not seen by the hooks]", "[gotrace]", 0};
	return gtm_thread_synth_stack(m, t, &f);
}

void gt_model_offcpu_samples(struct gt_model *m, struct gt_cpu_samples *s)
{
	m->offcpu = s;
}

/* Hook times and kernel times agree within about a microsecond
 * (docs/formats/kernel-records.md §5); a syscall's hook and its switch-out can be a few
 * hundred ns apart. */
#define CLOCK_ERROR_NS 2000u

static uint64_t clock_error_ticks(const struct gt_model *m)
{
	return m->clock.tsc_hz ? CLOCK_ERROR_NS * m->clock.tsc_hz / 1000000000u : CLOCK_ERROR_NS;
}

/* A fact that leads a thread into the kernel: within the clocks' error after its switch-out,
 * it was made before it.  (A fact that ends a wait or a syscall comes after a switch-in.) */
static bool enters_kernel(uint8_t type)
{
	return type == GT_SYSCALL_BEGIN || type == GT_BLOCK_BEGIN || type == GT_YIELD;
}

/* Whether t's next fact, among the facts stamped up to the clocks' error after tsc, is one
 * that leads it into the kernel. */
static bool own_entry_ahead(const struct gt_model *m, const struct mthread *t,
			    const struct gt_capture_record *next, uint64_t tsc)
{
	uint64_t limit = tsc + clock_error_ticks(m);
	struct gt_capture_record r;
	for (size_t i = 0; next != NULL && next->tsc <= limit; next = gtm_peek(m, i++, &r) ? &r : NULL)
		if (gtm_rec_is(m, next, t->serial))
			return enters_kernel(next->rec->type);
	return false;
}

/* Whether t, woken from its hook wait and off its CPU again before the wait's end, lost a
 * hand-off: a release of what it waits for again (its object; a condition waiter's mutex)
 * comes in the lookahead before t's own next fact, or came just before (stamped before the
 * real release: gtm_again_credit).  When t's own fact comes first, nothing it waits for was
 * released: it slept inside the call for something else (a page fault, a lock inside glibc
 * or in the tracer's slow path), an off-CPU wait the hooks did not see.  Out of view, a lost
 * hand-off is assumed. */
static bool lost_hand_off(struct gt_model *m, const struct mthread *t)
{
	uint64_t key = t->wait_kind == GT_BK_COND ? t->cond_mutex : t->wait_obj;
	if (t->wait_kind == GT_BK_SLEEP || !key || gtm_again_credit(m, t, key))
		return true;
	struct gt_capture_record buf;
	const struct gt_capture_record *r = m->pending;
	size_t i = 0;
	if (!r)
		r = gtm_peek(m, i++, &buf) ? &buf : NULL;
	for (; r; r = gtm_peek(m, i++, &buf) ? &buf : NULL) {
		if (gtm_rec_is(m, r, t->serial))
			return false;
		/* a process-shared object (its kernel key) is released by any process */
		if ((r->capture == t->capture || key & GT_OBJ_KERNEL) && gtm_releases(m, r, key))
			return true;
	}
	return true;
}

static void switch_out(struct gt_model *m, struct mthread *t, uint64_t ns, uint64_t tsc,
		       bool preempted)
{
	t->k_out_pending = false;
	if (t->state != T_RUNNING)
		return;   /* a hook block or a blocking syscall already drawn */
	if (t->in_syscall) {
		/* off its CPU inside a syscall without being runnable: it blocked; preempted
		 * inside it: a syscall that did not block, its end fact still to come */
		gtm_syscall_resolve(m, t, ns, !preempted);
		t->sys_awaiting_end = true;
		if (t->state != T_RUNNING)
			return;
	}
	if (preempted) {
		GTM_EMIT(m, ns, t, NULL, .kind = GT_SCHED_GO_STOP, .p = t->p, .stop = GT_STOP_PREEMPTED);
		t->state = T_RUNNABLE;
		m->ctr.kernel_preemptions++;
	} else if (t->hook_wait_open && lost_hand_off(m, t)) {
		/* woken from its hook wait and off its CPU again before the wait's end: a lost
		 * hand-off (it lost the race for the lock and sleeps again inside the same call),
		 * the same wait again, so that the next release names its waker */
		gtm_block_again(m, t, ns, tsc);
		m->ctr.kernel_waits_again++;
	} else {
		/* named by the user stack the kernel copied at the switch-out, when it did */
		uint64_t stack = gt_cpu_samples_offcpu_stack(m->offcpu, m, t, t->k_out_mono);
		GTM_EMIT(m, ns, t, NULL, .kind = GT_SCHED_GO_BLOCK, .p = t->p,
			 .stack = stack ? stack : untraced_stack(m, t),
			 .wait = {.kind = GT_WIRE_WAIT_UNTRACED});
		t->state = T_WAITING;
		t->wait_kind = WAIT_UNTRACED;
		t->block_ns = ns;
		t->block_tsc = tsc;
		m->ctr.kernel_untraced_waits++;
	}
	m->ps[t->p].running = 0;
}

/* A switch-out of a thread whose own entry into the kernel comes just after it waits for
 * that fact (not one inside a syscall: its next fact ends it). */
static void switched_out(struct gt_model *m, struct mthread *t, uint64_t ns,
			 const struct gt_model_switch *s)
{
	if (t->k_handler) { /* back into its wait, which goes on */
		t->k_handler = false;
		return;
	}
	t->k_out_ns = ns;
	t->k_out_tsc = s->tsc;
	t->k_out_mono = s->mono_ns;
	t->k_out_preempted = s->preempted;
	t->k_out_pending = t->state == T_RUNNING && !t->in_syscall &&
			   own_entry_ahead(m, t, s->next, s->tsc);
	if (!t->k_out_pending)
		switch_out(m, t, ns, s->tsc, s->preempted);
}

/* The fact of thread serial (at ns) is modelled: a switch-out that waited for it, or one
 * the clocks put just before an entry into the kernel, is drawn now.  (Another fact of a
 * thread the kernel has off its CPU comes just before its switch-in.) */
void gtm_kernel_fact_done(struct gt_model *m, uint32_t serial, uint64_t ns)
{
	struct mthread *t = gtm_thread_find(m, serial);
	if (t && t->k_seen && !t->k_on && t->state == T_RUNNING &&
	    (t->k_out_pending ||
	     (ns - t->k_out_ns < CLOCK_ERROR_NS && m->cur && enters_kernel(m->cur->rec->type))))
		switch_out(m, t, ns, m->fact_tsc, t->k_out_preempted);
}

/* The switch-out t waits for, at its own time: something else happened first. */
static void out_now(struct gt_model *m, struct mthread *t)
{
	if (t && t->k_out_pending)
		switch_out(m, t, t->k_out_ns, t->k_out_tsc, t->k_out_preempted);
}

void gtm_kernel_take_cpu(struct gt_model *m, const struct mthread *t, uint32_t cpu)
{
	uint32_t x = m->ps[cpu + 1].running;
	if (x && x != t->serial)
		out_now(m, gtm_thread_at(m, x));
}

/* t, switched in while its wait is open (a hook block, or a syscall that blocked, its end
 * still to come), runs a signal handler inside it when its next fact is a call the handler
 * makes (any BEGIN while the wait is open: the tracker nests it).  Looked for among the next
 * HANDLER_LOOKAHEAD records, which the lookahead then holds: beyond, the switch-in runs it. */
#define HANDLER_LOOKAHEAD 4096u
static bool runs_handler(struct gt_model *m, const struct mthread *t)
{
	if (!t->sys_awaiting_end && !(t->hook_wait_open && t->state == T_WAITING))
		return false;
	struct gt_capture_record buf;
	const struct gt_capture_record *r = m->pending;
	size_t i = 0;
	if (!r)
		r = gtm_peek(m, i++, &buf) ? &buf : NULL;
	for (; r && i < HANDLER_LOOKAHEAD; r = gtm_peek(m, i++, &buf) ? &buf : NULL)
		if (gtm_rec_is(m, r, t->serial))
			return r->rec->type == GT_BLOCK_BEGIN || r->rec->type == GT_SYSCALL_BEGIN;
	return false;
}

static void switch_in(struct gt_model *m, struct mthread *t, uint32_t cpu, uint64_t ns)
{
	/* a signal handler's run inside the wait: the wait goes on, its length and waker kept */
	if (runs_handler(m, t)) {
		t->k_handler = true;
		return;
	}
	/* A hook wait that a known thread ends (a lock, a condition, a pipe) waits for its
	 * waker's fact, which then starts it here; a sleep, an untraced wait or a wait from
	 * before the trace has no waker to wait for. */
	if (t->state == T_WAITING && t->wait_kind != GT_BK_SLEEP && t->wait_kind != WAIT_UNTRACED &&
	    t->wait_kind != WAIT_PROLOGUE)
		return;
	gtm_kernel_take_cpu(m, t, cpu);
	gtm_run_thread(m, t, cpu, ns);
	gtm_credit_resume(m, t, ns);
}

/* t exited on its CPU without a hook seeing it end (killed by its process's exit or exec,
 * or a raw exit): it ends there; one in a wait stays as it was, as at a trace's end. */
static void thread_exit(struct gt_model *m, struct mthread *t, uint64_t ns)
{
	if (t->state != T_RUNNING)
		return;
	if (t->in_syscall)
		gtm_syscall_resolve(m, t, ns, false);   /* exit_group, or whatever it was in */
	if (t->state != T_RUNNING)
		return;
	GTM_EMIT(m, ns, t, NULL, .kind = GT_SCHED_GO_DESTROY, .p = t->p);
	m->ps[t->p].running = 0;
	gtm_thread_died(m, t);
	gtm_credit_end(m, t->serial);
}

static void model_switch(struct gt_model *m, const struct gt_model_switch *s)
{
	const uint64_t *serial = gt_u64map_find(&m->by_tid, s->tid);
	struct mthread *t = serial ? gtm_thread_find(m, (uint32_t)*serial) : NULL;
	if (t && s->exit)
		t->k_exited = true;   /* its CPU samples are all before (gtm_retire_dead) */
	if (!t || !t->g || t->state == T_DEAD || s->cpu + 1 >= m->n_ps ||
	    s->tsc >= m->caps[t->capture < m->n_caps ? t->capture : 0].stop_tsc) {
		m->ctr.kernel_foreign += !s->exit;   /* the exit of an ended thread is no news */
		return;
	}
	gtm_count_for(m, t->capture);
	out_now(m, t);
	t->k_seen = true;
	t->k_on = s->in;
	if (s->in) {
		t->k_cpu = s->cpu;
		t->k_in_tsc = s->tsc;
	}
	if (!m->seen_fact)
		return;
	/* the kernel's times are live from the first fact on (the prologue's facts, before
	 * the first live one, may span a process's start-up) */
	gtm_close_prologue(m);
	uint64_t ns = gt_clock_ticks(&m->clock, s->tsc);
	if (ns > m->now)
		m->now = ns;
	if (s->exit) {
		thread_exit(m, t, ns);   /* no switch-out follows: its last slice ends here */
		return;
	}
	m->ctr.kernel_switches++;
	if (!s->in && !s->preempted)
		gtm_credit_end(m, t->serial);   /* asleep: its release is done */
	if (s->in)
		switch_in(m, t, s->cpu, ns);
	else
		switched_out(m, t, ns, s);
}

void gt_model_kernel_ahead(struct gt_model *m,
			   const struct gt_kernel_switch *(*peek)(void *ctx, size_t i), void *ctx)
{
	m->kernel = true;
	m->switch_peek = peek;
	m->switch_ctx = ctx;
}

const struct gt_kernel_switch *gtm_peek_switch(const struct gt_model *m, size_t i)
{
	return m->switch_peek ? m->switch_peek(m->switch_ctx, i) : NULL;
}

/* The time of t's next fact in the lookahead, UINT64_MAX when it is not in view. */
static uint64_t next_fact_tsc(const struct gt_model *m, const struct mthread *t)
{
	struct gt_capture_record r;
	for (size_t i = 0; gtm_peek(m, i, &r); i++)
		if (gtm_rec_is(m, &r, t->serial))
			return r.tsc;
	return UINT64_MAX;
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/* How far the switches are looked ahead in for a post's releaser and waiter. */
#define SWITCH_LOOKAHEAD 4096u

/* Whether fact r is a post of key by another thread than t. */
static bool others_post(const struct gt_model *m, const struct gt_capture_record *r,
			const struct mthread *t, uint64_t key)
{
	return !gtm_rec_is(m, r, t->serial) && (r->capture == t->capture || key & GT_OBJ_KERNEL) &&
	       gtm_releases(m, r, key);
}

/* Whether fact r is w's block on key. */
static bool blocks_on(const struct gt_model *m, const struct gt_capture_record *r,
		      const struct mthread *w, uint64_t key)
{
	return gtm_rec_is(m, r, w->serial) && r->rec->type == GT_BLOCK_BEGIN &&
	       gtm_object_key(m, r, ((const struct gt_p_block *)r->payload)->obj) == key;
}

/* A semaphore has no owner: while t, preempted between its post's stamp and the real post,
 * is off its CPU, another thread's post can end the wait that t's stamp would end, and t's
 * late post w's next wait (queue-cond: a worker preempted inside sem_post).  The stamps alone
 * cannot tell a post made before the preemption from one made after it, but w's next wait
 * can: the post is taken as made late when
 *  - t's next switch is a preemption, before its next fact and before w's wait ends (w's next
 *    switch-in or fact: a wait that ends while t still runs is t's),
 *  - another thread's post of key is stamped before w's wait ends,
 *  - w waits on key again before t runs again, and that wait ends after it with no other
 *    post stamped in between: made before, t's post would leave that wait without a waker. */
bool gtm_post_made_late(const struct gt_model *m, const struct mthread *t, uint64_t key,
			const struct mthread *w)
{
	uint32_t tid = gtm_tid(t), w_tid = gtm_tid(w);
	if (!tid || !w_tid)
		return false;
	uint64_t out = UINT64_MAX, back = UINT64_MAX, w_in = UINT64_MAX;
	const struct gt_kernel_switch *s;
	for (size_t i = 0; i < SWITCH_LOOKAHEAD && back == UINT64_MAX && (s = gtm_peek_switch(m, i));
	     i++) {
		if (s->tid == w_tid && s->what == GT_KSW_IN)
			w_in = min_u64(w_in, s->time);
		else if (s->tid == tid && out == UINT64_MAX && s->what != GT_KSW_PREEMPTED)
			return false;
		else if (s->tid == tid && out == UINT64_MAX)
			out = s->time;
		else if (s->tid == tid && s->what == GT_KSW_IN)
			back = s->time;
	}
	uint64_t w_end = min_u64(w_in, next_fact_tsc(m, w)), t_next = next_fact_tsc(m, t);
	if (back == UINT64_MAX || out >= w_end ||
	    (t_next != UINT64_MAX && out + clock_error_ticks(m) >= t_next))
		return false;
	bool other_first = false, again = false;
	struct gt_capture_record r;
	for (size_t i = 0; gtm_peek(m, i, &r); i++) {
		if (again && others_post(m, &r, t, key))
			return false;   /* w's next wait has a waker of its own */
		if (again && gtm_rec_is(m, &r, w->serial))
			return r.tsc > back;   /* its end */
		if (again)
			continue;
		if (r.tsc >= back)
			return false;
		other_first = other_first || (r.tsc < w_end && others_post(m, &r, t, key));
		if (blocks_on(m, &r, w, key)) {
			if (!other_first)
				return false;
			again = true;
		}
	}
	return false;
}

void gt_model_switch(struct gt_model *m, const struct gt_model_switch *s)
{
	m->kernel = true;
	/* the fact after the switch is read but not modelled yet: lookahead scans see it
	 * (a pipe's reader switched out in its read is woken by that very fact, its writer's) */
	m->pending = s->next;
	model_switch(m, s);
	m->pending = NULL;
}
