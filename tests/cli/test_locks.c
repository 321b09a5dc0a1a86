/* Lock holders and deadlocks (issue 23, items 2 and 4) on programs whose truth is known by
 * construction (locks.c, locks_cpp.cpp): each traced run is compared with its untraced run
 * (same stdout and status; a deadlock is stopped by `timeout` in both), then its summary, its
 * report in text and JSON, and its trace in every Go reader.  Each scenario runs idle and
 * with a busy loop on every CPU. */
#include "cli_support.h"
#include "oracle.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char locks[] = GT_TEST_LOCKS;

/* Runs `[timeout SECS] PROGRAM MODE` untraced, then traced into dir/MODE.trace with the
 * capture kept; asserts the same status and stdout; the traced run into traced. */
static void run_both(const char *program, const char *mode, const char *timeout_secs,
		     const char *dir, char *trace, size_t size, struct cli_result *traced)
{
	cli_path(trace, size, dir, mode);
	strncat(trace, ".trace", size - strlen(trace) - 1);
	const char *plain_argv[] = {"timeout", timeout_secs, program, mode, NULL};
	const char *traced_argv[] = {"timeout", timeout_secs, cli_gotrace, "run", "--keep-capture",
				     "-o", trace, "--", program, mode, NULL};
	/* cli_run takes a path: timeout's */
	plain_argv[0] = traced_argv[0] = "/usr/bin/timeout";
	struct cli_result plain;
	cli_run(&plain, plain_argv, NULL);
	cli_run(traced, traced_argv, NULL);
	cr_assert_eq(traced->status, plain.status, "traced %d, untraced %d: %s", traced->status,
		     plain.status, traced->err);
	cr_assert_str_eq(traced->out, plain.out, "stderr: %s", traced->err);
	cli_result_free(&plain);
}

/* The address the program gave lock name (its stderr, "name=0x..."). */
static void lock_address(const struct cli_result *r, const char *name, char *out, size_t size)
{
	char key[32];
	snprintf(key, sizeof key, " %s=", name);
	const char *at = strstr(r->err, key);
	cr_assert_not_null(at, "%s not in: %s", key, r->err);
	at += strlen(key);
	snprintf(out, size, "%.*s", (int)strcspn(at, " \n"), at);
}

/* The name the report's JSON gives the lock at address: the string of field after key's
 * first place (the lock names' own test checks what the names are). */
static void lock_name(const char *trace, const char *key, const char *field, char *out,
		      size_t size)
{
	char *json = cli_report_of(trace, true), want[64];
	const char *at = strstr(json, key);
	cr_assert_not_null(at, "%s not in %s", key, json);
	snprintf(want, sizeof want, "\"%s\":\"", field);
	const char *name = strstr(at, want);
	cr_assert_not_null(name, "%s", at);
	name += strlen(want);
	snprintf(out, size, "%.*s", (int)strcspn(name, "\""), name);
	free(json);
}

/* Every Go reader reads trace, and its go1.19 twin converted from the kept capture. */
static void go_readers_accept(const char *dir, const char *trace)
{
	char *report = NULL, capture[700], old[700];
	cr_assert_eq(gt_oracle_check(trace, true, &report), 0, "%s", report ? report : "");
	free(report);
	snprintf(capture, sizeof capture, "%s.gtcap", trace);
	cli_path(old, sizeof old, dir, "go119.trace");
	struct cli_result r;
	const char *argv[] = {cli_gotrace, "convert", "--format", "go1.19", "-o", old, capture, NULL};
	cli_run(&r, argv, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cli_result_free(&r);
	report = NULL;
	cr_assert_eq(gt_oracle_check(old, true, &report), 0, "%s", report ? report : "");
	free(report);
}

/* A holder the program names holds the lock during each of the waiter's waits. */
static void holder_named(const char *program, const char *mode, const char *lock,
			 const char *kind, const char *holder, const char *waiter, unsigned waits,
			 const char *released_in, bool loaded)
{
	char dir[512], trace[600], address[32], line[768];
	struct cli_result r;
	struct cli_load load;
	cli_tempdir(dir, sizeof dir);
	cli_load_start(&load, loaded);
	run_both(program, mode, "60", dir, trace, sizeof trace, &r);
	cli_load_stop(&load);
	cr_assert_eq(r.status, 0, "%s", r.err);
	lock_address(&r, lock, address, sizeof address);
	char key[64], name[256];
	snprintf(key, sizeof key, "\"address\":\"%s\"", address);
	lock_name(trace, key, "name", name, sizeof name);
	char *text = cli_report_of(trace, false);
	const char *site = strstr(text, name);
	cr_assert_not_null(site, "%s (%s, %s) not among the contended objects:\n%s", lock, address,
			   name, text);
	cr_assert_not_null(strstr(site, kind), "%s", text);
	snprintf(line, sizeof line, "held by %s (thread ", holder);
	const char *held = strstr(site, line);
	cr_assert_not_null(held, "'%s' not in:\n%s", line, text);
	snprintf(line, sizeof line, " during %u %s", waits, waits == 1 ? "wait" : "waits");
	cr_assert_not_null(strstr(held, line), "'%s' not in:\n%s", line, held);
	snprintf(line, sizeof line, "released to %u of them at:\n", waits);
	const char *releases = strstr(held, line);
	cr_assert_not_null(releases, "'%s' not in:\n%s", line, held);
	snprintf(line, sizeof line, "        %s (", released_in);
	const char *frame = strstr(releases, line), *end = strstr(releases, "\n\n");
	cr_assert(frame && end && frame < end, "'%s' not in the release's stack:\n%s", line, held);
	cr_assert_not_null(strstr(site, waiter), "the waits are %s's:\n%s", waiter, text);
	cr_assert_null(strstr(text, "Deadlock"), "%s", text);
	free(text);

	char *json = cli_report_of(trace, true);
	snprintf(line, sizeof line, "\"address\":\"%s\",\"kind\":\"%s\"", address, kind);
	site = strstr(json, line);
	cr_assert_not_null(site, "'%s' not in %s", line, json);
	held = strstr(site, "\"holders\":[{\"serial\":");
	cr_assert_not_null(held, "%s", site);
	snprintf(line, sizeof line, "\"name\":\"%s\",\"waits\":%u,", holder, waits);
	cr_assert_not_null(strstr(held, line), "'%s' not in %s", line, held);
	snprintf(line, sizeof line, "\"releases\":[{\"count\":%u,\"frames\":[", waits);
	releases = strstr(held, line);
	cr_assert_not_null(releases, "'%s' not in %s", line, held);
	snprintf(line, sizeof line, "{\"func\":\"%s\",", released_in);
	frame = strstr(releases, line);
	cr_assert(frame && frame < strchr(releases + strlen("\"releases\":["), ']'),
		  "'%s' not in the release's frames: %s", line, releases);
	cr_assert_not_null(strstr(json, "\"wait_for\":[],\"deadlocks\":[]"), "%s", json);
	free(json);
	go_readers_accept(dir, trace);
	cli_result_free(&r);
}

Test(locks, a_mutex_holder_named, .timeout = 240)
{
	for (int loaded = 0; loaded < 2; loaded++)
		holder_named(locks, "holder", "lock0", "mutex", "holder", "waiter_main", 3,
			     "holder_main", loaded);
}

Test(locks, holders_of_every_mutex_type_named, .timeout = 240)
{
	static const char *const modes[] = {"holder-recursive", "holder-errorcheck", "holder-pi",
					    "holder-robust"};
	for (int loaded = 0; loaded < 2; loaded++)
		for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
			holder_named(locks, modes[i], "lock0", "mutex", "holder", "waiter_main", 3,
				     "holder_main", loaded);
}

Test(locks, a_rwlock_held_by_its_writer, .timeout = 240)
{
	for (int loaded = 0; loaded < 2; loaded++)
		holder_named(locks, "rwlock", "rwlock", "rwlock", "writer", "reader_main", 1,
			     "writer_main", loaded);
}

#ifdef GT_TEST_LOCKS_CPP
Test(locks, a_cpp_std_mutex_holder_named, .timeout = 240)
{
	for (int loaded = 0; loaded < 2; loaded++)
		holder_named(GT_TEST_LOCKS_CPP, "holder", "lock0", "mutex", "holder", "waiter_main()",
			     3, "holder_main()", loaded);
}
#endif

/* n threads named names[i], thread i holding lock i and waiting for lock (i + 1) % n: the
 * cycle in the summary and in the report, every thread and lock named. */
static void deadlock_found(const char *mode, size_t n, const char *const *names, bool loaded)
{
	char dir[512], trace[600], address[3][32], line[768], expected[64];
	struct cli_result r;
	struct cli_load load;
	cli_tempdir(dir, sizeof dir);
	cli_load_start(&load, loaded);
	/* 8 s: room for a loaded machine to reach the deadlock (it says so on stdout) */
	run_both(locks, mode, "8", dir, trace, sizeof trace, &r);
	cli_load_stop(&load);
	cr_assert_eq(r.status, 124, "stopped by timeout: %s", r.err);
	snprintf(expected, sizeof expected, "deadlocked: %zu threads\n", n);
	cr_assert_str_eq(r.out, expected, "it deadlocked before the timeout: %s", r.err);
	char lock[3][256];
	for (size_t i = 0; i < n; i++) {
		char name[8], key[128];
		snprintf(name, sizeof name, "lock%zu", i);
		lock_address(&r, name, address[i], sizeof address[i]);
		snprintf(key, sizeof key, "\"object\":\"%s\"", address[i]);
		lock_name(trace, key, "object_name", lock[i], sizeof lock[i]);
	}
	/* the summary: the cycle, each thread waiting for the next one's lock */
	snprintf(line, sizeof line, "gotrace:   deadlock: %zu threads, each waiting for a lock the "
		 "next one holds\n", n);
	const char *summary = strstr(r.err, line);
	cr_assert_not_null(summary, "'%s' not in:\n%s", line, r.err);
	char *text = cli_report_of(trace, false);
	snprintf(line, sizeof line, "Deadlock 1: %zu threads, each waiting for a lock the next one "
		 "holds\n", n);
	const char *deadlock = strstr(text, line);
	cr_assert_not_null(deadlock, "'%s' not in:\n%s", line, text);
	cr_assert_null(strstr(text, "Deadlock 2"), "one cycle: %s", text);
	const char *graph = strstr(text, "Wait-for graph when the capture ends");
	cr_assert(graph && graph < deadlock, "%s", text);
	for (size_t i = 0; i < n; i++) {
		const char *next = names[(i + 1) % n];
		snprintf(line, sizeof line, "%s (thread ", names[i]);
		const char *at = strstr(summary, line);
		cr_assert_not_null(at, "'%s' not in:\n%s", line, summary);
		snprintf(line, sizeof line, " waits for mutex %s held by %s (thread ",
			 lock[(i + 1) % n], next);
		cr_assert_not_null(strstr(at, line), "'%s' not in:\n%s", line, summary);

		at = strstr(deadlock, names[i]);
		cr_assert_not_null(at, "%s not in:\n%s", names[i], deadlock);
		snprintf(line, sizeof line, " waits for mutex %s, held by %s (thread ",
			 lock[(i + 1) % n], next);
		cr_assert_not_null(strstr(at, line), "'%s' not in:\n%s", line, deadlock);
		cr_assert_not_null(strstr(at, "cycle_main (locks.c:"), "its blocking stack: %s", at);
		snprintf(line, sizeof line, "%s (thread ", names[i]);
		at = strstr(graph, line);
		cr_assert(at && at < deadlock, "%s not in the graph:\n%s", names[i], graph);
		snprintf(line, sizeof line, "held by %s (thread ", next);
		cr_assert_not_null(strstr(at, line), "'%s' not in:\n%s", line, at);
	}
	free(text);
	char *json = cli_report_of(trace, true);
	const char *cycle = strstr(json, "\"deadlocks\":[{\"threads\":[");
	cr_assert_not_null(cycle, "%s", json);
	for (size_t i = 0; i < n; i++) {
		snprintf(line, sizeof line, "\"name\":\"%s\",\"waits_for\":{\"kind\":\"mutex\","
			 "\"object\":\"%s\",\"object_name\":\"%s\"},\"held_by\":", names[i],
			 address[(i + 1) % n], lock[(i + 1) % n]);
		cr_assert_not_null(strstr(cycle, line), "'%s' not in %s", line, cycle);
	}
	free(json);
	go_readers_accept(dir, trace);
	cli_result_free(&r);
}

Test(locks, a_two_thread_deadlock_found, .timeout = 240)
{
	static const char *const names[] = {"alpha", "beta"};
	for (int loaded = 0; loaded < 2; loaded++)
		deadlock_found("deadlock2", 2, names, loaded);
}

Test(locks, a_three_thread_deadlock_found, .timeout = 240)
{
	static const char *const names[] = {"t0", "t1", "t2"};
	for (int loaded = 0; loaded < 2; loaded++)
		deadlock_found("deadlock3", 3, names, loaded);
}
