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

#include "encoder.h"

/* The record i places after the one gt_capture_next delivered last (0: the next one), as
 * gt_capture_next will deliver it, without consuming anything; valid until the
 * gt_capture_next call that moves past it.  false at the end of the stream or beyond the
 * lookahead: 4095 records, and 1 MiB of record bytes counting the delivered one. */
bool gt_capture_peek(struct gt_capture *c, size_t i, struct gt_capture_record *out);
/* After gt_capture_peek(c, i) returned false: true when the stream has no record i (it ends
 * before), false when record i is only beyond the lookahead. */
bool gt_capture_peek_ended(const struct gt_capture *c, size_t i);
/* The bytes the record gt_capture_next delivered last takes in the file: fewer than its
 * rec->nwords say when it was compact there (capture.h, version 2); 0 before the first. */
uint32_t gt_capture_file_bytes(const struct gt_capture *c);
/* Minimum payload bytes of a record type (the fixed struct); -1 for unknown types. */
int gt_capture_min_payload(uint8_t type);

#endif
