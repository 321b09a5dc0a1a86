/* Signal handlers around blocking calls, each run untraced and traced (targets/gt_signals.c).
 *
 * A handler that leaves a blocking call by siglongjmp (issue 28 item 10): the calls it left
 * end there, and every call of the thread after the jumps is recorded.  Threads whose hooked
 * calls in handlers are walked by libunwind cost kilobytes each, and an allocator preloaded
 * first is never called from a hook. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

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

Test(signals, jump_out_unwind, .fini = teardown, .timeout = 120) { jumps("unwind"); }
Test(signals, jump_out_fp, .fini = teardown, .timeout = 120) { jumps("fp"); }
Test(signals, jump_out_none, .fini = teardown, .timeout = 120) { jumps("none"); }

/* ---- memory per thread (issue 28 item 12) ------------------------------------------------
 * Each of 2000 threads with 256 KiB stacks makes a hooked call in a signal handler, a stack
 * that crosses a signal frame, which libunwind's unw_backtrace walked, mapping a 256 KiB trace
 * cache for each thread: the tracer keeps nothing per thread beyond a few kilobytes. */
static long rss_of(const struct run *r)
{
	long kb = -1;
	const char *s = strstr(r->err, "rss ");
	cr_assert(s && sscanf(s, "rss %ld", &kb) == 1, "no rss in: %s", r->err);
	return kb;
}

Test(signals, memory_per_thread, .fini = teardown, .timeout = 120)
{
	const int n = 2000;
	const char *args[] = {"threads", "2000", NULL};
	const char *env[] = {"GOTRACE_STACKS=unwind", NULL};
	twins(args, env);
	long plain_kb = rss_of(&plain), traced_kb = rss_of(&traced);
	cr_log_info("%d threads: %ld KiB untraced, %ld KiB traced", n, plain_kb, traced_kb);
	cr_assert_leq(traced_kb - plain_kb, 4L * n, "%d threads: %ld KiB untraced, %ld KiB traced", n,
		      plain_kb, traced_kb);
	/* the handlers' writes went through the hook, each walked through its signal frame */
	cr_assert_eq(count_syscalls(GT_SYSCALL_BEGIN, SYS_write), (size_t)n);
}

/* ---- an allocator preloaded before libgotrace.so (issue 27 item 3, issue 28 item 7) ------
 * Threads allocate and free through jemalloc or tcmalloc, whose own locks call hooked
 * functions, each after a handler's hooked call walked by libunwind: the program behaves as
 * with the allocator alone, and every fact is kept (no hook's call into the allocator re-enters
 * the hooks, counted as "calls from signal handlers that interrupted the recorder"). */
struct allocator {
	char lib[64];
};

ParameterizedTestParameters(signals, allocator_preloaded_first)
{
	static struct allocator libs[] = {{"libjemalloc.so.2"}, {"libtcmalloc_minimal.so.4"}};
	return cr_make_param_array(struct allocator, libs, sizeof libs / sizeof libs[0]);
}

ParameterizedTest(struct allocator *a, signals, allocator_preloaded_first, .fini = teardown,
		  .timeout = 120)
{
	static const char *const dirs[] = {"/usr/lib/x86_64-linux-gnu", "/usr/lib/aarch64-linux-gnu",
					   "/usr/lib64", "/usr/lib"};
	static char path[PATH_MAX], alone[PATH_MAX + 16], both[2 * PATH_MAX + 8];
	size_t d = 0;
	for (; d < sizeof dirs / sizeof dirs[0]; d++) {
		snprintf(path, sizeof path, "%s/%s", dirs[d], a->lib);
		if (!access(path, R_OK))
			break;
	}
	if (d == sizeof dirs / sizeof dirs[0])
		cr_skip_test("%s is not installed (scripts/setup installs it)", a->lib);
	snprintf(alone, sizeof alone, "LD_PRELOAD=%s", path);
	snprintf(both, sizeof both, "%s %s", path, test_preload());
	const char *argv[] = {test_program("gt-signals"), "alloc", "8", NULL};
	const char *plain_env[] = {alone, NULL};
	memset(&plain, 0, sizeof plain);
	memset(&traced, 0, sizeof traced);
	cr_assert_eq(run_program(&plain, 0, argv, plain_env), 0);
	setenv("GT_TEST_PRELOAD", both, 1);
	cr_assert_eq(run_program(&traced, 1, argv, NULL), 0);
	cr_assert_eq(traced.status, plain.status, "%s: %s", a->lib, traced.err);
	cr_assert(WIFEXITED(plain.status) && WEXITSTATUS(plain.status) == 0, "%s", plain.err);
	cr_assert_str_eq(traced.out, plain.out);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert_eq(cap.bad_bytes, 0u);
	cr_assert_eq(capture_count(&cap, GT_NOTICE, -1), 0u, "%s", traced.err);
	cr_assert_eq(cap.hdr->facts_lost, 0u);
	cr_assert_eq(count_syscalls(GT_SYSCALL_BEGIN, SYS_write), 8u);
}
