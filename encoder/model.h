/* model: the scheduler model turning capture facts into scheduling events (gowire.h
 * GT_SCHED_EVENTS, in the default format's words; docs/formats/go122.md).  Threads become
 * goroutines (main thread = G1, then fresh sequential ids), CPU k becomes P k+1 (ProcStart
 * thread id k+1, Gomaxprocs = n_cpus + 1).  Every event goes through one primitive,
 * "thread T runs on CPU c at time t" (docs/formats/go119.md).
 * Whatever the facts cannot explain is repaired and counted, never written as a trace a
 * reader rejects. */
#ifndef GOTRACE_MODEL_H
#define GOTRACE_MODEL_H

#include <gotrace/capture.h>
#include <stdbool.h>
#include <stdint.h>

#include "capture_reader.h"
#include "encoder.h"
#include "gowire.h"

struct gt_symbolizer;
struct gt_capture_set;
struct gt_cp_stretch;

struct gt_model_options {
	uint64_t syscall_threshold_ns;  /* a syscall longer than this blocked */
	struct gt_symbolizer *sym;      /* NULL: frames named by their address */
	/* The reader the facts come from: a release that frees fewer waiters than wait peeks
	 * into it to wake the ones whose next fact comes first.  NULL: the earliest blocked. */
	struct gt_capture *lookahead;
	/* Several captures (gt_model_add_capture): the set they come from, whose merged stream
	 * is peeked into instead of lookahead. */
	struct gt_capture_set *set;
	/* The trace starts at the first fact stamped at or after this (a window, window.h):
	 * facts before it only define (stacks, modules, clock pairs, names).  0: the first. */
	uint64_t start_tsc;
	/* Told every scheduling event as it is emitted (critical_path.h), NULL: none. */
	struct gt_critpath *critical_path;
	/* The critical path to draw as a user task with regions (model_cp.c), sorted by goroutine
	 * then time; NULL: none. */
	const struct gt_cp_stretch *critical_plan;
	size_t n_critical_plan;
};

struct gt_model;

struct gt_model *gt_model_new(struct gt_wire *w, const struct gt_file_header *h,
			      const struct gt_model_options *opt);
/* Another capture in the same trace (a process of the same run), before any fact: capture 0
 * is the one of gt_model_new's header, on whose clock every timestamp is, and the records
 * of capture i carry capture = i.  Threads become goroutines labelled "prog[pid] name";
 * threads, stacks and objects of different captures never mix.  Returns -1 when memory
 * runs out. */
int gt_model_add_capture(struct gt_model *m, const struct gt_file_header *h);
/* Capture has no more facts (its process image ended): its running threads end there, or
 * where it was reaped (gt_model_capture_reaped). */
void gt_model_capture_end(struct gt_model *m, uint32_t capture);
/* The facts' thread-and-wait state so far (the tracker the model is fed through). */
const struct gt_tracker *gt_model_tracker(const struct gt_model *m);
/* The lock-order graph of the facts so far (fed the tracker's changes). */
const struct gt_lock_order *gt_model_lock_order(const struct gt_model *m);
/* Where capture's stack took a lock: its first frame in the program's code as "func
 * (file.c:12)" into buf; NULL when not known (no symbolizer, no such frame). */
const char *gt_model_stack_site(struct gt_model *m, uint32_t capture, uint32_t stack, char *buf,
				size_t size);
/* The name of capture's object obj of kind (enum gt_block_kind), as the trace's block reasons
 * give it (its variable, or where its first wait was); NULL: its address names it. */
const char *gt_model_object_name(struct gt_model *m, uint32_t capture, uint8_t kind,
				 uint64_t obj);
/* Before any fact: capture's process, which recorded no end, was dead at r
 * (gt_capture_reaped; its tsc on the captures' clock, or 0): its threads go on as they were
 * after its last fact, and end there. */
void gt_model_capture_reaped(struct gt_model *m, uint32_t capture, const struct gt_reap *r);
/* The counters of one capture (gt_model_counters: their sum). */
void gt_model_capture_counters(const struct gt_model *m, uint32_t capture,
			       struct gt_model_counters *out);
/* One record in merged order: the one opt->lookahead delivered last, when given. */
void gt_model_fact(struct gt_model *m, const struct gt_capture_record *r);
/* The Frequency of the facts read so far (the clock fit until now; m: a struct gt_model, in
 * the shape of a gt_wire_options frequency source). */
uint64_t gt_model_frequency(const void *m);
/* Epilogue (§5.4); returns the Frequency to write (ticks are ns at the header's rate,
 * corrected by the fit of the clock pairs). */
uint64_t gt_model_finish(struct gt_model *m);
void gt_model_counters(const struct gt_model *m, struct gt_model_counters *out);
/* The most threads held at once: the dead are retired once nothing refers to them. */
size_t gt_model_threads_held(const struct gt_model *m);
/* Thread (capture, serial) ended before a --from window's start (window.c): not drawn.  The
 * model forgets what it met of it (its name) but for its serial's bit, as it retires the
 * dead: a later fact of it is after its end. */
void gt_model_ended_before_window(struct gt_model *m, uint32_t capture, uint32_t serial);
/* The process of a capture (0: gt_model_new's) as its user knows it (process_name.h), from
 * the facts read so far: after gt_model_finish, the last name it had (its command line after
 * a setproctitle-style rewrite).  The one function for labelling a process. */
const struct gt_process_name *gt_model_process(const struct gt_model *m, uint32_t capture);
void gt_model_free(struct gt_model *m);

/* A context switch the kernel recorded (kernel/reader.h, PERF_RECORD_SWITCH) for thread tid
 * on cpu, given between the facts in time order (tsc: its time on the capture's clock).
 * Once one is given, threads the kernel reports run exactly when and where it ran them
 * (model_kernel.c); without any, the model draws from the hooks alone. */
struct gt_model_switch {
	uint64_t tsc;
	uint64_t mono_ns;   /* the kernel's time (CLOCK_MONOTONIC): its off-CPU sample's */
	uint32_t tid, cpu;
	bool in;          /* switched in, else out */
	bool preempted;   /* out while still runnable */
	bool exit;        /* out for good: the thread exited (PERF_RECORD_EXIT) */
	/* the fact modelled next (the lookahead follows it), NULL: none; a thread's own fact
	 * a few hundred ns after its switch-out was made before it (the clocks' error) */
	const struct gt_capture_record *next;
};
void gt_model_switch(struct gt_model *m, const struct gt_model_switch *s);
/* Switches will be given: from now on a new thread's tid is read ahead (from its
 * THREAD_START), so that its switches before its first hook place it too.  peek(ctx, i) shows
 * them (kernel/reader.h's, in time order, their times on the captures' clock): the i-th of
 * those still to be given (0: the next, or the one being given), NULL past the last; the
 * model's lookahead of switches, valid until the next call. */
struct gt_kernel_switch;
void gt_model_kernel_ahead(struct gt_model *m,
			   const struct gt_kernel_switch *(*peek)(void *ctx, size_t i), void *ctx);
struct gt_cpu_samples;
/* The kernel file's samples (cpu_samples.h): an off-CPU wait the hooks did not see gets the
 * stack of its switch-out's off-CPU sample (--offcpu-stacks).  NULL: none (the default). */
void gt_model_offcpu_samples(struct gt_model *m, struct gt_cpu_samples *s);

#endif
