/* Signal handlers around blocking calls, each run untraced and traced (targets/gt_signals.c).
 *
 * A handler that leaves a blocking call by siglongjmp (issue 28 item 10): the calls it left
 * end there, and every call of the thread after the jumps is recorded. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>

#include "traced_run.h"

static struct run plain, traced;
static struct capture cap;

static void teardown(void)
{
	capture_close(&cap);
	run_cleanup(&plain);
	run_cleanup(&traced);
}

/* gt-signals ARGS untraced and traced: the same status and output; the capture opened */
static void twins(const char *const args[], const char *const env[])
{
	const char *argv[8] = {test_program("gt-signals")};
	for (int i = 0; args[i] && i < 6; i++)
		argv[i + 1] = args[i];
	memset(&plain, 0, sizeof plain);
	memset(&traced, 0, sizeof traced);
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert_null(diff, "%s: %s", args[0], diff);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0, "no capture for pid %d", traced.pid);
	cr_assert_eq(cap.bad_bytes, 0u);
}

static size_t count_syscalls(int type, uint32_t nr)
{
	size_t n = 0;
	for (size_t i = 0; i < cap.n; i++)
		if (cap.recs[i].h->type == type && *(const uint32_t *)cap.recs[i].payload == nr)
			n++;
	return n;
}

/* blocks of a kind on obj (a sleep's obj is its length in ns) */
static size_t count_blocks(int kind, uint64_t obj)
{
	size_t n = 0;
	for (size_t i = 0; i < cap.n; i++)
		if (cap.recs[i].h->type == GT_BLOCK_BEGIN && cap.recs[i].h->aux == kind &&
		    ((const struct gt_p_block *)cap.recs[i].payload)->obj == obj)
			n++;
	return n;
}

static void jumps(const char *stacks)
{
	char mode[64];
	snprintf(mode, sizeof mode, "GOTRACE_STACKS=%s", stacks);
	const char *args[] = {"jump", "200", NULL};
	const char *env[] = {mode, NULL};
	twins(args, env);
	cr_assert(strstr(traced.out, "jumps 800,"), "%s", traced.out);
	/* nothing lost: no notice of calls passed straight through */
	cr_assert_eq(capture_count(&cap, GT_NOTICE, -1), 0u, "%s", traced.err);
	cr_assert_eq(cap.hdr->facts_lost, 0u);
	/* every call after the jumps */
	cr_assert_eq(count_syscalls(GT_SYSCALL_BEGIN, SYS_write), 1000u);
	cr_assert_eq(count_blocks(GT_BK_SLEEP, 1000), 300u);
	cr_assert_eq(capture_count(&cap, GT_YIELD, -1), 1000u);
	size_t reads = count_syscalls(GT_SYSCALL_BEGIN, SYS_read);
	cr_assert(reads > 1000u && reads <= 1200u, "%zu reads", reads);
	/* the calls jumped out of ended, as interrupted by a signal: most signals came while
	 * the call blocked, some before it began */
	cr_assert_eq(count_syscalls(GT_SYSCALL_END, SYS_read), reads);
	cr_assert_geq(count_blocks(GT_BK_SLEEP, 30000000000ull), 100u);
	for (int kind = GT_BK_MUTEX; kind < GT_BK_COUNT; kind++)
		cr_assert_eq(capture_count(&cap, GT_BLOCK_END, kind), capture_count(&cap, GT_BLOCK_BEGIN, kind),
			     "kind %d", kind);
	cr_assert_geq(capture_count(&cap, GT_BLOCK_BEGIN, GT_BK_COND), 100u);
	cr_assert_geq(capture_count(&cap, GT_BLOCK_BEGIN, GT_BK_SEM), 100u);
	char why[4096];
	cr_assert_eq(run_convert_all(&traced, why, sizeof why), 1, "%s", why);
}

Test(signals, jump_out_of_blocking_calls_unwind, .fini = teardown, .timeout = 120) { jumps("unwind"); }
Test(signals, jump_out_of_blocking_calls_fp, .fini = teardown, .timeout = 120) { jumps("fp"); }
Test(signals, jump_out_of_blocking_calls_none, .fini = teardown, .timeout = 120) { jumps("none"); }
