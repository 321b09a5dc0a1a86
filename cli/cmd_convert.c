/* gotrace convert CAPTURE... -o FILE */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"
#include "commands.h"
#include "convert.h"
#include "trace_set.h"

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
	struct gt_trace_image *images = calloc(n_captures, sizeof *images);
	if (!images) {
		free(debug_dirs);
		return 1;
	}
	gt_trace_images_identify(images, n_captures, (const char *const *)argv + optind, NULL);
	int status = 0;
	for (int i = optind; i < argc; i++) {
		char name[4096];
		gt_trace_image_name(out, &images[i - optind], images[0].pid, "", name, sizeof name);
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
