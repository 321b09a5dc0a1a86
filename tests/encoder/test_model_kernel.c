/* model_kernel.c: the kernel's context switches placing a thread, on a built capture and a
 * built kernel scheduling file whose times are known to the nanosecond (a CLOCK_MONOTONIC
 * capture: its timestamps are the kernel's clock). */
#include "test_util.h"

#include <criterion/criterion.h>
#include "kernel/records.h"
#include <limits.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#define T0 3000000000ull
#define MAIN 1
#define MAIN_TID 1001    /* capture_builder's tid of an existing thread */

struct ksw {
	uint64_t t;      /* after T0 */
	uint32_t cpu;
	uint16_t misc;
	uint32_t tid;    /* 0: MAIN_TID */
};
#define IN 0
#define OUT PERF_RECORD_MISC_SWITCH_OUT
#define PREEMPT (PERF_RECORD_MISC_SWITCH_OUT | PERF_RECORD_MISC_SWITCH_OUT_PREEMPT)

/* A kernel scheduling file of these switches (of MAIN_TID's unless they say), as gotrace run
 * writes it. */
static void write_kernel_file(const char *path, const struct ksw *sw, size_t n)
{
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	struct gt_kernel_header h = {
		.magic = GT_KERNEL_MAGIC, .version = GT_KERNEL_VERSION, .header_size = sizeof h,
		.sample_type = PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME |
			       PERF_SAMPLE_CPU,
		.clockid = 1, .n_cpus = 2, .buffer_bytes = 1 << 19, .pid = MAIN_TID,
	};
	cr_assert_eq(fwrite(&h, sizeof h, 1, f), 1);
	for (size_t i = 0; i < n; i++) {
		uint32_t tid = sw[i].tid ? sw[i].tid : MAIN_TID;
		struct {
			struct perf_event_header h;
			uint32_t pid, tid;
			uint64_t time;
			uint32_t cpu, res;
			uint64_t id;
		} r = { { PERF_RECORD_SWITCH, sw[i].misc, sizeof r }, MAIN_TID, tid,
			T0 + sw[i].t, sw[i].cpu, 0, 7 };
		cr_assert_eq(fwrite(&r, sizeof r, 1, f), 1);
	}
	cr_assert_eq(fclose(f), 0);
}

static struct gt_events *convert_with_kernel(struct gt_cb *cb, const char *name,
					     const struct ksw *sw, size_t n,
					     struct gt_convert_summary *sum)
{
	char cap[PATH_MAX], kern[PATH_MAX], trace[PATH_MAX], err[512];
	snprintf(cap, sizeof cap, "%s/%s.cap", test_tmpdir(), name);
	snprintf(kern, sizeof kern, "%s/%s.gtkern", test_tmpdir(), name);
	snprintf(trace, sizeof trace, "%s/%s.trace", test_tmpdir(), name);
	cr_assert_eq(gt_cb_write(cb, cap), 0);
	write_kernel_file(kern, sw, n);
	struct gt_convert_options opt = { .no_symbols = true, .kernel_path = kern };
	cr_assert_eq(gt_convert_file(cap, trace, &opt, sum, err, sizeof err), 0, "%s", err);
	cr_assert_str_empty(sum->kernel_error);
	const char *caps[] = {cap};
	cr_assert_eq(check_go122_writer(caps, 1, &opt), 0);
	struct gt_events *t = gt_events_parse_119(trace);
	cr_assert_not_null(t, "Go 1.19 rejects %s", trace);
	return t;
}

/* The main thread reads (blocking), is switched in on the other CPU, computes, is
 * preempted, runs again, and leaves its CPU once where no hook saw it.  Its read's switch-out
 * is stamped 100 ns before the read's begin fact (within the clocks' error): the read is the
 * wait, not an untraced one. */
Test(model_kernel, a_thread_runs_where_and_when_the_kernel_ran_it)
{
	struct gt_cb *cb = gt_cb_new(2, 64 * 1024, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, MAIN, 0, 0);
	gt_cb_syscall_begin(cb, 0, T0 + 500, MAIN, GT_FD_FILE, SYS_getpid, 0, 0);
	gt_cb_syscall_end(cb, 0, T0 + 600, MAIN, SYS_getpid, 1);
	gt_cb_syscall_begin(cb, 0, T0 + 1000, MAIN, GT_FD_FILE, SYS_read, 3, 0);
	gt_cb_syscall_end(cb, 1, T0 + 50300, MAIN, SYS_read, 1);
	gt_cb_syscall_begin(cb, 0, T0 + 500000, MAIN, GT_FD_FILE, SYS_getpid, 0, 0);
	gt_cb_syscall_end(cb, 0, T0 + 500100, MAIN, SYS_getpid, 1);
	gt_cb_capture_end(cb, 0, T0 + 600000);
	static const struct ksw sw[] = {
		{ 5, 0, IN, 0 },
		{ 900, 0, OUT, 0 },           /* inside the read: 100 ns before its hook, by the clocks */
		{ 50000, 1, IN, 0 },          /* woken on CPU 1 */
		{ 150000, 1, PREEMPT, 0 },
		{ 200000, 0, IN, 0 },         /* back on CPU 0 */
		{ 300000, 0, OUT, 0 },        /* off its CPU, no hook near: an untraced wait */
		{ 400000, 0, IN, 0 },
	};
	struct gt_convert_summary sum;
	struct gt_events *t = convert_with_kernel(cb, "kernel_places", sw, 7, &sum);
	gt_cb_free(cb);
	/* the read blocked (a syscall), it is not an untraced wait */
	cr_assert_eq(count19(t, "GoSysBlock"), 1);
	ssize_t exit = nth19(t, "GoSysExit", 0);
	cr_assert_geq(exit, 0);
	/* started on P 2 (CPU 1) at the switch-in: 50 us after the first event */
	ssize_t start = gt_events_find(t, (size_t)exit, "GoStart", GT_ANY, 2);
	cr_assert_geq(start, 0, "no GoStart on P 2");
	int64_t base = t->ev[0].ts_ns;
	int64_t want = (int64_t)(50000 - 10);   /* the trace starts at the first fact */
	cr_assert(t->ev[start].ts_ns - base >= want - 2 && t->ev[start].ts_ns - base <= want + 2,
		  "GoStart at %lld ns, the switch-in at %lld", (long long)(t->ev[start].ts_ns - base),
		  (long long)want);
	/* preempted there, then on P 1 again */
	ssize_t pre = gt_events_find(t, (size_t)start, "GoPreempt", GT_ANY, 2);
	cr_assert_geq(pre, 0);
	cr_assert_geq(gt_events_find(t, (size_t)pre, "GoStart", GT_ANY, 1), 0);
	/* one untraced wait, of the switch-out with no hook near it */
	cr_assert_eq(count19(t, "GoBlock"), 1);
	cr_assert_eq(sum.model.kernel_untraced_waits, 1);
	cr_assert_eq(sum.model.kernel_preemptions, 1);
	cr_assert_eq(sum.model.syscalls_blocking, 1);
	cr_assert_eq(sum.model.syscalls_short, 2);
	gt_events_free(t);
	/* its frame on the thread's routine: Go names a goroutine by the root frame of its first
	 * stack, and this wait's may be main's first (Go 1.23's /goroutines then said "[off-CPU
	 * wait, not seen by the hooks]" for the main thread) */
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/kernel_places.trace", test_tmpdir());
	char *dump = gt_dump_123(path);
	cr_assert_not_null(dump);
	char *stack = gt_dump_123_stack(dump, "GoID=1 Reason=\"\" Running->Waiting", 0,
					"TransitionStack");
	cr_assert_not_null(stack, "no untraced wait in:\n%s", dump);
	cr_assert_str_eq(stack, "[off-CPU wait, not seen by the hooks] [gotrace]:0\n"
				"[main thread] [gotrace]:0\n");
	free(stack);
	free(dump);
}

/* A thread in a syscall switched in on another CPU with no switch-out before it (the
 * kernel's record lost, or the process forked in between): the call blocked where it
 * began, and nothing of it follows on the P it left (Go 1.19 rejected the trace: "no
 * consistent ordering", a double-forking daemon's main thread under gotrace run). */
Test(model_kernel, a_syscall_switched_in_elsewhere_blocked_where_it_began)
{
	struct gt_cb *cb = gt_cb_new(2, 64 * 1024, T0);
	gt_cb_thread_existing(cb, 1, T0 + 10, MAIN, 0, 0);
	gt_cb_syscall_begin(cb, 1, T0 + 1000, MAIN, GT_FD_FILE, SYS_read, 3, 0);
	gt_cb_syscall_end(cb, 0, T0 + 50000, MAIN, SYS_read, 1);
	gt_cb_syscall_begin(cb, 0, T0 + 50500, MAIN, GT_FD_FILE, SYS_getpid, 0, 0);
	gt_cb_syscall_end(cb, 0, T0 + 50600, MAIN, SYS_getpid, 1);
	gt_cb_capture_end(cb, 0, T0 + 60000);
	static const struct ksw sw[] = {
		{ 5, 1, IN, 0 },
		{ 40000, 0, IN, 0 },       /* on CPU 0: its switch-out from CPU 1 never came */
	};
	struct gt_convert_summary sum;
	struct gt_events *t = convert_with_kernel(cb, "kernel_in_elsewhere", sw, 2, &sum);
	gt_cb_free(cb);
	cr_assert_eq(count19(t, "GoSysBlock"), 1);
	ssize_t block = nth19(t, "GoSysBlock", 0), start = gt_events_find(t, 0, "GoStart", GT_ANY, 1);
	cr_assert_geq(start, 0, "no GoStart on P 1");
	cr_assert_lt(block, start, "the call blocked on P 2 before the thread ran on P 1");
	cr_assert_eq(sum.model.ends_without_begin, 0);
	gt_events_free(t);
}

/* A new thread runs from its first switch-in, before its first hook (THREAD_START, 28 us
 * later: glibc's start_thread ran first), its tid read ahead from that fact. */
Test(model_kernel, a_new_thread_runs_from_its_first_switch_in)
{
	enum { CHILD = 2, CHILD_TID = 2002 };
	struct gt_cb *cb = gt_cb_new(2, 64 * 1024, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, MAIN, 0, 0);
	gt_cb_thread_new(cb, 0, T0 + 1000, MAIN, CHILD, 0, 0x401000);
	gt_cb_thread_start(cb, 1, T0 + 30000, CHILD, CHILD_TID, 0x401000);
	gt_cb_thread_end(cb, 1, T0 + 40000, CHILD);
	gt_cb_syscall_begin(cb, 0, T0 + 50000, MAIN, GT_FD_FILE, SYS_getpid, 0, 0);
	gt_cb_syscall_end(cb, 0, T0 + 50100, MAIN, SYS_getpid, 1);
	gt_cb_capture_end(cb, 0, T0 + 60000);
	static const struct ksw sw[] = { { 2000, 1, IN, CHILD_TID } };
	struct gt_convert_summary sum;
	struct gt_events *t = convert_with_kernel(cb, "kernel_new_thread", sw, 1, &sum);
	gt_cb_free(cb);
	ssize_t start = gt_events_find(t, 0, "GoStart", CHILD, 2);
	cr_assert_geq(start, 0, "no GoStart of G%d on P 2", CHILD);
	int64_t at = t->ev[start].ts_ns - t->ev[0].ts_ns;
	int64_t want = 2000 - 10;   /* the trace starts at the first fact */
	cr_assert(at >= want - 2 && at <= want + 2, "GoStart at %lld ns, the switch-in at %lld",
		  (long long)at, (long long)want);
	cr_assert_eq(sum.model.kernel_foreign, 0, "its switch-in not drawn");
	gt_events_free(t);
}

enum { T2 = 2, T2_TID = 1002, MUTEX = 0x5000, COND = 0x6000 };

/* A capture of MAIN, which creates T2 (G2), started on CPU 1 at T0 + 200. */
static struct gt_cb *main_and_t2(void)
{
	struct gt_cb *cb = gt_cb_new(2, 64 * 1024, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, MAIN, 0, 0);
	gt_cb_thread_new(cb, 0, T0 + 100, MAIN, T2, 0, 0x401000);
	gt_cb_thread_start(cb, 1, T0 + 200, T2, T2_TID, 0x401000);
	return cb;
}

/* thread's condition wait on cond, its block naming mutex (capture.h gt_p_block_mutex) */
static void cond_wait_naming(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			     uint64_t cond, uint64_t mutex)
{
	struct {
		struct gt_p_block b;
		struct gt_p_block_mutex m;
	} p = {{.obj = cond}, {.mutex = mutex}};
	cr_assert(gt_cb_record(cb, cpu, GT_BLOCK_BEGIN, GT_BK_COND, thread, t, &p, sizeof p));
}

/* The unblocks of G2 (at most 4): their times after the first event and their wakers. */
static size_t unblocks_of_t2(const struct gt_events *t, int64_t at[4], int64_t by[4])
{
	size_t n = 0;
	for (ssize_t i = 0; n < 4 && (i = gt_events_find_arg(t, (size_t)i, "GoUnblock", "g", 2)) >= 0;
	     i++, n++) {
		at[n] = t->ev[i].ts_ns - t->ev[0].ts_ns;
		by[n] = t->ev[i].g;
	}
	return n;
}

/* A thread woken from a mutex wait loses the race for the mutex and sleeps again inside the
 * same pthread_mutex_lock (the kernel switches it out before its wait's end): that is the
 * same wait, and the next release names its waker, not an off-CPU wait with none. */
Test(model_kernel, a_lost_hand_off_waits_again_for_the_next_release)
{
	struct gt_cb *cb = main_and_t2();
	gt_cb_block_begin(cb, 1, T0 + 10000, T2, GT_BK_MUTEX, MUTEX, 0);
	gt_cb_wake(cb, 0, T0 + 20000, MAIN, GT_BK_MUTEX, MUTEX, 1, 0);
	gt_cb_wake(cb, 0, T0 + 40000, MAIN, GT_BK_MUTEX, MUTEX, 1, 0);
	gt_cb_block_end(cb, 1, T0 + 41500, T2, GT_BK_MUTEX, MUTEX, GT_BR_OK);
	gt_cb_syscall_begin(cb, 0, T0 + 50000, MAIN, GT_FD_FILE, SYS_getpid, 0, 0);
	gt_cb_syscall_end(cb, 0, T0 + 50100, MAIN, SYS_getpid, 1);
	gt_cb_capture_end(cb, 0, T0 + 60000);
	static const struct ksw sw[] = {
		{ 5, 0, IN, 0 },
		{ 150, 1, IN, T2_TID },
		{ 10500, 1, OUT, T2_TID },   /* its wait */
		{ 21000, 1, IN, T2_TID },    /* let in by the first release ... */
		{ 22000, 1, OUT, T2_TID },   /* ... it lost the mutex: asleep again, no hook near */
		{ 41000, 1, IN, T2_TID },    /* let in by the second release */
	};
	struct gt_convert_summary sum;
	struct gt_events *t = convert_with_kernel(cb, "kernel_lost_hand_off", sw, 6, &sum);
	gt_cb_free(cb);
	cr_assert_eq(sum.model.unknown_wakeups, 0);
	cr_assert_eq(sum.model.kernel_untraced_waits, 0);
	cr_assert_eq(sum.model.wakes_matched, 2);
	cr_assert_eq(sum.model.kernel_waits_again, 1);
	/* blocked twice on the mutex, each time unblocked by main (G1), the second time at the
	 * second release */
	cr_assert_eq(count19(t, "GoBlockSync"), 2);
	int64_t at[4], by[4];
	cr_assert_eq(unblocks_of_t2(t, at, by), 2);
	cr_assert(by[0] == 1 && by[1] == 1, "unblocked by G%lld and G%lld", (long long)by[0],
		  (long long)by[1]);
	cr_assert_geq(at[1], 40000 - 10 - 2, "unblocked at %lld ns", (long long)at[1]);
	gt_events_free(t);
}

/* Woken from its mutex wait, a thread sleeps again inside the same call before the wait's
 * end, but no release of the mutex comes before that end (its own next fact): it slept for
 * something else (a page fault, the tracer's own slow path), not for the mutex.  That sleep
 * is an off-CPU wait no hook saw, ended by its switch-in: no second mutex wait ended by an
 * unknown waker (tests/e2e order::rwlock_ring_true_wakers_kernel met it 1 run in 10). */
Test(model_kernel, a_sleep_with_no_release_before_the_wait_end_is_no_hand_off)
{
	struct gt_cb *cb = main_and_t2();
	gt_cb_block_begin(cb, 1, T0 + 10000, T2, GT_BK_MUTEX, MUTEX, 0);
	gt_cb_wake(cb, 0, T0 + 20000, MAIN, GT_BK_MUTEX, MUTEX, 1, 0);
	gt_cb_block_end(cb, 1, T0 + 41500, T2, GT_BK_MUTEX, MUTEX, GT_BR_OK);
	gt_cb_syscall_begin(cb, 0, T0 + 50000, MAIN, GT_FD_FILE, SYS_getpid, 0, 0);
	gt_cb_syscall_end(cb, 0, T0 + 50100, MAIN, SYS_getpid, 1);
	gt_cb_capture_end(cb, 0, T0 + 60000);
	static const struct ksw sw[] = {
		{ 5, 0, IN, 0 },
		{ 150, 1, IN, T2_TID },
		{ 10500, 1, OUT, T2_TID },   /* its wait */
		{ 21000, 1, IN, T2_TID },    /* let in by the release */
		{ 22000, 1, OUT, T2_TID },   /* asleep again, and no release follows */
		{ 41000, 1, IN, T2_TID },
	};
	struct gt_convert_summary sum;
	struct gt_events *t = convert_with_kernel(cb, "kernel_no_hand_off", sw, 6, &sum);
	gt_cb_free(cb);
	cr_assert_eq(sum.model.unknown_wakeups, 0);
	cr_assert_eq(sum.model.kernel_waits_again, 0);
	cr_assert_eq(sum.model.kernel_untraced_waits, 1);
	cr_assert_eq(sum.model.kernel_untraced_ends, 1);
	cr_assert_eq(count19(t, "GoBlockSync"), 1);
	cr_assert_eq(count19(t, "GoBlock"), 1);
	int64_t at[4], by[4];
	cr_assert_eq(unblocks_of_t2(t, at, by), 2);
	cr_assert_eq(by[0], 1, "the mutex wait unblocked by G%lld", (long long)by[0]);
	cr_assert(at[1] >= 41000 - 10 - 2 && at[1] <= 41000 - 10 + 2, "running again at %lld ns",
		  (long long)at[1]);
	gt_events_free(t);
}

/* A thread preempted inside a syscall (a write that woke its reader, which took its CPU)
 * ends that syscall after it runs again: the end of a syscall drawn where it was preempted,
 * not an end without a begin to repair. */
Test(model_kernel, a_syscall_preempted_inside_ends_without_a_repair)
{
	struct gt_cb *cb = gt_cb_new(2, 64 * 1024, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, MAIN, 0, 0);
	gt_cb_syscall_begin(cb, 0, T0 + 1000, MAIN, GT_FD_PIPE, SYS_write, 4, 0);
	gt_cb_syscall_end(cb, 0, T0 + 3200, MAIN, SYS_write, 16);
	gt_cb_syscall_begin(cb, 0, T0 + 5000, MAIN, GT_FD_FILE, SYS_getpid, 0, 0);
	gt_cb_syscall_end(cb, 0, T0 + 5100, MAIN, SYS_getpid, 1);
	gt_cb_capture_end(cb, 0, T0 + 6000);
	static const struct ksw sw[] = {
		{ 5, 0, IN, 0 },
		{ 1500, 0, PREEMPT, 0 },   /* inside the write */
		{ 3000, 0, IN, 0 },
	};
	struct gt_convert_summary sum;
	struct gt_events *t = convert_with_kernel(cb, "kernel_preempted_syscall", sw, 3, &sum);
	gt_cb_free(cb);
	cr_assert_eq(sum.model.kernel_preemptions, 1);
	cr_assert_eq(sum.model.ends_without_begin, 0);
	cr_assert_eq(sum.model.syscalls_short, 2);
	cr_assert_eq(count19(t, "GoSysCall"), 2);
	gt_events_free(t);
}

/* The release's wake is stamped before the real release: a waiter that has not left its CPU
 * since its block, when that wake comes, is not running yet: its switch-out just after is
 * the sleep of that very wait (ended by the release the wake names), not a second wait. */
Test(model_kernel, a_wake_stamped_before_the_waiter_slept_is_its_waker)
{
	struct gt_cb *cb = main_and_t2();
	gt_cb_block_begin(cb, 1, T0 + 10000, T2, GT_BK_SEM, MUTEX, 0);
	gt_cb_wake(cb, 0, T0 + 10500, MAIN, GT_BK_SEM, MUTEX, 1, 0);
	gt_cb_block_end(cb, 1, T0 + 15500, T2, GT_BK_SEM, MUTEX, GT_BR_OK);
	gt_cb_syscall_begin(cb, 0, T0 + 20000, MAIN, GT_FD_FILE, SYS_getpid, 0, 0);
	gt_cb_syscall_end(cb, 0, T0 + 20100, MAIN, SYS_getpid, 1);
	gt_cb_capture_end(cb, 0, T0 + 30000);
	static const struct ksw sw[] = {
		{ 5, 0, IN, 0 },
		{ 150, 1, IN, T2_TID },
		{ 5000, 1, PREEMPT, T2_TID },
		{ 6000, 1, IN, T2_TID },     /* on its CPU from before its block ... */
		{ 11000, 1, OUT, T2_TID },   /* ... to its sleep, after the wake's stamp */
		{ 15000, 1, IN, T2_TID },    /* woken by the real release */
	};
	struct gt_convert_summary sum;
	struct gt_events *t = convert_with_kernel(cb, "kernel_wake_before_sleep", sw, 6, &sum);
	gt_cb_free(cb);
	cr_assert_eq(sum.model.unknown_wakeups, 0);
	cr_assert_eq(sum.model.kernel_waits_again, 0);
	cr_assert_eq(sum.model.kernel_untraced_waits, 0);
	cr_assert_eq(count19(t, "GoBlockSync"), 1);
	int64_t at[4], by[4];
	cr_assert_eq(unblocks_of_t2(t, at, by), 1);
	cr_assert_eq(by[0], 1);
	/* it starts again at its switch-in */
	ssize_t u = gt_events_find_arg(t, 0, "GoUnblock", "g", 2);
	ssize_t start = gt_events_find(t, (size_t)u, "GoStart", GT_ANY, 2);
	cr_assert_geq(start, 0);
	int64_t ns = t->ev[start].ts_ns - t->ev[0].ts_ns;
	cr_assert(ns >= 15000 - 10 - 2 && ns <= 15000 - 10 + 2, "started at %lld ns", (long long)ns);
	gt_events_free(t);
}

/* T2, signalled by main at 20000, sleeps on its mutex again at 22000; main's action at 30000
 * (setup) lets it in; T2 runs at 31000.  Returns the trace; sum filled. */
static struct gt_events *wait_again_let_in(const char *name, void (*setup)(struct gt_cb *cb),
					   struct gt_convert_summary *sum)
{
	struct gt_cb *cb = main_and_t2();
	setup(cb);
	gt_cb_wake(cb, 0, T0 + 20000, MAIN, GT_BK_COND, COND, 1, 0);
	gt_cb_block_end(cb, 1, T0 + 31500, T2, GT_BK_COND, COND, GT_BR_OK);
	gt_cb_capture_end(cb, 1, T0 + 60000);
	static const struct ksw sw[] = {
		{ 5, 0, IN, 0 },
		{ 150, 1, IN, T2_TID },
		{ 10500, 1, OUT, T2_TID },   /* its condition wait */
		{ 21000, 1, IN, T2_TID },    /* signalled */
		{ 22000, 1, OUT, T2_TID },   /* asleep on the mutex inside glibc */
		{ 31000, 1, IN, T2_TID },
	};
	struct gt_events *t = convert_with_kernel(cb, name, sw, 6, sum);
	gt_cb_free(cb);
	return t;
}

static void assert_let_in_by_main(struct gt_events *t, const struct gt_convert_summary *sum)
{
	cr_assert_eq(sum->model.kernel_waits_again, 1);
	int64_t at[4], by[4];
	cr_assert_eq(unblocks_of_t2(t, at, by), 2);
	cr_assert(by[0] == 1 && by[1] == 1, "unblocked by G%lld and G%lld", (long long)by[0],
		  (long long)by[1]);
	cr_assert_geq(at[1], 30000 - 10 - 2, "unblocked at %lld ns", (long long)at[1]);
	gt_events_free(t);
}

static void second_signal_then_mutex_wake(struct gt_cb *cb)
{
	cond_wait_naming(cb, 1, T0 + 10000, T2, COND, MUTEX);
	gt_cb_wake(cb, 0, T0 + 25000, MAIN, GT_BK_COND, COND, 1, 0);
	gt_cb_wake(cb, 0, T0 + 30000, MAIN, GT_BK_MUTEX, MUTEX, 1, 0);
}

/* Signalled, a condition waiter sleeps again to take its mutex back while its signaller
 * holds it: that second wait is for the mutex the condition wait's block names, ended by
 * a wake of the mutex, never by a later signal of the condition (meant for other waiters). */
Test(model_kernel, a_condition_waiter_waits_again_for_its_mutex)
{
	struct gt_convert_summary sum;
	struct gt_events *t = wait_again_let_in("kernel_cond_mutex_again",
						second_signal_then_mutex_wake, &sum);
	cr_assert_eq(count19(t, "GoBlockCond"), 1);
	cr_assert_eq(count19(t, "GoBlockSync"), 1);
	assert_let_in_by_main(t, &sum);
}

static void unseen_release(struct gt_cb *cb)
{
	cond_wait_naming(cb, 1, T0 + 10000, T2, COND, MUTEX);
	gt_cb_wake(cb, 0, T0 + 30000, MAIN, GT_BK_MUTEX, MUTEX, GT_WAKE_UNSEEN, 0);
}

/* The mutex's release that let that condition waiter in: its lock word said a thread slept
 * on it which no hook saw block (GT_WAKE_UNSEEN), which names the waker of the second wait. */
Test(model_kernel, an_unseen_release_names_the_waker_of_a_wait_again)
{
	struct gt_convert_summary sum;
	struct gt_events *t = wait_again_let_in("kernel_unseen_release", unseen_release, &sum);
	assert_let_in_by_main(t, &sum);
}

/* Without such a second wait (no kernel records: the hooks alone), a GT_WAKE_UNSEEN release
 * ends no wait: not a hooked waiter of the mutex (a wake of its own names its waker), not
 * one that blocks just after it (no credit, as a wake stamped before its waiter's block
 * would leave). */
Test(model_kernel, an_unseen_release_ends_no_hook_wait)
{
	struct gt_cb *cb = main_and_t2();
	gt_cb_wake(cb, 0, T0 + 5000, MAIN, GT_BK_MUTEX, MUTEX, GT_WAKE_UNSEEN, 0);
	gt_cb_block_begin(cb, 1, T0 + 6000, T2, GT_BK_MUTEX, MUTEX, 0);
	gt_cb_wake(cb, 0, T0 + 20000, MAIN, GT_BK_MUTEX, MUTEX, GT_WAKE_UNSEEN, 0);
	gt_cb_wake(cb, 0, T0 + 30000, MAIN, GT_BK_MUTEX, MUTEX, 1, 0);
	gt_cb_block_end(cb, 1, T0 + 31000, T2, GT_BK_MUTEX, MUTEX, GT_BR_OK);
	gt_cb_capture_end(cb, 0, T0 + 40000);
	struct gt_convert_summary sum;
	struct gt_events *t = convert_with_kernel(cb, "kernel_unseen_no_rewait", NULL, 0, &sum);
	gt_cb_free(cb);
	cr_assert_eq(sum.model.kernel_switches, 0);
	cr_assert_eq(sum.model.unknown_wakeups, 0);
	int64_t at[4], by[4];
	cr_assert_eq(unblocks_of_t2(t, at, by), 1);
	cr_assert_eq(by[0], 1);
	cr_assert_geq(at[0], 30000 - 10 - 2, "unblocked at %lld ns", (long long)at[0]);
	gt_events_free(t);
}

/* A hooked waiter that registered after an unseen release's first look, and took the mutex
 * and left the table before its second (it never slept): that release, the last before its
 * wait's end, let it in (queue-cond met it about once in 10 runs). */
Test(model_kernel, an_unseen_release_just_before_a_hook_wait_ends_is_its_waker)
{
	struct gt_cb *cb = main_and_t2();
	gt_cb_block_begin(cb, 1, T0 + 10000, T2, GT_BK_MUTEX, MUTEX, 0);
	gt_cb_wake(cb, 0, T0 + 10300, MAIN, GT_BK_MUTEX, MUTEX, GT_WAKE_UNSEEN, 0);
	gt_cb_block_end(cb, 1, T0 + 10600, T2, GT_BK_MUTEX, MUTEX, GT_BR_OK);
	gt_cb_wake(cb, 0, T0 + 30000, MAIN, GT_BK_MUTEX, MUTEX, 1, 0);
	gt_cb_capture_end(cb, 0, T0 + 40000);
	struct gt_convert_summary sum;
	struct gt_events *t = convert_with_kernel(cb, "kernel_unseen_hook_wait", NULL, 0, &sum);
	gt_cb_free(cb);
	cr_assert_eq(sum.model.unknown_wakeups, 0);
	int64_t at[4], by[4];
	cr_assert_eq(unblocks_of_t2(t, at, by), 1);
	cr_assert_eq(by[0], 1);
	cr_assert(at[0] >= 10300 - 10 - 2 && at[0] <= 10300 - 10 + 2, "unblocked at %lld ns",
		  (long long)at[0]);
	gt_events_free(t);
}

/* T3's release of the mutex (a hooked wake, count 1) lets in MAIN, a hooked waiter that never
 * slept, and its futex wake goes to T2, asleep on the mutex again inside its condition wait:
 * T2's wait ends before any other release, so that release is its waker too (queue-cond met
 * it about once in 40 runs). */
Test(model_kernel, a_hooked_release_also_wakes_the_sleeper_ending_first)
{
	enum { T3 = 3, T3_TID = 1003 };
	struct gt_cb *cb = main_and_t2();
	gt_cb_thread_new(cb, 0, T0 + 300, MAIN, T3, 0, 0x401000);
	cond_wait_naming(cb, 1, T0 + 10000, T2, COND, MUTEX);
	gt_cb_thread_start(cb, 1, T0 + 11000, T3, T3_TID, 0x401000);
	gt_cb_wake(cb, 0, T0 + 20000, MAIN, GT_BK_COND, COND, 1, 0);
	gt_cb_block_begin(cb, 0, T0 + 29000, MAIN, GT_BK_MUTEX, MUTEX, 0);
	gt_cb_wake(cb, 1, T0 + 30000, T3, GT_BK_MUTEX, MUTEX, 1, 0);
	gt_cb_block_end(cb, 0, T0 + 30500, MAIN, GT_BK_MUTEX, MUTEX, GT_BR_OK);
	gt_cb_block_end(cb, 1, T0 + 31500, T2, GT_BK_COND, COND, GT_BR_OK);
	gt_cb_capture_end(cb, 0, T0 + 40000);
	static const struct ksw sw[] = {
		{ 5, 0, IN, 0 },
		{ 150, 1, IN, T2_TID },
		{ 10500, 1, OUT, T2_TID },    /* its condition wait */
		{ 10800, 1, IN, T3_TID },
		{ 20500, 1, PREEMPT, T3_TID },
		{ 21000, 1, IN, T2_TID },     /* signalled */
		{ 22000, 1, OUT, T2_TID },    /* asleep on the mutex inside glibc */
		{ 22500, 1, IN, T3_TID },
		{ 31000, 1, PREEMPT, T3_TID },
		{ 31100, 1, IN, T2_TID },     /* woken by T3's release */
	};
	struct gt_convert_summary sum;
	struct gt_events *t = convert_with_kernel(cb, "kernel_hooked_and_sleeper", sw, 10, &sum);
	gt_cb_free(cb);
	cr_assert_eq(sum.model.unknown_wakeups, 0);
	cr_assert_eq(sum.model.kernel_waits_again, 1);
	int64_t at[4], by[4];
	cr_assert_eq(unblocks_of_t2(t, at, by), 2);
	cr_assert(by[0] == 1 && by[1] == 3, "unblocked by G%lld and G%lld", (long long)by[0],
		  (long long)by[1]);
	ssize_t u = gt_events_find_arg(t, 0, "GoUnblock", "g", 1);
	cr_assert_geq(u, 0);
	cr_assert_eq(t->ev[u].g, 3, "MAIN's mutex wait unblocked by G%lld", (long long)t->ev[u].g);
	gt_events_free(t);
}

/* T2 posts twice; the first post ends MAIN's wait, the second finds none, and T2 is preempted
 * before its next fact, inside sem_post: that post is made after the preemption and ends
 * MAIN's next wait (queue-cond: a worker preempted inside sem_post). */
Test(model_kernel, a_release_preempted_before_its_next_fact_keeps_its_credit)
{
	struct gt_cb *cb = main_and_t2();
	gt_cb_block_begin(cb, 0, T0 + 10000, MAIN, GT_BK_SEM, MUTEX, 0);
	gt_cb_wake(cb, 1, T0 + 20000, T2, GT_BK_SEM, MUTEX, 1, 0);
	gt_cb_wake(cb, 1, T0 + 20500, T2, GT_BK_SEM, MUTEX, 1, 0);
	gt_cb_block_end(cb, 0, T0 + 22000, MAIN, GT_BK_SEM, MUTEX, GT_BR_OK);
	gt_cb_block_begin(cb, 0, T0 + 23000, MAIN, GT_BK_SEM, MUTEX, 0);
	gt_cb_block_end(cb, 0, T0 + 31000, MAIN, GT_BK_SEM, MUTEX, GT_BR_OK);
	gt_cb_syscall_begin(cb, 1, T0 + 40000, T2, GT_FD_FILE, SYS_getpid, 0, 0);
	gt_cb_syscall_end(cb, 1, T0 + 40100, T2, SYS_getpid, 1);
	gt_cb_capture_end(cb, 0, T0 + 50000);
	static const struct ksw sw[] = {
		{ 5, 0, IN, 0 },
		{ 150, 1, IN, T2_TID },
		{ 10500, 0, OUT, 0 },         /* MAIN's first wait */
		{ 21000, 1, PREEMPT, T2_TID },/* inside its second sem_post */
		{ 21500, 0, IN, 0 },
		{ 23500, 0, OUT, 0 },         /* MAIN's second wait */
		{ 30000, 1, IN, T2_TID },     /* the second post is made */
		{ 30500, 0, IN, 0 },
	};
	struct gt_convert_summary sum;
	struct gt_events *t = convert_with_kernel(cb, "kernel_preempted_release", sw, 8, &sum);
	gt_cb_free(cb);
	cr_assert_eq(sum.model.unknown_wakeups, 0);
	ssize_t u = gt_events_find_arg(t, 0, "GoUnblock", "g", 1);
	cr_assert_geq(u, 0);
	ssize_t u2 = gt_events_find_arg(t, (size_t)u + 1, "GoUnblock", "g", 1);
	cr_assert_geq(u2, 0);
	cr_assert(t->ev[u].g == 2 && t->ev[u2].g == 2, "MAIN unblocked by G%lld and G%lld",
		  (long long)t->ev[u].g, (long long)t->ev[u2].g);
	gt_events_free(t);
}

/* T2 stamps a post while MAIN waits and is preempted before making it (inside sem_post); T3's
 * post ends MAIN's wait, and T2's, made when it runs again, MAIN's next wait.  Given to the
 * first wait by its stamp, T2's post would leave the second with no waker (queue-cond: a
 * worker preempted inside sem_post, issue 22). */
Test(model_kernel, a_post_made_after_its_preemption_ends_the_next_wait)
{
	enum { T3 = 3, T3_TID = 1003 };
	struct gt_cb *cb = main_and_t2();
	gt_cb_thread_new(cb, 0, T0 + 300, MAIN, T3, 0, 0x401000);
	gt_cb_block_begin(cb, 0, T0 + 10000, MAIN, GT_BK_SEM, MUTEX, 0);
	gt_cb_thread_start(cb, 0, T0 + 11000, T3, T3_TID, 0x401000);
	gt_cb_wake(cb, 1, T0 + 20000, T2, GT_BK_SEM, MUTEX, 1, 0);
	gt_cb_wake(cb, 0, T0 + 25000, T3, GT_BK_SEM, MUTEX, 1, 0);
	gt_cb_syscall_begin(cb, 0, T0 + 26000, T3, GT_FD_FILE, SYS_read, 3, 0);
	gt_cb_block_end(cb, 0, T0 + 27500, MAIN, GT_BK_SEM, MUTEX, GT_BR_OK);
	gt_cb_block_begin(cb, 0, T0 + 28000, MAIN, GT_BK_SEM, MUTEX, 0);
	gt_cb_block_end(cb, 0, T0 + 31500, MAIN, GT_BK_SEM, MUTEX, GT_BR_OK);
	gt_cb_syscall_begin(cb, 1, T0 + 40000, T2, GT_FD_FILE, SYS_getpid, 0, 0);
	gt_cb_syscall_end(cb, 1, T0 + 40100, T2, SYS_getpid, 1);
	gt_cb_syscall_end(cb, 0, T0 + 45100, T3, SYS_read, 1);
	gt_cb_capture_end(cb, 0, T0 + 50000);
	static const struct ksw sw[] = {
		{ 5, 0, IN, 0 },
		{ 150, 1, IN, T2_TID },
		{ 10500, 0, OUT, 0 },          /* MAIN's first wait */
		{ 10800, 0, IN, T3_TID },
		{ 21000, 1, PREEMPT, T2_TID }, /* between its post's stamp and the post */
		{ 26500, 0, OUT, T3_TID },     /* its read blocks */
		{ 27000, 0, IN, 0 },           /* woken by T3's post */
		{ 28500, 0, OUT, 0 },          /* MAIN's second wait */
		{ 30000, 1, IN, T2_TID },      /* T2's post is made */
		{ 31000, 0, IN, 0 },
		{ 44900, 0, OUT, 0 },
		{ 45000, 0, IN, T3_TID },
	};
	struct gt_convert_summary sum;
	struct gt_events *t = convert_with_kernel(cb, "kernel_post_made_late", sw, 12, &sum);
	gt_cb_free(cb);
	cr_assert_eq(sum.model.unknown_wakeups, 0);
	ssize_t u = gt_events_find_arg(t, 0, "GoUnblock", "g", 1);
	cr_assert_geq(u, 0);
	ssize_t u2 = gt_events_find_arg(t, (size_t)u + 1, "GoUnblock", "g", 1);
	cr_assert_geq(u2, 0);
	cr_assert(t->ev[u].g == 3 && t->ev[u2].g == 2, "MAIN unblocked by G%lld and G%lld",
		  (long long)t->ev[u].g, (long long)t->ev[u2].g);
	int64_t at = t->ev[u2].ts_ns - t->ev[0].ts_ns;
	cr_assert(at >= 30000 - 10 - 2 && at <= 30000 - 10 + 2, "the second unblock at %lld ns",
		  (long long)at);
	gt_events_free(t);
}

/* The same, but MAIN does not wait again before T2 runs again: nothing tells that T2's post
 * came after its preemption (a post that wakes a waiter is often preempted by it), and its
 * stamp, the first, names MAIN's waker. */
Test(model_kernel, a_post_before_its_preemption_keeps_its_waiter)
{
	enum { T3 = 3, T3_TID = 1003 };
	struct gt_cb *cb = main_and_t2();
	gt_cb_thread_new(cb, 0, T0 + 300, MAIN, T3, 0, 0x401000);
	gt_cb_block_begin(cb, 0, T0 + 10000, MAIN, GT_BK_SEM, MUTEX, 0);
	gt_cb_thread_start(cb, 0, T0 + 11000, T3, T3_TID, 0x401000);
	gt_cb_wake(cb, 1, T0 + 20000, T2, GT_BK_SEM, MUTEX, 1, 0);
	gt_cb_wake(cb, 0, T0 + 25000, T3, GT_BK_SEM, MUTEX, 1, 0);
	gt_cb_syscall_begin(cb, 0, T0 + 26000, T3, GT_FD_FILE, SYS_read, 3, 0);
	gt_cb_block_end(cb, 0, T0 + 27500, MAIN, GT_BK_SEM, MUTEX, GT_BR_OK);
	gt_cb_syscall_begin(cb, 0, T0 + 28000, MAIN, GT_FD_FILE, SYS_read, 4, 0);
	gt_cb_syscall_end(cb, 0, T0 + 31500, MAIN, SYS_read, 1);
	gt_cb_syscall_begin(cb, 1, T0 + 40000, T2, GT_FD_FILE, SYS_getpid, 0, 0);
	gt_cb_syscall_end(cb, 1, T0 + 40100, T2, SYS_getpid, 1);
	gt_cb_syscall_end(cb, 0, T0 + 45100, T3, SYS_read, 1);
	gt_cb_capture_end(cb, 0, T0 + 50000);
	static const struct ksw sw[] = {
		{ 5, 0, IN, 0 },
		{ 150, 1, IN, T2_TID },
		{ 10500, 0, OUT, 0 },          /* MAIN's wait */
		{ 10800, 0, IN, T3_TID },
		{ 21000, 1, PREEMPT, T2_TID },
		{ 26500, 0, OUT, T3_TID },
		{ 27000, 0, IN, 0 },
		{ 28500, 0, OUT, 0 },          /* MAIN's read */
		{ 30000, 1, IN, T2_TID },
		{ 31000, 0, IN, 0 },
		{ 44900, 0, OUT, 0 },
		{ 45000, 0, IN, T3_TID },
	};
	struct gt_convert_summary sum;
	struct gt_events *t = convert_with_kernel(cb, "kernel_post_before_preemption", sw, 12, &sum);
	gt_cb_free(cb);
	cr_assert_eq(sum.model.unknown_wakeups, 0);
	ssize_t u = gt_events_find_arg(t, 0, "GoUnblock", "g", 1);
	cr_assert_geq(u, 0);
	cr_assert_eq(t->ev[u].g, 2, "MAIN unblocked by G%lld", (long long)t->ev[u].g);
	gt_events_free(t);
}

static void unseen_release_before_the_sleep(struct gt_cb *cb)
{
	cond_wait_naming(cb, 1, T0 + 10000, T2, COND, MUTEX);
	gt_cb_wake(cb, 0, T0 + 21500, MAIN, GT_BK_MUTEX, MUTEX, GT_WAKE_UNSEEN, 0);
	gt_cb_syscall_begin(cb, 0, T0 + 25000, MAIN, GT_FD_FILE, SYS_getpid, 0, 0);
	gt_cb_syscall_end(cb, 0, T0 + 25100, MAIN, SYS_getpid, 1);
}

/* That release is stamped before the real one: a waiter that goes to sleep on the mutex
 * between the two (at 22000, before main's next fact) is the one it lets in, although no
 * wait again was there when the wake came (queue-cond met it about once per 100 signals). */
Test(model_kernel, an_unseen_release_just_before_the_sleep_is_its_waker)
{
	struct gt_convert_summary sum;
	struct gt_events *t = wait_again_let_in("kernel_unseen_before_sleep",
						unseen_release_before_the_sleep, &sum);
	cr_assert_eq(sum.model.unknown_wakeups, 0);
	cr_assert_eq(sum.model.kernel_waits_again, 1);
	int64_t at[4], by[4];
	cr_assert_eq(unblocks_of_t2(t, at, by), 2);
	cr_assert(by[0] == 1 && by[1] == 1, "unblocked by G%lld and G%lld", (long long)by[0],
		  (long long)by[1]);
	cr_assert(at[1] >= 22000 - 10 - 2 && at[1] <= 22000 - 10 + 2, "unblocked at %lld ns",
		  (long long)at[1]);
	gt_events_free(t);
}

static void main_waits_releasing_the_mutex(struct gt_cb *cb)
{
	cond_wait_naming(cb, 1, T0 + 10000, T2, COND, MUTEX);
	cond_wait_naming(cb, 0, T0 + 30000, MAIN, COND + 0x100, MUTEX);
}

/* Main enters a condition wait of its own, which releases the mutex inside glibc, where no
 * hook sees the release: with a thread asleep on that mutex (the kernel says so), that
 * release is what lets it in. */
Test(model_kernel, a_condition_wait_releasing_the_mutex_lets_its_sleeper_in)
{
	struct gt_convert_summary sum;
	struct gt_events *t = wait_again_let_in("kernel_cond_releases", main_waits_releasing_the_mutex,
						&sum);
	assert_let_in_by_main(t, &sum);
}

static void t2_block_without_its_mutex(struct gt_cb *cb)
{
	/* T2's look found a waiter of the mutex: its wake of it, then a block not naming it */
	static const uint64_t pc = 0x401234;
	gt_cb_stack(cb, 1, T0 + 9800, 3, &pc, 1);
	gt_cb_wake(cb, 1, T0 + 9900, T2, GT_BK_MUTEX, MUTEX, 1, 3);
	gt_cb_block_begin(cb, 1, T0 + 10000, T2, GT_BK_COND, COND, 3);
	gt_cb_wake(cb, 0, T0 + 30000, MAIN, GT_BK_MUTEX, MUTEX, GT_WAKE_UNSEEN, 0);
}

/* A condition wait whose look for the mutex's waiters found one writes a wake of the mutex
 * and a block without it (capture.h): that wake names the mutex it sleeps on again. */
Test(model_kernel, a_condition_wait_not_naming_its_mutex_has_it_from_its_wake)
{
	struct gt_convert_summary sum;
	struct gt_events *t = wait_again_let_in("kernel_cond_wake_names", t2_block_without_its_mutex,
						&sum);
	assert_let_in_by_main(t, &sum);
}
