/* model: see model.h; its parts are listed in model_internal.h.  This file is the fact
 * dispatch: every handler first makes its thread the running G of its CPU's P
 * (gtm_fact_thread, the §5.2 primitive), then emits what the fact means (§5.3). */
#include "model_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "critical_path.h"
#include "symbolizer/symbolizer.h"

static enum synth end_reason(uint32_t result)
{
	switch (result) {
	case GT_BR_TIMEOUT: return S_TIMEOUT;
	case GT_BR_SIGNAL: return S_SIGNAL;
	default: return S_UNKNOWN;
	}
}

/* A FUTEX_WAIT whose word had already changed returns EAGAIN without sleeping; its waker may
 * have looked for waiters before it registered.  Its end is its thread's next fact. */
static bool futex_did_not_wait(struct gt_model *m, uint32_t capture, uint32_t thread)
{
	struct gt_capture_record n;
	for (size_t i = 0; gtm_peek(m, i, &n); i++) {
		if (n.capture != capture || n.rec->thread != thread)
			continue;
		const struct gt_p_block_end *e = n.payload;
		return n.rec->type == GT_BLOCK_END && n.rec->aux == GT_BK_FUTEX &&
		       e->result == GT_BR_ERROR && e->err == EAGAIN;
	}
	return false;
}

/* The model's thread of a capture's thread serial, made when new (NULL: none), with what the
 * facts say of it once the tracker has met it. */
static struct mthread *record_thread(struct gt_model *m, uint32_t capture, uint32_t serial)
{
	uint32_t ours = gtm_serial(m, capture, serial);
	struct mthread *t = ours ? gtm_thread_get(m, ours) : NULL;
	if (t && !t->facts)
		t->facts = gt_tracker_thread(m->tracker, capture, serial);
	return t;
}

/* The running thread t blocks (its event ev at ns) on key, from block_ns / block_tsc on. */
static void block_thread(struct gt_model *m, struct mthread *t, enum gt_go_event ev, uint8_t kind,
			 uint64_t key, uint64_t stk, uint64_t ns, uint64_t block_ns, uint64_t block_tsc)
{
	(void)ev;   /* the 1.19 writer draws it from kind (gt_wire_block_event) */
	GTM_EMIT(m, ns, t, NULL, .kind = GT_SCHED_GO_BLOCK, .p = t->p, .stack = stk,
		 .wait = {.kind = kind, .object = gtm_object_name(m, t->capture, kind, key, stk)});
	m->ps[t->p].running = 0;
	t->state = T_WAITING;
	t->wait_kind = kind;
	t->block_ns = block_ns;
	t->block_tsc = block_tsc;
	t->hook_wait_open = true;
	t->waits_again = false;
	t->block_ev = (uint8_t)ev;
	t->block_stack = stk;
	if (kind != GT_BK_SLEEP && key) {
		gtm_wait_add(m, t, key);
		if (m->n_credits)
			gtm_wait_credit(m, t, ns);
	}
}

/* t's wait, just drawn, is a wait again: a release stamped just before may be its waker. */
static void wait_again(struct gt_model *m, struct mthread *t, uint64_t ns)
{
	t->waits_again = true;
	if (m->n_credits && t->in_wait_list)
		gtm_wait_credit(m, t, ns);
}

void gtm_block_again(struct gt_model *m, struct mthread *t, uint64_t ns, uint64_t tsc)
{
	if (t->wait_kind != GT_BK_COND) {
		block_thread(m, t, t->block_ev, t->wait_kind, t->wait_obj, t->block_stack, ns, ns,
			     tsc);
		wait_again(m, t, ns);
		return;
	}
	/* Signalled, a condition waiter sleeps again to take its mutex back (glibc's
	 * __pthread_mutex_cond_lock: examples/workpool's off-CPU stacks show no other): a wait
	 * for the mutex, which only a release's wake may end (key 0, mutex not named: none),
	 * never a later signal of the condition. */
	block_thread(m, t, GT_GO_GO_BLOCK_SYNC, GT_BK_MUTEX, t->cond_mutex, t->block_stack, ns, ns,
		     tsc);
	wait_again(m, t, ns);
}

/* Whether another release of key comes in the lookahead before w's wait ends: the release
 * being modelled did not let w in (w did not sleep yet; the one asleep took it). */
static bool released_before_end(struct gt_model *m, const struct mthread *w, uint64_t key)
{
	struct gt_capture_record n;
	for (size_t i = 0; gtm_peek(m, i, &n); i++) {
		if (gtm_rec_is(m, &n, w->serial))
			return false;
		if (gtm_releases(m, &n, key))
			return true;
	}
	return false;
}

/* The condition wait x, deferred by cond_release, blocks now, on cpu when it no longer runs:
 * after letting w (if any) in. */
static void cond_release_end(struct gt_model *m, struct mthread *x, struct mthread *w, uint32_t cpu,
			     uint64_t ns)
{
	x->defer_waiter = 0;
	m->n_deferred--;
	if (x->state != T_RUNNING)
		gtm_run_thread(m, x, cpu, ns);
	if (w)
		gtm_unblock_by(m, x, w, ns, x->defer_stack);
	block_thread(m, x, GT_GO_GO_BLOCK_COND, GT_BK_COND, x->defer_key, x->defer_stack, ns,
		     x->defer_ns, x->defer_tsc);
}

/* A condition wait t whose block r names its mutex (capture.h gt_p_block_mutex), or follows
 * the wake of it its look wrote, releases it inside glibc, after this fact: a
 * GT_BLOCK_COND_HELD waiter already blocked on it is let in now; one that blocks later
 * (before t's next fact) is let in then, and t's block is drawn after it (t runs inside
 * glibc until it has released the mutex).  Returns true when t's block is deferred so. */
static bool cond_release(struct gt_model *m, struct mthread *t, const struct gt_capture_record *r,
			 uint64_t key, uint64_t stk, uint64_t ns)
{
	const struct gt_p_block *b = r->payload;
	/* a block without the mutex follows the wake of it that the wait's look wrote (capture.h
	 * gt_p_block_mutex), at the same stack */
	t->cond_mutex = t->woke_stack == b->stack ? t->woke_mutex : 0;
	t->woke_mutex = 0;
	if (r->payload_len >= sizeof *b + sizeof(struct gt_p_block_mutex))
		t->cond_mutex = gtm_object_key(m, r, ((const struct gt_p_block_mutex *)(b + 1))->mutex);
	if (!t->cond_mutex)
		return false;
	struct mthread *w = gtm_cond_held_waiter(m, t->cond_mutex, t->serial);
	if (w && !released_before_end(m, w, t->cond_mutex)) {
		gtm_unblock_by(m, t, w, ns, stk);
		return false;
	}
	/* a thread the kernel has asleep on the mutex again (it set the lock word contended
	 * before it slept): glibc's release wakes it */
	if (gtm_wake_again(m, t, t->cond_mutex, ns, stk))
		return false;
	uint32_t serial = gtm_cond_held_waiter_ahead(m, r, b->obj, t->cond_mutex);
	if (!serial || !(w = gtm_thread_get(m, serial)) || w == t)
		return false;
	w->cond_releaser = t->serial;
	t->defer_waiter = serial;
	t->defer_key = key;
	t->defer_stack = stk;
	t->defer_ns = ns;
	t->defer_tsc = r->tsc;
	m->n_deferred++;
	return true;
}

static void fact_block_begin(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	const struct gt_p_block *b = r->payload;
	struct mthread *t = gtm_fact_thread(m, r, ns, S_UNKNOWN);
	if (!t)
		return;
	uint8_t kind = r->rec->aux;
	if (kind == GT_BK_FUTEX && futex_did_not_wait(m, r->capture, r->rec->thread)) {
		t->futex_no_wait = true;
		return;
	}
	uint64_t stk = gtm_captured_stack(m, b->stack);
	enum gt_go_event ev = GT_GO_GO_BLOCK_SYNC;
	uint64_t key = gtm_object_key(m, r, b->obj);
	if (kind == GT_BK_JOIN) {
		uint32_t serial = b->obj < (1u << 24) ? gtm_serial(m, r->capture, (uint32_t)b->obj) : 0;
		struct mthread *target = serial ? gtm_thread_get(m, serial) : NULL;
		if (target && target->state == T_DEAD)
			return; /* joining a dead thread does not block */
		key = (serial ? serial : b->obj) | JOIN_KEY_BIT;
	} else if (kind == GT_BK_COND) {
		ev = GT_GO_GO_BLOCK_COND;
		if (cond_release(m, t, r, key, stk, ns))
			return;
	} else if (kind == GT_BK_SLEEP) {
		ev = GT_GO_GO_SLEEP;
	}
	t->cond_held = kind == GT_BK_MUTEX && (b->flags & GT_BLOCK_COND_HELD);
	t->cond_holder = t->cond_held ? gtm_serial(m, r->capture, b->flags >> GT_BLOCK_HOLDER_SHIFT) : 0;
	block_thread(m, t, ev, kind, key, stk, ns, ns, r->tsc);
	if (kind == GT_BK_MUTEX && t->cond_releaser) {
		struct mthread *x = gtm_thread_find(m, t->cond_releaser);
		t->cond_releaser = 0;
		if (x && x->defer_waiter == t->serial)
			cond_release_end(m, x, t, r->cpu, ns);
	}
}

static void fact_block_end(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	const struct gt_p_block_end *e = r->payload;
	struct mthread *t = gtm_known_thread(m, gtm_rec_serial(m, r));
	if (t && t->futex_no_wait) {
		t->futex_no_wait = false;
		gtm_fact_thread(m, r, ns, S_UNKNOWN);
		return;
	}
	/* with the kernel's switches, the switch-in that ends a hook wait runs the thread before
	 * the wait's end fact: not a repair */
	if (t && t->state != T_WAITING && t->state != T_RUNNABLE && t->state != T_DEAD && t->g &&
	    r->rec->aux != GT_BK_JOIN && !(m->kernel && t->hook_wait_open))
		m->ctr.ends_without_begin++;
	if (t)
		t->hook_wait_open = false;
	if (t && t->state == T_WAITING && t->in_wait_list && e->result == GT_BR_OK)
		gtm_wake_skewed(m, t, r, ns);
	gtm_fact_thread(m, r, ns, end_reason(e->result));
}

static void fact_wake(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	const struct gt_p_wake *wk = r->payload;
	struct mthread *t = gtm_fact_thread(m, r, ns, S_UNKNOWN);
	if (!t)
		return;
	uint64_t stk = gtm_captured_stack(m, wk->stack);
	if (!stk)
		stk = gtm_synth_stack(m, S_WAKE);
	if (r->rec->aux == GT_BK_FD) {
		gtm_kobj_release(m, t, r, ns, stk);
		return;
	}
	uint64_t key = gtm_object_key(m, r, wk->obj);
	if (r->rec->aux == GT_BK_MUTEX) {
		t->woke_mutex = key;
		t->woke_stack = wk->stack;
	}
	if (t->wake_spent_tsc == r->tsc) {   /* a wait the clocks put before it had it */
		t->wake_spent_tsc = 0;
		return;
	}
	if (wk->count == GT_WAKE_UNSEEN && r->rec->aux == GT_BK_MUTEX) {
		gtm_wake_again(m, t, key, ns, stk);
		return;
	}
	if (r->rec->aux == GT_BK_JOIN) {
		uint32_t serial = wk->obj < (1u << 24) ? gtm_serial(m, r->capture, (uint32_t)wk->obj) : 0;
		key = (serial ? serial : wk->obj) | JOIN_KEY_BIT;
	}
	gtm_wake_waiters(m, t, key, wk->count ? wk->count : 1, ns, stk);
	if (r->rec->aux == GT_BK_MUTEX && m->kernel)
		gtm_wake_sleeper(m, t, key, ns, stk);
}

/* With the kernel's switches: c's tid from its THREAD_START in the lookahead, so that it runs
 * from its first switch-in, before its first hook (glibc's start_thread, or a wait for a
 * CPU, come before it). */
static void tid_ahead(struct gt_model *m, struct mthread *c, const struct gt_capture_record *r,
		      uint32_t child)
{
	struct gt_capture_record next;
	for (size_t i = 0; m->kernel && !gtm_tid(c) && gtm_peek(m, i, &next); i++) {
		if (next.capture != r->capture || next.rec->thread != child)
			continue;
		if (next.rec->type == GT_THREAD_START) {
			c->tid_ahead = ((const struct gt_p_thread_start *)next.payload)->tid;
			gtm_kernel_tid(m, c);
		}
		return;
	}
}

static void fact_thread_new(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	const struct gt_p_thread_new *n = r->payload;
	struct mthread *t = gtm_fact_thread(m, r, ns, S_UNKNOWN);
	if (!t)
		return;
	struct mthread *c = record_thread(m, r->capture, n->child);
	if (!c || c == t)
		return;
	if (c->g) {
		m->ctr.duplicate_creates++;
		return;
	}
	c->g = m->next_g++;
	c->seq = 0;
	/* never an empty creator stack: Go 1.19's task analysis reads its first frame when the
	 * creator is inside a user region */
	uint64_t stk = gtm_captured_stack(m, n->stack);
	GTM_EMIT(m, ns, t, c, .kind = GT_SCHED_GO_CREATE, .p = t->p, .g = c->g,
		 .new_stack = gtm_routine_stack(m, c, n->start_routine, S_PREEXISTING),
		 .stack = stk ? stk : gtm_synth_stack(m, S_NO_FRAMES));
	c->state = T_RUNNABLE;   /* after: a generation's statuses list it once created */
	m->ctr.threads++;
	tid_ahead(m, c, r, n->child);
}

static void fact_thread_start(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	struct mthread *t = record_thread(m, r->capture, r->rec->thread);
	if (t)
		gtm_kernel_tid(m, t);
	gtm_fact_thread(m, r, ns, S_UNKNOWN);
}

static void fact_thread_end(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	struct mthread *t = gtm_fact_thread(m, r, ns, S_UNKNOWN);
	if (!t)
		return;
	gtm_wake_waiters(m, t, t->serial | JOIN_KEY_BIT, GT_WAKE_ALL, ns,
			 gtm_synth_stack(m, S_EXIT));
	gtm_kobj_release(m, t, r, ns, gtm_synth_stack(m, S_EXIT));
	GTM_EMIT(m, ns, t, NULL, .kind = GT_SCHED_GO_DESTROY, .p = t->p);
	m->ps[t->p].running = 0;
	gtm_thread_died(m, t);
	gtm_credit_end(m, t->serial);   /* a dead thread lets nobody in (its join wake's rest) */
}

/* A thread's name from its THREAD_NAME among the next few records (the recorder writes it
 * right after THREAD_EXISTING), so that a pre-existing thread is created under it. */
static void name_ahead(struct gt_model *m, struct mthread *t, const struct gt_capture_record *r)
{
	struct gt_capture_record next;
	/* the next 16 of its process: other processes' records may come in between */
	for (size_t i = 0, seen = 0; seen < 16 && gtm_peek(m, i, &next); i++) {
		if (next.capture != r->capture)
			continue;
		seen++;
		if (next.rec->thread != r->rec->thread)
			continue;
		if (next.rec->type == GT_THREAD_NAME) {
			const struct gt_p_thread_name *n = next.payload;
			size_t len = strnlen(n->name, sizeof n->name);
			len = len < sizeof t->name_ahead - 1 ? len : sizeof t->name_ahead - 1;
			memcpy(t->name_ahead, n->name, len);
			t->name_ahead[len] = 0;
			t->named_ahead = true;
		}
		return;
	}
}

static void fact_existing(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	const struct gt_p_thread_start *s = r->payload;
	struct mthread *t = record_thread(m, r->capture, r->rec->thread);
	uint32_t serial = t ? t->serial : 0;
	if (t)
		gtm_kernel_tid(m, t);
	if (!t || t->g) {
		if (t && m->prologue_closed && t->state != T_DEAD)
			gtm_fact_thread(m, r, ns, S_UNKNOWN);
		return;
	}
	if (!s->start_routine && r->rec->thread != 1)
		name_ahead(m, t, r);
	if (m->prologue_closed) {
		/* met later by a hook: a live creation where it runs */
		gtm_fact_thread(m, r, ns, S_UNKNOWN);
		return;
	}
	if (serial != 1)
		gtm_ensure_main(m);
	gtm_create_in_prologue(m, t, serial, r->rec->aux & 1);
	if (r->rec->aux & 1) {
		GTM_EMIT(m, m->t0, t, NULL, .kind = GT_SCHED_GO_WAITING, .p = 0, .g = t->g);
		t->seq++;
		t->state = T_WAITING;
		t->wait_kind = WAIT_PROLOGUE;
		t->block_ns = ns;
		t->block_tsc = r->tsc;
	} else {
		t->prologue_start = true;
		t->first_cpu = r->cpu;
	}
}

static void fact_syscall_begin(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	struct mthread *t = gtm_fact_thread(m, r, ns, S_UNKNOWN);
	if (!t)
		return;
	t->in_syscall = true;
	t->sys_ns = ns;
	t->sys_p = t->p;
	gtm_kobj_syscall_begin(m, t, r, ns);
}

static void fact_syscall_end(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	struct mthread *t = gtm_known_thread(m, gtm_rec_serial(m, r));
	if (!t)
		return;
	if (t->in_syscall)
		gtm_syscall_resolve(m, t, ns, gtm_kernel_cpu(m, t, r->cpu) + 1 != t->sys_p);
	else if (t->g && t->state != T_DEAD && !t->sys_awaiting_end)
		m->ctr.ends_without_begin++;
	t->sys_awaiting_end = false;
	gtm_kobj_syscall_end(m, t);
	gtm_fact_thread(m, r, ns, S_UNKNOWN);
}

static void fact_yield(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	const struct gt_p_stackonly *s = r->payload;
	struct mthread *t = gtm_fact_thread(m, r, ns, S_UNKNOWN);
	if (!t)
		return;
	GTM_EMIT(m, ns, t, NULL, .kind = GT_SCHED_GO_STOP, .p = t->p, .stop = GT_STOP_YIELD,
		 .stack = gtm_captured_stack(m, s->stack));
	m->ps[t->p].running = 0;
	t->state = T_RUNNABLE;
}

/* t's label from its name: none (merged: its process's) while it carries the name every
 * thread inherits, which tells nothing; merged, its own name after its process's. */
static void thread_label(struct gt_model *m, struct mthread *t)
{
	const struct mcapture *cap = &m->caps[t->capture];
	const char *name = gtm_own_name(m, t);
	if (!name) {
		t->label = cap->label;
		return;
	}
	size_t len = strlen(name);
	if (m->merged) {
		char label[sizeof cap->process + sizeof t->name_ahead + 2];
		int k = snprintf(label, sizeof label, "%s %s", cap->process, name);
		t->label = gt_wire_string(m->w, label, (size_t)k);
		return;
	}
	t->label = gt_wire_string(m->w, name, len);
}

static void fact_name(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns)
{
	/* a thread that named itself runs (another fact on its CPU since may have taken its P
	 * in the model), so its new label is shown now rather than lost to a later rename */
	struct mthread *t = (r->rec->aux & GT_NAME_BY_ITSELF) && m->prologue_closed
				    ? gtm_fact_thread(m, r, ns, S_UNKNOWN)
				    : record_thread(m, r->capture, r->rec->thread);
	if (!t)
		return;
	t->named_ahead = false;   /* the tracker has this name now (the one read ahead, if any) */
	thread_label(m, t);
	/* renamed while it runs: shown now where the format can (a start shows it anyway) */
	if (t->state == T_RUNNING && t->g && t->label && t->label != t->label_shown) {
		struct gt_wire_actor who = {t->g, gtm_m_id(m, t)};
		if (gt_wire_running_label(m->w, gtm_next_tick(m, t->p, t, NULL, ns), &who, t->label)) {
			gtm_take_tick(m, t->p, t, NULL, ns);   /* written: its tick is used */
			t->label_shown = t->label;
		}
	}
}

static void fact_module(struct gt_model *m, const struct gt_capture_record *r)
{
	const struct gt_p_module *mod = r->payload;
	if (!m->opt.sym)
		return;
	gtm_use_space(m, r->capture);
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
	struct mthread *t = gtm_fact_thread(m, r, ns, S_UNKNOWN);
	if (!t)
		return;
	const char *name = (const char *)(u + 1);
	const char *msg = name + u->name_len;
	uint64_t stk = gtm_captured_stack(m, u->stack);
	if (!stk)
		stk = gtm_synth_stack(m, S_NO_FRAMES);   /* region analysis reads the first frame */
	uint64_t name_id = u->name_len ? gt_wire_string(m->w, name, u->name_len)
				       : gt_wire_cstring(m->w, "[unnamed]");
	bool found = false;
	uint64_t *live = NULL;
	switch (r->rec->aux) {
	case GT_USER_TASK_BEGIN:
		live = u->id ? gt_u64map_slot(&m->tasks, u->id, &found) : NULL;
		if (!live || (found && *live))
			break;
		*live = 1;
		GTM_EMIT(m, ns, t, NULL, .kind = GT_SCHED_USER_TASK_BEGIN, .p = t->p, .task = u->id,
			 .parent = u->parent, .name = name_id, .stack = stk);
		m->ctr.user_annotations++;
		return;
	case GT_USER_TASK_END:
		live = u->id ? gt_u64map_slot(&m->tasks, u->id, &found) : NULL;
		if (!live || !found || !*live)
			break;
		*live = 0;
		GTM_EMIT(m, ns, t, NULL, .kind = GT_SCHED_USER_TASK_END, .p = t->p, .task = u->id,
			 .stack = stk);
		m->ctr.user_annotations++;
		return;
	case GT_USER_REGION_BEGIN:
		if (t->n_regions == MAX_REGIONS)
			break;
		gtm_cp_program_region(m, t, ns);
		t->regions[t->n_regions].task = u->id;
		t->regions[t->n_regions++].name = name_id;
		GTM_EMIT(m, ns, t, NULL, .kind = GT_SCHED_USER_REGION_BEGIN, .p = t->p, .task = u->id,
			 .name = name_id, .stack = stk);
		m->ctr.user_annotations++;
		return;
	case GT_USER_REGION_END:
		if (!t->n_regions || t->regions[t->n_regions - 1].task != u->id ||
		    t->regions[t->n_regions - 1].name != name_id)
			break;
		t->n_regions--;
		GTM_EMIT(m, ns, t, NULL, .kind = GT_SCHED_USER_REGION_END, .p = t->p, .task = u->id,
			 .name = name_id, .stack = stk);
		m->ctr.user_annotations++;
		return;
	case GT_USER_LOG:
		gt_wire_user_log(m->w, t->p, &(struct gt_wire_actor){t->g, gtm_m_id(m, t)},
				 gtm_take_tick(m, t->p, t, NULL, ns), u->id, name_id, stk, msg,
				 u->msg_len);
		m->ctr.user_annotations++;
		return;
	default:
		break;
	}
	m->ctr.user_skipped++;
}

/* The label prefix of a capture's threads in a merged trace: its process's name and pid. */
static void capture_label(struct gt_model *m, struct mcapture *cap, uint32_t pid)
{
	snprintf(cap->process, sizeof cap->process, "%.32s[%u]", cap->proc.name, pid);
	if (m->merged)
		cap->label = gt_wire_cstring(m->w, cap->process);
}

/* The last name recorded names the process (merged: its threads' labels follow); the first
 * one's comm, the one threads inherit, is the tracker's. */
static void fact_process_name(struct gt_model *m, const struct gt_capture_record *r)
{
	struct mcapture *cap = &m->caps[m->fact_capture];
	gt_process_name_from_fact(&cap->proc, r->payload, r->payload_len);
	capture_label(m, cap, cap->pid);
	FOR_EACH_THREAD(m, t)
		if (t->capture == m->fact_capture)
			thread_label(m, t);
}

const struct gt_process_name *gt_model_process(const struct gt_model *m, uint32_t capture)
{
	return &m->caps[capture < m->n_caps ? capture : 0].proc;
}

static bool fact_is_prologue(uint8_t type)
{
	switch (type) {
	case GT_THREAD_EXISTING: case GT_THREAD_NAME: case GT_STACK: case GT_MODULE:
	case GT_MODULE_UNLOAD: case GT_CLOCK: case GT_NOTICE: case GT_PROCESS:
	case GT_PROCESS_NAME:
		return true;
	default:
		return false;
	}
}

void gtm_count_for(struct gt_model *m, uint32_t capture)
{
	if (capture != m->cur_cap && capture < m->n_caps) {
		m->caps[m->cur_cap].ctr = m->ctr;
		m->ctr = m->caps[capture].ctr;
		m->cur_cap = capture;
	}
}

void gt_model_fact(struct gt_model *m, const struct gt_capture_record *r)
{
	if (m->n_dying)
		gtm_retire_dead(m);
	struct gt_tracker_change change;
	gt_tracker_fact(m->tracker, r, &change);
	gt_lock_order_fact(m->order, r, &change);   /* its losses: gt_lock_order_lost */
	if (change.hold_began)
		gtm_lock_first_use(m, r->capture, &change.hold);
	uint64_t ns = gt_clock_ticks(&m->clock, r->tsc);
	m->fact_tsc = r->tsc;
	m->cur = r;
	gtm_count_for(m, r->capture);   /* counters go to the capture whose fact is modelled */
	m->fact_capture = r->capture < m->n_caps ? r->capture : 0;
	m->caps[m->fact_capture].last_ns = ns;
	if (m->n_ends_pending)
		gtm_pending_ends(m, ns, false);
	if (m->n_credits)
		gtm_credit_end(m, gtm_rec_serial(m, r));
	if (m->n_deferred) {
		/* its awaited waiter's block did not come first: its own block comes now */
		struct mthread *x = gtm_thread_find(m, gtm_rec_serial(m, r));
		if (x && x->defer_waiter)
			cond_release_end(m, x, NULL, r->cpu, ns);
	}
	if (!m->seen_fact && r->tsc >= m->opt.start_tsc) {
		m->seen_fact = true;
		m->t0 = ns;
	}
	if (ns > m->now)
		m->now = ns;
	m->ctr.facts++;
	m->n_facts++;
	uint8_t type = r->rec->type;
	if (!m->prologue_closed && !fact_is_prologue(type))
		gtm_close_prologue(m);
	/* a call a signal handler made inside the thread's open wait (change.nested): the wait
	 * goes on, as if it had not been made */
	switch (type) {
	case GT_THREAD_NEW: fact_thread_new(m, r, ns); break;
	case GT_THREAD_START: fact_thread_start(m, r, ns); break;
	case GT_THREAD_END: fact_thread_end(m, r, ns); break;
	case GT_THREAD_NAME: fact_name(m, r, ns); break;
	case GT_THREAD_EXISTING: fact_existing(m, r, ns); break;
	case GT_BLOCK_BEGIN: if (!change.nested) fact_block_begin(m, r, ns); break;
	case GT_BLOCK_END: if (!change.nested) fact_block_end(m, r, ns); break;
	case GT_WAKE: fact_wake(m, r, ns); break;
	case GT_SYSCALL_BEGIN: if (!change.nested) fact_syscall_begin(m, r, ns); break;
	case GT_SYSCALL_END: if (!change.nested) fact_syscall_end(m, r, ns); break;
	case GT_YIELD: fact_yield(m, r, ns); break;
	case GT_STACK: {
		const struct gt_p_stack *st = r->payload;
		gtm_define_stack(m, st, (const uint64_t *)(st + 1));
		break;
	}
	case GT_MODULE: fact_module(m, r); break;
	case GT_CLOCK: {
		const struct gt_p_clock *c = r->payload;
		/* one fit for every capture on the same clock (tsc == rec->tsc), the TSC being
		 * one counter for the machine */
		if (r->tsc == r->rec->tsc || !m->merged)
			gt_clock_add_pair(&m->clock, r->rec->tsc, c->mono_ns);
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
		else if (r->rec->aux == GT_NOTICE_WAITERS_LOST)
			m->ctr.writer_waiters_lost += n->value;
		else if (r->rec->aux == GT_NOTICE_REENTRY_LOST)
			m->ctr.writer_reentry_lost += n->value;
		else if (r->rec->aux == GT_NOTICE_WAITS_UNSHOWN)   /* older recorders: not drawn */
			m->ctr.cond_release_unseen += n->value;
		/* GT_NOTICE_WRITE_FAILED: the header says the same (gt_convert_stop) */
		break;
	}
	case GT_USER: fact_user(m, r, ns); break;
	case GT_PROCESS_NAME: fact_process_name(m, r); break;
	case GT_PROCESS:
		gtm_observe_process(m, r, ns);
		m->ctr.facts_ignored++;   /* not drawn */
		break;
	case GT_MODULE_UNLOAD: case GT_CAPTURE_END: case GT_FD: /* FD: the reader's */
	case GT_LOCK_ACQUIRE: case GT_LOCK_RELEASE:   /* the tracker's holds: the report's */
		break;
	default:
		m->ctr.facts_ignored++;
		break;
	}
	/* the fact's thread, made by its handler when new: what the facts say of it */
	struct mthread *own = change.thread ? gtm_thread_find(m, gtm_serial_find(m, r->capture,
									  r->rec->thread)) : NULL;
	if (own && !own->facts)
		own->facts = change.thread;
	if (m->kernel)
		gtm_kernel_fact_done(m, gtm_rec_serial(m, r), ns);
	/* the record is the caller's: its capture may be closed before the next fact or the
	 * finish (a fuzz input freed it under waker_scan) */
	m->cur = NULL;
}

/* The names a capture's threads are known by, until its GT_PROCESS_NAME says otherwise;
 * false when memory runs out. */
static bool capture_names(struct gt_model *m, uint32_t capture, const struct gt_file_header *h)
{
	struct mcapture *cap = &m->caps[capture];
	gt_process_name_from_header(&cap->proc, h);
	cap->pid = h->pid;
	cap->ppid = h->ppid;
	cap->stop_tsc = h->stop_at_tsc ? h->stop_at_tsc : UINT64_MAX;
	if ((h->flags & GT_FILE_WRITE_FAILED) && h->stop_tsc && h->stop_tsc < cap->stop_tsc)
		cap->stop_tsc = h->stop_tsc;
	capture_label(m, cap, h->pid);
	return gt_tracker_capture_header(m->tracker, capture, h);
}

struct gt_model *gt_model_new(struct gt_wire *w, const struct gt_file_header *h,
			      const struct gt_model_options *opt)
{
	struct gt_model *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	m->w = w;
	gt_wire_live_state_source(w, gt_model_live_state, m);   /* its statuses are ours */
	m->opt = *opt;
	m->h = *h;
	m->next_g = 2;
	m->n_ps = h->n_cpus + 1;
	m->ps = calloc(m->n_ps, sizeof *m->ps);
	/* bitmaps over 2^24 stack ids: only the pages touched become resident */
	m->stack_defined = calloc(1, (1u << 24) / 8);
	m->stack_referenced = calloc(1, (1u << 24) / 8);
	m->caps = calloc(1, sizeof *m->caps);
	m->tracker = gt_tracker_new();
	m->order = gt_lock_order_new();
	m->retired_thread = (struct mthread){.g = UINT64_MAX, .state = T_DEAD};
	if (!m->ps || !m->stack_defined || !m->stack_referenced || !m->caps || !m->tracker ||
	    !m->order || !gtm_thread_get(m, 1)) {
		gt_model_free(m);
		return NULL;
	}
	m->n_caps = 1;
	m->caps[0].main_serial = 1;
	gt_wire_set_stack_id_base(w, SYNTH_STACK_BASE);
	if (!capture_names(m, 0, h)) {
		gt_model_free(m);
		return NULL;
	}
	gt_clock_init(&m->clock, h);
	if (opt->critical_path)
		gt_critpath_site_source(opt->critical_path, gtm_stack_site, m);
	return m;
}

int gt_model_add_capture(struct gt_model *m, const struct gt_file_header *h)
{
	struct mcapture *caps = realloc(m->caps, (m->n_caps + 1) * sizeof *caps);
	if (!caps)
		return -1;
	m->caps = caps;
	memset(&caps[m->n_caps], 0, sizeof *caps);
	if (!capture_names(m, m->n_caps, h))
		return -1;
	if (!m->merged) {
		/* from now on every id is remapped: capture 0's main thread stays serial 1 (G1) */
		bool found;
		uint64_t *slot = gt_u64map_slot(&m->serials, 1, &found);
		if (!slot)
			return -1;
		*slot = 1;
		m->next_serial = 2;
		m->next_stack_id = 1;
		m->merged = true;
		m->caps[0].label = gt_wire_cstring(m->w, m->caps[0].process);
		FOR_EACH_THREAD(m, t)
			t->label = m->caps[t->capture].label;
	}
	caps[m->n_caps].label = gt_wire_cstring(m->w, caps[m->n_caps].process);
	m->n_caps++;
	return 0;
}

void gt_model_capture_counters(const struct gt_model *m, uint32_t capture,
			       struct gt_model_counters *out)
{
	*out = capture == m->cur_cap ? m->ctr : m->caps[capture].ctr;
}

uint64_t gt_model_frequency(const void *m)
{
	return gt_clock_frequency(&((const struct gt_model *)m)->clock);
}

uint64_t gtm_mono_ticks(const struct gt_model *m, uint64_t mono)
{
	double f = (double)gt_clock_frequency(&m->clock) / 1e9;
	double d = ((double)mono - (double)m->h.start_mono_ns) * f;
	double t = (double)GT_CLOCK_TICKS_OFFSET + d;
	return t > 0 ? (uint64_t)t : 0;
}

uint64_t gt_model_finish(struct gt_model *m)
{
	gtm_pending_ends(m, m->now, true);
	gtm_sched_finish(m);
	gtm_stacks_finish(m);
	if (m->opt.critical_path)
		gt_critpath_finish(m->opt.critical_path, gt_clock_frequency(&m->clock), m->kernel);
	return gt_clock_frequency(&m->clock);
}

void gt_model_counters(const struct gt_model *m, struct gt_model_counters *out)
{
	*out = m->ctr;
	for (uint32_t i = 0; i < m->n_caps; i++) {
		if (i == m->cur_cap)
			continue;
#define GT_ADD_COUNTER(name, text) out->name += m->caps[i].ctr.name;
		GT_MODEL_COUNTERS(GT_ADD_COUNTER)
#undef GT_ADD_COUNTER
	}
}

size_t gt_model_threads_held(const struct gt_model *m)
{
	return m->threads_held_peak;
}

void gt_model_free(struct gt_model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_threads; i++)
		free(m->threads[i]);
	free(m->threads);
	gt_u64map_free(&m->by_serial);
	gt_u64map_free(&m->retired);
	free(m->dying);
	free(m->ps);
	free(m->buckets);
	free(m->credit_holders);
	gt_u64map_free(&m->routine_stacks);
	gt_u64map_free(&m->tasks);
	gt_u64map_free(&m->serials);
	gt_u64map_free(&m->serials_retired);
	gt_u64map_free(&m->stack_ids);
	gt_u64map_free(&m->frame_pcs);
	gt_u64map_free(&m->program_pcs);
	gt_u64map_free(&m->object_names);
	gt_u64map_free(&m->stack_sites);
	gt_intern_free(&m->names);
	gt_u64map_free(&m->by_tid);
	gt_u64map_free(&m->m_owner);
	free(m->caps);
	free(m->stack_defined);
	free(m->stack_referenced);
	gtm_ahead_free(m);
	gt_tracker_free(m->tracker);
	gt_lock_order_free(m->order);
	free(m);
}
