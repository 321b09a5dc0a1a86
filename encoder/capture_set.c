/* capture_set: see capture_set.h. */
#include "capture_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

struct member {
	const char *path;
	struct gt_file_header h;
	bool readable;
	char err[256];
	uint64_t file_bytes;
	struct gt_capture *c;        /* open while it has records to give */
	bool opened, ended;
	bool same_clock;             /* its timestamps are on capture 0's clock as they are */
	uint64_t start_key;          /* its start on capture 0's clock: when to open it */
	uint64_t key;                /* tsc of its next record (while in the heap) */
	struct gt_capture_stats stats;
	bool truncated;
};

struct gt_capture_set {
	struct member *m;            /* in start order */
	size_t n;
	size_t next_open;            /* the first member not opened yet */
	uint32_t *heap;              /* open members with a next record, by key */
	size_t n_heap;
	uint32_t last;               /* member of the record delivered last */
	bool last_pending;           /* it is to be put back in the heap (or ended) */
	uint64_t base_tsc, base_mono, base_hz;
};

static int by_start(const void *a, const void *b)
{
	const struct member *x = a, *y = b;
	if (x->readable != y->readable)
		return x->readable ? -1 : 1;
	if (x->h.start_mono_ns != y->h.start_mono_ns)
		return x->h.start_mono_ns < y->h.start_mono_ns ? -1 : 1;
	return x < y ? -1 : x > y;   /* stable: given order */
}

static uint64_t hz_of(const struct gt_file_header *h)
{
	return h->clock_source == GT_CLOCK_MONOTONIC || !h->tsc_hz ? 1000000000u : h->tsc_hz;
}

/* A timestamp of member x on capture 0's clock: through CLOCK_MONOTONIC and both pairs. */
static uint64_t to_base(const struct gt_capture_set *s, const struct member *x, uint64_t tsc)
{
	if (x->same_clock)
		return tsc;
	__int128 mono = (__int128)x->h.start_mono_ns +
			((__int128)tsc - (__int128)x->h.start_tsc) * 1000000000 / hz_of(&x->h);
	__int128 t = (__int128)s->base_tsc +
		     (mono - (__int128)s->base_mono) * (__int128)s->base_hz / 1000000000;
	return t < 0 ? 0 : (uint64_t)t;
}

struct gt_capture_set *gt_capture_set_open(const char *const *paths, size_t n)
{
	struct gt_capture_set *s = calloc(1, sizeof *s);
	if (!s || !(s->m = calloc(n ? n : 1, sizeof *s->m)) ||
	    !(s->heap = calloc(n ? n : 1, sizeof *s->heap))) {
		gt_capture_set_close(s);
		return NULL;
	}
	s->n = n;
	for (size_t i = 0; i < n; i++) {
		struct member *x = &s->m[i];
		x->path = paths[i];
		struct gt_capture *c = gt_capture_open(paths[i], x->err, sizeof x->err);
		if (!c)
			continue;
		x->h = *gt_capture_header(c);
		x->readable = true;
		gt_capture_close(c);
		struct stat st;
		if (stat(paths[i], &st) == 0)
			x->file_bytes = (uint64_t)st.st_size;
	}
	qsort(s->m, n, sizeof *s->m, by_start);
	if (n && s->m[0].readable) {
		s->base_tsc = s->m[0].h.start_tsc;
		s->base_mono = s->m[0].h.start_mono_ns;
		s->base_hz = hz_of(&s->m[0].h);
	}
	for (size_t i = 0; i < n; i++) {
		struct member *x = &s->m[i];
		x->same_clock = x->h.clock_source == s->m[0].h.clock_source;
		x->start_key = to_base(s, x, x->h.start_tsc);
		if (!x->readable) {
			x->opened = x->ended = true;
		}
	}
	return s;
}

size_t gt_capture_set_count(const struct gt_capture_set *s)
{
	return s->n;
}

const char *gt_capture_set_path(const struct gt_capture_set *s, size_t i)
{
	return s->m[i].path;
}

const struct gt_file_header *gt_capture_set_header(const struct gt_capture_set *s, size_t i)
{
	return s->m[i].readable ? &s->m[i].h : NULL;
}

const char *gt_capture_set_error(const struct gt_capture_set *s, size_t i)
{
	return s->m[i].readable ? NULL : s->m[i].err;
}

static bool heap_less(const struct gt_capture_set *s, uint32_t a, uint32_t b)
{
	/* ties: the earlier capture first, so that a parent's fork precedes its child */
	return s->m[a].key < s->m[b].key || (s->m[a].key == s->m[b].key && a < b);
}

static void heap_push(struct gt_capture_set *s, uint32_t x)
{
	size_t i = s->n_heap++;
	while (i && heap_less(s, x, s->heap[(i - 1) / 2])) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = x;
}

static uint32_t heap_pop(struct gt_capture_set *s)
{
	uint32_t top = s->heap[0], x = s->heap[--s->n_heap];
	size_t i = 0;
	for (;;) {
		size_t k = 2 * i + 1;
		if (k >= s->n_heap)
			break;
		if (k + 1 < s->n_heap && heap_less(s, s->heap[k + 1], s->heap[k]))
			k++;
		if (!heap_less(s, s->heap[k], x))
			break;
		s->heap[i] = s->heap[k];
		i = k;
	}
	if (s->n_heap)
		s->heap[i] = x;
	return top;
}

/* Member x's next record goes into the heap; false when it has none (it has ended). */
static bool requeue(struct gt_capture_set *s, uint32_t x)
{
	struct member *m = &s->m[x];
	struct gt_capture_record r;
	if (m->c && gt_capture_peek(m->c, 0, &r)) {
		m->key = to_base(s, m, r.tsc);
		heap_push(s, x);
		return true;
	}
	if (m->c) {
		gt_capture_stats(m->c, &m->stats);
		m->truncated = gt_capture_truncated(m->c);
		gt_capture_close(m->c);
		m->c = NULL;
	}
	m->ended = true;
	return false;
}

enum gt_set_event gt_capture_set_next(struct gt_capture_set *s, struct gt_capture_record *out,
				      uint32_t *index)
{
	if (s->last_pending) {
		s->last_pending = false;
		if (!requeue(s, s->last)) {
			*index = s->last;
			return GT_SET_ENDED;
		}
	}
	/* open every capture that began before the next record */
	while (s->next_open < s->n &&
	       (!s->n_heap || s->m[s->next_open].start_key <= s->m[s->heap[0]].key)) {
		uint32_t x = (uint32_t)s->next_open++;
		struct member *m = &s->m[x];
		if (m->opened)
			continue;
		m->opened = true;
		m->c = gt_capture_open(m->path, m->err, sizeof m->err);
		if (!m->c) {
			/* gone or changed since its header was read */
			m->readable = false;
			m->ended = true;
			continue;
		}
		if (!requeue(s, x)) {
			*index = x;
			return GT_SET_ENDED;
		}
	}
	if (!s->n_heap)
		return GT_SET_DONE;
	uint32_t x = heap_pop(s);
	struct member *m = &s->m[x];
	gt_capture_next(m->c, out);
	out->tsc = m->key;
	out->capture = x;
	s->last = x;
	s->last_pending = true;
	*index = x;
	return GT_SET_RECORD;
}

struct gt_capture *gt_capture_set_reader(struct gt_capture_set *s, uint32_t i)
{
	return i < s->n ? s->m[i].c : NULL;
}

void gt_capture_set_stats(const struct gt_capture_set *s, size_t i, struct gt_capture_stats *out,
			  bool *truncated)
{
	const struct member *m = &s->m[i];
	if (m->c) {
		gt_capture_stats(m->c, out);
		*truncated = gt_capture_truncated(m->c);
	} else {
		*out = m->stats;
		*truncated = m->truncated;
	}
}

void gt_capture_set_progress(const struct gt_capture_set *s, uint64_t *done, uint64_t *total)
{
	*done = *total = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct member *m = &s->m[i];
		*total += m->file_bytes;
		if (m->ended) {
			*done += m->file_bytes;
		} else if (m->c) {
			struct gt_capture_stats st;
			gt_capture_stats(m->c, &st);
			uint64_t part = st.bytes_read + st.bytes_zero + st.bytes_garbage;
			*done += st.bytes_total ? (uint64_t)((double)part / (double)st.bytes_total *
							      (double)m->file_bytes)
						: 0;
		}
	}
}

void gt_capture_set_close(struct gt_capture_set *s)
{
	if (!s)
		return;
	for (size_t i = 0; s->m && i < s->n; i++)
		gt_capture_close(s->m[i].c);
	free(s->m);
	free(s->heap);
	free(s);
}
