/* Memory follows the live threads, not every thread ever seen (issue 27, item 7): a churn of
 * short threads, created and joined one after the other, is converted holding the state of
 * a few threads at a time (the model's, and the go1.22 writer's Ms once a generation is
 * written), whatever the number of threads; goroutines stay one per thread. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>

#include "test_util.h"

#define T0 1000000ull
#define CHURN_GAP_NS 1000000ull   /* a thread per ms: about 1000 per 1 s generation */
#define STRAY 5u                  /* a thread with a fact long after its end */

/* Thread i's serial: from 2 on; past_wrap: the second half's from GT_C_THREAD_MAX + 2 on,
 * each with the 20 low bits of a first-half thread's, retired by then (a compact record's
 * field holds 20 bits: the recorder writes such threads' records in full, capture.h). */
static uint32_t churn_serial(uint32_t n, uint32_t i, bool past_wrap)
{
	return past_wrap && i >= n / 2 ? GT_C_THREAD_MAX + 2 + (i - n / 2) : i + 2;
}

/* Main (serial 1) creates thread i (churn_serial), which names itself, takes and releases
 * a mutex main waits for, and ends; main joins it, half the time before its end (woken by
 * it), half after (no wait).  Thread STRAY has one more fact after its end, and a join of it comes
 * again at the end (a join of an ended thread does not block). */
static struct gt_cb *churn(uint32_t n, bool past_wrap)
{
	const uint64_t pcs[] = {0x401000, 0x401100};
	const uint64_t mutex = 0x7f0000002000ull;
	struct gt_cb *cb = gt_cb_new(2, 1u << 20, T0);
	cr_assert_not_null(cb);
	gt_cb_set_compact(cb, true);
	uint64_t t = T0;
	gt_cb_clock(cb, 0, t, t);
	gt_cb_thread_existing(cb, 0, t, 1, 0, 0);
	gt_cb_stack(cb, 0, t, 1, pcs, 2);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t child = churn_serial(n, i, past_wrap), tid = 5000 + i;
		bool join_first = i % 2;
		gt_cb_thread_new(cb, 0, t += 1000, 1, child, 1, 0x401500);
		gt_cb_thread_start(cb, 1, t += 1000, child, tid, 0x401500);
		gt_cb_thread_name(cb, 1, t, child, "worker");
		gt_cb_block_begin(cb, 0, t += 1000, 1, GT_BK_MUTEX, mutex, 1);
		gt_cb_wake(cb, 1, t += 1000, child, GT_BK_MUTEX, mutex, 1, 1);
		gt_cb_block_end(cb, 0, t += 1000, 1, GT_BK_MUTEX, mutex, GT_BR_OK);
		if (join_first)
			gt_cb_block_begin(cb, 0, t += 1000, 1, GT_BK_JOIN, child, 1);
		gt_cb_thread_end(cb, 1, t += 1000, child);
		if (!join_first)
			gt_cb_block_begin(cb, 0, t += 1000, 1, GT_BK_JOIN, child, 1);
		gt_cb_block_end(cb, 0, t += 1000, 1, GT_BK_JOIN, child, GT_BR_OK);
		t += CHURN_GAP_NS - 8000;
	}
	gt_cb_yield(cb, 1, t += 1000, STRAY, 1);
	gt_cb_block_begin(cb, 0, t += 1000, 1, GT_BK_JOIN, STRAY, 1);
	gt_cb_block_end(cb, 0, t += 1000, 1, GT_BK_JOIN, STRAY, GT_BR_OK);
	gt_cb_capture_end(cb, 0, t += 1000);
	return cb;
}

/* Checks what the conversion of the churn of n threads (trace: its path) says, and that Go's
 * readers take the trace. */
static void check_churn(uint32_t n, const char *trace, const struct gt_convert_summary *sum)
{
	cr_expect_eq(sum->model.threads, n + 1, "a goroutine per thread, none made again");
	cr_expect_eq(sum->model.facts_after_end, 1u, "the stray fact");
	cr_expect_eq(sum->model.unknown_wakeups, 0u);
	char *report = NULL;
	cr_expect_eq(gt_oracle_check(trace, true, &report), 0, "%s", report ? report : "");
	free(report);
}

/* The churn of n threads converted in the go1.19 format (sum19) and the go1.22 one (sum22). */
static void convert_churn(uint32_t n, struct gt_convert_summary *sum19,
			  struct gt_convert_summary *sum22)
{
	char name[64], trace[PATH_MAX], cap[PATH_MAX], err[512];
	snprintf(name, sizeof name, "churn-%u", n);
	struct gt_cb *cb = churn(n, false);
	cr_assert_eq(convert_builder(cb, name, trace, sum19, 0), 0);
	gt_cb_free(cb);
	check_churn(n, trace, sum19);
	snprintf(cap, sizeof cap, "%s/%s.cap", test_tmpdir(), name);
	snprintf(trace, sizeof trace, "%s/%s.go122.trace", test_tmpdir(), name);
	struct gt_convert_options opt = {.no_symbols = true, .format = GT_FORMAT_GO122};
	cr_assert_eq(gt_convert_file(cap, trace, &opt, sum22, err, sizeof err), 0, "%s", err);
	check_churn(n, trace, sum22);
}

Test(retire, a_churn_holds_a_few_threads_whatever_their_number, .timeout = 300)
{
	struct gt_convert_summary small19, small22, large19, large22;
	convert_churn(500, &small19, &small22);
	convert_churn(5000, &large19, &large22);
	/* main, the thread of the moment, the one just ended: a bound that does not grow */
	const struct gt_convert_summary *sums[] = {&small19, &small22, &large19, &large22};
	for (size_t i = 0; i < 4; i++)
		cr_expect_leq(sums[i]->threads_held, 4u, "%lu threads held (conversion %zu)",
			      (unsigned long)sums[i]->threads_held, i);
	/* the go1.22 writer's Ms: those of one generation (about a second: 1000 threads) */
	cr_expect_geq(large22.wire.generations, 5u, "the churn spans several generations: %lu",
		      (unsigned long)large22.wire.generations);
	cr_expect_leq(large22.wire.ms_held, 1000u + 10u, "%lu Ms held for 5000 threads",
		      (unsigned long)large22.wire.ms_held);
}

/* Past 2^20 threads (a churn of 1.1 M met it): the threads whose serials have the low bits of
 * retired ones are threads of their own, each created, started and ended once. */
Test(retire, serials_past_the_compact_field_are_threads_of_their_own)
{
	const uint32_t n = 400;
	char trace[PATH_MAX];
	struct gt_convert_summary sum;
	struct gt_cb *cb = churn(n, true);
	cr_assert_eq(convert_builder(cb, "churn-wrap", trace, &sum, 0), 0);
	cr_expect_gt(gt_cb_compact_records(cb), 0u, "the first half's records are compact");
	gt_cb_free(cb);
	check_churn(n, trace, &sum);
	struct gt_events *ev = gt_events_parse_119(trace);
	cr_assert_not_null(ev);
	cr_expect_eq(count19(ev, "GoCreate"), n + 1, "main and each thread created once");
	cr_expect_eq(count19(ev, "GoEnd"), n, "each thread ended once");
	for (uint32_t i = 0; i < n; i += 37)
		cr_expect_geq(nth19_arg(ev, "GoStart", "g", 2 + i, 0), 0, "thread %u started", i);
	gt_events_free(ev);
}

/* `convert --from`: the state before the window's start follows the live threads too (the
 * churn's last 10 ms are in the window: main, and the thread of the moment). */
Test(retire, a_window_late_in_a_churn_holds_a_few_threads, .timeout = 300)
{
	const uint32_t n = 5000;
	char trace[PATH_MAX], cap[PATH_MAX], err[512];
	struct gt_convert_summary sum;
	struct gt_cb *cb = churn(n, false);
	cr_assert_eq(convert_builder(cb, "churn-window", trace, &sum, 0), 0);
	gt_cb_free(cb);
	snprintf(cap, sizeof cap, "%s/churn-window.cap", test_tmpdir());
	snprintf(trace, sizeof trace, "%s/churn-window.from.trace", test_tmpdir());
	struct gt_convert_options opt = {.no_symbols = true, .format = GT_FORMAT_GO122,
					 .from_ns = (uint64_t)(n - 10) * CHURN_GAP_NS};
	cr_assert_eq(gt_convert_file(cap, trace, &opt, &sum, err, sizeof err), 0, "%s", err);
	cr_expect_leq(sum.threads_held, 4u, "%lu threads held before the window",
		      (unsigned long)sum.threads_held);
	cr_expect_leq(sum.model.threads, 12u, "the window's threads: %lu",
		      (unsigned long)sum.model.threads);
	char *report = NULL;
	cr_expect_eq(gt_oracle_check(trace, true, &report), 0, "%s", report ? report : "");
	free(report);
}

/* Two processes' churns in one trace: their thread serials are mapped to the model's own
 * (ids of several captures), and that map follows the live threads too. */
Test(retire, a_merged_churn_holds_a_few_threads, .timeout = 300)
{
	const uint32_t n = 3000;
	char caps[2][PATH_MAX], trace[PATH_MAX], err[512];
	for (int i = 0; i < 2; i++) {
		struct gt_cb *cb = churn(n, false);
		gt_cb_header(cb)->pid = 100 + (uint32_t)i;
		snprintf(caps[i], sizeof caps[i], "%s/churn-merged-%d.cap", test_tmpdir(), i);
		cr_assert_eq(gt_cb_write(cb, caps[i]), 0);
		gt_cb_free(cb);
	}
	const char *const paths[] = {caps[0], caps[1]};
	snprintf(trace, sizeof trace, "%s/churn-merged.trace", test_tmpdir());
	struct gt_convert_options opt = {.no_symbols = true, .format = GT_FORMAT_GO122};
	struct gt_convert_set_summary sum;
	cr_assert_eq(gt_convert_files(paths, 2, trace, &opt, &sum, err, sizeof err), 0, "%s", err);
	cr_expect_eq(sum.total.model.threads, 2 * (n + 1), "a goroutine per thread");
	cr_expect_eq(sum.total.model.facts_after_end, 2u, "each process's stray fact");
	cr_expect_eq(sum.total.model.unknown_wakeups, 0u);
	cr_expect_leq(sum.total.threads_held, 8u, "%lu threads or serials held",
		      (unsigned long)sum.total.threads_held);
	gt_convert_set_summary_free(&sum);
	char *report = NULL;
	cr_expect_eq(gt_oracle_check(trace, true, &report), 0, "%s", report ? report : "");
	free(report);
}
