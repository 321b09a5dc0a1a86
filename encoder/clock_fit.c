/* clock_fit: see clock_fit.h. */
#include "clock_fit.h"

#include <stdlib.h>

void gt_clock_init(struct gt_clock *c, const struct gt_file_header *h)
{
	*c = (struct gt_clock){
		.start_tsc = h->start_tsc,
		.tsc_hz = h->clock_source == GT_CLOCK_MONOTONIC ? 0 : h->tsc_hz,
	};
	if (h->clock_source != GT_CLOCK_MONOTONIC)
		gt_clock_add_pair(c, h->start_tsc, h->start_mono_ns);
}

void gt_clock_add_pair(struct gt_clock *c, uint64_t tsc, uint64_t mono_ns)
{
	if (!c->n) {
		c->tsc0 = tsc;
		c->mono0 = mono_ns;
	}
	double x = (double)(int64_t)(tsc - c->tsc0), y = (double)(int64_t)(mono_ns - c->mono0);
	c->n += 1;
	c->sx += x;
	c->sy += y;
	c->sxx += x * x;
	c->sxy += x * y;
}

/* |tsc - start| in nanoseconds at the nominal rate. */
static uint64_t span_ns(const struct gt_clock *c, uint64_t span)
{
	if (!c->tsc_hz)
		return span;
	return (uint64_t)((unsigned __int128)span * 1000000000u / c->tsc_hz);
}

uint64_t gt_clock_ticks(const struct gt_clock *c, uint64_t tsc)
{
	if (tsc >= c->start_tsc)
		return GT_CLOCK_TICKS_OFFSET + span_ns(c, tsc - c->start_tsc);
	uint64_t back = span_ns(c, c->start_tsc - tsc);
	return back < GT_CLOCK_TICKS_OFFSET ? GT_CLOCK_TICKS_OFFSET - back : 0;
}

uint64_t gt_clock_ns(const struct gt_clock *c, uint64_t tsc)
{
	return tsc > c->start_tsc ? span_ns(c, tsc - c->start_tsc) : 0;
}

uint64_t gt_clock_frequency(const struct gt_clock *c)
{
	if (!c->tsc_hz || c->n < 2)
		return 1000000000u;
	double den = c->n * c->sxx - c->sx * c->sx;
	if (den <= 0)
		return 1000000000u;
	double ns_per_tick = (c->n * c->sxy - c->sx * c->sy) / den;
	if (ns_per_tick <= 0)
		return 1000000000u;
	double ratio = 1e9 / ns_per_tick / (double)c->tsc_hz;
	if (ratio < 0.99 || ratio > 1.01)   /* a bad fit: trust the header */
		return 1000000000u;
	return (uint64_t)(1e9 * ratio + 0.5);
}

uint64_t gt_clock_fitted_ns(const struct gt_clock *c, uint64_t nominal_ns)
{
	uint64_t hz = gt_clock_frequency(c);
	if (hz == 1000000000u)
		return nominal_ns;
	return (uint64_t)((unsigned __int128)nominal_ns * 1000000000u / hz);
}

uint64_t gt_clock_pairs_tsc(const struct gt_clock_pair *p, size_t n, uint64_t tsc_hz,
			    uint64_t mono_ns, size_t *at)
{
	if (!n || !tsc_hz)
		return mono_ns;
	double d = (double)(int64_t)(mono_ns - p[0].mono_ns), ticks_per_ns = (double)tsc_hz / 1e9;
	if (n == 1)
		return p[0].tsc + (uint64_t)(int64_t)(d * ticks_per_ns);
	size_t i = *at < n - 1 ? *at : 0;
	if (p[i].mono_ns > mono_ns)
		i = 0;
	while (i + 2 < n && p[i + 1].mono_ns <= mono_ns)
		i++;
	*at = i;
	const struct gt_clock_pair *a = &p[i], *b = &p[i + 1];
	ticks_per_ns = (double)(b->tsc - a->tsc) / (double)(b->mono_ns - a->mono_ns);
	d = (double)(int64_t)(mono_ns - a->mono_ns);
	return a->tsc + (uint64_t)(int64_t)(d * ticks_per_ns);
}

static int pair_by_mono(const void *a, const void *b)
{
	const struct gt_clock_pair *x = a, *y = b;
	return x->mono_ns < y->mono_ns ? -1 : x->mono_ns > y->mono_ns;
}

size_t gt_clock_pairs_prepare(struct gt_clock_pair *p, size_t n)
{
	qsort(p, n, sizeof *p, pair_by_mono);
	size_t kept = 0;
	for (size_t i = 0; i < n; i++)
		if (!kept || p[i].mono_ns - p[kept - 1].mono_ns >= 10000000u || i == n - 1)
			p[kept++] = p[i];
	if (kept >= 3 && p[kept - 1].mono_ns - p[kept - 2].mono_ns < 10000000u) {
		p[kept - 2] = p[kept - 1];   /* the last pair is kept, not one just before it */
		kept--;
	}
	/* A pair whose reading was interrupted between its counter and its clock has its
	 * CLOCK_MONOTONIC late: more than a microsecond after the line of its neighbours, it
	 * is left out. */
	size_t good = kept ? 1 : 0;
	for (size_t i = 1; i + 1 < kept; i++) {
		const struct gt_clock_pair *a = &p[good - 1], *b = &p[i + 1];
		double at = (double)a->mono_ns + (double)(p[i].tsc - a->tsc) *
						 (double)(b->mono_ns - a->mono_ns) / (double)(b->tsc - a->tsc);
		if ((double)p[i].mono_ns - at <= 1000)
			p[good++] = p[i];
	}
	if (kept > 1)
		p[good++] = p[kept - 1];
	return good;
}
