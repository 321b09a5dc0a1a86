/* gotrace convert CAPTURE... -o FILE */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture_reader.h"
#include "cli_common.h"
#include "commands.h"
#include "convert.h"

static void convert_usage(FILE *f)
{
	fprintf(f,
		"usage: gotrace convert [OPTIONS] CAPTURE... -o FILE\n"
		"\n"
		"Converts gotrace capture files into Go execution traces (\"go 1.19 trace\") for\n"
		"`go tool trace`.  One trace per capture, named as `gotrace run` names them: FILE for\n"
		"the first capture's process, FILE.<pid> for other processes, FILE.<pid>-<n> for\n"
		"the program images a process left by exec (n = 0 for its first image; images of\n"
		"one pid are ordered by start time; the last keeps the plain name).  Damaged or\n"
		"truncated captures convert as far as they can be read.\n"
		"\n"
		"  -o, --output FILE            the trace to write (required)\n"
		"      --syscall-threshold DUR  a syscall longer than DUR blocked (default 20us;\n"
		"                               DUR is a number with ns, us, ms or s)\n"
		"      --debug-dir DIR          also look for separate debug info in DIR (repeatable)\n"
		"      --no-symbols             name frames by address, skip symbolization\n"
		"  -q, --quiet                  no summary on stderr\n"
		"  -h, --help                   this text\n");
}

/* One capture of the command line: which process and which of its program images. */
struct capture_image {
	uint32_t pid;
	uint64_t start_ns;    /* CLOCK_MONOTONIC when recording began: exec'd images start later */
	uint32_t generation;  /* rank among the captures of the same pid, by start time */
	bool last;            /* the latest image of its pid */
};

static void identify_images(char *const *captures, size_t n, struct capture_image *img)
{
	for (size_t i = 0; i < n; i++) {
		struct gt_capture *c = gt_capture_open(captures[i], NULL, 0);
		img[i] = (struct capture_image){ 0 };
		if (c != NULL) {
			img[i].pid = gt_capture_header(c)->pid;
			img[i].start_ns = gt_capture_header(c)->start_mono_ns;
			gt_capture_close(c);
		}
	}
	for (size_t i = 0; i < n; i++) {
		img[i].last = true;
		for (size_t k = 0; k < n; k++) {
			if (k == i || img[k].pid != img[i].pid)
				continue;
			bool earlier = img[k].start_ns < img[i].start_ns ||
				       (img[k].start_ns == img[i].start_ns && k < i);
			if (earlier)
				img[i].generation++;
			else
				img[i].last = false;
		}
	}
}

/* Named as `gotrace run` names its traces: FILE for the first capture's process (its last
 * image), FILE.<pid> for another process, FILE.<pid>-<n> for an image a pid exec'd away
 * from. */
static void trace_name(const char *out, const struct capture_image *img, uint32_t main_pid,
		       char *name, size_t size)
{
	if (!img->last)
		snprintf(name, size, "%s.%u-%u", out, img->pid, img->generation);
	else if (img->pid == main_pid)
		snprintf(name, size, "%s", out);
	else
		snprintf(name, size, "%s.%u", out, img->pid);
}

/* "20us", "1.5ms", "300ns", "2s"; a bare number is microseconds. */
static int parse_duration_ns(const char *s, uint64_t *out)
{
	char *end;
	errno = 0;
	double v = strtod(s, &end);
	if (errno || end == s || v < 0)
		return -1;
	double mult = 1e3;
	if (!strcmp(end, "ns"))
		mult = 1;
	else if (!strcmp(end, "us") || !*end)
		mult = 1e3;
	else if (!strcmp(end, "ms"))
		mult = 1e6;
	else if (!strcmp(end, "s"))
		mult = 1e9;
	else
		return -1;
	double ns = v * mult;
	if (ns > 1e18)
		return -1;
	*out = (uint64_t)(ns + 0.5);
	return 0;
}

int gt_cmd_convert(int argc, char **argv)
{
	static const struct option longopts[] = {
		{"output", required_argument, NULL, 'o'},
		{"syscall-threshold", required_argument, NULL, 't'},
		{"debug-dir", required_argument, NULL, 'd'},
		{"no-symbols", no_argument, NULL, 'n'},
		{"quiet", no_argument, NULL, 'q'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	const char *out = NULL;
	struct gt_convert_options opt = {0};
	const char **debug_dirs = calloc((size_t)argc + 1, sizeof *debug_dirs);
	size_t n_debug_dirs = 0;
	bool quiet = false;
	int c;
	if (!debug_dirs)
		return 1;
	while ((c = getopt_long(argc, argv, "o:qh", longopts, NULL)) != -1) {
		switch (c) {
		case 'o': out = optarg; break;
		case 't':
			if (parse_duration_ns(optarg, &opt.syscall_threshold_ns) || !opt.syscall_threshold_ns) {
				fprintf(stderr, "gotrace convert: bad --syscall-threshold '%s' (e.g. 20us)\n", optarg);
				free(debug_dirs);
				return 2;
			}
			break;
		case 'd': debug_dirs[n_debug_dirs++] = optarg; break;
		case 'n': opt.no_symbols = true; break;
		case 'q': quiet = true; break;
		case 'h': convert_usage(stdout); free(debug_dirs); return 0;
		default: convert_usage(stderr); free(debug_dirs); return 2;
		}
	}
	if (!out || optind >= argc) {
		fprintf(stderr, "gotrace convert: %s (see gotrace convert --help)\n",
			!out ? "no output file (-o FILE)" : "no capture file given");
		free(debug_dirs);
		return 2;
	}
	opt.debug_dirs = n_debug_dirs ? debug_dirs : NULL;
	size_t n_captures = (size_t)(argc - optind);
	struct capture_image *images = calloc(n_captures, sizeof *images);
	if (!images) {
		free(debug_dirs);
		return 1;
	}
	identify_images(argv + optind, n_captures, images);
	int status = 0;
	for (int i = optind; i < argc; i++) {
		char name[4096];
		trace_name(out, &images[i - optind], images[0].pid, name, sizeof name);
		char err[512];
		struct gt_convert_summary sum;
		struct gt_cli_progress progress;
		gt_cli_progress_start(&progress, name);
		opt.progress = quiet ? NULL : gt_cli_progress_update;
		opt.progress_ctx = &progress;
		int failed = gt_convert_file(argv[i], name, &opt, &sum, err, sizeof err);
		gt_cli_progress_end(&progress);
		if (failed) {
			fprintf(stderr, "gotrace convert: %s\n", err);
			status = 1;
			continue;
		}
		if (!quiet)
			gt_convert_print_summary(stderr, name, &sum);
	}
	free(images);
	free(debug_dirs);
	return status;
}
