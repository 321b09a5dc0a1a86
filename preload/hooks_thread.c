/* Threads: creation (a trampoline gives the child its serial), start, end (return,
 * pthread_exit, cancellation), joins and names. */
#include "facts.h"
#include "hooks.def"
#include "lifecycle.h"
#include "proc_name.h"
#include "seccomp_filter.h"
#include "stacks.h"

#include <stdarg.h>
#include <string.h>
#include <sys/mman.h>
#include <linux/seccomp.h>
#include <sys/prctl.h>

/* What the parent hands the child, held from pthread_create until the child starts.  A
 * static pool, then pages mapped by a raw mmap when it runs dry (never the program's
 * allocator: the hook may run inside it); a page stays for the life of the process. */
struct gt_start {
	void *(*fn)(void *);
	void *arg;
	uint32_t serial;
	uint32_t epoch;
	_Atomic int in_use;
};
#define GT_START_POOL 256
#define GT_START_PER_PAGE ((4096 - sizeof(void *)) / sizeof(struct gt_start))
struct gt_start_page {
	struct gt_start s[GT_START_PER_PAGE];
	struct gt_start_page *next;
};
static struct gt_start gt_start_pool[GT_START_POOL];
static _Atomic(struct gt_start_page *) gt_start_pages;

static struct gt_start *start_take(struct gt_start *s, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		int expected = 0;
		if (!gt_load(&s[i].in_use) && atomic_compare_exchange_strong(&s[i].in_use, &expected, 1))
			return &s[i];
	}
	return NULL;
}

static struct gt_start *start_alloc(void)
{
	struct gt_start *s = start_take(gt_start_pool, GT_START_POOL);
	for (struct gt_start_page *p = gt_load(&gt_start_pages); !s && p; p = p->next)
		s = start_take(p->s, GT_START_PER_PAGE);
	if (s)
		return s;
	long r = gt_sys((long)SYS_mmap, 0, sizeof(struct gt_start_page), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r < 0 && r > -4096)
		return NULL; /* the thread starts untraced by its creator; its first hook adopts it */
	struct gt_start_page *p = (struct gt_start_page *)r;
	p->s[0].in_use = 1;
	p->next = gt_load(&gt_start_pages);
	while (!atomic_compare_exchange_weak(&gt_start_pages, &p->next, p))
		;
	return &p->s[0];
}

static void start_free(struct gt_start *s) { atomic_store(&s->in_use, 0); }

/* Runs when the trampoline's frame is left: by return (already ended: no-op), or by the
 * forced unwind of pthread_exit or cancellation, after the program's own cleanup handlers. */
static void trampoline_cleanup(struct gt_tls **tp)
{
	struct gt_tls *t = *tp;
	if (!(t->ended & GT_TLS_ENDED))
		gt_thread_end(t, t->exit_how ? t->exit_how : GT_END_CANCEL);
}

static void *gt_thread_trampoline(void *p)
{
	struct gt_start *s = p;
	void *(*fn)(void *) = s->fn;
	void *arg = s->arg;
	uint32_t serial = s->serial, epoch = s->epoch;
	start_free(s);

	struct gt_tls *t __attribute__((cleanup(trampoline_cleanup))) = &gt_tls;
	t->serial = serial;
	t->trampoline = 1;
	t->stack_hi = (uintptr_t)__builtin_frame_address(0);
	gt_threads_put(pthread_self(), serial, 1);
	if (gt_load(&gt_enabled) && gt_load(&gt_state) == GT_ST_RECORDING &&
	    epoch == gt_load(&gt_epoch)) {
		gt_busy_on(t);
		t->epoch = epoch;
		gt_fact_thread_start(t, (uint64_t)(uintptr_t)fn);
		t->busy = 0;
	}
	/* else: created before this recording began; its first hook announces it */
	void *ret = fn(arg);
	gt_thread_end(t, GT_END_RETURN);
	return ret;
}

GT_EXPORT int pthread_create(pthread_t *th, const pthread_attr_t *attr, void *(*fn)(void *), void *arg)
{
	struct gt_tls *t = gt_enter();
	struct gt_start *s;
	if (!t || !(s = start_alloc()))
		return GT_REAL(pthread_create)(th, attr, fn, arg);
	s->fn = fn;
	s->arg = arg;
	s->serial = atomic_fetch_add(&gt_next_serial, 1);
	s->epoch = t->epoch;
	uint32_t serial = s->serial;
	gt_busy_on(t);
	uint32_t stack = gt_stack_id(t, GT_OWN_FRAMES_HOOK);
	t->busy = 0;
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu); /* stamped before: the child's start comes after */
	int r = GT_REAL(pthread_create)(th, attr, gt_thread_trampoline, s);
	if (r == 0)
		gt_threads_put(*th, serial, 0);
	if (r == 0) {
		struct gt_p_thread_new p = {.child = serial, .stack = stack, .start_routine = (uint64_t)(uintptr_t)fn};
		gt_emit(t->serial, GT_THREAD_NEW, 0, tsc, cpu, &p, sizeof p);
		gt_proc_name_emit(GT_NAME_THREAD); /* a setproctitle since the last one shows */
	} else
		start_free(s);
	return r;
}

GT_EXPORT void pthread_exit(void *ret)
{
	struct gt_tls *t = gt_self();
	if (t->trampoline)
		t->exit_how = GT_END_EXIT; /* recorded by the trampoline's cleanup, last */
	else if (gt_enter())
		gt_thread_end(t, GT_END_EXIT);
	GT_REAL(pthread_exit)(ret);
	__builtin_unreachable();
}

/* Joins block on the target's serial; the target's end writes the matching wake.  The
 * block is stamped before the target's state is read (gt_thread_end marks it ended before
 * stamping its wake): a target seen alive wakes its joiner after the block began. */
#define GT_JOIN_HOOK(name, params, args) \
	GT_EXPORT int name params \
	{ \
		struct gt_tls *t = gt_enter(); \
		int ended = 0; \
		unsigned cpu = 0; \
		uint64_t tsc = t ? gt_now(&cpu) : 0; \
		atomic_thread_fence(memory_order_seq_cst); \
		uint32_t serial = t ? gt_threads_get(th, &ended) : 0; \
		if (!serial || ended) { \
			int r0 = GT_REAL(name) args; \
			if (r0 == 0) \
				gt_threads_remove(th); \
			return r0; \
		} \
		gt_fact_block_begin_at(t, GT_BK_JOIN, serial, 0, tsc, cpu); \
		int r = GT_REAL(name) args; \
		gt_fact_block_end(t, GT_BK_JOIN, serial, r); \
		if (r == 0) \
			gt_threads_remove(th); \
		return r; \
	}

GT_JOIN_HOOK(pthread_join, (pthread_t th, void **ret), (th, ret))
GT_JOIN_HOOK(pthread_timedjoin_np, (pthread_t th, void **ret, const struct timespec *ts), (th, ret, ts))
GT_JOIN_HOOK(pthread_clockjoin_np, (pthread_t th, void **ret, clockid_t c, const struct timespec *ts),
	     (th, ret, c, ts))

GT_EXPORT int pthread_tryjoin_np(pthread_t th, void **ret)
{
	int r = GT_REAL(pthread_tryjoin_np)(th, ret);
	if (r == 0)
		gt_threads_remove(th);
	return r;
}

GT_EXPORT int pthread_setname_np(pthread_t th, const char *name)
{
	int r = GT_REAL(pthread_setname_np)(th, name);
	struct gt_tls *t;
	if (r == 0 && (t = gt_enter())) {
		bool self = pthread_equal(th, pthread_self());
		uint32_t serial = self ? t->serial : gt_threads_get(th, NULL);
		if (serial)
			gt_fact_thread_name(serial, name, self);
	}
	return r;
}

GT_EXPORT int prctl(int option, ...)
{
	va_list ap;
	va_start(ap, option);
	unsigned long a2 = va_arg(ap, unsigned long), a3 = va_arg(ap, unsigned long);
	unsigned long a4 = va_arg(ap, unsigned long), a5 = va_arg(ap, unsigned long);
	va_end(ap);
	if (option == PR_SET_SECCOMP && (a2 == SECCOMP_MODE_STRICT ||
					  (a2 == SECCOMP_MODE_FILTER && !gt_filter_lets_tracer_through((void *)a3))))
		gt_sandbox_enter();
	int r = GT_REAL(prctl)(option, a2, a3, a4, a5);
	struct gt_tls *t;
	if (option == PR_SET_NAME && r == 0 && (t = gt_enter())) {
		int saved = errno;
		char name[16] = {0};
		strncpy(name, (const char *)a2, 15);
		gt_fact_thread_name(t->serial, name, true);
		errno = saved;
	}
	return r;
}
