/* capture_set: see capture_set.h. */
#include "capture_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define AHEAD_RECORDS 4095u   /* merged records a peek may see past the one delivered */
#define AHEAD_SLOTS 4096u     /* a power of two above it: the ring's places */
#define OPEN_AHEAD 64u         /* captures a peek may open before the merge delivers from them */
#define NONE UINT32_MAX

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
	uint64_t key;                /* tsc of its next record not merged (while in the heap) */
	uint64_t merged, taken;      /* its records merged so far, and delivered */
	uint64_t end_at;             /* its end is due once this many records are delivered */
	struct gt_capture_stats stats;
	bool truncated;
};

struct gt_capture_set {
	struct member *m;            /* in start order */
	size_t n;
	size_t next_open;            /* the first member not opened yet */
	uint32_t *heap;              /* open members with a record not merged yet, by key */
	size_t n_heap;
	/* Records merged, not delivered yet: the lookahead, ahead[ahead_first] delivered next.
	 * Each stays in its capture's reader (its ord-th record) until delivered. */
	struct ahead {
		uint64_t key;
		uint64_t ord;
		uint32_t member;
	} *ahead;
	size_t ahead_first, ahead_n;
	uint64_t delivered;          /* records delivered, all captures */
	uint64_t peeked;             /* records shown by gt_capture_set_peek */
	uint32_t stalled;            /* member whose next record its reader cannot show yet */
	uint32_t *ends;              /* members whose end is known, by end_at (a FIFO) */
	size_t ends_first, ends_n;
	size_t n_unused;             /* open members none of whose records was delivered yet */
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
	    !(s->heap = calloc(n ? n : 1, sizeof *s->heap)) ||
	    !(s->ends = calloc(n ? n : 1, sizeof *s->ends)) ||
	    !(s->ahead = calloc(AHEAD_SLOTS, sizeof *s->ahead))) {
		gt_capture_set_close(s);
		return NULL;
	}
	s->n = n;
	s->stalled = NONE;
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

/* Keeps the counters of m's reader and closes it. */
static void close_member(struct gt_capture_set *s, struct member *m)
{
	gt_capture_stats(m->c, &m->stats);
	m->truncated = gt_capture_truncated(m->c);
	gt_capture_close(m->c);
	m->c = NULL;
	s->n_unused -= !m->taken;
}

/* Member x's next record not merged yet goes into the heap; at its end, x is to end after
 * the records merged so far.  false when its reader cannot show that record yet (beyond its
 * lookahead: it shows once x's earlier records are delivered). */
static bool advance(struct gt_capture_set *s, uint32_t x)
{
	struct member *m = &s->m[x];
	struct gt_capture_record r;
	size_t i = (size_t)(m->merged - m->taken);
	if (gt_capture_peek(m->c, i, &r)) {
		m->key = to_base(s, m, r.tsc);
		heap_push(s, x);
		return true;
	}
	if (!gt_capture_peek_ended(m->c, i))
		return false;
	m->end_at = s->delivered + s->ahead_n;
	s->ends[(s->ends_first + s->ends_n++) % s->n] = x;
	if (!i)   /* none of its records is in the lookahead: its reader is not needed */
		close_member(s, m);
	return true;
}

/* Merges records until want of them wait in the lookahead; false when fewer can (the end of
 * every capture, the lookahead's bound, or a reader's own).  The one merge: what a peek
 * sees is what gt_capture_set_next delivers.  A capture is opened once the merge reaches
 * the time it began. */
static bool merge_ahead(struct gt_capture_set *s, size_t want)
{
	while (s->ahead_n < want) {
		if (s->stalled != NONE) {
			if (!advance(s, s->stalled))
				return false;
			s->stalled = NONE;
		}
		while (s->stalled == NONE && s->next_open < s->n &&
		       (!s->n_heap || s->m[s->next_open].start_key <= s->m[s->heap[0]].key)) {
			/* the lookahead's memory and descriptors: a peek (not the merge's next
			 * record) opens a bounded number of captures ahead */
			if (s->ahead_n && s->n_unused >= OPEN_AHEAD)
				return false;
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
			s->n_unused++;
			if (!advance(s, x))
				s->stalled = x;
		}
		if (s->stalled != NONE)
			continue;
		if (!s->n_heap || s->ahead_n == AHEAD_RECORDS)
			return false;
		uint32_t x = heap_pop(s);
		struct member *m = &s->m[x];
		s->ahead[(s->ahead_first + s->ahead_n++) % AHEAD_SLOTS] =
			(struct ahead){m->key, m->merged++, x};
		if (!advance(s, x))
			s->stalled = x;
	}
	return true;
}

enum gt_set_event gt_capture_set_next(struct gt_capture_set *s, struct gt_capture_record *out,
				      uint32_t *index)
{
	if (!s->ahead_n)
		merge_ahead(s, 1);
	if (s->ends_n && s->m[s->ends[s->ends_first]].end_at <= s->delivered) {
		uint32_t x = s->ends[s->ends_first];
		struct member *m = &s->m[x];
		s->ends_first = (s->ends_first + 1) % s->n;
		s->ends_n--;
		if (m->c)
			close_member(s, m);
		m->ended = true;
		*index = x;
		return GT_SET_ENDED;
	}
	if (!s->ahead_n)
		return GT_SET_DONE;
	struct ahead a = s->ahead[s->ahead_first];
	s->ahead_first = (s->ahead_first + 1) % AHEAD_SLOTS;
	s->ahead_n--;
	s->delivered++;
	struct member *m = &s->m[a.member];
	gt_capture_next(m->c, out);
	s->n_unused -= !m->taken++;
	out->tsc = a.key;
	out->capture = a.member;
	*index = a.member;
	return GT_SET_RECORD;
}

bool gt_capture_set_peek(struct gt_capture_set *s, size_t i, struct gt_capture_record *out)
{
	/* mostly merged already: a scan peeks at each record in turn */
	if (i >= s->ahead_n && (i >= AHEAD_RECORDS || !merge_ahead(s, i + 1)))
		return false;
	const struct ahead *a = &s->ahead[(s->ahead_first + i) % AHEAD_SLOTS];
	const struct member *m = &s->m[a->member];
	if (!gt_capture_peek(m->c, (size_t)(a->ord - m->taken), out))
		return false;   /* merged from this very lookahead: not reached */
	out->tsc = a->key;
	out->capture = a->member;
	s->peeked++;
	return true;
}

uint64_t gt_capture_set_delivered(const struct gt_capture_set *s)
{
	return s->delivered;
}

uint64_t gt_capture_set_peeked(const struct gt_capture_set *s)
{
	return s->peeked;
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
	free(s->ends);
	free(s->ahead);
	free(s);
}
