/* capture_reader: see capture_reader.h. */
#include "capture_reader.h"
#include "common/grow.h"
#include "common/u64map.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define REORDER_NS 1000000000ull /* a record waits until its stream has read 1 s past it */
#define READ_AHEAD_RECORDS 16  /* how far merge_pop prefetches in a stream's FIFO */
#define REORDER_BYTES (48u << 20) /* memory the reorder heaps may hold, all streams together */
#define WINDOW_BYTES (64u * 1024u) /* pread window per CPU stream (>= the largest record) */
#define SMALL_SLOT_BYTES 64u  /* most records fit; larger ones grow their slot */
#define AHEAD_RECORDS 4095u   /* merged records a peek may see past the one delivered */
#define AHEAD_BYTES (1u << 20) /* ... and at most this many bytes, the delivered one included */
#define MAX_THREAD_SERIAL (1u << 24)
#define MAX_STACK_ID (1u << 24)
#define MAX_TSC_HZ 100000000000ull /* 100 GHz: a larger tick rate is a corrupt header */

struct heap_item {
	uint64_t tsc;
	uint64_t order;          /* file order inside the stream: ties keep it */
	uint32_t slot;           /* where the record's bytes are */
};

/* A record copied out of the read window, once: the window moves on, the record waits in
 * its stream's reorder heap, then in the lookahead, until it has been delivered. */
struct slot {
	uint8_t *data;
	size_t cap;
	uint32_t file_bytes;       /* the record's length in the file */
	uint8_t open;              /* gt_compact_open: its obj or nr is the open wait's (0: none) */
};

/* A record in merged order: its slot, its CPU, its tsc once clamped. */
struct merged {
	uint64_t tsc;
	uint32_t slot, cpu;
};

struct chunk_ref {
	uint64_t index, seq, first_tsc;
};

struct cpu_stream {
	uint32_t cpu;
	struct chunk_ref *chunks;  /* in seq order */
	size_t n_chunks, cap_chunks, next_chunk;
	bool chunk_open;
	uint64_t chunk_off;        /* file offset of the current chunk */
	uint64_t chunk_base;       /* its first_tsc: its compact records' base */
	struct gt_u64map near;     /* its threads' latest tsc so far (capture.h, version 3) */
	size_t pos, end;           /* cursor and end of readable bytes, chunk-relative */
	uint8_t *win;              /* read window: chunk bytes [win_start, win_start + win_len) */
	size_t win_start, win_len;
	bool in_garbage;
	uint64_t unparsed;         /* garbage bytes since the chunk's last record */
	/* the records read, not yet merged: those that came in order in a FIFO (almost all:
	 * chunks are installed in write order), the late ones in a binary min-heap */
	struct heap_item *fifo;    /* ring */
	size_t fifo_first, fifo_n, fifo_cap;
	struct heap_item *heap;
	size_t heap_n, heap_cap;
	uint64_t max_read_tsc;     /* the latest timestamp read from the file so far */
	uint64_t order;
	uint64_t last_out_tsc;
	uint64_t head_key;         /* stream_head_tsc, cached for the merge heap */
	bool exhausted;
};

struct gt_capture {
	int fd;
	size_t size;
	struct gt_file_header header;
	size_t n_chunks;          /* chunks present (wholly or partly) in the file */
	size_t win_bytes;         /* read window per stream: no larger than a chunk, so that
				   * the windows never outgrow the file */
	bool truncated;
	uint64_t tsc_lo, tsc_hi;  /* plausible timestamp range */
	uint64_t reorder_ticks;   /* REORDER_NS in the capture's clock */
	size_t reorder_bytes;     /* what the reorder heaps hold, as counted against REORDER_BYTES */
	struct cpu_stream *streams;
	size_t n_streams;
	size_t *merge;            /* heap of stream indices keyed by their next tsc */
	size_t merge_n;
	struct slot *slots;       /* one pool for the reorder heaps and the lookahead */
	uint32_t *free_slots;
	uint32_t n_slots, n_free;
	/* The lookahead: records already merged, not yet delivered (filled by peeks only). */
	struct merged ahead[AHEAD_RECORDS];
	size_t ahead_first, ahead_n;
	size_t held_bytes;        /* bytes of the lookahead and of the delivered record */
	bool out_held;            /* the record delivered last holds its slot until the next */
	struct merged out;
	struct gt_capture_stats stats;
	/* ring captures: the window starts after ring_t0 (0: not a ring, or nothing reused);
	 * the keep chunks in seq order; the summary is the stream after the CPUs' */
	uint64_t ring_t0;
	struct chunk_ref *keep;
	size_t n_keep, cap_keep;
	/* each thread's open wait, in merged order, for one-word ends (capture.h, version 3):
	 * serial -> OPEN | obj of its BLOCK_BEGIN, OPEN_CALL | serial -> OPEN | nr of its
	 * SYSCALL_BEGIN; 0 once ended; OPEN_LAST | serial -> OPEN | obj of its last BLOCK_BEGIN,
	 * ended or not; and OPEN_FD | descriptor -> OPEN | key of its last FD record */
	struct gt_u64map open;
};

int gt_capture_min_payload(uint8_t type)
{
	return gt_fact_min_payload(type);
}

static void set_err(char *err, size_t errlen, const char *fmt, const char *path, unsigned a, unsigned b)
{
	if (err && errlen)
		snprintf(err, errlen, fmt, path, a, b);
}

/* A record at p with `avail` readable bytes: does it parse?  Returns its length or 0. */
static size_t record_valid(const struct gt_capture *c, const uint8_t *p,
			   size_t avail)
{
	if (avail < sizeof(struct gt_rec))
		return 0;
	const struct gt_rec *r = (const struct gt_rec *)p;
	int minp = gt_capture_min_payload(r->type);
	if (minp < 0 || r->nwords < 2 || r->nwords > GT_MAX_RECORD_WORDS)
		return 0;
	size_t len = (size_t)r->nwords * 8;
	if (len > avail || len - sizeof *r < (size_t)minp)
		return 0;
	if (r->thread >= MAX_THREAD_SERIAL)
		return 0;
	if (r->tsc < c->tsc_lo || r->tsc > c->tsc_hi)
		return 0;
	const uint8_t *pl = p + sizeof *r;
	size_t plen = len - sizeof *r;
	switch (r->type) {
	case GT_STACK: {
		const struct gt_p_stack *st = (const void *)pl;
		if (!st->id || st->id > MAX_STACK_ID || st->nframes > GT_MAX_RECORD_WORDS ||
		    sizeof *st + (size_t)st->nframes * 8 > plen)
			return 0;
		break;
	}
	case GT_PROCESS_NAME: {
		const struct gt_p_process_name *n = (const void *)pl;
		if (n->cmdline_len > GT_CMDLINE_MAX || sizeof *n + (size_t)n->cmdline_len > plen)
			return 0;
		break;
	}
	case GT_MODULE: {
		const struct gt_p_module *m = (const void *)pl;
		if (m->build_id_len > 64 || m->path_len > GT_PATH_MAX ||
		    sizeof *m + (size_t)m->build_id_len + m->path_len > plen)
			return 0;
		break;
	}
	case GT_USER: {
		const struct gt_p_user *u = (const void *)pl;
		if (sizeof *u + (size_t)u->name_len + u->msg_len > plen)
			return 0;
		break;
	}
	default:
		break;
	}
	return len;
}

/* The record at p (avail readable bytes) in a chunk whose first_tsc is base: its length in
 * the chunk, 0 when it does not parse.  *full is the full record (p, or exp holding a compact
 * record's expansion: capture.h), *full_len its length.  exp has EXP_WORDS, more than an
 * expansion takes (5), as many as the largest fixed part record_valid looks at. */
#define EXP_WORDS 8
static size_t record_parse(const struct gt_capture *c, const uint8_t *p, size_t avail,
			   uint64_t base, struct gt_u64map *near, uint64_t exp[EXP_WORDS],
			   const uint8_t **full, size_t *full_len, uint8_t *open)
{
	size_t len;
	*open = 0;
	if (c->header.version >= 2 && avail >= 8 && (p[0] & GT_COMPACT_BIT)) {
		uint64_t w[3];
		memcpy(w, p, 8);
		len = gt_compact_words(w[0]) * 8;
		if (len > avail || (len == 8 && c->header.version < 3))
			return 0;
		memcpy(w, p, len);
		gt_compact_expand(w, base, exp);
		if (c->header.version >= 3) {
			const uint64_t *t = gt_u64map_find(near, ((const struct gt_rec *)exp)->thread);
			exp[1] = gt_compact_tsc(w[0], base, t ? *t : base);
		}
		*full = (const uint8_t *)exp;
		*full_len = record_valid(c, *full, 5 * 8);
		*open = (uint8_t)gt_compact_open(w[0]);
	} else {
		*full = p;
		len = *full_len = record_valid(c, p, avail);
	}
	if (!*full_len)
		return 0;
	if (c->header.version >= 3) { /* the thread's latest time in the chunk: the next's near */
		const struct gt_rec *r = (const void *)*full;
		bool found;
		uint64_t *t = gt_u64map_slot(near, r->thread, &found);
		if (t && (!found || r->tsc > *t))
			*t = r->tsc;
	}
	return len;
}

static bool open_next_chunk(struct gt_capture *c, struct cpu_stream *s)
{
	s->chunk_open = false;
	while (s->next_chunk < s->n_chunks) {
		uint64_t k = s->chunks[s->next_chunk++].index;
		uint64_t off = c->header.header_size + k * (uint64_t)c->header.chunk_size;
		struct gt_chunk_header ch;
		if (pread(c->fd, &ch, sizeof ch, (off_t)off) != (ssize_t)sizeof ch)
			continue;
		uint64_t avail = c->size - off < c->header.chunk_size ? c->size - off : c->header.chunk_size;
		uint64_t end = ch.used < avail ? ch.used : avail;
		/* used may exceed the chunk (an abandoned reservation); only the end of the
		 * file cuts a chunk */
		if (ch.used > avail && avail < c->header.chunk_size)
			c->stats.chunks_truncated++;
		s->chunk_off = off;
		s->chunk_base = ch.first_tsc;
		gt_u64map_free(&s->near);
		s->pos = GT_CHUNK_HEADER_SIZE;
		s->end = (size_t)end & ~(size_t)7;
		s->win_start = s->win_len = 0;
		s->in_garbage = false;
		s->unparsed = 0;
		s->chunk_open = true;
		return true;
	}
	return false;
}

/* Makes the window hold min(want, end - pos) bytes from pos; false on a read error. */
static bool window_ensure(struct gt_capture *c, struct cpu_stream *s, size_t want)
{
	size_t need = s->end - s->pos < want ? s->end - s->pos : want;
	if (s->pos >= s->win_start && s->pos + need <= s->win_start + s->win_len)
		return true;
	size_t len = s->end - s->pos < c->win_bytes ? s->end - s->pos : c->win_bytes;
	ssize_t n = pread(c->fd, s->win, len, (off_t)(s->chunk_off + s->pos));
	if (n < (ssize_t)need)
		return false;
	s->win_start = s->pos;
	s->win_len = (size_t)n;
	return true;
}

/* A free slot of at least len bytes; false when memory runs out.  The pool grows on demand:
 * it is bounded by the reorder heaps and the lookahead, not by the file. */
static bool slot_take(struct gt_capture *c, size_t len, uint32_t *out)
{
	if (!c->n_free) {
		uint32_t cap = c->n_slots ? 2 * c->n_slots : 256;
		struct slot *sl = realloc(c->slots, cap * sizeof *sl);
		if (!sl)
			return false;
		c->slots = sl;
		uint32_t *fr = realloc(c->free_slots, cap * sizeof *fr);
		if (!fr)
			return false;
		c->free_slots = fr;
		for (uint32_t k = cap; k-- > c->n_slots;) {
			c->slots[k] = (struct slot){0};
			c->free_slots[c->n_free++] = k;
		}
		c->n_slots = cap;
	}
	uint32_t k = c->free_slots[c->n_free - 1];
	struct slot *sl = &c->slots[k];
	if (sl->cap < len) {
		size_t cap = sl->cap ? sl->cap : SMALL_SLOT_BYTES;
		while (cap < len)
			cap *= 2;
		uint8_t *d = realloc(sl->data, cap);
		if (!d)
			return false;
		sl->data = d;
		sl->cap = cap;
	}
	c->n_free--;
	*out = k;
	return true;
}

static void slot_put(struct gt_capture *c, uint32_t slot)
{
	c->free_slots[c->n_free++] = slot;
}

static size_t slot_len(const struct gt_capture *c, uint32_t slot)
{
	return (size_t)((const struct gt_rec *)c->slots[slot].data)->nwords * 8;
}

/* The next valid record of the stream in file order, copied into a free slot; false at
 * the end of the stream. */
static bool stream_read(struct gt_capture *c, struct cpu_stream *s, uint32_t *slot_out)
{
	for (;;) {
		if (!s->chunk_open || s->pos >= s->end) {
			/* A process gotrace stopped lives on (GT_FILE_DETACHED): the end of its
			 * chunks may hold records being written, payload stored before their
			 * first word: not committed, hence not damage. */
			if (s->chunk_open && (c->header.flags & GT_FILE_DETACHED)) {
				c->stats.bytes_garbage -= s->unparsed;
				c->stats.bytes_zero += s->unparsed;
				s->unparsed = 0;
			}
			if (!open_next_chunk(c, s))
				return false;
			continue;
		}
		if (!window_ensure(c, s, GT_MAX_RECORD_WORDS * 8)) {
			c->stats.bytes_garbage += s->end - s->pos;   /* unreadable: counted, skipped */
			s->pos = s->end;
			continue;
		}
		const uint8_t *p = s->win + (s->pos - s->win_start);
		size_t avail = s->end - s->pos;
		uint64_t word;
		memcpy(&word, p, 8);
		if (!word) {
			c->stats.bytes_zero += 8;
			s->pos += 8;
			continue;
		}
		uint64_t exp[EXP_WORDS];
		const uint8_t *full;
		size_t full_len;
		uint8_t open;
		size_t len = record_parse(c, p, avail, s->chunk_base, &s->near, exp, &full, &full_len,
					  &open);
		if (!len) {
			/* garbage, or a torn record at the end of the chunk */
			const struct gt_rec *r = (const void *)p;
			bool compact = c->header.version >= 2 && (p[0] & GT_COMPACT_BIT);
			if (!s->in_garbage && avail >= 8 &&
			    (compact ? gt_compact_words(word) * 8 > avail
				     : gt_capture_min_payload(r->type) >= 0 && r->nwords >= 2 &&
					       (size_t)r->nwords * 8 > avail &&
					       r->nwords <= GT_MAX_RECORD_WORDS)) {
				c->stats.torn_tails++;
				c->stats.bytes_garbage += avail;
				s->unparsed += avail;
				s->pos = s->end;
				continue;
			}
			s->in_garbage = true;
			c->stats.bytes_garbage += 8;
			s->unparsed += 8;
			s->pos += 8;
			continue;
		}
		if (s->in_garbage) {
			c->stats.resyncs++;
			s->in_garbage = false;
		}
		s->unparsed = 0;
		uint32_t slot;
		if (!slot_take(c, full_len, &slot))
			return false;
		memcpy(c->slots[slot].data, full, full_len);
		c->slots[slot].file_bytes = (uint32_t)len;
		c->slots[slot].open = open;
		s->pos += len;
		c->stats.bytes_read += len;
		*slot_out = slot;
		return true;
	}
}

static bool item_less(const struct heap_item *a, const struct heap_item *b)
{
	return a->tsc < b->tsc || (a->tsc == b->tsc && a->order < b->order);
}

/* What a held record costs: its slot (at least SMALL_SLOT_BYTES) and its heap item. */
static size_t held_cost(size_t len)
{
	return (len < SMALL_SLOT_BYTES ? SMALL_SLOT_BYTES : len) + sizeof(struct heap_item);
}

static bool heap_push(struct cpu_stream *s, struct heap_item it)
{
	if (s->heap_n == s->heap_cap) {
		size_t cap = s->heap_cap ? 2 * s->heap_cap : 256;
		struct heap_item *h = realloc(s->heap, cap * sizeof *h);
		if (!h)
			return false;
		s->heap = h;
		s->heap_cap = cap;
	}
	size_t i = s->heap_n++;
	while (i && item_less(&it, &s->heap[(i - 1) / 2])) {
		s->heap[i] = s->heap[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	s->heap[i] = it;
	return true;
}

static struct heap_item heap_pop(struct cpu_stream *s)
{
	struct heap_item top = s->heap[0], last = s->heap[--s->heap_n];
	size_t i = 0;
	for (;;) {
		size_t l = 2 * i + 1, m = l;
		if (l >= s->heap_n)
			break;
		if (l + 1 < s->heap_n && item_less(&s->heap[l + 1], &s->heap[l]))
			m = l + 1;
		if (!item_less(&s->heap[m], &last))
			break;
		s->heap[i] = s->heap[m];
		i = m;
	}
	if (s->heap_n)
		s->heap[i] = last;
	return top;
}

/* The held records: a FIFO of those read in order, a heap of the late ones; the next to
 * deliver is the smaller of their heads.  Keeps the common case O(1) and cache-friendly. */
static size_t held_n(const struct cpu_stream *s) { return s->fifo_n + s->heap_n; }

static const struct heap_item *held_min(const struct cpu_stream *s)
{
	const struct heap_item *f = s->fifo_n ? &s->fifo[s->fifo_first] : NULL;
	if (!s->heap_n)
		return f;
	return f && !item_less(&s->heap[0], f) ? f : &s->heap[0];
}

static bool held_push(struct cpu_stream *s, struct heap_item it)
{
	if (s->fifo_n) {
		const struct heap_item *tail = &s->fifo[(s->fifo_first + s->fifo_n - 1) % s->fifo_cap];
		if (item_less(&it, tail))
			return heap_push(s, it);
	}
	if (s->fifo_n == s->fifo_cap) {
		size_t cap = s->fifo_cap ? 2 * s->fifo_cap : 256;
		struct heap_item *f = malloc(cap * sizeof *f);
		if (!f)
			return false;
		for (size_t k = 0; k < s->fifo_n; k++)
			f[k] = s->fifo[(s->fifo_first + k) % s->fifo_cap];
		free(s->fifo);
		s->fifo = f;
		s->fifo_cap = cap;
		s->fifo_first = 0;
	}
	s->fifo[(s->fifo_first + s->fifo_n++) % s->fifo_cap] = it;
	return true;
}

static struct heap_item held_pop(struct cpu_stream *s)
{
	if (s->fifo_n && held_min(s) == &s->fifo[s->fifo_first]) {
		struct heap_item it = s->fifo[s->fifo_first];
		s->fifo_first = (s->fifo_first + 1) % s->fifo_cap;
		s->fifo_n--;
		return it;
	}
	return heap_pop(s);
}

/* Records of one CPU arrive almost in order: a writer preempted between its timestamp and
 * its reservation, or one that files a record under a CPU it just left, puts it late in the
 * file.  A record is released only once its stream has read a record REORDER_NS later (or
 * the stream's end), so lateness up to that bound is undone whatever the record rate; past
 * REORDER_BYTES the oldest are released early and counted. */
static void stream_fill(struct gt_capture *c, struct cpu_stream *s)
{
	while (!s->exhausted &&
	       (!held_n(s) || s->max_read_tsc - held_min(s)->tsc < c->reorder_ticks)) {
		if (held_n(s) && c->reorder_bytes >= REORDER_BYTES) {
			c->stats.reorder_capped++;
			break;
		}
		uint32_t slot;
		if (!stream_read(c, s, &slot)) {
			s->exhausted = true;
			break;
		}
		const struct gt_rec *r = (const void *)c->slots[slot].data;
		if (r->tsc <= c->ring_t0) { /* in the summary, when it outlives the window */
			c->stats.before_window++;
			slot_put(c, slot);
			continue;
		}
		if (!held_push(s, (struct heap_item){r->tsc, s->order++, slot})) {
			slot_put(c, slot);
			s->exhausted = true;
			break;
		}
		c->reorder_bytes += held_cost(slot_len(c, slot));
		if (r->tsc > s->max_read_tsc)
			s->max_read_tsc = r->tsc;
	}
}

/* The stream's next tsc as it will be delivered (clamped to its last one). */
static uint64_t stream_head_tsc(const struct cpu_stream *s)
{
	uint64_t t = held_min(s)->tsc;
	return t < s->last_out_tsc ? s->last_out_tsc : t;
}

static bool merge_less(const struct gt_capture *c, size_t a, size_t b)
{
	uint64_t ta = c->streams[a].head_key, tb = c->streams[b].head_key;
	return ta < tb || (ta == tb && a < b);
}

static void merge_sift_down(struct gt_capture *c, size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i;
		if (l < c->merge_n && merge_less(c, c->merge[l], c->merge[m]))
			m = l;
		if (l + 1 < c->merge_n && merge_less(c, c->merge[l + 1], c->merge[m]))
			m = l + 1;
		if (m == i)
			return;
		size_t t = c->merge[i];
		c->merge[i] = c->merge[m];
		c->merge[m] = t;
		i = m;
	}
}

static int chunk_seq_cmp(const void *a, const void *b)
{
	const struct chunk_ref *x = a, *y = b;
	if (x->seq != y->seq)
		return x->seq < y->seq ? -1 : 1;
	return x->index < y->index ? -1 : x->index > y->index;
}

static bool chunk_add(struct chunk_ref **v, size_t *n, size_t *cap, struct chunk_ref ref)
{
	if (!gt_grow(v, cap, *n + 1, sizeof **v))
		return false;
	(*v)[(*n)++] = ref;
	return true;
}

/* ---- ring captures: the state at the window's start ------------------------------------ */

struct ring_rec {
	uint8_t *bytes;
	size_t len;
};

struct ring_recs {
	struct ring_rec *v;
	size_t n, cap;
};

static bool ring_recs_add(struct ring_recs *rs, const uint8_t *p, size_t len)
{
	uint8_t *b = gt_grow(&rs->v, &rs->cap, rs->n + 1, sizeof *rs->v) ? malloc(len) : NULL;
	if (!b)
		return false;
	memcpy(b, p, len);
	rs->v[rs->n++] = (struct ring_rec){b, len};
	return true;
}

/* The committed records of chunk ref at or before t0 into rs (buf: a chunk's bytes). */
static bool ring_collect(struct gt_capture *c, const struct chunk_ref *ref, uint64_t t0,
			 uint8_t *buf, size_t buf_len, struct ring_recs *rs)
{
	uint64_t off = c->header.header_size + ref->index * (uint64_t)c->header.chunk_size;
	ssize_t got = pread(c->fd, buf, buf_len, (off_t)off);
	if (got < (ssize_t)GT_CHUNK_HEADER_SIZE)
		return true;
	const struct gt_chunk_header *ch = (const void *)buf;
	size_t end = ch->used < (uint64_t)got ? (size_t)ch->used : (size_t)got;
	end &= ~(size_t)7;
	struct gt_u64map near = {0};
	bool ok = true;
	for (size_t pos = GT_CHUNK_HEADER_SIZE; ok && pos + 8 <= end;) {
		uint64_t exp[EXP_WORDS];
		const uint8_t *full;
		size_t full_len;
		uint8_t open; /* the summary delivers no end: its obj or nr does not matter */
		size_t len = record_parse(c, buf + pos, end - pos, ch->first_tsc, &near, exp, &full,
					  &full_len, &open);
		if (!len) {
			pos += 8;
			continue;
		}
		if (((const struct gt_rec *)full)->tsc <= t0)
			ok = ring_recs_add(rs, full, full_len);
		pos += len;
	}
	gt_u64map_free(&near);
	return ok;
}

static int ring_rec_cmp(const void *a, const void *b)
{
	const struct ring_rec *x = a, *y = b;
	uint64_t tx = ((const struct gt_rec *)x->bytes)->tsc, ty = ((const struct gt_rec *)y->bytes)->tsc;
	if (tx != ty)
		return tx < ty ? -1 : 1;
	if (x->len != y->len)
		return x->len < y->len ? -1 : 1;
	return memcmp(x->bytes, y->bytes, x->len);
}

/* What the summary knows of a thread (indices into the sorted records, SIZE_MAX: none). */
struct ring_thread {
	uint32_t serial;
	size_t created, identity, name, state;
};

/* The summary's record into its stream, stamped t0 (a clock pair keeps its own time). */
static bool ring_deliver(struct gt_capture *c, const uint8_t *p, size_t len)
{
	struct cpu_stream *s = &c->streams[c->header.n_cpus];
	uint32_t slot;
	if (!slot_take(c, len, &slot))
		return false;
	memcpy(c->slots[slot].data, p, len);
	c->slots[slot].file_bytes = (uint32_t)len;
	c->slots[slot].open = 0;
	struct gt_rec *r = (struct gt_rec *)c->slots[slot].data;
	if (r->type != GT_CLOCK)
		r->tsc = c->ring_t0;
	if (!held_push(s, (struct heap_item){c->ring_t0, s->order++, slot})) {
		slot_put(c, slot);
		return false;
	}
	c->reorder_bytes += held_cost(len);
	c->stats.ring_summary++;
	return true;
}

static size_t ring_thread_of(struct ring_thread **ts, size_t *n, size_t *cap, struct gt_u64map *idx,
			     uint32_t serial)
{
	bool found;
	uint64_t *v = gt_u64map_slot(idx, serial, &found);
	if (!v)
		return SIZE_MAX;
	if (found)
		return (size_t)*v;
	if (!gt_grow(ts, cap, *n + 1, sizeof **ts))
		return SIZE_MAX;
	(*ts)[*n] = (struct ring_thread){serial, SIZE_MAX, SIZE_MAX, SIZE_MAX, SIZE_MAX};
	*v = *n;
	return (*n)++;
}

static int ring_thread_cmp(const void *a, const void *b)
{
	const struct ring_thread *x = a, *y = b;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

/* The summary (capture_reader.h) from the keep chunks and what the CPU chunks still hold at
 * or before the window's start; false when memory runs out. */
static bool ring_summary(struct gt_capture *c)
{
	uint64_t t0 = c->header.ring_lost_tsc;
	struct ring_recs rs = {0};
	struct ring_thread *ts = NULL;
	size_t n_ts = 0, cap_ts = 0;
	struct gt_u64map idx = {0};
	bool ok = true;
	/* no chunk holds more than the file: a corrupt chunk size must not size the buffer */
	size_t buf_len = c->header.chunk_size < c->size ? c->header.chunk_size : c->size;
	uint8_t *buf = malloc(buf_len);
	if (!buf)
		return false;
	if (c->n_keep > 1)
		qsort(c->keep, c->n_keep, sizeof *c->keep, chunk_seq_cmp);
	for (size_t k = 0; ok && k < c->n_keep; k++)
		ok = ring_collect(c, &c->keep[k], t0, buf, buf_len, &rs);
	for (size_t i = 0; ok && i < c->header.n_cpus; i++) {
		const struct cpu_stream *s = &c->streams[i];
		for (size_t k = 0; ok && k < s->n_chunks; k++)
			if (s->chunks[k].first_tsc <= t0 + c->reorder_ticks)
				ok = ring_collect(c, &s->chunks[k], t0, buf, buf_len, &rs);
	}
	free(buf);
	c->ring_t0 = t0;
	if (rs.n)
		qsort(rs.v, rs.n, sizeof *rs.v, ring_rec_cmp);
	/* a record carried and still in its chunk (a reuse cut short) is there twice */
	size_t n = 0;
	for (size_t i = 0; i < rs.n; i++) {
		if (n && !ring_rec_cmp(&rs.v[n - 1], &rs.v[i]))
			free(rs.v[i].bytes);
		else
			rs.v[n++] = rs.v[i];
	}
	rs.n = n;
	for (size_t i = 0; ok && i < rs.n; i++) {
		const struct gt_rec *r = (const void *)rs.v[i].bytes;
		uint32_t serial = r->thread;
		if (r->type == GT_THREAD_NEW)
			serial = ((const struct gt_p_thread_new *)(r + 1))->child;
		bool per_thread = r->type == GT_THREAD_NEW || r->type == GT_THREAD_START ||
				  r->type == GT_THREAD_EXISTING || r->type == GT_THREAD_NAME ||
				  r->type == GT_BLOCK_BEGIN || r->type == GT_BLOCK_END ||
				  r->type == GT_SYSCALL_BEGIN || r->type == GT_SYSCALL_END ||
				  r->type == GT_THREAD_END;
		if (!per_thread) {
			if (r->type != GT_WAKE && r->type != GT_YIELD && r->type != GT_USER &&
			    r->type != GT_CAPTURE_END)
				ok = ring_deliver(c, rs.v[i].bytes, rs.v[i].len);
			continue;
		}
		if (!serial)
			continue;
		size_t ti = ring_thread_of(&ts, &n_ts, &cap_ts, &idx, serial);
		if (ti == SIZE_MAX) {
			ok = false;
			break;
		}
		struct ring_thread *t = &ts[ti];
		switch (r->type) {
		case GT_THREAD_NEW: t->created = i; break;
		case GT_THREAD_START: case GT_THREAD_EXISTING: t->identity = i; break;
		case GT_THREAD_NAME: t->name = i; break;
		default: t->state = i; break;
		}
	}
	if (n_ts > 1)
		qsort(ts, n_ts, sizeof *ts, ring_thread_cmp);
	/* each thread alive at t0, as one that existed before: created where it first shows */
	for (size_t k = 0; ok && k < n_ts; k++) {
		const struct ring_thread *t = &ts[k];
		const struct gt_rec *st = t->state != SIZE_MAX ? (const void *)rs.v[t->state].bytes : NULL;
		if ((st && st->type == GT_THREAD_END) || (t->created == SIZE_MAX && t->identity == SIZE_MAX))
			continue;
		struct {
			struct gt_rec h;
			struct gt_p_thread_start p;
		} e = {{.type = GT_THREAD_EXISTING, .nwords = GT_REC_WORDS(sizeof e.p), .thread = t->serial}, {0}};
		if (t->identity != SIZE_MAX) {
			e.p = *(const struct gt_p_thread_start *)(rs.v[t->identity].bytes + sizeof(struct gt_rec));
			e.p.stack = 0;
		}
		if (t->created != SIZE_MAX) {
			const struct gt_p_thread_new *nw = (const void *)(rs.v[t->created].bytes + sizeof(struct gt_rec));
			e.p.start_routine = nw->start_routine;
			e.p.stack = nw->stack;
		}
		ok = ring_deliver(c, (const uint8_t *)&e, sizeof e);
		if (ok && t->name != SIZE_MAX)
			ok = ring_deliver(c, rs.v[t->name].bytes, rs.v[t->name].len);
	}
	/* then each thread blocked at t0 blocks again there */
	for (size_t k = 0; ok && k < n_ts; k++) {
		const struct ring_thread *t = &ts[k];
		const struct gt_rec *st = t->state != SIZE_MAX ? (const void *)rs.v[t->state].bytes : NULL;
		if (st && (st->type == GT_BLOCK_BEGIN || st->type == GT_SYSCALL_BEGIN) &&
		    (t->created != SIZE_MAX || t->identity != SIZE_MAX))
			ok = ring_deliver(c, rs.v[t->state].bytes, rs.v[t->state].len);
	}
	for (size_t i = 0; i < rs.n; i++)
		free(rs.v[i].bytes);
	free(rs.v);
	free(ts);
	gt_u64map_free(&idx);
	c->streams[c->header.n_cpus].exhausted = true;
	return ok;
}

struct gt_capture *gt_capture_open(const char *path, char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		if (err)
			snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return NULL;
	}
	struct stat st;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		set_err(err, errlen, "%s: not a regular file", path, 0, 0);
		close(fd);
		return NULL;
	}
	struct gt_file_header h = {0};
	if ((size_t)st.st_size < offsetof(struct gt_file_header, reserved) ||
	    pread(fd, &h, sizeof h, 0) < (ssize_t)offsetof(struct gt_file_header, reserved)) {
		set_err(err, errlen, st.st_size ? "%s: not a gotrace capture (too short)"
						: "%s: empty file, not a gotrace capture",
			path, 0, 0);
		close(fd);
		return NULL;
	}
	if (memcmp(h.magic, GT_CAPTURE_MAGIC, sizeof h.magic)) {
		set_err(err, errlen, "%s: not a gotrace capture", path, 0, 0);
		close(fd);
		return NULL;
	}
	if (h.byte_order != GT_BYTE_ORDER_MARK) {
		set_err(err, errlen, "%s: capture written with the other byte order", path, 0, 0);
		close(fd);
		return NULL;
	}
	if (h.version > GT_CAPTURE_VERSION) {
		set_err(err, errlen, "%s: capture version %u is newer than this gotrace (reads %u)",
			path, h.version, GT_CAPTURE_VERSION);
		close(fd);
		return NULL;
	}
	if (h.version == 0 || h.header_size < sizeof h || h.chunk_size < 4096 ||
	    h.chunk_size % 4096 || h.chunk_size > (1u << 30) || h.n_cpus == 0 ||
	    h.n_cpus > GT_MAX_CPUS || h.tsc_hz > MAX_TSC_HZ) {
		set_err(err, errlen, "%s: corrupt capture header", path, 0, 0);
		close(fd);
		return NULL;
	}
	struct gt_capture *c = calloc(1, sizeof *c);
	if (!c) {
		close(fd);
		return NULL;
	}
	c->fd = fd;
	c->header = h;
	c->size = (size_t)st.st_size;
	c->win_bytes = h.chunk_size < WINDOW_BYTES ? h.chunk_size : WINDOW_BYTES;
	if (c->size > h.header_size)
		c->n_chunks = (c->size - h.header_size + h.chunk_size - 1) / h.chunk_size;
	if (c->n_chunks < h.n_chunks || c->size < h.header_size)
		c->truncated = true;

	/* Plausible timestamps: from a second before the start to a day after the last chunk
	 * was opened. */
	uint64_t hz = h.clock_source == GT_CLOCK_MONOTONIC || !h.tsc_hz ? 1000000000ull : h.tsc_hz;
	uint64_t max_first = h.start_tsc;
	/* one stream more: a ring capture's summary */
	c->streams = calloc(h.n_cpus + 1, sizeof *c->streams);
	c->merge = calloc(h.n_cpus + 1, sizeof *c->merge);
	if (!c->streams || !c->merge) {
		gt_capture_close(c);
		return NULL;
	}
	c->n_streams = h.n_cpus;
	for (size_t i = 0; i < c->n_streams; i++)
		c->streams[i].cpu = (uint32_t)i;
	for (size_t k = 0; k < c->n_chunks; k++) {
		size_t off = h.header_size + k * (size_t)h.chunk_size;
		if (c->size - off < GT_CHUNK_HEADER_SIZE) {
			c->stats.chunks_truncated++;
			continue;
		}
		struct gt_chunk_header chb;
		const struct gt_chunk_header *ch = &chb;
		if (pread(fd, &chb, sizeof chb, (off_t)off) != (ssize_t)sizeof chb) {
			c->stats.chunks_truncated++;
			continue;
		}
		if (ch->magic == 0) {
			c->stats.chunks_unused++;
			/* A capture left unfinished keeps the length reserved for growth, a hole of
			 * up to 64 GiB (preload/capture_file.c): go on at the next data. */
			off_t data = lseek(fd, (off_t)(off + h.chunk_size), SEEK_DATA);
			size_t next = data < 0 ? c->n_chunks : ((size_t)data - h.header_size) / h.chunk_size;
			if (next > k + 1 && (data >= 0 || errno == ENXIO)) {
				c->stats.chunks_unused += next - k - 1;
				k = next - 1;
			}
			continue;
		}
		if (ch->magic == GT_KEEP_MAGIC && (h.flags & GT_FILE_RING)) {
			if (!chunk_add(&c->keep, &c->n_keep, &c->cap_keep, (struct chunk_ref){k, ch->seq, ch->first_tsc})) {
				gt_capture_close(c);
				return NULL;
			}
			c->stats.chunks_keep++;
			continue;
		}
		if (ch->magic != GT_CHUNK_MAGIC || ch->cpu >= h.n_cpus) {
			c->stats.chunks_bad++;
			continue;
		}
		struct cpu_stream *s = &c->streams[ch->cpu];
		if (!chunk_add(&s->chunks, &s->n_chunks, &s->cap_chunks, (struct chunk_ref){k, ch->seq, ch->first_tsc})) {
			gt_capture_close(c);
			return NULL;
		}
		uint64_t used = ch->used < h.chunk_size ? ch->used : h.chunk_size;
		if (used > GT_CHUNK_HEADER_SIZE)
			c->stats.bytes_total += used - GT_CHUNK_HEADER_SIZE;
		if (ch->first_tsc > max_first && ch->first_tsc - h.start_tsc < hz * 86400ull * 365)
			max_first = ch->first_tsc;
		c->stats.chunks++;
	}
	c->tsc_lo = h.start_tsc > hz ? h.start_tsc - hz : 0;
	c->tsc_hi = max_first + hz * 86400ull;
	c->reorder_ticks = (uint64_t)((double)REORDER_NS * (double)hz / 1e9);
	if ((h.flags & GT_FILE_RING) && h.ring_lost_tsc && !ring_summary(c)) {
		gt_capture_close(c);
		return NULL;
	}
	for (size_t i = 0; i < c->n_streams; i++) {
		struct cpu_stream *s = &c->streams[i];
		if (!s->n_chunks)
			continue;
		s->win = malloc(c->win_bytes);
		if (!s->win) {
			gt_capture_close(c);
			return NULL;
		}
		if (s->n_chunks > 1)
			qsort(s->chunks, s->n_chunks, sizeof *s->chunks, chunk_seq_cmp);
		stream_fill(c, s);
		if (held_n(s)) {
			s->head_key = stream_head_tsc(s);
			c->merge[c->merge_n++] = i;
		}
	}
	struct cpu_stream *sum = &c->streams[h.n_cpus];
	if (held_n(sum)) {
		sum->head_key = stream_head_tsc(sum);
		c->merge[c->merge_n++] = h.n_cpus;
		c->n_streams = h.n_cpus + 1;
	}
	for (size_t i = c->merge_n; i-- > 0;)
		merge_sift_down(c, i);
	return c;
}

const struct gt_file_header *gt_capture_header(const struct gt_capture *c)
{
	return &c->header;
}

bool gt_capture_truncated(const struct gt_capture *c)
{
	return c->truncated || c->stats.chunks_truncated;
}

#define OPEN (1ull << 63)          /* objs leave bit 63 clear (capture.h) */
#define OPEN_CALL (1ull << 32)     /* serials are below it */
#define OPEN_FD (1ull << 33)
#define OPEN_LAST (1ull << 34)

/* A record leaving the merge: the thread's open wait follows its begins and ends, and the
 * descriptors' keys their FD records (version 3); a one-word end takes the obj or nr of the
 * wait it closes, a one-word wake the obj of its thread's last block, a SYSCALL_BEGIN by
 * GT_C_FD_OBJ its descriptor's key (capture.h). */
static void open_waits(struct gt_capture *c, uint32_t slot)
{
	struct gt_rec *r = (struct gt_rec *)c->slots[slot].data;
	bool block = r->type == GT_BLOCK_BEGIN || r->type == GT_BLOCK_END, fd = r->type == GT_FD;
	if (c->header.version < 3 ||
	    !(block || fd || r->type == GT_SYSCALL_BEGIN || r->type == GT_SYSCALL_END ||
	      r->type == GT_WAKE))
		return;
	if (r->type == GT_BLOCK_BEGIN || r->type == GT_WAKE) { /* the thread's last block's obj */
		bool found;
		uint64_t *last = gt_u64map_slot(&c->open, r->thread | OPEN_LAST, &found);
		uint64_t *obj = (uint64_t *)(r + 1); /* gt_p_block's and gt_p_wake's first field */
		if (r->type == GT_BLOCK_BEGIN && last)
			*last = OPEN | *obj;
		else if (c->slots[slot].open && last && (*last & OPEN))
			*obj = *last & ~OPEN;
		else if (c->slots[slot].open)
			c->stats.open_unknown++;
		if (r->type == GT_WAKE)
			return;
	}
	if (r->type == GT_SYSCALL_BEGIN && c->slots[slot].open) { /* its descriptor's key */
		const struct gt_p_syscall *s = (const void *)(r + 1);
		const uint64_t *k = gt_u64map_find(&c->open, OPEN_FD | (uint32_t)s->arg);
		if (k)
			((struct gt_p_syscall_obj *)(s + 1))->obj = *k & ~OPEN;
		else
			c->stats.open_unknown++;
	}
	bool found;
	uint64_t key = fd ? OPEN_FD | (uint32_t)((const struct gt_p_fd *)(r + 1))->fd
			  : r->thread | (block ? 0 : OPEN_CALL);
	uint64_t *v = gt_u64map_slot(&c->open, key, &found);
	if (!v) {
		c->stats.open_unknown += c->slots[slot].open != 0;
		return;
	}
	if (fd) {
		*v = OPEN | ((const struct gt_p_fd *)(r + 1))->obj;
	} else if (r->type == GT_BLOCK_BEGIN) {
		*v = OPEN | ((const struct gt_p_block *)(r + 1))->obj;
	} else if (r->type == GT_SYSCALL_BEGIN) {
		*v = OPEN | ((const struct gt_p_syscall *)(r + 1))->nr;
	} else {
		if (c->slots[slot].open && !(*v & OPEN))
			c->stats.open_unknown++;
		else if (c->slots[slot].open == GT_BLOCK_END)
			((struct gt_p_block_end *)(r + 1))->obj = *v & ~OPEN;
		else if (c->slots[slot].open)
			((struct gt_p_syscall_end *)(r + 1))->nr = (uint32_t)*v;
		*v = 0;
	}
}

/* Takes the next record of the merged order out of the reorder heaps; false at the end. */
static bool merge_pop(struct gt_capture *c, struct merged *out)
{
	if (!c->merge_n)
		return false;
	struct cpu_stream *s = &c->streams[c->merge[0]];
	struct heap_item it = held_pop(s);
	/* a record held for up to REORDER_NS is out of the cache when delivered: fetch the
	 * ones a few places behind in the FIFO ahead of time */
	if (s->fifo_n > READ_AHEAD_RECORDS)
		__builtin_prefetch(c->slots[s->fifo[(s->fifo_first + READ_AHEAD_RECORDS) %
						    s->fifo_cap].slot].data);
	c->reorder_bytes -= held_cost(slot_len(c, it.slot));
	uint64_t tsc = it.tsc;
	if (tsc < s->last_out_tsc) {
		tsc = s->last_out_tsc;
		c->stats.reordered++;
	}
	s->last_out_tsc = tsc;
	stream_fill(c, s);
	if (!held_n(s))
		c->merge[0] = c->merge[--c->merge_n];
	else
		s->head_key = stream_head_tsc(s);
	merge_sift_down(c, 0);
	open_waits(c, it.slot);
	*out = (struct merged){tsc, it.slot, s->cpu};
	return true;
}

static void record_of(const struct gt_capture *c, const struct merged *m,
		      struct gt_capture_record *out)
{
	const struct gt_rec *rec = (const void *)c->slots[m->slot].data;
	out->rec = rec;
	out->payload = rec + 1;
	out->payload_len = (size_t)rec->nwords * 8 - sizeof *rec;
	out->cpu = m->cpu;
	out->tsc = m->tsc;
	out->capture = 0;
}

uint32_t gt_capture_file_bytes(const struct gt_capture *c)
{
	return c->out_held ? c->slots[c->out.slot].file_bytes : 0;
}

bool gt_capture_next(struct gt_capture *c, struct gt_capture_record *out)
{
	if (c->out_held) {
		c->held_bytes -= slot_len(c, c->out.slot);
		slot_put(c, c->out.slot);
		c->out_held = false;
	}
	if (c->ahead_n) {
		c->out = c->ahead[c->ahead_first];
		c->ahead_first = (c->ahead_first + 1) % AHEAD_RECORDS;
		c->ahead_n--;
	} else if (merge_pop(c, &c->out)) {
		c->held_bytes += slot_len(c, c->out.slot);
	} else {
		return false;
	}
	c->out_held = true;
	record_of(c, &c->out, out);
	c->stats.records++;
	return true;
}

bool gt_capture_peek(struct gt_capture *c, size_t i, struct gt_capture_record *out)
{
	while (c->ahead_n <= i) {
		if (c->ahead_n == AHEAD_RECORDS || !c->merge_n)
			return false;
		const struct cpu_stream *s = &c->streams[c->merge[0]];
		size_t len = slot_len(c, held_min(s)->slot);
		if (c->held_bytes + len > AHEAD_BYTES)
			return false;
		struct merged *m = &c->ahead[(c->ahead_first + c->ahead_n) % AHEAD_RECORDS];
		merge_pop(c, m);
		c->ahead_n++;
		c->held_bytes += len;
	}
	record_of(c, &c->ahead[(c->ahead_first + i) % AHEAD_RECORDS], out);
	return true;
}

bool gt_capture_peek_ended(const struct gt_capture *c, size_t i)
{
	return c->ahead_n <= i && !c->merge_n;
}

void gt_capture_stats(const struct gt_capture *c, struct gt_capture_stats *out)
{
	*out = c->stats;
}

void gt_capture_close(struct gt_capture *c)
{
	if (!c)
		return;
	if (c->streams)
		for (size_t i = 0; i <= c->header.n_cpus; i++) {
			free(c->streams[i].chunks);
			free(c->streams[i].win);
			free(c->streams[i].heap);
			free(c->streams[i].fifo);
			gt_u64map_free(&c->streams[i].near);
		}
	for (uint32_t k = 0; k < c->n_slots; k++)
		free(c->slots[k].data);
	free(c->slots);
	free(c->free_slots);
	free(c->streams);
	free(c->merge);
	free(c->keep);
	gt_u64map_free(&c->open);
	close(c->fd);
	free(c);
}
