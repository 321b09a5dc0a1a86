/* The reservation's slow path where it meets the file: a CPU's next chunk when its own is
 * full (gt_chunk_open, called by lifecycle.c's gt_reserve_slow), taken from a spare, the
 * flight recorder's ring or the file's growth (capture_file.c), and installed in the CPU's
 * slot with the clock pair and dropped-facts notice that ride along; and, when the file
 * cannot grow, the stop said in the header and a last notice. */
#include "chunk_refill.h"
#include "capture_budget.h"
#include "capture_file.h"
#include "clock.h"
#include "facts.h"
#include "fastpath.h"
#include "lifecycle.h"
#include "ring.h"

#include <sys/mman.h>

/* Where the stop notice goes when no chunk has room for it: a last chunk of one page (the
 * final trim keeps it that short).  NULL when not even a page fits. */
static uint64_t *last_page_chunk(uint64_t tsc)
{
	gt_growth_lock();
	uint64_t k = gt_load((_Atomic uint64_t *)&gt_cap.header->n_chunks);
	if (!gt_capture_back_page(k)) {
		gt_growth_unlock();
		return NULL;
	}
	gt_store((_Atomic uint64_t *)&gt_cap.header->n_chunks, k + 1);
	gt_growth_unlock();
	char *c = gt_chunk_addr(k);
	struct gt_chunk_header *h = (struct gt_chunk_header *)c;
	h->cpu = 0;
	h->seq = k;
	h->first_tsc = tsc;
	gt_store((_Atomic uint64_t *)&h->used, (uint64_t)GT_CHUNK_HEADER_SIZE + 16 + sizeof(struct gt_p_notice));
	atomic_store_explicit((_Atomic uint32_t *)&h->magic, GT_CHUNK_MAGIC, memory_order_release);
	return (uint64_t *)(c + GT_CHUNK_HEADER_SIZE);
}

void gt_capture_stopped(int err, uint64_t tsc)
{
	struct gt_file_header *h = gt_cap.header;
	h->stop_tsc = tsc;
	h->stop_errno = err;
	/* facts dropped before and not yet said in a notice: none can be written now */
	uint64_t rep = gt_load(&gt_cap.dropped_reported), d = gt_load(&gt_cap.dropped);
	if (d > rep && atomic_compare_exchange_strong(&gt_cap.dropped_reported, &rep, d))
		gt_add((_Atomic uint64_t *)&h->facts_lost, d - rep);
	atomic_fetch_or((_Atomic uint32_t *)&h->flags, GT_FILE_WRITE_FAILED);
	/* The notice goes into the first CPU chunk it fits in, else into a page of its own. */
	struct gt_p_notice n = {.value = (uint64_t)err};
	uint64_t *r = NULL;
	for (unsigned cpu = 0; cpu < h->n_cpus && !r; cpu++) {
		uintptr_t slot = gt_load(&gt_slots[cpu].off);
		if (!slot)
			continue; /* the full chunk */
		char *chunk = gt_slot_chunk(slot);
		_Atomic uint64_t *used = (_Atomic uint64_t *)(chunk + offsetof(struct gt_chunk_header, used));
		uint64_t off = gt_add(used, 16 + sizeof n);
		if (off + 16 + sizeof n <= gt_cap.chunk_limit)
			r = (uint64_t *)(chunk + off);
	}
	if (r || (r = last_page_chunk(tsc)))
		gt_fill(gt_writing_open(r, 16 + sizeof n), 0, GT_NOTICE, GT_NOTICE_WRITE_FAILED, tsc, &n,
			sizeof n);
}

/* A clock pair and a dropped-facts notice ride along in a new chunk when due. */
static uint32_t chunk_extras(uint64_t tsc, int *want_clock, uint64_t *dropped)
{
	uint32_t extra = 0;
	uint64_t last = gt_load(&gt_cap.last_clock_tsc);
	uint64_t period = gt_clock.tsc ? gt_clock.tsc_hz / 10 : 100000000ull;
	*want_clock = 0;
	if (tsc - last >= period &&
	    atomic_compare_exchange_strong(&gt_cap.last_clock_tsc, &last, tsc)) {
		*want_clock = 1;
		extra += 16 + sizeof(struct gt_p_clock);
	}
	uint64_t d = gt_load(&gt_cap.dropped), rep = gt_load(&gt_cap.dropped_reported);
	*dropped = 0;
	if (d > rep && atomic_compare_exchange_strong(&gt_cap.dropped_reported, &rep, d)) {
		*dropped = d - rep;
		extra += 16 + sizeof(struct gt_p_notice);
	}
	return extra;
}

void gt_write_clock(uint64_t *r)
{
	uint64_t tsc;
	struct gt_p_clock p;
	gt_clock_pair(&tsc, &p.mono_ns);
	p.real_ns = gt_real_ns();   /* right after */
	gt_fill(r, 0, GT_CLOCK, 0, tsc, &p, sizeof p);
}

/* Every chunk holds gt_cap.chunk_size bytes from now on: chunk 0's blocks are all allocated
 * (growth lock held) before the limit rises. */
static void widen_limit(void)
{
	__atomic_store_n(&gt_cap.chunk_limit, gt_cap.chunk_size, __ATOMIC_RELEASE);
}

static int may_grow(int final)
{
	int st = gt_load(&gt_state);
	return !gt_cap.truncated && gt_cap.header && (st == GT_ST_RECORDING || (final && st == GT_ST_STOPPED));
}

/* bytes from the GOTRACE_MAX_CAPTURE bound: 1, else 0 with the stop said in the header */
static int take_budget(uint64_t bytes, struct gt_file_error *e)
{
	if (gt_budget_take(bytes))
		return 1;
	atomic_fetch_or((_Atomic uint32_t *)&gt_cap.header->flags, GT_FILE_AT_BOUND);
	*e = (struct gt_file_error){"the captures reached the GOTRACE_MAX_CAPTURE bound", EFBIG};
	return 0;
}

/* Chunk 0, full at GT_FIRST_CHUNK, gets the rest of its stride: 1 when its writer may go on
 * in it (the reservation that failed leaves a gap of zero words, read as uncommitted). */
static int widen_first_chunk(int final, struct gt_file_error *e)
{
	gt_growth_lock();
	int ok = may_grow(final);
	if (ok && gt_cap.chunk_limit < gt_cap.chunk_size) {
		uint64_t rest = gt_cap.chunk_size - gt_cap.chunk_limit;
		ok = take_budget(rest, e);
		if (ok && gt_capture_back_chunks(1, gt_cap.chunk_size, e) < 0) {
			gt_budget_give_back(rest);
			ok = 0;
		}
	}
	if (ok)
		widen_limit();
	gt_growth_unlock();
	return ok;
}

static char *new_chunk(int first, struct gt_file_error *e);

/* A chunk for `cpu`: the spare a thread that lost an install gave back, else the next one
 * of the file (grown and prefaulted, only its first GT_FIRST_CHUNK bytes when it is the
 * CPU's first chunk: its other pages fault when reached, their blocks allocated already, so
 * that a store there cannot meet a full disk).  NULL when recording is over or the file
 * cannot grow. */
static char *chunk_take(int final, int first, struct gt_file_error *e)
{
	gt_growth_lock();
	if (!may_grow(final)) {
		gt_growth_unlock();
		return NULL;
	}
	char *spare = gt_cap.n_spares ? gt_cap.spares[--gt_cap.n_spares] : NULL;
	if (!spare && gt_ring_on())
		spare = gt_ring_reuse();
	if (spare) {
		gt_growth_unlock();
		return spare;
	}
	char *c = new_chunk(first, e);
	gt_growth_unlock();
	return c;
}

char *gt_chunk_new_locked(struct gt_file_error *e) { return new_chunk(0, e); }

/* The next chunk of the file (growth lock held), prefaulted whole or, when first, its
 * first GT_FIRST_CHUNK bytes. */
static char *new_chunk(int first, struct gt_file_error *e)
{
	uint64_t k = gt_load((_Atomic uint64_t *)&gt_cap.header->n_chunks);
	if (k >= gt_cap.max_chunks) {
		*e = (struct gt_file_error){"capture reached its size limit: ", ENOSPC};
		return NULL;
	}
	/* chunk k, and the rest of chunk 0 when it is still small (allocated with this one) */
	uint64_t bytes = k ? gt_cap.chunk_size : gt_cap.chunk_limit;
	if (k && gt_cap.chunk_limit < gt_cap.chunk_size)
		bytes += gt_cap.chunk_size - gt_cap.chunk_limit;
	if (!take_budget(bytes, e))
		return NULL;
	if (gt_capture_back_chunks(k + 1, k ? gt_cap.chunk_size : gt_cap.chunk_limit, e) < 0) {
		gt_budget_give_back(bytes);
		return NULL;
	}
	if (k && gt_cap.chunk_limit < gt_cap.chunk_size) /* chunk 0 was allocated with this one */
		widen_limit();
	gt_store((_Atomic uint64_t *)&gt_cap.header->n_chunks, k + 1);

	char *c = gt_chunk_addr(k);
	/* one system call maps the whole chunk instead of a page fault per 4 KiB on the fast
	 * path (kernels before 5.14 refuse it: the faults then happen as before) */
	uint32_t prefault = first && GT_FIRST_CHUNK < gt_cap.chunk_size ? GT_FIRST_CHUNK : gt_cap.chunk_size;
	gt_sys3(SYS_madvise, c, prefault, 23 /* MADV_POPULATE_WRITE */);
	return c;
}

/* A chunk that lost its install goes to the next turnover (if a spare is already waiting,
 * the older one stays unused: magic 0, which the reader counts). */
/* A chunk taken and not installed, kept for the next turnover (one spare alone, each lost
 * race of a turnover that several threads met dropped the one before: a chunk of the file
 * never used, a ring's chunk never reused).  Past GT_SPARES it is left unused. */
static void give_back(char *c)
{
	gt_growth_lock();
	if (gt_cap.n_spares < GT_SPARES)
		gt_cap.spares[gt_cap.n_spares++] = c;
	gt_growth_unlock();
}

/* Several threads may find the same chunk full (a thread is preempted while it opens one, or
 * files facts under a CPU it just left).  A new chunk replaces only the chunk its opener saw
 * full (a CAS), and its seq is taken after that chunk was seen, so a CPU's chunks in seq
 * order are its records in the order they were reserved.  A thread that loses reserves in
 * the winner's chunk and gives its own back for the next turnover. */
uint64_t *gt_chunk_open(unsigned cpu, uint32_t nbytes, uint64_t tsc, int final, struct gt_file_error *e)
{
	int want_clock;
	uint64_t dropped;
	uint32_t extra;
	char *c = NULL, *seen;
	uintptr_t seen_off;
	struct gt_chunk_header *h;
	e->err = 0;
	for (;;) {
		seen_off = gt_load(&gt_slots[cpu].off);
		seen = gt_slot_chunk(seen_off);
		uint64_t off = gt_add((_Atomic uint64_t *)(seen + offsetof(struct gt_chunk_header, used)), nbytes);
		if (off + nbytes <= gt_cap.chunk_limit) {
			if (c) /* another thread installed a chunk meanwhile */
				give_back(c);
			return (uint64_t *)(seen + off);
		}
		if (!c && seen_off && seen == gt_chunk_addr(0) && gt_cap.chunk_limit < gt_cap.chunk_size) {
			if (widen_first_chunk(final, e))
				continue;
			return NULL;
		}
		if (!c && !(c = chunk_take(final, !seen_off, e)))
			return NULL;
		h = (struct gt_chunk_header *)c;
		extra = chunk_extras(tsc, &want_clock, &dropped);
		h->cpu = cpu;
		h->seq = gt_add(&gt_cap.install_seq, 1);
		h->first_tsc = tsc;
		gt_store((_Atomic uint64_t *)&h->used, (uint64_t)GT_CHUNK_HEADER_SIZE + extra + nbytes);
		atomic_store_explicit((_Atomic uint32_t *)&h->magic, GT_CHUNK_MAGIC, memory_order_release);
		uintptr_t expected = seen_off;
		if (atomic_compare_exchange_strong(&gt_slots[cpu].off, &expected, gt_slot_off(c)))
			break;
		/* lost: the extras are due again for the next chunk */
		if (want_clock)
			gt_store(&gt_cap.last_clock_tsc, 0);
		if (dropped)
			atomic_fetch_sub(&gt_cap.dropped_reported, dropped);
		atomic_store_explicit((_Atomic uint32_t *)&h->magic, 0, memory_order_relaxed);
	}
	uint64_t *p = (uint64_t *)(c + GT_CHUNK_HEADER_SIZE);
	if (want_clock) {
		gt_write_clock(gt_writing_open(p, 16 + sizeof(struct gt_p_clock)));
		p += (16 + sizeof(struct gt_p_clock)) / 8;
	}
	if (dropped) {
		struct gt_p_notice n = {.value = dropped};
		gt_fill(gt_writing_open(p, 16 + sizeof n), 0, GT_NOTICE, GT_NOTICE_DROPPED, tsc, &n, sizeof n);
		p += (16 + sizeof n) / 8;
	}
	if (seen_off && gt_ring_on()) {
		gt_growth_lock();
		gt_ring_retired(seen, tsc);
		gt_growth_unlock();
	}
	if (seen_off) {
		/* The old chunk is full: drop its pages from our mapping (they stay in the file;
		 * a late writer refaults them), so memory stays bounded by CPUs x chunk size. */
		gt_sys3(SYS_madvise, seen, gt_cap.chunk_size, MADV_DONTNEED);
	}
	return p;
}
