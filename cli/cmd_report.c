/* `gotrace report FILE|CAPTURE [--json]`: the report of report.c, from a capture or from
 * the capture kept next to a trace (`gotrace run --keep-capture` writes FILE.gtcap). */
#include "cli_common.h"
#include "commands.h"
#include "encoder/encoder.h"
#include "report/report.h"
#include "trace_set.h"

#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gotrace/capture.h>
#include "kernel/records.h"

static const char report_usage[] =
	"usage: gotrace report [--json] [--top N] [--stacks N] CAPTURE|TRACE\n"
	"       gotrace report --critical-path [--thread NAME|TID] [--from T] [--to T] [--json]\n"
	"                      CAPTURE|TRACE\n"
	"\n"
	"Where the threads of a traced process spent their time, with no Go toolchain needed:\n"
	"per thread (name, start routine) the time alive, running and waiting by kind (locks,\n"
	"condition variables, joins, sleeps, syscalls); the most contended objects (mutex,\n"
	"rwlock, condvar, semaphore, barrier, futex by address) with the stacks that waited on\n"
	"them and count / total / mean / max wait; the syscalls that took longest per call\n"
	"site; the threads still waiting when recording ended (for a hung program).\n"
	"\n"
	"CAPTURE is a .gtcap file.  For a Go trace TRACE, the report reads the capture kept\n"
	"beside it as TRACE.gtcap (`gotrace run --keep-capture`) when there is one, and those\n"
	"of the run's other processes (TRACE.PID.gtcap, TRACE.PID-N.gtcap), one report each\n"
	"(with --json the first only, the others named on stderr).  Without\n"
	"it, the report reads the Go trace itself: per goroutine (one per thread) the time\n"
	"running, blocked by kind (sync, cond, net, sleep) and in syscalls, and the stacks that\n"
	"blocked longest; lock addresses, fd kinds and syscall names are only in the capture.\n"
	"With the kernel's records kept beside the capture as FILE.gtkern (`gotrace run\n"
	"--kernel=on --keep-capture`), each thread's time on a CPU too (on-CPU).\n"
	"\n"
	"      --json        one JSON object instead of text\n"
	"      --top N       rows per ranking (default 10)\n"
	"      --stacks N    stacks per contended object or syscall (default 3)\n"
	"      --debug-dir DIR   also look for separate debug info in DIR, and for the\n"
	"                    programs and libraries themselves when they are not at their\n"
	"                    recorded paths (a capture from another machine); repeatable\n"
	"      --critical-path   what the main thread (or --thread's) waited for, end to end,\n"
	"                    across threads and processes: the segments of the path and its\n"
	"                    time by state, thread, function, lock and syscall (the run's\n"
	"                    captures kept beside TRACE, and its kernel records when kept)\n"
	"      --thread NAME|TID  the thread whose path it is (default: the command's main)\n"
	"      --from T, --to T   only the time from T to T (after the start, e.g. 1.5s)\n"
	"  -h, --help        show this help\n";

#define fail(...) gt_cli_fail("report", __VA_ARGS__)

enum file_kind { FILE_UNREADABLE, FILE_CAPTURE, FILE_GO_TRACE, FILE_OTHER };

static enum file_kind kind_of(const char *path)
{
	char head[16] = { 0 };
	FILE *f = fopen(path, "rb");
	if (f == NULL)
		return FILE_UNREADABLE;
	size_t n = fread(head, 1, sizeof head, f);
	fclose(f);
	if (n >= 8 && memcmp(head, GT_CAPTURE_MAGIC, 8) == 0)
		return FILE_CAPTURE;
	if (n >= 11 && memcmp(head, "go 1.", 5) == 0 && memmem(head, n, " trace", 6) != NULL)
		return FILE_GO_TRACE;
	return FILE_OTHER;
}

static int parse_count(const char *opt, const char *text, unsigned *out)
{
	char *end;
	unsigned long v = strtoul(text, &end, 10);
	if (text[0] == '\0' || *end != '\0' || v == 0 || v > 100000) {
		fail("%s needs a count from 1 to 100000, not '%s'", opt, text);
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

typedef int report_fn(const char *file, const struct gt_report_options *opt, FILE *out,
		      char *err, size_t errlen);

/* A report written (rc 0) or not (err says why): the command's status. */
static int report_done(int rc, const char *err)
{
	if (rc != 0) {
		fail("%s", err);
		return 1;
	}
	if (fflush(stdout) != 0) {
		fail("cannot write the report: %s", strerror(errno));
		return 1;
	}
	return 0;
}

static int report_from(report_fn *report, const char *file, const struct gt_report_options *opt)
{
	char err[512];
	return report_done(report(file, opt, stdout, err, sizeof err), err);
}

/* The captures `gotrace run --keep-capture` kept beside trace for the run's other processes
 * (trace.PID.gtcap, trace.PID-N.gtcap), after trace.gtcap's report: a report each in text;
 * named on stderr with --json, whose output is one object.  The run's kernel records
 * (trace.gtkern, in opt) are every process's. */
static int report_other_processes(const char *trace, const struct gt_report_options *opt,
				  glob_t *others, const struct gt_reap *reaped)
{
	glob_t g = *others;
	int rc = 0;
	if (opt->json)
		fprintf(stderr, "gotrace report: the JSON report is of %s.gtcap; %zu other processes' "
				"captures beside it, each reported by its own file: %s ...\n",
			trace, g.gl_pathc, g.gl_pathv[0]);
	for (size_t i = 0; !opt->json && rc == 0 && i < g.gl_pathc; i++) {
		printf("\n");
		struct gt_report_options each = *opt;
		each.trace = NULL;   /* the trace is the run's, not this process's alone */
		each.reaped_mono_ns = reaped ? reaped[i + 1].mono_ns : 0;
		rc = report_from(gt_report_capture, g.gl_pathv[i], &each);
	}
	return rc;
}

/* When each of the run's captures, CAPTURE then OTHERS, was reaped (killed processes,
 * gt_capture_reaped); NULL when memory runs out. */
/* The run's captures: CAPTURE, then OTHERS (NULL: none), *n of them; NULL when memory runs
 * out. */
static const char **run_paths(const char *capture, const glob_t *others, size_t *n)
{
	*n = 1 + (others ? others->gl_pathc : 0);
	const char **paths = calloc(*n, sizeof *paths);
	if (paths == NULL)
		return NULL;
	paths[0] = capture;
	for (size_t i = 1; i < *n; i++)
		paths[i] = others->gl_pathv[i - 1];
	return paths;
}

static struct gt_reap *run_reaped(const char *capture, const glob_t *others)
{
	size_t n;
	const char **paths = run_paths(capture, others, &n);
	if (paths == NULL)
		return NULL;
	struct gt_reap *reaped = gt_capture_reaped(paths, n);
	free(paths);
	return reaped;
}

/* --critical-path: the walk over the run's captures, capture then others (NULL: none). */
static int report_critical_path(const char *capture, glob_t *others,
				const struct gt_report_options *opt, const struct gt_cp_query *q)
{
	size_t n;
	const char **paths = run_paths(capture, others, &n);
	char err[512] = "out of memory";
	int rc = paths ? gt_report_critical_path(paths, n, opt, q, stdout, err, sizeof err) : -1;
	free(paths);
	if (others)
		globfree(others);
	return report_done(rc, err);
}

/* gotrace report with debug_dirs room for every --debug-dir of argv. */
static int report_command(int argc, char **argv, const char **debug_dirs)
{
	enum { OPT_JSON = 256, OPT_TOP, OPT_STACKS, OPT_CRITICAL, OPT_THREAD, OPT_FROM, OPT_TO,
	       OPT_DEBUG_DIR };
	static const struct option longopts[] = {
		{ "critical-path", no_argument, NULL, OPT_CRITICAL },
		{ "thread", required_argument, NULL, OPT_THREAD },
		{ "from", required_argument, NULL, OPT_FROM },
		{ "to", required_argument, NULL, OPT_TO },
		{ "json", no_argument, NULL, OPT_JSON },
		{ "top", required_argument, NULL, OPT_TOP },
		{ "stacks", required_argument, NULL, OPT_STACKS },
		{ "debug-dir", required_argument, NULL, OPT_DEBUG_DIR },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct gt_report_options opt = { 0 };
	struct gt_cp_query query = { 0 };
	size_t n_debug_dirs = 0;
	opt.debug_dirs = debug_dirs;
	bool critical = false;
	int c;

	optind = 0;
	opterr = 0;
	while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
		switch (c) {
		case 'h':
			fputs(report_usage, stdout);
			return 0;
		case OPT_JSON:
			opt.json = true;
			break;
		case OPT_TOP:
			if (parse_count("--top", optarg, &opt.top) != 0)
				return 2;
			break;
		case OPT_STACKS:
			if (parse_count("--stacks", optarg, &opt.stacks) != 0)
				return 2;
			break;
		case OPT_DEBUG_DIR:
			debug_dirs[n_debug_dirs++] = optarg;
			break;
		case OPT_CRITICAL:
			critical = true;
			break;
		case OPT_THREAD:
			query.thread = optarg;
			break;
		case OPT_FROM:
		case OPT_TO:
			if (gt_cli_parse_duration(optarg, 1e9, c == OPT_FROM ? &query.from_ns
									  : &query.to_ns) != 0) {
				fail("--%s needs a time after the start, e.g. 1.5s or 200ms, not '%s'",
				     c == OPT_FROM ? "from" : "to", optarg);
				return 2;
			}
			break;
		default:
			return gt_cli_bad_option("report", c, argv);
		}
	}
	if (n_debug_dirs == 0)
		opt.debug_dirs = NULL;
	if (argc - optind != 1) {
		fail(argc == optind ? "no file given (usage: gotrace report [--json] CAPTURE|TRACE)"
				    : "one file at a time (usage: gotrace report [--json] "
				      "CAPTURE|TRACE)");
		return 2;
	}
	if (!critical && (query.thread || query.from_ns || query.to_ns)) {
		fail("--thread, --from and --to are options of --critical-path");
		return 2;
	}
	if (query.to_ns && query.to_ns <= query.from_ns) {
		fail("--to must be later than --from");
		return 2;
	}
	const char *file = argv[optind];
	char capture[PATH_MAX + 8];
	snprintf(capture, sizeof capture, "%s", file);
	switch (kind_of(file)) {
	case FILE_UNREADABLE:
		fail("cannot read %s: %s", file, strerror(errno));
		return 1;
	case FILE_OTHER:
		fail("%s is neither a gotrace capture nor a Go trace", file);
		return 1;
	case FILE_GO_TRACE:
		snprintf(capture, sizeof capture, "%s.gtcap", file);
		opt.trace = file;
		if (kind_of(capture) != FILE_CAPTURE && critical) {
			fail("--critical-path needs the run's captures: %s has none beside it "
			     "(gotrace run --keep-capture)", file);
			return 1;
		}
		if (kind_of(capture) != FILE_CAPTURE)
			return report_from(gt_report_go_trace, file, &opt);
		break;
	case FILE_CAPTURE:
		break;
	}
	/* FILE.gtcap's kernel records: FILE.gtkern */
	char kernel[PATH_MAX + 16];
	size_t len = strlen(capture);
	if (len > 6 && strcmp(capture + len - 6, ".gtcap") == 0) {
		snprintf(kernel, sizeof kernel, "%.*s%s", (int)(len - 6), capture, GT_KERNEL_SUFFIX);
		if (access(kernel, F_OK) == 0)
			opt.kernel = kernel;
	}
	glob_t others;
	bool has_others = opt.trace != NULL && gt_trace_other_captures(file, &others);
	if (critical)
		return report_critical_path(capture, has_others ? &others : NULL, &opt, &query);
	if (!has_others)
		return report_from(gt_report_capture, capture, &opt);
	struct gt_reap *reaped = run_reaped(capture, &others);
	opt.reaped_mono_ns = reaped ? reaped[0].mono_ns : 0;
	int rc = report_from(gt_report_capture, capture, &opt);
	if (rc == 0)
		rc = report_other_processes(file, &opt, &others, reaped);
	free(reaped);
	globfree(&others);
	return rc;
}

int gt_cmd_report(int argc, char **argv)
{
	/* --debug-dir's values point into argv, which outlives the report */
	const char **debug_dirs = calloc((size_t)argc + 1, sizeof *debug_dirs);
	if (debug_dirs == NULL) {
		fail("out of memory");
		return 1;
	}
	int rc = report_command(argc, argv, debug_dirs);
	free(debug_dirs);
	return rc;
}
