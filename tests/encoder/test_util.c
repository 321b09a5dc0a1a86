#include "test_util.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>

const char *test_tmpdir(void)
{
	static char dir[PATH_MAX];
	if (!dir[0]) {
		snprintf(dir, sizeof dir, "%s/gt-encoder-test.XXXXXX",
			 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (!mkdtemp(dir))
			return "/tmp";
	}
	return dir;
}

int convert_path(const char *capture, char *trace, struct gt_convert_summary *sum)
{
	snprintf(trace, PATH_MAX, "%s.trace", capture);
	struct gt_convert_options opt = {.no_symbols = true};
	char err[512];
	int rc = gt_convert_file(capture, trace, &opt, sum, err, sizeof err);
	if (rc)
		fprintf(stderr, "convert %s: %s\n", capture, err);
	return rc;
}

int convert_builder(struct gt_cb *cb, const char *name, char *trace,
		    struct gt_convert_summary *sum, uint64_t syscall_threshold_ns)
{
	char cap[PATH_MAX];
	snprintf(cap, sizeof cap, "%s/%s.cap", test_tmpdir(), name);
	if (gt_cb_write(cb, cap))
		return -1;
	snprintf(trace, PATH_MAX, "%s/%s.trace", test_tmpdir(), name);
	struct gt_convert_options opt = {.no_symbols = true,
					 .syscall_threshold_ns = syscall_threshold_ns};
	char err[512];
	int rc = gt_convert_file(cap, trace, &opt, sum, err, sizeof err);
	if (rc)
		fprintf(stderr, "convert %s: %s\n", cap, err);
	return rc;
}
