/* Real-time threads on one CPU (issue 28, item 3): a SCHED_FIFO busy thread and a
 * higher-priority one waking every 200 µs, both pinned to CPU 0, finish traced as they do
 * untraced.  The tracer's own locks are priority-inheriting futexes (base.h, gt_lock): a
 * spin on sched_yield in the high-priority thread never let the preempted holder run. */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "traced_run.h"

static struct run plain, traced;

static void teardown(void)
{
	run_cleanup(&plain);
	run_cleanup(&traced);
}

TestSuite(rt, .fini = teardown, .timeout = 240);

Test(rt, fifo_pair_on_one_cpu)
{
	if (geteuid() != 0)
		cr_skip_test("SCHED_FIFO needs root");
	/* 16 KiB chunks: the capture grows every few hundred facts; before the fix every one of
	 * three runs hung (killed by RLIMIT_RTTIME), at 10^6 iterations two of three */
	const char *env[] = {"GOTRACE_CHUNK_SIZE=16384", NULL};
	const char *argv[] = {test_program("gt-rt"), "3000000", NULL};
	const char *diff = run_twins(&plain, &traced, argv, env);
	if (WIFEXITED(plain.status) && WEXITSTATUS(plain.status) == 77)
		cr_skip_test("SCHED_FIFO on CPU 0 refused: %s", plain.err);
	cr_assert(WIFEXITED(plain.status) && WEXITSTATUS(plain.status) == 0, "untraced: %s%s",
		  plain.out, plain.err);
	cr_assert_null(diff, "%s\nuntraced: %straced: %s", diff, plain.out, traced.out);
	struct capture c;
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &c), 0);
	size_t yields = 0;
	for (size_t k = 0; k < c.n; k++)
		yields += c.recs[k].h->type == GT_YIELD;
	capture_close(&c);
	cr_assert_geq(yields, 3000000 + 30000 * 20, "%zu yields recorded", yields);
}
