/* The go1.22 writer against Go 1.22-1.25's readers' tie rule (oracle_v2.h
 * gt_trace_v2_order_check): an event that must wait for another M's event is written strictly
 * after it.  Before, a P or goroutine handed from one thread to another at the same tick
 * (the idle status of P 0 and the threads existing at the start that take it, a wakeup and
 * the start it allows, a CPU taken over) made those readers fail with "failed to advance:
 * frontier" at random, depending on their map order: 3 runs in 5 of a 2000-thread program.
 * And they scale each delta apart by 1e9 / Frequency and truncate it: with the clock fit as
 * Frequency a thread with many events in its batch read behind the others. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oracle_v2.h"
#include "test_util.h"

#define T0 1000000ull

static void convert22_every(struct gt_cb *cb, const char *name, char *trace,
			    uint64_t generation_ns)
{
	char cap[PATH_MAX], err[256];
	snprintf(cap, PATH_MAX, "%s/%s.cap", test_tmpdir(), name);
	snprintf(trace, PATH_MAX, "%s/%s.trace", test_tmpdir(), name);
	cr_assert_eq(gt_cb_write(cb, cap), 0);
	gt_cb_free(cb);
	struct gt_convert_options opt = {.no_symbols = true, .format = GT_FORMAT_GO122,
					 .generation_ns = generation_ns};
	struct gt_convert_summary sum;
	cr_assert_eq(gt_convert_file(cap, trace, &opt, &sum, err, sizeof err), 0, "%s", err);
	cr_assert_eq(sum.wire.skipped, 0);
	cr_assert_eq(sum.wire.repaired, 0);
}

static void convert22(struct gt_cb *cb, const char *name, char *trace)
{
	convert22_every(cb, name, trace, 0);
}

/* Go 1.22's dump of trace; the test is skipped, saying what is left unchecked, without it. */
static char *dump22(const char *trace, const char *unchecked)
{
	char tool[PATH_MAX], *dump = NULL;
	if (!gt_go_trace_tool("1.22", tool, sizeof tool))
		cr_skip_test("Go 1.22 is not installed: %s not checked", unchecked);
	cr_assert_eq(gt_dump_v2(trace, "1.22", &dump, NULL), 0);
	return dump;
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

/* A TSC clock 0.2 % faster than its nominal rate: from the second generation on the
 * Frequency is the fit (a sleep of 1 ms real lasts 1 ms), and a thread with 60 events 1 tick
 * apart hands its CPU over 3 ticks later.  The readers' truncation of each delta put that
 * thread's last events after the next thread's start (before its batch was cut there). */
Test(gowire_v2, clock_fit_and_a_busy_thread)
{
	const uint64_t hz = 1000000000ull, round = 1002000ull;   /* ticks in 1 ms real */
	struct gt_cb *cb = gt_cb_new(2, 64 * 1024, T0);
	gt_cb_set_clock(cb, GT_CLOCK_TSC, hz);
	gt_cb_header(cb)->start_mono_ns = 1000000000ull;
	gt_cb_thread_existing(cb, 0, T0 + 10, 1, 0, 0x401100);
	gt_cb_thread_existing(cb, 1, T0 + 10, 2, 0, 0x401200);
	for (uint64_t r = 0; r < 10; r++) {
		uint64_t t = T0 + round * r + 100;
		gt_cb_clock(cb, 0, T0 + round * r, 1000000000ull + 1000000ull * r);
		for (uint64_t k = 0; k < 60; k++)
			gt_cb_yield(cb, 0, t + k, 1, 0);
		gt_cb_yield(cb, 0, t + 62, 2, 0);   /* thread 2 takes CPU 0 */
		gt_cb_yield(cb, 0, t + 65, 1, 0);   /* and thread 1 takes it back */
		gt_cb_yield(cb, 1, t + 68, 2, 0);
		if (r == 5)
			gt_cb_block_begin(cb, 1, t + 1000, 2, GT_BK_SLEEP, 1, 0);
		if (r == 6)
			gt_cb_block_end(cb, 1, t + 1000 - 68, 2, GT_BK_SLEEP, 1, GT_BR_OK);
	}
	gt_cb_capture_end(cb, 0, T0 + round * 10);
	char trace[PATH_MAX];
	convert22_every(cb, "clockfit", trace, 2 * round);
	assert_read_in_one_order(trace);
	char *dump = dump22(trace, "the sleep's length");
	char *b = gt_dump_123_header(dump, "Reason=\"sleep\" Running->Waiting", 0);
	char *e = gt_dump_123_header(dump, "GoID=2 Waiting->Runnable", 0);
	cr_assert(b && e, "%s", dump);
	long long tb = strtoll(strstr(b, "Time=") + 5, NULL, 10);
	long long te = strtoll(strstr(e, "Time=") + 5, NULL, 10);
	cr_assert(te - tb > 999000 && te - tb < 1001000, "a 1 ms sleep lasts %lld ns", te - tb);
	free(b);
	free(e);
	free(dump);
}

/* User annotations in the capture are the 1.22 events UserTaskBegin/End, UserRegionBegin/End
 * and UserLog on the thread that made them, with their names; a thread's name is a GoLabel;
 * the viewers of Go 1.22, 1.23 and 1.26 serve every page (tasks and regions included). */
Test(gowire_v2, user_annotations_and_labels, .timeout = 300)
{
	struct gt_cb *cb = gt_cb_new(2, 64 * 1024, T0);
	static const uint64_t pcs[] = {0x401234, 0x401300, 0x401400};
	gt_cb_thread_existing(cb, 0, T0 + 10, 1, 0, 0);
	gt_cb_stack(cb, 0, T0 + 11, 1, pcs, 3);
	gt_cb_thread_new(cb, 0, T0 + 100, 1, 2, 1, 0x401000);
	gt_cb_thread_start(cb, 1, T0 + 200, 2, 4711, 0x401000);
	gt_cb_thread_name(cb, 1, T0 + 210, 2, "worker-1");
	gt_cb_user(cb, 0, T0 + 1000, 1, GT_USER_TASK_BEGIN, 7, 0, 1, "request", NULL);
	gt_cb_user(cb, 0, T0 + 1100, 1, GT_USER_REGION_BEGIN, 7, 0, 1, "parse", NULL);
	gt_cb_user(cb, 0, T0 + 1300, 1, GT_USER_LOG, 7, 0, 1, "status", "all good");
	gt_cb_user(cb, 0, T0 + 1350, 1, GT_USER_REGION_END, 7, 0, 1, "parse", NULL);
	gt_cb_user(cb, 1, T0 + 1500, 2, GT_USER_REGION_BEGIN, 7, 0, 1, "left-open", NULL);
	gt_cb_user(cb, 0, T0 + 2000, 1, GT_USER_TASK_END, 7, 0, 1, NULL, NULL);
	gt_cb_block_begin(cb, 1, T0 + 2100, 2, GT_BK_MUTEX, 0x7f0000001000ull, 1);
	gt_cb_wake(cb, 0, T0 + 2200, 1, GT_BK_MUTEX, 0x7f0000001000ull, 1, 1);
	gt_cb_block_end(cb, 1, T0 + 2300, 2, GT_BK_MUTEX, 0x7f0000001000ull, GT_BR_OK);
	gt_cb_thread_end(cb, 1, T0 + 2500, 2);
	gt_cb_capture_end(cb, 0, T0 + 3000);
	char trace[PATH_MAX];
	convert22(cb, "user", trace);
	assert_read_in_one_order(trace);
	char *dump = dump22(trace, "the events");
	static const char *const want[] = {
		"G=1 TaskBegin Time=1000001000 ID=7 ", "Type=\"request\"",
		"G=1 RegionBegin Time=1000001100 Task=7 Type=\"parse\"",
		"G=1 Log Time=1000001300 Task=7 Category=\"status\" Message=\"all good\"",
		"G=1 RegionEnd Time=1000001350 Task=7 Type=\"parse\"", "G=1 TaskEnd Time=1000002000 ID=7",
		"G=2 RegionBegin Time=1000001500 Task=7 Type=\"left-open\"",
		"G=2 Label", "Label=\"worker-1\"",
	};
	for (size_t i = 0; i < sizeof want / sizeof *want; i++)
		cr_assert_not_null(strstr(dump, want[i]), "no %s in:\n%s", want[i], dump);
	free(dump);
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace, false, &report), 0, "%s", report);
	cr_assert(gt_oracle_passed(report, "ui-1.22") && gt_oracle_passed(report, "ui-1.23") &&
		  gt_oracle_passed(report, "ui-1.26"), "%s", report);
	free(report);
}

/* A thread renamed while it runs, by itself and then by another thread, that ends with no
 * later start: each name is a GoLabel on its G at the rename (1.19 can only label a start). */
Test(gowire_v2, a_thread_renamed_while_it_runs_is_labelled_then, .timeout = 120)
{
	struct gt_cb *cb = gt_cb_new(2, 64 * 1024, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, 1, 0, 0);
	gt_cb_thread_new(cb, 0, T0 + 100, 1, 2, 0, 0x401000);
	gt_cb_thread_start(cb, 1, T0 + 200, 2, 4711, 0x401000);
	gt_cb_thread_name(cb, 1, T0 + 300, 2, "self-named");
	gt_cb_thread_name(cb, 0, T0 + 400, 2, "named-by-main");
	gt_cb_yield(cb, 0, T0 + 500, 1, 0);
	gt_cb_thread_end(cb, 1, T0 + 600, 2);
	gt_cb_capture_end(cb, 0, T0 + 1000);
	char trace[PATH_MAX];
	convert22(cb, "rename", trace);
	assert_read_in_one_order(trace);
	char *dump = dump22(trace, "the labels");
	cr_assert_eq(gt_dump_123_count(dump, "G=2 Label Label=\"self-named\""), 1u, "%s", dump);
	cr_assert_eq(gt_dump_123_count(dump, "G=2 Label Label=\"named-by-main\""), 1u, "%s", dump);
	free(dump);
}

/* A thread that names itself after another thread's fact on its CPU (which took its P in the
 * model), then is renamed by main while it spins unseen and ends with no later start: the
 * name it gave itself is still a GoLabel, since naming itself (aux GT_NAME_BY_ITSELF) means
 * it runs.  Seen under emulation: the prctl name was lost to main's later one. */
Test(gowire_v2, a_thread_that_names_itself_runs_and_is_labelled, .timeout = 120)
{
	struct gt_cb *cb = gt_cb_new(2, 64 * 1024, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, 1, 0, 0);
	gt_cb_thread_new(cb, 0, T0 + 100, 1, 2, 0, 0x401000);
	gt_cb_thread_new(cb, 0, T0 + 110, 1, 3, 0, 0x402000);
	gt_cb_thread_start(cb, 1, T0 + 200, 2, 4711, 0x401000);
	gt_cb_thread_start(cb, 1, T0 + 250, 3, 4712, 0x402000);
	struct gt_p_thread_name own = {"self-named"};
	gt_cb_record(cb, 1, GT_THREAD_NAME, GT_NAME_BY_ITSELF, 2, T0 + 300, &own, sizeof own);
	gt_cb_thread_name(cb, 0, T0 + 400, 2, "named-by-main");
	gt_cb_thread_end(cb, 1, T0 + 500, 3);
	gt_cb_thread_end(cb, 1, T0 + 600, 2);
	gt_cb_capture_end(cb, 0, T0 + 1000);
	char trace[PATH_MAX];
	convert22(cb, "own-name", trace);
	assert_read_in_one_order(trace);
	char *dump = dump22(trace, "the labels");
	cr_assert_eq(gt_dump_123_count(dump, "G=2 Label Label=\"self-named\""), 1u, "%s", dump);
	free(dump);
}
