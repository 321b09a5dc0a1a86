/* Lock names (issue 23, item 1): programs whose contended locks are known by construction
 * (lock_names.c, lock_names_cpp.cpp), traced and compared with their untraced run; the
 * report and the Go trace's block reasons name each lock by its variable, or a heap lock
 * by the code that first used it, the same in two runs; Go's readers accept the trace. */
#include "cli_support.h"
#include "oracle.h"
#include "oracle_v2.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `gotrace run --keep-capture` of argv[0] in dir (trace named name), after its untraced run:
 * the same output and exit status.  Returns the report's JSON (malloc'd). */
static char *traced_report(const char *dir, const char *program, const char *name, char *trace,
			   size_t size)
{
	struct cli_result plain, traced, report;
	const char *alone[] = { program, NULL };
	cli_run(&plain, alone, NULL);
	cli_path(trace, size, dir, name);
	const char *run[] = { cli_gotrace, "run", "--keep-capture", "-o", trace, "--", program,
			      NULL };
	cli_run(&traced, run, NULL);
	cr_assert_str_eq(traced.out, plain.out, "traced output differs; stderr: %s", traced.err);
	cr_assert_eq(traced.status, plain.status, "traced status %d, untraced %d; stderr: %s",
		     traced.status, plain.status, traced.err);
	const char *json[] = { cli_gotrace, "report", "--json", trace, NULL };
	cli_run(&report, json, NULL);
	cr_assert_eq(report.status, 0, "%s", report.err);
	char *out = report.out;
	report.out = NULL;
	cli_result_free(&plain);
	cli_result_free(&traced);
	cli_result_free(&report);
	return out;
}

/* The object named name (its JSON from its start), NULL when none is. */
static const char *object_named(const char *json, const char *kind, const char *name)
{
	char want[512];
	snprintf(want, sizeof want, "\"name\":\"%s\",\"holders\":", name); /* its holders follow */
	const char *objects = strstr(json, "\"objects\":[");
	const char *syscalls = objects ? strstr(objects, "\"syscalls\":[") : NULL;
	const char *at = objects ? strstr(objects, want) : NULL;
	if (at == NULL || at > syscalls)
		return NULL;
	/* its own record: the last "address" before the name */
	const char *start = NULL;
	for (const char *p = objects; (p = strstr(p, "{\"address\":")) != NULL && p < at; p++)
		start = p;
	char kind_field[64];
	snprintf(kind_field, sizeof kind_field, "\"kind\":\"%s\"", kind);
	const char *k = start ? strstr(start, kind_field) : NULL;
	return k != NULL && k < at ? start : NULL;
}

static void assert_named(const char *json, const char *kind, const char *name)
{
	cr_assert_not_null(object_named(json, kind, name), "no contended %s named \"%s\" in:\n%s",
			   kind, name, json);
}

/* The Go trace's block reasons name the lock: "sync: <call> <name>" (Go 1.22's dump). */
static void assert_trace_names(const char *trace, const char *call, const char *name)
{
	char tool[512], want[600], *dump = NULL, *err = NULL;
	if (!gt_go_trace_tool("1.22", tool, sizeof tool))
		cr_skip_test("Go 1.22 is not installed (/usr/lib/go-1.22: apt-get install -t "
			     "bookworm-backports golang-1.22-go)");
	cr_assert_eq(gt_dump_v2(trace, "1.22", &dump, &err), 0, "Go 1.22 rejects %s: %s", trace,
		     err ? err : "");
	snprintf(want, sizeof want, "Reason=\"sync: %s %s\" Running->Waiting", call, name);
	cr_assert_eq(gt_dump_123_count(dump, want), 1, "'%s' not once in:\n%s", want, dump);
	free(dump);
	free(err);
}

Test(lock_names, c_globals_members_statics_and_heap, .timeout = 120)
{
	char dir[512], trace[600], heap[256];
	cli_tempdir(dir, sizeof dir);
	snprintf(heap, sizeof heap, "first used at pool_enter (lock_names.c:%u)",
		 cli_source_line(GT_TEST_LOCK_NAMES_SOURCE, "LINE:pool_enter"));
	/* two runs (two address layouts): the same names */
	for (int run = 0; run < 2; run++) {
		char *json = traced_report(dir, GT_TEST_LOCK_NAMES, run ? "b.trace" : "a.trace",
					   trace, sizeof trace);
		assert_named(json, "mutex", "accounts_lock");
		assert_named(json, "mutex", "work_queue.lock");
		assert_named(json, "mutex", "journal_lock::lock");
		assert_named(json, "mutex", heap);
		cr_assert_eq(cli_count_of(json, "\"kind\":\"mutex\""), 4, "%s", json);
		/* the thread left waiting when the program exits */
		cr_assert_not_null(strstr(json, "\"waiting_at_end\":{\"in\":\"condvar\""), "%s", json);
		cr_assert_not_null(strstr(json, "\"object_name\":\"work_queue.ready\"}"), "%s", json);
		free(json);
	}

	struct cli_result text;
	const char *argv[] = { cli_gotrace, "report", trace, NULL };
	cli_run(&text, argv, NULL);
	const char *objects = strstr(text.out, "Contended objects");
	cr_assert_not_null(objects, "%s", text.out);
	cr_assert_not_null(strstr(objects, " work_queue.lock "), "%s", objects);
	cr_assert_not_null(strstr(objects, heap), "%s", objects);
	cr_assert_not_null(strstr(text.out, " in condvar work_queue.ready, at:"), "%s", text.out);
	cli_result_free(&text);

	char *oracle = NULL;
	cr_assert_eq(gt_oracle_check(trace, true, &oracle), 0, "a Go reader rejects %s:\n%s", trace,
		     oracle ? oracle : "");
	free(oracle);
	assert_trace_names(trace, "pthread_mutex_lock", "accounts_lock");
	assert_trace_names(trace, "pthread_mutex_lock", "work_queue.lock");
	assert_trace_names(trace, "pthread_mutex_lock", "journal_lock::lock");
	assert_trace_names(trace, "pthread_mutex_lock", heap);
	assert_trace_names(trace, "pthread_cond_wait", "work_queue.ready");
}

Test(lock_names, cpp_class_static, .timeout = 120)
{
#ifndef GT_TEST_LOCK_NAMES_CPP
	cr_skip_test("no C++ compiler: lock_names_cpp was not built");
#else
	char dir[512], trace[600];
	cli_tempdir(dir, sizeof dir);
	char *json = traced_report(dir, GT_TEST_LOCK_NAMES_CPP, "cpp.trace", trace, sizeof trace);
	assert_named(json, "mutex", "Registry::mu_");
	free(json);
	char *oracle = NULL;
	cr_assert_eq(gt_oracle_check(trace, true, &oracle), 0, "a Go reader rejects %s:\n%s", trace,
		     oracle ? oracle : "");
	free(oracle);
	assert_trace_names(trace, "pthread_mutex_lock", "Registry::mu_");
#endif
}
