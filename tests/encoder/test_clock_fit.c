/* clock_fit: a CLOCK_MONOTONIC time (the kernel's scheduling records) back onto a capture's
 * clock, through the capture's clock pairs. */
#include "encoder/clock_fit.h"

#include <criterion/criterion.h>

#define HZ 2600000000ull            /* the header's nominal rate (a start-up estimate) */
#define START_TSC 5000000000000ull
#define START_MONO 7000000000ull

/* tsc at mono_ns on a counter that really runs at hz */
static uint64_t true_tsc(double hz, uint64_t mono_ns)
{
	return START_TSC + (uint64_t)((double)(int64_t)(mono_ns - START_MONO) * hz / 1e9);
}

Test(clock_fit, one_pair_at_the_header_rate_none_is_the_same_clock)
{
	struct gt_clock_pair p = {START_TSC, START_MONO};
	size_t at = 0;
	cr_assert_eq(gt_clock_pairs_tsc(&p, 1, HZ, START_MONO + 1000000000ull, &at), START_TSC + HZ);
	cr_assert_eq(gt_clock_pairs_tsc(&p, 1, HZ, START_MONO, &at), START_TSC);
	/* a GT_CLOCK_MONOTONIC capture: its timestamps are CLOCK_MONOTONIC */
	cr_assert_eq(gt_clock_pairs_tsc(NULL, 0, 0, START_MONO + 12345, &at), START_MONO + 12345);
}

/* The counter runs 0.1% faster than the header says, and its rate drifts by 0.01% from one
 * pair to the next: between pairs and beyond them, within a microsecond. */
Test(clock_fit, between_pairs_within_a_microsecond)
{
	struct gt_clock_pair p[6];
	double hz[6];
	p[0] = (struct gt_clock_pair){START_TSC, START_MONO};
	for (size_t k = 0; k < 6; k++)
		hz[k] = (double)HZ * (1.001 + 0.0001 * (double)k);
	for (size_t k = 1; k < 6; k++) {
		uint64_t mono = START_MONO + k * 100000000ull;   /* one every 100 ms */
		p[k] = (struct gt_clock_pair){p[k - 1].tsc + (uint64_t)(hz[k - 1] / 10), mono};
	}
	size_t at = 0;
	for (uint64_t ms = 0; ms <= 560; ms += 7) {
		uint64_t mono = START_MONO + ms * 1000000ull;
		size_t k = ms / 100 < 5 ? ms / 100 : 4;   /* its segment (the last one extended) */
		double want = (double)p[k].tsc + (double)(mono - p[k].mono_ns) * hz[k] / 1e9;
		double err_ns = ((double)gt_clock_pairs_tsc(p, 6, HZ, mono, &at) - want) / hz[k] * 1e9;
		cr_assert(err_ns > -1000 && err_ns < 1000, "at %llu ms: %.0f ns off",
			  (unsigned long long)ms, err_ns);
	}
	/* out of order too (the search starts over) */
	uint64_t mono = START_MONO + 50000000ull;
	double err = (double)gt_clock_pairs_tsc(p, 6, HZ, mono, &at) - (double)true_tsc(hz[0], mono);
	cr_assert(err > -3000 && err < 3000, "%.0f ticks off", err);
}

/* Pairs sorted, thinned to some 10 ms apart (first and last kept), and a pair read late
 * (its clock taken 40 us after its counter: the reader was preempted) left out. */
Test(clock_fit, pairs_prepared_without_one_read_late)
{
	struct gt_clock_pair p[8];
	double hz = (double)HZ;
	uint64_t ms[8] = { 0, 3, 30, 60, 61, 90, 120, 125 };
	for (size_t k = 0; k < 8; k++) {
		uint64_t mono = START_MONO + ms[7 - k] * 1000000ull;   /* given newest first */
		p[k] = (struct gt_clock_pair){true_tsc(hz, mono), mono};
	}
	p[7 - 5].mono_ns += 40000;   /* the one at 90 ms was read late */
	size_t n = gt_clock_pairs_prepare(p, 8, HZ);
	uint64_t want[] = { 0, 30, 60, 125 };
	cr_assert_eq(n, 4, "%zu pairs kept", n);
	for (size_t k = 0; k < n; k++)
		cr_assert_eq(p[k].mono_ns, START_MONO + want[k] * 1000000ull, "pair %zu at %llu ms", k,
			     (unsigned long long)((p[k].mono_ns - START_MONO) / 1000000));
	/* and times near it are on the line */
	size_t at = 0;
	uint64_t mono = START_MONO + 90000000ull;
	double err = (double)gt_clock_pairs_tsc(p, n, HZ, mono, &at) - (double)true_tsc(hz, mono);
	cr_assert(err > -3000 && err < 3000, "%.0f ticks off", err);
}

/* The pairs at both ends read late (each clock taken after an interruption): the header's
 * 2.7 ms late with a good pair 0.74 ms after it, the last one 50 us late.  The good pair
 * stands for the first 10 ms, the late last one is left out, and the whole run maps within
 * a microsecond (before: 2.7 ms off at the start, tens of us at the end). */
Test(clock_fit, late_pairs_at_both_ends_are_left_out)
{
	double hz = (double)HZ * 1.0005; /* the counter runs 500 ppm faster than nominal */
	struct gt_clock_pair p[16];
	size_t n = 0;
	uint64_t header = START_MONO;
	p[n++] = (struct gt_clock_pair){true_tsc(hz, header), header + 2700000};
	p[n++] = (struct gt_clock_pair){true_tsc(hz, header + 740000), header + 740000};
	for (uint64_t ms = 20; ms <= 200; ms += 20)
		p[n++] = (struct gt_clock_pair){true_tsc(hz, header + ms * 1000000),
						header + ms * 1000000};
	uint64_t last = header + 205000000;
	p[n++] = (struct gt_clock_pair){true_tsc(hz, last), last + 50000};
	n = gt_clock_pairs_prepare(p, n, HZ);
	cr_assert_eq(p[0].mono_ns, header + 740000, "the first pair kept is the good one");
	cr_assert_eq(p[n - 1].mono_ns, header + 200000000, "the late last pair is left out");
	size_t at = 0;
	for (uint64_t mono = header; mono <= last; mono += 1000000) {
		double err = ((double)gt_clock_pairs_tsc(p, n, HZ, mono, &at) -
			      (double)true_tsc(hz, mono)) / hz * 1e9;
		cr_assert(err > -1000 && err < 1000, "%.0f ns off at %.1f ms", err,
			  (double)(mono - header) / 1e6);
	}
}
