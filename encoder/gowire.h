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

/* The writers' options (the open functions of encoder.h's format table): the "go 1.22
 * trace" writer (gowire_v2.c) has one M per thread and closes a generation every
 * generation_ns ticks or generation_bytes of events (0: 1 s, 4 MiB), each with its own string
 * and stack tables and Frequency (frequency(ctx) when the generation starts: the clock fit so
 * far; NULL: 1e9).  The "go 1.19 trace" writer has none of these. */
struct gt_wire_options {
	uint64_t generation_ns;
	uint64_t generation_bytes;
	uint64_t (*frequency)(const void *ctx);
	const void *frequency_ctx;
};
/* The two writers, as gt_trace_formats lists them (fd is not closed by the writer; P ids
 * 0 .. n_ps-1 may be used, plus GT_WIRE_P_NONE; the 16-byte header is written at once;
 * NULL on ENOMEM). */
struct gt_wire *gt_wire_open_go119(int fd, uint32_t n_ps, const struct gt_wire_options *opt);
struct gt_wire *gt_wire_open_go122(int fd, uint32_t n_ps, const struct gt_wire_options *opt);
/* Sets the frequency source of a 1.22+ writer (no effect on a 1.19 one). */
void gt_wire_frequency_source(struct gt_wire *w, uint64_t (*frequency)(const void *ctx),
			      const void *ctx);

/* Who performs an event: the thread whose goroutine is g (0: none known) and its kernel
 * thread id (0: unknown).  The 1.19 writer has no threads (a P is what runs) and ignores
 * it; the 1.22+ writer writes the event on that thread's M. */
struct gt_wire_actor {
	uint64_t g;
	uint32_t tid;
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
};

/* The scheduling events the model emits, in the words of the default format (go1.22,
 * docs/formats/go122.md): X(name, what it says; the fields of struct gt_sched_event it
 * reads besides ticks, p and who).  The go1.22 writer writes them on who's M; the go1.19
 * writer down-converts each to the 1.19 event(s) in brackets.
 *
 * The model still decides the order in the 1.19 shape: a P stays started while its
 * goroutines block (ProcStart/ProcStop are the 1.19 writer's; the go1.22 writer derives an
 * M's P from GoStart and GoStop/GoBlock/GoDestroy), and the go1.22 writer keeps its own
 * goroutine, M and P state.  What is left to move into the model (so that the writer only
 * encodes): the design note at the end of this header. */
#define GT_SCHED_EVENTS(X)                                                                 \
	X(PROC_START)            /* P p starts (1.19 ProcStart, thread p) */               \
	X(PROC_STOP)             /* P p stops: its thread blocked in a syscall, or the end */ \
	X(PROCS)                 /* the prologue ends: n_procs P ids (Gomaxprocs) */       \
	X(GO_CREATE)             /* g, new_stack, stack; by who (who.g == g: first seen) */ \
	X(GO_WAITING)            /* g existed before the trace, blocked (GoWaiting) */     \
	X(GO_START)              /* g, seq, label (0: none) (GoStart / GoStartLabel) */    \
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
	struct gt_wire_actor who;    /* the thread that performs it (g 0: the one running on p) */
	uint64_t g, seq;             /* the goroutine it is about, its 1.19 sequence number */
	uint64_t stack;              /* the performer's stack id, 0: none */
	uint64_t new_stack;          /* GO_CREATE: the new goroutine's */
	uint64_t label;              /* GO_START: its label string id, 0: none */
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

/* Design note: what is left for the go1.22 writer to hold no scheduler state (issue 21.2).
 *
 * Today (gowire_v2_events.c) the writer still keeps, per goroutine, M and P, what the model
 * knows already, and repairs nothing (its repaired/skipped counters are held at 0 by the
 * tests, check_go122_writer).  Each piece moves into the model's emission (model_sched.c
 * gtm_emit and its callers), one commit each, traces byte-identical:
 *
 *  1. M ids: who gains an m (the thread's TID; 2^33|g when unknown; g<<34|tid when a live
 *     thread holds the TID already; ids 1000000-1000005 moved off the viewer's rows): the
 *     writer's w22_m_of and m->owner go.
 *  2. P holding in the 1.22 sense (an M holds a P exactly while its G runs or sits in a
 *     syscall holding it): two events without a tick of their own, M_ACQUIRE_P before
 *     GO_START (from the model's ps[p].running change) and M_RELEASE_P after GO_STOP,
 *     GO_BLOCK, GO_DESTROY and GO_SYSCALL_BLOCKED; ProcStart/ProcStop of the 1.19 pseudo
 *     threads stay PROC_START/PROC_STOP (their ticks are the model's), ignored by this
 *     writer.  take_p, proc_stop, m->p, m->g, p2.m go.
 *  3. Generations: struct gt_wire_options gains live_state(ctx, visit), called at each
 *     boundary; the model visits every P (holder M, running/syscall/idle) and every live G
 *     (M, running/runnable/syscall/waiting), which the writer turns into ProcStatus and
 *     GoStatus, and resets its per-generation sequence numbers (G seq: GO_START and
 *     GO_UNBLOCK since the boundary; P seq: ProcStart and GoSyscallBegin) carried in the
 *     events as seq22/p_seq.  The same callback at PROCS lists the threads existing at the
 *     start (created on P 0 by their own M, or Waiting): G_PENDING and wait_at_start go.
 *  4. Labels: GO_LABEL as an event of its own when the model's label differs from the one
 *     last shown (label_shown moves to struct mthread); gt_wire_running_label goes.
 *  5. GoDestroySyscall: GO_DESTROY of a G in a blocked syscall says so (the model knows
 *     T_SYSBLOCKED).  Then struct g2/p2/m2's scheduling fields, g_stop's state checks and the
 *     repaired/skipped counters are deleted; what stays is encoding state: batches per M,
 *     the last tick each G and P changed (the readers' frontier tie, w22_emit), string and
 *     stack tables.
 *  6. The 1.19 writer then takes the events as they are: M_* ignored, seq22 unused, its
 *     PROC_START/PROC_STOP kept.
 */

#endif
