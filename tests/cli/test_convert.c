/* gotrace convert: its refusals are one line with a nonzero status, and a capture of a
 * newer format is refused by name rather than misread. */
#include "capture_builder.h"
#include "cli_support.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gotrace/capture.h>

static void convert(struct cli_result *r, const char *capture, const char *out)
{
	const char *argv[] = { cli_gotrace, "convert", capture, "-o", out, NULL };
	cli_run(r, argv, NULL);
}

/* A synthetic capture at path (tests/encoder/gen_capture: see its arguments there). */
static void gen_capture(const char *path, const char *a, const char *b, const char *c, const char *d)
{
	struct cli_result r;
	const char *gen[] = { GT_TEST_GEN_CAPTURE, path, a, b, c, d, NULL };
	cli_run(&r, gen, NULL);
	cr_assert_eq(r.status, 0, "gen_capture: %s", r.err);
	cli_result_free(&r);
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
	gen_capture(capture, "200", "8", "2", "50");

	const char *pipe_argv[] = { cli_gotrace, "convert", capture, "-o", out, NULL };
	cli_run(&r, pipe_argv, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_null(strstr(r.err, "converting"), "a progress bar on a pipe:\n%s", r.err);
	cr_assert_null(strchr(r.err, '\r'), "terminal control on a pipe:\n%s", r.err);
	cli_result_free(&r);
	unlink(capture);
}

/* A capture of pid PID whose recording began at START_NS, with N_THREADS threads: the
 * thread count tells the traces apart in convert's summary. */
static void write_image(char *path, size_t size, const char *dir, const char *name,
			uint32_t pid, uint64_t start_ns, uint32_t n_threads)
{
	struct gt_cb *cb = gt_cb_new(1, 65536, 1000);
	cr_assert_not_null(cb);
	gt_cb_header(cb)->pid = pid;
	gt_cb_header(cb)->start_mono_ns = start_ns;
	gt_cb_thread_existing(cb, 0, 1000, 1, 0, 0);
	for (uint32_t t = 2; t <= n_threads; t++) {
		gt_cb_thread_new(cb, 0, 1000 + t, 1, t, 0, 0x401000);
		gt_cb_thread_start(cb, 0, 1100 + t, t, pid + t, 0x401000);
	}
	gt_cb_capture_end(cb, 0, 5000);
	gt_cb_header(cb)->flags |= GT_FILE_FINALIZED;
	cli_path(path, size, dir, name);
	cr_assert_eq(gt_cb_write(cb, path), 0);
	gt_cb_free(cb);
}

/* Two program images of one pid (exec) are two traces, named as `gotrace run` names them;
 * images are ordered by start time whatever the command line order. */
Test(convert, exec_images_of_one_pid_get_their_own_names)
{
	char dir[512], main0[600], main1[600], kid0[600], kid1[600], out[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	write_image(main0, sizeof main0, dir, "main0.gtcap", 100, 1000000, 1);
	write_image(main1, sizeof main1, dir, "main1.gtcap", 100, 2000000, 2);
	write_image(kid0, sizeof kid0, dir, "kid0.gtcap", 200, 3000000, 3);
	write_image(kid1, sizeof kid1, dir, "kid1.gtcap", 200, 4000000, 4);
	cli_path(out, sizeof out, dir, "out.trace");
	const char *argv[] = { cli_gotrace, "convert", "--per-process", main0, kid1, kid0, main1,
			       "-o", out, NULL };
	cli_run(&r, argv, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	const struct { const char *suffix; const char *summary; } expect[] = {
		{ "", ": pid 100, 2 threads," },
		{ ".100-0", ": pid 100, 1 threads," },
		{ ".200", ": pid 200, 4 threads," },
		{ ".200-0", ": pid 200, 3 threads," },
	};
	for (size_t i = 0; i < sizeof expect / sizeof *expect; i++) {
		char line[1400];
		snprintf(line, sizeof line, "gotrace: %s%s%s", out, expect[i].suffix,
			 expect[i].summary);
		cr_assert_not_null(strstr(r.err, line), "no '%s' in:\n%s", line, r.err);
		snprintf(line, sizeof line, "%s%s", out, expect[i].suffix);
		cr_assert(cli_file_exists(line), "%s missing", line);
	}
	cli_result_free(&r);
}

/* A directory's captures include those of its uid-<n> directories, where a process that
 * changed user keeps its captures (gotrace run reads them there too). */
Test(convert, a_directory_includes_its_user_directories)
{
	char dir[512], sub[600], top[600], dropped[700], out[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	write_image(top, sizeof top, dir, "gotrace-100.gtcap", 100, 1000000, 1);
	cli_path(sub, sizeof sub, dir, "uid-1000");
	cr_assert_eq(mkdir(sub, 0700), 0);
	write_image(dropped, sizeof dropped, sub, "gotrace-200.gtcap", 200, 2000000, 3);
	cli_path(out, sizeof out, dir, "out.trace");
	const char *argv[] = { cli_gotrace, "convert", "--per-process", dir, "-o", out, NULL };
	cli_run(&r, argv, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.err, ": pid 100, 1 threads,"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, ": pid 200, 3 threads,"), "the uid-1000 capture is missing:\n%s",
			   r.err);
	cli_result_free(&r);
}

/* An output that is not a regular file is written in place: converting to a FIFO (as to
 * /dev/null) must not replace it with a file by renaming over it. */
Test(convert, output_that_is_not_a_file_is_written_in_place, .timeout = 120)
{
	char dir[512], capture[600], fifo[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(capture, sizeof capture, dir, "small.gtcap");
	cli_path(fifo, sizeof fifo, dir, "out.fifo");
	gen_capture(capture, "20", "2", "2", "5");
	cr_assert_eq(mkfifo(fifo, 0600), 0);
	int counted[2];
	cr_assert_eq(pipe(counted), 0);
	pid_t reader = fork();
	cr_assert_geq(reader, 0);
	if (reader == 0) {
		/* the FIFO's reader: counts what the converter writes into it */
		int fd = open(fifo, O_RDONLY);
		char buf[65536], head[16] = "";
		long total = 0;
		ssize_t n;
		while (fd >= 0 && (n = read(fd, buf, sizeof buf)) > 0) {
			if (!total)
				memcpy(head, buf, n < 15 ? (size_t)n : 15);
			total += n;
		}
		dprintf(counted[1], "%ld %.15s", total, head);
		_exit(0);
	}
	close(counted[1]);
	convert(&r, capture, fifo);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cli_result_free(&r);
	struct stat st;
	cr_assert_eq(stat(fifo, &st), 0);
	if (!S_ISFIFO(st.st_mode)) {
		kill(reader, SIGKILL); /* still waiting for a writer on the FIFO that is gone */
		waitpid(reader, NULL, 0);
		cr_assert_fail("the FIFO was replaced (mode %o)", st.st_mode);
	}
	char said[64] = "";
	cr_assert_gt(read(counted[0], said, sizeof said - 1), 0);
	close(counted[0]);
	waitpid(reader, NULL, 0);
	long total = 0;
	cr_assert_eq(sscanf(said, "%ld", &total), 1, "%s", said);
	cr_assert_gt(total, 0, "nothing reached the FIFO: %s", said);
	cr_assert_not_null(strstr(said, "go 1."), "not a Go trace header: %s", said);
	unlink(fifo);
	unlink(capture);
	rmdir(dir);
}
