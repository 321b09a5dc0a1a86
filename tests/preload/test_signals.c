/* Signal handlers around blocking calls, each run untraced and traced (targets/gt_signals.c).
 *
 * A handler that leaves a blocking call by siglongjmp (issue 28 item 10): the calls it left
 * end there, and every call of the thread after the jumps is recorded.  Threads whose hooked
 * calls in handlers are walked by libunwind cost kilobytes each, and an allocator preloaded
 * first is never called from a hook. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
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

/* gt-signals ARGS untraced and traced: the same status and output; the capture opened and
 * whole */
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
	cr_assert_eq(cap.bad_bytes, 0u, "%zu bytes of damage", cap.bad_bytes);
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

/* Jumps out of blocking calls; a signal that lands between a record's reservation and its
 * commit (the tracer's work, left by the jump) leaves zero words there, no damage. */
static void jumps(const char *stacks, const char *scenario)
{
	char mode[64];
	snprintf(mode, sizeof mode, "GOTRACE_STACKS=%s", stacks);
	const char *args[] = {scenario, "200", NULL};
	const char *env[] = {mode, NULL};
	twins(args, env);
	cr_assert(strstr(traced.out, "jumps 800,"), "%s", traced.out);
	/* nothing lost, but the writes of handlers that interrupted the tracer's own work on
	 * the thread, counted (a signal 1 us after the timer was set lands there) */
	size_t reentry = 0;
	for (size_t i = 0; i < cap.n; i++) {
		if (cap.recs[i].h->type != GT_NOTICE)
			continue;
		const struct gt_p_notice *n = cap.recs[i].payload;
		cr_assert_eq(cap.recs[i].h->aux, GT_NOTICE_REENTRY_LOST, "%s", traced.err);
		reentry += n->value;
	}
	cr_assert(!reentry || strcmp(scenario, "jump"), "%zu calls passed through", reentry);
	cr_assert_eq(cap.hdr->facts_lost, 0u);
	/* every call after the jumps (and the handlers' writes) */
	size_t handler_writes = strcmp(scenario, "jump") ? 800u - reentry : 0u;
	cr_assert(handler_writes > 700u || !strcmp(scenario, "jump"), "%zu writes", handler_writes);
	cr_assert_eq(count_syscalls(GT_SYSCALL_BEGIN, SYS_write), 1000u + handler_writes);
	cr_assert_eq(count_syscalls(GT_SYSCALL_END, SYS_write), 1000u + handler_writes);
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

Test(signals, jump_out_leaves_whole_records, .fini = teardown, .timeout = 120)
{
	for (int i = 0; i < 5; i++) {
		jumps("fp", "jump");
		teardown();
	}
}

/* write(2) calls' ends whose result was r */
static size_t count_write_ends(int64_t r)
{
	size_t n = 0;
	for (size_t i = 0; i < cap.n; i++) {
		const struct gt_p_syscall_end *e = cap.recs[i].payload;
		n += cap.recs[i].h->type == GT_SYSCALL_END && e->nr == SYS_write && e->result == r;
	}
	return n;
}

/* 5000 jumps from wherever an interval timer's signal lands in a loop of writes, many of
 * them inside the hooks' records: none is torn, and every call after the jumps is recorded
 * (with the handler's own writes, nested, when it makes them). */
static void jumps_anywhere(const char *stacks, const char *scenario)
{
	char mode[64];
	snprintf(mode, sizeof mode, "GOTRACE_STACKS=%s", stacks);
	const char *args[] = {scenario, "5000", NULL};
	const char *env[] = {mode, NULL};
	twins(args, env);
	cr_assert_eq(cap.hdr->facts_lost, 0u);
	size_t reentry = 0;
	for (size_t i = 0; i < cap.n; i++)
		if (cap.recs[i].h->type == GT_NOTICE && cap.recs[i].h->aux == GT_NOTICE_REENTRY_LOST)
			reentry += ((const struct gt_p_notice *)cap.recs[i].payload)->value;
	/* the 1000 writes after the jumps, and the handler's of one byte each (a few more jumps
	 * than asked: the signal the timer sent before it was stopped) */
	int made = 0;
	const char *said = strstr(traced.err, "jumps ");
	cr_assert(said && sscanf(said, "jumps %d", &made) == 1 && made >= 5000, "%s", traced.err);
	size_t handler_writes = strstr(scenario, "write") ? (size_t)made - reentry : 0u;
	cr_assert_eq(count_write_ends(1), 1000u + handler_writes, "%zu calls passed through", reentry);
	char why[4096];
	cr_assert_eq(run_convert_all(&traced, why, sizeof why), 1, "%s", why);
}

Test(signals, jump_anywhere_leaves_whole_records, .fini = teardown, .timeout = 120)
{
	jumps_anywhere("none", "jump-anywhere");
}

/* the handler's records nest inside the record its signal interrupted */
Test(signals, jump_anywhere_after_write_leaves_whole_records, .fini = teardown, .timeout = 120)
{
	jumps_anywhere("fp", "jump-anywhere-after-write");
}

Test(signals, jump_out_unwind, .fini = teardown, .timeout = 120) { jumps("unwind", "jump"); }
Test(signals, jump_out_fp, .fini = teardown, .timeout = 120) { jumps("fp", "jump"); }
Test(signals, jump_out_none, .fini = teardown, .timeout = 120) { jumps("none", "jump"); }
/* a handler's call nested in the wait before the jump: the wait it leaves still ends */
Test(signals, jump_out_after_nested_call, .fini = teardown, .timeout = 120)
{
	jumps("unwind", "jump-after-write");
}

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

/* ---- a handler's call nested in a blocking call (issue 27 item 2) -------------------------
 * A read blocks about 400 ms; 100 ms into it a SIGCHLD handler reaps a child (waitpid).  The
 * handler's call is recorded inside the read, and the read stays one wait of its whole
 * length: its begin, the handler's begin and end, its end, nothing repaired. */

/* the main thread's system calls in order, as "B<nr> " and "E<nr> " */
static void main_syscalls(char *out, size_t size)
{
	size_t k = 0;
	out[0] = 0;
	for (size_t i = 0; i < cap.n && k + 16 < size; i++) {
		const struct cap_rec *r = &cap.recs[i];
		if (r->h->thread == 1 && (r->h->type == GT_SYSCALL_BEGIN || r->h->type == GT_SYSCALL_END))
			k += (size_t)snprintf(out + k, size - k, "%c%u ",
					      r->h->type == GT_SYSCALL_BEGIN ? 'B' : 'E',
					      *(const uint32_t *)r->payload);
	}
}

Test(signals, handler_call_nested_in_read, .fini = teardown, .timeout = 60)
{
	const char *args[] = {"nested", NULL};
	twins(args, NULL);
	cr_assert_str_eq(traced.out, "read 1 byte, the handler reaped the child during it, the writer "
				     "exited 0\n");
	char calls[512], read_begin[16], read_end[16], handler[32];
	main_syscalls(calls, sizeof calls);
	/* the read with the handler's wait4 inside it (a second one when the writer's exit
	 * comes before the read returns) */
	snprintf(read_begin, sizeof read_begin, "B%d ", SYS_read);
	snprintf(read_end, sizeof read_end, "E%d ", SYS_read);
	snprintf(handler, sizeof handler, "B%d E%d ", SYS_wait4, SYS_wait4);
	const char *p = strstr(calls, read_begin);
	cr_assert_not_null(p, "the main thread's calls: %s", calls);
	p += strlen(read_begin);
	int nested = 0;
	for (; !strncmp(p, handler, strlen(handler)); p += strlen(handler))
		nested++;
	cr_assert(nested >= 1 && !strncmp(p, read_end, strlen(read_end)),
		  "the main thread's calls: %s", calls);
	cr_assert_eq(capture_count(&cap, GT_NOTICE, -1), 0u, "%s", traced.err);
}

/* The same under gotrace run: the report gives the read the length the program measured,
 * none of it running or in another wait, and the run repaired nothing. */
static double report_column(const char *report, const char *row, int column)
{
	const char *line = strstr(report, row);
	cr_assert_not_null(line, "no row '%s' in:\n%s", row, report);
	double v = -1;
	const char *p = line + (*row == '\n'); /* the row itself */
	for (int c = 0; c <= column; c++) {
		while (*p == ' ')
			p++;
		if (c == column)
			sscanf(p, "%lf", &v);
		while (*p && *p != ' ' && *p != '\n')
			p++;
	}
	return v;
}

Test(signals, handler_call_nested_in_read_report, .fini = teardown, .timeout = 120)
{
	char trace[PATH_MAX + 16];
	memset(&traced, 0, sizeof traced);
	snprintf(traced.dir, sizeof traced.dir, "/tmp/gt-test-XXXXXX");
	cr_assert_not_null(mkdtemp(traced.dir));
	snprintf(trace, sizeof trace, "%s/n.trace", traced.dir);
	const char *run_argv[] = {test_gotrace(), "run", "-o", trace, "--", test_program("gt-signals"),
				  "nested", NULL};
	cr_assert_eq(run_program(&traced, 0, run_argv, NULL), 0);
	cr_assert(WIFEXITED(traced.status) && WEXITSTATUS(traced.status) == 0, "%s", traced.err);
	cr_assert_null(strstr(traced.err, "repaired"), "%s", traced.err);
	double measured = -1, reaped = -1;
	const char *m = strstr(traced.err, "read ");
	cr_assert(m && sscanf(m, "read %lf", &measured) == 1, "%s", traced.err);
	const char *w = strstr(traced.err, "waitpid ");
	cr_assert(w && sscanf(w, "waitpid %lf", &reaped) == 1, "%s", traced.err);
	const char *report_argv[] = {test_gotrace(), "report", trace, NULL};
	memset(&plain, 0, sizeof plain);
	cr_assert_eq(run_program(&plain, 0, report_argv, NULL), 0);
	cr_assert(WIFEXITED(plain.status) && WEXITSTATUS(plain.status) == 0, "%s", plain.err);
	/* g 1, the main thread: its name, start routine ("[main thread]", two words), then
	 * alive, running, sync, cond, net, sleep, other, syscall (ms) */
	const char *table = strstr(plain.out, "Goroutines (one per thread)");
	cr_assert_not_null(table, "%s", plain.out);
	double running = report_column(table, "\n  1 ", 5), net = report_column(table, "\n  1 ", 8);
	double other = report_column(table, "\n  1 ", 10), sys = report_column(table, "\n  1 ", 11);
	cr_log_info("read measured %.1f ms, waitpid %.1f; report: running %.1f, net %.1f, other %.1f,"
		    " syscall %.1f", measured, reaped, running, net, other, sys);
	/* the read is a wait on the pipe, woken by the writer's write (the handler's waitpid
	 * inside it did not hide the waker: it was drawn as a plain syscall before); the
	 * waitpid after it a wait for the writer's exit */
	cr_assert(fabs(net - measured) <= 3.0 + 0.03 * measured,
		  "read measured %.1f ms, drawn as a wait on the pipe %.1f (syscall %.1f):\n%s",
		  measured, net, sys, plain.out);
	cr_assert_leq(other + sys, reaped + 1.0, "waitpid measured %.1f ms:\n%s", reaped, plain.out);
	/* The defect drew most of the read as running (177 ms of 300): the wait above holds the
	 * whole read.  The running time around it is the two forks' and the start's, which the
	 * machine's load sets (1-46 ms seen), so it is only logged. */
}
