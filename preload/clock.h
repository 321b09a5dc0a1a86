/* The clock beyond the inline read (clock.c): setup, the timestamp source in force, and
 * CLOCK_MONOTONIC / CLOCK_REALTIME for clock pairs. */
#ifndef GT_CLOCK_H
#define GT_CLOCK_H

#include "fastpath.h"

enum gt_cpu_source { GT_CPU_RDTSCP = 0, GT_CPU_RSEQ = 1, GT_CPU_GETCPU = 2 };
extern int gt_clock_tsc GT_HIDDEN;           /* 1: rdtsc timestamps, 0: CLOCK_MONOTONIC ns */
extern int gt_cpu_source GT_HIDDEN;
extern uint64_t gt_tsc_hz GT_HIDDEN;
extern char gt_tsc_hz_text[24] GT_HIDDEN;    /* gt_tsc_hz in decimal when the TSC is used */
uint64_t gt_mono_ns(void) GT_HIDDEN;
uint64_t gt_real_ns(void) GT_HIDDEN;
void gt_clock_setup(void) GT_HIDDEN;

#endif
