/* report_scenario: see report_scenario.h. */
#include "report_scenario.h"

#include <criterion/criterion.h>

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
