/* reaped: when a process that recorded no end died (see encoder.h, gt_capture_reaped).  A
 * process killed by a signal it cannot handle (SIGKILL) writes no fact at its death; the
 * launcher that reaped it (gotrace run) wrote the time into its header, or its parent's
 * wait4 or waitid that returned its pid ended after it.
 * Only the parents of such processes are read, once, before the conversion or report. */
#include <stdlib.h>
#include <string.h>

#include "capture_set.h"
#include "syscalls.h"
#include "common/grow.h"
#include "encoder.h"

struct head {
	struct gt_file_header h;
	bool readable;
	bool unended;        /* no end of its own: neither finalized nor detached */
};

/* The capture of process pid, child of ppid, that a reap at mono ns ended: the latest of
 * that pid begun before it (an exec'd image's capture is followed by the next one's); -1
 * when none is, or when that one ended by itself. */
static ptrdiff_t reaped_capture(const struct head *hs, size_t n, uint32_t pid, uint32_t ppid,
				uint64_t mono)
{
	ptrdiff_t found = -1;
	for (size_t i = 0; i < n; i++)
		if (hs[i].readable && hs[i].h.pid == pid && hs[i].h.start_mono_ns < mono &&
		    (found < 0 || hs[i].h.start_mono_ns > hs[found].h.start_mono_ns))
			found = (ptrdiff_t)i;
	return found >= 0 && hs[found].unended && hs[found].h.ppid == ppid ? found : -1;
}

/* Reads parent capture j for its wait4s and waitids that returned a child's pid.  Their
 * times are put on CLOCK_MONOTONIC by the fit of all the parent's clock pairs, not at the
 * header's nominal rate: measured at a loaded start, that rate can be off by 1% (10 ms
 * over a second of the child's life). */
static void read_reaps(const struct head *hs, size_t n, size_t j, const char *path,
		       struct gt_reap *out)
{
	char err[256];
	struct gt_capture *c = gt_capture_open(path, err, sizeof err);
	if (c == NULL)
		return;
	struct gt_clock clock;
	gt_clock_init(&clock, &hs[j].h);
	struct { uint64_t tsc; uint32_t pid; } *reaps = NULL;
	size_t n_reaps = 0, cap = 0;
	struct gt_capture_record r;
	while (gt_capture_next(c, &r)) {
		const struct gt_p_syscall_end *e = r.payload;
		if (r.rec->type == GT_CLOCK && r.tsc == r.rec->tsc) {
			gt_clock_add_pair(&clock, r.rec->tsc, ((const struct gt_p_clock *)r.payload)->mono_ns);
			continue;
		}
		if (r.rec->type != GT_SYSCALL_END || r.payload_len < sizeof *e ||
		    (e->nr != GT_SYS_wait4 && e->nr != GT_SYS_waitid) || e->err != 0 || e->result <= 0 ||
		    e->result > UINT32_MAX || !gt_grow(&reaps, &cap, n_reaps + 1, sizeof *reaps))
			continue;
		reaps[n_reaps].tsc = r.tsc;
		reaps[n_reaps++].pid = (uint32_t)e->result;
	}
	gt_capture_close(c);
	for (size_t k = 0; k < n_reaps; k++) {
		uint64_t mono = hs[j].h.start_mono_ns +
				gt_clock_fitted_ns(&clock, gt_clock_ns(&clock, reaps[k].tsc));
		ptrdiff_t i = reaped_capture(hs, n, reaps[k].pid, hs[j].h.pid, mono);
		/* the parent's timestamp, on the child's clock when they share it */
		if (i >= 0 && out[i].mono_ns == 0)
			out[i] = (struct gt_reap){ .mono_ns = mono,
				.tsc = hs[i].h.clock_source == hs[j].h.clock_source ? reaps[k].tsc : 0 };
	}
	free(reaps);
}

/* The reap gotrace noted in header h; its pair only when it agrees with the header's rate
 * within 1% (as the clock fit's own bound), so that a damaged header cannot bend the fit. */
static struct gt_reap header_reap(const struct gt_file_header *h)
{
	struct gt_reap r = { .mono_ns = h->reaped_mono_ns };
	struct gt_clock clock;
	gt_clock_init(&clock, h);
	double span = (double)(h->reaped_mono_ns - h->start_mono_ns);
	double off = (double)gt_clock_ns(&clock, h->reaped_tsc) - span;
	if (h->reaped_tsc > h->start_tsc && off < span / 100 + 1e6 && -off < span / 100 + 1e6) {
		r.tsc = h->reaped_tsc;
		r.pair = true;
	}
	return r;
}

struct gt_reap *gt_capture_reaped(const char *const *paths, size_t n)
{
	struct head *hs = calloc(n + 1, sizeof *hs);
	struct gt_reap *out = calloc(n + 1, sizeof *out);
	if (hs == NULL || out == NULL) {
		free(hs);
		free(out);
		return NULL;
	}
	bool any = false;
	struct gt_capture_set *set = gt_capture_set_open(paths, n);   /* the headers alone */
	for (size_t k = 0; set != NULL && k < n; k++) {
		const struct gt_file_header *h = gt_capture_set_header(set, k);
		size_t i = 0;
		while (i < n && strcmp(paths[i], gt_capture_set_path(set, k)) != 0)
			i++;
		if (h == NULL || i == n)
			continue;
		hs[i].h = *h;
		hs[i].readable = true;
		hs[i].unended = !(h->flags & (GT_FILE_FINALIZED | GT_FILE_DETACHED));
		if (hs[i].unended && h->reaped_mono_ns > h->start_mono_ns)   /* gotrace reaped it */
			out[i] = header_reap(h);
		else
			any |= hs[i].unended;
	}
	gt_capture_set_close(set);
	for (size_t j = 0; any && j < n; j++) {
		bool parent = false;
		for (size_t i = 0; hs[j].readable && i < n && !parent; i++)
			parent = hs[i].unended && !out[i].mono_ns && hs[i].h.ppid == hs[j].h.pid &&
				 i != j;
		if (parent)
			read_reaps(hs, n, j, paths[j], out);
	}
	free(hs);
	return out;
}
