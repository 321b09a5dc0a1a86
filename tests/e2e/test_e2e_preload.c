/* End to end: a program traced by libgotrace.so (GOTRACE_OUT: the library converts at exit),
 * the trace checked by Go's own readers, and the events asserted on: creations and ends,
 * contended blocks unblocked by the releasing goroutine, condvar waiters by the signaller,
 * joins by the exiting thread, syscalls. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include "oracle.h"
#include "traced_run.h"

static struct run run;
static struct gt_events *ev;
static char trace[4300];

static void teardown(void)
{
	if (ev)
		gt_events_free(ev);
	ev = NULL;
	run_cleanup(&run);
}

static void trace_program(const char *const argv[], const char *expect_out, int full_check)
{
	char env_out[4400];
	memset(&run, 0, sizeof run);
	cr_assert(mkdtemp(strcpy(run.dir, "/tmp/gt-e2e-XXXXXX")));
	snprintf(trace, sizeof trace, "%s/prog.trace", run.dir);
	snprintf(env_out, sizeof env_out, "GOTRACE_OUT=%s", trace);
	/* Go 1.19's events are read below; test_e2e_go122.c runs the 1.22 format */
	const char *env[] = {env_out, "GOTRACE_FORMAT=go1.19", NULL};
	cr_assert_eq(run_program(&run, 1, argv, env), 0);
	cr_assert(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0, "%s", run.err);
	if (expect_out)
		cr_assert_str_eq(run.out, expect_out);
	char *report = NULL;
	int rc = gt_oracle_check(trace, !full_check, &report);
	cr_assert_eq(rc, 0, "oracle:\n%s", report ? report : "(none)");
	free(report);
	ev = gt_events_parse_119(trace);
	cr_assert_not_null(ev);
}

static void trace_target(const char *scenario, int full_check)
{
	const char *argv[] = {test_target(), scenario, NULL};
	trace_program(argv, NULL, full_check);
}

/* G ids created by live GoCreate events (a G context), in order */
static size_t created(int64_t *gs, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < ev->n; i++) {
		uint64_t g;
		if (!strcmp(ev->ev[i].type, "GoCreate") && ev->ev[i].g != 0 && gt_event_arg(&ev->ev[i], "g", &g) &&
		    n < cap)
			gs[n++] = (int64_t)g;
	}
	return n;
}

/* For every event of block_type by a G: the next GoUnblock of that G is done by another,
 * real G (not the unknown-waker form), which must satisfy pred.  Returns the number of such
 * blocks; unknown wakers are counted in *unknown. */
static size_t unblocked_by_g(const char *block_type, size_t *unknown, int64_t *wakers, size_t cap)
{
	size_t known = 0;
	*unknown = 0;
	for (size_t i = 0; i < ev->n; i++) {
		if (strcmp(ev->ev[i].type, block_type))
			continue;
		ssize_t u = gt_events_find_arg(ev, i + 1, "GoUnblock", "g", (uint64_t)ev->ev[i].g);
		if (u < 0)
			continue; /* still blocked at the end */
		if (ev->ev[u].g == 0) {
			(*unknown)++;
			continue;
		}
		cr_assert_neq(ev->ev[u].g, ev->ev[i].g);
		cr_assert_gt(ev->ev[u].ts_ns, ev->ev[i].ts_ns);
		if (known < cap)
			wakers[known] = ev->ev[u].g;
		known++;
	}
	return known;
}

Test(e2e, threads_create_end_join, .fini = teardown, .timeout = 300)
{
	trace_target("threads", 1);
	int64_t gs[16], wakers[16];
	cr_assert_eq(created(gs, 16), 4u);
	for (size_t i = 0; i < 4; i++)
		cr_assert_eq(gt_events_count(ev, "GoEnd", gs[i], GT_ANY), 1u, "G %lld ends once", (long long)gs[i]);
	/* a join on a live thread is unblocked by that thread, right before its GoEnd */
	size_t unknown, joins = unblocked_by_g("GoBlockSync", &unknown, wakers, 16);
	cr_assert_geq(joins, 1u);
	for (size_t k = 0; k < joins && k < 16; k++) {
		ssize_t end = gt_events_find(ev, 0, "GoEnd", wakers[k], GT_ANY);
		cr_assert_geq(end, 0, "the joined G %lld ends", (long long)wakers[k]);
	}
	cr_assert_eq(unknown, 0u);
	/* names set by pthread_setname_np / prctl become labels */
	size_t labels = gt_events_count(ev, "GoStartLabel", GT_ANY, GT_ANY);
	cr_assert_geq(labels, 1u);
}

Test(e2e, mutex_blocks_unblocked_by_holder, .fini = teardown, .timeout = 300)
{
	trace_target("mutex", 0);
	int64_t wakers[32];
	size_t unknown, known = unblocked_by_g("GoBlockSync", &unknown, wakers, 32);
	/* 4 contended locks released by their holders, plus joins released by exiting threads */
	cr_assert_geq(known, 4u);
}

Test(e2e, sync_objects, .fini = teardown, .timeout = 300)
{
	trace_target("sync", 0);
	int64_t wakers[32];
	size_t unknown;
	cr_assert_eq(unblocked_by_g("GoBlockCond", &unknown, wakers, 32), 1u, "cond waiter woken by the signaller");
	cr_assert_eq(unknown, 0u);
	cr_assert_geq(unblocked_by_g("GoBlockSync", &unknown, wakers, 32), 3u, "rwlock, sem, barrier");
	cr_assert_eq(gt_events_count(ev, "GoSleep", GT_ANY, GT_ANY), 2u, "usleep and sleep(0) on main");
	cr_assert_eq(gt_events_count(ev, "GoSched", GT_ANY, GT_ANY), 1u);
}

Test(e2e, syscalls, .fini = teardown, .timeout = 300)
{
	trace_target("syscalls", 0);
	size_t calls = gt_events_count(ev, "GoSysCall", GT_ANY, GT_ANY);
	size_t net = gt_events_count(ev, "GoBlockNet", GT_ANY, GT_ANY);
	cr_assert_geq(calls + net, 10u);
	cr_assert_geq(net, 1u, "poll/select/epoll with a timeout block on the network");
	/* every syscall that blocked comes back with a GoSysExit after its GoSysBlock */
	for (size_t i = 0; i < ev->n; i++) {
		if (strcmp(ev->ev[i].type, "GoSysBlock"))
			continue;
		ssize_t x = gt_events_find_arg(ev, i + 1, "GoSysExit", "g", (uint64_t)ev->ev[i].g);
		cr_assert_geq(x, 0, "G %lld never left its syscall", (long long)ev->ev[i].g);
		cr_assert_geq(ev->ev[x].ts_ns, ev->ev[i].ts_ns);
	}
}

Test(e2e, cpp_threads_mutex_condvar, .fini = teardown, .timeout = 300)
{
	char prog[4200];
	snprintf(prog, sizeof prog, "%s", getenv("GT_TEST_CPP"));
	const char *argv[] = {prog, NULL};
	trace_program(argv, "sum 820\n", 1);
	int64_t gs[16], wakers[64];
	cr_assert_eq(created(gs, 16), 4u, "four std::threads");
	for (size_t i = 0; i < 4; i++)
		cr_assert_eq(gt_events_count(ev, "GoEnd", gs[i], GT_ANY), 1u);
	size_t unknown;
	size_t cond = unblocked_by_g("GoBlockCond", &unknown, wakers, 64);
	cr_assert_geq(cond, 10u, "workers woken by the producer's notify_all");
	int main_woke = 0;
	for (size_t k = 0; k < cond && k < 64; k++)
		main_woke += wakers[k] == 1;
	cr_assert_geq(main_woke, 10, "the producer (G1) is the waker");
	size_t sync = unblocked_by_g("GoBlockSync", &unknown, wakers, 64);
	cr_assert_geq(sync, 3u, "contended std::mutex and joins, unblocked by the releasing thread");
}
