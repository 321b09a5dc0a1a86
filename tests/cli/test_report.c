/* gotrace report on the bundled example: per-thread times by start routine, the contended
 * lock with the stack that waited on it (record_result in workpool.c), in text and JSON;
 * and its refusals. */
#include "cli_support.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs `gotrace report ARGS... FILE`. */
static void report(struct cli_result *r, const char *file, const char *flag)
{
	const char *argv[] = { cli_gotrace, "report", flag != NULL ? flag : file,
			       flag != NULL ? file : NULL, NULL };
	cli_run(r, argv, NULL);
}

Test(report, text_names_threads_and_the_contended_lock, .timeout = 60)
{
	char dir[512], trace[600], expected[128];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_trace_workpool(dir, 96, trace, sizeof trace);
	report(&r, trace, NULL);
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert_str_empty(r.err);
	for (int i = 1; i <= 4; i++) {
		/* One row per worker: its name, then its start routine. */
		char row[64];
		snprintf(row, sizeof row, "worker-%d", i);
		const char *at = strstr(r.out, row);
		cr_assert_not_null(at, "no row for %s in:\n%s", row, r.out);
		const char *eol = strchrnul(at, '\n');
		const char *routine = strstr(at, "worker_main");
		cr_assert(routine != NULL && routine < eol, "%s row lacks worker_main:\n%s", row,
			  r.out);
	}
	cr_assert_not_null(strstr(r.out, "producer_main"));
	cr_assert_not_null(strstr(r.out, "logger_main"));
	const char *objects = strstr(r.out, "Contended objects");
	cr_assert_not_null(objects, "%s", r.out);
	cr_assert_not_null(strstr(objects, " mutex "), "%s", objects);
	snprintf(expected, sizeof expected, "record_result (workpool.c:%u)",
		 cli_workpool_line("pthread_mutex_lock(&totals_lock)"));
	cr_assert_not_null(strstr(objects, expected), "'%s' not in:\n%s", expected, objects);
	snprintf(expected, sizeof expected, "queue_pop (workpool.c:%u)",
		 cli_workpool_line("pthread_cond_wait(&queue.not_empty"));
	cr_assert_not_null(strstr(objects, expected), "'%s' not in:\n%s", expected, objects);
	cr_assert_not_null(strstr(r.out, "Syscalls"), "%s", r.out);
	cli_result_free(&r);

	/* The capture itself gives the same report, minus the trace line. */
	char capture[700];
	snprintf(capture, sizeof capture, "%s.gtcap", trace);
	report(&r, capture, NULL);
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert_not_null(strstr(r.out, "record_result (workpool.c:"), "%s", r.out);
	cli_result_free(&r);
}

Test(report, json_holds_the_same_facts, .timeout = 60)
{
	char dir[512], trace[600], json[700], cmd[2048];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_trace_workpool(dir, 96, trace, sizeof trace);
	report(&r, trace, "--json");
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cli_write_file(json, sizeof json, dir, "report.json", r.out);
	snprintf(cmd, sizeof cmd, "python3 %s %u < %s", GT_TEST_CHECK_REPORT_JSON,
		 cli_workpool_line("pthread_mutex_lock(&totals_lock)"), json);
	FILE *p = popen(cmd, "r");
	char verdict[4096] = "";
	size_t n = fread(verdict, 1, sizeof verdict - 1, p);
	verdict[n] = '\0';
	int status = pclose(p);
	cr_assert_eq(status, 0, "report --json: %s", verdict);
	cr_assert_str_eq(verdict, "ok\n");
	cli_result_free(&r);
}

Test(report, refusals)
{
	char dir[512], trace[600], garbage[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);

	/* A trace whose capture was not kept: say what to do. */
	cli_path(trace, sizeof trace, dir, "plain.trace");
	const char *run[] = { cli_gotrace, "run", "-o", trace, "--", "/bin/true", NULL };
	cli_run(&r, run, NULL);
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cli_result_free(&r);
	report(&r, trace, NULL);
	cr_assert_eq(r.status, 1);
	cr_assert_eq(cli_count_lines(r.err), 1, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "--keep-capture"), "%s", r.err);
	cli_result_free(&r);

	cli_write_file(garbage, sizeof garbage, dir, "garbage",
		       "this is neither a capture nor a trace\n");
	report(&r, garbage, NULL);
	cr_assert_eq(r.status, 1);
	cr_assert_eq(cli_count_lines(r.err), 1, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "neither a gotrace capture nor a Go trace"), "%s", r.err);
	cli_result_free(&r);

	report(&r, "/nonexistent/file.gtcap", NULL);
	cr_assert_eq(r.status, 1);
	cr_assert_eq(cli_count_lines(r.err), 1, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "No such file"), "%s", r.err);
	cli_result_free(&r);

	const char *unknown[] = { cli_gotrace, "report", "--xml", trace, NULL };
	cli_run(&r, unknown, NULL);
	cr_assert_eq(r.status, 2);
	cr_assert_eq(cli_count_lines(r.err), 1, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "unknown option '--xml'"), "%s", r.err);
	cli_result_free(&r);
}

/* A program killed while it waits: the report says where each thread was stuck. */
Test(report, threads_still_waiting_when_killed, .timeout = 60)
{
	char dir[512], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "hung.trace");
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 2);
		execl(cli_gotrace, cli_gotrace, "run", "--keep-capture", "-o", trace, "--",
		      "/bin/sleep", "30", (char *)NULL);
		_exit(99);
	}
	cli_wait_for_child(pid, "sleep");
	usleep(200 * 1000); /* into its nanosleep */
	kill(pid, SIGTERM);
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM, "status %#x", status);
	report(&r, trace, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	const char *waiting = strstr(r.out, "Threads still waiting when the capture ends");
	cr_assert_not_null(waiting, "%s", r.out);
	cr_assert_not_null(strstr(waiting, "thread 1 "), "%s", waiting);
	cr_assert_not_null(strstr(waiting, " in sleep"), "%s", waiting);
	cli_result_free(&r);
}
