/* fuzz-report (libFuzzer): a Go trace, read and reported as `gotrace report TRACE` does
 * when no capture sits beside it (report/gotrace_reader.c, report/trace_report.c), in text
 * and in JSON. */
#include "fuzz_input.h"
#include "report/report.h"

#include <stdio.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static FILE *devnull;
	if (!devnull && !(devnull = fopen("/dev/null", "w")))
		abort();
	const char *trace = fuzz_input_file(data, size);
	char err[1024];
	struct gt_report_options opt = { .top = 3, .stacks = 2 };
	gt_report_go_trace(trace, &opt, devnull, err, sizeof err);
	opt.json = true;
	gt_report_go_trace(trace, &opt, devnull, err, sizeof err);
	return 0;
}
