/* The scheduler model: one test per situation of docs/formats/go119.md §5.3.  Each builds a
 * capture, converts it, and asserts on what Go 1.19 (`trace -d`) and Go 1.23 (`trace -d=1`,
 * with stacks) parse out of the result. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "../../preload/libc_syscalls.h"
#include "oracle.h"
#include "test_util.h"

#define T0 1000000ull          /* capture start (ns, CLOCK_MONOTONIC) */
#define MAIN 1u
#define MUTEX 0x7f0000001000ull
#define COND 0x7f0000002000ull
#define ROUTINE 0x401000ull

struct run {
	struct gt_events *t19;
	char *t23;
	struct gt_convert_summary sum;
	char trace[PATH_MAX];
};

static struct gt_cb *start_capture(uint32_t n_cpus)
{
	struct gt_cb *cb = gt_cb_new(n_cpus, 64 * 1024, T0);
	cr_assert(cb);
	gt_cb_thread_existing(cb, 0, T0 + 10, MAIN, 0, 0);
	static const uint64_t pcs[] = {0x401234, 0x401300, 0x401400};
	gt_cb_stack(cb, 0, T0 + 11, 1, pcs, 3);
	return cb;
}

/* Invariants every trace must satisfy on both readers. */
static void check_common(struct run *r)
{
	cr_assert(r->t19, "Go 1.19 rejected the trace (its error is above)");
	cr_assert(r->t23, "Go 1.23 rejected the trace (its error is above)");
	cr_assert_gt(r->t19->n, 0);
	cr_expect_str_eq(r->t19->ev[0].type, "GoCreate", "the earliest event is a GoCreate");
	cr_expect_eq(count19(r->t19, "Gomaxprocs"), 1);
	long gmp = nth19(r->t19, "Gomaxprocs", 0);
	for (size_t i = 0; i < r->t19->n; i++) {
		const struct gt_event *e = &r->t19->ev[i];
		cr_expect(strcmp(e->type, "GoInSyscall") && strcmp(e->type, "FutileWakeup") &&
			  strcmp(e->type, "GoStop") && !strstr(e->type, "Local"),
			  "forbidden event %s", e->type);
		if (!strcmp(e->type, "GoStart") || !strcmp(e->type, "GoStartLabel")) {
			cr_expect_gt((long)i, gmp, "GoStart before the Gomaxprocs");
			cr_expect_geq(e->p, 1, "GoStart on P %ld", (long)e->p);
		}
	}
	/* per P, strictly increasing times (fake Ps excepted) */
	for (size_t i = 0; i < r->t19->n; i++) {
		const struct gt_event *e = &r->t19->ev[i];
		if (e->p >= 1000000 || e->p < 0)
			continue;
		for (size_t j = i + 1; j < r->t19->n; j++)
			if (r->t19->ev[j].p == e->p) {
				cr_expect_gt(r->t19->ev[j].ts_ns, e->ts_ns, "P %ld: %s then %s at the same time",
					     (long)e->p, e->type, r->t19->ev[j].type);
				break;
			}
	}
}

static void convert_and_parse(struct gt_cb *cb, const char *name, struct run *r, uint64_t threshold)
{
	memset(r, 0, sizeof *r);
	cr_assert_eq(convert_builder(cb, name, r->trace, &r->sum, threshold), 0);
	gt_cb_free(cb);
	r->t19 = gt_events_parse_119(r->trace);
	r->t23 = gt_dump_123(r->trace);
	check_common(r);
}

static void done(struct run *r)
{
	gt_events_free(r->t19);
	free(r->t23);
}

/* Reason= of the first Go 1.23 event matching MATCH. */
static const char *reason23(const struct run *r, const char *match)
{
	static struct ev23 e;
	cr_assert(find23(r->t23, match, 0, &e), "no Go 1.23 event %s", match);
	return e.reason;
}

static const struct gt_event *ev19(const struct run *r, long i)
{
	cr_assert_geq(i, 0, "event not found");
	return &r->t19->ev[i];
}

/* G1 creates G2 (start routine ROUTINE) on CPU 0; G2 starts on CPU 1. */
static struct gt_cb *two_threads(void)
{
	struct gt_cb *cb = start_capture(2);
	gt_cb_thread_new(cb, 0, T0 + 100, MAIN, 2, 1, ROUTINE);
	gt_cb_thread_start(cb, 1, T0 + 200, 2, 4711, ROUTINE);
	return cb;
}

/* two_threads, and G3 (created by G1 too) starts on CPU 2 */
static struct gt_cb *three_threads(void)
{
	struct gt_cb *cb = start_capture(3);
	gt_cb_thread_new(cb, 0, T0 + 100, MAIN, 2, 1, ROUTINE);
	gt_cb_thread_start(cb, 1, T0 + 200, 2, 4711, ROUTINE);
	gt_cb_thread_new(cb, 0, T0 + 150, MAIN, 3, 1, ROUTINE);
	gt_cb_thread_start(cb, 2, T0 + 250, 3, 4712, ROUTINE);
	return cb;
}

Test(model, pthread_create_and_start)
{
	struct gt_cb *cb = two_threads();
	gt_cb_thread_end(cb, 1, T0 + 500, 2);
	struct run r;
	convert_and_parse(cb, "create", &r, 0);

	const struct gt_event *create = ev19(&r, nth19_arg(r.t19, "GoCreate", "g", 2, 0));
	cr_expect_eq(create->g, 1, "created by G1");
	cr_expect_eq(create->p, 1, "on CPU 0's P");
	const struct gt_event *start = ev19(&r, nth19_arg(r.t19, "GoStart", "g", 2, 0));
	cr_expect_eq(start->p, 2);
	cr_expect_eq(arg19(start, "seq", 0), 1);
	cr_expect_gt(start->ts_ns, create->ts_ns);
	cr_expect_geq(nth19_arg(r.t19, "GoEnd", "g", 0, 0) , -1);
	long end = nth19(r.t19, "GoEnd", 0);
	cr_expect_eq(ev19(&r, end)->g, 2);
	/* 1.23: a live creation with the start routine as transition stack, creator stack */
	struct ev23 c;
	cr_assert(find23(r.t23, "GoID=2 NotExist->Runnable", 0, &c));
	cr_expect_str_eq(c.tstack, "0x401000");
	cr_expect_str_eq(c.stack, "0x401233;0x4012ff;0x4013ff");
	cr_expect_eq(r.sum.model.threads, 2);
	done(&r);
}

Test(model, thread_exit_unblocks_joiner)
{
	struct gt_cb *cb = two_threads();
	gt_cb_block_begin(cb, 0, T0 + 400, MAIN, GT_BK_JOIN, 2, 1);
	gt_cb_thread_end(cb, 1, T0 + 1000, 2);
	gt_cb_block_end(cb, 0, T0 + 1200, MAIN, GT_BK_JOIN, 2, GT_BR_OK);
	struct run r;
	convert_and_parse(cb, "join", &r, 0);
	const struct gt_event *blk = ev19(&r, nth19(r.t19, "GoBlockSync", 0));
	cr_expect_eq(blk->g, 1);
	const struct gt_event *unb = ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 1, 0));
	cr_expect_eq(unb->g, 2, "the exiting thread unblocks its joiner");
	long ub = nth19_arg(r.t19, "GoUnblock", "g", 1, 0), end = nth19(r.t19, "GoEnd", 0);
	cr_expect_lt(ub, end, "unblock before GoEnd");
	struct ev23 u;
	cr_assert(find23(r.t23, "GoID=1 Waiting->Runnable", 0, &u));
	cr_expect_str_eq(u.stack, "[thread exit]");
	cr_expect_eq(r.sum.model.wakes_matched, 1);
	done(&r);
}

Test(model, join_of_dead_thread_does_not_block)
{
	struct gt_cb *cb = two_threads();
	gt_cb_thread_end(cb, 1, T0 + 400, 2);
	gt_cb_block_begin(cb, 0, T0 + 600, MAIN, GT_BK_JOIN, 2, 1);
	gt_cb_block_end(cb, 0, T0 + 700, MAIN, GT_BK_JOIN, 2, GT_BR_OK);
	struct run r;
	convert_and_parse(cb, "joindead", &r, 0);
	cr_expect_eq(count19(r.t19, "GoBlockSync"), 0);
	cr_expect_eq(r.sum.model.ends_without_begin, 0);
	done(&r);
}

Test(model, mutex_with_known_releaser)
{
	struct gt_cb *cb = two_threads();
	gt_cb_block_begin(cb, 0, T0 + 1000, MAIN, GT_BK_MUTEX, MUTEX, 1);
	gt_cb_wake(cb, 1, T0 + 1400, 2, GT_BK_MUTEX, MUTEX, 1, 1);
	gt_cb_block_end(cb, 0, T0 + 1500, MAIN, GT_BK_MUTEX, MUTEX, GT_BR_OK);
	struct run r;
	convert_and_parse(cb, "mutex", &r, 0);
	const struct gt_event *blk = ev19(&r, nth19(r.t19, "GoBlockSync", 0));
	const struct gt_event *unb = ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 1, 0));
	const struct gt_event *st = ev19(&r, nth19_arg(r.t19, "GoStart", "g", 1, 1));
	cr_expect_eq(blk->g, 1);
	cr_expect_eq(blk->p, 1);
	cr_expect_eq(unb->g, 2, "unblocked by the releaser G2");
	cr_expect_eq(unb->p, 2);
	cr_expect_eq(arg19(unb, "seq", 0), 2);
	cr_expect(blk->ts_ns < unb->ts_ns && unb->ts_ns < st->ts_ns);
	cr_expect_eq(st->ts_ns - blk->ts_ns, 500, "times kept: block %ld start %ld", (long)blk->ts_ns, (long)st->ts_ns);
	struct ev23 u;
	cr_assert(find23(r.t23, "GoID=1 Waiting->Runnable", 0, &u));
	cr_expect_eq(u.g, 2);
	cr_expect_str_eq(u.stack, "0x401233;0x4012ff;0x4013ff");
	cr_expect_str_eq(reason23(&r, "GoID=1 Running->Waiting"), "sync");
	done(&r);
}

Test(model, wake_before_block_uses_unknown_waker)
{
	struct gt_cb *cb = two_threads();
	gt_cb_wake(cb, 1, T0 + 900, 2, GT_BK_MUTEX, MUTEX, 1, 1);
	gt_cb_block_begin(cb, 0, T0 + 1000, MAIN, GT_BK_MUTEX, MUTEX, 1);
	gt_cb_block_end(cb, 0, T0 + 1500, MAIN, GT_BK_MUTEX, MUTEX, GT_BR_OK);
	struct run r;
	convert_and_parse(cb, "wakefirst", &r, 0);
	const struct gt_event *unb = ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 1, 0));
	cr_expect_eq(unb->g, 0, "no goroutine unblocks it");
	cr_expect_eq(unb->p, 1, "on the P where it resumes");
	struct ev23 u;
	cr_assert(find23(r.t23, "GoID=1 Waiting->Runnable", 0, &u));
	cr_expect_str_eq(u.stack, "[unknown wakeup]");
	cr_expect_eq(r.sum.model.unknown_wakeups, 1);
	done(&r);
}

Test(model, rwlock_sem_barrier_block_sync)
{
	struct gt_cb *cb = two_threads();
	enum gt_block_kind kinds[] = {GT_BK_RWLOCK_RD, GT_BK_RWLOCK_WR, GT_BK_SEM, GT_BK_BARRIER,
				      GT_BK_FUTEX};
	uint64_t t = T0 + 1000;
	for (int i = 0; i < 5; i++, t += 1000) {
		gt_cb_block_begin(cb, 0, t, MAIN, kinds[i], MUTEX + 64u * (unsigned)i, 1);
		gt_cb_wake(cb, 1, t + 100, 2, kinds[i], MUTEX + 64u * (unsigned)i, 1, 1);
		gt_cb_block_end(cb, 0, t + 200, MAIN, kinds[i], MUTEX + 64u * (unsigned)i, GT_BR_OK);
	}
	struct run r;
	convert_and_parse(cb, "synckinds", &r, 0);
	cr_expect_eq(count19(r.t19, "GoBlockSync"), 5);
	for (size_t k = 0; k < 5; k++)
		cr_expect_eq(ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 1, k))->g, 2);
	done(&r);
}

Test(model, condvar_signal_and_broadcast)
{
	struct gt_cb *cb = start_capture(4);
	for (uint32_t k = 2; k <= 4; k++) {
		gt_cb_thread_new(cb, 0, T0 + 100 * k, MAIN, k, 1, ROUTINE);
		gt_cb_thread_start(cb, k - 1, T0 + 100 * k + 50, k, 4700 + k, ROUTINE);
	}
	for (uint32_t k = 2; k <= 4; k++)
		gt_cb_block_begin(cb, k - 1, T0 + 1000 + 10 * k, k, GT_BK_COND, COND, 1);
	gt_cb_wake(cb, 0, T0 + 2000, MAIN, GT_BK_COND, COND, 1, 1);          /* signal */
	gt_cb_block_end(cb, 1, T0 + 2100, 2, GT_BK_COND, COND, GT_BR_OK);
	gt_cb_wake(cb, 0, T0 + 3000, MAIN, GT_BK_COND, COND, GT_WAKE_ALL, 1); /* broadcast */
	gt_cb_block_end(cb, 2, T0 + 3100, 3, GT_BK_COND, COND, GT_BR_OK);
	gt_cb_block_end(cb, 3, T0 + 3200, 4, GT_BK_COND, COND, GT_BR_OK);
	struct run r;
	convert_and_parse(cb, "cond", &r, 0);
	cr_expect_eq(count19(r.t19, "GoBlockCond"), 3);
	const struct gt_event *u2 = ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 2, 0));
	const struct gt_event *u3 = ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 3, 0));
	const struct gt_event *u4 = ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 4, 0));
	cr_expect_eq(u2->g, 1);
	cr_expect_eq(u3->g, 1);
	cr_expect_eq(u4->g, 1);
	cr_expect_lt(u2->ts_ns, u3->ts_ns, "the signal woke the first waiter only");
	cr_expect_eq(u3->ts_ns / 1000, u4->ts_ns / 1000, "the broadcast woke both others");
	cr_expect_eq(r.sum.model.wakes_matched, 3);
	cr_expect_str_eq(reason23(&r, "GoID=2 Running->Waiting"), "sync.(*Cond).Wait");
	done(&r);
}

Test(model, timeout_and_signal_wakeups)
{
	struct gt_cb *cb = two_threads();
	gt_cb_block_begin(cb, 0, T0 + 1000, MAIN, GT_BK_COND, COND, 1);
	gt_cb_block_end(cb, 0, T0 + 2000, MAIN, GT_BK_COND, COND, GT_BR_TIMEOUT);
	gt_cb_block_begin(cb, 1, T0 + 3000, 2, GT_BK_SEM, MUTEX, 1);
	gt_cb_block_end(cb, 1, T0 + 4000, 2, GT_BK_SEM, MUTEX, GT_BR_SIGNAL);
	struct run r;
	convert_and_parse(cb, "timeout", &r, 0);
	struct ev23 u1;
	cr_assert(find23(r.t23, "GoID=1 Waiting->Runnable", 0, &u1));
	struct ev23 u2;
	cr_assert(find23(r.t23, "GoID=2 Waiting->Runnable", 0, &u2));
	cr_expect_str_eq(u1.stack, "[timeout]");
	cr_expect_str_eq(u2.stack, "[signal]");
	cr_expect_eq(ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 1, 0))->g, 0);
	done(&r);
}

Test(model, sleep_is_gosleep_woken_by_timer)
{
	struct gt_cb *cb = start_capture(1);
	gt_cb_block_begin(cb, 0, T0 + 1000, MAIN, GT_BK_SLEEP, 5000, 1);
	gt_cb_block_end(cb, 0, T0 + 6000, MAIN, GT_BK_SLEEP, 5000, GT_BR_OK);
	struct run r;
	convert_and_parse(cb, "sleep", &r, 0);
	const struct gt_event *s = ev19(&r, nth19(r.t19, "GoSleep", 0));
	const struct gt_event *st = ev19(&r, nth19_arg(r.t19, "GoStart", "g", 1, 1));
	cr_expect_eq(st->ts_ns - s->ts_ns, 5000 + 1, "unblock at the resume, start 1 ns later");
	struct ev23 u;
	cr_assert(find23(r.t23, "GoID=1 Waiting->Runnable", 0, &u));
	cr_expect_str_eq(u.stack, "[timer]");
	cr_expect_str_eq(reason23(&r, "GoID=1 Running->Waiting"), "sleep");
	done(&r);
}

Test(model, sched_yield_is_gosched)
{
	struct gt_cb *cb = two_threads();
	gt_cb_yield(cb, 0, T0 + 1000, MAIN, 1);
	gt_cb_block_begin(cb, 1, T0 + 1300, MAIN, GT_BK_SLEEP, 10, 1); /* resumes on CPU 1 */
	struct run r;
	convert_and_parse(cb, "yield", &r, 0);
	const struct gt_event *y = ev19(&r, nth19(r.t19, "GoSched", 0));
	cr_expect_eq(y->g, 1);
	cr_expect_eq(y->p, 1);
	const struct gt_event *st = ev19(&r, nth19_arg(r.t19, "GoStart", "g", 1, 1));
	cr_expect_eq(st->p, 2, "resumes on the CPU of its next fact");
	cr_expect_eq(arg19(st, "seq", 0), 2);
	cr_expect_gt(st->ts_ns, y->ts_ns);
	done(&r);
}

/* A select or poll over no descriptor waits for its timeout alone (issue 27: drawn as a
 * network wait before): a sleep, ended by its timer; one over descriptors stays a network
 * wait. */
Test(model, a_select_over_no_descriptor_is_a_sleep)
{
	struct gt_cb *cb = start_capture(1);
	gt_cb_syscall_begin(cb, 0, T0 + 1000, MAIN, GT_FD_POLL, GT_NR_SELECT, 0, 1);
	gt_cb_syscall_end(cb, 0, T0 + 1001000, MAIN, GT_NR_SELECT, 0);   /* 1 ms */
	gt_cb_syscall_begin(cb, 0, T0 + 1002000, MAIN, GT_FD_POLL, GT_NR_SELECT, 4, 1);
	gt_cb_syscall_end(cb, 0, T0 + 2002000, MAIN, GT_NR_SELECT, 1);
	gt_cb_syscall_begin(cb, 0, T0 + 2003000, MAIN, GT_FD_POLL, GT_NR_POLL, 0, 1);
	gt_cb_syscall_end(cb, 0, T0 + 3003000, MAIN, GT_NR_POLL, 0);
	struct run r;
	convert_and_parse(cb, "select0", &r, 0);
	cr_expect_eq(count19(r.t19, "GoSleep"), 2);
	cr_expect_eq(count19(r.t19, "GoBlockNet"), 1);
	cr_expect_str_eq(reason23(&r, "GoID=1 Running->Waiting"), "sleep");
	struct ev23 u23;
	cr_assert(find23(r.t23, "GoID=1 Waiting->Runnable", 0, &u23));
	cr_expect_str_eq(u23.stack, "[timer]");
	cr_expect_eq(r.sum.model.net_waits, 1);
	done(&r);
}

Test(model, socket_waits_are_network_blocks)
{
	struct gt_cb *cb = start_capture(1);
	gt_cb_syscall_begin(cb, 0, T0 + 1000, MAIN, GT_FD_SOCKET, 45, 3, 1);
	gt_cb_syscall_end(cb, 0, T0 + 101000, MAIN, 45, 10);   /* 100 us: blocked */
	gt_cb_syscall_begin(cb, 0, T0 + 102000, MAIN, GT_FD_POLL, 7, 2, 1);
	gt_cb_syscall_end(cb, 0, T0 + 302000, MAIN, 7, 1);
	gt_cb_syscall_begin(cb, 0, T0 + 303000, MAIN, GT_FD_SOCKET, 44, 3, 1);
	gt_cb_syscall_end(cb, 0, T0 + 304000, MAIN, 44, 10);   /* 1 us: short */
	struct run r;
	convert_and_parse(cb, "net", &r, 0);
	cr_expect_eq(count19(r.t19, "GoBlockNet"), 2);
	cr_expect_eq(count19(r.t19, "GoSysCall"), 1);
	const struct gt_event *u = ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 1, 0));
	cr_expect_eq(u->p, 1000002, "moved to the Network lane");
	struct ev23 u23;
	cr_assert(find23(r.t23, "GoID=1 Waiting->Runnable", 0, &u23));
	cr_expect_str_eq(u23.stack, "[netpoll]");
	cr_expect_str_eq(reason23(&r, "GoID=1 Running->Waiting"), "network");
	cr_expect_eq(r.sum.model.net_waits, 2);
	cr_expect_eq(r.sum.model.syscalls_short, 1);
	done(&r);
}

Test(model, long_file_syscall_blocks_and_stops_the_p)
{
	struct gt_cb *cb = start_capture(1);
	gt_cb_syscall_begin(cb, 0, T0 + 1000, MAIN, GT_FD_FILE, 0, 3, 1);
	gt_cb_syscall_end(cb, 0, T0 + 51000, MAIN, 0, 100);    /* 50 us */
	gt_cb_syscall_begin(cb, 0, T0 + 60000, MAIN, GT_FD_PIPE, 1, 4, 1);
	gt_cb_syscall_end(cb, 0, T0 + 65000, MAIN, 1, 100);    /* 5 us: short */
	struct run r;
	convert_and_parse(cb, "sysblock", &r, 0);
	long sc = nth19(r.t19, "GoSysCall", 0);
	cr_assert_geq(sc, 0);
	cr_expect_str_eq(r.t19->ev[sc + 1].type, "GoSysBlock");
	cr_expect_str_eq(r.t19->ev[sc + 2].type, "ProcStop");
	const struct gt_event *ex = ev19(&r, nth19(r.t19, "GoSysExit", 0));
	cr_expect_eq(arg19(ex, "g", 0), 1);
	cr_expect_eq(ex->p, 1000003);
	cr_expect_eq(ex->ts_ns - r.t19->ev[sc].ts_ns, 50000 + 1, "exit at the return (after the ProcStart)");
	cr_expect_eq(count19(r.t19, "GoSysCall"), 2);
	cr_expect_eq(r.sum.model.syscalls_blocking, 1);
	cr_expect_eq(r.sum.model.syscalls_short, 1);
	done(&r);
}

Test(model, syscall_threshold_is_settable)
{
	struct gt_cb *cb = start_capture(1);
	gt_cb_syscall_begin(cb, 0, T0 + 1000, MAIN, GT_FD_FILE, 0, 3, 1);
	gt_cb_syscall_end(cb, 0, T0 + 51000, MAIN, 0, 100);    /* 50 us < 1 ms */
	struct run r;
	convert_and_parse(cb, "threshold", &r, 1000000);
	cr_expect_eq(count19(r.t19, "GoSysBlock"), 0);
	cr_expect_eq(count19(r.t19, "GoSysCall"), 1);
	done(&r);
}

Test(model, syscall_preempted_by_another_thread_blocked)
{
	struct gt_cb *cb = two_threads();
	gt_cb_syscall_begin(cb, 0, T0 + 1000, MAIN, GT_FD_FILE, 0, 3, 1);
	gt_cb_block_begin(cb, 0, T0 + 1005, 2, GT_BK_SLEEP, 1, 1);  /* G2 on CPU 0 meanwhile */
	gt_cb_syscall_end(cb, 0, T0 + 1010, MAIN, 0, 100);
	struct run r;
	convert_and_parse(cb, "sysother", &r, 0);
	cr_expect_eq(count19(r.t19, "GoSysBlock"), 1, "the syscall blocked: G2 ran on its CPU");
	cr_expect_eq(count19(r.t19, "GoSysExit"), 1);
	cr_expect_eq(r.sum.model.ends_without_begin, 0, "its end is expected, not a repair");
	done(&r);
}

Test(model, invisible_preemption)
{
	struct gt_cb *cb = two_threads();
	gt_cb_block_begin(cb, 1, T0 + 1000, MAIN, GT_BK_SLEEP, 1, 1);   /* MAIN on CPU 1 where G2 ran */
	gt_cb_block_end(cb, 1, T0 + 2000, MAIN, GT_BK_SLEEP, 1, GT_BR_OK);
	struct run r;
	convert_and_parse(cb, "preempt", &r, 0);
	long pre = -1;
	for (size_t k = 0; pre < 0 && nth19(r.t19, "GoPreempt", k) >= 0; k++)
		if (r.t19->ev[nth19(r.t19, "GoPreempt", k)].g == 2)
			pre = nth19(r.t19, "GoPreempt", k);
	const struct gt_event *pe = ev19(&r, pre);   /* G2 preempted by G1 on its CPU */
	cr_expect_eq(pe->p, 2);
	long st = nth19_arg(r.t19, "GoStart", "g", 1, 1);
	cr_expect_lt(pre, st);
	cr_expect_eq(ev19(&r, st)->p, 2);
	cr_expect_geq(r.sum.model.preemptions, 1);
	done(&r);
}

Test(model, migration_preempts_on_the_old_p_first)
{
	struct gt_cb *cb = start_capture(2);
	gt_cb_block_begin(cb, 0, T0 + 1000, MAIN, GT_BK_SLEEP, 1, 1);
	gt_cb_block_end(cb, 0, T0 + 1100, MAIN, GT_BK_SLEEP, 1, GT_BR_OK);
	gt_cb_yield(cb, 1, T0 + 1200, MAIN, 1);               /* now on CPU 1 */
	struct run r;
	convert_and_parse(cb, "migrate", &r, 0);
	const struct gt_event *pe = ev19(&r, nth19(r.t19, "GoPreempt", 0));
	cr_expect_eq(pe->p, 1);
	cr_expect_eq(pe->g, 1);
	const struct gt_event *st = ev19(&r, nth19_arg(r.t19, "GoStart", "g", 1, 2));
	cr_expect_eq(st->p, 2);
	cr_expect_lt(pe->ts_ns, st->ts_ns, "strictly before");
	cr_expect_eq(r.sum.model.migrations, 1);
	done(&r);
}

Test(model, pre_existing_threads_and_prologue_order)
{
	struct gt_cb *cb = gt_cb_new(2, 64 * 1024, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, MAIN, 0, 0);
	gt_cb_thread_existing(cb, 1, T0 + 12, 3, 1, 0);        /* blocked at start */
	gt_cb_thread_name(cb, 1, T0 + 13, 3, "logger");
	gt_cb_block_begin(cb, 0, T0 + 1000, MAIN, GT_BK_MUTEX, MUTEX, 0);
	gt_cb_block_end(cb, 1, T0 + 2000, 3, GT_BK_COND, COND, GT_BR_OK);   /* logger wakes */
	gt_cb_wake(cb, 1, T0 + 2100, 3, GT_BK_MUTEX, MUTEX, 1, 0);
	gt_cb_block_end(cb, 0, T0 + 2200, MAIN, GT_BK_MUTEX, MUTEX, GT_BR_OK);
	gt_cb_yield(cb, 0, T0 + 5000, 7, 0);                      /* unknown thread mid-capture */
	struct run r;
	convert_and_parse(cb, "prologue", &r, 0);
	/* GoCreate G1, GoCreate G2, GoWaiting G2, Gomaxprocs, then live events */
	cr_expect_str_eq(r.t19->ev[0].type, "GoCreate");
	cr_expect_eq(arg19(&r.t19->ev[0], "g", 0), 1);
	cr_expect_str_eq(r.t19->ev[1].type, "GoCreate");
	cr_expect_str_eq(r.t19->ev[2].type, "GoWaiting");
	cr_expect_str_eq(r.t19->ev[3].type, "Gomaxprocs");
	cr_expect_eq(arg19(&r.t19->ev[3], "procs", 0), 3);
	const struct gt_event *u = ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 2, 0));
	cr_expect_eq(arg19(u, "seq", 0), 2, "a GoWaiting G is unblocked with seq 2");
	long lab = nth19(r.t19, "GoStartLabel", 0);
	cr_expect_eq(arg19(ev19(&r, lab), "g", 0), 2);
	char label[64];
	cr_expect_str_eq(gt_event_string(ev19(&r, lab), "label", label, sizeof label), "logger");
	/* the unknown thread 7 is created live, with the synthetic new-stack */
	struct ev23 c;
	cr_assert(find23(r.t23, "GoID=3 NotExist->Runnable", 0, &c), "live creation of the thread first seen mid-capture");
	cr_expect_str_eq(c.tstack, "[pre-existing thread]");
	cr_expect_eq(r.sum.model.threads_appeared, 1);
	cr_expect_eq(ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 1, 0))->g, 2);
	done(&r);
}

Test(model, clock_skew_between_cpus_falls_back)
{
	struct gt_cb *cb = two_threads();
	/* CPU 1's clock runs 1 us behind: its wake is stamped before the block it ends */
	gt_cb_block_begin(cb, 0, T0 + 5000, MAIN, GT_BK_MUTEX, MUTEX, 1);
	gt_cb_wake(cb, 1, T0 + 4500, 2, GT_BK_MUTEX, MUTEX, 1, 1);
	gt_cb_block_end(cb, 0, T0 + 5200, MAIN, GT_BK_MUTEX, MUTEX, GT_BR_OK);
	gt_cb_block_begin(cb, 1, T0 + 4800, 2, GT_BK_SLEEP, 1, 1);  /* also out of order across CPUs */
	gt_cb_block_end(cb, 1, T0 + 9000, 2, GT_BK_SLEEP, 1, GT_BR_OK);
	struct run r;
	convert_and_parse(cb, "skew", &r, 0);
	const struct gt_event *u = ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 1, 0));
	cr_expect_eq(u->g, 0, "a pair running backwards is not a known waker");
	done(&r);
}

/* A block and a wake at the same tick, on two CPUs (they can read one TSC value): the real
 * release follows the wake's stamp, so it can end the wait; the block, merged first, is
 * woken by it, not repaired (queue-cond with kernel records met it once in 150 runs: the
 * producer's semaphore wait at its worker's post's very tick had no waker). */
Test(model, wake_at_the_same_instant_as_block_is_its_waker)
{
	struct gt_cb *cb = two_threads();
	gt_cb_block_begin(cb, 0, T0 + 5000, MAIN, GT_BK_MUTEX, MUTEX, 1);
	gt_cb_wake(cb, 1, T0 + 5000, 2, GT_BK_MUTEX, MUTEX, 1, 1);
	gt_cb_block_end(cb, 0, T0 + 5200, MAIN, GT_BK_MUTEX, MUTEX, GT_BR_OK);
	struct run r;
	convert_and_parse(cb, "tie", &r, 0);
	cr_expect_eq(r.sum.model.causal_fallbacks, 0);
	cr_expect_eq(r.sum.model.unknown_wakeups, 0);
	cr_expect_eq(ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 1, 0))->g, 2);
	done(&r);
}

Test(model, epilogue_deschedules_running_threads)
{
	struct gt_cb *cb = two_threads();
	gt_cb_block_begin(cb, 0, T0 + 1000, MAIN, GT_BK_MUTEX, MUTEX, 1);   /* stays blocked */
	struct run r;
	convert_and_parse(cb, "epilogue", &r, 0);
	const struct gt_event *last = &r.t19->ev[r.t19->n - 1];
	cr_expect_str_eq(last->type, "ProcStop");
	cr_expect_eq(count19(r.t19, "GoPreempt"), 1, "G2 was running");
	cr_expect_eq(count19(r.t19, "ProcStop"), 2);
	done(&r);
}

Test(model, thread_name_labels_later_starts)
{
	struct gt_cb *cb = two_threads();
	gt_cb_thread_name(cb, 0, T0 + 250, MAIN, "test-program");  /* the inherited name: no label */
	gt_cb_thread_name(cb, 1, T0 + 300, 2, "net-worker");
	gt_cb_yield(cb, 1, T0 + 400, 2, 1);
	gt_cb_block_begin(cb, 1, T0 + 500, 2, GT_BK_SLEEP, 1, 1);
	struct run r;
	convert_and_parse(cb, "label", &r, 0);
	const struct gt_event *l = ev19(&r, nth19(r.t19, "GoStartLabel", 0));
	char label[64];
	cr_expect_str_eq(gt_event_string(l, "label", label, sizeof label), "net-worker");
	cr_expect_gt(nth19(r.t19, "GoStartLabel", 0), nth19(r.t19, "Gomaxprocs", 0));
	cr_assert_gt(gt_dump_123_count(r.t23, "Label=\"net-worker\""), 0);
	cr_expect_eq(count19(r.t19, "GoStartLabel"), 1, "only G2 is labelled");
	done(&r);
}

Test(model, tsc_clock_uses_fitted_frequency)
{
	/* nominal 3 GHz, true 2.97 GHz per the clock pairs: durations follow the pairs */
	struct gt_cb *cb = gt_cb_new(1, 64 * 1024, 3000000000ull);
	gt_cb_set_clock(cb, GT_CLOCK_TSC, 3000000000ull);
	gt_cb_header(cb)->start_mono_ns = 1000000000ull;
	gt_cb_thread_existing(cb, 0, 3000000000ull + 30, MAIN, 0, 0);
	gt_cb_block_begin(cb, 0, 3000000000ull + 297000000ull, MAIN, GT_BK_SLEEP, 1, 0);
	gt_cb_block_end(cb, 0, 3000000000ull + 297000000ull * 2, MAIN, GT_BK_SLEEP, 1, GT_BR_OK);
	/* after the block in the file too: a capture is in time order within the reorder bound */
	for (int i = 1; i <= 10; i++)
		gt_cb_clock(cb, 0, 3000000000ull + 297000000ull * (uint64_t)i, 1000000000ull + 100000000ull * (uint64_t)i);
	struct run r;
	convert_and_parse(cb, "tsc", &r, 0);
	const struct gt_event *s = ev19(&r, nth19(r.t19, "GoSleep", 0));
	const struct gt_event *st = ev19(&r, nth19_arg(r.t19, "GoStart", "g", 1, 1));
	int64_t d = st->ts_ns - s->ts_ns;
	cr_expect(d > 99990000 && d < 100010000, "297e6 ticks at 2.97 GHz = 100 ms, got %ld ns", (long)d);
	done(&r);
}

Test(model, full_oracle_on_a_mixed_trace)
{
	struct gt_cb *cb = start_capture(3);
	gt_cb_thread_new(cb, 0, T0 + 100, MAIN, 2, 1, ROUTINE);
	gt_cb_thread_new(cb, 0, T0 + 150, MAIN, 3, 1, ROUTINE + 0x100);
	gt_cb_thread_start(cb, 1, T0 + 200, 2, 4711, ROUTINE);
	gt_cb_thread_start(cb, 2, T0 + 250, 3, 4712, ROUTINE + 0x100);
	gt_cb_thread_name(cb, 2, T0 + 260, 3, "net");
	gt_cb_block_begin(cb, 0, T0 + 1000, MAIN, GT_BK_MUTEX, MUTEX, 1);
	gt_cb_wake(cb, 1, T0 + 1400, 2, GT_BK_MUTEX, MUTEX, 1, 1);
	gt_cb_block_end(cb, 0, T0 + 1500, MAIN, GT_BK_MUTEX, MUTEX, GT_BR_OK);
	gt_cb_syscall_begin(cb, 2, T0 + 1600, 3, GT_FD_SOCKET, 45, 3, 1);
	gt_cb_syscall_end(cb, 2, T0 + 90000, 3, 45, 10);
	gt_cb_syscall_begin(cb, 1, T0 + 2000, 2, GT_FD_FILE, 0, 3, 1);
	gt_cb_syscall_end(cb, 0, T0 + 80000, 2, 0, 10);        /* returns on another CPU */
	gt_cb_block_begin(cb, 0, T0 + 100000, 2, GT_BK_COND, COND, 1);
	gt_cb_wake(cb, 1, T0 + 110000, MAIN, GT_BK_COND, COND, 1, 1);
	gt_cb_block_end(cb, 0, T0 + 120000, 2, GT_BK_COND, COND, GT_BR_OK);
	gt_cb_block_begin(cb, 1, T0 + 130000, MAIN, GT_BK_JOIN, 2, 1);
	gt_cb_thread_end(cb, 0, T0 + 140000, 2);
	gt_cb_block_end(cb, 1, T0 + 150000, MAIN, GT_BK_JOIN, 2, GT_BR_OK);
	gt_cb_block_begin(cb, 1, T0 + 160000, MAIN, GT_BK_MUTEX, MUTEX, 1);  /* blocked at the end */
	struct run r;
	convert_and_parse(cb, "mixed", &r, 0);
	char *report = NULL;
	int st = gt_oracle_check(r.trace, false, &report);
	cr_expect_eq(st, 0, "trace-oracle failed:\n%s", report ? report : "(no report)");
	free(report);
	done(&r);
}

Test(model, user_tasks_regions_and_logs)
{
	struct gt_cb *cb = two_threads();
	gt_cb_user(cb, 0, T0 + 1000, MAIN, GT_USER_TASK_BEGIN, 7, 0, 1, "request", NULL);
	gt_cb_user(cb, 0, T0 + 1100, MAIN, GT_USER_REGION_BEGIN, 7, 0, 1, "parse", NULL);
	gt_cb_user(cb, 0, T0 + 1150, MAIN, GT_USER_REGION_BEGIN, 7, 0, 0, "inner", NULL);
	gt_cb_user(cb, 0, T0 + 1200, MAIN, GT_USER_REGION_END, 7, 0, 1, "parse", NULL); /* not innermost */
	gt_cb_user(cb, 0, T0 + 1250, MAIN, GT_USER_REGION_END, 7, 0, 0, "inner", NULL);
	gt_cb_user(cb, 0, T0 + 1300, MAIN, GT_USER_LOG, 7, 0, 1, "status", "all good");
	gt_cb_thread_new(cb, 0, T0 + 1320, MAIN, 3, 0, ROUTINE);   /* created in a task region, no stack */
	gt_cb_user(cb, 0, T0 + 1350, MAIN, GT_USER_REGION_END, 7, 0, 1, "parse", NULL);
	gt_cb_user(cb, 1, T0 + 1400, 2, GT_USER_TASK_BEGIN, 7, 0, 1, "again", NULL);  /* id live twice */
	gt_cb_user(cb, 1, T0 + 1500, 2, GT_USER_REGION_BEGIN, 7, 0, 1, "left-open", NULL);
	gt_cb_user(cb, 0, T0 + 2000, MAIN, GT_USER_TASK_END, 7, 0, 1, NULL, NULL);
	gt_cb_thread_end(cb, 1, T0 + 2500, 2);
	struct run r;
	convert_and_parse(cb, "user", &r, 0);
	cr_expect_eq(count19(r.t19, "UserTaskCreate"), 1);
	cr_expect_eq(count19(r.t19, "UserTaskEnd"), 1);
	cr_expect_eq(count19(r.t19, "UserRegion"), 5);
	const struct gt_event *log = ev19(&r, nth19(r.t19, "UserLog", 0));
	char message[64];
	cr_expect_str_eq(gt_event_string(log, "message", message, sizeof message), "all good");
	cr_expect_eq(log->g, 1);
	cr_expect_eq(r.sum.model.user_skipped, 2);
	struct ev23 c;
	cr_assert(find23(r.t23, "GoID=3 NotExist->Runnable", 0, &c));
	cr_expect_str_eq(c.stack, "[no frames]", "a creation inside a task region has a frame");
	char *report = NULL;
	cr_expect_eq(gt_oracle_check(r.trace, false, &report), 0, "%s", report ? report : "");
	free(report);
	done(&r);
}

Test(model, release_wakes_the_waiter_that_resumes_first)
{
	/* a mutex is not FIFO: G1 blocked first, but G3 took the lock the release freed */
	struct gt_cb *cb = three_threads();
	gt_cb_block_begin(cb, 0, T0 + 1000, MAIN, GT_BK_MUTEX, MUTEX, 1);
	gt_cb_block_begin(cb, 2, T0 + 1100, 3, GT_BK_MUTEX, MUTEX, 1);
	gt_cb_wake(cb, 1, T0 + 1200, 2, GT_BK_MUTEX, MUTEX, 1, 1);
	gt_cb_block_end(cb, 2, T0 + 1300, 3, GT_BK_MUTEX, MUTEX, GT_BR_OK);
	gt_cb_wake(cb, 2, T0 + 1400, 3, GT_BK_MUTEX, MUTEX, 1, 1);
	gt_cb_block_end(cb, 0, T0 + 1500, MAIN, GT_BK_MUTEX, MUTEX, GT_BR_OK);
	struct run r;
	convert_and_parse(cb, "nonfifo", &r, 0);
	cr_expect_eq(ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 3, 0))->g, 2,
		     "G3 was let in by G2's release");
	cr_expect_eq(ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 1, 0))->g, 3,
		     "G1 by G3's release");
	cr_expect_eq(r.sum.model.wakes_matched, 2);
	cr_expect_eq(r.sum.model.unknown_wakeups, 0);
	done(&r);
}

/* ---- a mutex released inside a condition wait (capture.h GT_BLOCK_COND_HELD) ---------- */

/* thread's condition wait on COND, its block naming MUTEX (no waiter at its look) */
static void cond_wait_releasing(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread)
{
	struct {
		struct gt_p_block b;
		struct gt_p_block_mutex m;
	} p = {{.obj = COND, .stack = 1}, {.mutex = MUTEX}};
	cr_assert(gt_cb_record(cb, cpu, GT_BLOCK_BEGIN, GT_BK_COND, thread, t, &p, sizeof p));
}

/* thread's wait for MUTEX, which holder held inside a condition wait */
static void mutex_wait_cond_held(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
				 uint32_t holder)
{
	struct gt_p_block p = {.obj = MUTEX, .stack = 1,
			       .flags = GT_BLOCK_COND_HELD | holder << GT_BLOCK_HOLDER_SHIFT};
	cr_assert(gt_cb_record(cb, cpu, GT_BLOCK_BEGIN, GT_BK_MUTEX, thread, t, &p, sizeof p));
}

/* G2 takes the mutex G1 releases inside its wait and signals G1's condvar (from T0 + 1300);
 * the capture converted into r: G2 unblocked by G g2_by, G1 by G2's signal, the unknown
 * wakers, and those of them that a condition wait's release should have been. */
static void signal_and_check(struct gt_cb *cb, const char *name, struct run *r, int64_t g2_by,
			     uint64_t unknown, uint64_t unseen)
{
	gt_cb_block_end(cb, 1, T0 + 1300, 2, GT_BK_MUTEX, MUTEX, GT_BR_OK);
	gt_cb_wake(cb, 1, T0 + 1400, 2, GT_BK_COND, COND, 1, 1);
	gt_cb_block_end(cb, 0, T0 + 1500, MAIN, GT_BK_COND, COND, GT_BR_OK);
	convert_and_parse(cb, name, r, 0);
	cr_expect_eq(ev19(r, nth19_arg(r->t19, "GoUnblock", "g", 2, 0))->g, g2_by, "G2's waker");
	cr_expect_eq(ev19(r, nth19_arg(r->t19, "GoUnblock", "g", 1, 0))->g, 2, "G1 signalled by G2");
	cr_expect_eq(r->sum.model.unknown_wakeups, unknown);
	cr_expect_eq(r->sum.model.cond_release_unseen, unseen);
}

/* G1 is still inside glibc's wait, before its release, when G2 blocks on the mutex: G2's
 * block, G1's unblock of it, then G1's condvar block. */
Test(model, mutex_released_inside_a_condition_wait_wakes_a_later_waiter)
{
	struct gt_cb *cb = two_threads();
	cond_wait_releasing(cb, 0, T0 + 1000, MAIN);
	mutex_wait_cond_held(cb, 1, T0 + 1100, 2, MAIN);
	struct run r;
	signal_and_check(cb, "condheld", &r, 1, 0, 0);
	ssize_t sync = nth19(r.t19, "GoBlockSync", 0), cond = nth19(r.t19, "GoBlockCond", 0);
	const struct gt_event *u2 = ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 2, 0));
	cr_expect_eq(ev19(&r, sync)->g, 2);
	cr_expect_eq(u2->p, 1, "G2 let in on G1's P, where G1 still runs");
	cr_expect_eq(ev19(&r, cond)->g, 1);
	cr_expect_gt(cond, sync, "G1's condvar block after G2's mutex block");
	cr_expect_geq(ev19(&r, cond)->ts_ns, ev19(&r, sync)->ts_ns);
	cr_expect_eq(r.sum.model.wakes_matched, 2);
	done(&r);
}

/* G2's block stamped before G1's condvar block (its timestamp precedes its look at the
 * mutex): G1's release lets it in at G1's block. */
Test(model, mutex_released_inside_a_condition_wait_wakes_an_earlier_waiter)
{
	struct gt_cb *cb = two_threads();
	mutex_wait_cond_held(cb, 1, T0 + 900, 2, MAIN);
	cond_wait_releasing(cb, 0, T0 + 1000, MAIN);
	struct run r;
	signal_and_check(cb, "condheldearly", &r, 1, 0, 0);
	done(&r);
}

/* G2's block and G1's condvar block at the same tick, on two CPUs (queue-cond met it: two
 * CPUs can read one TSC value): G2's, merged first, is let in by G1's release all the same. */
Test(model, mutex_released_inside_a_condition_wait_wakes_a_waiter_of_the_same_tick)
{
	struct gt_cb *cb = two_threads();
	mutex_wait_cond_held(cb, 0, T0 + 1000, 2, MAIN);
	cond_wait_releasing(cb, 1, T0 + 1000, MAIN);
	struct run r;
	signal_and_check(cb, "condheldsametick", &r, 1, 0, 0);
	done(&r);
}

/* G2 looked at the mutex before G1 marked its condition wait (its block is not flagged), and
 * its wait ends before any other release of the mutex: G1's release inside its wait is the
 * one that let it in. */
Test(model, mutex_released_inside_a_condition_wait_wakes_an_unflagged_waiter)
{
	struct gt_cb *cb = two_threads();
	cond_wait_releasing(cb, 0, T0 + 1000, MAIN);
	gt_cb_block_begin(cb, 1, T0 + 1100, 2, GT_BK_MUTEX, MUTEX, 1);
	struct run r;
	signal_and_check(cb, "condunflagged", &r, 1, 0, 0);
	done(&r);
}

/* G3's condition wait releases the mutex after G1's did: an unflagged wait that blocks
 * after both was let in by G3's, the last release before it (queue-cond, hooks alone: G1's
 * release taken for it made a wrong waker once in 10 runs). */
Test(model, an_unflagged_waiter_is_let_in_by_the_last_release_before_it)
{
	struct gt_cb *cb = three_threads();
	cond_wait_releasing(cb, 0, T0 + 1000, MAIN);
	cond_wait_releasing(cb, 2, T0 + 1050, 3);
	gt_cb_block_begin(cb, 1, T0 + 1100, 2, GT_BK_MUTEX, MUTEX, 1);
	gt_cb_block_end(cb, 1, T0 + 1300, 2, GT_BK_MUTEX, MUTEX, GT_BR_OK);
	gt_cb_wake(cb, 1, T0 + 1400, 2, GT_BK_COND, COND, 1, 1);
	gt_cb_wake(cb, 1, T0 + 1410, 2, GT_BK_COND, COND, 1, 1);
	gt_cb_syscall_begin(cb, 1, T0 + 1450, 2, GT_FD_FILE, SYS_getpid, 0, 0);
	gt_cb_syscall_end(cb, 1, T0 + 1460, 2, SYS_getpid, 1);
	gt_cb_block_end(cb, 0, T0 + 1500, MAIN, GT_BK_COND, COND, GT_BR_OK);
	gt_cb_block_end(cb, 2, T0 + 1600, 3, GT_BK_COND, COND, GT_BR_OK);
	struct run r;
	convert_and_parse(cb, "condunflaggedlast", &r, 0);
	cr_expect_eq(ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 2, 0))->g, 3, "G2's waker");
	cr_expect_eq(ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 1, 0))->g, 2, "G1 signalled by G2");
	cr_expect_eq(ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 3, 0))->g, 2, "G3 signalled by G2");
	cr_expect_eq(r.sum.model.unknown_wakeups, 0);
	done(&r);
}

/* Two CPUs' clocks can differ by a few hundred ns (a VM's TSC): G1's semaphore wait ends on
 * CPU 0 200 ns before the post that ended it is stamped on CPU 1, and G1 waits again at once.
 * That post is G1's first waker, not its second wait's, which G2's next post ends (queue-cond
 * with kernel records met it twice in 100 runs beside a busy loop). */
Test(model, a_post_stamped_just_after_the_wait_it_ended_is_its_waker)
{
	struct gt_cb *cb = two_threads();
	gt_cb_block_begin(cb, 0, T0 + 1000, MAIN, GT_BK_SEM, MUTEX, 1);
	gt_cb_block_end(cb, 0, T0 + 1400, MAIN, GT_BK_SEM, MUTEX, GT_BR_OK);
	gt_cb_block_begin(cb, 0, T0 + 1500, MAIN, GT_BK_SEM, MUTEX, 1);
	gt_cb_wake(cb, 1, T0 + 1600, 2, GT_BK_SEM, MUTEX, 1, 1);
	gt_cb_wake(cb, 1, T0 + 3000, 2, GT_BK_SEM, MUTEX, 1, 1);
	gt_cb_block_end(cb, 0, T0 + 3500, MAIN, GT_BK_SEM, MUTEX, GT_BR_OK);
	struct run r;
	convert_and_parse(cb, "semskew", &r, 0);
	cr_expect_eq(r.sum.model.unknown_wakeups, 0);
	const struct gt_event *first = ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 1, 0));
	const struct gt_event *second = ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 1, 1));
	cr_expect_eq(first->g, 2, "G1's first waker");
	cr_expect_eq(second->g, 2, "G1's second waker");
	cr_expect_geq(second->ts_ns - first->ts_ns, 1500, "the second unblock at G2's second post");
	done(&r);
}

/* G2, flagged, waits for the mutex G1 holds, but has not gone to sleep when G1's condition
 * wait releases it inside glibc (preempted in the lock): G3, flagged later, went to sleep and
 * is let in, and G2 takes the mutex at G3's unlock, before its wait ends (queue-cond with
 * kernel records met it once in 100 runs beside busy processes: G3's wait had no waker). */
Test(model, a_waiter_whose_wait_ends_after_another_release_was_not_let_in)
{
	struct gt_cb *cb = three_threads();
	mutex_wait_cond_held(cb, 1, T0 + 900, 2, MAIN);
	cond_wait_releasing(cb, 0, T0 + 1000, MAIN);
	mutex_wait_cond_held(cb, 2, T0 + 1100, 3, MAIN);
	gt_cb_block_end(cb, 2, T0 + 1200, 3, GT_BK_MUTEX, MUTEX, GT_BR_OK);
	gt_cb_wake(cb, 2, T0 + 1250, 3, GT_BK_MUTEX, MUTEX, 1, 1);
	struct run r;
	signal_and_check(cb, "condheldnotasleep", &r, 3, 0, 0);
	cr_expect_eq(ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 3, 0))->g, 1, "G3's waker");
	done(&r);
}

/* A condition wait whose look saw a waiter of the mutex writes a wake of it and a block that
 * does not name it: it releases that mutex inside glibc all the same, and a flagged waiter
 * blocking just after is let in by it. */
Test(model, mutex_released_inside_a_condition_wait_not_naming_it)
{
	struct gt_cb *cb = two_threads();
	gt_cb_wake(cb, 0, T0 + 990, MAIN, GT_BK_MUTEX, MUTEX, 1, 1);
	gt_cb_block_begin(cb, 0, T0 + 1000, MAIN, GT_BK_COND, COND, 1);
	mutex_wait_cond_held(cb, 1, T0 + 1100, 2, MAIN);
	struct run r;
	signal_and_check(cb, "condunnamed", &r, 1, 0, 0);
	done(&r);
}

/* G1's look wrote a wake of the mutex at the very tick of G2's flagged block (merged first),
 * then its condition block without the mutex: no repair, G1's release lets G2 in. */
Test(model, a_wake_at_a_flagged_blocks_tick_is_its_holders_release)
{
	struct gt_cb *cb = two_threads();
	mutex_wait_cond_held(cb, 0, T0 + 1000, 2, MAIN);
	gt_cb_wake(cb, 1, T0 + 1000, MAIN, GT_BK_MUTEX, MUTEX, 1, 1);
	gt_cb_block_begin(cb, 1, T0 + 1010, MAIN, GT_BK_COND, COND, 1);
	struct run r;
	signal_and_check(cb, "condheldwaketick", &r, 1, 0, 0);
	cr_expect_eq(r.sum.model.causal_fallbacks, 0);
	done(&r);
}

/* G1 preempted by G3 on its CPU before G2 blocks: G1 starts again where G2 blocked, to let
 * it in and block. */
Test(model, mutex_released_inside_a_preempted_condition_wait)
{
	struct gt_cb *cb = two_threads();
	gt_cb_thread_new(cb, 0, T0 + 300, MAIN, 3, 1, ROUTINE);
	cond_wait_releasing(cb, 0, T0 + 1000, MAIN);
	gt_cb_thread_start(cb, 0, T0 + 1050, 3, 4713, ROUTINE);
	mutex_wait_cond_held(cb, 1, T0 + 1100, 2, MAIN);
	gt_cb_thread_end(cb, 0, T0 + 2000, 3);
	struct run r;
	signal_and_check(cb, "condheldpreempt", &r, 1, 0, 0);
	const struct gt_event *u2 = ev19(&r, nth19_arg(r.t19, "GoUnblock", "g", 2, 0));
	cr_expect_eq(u2->p, 2, "G2 let in on the P G2 left");
	done(&r);
}

/* A flagged wait that no condvar block answers (its wait saw a waiter, say) keeps an
 * unknown waker, counted as such. */
Test(model, mutex_wait_without_its_condition_wait_is_counted)
{
	struct gt_cb *cb = two_threads();
	gt_cb_block_begin(cb, 0, T0 + 1000, MAIN, GT_BK_COND, COND, 1);
	mutex_wait_cond_held(cb, 1, T0 + 1100, 2, MAIN);
	struct run r;
	signal_and_check(cb, "condheldunseen", &r, 0, 1, 1);
	done(&r);
}

/* The mutex changed hands after G1's release: G2's wait was flagged by G3's condition wait
 * (its block stamped before G3's), which lets it in, not G1's. */
Test(model, mutex_released_inside_a_condition_wait_wakes_only_its_holders_waiters)
{
	struct gt_cb *cb = three_threads();
	cond_wait_releasing(cb, 0, T0 + 1000, MAIN);
	mutex_wait_cond_held(cb, 1, T0 + 1100, 2, 3);
	cond_wait_releasing(cb, 2, T0 + 1200, 3);
	gt_cb_wake(cb, 1, T0 + 1250, 2, GT_BK_COND, COND, 1, 1); /* wakes G1; the next G3 */
	gt_cb_block_end(cb, 2, T0 + 1600, 3, GT_BK_COND, COND, GT_BR_OK);
	struct run r;
	signal_and_check(cb, "condheldholder", &r, 3, 0, 0);
	done(&r);
}
