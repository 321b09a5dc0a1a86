/* capture_ring: a ring capture's state at its window's start (capture_internal.h). */
#include "capture_internal.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "common/grow.h"
#include "encoder.h"

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

/* Calls each(record, its length, ctx) for the committed records of chunk ref, in full (buf:
 * a chunk's bytes); false when each does. */
static bool chunk_records(struct gt_capture *c, const struct chunk_ref *ref, uint8_t *buf,
			  size_t buf_len, bool (*each)(const uint8_t *, size_t, void *), void *ctx)
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
		size_t len = gtc_record_parse(c, buf + pos, end - pos, ch->first_tsc, &near, exp, &full,
					  &full_len, &open);
		if (!len) {
			pos += 8;
			continue;
		}
		ok = each(full, full_len, ctx);
		pos += len;
	}
	gt_u64map_free(&near);
	return ok;
}

struct collect {
	uint64_t t0;
	struct ring_recs *rs;
};

static bool collect_before(const uint8_t *full, size_t len, void *ctx)
{
	struct collect *co = ctx;
	return ((const struct gt_rec *)full)->tsc > co->t0 || ring_recs_add(co->rs, full, len);
}

/* The committed records of chunk ref at or before t0 into rs (buf: a chunk's bytes). */
static bool ring_collect(struct gt_capture *c, const struct chunk_ref *ref, uint64_t t0,
			 uint8_t *buf, size_t buf_len, struct ring_recs *rs)
{
	struct collect co = {t0, rs};
	return chunk_records(c, ref, buf, buf_len, collect_before, &co);
}

static bool latest(const uint8_t *full, size_t len, void *ctx)
{
	(void)len;
	uint64_t *max = ctx, t = ((const struct gt_rec *)full)->tsc;
	if (t > *max)
		*max = t;
	return true;
}

/* Where the window starts: after ring_lost_tsc, and for a window of a duration (ring_ns) no
 * earlier than that before the capture's last record.  The writer reuses a chunk only when
 * it needs a new one, so after a busy phase the chunks of a quiet one keep far more than the
 * duration: the cut is made here.  0: the whole capture is the window. */
static uint64_t window_start(struct gt_capture *c, uint8_t *buf, size_t buf_len)
{
	const struct gt_file_header *h = &c->header;
	uint64_t t0 = h->ring_lost_tsc, end = 0;
	if (!h->ring_ns)
		return t0;
	/* each CPU's latest records are in its newest chunk holding any */
	for (size_t i = 0; i < h->n_cpus; i++) {
		const struct cpu_stream *s = &c->streams[i];
		uint64_t cpu_end = 0;
		for (size_t k = s->n_chunks; k-- > 0 && !cpu_end;)
			chunk_records(c, &s->chunks[k], buf, buf_len, latest, &cpu_end);
		if (cpu_end > end)
			end = cpu_end;
	}
	double hz = h->clock_source == GT_CLOCK_MONOTONIC || !h->tsc_hz ? 1e9 : (double)h->tsc_hz;
	/* 0.1% short: the trace's times come from the clock pairs' fit, which can differ from
	 * the header's calibrated frequency by a few parts in 10^4 */
	double ticks = (double)h->ring_ns * hz / 1e9 * 0.999;
	if (!(ticks < (double)end))   /* a duration longer than the capture (or a hostile header) */
		return t0;
	uint64_t span = (uint64_t)ticks;
	return end - span > t0 ? end - span : t0;
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

/* The summary's record into its stream, stamped t0 (a clock pair keeps its own time). */
static bool ring_deliver(struct gt_capture *c, const uint8_t *p, size_t len)
{
	struct cpu_stream *s = &c->streams[c->header.n_cpus];
	uint32_t slot;
	if (!gtc_slot_take(c, len, &slot))
		return false;
	memcpy(c->slots[slot].data, p, len);
	c->slots[slot].file_bytes = (uint32_t)len;
	c->slots[slot].open = 0;
	struct gt_rec *r = (struct gt_rec *)c->slots[slot].data;
	if (r->type != GT_CLOCK)
		r->tsc = c->ring_t0;
	if (!gtc_held_push(s, (struct heap_item){c->ring_t0, s->order++, slot})) {
		gtc_slot_put(c, slot);
		return false;
	}
	c->reorder_bytes += gtc_held_cost(len);
	c->stats.ring_summary++;
	return true;
}

/* Records per thread: what the tracker is given (a record of another type says nothing of the
 * state at t0 that the summary keeps). */
static bool per_thread(uint8_t type)
{
	return type == GT_THREAD_NEW || type == GT_THREAD_START || type == GT_THREAD_EXISTING ||
	       type == GT_THREAD_NAME || type == GT_BLOCK_BEGIN || type == GT_BLOCK_END ||
	       type == GT_SYSCALL_BEGIN || type == GT_SYSCALL_END || type == GT_THREAD_END;
}

static bool wait_state(uint8_t type)
{
	return type == GT_BLOCK_BEGIN || type == GT_BLOCK_END || type == GT_SYSCALL_BEGIN ||
	       type == GT_SYSCALL_END;
}

/* Each thread's latest begin or end among rs (sorted), as its index + 1 by thread serial, into
 * last; false when memory runs out.  The keep chunks hold only the last of them of each reused
 * chunk (capture.h), so a thread's begins and ends before t0 are not a sequence: a wait's begin
 * may be there without the end that followed it, and the tracker, given both, would hold the
 * wait open across every later call.  What stands at t0 is the latest one. */
static bool last_wait_states(const struct ring_recs *rs, struct gt_u64map *last)
{
	for (size_t i = 0; i < rs->n; i++) {
		const struct gt_rec *r = (const void *)rs->v[i].bytes;
		bool found;
		uint64_t *v = wait_state(r->type) ? gt_u64map_slot(last, r->thread, &found) : NULL;
		if (wait_state(r->type) && !v)
			return false;
		if (v)
			*v = i + 1;
	}
	return true;
}

static int thread_by_serial(const void *a, const void *b)
{
	const struct gt_tracked_thread *x = *(const struct gt_tracked_thread *const *)a;
	const struct gt_tracked_thread *y = *(const struct gt_tracked_thread *const *)b;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

/* Each thread alive at t0 (one whose creation or identity the records tell), by serial, into
 * *out; false when memory runs out. */
static bool alive_at_t0(const struct gt_tracker *tr, const struct gt_tracked_thread ***out,
			size_t *n)
{
	size_t cap = 0, pos = 0;
	*out = NULL;
	*n = 0;
	for (const struct gt_tracked_thread *t; (t = gt_tracker_next_live(tr, &pos));) {
		if (!t->announced && !t->identified)
			continue;
		if (!gt_grow(out, &cap, *n + 1, sizeof **out))
			return false;
		(*out)[(*n)++] = t;
	}
	if (*n > 1)
		qsort(*out, *n, sizeof **out, thread_by_serial);
	return true;
}

/* The summary's thread records: each thread alive at t0 as one that existed before, created
 * where it first shows, with its name; then the wait or syscall of each one in one. */
static bool deliver_threads(struct gt_capture *c, const struct gt_tracker *tr)
{
	const struct gt_tracked_thread **ts;
	size_t n;
	bool ok = alive_at_t0(tr, &ts, &n);
	for (size_t k = 0; ok && k < n; k++) {
		const struct gt_tracked_thread *t = ts[k];
		struct {
			struct gt_rec h;
			struct gt_p_thread_start p;
		} e = {{.type = GT_THREAD_EXISTING, .nwords = GT_REC_WORDS(sizeof e.p), .thread = t->serial},
		       {.tid = t->tid, .start_routine = t->start_routine,
			.stack = t->announced ? t->create_stack : 0}};
		ok = ring_deliver(c, (const uint8_t *)&e, sizeof e);
		struct {
			struct gt_rec h;
			struct gt_p_thread_name p;
		} name = {{.type = GT_THREAD_NAME, .nwords = GT_REC_WORDS(sizeof name.p), .thread = t->serial},
			  {{0}}};
		memcpy(name.p.name, t->name, sizeof name.p.name);
		if (ok && t->named)
			ok = ring_deliver(c, (const uint8_t *)&name, sizeof name);
	}
	for (size_t k = 0; ok && k < n; k++)
		if (ts[k]->raw_words)
			ok = ring_deliver(c, (const uint8_t *)ts[k]->raw, (size_t)ts[k]->raw_words * 8);
	free(ts);
	return ok;
}

bool gtc_ring_summary(struct gt_capture *c)
{
	struct ring_recs rs = {0};
	/* no chunk holds more than the file: a corrupt chunk size must not size the buffer */
	size_t buf_len = c->header.chunk_size < c->size ? c->header.chunk_size : c->size;
	uint8_t *buf = malloc(buf_len);
	if (!buf)
		return false;
	for (size_t i = 0; i < c->header.n_cpus; i++)
		if (c->streams[i].n_chunks > 1)
			qsort(c->streams[i].chunks, c->streams[i].n_chunks,
			      sizeof *c->streams[i].chunks, gtc_chunk_seq_cmp);
	uint64_t t0 = window_start(c, buf, buf_len);
	c->streams[c->header.n_cpus].exhausted = true;
	if (!t0) {
		free(buf);
		return true;
	}
	struct gt_tracker *tr = gt_tracker_new();
	bool ok = tr != NULL;
	if (c->n_keep > 1)
		qsort(c->keep, c->n_keep, sizeof *c->keep, gtc_chunk_seq_cmp);
	for (size_t k = 0; ok && k < c->n_keep; k++)
		ok = ring_collect(c, &c->keep[k], t0, buf, buf_len, &rs);
	for (size_t i = 0; ok && i < c->header.n_cpus; i++) {
		const struct cpu_stream *s = &c->streams[i];
		for (size_t k = 0; ok && k < s->n_chunks; k++)
			if (s->chunks[k].first_tsc <= t0 + c->reorder_ticks)
				ok = ring_collect(c, &s->chunks[k], t0, buf, buf_len, &rs);
	}
	free(buf);
	c->ring_t0 = c->stats.window_tsc = t0;
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
	struct gt_u64map last = {0};
	ok = ok && last_wait_states(&rs, &last);
	for (size_t i = 0; ok && i < rs.n; i++) {
		const struct gt_rec *r = (const void *)rs.v[i].bytes;
		if (wait_state(r->type) && *gt_u64map_find(&last, r->thread) != i + 1)
			continue; /* a thread's earlier begin or end: not its state at t0 */
		if (per_thread(r->type)) {
			struct gt_capture_record cr = {r, r + 1, rs.v[i].len - sizeof *r, 0, r->tsc, 0};
			ok = gt_tracker_fact(tr, &cr, NULL);
		} else if (r->type != GT_WAKE && r->type != GT_YIELD && r->type != GT_USER &&
			   r->type != GT_CAPTURE_END) {
			ok = ring_deliver(c, rs.v[i].bytes, rs.v[i].len);
		}
	}
	gt_u64map_free(&last);
	if (ok)
		ok = deliver_threads(c, tr);
	for (size_t i = 0; i < rs.n; i++)
		free(rs.v[i].bytes);
	free(rs.v);
	gt_tracker_free(tr);
	return ok;
}
