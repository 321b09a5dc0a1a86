/* Long runs (issue 13): `gotrace run --max-capture SIZE` stops recording at a bound the
 * run's processes share, unnoticed by the program; `gotrace convert --from T --to T` writes
 * a time window in which the threads alive at its start are present (blocked ones blocked);
 * a trace larger than Go's viewer opens comfortably is said in one line. */
#include "capture_builder.h"
#include "cli_support.h"
#include "oracle.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>

#include <gotrace/capture.h>

#define MS 1000000ull

static void assert_oracle(const char *trace)
{
	char *report = NULL;
	int rc = gt_oracle_check(trace, false, &report);
	cr_assert_eq(rc, 0, "Go's readers reject %s:\n%s", trace, report ? report : "");
	free(report);
}

/* The bytes of the captures in dir, and how many there are. */
static uint64_t capture_bytes(const char *dir, int *n)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "%s", dir);
	struct dirent *e;
	uint64_t sum = 0;
	*n = 0;
	while ((e = readdir(d)) != NULL) {
		char path[1024];
		struct stat st;
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 6, ".gtcap") != 0)
			continue;
		cli_path(path, sizeof path, dir, e->d_name);
		cr_assert_eq(stat(path, &st), 0);
		sum += (uint64_t)st.st_size;
		(*n)++;
	}
	closedir(d);
	return sum;
}

/* Whether `gotrace report --json` of a capture in dir says it stopped at bound bytes. */
static bool a_report_says_bound(const char *dir, uint64_t bound)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char needle[64];
	bool found = false;
	snprintf(needle, sizeof needle, "\"max_capture_bytes\":%llu", (unsigned long long)bound);
	while (d && !found && (e = readdir(d)) != NULL) {
		char path[1024];
		struct cli_result r;
		if (!strstr(e->d_name, ".gtcap"))
			continue;
		cli_path(path, sizeof path, dir, e->d_name);
		const char *argv[] = { cli_gotrace, "report", "--json", path, NULL };
		cli_run(&r, argv, NULL);
		found = r.status == 0 && strstr(r.out, needle) != NULL;
		cli_result_free(&r);
	}
	if (d)
		closedir(d);
	return found;
}

static bool has_budget_page(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	bool found = false;
	while (d && (e = readdir(d)) != NULL)
		found |= strstr(e->d_name, ".budget") != NULL;
	if (d)
		closedir(d);
	return found;
}

/* Two example programs under one shell: the bound holds for the three captures together, the
 * programs print and exit as they do untraced, and the trace converts and reads. */
Test(max_capture, stops_the_run_at_the_bound_unnoticed, .timeout = 120)
{
	char dir[512], caps[600], trace[600], script[2048], traced_script[2048];
	char plain_err[600], traced_err[600];
	struct cli_result plain, traced;
	cli_tempdir(dir, sizeof dir);
	cli_path(caps, sizeof caps, dir, "caps");
	cli_path(trace, sizeof trace, dir, "t.trace");
	cli_path(plain_err, sizeof plain_err, dir, "plain.err");
	cli_path(traced_err, sizeof traced_err, dir, "traced.err");
	/* each example run records about 56 KiB: the second one meets the bound; the programs'
	 * own stderr goes to a file, apart from gotrace's */
	snprintf(script, sizeof script, "%s 240 4 2>>%s && %s 240 4 2>>%s", cli_workpool, plain_err,
		 cli_workpool, plain_err);
	snprintf(traced_script, sizeof traced_script, "%s 240 4 2>>%s && %s 240 4 2>>%s",
		 cli_workpool, traced_err, cli_workpool, traced_err);
	const char *plain_argv[] = { "/bin/sh", "-c", script, NULL };
	const char *traced_argv[] = { cli_gotrace, "run", "--max-capture", "96K", "--capture-dir",
				      caps, "--keep-capture", "-o", trace, "--", "/bin/sh", "-c",
				      traced_script, NULL };
	/* 16 KiB chunks: the bound is met after a few of them */
	const char *env[] = { "GOTRACE_CHUNK_SIZE=16384", NULL };
	cli_run(&plain, plain_argv, env);
	cli_run(&traced, traced_argv, env);
	cr_assert_eq(plain.status, 0, "%s", plain.err);
	cr_assert_eq(traced.status, plain.status, "status %d, stderr: %s", traced.status, traced.err);
	cr_assert_str_eq(traced.out, plain.out, "the program noticed: stderr %s", traced.err);
	/* the stop is gotrace's to say, in its summary, not on the program's stderr */
	char *pe = cli_read_file(plain_err), *te = cli_read_file(traced_err);
	cr_assert_str_eq(te ? te : "", pe ? pe : "", "the program's stderr");
	free(pe);
	free(te);
	cr_assert_not_null(strstr(traced.err, "recording stopped at the --max-capture bound of "
					      "96 KiB after "),
			   "no bound message: %s", traced.err);
	cr_assert_not_null(strstr(traced.err, "facts after that were not recorded"), "%s", traced.err);
	int n;
	uint64_t bytes = capture_bytes(caps, &n);
	cr_assert_eq(n, 3, "captures: %d, %s", n, traced.err);
	/* the bound, and at most a page per capture for its stop notice */
	cr_assert_leq(bytes, 96 * 1024 + 3 * 4096, "captures hold %llu bytes",
		      (unsigned long long)bytes);
	cr_assert_gt(bytes, 48 * 1024, "captures hold %llu bytes", (unsigned long long)bytes);
	cr_assert(!has_budget_page(caps), "the run's count page was left in %s", caps);
	cr_assert(a_report_says_bound(caps, 96 * 1024), "no report --json names the bound");
	assert_oracle(trace);
	cli_result_free(&plain);
	cli_result_free(&traced);
}

/* Bare LD_PRELOAD with GOTRACE_MAX_CAPTURE: the processes the first one starts share its
 * count (its page stays beside the captures), and gotrace convert says where it stopped. */
Test(max_capture, bare_preload_shares_the_bound_too, .timeout = 120)
{
	char dir[512], trace[600], script[2048], preload[700], capdir[600];
	struct cli_result plain, traced, conv;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "t.trace");
	snprintf(script, sizeof script, "%s 240 4 && %s 240 4", cli_workpool, cli_workpool);
	snprintf(preload, sizeof preload, "LD_PRELOAD=%s", GT_TEST_PRELOAD_LIB);
	snprintf(capdir, sizeof capdir, "GOTRACE_CAPTURE_DIR=%s", dir);
	const char *argv[] = { "/bin/sh", "-c", script, NULL };
	const char *plain_env[] = { "GOTRACE_CHUNK_SIZE=16384", NULL };
	const char *env[] = { "GOTRACE_CHUNK_SIZE=16384", "GOTRACE_MAX_CAPTURE=96K", preload,
			      capdir, NULL };
	cli_run(&plain, argv, plain_env);
	cli_run(&traced, argv, env);
	cr_assert_eq(plain.status, 0, "%s", plain.err);
	cr_assert_eq(traced.status, 0, "%s", traced.err);
	cr_assert_str_eq(traced.out, plain.out);
	cr_assert_not_null(strstr(traced.err, "GOTRACE_MAX_CAPTURE bound"), "%s", traced.err);
	int n;
	uint64_t bytes = capture_bytes(dir, &n);
	cr_assert_eq(n, 3, "captures: %d", n);
	cr_assert_leq(bytes, 96 * 1024 + 3 * 4096, "captures hold %llu bytes",
		      (unsigned long long)bytes);
	cr_assert(has_budget_page(dir));
	const char *convert[] = { cli_gotrace, "convert", dir, "-o", trace, NULL };
	cli_run(&conv, convert, NULL);
	cr_assert_eq(conv.status, 0, "%s", conv.err);
	cr_assert_not_null(strstr(conv.err, "recording stopped at the --max-capture bound of 96 KiB"),
			   "%s", conv.err);
	assert_oracle(trace);
	cli_result_free(&plain);
	cli_result_free(&traced);
	cli_result_free(&conv);
}

/* What the command's libgotrace.so is given: --max-capture, else what the user exported,
 * else a quarter of the capture directory's free space. */
Test(max_capture, the_bound_given_to_the_command)
{
	char dir[512], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "t.trace");
	const char *show[] = { "/bin/sh", "-c", "echo $GOTRACE_MAX_CAPTURE", NULL };
	const char *flag[] = { cli_gotrace, "run", "--max-capture", "1G", "--capture-dir", dir,
			       "-o", trace, "--", show[0], show[1], show[2], NULL };
	cli_run(&r, flag, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "1073741824\n");
	cli_result_free(&r);

	const char *exported[] = { "GOTRACE_MAX_CAPTURE=5G", NULL };
	const char *plain[] = { cli_gotrace, "run", "--capture-dir", dir, "-o", trace, "--",
				show[0], show[1], show[2], NULL };
	cli_run(&r, plain, exported);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_eq(r.out, "5G\n");
	cli_result_free(&r);

	struct statvfs fs;
	cr_assert_eq(statvfs(dir, &fs), 0);
	double quarter = (double)fs.f_bavail * fs.f_frsize / 4;
	const char *unset[] = { "GOTRACE_MAX_CAPTURE", NULL };
	cli_run(&r, plain, unset);
	cr_assert_eq(r.status, 0, "%s", r.err);
	double given = strtod(r.out, NULL);
	/* the free space moves a little while other tests write */
	cr_assert(given > quarter * 0.9 && given < quarter * 1.1, "%s given, a quarter is %.0f",
		  r.out, quarter);
	cli_result_free(&r);
}

Test(max_capture, junk_sizes_are_refused_and_help_says_the_default)
{
	char dir[512], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "t.trace");
	const char *junk[] = { "", "abc", "12Q", "-5M", "0", "1e9", "1..5G", "10K", "0x100000",
			       "5 M", "99999999999T" };
	for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
		const char *argv[] = { cli_gotrace, "run", "--max-capture", junk[i], "-o", trace,
				       "--", "/bin/true", NULL };
		cli_run(&r, argv, NULL);
		cr_assert_eq(r.status, 2, "'%s' accepted: %s", junk[i], r.err);
		cr_assert_eq(cli_count_lines(r.err), 1, "'%s': %s", junk[i], r.err);
		cr_assert_not_null(strstr(r.err, "--max-capture must be a size"), "'%s': %s", junk[i], r.err);
		cr_assert(!cli_file_exists(trace), "'%s' ran the command", junk[i]);
		cli_result_free(&r);
	}
	const char *good[] = { "1G", "512M", "1.5G", "2GiB", "65536", "64K" };
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		const char *argv[] = { cli_gotrace, "run", "--max-capture", good[i], "-o", trace,
				       "--", "/bin/true", NULL };
		cli_run(&r, argv, NULL);
		cr_assert_eq(r.status, 0, "'%s' refused: %s", good[i], r.err);
		cli_result_free(&r);
	}
	const char *help[] = { cli_gotrace, "run", "--help", NULL };
	cli_run(&r, help, NULL);
	cr_assert_not_null(strstr(r.out, "--max-capture SIZE"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "a quarter of the space"), "%s", r.out);
	cli_result_free(&r);
}

/* ---- convert --from/--to ---------------------------------------------------------------- */

/* One process, times in ms after its start:
 *   main (1)     existing at 0; creates 2 at 1, 3 at 1.2, 4 at 1.5; wakes 2 at 10; yields at
 *                12 and 25; ends at 31
 *   waiter (2)   blocks on a mutex at 2, woken at 10, resumes 10.1; yields at 25
 *   brief (3)    starts at 1.3, ends at 3: before the window
 *   sleeper (4)  sleeps from 4.5 to 30
 * The window 5 ms .. 20 ms holds main, waiter (blocked at its start) and sleeper (asleep). */
static void window_capture(const char *path)
{
	const uint64_t s = 1000000000ull;
	struct gt_cb *cb = gt_cb_new(2, 65536, s);
	gt_cb_header(cb)->pid = 4242;
	uint64_t pcs[] = { 0x401000, 0x401100 };
	gt_cb_stack(cb, 0, s, 1, pcs, 2);
	gt_cb_thread_existing(cb, 0, s, 1, 0, 0);
	gt_cb_thread_new(cb, 0, s + 1 * MS, 1, 2, 1, 0x402000);
	gt_cb_thread_start(cb, 1, s + 1 * MS + 100, 2, 102, 0x402000);
	gt_cb_thread_name(cb, 1, s + 1 * MS + 200, 2, "waiter");
	gt_cb_thread_new(cb, 0, s + 12 * MS / 10, 1, 3, 1, 0x403000);
	gt_cb_thread_start(cb, 1, s + 13 * MS / 10, 3, 103, 0x403000);
	gt_cb_thread_name(cb, 1, s + 13 * MS / 10 + 100, 3, "brief");
	gt_cb_thread_new(cb, 0, s + 15 * MS / 10, 1, 4, 1, 0x404000);
	gt_cb_block_begin(cb, 1, s + 2 * MS, 2, GT_BK_MUTEX, 0xabc0, 1);
	gt_cb_thread_end(cb, 1, s + 3 * MS, 3);
	gt_cb_thread_start(cb, 1, s + 4 * MS, 4, 104, 0x404000);
	gt_cb_thread_name(cb, 1, s + 4 * MS + 100, 4, "sleeper");
	gt_cb_block_begin(cb, 1, s + 45 * MS / 10, 4, GT_BK_SLEEP, 0, 1);
	gt_cb_wake(cb, 0, s + 10 * MS, 1, GT_BK_MUTEX, 0xabc0, 1, 1);
	gt_cb_block_end(cb, 1, s + 10 * MS + 100000, 2, GT_BK_MUTEX, 0xabc0, GT_BR_OK);
	gt_cb_yield(cb, 0, s + 12 * MS, 1, 1);
	gt_cb_yield(cb, 0, s + 25 * MS, 1, 1);
	gt_cb_yield(cb, 1, s + 25 * MS + 1000, 2, 1);
	gt_cb_block_end(cb, 1, s + 30 * MS, 4, GT_BK_SLEEP, 0, GT_BR_OK);
	gt_cb_thread_end(cb, 1, s + 30 * MS + 500, 4);
	gt_cb_thread_end(cb, 1, s + 30 * MS + 600, 2);
	gt_cb_thread_end(cb, 0, s + 31 * MS, 1);
	gt_cb_capture_end(cb, 0, s + 31 * MS);
	gt_cb_header(cb)->flags |= GT_FILE_FINALIZED;
	cr_assert_eq(gt_cb_write(cb, path), 0);
	gt_cb_free(cb);
}

/* window_capture in a fresh directory, and the path of a trace beside it (600 bytes each) */
static void synthetic_files(char *capture, char *out)
{
	char dir[512];
	cli_tempdir(dir, sizeof dir);
	cli_path(capture, 600, dir, "gotrace-4242.gtcap");
	cli_path(out, 600, dir, "w.trace");
	window_capture(capture);
}

/* The goroutine labelled name (GoStartLabel), or -1 */
static int64_t labelled(const struct gt_events *ev, const char *name)
{
	for (size_t i = 0; i < ev->n; i++) {
		char label[64];
		uint64_t g;
		if (strcmp(ev->ev[i].type, "GoStartLabel") == 0 &&
		    gt_event_string(&ev->ev[i], "label", label, sizeof label) &&
		    strcmp(label, name) == 0 && gt_event_arg(&ev->ev[i], "g", &g))
			return (int64_t)g;
	}
	return -1;
}

static void convert_window(struct cli_result *r, const char *capture, const char *out,
			   const char *from, const char *to)
{
	const char *argv[] = { cli_gotrace, "convert", "--format", "go1.19", "--no-symbols", capture,
			       "-o", out, "--from", from, "--to", to, NULL };
	cli_run(r, argv, NULL);
}

Test(window, threads_alive_at_its_start_are_there_blocked_ones_blocked, .timeout = 120)
{
	char dir[512], capture[600], whole[600], win[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(capture, sizeof capture, dir, "gotrace-4242.gtcap");
	cli_path(whole, sizeof whole, dir, "whole.trace");
	cli_path(win, sizeof win, dir, "win.trace");
	window_capture(capture);

	const char *argv[] = { cli_gotrace, "convert", "--format", "go1.19", "--no-symbols", capture,
			       "-o", whole, NULL };
	cli_run(&r, argv, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cli_result_free(&r);
	struct gt_events *all = gt_events_parse_119(whole);
	cr_assert_not_null(all);
	cr_assert_eq(gt_events_count(all, "GoCreate", GT_ANY, GT_ANY), 4);
	gt_events_free(all);

	convert_window(&r, capture, win, "5ms", "0.02");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cli_result_free(&r);
	assert_oracle(win);
	struct gt_events *ev = gt_events_parse_119(win);
	cr_assert_not_null(ev);
	/* main, waiter and sleeper; not brief, which ended before the window */
	cr_assert_eq(gt_events_count(ev, "GoCreate", GT_ANY, GT_ANY), 3);
	ssize_t gomaxprocs = gt_events_find(ev, 0, "Gomaxprocs", GT_ANY, GT_ANY);
	cr_assert_geq(gomaxprocs, 3);
	for (ssize_t i = 0; i < gomaxprocs; i++)
		cr_assert_str_eq(ev->ev[i].type, "GoCreate", "event %zd before Gomaxprocs: %s", i,
				 ev->ev[i].type);
	cr_assert_eq(labelled(ev, "brief"), -1, "a thread ended before the window is in it");
	int64_t waiter = labelled(ev, "waiter"), sleeper = labelled(ev, "sleeper");
	cr_assert_gt(waiter, 1);
	cr_assert_gt(sleeper, 1);
	/* blocked at the start, on the mutex, and woken by main 5 ms into the window */
	ssize_t block = gt_events_find(ev, 0, "GoBlockSync", waiter, GT_ANY);
	cr_assert_geq(block, 0, "the waiter is not blocked at the start");
	cr_assert_lt(ev->ev[block].ts_ns, (int64_t)MS / 10);
	ssize_t unblock = gt_events_find_arg(ev, 0, "GoUnblock", "g", (uint64_t)waiter);
	cr_assert_geq(unblock, 0);
	cr_assert_eq(ev->ev[unblock].g, 1, "woken by G%lld, not main", (long long)ev->ev[unblock].g);
	cr_assert_geq(ev->ev[unblock].ts_ns, (int64_t)(4 * MS));
	cr_assert_leq(ev->ev[unblock].ts_ns, (int64_t)(6 * MS));
	/* asleep through the window */
	cr_assert_eq(gt_events_count(ev, "GoSleep", sleeper, GT_ANY), 1);
	cr_assert_lt(gt_events_find_arg(ev, 0, "GoUnblock", "g", (uint64_t)sleeper), 0);
	/* only the window: main's yield at 12 ms, not those at 25 ms; nothing ends */
	cr_assert_eq(gt_events_count(ev, "GoSched", GT_ANY, GT_ANY), 1);
	cr_assert_eq(gt_events_count(ev, "GoEnd", GT_ANY, GT_ANY), 0);
	cr_assert_leq(ev->ev[ev->n - 1].ts_ns, (int64_t)(15 * MS));
	gt_events_free(ev);
}

Test(window, of_a_real_run_keeps_every_thread_and_reads, .timeout = 120)
{
	char dir[512], trace[600], capture[700], whole[600], win[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_trace_workpool(dir, 240, trace, sizeof trace);
	snprintf(capture, sizeof capture, "%s.gtcap", trace);
	cli_path(whole, sizeof whole, dir, "whole.trace");
	cli_path(win, sizeof win, dir, "win.trace");
	/* Go 1.19's events of the whole run and of the window, from the kept capture */
	const char *whole_argv[] = { cli_gotrace, "convert", "--format", "go1.19", capture, "-o",
				     whole, NULL };
	cli_run(&r, whole_argv, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cli_result_free(&r);
	struct gt_events *all = gt_events_parse_119(whole);
	cr_assert_not_null(all);
	size_t threads = gt_events_count(all, "GoCreate", GT_ANY, GT_ANY);
	gt_events_free(all);

	const char *argv[] = { cli_gotrace, "convert", "--format", "go1.19", capture, "-o", win,
			       "--from", "200ms", "--to", "0.5s", NULL };
	cli_run(&r, argv, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cli_result_free(&r);
	assert_oracle(win);
	struct gt_events *ev = gt_events_parse_119(win);
	cr_assert_not_null(ev);
	/* the example's threads live from its start to its end: all of them are in the window */
	cr_assert_eq(gt_events_count(ev, "GoCreate", GT_ANY, GT_ANY), threads);
	cr_assert_leq(ev->ev[ev->n - 1].ts_ns, (int64_t)(300 * MS));
	cr_assert_gt(ev->n, 20);
	gt_events_free(ev);
}

Test(window, junk_times_are_refused)
{
	char capture[600], out[600];
	struct cli_result r;
	synthetic_files(capture, out);
	const char *junk[][2] = { { "abc", "1s" }, { "-1s", "1s" }, { "1e3", "2000" },
				  { "1s", "0" }, { "2s", "1s" }, { "1ss", "2s" }, { "1h", "2h" },
				  { "5ms", "5ms" } };
	for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
		convert_window(&r, capture, out, junk[i][0], junk[i][1]);
		cr_assert_eq(r.status, 2, "--from %s --to %s accepted: %s", junk[i][0], junk[i][1],
			     r.err);
		cr_assert_eq(cli_count_lines(r.err), 1, "%s", r.err);
		cr_assert(!cli_file_exists(out));
		cli_result_free(&r);
	}
	/* a window after the capture's end: said, and no trace */
	convert_window(&r, capture, out, "1s", "2s");
	cr_assert_eq(r.status, 1, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "nothing was recorded after --from 1.000 s"), "%s", r.err);
	cr_assert(!cli_file_exists(out));
	cli_result_free(&r);
}

/* ---- the viewer's comfort ---------------------------------------------------------------- */

Test(viewer, a_trace_beyond_the_viewers_comfort_is_said_with_the_remedies)
{
	char capture[600], out[600];
	struct cli_result r;
	synthetic_files(capture, out);
	const char *argv[] = { cli_gotrace, "convert", "--no-symbols", capture, "-o", out, NULL };
	const char *low[] = { "GOTRACE_VIEWER_EVENTS=10", NULL };
	cli_run(&r, argv, low);
	cr_assert_eq(r.status, 0, "%s", r.err);
	const char *line = strstr(r.err, "more than Go's viewer opens comfortably (10)");
	cr_assert_not_null(line, "no warning: %s", r.err);
	cr_assert_not_null(strstr(r.err, "gotrace run --last, gotrace convert --from T --to T, or "
					 "read it with gotrace report"), "%s", r.err);
	cli_result_free(&r);
	/* the default is millions: this trace is far below it */
	cli_run(&r, argv, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_null(strstr(r.err, "viewer"), "%s", r.err);
	cli_result_free(&r);

	/* gotrace run says it too (/bin/true's trace: 6 events) */
	const char *run[] = { cli_gotrace, "run", "-o", out, "--", "/bin/true", NULL };
	const char *lower[] = { "GOTRACE_VIEWER_EVENTS=5", NULL };
	cli_run(&r, run, lower);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "more than Go's viewer opens comfortably (5)"), "%s", r.err);
	cli_result_free(&r);
}
