/* clock_fit: a CLOCK_MONOTONIC time (the kernel's scheduling records) back onto a capture's
 * clock, through the clock pairs' fit: the inverse of what the pairs say. */
#include "clock_fit.h"

#include <criterion/criterion.h>

#define HZ 2600000000ull            /* the header's nominal rate */
#define START_TSC 5000000000000ull
#define START_MONO 7000000000ull

static struct gt_clock counter_clock(void)
{
	struct gt_file_header h = {
		.clock_source = GT_CLOCK_TSC, .tsc_hz = HZ, .start_tsc = START_TSC,
		.start_mono_ns = START_MONO,
	};
	struct gt_clock c;
	gt_clock_init(&c, &h);
	return c;
}

/* tsc at mono_ns on a counter that really runs at hz (the header says HZ) */
static uint64_t true_tsc(double hz, uint64_t mono_ns)
{
	return START_TSC + (uint64_t)((double)(mono_ns - START_MONO) * hz / 1e9);
}

Test(clock_fit, mono_to_tsc_at_the_header_rate_before_any_pair)
{
	struct gt_clock c = counter_clock();
	uint64_t mono = START_MONO + 1000000000ull;   /* 1 s later */
	cr_assert_eq(gt_clock_tsc_of_mono(&c, mono), START_TSC + HZ);
	cr_assert_eq(gt_clock_tsc_of_mono(&c, START_MONO), START_TSC);
}

Test(clock_fit, mono_to_tsc_follows_the_fitted_rate_within_a_microsecond)
{
	struct gt_clock c = counter_clock();
	double hz = (double)HZ * 1.0004;    /* the counter runs 0.04% faster than the header says */
	for (uint64_t k = 1; k <= 20; k++) {
		uint64_t mono = START_MONO + k * 50000000ull;
		gt_clock_add_pair(&c, true_tsc(hz, mono), mono);
	}
	for (uint64_t ms = 0; ms <= 1500; ms += 250) {
		uint64_t mono = START_MONO + ms * 1000000ull;
		double err_ns = ((double)gt_clock_tsc_of_mono(&c, mono) - (double)true_tsc(hz, mono)) /
				hz * 1e9;
		cr_assert(err_ns > -1000 && err_ns < 1000, "at %llu ms: %.0f ns off",
			  (unsigned long long)ms, err_ns);
	}
	/* and it is the inverse of the capture's ticks: fitted ns between two instants */
	uint64_t a = gt_clock_tsc_of_mono(&c, START_MONO + 100000000ull);
	uint64_t b = gt_clock_tsc_of_mono(&c, START_MONO + 600000000ull);
	uint64_t fitted = gt_clock_fitted_ns(&c, gt_clock_ticks(&c, b) - gt_clock_ticks(&c, a));
	cr_assert(fitted > 500000000ull - 1000 && fitted < 500000000ull + 1000, "%llu ns",
		  (unsigned long long)fitted);
}

Test(clock_fit, monotonic_captures_are_their_own_clock)
{
	struct gt_file_header h = {
		.clock_source = GT_CLOCK_MONOTONIC, .tsc_hz = 1000000000u, .start_tsc = START_MONO,
		.start_mono_ns = START_MONO,
	};
	struct gt_clock c;
	gt_clock_init(&c, &h);
	cr_assert_eq(gt_clock_tsc_of_mono(&c, START_MONO + 12345), START_MONO + 12345);
}
