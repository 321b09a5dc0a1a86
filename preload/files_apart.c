/* The tracer's descriptors apart from the program's.  open() returns the lowest free
 * descriptor, and programs rely on it (close(0); open("/dev/null") must give 0): a file
 * the tracer opens in the program's table, even for the microseconds of a growth or a read
 * of /proc/self/maps, takes a number another thread's open was about to get.  Moving it up
 * with F_DUPFD afterwards (lttng-ust) still leaves that moment.  A thread made without
 * CLONE_FILES has a table of its own, a copy: it opens, maps (the memory is shared), writes
 * and closes there, and the program's table never changes.  The copy holds references to
 * the program's files for the thread's few microseconds; POSIX record locks belong to a
 * table, so the copy's closes at its exit release none of the program's. */
#include "files_apart.h"
#include "stacks.h"

#include <linux/futex.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <stdlib.h>

#define GT_STR_(x) #x
#define GT_STR(x) GT_STR_(x)
#define APART_FLAGS (CLONE_VM | CLONE_FS | CLONE_SIGHAND | CLONE_THREAD | CLONE_SYSVSEM | \
		     CLONE_CHILD_CLEARTID)

struct apart {
	long (*fn)(void *);
	void *arg;
	long result;
	_Atomic int tid; /* -1 until the thread has exited (CLONE_CHILD_CLEARTID: 0, woken) */
};

/* The thread's body: fn, its result stored, then the thread alone ends. */
void gt_apart_main(struct apart *a) GT_HIDDEN __attribute__((used));
GT_NOINLINE void gt_apart_main(struct apart *a)
{
	a->result = a->fn(a->arg);
}

/* clone(flags, top, NULL, ctid) whose child runs apart_main(a) on top and exits: the child's
 * tid, or -errno.  The child never returns into this function's frame. */
long gt_apart_clone(unsigned long flags, void *top, _Atomic int *ctid, struct apart *a) GT_HIDDEN;
#if defined(__x86_64__)
__asm__(".text\n"
	".p2align 4\n"
	".globl gt_apart_clone\n"
	".hidden gt_apart_clone\n"
	".type gt_apart_clone, @function\n"
	"gt_apart_clone:\n"
	".cfi_startproc\n"
	"and $-16, %rsi\n"
	"sub $16, %rsi\n"
	"mov %rcx, (%rsi)\n"       /* a, for the child */
	"mov %rdx, %r10\n"         /* child_tid */
	"xor %edx, %edx\n"         /* parent_tid */
	"xor %r8d, %r8d\n"         /* tls: unchanged */
	"mov $" GT_STR(SYS_clone) ", %eax\n"
	"syscall\n"
	"test %rax, %rax\n"
	"jnz 1f\n"
	".cfi_remember_state\n"
	".cfi_undefined %rip\n"    /* the child: no caller to unwind into */
	"xor %ebp, %ebp\n"
	"pop %rdi\n"
	"sub $8, %rsp\n"
	"call gt_apart_main\n"
	"xor %edi, %edi\n"
	"mov $" GT_STR(SYS_exit) ", %eax\n"
	"syscall\n"
	"hlt\n"
	".cfi_restore_state\n"
	"1: ret\n"
	".cfi_endproc\n"
	".size gt_apart_clone, .-gt_apart_clone\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".p2align 2\n"
	".globl gt_apart_clone\n"
	".hidden gt_apart_clone\n"
	".type gt_apart_clone, %function\n"
	"gt_apart_clone:\n"
	".cfi_startproc\n"
	"and x1, x1, #-16\n"
	"str x3, [x1, #-16]!\n"    /* a, for the child */
	"mov x4, x2\n"             /* child_tid */
	"mov x2, #0\n"             /* parent_tid */
	"mov x3, #0\n"             /* tls: unchanged */
	"mov x8, #" GT_STR(SYS_clone) "\n"
	"svc 0\n"
	"cbnz x0, 1f\n"
	".cfi_remember_state\n"
	".cfi_undefined x30\n"
	"mov x29, #0\n"
	"mov x30, #0\n"
	"ldr x0, [sp], #16\n"
	"bl gt_apart_main\n"
	"mov x0, #0\n"
	"mov x8, #" GT_STR(SYS_exit) "\n"
	"svc 0\n"
	"brk #0\n"
	".cfi_restore_state\n"
	"1: ret\n"
	".cfi_endproc\n"
	".size gt_apart_clone, .-gt_apart_clone\n");
#else
long gt_apart_clone(unsigned long flags, void *top, _Atomic int *ctid, struct apart *a)
{
	(void)flags, (void)top, (void)ctid, (void)a;
	return -ENOSYS;
}
#endif

GT_INLINE void cpu_relax(void)
{
#if defined(__x86_64__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ volatile("yield");
#endif
}

/* Calls in flight, and forks under way: a fork waits for the calls in flight, and a call
 * made meanwhile runs in its caller.  A caller may hold a lock of glibc's while it waits
 * (the loader's, from a dl_iterate_phdr callback that records a module and grows the
 * capture): a fork then would leave it held in the child, which deadlocks at its first
 * dl_iterate_phdr.  The wait keeps that window as short as an inline open. */
static _Atomic int in_flight, forking;

void gt_files_apart_fork(int begin)
{
	if (begin < 0) { /* the child: none of the parent's calls goes on here */
		atomic_store(&in_flight, 0);
		atomic_store(&forking, 0);
		return;
	}
	if (!begin) {
		atomic_fetch_sub(&forking, 1);
		return;
	}
	atomic_fetch_add(&forking, 1);
	while (atomic_load(&in_flight))
		gt_sys0(SYS_sched_yield);
}

static long apart(long (*fn)(void *), void *arg);

/* whether the calling thread runs under a real-time policy (SCHED_FIFO, SCHED_RR) */
static int real_time(void)
{
	long p = gt_sys1(SYS_sched_getscheduler, 0);
	return p == SCHED_FIFO || p == SCHED_RR;
}

/* Valgrind runs no clone() but a threads library's or a fork's: it stops the whole program
 * at the first thread of ours.  Under it (its vgpreload libraries are preloaded), fn runs in
 * the caller, as where no thread can be had. */
static int under_valgrind(void)
{
	static int known = -1;
	if (known < 0) {
		const char *p = getenv("LD_PRELOAD");
		known = p && strstr(p, "/vgpreload_") != NULL;
	}
	return known;
}

long gt_files_apart(long (*fn)(void *), void *arg)
{
	atomic_fetch_add(&in_flight, 1);
	long r = atomic_load(&forking) || under_valgrind() ? fn(arg) : apart(fn, arg);
	atomic_fetch_sub(&in_flight, 1);
	return r;
}

static long apart(long (*fn)(void *), void *arg)
{
	void *stack = gt_scratch_take();
	if (!stack)
		return fn(arg);
	struct apart a = {fn, arg, 0, -1};
	uint64_t all = ~0ull, old;
	/* the thread starts with every signal blocked: none is delivered to it */
	gt_sys4(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, sizeof all);
	long tid = gt_apart_clone(APART_FLAGS, (char *)stack + GT_SCRATCH_BYTES, &a.tid, &a);
	gt_sys4(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof old);
	if (tid < 0) {
		gt_scratch_give(stack);
		return fn(arg);
	}
	/* The caller waits runnable first: the thread usually runs on another CPU and is done
	 * in tens of µs.  A caller that slept here would show in the kernel's records as an
	 * off-CPU wait inside the hook, between a release's wake and its return (the model then
	 * draws that wake from no goroutine); a yield is a preemption, and lets the thread run
	 * where it shares one CPU with the caller.  A real-time caller then sleeps until the
	 * thread's exit clears a.tid: above the thread's priority (its own, or lent by a
	 * priority-inheriting lock it holds) it would yield to nobody and spin for ever while
	 * the thread, at its base priority, waits for the CPU. */
	int rt = -1;
	for (unsigned spin = 0; atomic_load(&a.tid) != 0; spin++) {
		if (spin < 1024)
			cpu_relax();
		else if (spin < 1024 + 64 || !(rt < 0 ? (rt = real_time()) : rt))
			gt_sys0(SYS_sched_yield);
		else
			gt_sys4(SYS_futex, &a.tid, FUTEX_WAIT, -1, 0);
	}
	gt_scratch_give(stack);
	return a.result;
}
