/* capture_reader: streams the records of a capture file (include/gotrace/capture.h) in one
 * global timestamp order.
 *
 * Each CPU's chunks are walked in seq order through a small pread window; each record is
 * copied out of it once (a compact one expanded into its full record), into a slot of one
 * pool, where it stays until it has been
 * delivered.  Memory does not grow with the file and the page cache is never mapped.
 * Damage is tolerated and counted: zero words (uncommitted records), garbage (unknown type,
 * impossible length or payload, implausible timestamp) skipped word by word until a record
 * parses again, torn tails, truncated or foreign chunks.  Records of one CPU are only roughly
 * ordered (a thread may be preempted between its timestamp and its reservation), so each
 * CPU stream goes through a reorder heap bounded by time (1 s) and memory (48 MiB for all
 * streams, counted when hit); what is still out of order is clamped.
 *
 * A ring capture (GT_FILE_RING, a flight recorder's) starts with a summary, stamped at the
 * window's start (ring_lost_tsc): clock pairs, modules, stacks, notices and process facts, then
 * each thread alive then as a THREAD_EXISTING with its name, then the BLOCK_BEGIN or
 * SYSCALL_BEGIN of each thread blocked then; the CPU chunks' records after it follow.
 *
 * The one reorder stage is this reader's: a consumer that needs to see the future (the
 * model, to choose which waiter a release wakes) peeks into the merged stream instead of
 * buffering its own copy. */
#ifndef GOTRACE_CAPTURE_READER_H
#define GOTRACE_CAPTURE_READER_H

#include <gotrace/capture.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gt_capture;

struct gt_capture_stats {
	uint64_t records;            /* records delivered */
	uint64_t chunks;             /* chunks with a valid header */
	uint64_t chunks_unused;      /* chunks never handed out (magic 0) */
	uint64_t chunks_bad;         /* foreign magic or impossible CPU: skipped whole */
	uint64_t chunks_truncated;   /* cut by the end of the file */
	uint64_t bytes_zero;         /* zero words skipped (uncommitted records) */
	uint64_t bytes_garbage;      /* bytes skipped while resynchronising */
	uint64_t resyncs;            /* times a valid record was found again after garbage */
	uint64_t torn_tails;         /* chunks ending in a partial record */
	uint64_t reordered;          /* records later than the reorder bound, clamped */
	uint64_t reorder_capped;     /* times the reorder memory cap released records early */
	uint64_t open_unknown;       /* one-word ends whose wait the reader did not see begin,
				      * or descriptors without an FD record (capture.h, version
				      * 3): obj, nr or key 0 */
	uint64_t bytes_total;        /* record bytes the valid chunks hold (for progress) */
	uint64_t bytes_read;         /* record bytes read so far (with bytes_zero and
				      * bytes_garbage: the part of bytes_total consumed) */
	/* ring captures (capture.h GT_FILE_RING) */
	uint64_t chunks_keep;        /* keep chunks */
	uint64_t ring_summary;       /* records that give the state at the window's start */
	uint64_t before_window;      /* CPU chunks' records at or before it, not delivered */
};

/* One record in merged order.  rec stays valid until the next gt_capture_next call (a peek
 * does not move it).  tsc may be raised above rec->tsc to keep its stream ordered. */
struct gt_capture_record {
	const struct gt_rec *rec;
	const void *payload;
	size_t payload_len;
	uint32_t cpu;
	uint64_t tsc;
	uint32_t capture;           /* index in a capture set (capture_set.h); 0 otherwise */
};

/* Opens path.  On error returns NULL and writes one line (no newline) into err. */
struct gt_capture *gt_capture_open(const char *path, char *err, size_t errlen);
const struct gt_file_header *gt_capture_header(const struct gt_capture *c);
/* true when the file ends inside its header, before the chunks the header counts, or
 * inside a chunk in use (final once every record has been read) */
bool gt_capture_truncated(const struct gt_capture *c);
/* Next record in timestamp order; false at the end. */
bool gt_capture_next(struct gt_capture *c, struct gt_capture_record *out);
/* The record i places after the one gt_capture_next delivered last (0: the next one), as
 * gt_capture_next will deliver it, without consuming anything; valid until the
 * gt_capture_next call that moves past it.  false at the end of the stream or beyond the
 * lookahead: 4095 records, and 1 MiB of record bytes counting the delivered one. */
bool gt_capture_peek(struct gt_capture *c, size_t i, struct gt_capture_record *out);
/* After gt_capture_peek(c, i) returned false: true when the stream has no record i (it ends
 * before), false when record i is only beyond the lookahead. */
bool gt_capture_peek_ended(const struct gt_capture *c, size_t i);
void gt_capture_stats(const struct gt_capture *c, struct gt_capture_stats *out);
/* The bytes the record gt_capture_next delivered last takes in the file: fewer than its
 * rec->nwords say when it was compact there (capture.h, version 2); 0 before the first. */
uint32_t gt_capture_file_bytes(const struct gt_capture *c);
void gt_capture_close(struct gt_capture *c);

/* Minimum payload bytes of a record type (the fixed struct); -1 for unknown types. */
int gt_capture_min_payload(uint8_t type);

#endif
