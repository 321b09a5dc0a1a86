/* model_kernel_objects: wakes through objects the kernel identifies (capture.h,
 * GT_OBJ_KERNEL): pipes, FIFOs and sockets, and a parent's wait for its children.  The
 * hooks only record facts (a syscall's descriptor key, a close, a process end); which of them
 * ended a wait is decided here, with the lookahead in view (gtm_peek: every process's):
 *
 *   a syscall pending on key K (a read or a poll for input on a pipe, a wait4) is woken by
 *   the LAST event on K that could have ended it, after it began and before it returned: a
 *   write (for a read that returned data, a poll that found it ready), a close (for a read at
 *   end of file, a poll that found it ready, a write that failed EPIPE), a child's exit (for
 *   a wait4 returning its pid).  Begins count, not ends: the reader may
 *   return before the writer's end is stamped.  Several readers: each is woken by the last
 *   such event before its own return.  A write into a full pipe is not matched with the
 *   read that made room: a write that went through may not have waited at all.
 *
 * A pending syscall waits in the model's wait lists under its key (the keys cannot meet an
 * address: GT_OBJ_KERNEL is above user space).  A merge of captures keys these objects as they
 * are, so a writer in one capture wakes a reader in another; proc_ids() is the one place that
 * reads which process a record belongs to. */
#include "model_internal.h"
#include "syscalls.h"

#include <errno.h>

enum kev { KEV_NONE = 0, KEV_IN, KEV_OUT, KEV_CLOSE, KEV_EXIT, KEV_WAIT, KEV_POLL };

static enum kev syscall_class(uint32_t nr)
{
	switch (nr) {
	case GT_SYS_read: case GT_SYS_readv: case GT_SYS_recvfrom: case GT_SYS_recvmsg:
	case GT_SYS_recvmmsg:
	case GT_SYS_splice:
		return KEV_IN;
	case GT_SYS_write: case GT_SYS_writev: case GT_SYS_sendto: case GT_SYS_sendmsg:
	case GT_SYS_sendmmsg:
	case GT_SYS_sendfile:
		return KEV_OUT;
	case GT_SYS_wait4: case GT_SYS_waitid:
		return KEV_WAIT;
	case GT_SYS_ppoll:
	case GT_SYS_poll:
		return KEV_POLL;   /* for input, on the one descriptor its key names */
	default:
		return KEV_NONE;
	}
}

/* The process of a record (pid) and its parent: its capture's header. */
static void proc_ids(const struct gt_model *m, const struct gt_capture_record *r, uint64_t *pid,
		     uint64_t *ppid)
{
	if (m->n_caps && r->capture < m->n_caps) {
		*pid = m->caps[r->capture].pid;
		*ppid = m->caps[r->capture].ppid;
		return;
	}
	*pid = m->h.pid;
	*ppid = m->h.ppid;
}

static uint64_t children_key(uint64_t pid)
{
	return gt_kobj_key(GT_KOBJ_CHILDREN, 0, pid, 0);
}

/* The kernel key a SYSCALL_BEGIN carries, or 0. */
static uint64_t syscall_key(const struct gt_capture_record *r)
{
	const struct gt_p_syscall *s = r->payload;
	if (r->payload_len < sizeof *s + sizeof(struct gt_p_syscall_obj))
		return 0;
	uint64_t key = ((const struct gt_p_syscall_obj *)(s + 1))->obj;
	return key & GT_OBJ_KERNEL ? key : 0;
}

/* What a record does to kernel objects: its class, key and (exits) the pid that ended. */
static enum kev record_event(const struct gt_model *m, const struct gt_capture_record *r,
			     uint64_t *key, uint64_t *pid)
{
	switch (r->rec->type) {
	case GT_SYSCALL_BEGIN: {
		enum kev c = syscall_class(((const struct gt_p_syscall *)r->payload)->nr);
		*key = syscall_key(r);
		return (c == KEV_IN || c == KEV_OUT) && *key ? c : KEV_NONE;
	}
	case GT_WAKE:
		if (r->rec->aux != GT_BK_FD)
			return KEV_NONE;
		*key = ((const struct gt_p_wake *)r->payload)->obj;
		return KEV_CLOSE;
	case GT_THREAD_END: {
		if (r->rec->aux != GT_END_PROCESS)
			return KEV_NONE;
		uint64_t ppid;
		proc_ids(m, r, pid, &ppid);
		*key = children_key(ppid);
		return KEV_EXIT;
	}
	default:
		return KEV_NONE;
	}
}

/* May event ev (an exit: of pid) end t's pending syscall, which returned result / err? */
static bool can_end(const struct mthread *t, enum kev ev, uint64_t pid, int64_t result, int err)
{
	switch (syscall_class(gtm_sys(t)->nr)) {
	case KEV_IN:
		return result > 0 ? ev == KEV_OUT : result == 0 && ev == KEV_CLOSE;
	case KEV_POLL:   /* ready: data or a hang-up; 0 is its timeout */
		return result > 0 && (ev == KEV_OUT || ev == KEV_CLOSE);
	case KEV_OUT:
		/* a write that went through may not have waited at all (room in the pipe): only
		 * its EPIPE is known to have been ended by a close */
		return result < 0 && err == EPIPE && ev == KEV_CLOSE;
	case KEV_WAIT:
		if (ev != KEV_EXIT || result < 0)
			return false;
		if (gtm_sys(t)->nr == GT_SYS_wait4 || result > 0)   /* waitid: the child's pid */
			return (uint64_t)result == pid;
		/* a waitid recorded before its result named the child */
		return gtm_sys(t)->arg <= 0 || (uint64_t)gtm_sys(t)->arg == pid;
	default:
		return false;
	}
}

/* Record i of [the record being modelled (during a kernel switch: none, then the one read
 * after the switch), then the lookahead of every process], or NULL past the lookahead. */
static const struct gt_capture_record *at(struct gt_model *m, size_t i, struct gt_capture_record *buf)
{
	if (!i)
		return m->cur;
	if (m->pending && i-- == 1)
		return m->pending;
	return gtm_peek(m, i - 1, buf) ? buf : NULL;
}

/* A record of the thread whose syscall is pending, nested in it (a signal handler's call, or
 * what the handler did between its calls): not the pending call's end.  nested counts the
 * handler's calls begun and not ended, as the tracker does. */
static bool nested_call(uint8_t type, uint32_t *nested)
{
	switch (type) {
	case GT_BLOCK_BEGIN:
	case GT_SYSCALL_BEGIN:
		++*nested;
		return true;
	case GT_BLOCK_END:
	case GT_SYSCALL_END:
		if (!*nested)
			return false;
		--*nested;
		return true;
	case GT_THREAD_END:
	case GT_CAPTURE_END:
		return false;
	default:
		return *nested > 0 || type == GT_WAKE || type == GT_YIELD || type == GT_USER ||
		       type == GT_STACK || type == GT_THREAD_NAME;
	}
}

/* Where the event that ends t's pending syscall is: 0 = the record being modelled, i + 1 =
 * lookahead record i; -1 when none does (or t's return is not in the lookahead).  One pass
 * that keeps the last write and the last close on t's key until t's return says which of
 * them could end it (a wait4's exits, rarer, are matched in a second pass by pid). */
static long waker_scan(struct gt_model *m, const struct mthread *t, bool *found_end)
{
	*found_end = false;
	/* at its own fact (its return, or a cancellation) nothing is pending any more; at the
	 * syscall begin the kernel's switch-out waited for, it is.  During a kernel switch
	 * there is no record being modelled: the scan starts at the one read after it. */
	if (!m->pending && (!m->cur || (gtm_rec_is(m, m->cur, t->serial) &&
					!(m->kernel && t->k_seen && !t->k_on &&
					  m->cur->rec->type == GT_SYSCALL_BEGIN))))
		return -1;
	struct gt_capture_record buf;
	const struct gt_capture_record *c;
	long last[KEV_POLL + 1];
	for (size_t k = 0; k <= KEV_POLL; k++)
		last[k] = -1;
	size_t end = m->pending != NULL;
	/* a signal handler's calls inside the pending one (the tracker's nested calls, some
	 * perhaps begun already) come before its return */
	uint32_t nested = t->facts ? t->facts->nested : 0;
	for (;; end++) {
		if (!(c = at(m, end, &buf)))
			return -1;
		bool own = gtm_rec_is(m, c, t->serial);
		if (end && own && !nested_call(c->rec->type, &nested))
			break;
		uint64_t key = 0, pid = 0;
		enum kev ev = record_event(m, c, &key, &pid);
		if (ev != KEV_NONE && key == t->sys_obj && !own && c->tsc > t->block_tsc)
			last[ev] = (long)end;
	}
	*found_end = true;
	const struct gt_p_syscall_end *e = c->payload;
	if (c->rec->type != GT_SYSCALL_END || e->nr != gtm_sys(t)->nr)
		return -1;
	int64_t result = e->result;
	int err = e->err;
	if (syscall_class(gtm_sys(t)->nr) != KEV_WAIT) {
		long out = can_end(t, KEV_OUT, 0, result, err) ? last[KEV_OUT] : -1;
		long cl = can_end(t, KEV_CLOSE, 0, result, err) ? last[KEV_CLOSE] : -1;
		return out > cl ? out : cl;
	}
	long found = -1;
	for (size_t i = 0; last[KEV_EXIT] >= 0 && i <= (size_t)last[KEV_EXIT]; i++) {
		uint64_t key = 0, pid = 0;
		if ((c = at(m, i, &buf)) && record_event(m, c, &key, &pid) == KEV_EXIT &&
		    key == t->sys_obj && !gtm_rec_is(m, c, t->serial) && c->tsc > t->block_tsc &&
		    can_end(t, KEV_EXIT, pid, result, err))
			found = (long)i;
	}
	return found;
}

/* waker_scan, once per pending syscall once its return is in view: records are delivered
 * in lookahead order, so lookahead record i is fact number n_facts + 1 + i, whichever
 * process it is of (the waker is kept as that number, KOBJ_NONE when none). */
#define KOBJ_UNKNOWN 0
#define KOBJ_NONE UINT64_MAX
static long waker_pos(struct gt_model *m, struct mthread *t)
{
	if (t->kobj_waker_fact == KOBJ_UNKNOWN) {
		bool found_end;
		long pos = waker_scan(m, t, &found_end);
		if (!found_end)
			return pos;
		t->kobj_waker_fact = pos < 0 ? KOBJ_NONE : m->n_facts + (uint64_t)pos;
	}
	if (t->kobj_waker_fact == KOBJ_NONE || t->kobj_waker_fact < m->n_facts)
		return -1;
	return (long)(t->kobj_waker_fact - m->n_facts);
}

uint8_t gtm_kobj_block(struct gt_model *m, struct mthread *t)
{
	if (!t->in_wait_list || !(t->wait_obj & GT_OBJ_KERNEL) || waker_pos(m, t) < 0)
		return 0;
	return syscall_class(gtm_sys(t)->nr) == KEV_WAIT ? WAIT_KERNEL : WAIT_NET;
}

bool gtm_kobj_polls_pipe(const struct mthread *t)
{
	return syscall_class(gtm_sys(t)->nr) == KEV_POLL && t->sys_obj && !(t->sys_obj & GT_OBJ_SOCKET);
}

/* The record being modelled, by thread t (running), may end waits on kernel objects. */
static void event(struct gt_model *m, struct mthread *t, uint64_t key, uint64_t ns, uint64_t stack)
{
	if (!m->n_buckets)
		return;
	for (uint32_t s = m->buckets[gtm_bucket_of(m, key)]; s;) {
		struct mthread *w = gtm_thread_at(m, s);
		s = w->hnext;
		if (w == t || !w->in_wait_list || w->wait_obj != key)
			continue;
		bool waiting = w->state == T_WAITING &&
			       (w->wait_kind == WAIT_NET || w->wait_kind == WAIT_KERNEL);
		if ((!w->in_syscall && !waiting) || waker_pos(m, w) != 0)
			continue;
		if (w->in_syscall) {
			gtm_syscall_resolve(m, w, ns, true);
			if (w->state != T_WAITING)
				continue;
		}
		gtm_unblock_by(m, t, w, ns, stack);
		m->ctr.kernel_wakes++;
	}
}

void gtm_kobj_syscall_begin(struct gt_model *m, struct mthread *t,
			    const struct gt_capture_record *r, uint64_t ns)
{
	const struct gt_p_syscall *s = r->payload;
	uint64_t key = 0, pid = 0;
	t->sys_obj = 0;
	t->kobj_waker_fact = KOBJ_UNKNOWN;
	gtm_wait_remove(m, t);
	if (record_event(m, r, &key, &pid) != KEV_NONE)
		event(m, t, key, ns, gtm_captured_stack(m, s->stack));
	if (syscall_class(s->nr) == KEV_WAIT) {
		uint64_t ppid;
		proc_ids(m, r, &pid, &ppid);
		key = children_key(pid);
	} else if (syscall_class(s->nr) == KEV_NONE || !(key = syscall_key(r))) {
		return;
	}
	t->sys_obj = key;
	t->block_ns = ns;
	t->block_tsc = r->tsc;
	gtm_wait_add(m, t, key);
}

void gtm_kobj_syscall_end(struct gt_model *m, struct mthread *t)
{
	if (t->sys_obj && t->in_wait_list && t->wait_obj == t->sys_obj)
		gtm_wait_remove(m, t);
	t->sys_obj = 0;
}

/* A close (WAKE GT_BK_FD) or a process end (THREAD_END GT_END_PROCESS) by t. */
void gtm_kobj_release(struct gt_model *m, struct mthread *t, const struct gt_capture_record *r,
		      uint64_t ns, uint64_t stack)
{
	uint64_t key = 0, pid = 0;
	if (record_event(m, r, &key, &pid) != KEV_NONE)
		event(m, t, key, ns, stack);
}
