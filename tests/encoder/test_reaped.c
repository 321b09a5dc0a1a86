/* A process killed while blocked, reaped by gotrace (issue 27 item 8): its capture records no
 * end, its header the clock pair gotrace took at the reap.  Its trace ends it there, by the
 * pair's TSC; a pair that disagrees with the header's rate (a damaged header) is not one, and
 * its CLOCK_MONOTONIC time alone places the end. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>

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
