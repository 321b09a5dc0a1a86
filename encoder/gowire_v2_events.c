/* gowire_v2_events: the model's events said in the "go 1.22 trace" vocabulary
 * (gowire_v2_internal.h): every event on the M of the thread that performs it, a P held
 * while its goroutine runs, block reasons in C terms. */
#include <errno.h>
#include <gotrace/capture.h>
#include <stdio.h>
#include <string.h>

#include "gowire_v2_internal.h"
#include "syscalls.h"
#include "common/grow.h"

static const char *sys_name(uint32_t nr)
{
	switch (nr) {
	case GT_SYS_read: return "read";
	case GT_SYS_readv: return "readv";
	case GT_SYS_pread64: return "pread";
	case GT_SYS_recvfrom: return "recv";
	case GT_SYS_recvmsg: return "recvmsg";
	case GT_SYS_write: return "write";
	case GT_SYS_writev: return "writev";
	case GT_SYS_pwrite64: return "pwrite";
	case GT_SYS_sendto: return "send";
	case GT_SYS_sendmsg: return "sendmsg";
	case GT_SYS_ppoll: return "ppoll";
	case GT_SYS_pselect6: return "pselect";
	case GT_SYS_epoll_pwait: return "epoll_pwait";
	case GT_SYS_accept4: return "accept4";
	case GT_SYS_accept: return "accept";
	case GT_SYS_connect: return "connect";
	case GT_SYS_wait4: return "wait4";
	case GT_SYS_waitid: return "waitid";
	case GT_SYS_poll: return "poll";
	case GT_SYS_select: return "select";
	case GT_SYS_epoll_wait: return "epoll_wait";
	default: return NULL;
	}
}

static bool sys_writes(uint32_t nr)
{
	return nr == GT_SYS_write || nr == GT_SYS_writev || nr == GT_SYS_pwrite64 ||
	       nr == GT_SYS_sendto || nr == GT_SYS_sendmsg;
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
	if (kind < GT_BK_COUNT && by_kind[kind] && wait.object) {
		/* "sync: pthread_mutex_lock accounts_lock": one reason per lock */
		char named[1024];   /* a string's limit (docs/formats/go122.md §6) */
		snprintf(named, sizeof named, "%s %s", by_kind[kind], wait.object);
		return w22_cstring(w, named);
	}
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
	    (fd_kind == GT_FD_PIPE || fd_kind == GT_FD_OTHER || fd_kind == GT_FD_ANON)) {
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

/* The performer's M: who.m, NoThread when the model named none. */
static struct m2 *m_of(struct wire22 *w, const struct gt_wire_actor *who)
{
	return w22_m(w, who ? who->m : 0);
}

static uint64_t g_seq(struct wire22 *w, uint64_t g)
{
	struct seq2 *gg = w22_g(w, g);
	return gg ? ++gg->seq : 0;
}

static uint64_t p_seq(struct wire22 *w, uint64_t p)
{
	return p < w->n_ps ? ++w->ps[p].seq : 0;
}

static void proc_start(struct wire22 *w, struct m2 *m, uint64_t p, uint64_t ticks)
{
	EMIT(w, m, PROC_START, ticks, p, p_seq(w, p));
}

/* A G created: by another running G, or, first seen (or there before the trace), by its
 * own M, which takes the P to do it (an existing one: P 0, given back at once). */
static void create(struct wire22 *w, const struct gt_sched_event *e)
{
	struct m2 *m = m_of(w, &e->who);
	struct seq2 *gg = w22_g(w, e->g);
	if (!m || !gg)
		return;
	gg->seq = 0;
	if (e->who.g != e->g) {
		w22_use_stack(w, e->new_stack);
		w22_use_stack(w, e->stack);
		EMIT(w, m, GO_CREATE, e->ticks, e->g, e->new_stack, e->stack);
		return;
	}
	if (e->waiting) {
		EMIT(w, m, GO_STATUS, e->ticks, e->g, NO_ID, GS_WAITING);
		return;
	}
	w->ev_p = e->p;
	proc_start(w, m, e->p, e->ticks);
	w22_use_stack(w, e->new_stack);
	EMIT(w, m, GO_CREATE, e->ticks, e->g, e->new_stack, 0);
	if (e->existing)
		EMIT(w, m, PROC_STOP, e->ticks, 0);
}

static void start(struct wire22 *w, const struct gt_sched_event *e)
{
	struct m2 *m = m_of(w, &e->who);
	if (!m || !w22_g(w, e->g))
		return;
	if (!e->holds_p)
		proc_start(w, m, e->p, e->ticks);
	EMIT(w, m, GO_START, e->ticks, e->g, g_seq(w, e->g));
	if (e->new_label) {
		w22_use_string(w, e->label);
		EMIT(w, m, GO_LABEL, e->ticks, e->label);
	}
}

/* A running G stops (GoStop/GoBlock, or GoDestroy) and its M lets its P go. */
static void stop(struct wire22 *w, const struct gt_sched_event *e, enum gt_go2_event ev,
		 uint64_t reason)
{
	struct m2 *m = m_of(w, &e->who);
	w22_use_string(w, reason);
	w22_use_stack(w, e->stack);
	if (ev == GT_GO2_GO_DESTROY)
		w22_emit(w, m, ev, e->ticks, NULL);
	else
		w22_emit(w, m, ev, e->ticks, (const uint64_t[]){reason, e->stack});
	EMIT(w, m, PROC_STOP, e->ticks, 0);
}

static void destroy(struct wire22 *w, const struct gt_sched_event *e)
{
	struct m2 *m = m_of(w, &e->who);
	stop(w, e, GT_GO2_GO_DESTROY, 0);
	w22_g_end(w, e->who.g);
	if (!m || m->id == NO_ID)
		return;
	/* its batch goes now and its buffer with it: a churn of threads holds the buffers of
	 * those alive, not of every thread of the generation */
	w22_m_flush(w, m);
	free(m->buf.data);
	m->buf = (struct bytebuf){0};
	m->ended = true;
}

/* by the waker's thread; an unknown waker: the woken thread's own (the model's who; an
 * arrow from NoThread would start on a row that does not exist, §4.2) */
static void unblock(struct wire22 *w, const struct gt_sched_event *e)
{
	if (!w22_g(w, e->g))
		return;
	w22_use_stack(w, e->stack);
	EMIT(w, m_of(w, &e->who), GO_UNBLOCK, e->ticks, e->g, g_seq(w, e->g), e->stack);
}

static void syscall(struct wire22 *w, const struct gt_sched_event *e)
{
	struct m2 *m = m_of(w, &e->who);
	w22_use_stack(w, e->stack);
	EMIT(w, m, GO_SYSCALL_BEGIN, e->ticks, p_seq(w, e->p), e->stack);
	if (e->sys_end)
		EMIT(w, m, GO_SYSCALL_END, e->sys_end > e->ticks ? e->sys_end : e->ticks, 0);
}

/* A user annotation by the running goroutine: args as the 1.22 event takes them, string
 * and stack ids marked used. */
static void user(struct wire22 *w, const struct gt_wire_actor *who, uint64_t ticks,
		 enum gt_go2_event ev, const uint64_t *args, uint64_t name, uint64_t stk)
{
	w22_use_string(w, name);
	w22_use_stack(w, stk);
	w22_emit(w, m_of(w, who), ev, ticks, args);
}

void w22_sched(struct gt_wire *gw, const struct gt_sched_event *e)
{
	struct wire22 *w = w22(gw);
	if (w->error)
		return;
	uint64_t ticks = e->ticks;
	w22_gen_check(w, ticks);
	w->ev_g = e->who.g;
	w->ev_p = e->p;
	switch (e->kind) {
	case GT_SCHED_PROCS:
		w->prologue_done = true;
		break;
	case GT_SCHED_GO_CREATE:
		create(w, e);
		break;
	case GT_SCHED_GO_START:
		start(w, e);
		break;
	case GT_SCHED_GO_STOP:
		stop(w, e, GT_GO2_GO_STOP,
		     w22_cstring(w, e->stop == GT_STOP_YIELD ? "sched_yield" : "preempted"));
		break;
	case GT_SCHED_GO_BLOCK:
		stop(w, e, GT_GO2_GO_BLOCK, block_reason(w, e->wait));
		break;
	case GT_SCHED_GO_UNBLOCK:
		unblock(w, e);
		break;
	case GT_SCHED_GO_DESTROY:
		destroy(w, e);
		break;
	case GT_SCHED_GO_SYSCALL_BEGIN:
		syscall(w, e);
		break;
	case GT_SCHED_GO_SYSCALL_END_BLOCKED:
		EMIT(w, m_of(w, &e->who), GO_SYSCALL_END_BLOCKED, ticks, 0);
		break;
	case GT_SCHED_PROC_STOP:
		/* a P given up in a syscall that blocked; the others stopped with their G */
		if (e->who.m)
			EMIT(w, m_of(w, &e->who), PROC_STOP, ticks, 0);
		break;
	case GT_SCHED_USER_TASK_BEGIN:
		user(w, &e->who, ticks, GT_GO2_USER_TASK_BEGIN,
		     (const uint64_t[]){e->task, e->parent, e->name, e->stack}, e->name, e->stack);
		break;
	case GT_SCHED_USER_TASK_END:
		user(w, &e->who, ticks, GT_GO2_USER_TASK_END, (const uint64_t[]){e->task, e->stack},
		     0, e->stack);
		break;
	case GT_SCHED_USER_REGION_BEGIN: case GT_SCHED_USER_REGION_END:
		user(w, &e->who, ticks,
		     e->kind == GT_SCHED_USER_REGION_END ? GT_GO2_USER_REGION_END
							 : GT_GO2_USER_REGION_BEGIN,
		     (const uint64_t[]){e->task, e->name, e->stack}, e->name, e->stack);
		break;
	default:   /* GO_WAITING (said by GO_CREATE's waiting), PROC_START and GoSysBlock of
		    * the 1.19 format */
		break;
	}
}

void w22_user_log(struct gt_wire *gw, uint64_t p, const struct gt_wire_actor *who,
		  uint64_t ticks, uint64_t task, uint64_t key, uint64_t stack, const char *msg,
		  size_t len)
{
	struct wire22 *w = w22(gw);
	if (w->error)
		return;
	w22_gen_check(w, ticks);
	w->ev_g = who ? who->g : 0;
	w->ev_p = p;
	uint64_t value = w22_string(gw, msg, len);
	w22_use_string(w, value);
	user(w, who, ticks, GT_GO2_USER_LOG, (const uint64_t[]){task, key, value, stack}, key,
	     stack);
}

/* A running G renamed: its GoLabel on its M now (§2.1), not at its next start only; the
 * model calls it only when the label is new. */
bool w22_running_label(struct gt_wire *gw, uint64_t ticks, const struct gt_wire_actor *who,
		       uint64_t label)
{
	struct wire22 *w = w22(gw);
	if (w->error || !who || !who->m || !label)
		return false;
	w22_gen_check(w, ticks);
	w->ev_g = who->g;
	w22_use_string(w, label);
	EMIT(w, m_of(w, who), GO_LABEL, ticks, label);
	return true;
}
