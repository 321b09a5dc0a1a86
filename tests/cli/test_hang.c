/* The hang watchdog, `gotrace run --hang SECONDS` (issue 23, item 6), on programs whose truth
 * is known by construction (hang.c): a deadlock after a second and a half of computation is
 * reported once while it lasts, with a snapshot every Go reader accepts, and never during the
 * work; programs whose threads sleep while one computes (plainly, or in a signal handler
 * inside a recorded read) are not hung, nor is a parent waiting for a child that computes;
 * a parent waiting for a hung child is, after it.  Each traced run is compared with its
 * untraced run (same stdout and status; the deadlock stopped by `timeout` in both, as soon
 * as what the run is for was seen: cli_run_until), idle and with a busy loop on every CPU. */
#include "cli_support.h"
#include "oracle.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char hang[] = GT_TEST_HANG;

/* A deadlock is stopped by `timeout` at the latest after so long: enough for a loaded
 * machine to do the work, deadlock and see it; sooner once what the run is for was seen. */
#define TIMEOUT "120"
/* How long a traced deadlock is watched for a second hang message after its first: many
 * ticks of --hang 1 (250 ms). */
#define WATCH_AFTER_HANG_S 3.0

/* `timeout TIMEOUT hang MODE`, untraced; a deadlock stopped once it says its work is done. */
static void run_plain(const char *mode, struct cli_result *plain)
{
	const char *argv[] = {"/usr/bin/timeout", TIMEOUT, hang, mode, NULL};
	cli_run_until(plain, argv, NULL, "work done: ", 0, SIGALRM);
}

/* `timeout TIMEOUT gotrace run --hang 1 --format FORMAT -o TRACE -- hang MODE`, a deadlock
 * stopped WATCH_AFTER_HANG_S after its last hang (snapshot LAST_HANG: 1, 2) was said: the
 * same status and stdout as the untraced run plain. */
static void run_traced_until(const char *mode, const char *format, const char *trace,
			     unsigned last_hang, const struct cli_result *plain,
			     struct cli_result *traced)
{
	const char *argv[] = {"/usr/bin/timeout", TIMEOUT, cli_gotrace, "run", "--hang", "1",
			      "--format", format, "-o", trace, "--", hang, mode, NULL};
	char last[700];
	snprintf(last, sizeof last, "gotrace:   the run so far: %s.hang-%u\n", trace, last_hang);
	cli_run_until(traced, argv, NULL, last, WATCH_AFTER_HANG_S, SIGALRM);
	cr_assert_eq(traced->status, plain->status, "traced %d, untraced %d: %s", traced->status,
		     plain->status, traced->err);
	cr_assert_str_eq(traced->out, plain->out, "stderr: %s", traced->err);
}

static void run_traced(const char *mode, const char *format, const char *trace,
		       const struct cli_result *plain, struct cli_result *traced)
{
	run_traced_until(mode, format, trace, 1, plain, traced);
}

/* Where needle is in text before end, NULL when it is not. */
static const char *find_before(const char *text, const char *end, const char *needle)
{
	const char *at = strstr(text, needle);
	return at && at < end ? at : NULL;
}

/* The deadlock traced into a go1.22 or go1.19 trace (and snapshot), with plain the untraced
 * run under the same load. */
static void deadlock_reported_once(const char *format, const struct cli_result *plain)
{
	char dir[512], trace[600], snapshot[700], line[800];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "hang.trace");
	run_traced("deadlock", format, trace, plain, &r);
	cr_assert_eq(r.status, 124, "stopped by timeout: %s", r.err);
	cr_assert_eq(strncmp(r.out, "work done: ", 11), 0, "%s: it did its work: %s", format, r.err);

	cr_assert_eq(cli_count_of(r.err, "gotrace: hang:"), 1, "once per hang:\n%s", r.err);
	const char *hung = strstr(r.err, "gotrace: hang: every thread of hang (pid ");
	cr_assert_not_null(hung, "%s", r.err);
	/* the program's own words that its work is over come first: no hang during the work */
	cr_assert_not_null(find_before(r.err, hung, "hang: alpha worked\n"), "%s", r.err);
	cr_assert_not_null(find_before(r.err, hung, "hang: beta worked\n"), "%s", r.err);
	double seconds = 0;
	const char *blocked = strstr(hung, "has been blocked for ");
	cr_assert(blocked && sscanf(blocked, "has been blocked for %lf s", &seconds) == 1 &&
		  seconds >= 1.0, "%s", hung);

	snprintf(snapshot, sizeof snapshot, "%s.hang-1", trace);
	snprintf(line, sizeof line, "gotrace:   the run so far: %s\n", snapshot);
	const char *end = strstr(hung, line);
	cr_assert_not_null(end, "'%s' not in:\n%s", line, hung);
	/* what each thread waits for: main in its join, the two locks, the cycle */
	cr_assert_not_null(find_before(hung, end, " in join, at:\n"), "%s", hung);
	const char *cycle = find_before(hung, end, "Deadlock 1: 2 threads, each waiting for a "
					"lock the next one holds\n");
	cr_assert_not_null(cycle, "%s", hung);
	cr_assert_null(find_before(hung, end, "Deadlock 2"), "one cycle: %s", hung);
	static const char *const names[2] = {"alpha", "beta"}, *const locks[2] = {"lock_b", "lock_a"};
	for (int i = 0; i < 2; i++) {
		snprintf(line, sizeof line, "%s (thread ", names[i]);
		const char *at = find_before(cycle, end, line);
		cr_assert_not_null(at, "'%s' not in:\n%s", line, cycle);
		snprintf(line, sizeof line, " waits for mutex %s, held by %s (thread ", locks[i],
			 names[1 - i]);
		cr_assert_not_null(find_before(at, end, line), "'%s' not in:\n%s", line, cycle);
	}

	char *report = NULL;
	cr_assert(cli_file_exists(snapshot), "%s", r.err);
	cr_assert_eq(gt_oracle_check(snapshot, true, &report), 0, "%s", report ? report : "");
	free(report);
	snprintf(line, sizeof line, "%s.hang-2", trace);
	cr_assert(!cli_file_exists(line), "a second snapshot: %s", r.err);
	/* and the run's own trace at its end, as without --hang */
	snprintf(line, sizeof line, "gotrace: %s: hang (pid ", trace);
	cr_assert_not_null(strstr(end, line), "%s", r.err);
	report = NULL;
	cr_assert_eq(gt_oracle_check(trace, true, &report), 0, "%s", report ? report : "");
	free(report);
	cli_result_free(&r);
}

/* Idle in both formats (every Go reader reads one of them), loaded in the default one. */
Test(hang, a_deadlock_after_work_reported_once, .timeout = 300)
{
	for (int loaded = 0; loaded < 2; loaded++) {
		struct cli_result plain;
		struct cli_load load;
		cli_load_start(&load, loaded);
		run_plain("deadlock", &plain);
		deadlock_reported_once("go1.22", &plain);
		if (!loaded)
			deadlock_reported_once("go1.19", &plain);
		cli_load_stop(&load);
		cli_result_free(&plain);
	}
}

/* Threads asleep while one computes: no hang, and the program ends as untraced, its stdout
 * starting with says. */
static void computing_is_not_hung(const char *mode, const char *says, bool loaded)
{
	char dir[512], trace[600], snapshot[700];
	struct cli_result r;
	struct cli_load load;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "busy.trace");
	cli_load_start(&load, loaded);
	struct cli_result plain;
	run_plain(mode, &plain);
	run_traced(mode, "go1.22", trace, &plain, &r);
	cli_load_stop(&load);
	cli_result_free(&plain);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(strncmp(r.out, says, strlen(says)), 0, "%s", r.out);
	cr_assert_null(strstr(r.err, "gotrace: hang"), "%s", r.err);
	snprintf(snapshot, sizeof snapshot, "%s.hang-1", trace);
	cr_assert(!cli_file_exists(snapshot), "%s", r.err);
	cr_assert(cli_file_exists(trace), "%s", r.err);
	cli_result_free(&r);
}

Test(hang, a_thread_computing_is_not_blocked, .timeout = 300)
{
	for (int loaded = 0; loaded < 2; loaded++)
		computing_is_not_hung("busy", "busy: ", loaded);
}

/* Its hooks say the worker is in a read all along: the kernel's count of its CPU time says
 * it computes (in the handler of a signal that interrupted the read). */
Test(hang, a_thread_computing_inside_a_recorded_wait_is_not_blocked, .timeout = 300)
{
	for (int loaded = 0; loaded < 2; loaded++)
		computing_is_not_hung("busy-in-handler", "busy: ", loaded);
}

/* A parent in waitpid is blocked only while no process below it runs. */
Test(hang, a_parent_waiting_for_a_computing_child_is_not_blocked, .timeout = 300)
{
	for (int loaded = 0; loaded < 2; loaded++)
		computing_is_not_hung("parent-of-busy", "child: ", loaded);
}

/* ... and hung once its hung child has not run for SECONDS either: both said, the child's
 * deadlock first. */
Test(hang, a_parent_waiting_for_a_hung_child_is_hung_after_it, .timeout = 300)
{
	for (int loaded = 0; loaded < 2; loaded++) {
		char dir[512], trace[600], snapshot[700];
		struct cli_result plain, r;
		struct cli_load load;
		cli_tempdir(dir, sizeof dir);
		cli_path(trace, sizeof trace, dir, "parent.trace");
		cli_load_start(&load, loaded);
		run_plain("parent-of-deadlock", &plain);
		run_traced_until("parent-of-deadlock", "go1.22", trace, 2, &plain, &r);
		cli_load_stop(&load);
		cr_assert_eq(r.status, 124, "stopped by timeout: %s", r.err);
		cr_assert_eq(cli_count_of(r.err, "gotrace: hang:"), 2, "child, then parent:\n%s", r.err);
		const char *child = strstr(r.err, "gotrace: hang: every thread of hang (pid ");
		cr_assert_not_null(child, "%s", r.err);
		const char *parent = strstr(child + 1, "gotrace: hang: every thread of hang (pid ");
		cr_assert_not_null(parent, "%s", r.err);
		cr_assert_not_null(find_before(child, parent, "Deadlock 1: 2 threads"), "%s", r.err);
		cr_assert_not_null(strstr(parent, " in wait4, at:\n"), "%s", parent);
		cr_assert_null(strstr(parent, "Deadlock"), "%s", parent);
		for (unsigned n = 1; n <= 2; n++) {
			snprintf(snapshot, sizeof snapshot, "%s.hang-%u", trace, n);
			cr_assert(cli_file_exists(snapshot), "%s", r.err);
		}
		cli_result_free(&plain);
		cli_result_free(&r);
	}
}

Test(hang, bad_values_are_refused)
{
	char dir[512], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "t.trace");
	const char *junk[] = { "", "0", "-1", "abc", "0.05", "50ms", "1x", "1e3", "inf" };
	for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
		const char *argv[] = { cli_gotrace, "run", "--hang", junk[i], "-o", trace, "--",
				       "/bin/true", NULL };
		cli_run(&r, argv, NULL);
		cr_assert_eq(r.status, 2, "'%s' accepted: %s", junk[i], r.err);
		cr_assert_eq(cli_count_lines(r.err), 1, "'%s': %s", junk[i], r.err);
		cr_assert_not_null(strstr(r.err, "--hang must be seconds of at least 0.1"), "'%s': %s",
				   junk[i], r.err);
		cr_assert(!cli_file_exists(trace), "'%s' ran the command", junk[i]);
		cli_result_free(&r);
	}
	const char *good[] = { "1", "2.5", "500ms", "0.1" };
	for (size_t i = 0; i < sizeof good / sizeof good[0]; i++) {
		const char *argv[] = { cli_gotrace, "run", "--hang", good[i], "-o", trace, "--",
				       "/bin/true", NULL };
		cli_run(&r, argv, NULL);
		cr_assert_eq(r.status, 0, "'%s' refused: %s", good[i], r.err);
		cli_result_free(&r);
	}
	const char *help[] = { cli_gotrace, "run", "--help", NULL };
	cli_run(&r, help, NULL);
	cr_assert_not_null(strstr(r.out, "--hang SECONDS"), "%s", r.out);
	cli_result_free(&r);
}
