/* The clock beyond the inline read (clock.c): setup, the timestamp source in force, and
 * CLOCK_MONOTONIC / CLOCK_REALTIME for clock pairs. */
#ifndef GT_CLOCK_H
#define GT_CLOCK_H

#include "fastpath.h"

/* the clock in force: gt_clock (fastpath.h) */
enum gt_cpu_source { GT_CPU_RDTSCP = 0, GT_CPU_RSEQ = 1, GT_CPU_GETCPU = 2 };
uint64_t gt_mono_ns(void) GT_HIDDEN;
uint64_t gt_real_ns(void) GT_HIDDEN;
/* the capture's clock and CLOCK_MONOTONIC at one instant, for clock pairs */
void gt_clock_pair(uint64_t *tsc, uint64_t *mono_ns) GT_HIDDEN;
void gt_clock_setup(void) GT_HIDDEN;

#endif
