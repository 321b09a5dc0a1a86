/* run: what the parts of `gotrace run` share.  cmd_run.c checks, launches and follows the
 * command; run_options.c reads its options; run_captures.c prepares the capture directory
 * before the run and, after it, converts the captures and keeps or removes them. */
#ifndef GOTRACE_CLI_RUN_H
#define GOTRACE_CLI_RUN_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "cli_common.h"
#include "encoder/encoder.h"
#include "trace_set.h"

struct run_options {
	const char *output;
	const char *stacks;
	const char *locks;         /* --locks, validated: contended or all */
	const char *capture_dir;
	const char *stack_depth, *start_delay, *duration; /* validated, passed on as given */
	const char *last;          /* --last, validated (gotrace/last.h) */
	bool no_follow;
	bool keep_capture;
	bool per_process;
	bool no_kernel;         /* --kernel=off, the default */
	unsigned cpu_samples;   /* --cpu-samples HZ, 0: off */
	bool offcpu_stacks;     /* --offcpu-stacks */
	bool critical_path;     /* --critical-path */
	uint64_t max_capture;   /* --max-capture, 0: the default (max_capture_default) */
	uint64_t hang_ns;       /* --hang, 0: no watchdog */
	char **command;
	enum gt_trace_format format;   /* --format, GOTRACE_FORMAT */
	const char *format_text;
};

/* Returns -1 to continue, or an exit status. */
int gt_run_parse_options(int argc, char **argv, struct run_options *opt);

struct capture_dir {
	char path[PATH_MAX];
	bool created;         /* a temporary directory of ours: remove it when done */
	char **preexisting;   /* capture files already there before the run: not ours */
	size_t n_preexisting;
};

int gt_run_prepare_capture_dir(struct capture_dir *cd, const char *requested, bool keep);
/* A capture file that was in the directory before the run: not this run's. */
bool gt_run_was_preexisting(const struct capture_dir *cd, const char *name);

/* The captures this run produced ("gotrace-<pid>.gtcap", "gotrace-<pid>-<n>.gtcap" after
 * the n-th exec), identified and named by trace_set. */
struct run_captures {
	char **paths;
	struct gt_trace_image *img;   /* the command's own first, then by pid, images in order */
	size_t n;
	uint32_t main_pid;
	const char *kernel;           /* the run's kernel records (NULL: none), for the model */
};

void gt_run_collect_captures(const struct capture_dir *cd, pid_t main_pid, const char *kernel,
			     struct run_captures *rc);
void gt_run_free_captures(struct run_captures *rc);
/* The run's captures (rc NULL: none collected) and kernel records removed, with the
 * directory when it is ours. */
void gt_run_remove_captures(const struct capture_dir *cd, const struct run_captures *rc,
			    const char *kernel);
/* One trace of every capture, or one per capture with --per-process; *all_ok false when one
 * could not be written. */
void gt_run_convert_all(const struct run_options *opt, const struct run_captures *rc,
			bool *all_ok);
/* --keep-capture without --capture-dir: the captures move next to the traces; whether the
 * command's own capture got there. */
bool gt_run_keep_beside_output(const struct run_options *opt, const struct capture_dir *cd,
			       const struct run_captures *rc);

#endif
