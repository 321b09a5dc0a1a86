/* The threads both hand-written report captures start with (test_report_counts.c,
 * test_trace_report.c). */
#ifndef GT_TESTS_CLI_REPORT_SCENARIO_H
#define GT_TESTS_CLI_REPORT_SCENARIO_H

#include "capture_builder.h"

#include <stdbool.h>
#include <stdint.h>

#define REPORT_WORKER_ENTRY 0x401000u

/* A capture of n_cpus CPUs clocked in ns from 1000: thread 1 already running on CPU 0;
 * stack 1 = {0x401100, 0x401200}, stack 2 = {0x401300, 0x401200}; thread 1 creates
 * threads 2 and 3 at 1010 and 1020 (start routine REPORT_WORKER_ENTRY), which start as
 * "worker-a" (tid 102) on cpu_a at 1100 and "worker-b" (tid 103) on cpu_b at 1150. */
struct gt_cb *report_scenario_threads(uint32_t n_cpus, uint32_t cpu_a, uint32_t cpu_b);

/* A capture of one CPU whose counter runs at a nominal 3 GHz from REPORT_CLOCK_START while
 * its clock pairs (one every REPORT_CLOCK_TICK, 10 of them) say 2.97 GHz: a tick is 100 ms,
 * not 99.  Thread 1 exists from the start. */
#define REPORT_CLOCK_START 3000000000ull
#define REPORT_CLOCK_TICK 297000000ull
struct gt_cb *report_scenario_fitted_clock(void);

/* `gotrace report [--json] capture` as text (malloc'd), asserting it succeeded. */
char *report_scenario_report(const char *capture, bool json);

#endif
