/* gotrace convert: its refusals are one line with a nonzero status, and a capture of a
 * newer format is refused by name rather than misread. */
#include "cli_support.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <gotrace/capture.h>

static void convert(struct cli_result *r, const char *capture, const char *out)
{
	const char *argv[] = { cli_gotrace, "convert", capture, "-o", out, NULL };
	cli_run(r, argv, NULL);
}

static void assert_one_line_failure(const struct cli_result *r, const char *needle)
{
	cr_assert_neq(r->status, 0, "succeeded: %s", r->err);
	cr_assert_eq(cli_count_lines(r->err), 1, "not one line: %s", r->err);
	cr_assert_not_null(strstr(r->err, needle), "'%s' not in: %s", needle, r->err);
}

Test(convert_errors, missing_and_garbage_captures)
{
	char dir[512], out[600], garbage[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(out, sizeof out, dir, "out.trace");
	convert(&r, "/nonexistent/gotrace-1.gtcap", out);
	assert_one_line_failure(&r, "/nonexistent/gotrace-1.gtcap");
	cli_result_free(&r);

	char text[14001] = "";
	for (int i = 0; i < 1000; i++)
		strcat(text, "not a capture ");
	cli_write_file(garbage, sizeof garbage, dir, "garbage.gtcap", text);
	convert(&r, garbage, out);
	assert_one_line_failure(&r, "not a gotrace capture");
	cr_assert(!cli_file_exists(out), "a trace was written from garbage");
	cli_result_free(&r);
}

Test(convert_errors, newer_capture_format, .timeout = 60)
{
	char dir[512], trace[600], capture[700], out[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_trace_workpool(dir, 12, trace, sizeof trace);
	snprintf(capture, sizeof capture, "%s.gtcap", trace);
	int fd = open(capture, O_WRONLY);
	cr_assert_geq(fd, 0);
	uint32_t newer = GT_CAPTURE_VERSION + 1;
	cr_assert_eq(pwrite(fd, &newer, sizeof newer, offsetof(struct gt_file_header, version)),
		     (ssize_t)sizeof newer);
	close(fd);
	cli_path(out, sizeof out, dir, "newer.trace");
	convert(&r, capture, out);
	assert_one_line_failure(&r, "is newer than this gotrace");
	cli_result_free(&r);

	const char *argv[] = { cli_gotrace, "report", capture, NULL };
	cli_run(&r, argv, NULL);
	assert_one_line_failure(&r, "is newer than this gotrace");
	cli_result_free(&r);
}

Test(convert_errors, unwritable_output_and_usage, .timeout = 60)
{
	char dir[512], trace[600], capture[700];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_trace_workpool(dir, 12, trace, sizeof trace);
	snprintf(capture, sizeof capture, "%s.gtcap", trace);
	convert(&r, capture, "/nonexistent-dir/out.trace");
	assert_one_line_failure(&r, "/nonexistent-dir/out.trace");
	cli_result_free(&r);

	const char *no_output[] = { cli_gotrace, "convert", capture, NULL };
	cli_run(&r, no_output, NULL);
	cr_assert_eq(r.status, 2);
	assert_one_line_failure(&r, "-o FILE");
	cli_result_free(&r);
}

/* No progress bar when stderr is not a terminal, however long the conversion (the bar
 * itself is tested in test_progress.c, on a pseudo-terminal). */
Test(convert, no_progress_bar_on_a_pipe, .timeout = 180)
{
	char dir[512], capture[600], out[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(capture, sizeof capture, dir, "big.gtcap");
	cli_path(out, sizeof out, dir, "big.trace");
	const char *gen[] = { GT_TEST_GEN_CAPTURE, capture, "200", "8", "2", "50", NULL };
	cli_run(&r, gen, NULL);
	cr_assert_eq(r.status, 0, "gen_capture: %s", r.err);
	cli_result_free(&r);

	const char *pipe_argv[] = { cli_gotrace, "convert", capture, "-o", out, NULL };
	cli_run(&r, pipe_argv, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_null(strstr(r.err, "converting"), "a progress bar on a pipe:\n%s", r.err);
	cr_assert_null(strchr(r.err, '\r'), "terminal control on a pipe:\n%s", r.err);
	cli_result_free(&r);
	unlink(capture);
}
