/* clock_fit: capture timestamps → nanoseconds, shared by the model (trace ticks) and the
 * report.  Timestamps are converted at the header's nominal rate (tsc_hz) in one pass; the
 * GT_CLOCK pairs are fitted as they stream by, and the fit corrects the result at the end:
 * as the trace's Frequency, or by gt_clock_fitted_ns on a duration.  GT_CLOCK_MONOTONIC
 * captures (and headers without a rate) are exact nanoseconds and never corrected. */
#ifndef GOTRACE_CLOCK_FIT_H
#define GOTRACE_CLOCK_FIT_H

#include <gotrace/capture.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "encoder.h"

/* A clock pair: a capture timestamp and CLOCK_MONOTONIC at that instant. */
struct gt_clock_pair {
	uint64_t tsc, mono_ns;
};
/* The capture timestamp of a CLOCK_MONOTONIC instant (the kernel's scheduling records):
 * interpolated between the pairs around it (p: n pairs sorted by mono_ns, best some 10 ms
 * apart: their jitter, a few hundred ns, then bends the rate little), extrapolated along
 * the nearest two; at tsc_hz from one pair (a start-up estimate 0.1% off puts a microsecond
 * between two events a millisecond apart); mono_ns itself without pairs or rate (a
 * GT_CLOCK_MONOTONIC capture).  *at: the segment the last call ended in (0 at first), for
 * times asked in order. */
uint64_t gt_clock_pairs_tsc(const struct gt_clock_pair *p, size_t n, uint64_t tsc_hz,
			    uint64_t mono_ns, size_t *at);
/* Makes n pairs ready for gt_clock_pairs_tsc and returns how many are kept: sorted, some
 * 10 ms apart (of each 10 ms the least late at the nominal rate tsc_hz; the last when it is
 * not late), and without those read late (interrupted between counter and clock: their
 * clock more than 1 us after their neighbours' line; the first and the last more than 3 us
 * after the line of the two beside them). */
size_t gt_clock_pairs_prepare(struct gt_clock_pair *p, size_t n, uint64_t tsc_hz);

#endif
