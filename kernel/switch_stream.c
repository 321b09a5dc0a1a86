/* switch_stream: a kernel file's switches and exits in time order, read as they are asked
 * for (reader.h).  The file holds each CPU ring's drains one after the other, each in time
 * order; one walk finds the stretches in time order (runs), and a heap merges them by (time,
 * place in the file): the order gt_kernel_switches sorts into, without holding the switches
 * (32 bytes each: 100 MB for a churn of a million threads). */
#include "reader.h"

#include "common/grow.h"

#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

/* How much of a run is read before its pages are given back (a page another run shares is
 * read in again when needed). */
#define GIVE_BACK_BYTES (1u << 20)

/* A stretch [off, end) of the records whose switches are in time order. */
struct run {
	size_t off, end;             /* the next record to read, the end */
	size_t given_back;           /* records before it: their pages given back */
	struct gt_kernel_switch head;    /* its next switch, at head_off */
	size_t head_off;
};

struct gt_kernel_switch_stream {
	struct gt_kernel_file f;
	struct run *runs;
	size_t n_runs, cap_runs;
	uint32_t *heap;              /* runs with a head, the earliest first */
	size_t n_heap;
	uint64_t last_time;          /* while the runs are found: the last switch's */
	bool failed;                 /* out of memory */
};

static void find_runs(uint32_t type, uint16_t misc, const struct gt_kernel_id *id, void *ctx)
{
	struct gt_kernel_switch_stream *s = ctx;
	struct gt_kernel_switch sw;
	if (s->failed || !gt_kernel_switch_of(type, misc, id, &sw))
		return;
	if (s->n_runs && id->time >= s->last_time) {
		s->last_time = id->time;
		return;
	}
	if (!gt_grow(&s->runs, &s->cap_runs, s->n_runs + 1, sizeof *s->runs)) {
		s->failed = true;
		return;
	}
	if (s->n_runs)
		s->runs[s->n_runs - 1].end = id->offset;
	s->runs[s->n_runs++] = (struct run){.off = id->offset, .end = s->f.records_len,
					    .given_back = id->offset};
	s->last_time = id->time;
}

/* Gives back the pages of r's records read so far (all: at its end). */
static void give_back(const struct gt_kernel_switch_stream *s, struct run *r, bool all)
{
	if (!all && r->off - r->given_back < GIVE_BACK_BYTES)
		return;
	gt_kernel_give_back(&s->f, r->given_back, r->off);
	r->given_back = r->off;
}

/* Reads r's next switch into its head; false at its end. */
static bool run_next(const struct gt_kernel_switch_stream *s, struct run *r)
{
	while (r->off < r->end) {
		struct perf_event_header h;
		struct gt_kernel_id id;
		bool has_id;
		if (!gt_kernel_record_at(&s->f, r->off, &h, &id, &has_id))
			break;
		size_t at = r->off;
		r->off += h.size;
		if (has_id && gt_kernel_switch_of(h.type, h.misc, &id, &r->head)) {
			r->head_off = at;
			give_back(s, r, false);
			return true;
		}
	}
	r->off = r->end;
	give_back(s, r, true);
	return false;
}

static bool earlier(const struct gt_kernel_switch_stream *s, uint32_t a, uint32_t b)
{
	const struct run *x = &s->runs[a], *y = &s->runs[b];
	if (x->head.time != y->head.time)
		return x->head.time < y->head.time;
	return x->head_off < y->head_off;
}

static void sift_down(struct gt_kernel_switch_stream *s, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, r = l + 1, m = i;
		if (l < s->n_heap && earlier(s, s->heap[l], s->heap[m]))
			m = l;
		if (r < s->n_heap && earlier(s, s->heap[r], s->heap[m]))
			m = r;
		if (m == i)
			return;
		uint32_t t = s->heap[i];
		s->heap[i] = s->heap[m];
		s->heap[m] = t;
		i = m;
	}
}

struct gt_kernel_switch_stream *gt_kernel_switch_stream_open(const char *path, char *err,
							     size_t err_size)
{
	struct gt_kernel_switch_stream *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, err_size, "%s: out of memory", path);
		return NULL;
	}
	if (gt_kernel_open(path, &s->f, err, err_size) != 0) {
		free(s);
		return NULL;
	}
	struct gt_kernel_counts c;
	gt_kernel_walk(&s->f, find_runs, NULL, s, &c);
	s->heap = s->n_runs ? calloc(s->n_runs, sizeof *s->heap) : NULL;
	if (s->failed || (s->n_runs && !s->heap)) {
		snprintf(err, err_size, "%s: out of memory", path);
		gt_kernel_switch_stream_close(s);
		return NULL;
	}
	for (size_t i = 0; i < s->n_runs; i++)
		if (run_next(s, &s->runs[i]))
			s->heap[s->n_heap++] = (uint32_t)i;
	for (size_t i = s->n_heap / 2; i-- > 0;)
		sift_down(s, i);
	return s;
}

bool gt_kernel_switch_stream_next(struct gt_kernel_switch_stream *s, struct gt_kernel_switch *out)
{
	if (!s->n_heap)
		return false;
	struct run *r = &s->runs[s->heap[0]];
	*out = r->head;
	if (!run_next(s, r))
		s->heap[0] = s->heap[--s->n_heap];
	sift_down(s, 0);
	return true;
}

void gt_kernel_switch_stream_close(struct gt_kernel_switch_stream *s)
{
	if (!s)
		return;
	gt_kernel_close(&s->f);
	free(s->runs);
	free(s->heap);
	free(s);
}
