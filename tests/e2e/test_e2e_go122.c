/* End to end in the Go 1.22+ format: a program traced by libgotrace.so with
 * GOTRACE_FORMAT=go1.22 (GOTRACE_OUT: the library converts at exit) runs as it does untraced
 * (run_twins); Go 1.22, the strictest reader, and Go 1.23 accept its trace, which says what
 * the new format can: block reasons in C terms (docs/formats/go122.md §5.3), one M per OS thread
 * (the main thread's is the process id), thread names as labels, a generation every second,
 * and a trace cut inside a generation read up to the generation before. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oracle.h"
#include "oracle_v2.h"
#include "traced_run.h"

static struct run plain, traced;
static char trace[PATH_MAX + 16];
static char *dump;

static void teardown(void)
{
	free(dump);
	dump = NULL;
	run_cleanup(&plain);
	run_cleanup(&traced);
}

/* argv run untraced and traced; the trace read in one order whatever the readers' map order
 * (gt_trace_v2_order_check) and parsed by Go 1.22 (dump kept) and Go 1.23. */
static void run_go122(const char *const argv[])
{
	char tool[PATH_MAX];
	if (!gt_go_trace_tool("1.22", tool, sizeof tool))
		cr_skip_test("Go 1.22 is not installed (/usr/lib/go-1.22: apt-get install -t "
			     "bookworm-backports golang-1.22-go)");
	memset(&plain, 0, sizeof plain);
	memset(&traced, 0, sizeof traced);
	cr_assert(mkdtemp(strcpy(traced.dir, "/tmp/gt-e2e22-XXXXXX")));
	snprintf(trace, sizeof trace, "%s/prog.trace", traced.dir);
	char out[PATH_MAX + 32];
	snprintf(out, sizeof out, "GOTRACE_OUT=%s", trace);
	const char *env[] = {out, "GOTRACE_FORMAT=go1.22", NULL};
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert_null(diff, "%s", diff);
	cr_assert(WIFEXITED(traced.status) && WEXITSTATUS(traced.status) == 0, "status %#x: %s",
		  traced.status, traced.err);
	char *err = NULL, *dump23 = NULL;
	int st = gt_trace_v2_order_check(trace, &err);
	cr_assert_eq(st, 0, "%s", err ? err : "unreadable trace");
	free(err);
	st = gt_dump_v2(trace, "1.22", &dump, &err);
	cr_assert_eq(st, 0, "Go 1.22 rejects the trace: %s", err ? err : "");
	free(err);
	st = gt_dump_v2(trace, "1.23", &dump23, &err);
	cr_assert_eq(st, 0, "Go 1.23 rejects the trace: %s", err ? err : "");
	cr_assert_eq(gt_dump_v2_events(dump23), gt_dump_v2_events(dump));
	free(err);
	free(dump23);
}

/* The viewers of Go 1.22, 1.23 and 1.26 serve every page of the trace (goroutines, each
 * goroutine, the thread view, tasks and regions) and build every profile: trace-oracle's
 * checks of each (1.19 does not read the format). */
static void assert_viewer_pages(void)
{
	char *report = NULL;
	cr_assert_geq(gt_oracle_check(trace, false, &report), 0, "the oracle could not run");
	static const char *const versions[] = {"1.22", "1.23", "1.26"};
	static const char *const checks[] = {"parse", "ui", "thread", "pprof"};
	for (size_t v = 0; v < sizeof versions / sizeof *versions; v++)
		for (size_t i = 0; i < sizeof checks / sizeof *checks; i++) {
			char check[32];
			snprintf(check, sizeof check, "%s-%s", checks[i], versions[v]);
			cr_assert(gt_oracle_passed(report, check), "%s:\n%s", check, report);
		}
	cr_assert_not(strstr(report, "-1.19"), "Go 1.19 does not read the format:\n%s", report);
	free(report);
}

/* Blocks with reason, alone or followed by the name of the object waited on. */
static size_t blocks(const char *reason)
{
	char match[128], named[128];
	snprintf(match, sizeof match, "Reason=\"%s\" Running->Waiting", reason);
	snprintf(named, sizeof named, "Reason=\"%s ", reason);
	return gt_dump_123_count(dump, match) + gt_dump_123_count(dump, named);
}

/* The value after "KEY=" in line (up to a space), as a number; -2 when absent. */
static long long field(const char *line, const char *key)
{
	const char *p = strstr(line, key);
	return p ? strtoll(p + strlen(key), NULL, 10) : -2;
}

/* Every goroutine starts on one M only, Ms differ between goroutines, and G1 runs on the
 * process's own id (its main thread's TID).  Returns the number of goroutines seen. */
static size_t assert_one_m_per_thread(pid_t pid)
{
	long long m_of[256] = {0};
	size_t n = 0;
	for (size_t k = 0;; k++) {
		char *h = gt_dump_123_header(dump, "Runnable->Running", k);
		if (!h)
			break;
		long long g = field(h, "GoID="), m = field(h, "M=");
		free(h);
		if (g < 1 || g >= 256)
			continue;
		cr_assert_gt(m, 0, "G %lld started without a thread", g);
		if (!m_of[g]) {
			m_of[g] = m;
			n++;
		}
		cr_assert_eq(m_of[g], m, "G %lld ran on M %lld and on M %lld", g, m_of[g], m);
	}
	cr_assert_eq(m_of[1], (long long)pid, "the main thread's M is its TID (the pid)");
	for (int a = 1; a < 256; a++)
		for (int b = a + 1; b < 256; b++)
			cr_assert(!m_of[a] || m_of[a] != m_of[b], "G %d and G %d share M %lld", a, b,
				  m_of[a]);
	return n;
}

Test(e2e_go122, threads_create_end_join, .fini = teardown, .timeout = 300)
{
	const char *argv[] = {test_target(), "threads", NULL};
	run_go122(argv);
	cr_assert_eq(gt_dump_123_count(dump, "G=1 NotExist->Runnable"), 4u, "created by main");
	for (int g = 2; g <= 5; g++) {
		char end[64], sys_end[64];
		snprintf(end, sizeof end, "GoID=%d Running->NotExist", g);
		snprintf(sys_end, sizeof sys_end, "GoID=%d Syscall->NotExist", g);
		cr_assert_eq(gt_dump_123_count(dump, end) + gt_dump_123_count(dump, sys_end), 1u,
			     "G %d ends once", g);
	}
	/* a join on a live thread: its waker is that thread, which then ends */
	size_t joins = blocks("sync: pthread_join");
	cr_assert_geq(joins, 1u);
	for (size_t k = 0; k < joins; k++) {
		char *h = gt_dump_123_header(dump, "GoID=1 Waiting->Runnable", k);
		cr_assert_not_null(h);
		long long waker = field(h, "G=");
		free(h);
		char end[64];
		snprintf(end, sizeof end, "GoID=%lld Running->NotExist", waker);
		cr_assert_eq(gt_dump_123_count(dump, end), 1u, "the joined G %lld wakes main", waker);
	}
	/* names set by pthread_setname_np / prctl become labels: the thread that names itself
	 * runs, and its label is written then (not only at a later start, which it may never
	 * have) */
	cr_assert_geq(gt_dump_123_count(dump, "Label"), 1u);
	cr_assert_geq(gt_dump_123_count(dump, "Label=\"prctl-name\""), 1u, "%s", dump);
	cr_assert_eq(assert_one_m_per_thread(traced.pid), 5u);
}

Test(e2e_go122, sync_objects_with_reasons_in_c_terms, .fini = teardown, .timeout = 300)
{
	const char *argv[] = {test_target(), "sync", NULL};
	run_go122(argv);
	cr_assert_eq(blocks("sync: pthread_cond_wait"), 1u, "%s", dump);
	cr_assert_eq(blocks("sync: pthread_rwlock_rdlock"), 1u);
	cr_assert_eq(blocks("sync: sem_wait"), 1u);
	cr_assert_geq(blocks("sync: pthread_barrier_wait"), 1u, "main, and the late one as hooked");
	cr_assert_eq(blocks("sleep"), 2u, "usleep and sleep(0) on main");
	cr_assert_eq(gt_dump_123_count(dump, "Reason=\"sched_yield\" Running->Runnable"), 1u);
	/* the condition waiter (main) is made runnable by the signaller's goroutine */
	char *h = gt_dump_123_header(dump, "GoID=1 Waiting->Runnable", 0);
	cr_assert_not_null(h);
	cr_assert_gt(field(h, "G="), 1, "unblocked by a known waker: %s", h);
	free(h);
	assert_one_m_per_thread(traced.pid);
	assert_viewer_pages();
}

Test(e2e_go122, mutex_waits_and_joins, .fini = teardown, .timeout = 300)
{
	const char *argv[] = {test_target(), "mutex", NULL};
	run_go122(argv);
	cr_assert_geq(blocks("sync: pthread_mutex_lock"), 4u, "the four contended locks");
	/* each contended lock's holder ends only once main waits in its join */
	cr_assert_geq(blocks("sync: pthread_join"), 4u, "%s", dump);
	cr_assert_geq(assert_one_m_per_thread(traced.pid), 2u);
	/* the lock waits land in the sync profile, at the lines that locked */
	char *sync = gt_pprof_text(trace, "sync", "1.23");
	cr_assert_not_null(sync);
	cr_assert(strstr(sync, "contend "), "%s", sync);
	free(sync);
}

Test(e2e_go122, syscalls_begin_and_end, .fini = teardown, .timeout = 300)
{
	const char *argv[] = {test_target(), "syscalls", NULL};
	run_go122(argv);
	cr_assert_eq(blocks("chan receive: read pipe"), 1u, "a read woken by a pipe writer");
	cr_assert_geq(blocks("network"), 1u, "poll/select/epoll with a timeout");
	cr_assert_geq(blocks("sync: futex"), 1u);
	/* syscalls that did not block end as themselves, on the thread that made them */
	size_t begins = gt_dump_123_count(dump, "Running->Syscall");
	size_t ends = gt_dump_123_count(dump, "Syscall->Running") +
		      gt_dump_123_count(dump, "Syscall->Runnable");
	cr_assert_geq(begins, 5u);
	cr_assert_eq(begins, ends);
	assert_viewer_pages();
	/* the network waits in the net profile; the pipe read, a hand-off, in the sync one */
	for (int k = 0; k < 2; k++) {
		char *p = gt_pprof_text(trace, k ? "sync" : "net", "1.23");
		cr_assert_not_null(p);
		cr_assert(strstr(p, "s_syscalls "), "%s profile:\n%s", k ? "sync" : "net", p);
		free(p);
	}
}

Test(e2e_go122, long_run_in_generations_and_cut_inside_one, .fini = teardown, .timeout = 300)
{
	const char *argv[] = {getenv("GT_TEST_TICKER"), NULL};
	cr_assert_not_null(argv[0], "GT_TEST_TICKER: the e2e-ticker program");
	run_go122(argv);
	cr_assert_str_eq(traced.out, "rounds 300\n");
	uint64_t gen[16], end;
	ssize_t gens = gt_trace_v2_generations(trace, gen, 16, &end);
	/* three seconds, a generation a second */
	cr_assert_geq(gens, 3, "%zd generations", gens);
	cr_assert_leq(gens, 6, "%zd generations", gens);
	cr_assert_eq(gt_dump_123_count(dump, "Label=\"ticker-1\""), 1u);
	cr_assert_eq(assert_one_m_per_thread(traced.pid), 4u);
	assert_viewer_pages();

	/* the file cut where generation 3 begins reads completely; cut inside generation 3
	 * (its second batch's last byte missing), it still gives every event of generations 1
	 * and 2 */
	uint64_t second = gt_trace_v2_batch_end(trace, gen[2]);
	cr_assert_gt(second, 0u);
	uint64_t after = gt_trace_v2_batch_end(trace, second);
	cr_assert_gt(after, second + 2, "generation 3 has a second batch");
	char whole[PATH_MAX + 32], cut[PATH_MAX + 32];
	snprintf(whole, sizeof whole, "%s.gen2", trace);
	snprintf(cut, sizeof cut, "%s.cut", trace);
	FILE *in = fopen(trace, "rb");
	cr_assert_not_null(in);
	char *bytes = malloc(end);
	cr_assert_eq(fread(bytes, 1, end, in), end);
	fclose(in);
	FILE *a = fopen(whole, "wb"), *b = fopen(cut, "wb");
	cr_assert(a && b);
	cr_assert_eq(fwrite(bytes, 1, gen[2], a), gen[2]);
	cr_assert_eq(fwrite(bytes, 1, after - 1, b), after - 1);
	fclose(a);
	fclose(b);
	free(bytes);
	char *d2 = NULL, *dcut = NULL, *err = NULL;
	cr_assert_eq(gt_dump_v2(whole, "1.22", &d2, NULL), 0);
	size_t events2 = gt_dump_v2_events(d2);
	cr_assert_gt(events2, 0u);
	cr_assert_lt(events2, gt_dump_v2_events(dump));
	for (int v = 0; v < 2; v++) {
		const char *version = v ? "1.23" : "1.22";
		int st = gt_dump_v2(cut, version, &dcut, &err);
		cr_assert_neq(st, 0, "Go %s reads a cut generation as whole", version);
		/* 1.22 stops at the batch; 1.23 reads the cut generation's batches up to it and
		 * finds it incomplete (its Frequency comes last) */
		cr_assert(strstr(err, v ? "no frequency event found" : "failed to read full batch"),
			  "Go %s: %s", version, err);
		cr_assert_eq(gt_dump_v2_events(dcut), events2, "Go %s", version);
		free(dcut);
		free(err);
	}
	free(d2);
}

Test(e2e_go122, cpp_threads_mutex_condvar, .fini = teardown, .timeout = 300)
{
	const char *prog = getenv("GT_TEST_CPP");
	if (!prog || !*prog)
		cr_skip_test("cpp-workers was not built (no C++ compiler)");
	const char *argv[] = {prog, NULL};
	run_go122(argv);
	cr_assert_str_eq(traced.out, "sum 820\n");
	cr_assert_eq(gt_dump_123_count(dump, "G=1 NotExist->Runnable"), 4u, "four std::threads");
	cr_assert_geq(blocks("sync: pthread_cond_wait"), 10u, "workers wait for the producer: %zu",
		      blocks("sync: pthread_cond_wait"));
	cr_assert_geq(gt_dump_123_count(dump, "G=1 Waiting->Runnable"), 10u,
		      "the producer (G1) wakes them");
	cr_assert_eq(assert_one_m_per_thread(traced.pid), 5u);
}
