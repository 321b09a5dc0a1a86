/* CPU samples in the trace (issue 15, item 3): a thread that burns its CPU in a known
 * function (-O2, no frame pointers: only DWARF unwinding of the copied stack names its
 * callers) is sampled, and Go's own readers find the samples on that thread's goroutine,
 * named by that function; --cpu-samples off and a refused perf leave none.  Each traced run
 * is compared with the same program run untraced. */
#include "cli_support.h"
#include "oracle.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#define BURN_MS "400"
#define BURN_FUNCTION "burn_known_function "

/* burner BURN_MS untraced, then traced: [WRAPPER] gotrace run OPTIONS... -o DIR/b.trace --;
 * asserts both behave the same and Go 1.19 reads the trace. */
static void run_twins(const char *dir, const char *wrapper, const char *const *options,
		      struct cli_result *traced, char *trace, size_t size)
{
	struct cli_result plain;
	const char *plain_argv[] = { GT_TEST_BURNER, BURN_MS, NULL };
	cli_run(&plain, plain_argv, NULL);
	cli_path(trace, size, dir, "b.trace");
	const char *argv[24];
	size_t n = 0;
	if (wrapper != NULL)
		argv[n++] = wrapper;
	argv[n++] = cli_gotrace;
	argv[n++] = "run";
	for (; *options != NULL; options++)
		argv[n++] = *options;
	const char *rest[] = { "-o", trace, "--", GT_TEST_BURNER, BURN_MS, NULL };
	memcpy(argv + n, rest, sizeof rest);
	cli_run(traced, argv, NULL);
	cr_assert_eq(plain.status, 0, "untraced: %d %s", plain.status, plain.err);
	cr_assert_eq(traced->status, plain.status, "traced status %d: %s", traced->status,
		     traced->err);
	cr_assert_str_eq(traced->out, plain.out);
	cr_assert_str_empty(plain.err);
	cli_result_free(&plain);
}

/* The goroutine of the cpu-hog thread (Go 1.19's view): the one main's goroutine creates
 * (its name reaches the trace only after it burnt, at its next hook). */
static uint64_t hog_goroutine(const struct gt_events *ev)
{
	uint64_t g = 0;
	ssize_t i = gt_events_find(ev, 0, "GoCreate", 1, GT_ANY);
	cr_assert_geq(i, 0, "main's goroutine creates none");
	cr_assert(gt_event_arg(&ev->ev[i], "g", &g));
	return g;
}

/* Samples in Go 1.23's dump whose header matches MATCH, and how many of them have
 * BURN_FUNCTION innermost. */
static size_t samples_naming(const char *dump, const char *match, size_t *named)
{
	size_t n = 0;
	char *stack;
	*named = 0;
	for (; (stack = gt_dump_123_stack(dump, match, n, "Stack")) != NULL; n++) {
		*named += strncmp(stack, BURN_FUNCTION, strlen(BURN_FUNCTION)) == 0;
		free(stack);
	}
	return n;
}

/* Every Go reader accepts TRACE; its samples name BURN_FUNCTION on the cpu-hog's goroutine
 * (go122: a "go 1.22 trace", which Go 1.19 cannot read). */
static void check_samples(const char *trace, bool go122)
{
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace, false, &report), 0, "%s", report ? report : "");
	free(report);
	struct gt_events *ev = go122 ? NULL : gt_events_parse_119(trace);
	uint64_t hog = 0;
	cr_assert(go122 || ev != NULL);
	if (ev != NULL) {
		hog = hog_goroutine(ev);
		size_t on_hog = gt_events_count(ev, "CPUSample", (int64_t)hog, GT_ANY);
		/* 400 ms at 499 Hz: about 200 samples; a loaded machine loses some of them */
		cr_assert_geq(on_hog, 100, "%zu samples on the cpu-hog's G %lu", on_hog,
			      (unsigned long)hog);
		gt_events_free(ev);
	}
	char *dump = gt_dump_123(trace);
	cr_assert_not_null(dump);
	size_t named_all, all = samples_naming(dump, "StackSample", &named_all);
	cr_assert_geq(all, 100, "%zu samples", all);
	/* the function is the innermost frame of (nearly) every sample; the rest is the
	 * clock_gettime its loop reads now and then */
	cr_assert_geq(named_all * 10, all * 9, "%zu of %zu samples in " BURN_FUNCTION, named_all,
		      all);
	if (hog != 0) {
		char match[48];
		size_t named_hog;
		snprintf(match, sizeof match, "StackSample G=%lu", (unsigned long)hog);
		samples_naming(dump, match, &named_hog);
		cr_assert_eq(named_hog, named_all, "samples of " BURN_FUNCTION "on other threads");
	}
	/* its caller, found only through the CFI of the copied stack */
	char *first = gt_dump_123_stack(dump, "StackSample", 0, "Stack");
	cr_assert_not_null(strstr(first, "\nburner "), "no caller: %s", first);
	free(first);
	free(dump);
}

Test(samples, name_the_burning_function_on_its_thread, .timeout = 180)
{
	char dir[512], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	const char *options[] = { "--cpu-samples", "499", NULL };
	run_twins(dir, NULL, options, &r, trace, sizeof trace);
	cr_assert_null(strstr(r.err, "no kernel scheduling data"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "gotrace: CPU samples: "), "%s", r.err);
	check_samples(trace, false);
	cli_result_free(&r);
}

Test(samples, in_the_go122_format_too, .timeout = 180)
{
	char dir[512], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	const char *options[] = { "--cpu-samples", "499", "--format", "go1.22", NULL };
	run_twins(dir, NULL, options, &r, trace, sizeof trace);
	check_samples(trace, true);
	cli_result_free(&r);
}

/* The trace's StackSample events, by Go 1.23. */
static size_t samples_in(const char *trace)
{
	char *dump = gt_dump_123(trace);
	cr_assert_not_null(dump);
	size_t n = gt_dump_123_count(dump, "StackSample");
	free(dump);
	return n;
}

Test(samples, off_records_none, .timeout = 180)
{
	char dir[512], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	const char *options[] = { "--kernel=on", "--cpu-samples", "off", NULL };
	run_twins(dir, NULL, options, &r, trace, sizeof trace);
	cr_assert_null(strstr(r.err, "CPU samples"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "gotrace: kernel: "), "no kernel records: %s", r.err);
	cr_assert_eq(samples_in(trace), 0);
	cli_result_free(&r);
}

Test(samples, refused_perf_is_one_line_and_a_hook_only_trace, .timeout = 180)
{
	char dir[512], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	const char *options[] = { "--cpu-samples", "499", NULL };
	run_twins(dir, GT_TEST_NO_PERF, options, &r, trace, sizeof trace);
	size_t lines = 0;
	for (const char *p = r.err; (p = strstr(p, "gotrace: no kernel scheduling data: "
					       "perf_event_open blocked (EPERM)")) != NULL; p++)
		lines++;
	cr_assert_eq(lines, 1, "%s", r.err);
	cr_assert_null(strstr(r.err, "CPU samples"), "%s", r.err);
	cr_assert_eq(samples_in(trace), 0);
	struct gt_events *ev = gt_events_parse_119(trace);
	cr_assert_not_null(ev);
	cr_assert_gt(gt_events_count(ev, "GoCreate", 1, GT_ANY), 0, "no hook events");
	gt_events_free(ev);
	cli_result_free(&r);
}

/* gotrace report's "hottest functions" table (issue 15, item 5): the burning function first,
 * with (nearly) every sample, from the trace alone and from the capture kept beside it. */
static void check_hot_table(const char *trace)
{
	struct cli_result r;
	const char *argv[] = { cli_gotrace, "report", trace, NULL };
	cli_run(&r, argv, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	const char *table = strstr(r.out, "Hottest functions, from ");
	cr_assert_not_null(table, "%s", r.out);
	unsigned long samples = strtoul(table + strlen("Hottest functions, from "), NULL, 10);
	cr_assert_geq(samples, 100, "%s", table);
	const char *row = strstr(table, "function\n");
	cr_assert_not_null(row, "%s", table);
	double self, total;
	char func[64];
	cr_assert_eq(sscanf(row + strlen("function\n"), " %lf%% %lf%% %63s", &self, &total, func), 3,
		     "%s", table);
	cr_assert_str_eq(func, "burn_known_function", "%s", table);
	cr_assert_geq(self, 90.0, "%s", table);
	cr_assert_not_null(strstr(table, "burner (burner.c"), "its caller: %s", table);
	cli_result_free(&r);

	const char *json[] = { cli_gotrace, "report", "--json", trace, NULL };
	cli_run(&r, json, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "\"hot_functions\":{\"samples\":"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "[{\"function\":\"burn_known_function\""), "%s", r.out);
	cli_result_free(&r);
}

Test(samples, report_shows_the_hottest_functions, .timeout = 180)
{
	char dir[512], trace[600], kept[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	const char *options[] = { "--cpu-samples", "499", NULL };
	run_twins(dir, NULL, options, &r, trace, sizeof trace);
	cli_result_free(&r);
	check_hot_table(trace);   /* the Go trace alone */

	const char *keep[] = { "--cpu-samples", "499", "--format", "go1.22", "--keep-capture", NULL };
	char sub[560];
	snprintf(sub, sizeof sub, "%s/kept", dir);
	cr_assert_eq(mkdir(sub, 0755), 0);
	run_twins(sub, NULL, keep, &r, kept, sizeof kept);
	cr_assert(cli_file_exists(strcat(strcpy(dir, kept), ".gtcap")), "%s", r.err);
	cli_result_free(&r);
	check_hot_table(kept);    /* the capture beside it, and the trace's samples */
}
