/* report_scenario: see report_scenario.h. */
#include "report_scenario.h"

#include "report/report.h"

#include <criterion/criterion.h>
#include <stdio.h>

struct gt_cb *report_scenario_threads(uint32_t n_cpus, uint32_t cpu_a, uint32_t cpu_b)
{
	struct gt_cb *cb = gt_cb_new(n_cpus, 65536, 1000);
	cr_assert_not_null(cb);
	const uint64_t pcs_a[] = { 0x401100, 0x401200 }, pcs_b[] = { 0x401300, 0x401200 };
	gt_cb_thread_existing(cb, 0, 1000, 1, 0, 0);
	gt_cb_stack(cb, 0, 1001, 1, pcs_a, 2);
	gt_cb_stack(cb, 0, 1002, 2, pcs_b, 2);
	gt_cb_thread_new(cb, 0, 1010, 1, 2, 0, REPORT_WORKER_ENTRY);
	gt_cb_thread_new(cb, 0, 1020, 1, 3, 0, REPORT_WORKER_ENTRY);
	gt_cb_thread_start(cb, cpu_a, 1100, 2, 102, REPORT_WORKER_ENTRY);
	gt_cb_thread_name(cb, cpu_a, 1101, 2, "worker-a");
	gt_cb_thread_start(cb, cpu_b, 1150, 3, 103, REPORT_WORKER_ENTRY);
	gt_cb_thread_name(cb, cpu_b, 1151, 3, "worker-b");
	return cb;
}

struct gt_cb *report_scenario_fitted_clock(void)
{
	const uint64_t start = REPORT_CLOCK_START, tick = REPORT_CLOCK_TICK;
	struct gt_cb *cb = gt_cb_new(1, 65536, start);
	cr_assert_not_null(cb);
	gt_cb_set_clock(cb, GT_CLOCK_TSC, 3000000000ull);
	gt_cb_header(cb)->start_mono_ns = 1000000000ull;
	gt_cb_thread_existing(cb, 0, start + 30, 1, 0, 0);
	for (uint64_t i = 1; i <= 10; i++)
		gt_cb_clock(cb, 0, start + tick * i, 1000000000ull + 100000000ull * i);
	return cb;
}

char *report_scenario_report(const char *capture, bool json)
{
	char *text = NULL, err[512];
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	struct gt_report_options opt = {.json = json};
	cr_assert_eq(gt_report_capture(capture, &opt, out, err, sizeof err), 0, "%s", err);
	fclose(out);
	return text;
}
