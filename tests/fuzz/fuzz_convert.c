/* fuzz-convert (libFuzzer): a capture, converted as `gotrace convert --no-symbols` converts
 * it (capture reader -> model -> wire writer).  A trace the converter writes must read back
 * through report/'s Go trace reader; whether Go's own readers accept it is checked outside
 * (tests/fuzz/check-corpus).  Symbols are off so that a run depends on the input alone and
 * no file it names is opened (the capture report is left out for the same reason: its
 * symbolizer reads the ELF files of the modules named, for every input). */
#include "encoder/encoder.h"
#include "fuzz_input.h"
#include "report/gotrace_reader.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static char out_dir[PATH_MAX], out_path[PATH_MAX];
static FILE *devnull;

static void remove_out_dir(void)
{
	unlink(out_path);
	rmdir(out_dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	(void)argc;
	(void)argv;
	const char *tmp = getenv("TMPDIR");
	snprintf(out_dir, sizeof out_dir, "%s/fuzz-convert.XXXXXX", tmp && *tmp ? tmp : "/tmp");
	devnull = fopen("/dev/null", "w");
	if (!mkdtemp(out_dir) || !devnull) {
		perror("fuzz-convert: set-up");
		abort();
	}
	snprintf(out_path, sizeof out_path, "%s/out.trace", out_dir);
	atexit(remove_out_dir);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *capture = fuzz_input_file(data, size);
	char err[1024];
	struct gt_convert_options opt = { .no_symbols = true };
	struct gt_convert_summary sum;
	if (gt_convert_file(capture, out_path, &opt, &sum, err, sizeof err) == 0) {
		gt_convert_print_summary(devnull, out_path, &sum);
		struct gt_go_trace t;
		if (gt_go_trace_read(out_path, &t, err, sizeof err) != 0) {
			fprintf(stderr, "fuzz-convert: the trace written does not read back: %s\n", err);
			abort();
		}
		gt_go_trace_free(&t);
		unlink(out_path);
	}
	return 0;
}
