/* report_internal: the capture report's state, shared by its parts (report.h is the API).
 *
 *   report.c        the facts collected (threads and waits through the tracker), sites,
 *                   names, ordering, the entry
 *   report_print.c  the text and JSON outputs
 *   report_locks.c  holders of contended locks, the wait-for graph, deadlocks
 *   report_holds.c  hold times (--locks=all)
 *
 * Names with the gtr_ prefix are internal to these files. */
#ifndef GOTRACE_REPORT_INTERNAL_H
#define GOTRACE_REPORT_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "hot_functions.h"
#include "offcpu.h"
#include "report.h"

#include "common/u64map.h"
#include "encoder/encoder.h"
#include "symbolizer/symbolizer.h"

#define REPORT_MAX_FRAMES 16u
#define GT_REPORT_NAME_MAX 512u   /* an object's name, as printed */

/* ---- what is collected ----------------------------------------------------------------- */

enum wait_class { /* thread time columns */
	WAIT_LOCK,     /* mutex, rwlock, semaphore, barrier, futex */
	WAIT_COND,
	WAIT_JOIN,
	WAIT_SLEEP,
	WAIT_SYSCALL,
	WAIT_CLASS_COUNT
};

extern const char *const gtr_wait_class_name[WAIT_CLASS_COUNT];

/* A thread's line: what the tracker knows of it and the time charged to it. */
struct thread_row {
	const struct gt_tracked_thread *t;
	uint64_t first_ns, last_ns;     /* its first and last facts (fitted once all are read) */
	uint64_t wait_since_ns;         /* the start of its open wait (the same) */
	uint64_t wait_ns[WAIT_CLASS_COUNT];
	uint64_t n_waits[WAIT_CLASS_COUNT];
};

struct stack_stat {
	uint32_t stack;
	uint64_t count, total_ns, max_ns;
};

/* A thread that held a lock while others waited for it: their waits, and where it released
 * the lock to them (its WAKE's stacks). */
struct holder_stat {
	uint32_t serial;     /* 0: a thread the hooks never met, by tid */
	uint32_t tid;
	uint64_t count, total_ns;
	struct stack_stat *releases;
	size_t n_releases, cap_releases;
};

/* A contended object, or a (syscall, stack) pair: the same counters. */
struct wait_site {
	uint64_t key;        /* object address, or syscall number */
	uint8_t kind;        /* gt_block_kind for objects, gt_fd_kind for syscalls */
	size_t same_key;     /* index + 1 of the previous site of this key (another kind) */
	uint64_t count, total_ns, max_ns;
	struct stack_stat *stacks;
	size_t n_stacks, cap_stacks;
	struct holder_stat *holders;   /* a lock's, named by its waits */
	size_t n_holders, cap_holders;
};

/* Sites found by key (a u64 map to the newest site of that key), then by kind along the
 * sites of the same key: a program may contend on many objects. */
struct site_table {
	struct wait_site *v;
	size_t n, cap;
	struct gt_u64map by_key;  /* key -> index + 1 into v of its newest site */
};

struct stack_def {
	uint64_t *pcs;        /* a copy: a record lives only until the reader's next one */
	uint32_t n;
	char *frames_key;     /* symbolized "func\tfile\tline\n"..., made when first needed */
};

/* Threads and stacks are found by their ids through maps: memory grows with the ids a
 * capture holds, not with their values. */
struct report {
	struct gt_tracker *tracker;     /* the threads and their waits */
	struct thread_row *threads;     /* by the tracker's order, then (rows_by_serial) the
					 * threads with facts by serial */
	size_t n_threads, cap_threads;
	struct site_table objects, syscalls;
	struct stack_def *stacks;
	size_t n_stacks, cap_stacks;
	struct gt_u64map stack_index;   /* stack id -> index + 1 in stacks */
	struct gt_u64map first_use;     /* object -> the stack id of its first wait (names) */
	struct gt_symbolizer *sym;
	struct gt_clock clock;
	uint64_t end_ns;
	uint64_t window_tsc;            /* a ring capture's window starts after it, 0: none */
	uint64_t dropped_facts, stacks_lost, threads_lost, waiters_lost, reentry_lost, waits_unshown;
	struct gt_convert_stop stop;    /* from the header: it survives when no record fits */
	bool execd;                     /* the last exec announced did not fail */
	bool reaped;                    /* killed: its times end where its parent reaped it */
	struct gt_process_name proc;    /* the last name recorded (the header's before one) */
	bool kernel;                    /* on_cpu holds the kernel's times */
	struct gt_u64map on_cpu;        /* tid -> ns on a CPU, by the kernel's switches */
	char kernel_line[256];          /* what the kernel records are, or why not used */
	struct gt_hot hot;              /* from the trace's CPU samples, when a trace is given */
	struct gt_offcpu offcpu;        /* from the kernel records kept beside */
	struct gtr_holds *holds;        /* from the lock records (--locks=all), NULL: none */
	bool lock_records;              /* --locks=all: lock records were read */
	struct gt_lock_order *order;    /* their lock-order graph (report_order.c) */
	uint64_t start_mono_ns;         /* the capture's start, CLOCK_MONOTONIC */
	uint64_t live_now_mono_ns;      /* gt_report_options' */
};

/* report.c */
size_t gtr_frames_of(struct report *r, uint32_t stack, struct gt_frame *out);
void gtr_frame_text(const struct gt_frame *f, char *buf, size_t size);
void gtr_routine_text(struct report *r, const struct gt_tracked_thread *t, char *buf,
		      size_t size);
bool gtr_is_object_kind(uint8_t kind);
/* The object's name (gt_sym_object_name): its variable, or where it was first used. */
const char *gtr_object_name(struct report *r, uint64_t obj, char *buf, size_t size);
uint64_t gtr_thread_alive_ns(const struct report *r, const struct thread_row *t);
/* Still in a wait when the capture ends. */
bool gtr_waiting_at_end(const struct thread_row *t);
/* Alive and not inside a traced wait: on a CPU or runnable. */
uint64_t gtr_thread_running_ns(const struct report *r, const struct thread_row *t);
uint64_t gtr_thread_on_cpu_ns(const struct report *r, const struct thread_row *t);

/* A site's times to the fitted rate; its stacks grouped by frames and sorted, its holders
 * sorted. */
void gtr_site_fit(struct report *r, struct wait_site *s);
void gtr_site_order(struct report *r, struct wait_site *s);
void gtr_stack_stat_add(struct stack_stat **v, size_t *n, size_t *cap, uint32_t stack,
			uint64_t ns);
void *gtr_grow(void *array, size_t *n, size_t want, size_t elem);

/* report_locks.c: holders of the locks, the wait-for graph and deadlocks at the end */
void gtr_holder_add(struct report *r, struct wait_site *s, const struct gt_tracked_wait *w,
		    uint64_t ns);
void gtr_holders_fit(struct report *r, struct wait_site *s);
void gtr_holders_sort(struct wait_site *s);
void gtr_holders_free(struct wait_site *s);
void gtr_holders_text(FILE *out, struct report *r, const struct wait_site *s, unsigned top);
void gtr_holders_json(FILE *out, struct report *r, const struct wait_site *s, unsigned top);
void gtr_wait_for_text(FILE *out, struct report *r);
void gtr_wait_for_json(FILE *out, struct report *r);
void gtr_text_stack(FILE *out, struct report *r, uint32_t stack, const char *indent);
void gtr_json_stack(FILE *out, struct report *r, uint32_t stack);

/* report_holds.c: hold times from the lock records of --locks=all */
struct gtr_holds;
void gtr_holds_fact(struct report *r, const struct gt_capture_record *cr,
		    const struct gt_tracker_change *change, uint64_t now_ns);
/* Once every fact is read and the clock fitted: the holds open at the end, the order. */
void gtr_holds_finish(struct report *r);
void gtr_holds_free(struct report *r);
void gtr_holds_text(FILE *out, struct report *r, const struct gt_report_options *opt);
void gtr_holds_json(FILE *out, struct report *r, const struct gt_report_options *opt);
/* Where thread serial took lock obj, by the waits on it that began while it held it: the
 * stack most of them found, 0 when not recorded. */
uint32_t gtr_holds_taken_at(const struct report *r, uint64_t obj, uint32_t serial);
/* Where holder took lock obj, which it holds now: its held list's stack, else the stack
 * the object o (may be NULL) recorded for it as its holder; 0 when neither says. */
uint32_t gtr_held_stack(const struct gt_tracked_thread *holder, uint64_t obj,
			const struct gt_tracked_object *o);

/* report_order.c: the lock-order inversions (--locks=all) */
void gtr_order_fact(struct report *r, const struct gt_capture_record *cr,
		    const struct gt_tracker_change *change);
void gtr_order_free(struct report *r);
void gtr_order_text(FILE *out, struct report *r);
void gtr_order_json(FILE *out, struct report *r);

/* report_print.c */
void gtr_print_text(FILE *out, struct report *r, const struct gt_file_header *h,
		    const char *capture, const struct gt_report_options *opt);
void gtr_print_json(FILE *out, struct report *r, const struct gt_file_header *h,
		    const char *capture, const struct gt_report_options *opt);

#endif
