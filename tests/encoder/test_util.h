/* Shared helpers of the encoder tests: convert a built capture and parse the result. */
#ifndef GOTRACE_TEST_UTIL_H
#define GOTRACE_TEST_UTIL_H

#include "capture_builder.h"
#include "convert.h"
#include "go_oracle.h"

/* A fresh temporary directory (removed at exit is not needed: under /tmp). */
const char *test_tmpdir(void);
/* Writes cb to <tmp>/<name>.cap and converts it to <tmp>/<name>.trace (path in trace,
 * PATH_MAX bytes).  Returns gt_convert_file's status. */
int convert_builder(struct gt_cb *cb, const char *name, char *trace,
		    struct gt_convert_summary *sum, uint64_t syscall_threshold_ns);
int convert_path(const char *capture, char *trace, struct gt_convert_summary *sum);

#endif
