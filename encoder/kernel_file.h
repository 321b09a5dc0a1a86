/* Reading the kernel scheduling file of a run (include/gotrace/kernel_sched.h): its records
 * one by one, and the counts the summary shows.  The model does not use them yet (issue 15,
 * item 2). */
#ifndef GOTRACE_ENCODER_KERNEL_FILE_H
#define GOTRACE_ENCODER_KERNEL_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <gotrace/kernel_sched.h>

/* The sample_id trailer of a record (sample_type GT: TID, TIME, CPU, IDENTIFIER). */
struct gt_kernel_id {
	uint32_t pid, tid;
	uint64_t time;   /* CLOCK_MONOTONIC ns */
	uint32_t cpu;
};

struct gt_kernel_counts {
	uint64_t records;
	uint64_t switches;        /* PERF_RECORD_SWITCH, in and out */
	uint64_t switches_out, preempted;   /* of which: off CPU; off CPU still runnable */
	uint64_t lost;            /* records the kernel dropped (PERF_RECORD_LOST) */
	uint64_t launcher_lost;   /* records the launcher could not store */
	bool unfinished;          /* the launcher did not end the file */
	bool truncated;           /* it ends inside a record */
	uint32_t n_cpus, buffer_bytes;
};

/* Calls fn for every record (type, misc, its trailer) when fn is not NULL, and counts them
 * into *c.  0, or -1 with a message in err. */
int gt_kernel_read(const char *path,
		   void (*fn)(uint32_t type, uint16_t misc, const struct gt_kernel_id *id, void *ctx),
		   void *ctx, struct gt_kernel_counts *c, char *err, size_t err_size);

/* A context switch or a thread's exit (its last time off its CPU: no switch-out follows). */
enum gt_kernel_what { GT_KSW_IN, GT_KSW_OUT, GT_KSW_PREEMPTED, GT_KSW_EXIT };
struct gt_kernel_switch {
	uint64_t time;   /* CLOCK_MONOTONIC ns */
	uint32_t tid, cpu;
	uint32_t order;  /* in the file: ties keep it */
	uint8_t what;    /* enum gt_kernel_what; GT_KSW_PREEMPTED: out, still runnable */
};

/* The switches and exits of path in time order (the file is in order only per CPU), in
 * *out (malloc'd, *n of them), counted into *c.  0, or -1 with a message in err. */
int gt_kernel_switches(const char *path, struct gt_kernel_switch **out, size_t *n,
		       struct gt_kernel_counts *c, char *err, size_t err_size);

/* "kernel: N context switches recorded, M lost" and what else went wrong, or nothing with
 * no counts; writes into buf (size bytes). */
void gt_kernel_describe(const struct gt_kernel_counts *c, char *buf, size_t size);

#endif
