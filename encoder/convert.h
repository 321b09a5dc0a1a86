/* convert: one capture file -> one "go 1.19 trace" file (reader -> model -> wire). */
#ifndef GOTRACE_CONVERT_H
#define GOTRACE_CONVERT_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "capture_reader.h"
#include "cpu_samples.h"
#include "gowire.h"
#include "model.h"

struct gt_convert_options {
	uint64_t syscall_threshold_ns;      /* 0: GT_DEFAULT_SYSCALL_THRESHOLD_NS */
	const char *const *debug_dirs;      /* extra debug-info directories, NULL-terminated */
	bool no_symbols;                    /* name frames by address (no symbolizer) */
	/* A time window (window.h): from_ns and to_ns after the start of the earliest capture;
	 * to_ns 0: to the end.  The threads alive at from_ns are in the trace from its start. */
	uint64_t from_ns, to_ns;
	/* Called every few thousand records with the capture bytes consumed so far and in all,
	 * for a progress display; NULL: never. */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
	/* The trace format (0: "go 1.19 trace"); for GT_FORMAT_GO122, the generation length in
	 * ns (0: 1 s, as Go's runtime). */
	enum gt_trace_format format;
	uint64_t generation_ns;
	/* The run's kernel scheduling records (kernel/reader.h), NULL: none.  Their context
	 * switches place the threads (model.h gt_model_switch); a file that cannot be read is
	 * left out, its reason in the summary's kernel_error. */
	const char *kernel_path;
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
};
/* From a capture's header. */
void gt_capture_stop(const struct gt_file_header *h, struct gt_convert_stop *out);
/* The one line that says it (no newline): "recording stopped early at 1.234 s: no space left
 * on the file system; at least 5000 facts after that were not recorded", or at the bound:
 * "recording stopped at the --max-capture bound of 1 GiB after 12.300 s; at least 1234
 * facts after that were not recorded". */
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
	char kernel_error[256];             /* why the kernel records were not used, "" */
	bool has_samples;                   /* kernel_path held CPU samples */
	struct gt_cpu_sample_counts samples;
	double seconds;                     /* wall clock */
	double cpu_seconds;                 /* user + system */
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
/* The summary of `gotrace convert`: the totals, then every non-zero counter. */
void gt_convert_print_summary(FILE *f, const char *out, const struct gt_convert_summary *sum);

#endif
