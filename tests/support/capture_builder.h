/* capture_builder: writes capture files in the exact format of include/gotrace/capture.h,
 * in memory, for tests and benchmarks.  Records go to the current chunk of their CPU; a
 * chunk that cannot hold the next record is closed and a new one handed out (chunk seq =
 * allocation order, as the recorder does).  Corruption helpers damage a written file. */
#ifndef GOTRACE_CAPTURE_BUILDER_H
#define GOTRACE_CAPTURE_BUILDER_H

#include <gotrace/capture.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gt_cb;

/* The arch a built capture says it was written on: this build's, as the tests give their
 * system calls this build's SYS_* numbers (the reader renumbers an aarch64 capture's). */
#define GT_CB_ARCH GT_ARCH_NATIVE

/* n_cpus CPUs, chunks of chunk_size bytes (multiple of 4096).  The clock is
 * CLOCK_MONOTONIC (timestamps are ns) starting at start_tsc unless gt_cb_set_clock. */
struct gt_cb *gt_cb_new(uint32_t n_cpus, uint32_t chunk_size, uint64_t start_tsc);
void gt_cb_free(struct gt_cb *cb);
struct gt_file_header *gt_cb_header(struct gt_cb *cb);
void gt_cb_set_clock(struct gt_cb *cb, enum gt_clock_source src, uint64_t tsc_hz);

/* From now on, write a record compact (capture.h "Compact records") when its compact form
 * stands for exactly it, else in full, as the recorder does; off (the default): all in full.
 * A version 1 capture (gt_cb_header(cb)->version = 1) must keep them all full. */
void gt_cb_set_compact(struct gt_cb *cb, bool on);
/* Records written compact so far. */
size_t gt_cb_compact_records(const struct gt_cb *cb);

/* Appends one record; returns its offset in the file, or 0 when it cannot (bad CPU). */
uint64_t gt_cb_record(struct gt_cb *cb, uint32_t cpu, uint8_t type, uint8_t aux, uint32_t thread,
		      uint64_t tsc, const void *payload, size_t payload_len);

uint64_t gt_cb_thread_new(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			  uint32_t child, uint32_t stack, uint64_t start_routine);
uint64_t gt_cb_thread_start(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			    uint32_t tid, uint64_t start_routine);
uint64_t gt_cb_thread_end(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread);
uint64_t gt_cb_thread_name(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			   const char *name);
uint64_t gt_cb_thread_existing(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			       int blocked, uint64_t start_routine);
uint64_t gt_cb_block_begin(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			   enum gt_block_kind kind, uint64_t obj, uint32_t stack);
uint64_t gt_cb_block_end(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			 enum gt_block_kind kind, uint64_t obj, enum gt_block_result result);
uint64_t gt_cb_wake(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
		    enum gt_block_kind kind, uint64_t obj, uint32_t count, uint32_t stack);
uint64_t gt_cb_syscall_begin(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			     enum gt_fd_kind fd_kind, uint32_t nr, int64_t arg, uint32_t stack);
uint64_t gt_cb_syscall_end(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			   uint32_t nr, int64_t result);
uint64_t gt_cb_yield(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread, uint32_t stack);
uint64_t gt_cb_stack(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t id, const uint64_t *pcs,
		     uint32_t n);
uint64_t gt_cb_module(struct gt_cb *cb, uint32_t cpu, uint64_t t, const char *path,
		      const uint8_t *build_id, uint16_t build_id_len, uint64_t base, uint64_t lo,
		      uint64_t hi, uint32_t flags);
uint64_t gt_cb_clock(struct gt_cb *cb, uint32_t cpu, uint64_t tsc, uint64_t mono_ns);
uint64_t gt_cb_notice(struct gt_cb *cb, uint32_t cpu, uint64_t t, enum gt_notice kind,
		      uint64_t value);
uint64_t gt_cb_user(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
		    enum gt_user_kind kind, uint64_t id, uint64_t parent, uint32_t stack,
		    const char *name, const char *msg);
/* GT_PROCESS_NAME: cmdline is cmdline_len bytes, arguments NUL-separated as
 * /proc/self/cmdline has them. */
uint64_t gt_cb_process_name(struct gt_cb *cb, uint32_t cpu, uint64_t t, enum gt_name_when when,
			    const char *comm, const char *cmdline, size_t cmdline_len);
uint64_t gt_cb_capture_end(struct gt_cb *cb, uint32_t cpu, uint64_t t);

/* The file image so far (header n_chunks and chunk used fields up to date). */
const uint8_t *gt_cb_image(struct gt_cb *cb, size_t *size);
/* Writes the image to path; 0 or -1. */
int gt_cb_write(struct gt_cb *cb, const char *path);

/* Corruption helpers on a written file: 0 or -1. */
int gt_cb_truncate(const char *path, uint64_t size);
int gt_cb_zero_range(const char *path, uint64_t off, uint64_t len);
int gt_cb_garbage(const char *path, uint64_t off, uint64_t len, uint64_t seed);

#endif
