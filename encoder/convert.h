/* convert: one capture file -> one "go 1.19 trace" file (reader -> model -> wire). */
#ifndef GOTRACE_CONVERT_H
#define GOTRACE_CONVERT_H

#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "capture_reader.h"
#include "gowire.h"
#include "model.h"

struct gt_convert_options {
	uint64_t syscall_threshold_ns;      /* 0: GT_DEFAULT_SYSCALL_THRESHOLD_NS */
	const char *const *debug_dirs;      /* extra debug-info directories, NULL-terminated */
	bool no_symbols;                    /* name frames by address (no symbolizer) */
	/* Called every few thousand records with the capture bytes consumed so far and in all,
	 * for a progress display; NULL: never. */
	void (*progress)(void *ctx, uint64_t done, uint64_t total);
	void *progress_ctx;
};

struct gt_convert_summary {
	uint32_t pid;
	bool truncated;                     /* the capture file was cut short */
	struct gt_capture_stats reader;
	struct gt_model_counters model;
	struct gt_wire_stats wire;
	double seconds;                     /* wall clock */
	double cpu_seconds;                 /* user + system */
};

/* Converts capture into a trace at out (written beside it, renamed into place when
 * complete).  Returns 0, or -1 with one line in err. */
int gt_convert_file(const char *capture, const char *out, const struct gt_convert_options *opt,
		    struct gt_convert_summary *sum, char *err, size_t errlen);
/* The pid recorded in a capture's header, or 0 when unreadable. */
uint32_t gt_convert_capture_pid(const char *capture);
void gt_convert_print_summary(FILE *f, const char *out, const struct gt_convert_summary *sum);

#endif
