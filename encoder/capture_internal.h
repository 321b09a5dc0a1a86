/* capture_internal: the capture reader's private state, shared by its parts (capture_reader.h
 * is the API).
 *
 *   capture_reader.c   open, the per-CPU streams, the reorder heaps, the merge, the lookahead
 *   capture_compact.c  records as the file holds them: validation, compact forms expanded,
 *                      one-word ends given the obj or nr of the wait they close
 *   capture_ring.c     a ring capture's state at its window's start (the summary stream)
 *
 * Names with the gtc_ prefix are internal to these files. */
#ifndef GOTRACE_CAPTURE_INTERNAL_H
#define GOTRACE_CAPTURE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture_reader.h"
#include "common/u64map.h"

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
	uint64_t head_key;         /* its next record's tsc, for the merge heap (stream_set_head) */
	bool head_returned;        /* that record was stamped after its call returned */
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
	/* ring captures: the window starts after ring_t0 (0: the whole capture, stats'
	 * window_tsc);
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

/* Words a compact record's expansion is written into: more than an expansion takes (5), as
 * many as the largest fixed part gtc_record_parse looks at. */
#define EXP_WORDS 8

/* capture_compact.c */
/* The record at p (avail readable bytes) in a chunk whose first_tsc is base: its length in
 * the chunk, 0 when it does not parse.  *full is the full record (p, or exp holding a compact
 * record's expansion: capture.h), *full_len its length; *open says whether a one-word end's
 * obj or nr is its open wait's (gt_compact_open). */
size_t gtc_record_parse(const struct gt_capture *c, const uint8_t *p, size_t avail, uint64_t base,
			struct gt_u64map *near, uint64_t exp[EXP_WORDS], const uint8_t **full,
			size_t *full_len, uint8_t *open);
/* The record in slot leaves the merge: its thread's open wait follows it, and a one-word end
 * or wake takes the obj or nr it stands for. */
void gtc_open_waits(struct gt_capture *c, uint32_t slot);
/* A SYSCALL record of an aarch64 capture leaving the merge (after gtc_open_waits): its call
 * numbered as the conversion numbers calls (x86-64's, syscalls.h). */
void gtc_canonical_syscall(struct gt_capture *c, uint32_t slot);

/* capture_reader.c */
bool gtc_slot_take(struct gt_capture *c, size_t len, uint32_t *out);
void gtc_slot_put(struct gt_capture *c, uint32_t slot);
bool gtc_held_push(struct cpu_stream *s, struct heap_item it);
size_t gtc_held_cost(size_t len);
int gtc_chunk_seq_cmp(const void *a, const void *b);

/* capture_ring.c */
/* Where the window starts (ring_t0), and the summary stream (capture_reader.h) from the keep
 * chunks and what the CPU chunks still hold at or before it; false when memory runs out. */
bool gtc_ring_summary(struct gt_capture *c);

#endif
