/* One run, one trace: every traced process of a `gotrace run` in one trace, each thread a
 * goroutine labelled "prog[pid] name"; --per-process keeps a trace per process; `gotrace
 * convert` of the kept captures writes the same trace; many short processes make one trace
 * and a summary of a few lines; a wait one process ends in another (a pipe read, waitpid, a
 * process-shared semaphore) is unblocked by that process's goroutine.  Each traced run is
 * compared with the untraced one. */
#include "capture_builder.h"
#include "cli_support.h"
#include "oracle.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char forking[] = GT_TEST_FORKING;

/* Files in dir whose name starts with prefix. */
static size_t count_files(const char *dir, const char *prefix)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;
	cr_assert_not_null(d);
	while ((e = readdir(d)) != NULL)
		n += strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}

/* Runs argv untraced and under `gotrace run --format go1.19 OPTIONS -o trace` (the tests read
 * Go 1.19's events); asserts the same status and stdout, returns the traced run. */
static void run_both(const char *const *argv, const char *const *options, const char *trace,
		     struct cli_result *traced)
{
	struct cli_result plain;
	const char *targv[32];
	size_t n = 0;
	targv[n++] = cli_gotrace;
	targv[n++] = "run";
	targv[n++] = "--format=go1.19";
	for (size_t i = 0; options && options[i]; i++)
		targv[n++] = options[i];
	targv[n++] = "-o";
	targv[n++] = trace;
	targv[n++] = "--";
	for (size_t i = 0; argv[i]; i++)
		targv[n++] = argv[i];
	targv[n] = NULL;
	cli_run(&plain, argv, NULL);
	cli_run(traced, targv, NULL);
	cr_assert_eq(traced->status, plain.status, "status %d traced, %d untraced: %s",
		     traced->status, plain.status, traced->err);
	cr_assert_str_eq(traced->out, plain.out);
	cli_result_free(&plain);
}

/* The pids of the goroutine labels "prog[pid]..." of trace (Go 1.19's reading), and how
 * many of them have a label ending in name. */
struct labels {
	unsigned pids[16], named_pids[16];
	size_t n_pids, n_named;
};

static void add_pid(unsigned *pids, size_t *n, unsigned pid)
{
	for (size_t i = 0; i < *n; i++)
		if (pids[i] == pid)
			return;
	if (*n < 16)
		pids[(*n)++] = pid;
}

static void read_labels(const struct gt_events *ev, const char *prog, const char *name,
			struct labels *out)
{
	*out = (struct labels){ 0 };
	for (size_t i = 0; i < ev->n; i++) {
		char label[128];
		if (strcmp(ev->ev[i].type, "GoStartLabel") != 0 ||
		    !gt_event_string(&ev->ev[i], "label", label, sizeof label))
			continue;
		size_t len = strlen(prog);
		cr_assert(strncmp(label, prog, len) == 0 && label[len] == '[',
			  "label '%s' does not name its process", label);
		unsigned pid = (unsigned)strtoul(label + len + 1, NULL, 10);
		add_pid(out->pids, &out->n_pids, pid);
		const char *rest = strchr(label, ']');
		if (rest && rest[1] == ' ' && strcmp(rest + 2, name) == 0)
			add_pid(out->named_pids, &out->n_named, pid);
	}
}

Test(one_trace, every_process_of_a_run_in_one_trace, .timeout = 120)
{
	char dir[512], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "t.trace");
	const char *argv[] = { forking, NULL };
	run_both(argv, NULL, trace, &r);
	cr_assert_str_eq(r.out, "child 1 returned 1\nchild 2 returned 2\nparent counted 2000\n");
	cr_assert_eq(count_files(dir, "t.trace"), 1, "not one trace: %s", r.err);
	cr_assert_not_null(strstr(r.err, ": 3 processes, 8 threads,"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "programs: 3 forking"), "%s", r.err);

	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace, false, &report), 0, "%s", report ? report : "");
	free(report);
	struct gt_events *ev = gt_events_parse_119(trace);
	cr_assert_not_null(ev);
	struct labels kids, parent;
	read_labels(ev, "forking", "kid-worker", &kids);
	read_labels(ev, "forking", "parent-worker", &parent);
	cr_expect_eq(kids.n_pids, 3, "goroutines of %zu processes", kids.n_pids);
	cr_expect_eq(kids.n_named, 2, "kid-worker threads in %zu processes", kids.n_named);
	cr_expect_eq(parent.n_named, 1);
	for (size_t i = 0; i < kids.n_named; i++)
		cr_expect_neq(kids.named_pids[i], parent.named_pids[0], "a child has the parent's pid");
	/* one goroutine per thread: 3 main threads, 1 + 2 + 2 workers; Ps are the CPUs */
	cr_expect_eq(gt_events_count(ev, "GoCreate", GT_ANY, GT_ANY), 8);
	gt_events_free(ev);
	cli_result_free(&r);
}

Test(one_trace, per_process_keeps_a_trace_per_process, .timeout = 120)
{
	char dir[512], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "t.trace");
	const char *argv[] = { forking, NULL };
	const char *options[] = { "--per-process", NULL };
	run_both(argv, options, trace, &r);
	cr_assert_eq(count_files(dir, "t.trace"), 3, "%s", r.err);
	cr_assert_eq(count_files(dir, "t.trace."), 2, "%s", r.err);
	cr_assert_null(strstr(r.err, "processes"), "%s", r.err);
	struct gt_events *ev = gt_events_parse_119(trace);
	cr_assert_not_null(ev);
	/* the parent alone: its main thread and its worker, labelled by thread name only */
	cr_expect_eq(gt_events_count(ev, "GoCreate", GT_ANY, GT_ANY), 2);
	gt_events_free(ev);
	cli_result_free(&r);
}

Test(one_trace, convert_of_the_kept_captures_is_the_same_trace, .timeout = 120)
{
	char dir[512], trace[600], caps[600], again[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "t.trace");
	cli_path(caps, sizeof caps, dir, "caps");
	cli_path(again, sizeof again, dir, "again.trace");
	const char *argv[] = { forking, NULL };
	const char *options[] = { "--keep-capture", "--capture-dir", caps, NULL };
	run_both(argv, options, trace, &r);
	/* 3 captures, and the run's kernel records where perf is permitted */
	cr_assert_eq(count_files(caps, "gotrace-"), 3 + (strstr(r.err, "gotrace: kernel: ") != NULL),
		     "%s", r.err);
	cli_result_free(&r);

	const char *conv[] = { cli_gotrace, "convert", "--format", "go1.19", caps, "-o", again, NULL };
	cli_run(&r, conv, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.err, ": 3 processes, 8 threads,"), "%s", r.err);
	cli_result_free(&r);
	char cmp[2048];
	snprintf(cmp, sizeof cmp, "cmp -s '%s' '%s'", trace, again);
	cr_assert_eq(system(cmp), 0, "convert of %s differs from run's trace", caps);
}

/* --per-process converts in worker processes, a CPU's worth at once: the traces are those
 * `gotrace convert --per-process` makes of the same captures, one after another, and the
 * summary lines come in the same order. */
Test(one_trace, per_process_conversions_in_workers_are_the_sequential_ones, .timeout = 120)
{
	char dir[512], trace[600], caps[600], again[600];
	struct cli_result r, c;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "t.trace");
	cli_path(caps, sizeof caps, dir, "caps");
	cli_path(again, sizeof again, dir, "again.trace");
	const char *argv[] = { forking, NULL };
	const char *options[] = { "--per-process", "--keep-capture", "--capture-dir", caps, NULL };
	run_both(argv, options, trace, &r);
	cr_assert_eq(count_files(dir, "t.trace"), 3, "%s", r.err);
	const char *conv[] = { cli_gotrace, "convert", "--format", "go1.19", "--per-process", caps,
			       "-o", again, NULL };
	cli_run(&c, conv, NULL);
	cr_assert_eq(c.status, 0, "%s", c.err);
	/* the same traces under the other name, in the same order of summary lines */
	const char *from = r.err, *from_c = c.err;
	for (int k = 0; k < 3; k++) {
		const char *a = strstr(from, "t.trace"), *b = strstr(from_c, "again.trace");
		cr_assert(a && b, "trace %d missing:\n%s\n%s", k, r.err, c.err);
		const char *pa = strstr(a, "(pid "), *pb = strstr(b, ": pid ");
		cr_assert(pa && pb);
		cr_assert_eq(atoi(pa + 5), atoi(pb + 6), "order differs:\n%s\n%s", r.err, c.err);
		char suffix[32] = "", cmp[2048];
		sscanf(a + 7, "%31[^:]", suffix);
		snprintf(cmp, sizeof cmp, "cmp -s '%s%s' '%s%s'", trace, suffix, again, suffix);
		cr_assert_eq(system(cmp), 0, "t.trace%s differs from convert's", suffix);
		from = a + 7;
		from_c = b + 11;
	}
	cli_result_free(&c);
	cli_result_free(&r);
}

Test(one_trace, many_short_processes_make_one_trace_and_a_short_summary, .timeout = 240)
{
	char dir[512], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "t.trace");
	const char *argv[] = { "/bin/sh", "-c",
			       "i=0; while [ $i -lt 200 ]; do /bin/true; i=$((i+1)); done; echo done",
			       NULL };
	run_both(argv, NULL, trace, &r);
	cr_assert_str_eq(r.out, "done\n");
	cr_assert_eq(count_files(dir, "t.trace"), 1, "%s", r.err);
	/* status line, totals, programs, longest, next steps (2), and where perf is permitted
	 * the kernel records' line, the line of what they drew and, when the 99 Hz sampler
	 * caught any of the run's CPU time (a run of seconds on a busy machine), the samples' */
	cr_assert_leq(cli_count_lines(r.err), 6 + (strstr(r.err, "gotrace: kernel: ") != NULL) +
						  (strstr(r.err, "threads placed by the kernel") != NULL) +
						  (strstr(r.err, "gotrace: CPU samples: ") != NULL),
		      "%s", r.err);
	cr_assert_not_null(strstr(r.err, ": 201 processes, 201 threads,"), "%s", r.err);
	cr_assert_not_null(strstr(r.err, "programs: 200 true, 1 sh\n"), "%s", r.err);
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace, true, &report), 0, "%s", report ? report : "");
	free(report);
	struct gt_events *ev = gt_events_parse_119(trace);
	cr_assert_not_null(ev);
	cr_expect_eq(gt_events_count(ev, "GoCreate", GT_ANY, GT_ANY), 201);
	/* every /bin/true's goroutine ended with its process */
	cr_expect_geq(gt_events_count(ev, "GoEnd", GT_ANY, GT_ANY), 200);
	gt_events_free(ev);
	cli_result_free(&r);
}

/* A capture of pid with one thread that sleeps; its program is prog. */
static struct gt_cb *small_capture(uint32_t pid, const char *prog, uint64_t start)
{
	struct gt_cb *cb = gt_cb_new(1, 16384, start);
	gt_cb_header(cb)->pid = pid;
	snprintf(gt_cb_header(cb)->exe_path, sizeof gt_cb_header(cb)->exe_path, "/usr/bin/%s", prog);
	gt_cb_thread_existing(cb, 0, start + 10, 1, 0, 0);
	gt_cb_block_begin(cb, 0, start + 100, 1, GT_BK_SLEEP, 0, 0);
	gt_cb_block_end(cb, 0, start + 200, 1, GT_BK_SLEEP, 0, GT_BR_OK);
	return cb;
}

/* What each capture lost is said with its process, as it was for its own trace. */
Test(one_trace, losses_are_said_per_process)
{
	char dir[512], a[600], b[600], trace[600];
	cli_tempdir(dir, sizeof dir);
	cli_path(a, sizeof a, dir, "a.gtcap");
	cli_path(b, sizeof b, dir, "b.gtcap");
	cli_path(trace, sizeof trace, dir, "t.trace");
	struct gt_cb *ca = small_capture(100, "alpha", 1000000);
	gt_cb_notice(ca, 0, 1000150, GT_NOTICE_DROPPED, 5);
	cr_assert_eq(gt_cb_write(ca, a), 0);
	gt_cb_free(ca);
	struct gt_cb *cb = small_capture(200, "beta", 1000050);
	struct gt_file_header *h = gt_cb_header(cb);
	h->flags |= GT_FILE_WRITE_FAILED;
	h->stop_errno = ENOSPC;
	h->stop_tsc = h->start_tsc + 150;
	h->facts_lost = 7;
	cr_assert_eq(gt_cb_write(cb, b), 0);
	gt_cb_free(cb);

	struct cli_result r;
	const char *conv[] = { cli_gotrace, "convert", "--format", "go1.19", "--no-symbols", a, b,
			       "-o", trace, NULL };
	cli_run(&r, conv, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_expect_not_null(strstr(r.err, ": 2 processes, 2 threads,"), "%s", r.err);
	cr_expect_not_null(strstr(r.err, "gotrace:   pid 100 (alpha): 5 facts dropped while "
				       "recording"), "%s", r.err);
	cr_expect_not_null(strstr(r.err, "gotrace:   pid 200 (beta): recording stopped early at "),
			   "%s", r.err);
	cr_expect_not_null(strstr(r.err, "no space left on the file system; at least 7 facts"),
			   "%s", r.err);
	cr_expect_null(strstr(r.err, "pid 200 (beta): 5 facts"), "a loss said of the wrong process");
	cli_result_free(&r);
}

/* Waits one process ends in another, in one trace (targets/gt_kobj.c): each wake's waker is
 * the goroutine of the process that ended the wait, never an unknown one. */
static const char kobj[] = GT_TEST_KOBJ;

/* The last label of goroutine g ("prog[pid] name"), "" when it has none. */
static const char *label_of(const struct gt_events *ev, uint64_t g, char *buf, size_t len)
{
	buf[0] = 0;
	for (size_t i = 0; i < ev->n; i++)
		if (ev->ev[i].g == (int64_t)g && strcmp(ev->ev[i].type, "GoStartLabel") == 0)
			gt_event_string(&ev->ev[i], "label", buf, len);
	return buf;
}

static unsigned pid_of(const struct gt_events *ev, uint64_t g)
{
	char label[128];
	const char *p = strchr(label_of(ev, g, label, sizeof label), '[');
	cr_assert_not_null(p, "goroutine %lu has no process label", (unsigned long)g);
	return (unsigned)strtoul(p + 1, NULL, 10);
}

/* Asserts that goroutine g blocks n times in events of type block and that each of its
 * unblocks is by goroutine waker. */
static void woken_by(const struct gt_events *ev, const char *block, uint64_t g, size_t n,
		     uint64_t waker)
{
	cr_assert_eq(gt_events_count(ev, block, (int64_t)g, GT_ANY), n, "%s of goroutine %lu",
		     block, (unsigned long)g);
	size_t k = 0;
	for (ssize_t i = 0; (i = gt_events_find_arg(ev, (size_t)i, "GoUnblock", "g", g)) >= 0; i++, k++)
		cr_expect_eq(ev->ev[i].g, (int64_t)waker, "unblock %zu of goroutine %lu by %ld, not %lu",
			     k, (unsigned long)g, (long)ev->ev[i].g, (unsigned long)waker);
	cr_assert_eq(k, n, "goroutine %lu unblocked %zu times", (unsigned long)g, k);
}

/* `gotrace run -o` of gt-kobj SCENARIO N, compared with the untraced run, nothing lost; the
 * trace parsed. */
static struct gt_events *kobj_trace_of(const char *scenario, const char *n, const char *out,
					const char *const *options, int processes)
{
	char dir[512], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "t.trace");
	const char *argv[] = { kobj, scenario, n, NULL };
	run_both(argv, options, trace, &r);
	cr_assert_str_eq(r.out, out);
	char procs[32];
	snprintf(procs, sizeof procs, ": %d processes,", processes);
	cr_assert_not_null(strstr(r.err, procs), "%s", r.err);
	cr_assert_null(strstr(r.err, "dropped"), "%s", r.err);
	cli_result_free(&r);
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace, true, &report), 0, "%s", report ? report : "");
	free(report);
	struct gt_events *ev = gt_events_parse_119(trace);
	cr_assert_not_null(ev);
	return ev;
}

static struct gt_events *kobj_trace(const char *scenario, const char *n, const char *out,
				     const char *const *options)
{
	return kobj_trace_of(scenario, n, out, options, 2);
}

/* the parent writes 20 lines, each once the child sleeps in read, then closes the pipe; it
 * then sleeps in waitpid until the child exits (with options, gotrace run's) */
static void pipeline_wakers(const char *const *options)
{
	struct gt_events *ev = kobj_trace("pipeline", "20", "child read 20 lines, 150 bytes, then "
							     "end of file\nchild exited 0\n", options);
	ssize_t read = gt_events_find(ev, 0, "GoBlockNet", GT_ANY, GT_ANY);
	ssize_t wait = gt_events_find(ev, 0, "GoBlock", GT_ANY, GT_ANY);
	cr_assert(read >= 0 && wait >= 0, "the child's reads and the parent's waitpid block");
	uint64_t reader = (uint64_t)ev->ev[read].g, parent = (uint64_t)ev->ev[wait].g;
	cr_assert_neq(pid_of(ev, reader), pid_of(ev, parent), "two processes");
	/* 20 reads ended by a write, the 21st (end of file) by the close */
	woken_by(ev, "GoBlockNet", reader, 21, parent);
	woken_by(ev, "GoBlock", parent, 1, reader);
	gt_events_free(ev);
}

Test(one_trace, a_pipe_read_is_woken_by_the_writer_process_and_waitpid_by_the_child,
     .timeout = 120)
{
	pipeline_wakers(NULL);
}

/* The kernel's switch-out of the reader inside its read comes before the writer's fact that
 * wakes it: the reads are still pipe waits with their waker, not blocking syscalls. */
Test(one_trace, with_kernel_records_a_pipe_read_is_still_woken_by_the_writer_process,
     .timeout = 120)
{
	static const char *const kernel_on[] = { "--kernel=on", NULL };
	pipeline_wakers(kernel_on);
}

/* 200 waits of a child on a semaphore in a MAP_SHARED page, each posted by its parent: none
 * lost by the recorder's waiter table, each woken by the parent (issue 27 item 1: the table
 * never matched a process-shared object's kernel key and lost all waits past the 8th). */
Test(one_trace, two_hundred_process_shared_waits_are_all_kept, .timeout = 120)
{
	struct gt_events *ev = kobj_trace("psem", "200", "child waited 200 times on the inherited "
							  "mapping\nchild exited 0\n", NULL);
	ssize_t b = gt_events_find(ev, 0, "GoBlockSync", GT_ANY, GT_ANY);
	cr_assert_geq(b, 0, "the child's waits");
	uint64_t child = (uint64_t)ev->ev[b].g;
	ssize_t u = gt_events_find_arg(ev, 0, "GoUnblock", "g", child);
	cr_assert_geq(u, 0);
	uint64_t parent = (uint64_t)ev->ev[u].g;
	cr_assert_neq(pid_of(ev, child), pid_of(ev, parent), "two processes");
	woken_by(ev, "GoBlockSync", child, 200, parent);
	gt_events_free(ev);
}

Test(one_trace, a_process_shared_semaphore_is_posted_to_the_waiter_of_another_process,
     .timeout = 120)
{
	/* the child and the parent's thread wait on the semaphore, the child first: each first
	 * post of a round is the child's, each second one the thread's.  Choosing between them
	 * needs the next facts of both processes. */
	struct gt_events *ev = kobj_trace("psem-two", "10", "child waited 10 times\nthe thread "
							     "waited 10 times\nchild exited 0\n", NULL);
	uint64_t thread = 0, child = 0;
	char label[128];
	for (size_t i = 0; i < ev->n; i++)
		if (strcmp(ev->ev[i].type, "GoBlockSync") == 0) {
			uint64_t g = (uint64_t)ev->ev[i].g;
			const char *l = label_of(ev, g, label, sizeof label);
			*(strstr(l, " sem-waiter") ? &thread : &child) = g;
		}
	cr_assert(thread && child, "both wait");
	ssize_t create = gt_events_find_arg(ev, 0, "GoCreate", "g", thread);
	cr_assert_geq(create, 0);
	uint64_t parent = (uint64_t)ev->ev[create].g;
	cr_assert_eq(pid_of(ev, parent), pid_of(ev, thread));
	cr_assert_neq(pid_of(ev, child), pid_of(ev, parent), "two processes");
	woken_by(ev, "GoBlockSync", child, 10, parent);
	woken_by(ev, "GoBlockSync", thread, 10, parent);
	gt_events_free(ev);
}

/* The goroutine that makes the first event of type `type` (GT_ANY when none). */
static int64_t first_of(const struct gt_events *ev, const char *type)
{
	ssize_t i = gt_events_find(ev, 0, type, GT_ANY, GT_ANY);
	return i < 0 ? GT_ANY : ev->ev[i].g;
}

/* 100 times a child sleeps on a process-shared mutex its parent holds: each wait ends by the
 * parent's unlock (issue 27 item 1) */
Test(one_trace, a_process_shared_mutex_is_handed_to_the_waiter_of_another_process,
     .timeout = 120)
{
	struct gt_events *ev = kobj_trace("pmutex", "100", "child locked 100 times\nchild exited 0\n",
					  NULL);
	int64_t child = first_of(ev, "GoBlockSync");
	cr_assert_neq(child, GT_ANY, "the child's waits");
	ssize_t u = gt_events_find_arg(ev, 0, "GoUnblock", "g", (uint64_t)child);
	cr_assert_geq(u, 0);
	uint64_t parent = (uint64_t)ev->ev[u].g;
	cr_assert_neq(pid_of(ev, (uint64_t)child), pid_of(ev, parent), "two processes");
	woken_by(ev, "GoBlockSync", (uint64_t)child, 100, parent);
	gt_events_free(ev);
}

/* 100 times a child waits on a process-shared condition variable until its parent signals it
 * (issue 27 item 1) */
Test(one_trace, a_process_shared_condition_is_signalled_by_another_process, .timeout = 120)
{
	struct gt_events *ev = kobj_trace("pcond", "100", "child waited for 100 turns\nchild exited 0\n",
					  NULL);
	int64_t child = first_of(ev, "GoBlockCond");
	cr_assert_neq(child, GT_ANY, "the child's waits");
	ssize_t u = gt_events_find_arg(ev, 0, "GoUnblock", "g", (uint64_t)child);
	cr_assert_geq(u, 0);
	uint64_t parent = (uint64_t)ev->ev[u].g;
	cr_assert_neq(pid_of(ev, (uint64_t)child), pid_of(ev, parent), "two processes");
	/* woken by the signal, the child may sleep again inside glibc on the mutex the parent
	 * still holds: that wait (GoBlockSync, or an untraced GoBlock before issue 27's fix, with
	 * no waker) ends by the parent's unlock */
	cr_assert_eq(gt_events_count(ev, "GoBlockCond", child, GT_ANY), 100);
	size_t again = gt_events_count(ev, "GoBlockSync", child, GT_ANY);
	cr_assert_eq(gt_events_count(ev, "GoBlock", child, GT_ANY), 0, "waits without a waker");
	size_t k = 0;
	for (ssize_t i = 0;
	     (i = gt_events_find_arg(ev, (size_t)i, "GoUnblock", "g", (uint64_t)child)) >= 0;
	     i++, k++)
		cr_expect_eq(ev->ev[i].g, (int64_t)parent, "unblock %zu of the child by %ld", k,
			     (long)ev->ev[i].g);
	cr_assert_eq(k, 100 + again, "%zu unblocks for 100 condition waits and %zu mutex waits", k,
		     again);
	gt_events_free(ev);
}

/* postgres' shape: six processes, each sleeping 50 times on a semaphore of its own, each wait
 * ended by the one process that posts them all */
Test(one_trace, many_processes_each_on_its_own_semaphore_are_woken_by_the_poster,
     .timeout = 180)
{
	struct gt_events *ev = kobj_trace_of("psem-many", "50",
					     "6 children waited 50 times each, 0 did not\n", NULL, 7);
	uint64_t waiters[8], parent = 0;
	int children = 0;
	for (size_t i = 0; i < ev->n; i++) {
		if (strcmp(ev->ev[i].type, "GoBlockSync"))
			continue;
		uint64_t g = (uint64_t)ev->ev[i].g;
		bool seen = false;
		for (int k = 0; k < children; k++)
			seen |= waiters[k] == g;
		if (seen)
			continue;
		cr_assert_lt(children, 8, "more than six goroutines wait on semaphores");
		waiters[children++] = g;
		ssize_t u = gt_events_find_arg(ev, 0, "GoUnblock", "g", g);
		cr_assert_geq(u, 0, "goroutine %lu never unblocked", (unsigned long)g);
		if (!parent)
			parent = (uint64_t)ev->ev[u].g;
		cr_assert_neq(pid_of(ev, g), pid_of(ev, parent), "goroutine %lu in the poster's process",
			      (unsigned long)g);
		woken_by(ev, "GoBlockSync", g, 50, parent);
	}
	cr_assert_eq(children, 6, "%d children's waits seen", children);
	gt_events_free(ev);
}

/* A process killed while blocked records no end (issue 27 item 8): its lifetime ends where
 * its parent's wait returned its pid, not at its last fact (the start of its read).  The
 * parent measured it: at least from the child's "ready" to the kill, at most from before the
 * fork to the reap; the report's lifetime of its thread must lie in between, give or take
 * 0.2% of it for the clocks (the capture's TSC at its nominal rate, CLOCK_MONOTONIC).
 * killed_child reaps it by HOW (waitpid, waitid-pid, waitid-all, waitid-pidfd); trace's
 * captures are kept; the child's pid and its life as the parent measured it. */
static unsigned killed_child_reaped_by(const char *how, const char *trace, double *lo,
				       double *hi)
{
	const char *argv[] = { GT_TEST_KILLED_CHILD, how, NULL };
	const char *options[] = { "--keep-capture", NULL };
	struct cli_result r;
	run_both(argv, options, trace, &r);
	cr_assert_eq(r.status, 0, "%s", r.err);
	const char *said = strstr(r.err, "child ");
	unsigned pid = 0;
	cr_assert(said && sscanf(said, "child %u lived %lf..%lf ms", &pid, lo, hi) == 3, "%s",
		  r.err);
	char line[96];
	snprintf(line, sizeof line, "gotrace:   pid %u was killed", pid);
	cr_assert_not_null(strstr(r.err, line), "reaped by %s: %s", how, r.err);
	cli_result_free(&r);
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace, true, &report), 0, "%s", report ? report : "");
	free(report);
	return pid;
}

/* Asserts that alive ms, the child's life as a trace or report tells it, lies in lo..hi. */
static void assert_life(double alive, double lo, double hi, const char *what, const char *text)
{
	double slack = hi * 0.002;
	cr_assert(alive >= lo - slack && alive <= hi + slack,
		  "%s: alive %.3f ms, the parent measured %.3f..%.3f ms:\n%s", what, alive, lo, hi,
		  text);
}

/* The report of trace: the lifetime of process pid's main thread, in ms. */
static double reported_life(const char *trace, unsigned pid, struct cli_result *r)
{
	const char *rep[] = { cli_gotrace, "report", trace, NULL };
	cli_run(r, rep, NULL);
	cr_assert_eq(r->status, 0, "%s", r->err);
	char process[64];
	snprintf(process, sizeof process, "process: pid %u,", pid);
	const char *at = strstr(r->out, process);
	cr_assert_not_null(at, "%s", r->out);
	const char *row = strstr(at, "\n  1 ");
	cr_assert_not_null(row, "%s", at);
	/* "1  TID  NAME  [main thread]  ALIVE ..." */
	unsigned tid = 0;
	cr_assert_eq(sscanf(row, " 1 %u", &tid), 1, "%s", at);
	cr_assert_eq(tid, pid, "%s", at);
	const char *routine = strstr(row, "[main thread] ");
	cr_assert(routine && routine < strchr(row + 1, '\n'), "%s", at);
	return strtod(routine + strlen("[main thread] "), NULL);
}

static void killed_child_lives_until_reaped(const char *how)
{
	char dir[512], trace[600];
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "k.trace");
	double lo, hi;
	unsigned pid = killed_child_reaped_by(how, trace, &lo, &hi);
	struct cli_result r;
	double alive = reported_life(trace, pid, &r);   /* before r.out is read */
	assert_life(alive, lo, hi, how, r.out);
	cli_result_free(&r);
}

Test(one_trace, a_killed_process_lives_until_its_parent_reaps_it, .timeout = 120)
{
	killed_child_lives_until_reaped("waitpid");
}

/* waitid returns 0 and names the child in its siginfo: its reaps are recognised as well. */
Test(one_trace, a_killed_process_lives_until_its_parent_reaps_it_by_waitid, .timeout = 120)
{
	killed_child_lives_until_reaped("waitid-pid");
	killed_child_lives_until_reaped("waitid-all");
	killed_child_lives_until_reaped("waitid-pidfd");
}

/* A wait4 that returns a stopped child's pid (WUNTRACED) reaps nothing: the child lives on
 * until the reap after its kill, a second later. */
Test(one_trace, a_stopped_child_seen_by_waitpid_lives_until_reaped, .timeout = 120)
{
	killed_child_lives_until_reaped("waitpid-stopped");
}

/* The life of G1 (a process's main thread, in its own trace) in ms: from the trace's first
 * event (its first fact) to its GoEnd, or, where none ends it, to its last event. */
static double own_trace_life(const char *trace)
{
	struct gt_events *ev = gt_events_parse_119(trace);
	cr_assert_not_null(ev, "Go 1.19 rejects %s", trace);
	ssize_t end = gt_events_g_end(ev, 1);
	cr_assert_geq(end, 0, "no G1 in %s", trace);
	double ms = (double)ev->ev[end].ts_ns / 1e6;
	gt_events_free(ev);
	return ms;
}

/* A trace per process (`gotrace run --per-process`, `gotrace convert --per-process` of the
 * kept captures): the killed child's own trace ends it at its parent's reap too, which only
 * the parent's capture says. */
Test(one_trace, a_killed_process_own_trace_ends_where_its_parent_reaps_it, .timeout = 120)
{
	char dir[512], trace[600], child_capture[640], child_trace[640], converted[600];
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "k.trace");
	cli_path(converted, sizeof converted, dir, "c.trace");
	const char *argv[] = { GT_TEST_KILLED_CHILD, NULL };
	const char *options[] = { "--keep-capture", "--per-process", NULL };
	struct cli_result r;
	run_both(argv, options, trace, &r);
	cr_assert_eq(r.status, 0, "%s", r.err);
	unsigned pid = 0;
	double lo = 0, hi = 0;
	const char *said = strstr(r.err, "child ");
	cr_assert(said && sscanf(said, "child %u lived %lf..%lf ms", &pid, &lo, &hi) == 3, "%s",
		  r.err);
	snprintf(child_trace, sizeof child_trace, "%s.%u", trace, pid);
	assert_life(own_trace_life(child_trace), lo, hi, "gotrace run --per-process", r.err);
	cli_result_free(&r);

	snprintf(child_capture, sizeof child_capture, "%s.%u.gtcap", trace, pid);
	char parent_capture[620];
	snprintf(parent_capture, sizeof parent_capture, "%s.gtcap", trace);
	const char *conv[] = { cli_gotrace, "convert", "--per-process", "--format", "go1.19",
			       parent_capture, child_capture, "-o", converted, NULL };
	cli_run(&r, conv, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	snprintf(child_trace, sizeof child_trace, "%s.%u", converted, pid);
	assert_life(own_trace_life(child_trace), lo, hi, "gotrace convert --per-process", r.err);
	cli_result_free(&r);
}
