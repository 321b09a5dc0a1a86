/* clock_fit: see clock_fit.h. */
#include "clock_fit.h"

#include <stdlib.h>
#include <string.h>

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

/* How much later than p's clock q's reads, against the nominal rate: positive when q was read
 * late (interrupted between its counter and its clock) or p early.  Over the 10 ms a group
 * spans, a rate off by 100 ppm moves it by a microsecond. */
static double later_than(const struct gt_clock_pair *p, const struct gt_clock_pair *q,
			 double ns_per_tick)
{
	return (double)(int64_t)(q->mono_ns - p->mono_ns) -
	       (double)(int64_t)(q->tsc - p->tsc) * ns_per_tick;
}

/* How much later than the line through a and b pair p's clock reads (a and b on either side,
 * or both on one side of p: the line extended) */
static double later_than_line(const struct gt_clock_pair *a, const struct gt_clock_pair *b,
			      const struct gt_clock_pair *p)
{
	double at = (double)a->mono_ns + (double)(int64_t)(p->tsc - a->tsc) *
						 (double)(b->mono_ns - a->mono_ns) /
						 (double)(b->tsc - a->tsc);
	return (double)p->mono_ns - at;
}

size_t gt_clock_pairs_prepare(struct gt_clock_pair *p, size_t n, uint64_t tsc_hz)
{
	qsort(p, n, sizeof *p, pair_by_mono);
	double ns_per_tick = tsc_hz ? 1e9 / (double)tsc_hz : 1.0;
	/* one pair per 10 ms: the least late of each group (the last pair, unless it is) */
	size_t kept = 0;
	uint64_t group = 0;
	for (size_t i = 0; i < n; i++) {
		if (kept && p[i].mono_ns - group < 10000000u) {
			double d = later_than(&p[kept - 1], &p[i], ns_per_tick);
			if (d < -1000 || (i == n - 1 && d <= 1000))
				p[kept - 1] = p[i];
			continue;
		}
		group = p[i].mono_ns;
		p[kept++] = p[i];
	}
	/* A pair whose reading was interrupted between its counter and its clock has its
	 * CLOCK_MONOTONIC late: more than a microsecond after the line of its neighbours, it
	 * is left out. */
	size_t good = kept ? 1 : 0;
	for (size_t i = 1; i + 1 < kept; i++)
		if (later_than_line(&p[good - 1], &p[i + 1], &p[i]) <= 1000)
			p[good++] = p[i];
	if (kept > 1)
		p[good++] = p[kept - 1];
	/* the first and the last against the line of the two beside them, extended (3 us: the
	 * line's own error over 10 ms or more) */
	if (good >= 4 && later_than_line(&p[1], &p[2], &p[0]) > 3000) {
		memmove(p, p + 1, --good * sizeof *p);
	}
	if (good >= 4 && later_than_line(&p[good - 3], &p[good - 2], &p[good - 1]) > 3000)
		good--;
	return good;
}
