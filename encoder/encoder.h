/* encoder: the encoder's one public header, all that cli/ and report/ include.  Captures
 * are converted into a Go execution trace (gt_convert_file, gt_convert_files) with a summary
 * of what was read, drawn and lost; a capture is read record by record in time order
 * (gt_capture_*), its timestamps put on nanoseconds (gt_clock_*), its process named
 * (gt_process_name_*); the Go trace formats' event tables are the report's trace reader's
 * too.  Everything else in encoder/ is private. */
#ifndef GOTRACE_ENCODER_H
#define GOTRACE_ENCODER_H

#include <gotrace/capture.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* ---- the Go trace formats ------------------------------------------------------------ */

/* The formats gotrace writes, in one table (trace_format.c; as Go's internal/trace/version
 * lists its versions): the name --format takes, the file header, which Go releases read it,
 * whether it is the default, and the writer that writes it.  This table is the only place a
 * format is looked up by name (docs/formats/go122.md, go119.md). */
struct gt_wire;
struct gt_wire_options;

/* X(id, value, name, header, Go minor from, to (0: every later one), converted from (0:
 * never), other readers (NULL: none), default, open).  The header is the file's first 16
 * bytes; the name is "go1.N" for a header "go 1.N trace".  Go 1.23 and later read a go1.19
 * trace through their converter.  The values are fixed: 0 (zeroed options) is go1.19. */
#define GT_TRACE_FORMATS(X)                                                                \
	X(GO119, 0, "go1.19", "go 1.19 trace", 19, 21, 23, "gotraceui v0.4", false,         \
	  gt_wire_open_go119)                                                              \
	X(GO122, 1, "go1.22", "go 1.22 trace", 22, 0, 0, NULL, true, gt_wire_open_go122)

enum gt_trace_format {
#define GT_TRACE_FORMAT_ENUM(id, value, name, header, from, to, conv, other, dflt, open) \
	GT_FORMAT_##id = value,
	GT_TRACE_FORMATS(GT_TRACE_FORMAT_ENUM)
#undef GT_TRACE_FORMAT_ENUM
	GT_FORMAT_COUNT
};

#define GT_TRACE_HEADER_BYTES 16u

struct gt_trace_format_desc {
	enum gt_trace_format format;
	const char *name;         /* what --format and GOTRACE_FORMAT take: "go1.22" */
	char header[GT_TRACE_HEADER_BYTES];  /* "go 1.22 trace", NUL-padded */
	unsigned go_from, go_to;  /* the Go minor releases whose reader reads it; go_to 0: all
				   * from go_from on */
	unsigned go_converted_from;  /* and those from this one on, by converting it; 0: none */
	const char *other_readers;  /* tools beside Go's that read it, NULL: none */
	bool is_default;
	/* The writer: fd (not closed by it), P ids 0 .. n_ps-1 (and GT_WIRE_P_NONE), options
	 * (NULL: the defaults).  The header is written at once.  NULL on ENOMEM. */
	struct gt_wire *(*open)(int fd, uint32_t n_ps, const struct gt_wire_options *opt);
};

extern const struct gt_trace_format_desc gt_trace_formats[GT_FORMAT_COUNT];

/* The format named name ("go1.22"; "1.22" too), NULL when none is. */
const struct gt_trace_format_desc *gt_trace_format_named(const char *name);
/* The format written when none is asked for. */
const struct gt_trace_format_desc *gt_trace_format_default(void);
/* The entry of format (the default's for a value out of range). */
const struct gt_trace_format_desc *gt_trace_format_of(enum gt_trace_format format);

/* The "go 1.19 trace" event types gotrace writes (docs/formats/go119.md): X(name, Go name,
 * type byte, arguments after the timestamp delta not counting the stack, has a trailing
 * stack id).  Batch, Frequency, Stack and String have no timestamp (special layouts, §1.3);
 * their counts describe the values after the type byte.  GoInSyscall, FutileWakeup, GoStop
 * and the Local variants are absent on purpose: Go 1.23+ viewers break on them (§3.3). */
#define GT_GO_EVENTS(X)                                                          \
	X(BATCH, "Batch", 1, 2, false)                 /* P id, base ticks */       \
	X(FREQUENCY, "Frequency", 2, 1, false)         /* ticks per second */       \
	X(STACK, "Stack", 3, 2, false)                 /* id, k, then k frames */   \
	X(GOMAXPROCS, "Gomaxprocs", 4, 1, true)        /* procs, stack */           \
	X(PROC_START, "ProcStart", 5, 1, false)        /* thread id */              \
	X(PROC_STOP, "ProcStop", 6, 0, false)                                       \
	X(GO_CREATE, "GoCreate", 13, 2, true)          /* G, new-stack, stack */    \
	X(GO_START, "GoStart", 14, 2, false)           /* G, seq */                 \
	X(GO_END, "GoEnd", 15, 0, false)                                            \
	X(GO_SCHED, "GoSched", 17, 0, true)            /* stack */                  \
	X(GO_PREEMPT, "GoPreempt", 18, 0, true)        /* stack */                  \
	X(GO_SLEEP, "GoSleep", 19, 0, true)            /* stack */                  \
	X(GO_BLOCK, "GoBlock", 20, 0, true)            /* stack */                  \
	X(GO_UNBLOCK, "GoUnblock", 21, 2, true)        /* G, seq, stack */          \
	X(GO_BLOCK_SYNC, "GoBlockSync", 25, 0, true)   /* stack */                  \
	X(GO_BLOCK_COND, "GoBlockCond", 26, 0, true)   /* stack */                  \
	X(GO_BLOCK_NET, "GoBlockNet", 27, 0, true)     /* stack */                  \
	X(GO_SYSCALL, "GoSysCall", 28, 0, true)        /* stack */                  \
	X(GO_SYSEXIT, "GoSysExit", 29, 3, false)       /* G, seq, real ticks */     \
	X(GO_SYSBLOCK, "GoSysBlock", 30, 0, false)                                  \
	X(GO_WAITING, "GoWaiting", 31, 1, false)       /* G */                      \
	X(STRING, "String", 37, 2, false)              /* id, len, then bytes */    \
	X(GO_START_LABEL, "GoStartLabel", 41, 3, false) /* G, seq, label string */  \
	X(USER_TASK_CREATE, "UserTaskCreate", 45, 3, true) /* task, parent, name, stack */ \
	X(USER_TASK_END, "UserTaskEnd", 46, 1, true)   /* task, stack */            \
	X(USER_REGION, "UserRegion", 47, 3, true)      /* task, mode, name, stack */ \
	X(USER_LOG, "UserLog", 48, 2, true)            /* task, key, stack; message */ \
	X(CPU_SAMPLE, "CPUSample", 49, 3, true)        /* real ticks, P, G, stack */

enum gt_go_event {
#define GT_GO_EVENT_ENUM(name, goname, byte, nargs, stack) GT_GO_##name,
	GT_GO_EVENTS(GT_GO_EVENT_ENUM)
#undef GT_GO_EVENT_ENUM
	GT_GO_EVENT_COUNT
};

struct gt_go_event_desc {
	const char *name;     /* as Go's EventDescriptions spell it */
	uint8_t type;         /* the wire type byte (low 6 bits) */
	uint8_t nargs;        /* arguments after the timestamp, stack not counted */
	bool has_stack;
};
extern const struct gt_go_event_desc gt_go_events[GT_GO_EVENT_COUNT];

/* The "go 1.22 trace" events gotrace writes (docs/formats/go122.md §2.1): X(name, Go name, type
 * byte, arguments after the timestamp delta, stack ids included).  Batch and the table
 * entries (Stack, String, Frequency) have no timestamp; their layouts are §1.2-1.6's. */
#define GT_GO2_EVENTS(X)                                                                 \
	X(BATCH, "EventBatch", 1, 4, false)          /* gen, M, base ticks, size */      \
	X(STACKS, "Stacks", 2, 0, false)                                                 \
	X(STACK, "Stack", 3, 2, false)               /* id, n, then n frames */          \
	X(STRINGS, "Strings", 4, 0, false)                                               \
	X(STRING, "String", 5, 2, false)             /* id, len, then bytes */           \
	X(FREQUENCY, "Frequency", 8, 1, false)       /* ticks per second */              \
	X(PROC_START, "ProcStart", 10, 2, true)      /* P, P seq */                      \
	X(PROC_STOP, "ProcStop", 11, 0, true)                                            \
	X(PROC_STATUS, "ProcStatus", 13, 2, true)    /* P, status */                     \
	X(GO_CREATE, "GoCreate", 14, 3, true)        /* G, new stack, stack */           \
	X(GO_START, "GoStart", 16, 2, true)          /* G, G seq */                      \
	X(GO_DESTROY, "GoDestroy", 17, 0, true)                                          \
	X(GO_DESTROY_SYSCALL, "GoDestroySyscall", 18, 0, true)                           \
	X(GO_STOP, "GoStop", 19, 2, true)            /* reason string, stack */          \
	X(GO_BLOCK, "GoBlock", 20, 2, true)          /* reason string, stack */          \
	X(GO_UNBLOCK, "GoUnblock", 21, 3, true)      /* G, G seq, stack */               \
	X(GO_SYSCALL_BEGIN, "GoSyscallBegin", 22, 2, true)  /* P seq, stack */           \
	X(GO_SYSCALL_END, "GoSyscallEnd", 23, 0, true)                                   \
	X(GO_SYSCALL_END_BLOCKED, "GoSyscallEndBlocked", 24, 0, true)                    \
	X(GO_STATUS, "GoStatus", 25, 3, true)        /* G, M, status */                  \
	X(GO_LABEL, "GoLabel", 39, 1, true)          /* label string */                  \
	X(USER_TASK_BEGIN, "UserTaskBegin", 40, 4, true) /* task, parent, name, stack */ \
	X(USER_TASK_END, "UserTaskEnd", 41, 2, true)     /* task, stack */               \
	X(USER_REGION_BEGIN, "UserRegionBegin", 42, 3, true) /* task, name, stack */     \
	X(USER_REGION_END, "UserRegionEnd", 43, 3, true)     /* task, name, stack */     \
	X(USER_LOG, "UserLog", 44, 4, true)          /* task, key, value string, stack */

enum gt_go2_event {
#define GT_GO2_EVENT_ENUM(name, goname, byte, nargs, timed) GT_GO2_##name,
	GT_GO2_EVENTS(GT_GO2_EVENT_ENUM)
#undef GT_GO2_EVENT_ENUM
	GT_GO2_EVENT_COUNT
};

struct gt_go2_event_desc {
	const char *name;     /* as Go's tracev2 spec spells it */
	uint8_t type;
	uint8_t nargs;        /* after the timestamp delta (timed events) */
	bool timed;
};
extern const struct gt_go2_event_desc gt_go2_events[GT_GO2_EVENT_COUNT];

#define GT_WIRE_P_NONE UINT64_MAX      /* "no P" (written as 2^64-1, read as -1) */

/* ---- reading a capture ---------------------------------------------------------------- */

/* One capture file's records in one global timestamp order (capture_reader.c). */
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
	uint64_t window_tsc;         /* the window starts after this timestamp (0: the whole
				      * capture): where chunks were reused, or for --last
				      * DURATION, no earlier than that before the last record */
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
void gt_capture_stats(const struct gt_capture *c, struct gt_capture_stats *out);
void gt_capture_close(struct gt_capture *c);


/* When a process that recorded no end died (gt_capture_reaped). */
struct gt_reap {
	uint64_t mono_ns;   /* CLOCK_MONOTONIC by which it was dead, 0: unknown */
	uint64_t tsc;       /* the same time on its capture's clock, 0: unknown */
	bool pair;          /* both taken together (by gotrace, at the reap): a clock pair;
			     * else tsc is its parent's and mono_ns converted from it */
};

/* Processes that recorded no end (killed by SIGKILL: no fact is written at such a death):
 * for each of paths (the captures of one run) whose header is neither finalized nor
 * detached, the time at which the launcher that reaped it noted its death in its header
 * (reaped_mono_ns), or else at which its parent, traced in another of paths, got its death
 * from wait4 or waitid (its pid returned): it died before that.  0 where nothing says so
 * (its parent untraced and not gotrace).  The array of them, [i] for paths[i] (free it);
 * NULL when memory runs out. */
struct gt_reap *gt_capture_reaped(const char *const *paths, size_t n);


/* A system call's name (capture_record syscall payloads, tracker waits: x86-64's numbers,
 * whichever arch recorded the capture, encoder/syscalls.h: GT_SYS_read, ..., and
 * gt_syscall_canonical for another arch's number); "syscall_N" written into buf for a number
 * without one. */
const char *gt_syscall_name(uint32_t nr, char *buf, size_t size);
#include "encoder/syscalls.h"

/* ---- a capture's clock ---------------------------------------------------------------- */

#define GT_CLOCK_TICKS_OFFSET 1000000000ull  /* ticks = ns since the capture start + 1 s */

struct gt_clock {
	uint64_t start_tsc, tsc_hz;  /* tsc_hz 0: timestamps are nanoseconds */
	/* sums of the least-squares fit over (tsc - tsc0, mono - mono0) */
	double n, sx, sy, sxx, sxy;
	uint64_t tsc0, mono0;
};

/* Starts from the header's clock pair (the fit's first point for counter clocks). */
void gt_clock_init(struct gt_clock *c, const struct gt_file_header *h);
/* One GT_CLOCK pair: the record's own tsc (not clamped) and its CLOCK_MONOTONIC. */
void gt_clock_add_pair(struct gt_clock *c, uint64_t tsc, uint64_t mono_ns);
/* ns since the capture start at the nominal rate, + GT_CLOCK_TICKS_OFFSET (earlier
 * timestamps stay positive down to 1 s before the start, then 0). */
uint64_t gt_clock_ticks(const struct gt_clock *c, uint64_t tsc);
/* ns since the capture start at the nominal rate; 0 for earlier timestamps. */
uint64_t gt_clock_ns(const struct gt_clock *c, uint64_t tsc);
/* Frequency (ticks per second) that makes nominal-rate ticks read as fitted nanoseconds:
 * 1e9 unless the pairs say otherwise (a fit more than 1% off the header is not trusted). */
uint64_t gt_clock_frequency(const struct gt_clock *c);
/* A nominal-rate duration in fitted nanoseconds, as a trace reader shows it with
 * gt_clock_frequency; the same number when the frequency is 1e9. */
uint64_t gt_clock_fitted_ns(const struct gt_clock *c, uint64_t nominal_ns);

/* ---- the process a capture records ------------------------------------------------------ */

struct gt_process_name {
	char name[64];                    /* the program as started or as it renamed itself */
	char comm[16];                    /* the kernel's name of its main thread */
	char cmdline[GT_CMDLINE_MAX + 1]; /* its arguments joined by spaces */
};

/* Before any GT_PROCESS_NAME (or in a capture without one): the executable's base name and
 * the header's command line, as at the start. */
void gt_process_name_from_header(struct gt_process_name *out, const struct gt_file_header *h);

/* From a GT_PROCESS_NAME payload of payload_len bytes.  The name is the first argument
 * without the directory of its first word ("/usr/bin/redis-server" -> "redis-server",
 * "nginx: worker process" as it is), else comm. */
void gt_process_name_from_fact(struct gt_process_name *out, const struct gt_p_process_name *p,
			       size_t payload_len);

/* ---- converting captures into a trace --------------------------------------------------- */

#define GT_DEFAULT_SYSCALL_THRESHOLD_NS 20000u

/* What the writer wrote. */
struct gt_wire_stats {
	uint64_t events;          /* timed events written */
	uint64_t batches;
	uint64_t strings;
	uint64_t stacks;
	uint64_t frames_cut;      /* frames dropped by the 128-frame / 2048-byte caps */
	uint64_t ticks_clamped;   /* events asked for a tick below their P's last one */
	uint64_t bytes;           /* file size so far */
	uint64_t generations;     /* 1.22+: generations written */
	uint64_t repaired;        /* 1.22+: events the model's order needed placed otherwise */
	uint64_t skipped;         /* 1.22+: events the goroutine's state could not take */
	uint64_t ms_held;         /* 1.22+: the most Ms whose state was held at once */
};

/* What the model read and drew (model.c). */
#define GT_MODEL_COUNTERS(X)                                                              \
	X(facts, "facts read")                                                            \
	X(threads, "threads (goroutines)")                                                \
	X(preemptions, "invisible preemptions")                                           \
	X(migrations, "CPU migrations")                                                   \
	X(wakes_matched, "unblocks by a known waker")                                     \
	X(unknown_wakeups, "unblocks by an unknown waker")                                \
	X(syscalls_short, "short syscalls")                                               \
	X(syscalls_blocking, "blocking syscalls")                                         \
	X(net_waits, "network waits")                                                     \
	X(kernel_wakes, "unblocks through pipes, sockets and child exits")               \
	X(threads_appeared, "repaired: threads first seen without a start fact")          \
	X(duplicate_creates, "repaired: threads created twice")                           \
	X(causal_fallbacks, "repaired: wakes not after their block (unknown waker used)")   \
	X(ends_without_begin, "repaired: block/syscall ends without a begin")             \
	X(facts_after_end, "skipped: facts of threads already ended")                     \
	X(user_annotations, "user tasks, regions and logs")                                \
	X(user_skipped, "skipped: user region ends out of nesting, task ids live twice")  \
	X(facts_ignored, "skipped: facts not shown in traces (process, unknown types)")   \
	X(stacks_missing, "repaired: stacks referenced but never defined")                \
	X(writer_dropped, "facts the recorder reported dropped")                          \
	X(writer_stacks_lost, "stacks the recorder reported lost")                        \
	X(writer_threads_lost, "threads the recorder's table could not hold")              \
	X(writer_waiters_lost, "waits the recorder's table could not hold (waker unknown)") \
	X(writer_reentry_lost, "calls from signal handlers that interrupted the recorder")     \
	X(cond_release_unseen, "mutex waits whose waker (a condition wait) is not shown")    \
	X(kernel_switches, "kernel: context switches drawn")                               \
	X(kernel_preemptions, "kernel: preemptions")                                       \
	X(kernel_untraced_waits, "kernel: off-CPU waits not seen by the hooks")            \
	X(kernel_untraced_ends, "kernel: their ends (no hook names a waker)")              \
	X(kernel_waits_again, "kernel: hook waits resumed and waiting again (lost hand-offs)") \
	X(kernel_foreign, "kernel: switches not drawn (thread untraced, unstarted, ended, stopped)")

struct gt_model_counters {
#define GT_MODEL_COUNTER_FIELD(name, text) uint64_t name;
	GT_MODEL_COUNTERS(GT_MODEL_COUNTER_FIELD)
#undef GT_MODEL_COUNTER_FIELD
};

/* What became of the samples of the file; every sample is in exactly one of the first five. */
struct gt_cpu_sample_counts {
	uint64_t written;        /* CPU samples in the trace */
	uint64_t outside;        /* before the trace's first fact or after its last */
	uint64_t no_user;        /* no user registers (it hit kernel or no user code) */
	uint64_t offcpu;         /* off-CPU samples: not CPU samples */
	uint64_t elsewhere;      /* of processes with no capture in this trace (--per-process) */
	uint64_t offcpu_waits;   /* of the off-CPU: stacks of untraced waits in the trace */
	uint64_t partial;        /* of the written: unwinding stopped early (short copy, no CFI) */
	uint64_t no_thread;      /* of the written: a thread the captures do not have (G 0) */
	uint64_t tracer;         /* of the written: the tracer's own work (its code, libunwind) */
	uint64_t kernel_lost;    /* records the kernel or the launcher dropped (any kind) */
};

/* "gotrace: CPU samples: N in the trace (...)" and every loss, one line on f. */
void gt_cpu_samples_describe(const struct gt_cpu_sample_counts *c, FILE *f);


struct gt_convert_options {
	uint64_t syscall_threshold_ns;      /* 0: GT_DEFAULT_SYSCALL_THRESHOLD_NS */
	const char *const *debug_dirs;      /* extra debug-info directories, NULL-terminated */
	bool no_symbols;                    /* name frames by address (no symbolizer) */
	/* A time window (window.h): from_ns and to_ns after the start of the earliest capture;
	 * to_ns 0: to the end.  The threads alive at from_ns are in the trace from its start. */
	uint64_t from_ns, to_ns;
	/* Called every few thousand records with the capture bytes consumed so far and in all,
	 * for a progress display; NULL: never.  false stops the conversion there: the trace
	 * ends at the records read so far (the summary's interrupted says so). */
	bool (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
	/* The trace format (0: "go 1.19 trace"); for GT_FORMAT_GO122, the generation length in
	 * ns (0: 1 s, as Go's runtime). */
	enum gt_trace_format format;
	uint64_t generation_ns;
	/* The run's kernel scheduling records (kernel/reader.h), NULL: none.  Their context
	 * switches place the threads (model.h gt_model_switch); a file that cannot be read is
	 * left out, its reason in the summary's kernel_error. */
	const char *kernel_path;
	/* One capture converted alone (--per-process) of a process that recorded no end: when
	 * it was reaped, as gt_capture_reaped found it among the run's captures (mono_ns 0: as
	 * its own header says). */
	struct gt_reap reaped;
	/* Records the intervals of the model's threads for a walk of the critical path
	 * (critical_path.c, gt_critpath_walk), NULL: none. */
	struct gt_critpath *critical_path;
	/* Draws the critical path of the first process's main thread in the trace: a user task
	 * "critical path" with a region on each goroutine for each stretch of the path in it.
	 * The captures are converted twice (the path is known at the end of the first). */
	bool draw_critical_path;
};

/* Recording stopped early because the capture could not grow (GT_FILE_WRITE_FAILED). */
struct gt_convert_stop {
	bool stopped;
	int err;                            /* why: ENOSPC, EFBIG (RLIMIT_FSIZE), ... */
	double at_seconds;                  /* when, from the start of recording */
	uint64_t facts_lost;                /* facts the recorder met after it (threads it had
					     * not met before count one per hook: a lower bound) */
	uint64_t bound_bytes;               /* stopped at the --max-capture bound of so many
					     * bytes (GT_FILE_AT_BOUND); 0: the file system */
	bool sandboxed;                     /* the process entered a seccomp sandbox
					     * (GT_FILE_SANDBOXED): its later facts not counted */
};
/* From a capture's header. */
void gt_capture_stop(const struct gt_file_header *h, struct gt_convert_stop *out);
/* The one line that says it (no newline): "recording stopped early at 1.234 s: no space left
 * on the file system; at least 5000 facts after that were not recorded", or at the bound:
 * "recording stopped at the --max-capture bound of 1 GiB after 12.300 s; at least 1234
 * facts after that were not recorded", or "recording stopped at 0.120 s: the process entered
 * a seccomp sandbox (the recorder's system calls could kill it); it ran on untraced". */
void gt_convert_stop_text(const struct gt_convert_stop *s, char *buf, size_t size);

struct gt_convert_summary {
	uint32_t pid;
	char process[64];                   /* its name (gt_model_process), "" if unknown */
	uint32_t captures;                  /* the processes in the trace (0 and 1: one) */
	bool truncated;                     /* the capture file was cut short */
	struct gt_convert_stop stop;
	struct gt_capture_stats reader;
	struct gt_model_counters model;
	struct gt_wire_stats wire;
	uint64_t threads_held;              /* the most threads the model (or the --from
					     * window before its start) held at once (the dead
					     * are retired: not all threads ever seen) */
	uint64_t lookahead_read;            /* records the model read ahead of the one it
					     * modelled, however often the same one */
	char kernel_error[256];             /* why the kernel records were not used, "" */
	bool has_samples;                   /* kernel_path held CPU samples */
	struct gt_cpu_sample_counts samples;
	double seconds;                     /* wall clock */
	double cpu_seconds;                 /* user + system */
	char deadlock[512];                 /* the deadlocks its threads were in at its end
					     * (gt_tracker_deadlock_text), "" = none */
	char lock_order[1024];              /* its lock-order inversions, a line each as many
					     * as fit (gt_lock_order_text), "" = none */
	uint64_t lock_order_inversions;     /* their count, those not in lock_order included */
	bool interrupted;                   /* progress stopped the conversion, the trace ends */
	double interrupted_done;            /* there: the fraction of the records read */
	bool reaped;                        /* killed: no end recorded, its death known from its
					     * reap (gt_capture_reaped): its trace ends there */
	int killed_by;                      /* the signal that killed it, when gotrace reaped
					     * it (0: not known) */
};

/* Converts capture into a trace at out (written beside it, renamed into place when
 * complete).  Returns 0, or -1 with one line in err. */
int gt_convert_file(const char *capture, const char *out, const struct gt_convert_options *opt,
		    struct gt_convert_summary *sum, char *err, size_t errlen);
/* One capture of a trace of several. */
struct gt_convert_capture {
	const char *path;                   /* as given */
	bool readable;                      /* else error says why; it is not in the trace */
	char error[256];
	char command[64];                   /* its process's name (gt_model_process) */
	bool finalized;                     /* the process ended normally */
	bool detached;                      /* gotrace stopped its recording; it went on */
	uint64_t start_mono_ns;             /* CLOCK_MONOTONIC when its recording began */
	double seconds;                     /* from its first fact to its last */
	struct gt_convert_summary sum;      /* pid, process, stop, truncated, reader and model
					     * counters of this capture (wire and times: in total) */
};

struct gt_convert_set_summary {
	size_t n;
	struct gt_convert_capture *captures;  /* in start order (the earliest first) */
	struct gt_convert_summary total;      /* the sums; pid: the earliest capture's; stop
					       * and process: the capture's when there is one */
};

/* Converts several captures (the processes of one run, or any captures of one machine)
 * into one trace at out: their records merged by time, CPUs shared, each thread a goroutine
 * labelled "prog[pid] name".  Captures that cannot be read are left out (their error in
 * sum); fails only when none can be read or the trace cannot be written.  Free sum with
 * gt_convert_set_summary_free, also after a failure. */
int gt_convert_files(const char *const *captures, size_t n, const char *out,
		     const struct gt_convert_options *opt, struct gt_convert_set_summary *sum,
		     char *err, size_t errlen);
void gt_convert_set_summary_free(struct gt_convert_set_summary *sum);

/* What a trace may lack, summed once for every summary that prints it: facts the recorder
 * reported lost, facts the model had to repair or skip, damage the reader skipped. */
struct gt_convert_losses {
	uint64_t dropped;        /* facts, stacks, threads and waits the recorder could not
				  * keep, with the facts after an early stop */
	uint64_t repaired;       /* facts shown at a corrected time or with a made-up part */
	uint64_t skipped;        /* facts not shown in the trace */
	uint64_t damaged_bytes;  /* bytes of garbage the reader skipped */
	uint64_t torn_records;   /* records cut by a chunk's end */
};
void gt_convert_losses(const struct gt_convert_summary *sum, struct gt_convert_losses *out);
/* The deadlocks of sum, a line "gotrace:   deadlock: N threads, ..." each, then one line
 * per thread of it; nothing when there is none. */
void gt_convert_print_deadlocks(FILE *f, const struct gt_convert_summary *sum);
/* The lock-order inversions of sum, a line "gotrace:   lock-order inversion: ..." each, at
 * most three, then how many more; nothing when there is none. */
void gt_convert_print_lock_order(FILE *f, const struct gt_convert_summary *sum);
/* The summary of `gotrace convert`: the totals, the deadlocks, then every non-zero counter. */
void gt_convert_print_summary(FILE *f, const char *out, const struct gt_convert_summary *sum);

/* ---- a live process's snapshot as a Go trace (snapshot_trace.c, `gotrace stacks -o`) ---- */

/* What a thread was doing when its process was stopped. */
enum gt_snap_state {
	GT_SNAP_RUNNING,   /* running or runnable (/proc's R, or no system call) */
	GT_SNAP_BLOCKED,   /* waiting on a lock, a thread, a sleep: block_kind, object, holder */
	GT_SNAP_SYSCALL,   /* asleep in another system call: sys_nr, sys_arg, fd_kind */
};
struct gt_snap_thread {
	uint32_t tid;
	const char *name;            /* its name (comm) */
	enum gt_snap_state state;
	uint8_t block_kind;          /* BLOCKED: enum gt_block_kind */
	uint64_t object;             /* BLOCKED: the lock's address; GT_BK_JOIN: the joined
				      * thread's TID; GT_BK_SLEEP: 0 */
	uint32_t holder;             /* BLOCKED on a mutex or rwlock: its holder's TID, 0: none */
	uint32_t sys_nr;             /* SYSCALL: the call, its first argument, what the */
	int64_t sys_arg;             /* descriptor is (enum gt_fd_kind) when it is one */
	uint8_t fd_kind;
	const char *what;            /* what it does, in words: the thread logs it */
	uint32_t deadlock;           /* the deadlock it is on, 1 .. number of threads; 0: none */
	const uint64_t *pcs;         /* its stack, innermost first (gt_sym_live_threads') */
	size_t n_pcs;
};
struct gt_live_snapshot {
	uint32_t pid;
	const char *exe, *comm;      /* its executable's path, its name */
	uint32_t n_cpus;             /* the machine's */
	uint64_t mono_ns, real_ns;   /* when it was taken */
	const struct gt_snap_thread *threads;
	size_t n;
};
struct gt_symbolizer;
/* Writes snapshot s to path in format, as a trace of 10 ms in which each thread is a
 * goroutine in the state it was found in, with its stack (symbolized by sym, which holds
 * the process's modules: gt_sym_live_open; NULL: frames by address).  0, or -1 with one
 * line in err (nothing is left at path). */
int gt_snapshot_trace_write(const char *path, enum gt_trace_format format,
			    struct gt_symbolizer *sym, const struct gt_live_snapshot *s, char *err,
			    size_t errlen);

/* ---- the thread-and-wait tracker, the wait-for and lock-order graphs ---------------- */

#include "encoder/tracker.h"

/* ---- the critical path (critical_path.c) ------------------------------------------------- */

/* What a run waited for, end to end: a conversion given one (gt_convert_options'
 * critical_path) records each thread's intervals as the model decides them (running on a
 * CPU, runnable, waiting on what, woken by which thread, ended; the kernel's switches when
 * given) and the CPU samples' functions; gt_critpath_walk then walks back from the end of a
 * thread's interval through the threads that woke it. */
struct gt_critpath;
struct gt_critpath *gt_critpath_new(void);
void gt_critpath_free(struct gt_critpath *cp);

/* A segment's state: its thread's own time (running, runnable: scheduler latency, waiting
 * with no waker known: a timeout, a sleep, a syscall, a wait no hook saw) or none known
 * (before its thread's first fact: a process starting). */
#define GT_CP_STATES(X) \
	X(RUNNING, "running") X(RUNNABLE, "runnable") X(WAITING, "waiting") \
	X(SYSCALL, "syscall") X(UNTRACED, "untraced wait") X(UNKNOWN, "not traced yet")
enum gt_cp_state {
#define GT_CP_STATE_ENUM(id, text) GT_CP_##id,
	GT_CP_STATES(GT_CP_STATE_ENUM)
#undef GT_CP_STATE_ENUM
	GT_CP_STATE_COUNT
};
extern const char *const gt_cp_state_names[GT_CP_STATE_COUNT];

/* A wait as the model drew it: kind is enum gt_block_kind, or one of these. */
#define GT_CP_WAIT_NET 100u       /* a read, write or poll woken through a pipe or socket */
#define GT_CP_WAIT_CHILD 102u     /* wait4/waitid for a child */
#define GT_CP_WAIT_UNTRACED 103u  /* off its CPU with no hook around it */
#define GT_CP_WAIT_SYSCALL 104u   /* a syscall that blocked */
struct gt_cp_wait {
	uint8_t kind;
	uint8_t fd_kind;             /* enum gt_fd_kind of a syscall's descriptor */
	bool has_syscall;
	uint32_t sys_nr;             /* its system call, when has_syscall */
	uint64_t obj;                /* the object waited on (an address), 0: none */
	const char *object;          /* its name (the trace's), NULL: only its address */
	const char *site;            /* "func (file:line)" of the program where it waited, NULL */
};

struct gt_cp_thread {
	uint32_t pid, tid;           /* tid 0: unknown */
	const char *name;            /* "" when none */
	bool main;                   /* the main thread of the trace's first process */
};

struct gt_cp_segment {
	uint32_t thread;             /* index in threads */
	enum gt_cp_state state;
	int32_t wait;                /* WAITING, SYSCALL, UNTRACED: its wait (index in waits) */
	int32_t via;                 /* the wait of another thread that this one's work ended
				      * (the last wait followed to its waker), -1: none */
	int32_t cpu_holder;          /* RUNNABLE: the thread that held its CPU, -1: unknown */
	uint64_t start_ns, ns;       /* after the start of the trace's first process */
	size_t first_part, n_parts;  /* its functions, in parts */
};

/* A running segment's share of a function named by its CPU samples (split in proportion to
 * them, the remainder to the most sampled); function NULL: no sample in it. */
struct gt_cp_part {
	const char *function;
	uint64_t ns;
};

struct gt_cp_query {
	const char *thread;          /* a thread's name or TID; NULL: the first process's main */
	uint64_t from_ns, to_ns;     /* after the start of the first process; 0: the thread's
				      * start, its end */
};

struct gt_cp_result {
	struct gt_cp_thread *threads;
	size_t n_threads;
	struct gt_cp_wait *waits;
	size_t n_waits;
	struct gt_cp_segment *segments;   /* in time order, adding up to [start_ns, end_ns) */
	size_t n_segments;
	struct gt_cp_part *parts;
	size_t n_parts;
	uint32_t thread;             /* the one walked back from */
	uint64_t start_ns, end_ns;
	bool kernel;                 /* the kernel's switches placed the threads */
	bool samples;                /* CPU samples named functions */
	uint64_t steps;              /* intervals the walk looked at */
};

/* Walks back from the end of q's interval.  0, or -1 with one line in err. */
int gt_critpath_walk(const struct gt_critpath *cp, const struct gt_cp_query *q,
		     struct gt_cp_result *out, char *err, size_t errlen);
void gt_cp_result_free(struct gt_cp_result *r);

#endif
