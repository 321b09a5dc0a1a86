/* Hold times (issue 23, item 3) on programs that measure their own holds (lock_holds.c,
 * lock_holds_cpp.cpp): each run under `gotrace run --locks=all` is compared with its
 * untraced run (same status, same stdout but for its "time:" lines), then its report: the
 * lock's acquisitions, holds, try-locks, reads and EOWNERDEAD are the program's counts, no
 * release is unpaired, its mean hold is within 10% of the program's own mean, its top holder
 * is the holder thread with the program's count and mean, its top hold site is in the
 * holder's function; the condition wait's retake of its mutex is counted; the holder the
 * waits named says where it took the lock; a robust mutex's dead owner still holds it at the
 * end.  The threads of a deadlock (locks.c) are said to hold their locks at the end, and
 * where they took them.  Every Go reader reads the trace.  Each program runs idle and with a
 * busy loop on every CPU. */
#include "cli_support.h"
#include "oracle.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The number after "key" (key=, or "key": in JSON) in text, which must have it. */
static unsigned long long number_after(const char *text, const char *key)
{
	const char *at = strstr(text, key);
	cr_assert_not_null(at, "%s not in: %s", key, text);
	return strtoull(at + strlen(key), NULL, 10);
}

/* stdout without its "time:" lines (malloc'd). */
static char *without_times(const char *out)
{
	char *kept = calloc(1, strlen(out) + 1);
	cr_assert_not_null(kept);
	for (const char *line = out; *line;) {
		size_t len = strcspn(line, "\n");
		len += line[len] == '\n';
		if (strncmp(line, "time:", 5) != 0)
			strncat(kept, line, len);
		line += len;
	}
	return kept;
}

/* "{"address":"<address of name>","kind":"kind"" of the program's stderr's "name=0x...". */
static void lock_key(const struct cli_result *r, const char *name, const char *kind, char *out,
		     size_t size)
{
	char key[32];
	snprintf(key, sizeof key, " %s=", name);
	const char *at = strstr(r->err, key);
	cr_assert_not_null(at, "%s not in: %s", key, r->err);
	at += strlen(key);
	snprintf(out, size, "{\"address\":\"%.*s\",\"kind\":\"%s\",", (int)strcspn(at, " \n"), at,
		 kind);
}

static void within_10_percent(unsigned long long measured, unsigned long long truth,
			      const char *what)
{
	double off = ((double)measured - (double)truth) / (double)truth;
	cr_assert(off < 0.10 && off > -0.10,
		  "%s: the report's %llu ns, the program's %llu ns "
		  "(%.1f%% off)",
		  what, measured, truth, 100 * off);
}

/* The lock's entry in the report's holds, and in its contended objects. */
static void lock_reported(const char *json, const char *key, const struct cli_result *run,
			  const char *mode, const char *holder, const char *holder_func)
{
	const char *holds = strstr(json, ",\"holds\":{\"locks\":[");
	cr_assert_not_null(holds, "%s", json);
	const char *lock = strstr(holds, key);
	cr_assert_not_null(lock, "%s not in %s", key, holds);
	const char *holders = strstr(lock, "\"holders\":[");
	const char *end = holders ? strstr(holders, "]}") : NULL; /* its holders' end */
	cr_assert_not_null(end, "%s", lock);
	char *entry = strndup(lock, (size_t)(end - lock) + 2);
	const char *counts = strstr(run->out, ": acquisitions=");
	cr_assert_not_null(counts, "%s", run->out);
	cr_assert_eq(number_after(entry, "\"acquisitions\":"),
		     number_after(counts, "acquisitions="), "%s: %s", run->out, entry);
	cr_assert_eq(number_after(entry, "\"holds\":"), number_after(counts, "holds="), "%s: %s",
		     run->out, entry);
	cr_assert_eq(number_after(entry, "\"reads\":"), number_after(counts, "reads="), "%s",
		     entry);
	cr_assert_eq(number_after(entry, "\"ownerdead\":"), number_after(counts, "ownerdead="),
		     "%s", entry);
	cr_assert_eq(number_after(entry, "\"try_locks\":"), 1, "%s", entry);
	cr_assert_eq(number_after(entry, "\"unmatched_releases\":"), 0, "%s", entry);
	cr_assert_geq(number_after(entry, "\"waited\":"), 1, "contender-1 waited: %s", entry);
	bool robust = strcmp(mode, "robust") == 0;
	cr_assert_eq(number_after(entry, "\"held_at_end\":"), robust, "%s", entry);
	within_10_percent(number_after(entry, "\"mean_ns\":"), number_after(run->out, "mean_ns="),
			  "mean hold");

	/* the top holder: the holder thread, with its count and mean */
	char want[128];
	snprintf(want, sizeof want, "\"holders\":[{\"serial\":");
	const char *top = strstr(entry, want);
	cr_assert_not_null(top, "%s", entry);
	snprintf(want, sizeof want, "\"name\":\"%s\",\"holds\":", holder);
	const char *name = strstr(top, want);
	cr_assert(name && name < strchr(top, '}'), "the top holder is %s: %s", holder, top);
	unsigned long long n = number_after(name, "\"holds\":");
	cr_assert_eq(n, number_after(counts, "holder_holds="), "%s", entry);
	within_10_percent(number_after(name, "\"total_ns\":") / n,
			  number_after(run->out, "holder_mean_ns="), "the holder's mean hold");
	/* the top hold site: in the holder's function */
	const char *site = strstr(entry, "\"sites\":[{\"holds\":");
	snprintf(want, sizeof want, "{\"func\":\"%s\",", holder_func);
	const char *func = site ? strstr(site, want) : NULL;
	cr_assert(func && func < strstr(site, "]}"), "%s not in the top site: %s", want, entry);
	free(entry);

	/* the holder the waits named: where it took the lock */
	const char *object = strstr(json, "\"objects\":[");
	object = object ? strstr(object, key) : NULL;
	cr_assert(object && object < holds, "%s not among the contended objects: %s", key, json);
	snprintf(want, sizeof want, "\"name\":\"%s\",\"waits\":", holder);
	const char *named = strstr(object, want);
	cr_assert(named && named < holds, "%s not a holder of %s", holder, object);
	const char *taken = strstr(named, "\"taken_at\":[{");
	const char *next_holder = strstr(named, "{\"serial\":");
	snprintf(want, sizeof want, "{\"func\":\"%s\",", holder_func);
	func = taken ? strstr(taken, want) : NULL;
	cr_assert(taken && (!next_holder || taken < next_holder) && func &&
			  func < strstr(taken, "]}"),
		  "where %s took it: %s", holder, named);
}

/* Runs plain_argv then traced_argv, with a busy loop on every CPU when loaded. */
static void run_both(const char *const *plain_argv, const char *const *traced_argv, bool loaded,
		     struct cli_result *plain, struct cli_result *traced)
{
	struct cli_load load;
	cli_load_start(&load, loaded);
	cli_run(plain, plain_argv, NULL);
	cli_run(traced, traced_argv, NULL);
	cli_load_stop(&load);
}

static void go_readers_accept(const char *trace)
{
	char *oracle = NULL;
	cr_assert_eq(gt_oracle_check(trace, true, &oracle), 0, "%s", oracle ? oracle : "");
	free(oracle);
}

/* The report's mean holds are within 10% of the program's. */
static void holds_measured(const char *program, const char *mode, const char *kind,
			   const char *holder, const char *holder_func, bool loaded)
{
	char dir[512], trace[600], key[128];
	struct cli_result plain, traced;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "holds.trace");
	const char *plain_argv[] = { program, mode, NULL };
	const char *traced_argv[] = { cli_gotrace, "run", "--locks=all", "--keep-capture",
				      "-o",        trace, "--",          program,
				      mode,        NULL };
	run_both(plain_argv, traced_argv, loaded, &plain, &traced);
	cr_assert_eq(plain.status, 0, "%s%s", plain.out, plain.err);
	cr_assert_eq(traced.status, plain.status, "%s", traced.err);
	char *plain_out = without_times(plain.out), *traced_out = without_times(traced.out);
	cr_assert_str_eq(traced_out, plain_out, "stderr: %s", traced.err);
	free(plain_out);
	free(traced_out);
	if (strcmp(mode, "errorcheck") == 0)
		cr_assert_not_null(strstr(plain.out, "relock: EDEADLK\n") &&
					   strstr(plain.out, ": EPERM\n"),
				   "%s", plain.out);

	char *json = cli_report_of(trace, true);
	lock_key(&traced, strcmp(kind, "rwlock") == 0 ? "hold_rwlock" : "hold_lock", kind, key,
		 sizeof key);
	lock_reported(json, key, &traced, mode, holder, holder_func);
	/* the main thread's condition wait took done_lock back as often as it returned */
	char done[128];
	lock_key(&traced, "done_lock", "mutex", done, sizeof done);
	const char *done_lock = strstr(strstr(json, ",\"holds\":{\"locks\":["), done);
	cr_assert_not_null(done_lock, "%s", json);
	cr_assert_eq(number_after(done_lock, "\"cond_retakes\":"),
		     number_after(traced.err, "cond_waits="), "%s", done_lock);
	const char *at_end = strstr(json, "],\"unmatched_releases\":0,\"held_at_end\":[");
	cr_assert_not_null(at_end, "%s", json);
	if (strcmp(mode, "robust") == 0)
		cr_assert_not_null(strstr(at_end, "\"name\":\"doomed\",\"thread_ended\":true,"
						  "\"kind\":\"mutex\","),
				   "%s", at_end);
	else
		cr_assert_not_null(strstr(at_end, "\"held_at_end\":[]}"), "%s", at_end);
	free(json);

	/* the text: the lock's row and its top holder */
	char *text = cli_report_of(trace, false), name[256];
	json = cli_report_of(trace, true);
	const char *field = strstr(strstr(strstr(json, ",\"holds\":{"), key), "\"name\":\"");
	snprintf(name, sizeof name, "%.*s", (int)strcspn(field + 8, "\""), field + 8);
	free(json);
	const char *section = strstr(text, "\nLock holds (--locks=all");
	cr_assert_not_null(section, "%s", text);
	char row[512];
	snprintf(row, sizeof row, " %s ", name);
	const char *line = strstr(section, row);
	cr_assert_not_null(line, "%s not in:\n%s", row, section);
	char row_kind[16];
	unsigned long long acquired;
	cr_assert_eq(sscanf(line + strlen(row), "%15s %llu", row_kind, &acquired), 2, "%s", line);
	cr_assert_str_eq(row_kind, kind);
	cr_assert_eq(acquired, number_after(traced.out, "acquisitions="), "%s", line);
	snprintf(row, sizeof row, "\n      held by %s (thread ", holder);
	const char *first_holder = strstr(line, "\n      held by ");
	cr_assert(first_holder && first_holder == strstr(line, row), "%s", line);
	free(text);
	go_readers_accept(trace);
	cli_result_free(&plain);
	cli_result_free(&traced);
}

Test(lock_holds, a_default_mutex, .timeout = 240)
{
	for (int loaded = 0; loaded < 2; loaded++)
		holds_measured(GT_TEST_LOCK_HOLDS, "mutex", "mutex", "holder", "holder_main", loaded);
}

Test(lock_holds, every_mutex_type, .timeout = 480)
{
	static const char *const modes[] = { "recursive", "errorcheck", "pi", "robust" };
	for (int loaded = 0; loaded < 2; loaded++)
		for (size_t i = 0; i < sizeof modes / sizeof modes[0]; i++)
			holds_measured(GT_TEST_LOCK_HOLDS, modes[i], "mutex", "holder",
				       "holder_main", loaded);
}

Test(lock_holds, a_rwlock_read_and_written, .timeout = 240)
{
	for (int loaded = 0; loaded < 2; loaded++)
		holds_measured(GT_TEST_LOCK_HOLDS, "rwlock", "rwlock", "writer", "holder_main",
			       loaded);
}

#ifdef GT_TEST_LOCK_HOLDS_CPP
Test(lock_holds, a_cpp_std_mutex, .timeout = 240)
{
	for (int loaded = 0; loaded < 2; loaded++)
		holds_measured(GT_TEST_LOCK_HOLDS_CPP, "mutex", "mutex", "holder", "holder_main()",
			       loaded);
}
#endif

/* The bundled example under --locks=all: its report's JSON passes the report's checker,
 * hold times included. */
Test(lock_holds, the_example_json, .timeout = 240)
{
	char dir[512], trace[600], json[700];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "workpool.trace");
	const char *run[] = { cli_gotrace, "run", "--locks=all", "--keep-capture",
			      "-o",        trace, "--",          cli_workpool,
			      "96",        "4",   NULL };
	cli_run(&r, run, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cli_result_free(&r);
	char *out = cli_report_of(trace, true);
	cli_write_file(json, sizeof json, dir, "report.json", out);
	free(out);
	cli_check_report_json(json, "--holds 96");
}

/* locks.c's two-thread deadlock under --locks=all, stopped by timeout as untraced: the report
 * says where each holder took the lock the other waits for, in the wait-for graph and in the
 * cycle, and lists both locks as held at the end. */
static void deadlock_taken_at(bool loaded)
{
	static const char *const names[] = { "alpha", "beta" };
	char dir[512], trace[600], line[256];
	struct cli_result plain, traced;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "deadlock.trace");
	/* 8 s: room for a loaded machine to reach the deadlock (it says so on stdout) */
	const char *plain_argv[] = { "/usr/bin/timeout", "8", GT_TEST_LOCKS, "deadlock2", NULL };
	const char *traced_argv[] = { "/usr/bin/timeout", "8",  cli_gotrace, "run", "--locks=all",
				      "--keep-capture",   "-o", trace,       "--",  GT_TEST_LOCKS,
				      "deadlock2",        NULL };
	run_both(plain_argv, traced_argv, loaded, &plain, &traced);
	cr_assert_eq(plain.status, 124, "%s", plain.err);
	cr_assert_eq(traced.status, plain.status, "%s", traced.err);
	cr_assert_str_eq(traced.out, "deadlocked: 2 threads\n", "%s", traced.err);
	cr_assert_str_eq(traced.out, plain.out);
	char *text = cli_report_of(trace, false);
	const char *graph = strstr(text, "\nWait-for graph when the capture ends");
	const char *cycle = graph ? strstr(graph, "\nDeadlock 1: 2 threads") : NULL;
	const char *held = strstr(text, "\nLocks held when the capture ends\n");
	cr_assert(graph && cycle && held && held < graph, "%s", text);
	for (int i = 0; i < 2; i++) {
		snprintf(line, sizeof line, "\n  %s (thread ", names[i]);
		const char *waiter = strstr(graph, line);
		cr_assert(waiter && waiter < cycle, "%s not in the graph:\n%s", names[i], graph);
		const char *end = strchr(waiter + 1, '\n');
		const char *took = strstr(waiter, "; took it at cycle_main (locks.c:");
		cr_assert(took && took < end, "where %s took it:\n%s", names[1 - i], graph);
		snprintf(line, sizeof line, "    which %s (thread ", names[1 - i]);
		took = strstr(cycle, line);
		cr_assert_not_null(took, "'%s' not in:\n%s", line, cycle);
		cr_assert_not_null(strstr(took, " took at:\n      cycle_main (locks.c:"), "%s",
				   cycle);
		snprintf(line, sizeof line, " held by %s (thread ", names[i]);
		const char *holds = strstr(held, line);
		cr_assert(holds && holds < graph, "'%s' not in:\n%s", line, held);
	}
	cr_assert_null(strstr(cycle, "not recorded"), "%s", cycle);
	free(text);
	go_readers_accept(trace);
	cli_result_free(&plain);
	cli_result_free(&traced);
}

Test(lock_holds, where_the_threads_of_a_deadlock_took_their_locks, .timeout = 240)
{
	for (int loaded = 0; loaded < 2; loaded++)
		deadlock_taken_at(loaded);
}
