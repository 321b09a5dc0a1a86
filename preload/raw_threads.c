/* Threads made by clone() itself, not pthread_create.
 *
 * Without CLONE_SETTLS such a thread runs on its creator's TLS: our gt_tls is the creator's.
 * The clone hook marks that TLS GT_TLS_SHARED (its `ended` byte, which gt_enter already
 * tests: the fast path of every other thread is unchanged) and gives the new thread an
 * identity of its own in a small fixed table keyed by tid; hooks on a shared TLS ask
 * gettid() which thread is calling (one system call, only in processes that did this).
 * The clone's function runs inside a trampoline that announces the thread (THREAD_NEW from
 * the creator, THREAD_START from the thread) and ends it when the function returns; a
 * thread that leaves by syscall(SYS_exit) ends there, one that leaves otherwise is found
 * dead (tgkill) when the table is full.  A clone(CLONE_VM) without CLONE_THREAD is another
 * process in our memory: its identity passes straight through.  A thread made by
 * syscall(SYS_clone) without CLONE_SETTLS gets its identity at its first hook.
 *
 * With CLONE_SETTLS the thread has a TLS block of its own, which holds our gt_tls wherever
 * the caller's block does (initial-exec: at the same offset below its thread pointer as in
 * any thread): copied from its creator's (the creator's identity), or fresh.  Its
 * trampoline makes it the identity the creator announced. */
#include "child_env.h"
#include "facts.h"
#include "hooks.def"
#include "lifecycle.h"
#include "stacks.h"

#include <sched.h>
#include <stdarg.h>

#define GT_RAW_MAX 64u
#define GT_RAW_STARTING (-1) /* taken by a creator, the thread not yet running */

struct gt_raw {
	_Atomic int32_t tid;     /* 0: free */
	int (*fn)(void *);
	void *arg;
	struct gt_tls tls;
};
static struct gt_raw gt_raws[GT_RAW_MAX];
static _Atomic pid_t gt_raw_pid; /* the process whose threads share TLS */
/* a thread the table could not hold: passes straight through (counted as a lost thread) */
static struct gt_tls gt_raw_none = {.busy = GT_BUSY_UNTRACED, .raw = 1};

/* an entry for a thread of ours: `process`: not one (it passes straight through) */
static struct gt_raw *raw_take(int32_t tid, int process);

static void raw_init(struct gt_raw *e, int process)
{
	e->tls = (struct gt_tls){.raw = 1, .busy = process ? GT_BUSY_UNTRACED : 0};
}

/* The thread's end: THREAD_END (with a joiner's wake, as any thread's) and the entry freed */
static void raw_end(struct gt_raw *e, uint8_t how)
{
	if (!e->tls.busy)
		gt_thread_end(&e->tls, how);
	gt_store(&e->tid, 0);
}

/* Entries whose thread is gone without a hook seeing it go: ended late, and freed. */
static int raw_sweep(void)
{
	int freed = 0;
	pid_t pid = gt_load(&gt_raw_pid);
	for (unsigned i = 0; i < GT_RAW_MAX; i++) {
		int32_t tid = gt_load(&gt_raws[i].tid);
		if (tid > 0 && gt_sys3(SYS_tgkill, pid, tid, 0) == -ESRCH &&
		    atomic_compare_exchange_strong(&gt_raws[i].tid, &tid, GT_RAW_STARTING)) {
			raw_end(&gt_raws[i], GT_END_EXIT);
			freed = 1;
		}
	}
	return freed;
}

static struct gt_raw *raw_take(int32_t tid, int process)
{
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < GT_RAW_MAX; i++) {
			int32_t free_tid = 0;
			if (!gt_load(&gt_raws[i].tid) &&
			    atomic_compare_exchange_strong(&gt_raws[i].tid, &free_tid, GT_RAW_STARTING)) {
				raw_init(&gt_raws[i], process);
				gt_store(&gt_raws[i].tid, tid);
				return &gt_raws[i];
			}
		}
		if (!raw_sweep())
			break;
	}
	if (!process)
		gt_lose(GT_NOTICE_THREADS_LOST);
	return NULL;
}

struct gt_tls *gt_raw_self(struct gt_tls *t)
{
	int32_t tid = (int32_t)gt_sys0(SYS_gettid);
	if (tid == t->owner_tid)
		return t;
	for (unsigned i = 0; i < GT_RAW_MAX; i++)
		if (gt_load(&gt_raws[i].tid) == tid)
			return &gt_raws[i].tls;
	/* made by syscall(SYS_clone): first seen now; a process (no CLONE_THREAD) has a pid
	 * of its own */
	struct gt_raw *e = raw_take(tid, gt_sys0(SYS_getpid) != gt_load(&gt_raw_pid));
	return e ? &e->tls : &gt_raw_none;
}

struct gt_tls *gt_enter_odd(struct gt_tls *t, void *ra)
{
	if (!gt_load(&gt_enabled))
		return NULL;
	if (!(t->busy | t->ended))
		return t->epoch != gt_load(&gt_epoch) ? gt_thread_adopt_offstack(t) : t;
	if (t->ended & GT_TLS_SHARED) {
		t = gt_raw_self(t);
		if (!(t->busy | (t->ended & GT_TLS_ENDED)))
			return t->epoch != gt_load(&gt_epoch) ? gt_thread_adopt_offstack(t) : t;
	}
	/* A call the program made while the tracer works on this thread: a signal handler
	 * interrupted it.  Its facts would be written between the tracer's half-written
	 * ones (a block stamped but not yet begun, a pending state): passed straight through,
	 * and counted.  The tracer's own calls (from libunwind, from the loader) are none. */
	if (t->busy && !(t->busy & GT_BUSY_UNTRACED) && !(t->ended & GT_TLS_ENDED) &&
	    !((t->busy & GT_BUSY_CALLOUT) && gt_tracer_pc((uintptr_t)ra)))
		gt_lose(GT_NOTICE_REENTRY_LOST);
	return NULL;
}

/* Before a clone that will share this TLS: from now on its hooks ask who calls. */
static void raw_share(void)
{
	struct gt_tls *t = &gt_tls;
	if (t->ended & GT_TLS_SHARED)
		return;
	gt_store(&gt_raw_pid, (pid_t)gt_sys0(SYS_getpid));
	t->owner_tid = (int32_t)gt_sys0(SYS_gettid);
	atomic_signal_fence(memory_order_seq_cst);
	t->ended |= GT_TLS_SHARED;
}

void gt_raw_reset(void)
{
	for (unsigned i = 0; i < GT_RAW_MAX; i++)
		gt_store(&gt_raws[i].tid, 0);
}

/* ---- clone() ----------------------------------------------------------------------------- */

/* The clone's function, inside the thread: announced (when its creator was recorded in this
 * recording), run, ended.  On its creator's TLS (shared) its entry becomes its identity; on a
 * TLS of its own, the entry only hands the identity over. */
static int raw_start(struct gt_raw *e, int own_tls)
{
	int (*fn)(void *) = e->fn;
	void *arg = e->arg;
	struct gt_tls *t = &e->tls;
	if (own_tls) {
		t = &gt_tls;
		*t = e->tls;
		gt_store(&e->tid, 0);
	} else {
		gt_store(&e->tid, (int32_t)gt_sys0(SYS_gettid)); /* from now on its hooks find it */
	}
	if (!t->busy && gt_load(&gt_enabled) && gt_load(&gt_state) == GT_ST_RECORDING &&
	    t->epoch == gt_load(&gt_epoch)) {
		gt_busy_on(t);
		gt_fact_thread_start(t, (uint64_t)(uintptr_t)fn);
		t->busy = 0;
	}
	int r = fn(arg);
	if (!own_tls)
		raw_end(e, GT_END_RETURN);
	else if (!t->busy)
		gt_thread_end(t, GT_END_RETURN);
	return r;
}

static int raw_start_shared(void *e) { return raw_start(e, 0); }
static int raw_start_own_tls(void *e) { return raw_start(e, 1); }

/* A clone without CLONE_VM: the child's function, in a copy of our memory (where the
 * creator's frame holding this still is), after the copy forgets the capture */
struct copy_start {
	int (*fn)(void *);
	void *arg;
};

static int copy_start(void *p)
{
	int (*fn)(void *) = ((struct copy_start *)p)->fn;
	void *arg = ((struct copy_start *)p)->arg;
	gt_copy_forget();
	return fn(arg);
}

GT_EXPORT int clone(int (*fn)(void *), void *stack, int flags, void *arg, ...)
{
	va_list ap;
	va_start(ap, arg);
	/* like glibc's clone, which takes them from their registers whatever the flags */
	pid_t *ptid = va_arg(ap, pid_t *);
	void *tls = va_arg(ap, void *);
	pid_t *ctid = va_arg(ap, pid_t *);
	va_end(ap);
	if (!gt_load(&gt_enabled))
		return GT_REAL(clone)(fn, stack, flags, arg, ptid, tls, ctid);
	if (!(flags & CLONE_VM)) {
		struct copy_start c = {fn, arg};
		return GT_REAL(clone)(copy_start, stack, flags, &c, ptid, tls, ctid);
	}
	int thread = (flags & CLONE_THREAD) != 0, own_tls = (flags & CLONE_SETTLS) != 0;
	struct gt_tls *t = gt_enter(); /* the creator: announced before the TLS is shared */
	if (!own_tls)
		raw_share();
	struct gt_raw *e = raw_take(GT_RAW_STARTING, !thread);
	if (!e)
		return GT_REAL(clone)(fn, stack, flags, arg, ptid, tls, ctid);
	e->fn = fn;
	e->arg = arg;
	uint32_t stack_id = 0;
	unsigned cpu = 0;
	uint64_t tsc = 0;
	if (thread && t) {
		e->tls.serial = atomic_fetch_add(&gt_next_serial, 1);
		e->tls.epoch = t->epoch;
		gt_busy_on(t);
		stack_id = gt_stack_id(t, GT_OWN_FRAMES_HOOK);
		t->busy = 0;
		tsc = gt_now(&cpu); /* stamped before: the child's start comes after */
	}
	int r = GT_REAL(clone)(own_tls ? raw_start_own_tls : raw_start_shared, stack, flags, e, ptid,
			       tls, ctid);
	if (flags & CLONE_VFORK) /* the child exec'd or exited */
		gt_child_env_release();
	if (r == -1) {
		gt_store(&e->tid, 0);
	} else if (thread && t) {
		int saved = errno;
		struct gt_p_thread_new p = {.child = e->tls.serial, .stack = stack_id,
					    .start_routine = (uint64_t)(uintptr_t)fn};
		gt_emit(t->serial, GT_THREAD_NEW, 0, tsc, cpu, &p, sizeof p);
		errno = saved;
	}
	return r;
}

/* syscall(SYS_clone, ...) and syscall(SYS_clone3, ...) sharing our memory and TLS: the TLS
 * is shared before the call; the thread is met at its first hook.  Without CLONE_VM (and
 * SYS_fork): 1, the caller makes the child forget the capture (gt_copy_forget) where the
 * call returns 0.  syscall(SYS_exit) of a raw thread ends it. */
int gt_raw_syscall(long nr, long a0)
{
#ifdef SYS_fork
	if (nr == SYS_fork)
		return gt_load(&gt_enabled);
#endif
	if (nr == SYS_clone || nr == SYS_clone3) {
		unsigned long flags = nr == SYS_clone ? (unsigned long)a0 :
				      gt_readable((const void *)a0, sizeof(long)) ? *(const unsigned long *)a0 : 0;
		if (!gt_load(&gt_enabled))
			return 0;
		if (!(flags & CLONE_VM))
			return 1;
		if (!(flags & CLONE_SETTLS)) {
			gt_enter(); /* the creator announced before the TLS is shared */
			raw_share();
		}
		return 0;
	}
	struct gt_tls *t = gt_self();
	if (nr != SYS_exit || !t->raw || t == &gt_raw_none)
		return 0;
	if (t != &gt_tls)
		raw_end((struct gt_raw *)((char *)t - offsetof(struct gt_raw, tls)), GT_END_EXIT);
	else if (!t->busy) /* on a TLS of its own */
		gt_thread_end(t, GT_END_EXIT);
	return 0;
}
