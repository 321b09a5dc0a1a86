/* The flight recorder: CPU chunks reused oldest first, and keep chunks for what outlives the
 * window (capture.h, "Ring captures").
 *
 * A chunk enters the ring when its CPU replaces it (gt_ring_retired, in replacement order).
 * It is reused only when the window is full -- GOTRACE_LAST's bytes of chunks, or a
 * replacement older than its duration -- and only after RING_QUARANTINE later replacements:
 * a writer that reserved in it before it was replaced has that long to commit (the fast path
 * counts no commits; a writer preempted longer than that may write into its next use).
 * A chunk in which a record not committed yet lies before committed ones (a writer still at
 * work) goes to the back of the queue instead, up to RING_DEFER_MAX times; then it leaves the
 * ring for good, whole: a writer stopped that long commits into it whenever it goes on (into
 * the chunk's next use, over a record written there since, if it were reused), and one that
 * died there costs the file that chunk.  Reuse, all under the growth lock:
 *   1. ring_lost_tsc is raised to the time it was replaced, after its every record's stamp
 *      (a crash now leaves the chunk whole, its records the state before the window);
 *   2. one pass appends what outlives the window to the keep chunks, each record committed as
 *      the writers commit theirs, and after it each thread's last state record (a crash now
 *      leaves some twice: readers drop the duplicate);
 *   3. ring_lost_tsc is raised again to a later stamp of the chunk, if any (CPU clocks differ
 *      by a few hundred ticks);
 *   4. the magic is cleared (readers skip the chunk), the chunk zeroed (a reservation never
 *      committed in its next use reads as zero words, not as an old record), and handed to
 *      gt_chunk_open, which installs it with a new seq. */
#include "ring.h"
#include "clock.h"

#include <string.h>

#define RING_QUARANTINE 4u
#define RING_FIFO 16384u          /* retired chunks the ring holds at most */
#define SCRATCH 8192u             /* threads one chunk's scan tracks (more: carried whole) */
#define RING_DEFER_MAX 3u         /* reuses of a chunk put off for an uncommitted record, then
				   * it is set aside */

struct retired {
	char *chunk;
	uint64_t tsc;
	uint32_t deferred;        /* reuses put off: a record in it was not committed yet */
};
/* The ring's state, under the growth lock: the retired chunks in replacement order, the keep
 * chunk being filled (NULL: none yet), and the chunks set aside (out of the ring for good) */
static struct {
	struct retired fifo[RING_FIFO];
	uint32_t first, n;
	char *keep;
	uint64_t keep_used, keep_chunks, keep_seq, set_aside;
} ring;
/* The scan of one chunk: per thread, serial + 1, the offset and time of its last state
 * record (off 0: none yet) and its latest time so far (a compact record's near, capture.h),
 * valid in the scan of its generation (no clearing between scans); the slots taken, in
 * order. */
static struct {
	struct {
		uint32_t key, off, gen;
		uint64_t state_tsc, near;
	} slot[SCRATCH];
	uint32_t gen, used[SCRATCH], n_used;
} scan;

void gt_ring_setup(struct gt_file_header *h)
{
	if (!gt_ring_on())
		return;
	h->ring_bytes = gt_cfg.last_bytes;
	h->ring_ns = gt_cfg.last_ns;
	h->ring_lost_tsc = 0;
	h->flags |= GT_FILE_RING;
}

void gt_ring_retired(char *chunk, uint64_t tsc)
{
	if (ring.n == RING_FIFO) /* never: reuse takes the oldest first (gt_ring_reuse) */
		return;
	ring.fifo[(ring.first + ring.n++) % RING_FIFO] = (struct retired){chunk, tsc, 0};
}

void gt_ring_forget(void)
{
	ring.first = ring.n = 0;
	ring.keep = NULL;
	ring.keep_used = ring.keep_chunks = ring.keep_seq = ring.set_aside = 0;
}

enum carry { C_DROP, C_KEEP, C_STATE };

static enum carry carry_kind(uint8_t type)
{
	switch (type) {
	case GT_THREAD_NEW: case GT_THREAD_START: case GT_THREAD_EXISTING: case GT_THREAD_NAME:
	case GT_STACK: case GT_MODULE: case GT_MODULE_UNLOAD: case GT_CLOCK: case GT_NOTICE:
	case GT_PROCESS: case GT_PROCESS_NAME: case GT_FD:
		return C_KEEP;
	case GT_BLOCK_BEGIN: case GT_BLOCK_END: case GT_SYSCALL_BEGIN: case GT_SYSCALL_END:
	case GT_THREAD_END:
		return C_STATE;
	default:
		return C_DROP;
	}
}

/* The scratch slot of thread (taken for it in this scan if need be), or SCRATCH when the table
 * is full. */
static uint32_t scratch_of(uint32_t thread)
{
	uint32_t i = (thread * 0x9E3779B9u) % SCRATCH, k = 0;
	while (k < SCRATCH && scan.slot[i].gen == scan.gen && scan.slot[i].key != thread + 1)
		i = (i + 1) % SCRATCH, k++;
	if (k == SCRATCH)
		return SCRATCH;
	if (scan.slot[i].gen != scan.gen) {
		scan.used[scan.n_used++] = i;
		scan.slot[i].key = thread + 1, scan.slot[i].off = 0, scan.slot[i].gen = scan.gen;
		scan.slot[i].near = 0;
	}
	return i;
}

/* The record at off, committed and plausible: its length in the chunk, else 0 (skip a word).
 * *full is the full record it is (a compact one expanded into exp, capture.h, its timestamp
 * told by near, 0 for the chunk's first_tsc): what the keep chunks receive, as their records
 * have no base to be compact against (a one-word end's obj or nr stays 0 there: the summary
 * takes no end but as a thread's last state). */
static uint32_t record_at(const char *c, uint64_t off, uint64_t end, uint64_t lo, uint64_t hi,
			  uint64_t near, uint64_t exp[5], const struct gt_rec **full)
{
	const struct gt_rec *r = (const struct gt_rec *)(c + off);
	uint64_t w = atomic_load_explicit((_Atomic uint64_t *)r, memory_order_acquire);
	if (!w)
		return 0;
	uint32_t clen = 0;
	if (w & GT_COMPACT_BIT) {
		uint64_t base = ((const struct gt_chunk_header *)c)->first_tsc;
		clen = gt_compact_words(w) * 8;
		if (off + clen > end)
			return 0;
		gt_compact_expand((const uint64_t *)r, base, exp);
		exp[1] = gt_compact_tsc(w, base, near);
		r = (const struct gt_rec *)exp;
	}
	*full = r;
	int minp = gt_fact_min_payload(r->type);
	uint32_t len = (uint32_t)r->nwords * 8, in_chunk = clen ? clen : len;
	if (minp < 0 || r->nwords < 2 || r->nwords > GT_MAX_RECORD_WORDS || off + in_chunk > end ||
	    len - 16 < (uint32_t)minp || r->thread >= (1u << 24) || r->tsc < lo || r->tsc > hi)
		return 0;
	return in_chunk;
}

/* A copy of the record into the keep chunks: 0, or -1 when no keep chunk could be had. */
static int keep_put(const char *rec, uint32_t len)
{
	if (!ring.keep || ring.keep_used + len > gt_cap.chunk_size) {
		struct gt_file_error e;
		char *k = gt_chunk_new_locked(&e);
		if (!k)
			return -1;
		struct gt_chunk_header *h = (struct gt_chunk_header *)k;
		h->cpu = 0;
		h->seq = ring.keep_seq++;
		h->first_tsc = ((const struct gt_rec *)rec)->tsc;
		gt_store((_Atomic uint64_t *)&h->used, (uint64_t)GT_CHUNK_HEADER_SIZE);
		atomic_store_explicit((_Atomic uint32_t *)&h->magic, GT_KEEP_MAGIC, memory_order_release);
		ring.keep = k;
		ring.keep_used = GT_CHUNK_HEADER_SIZE;
		ring.keep_chunks++;
	}
	uint64_t *r = gt_writing_open((uint64_t *)(ring.keep + ring.keep_used), len);
	memcpy(r + 1, rec + 8, len - 8);
	gt_commit(r, *(const uint64_t *)rec);
	ring.keep_used += len;
	atomic_store_explicit((_Atomic uint64_t *)&((struct gt_chunk_header *)ring.keep)->used,
			      ring.keep_used, memory_order_release);
	return 0;
}

static void raise_lost(uint64_t tsc)
{
	_Atomic uint64_t *lost = (_Atomic uint64_t *)&gt_cap.header->ring_lost_tsc;
	uint64_t was = gt_load(lost);
	while (tsc > was && !atomic_compare_exchange_weak(lost, &was, tsc))
		;
}

/* Zero words of chunk c from `from` up to a committed record at `to`: 1 when they may be a
 * record a writer has not committed yet; 0 when they are the reservations that met chunk 0's
 * first limit (GT_FIRST_CHUNK) and were abandoned when it was widened (chunk_refill.c), which
 * nobody commits.  (A writer's record there is not seen, as one at a chunk's end is not.) */
static int uncommitted(const char *c, uint64_t from, uint64_t to)
{
	return !(GT_FIRST_CHUNK < gt_cap.chunk_size && c == gt_chunk_addr(0) && from <= GT_FIRST_CHUNK &&
		 to > GT_FIRST_CHUNK);
}

/* Steps 1-3 of the reuse (above) for chunk c, replaced at retired_tsc: 0; 1 when a record not
 * committed yet lies before committed ones (a writer still at work, or one that died there:
 * the caller puts the reuse off or sets the chunk aside, the chunk stays whole, what was
 * carried will be carried again or stays a duplicate, which readers drop); -1 when the keep
 * chunks cannot grow (the chunk stays whole).  Its records were reserved before it was
 * replaced and stamped before that: ring_lost_tsc is raised to retired_tsc first, and after
 * the scan to any later stamp another CPU's clock gave. */
static int carry(char *c, uint64_t retired_tsc, uint64_t now)
{
	struct gt_chunk_header *h = (struct gt_chunk_header *)c;
	uint64_t used = atomic_load_explicit((_Atomic uint64_t *)&h->used, memory_order_acquire);
	uint64_t end = (used < gt_cap.chunk_size ? used : gt_cap.chunk_size) & ~7ull;
	uint64_t hz = gt_clock.tsc ? gt_clock.tsc_hz : 1000000000ull;
	uint64_t lo = gt_cap.header->start_tsc > hz ? gt_cap.header->start_tsc - hz : 0, hi = now + hz;
	uint64_t latest = 0, zero_from = 0; /* where the zero words before the record began */
	raise_lost(retired_tsc);
	scan.gen++;
	scan.n_used = 0;
	uint64_t exp[5];
	const struct gt_rec *r;
	for (uint64_t off = GT_CHUNK_HEADER_SIZE; off + 8 <= end;) {
		uint64_t w = *(const uint64_t *)(c + off);
		/* the thread from word 0 (bits 8-27 of a compact record's, 32-63 of a full
		 * one's), for its near */
		uint32_t i = w ? scratch_of((w & GT_COMPACT_BIT) ? (uint32_t)(w >> 8) & (GT_C_THREAD_MAX - 1)
							      : (uint32_t)(w >> 32)) : SCRATCH;
		uint32_t len = record_at(c, off, end, lo, hi, i < SCRATCH ? scan.slot[i].near : 0, exp, &r);
		if (!len) {
			if (!w && !zero_from)
				zero_from = off;
			off += 8;
			continue;
		}
		if (zero_from && uncommitted(c, zero_from, off))
			return 1;
		zero_from = 0;
		if (r->tsc > latest)
			latest = r->tsc;
		if (i < SCRATCH && r->tsc > scan.slot[i].near)
			scan.slot[i].near = r->tsc;
		enum carry kind = carry_kind(r->type);
		if (kind == C_STATE && i < SCRATCH)
			scan.slot[i].off = (uint32_t)off, scan.slot[i].state_tsc = r->tsc;
		else if (kind == C_STATE)
			kind = C_KEEP; /* more threads than the table: carried whole */
		if (kind == C_KEEP && keep_put((const char *)r, (uint32_t)r->nwords * 8) < 0)
			return -1;
		off += len;
	}
	for (uint32_t k = 0; k < scan.n_used; k++) {
		/* valid in the scan above: committed records do not change */
		uint32_t i = scan.used[k];
		if (scan.slot[i].off &&
		    record_at(c, scan.slot[i].off, end, lo, hi, scan.slot[i].state_tsc, exp, &r) &&
		    keep_put((const char *)r, (uint32_t)r->nwords * 8) < 0)
			return -1;
	}
	raise_lost(latest);
	return 0;
}

char *gt_ring_reuse(void)
{
	if (ring.n <= RING_QUARANTINE)
		return NULL;
	unsigned cpu;
	uint64_t now = gt_now(&cpu);
	struct retired *old = &ring.fifo[ring.first];
	if (ring.n < RING_FIFO) {
		uint64_t in_ring = gt_load((_Atomic uint64_t *)&gt_cap.header->n_chunks) - ring.keep_chunks -
				   ring.set_aside;
		if (gt_cfg.last_bytes && in_ring * gt_cap.chunk_size < gt_cfg.last_bytes)
			return NULL;
		uint64_t window = gt_clock.tsc ? (uint64_t)((double)gt_cfg.last_ns * (double)gt_clock.tsc_hz / 1e9)
					       : gt_cfg.last_ns;
		if (gt_cfg.last_ns && now - old->tsc < window)
			return NULL;
	}
	char *c = old->chunk;
	int carried = carry(c, old->tsc, now);
	if (carried < 0)
		return NULL;
	struct retired was = *old;
	ring.first = (ring.first + 1) % RING_FIFO;
	ring.n--;
	if (carried) {
		/* to the back of the queue, whole (its records are before the window now), or out
		 * of the ring: a new chunk this time */
		if (++was.deferred <= RING_DEFER_MAX)
			ring.fifo[(ring.first + ring.n++) % RING_FIFO] = was;
		else
			ring.set_aside++;
		return NULL;
	}
	struct gt_chunk_header *h = (struct gt_chunk_header *)c;
	atomic_store_explicit((_Atomic uint32_t *)&h->magic, 0, memory_order_release);
	memset(c + sizeof h->magic, 0, gt_cap.chunk_size - sizeof h->magic);
	return c;
}
