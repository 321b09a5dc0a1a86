/* Stress: what a traced program may do in bulk (gt-stress), each run untraced and traced.
 * The two runs must end the same way with the same output; every capture the traced run
 * left must be whole, convert with `gotrace convert`, and Go 1.19's and 1.23's readers must
 * accept every trace (the oracle's parse checks: the viewers would take minutes here). */
#include <criterion/criterion.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "oracle.h"
#include "traced_run.h"

static struct run plain, traced;
static struct capture cap;

static void teardown(void)
{
	capture_close(&cap);
	run_cleanup(&plain);
	run_cleanup(&traced);
}

static const char *stress_program(void)
{
	return test_program("gt-stress");
}

/* Runs gt-stress ARGS untraced and traced: same wait status, same stdout. */
static void twins(const char *const args[], const char *const env[])
{
	const char *argv[8] = {stress_program()};
	for (int i = 0; args[i] && i < 6; i++)
		argv[i + 1] = args[i];
	memset(&plain, 0, sizeof plain);
	memset(&traced, 0, sizeof traced);
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert_null(diff, "%s: %s", args[0], diff);
}

/* Every capture of the traced run converts, and both Go readers accept each trace.
 * Returns how many captures there were. */
static int convert_all(void)
{
	static char why[8192];
	int n = run_convert_all(&traced, why, sizeof why);
	cr_assert_geq(n, 0, "%s", why);
	return n;
}

/* The capture of the traced process: whole, and finalized when the process exited. */
static void open_capture(void)
{
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0, "no capture for pid %d", traced.pid);
	cr_assert_eq(cap.bad_bytes, 0u);
}

static void finalized_capture(void)
{
	open_capture();
	cr_assert(cap.hdr->flags & GT_FILE_FINALIZED);
	cr_assert_eq(capture_count(&cap, GT_CAPTURE_END, -1), 1u);
}

static size_t count_syscalls(uint32_t nr)
{
	size_t n = 0;
	for (size_t i = 0; i < cap.n; i++)
		if (cap.recs[i].h->type == GT_SYSCALL_BEGIN &&
		    ((const struct gt_p_syscall *)cap.recs[i].payload)->nr == nr)
			n++;
	return n;
}

Test(stress, live_threads_2000, .fini = teardown, .timeout = 120)
{
	const char *args[] = {"live", NULL};
	twins(args, NULL);
	cr_assert_str_eq(traced.out, "2000 threads alive at once, sum 1999000\n");
	finalized_capture();
	cr_assert_eq(capture_count(&cap, GT_THREAD_START, -1), 2000u);
	cr_assert_eq(capture_count(&cap, GT_THREAD_END, GT_END_RETURN), 2000u);
	/* all but the last arriver blocked on the barrier and were released */
	cr_assert_eq(capture_count(&cap, GT_BLOCK_BEGIN, GT_BK_BARRIER), 2001u);
	cr_assert_eq(capture_count(&cap, GT_BLOCK_END, GT_BK_BARRIER), 2001u);
	cr_assert_eq(convert_all(), 1);
}

Test(stress, thread_churn_100000, .fini = teardown, .timeout = 180)
{
	const char *args[] = {"churn", "100000", NULL};
	twins(args, NULL);
	cr_assert_str_eq(traced.out, "100000 threads created and joined, sum 350000\n");
	finalized_capture();
	cr_assert_eq(capture_count(&cap, GT_THREAD_NEW, -1), 100000u);
	cr_assert_eq(capture_count(&cap, GT_THREAD_START, -1), 100000u);
	cr_assert_eq(capture_count(&cap, GT_THREAD_END, GT_END_RETURN), 100000u);
	cr_assert_eq(convert_all(), 1);
}

Test(stress, fork_storm_under_lock_traffic, .fini = teardown, .timeout = 120)
{
	const char *args[] = {"forks", NULL};
	twins(args, NULL);
	cr_assert_str_eq(traced.out, "24 children forked under lock traffic, 0 wrong exit statuses\n");
	finalized_capture();
	cr_assert_eq(capture_count(&cap, GT_PROCESS, GT_PROC_FORK), 24u);
	/* one capture per child (each locked and started a thread), all whole and readable */
	cr_assert_eq(convert_all(), 25);
}

Test(stress, signal_storm_10khz, .fini = teardown, .timeout = 120)
{
	const char *args[] = {"signals", NULL};
	twins(args, NULL);
	cr_assert_str_eq(traced.out, "at least 10000 signals handled, main ran too\n");
	int handled = 0, locked = 0;
	cr_assert_eq(sscanf(traced.err, "signals %d locked %d", &handled, &locked), 2, "%s", traced.err);
	cr_assert_geq(handled, 10000);
	finalized_capture();
	cr_assert_eq(capture_count(&cap, GT_SYSCALL_END, -1), capture_count(&cap, GT_SYSCALL_BEGIN, -1),
		     "every interrupted call was closed");
	cr_assert_eq(convert_all(), 1);
	/* Every handler's write is recorded, or counted: as dropped, or, when the handler
	 * interrupted the tracer's work on its thread, as a call from a signal handler.  Those
	 * counts also hold the handler's unlocks that met blocked threads (at most one per
	 * lock it took): the writes missing are between the count without them and the count.
	 * (main's two lines go through stdio, whose writes are libc's own calls, not hooked.) */
	const size_t expected = (size_t)handled;
	size_t writes = count_syscalls(SYS_write), dropped = 0, reentry = 0;
	for (size_t i = 0; i < cap.n; i++) {
		const struct gt_p_notice *n = cap.recs[i].payload;
		if (cap.recs[i].h->type != GT_NOTICE)
			continue;
		dropped += cap.recs[i].h->aux == GT_NOTICE_DROPPED ? n->value : 0;
		reentry += cap.recs[i].h->aux == GT_NOTICE_REENTRY_LOST ? n->value : 0;
	}
	cr_log_info("%zu writes recorded, %zu dropped, %zu calls from handlers not recorded, %d "
		    "handlers locked", writes, dropped, reentry, locked);
	cr_assert_geq(writes, (size_t)handled * 99 / 100, "most handlers' writes are recorded");
	cr_assert_leq(writes, expected);
	cr_assert_geq(writes + dropped + reentry, expected, "%zu writes lost uncounted",
		      expected - writes - dropped - reentry);
	cr_assert_leq(writes + dropped + reentry, expected + (size_t)locked,
		      "%zu calls counted lost beyond the writes and the handlers' unlocks",
		      writes + dropped + reentry - expected - (size_t)locked);
	/* said by `convert` and `report` (text and JSON) */
	static struct run tool;
	char path[PATH_MAX + 64], trace[PATH_MAX + 64], want[96];
	snprintf(path, sizeof path, "%s/gotrace-%d.gtcap", traced.dir, (int)traced.pid);
	/* a file of ours: convert renames OUT.partial over OUT, even over /dev/null */
	snprintf(trace, sizeof trace, "%s/summary.trace", traced.dir);
	const char *conv[] = {test_gotrace(), "convert", path, "-o", trace, NULL};
	const char *rep[] = {test_gotrace(), "report", path, NULL};
	const char *json[] = {test_gotrace(), "report", "--json", path, NULL};
	cr_assert_eq(run_program(&tool, 0, conv, NULL), 0);
	if (reentry)
		cr_assert(strstr(tool.err, "calls from signal handlers that interrupted the recorder"),
			  "%s", tool.err);
	run_cleanup(&tool);
	memset(&tool, 0, sizeof tool);
	cr_assert_eq(run_program(&tool, 0, rep, NULL), 0);
	snprintf(want, sizeof want, "waits and %zu calls from signal handlers not recorded", reentry);
	if (reentry)
		cr_assert(strstr(tool.out, want), "no '%s' in %.3000s", want, tool.out);
	run_cleanup(&tool);
	memset(&tool, 0, sizeof tool);
	cr_assert_eq(run_program(&tool, 0, json, NULL), 0);
	snprintf(want, sizeof want, "\"reentry_lost\":%zu,", reentry);
	cr_assert(strstr(tool.out, want), "no %s in %.2000s", want, tool.out);
	run_cleanup(&tool);
}

Test(stress, cancel_blocked_threads, .fini = teardown, .timeout = 60)
{
	const char *args[] = {"cancel", NULL};
	twins(args, NULL);
	cr_assert_str_eq(traced.out, "cond_wait: join 0, cancelled 1, cleanup ran 1\n"
				     "sem_wait: join 0, cancelled 1, cleanup ran 1\n"
				     "read: join 0, cancelled 1, cleanup ran 1\n"
				     "nanosleep: join 0, cancelled 1, cleanup ran 1\n"
				     "pthread_join: join 0, cancelled 1, cleanup ran 1\n"
				     "pause: cancelled 1\n");
	finalized_capture();
	cr_assert_eq(capture_count(&cap, GT_THREAD_END, GT_END_CANCEL), 6u);
	/* the blocks and syscalls the cancellation cut short end with ECANCELED */
	int blocks = 0, syscalls = 0;
	for (size_t i = 0; i < cap.n; i++) {
		const struct cap_rec *r = &cap.recs[i];
		if (r->h->type == GT_BLOCK_END && ((const struct gt_p_block_end *)r->payload)->err == ECANCELED)
			blocks++;
		if (r->h->type == GT_SYSCALL_END && ((const struct gt_p_syscall_end *)r->payload)->err == ECANCELED)
			syscalls++;
	}
	/* cond_wait, sem_wait, nanosleep (a sleep block), join; read and pause are syscalls */
	cr_assert_eq(blocks, 4);
	cr_assert_eq(syscalls, 2);
	cr_assert_eq(convert_all(), 1);
}

Test(stress, dlopen_dlclose_loop, .fini = teardown, .timeout = 120)
{
	const char *args[] = {"dlopen", "200", NULL};
	twins(args, NULL);
	cr_assert_str_eq(traced.out, "200 dlopen/dlclose rounds, sum 1400\n");
	finalized_capture();
	/* each round's constructor started a thread, its destructor joined it */
	cr_assert_eq(capture_count(&cap, GT_THREAD_START, -1), 200u);
	cr_assert_eq(capture_count(&cap, GT_THREAD_END, GT_END_RETURN), 200u);
	size_t lib_modules = 0;
	for (size_t i = 0; i < cap.n; i++)
		if (cap.recs[i].h->type == GT_MODULE) {
			const struct gt_p_module *m = cap.recs[i].payload;
			const char *path = (const char *)(m + 1) + m->build_id_len;
			lib_modules += memmem(path, m->path_len, "libgt-stress-lib.so", 19) != NULL;
		}
	cr_assert_geq(lib_modules, 200u, "each load of the library is in the module map");
	cr_assert_eq(convert_all(), 1);
}

/* kill -9 at random times (seeded: a failure names its seed and delay). */
Test(stress, sigkill_at_random_times, .fini = teardown, .timeout = 120)
{
	unsigned seed = 10;
	const char *s = getenv("GT_STRESS_SEED");
	if (s)
		seed = (unsigned)strtoul(s, NULL, 0);
	srand(seed);
	for (int round = 0; round < 4; round++) {
		int delay = 1 + rand() % 300;
		const char *argv[] = {stress_program(), "mixed", NULL};
		memset(&plain, 0, sizeof plain);
		memset(&traced, 0, sizeof traced);
		plain.kill_after_ms = traced.kill_after_ms = delay;
		const char *diff = run_twins(&plain, &traced, argv, NULL);
		cr_assert_null(diff, "seed %u delay %d ms: %s", seed, delay, diff);
		cr_assert(WIFSIGNALED(traced.status) && WTERMSIG(traced.status) == SIGKILL);
		cr_assert_str_eq(traced.out, "running\n");
		open_capture();
		cr_assert_eq(cap.hdr->flags & GT_FILE_FINALIZED, 0u);
		cr_assert_geq(capture_count(&cap, GT_THREAD_START, -1), 4u, "seed %u delay %d ms", seed, delay);
		capture_close(&cap);
		cr_assert_eq(convert_all(), 1, "seed %u delay %d ms", seed, delay);
		run_cleanup(&plain);
		run_cleanup(&traced);
	}
}

/* Stacks walked by the unwind rules kept per return address (frame_rules.c) are the stacks
 * libunwind walks, as they were before the rules.  With GOTRACE_STACK_CHECK=1 libunwind
 * walks every one again and the two are compared; each process that ends says how many it
 * compared, how many differed and how many stacks were libunwind's alone (a frame the rules
 * do not cover), and how many were walks made again from a memo of the last ones.  The
 * program ends as untraced, with the same output.  None may differ; returns how many were
 * compared. */
static unsigned long walks_from_memos;

static unsigned long walks_compared(const char *program, const char *const args[])
{
	const char *argv[8] = {program};
	for (int i = 0; args[i] && i < 6; i++)
		argv[i + 1] = args[i];
	const char *env[] = {"GOTRACE_STACKS=unwind", "GOTRACE_STACK_CHECK=1", NULL};
	memset(&plain, 0, sizeof plain);
	memset(&traced, 0, sizeof traced);
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert_null(diff, "%s %s: %s", argv[0], args[0], diff);
	cr_assert(WIFEXITED(traced.status) && WEXITSTATUS(traced.status) == 0, "%s %s: status %#x",
		  argv[0], args[0], traced.status);
	unsigned long compared = 0, by_libunwind = 0, lines = 0, memos = 0;
	const char *say = "gotrace: stack check: ";
	for (const char *p = traced.err; (p = strstr(p, say)); p += strlen(say)) {
		unsigned long n, differed, alone, memo;
		cr_assert_eq(sscanf(p + strlen(say), "%lu walks by the rule cache compared with libunwind's, "
						    "%lu differed, %lu stacks walked by libunwind, "
						    "%lu walks made again from a memo",
				    &n, &differed, &alone, &memo), 4, "%.200s", p);
		cr_assert_eq(differed, 0, "%s %s: %.200s", argv[0], args[0], p);
		compared += n;
		memos += memo;
		by_libunwind += alone;
		lines++;
	}
	cr_assert_geq(lines, 1, "%s %s said nothing of its stacks: %.500s", argv[0], args[0], traced.err);
	cr_log_info("%s %s: %lu walks compared (%lu from memos), %lu stacks libunwind's alone, in %lu"
		    " processes", argv[0], args[0], compared, memos, by_libunwind, lines);
	walks_from_memos += memos;
	run_cleanup(&plain);
	run_cleanup(&traced);
	return compared;
}

Test(stress, rule_walks_as_libunwind, .fini = teardown, .timeout = 300)
{
	static const char *const stress[][3] = {
		{"signals", NULL}, {"forks", NULL}, {"cancel", NULL}, {"churn", "2000", NULL},
		{"dlopen", "50", NULL}, {"live", NULL},
	};
	static const char *const target[][2] = {
		{"threads", NULL}, {"mutex", NULL}, {"sync", NULL}, {"syscalls", NULL},
		{"fork", NULL}, {"signal", NULL}, {"many", NULL}, {"callers", NULL},
	};
	unsigned long compared = 0;
	for (size_t i = 0; i < sizeof stress / sizeof stress[0]; i++)
		compared += walks_compared(stress_program(), stress[i]);
	for (size_t i = 0; i < sizeof target / sizeof target[0]; i++)
		compared += walks_compared(test_target(), target[i]);
	cr_assert_geq(compared, 100000u, "the rules walked few stacks");
	/* the memo's answers were compared too: gt-target callers alone makes thousands */
	cr_assert_geq(walks_from_memos, 2000u, "few walks were made again from a memo");
}
