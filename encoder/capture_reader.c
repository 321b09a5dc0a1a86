/* capture_reader: see capture_reader.h. */
#include "capture_internal.h"
#include "common/grow.h"
#include "common/u64map.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int gt_capture_min_payload(uint8_t type)
{
	return gt_fact_min_payload(type);
}

static void set_err(char *err, size_t errlen, const char *fmt, const char *path, unsigned a, unsigned b)
{
	if (err && errlen)
		snprintf(err, errlen, fmt, path, a, b);
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
bool gtc_slot_take(struct gt_capture *c, size_t len, uint32_t *out)
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

void gtc_slot_put(struct gt_capture *c, uint32_t slot)
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
		size_t len = gtc_record_parse(c, p, avail, s->chunk_base, &s->near, exp, &full, &full_len,
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
		if (!gtc_slot_take(c, full_len, &slot))
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
size_t gtc_held_cost(size_t len)
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

bool gtc_held_push(struct cpu_stream *s, struct heap_item it)
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
			gtc_slot_put(c, slot);
			continue;
		}
		if (!gtc_held_push(s, (struct heap_item){r->tsc, s->order++, slot})) {
			gtc_slot_put(c, slot);
			s->exhausted = true;
			break;
		}
		c->reorder_bytes += gtc_held_cost(slot_len(c, slot));
		if (r->tsc > s->max_read_tsc)
			s->max_read_tsc = r->tsc;
	}
}

/* Facts stamped after their call returned (capture.h): whatever another CPU stamped at the
 * same tick happened no later, a release (stamped before its real call) among them.  A
 * coarse counter (aarch64's cntvct at 16 ns under qemu) gives a waker's wake and its wakee's
 * return one tick often enough that the order of the CPUs' indices cannot decide. */
static bool stamped_after_return(uint8_t type)
{
	return type == GT_BLOCK_END || type == GT_SYSCALL_END || type == GT_THREAD_START ||
	       type == GT_LOCK_ACQUIRE;
}

/* The stream's merge key: its next record's tsc (clamped as it will be delivered) and
 * whether that record goes after other CPUs' records of the same tick. */
static void stream_set_head(const struct gt_capture *c, struct cpu_stream *s)
{
	const struct heap_item *it = held_min(s);
	s->head_key = it->tsc < s->last_out_tsc ? s->last_out_tsc : it->tsc;
	s->head_returned = stamped_after_return(((const struct gt_rec *)c->slots[it->slot].data)->type);
}

static bool merge_less(const struct gt_capture *c, size_t a, size_t b)
{
	const struct cpu_stream *sa = &c->streams[a], *sb = &c->streams[b];
	if (sa->head_key != sb->head_key)
		return sa->head_key < sb->head_key;
	if (sa->head_returned != sb->head_returned)
		return sb->head_returned;
	return a < b;
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

int gtc_chunk_seq_cmp(const void *a, const void *b)
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

/* The header of the capture at fd (path), when it is one this reader reads; else false after
 * one line into err. */
static bool read_header(int fd, const char *path, struct stat *st, struct gt_file_header *h,
			char *err, size_t errlen)
{
	if (fstat(fd, st) < 0 || !S_ISREG(st->st_mode)) {
		set_err(err, errlen, "%s: not a regular file", path, 0, 0);
		return false;
	}
	*h = (struct gt_file_header){0};
	if ((size_t)st->st_size < offsetof(struct gt_file_header, reaped_mono_ns) ||
	    pread(fd, h, sizeof *h, 0) < (ssize_t)offsetof(struct gt_file_header, reaped_mono_ns)) {
		set_err(err, errlen, st->st_size ? "%s: not a gotrace capture (too short)"
						 : "%s: empty file, not a gotrace capture",
			path, 0, 0);
		return false;
	}
	if (memcmp(h->magic, GT_CAPTURE_MAGIC, sizeof h->magic)) {
		set_err(err, errlen, "%s: not a gotrace capture", path, 0, 0);
		return false;
	}
	if (h->byte_order != GT_BYTE_ORDER_MARK) {
		set_err(err, errlen, "%s: capture written with the other byte order", path, 0, 0);
		return false;
	}
	if (h->version > GT_CAPTURE_VERSION) {
		set_err(err, errlen, "%s: capture version %u is newer than this gotrace (reads %u)",
			path, h->version, GT_CAPTURE_VERSION);
		return false;
	}
	if (h->version == 0 || h->header_size < sizeof *h || h->chunk_size < 4096 ||
	    h->chunk_size % 4096 || h->chunk_size > (1u << 30) || h->n_cpus == 0 ||
	    h->n_cpus > GT_MAX_CPUS || h->tsc_hz > MAX_TSC_HZ) {
		set_err(err, errlen, "%s: corrupt capture header", path, 0, 0);
		return false;
	}
	return true;
}

/* Each chunk's header: a CPU chunk to its stream, a keep chunk to c->keep, the rest counted;
 * *max_first the latest plausible first_tsc (hz: the clock's rate).  false when memory runs
 * out. */
static bool scan_chunks(struct gt_capture *c, uint64_t hz, uint64_t *max_first)
{
	const struct gt_file_header *h = &c->header;
	for (size_t k = 0; k < c->n_chunks; k++) {
		size_t off = h->header_size + k * (size_t)h->chunk_size;
		if (c->size - off < GT_CHUNK_HEADER_SIZE) {
			c->stats.chunks_truncated++;
			continue;
		}
		struct gt_chunk_header chb;
		const struct gt_chunk_header *ch = &chb;
		if (pread(c->fd, &chb, sizeof chb, (off_t)off) != (ssize_t)sizeof chb) {
			c->stats.chunks_truncated++;
			continue;
		}
		if (ch->magic == 0) {
			c->stats.chunks_unused++;
			/* A capture left unfinished keeps the length reserved for growth, a hole of
			 * up to 64 GiB (preload/capture_file.c): go on at the next data. */
			off_t data = lseek(c->fd, (off_t)(off + h->chunk_size), SEEK_DATA);
			size_t next = data < 0 ? c->n_chunks : ((size_t)data - h->header_size) / h->chunk_size;
			if (next > k + 1 && (data >= 0 || errno == ENXIO)) {
				c->stats.chunks_unused += next - k - 1;
				k = next - 1;
			}
			continue;
		}
		if (ch->magic == GT_KEEP_MAGIC && (h->flags & GT_FILE_RING)) {
			if (!chunk_add(&c->keep, &c->n_keep, &c->cap_keep, (struct chunk_ref){k, ch->seq, ch->first_tsc}))
				return false;
			c->stats.chunks_keep++;
			continue;
		}
		if (ch->magic != GT_CHUNK_MAGIC || ch->cpu >= h->n_cpus) {
			c->stats.chunks_bad++;
			continue;
		}
		struct cpu_stream *s = &c->streams[ch->cpu];
		if (!chunk_add(&s->chunks, &s->n_chunks, &s->cap_chunks, (struct chunk_ref){k, ch->seq, ch->first_tsc}))
			return false;
		uint64_t used = ch->used < h->chunk_size ? ch->used : h->chunk_size;
		if (used > GT_CHUNK_HEADER_SIZE)
			c->stats.bytes_total += used - GT_CHUNK_HEADER_SIZE;
		if (ch->first_tsc > *max_first && ch->first_tsc - h->start_tsc < hz * 86400ull * 365)
			*max_first = ch->first_tsc;
		c->stats.chunks++;
	}
	return true;
}

/* Each stream's first records read, and the streams that have some in the merge heap; false
 * when memory runs out. */
static bool start_streams(struct gt_capture *c)
{
	const struct gt_file_header *h = &c->header;
	for (size_t i = 0; i < c->n_streams; i++) {
		struct cpu_stream *s = &c->streams[i];
		if (!s->n_chunks)
			continue;
		s->win = malloc(c->win_bytes);
		if (!s->win)
			return false;
		if (s->n_chunks > 1)
			qsort(s->chunks, s->n_chunks, sizeof *s->chunks, gtc_chunk_seq_cmp);
		stream_fill(c, s);
		if (held_n(s)) {
			stream_set_head(c, s);
			c->merge[c->merge_n++] = i;
		}
	}
	struct cpu_stream *sum = &c->streams[h->n_cpus];
	if (held_n(sum)) {
		stream_set_head(c, sum);
		c->merge[c->merge_n++] = h->n_cpus;
		c->n_streams = h->n_cpus + 1;
	}
	for (size_t i = c->merge_n; i-- > 0;)
		merge_sift_down(c, i);
	return true;
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
	struct gt_file_header h;
	if (!read_header(fd, path, &st, &h, err, errlen)) {
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
	if (!scan_chunks(c, hz, &max_first)) {
		gt_capture_close(c);
		return NULL;
	}
	c->tsc_lo = h.start_tsc > hz ? h.start_tsc - hz : 0;
	c->tsc_hi = max_first + hz * 86400ull;
	c->reorder_ticks = (uint64_t)((double)REORDER_NS * (double)hz / 1e9);
	if (((h.flags & GT_FILE_RING) && !gtc_ring_summary(c)) ||
	    !start_streams(c)) {
		gt_capture_close(c);
		return NULL;
	}
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
	c->reorder_bytes -= gtc_held_cost(slot_len(c, it.slot));
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
		stream_set_head(c, s);
	merge_sift_down(c, 0);
	gtc_open_waits(c, it.slot);
	gtc_canonical_syscall(c, it.slot);
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
		gtc_slot_put(c, c->out.slot);
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
