/* The critical path (issue 24) of critical_chain.c, whose stages measure their own durations:
 * each traced run is compared with its untraced run (same stdout and status), then `gotrace
 * report --critical-path --json` is checked against the program's figures by
 * check_critical_path.py (the parts add up exactly, each stage's share within 5% + 5 ms, the
 * decoy absent; on one CPU, stage-b's runnable time and who held its CPU).  Threads, one stage
 * in a child process and the whole on one CPU; idle and with a busy loop on every CPU; with the
 * kernel's records and without. */
#include "cli_support.h"
#include "oracle.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char chain[] = GT_TEST_CRITICAL_CHAIN;
static const char checker[] = GT_TEST_CHECK_CRITICAL_PATH;

/* critical_chain MODE untraced, then traced into dir/chain.trace (capture kept, the kernel's
 * records when kernel); the same status and stdout; the traced run's stderr into err. */
static void run_chain(const char *dir, const char *mode, bool kernel, bool loaded,
		      const char *const *extra, char *trace, size_t size, char **err)
{
	char plain_stages[600], stages[600];
	cli_path(plain_stages, sizeof plain_stages, dir, "plain-stages");
	cli_path(stages, sizeof stages, dir, "stages");
	cli_path(trace, size, dir, "chain.trace");
	const char *plain_argv[] = {chain, mode, plain_stages, NULL};
	const char *traced_argv[16] = {cli_gotrace, "run", kernel ? "--kernel=on" : "--kernel=off",
				       "--keep-capture", "-o", trace};
	size_t n = 6;
	for (size_t i = 0; extra[i]; i++)
		traced_argv[n++] = extra[i];
	const char *command[] = {"--", chain, mode, stages, NULL};
	memcpy(&traced_argv[n], command, sizeof command);
	struct cli_load load;
	struct cli_result plain, traced;
	cli_load_start(&load, loaded);
	cli_run(&plain, plain_argv, NULL);
	cli_run(&traced, traced_argv, NULL);
	cli_load_stop(&load);
	cr_assert_eq(plain.status, 0, "untraced: %d %s", plain.status, plain.err);
	cr_assert_eq(traced.status, plain.status, "traced %d, untraced %d: %s", traced.status,
		     plain.status, traced.err);
	cr_assert_str_eq(traced.out, plain.out, "stderr: %s", traced.err);
	cli_result_free(&plain);
	free(traced.out);
	*err = traced.err;
}

/* critical_chain threads traced, idle, without kernel records, into dir/chain.trace. */
static void traced_chain(char *dir, size_t dir_size, char *trace, size_t size)
{
	char *err;
	cli_tempdir(dir, dir_size);
	const char *none[] = {NULL};
	run_chain(dir, "threads", false, false, none, trace, size, &err);
	free(err);
}

/* `gotrace report --critical-path [--json] trace`'s stdout. */
static char *critical_path(const char *trace, bool json)
{
	struct cli_result r;
	const char *argv[] = {cli_gotrace, "report", "--critical-path", json ? "--json" : trace,
			      json ? trace : NULL, NULL};
	cli_run(&r, argv, NULL);
	cr_assert_eq(r.status, 0, "report: %s", r.err);
	free(r.err);
	return r.out;
}

static void check_chain(const char *mode, bool kernel, bool loaded)
{
	char dir[512], trace[600], json_path[600], stages[600];
	char *err;
	cli_tempdir(dir, sizeof dir);
	const char *none[] = {NULL};
	run_chain(dir, mode, kernel, loaded, none, trace, sizeof trace, &err);
	char *json = critical_path(trace, true);
	if (kernel && strstr(json, "\"kernel\":true") == NULL)
		cr_skip_test("the kernel's records were not recorded (perf refused?): %s", err);
	cr_assert_not_null(strstr(json, kernel ? "\"kernel\":true" : "\"kernel\":false"), "%s", json);
	cli_write_file(json_path, sizeof json_path, dir, "path.json", json);
	cli_path(stages, sizeof stages, dir, "stages");
	bool pinned = strcmp(mode, "pinned") == 0 && kernel;
	const char *argv[] = {"/usr/bin/python3", checker, json_path, stages,
			      pinned ? "--pinned" : NULL, NULL};
	struct cli_result r;
	cli_run(&r, argv, NULL);
	char *text = critical_path(trace, false);
	cr_assert_eq(r.status, 0, "%s%s\n%s", r.out, r.err, text);
	/* the text says in one line when the kernel's records were not there */
	cr_assert_eq(strstr(text, "without kernel records") != NULL, !kernel, "%s", text);
	cr_assert_not_null(strstr(text, "By syscall:"), "%s", text);
	cli_result_free(&r);
	free(text);
	free(json);
	free(err);
}

Test(critical_path, threads_idle_kernel, .timeout = 120) { check_chain("threads", true, false); }
Test(critical_path, threads_idle_hooks, .timeout = 120) { check_chain("threads", false, false); }
Test(critical_path, threads_loaded_kernel, .timeout = 120) { check_chain("threads", true, true); }
Test(critical_path, threads_loaded_hooks, .timeout = 120) { check_chain("threads", false, true); }
Test(critical_path, child_idle_kernel, .timeout = 120) { check_chain("child", true, false); }
Test(critical_path, child_idle_hooks, .timeout = 120) { check_chain("child", false, false); }
Test(critical_path, child_loaded_kernel, .timeout = 120) { check_chain("child", true, true); }
Test(critical_path, child_loaded_hooks, .timeout = 120) { check_chain("child", false, true); }
Test(critical_path, pinned_idle_kernel, .timeout = 120) { check_chain("pinned", true, false); }
Test(critical_path, pinned_loaded_kernel, .timeout = 120) { check_chain("pinned", true, true); }

/* `gotrace run --critical-path` prints the breakdowns' top lines after its summary, and draws
 * the path in the trace: a task with regions on the goroutines of main and the three stages,
 * read by Go's readers. */
Test(critical_path, run_prints_breakdown, .timeout = 120)
{
	char dir[512], trace[600];
	char *err;
	cli_tempdir(dir, sizeof dir);
	const char *extra[] = {"--critical-path", NULL};
	run_chain(dir, "threads", false, false, extra, trace, sizeof trace, &err);
	const char *summary = strstr(err, "gotrace: ");
	const char *path = strstr(err, "Critical path of critical_chain");
	cr_assert(summary && path && summary < path, "%s", err);
	cr_assert_not_null(strstr(path, "By thread:"), "%s", err);
	cr_assert_not_null(strstr(path, "stage-b (pid"), "%s", err);
	cr_assert_null(strstr(path, "decoy (pid"), "%s", err);
	free(err);
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace, true, &report), 0, "%s", report);
	free(report);
	char *dump = gt_dump_123(trace);
	cr_assert_not_null(dump);
	cr_assert_eq(gt_dump_123_count(dump, "TaskBegin Type=\"critical path\""), 1, "%s", dump);
	size_t goroutines = 0;
	for (int g = 1; g < 16; g++) {
		char begin[64];
		snprintf(begin, sizeof begin, "G=%d RegionBegin Type=\"critical path\"", g);
		goroutines += gt_dump_123_count(dump, begin) > 0;
	}
	cr_assert_geq(goroutines, 4, "main and three stages: %zu goroutines\n%s", goroutines, dump);
	free(dump);
}

/* --thread by TID and by name: the path of that thread; an unknown one is refused. */
Test(critical_path, thread_option, .timeout = 120)
{
	char dir[512], trace[600];
	traced_chain(dir, sizeof dir, trace, sizeof trace);
	struct cli_result r;
	const char *by_name[] = {cli_gotrace, "report", "--critical-path", "--thread", "stage-b",
				 "--json", trace, NULL};
	cli_run(&r, by_name, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "{\"critical_path\":{\"thread\":\"stage-b\""), "%s", r.out);
	/* stage-b's own path goes back through stage-a, never forward to stage-c */
	cr_assert_not_null(strstr(r.out, "\"thread\":\"stage-a\""), "%s", r.out);
	cr_assert_null(strstr(r.out, "\"thread\":\"stage-c\""), "%s", r.out);
	const char *tid = strstr(r.out, "\"tid\":");
	cr_assert_not_null(tid);
	char tid_text[16];
	snprintf(tid_text, sizeof tid_text, "%d", atoi(tid + 6));
	cli_result_free(&r);
	const char *by_tid[] = {cli_gotrace, "report", "--critical-path", "--thread", tid_text,
				"--json", trace, NULL};
	cli_run(&r, by_tid, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "{\"critical_path\":{\"thread\":\"stage-b\""), "%s", r.out);
	cli_result_free(&r);
	const char *unknown[] = {cli_gotrace, "report", "--critical-path", "--thread", "nosuch",
				 trace, NULL};
	cli_run(&r, unknown, NULL);
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "no thread named nosuch"), "%s", r.err);
	cli_result_free(&r);
}

/* --from/--to cut the interval: the parts still add up to it. */
Test(critical_path, window, .timeout = 120)
{
	char dir[512], trace[600];
	traced_chain(dir, sizeof dir, trace, sizeof trace);
	struct cli_result r;
	const char *argv[] = {cli_gotrace, "report", "--critical-path", "--from", "100ms", "--to",
			      "200ms", "--json", trace, NULL};
	cli_run(&r, argv, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	/* the times are the trace's ticks back in ns: within a microsecond */
	const char *start = strstr(r.out, "\"start_ns\":"), *end = strstr(r.out, "\"end_ns\":");
	cr_assert(start && end, "%s", r.out);
	long long from = atoll(start + 11), to = atoll(end + 9);
	cr_assert(llabs(from - 100000000) <= 1000 && llabs(to - 200000000) <= 1000, "%s", r.out);
	char json_path[600];
	cli_write_file(json_path, sizeof json_path, dir, "path.json", r.out);
	cli_result_free(&r);
	const char *check[] = {"/usr/bin/python3", checker, json_path, "-", NULL};
	cli_run(&r, check, NULL);
	cr_assert_eq(r.status, 0, "%s%s", r.out, r.err);
	cli_result_free(&r);
}
