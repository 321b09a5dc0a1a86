/* The kernel's context switches drawn (issue 15, item 2): programs whose truth the test
 * knows, traced with gotrace run --kernel=on, as root and as nobody, in both formats.
 * Four CPU-bound threads on fewer CPUs, and an OpenMP team with uneven work before each
 * barrier: each thread's running time in the trace is within 25% of the CPU time it
 * measured itself (CLOCK_THREAD_CPUTIME_ID), no more threads run at once than there are
 * CPUs, and libgomp's barrier waits (its own futex syscalls, which no hook sees) are
 * waits.  Every traced run is compared with the same program run untraced, and every Go
 * reader must accept every trace. */
#include "cli_support.h"
#include "kernel/reader.h"
#include "oracle.h"

#include <criterion/criterion.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#define SETPRIV "/usr/bin/setpriv"
#define MAX_THREADS 8
#define BURN_THREADS 4
#define BURN_MS "150"
#define OMP_ROUNDS 6
#define OMP_MS "8"

struct program {
	const char *path;
	const char *args[3];   /* before the CPU file */
	const char *env;       /* "NAME=VALUE" or NULL */
	uint64_t first_g;      /* the goroutine of index 0, in creation order */
};

static const struct program burn = {
	GT_TEST_BURN, { "4", BURN_MS, NULL }, NULL, 2,   /* G1 is main */
};
/* passive: a barrier waits off its CPU at once instead of spinning first */
static const struct program omp = {
	GT_TEST_OMP, { "6", OMP_MS, NULL }, "OMP_WAIT_POLICY=passive", 1,   /* index 0 is main */
};

/* What the trace shows of each thread (its goroutine), from Go 1.23's dump. */
struct drawn {
	uint64_t running_ns[MAX_THREADS];
	size_t untraced_waits[MAX_THREADS];   /* blocks named "off-CPU wait ..." (go1.22) */
	size_t waits[MAX_THREADS];            /* Running->Waiting */
	uint64_t ps[MAX_THREADS];             /* bit P: it ran on P */
	int max_running;                      /* goroutines running at one instant */
};

static bool as_nobody_possible(void)
{
	if (access(SETPRIV, X_OK) != 0)
		cr_skip_test("%s is missing (util-linux): cannot run the program unprivileged", SETPRIV);
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int level = 3;
	if (f == NULL || fscanf(f, "%d", &level) != 1)
		level = 3;
	if (f != NULL)
		fclose(f);
	if (level > 2)
		cr_skip_test("kernel.perf_event_paranoid=%d: perf events refused to non-root", level);
	return true;
}

/* "INDEX CPU_NS [TID]" lines (tids into tid when not NULL); returns how many threads wrote
 * one. */
static size_t read_cpu_file(const char *path, uint64_t cpu_ns[MAX_THREADS], int tid[MAX_THREADS])
{
	FILE *f = fopen(path, "r");
	cr_assert_not_null(f, "%s", path);
	char line[128];
	size_t n = 0;
	while (fgets(line, sizeof line, f) != NULL) {
		unsigned index;
		unsigned long long ns;
		int id = 0;
		cr_assert_geq(sscanf(line, "%u %llu %d", &index, &ns, &id), 2, "%s: %s", path, line);
		cr_assert_lt(index, MAX_THREADS);
		cpu_ns[index] = ns;
		if (tid != NULL)
			tid[index] = id;
		n++;
	}
	fclose(f);
	return n;
}

/* argv of [setpriv ...] then rest (NULL-terminated) into argv. */
static void with_user(const char **argv, size_t size, bool nobody, const char *const *rest)
{
	size_t n = 0;
	if (nobody) {
		argv[n++] = SETPRIV;
		argv[n++] = "--reuid=65534";
		argv[n++] = "--regid=65534";
		argv[n++] = "--clear-groups";
	}
	for (size_t i = 0; rest[i] != NULL; i++) {
		cr_assert_lt(n + 1, size);
		argv[n++] = rest[i];
	}
	argv[n] = NULL;
}

/* Runs p untraced, then traced (gotrace run --kernel=on --format FORMAT --keep-capture -o
 * TRACE), as nobody when asked; asserts both behave the same and every Go reader accepts
 * the trace; the traced run's CPU times into cpu_ns (their count into *n, tids into tid),
 * Go 1.23's dump returned. */
static char *run_twins(const struct program *p, const char *format, bool nobody,
		       uint64_t cpu_ns[MAX_THREADS], int tid[MAX_THREADS], size_t *n,
		       char trace[600])
{
	char dir[512], plain_cpu[600], traced_cpu[600];
	cli_tempdir(dir, sizeof dir);
	cr_assert_eq(chmod(dir, 0777), 0);   /* nobody writes the trace and the CPU times */
	cli_path(plain_cpu, sizeof plain_cpu, dir, "plain.cpu");
	cli_path(traced_cpu, sizeof traced_cpu, dir, "traced.cpu");
	cli_path(trace, 600, dir, "k.trace");
	const char *env[] = { p->env, NULL };
	const char *argv[24];

	struct cli_result plain, traced;
	const char *plain_rest[] = { p->path, p->args[0], p->args[1], plain_cpu, NULL };
	with_user(argv, 24, nobody, plain_rest);
	cli_run(&plain, argv, env);
	const char *traced_rest[] = { cli_gotrace, "run", "--kernel=on", "--format", format,
				      "--keep-capture", "-o", trace, "--", p->path, p->args[0],
				      p->args[1], traced_cpu, NULL };
	with_user(argv, 24, nobody, traced_rest);
	cli_run(&traced, argv, env);

	cr_assert_eq(plain.status, 0, "untraced: %d %s", plain.status, plain.err);
	cr_assert_str_empty(plain.err);
	cr_assert_eq(traced.status, plain.status, "traced status %d: %s", traced.status, traced.err);
	cr_assert_str_eq(traced.out, plain.out);
	cr_assert_null(strstr(traced.err, "no kernel scheduling data"),
		       "perf refused (paranoid <= 2 expected): %s", traced.err);
	cr_assert_not_null(strstr(traced.err, "threads placed by the kernel's context switches"),
			   "%s", traced.err);
	cr_assert_not_null(strstr(traced.err, ", 0 lost"), "kernel records lost: %s", traced.err);
	uint64_t plain_ns[MAX_THREADS] = { 0 };
	cr_assert_eq(read_cpu_file(plain_cpu, plain_ns, NULL), read_cpu_file(traced_cpu, cpu_ns, tid));
	*n = read_cpu_file(traced_cpu, cpu_ns, tid);
	cli_result_free(&plain);
	cli_result_free(&traced);

	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace, true, &report), 0, "a Go reader rejects %s:\n%s", trace,
		     report ? report : "");
	free(report);
	char *dump = gt_dump_123(trace);
	cr_assert_not_null(dump, "Go 1.23 rejects %s", trace);
	return dump;
}

static bool field_u64(const char *line, const char *name, uint64_t *v)
{
	const char *at = strstr(line, name);
	return at != NULL && sscanf(at + strlen(name), "%" SCNu64, v) == 1;
}

/* Each goroutine's running time and waits, and the most running at once, from the dump's
 * goroutine state transitions (in time order). */
static void drawn_of(const char *dump, uint64_t first_g, struct drawn *d)
{
	*d = (struct drawn){ 0 };
	uint64_t since[MAX_THREADS + 2] = { 0 };
	bool running[MAX_THREADS + 2] = { false };
	int now = 0;
	for (const char *line = dump; line != NULL && *line;) {
		const char *end = strchr(line, '\n');
		size_t len = end ? (size_t)(end - line) : strlen(line);
		char buf[512];
		snprintf(buf, sizeof buf, "%.*s", (int)(len < sizeof buf ? len : sizeof buf - 1), line);
		line = end ? end + 1 : NULL;
		uint64_t t, g;
		char *arrow = strstr(buf, "->");
		if (!strstr(buf, " StateTransition ") || !strstr(buf, "Resource=Goroutine(") ||
		    !field_u64(buf, " Time=", &t) || !field_u64(buf, " GoID=", &g) || !arrow)
			continue;
		bool from_running = arrow - buf >= 7 && strncmp(arrow - 7, "Running", 7) == 0;
		bool to_running = strncmp(arrow + 2, "Running", 7) == 0;
		bool to_waiting = strncmp(arrow + 2, "Waiting", 7) == 0;
		size_t k = g < MAX_THREADS + 2 ? (size_t)g : MAX_THREADS + 1;
		if (from_running && running[k]) {
			running[k] = false;
			now--;
			if (g >= first_g && g - first_g < MAX_THREADS)
				d->running_ns[g - first_g] += t - since[k];
			if (to_waiting && g >= first_g && g - first_g < MAX_THREADS) {
				d->waits[g - first_g]++;
				if (strstr(buf, "Reason=\"off-CPU wait, not seen by the hooks\""))
					d->untraced_waits[g - first_g]++;
			}
		}
		uint64_t p;
		if (to_running && g >= first_g && g - first_g < MAX_THREADS &&
		    field_u64(buf, " P=", &p) && p < 64)
			d->ps[g - first_g] |= 1ull << p;
		if (to_running) {
			running[k] = true;
			since[k] = t;
			if (++now > d->max_running)
				d->max_running = now;
		}
	}
}

struct kernel_cpus {
	const int *tid;
	uint64_t cpus[MAX_THREADS];   /* bit c: the kernel switched it in on CPU c */
};

static void add_cpu(uint32_t type, uint16_t misc, const struct gt_kernel_id *id, void *ctx)
{
	struct kernel_cpus *k = ctx;
	if (type != PERF_RECORD_SWITCH || (misc & PERF_RECORD_MISC_SWITCH_OUT) || id->cpu >= 63)
		return;
	for (size_t i = 0; i < MAX_THREADS; i++)
		if (k->tid[i] == (int)id->tid)
			k->cpus[i] |= 1ull << id->cpu;
}

/* Each thread runs in the trace only on the Ps of the CPUs the kernel ran it on (P = CPU +
 * 1), and moves between them as the kernel moved it. */
static void assert_ps_are_cpus(const char *trace, const int tid[MAX_THREADS], size_t n,
			       const struct drawn *d)
{
	char kern[700], err[512];
	snprintf(kern, sizeof kern, "%s.gtkern", trace);
	struct kernel_cpus k = { .tid = tid };
	struct gt_kernel_counts c;
	cr_assert_eq(gt_kernel_read(kern, add_cpu, &k, &c, err, sizeof err), 0, "%s", err);
	bool moved = false;
	for (size_t i = 0; i < n; i++) {
		cr_assert_eq(d->ps[i] & ~(k.cpus[i] << 1), 0, "thread %zu on Ps %#" PRIx64 ", the "
			     "kernel ran it on CPUs %#" PRIx64, i, d->ps[i], k.cpus[i]);
		moved |= (d->ps[i] & (d->ps[i] - 1)) != 0;
	}
	bool kernel_moved = false;
	for (size_t i = 0; i < n; i++)
		kernel_moved |= (k.cpus[i] & (k.cpus[i] - 1)) != 0;
	cr_assert(moved || !kernel_moved, "no thread migrates in the trace; the kernel migrated");
}

static void assert_running_is_cpu_time(const struct program *p, const char *format, bool nobody,
				       size_t threads, struct drawn *d)
{
	uint64_t cpu_ns[MAX_THREADS] = { 0 };
	int tid[MAX_THREADS] = { 0 };
	size_t n;
	char trace[600];
	char *dump = run_twins(p, format, nobody, cpu_ns, tid, &n, trace);
	cr_assert_eq(n, threads);
	drawn_of(dump, p->first_g, d);
	free(dump);
	if (tid[0] != 0)   /* the program names its threads' tids */
		assert_ps_are_cpus(trace, tid, n, d);
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	cr_assert_leq(d->max_running, cpus, "%d goroutines running at once on %ld CPUs",
		      d->max_running, cpus);
	for (size_t i = 0; i < n; i++) {
		double ran = (double)d->running_ns[i], cpu = (double)cpu_ns[i];
		cr_assert(ran >= 0.75 * cpu && ran <= 1.25 * cpu,
			  "%s thread %zu (G%" PRIu64 "): running %.1f ms in the trace, %.1f ms of CPU",
			  format, i, p->first_g + i, ran / 1e6, cpu / 1e6);
	}
}

/* 4 threads burning CPU, more than the CPUs: the hooks see none of their preemptions */
static void cpu_bound(const char *format, bool nobody)
{
	struct drawn d;
	assert_running_is_cpu_time(&burn, format, nobody, BURN_THREADS, &d);
}

/* OpenMP with uneven work: thread k works (k + 1) units a round, then waits at the
 * barrier for the slowest, inside libgomp */
static void openmp_barriers(const char *format, bool nobody)
{
	struct drawn d;
	assert_running_is_cpu_time(&omp, format, nobody, 4, &d);
	/* thread 0 has the least work: it waits at every barrier */
	cr_assert_geq(d.waits[0], OMP_ROUNDS, "thread 0 waited %zu times in %d rounds", d.waits[0],
		      OMP_ROUNDS);
	size_t waits = d.waits[0] + d.waits[1] + d.waits[2];
	cr_assert_geq(waits, 2 * OMP_ROUNDS, "threads 0-2 waited %zu times", waits);
	if (strcmp(format, "go1.22") == 0)
		cr_assert_geq(d.untraced_waits[0], OMP_ROUNDS, "%zu of thread 0's %zu waits named "
			      "untraced", d.untraced_waits[0], d.waits[0]);
}

Test(kernel_model, cpu_bound_threads_go119, .timeout = 240) { cpu_bound("go1.19", false); }
Test(kernel_model, cpu_bound_threads_go122, .timeout = 240) { cpu_bound("go1.22", false); }
Test(kernel_model, cpu_bound_threads_unprivileged_go119, .timeout = 240)
{
	as_nobody_possible();
	cpu_bound("go1.19", true);
}
Test(kernel_model, cpu_bound_threads_unprivileged_go122, .timeout = 240)
{
	as_nobody_possible();
	cpu_bound("go1.22", true);
}
Test(kernel_model, openmp_barriers_go119, .timeout = 240) { openmp_barriers("go1.19", false); }
Test(kernel_model, openmp_barriers_go122, .timeout = 240) { openmp_barriers("go1.22", false); }
Test(kernel_model, openmp_barriers_unprivileged_go119, .timeout = 240)
{
	as_nobody_possible();
	openmp_barriers("go1.19", true);
}
Test(kernel_model, openmp_barriers_unprivileged_go122, .timeout = 240)
{
	as_nobody_possible();
	openmp_barriers("go1.22", true);
}

/* gotrace report on the kept capture: each thread's on-CPU time from the kernel records is
 * the CPU time it measured itself (within 10%: the kernel's own accounting, both ways) */
Test(kernel_model, report_shows_on_cpu_time, .timeout = 240)
{
	uint64_t cpu_ns[MAX_THREADS] = { 0 };
	int tid[MAX_THREADS] = { 0 };
	size_t n;
	char trace[600];
	free(run_twins(&burn, "go1.22", false, cpu_ns, tid, &n, trace));
	cr_assert_eq(n, BURN_THREADS);
	struct cli_result r;
	const char *argv[] = { cli_gotrace, "report", "--json", trace, NULL };
	cli_run(&r, argv, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	for (size_t i = 0; i < n; i++) {
		char key[64];
		snprintf(key, sizeof key, "\"tid\":%d,", tid[i]);
		const char *at = strstr(r.out, key);
		cr_assert_not_null(at, "thread %d not in the report: %s", tid[i], r.out);
		const char *next = strstr(at + 1, "\"tid\":");
		const char *on = strstr(at, "\"on_cpu_ns\":");
		cr_assert(on != NULL && (next == NULL || on < next), "no on_cpu_ns for %d: %s", tid[i],
			  r.out);
		double ns = strtod(on + strlen("\"on_cpu_ns\":"), NULL), cpu = (double)cpu_ns[i];
		cr_assert(ns >= 0.9 * cpu && ns <= 1.1 * cpu, "thread %d: %.1f ms on a CPU in the "
			  "report, %.1f ms of CPU", tid[i], ns / 1e6, cpu / 1e6);
	}
	cli_result_free(&r);
	/* and in text, a column */
	const char *text[] = { cli_gotrace, "report", trace, NULL };
	cli_run(&r, text, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "on-CPU = on a CPU, by the kernel's context switches"),
			   "%s", r.out);
	cli_result_free(&r);
}

/* gotrace convert of a kept capture finds the kernel records beside it (FILE.gtkern) and
 * draws the trace gotrace run drew */
Test(kernel_model, convert_of_the_kept_capture_uses_its_kernel_records, .timeout = 240)
{
	uint64_t cpu_ns[MAX_THREADS] = { 0 };
	int tid[MAX_THREADS] = { 0 };
	size_t n;
	char trace[600], capture[700], again[700], cmp[1600];
	free(run_twins(&burn, "go1.19", false, cpu_ns, tid, &n, trace));
	snprintf(capture, sizeof capture, "%s.gtcap", trace);
	snprintf(again, sizeof again, "%s.again", trace);
	struct cli_result r;
	const char *argv[] = { cli_gotrace, "convert", "--format", "go1.19", "-o", again, capture,
			       NULL };
	cli_run(&r, argv, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "kernel: context switches drawn"), "%s", r.err);
	snprintf(cmp, sizeof cmp, "cmp -s '%s' '%s'", trace, again);
	cr_assert_eq(system(cmp), 0, "convert of %s differs from run's trace", capture);
	cli_result_free(&r);
}

/* ---- the scheduler latency after a hook's wake (issue 15, item 2) ----------------------- */

#define LATENCY_ROUNDS 8   /* at most MAX_THREADS: read_cpu_file's lines */
#define LATENCY_HOLD_MS 2

/* sched_latency: a reader of a pipe (G2, the one thread main creates), woken on the CPU its
 * SCHED_FIFO writer then keeps for LATENCY_HOLD_MS; "ROUND LATENCY_NS TID" lines (the
 * latency the program measured) */
static const struct program latency = {
	GT_TEST_SCHED_LATENCY, { "8", "2", NULL }, NULL, 2,
};

/* The latencies the trace shows for goroutine g, from each unblock of its pipe read: to its
 * first start (first) and to its last start before its next wait (last; later when it was
 * preempted meanwhile).  How many into first and last (at most max). */
static size_t latencies_of(const char *dump, uint64_t g, uint64_t *first, uint64_t *last,
			   size_t max)
{
	char match[64];
	snprintf(match, sizeof match, "StateTransition GoID=%" PRIu64, g);
	size_t n = 0;
	bool read_wait = false;
	uint64_t unblocked = 0;
	char *h;
	for (size_t i = 0; (h = gt_dump_123_header(dump, match, i)) != NULL; i++) {
		uint64_t t;
		cr_assert(field_u64(h, " Time=", &t), "%s", h);
		if (strstr(h, "Running->Waiting")) {   /* go1.22: the pipe's; go1.19: GoBlockNet */
			read_wait = strstr(h, "Reason=\"chan receive: read pipe\"") ||
				    strstr(h, "Reason=\"network\"");
			n += unblocked && n < max;   /* the round ends at its next wait */
			unblocked = 0;
		} else if (strstr(h, "Waiting->Runnable")) {
			unblocked = read_wait ? t : 0;
			if (unblocked && n < max)
				first[n] = 0;
		} else if (strstr(h, "Runnable->Running") && unblocked && n < max) {
			if (!first[n])
				first[n] = t - unblocked;
			last[n] = t - unblocked;
		}
		free(h);
	}
	return n + (unblocked && n < max);   /* the last round ends with the thread */
}

/* Each round's latency from the writer's wake (GoUnblock) to the reader's start (GoStart) is
 * the one the program measured from its writer's stamp to its reader's, as the kernel's
 * switch-in gives it, within 100 us + 10% (the hooks' and the syscall return's few
 * microseconds): the reader's first start no later than its stamp, its last start before
 * its next read (after a preemption between its switch-in and its stamp) no earlier.
 * Starting the reader at the wake would show none. */
static void latency_after_wake(const char *format)
{
	if (sysconf(_SC_NPROCESSORS_ONLN) < 2)
		cr_skip_test("one CPU: the writer cannot keep the reader's CPU busy from another");
	struct sched_param fifo = { .sched_priority = 1 };
	pid_t probe = fork();
	if (probe == 0)   /* the writer's SCHED_FIFO, tried where it cannot harm the test */
		_exit(sched_setscheduler(0, SCHED_FIFO, &fifo) == 0 ? 0 : 1);
	int status;
	cr_assert_eq(waitpid(probe, &status, 0), probe);
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
		cr_skip_test("SCHED_FIFO refused (root, CAP_SYS_NICE or RLIMIT_RTPRIO needed): no "
			     "writer keeps the reader's CPU");
	uint64_t measured[MAX_THREADS] = { 0 }, first[MAX_THREADS] = { 0 }, last[MAX_THREADS];
	int tid[MAX_THREADS] = { 0 };
	size_t n, long_ones = 0;
	char trace[600];
	char *dump = run_twins(&latency, format, false, measured, tid, &n, trace);
	cr_assert_eq(n, LATENCY_ROUNDS);
	size_t k = latencies_of(dump, latency.first_g, first, last, MAX_THREADS);
	free(dump);
	cr_assert_eq(k, n, "%zu wakes of the reader drawn, %zu rounds", k, n);
	for (size_t i = 0; i < n; i++) {
		double from = (double)first[i] / 1e3, to = (double)last[i] / 1e3;
		double want = (double)measured[i] / 1e3, tolerance = 100 + want / 10;
		cr_assert(from <= want + tolerance && to >= want - tolerance,
			  "%s round %zu: started %.1f us (last %.1f us) after its wake in the trace, "
			  "%.1f us measured", format, i, from, to, want);
		long_ones += measured[i] >= LATENCY_HOLD_MS * 1000000u;
	}
	/* the construction: the reader waits for its writer to leave its CPU */
	cr_assert_eq(long_ones, n, "%zu of %zu rounds waited %d ms", long_ones, n,
		     LATENCY_HOLD_MS);
}

Test(kernel_model, latency_after_a_wake_go122, .timeout = 240) { latency_after_wake("go1.22"); }
Test(kernel_model, latency_after_a_wake_go119, .timeout = 240) { latency_after_wake("go1.19"); }
