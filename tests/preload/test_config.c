/* GOTRACE_* settings: stack modes and depth, start delay, duration, and GOTRACE_OUT
 * (the library runs `gotrace convert` at exit; Go's readers accept the result). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oracle.h"
#include "traced_run.h"

static struct run run;
static struct capture cap;

static void teardown(void)
{
	capture_close(&cap);
	run_cleanup(&run);
}

static void trace_with(const char *scenario, const char *const env[])
{
	memset(&run, 0, sizeof run);
	cr_assert_eq(run_target(&run, 1, scenario, env), 0);
	cr_assert(WIFEXITED(run.status), "%s", run.err);
	cr_assert_eq(count_gotrace_lines(run.err), 0, "%s", run.err);
	cr_assert_eq(run_capture(&run, run.pid, 0, &cap), 0);
}

/* gt-stress busy: facts for 300 ms, whatever the machine's load (the window tests) */
static void trace_busy(const char *const env[])
{
	const char *argv[] = {test_program("gt-stress"), "busy", "300", NULL};
	memset(&run, 0, sizeof run);
	cr_assert_eq(run_program(&run, 1, argv, env), 0);
	cr_assert(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0, "%s", run.err);
	cr_assert_eq(count_gotrace_lines(run.err), 0, "%s", run.err);
	cr_assert_eq(run_capture(&run, run.pid, 0, &cap), 0);
}

static const uint64_t *P(const struct cap_rec *r) { return r->payload; }

/* the main executable's address range, from the module map */
static void exe_range(uint64_t *lo, uint64_t *hi)
{
	for (size_t i = 0; i < cap.n; i++)
		if (cap.recs[i].h->type == GT_MODULE) {
			const struct gt_p_module *m = cap.recs[i].payload;
			if (m->flags & 1) {
				*lo = m->lo;
				*hi = m->hi;
				return;
			}
		}
	cr_assert_fail("no main executable in the module map");
}

Test(config, stacks_none, .fini = teardown, .timeout = 30)
{
	const char *env[] = {"GOTRACE_STACKS=none", NULL};
	trace_with("sync", env);
	cr_assert_eq(cap.hdr->stack_mode, GT_STACKS_NONE);
	cr_assert_eq(capture_count(&cap, GT_STACK, -1), 0u);
	for (size_t i = 0; i < cap.n; i++)
		if (cap.recs[i].h->type == GT_BLOCK_BEGIN)
			cr_assert_eq((uint32_t)P(&cap.recs[i])[1], 0u);
}

static void check_stacks_start_in_program(unsigned max_depth)
{
	uint64_t lo, hi;
	exe_range(&lo, &hi);
	size_t n = capture_count(&cap, GT_STACK, -1), inner_in_exe = 0;
	cr_assert_gt(n, 5u);
	for (size_t i = 0; i < n; i++) {
		const struct cap_rec *s = capture_find(&cap, GT_STACK, -1, i);
		uint32_t nf = (uint32_t)(P(s)[0] >> 32);
		cr_assert(nf >= 1 && nf <= max_depth, "%u frames", nf);
		uint64_t pc0 = P(s)[1];
		inner_in_exe += pc0 >= lo && pc0 < hi;
	}
	/* the tracer's own frames are trimmed: hooks called from the program start there */
	cr_assert_geq(inner_in_exe * 10, n * 7, "%zu of %zu stacks start in the program", inner_in_exe, n);
}

Test(config, stacks_fp, .fini = teardown, .timeout = 30)
{
	const char *env[] = {"GOTRACE_STACKS=fp", NULL};
	trace_with("sync", env);
	cr_assert_eq(cap.hdr->stack_mode, GT_STACKS_FP);
	check_stacks_start_in_program(32);
}

Test(config, stacks_unwind_depth, .fini = teardown, .timeout = 30)
{
	const char *env[] = {"GOTRACE_STACK_DEPTH=2", NULL};
	trace_with("sync", env);
	cr_assert_eq(cap.hdr->stack_mode, GT_STACKS_UNWIND);
	cr_assert_eq(cap.hdr->stack_depth, 2u);
	check_stacks_start_in_program(2);
}

Test(config, stacks_unwind_reach_main, .fini = teardown, .timeout = 30)
{
	trace_with("sync", NULL);
	/* libunwind walks through glibc (no frame pointers): the main thread's stacks reach
	 * __libc_start_call_main, several frames deep */
	size_t deep = 0, n = capture_count(&cap, GT_STACK, -1);
	for (size_t i = 0; i < n; i++)
		deep += (uint32_t)(P(capture_find(&cap, GT_STACK, -1, i))[0] >> 32) >= 4;
	cr_assert_geq(deep, 3u);
}

static uint64_t ticks(double seconds) { return (uint64_t)(seconds * (double)cap.hdr->tsc_hz); }

static int thread_fact(int type)
{
	return type != GT_STACK && type != GT_MODULE && type != GT_CLOCK && type != GT_NOTICE &&
	       type != GT_CAPTURE_END && type != GT_MODULE_UNLOAD && type != GT_PROCESS_NAME;
}

Test(config, start_delay, .fini = teardown, .timeout = 30)
{
	const char *env[] = {"GOTRACE_START_DELAY=0.1", NULL};
	trace_busy(env);
	cr_assert_eq(cap.hdr->start_delay_ns, 100000000u);
	size_t facts = 0;
	for (size_t i = 0; i < cap.n; i++) {
		if (!thread_fact(cap.recs[i].h->type))
			continue;
		facts++;
		cr_assert_geq(cap.recs[i].h->tsc, cap.hdr->start_tsc + ticks(0.099), "a %s before the start",
			      capture_type_name(cap.recs[i].h->type));
	}
	cr_assert_gt(facts, 5u);
	/* threads met after the start are announced, the main one first */
	const struct cap_rec *first = NULL;
	for (size_t i = 0; i < cap.n && !first; i++)
		if (thread_fact(cap.recs[i].h->type))
			first = &cap.recs[i];
	cr_assert_eq(first->h->type, GT_THREAD_EXISTING);
	cr_assert_geq(capture_count(&cap, GT_MODULE, -1), 3u, "the module map is written at once");
}

Test(config, duration, .fini = teardown, .timeout = 30)
{
	const char *env[] = {"GOTRACE_DURATION=0.05", NULL};
	trace_busy(env);
	cr_assert_eq(cap.hdr->duration_ns, 50000000u);
	cr_assert_eq(capture_count(&cap, GT_CAPTURE_END, -1), 1u);
	uint64_t end = capture_find(&cap, GT_CAPTURE_END, -1, 0)->h->tsc;
	size_t facts = 0;
	for (size_t i = 0; i < cap.n; i++) {
		if (!thread_fact(cap.recs[i].h->type))
			continue;
		facts++;
		cr_assert_leq(cap.recs[i].h->tsc, end);
		cr_assert_lt(cap.recs[i].h->tsc, cap.hdr->start_tsc + ticks(0.05));
	}
	cr_assert_gt(facts, 3u);
	cr_assert(cap.hdr->flags & GT_FILE_FINALIZED);
}

/* GOTRACE_MAX_CAPTURE: a size with a binary suffix goes into the header; junk costs one line
 * and no bound */
Test(config, max_capture, .fini = teardown, .timeout = 30)
{
	const char *sizes[][2] = {{"1G", "1073741824"}, {"512MiB", "536870912"},
				  {"67108864", "67108864"}, {"65536k", "67108864"}};
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		char var[64];
		snprintf(var, sizeof var, "GOTRACE_MAX_CAPTURE=%s", sizes[i][0]);
		const char *env[] = {var, NULL};
		trace_with("mutex", env);
		cr_assert_eq(cap.hdr->max_capture_bytes, strtoull(sizes[i][1], NULL, 10), "%s", var);
		cr_assert(!(cap.hdr->flags & GT_FILE_AT_BOUND));
		teardown();
	}
	const char *junk[] = {"GOTRACE_MAX_CAPTURE=12Q", "GOTRACE_MAX_CAPTURE=-1M",
			      "GOTRACE_MAX_CAPTURE=1.5G", "GOTRACE_MAX_CAPTURE=99999999T"};
	for (size_t i = 0; i < sizeof junk / sizeof junk[0]; i++) {
		const char *env[] = {junk[i], NULL};
		memset(&run, 0, sizeof run);
		cr_assert_eq(run_target(&run, 1, "mutex", env), 0);
		cr_assert_eq(count_gotrace_lines(run.err), 1, "%s: %s", junk[i], run.err);
		cr_assert(strstr(run.err, "no bound"), "%s", run.err);
		cr_assert_eq(run_capture(&run, run.pid, 0, &cap), 0);
		cr_assert_eq(cap.hdr->max_capture_bytes, 0u, "%s", junk[i]);
		teardown();
	}
	/* below the header and one chunk: stopped at the first chunk, said once */
	const char *tiny[] = {"GOTRACE_MAX_CAPTURE=64K", NULL};
	memset(&run, 0, sizeof run);
	cr_assert_eq(run_target(&run, 1, "mutex", tiny), 0);
	cr_assert(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0, "%s", run.err);
	cr_assert_eq(count_gotrace_lines(run.err), 1, "%s", run.err);
	cr_assert(strstr(run.err, "GOTRACE_MAX_CAPTURE bound"), "%s", run.err);
	cr_assert_eq(run_capture(&run, run.pid, 0, &cap), 0);
	cr_assert(cap.hdr->flags & GT_FILE_AT_BOUND);
	cr_assert(cap.hdr->flags & GT_FILE_WRITE_FAILED);
	cr_assert_gt(cap.hdr->facts_lost, 10u);
}

static int exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 && st.st_size > 0;
}

Test(config, out_converts_at_exit, .fini = teardown, .timeout = 120)
{
	char out[4200], env_out[4300], child_trace[4300];
	memset(&run, 0, sizeof run);
	cr_assert(mkdtemp(strcpy(run.dir, "/tmp/gt-test-XXXXXX")));
	snprintf(out, sizeof out, "%s/prog.trace", run.dir);
	snprintf(env_out, sizeof env_out, "GOTRACE_OUT=%s", out);
	const char *env[] = {env_out, NULL};
	cr_assert_eq(run_target(&run, 1, "fork", env), 0);
	cr_assert(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	cr_assert_str_eq(run.err, "", "the program's stderr stays its own");
	cr_assert(exists(out), "no trace at %s", out);
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(out, true, &report), 0, "%s", report ? report : "");
	free(report);
	/* the forked child, a traced child without %p, wrote FILE.<pid> */
	cr_assert_eq(run_capture(&run, run.pid, 0, &cap), 0);
	const struct cap_rec *f = capture_find(&cap, GT_PROCESS, GT_PROC_FORK, 0);
	cr_assert_not_null(f);
	snprintf(child_trace, sizeof child_trace, "%s.%u", out, (uint32_t)P(f)[0]);
	cr_assert(exists(child_trace), "no trace at %s", child_trace);
}

Test(config, out_pid_pattern, .fini = teardown, .timeout = 120)
{
	char env_out[4300], want[4300];
	memset(&run, 0, sizeof run);
	cr_assert(mkdtemp(strcpy(run.dir, "/tmp/gt-test-XXXXXX")));
	snprintf(env_out, sizeof env_out, "GOTRACE_OUT=%s/t-%%p.trace", run.dir);
	const char *env[] = {env_out, NULL};
	cr_assert_eq(run_target(&run, 1, "sync", env), 0);
	snprintf(want, sizeof want, "%s/t-%d.trace", run.dir, (int)run.pid);
	cr_assert(exists(want), "no trace at %s", want);
}
