/* The go1.22 writer against Go 1.22-1.25's readers' tie rule (oracle_v2.h
 * gt_trace_v2_order_check): an event that must wait for another M's event is written strictly
 * after it.  Before, a P or goroutine handed from one thread to another at the same tick
 * (the idle status of P 0 and the threads existing at the start that take it, a wakeup and
 * the start it allows, a CPU taken over) made those readers fail with "failed to advance:
 * frontier" at random, depending on their map order: 3 runs in 5 of a 2000-thread program. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

#include "oracle_v2.h"
#include "test_util.h"

#define T0 1000000ull

static void convert22(struct gt_cb *cb, const char *name, char *trace)
{
	char cap[PATH_MAX], err[256];
	snprintf(cap, PATH_MAX, "%s/%s.cap", test_tmpdir(), name);
	snprintf(trace, PATH_MAX, "%s/%s.trace", test_tmpdir(), name);
	cr_assert_eq(gt_cb_write(cb, cap), 0);
	gt_cb_free(cb);
	struct gt_convert_options opt = {.no_symbols = true, .format = GT_FORMAT_GO122};
	struct gt_convert_summary sum;
	cr_assert_eq(gt_convert_file(cap, trace, &opt, &sum, err, sizeof err), 0, "%s", err);
	cr_assert_eq(sum.wire.skipped, 0);
}

/* The tie rule holds, and Go 1.22 and 1.23 (when installed) read the trace. */
static void assert_read_in_one_order(const char *trace)
{
	char *why = NULL;
	int st = gt_trace_v2_order_check(trace, &why);
	cr_assert_eq(st, 0, "%s: %s", trace, why ? why : "unreadable");
	free(why);
	const char *versions[] = {"1.22", "1.23"};
	for (size_t v = 0; v < 2; v++) {
		char tool[PATH_MAX], *dump = NULL, *err = NULL;
		if (!gt_go_trace_tool(versions[v], tool, sizeof tool)) {
			cr_log_warn("Go %s is not installed: its reader not run", versions[v]);
			continue;
		}
		st = gt_dump_v2(trace, versions[v], &dump, &err);
		cr_assert_eq(st, 0, "Go %s rejects %s: %.2000s", versions[v], trace, err ? err : "");
		free(dump);
		free(err);
	}
}

/* 32 threads exist at the start (more than the 12 the readers' sort keeps in order): P 0's
 * idle status and every thread's ProcStart of P 0 were all at the first tick. */
Test(gowire_v2, threads_existing_at_start)
{
	struct gt_cb *cb = gt_cb_new(2, 4096, T0);
	uint64_t t = T0 + 10;
	for (uint32_t k = 1; k <= 32; k++)
		gt_cb_thread_existing(cb, k % 2, t, k, k > 28, 0x401000 + 0x100 * k);
	for (uint32_t k = 1; k <= 8; k++)
		gt_cb_yield(cb, k % 2, t + 100 * k, k, 0);
	gt_cb_capture_end(cb, 0, t + 2000);
	char trace[PATH_MAX];
	convert22(cb, "existing", trace);
	assert_read_in_one_order(trace);
}

/* Handovers at one tick: a wakeup and the start of the woken thread on the other CPU, a
 * CPU taken by another thread, each at the very tick of the event before it. */
Test(gowire_v2, handovers_at_one_tick)
{
	struct gt_cb *cb = gt_cb_new(2, 4096, T0);
	uint64_t t = T0 + 10, obj = 0x7f0000001000ull;
	gt_cb_thread_existing(cb, 0, t, 1, 0, 0);
	for (uint32_t k = 2; k <= 16; k++) {
		gt_cb_thread_new(cb, 0, t, 1, k, 0, 0x401000 + 0x100 * k);
		gt_cb_thread_start(cb, 1, t, k, 100 + k, 0x401000 + 0x100 * k);
		gt_cb_block_begin(cb, 1, t, k, GT_BK_MUTEX, obj + k, 0);
	}
	for (uint32_t k = 2; k <= 16; k++) {
		gt_cb_wake(cb, 0, t, 1, GT_BK_MUTEX, obj + k, 1, 0);
		gt_cb_block_end(cb, 1, t, k, GT_BK_MUTEX, obj + k, GT_BR_OK);
		gt_cb_yield(cb, 0, t, k, 0);   /* k takes CPU 0 from thread 1 */
		gt_cb_yield(cb, 0, t, 1, 0);   /* and gives it back */
	}
	gt_cb_capture_end(cb, 0, t + 10);
	char trace[PATH_MAX];
	convert22(cb, "handovers", trace);
	assert_read_in_one_order(trace);
}
