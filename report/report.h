/* report: where the threads of a traced process spent their time, which objects they
 * fought over and which syscalls blocked them, straight from a capture (no Go needed).
 *
 * Built on the capture reader's merged fact stream and the symbolizer, not on the Go
 * model: lock, condvar and semaphore addresses exist only in the capture. */
#ifndef GOTRACE_REPORT_H
#define GOTRACE_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

struct gt_report_options {
	bool json;
	unsigned top;        /* rows per ranking (objects, syscalls); 0 = 10 */
	unsigned stacks;     /* stacks shown per object; 0 = 3 */
	const char *trace;   /* the Go trace the capture belongs to, when asked about it */
	const char *kernel;  /* the run's kernel scheduling records (FILE.gtkern): each thread's
			      * time on a CPU from its context switches; NULL: none */
	uint64_t reaped_mono_ns;  /* killed: when it was reaped (gt_capture_reaped),
				   * CLOCK_MONOTONIC; 0: as its header says */
	bool waits_only;     /* text: only the threads still waiting, the wait-for graph and
			      * its deadlocks (gotrace run --hang) */
	const char *const *debug_dirs;  /* where else to look for the programs and libraries
					 * (their debug files, or themselves moved: a capture from
					 * another machine), NULL-terminated; NULL: none */
	uint64_t live_now_mono_ns;  /* the capture of a process alive now (gotrace stacks):
				     * CLOCK_MONOTONIC now, so that each wait also says how long
				     * ago it began, and each thread is named by its tid too; 0:
				     * not live */
};

/* Reads CAPTURE and prints the report to OUT.  Returns 0, or -1 after writing one line
 * (no newline) into err. */
int gt_report_capture(const char *capture, const struct gt_report_options *opt, FILE *out,
		      char *err, size_t errlen);

/* From a Go trace alone (no capture kept): per goroutine time running, blocked by kind and
 * in syscalls, and the stacks that blocked longest.  Same return convention. */
int gt_report_go_trace(const char *trace, const struct gt_report_options *opt, FILE *out,
		       char *err, size_t errlen);

/* The critical path (encoder.h gt_critpath_walk) of the run whose captures are given (its
 * kernel records: opt->kernel), from q's thread and interval: its breakdowns by state, thread,
 * function, lock and syscall, each adding up to the interval, and its segments; JSON with
 * opt->json.  Same return convention. */
struct gt_cp_query;
struct gt_cp_result;
int gt_report_critical_path(const char *const *captures, size_t n,
			    const struct gt_report_options *opt, const struct gt_cp_query *q,
			    FILE *out, char *err, size_t errlen);
/* A walk's result printed as gt_report_critical_path does; brief: the breakdowns' top three
 * lines only (gotrace run --critical-path). */
void gt_report_critical_path_print(FILE *out, const struct gt_cp_result *r,
				   const struct gt_report_options *opt, bool brief);

/* Shared by both reports: "func (file:line)" with the file's base name, and a JSON string. */
void gt_report_frame_text(const char *func, const char *file, uint64_t line, char *buf,
			  size_t size);
void gt_report_json_string(FILE *out, const char *s);
/* P, or the end of `gotrace report` with one line when an allocation failed. */
void *gt_report_must(void *p);

#endif
