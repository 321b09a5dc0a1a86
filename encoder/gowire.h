/* gowire: the wire writers' one interface, and the "go 1.19 trace" writer
 * (docs/formats/go119.md); gowire_v2.c writes "go 1.22 trace" behind the same calls.  The
 * model emits scheduling events in the default format's words (GT_SCHED_EVENTS); the 1.19
 * writer down-converts them to its own (GT_GO_EVENTS).
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

/* Where a P or a live goroutine stands at a generation boundary (the 1.22+ format states it
 * again at the start of every generation). */
enum gt_wire_status_kind {
	GT_WIRE_P_IDLE, GT_WIRE_P_RUNNING, GT_WIRE_P_SYSCALL,       /* a P: held by m or not */
	GT_WIRE_G_RUNNABLE, GT_WIRE_G_RUNNING, GT_WIRE_G_SYSCALL, GT_WIRE_G_WAITING,  /* a G */
};
struct gt_wire_status {
	enum gt_wire_status_kind kind;
	uint64_t id;                 /* the P or the G */
	uint64_t m;                  /* its M (a P's holder; a G's thread), 0: none */
};
typedef void gt_wire_visit(void *arg, const struct gt_wire_status *s);

/* The writers' options (the open functions of encoder.h's format table): the "go 1.22
 * trace" writer (gowire_v2.c) has one M per thread and closes a generation every
 * generation_ns ticks or generation_bytes of events (0: 1 s, 4 MiB), each with its own string
 * and stack tables and Frequency (frequency(ctx) when the generation starts: the clock fit so
 * far; NULL: 1e9) and its live state (live(ctx, visit, arg): every P, then every live
 * goroutine, given to visit).  The "go 1.19 trace" writer has none of these. */
struct gt_wire_options {
	uint64_t generation_ns;
	uint64_t generation_bytes;
	uint64_t (*frequency)(const void *ctx);
	const void *frequency_ctx;
	void (*live)(const void *ctx, gt_wire_visit *visit, void *arg);
	const void *live_ctx;
};
/* The two writers, as gt_trace_formats lists them (fd is not closed by the writer; P ids
 * 0 .. n_ps-1 may be used, plus GT_WIRE_P_NONE; the 16-byte header is written at once;
 * NULL on ENOMEM). */
struct gt_wire *gt_wire_open_go119(int fd, uint32_t n_ps, const struct gt_wire_options *opt);
struct gt_wire *gt_wire_open_go122(int fd, uint32_t n_ps, const struct gt_wire_options *opt);
/* Sets the frequency source of a 1.22+ writer (no effect on a 1.19 one). */
void gt_wire_frequency_source(struct gt_wire *w, uint64_t (*frequency)(const void *ctx),
			      const void *ctx);

/* Sets where a 1.22+ writer learns the live state at each generation boundary: live(ctx,
 * visit, arg) calls visit for every P and every live goroutine (no effect on a 1.19 one). */
void gt_wire_live_state_source(struct gt_wire *w,
			       void (*live)(const void *ctx, gt_wire_visit *visit, void *arg),
			       const void *ctx);

/* Who performs an event: the thread whose goroutine is g (0: none known) and its M, the id
 * of its thread in the 1.22+ format (chosen by the model: its TID, or an id of its own when
 * the TID is unknown or still held by another live thread; 0: none yet).  The 1.19 writer
 * has no threads (a P is what runs) and ignores it; the 1.22+ writer writes the event on
 * that M. */
struct gt_wire_actor {
	uint64_t g;
	uint64_t m;
};

/* What a goroutine waits for (its block reason in the 1.22+ format, its GoBlock* event in
 * 1.19's): kind is the capture's enum gt_block_kind, or GT_WIRE_WAIT_NET / _CHILD for a
 * syscall that waited (sys_nr and fd_kind then say on what), or _UNTRACED. */
#define GT_WIRE_WAIT_NET 100u     /* a read, write or poll woken through a pipe or socket */
#define GT_WIRE_WAIT_CHILD 102u   /* wait4/waitid for a child whose end is known */
#define GT_WIRE_WAIT_UNTRACED 103u  /* off its CPU, by the kernel, with no hook around it */
struct gt_wire_wait {
	uint8_t kind;
	uint8_t fd_kind;
	uint32_t sys_nr;
	const char *object;   /* the name of the object waited on (gt_sym_object_name), NULL:
			       * none; valid during the call only */
};

/* The scheduling events the model emits, in the words of the default format (go1.22,
 * docs/formats/go122.md): X(name, what it says; the fields of struct gt_sched_event it
 * reads besides ticks, p and who).  The go1.22 writer writes them on who's M; the go1.19
 * writer down-converts each to the 1.19 event(s) in brackets.
 *
 * The model decides everything the 1.22+ format says of threads: each thread's M (who.m),
 * when an M holds a P (it holds it exactly while its G runs, from its GoStart, or from its
 * creation when it was first seen running, to its GoStop/GoBlock/GoDestroy, or in a syscall
 * that blocked, until that syscall's PROC_STOP), when a label is new, which threads existed
 * at the start, and, at each generation boundary, every P's and live G's status
 * (gt_wire_live_state_source).  The go1.22 writer keeps only what the encoding needs:
 * batches per M, the per-generation sequence numbers and the last tick each G and P changed
 * (the readers' frontier, w22_emit).  PROC_START/PROC_STOP without an M are the 1.19
 * format's pseudo-threads, ignored by the 1.22 writer. */
#define GT_SCHED_EVENTS(X)                                                                 \
	X(PROC_START)            /* P p starts (1.19 ProcStart, thread p) */               \
	X(PROC_STOP)             /* P p stops: its thread blocked in a syscall (who: that \
				  * thread, whose M lets the P go), or the end */          \
	X(PROCS)                 /* the prologue ends: n_procs P ids (Gomaxprocs) */       \
	X(GO_CREATE)             /* g, new_stack, stack; by who (who.g == g: first seen, \
				  * its M takes p); existing, waiting */                   \
	X(GO_WAITING)            /* g existed before the trace, blocked (GoWaiting) */     \
	X(GO_START)              /* g, seq, label (0: none), new_label; holds_p (GoStart / \
				  * GoStartLabel) */                                        \
	X(GO_STOP)               /* the running G leaves p runnable: stop, stack */        \
	X(GO_BLOCK)              /* the running G waits: wait, stack (GoBlock*) */         \
	X(GO_UNBLOCK)            /* g, seq, stack: made runnable by who */                 \
	X(GO_DESTROY)            /* the running G ends (GoEnd) */                          \
	X(GO_SYSCALL_BEGIN)      /* stack; sys_end: its return when it did not block, 0 when \
				  * GO_SYSCALL_BLOCKED follows (GoSysCall) */              \
	X(GO_SYSCALL_BLOCKED)    /* the syscall blocked (GoSysBlock) */                    \
	X(GO_SYSCALL_END_BLOCKED) /* g, seq: back from the syscall that blocked (GoSysExit) */ \
	X(USER_TASK_BEGIN)       /* task, parent, name, stack (UserTaskCreate) */          \
	X(USER_TASK_END)         /* task, stack */                                         \
	X(USER_REGION_BEGIN)     /* task, name, stack (UserRegion mode 0) */               \
	X(USER_REGION_END)       /* task, name, stack (UserRegion mode 1) */

enum gt_sched_kind {
#define GT_SCHED_ENUM(name) GT_SCHED_##name,
	GT_SCHED_EVENTS(GT_SCHED_ENUM)
#undef GT_SCHED_ENUM
	GT_SCHED_COUNT
};

/* Why a running goroutine stops, runnable. */
enum gt_sched_stop {
	GT_STOP_PREEMPTED,   /* another thread took its CPU, or it moved (GoPreempt) */
	GT_STOP_YIELD,       /* sched_yield (GoSched) */
};

struct gt_sched_event {
	enum gt_sched_kind kind;
	uint64_t ticks;              /* absolute; each P's strictly increase */
	uint64_t p;                  /* the P (CPU k = P k+1, P 0 the prologue's) */
	struct gt_wire_actor who;    /* the thread that performs it */
	uint64_t g, seq;             /* the goroutine it is about, its 1.19 sequence number */
	uint64_t stack;              /* the performer's stack id, 0: none */
	uint64_t new_stack;          /* GO_CREATE: the new goroutine's */
	uint64_t label;              /* GO_START: its label string id, 0: none */
	bool new_label;              /* GO_START: label differs from the one the G last showed */
	bool holds_p;                /* GO_START: who's M holds p already (created on it) */
	bool existing, waiting;      /* GO_CREATE: a thread there before the trace (created on
				      * P 0 by its own M), blocked then (declared waiting) */
	uint64_t sys_end;            /* GO_SYSCALL_BEGIN */
	uint64_t n_procs;            /* PROCS */
	enum gt_sched_stop stop;     /* GO_STOP */
	struct gt_wire_wait wait;    /* GO_BLOCK */
	uint64_t task, parent, name; /* USER_*: the task, its parent, the name's string id */
};

/* One scheduling event of the model, written by either writer. */
void gt_wire_sched(struct gt_wire *w, const struct gt_sched_event *e);

/* The 1.19 writer's own events (its tests; the down-conversion of gt_wire_sched): a timed
 * event on P p at absolute ticks.  args: the type's arguments (nargs, then the stack id
 * when has_stack).  Ticks below the P's last tick are raised to it (counted). */
void gt_wire_event(struct gt_wire *w, uint64_t p, enum gt_go_event ev, uint64_t ticks,
		   const uint64_t *args);

/* UserLog: the event (task id, key string id, stack) followed, outside its length, by the
 * message bytes (§1.3). */
void gt_wire_user_log(struct gt_wire *w, uint64_t p, const struct gt_wire_actor *who,
		      uint64_t ticks, uint64_t task, uint64_t key, uint64_t stack, const char *msg,
		      size_t len);

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
