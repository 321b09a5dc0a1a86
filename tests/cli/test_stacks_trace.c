/* gotrace stacks -o FILE (issue 25, item 4): the snapshot of a program in a known state
 * (stacks_target.c) as a Go trace, in go1.22 and go1.19, read by every Go reader (the whole
 * oracle: parse dumps, viewer pages, profiles) and asserted on what each reader parsed: one
 * goroutine per thread; each blocked thread's goroutine blocked with the lock's reason (its
 * name where the format has one), its stack ending in the program's function, and the log
 * that names the holder; a deadlock's threads in one task; a pipe reader in its system call;
 * 40 pool threads on the condition variable.  The target is unharmed: a counting program
 * traced while it counts prints and exits as it does untraced. */
#include "cli_support.h"
#include "stacks_running.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "../preload/targets/wait_blocked.h"
#include "../support/oracle.h"
#include "../support/oracle_v2.h"

static const char target[] = GT_TEST_STACKS_TARGET;

/* `gotrace stacks [--format FORMAT] -o DIR/FORMAT.trace PID`, asserting it succeeded and
 * still printed its text; the trace (read by every Go reader of its format: the whole
 * oracle passes) into trace. */
static void stacks_trace(pid_t pid, const char *format, const char *dir, char *trace,
			 size_t size)
{
	char pid_text[16], name[32];
	snprintf(pid_text, sizeof pid_text, "%d", (int)pid);
	snprintf(name, sizeof name, "%s.trace", format);
	cli_path(trace, size, dir, name);
	const char *argv[] = {cli_gotrace, "stacks", "--format", format, "-o", trace, pid_text,
			      NULL};
	struct cli_result out;
	cli_run(&out, argv, NULL);
	cr_assert_eq(out.status, 0, "%s", out.err);
	cr_assert(strstr(out.out, " (stacks_target): "), "%s", out.out);
	cli_result_free(&out);
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace, false, &report), 0, "%s", report ? report : "");
	free(report);
}

/* The readers whose parse dumps a test asserts on (oracle_v2.h): 1.22, 1.23 and 1.26 read
 * go1.22 natively; 1.23 and 1.26 read go1.19 through their converter (Go 1.19's own stream
 * is gt_events_parse_119's; 1.22's old parser is in the oracle above). */
static const char *const native_readers[] = {"1.22", "1.23", "1.26"};
static const char *const converting_readers[] = {"1.23", "1.26"};

static char *dump_of(const char *trace, const char *version)
{
	char *dump = NULL;
	cr_assert_eq(gt_dump_v2(trace, version, &dump, NULL), 0, "Go %s rejects %s", version,
		     trace);
	return dump;
}

/* The goroutines a dump shows: the distinct GoIDs of its state transitions (a reader that
 * converts go1.19 finds some "Undetermined", others created). */
static size_t goroutines(const char *dump)
{
	long seen[256];
	size_t n = 0;
	for (const char *p = dump; (p = strstr(p, " StateTransition ")) != NULL; p++) {
		const char *id = strstr(p, " GoID="), *eol = strchr(p, '\n');
		if (!id || (eol && id > eol))
			continue;   /* a P's */
		long g = strtol(id + 6, NULL, 10);
		bool known = false;
		for (size_t k = 0; k < n && !known; k++)
			known = seen[k] == g;
		if (!known && n < sizeof seen / sizeof *seen)
			seen[n++] = g;
	}
	return n;
}

/* The goroutine of the first event matching match (its "G=N"), -1 when none. */
static long goroutine_of(const char *dump, const char *match)
{
	char *header = gt_dump_123_header(dump, match, 0);
	const char *g = header ? strstr(header, " G=") : NULL;
	long id = g ? strtol(g + 3, NULL, 10) : -1;
	free(header);
	return id;
}

/* Goroutine g went from running to state once, for reason (NULL: any), with fn in its
 * stack then. */
static void assert_went(const char *dump, const char *version, long g, const char *state,
			const char *reason, const char *fn)
{
	char match[64];
	snprintf(match, sizeof match, "GoID=%ld Running->%s", g, state);
	cr_assert_eq(gt_dump_123_count(dump, match), 1, "Go %s: no '%s' once in:\n%s", version,
		     match, dump);
	char *header = gt_dump_123_header(dump, match, 0);
	if (reason)
		cr_assert(strstr(header, reason), "Go %s: no %s in %s", version, reason, header);
	free(header);
	char *stack = gt_dump_123_stack(dump, match, 0, "TransitionStack");
	char frame[64];
	snprintf(frame, sizeof frame, "%s ", fn);
	cr_assert(stack && strstr(stack, frame), "Go %s: no %s in the stack of '%s':\n%s",
		  version, fn, match, stack ? stack : "(none)");
	free(stack);
}

/* Thread waiter's goroutine (found by its log, which names the holder) blocked on lock in
 * function fn, in the deadlock's task 1.  by_m: the dump names threads (go1.22). */
static void assert_deadlocked(const char *dump, const char *version, bool by_m, int waiter,
			      int holder, const char *lock, const char *fn)
{
	char log[96];
	snprintf(log, sizeof log, "Log Task=1 %s, held by thread %d\"", lock, holder);
	long g = goroutine_of(dump, log);
	cr_assert_geq(g, 1, "Go %s: no '%s' in:\n%s", version, log, dump);
	if (by_m) {
		snprintf(log, sizeof log, "M=%d G=%ld Log Task=1", waiter, g);
		cr_assert_eq(gt_dump_123_count(dump, log), 1, "Go %s: no '%s' in:\n%s", version,
			     log, dump);
	}
	char reason[96];
	snprintf(reason, sizeof reason, "Reason=\"sync: pthread_mutex_lock %s\"", lock);
	assert_went(dump, version, g, "Waiting", by_m ? reason : "Reason=\"sync\"", fn);
}

Test(stacks_trace, deadlock_blocks_both_threads_on_the_named_locks, .timeout = 240)
{
	char dir[512], trace[600];
	cli_tempdir(dir, sizeof dir);
	struct running r;
	start_program(&r, target, "deadlock", NULL);
	int a, b;   /* a holds lock_a and waits for lock_b; b the other way round */
	cr_assert_eq(sscanf(r.ready, "ready %d %d", &a, &b), 2);

	stacks_trace(r.pid, "go1.22", dir, trace, sizeof trace);
	for (size_t v = 0; v < sizeof native_readers / sizeof *native_readers; v++) {
		char *dump = dump_of(trace, native_readers[v]);
		cr_assert_eq(goroutines(dump), 3, "Go %s:\n%s", native_readers[v], dump);
		assert_deadlocked(dump, native_readers[v], true, a, b, "lock_b", "take_a_then_b");
		assert_deadlocked(dump, native_readers[v], true, b, a, "lock_a", "take_b_then_a");
		cr_assert_eq(gt_dump_123_count(dump, "TaskBegin ID=1 Type=\"deadlock 1\""), 1,
			     "%s", dump);
		free(dump);
	}

	stacks_trace(r.pid, "go1.19", dir, trace, sizeof trace);
	for (size_t v = 0; v < sizeof converting_readers / sizeof *converting_readers; v++) {
		char *dump = dump_of(trace, converting_readers[v]);
		cr_assert_eq(goroutines(dump), 3, "Go %s:\n%s", converting_readers[v], dump);
		assert_deadlocked(dump, converting_readers[v], false, a, b, "lock_b",
				  "take_a_then_b");
		assert_deadlocked(dump, converting_readers[v], false, b, a, "lock_a",
				  "take_b_then_a");
		free(dump);
	}
	struct gt_events *ev = gt_events_parse_119(trace);
	cr_assert(ev, "Go 1.19 rejects %s", trace);
	cr_assert_eq(gt_events_count(ev, "GoCreate", GT_ANY, GT_ANY), 3);
	cr_assert_eq(gt_events_count(ev, "GoBlockSync", GT_ANY, GT_ANY), 2);
	for (ssize_t i = 0; (i = gt_events_find(ev, (size_t)i, "UserLog", GT_ANY, GT_ANY)) >= 0;
	     i++) {
		char message[128];
		if (!gt_event_string(&ev->ev[i], "message", message, sizeof message) ||
		    !strstr(message, "held by thread"))
			continue;
		cr_assert_geq(gt_events_find(ev, (size_t)i, "GoBlockSync", ev->ev[i].g, GT_ANY), 0,
			      "the goroutine that logged '%s' does not block", message);
	}
	gt_events_free(ev);
	/* still deadlocked, both threads still asleep on the other's lock */
	cr_assert(gt_proc_blocked_in(r.pid, a, SYS_futex, 0, UINTPTR_MAX));
	cr_assert(gt_proc_blocked_in(r.pid, b, SYS_futex, 0, UINTPTR_MAX));
	finish(&r, true);
}

Test(stacks_trace, pipe_reader_in_its_system_call, .timeout = 240)
{
	char dir[512], trace[600];
	cli_tempdir(dir, sizeof dir);
	struct running r;
	start_program(&r, target, "pipe", NULL);
	int reader, fd;
	cr_assert_eq(sscanf(r.ready, "ready %d %d", &reader, &fd), 2);
	stacks_trace(r.pid, "go1.22", dir, trace, sizeof trace);
	for (size_t v = 0; v < sizeof native_readers / sizeof *native_readers; v++) {
		char *dump = dump_of(trace, native_readers[v]);
		cr_assert_eq(goroutines(dump), 2, "Go %s:\n%s", native_readers[v], dump);
		char match[64];
		snprintf(match, sizeof match, "M=%d Log", reader);
		long g = goroutine_of(dump, match);
		cr_assert_geq(g, 1, "Go %s: no '%s' in:\n%s", native_readers[v], match, dump);
		char *log = gt_dump_123_header(dump, match, 0);
		char said[64];
		snprintf(said, sizeof said, "Message=\"sleeping in read of fd %d\"", fd);
		cr_assert(strstr(log, said), "Go %s: %s", native_readers[v], log);
		free(log);
		assert_went(dump, native_readers[v], g, "Syscall", NULL, "read_pipe");
		free(dump);
	}
	stacks_trace(r.pid, "go1.19", dir, trace, sizeof trace);
	struct gt_events *ev = gt_events_parse_119(trace);
	cr_assert(ev, "Go 1.19 rejects %s", trace);
	cr_assert_eq(gt_events_count(ev, "GoCreate", GT_ANY, GT_ANY), 2);
	/* both threads sleep in a system call: the main thread in pause */
	cr_assert_eq(gt_events_count(ev, "GoSysBlock", GT_ANY, GT_ANY), 2);
	gt_events_free(ev);
	cr_assert(gt_proc_blocked_in(r.pid, reader, SYS_read, (uintptr_t)fd, (uintptr_t)fd + 1));
	finish(&r, true);
}

Test(stacks_trace, pool_of_40_waits_on_the_condition_variable, .timeout = 240)
{
	char dir[512], trace[600];
	cli_tempdir(dir, sizeof dir);
	struct running r;
	start_program(&r, target, "pool", NULL);
	stacks_trace(r.pid, "go1.22", dir, trace, sizeof trace);
	static const char waits[] = "Running->Waiting Reason=\"sync: pthread_cond_wait pool_cond\"";
	for (size_t v = 0; v < sizeof native_readers / sizeof *native_readers; v++) {
		char *dump = dump_of(trace, native_readers[v]);
		cr_assert_eq(goroutines(dump), 41, "Go %s:\n%s", native_readers[v], dump);
		cr_assert_eq(gt_dump_123_count(dump, waits), 40, "Go %s:\n%s", native_readers[v],
			     dump);
		for (size_t k = 0; k < 40; k++) {
			char *stack = gt_dump_123_stack(dump, waits, k, "TransitionStack");
			cr_assert(stack && strstr(stack, "pool_worker "), "Go %s, wait %zu:\n%s",
				  native_readers[v], k, stack ? stack : "(none)");
			free(stack);
		}
		free(dump);
	}
	stacks_trace(r.pid, "go1.19", dir, trace, sizeof trace);
	struct gt_events *ev = gt_events_parse_119(trace);
	cr_assert(ev, "Go 1.19 rejects %s", trace);
	cr_assert_eq(gt_events_count(ev, "GoCreate", GT_ANY, GT_ANY), 41);
	cr_assert_eq(gt_events_count(ev, "GoBlockCond", GT_ANY, GT_ANY), 40);
	gt_events_free(ev);
	finish(&r, true);
}

/* Traced while it counts, the counting program prints and exits as it does untraced; its
 * four counting threads log that they run, in function count. */
Test(stacks_trace, counting_program_traced_ends_as_untraced, .timeout = 240)
{
	const char *count = "1000000000";
	struct running r;
	start_program(&r, target, "count", count);
	char plain[128] = "";
	cr_assert(fgets(plain, sizeof plain, r.out) != NULL);
	int plain_status = finish(&r, false);
	cr_assert_eq(plain_status, 3);

	char dir[512], trace[600];
	cli_tempdir(dir, sizeof dir);
	start_program(&r, target, "count", count);
	stacks_trace(r.pid, "go1.22", dir, trace, sizeof trace);
	char traced[128] = "";
	cr_assert(fgets(traced, sizeof traced, r.out) != NULL);
	cr_assert_str_eq(traced, plain);
	cr_assert_eq(finish(&r, false), plain_status);

	static const char running[] = "Log Category=\"gotrace stacks\" Message=\"running\"";
	for (size_t v = 0; v < sizeof native_readers / sizeof *native_readers; v++) {
		char *dump = dump_of(trace, native_readers[v]);
		cr_assert_eq(goroutines(dump), 5, "Go %s:\n%s", native_readers[v], dump);
		size_t logs = gt_dump_123_count(dump, running), counting = 0;
		cr_assert_geq(logs, 4, "Go %s:\n%s", native_readers[v], dump);
		for (size_t k = 0; k < logs; k++) {
			char *stack = gt_dump_123_stack(dump, running, k, "Stack");
			counting += stack && strstr(stack, "count ");
			free(stack);
		}
		cr_assert_eq(counting, 4, "Go %s:\n%s", native_readers[v], dump);
		free(dump);
	}
}

Test(stacks_trace, one_snapshot_only)
{
	char dir[512], trace[600];
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "samples.trace");
	struct running r;
	start_program(&r, target, "pipe", NULL);
	char pid_text[16];
	snprintf(pid_text, sizeof pid_text, "%d", (int)r.pid);
	const char *argv[] = {cli_gotrace, "stacks", "--count", "3", "-o", trace, pid_text, NULL};
	struct cli_result out;
	cli_run(&out, argv, NULL);
	cr_assert_eq(out.status, 2, "%s", out.err);
	cr_assert_str_eq(out.err, "gotrace stacks: -o writes one snapshot, not --count 3 "
			 "samples: sample without -o to see which threads move, then take the "
			 "trace\n");
	cr_assert_str_eq(out.out, "");
	cr_assert(!cli_file_exists(trace));
	cli_result_free(&out);
	finish(&r, true);
}

/* --format is the trace's: refused without -o, and GOTRACE_FORMAT (bad here) is not read
 * for the text alone. */
Test(stacks_trace, format_only_with_output)
{
	struct running r;
	start_program(&r, target, "pipe", NULL);
	char pid_text[16];
	snprintf(pid_text, sizeof pid_text, "%d", (int)r.pid);
	const char *with_format[] = {cli_gotrace, "stacks", "--format", "go1.19", pid_text, NULL};
	struct cli_result out;
	cli_run(&out, with_format, NULL);
	cr_assert_eq(out.status, 2, "%s", out.err);
	cr_assert_str_eq(out.err, "gotrace stacks: --format is the format of the trace -o FILE "
			 "writes\n");
	cli_result_free(&out);
	const char *plain[] = {cli_gotrace, "stacks", pid_text, NULL};
	const char *bad_env[] = {"GOTRACE_FORMAT=go0.1", NULL};
	cli_run(&out, plain, bad_env);
	cr_assert_eq(out.status, 0, "%s", out.err);
	cr_assert(strstr(out.out, "  read_pipe\n"), "%s", out.out);
	cli_result_free(&out);
	finish(&r, true);
}
