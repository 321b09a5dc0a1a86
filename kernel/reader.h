/* reader: reading the kernel scheduling file of a run (records.h): its records one by one,
 * the counts the summary shows, the switches in time order, an index of switch-outs and
 * off-CPU samples by thread.  A sample's own layout is samples.h's. */
#ifndef GOTRACE_KERNEL_READER_H
#define GOTRACE_KERNEL_READER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "records.h"

/* The sample_id trailer of a record (sample_type GT: TID, TIME, CPU, IDENTIFIER). */
struct gt_kernel_id {
	uint32_t pid, tid;
	uint64_t time;   /* CLOCK_MONOTONIC ns */
	uint32_t cpu;
	size_t offset;   /* the record's, in the file's records (gt_kernel_record_at) */
};

struct gt_kernel_counts {
	uint64_t records;
	uint64_t switches;        /* PERF_RECORD_SWITCH, in and out */
	uint64_t switches_out, preempted;   /* of which: off CPU; off CPU still runnable */
	uint64_t lost;            /* records the kernel dropped (PERF_RECORD_LOST) */
	uint64_t launcher_lost;   /* records the launcher could not store */
	uint64_t samples_cpu;     /* cpu-clock samples (PERF_RECORD_SAMPLE) */
	uint64_t samples_offcpu;  /* samples at a switch-out */
	uint64_t throttled;       /* PERF_RECORD_THROTTLE: the kernel paused sampling */
	uint32_t sample_hz;       /* the rate asked for, 0: no CPU samples */
	uint64_t bytes;           /* of the file */
	uint64_t launcher_cpu_ns; /* the launcher's drain (0: not finished) */
	bool unfinished;          /* the launcher did not end the file */
	bool truncated;           /* it ends inside a record */
	uint32_t n_cpus, buffer_bytes;
};

/* Calls fn for every record but samples (type, misc, its trailer) when fn is not NULL, and
 * counts them into *c.  0, or -1 with a message in err. */
int gt_kernel_read(const char *path,
		   void (*fn)(uint32_t type, uint16_t misc, const struct gt_kernel_id *id, void *ctx),
		   void *ctx, struct gt_kernel_counts *c, char *err, size_t err_size);

/* A context switch or a thread's exit (its last time off its CPU: no switch-out follows). */
enum gt_kernel_what { GT_KSW_IN, GT_KSW_OUT, GT_KSW_PREEMPTED, GT_KSW_EXIT };
struct gt_kernel_switch {
	uint64_t time;   /* CLOCK_MONOTONIC ns */
	uint64_t mono;   /* the same, kept when time is put on another clock */
	uint32_t tid, cpu;
	uint32_t order;  /* in the file: ties keep it */
	uint8_t what;    /* enum gt_kernel_what; GT_KSW_PREEMPTED: out, still runnable */
};

/* The switches and exits of path in time order (the file is in order only per CPU), in
 * *out (malloc'd, *n of them), counted into *c.  0, or -1 with a message in err. */
int gt_kernel_switches(const char *path, struct gt_kernel_switch **out, size_t *n,
		       struct gt_kernel_counts *c, char *err, size_t err_size);
/* The switch or exit a record (type, misc, id) is, in *out; false when it is neither. */
bool gt_kernel_switch_of(uint32_t type, uint16_t misc, const struct gt_kernel_id *id,
			 struct gt_kernel_switch *out);
/* The same switches and exits, read as they are asked for (switch_stream.c): a merge by time
 * of the file's stretches that are in time order (each drain of a CPU's ring), holding a few
 * words per stretch, not the switches, and giving back the file's pages it has read. */
struct gt_kernel_switch_stream;
struct gt_kernel_switch_stream *gt_kernel_switch_stream_open(const char *path, char *err,
							     size_t err_size);
/* The next one in time order (ties: in the file's order), false after the last. */
bool gt_kernel_switch_stream_next(struct gt_kernel_switch_stream *s, struct gt_kernel_switch *out);
void gt_kernel_switch_stream_close(struct gt_kernel_switch_stream *s);
/* A kernel file mapped for reading its samples in any order (the encoder reads them by
 * time): gt_kernel_open, gt_kernel_walk, gt_kernel_sample_at (samples.h), gt_kernel_close. */
struct gt_kernel_file {
	struct gt_kernel_header h;
	const struct gt_kernel_event *events;
	const unsigned char *records;
	size_t records_len;
	void *map;
	size_t map_len;
};

int gt_kernel_open(const char *path, struct gt_kernel_file *f, char *err, size_t err_size);
void gt_kernel_close(struct gt_kernel_file *f);
/* gt_kernel_read's walk, and sample(offset of the record, its time, kind, ctx) for every
 * sample when sample is not NULL. */
void gt_kernel_walk(const struct gt_kernel_file *f,
		    void (*fn)(uint32_t type, uint16_t misc, const struct gt_kernel_id *id, void *ctx),
		    void (*sample)(uint64_t offset, uint64_t time, uint32_t kind, void *ctx), void *ctx,
		    struct gt_kernel_counts *c);
/* Gives back the pages of f's records [from, to) read so far (those wholly inside): their
 * memory goes, and a later read faults them in again from the file. */
void gt_kernel_give_back(const struct gt_kernel_file *f, size_t from, size_t to);
/* The record at offset off of f's records: its header in *h, its trailer in *id when it has
 * one (*has_id: as the walk gives it to fn; a sample's layout is its own); false past the end
 * or at a record cut short. */
struct perf_event_header;
bool gt_kernel_record_at(const struct gt_kernel_file *f, size_t off, struct perf_event_header *h,
			 struct gt_kernel_id *id, bool *has_id);
/* Switch-outs or off-CPU samples by thread and time: the off-CPU sample of a switch-out
 * (--offcpu-stacks) is taken just before the kernel writes its SWITCH record, on the same
 * CPU, so the two meet by (pid, tid) and time.  The model's off-CPU blocks and the report
 * use it to give a switch-out its stack, or a sample its switch's preempt flag. */
struct gt_kernel_at {
	uint32_t pid, tid;
	uint64_t time;
	uint64_t offset;          /* a sample's (gt_kernel_sample_at) */
	uint16_t misc;            /* a switch's (PERF_RECORD_MISC_SWITCH_OUT_PREEMPT) */
};

struct gt_kernel_index {
	struct gt_kernel_at *v;   /* by pid, tid, time */
	size_t n;
};

/* kind GT_KERNEL_EV_OFFCPU: the off-CPU samples; GT_KERNEL_EV_SWITCH: the switch-outs.
 * false when memory runs out (the index is then empty). */
bool gt_kernel_index_build(const struct gt_kernel_file *f, uint32_t kind,
			   struct gt_kernel_index *ix);
/* The entry of (pid, tid) nearest to time, at most slack_ns away; NULL when none. */
const struct gt_kernel_at *gt_kernel_index_find(const struct gt_kernel_index *ix, uint32_t pid,
						uint32_t tid, uint64_t time, uint64_t slack_ns);
void gt_kernel_index_free(struct gt_kernel_index *ix);
/* How far a switch-out's off-CPU sample may be from its SWITCH record: it is taken a few
 * microseconds before it. */
#define GT_KERNEL_SWITCH_SLACK_NS 100000u

/* "kernel: N context switches recorded, M lost" and what else went wrong, or nothing with
 * no counts; writes into buf (size bytes). */
void gt_kernel_describe(const struct gt_kernel_counts *c, char *buf, size_t size);

#endif
