/* A process killed while blocked, reaped by gotrace (issue 27 item 8): its capture records no
 * end, its header the clock pair gotrace took at the reap.  Its trace ends it there, by the
 * pair's TSC; a pair that disagrees with the header's rate (a damaged header) is not one, and
 * its CLOCK_MONOTONIC time alone places the end. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>

#include "test_util.h"

#define HZ 2000000000ull            /* a TSC at 2 GHz */
#define TSC0 7000000ull             /* its value at the capture's start */
#define MONO0 5000000000ull         /* CLOCK_MONOTONIC then */

/* The main thread blocks in a read 10 us after the start and never returns; gotrace reaped
 * the process at reap_tsc (on the TSC) / reap_mono.  The ns from the trace's first event to
 * G1's end. */
static double ended_after(const char *name, uint64_t reap_tsc, uint64_t reap_mono)
{
	struct gt_cb *cb = gt_cb_new(1, 64 * 1024, TSC0);
	gt_cb_set_clock(cb, GT_CLOCK_TSC, HZ);
	struct gt_file_header *h = gt_cb_header(cb);
	h->start_mono_ns = MONO0;
	h->reaped_tsc = reap_tsc;
	h->reaped_mono_ns = reap_mono;
	h->reaped_status = 9;   /* killed by SIGKILL */
	gt_cb_thread_existing(cb, 0, TSC0 + 2 * 1000, 1, 0, 0);
	gt_cb_syscall_begin(cb, 0, TSC0 + 2 * 10000, 1, GT_FD_PIPE, 0, 3, 0);
	char trace[PATH_MAX];
	struct gt_convert_summary sum;
	cr_assert_eq(convert_builder(cb, name, trace, &sum, 0), 0);
	gt_cb_free(cb);
	cr_assert(sum.reaped, "%s: not said killed", name);
	cr_assert_eq(sum.killed_by, 9);
	struct gt_events *ev = gt_events_parse_119(trace);
	cr_assert_not_null(ev);
	ssize_t end = gt_events_g_end(ev, 1);
	cr_assert_geq(end, 0);
	cr_assert_str_eq(ev->ev[end].type, "GoEnd", "%s: G1 does not end", name);
	double ns = (double)ev->ev[end].ts_ns;
	gt_events_free(ev);
	return ns;
}

Test(reaped, a_process_killed_while_blocked_ends_at_gotrace_s_reap)
{
	/* one second after the start on both clocks; the first event is the first fact, 1 us
	 * after the start */
	double ns = ended_after("reaped-pair", TSC0 + HZ, MONO0 + 1000000000ull);
	cr_assert(ns > 999998000.0 && ns < 1000000000.0, "G1 ends %.0f ns after its first fact",
		  ns);
}

Test(reaped, a_pair_that_disagrees_with_the_rate_is_not_taken)
{
	/* the TSC says 1 s, CLOCK_MONOTONIC 2 s: 50% off the header's rate */
	double ns = ended_after("reaped-bad-pair", TSC0 + HZ, MONO0 + 2000000000ull);
	cr_assert(ns > 1999998000.0 && ns < 2000000000.0, "G1 ends %.0f ns after its first fact",
		  ns);
}

/* A killed child reaped by its parent's wait4 (no end of its own, none by gotrace): its end
 * is the wait4's return, on CLOCK_MONOTONIC by the fit of the parent's clock pairs.  The
 * parent's header rate is 1% fast (a rate measured at a loaded start); its pairs at the start
 * and a second later tell the true one.  At the nominal rate the reap would read 10 ms early. */
Test(reaped, a_parent_s_reap_is_placed_by_its_fitted_clock)
{
	char parent[PATH_MAX], child[PATH_MAX];
	snprintf(parent, sizeof parent, "%s/reap-parent.cap", test_tmpdir());
	snprintf(child, sizeof child, "%s/reap-child.cap", test_tmpdir());
	struct gt_cb *cb = gt_cb_new(1, 64 * 1024, TSC0);
	gt_cb_set_clock(cb, GT_CLOCK_TSC, HZ + HZ / 100);
	struct gt_file_header *h = gt_cb_header(cb);
	h->start_mono_ns = MONO0;
	h->pid = 100;
	h->flags |= GT_FILE_FINALIZED;
	gt_cb_clock(cb, 0, TSC0, MONO0);
	gt_cb_thread_existing(cb, 0, TSC0 + 1000, 1, 0, 0);
	gt_cb_syscall_begin(cb, 0, TSC0 + 2000, 1, GT_FD_NONE, SYS_wait4, 101, 0);
	gt_cb_syscall_end(cb, 0, TSC0 + HZ, 1, SYS_wait4, 101);   /* 1 s on the true rate */
	gt_cb_clock(cb, 0, TSC0 + HZ + 1000, MONO0 + 1000000000ull + 500);
	cr_assert_eq(gt_cb_write(cb, parent), 0);
	gt_cb_free(cb);
	cb = gt_cb_new(1, 64 * 1024, TSC0 + 10000);
	gt_cb_set_clock(cb, GT_CLOCK_TSC, HZ + HZ / 100);
	h = gt_cb_header(cb);
	h->start_mono_ns = MONO0 + 5000;
	h->pid = 101;
	h->ppid = 100;
	gt_cb_thread_existing(cb, 0, TSC0 + 11000, 1, 0, 0);
	cr_assert_eq(gt_cb_write(cb, child), 0);
	gt_cb_free(cb);
	const char *paths[] = {parent, child};
	struct gt_reap *r = gt_capture_reaped(paths, 2);
	cr_assert_not_null(r);
	cr_assert_eq(r[0].mono_ns, 0u, "the parent ended by itself");
	double off = (double)r[1].mono_ns - (double)(MONO0 + 1000000000ull);
	cr_assert(off > -2000.0 && off < 2000.0, "the reap is %.0f ns off", off);
	cr_assert_eq(r[1].tsc, TSC0 + HZ);
	free(r);
}
