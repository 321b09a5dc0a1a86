/* gotrace convert CAPTURE... -o FILE */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <limits.h>
#include <unistd.h>

#include "kernel/records.h"

#include "cli_common.h"
#include "commands.h"
#include "encoder/encoder.h"
#include "leftovers.h"
#include "kernel/recorder.h"
#include "one_trace.h"
#include "trace_set.h"

static void convert_usage(FILE *f)
{
	fprintf(f,
		"usage: gotrace convert [OPTIONS] CAPTURE|DIR... -o FILE\n"
		"\n"
		"Converts gotrace capture files into one Go execution trace (--format) for `go\n"
		"tool trace`, as `gotrace run` writes it: every process of the captures in it,\n"
		"each thread a goroutine labelled \"prog[pid] name\".  A directory stands for the\n"
		"captures in it (gotrace-*.gtcap: a run's --capture-dir).  Damaged or truncated\n"
		"captures convert as far as they can be read.\n"
		"\n"
		"  -o, --output FILE            the trace to write (required)\n"
		"      --per-process            one trace per capture, named as `gotrace run\n"
		"                               --per-process` names them: FILE for the first\n"
		"                               capture's process, FILE.<pid> for other processes,\n"
		"                               FILE.<pid>-<n> for the program images a process\n"
		"                               left by exec (n = 0 for its first image; images of\n"
		"                               one pid are ordered by start time)\n"
		"      --syscall-threshold DUR  a syscall longer than DUR blocked (default 20us;\n"
		"                               DUR is a number with ns, us, ms or s)\n"
		"      --debug-dir DIR          also look for separate debug info in DIR, and for\n"
		"                               a program or library missing at its recorded path\n"
		"                               (by its name; repeatable)\n"
		"      --no-symbols             name frames by address, skip symbolization\n"
		"      --from T, --to T         only the time from T to T (after the start of the\n"
		"                               first capture: 1.5s, 200ms, 90s; a bare number is\n"
		"                               seconds); the threads alive at --from are in the\n"
		"                               trace from its start, the blocked ones blocked\n"
		"      --critical-path          draw what the first process's main thread waited\n"
		"                               for, end to end: a user task \"critical path\" with a\n"
		"                               region on each goroutine while the path is in it\n"
		"                               (the captures are read twice)\n");
	gt_cli_format_help(f, 31);
	fprintf(f,
		"  -q, --quiet                  no summary on stderr\n"
		"  -h, --help                   this text\n");
}

struct capture_list {
	char **paths;
	size_t n;
};

static void add_capture(struct capture_list *l, const char *dir, const char *name)
{
	char **more = realloc(l->paths, (l->n + 1) * sizeof *more);
	size_t len = (dir ? strlen(dir) + 1 : 0) + strlen(name) + 1;
	char *path = malloc(len);
	if (!more || !path) {
		fprintf(stderr, "gotrace convert: out of memory\n");
		exit(1);
	}
	l->paths = more;
	snprintf(path, len, "%s%s%s", dir ? dir : "", dir ? "/" : "", name);
	l->paths[l->n++] = path;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

struct in_dir {
	struct capture_list *l;
	const char *dir;
};

static void add_in_dir(const char *name, void *ctx)
{
	struct in_dir *in = ctx;
	add_capture(in->l, in->dir, name);
}

/* The captures named: files as they are, directories by their gotrace-*.gtcap files and
 * those of their uid-<n> directories (processes that changed user, as `gotrace run` keeps).
 * Returns 0, or 1 after saying which directory holds none or cannot be read. */
static int list_captures(char **args, size_t n, struct capture_list *l)
{
	for (size_t i = 0; i < n; i++) {
		struct stat st;
		if (stat(args[i], &st) != 0 || !S_ISDIR(st.st_mode)) {
			add_capture(l, NULL, args[i]);   /* the reader says what is wrong with it */
			continue;
		}
		DIR *d = opendir(args[i]);
		if (!d) {
			fprintf(stderr, "gotrace convert: %s: %s\n", args[i], strerror(errno));
			return 1;
		}
		closedir(d);
		size_t before = l->n;
		struct in_dir in = {l, args[i]};
		gt_each_capture(args[i], add_in_dir, &in);
		if (l->n == before) {
			fprintf(stderr, "gotrace convert: %s: no captures (gotrace-*.gtcap) in this "
				"directory\n", args[i]);
			return 1;
		}
		qsort(l->paths + before, l->n - before, sizeof *l->paths, by_name);
	}
	return 0;
}

/* --per-process: a trace per capture, named as `gotrace run --per-process` names them. */
static int convert_per_process(const char *out, const char *const *captures, size_t n,
			       struct gt_convert_options *opt, bool quiet)
{
	struct gt_trace_image *images = calloc(n, sizeof *images);
	if (!images)
		return 1;
	gt_trace_images_identify(images, n, captures, NULL);
	/* a killed process ends where it was reaped, which its parent's capture may say */
	struct gt_reap *reaped = gt_capture_reaped(captures, n);
	int status = 0;
	for (size_t i = 0; i < n; i++) {
		opt->reaped = reaped ? reaped[i] : (struct gt_reap){ 0 };
		char name[4096];
		gt_trace_image_name(out, &images[i], images[0].pid, "", name, sizeof name);
		char err[512];
		struct gt_convert_summary sum;
		struct gt_cli_progress progress;
		gt_cli_progress_start(&progress, name);
		opt->progress = quiet ? NULL : gt_cli_progress_update;
		opt->progress_ctx = &progress;
		int failed = gt_convert_file(captures[i], name, opt, &sum, err, sizeof err);
		gt_cli_progress_end(&progress);
		if (failed) {
			fprintf(stderr, "gotrace convert: %s\n", err);
			status = 1;
			continue;
		}
		if (!quiet) {
			gt_convert_print_summary(stderr, name, &sum);
			gt_cli_viewer_warning(name, sum.wire.events);
		}
	}
	free(reaped);
	free(images);
	return status;
}

/* Calls fn with each of the kernel records of runs among args: gotrace-<pid>.gtkern in a
 * capture directory, FILE.gtkern beside a kept FILE.gtcap. */
static void kernel_files(char **args, size_t n, void (*fn)(const char *path, void *ctx), void *ctx)
{
	size_t suffix = strlen(GT_KERNEL_SUFFIX);
	for (size_t i = 0; i < n; i++) {
		char path[PATH_MAX + NAME_MAX + 2];
		size_t len = strlen(args[i]);
		DIR *d = opendir(args[i]);
		if (d == NULL) {
			if (len > 6 && len < PATH_MAX && strcmp(args[i] + len - 6, ".gtcap") == 0) {
				snprintf(path, sizeof path, "%.*s%s", (int)(len - 6), args[i],
					 GT_KERNEL_SUFFIX);
				if (access(path, F_OK) == 0)
					fn(path, ctx);
			}
			continue;
		}
		struct dirent *e;
		while ((e = readdir(d)) != NULL) {
			size_t elen = strlen(e->d_name);
			if (strncmp(e->d_name, "gotrace-", 8) != 0 || elen <= 8 + suffix ||
			    strcmp(e->d_name + elen - suffix, GT_KERNEL_SUFFIX) != 0)
				continue;
			snprintf(path, sizeof path, "%s/%s", args[i], e->d_name);
			fn(path, ctx);
		}
		closedir(d);
	}
}

static void print_kernel_records(const char *path, void *ctx)
{
	(void)ctx;
	gt_kernel_print_summary(path);
}

/* The first kernel records found: the one the threads are placed by. */
static void first_kernel_records(const char *path, void *ctx)
{
	char *first = ctx;
	if (first[0] == '\0')
		snprintf(first, PATH_MAX + NAME_MAX + 2, "%s", path);
}

enum { OPT_FORMAT = 512 };   /* the trace format: its own block */

int gt_cmd_convert(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"syscall-threshold", required_argument, NULL, 't'},
		{"debug-dir", required_argument, NULL, 'd'},
		{"no-symbols", no_argument, NULL, 'n'},
		{"quiet", no_argument, NULL, 'q'},
		{"per-process", no_argument, NULL, 'p'},
		{"from", required_argument, NULL, 'F'},
		{"to", required_argument, NULL, 'T'},
		{"format", required_argument, NULL, OPT_FORMAT},
		{"critical-path", no_argument, NULL, 'C'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *out = NULL;
	struct gt_convert_options opt = {0};
	const char **debug_dirs = calloc((size_t)argc + 1, sizeof *debug_dirs);
	size_t n_debug_dirs = 0;
	bool quiet = false, per_process = false;
	const char *format = NULL;
	int c;
	if (!debug_dirs)
		return 1;
	while ((c = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 't':
			if (gt_cli_parse_duration(optarg, 1e3, &opt.syscall_threshold_ns) || !opt.syscall_threshold_ns) {
				fprintf(stderr, "gotrace convert: bad --syscall-threshold '%s' (e.g. 20us)\n", optarg);
				free(debug_dirs);
				return 2;
			}
			break;
		case 'd': debug_dirs[n_debug_dirs++] = optarg; break;
		case 'n': opt.no_symbols = true; break;
		case 'q': quiet = true; break;
		case 'p': per_process = true; break;
		case 'F':
		case 'T':
			/* --from/--to: a window of the captures (encoder/window.h) */
			if (gt_cli_parse_duration(optarg, 1e9, c == 'F' ? &opt.from_ns : &opt.to_ns) ||
			    (c == 'T' && !opt.to_ns)) {
				fprintf(stderr, "gotrace convert: bad --%s '%s' (a time after the capture's "
					"start, e.g. 1.5s or 200ms)\n", c == 'F' ? "from" : "to", optarg);
				free(debug_dirs);
				return 2;
			}
			break;
		case OPT_FORMAT: format = optarg; break;
		case 'C': opt.draw_critical_path = true; break;
		case 'h': convert_usage(stdout); free(debug_dirs); return 0;
		default: convert_usage(stderr); free(debug_dirs); return 2;
		}
	}
	if (!quiet) /* not at a traced program's exit (GOTRACE_OUT): its stderr is its own */
		gt_leftovers_report();
	if (!out || optind >= argc) {
		fprintf(stderr, "gotrace convert: %s (see gotrace convert --help)\n",
			!out ? "no output file (-o FILE)" : "no capture file given");
		free(debug_dirs);
		return 2;
	}
	if (opt.to_ns && opt.to_ns <= opt.from_ns) {
		fprintf(stderr, "gotrace convert: --to must be later than --from\n");
		free(debug_dirs);
		return 2;
	}
	if (gt_cli_trace_format("convert", format, &opt.format) != 0) {
		free(debug_dirs);
		return 2;
	}
	opt.debug_dirs = n_debug_dirs ? debug_dirs : NULL;
	char kernel[PATH_MAX + NAME_MAX + 2] = "";
	kernel_files(argv + optind, (size_t)(argc - optind), first_kernel_records, kernel);
	opt.kernel_path = kernel[0] != '\0' ? kernel : NULL;
	struct capture_list list = { 0 };
	int status = list_captures(argv + optind, (size_t)(argc - optind), &list);
	if (status == 0 && !per_process) {
		int rc = gt_one_trace("convert", out, (const char *const *)list.paths, list.n, &opt,
				      quiet ? GT_SUMMARY_QUIET : GT_SUMMARY_CONVERT);
		status = rc == 0 ? 0 : 1;
	} else if (status == 0) {
		status = convert_per_process(out, (const char *const *)list.paths, list.n, &opt, quiet);
	}
	if (status == 0 && !quiet)
		kernel_files(argv + optind, (size_t)(argc - optind), print_kernel_records, NULL);
	for (size_t i = 0; i < list.n; i++)
		free(list.paths[i]);
	free(list.paths);
	free(debug_dirs);
	return status;
}
