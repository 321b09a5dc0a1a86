/* gowire: the wire writers' one interface, and the "go 1.19 trace" writer
 * (GO-TRACE-FORMAT.md §1); gowire_v2.c writes "go 1.22 trace" behind the same calls.
 *
 * Shaped like Go's runtime tracebuf: one buffer per P, each flushed as a batch
 * (EvBatch(P, base ticks) followed by events whose timestamps are deltas), unsigned LEB128
 * varints, the count/length framing of §1.3, strings and stacks interned and defined once
 * inside batches, and exactly one Frequency in the last batch.  The writer knows nothing
 * about threads: the model decides which event goes to which P at which tick.
 */
#ifndef GOTRACE_GOWIRE_H
#define GOTRACE_GOWIRE_H

#include <gotrace/capture.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "encoder.h"

#define GT_WIRE_MAX_FRAMES GT_MAX_STACK_DEPTH  /* the capture's cap (Go 1.24 profiles) */
#define GT_WIRE_MAX_PAYLOAD 2048u      /* Go 1.23+ limit on any length-prefixed payload */
#define GT_WIRE_MAX_NAME 1024u         /* the runtime keeps the last 1024 bytes of names */
#define GT_WIRE_FREQUENCY_NS 1000000000u

struct gt_wire_frame {
	uint64_t pc;
	const char *func;
	const char *file;
	uint32_t line;
};

struct gt_wire;

/* The "go 1.22 trace" writer (gowire_v2.c), behind the same calls: one M per thread, a
 * generation closed every generation_ns ticks or generation_bytes of events (0: 1 s, 4 MiB),
 * each with its own string and stack tables and Frequency (frequency(ctx) when the
 * generation starts: the clock fit so far; NULL: 1e9). */
struct gt_wire_v2_options {
	uint64_t generation_ns;
	uint64_t generation_bytes;
	uint64_t (*frequency)(const void *ctx);
	const void *frequency_ctx;
};
struct gt_wire *gt_wire_open_v2(int fd, uint32_t n_ps, const struct gt_wire_v2_options *opt);
/* Sets the frequency source of a 1.22+ writer (no effect on a 1.19 one). */
void gt_wire_frequency_source(struct gt_wire *w, uint64_t (*frequency)(const void *ctx),
			      const void *ctx);

/* Writes to fd (not closed by the writer).  n_ps: P ids 0 .. n_ps-1 may be used, plus
 * GT_WIRE_P_NONE.  The 16-byte header is written at once.  Returns NULL on ENOMEM. */
struct gt_wire *gt_wire_open(int fd, uint32_t n_ps);

/* Who performs an event: the thread whose goroutine is g (0: none known) and its kernel
 * thread id (0: unknown).  The 1.19 writer has no threads (a P is what runs) and ignores
 * it; the 1.22+ writer writes the event on that thread's M. */
struct gt_wire_actor {
	uint64_t g;
	uint32_t tid;
};

/* What a goroutine waits for, for the 1.22+ writer's block reason: passed after a GoBlock*
 * event's stack (args[nargs + 1], beyond what the 1.19 writer reads).  kind: the capture's
 * enum gt_block_kind, or GT_WIRE_WAIT_NET / GT_WIRE_WAIT_CHILD for a syscall that waited
 * (its number and descriptor kind then say on what). */
#define GT_WIRE_WAIT_NET 100u     /* a read, write or poll woken through a pipe or socket */
#define GT_WIRE_WAIT_CHILD 102u   /* wait4/waitid for a child whose end is known */
#define GT_WIRE_WAIT_UNTRACED 103u  /* off its CPU, by the kernel, with no hook around it */
#define GT_WIRE_WAIT(kind, sys_nr, fd_kind) \
	((uint64_t)(kind) | (uint64_t)(fd_kind) << 8 | (uint64_t)(uint32_t)(sys_nr) << 16)
/* A GoSysCall that did not block passes its end (absolute ticks) after its stack, 0 when a
 * GoSysBlock follows: the 1.22+ format draws a syscall from its begin to its end. */

/* A timed event on P p at absolute ticks.  args: the type's arguments (nargs, then the
 * stack id when has_stack).  Ticks below the P's last tick are raised to it (counted). */
void gt_wire_event(struct gt_wire *w, uint64_t p, enum gt_go_event ev, uint64_t ticks,
		   const uint64_t *args);
/* The same, performed by who (NULL: the goroutine running on p). */
void gt_wire_event_by(struct gt_wire *w, uint64_t p, enum gt_go_event ev, uint64_t ticks,
		      const uint64_t *args, const struct gt_wire_actor *who);

/* UserLog: the event (task id, key string id, stack) followed, outside its length, by the
 * message bytes (§1.3). */
void gt_wire_user_log(struct gt_wire *w, uint64_t p, uint64_t ticks, uint64_t task, uint64_t key,
		      uint64_t stack, const char *msg, size_t len);

/* Interned string id (1, 2, ...) for len bytes of s; defines it on first use.  Empty
 * strings are id 0; names longer than GT_WIRE_MAX_NAME keep their last bytes. */
uint64_t gt_wire_string(struct gt_wire *w, const char *s, size_t len);
uint64_t gt_wire_cstring(struct gt_wire *w, const char *s);

/* Defines stack id (chosen by the caller) with frames innermost first, cut to the caps:
 * the innermost frames that fit and the outermost one.  n == 0 writes nothing. */
void gt_wire_define_stack(struct gt_wire *w, uint64_t id, const struct gt_wire_frame *frames,
			  size_t n);
/* Interned stack by content (PCs identify frames): ids from id_base upward.  Returns the
 * id, defining it on first use. */
uint64_t gt_wire_stack(struct gt_wire *w, const struct gt_wire_frame *frames, size_t n);
void gt_wire_set_stack_id_base(struct gt_wire *w, uint64_t id_base);

/* A CPU sample (where a thread was running, from the kernel's samples) at absolute ticks:
 * on P p (GT_WIRE_P_NONE: none), of who (its G, 0: none; its thread), with a stack id of
 * gt_wire_stack.  Samples are instants apart from the scheduling events: 1.19 writes them
 * in batches of their own (EvCPUSample), 1.22+ in each generation's CPU samples batch. */
void gt_wire_cpu_sample(struct gt_wire *w, uint64_t ticks, uint64_t p,
			const struct gt_wire_actor *who, uint64_t stack);

/* The label (a string id) of who's G changed while it runs: 1.22+ writes a GoLabel on its M
 * now; 1.19 can only show it with the G's next GoStartLabel.  Whether an event was written
 * (its tick used). */
bool gt_wire_running_label(struct gt_wire *w, uint64_t ticks, const struct gt_wire_actor *who,
			   uint64_t label);

/* Writes the Frequency in a final batch, flushes every buffer.  Returns 0 or an errno
 * value (the first write error met). */
int gt_wire_finish(struct gt_wire *w, uint64_t ticks_per_second);
void gt_wire_stats(const struct gt_wire *w, struct gt_wire_stats *out);
void gt_wire_free(struct gt_wire *w);

#endif
