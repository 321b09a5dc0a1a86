/* gowire_v2_events: the model's events said in the "go 1.22 trace" vocabulary
 * (gowire_v2_internal.h): every event on the M of the thread that performs it, a P held
 * while its goroutine runs, block reasons in C terms. */
#include <errno.h>
#include <gotrace/capture.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

#include "gowire_v2_internal.h"
#include "common/grow.h"

static void proc_stop(struct wire22 *w, struct m2 *m, uint64_t ticks)
{
	if (!m || !m->p)
		return;
	EMIT(w, m, PROC_STOP, ticks, 0);
	w->ps[m->p - 1].st = P_IDLE;
	w->ps[m->p - 1].m = NULL;
	m->p = 0;
}

static void g_stop(struct wire22 *w, uint64_t g, uint64_t ticks, enum gt_go2_event ev,
		   uint64_t reason, uint64_t stk, uint8_t st);

/* m holds P p, running (ProcStart); whoever held it lets it go. */
static void take_p(struct wire22 *w, struct m2 *m, uint32_t p, uint64_t ticks)
{
	if (!m || p >= w->n_ps || m->p == p + 1)
		return;
	proc_stop(w, m, ticks);
	struct m2 *holder = w->ps[p].m;
	if (holder) {
		/* the model moves a goroutine off a CPU before another runs there */
		w->stats.repaired++;
		if (holder->g && w->gs[holder->g].st == G_RUNNING)
			g_stop(w, holder->g, ticks, GT_GO2_GO_STOP, w22_cstring(w, "preempted"), 0,
			       G_RUNNABLE);
		proc_stop(w, holder, ticks);
	}
	EMIT(w, m, PROC_START, ticks, p, ++w->ps[p].seq);
	w->ps[p].st = P_RUNNING;
	w->ps[p].m = m;
	m->p = p + 1;
}

/* A running goroutine stops (GoStop/GoBlock, or GoDestroy) and its thread gives the CPU up. */
static void g_stop(struct wire22 *w, uint64_t g, uint64_t ticks, enum gt_go2_event ev,
		   uint64_t reason, uint64_t stk, uint8_t st)
{
	struct g2 *gg = &w->gs[g];
	struct m2 *m = gg->m;
	if (gg->st != G_RUNNING || !m) {
		w->stats.skipped++;
		return;
	}
	w22_use_string(w, reason);
	w22_use_stack(w, stk);
	if (ev == GT_GO2_GO_DESTROY)
		w22_emit(w, m, ev, ticks, NULL);
	else
		w22_emit(w, m, ev, ticks, (const uint64_t[]){reason, stk});
	gg->st = st;
	m->g = 0;
	proc_stop(w, m, ticks);
}

static const char *sys_name(uint32_t nr)
{
	switch (nr) {
	case SYS_read: return "read";
	case SYS_readv: return "readv";
	case SYS_pread64: return "pread";
	case SYS_recvfrom: return "recv";
	case SYS_recvmsg: return "recvmsg";
	case SYS_write: return "write";
	case SYS_writev: return "writev";
	case SYS_pwrite64: return "pwrite";
	case SYS_sendto: return "send";
	case SYS_sendmsg: return "sendmsg";
	case SYS_ppoll: return "ppoll";
	case SYS_pselect6: return "pselect";
	case SYS_epoll_pwait: return "epoll_pwait";
	case SYS_accept4: return "accept4";
	case SYS_accept: return "accept";
	case SYS_connect: return "connect";
	case SYS_wait4: return "wait4";
	case SYS_waitid: return "waitid";
#ifdef SYS_poll
	case SYS_poll: return "poll";
#endif
#ifdef SYS_select
	case SYS_select: return "select";
#endif
#ifdef SYS_epoll_wait
	case SYS_epoll_wait: return "epoll_wait";
#endif
	default: return NULL;
	}
}

static bool sys_writes(uint32_t nr)
{
	return nr == SYS_write || nr == SYS_writev || nr == SYS_pwrite64 || nr == SYS_sendto ||
	       nr == SYS_sendmsg;
}

/* The block reason in C terms (docs/formats/go122.md), chosen for the profile it lands in:
 * "sync: <call>" (sync), "chan receive/send: <call> pipe" (sync: a hand-off from another
 * thread), "network" exactly (net), "sleep", "wait: <call>" (none). */
static uint64_t block_reason(struct wire22 *w, struct gt_wire_wait wait)
{
	static const char *const by_kind[GT_BK_COUNT] = {
		[GT_BK_MUTEX] = "sync: pthread_mutex_lock",
		[GT_BK_RWLOCK_RD] = "sync: pthread_rwlock_rdlock",
		[GT_BK_RWLOCK_WR] = "sync: pthread_rwlock_wrlock",
		[GT_BK_COND] = "sync: pthread_cond_wait",
		[GT_BK_SEM] = "sync: sem_wait",
		[GT_BK_BARRIER] = "sync: pthread_barrier_wait",
		[GT_BK_JOIN] = "sync: pthread_join",
		[GT_BK_SLEEP] = "sleep",
		[GT_BK_FUTEX] = "sync: futex",
	};
	uint32_t kind = wait.kind, fd_kind = wait.fd_kind, nr = wait.sys_nr;
	if (kind < GT_BK_COUNT && by_kind[kind]) {
		if (!w->reason_ids[kind])
			w->reason_ids[kind] = w22_cstring(w, by_kind[kind]);
		return w->reason_ids[kind];
	}
	const char *call = sys_name(nr);
	char buf[64];
	if (kind == GT_WIRE_WAIT_UNTRACED)
		return w22_cstring(w, "off-CPU wait, not seen by the hooks");
	if (kind == GT_WIRE_WAIT_CHILD) {
		snprintf(buf, sizeof buf, "wait: %s", call ? call : "child");
		return w22_cstring(w, buf);
	}
	if (kind == GT_WIRE_WAIT_NET && fd_kind != GT_FD_SOCKET &&
	    (fd_kind == GT_FD_PIPE || fd_kind == GT_FD_OTHER)) {
		snprintf(buf, sizeof buf, "%s: %s %s", sys_writes(nr) ? "chan send" : "chan receive",
			 call ? call : "syscall on", fd_kind == GT_FD_PIPE ? "pipe" : "fd");
		return w22_cstring(w, buf);
	}
	switch (gtw_block_event(wait.kind)) {   /* as the 1.19 format draws it */
	case GT_GO_GO_BLOCK_NET: return w22_cstring(w, "network");
	case GT_GO_GO_BLOCK_COND: return w22_cstring(w, by_kind[GT_BK_COND]);
	case GT_GO_GO_SLEEP: return w22_cstring(w, "sleep");
	case GT_GO_GO_BLOCK_SYNC: return w22_cstring(w, "sync");
	default: return w22_cstring(w, "blocked");
	}
}


/* ---------------------------------------------------------------------------------------- */
/* the model's scheduling events, said in this format */

static bool g_slot(struct wire22 *w, uint64_t g)
{
	if (g && g < (1ull << 32) && gt_grow(&w->gs, &w->cap_gs, g + 1, sizeof *w->gs))
		return true;
	if (g)
		w->error = ENOMEM;
	return false;
}

static uint64_t running_on(struct wire22 *w, uint64_t p)
{
	if (p >= w->n_ps || !w->ps[p].m)
		return 0;
	uint64_t g = w->ps[p].m->g;
	return g && w->gs[g].st == G_RUNNING ? g : 0;
}

static void create(struct wire22 *w, uint64_t p, uint64_t ticks, const uint64_t *args,
		   uint64_t actor, uint32_t tid)
{
	uint64_t g = args[0];
	if (!g_slot(w, g) || w->gs[g].st != G_NONE)
		return;
	struct g2 *gg = &w->gs[g];
	if (!w->prologue_done && actor == g) {
		/* existing at the start: declared when the prologue ends, waiting or created */
		*gg = (struct g2){.st = G_PENDING, .tid = tid, .new_stk = args[1],
				  .create_ticks = ticks};
		return;
	}
	w22_use_stack(w, args[1]);
	if (actor == g || !actor || w->gs[actor].st != G_RUNNING) {
		/* first seen mid-trace: created by its own thread on the CPU it shows up on */
		gg->tid = tid;
		struct m2 *m = w22_m_of(w, g, actor == g ? tid : 0);
		take_p(w, m, (uint32_t)p, ticks);
		EMIT(w, m, GO_CREATE, ticks, g, args[1], 0);
	} else {
		w22_use_stack(w, args[2]);
		EMIT(w, w->gs[actor].m, GO_CREATE, ticks, g, args[1], args[2]);
	}
	gg->st = G_RUNNABLE;
	gg->seq = 0;
}

static void prologue_end(struct wire22 *w)
{
	w->prologue_done = true;
	for (uint64_t g = 1; g < w->cap_gs; g++) {
		struct g2 *gg = &w->gs[g];
		if (gg->st != G_PENDING)
			continue;
		struct m2 *m = w22_m_of(w, g, gg->tid);
		if (gg->wait_at_start) {
			EMIT(w, m, GO_STATUS, gg->create_ticks, g, NO_ID, GS_WAITING);
			gg->st = G_WAITING;
		} else {
			/* from P 0, which the prologue owns: named by its start routine from time 0 */
			take_p(w, m, 0, gg->create_ticks);
			w22_use_stack(w, gg->new_stk);
			EMIT(w, m, GO_CREATE, gg->create_ticks, g, gg->new_stk, 0);
			proc_stop(w, m, gg->create_ticks);
			gg->st = G_RUNNABLE;
		}
		gg->seq = 0;
	}
}

static void start(struct wire22 *w, uint64_t p, uint64_t ticks, uint64_t g, uint64_t label,
		  uint32_t tid)
{
	if (!g_slot(w, g) || w->gs[g].st == G_NONE || w->gs[g].st == G_DEAD) {
		w->stats.skipped++;
		return;
	}
	struct g2 *gg = &w->gs[g];
	struct m2 *m = w22_m_of(w, g, tid);
	if (!m)
		return;
	if (gg->st == G_RUNNING && m->p == p + 1)
		return;
	if (gg->st != G_RUNNABLE) {
		/* the model unblocks before it starts: anything else is repaired here */
		w->stats.repaired++;
		if (gg->st == G_RUNNING)
			g_stop(w, g, ticks, GT_GO2_GO_STOP, w22_cstring(w, "preempted"), 0, G_RUNNABLE);
		else if (gg->st == G_WAITING)
			EMIT(w, m, GO_UNBLOCK, ticks, g, ++gg->seq, 0);
		else if (gg->st == G_SYSCALL) {
			proc_stop(w, m, ticks);
			EMIT(w, m, GO_SYSCALL_END_BLOCKED, ticks, 0);
			m->g = 0;
		}
		gg->st = G_RUNNABLE;
	}
	take_p(w, m, (uint32_t)p, ticks);
	EMIT(w, m, GO_START, ticks, g, ++gg->seq);
	gg->st = G_RUNNING;
	m->g = g;
	if (label && label != gg->label_shown) {
		w22_use_string(w, label);
		EMIT(w, m, GO_LABEL, ticks, label);
		gg->label_shown = label;
	}
}

static void unblock(struct wire22 *w, uint64_t actor, uint32_t tid, uint64_t g, uint64_t stk,
		    uint64_t ticks)
{
	if (!g_slot(w, g) || w->gs[g].st != G_WAITING) {
		w->stats.skipped++;
		return;
	}
	/* by the waker's thread; an unknown waker: the woken thread's own (an arrow from
	 * NoThread would start on a row that does not exist, §4.2) */
	struct m2 *m = actor && actor != g && w->gs[actor].m ? w->gs[actor].m
		     : w22_m_of(w, g, actor == g ? tid : 0);
	w22_use_stack(w, stk);
	EMIT(w, m ? m : w22_no_thread(w), GO_UNBLOCK, ticks, g, ++w->gs[g].seq, stk);
	w->gs[g].st = G_RUNNABLE;
}

static void syscall(struct wire22 *w, uint64_t g, uint64_t ticks, uint64_t stk, uint64_t end)
{
	struct g2 *gg = &w->gs[g];
	struct m2 *m = gg->m;
	if (gg->st != G_RUNNING || !m || !m->p) {
		w->stats.skipped++;
		return;
	}
	struct p2 *pp = &w->ps[m->p - 1];
	w22_use_stack(w, stk);
	EMIT(w, m, GO_SYSCALL_BEGIN, ticks, ++pp->seq, stk);
	if (end) {
		EMIT(w, m, GO_SYSCALL_END, end > ticks ? end : ticks, 0);
		return;
	}
	gg->st = G_SYSCALL;
	pp->st = P_SYSCALL;
}

static void sysexit(struct wire22 *w, uint64_t g, uint64_t ticks)
{
	if (!g_slot(w, g) || w->gs[g].st != G_SYSCALL || !w->gs[g].m) {
		w->stats.skipped++;
		return;
	}
	struct m2 *m = w->gs[g].m;
	proc_stop(w, m, ticks);
	EMIT(w, m, GO_SYSCALL_END_BLOCKED, ticks, 0);
	w->gs[g].st = G_RUNNABLE;
	m->g = 0;
}

static void destroy(struct wire22 *w, uint64_t g, uint64_t ticks)
{
	struct g2 *gg = &w->gs[g];
	struct m2 *m = gg->m;
	if (gg->st == G_SYSCALL && m) {
		proc_stop(w, m, ticks);
		EMIT(w, m, GO_DESTROY_SYSCALL, ticks, 0);
		gg->st = G_DEAD;
		m->g = 0;
	} else {
		g_stop(w, g, ticks, GT_GO2_GO_DESTROY, 0, 0, G_DEAD);
	}
	if (m && m->owner == g)
		m->owner = 0;
}

/* A user annotation by the running goroutine: args as the 1.22 event takes them, string
 * and stack ids marked used. */
static void user(struct wire22 *w, uint64_t g, uint64_t ticks, enum gt_go2_event ev,
		 const uint64_t *args, uint64_t name, uint64_t stk)
{
	if (!g || w->gs[g].st != G_RUNNING) {
		w->stats.skipped++;
		return;
	}
	w22_use_string(w, name);
	w22_use_stack(w, stk);
	w22_emit(w, w->gs[g].m, ev, ticks, args);
}

void w22_sched(struct gt_wire *gw, const struct gt_sched_event *e)
{
	struct wire22 *w = w22(gw);
	if (w->error)
		return;
	uint64_t p = e->p, ticks = e->ticks;
	w22_gen_check(w, ticks);
	uint32_t tid = e->who.tid;
	uint64_t g = e->who.g < w->cap_gs ? e->who.g : 0;
	if (!e->who.g)
		g = running_on(w, p);
	switch (e->kind) {
	case GT_SCHED_PROCS:
		prologue_end(w);
		break;
	case GT_SCHED_GO_CREATE:
		create(w, p, ticks, (const uint64_t[]){e->g, e->new_stack, e->stack}, e->who.g, tid);
		break;
	case GT_SCHED_GO_WAITING:
		if (e->g < w->cap_gs && w->gs[e->g].st == G_PENDING)
			w->gs[e->g].wait_at_start = true;
		break;
	case GT_SCHED_GO_START:
		start(w, p, ticks, e->g, e->label, tid);
		break;
	case GT_SCHED_GO_STOP:
		if (g)
			g_stop(w, g, ticks, GT_GO2_GO_STOP,
			       w22_cstring(w, e->stop == GT_STOP_YIELD ? "sched_yield" : "preempted"),
			       e->stack, G_RUNNABLE);
		break;
	case GT_SCHED_GO_BLOCK:
		if (g)
			g_stop(w, g, ticks, GT_GO2_GO_BLOCK, block_reason(w, e->wait), e->stack,
			       G_WAITING);
		break;
	case GT_SCHED_GO_UNBLOCK:
		unblock(w, e->who.g ? g : 0, tid, e->g, e->stack, ticks);
		break;
	case GT_SCHED_GO_DESTROY:
		if (g)
			destroy(w, g, ticks);
		break;
	case GT_SCHED_GO_SYSCALL_BEGIN:
		if (g)
			syscall(w, g, ticks, e->stack, e->sys_end);
		break;
	case GT_SCHED_GO_SYSCALL_END_BLOCKED:
		sysexit(w, e->g, ticks);
		break;
	case GT_SCHED_PROC_STOP:
		/* a P given up in a syscall; the others were stopped with their goroutine */
		if (p < w->n_ps && w->ps[p].st == P_SYSCALL)
			proc_stop(w, w->ps[p].m, ticks);
		break;
	case GT_SCHED_USER_TASK_BEGIN:
		user(w, g, ticks, GT_GO2_USER_TASK_BEGIN,
		     (const uint64_t[]){e->task, e->parent, e->name, e->stack}, e->name, e->stack);
		break;
	case GT_SCHED_USER_TASK_END:
		user(w, g, ticks, GT_GO2_USER_TASK_END, (const uint64_t[]){e->task, e->stack}, 0,
		     e->stack);
		break;
	case GT_SCHED_USER_REGION_BEGIN: case GT_SCHED_USER_REGION_END:
		user(w, g, ticks, e->kind == GT_SCHED_USER_REGION_END ? GT_GO2_USER_REGION_END
								       : GT_GO2_USER_REGION_BEGIN,
		     (const uint64_t[]){e->task, e->name, e->stack}, e->name, e->stack);
		break;
	default:   /* ProcStart, GoSysBlock: implied by the events above */
		break;
	}
}

void w22_user_log(struct gt_wire *gw, uint64_t p, uint64_t ticks, uint64_t task,
			 uint64_t key, uint64_t stack, const char *msg, size_t len)
{
	struct wire22 *w = w22(gw);
	if (w->error)
		return;
	w22_gen_check(w, ticks);
	uint64_t value = w22_string(gw, msg, len);
	w22_use_string(w, value);
	user(w, running_on(w, p), ticks, GT_GO2_USER_LOG, (const uint64_t[]){task, key, value, stack},
	     key, stack);
}

/* A running G renamed: its GoLabel on its M now (§2.1), not at its next start only. */
bool w22_running_label(struct gt_wire *gw, uint64_t ticks, const struct gt_wire_actor *who,
			      uint64_t label)
{
	struct wire22 *w = w22(gw);
	if (w->error || !who || !who->g || who->g >= w->cap_gs || !label)
		return false;
	struct g2 *gg = &w->gs[who->g];
	if (gg->st != G_RUNNING || !gg->m || gg->label_shown == label)
		return false;
	w22_gen_check(w, ticks);
	w22_use_string(w, label);
	EMIT(w, gg->m, GO_LABEL, ticks, label);
	gg->label_shown = label;
	return true;
}

