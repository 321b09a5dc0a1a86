/* gotrace run records the kernel's context switches of the traced tree when asked (issue
 * 15): a pipe ping-pong's switches are all there, --kernel=off and the default record none,
 * and where perf_event_open is refused one line says so and the trace is made from the hooks
 * alone.  Each traced run is compared with the same program run untraced. */
#include "cli_support.h"
#include "kernel/samples.h"
#include "oracle.h"

#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <linux/perf_event.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define ROUND_TRIPS 2000

/* pingpong ROUND_TRIPS PIDFILE, untraced, and then traced with gotrace run OPTION (after
 * WRAPPER when not NULL) -o DIR/p.trace --keep-capture; asserts both behave the same. */
static void run_twins(const char *dir, const char *wrapper, const char *option,
		      struct cli_result *traced, char *trace, size_t size, int pids[2])
{
	char pidfile[600], rounds[16];
	struct cli_result plain;
	snprintf(rounds, sizeof rounds, "%d", ROUND_TRIPS);
	cli_path(pidfile, sizeof pidfile, dir, "plain.pids");
	const char *plain_argv[] = { GT_TEST_PINGPONG, rounds, pidfile, NULL };
	cli_run(&plain, plain_argv, NULL);

	cli_path(trace, size, dir, "p.trace");
	cli_path(pidfile, sizeof pidfile, dir, "traced.pids");
	const char *argv[16];
	size_t n = 0;
	if (wrapper != NULL)
		argv[n++] = wrapper;
	argv[n++] = cli_gotrace;
	argv[n++] = "run";
	if (option != NULL)
		argv[n++] = option;
	const char *rest[] = { "--format", "go1.19", "--keep-capture", "-o", trace, "--",
			       GT_TEST_PINGPONG, rounds, pidfile, NULL };
	memcpy(argv + n, rest, sizeof rest);
	cli_run(traced, argv, NULL);

	cr_assert_eq(plain.status, 0, "untraced: %d %s", plain.status, plain.err);
	cr_assert_eq(traced->status, plain.status, "traced status %d: %s", traced->status,
		     traced->err);
	cr_assert_str_eq(traced->out, plain.out);
	cr_assert_str_empty(plain.err);
	FILE *f = fopen(pidfile, "r");
	cr_assert_not_null(f);
	cr_assert_eq(fscanf(f, "%d %d", &pids[0], &pids[1]), 2);
	fclose(f);
	cli_result_free(&plain);

	struct gt_events *events = gt_events_parse_119(trace);
	cr_assert_not_null(events, "Go 1.19 rejects the trace: %s", traced->err);
	cr_assert_gt(events->n, 0);
	gt_events_free(events);
}

struct switches {
	int pids[2];
	unsigned long out[2], other;
};

static void count_switch(uint32_t type, uint16_t misc, const struct gt_kernel_id *id, void *ctx)
{
	struct switches *s = ctx;
	if (type != PERF_RECORD_SWITCH || !(misc & PERF_RECORD_MISC_SWITCH_OUT))
		return;
	if ((int)id->tid == s->pids[0])
		s->out[0]++;
	else if ((int)id->tid == s->pids[1])
		s->out[1]++;
	else
		s->other++;
}

/* A traced ping-pong in a fresh DIR with OPTION; its kernel records' path into kern. */
static void traced_ping_pong(const char *option, struct cli_result *r, char *dir, char *trace,
			     char *kern, int pids[2])
{
	cli_tempdir(dir, 512);
	run_twins(dir, NULL, option, r, trace, 600, pids);
	snprintf(kern, 700, "%s%s", trace, GT_KERNEL_SUFFIX);
}

Test(kernel, every_blocking_read_of_a_ping_pong_is_a_recorded_switch, .timeout = 120)
{
	char dir[512], trace[600], kern[700], err[1024];
	struct cli_result r;
	struct switches s = { 0 };
	traced_ping_pong("--kernel=on", &r, dir, trace, kern, s.pids);
	cr_assert_eq(cli_count_of(r.err, "no kernel scheduling data"), 0,
		     "perf refused on this machine (root, paranoid <= 2 expected): %s", r.err);
	cr_assert(cli_file_exists(kern), "no kernel records kept: %s", r.err);

	struct gt_kernel_counts c;
	cr_assert_eq(gt_kernel_read(kern, count_switch, &s, &c, err, sizeof err), 0, "%s", err);
	cr_assert(!c.unfinished && !c.truncated);
	cr_assert_eq(c.lost + c.launcher_lost, 0, "lost %lu", (unsigned long)c.lost);
	/* each side waits in read for each round trip (the child's first byte may be there
	 * already) and leaves its CPU there, or was preempted before it could */
	cr_assert_geq(s.out[0], ROUND_TRIPS, "parent %d: %lu switch-outs", s.pids[0], s.out[0]);
	cr_assert_geq(s.out[1], ROUND_TRIPS - 1, "child %d: %lu switch-outs", s.pids[1], s.out[1]);
	cr_assert_geq(c.switches, c.switches_out);
	char line[128];
	snprintf(line, sizeof line, "kernel: %lu context switches recorded", (unsigned long)c.switches);
	cr_assert_not_null(strstr(r.err, line), "no '%s' in: %s", line, r.err);
	cli_result_free(&r);

	/* convert of the kept capture shows them too */
	char capture[700], again[700];
	snprintf(capture, sizeof capture, "%s.gtcap", trace);
	cli_path(again, sizeof again, dir, "again.trace");
	const char *argv[] = { cli_gotrace, "convert", "-o", again, capture, NULL };
	cli_run(&r, argv, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.err, line), "no '%s' in: %s", line, r.err);
	cli_result_free(&r);
}

/* A traced ping-pong (after WRAPPER, with OPTION) that must leave no kernel records. */
static void run_without_kernel(const char *wrapper, const char *option, struct cli_result *r)
{
	char dir[512], trace[600], kern[700];
	int pids[2];
	cli_tempdir(dir, sizeof dir);
	run_twins(dir, wrapper, option, r, trace, sizeof trace, pids);
	snprintf(kern, sizeof kern, "%s%s", trace, GT_KERNEL_SUFFIX);
	cr_assert(!cli_file_exists(kern), "kernel records kept: %s", r->err);
	cr_assert_null(strstr(r->err, "gotrace: kernel"), "%s", r->err);
}

Test(kernel, off_records_nothing, .timeout = 120)
{
	struct cli_result r;
	run_without_kernel(NULL, "--kernel=off", &r);
	cr_assert_null(strstr(r.err, "no kernel scheduling data"), "%s", r.err);
	cli_result_free(&r);
}

/* Kernel records are asked for: they cost every context switch of a traced thread
 * (docs/usage.md), more than a server's 5% budget. */
Test(kernel, the_default_records_nothing, .timeout = 120)
{
	struct cli_result r;
	run_without_kernel(NULL, NULL, &r);
	cr_assert_null(strstr(r.err, "no kernel scheduling data"), "%s", r.err);
	cli_result_free(&r);
}

Test(kernel, refused_perf_is_one_line_and_a_hook_only_trace, .timeout = 120)
{
	struct cli_result r;
	run_without_kernel(GT_TEST_NO_PERF, "--kernel=on", &r);
	cr_assert_eq(cli_count_of(r.err, "gotrace: no kernel scheduling data: "
					     "perf_event_open blocked (EPERM)"), 1, "%s", r.err);
	cr_assert_eq(cli_count_of(r.err, "no kernel scheduling data"), 1, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "--cap-add PERFMON"), "no way to enable it: %s", r.err);
	cli_result_free(&r);
}

/* --offcpu-stacks (root here): every switch-out of the ping-pong has its sample, found by
 * (pid, tid, time) as the model and the report look them up; the sample is of that thread
 * and holds its user registers and stack. */
Test(kernel, offcpu_samples_meet_their_switch_outs, .timeout = 120)
{
	char dir[512], trace[600], kern[700], err[1024];
	struct cli_result r;
	struct switches s = { 0 };
	traced_ping_pong("--offcpu-stacks", &r, dir, trace, kern, s.pids);
	cr_assert_null(strstr(r.err, "off-CPU stacks unavailable"), "root expected: %s", r.err);
	struct gt_kernel_file f;
	cr_assert_eq(gt_kernel_open(kern, &f, err, sizeof err), 0, "%s", err);
	struct gt_kernel_index outs, samples;
	cr_assert(gt_kernel_index_build(&f, GT_KERNEL_EV_SWITCH, &outs));
	cr_assert(gt_kernel_index_build(&f, GT_KERNEL_EV_OFFCPU, &samples));
	size_t ours = 0, met = 0, no_stack = 0;
	uint64_t worst = 0;
	for (size_t i = 0; i < outs.n; i++) {
		const struct gt_kernel_at *o = &outs.v[i];
		if ((int)o->tid != s.pids[0] && (int)o->tid != s.pids[1])
			continue;
		ours++;
		const struct gt_kernel_at *a = gt_kernel_index_find(&samples, o->pid, o->tid, o->time,
								    100000);
		struct gt_kernel_sample k;
		if (a == NULL || !gt_kernel_sample_at(&f, a->offset, &k))
			continue;
		cr_assert_eq(k.tid, o->tid);
		cr_assert_eq(k.kind, GT_KERNEL_EV_OFFCPU);
		if (k.regs == NULL || k.stack_size == 0) {
			no_stack++;   /* the kernel could not copy it then (a page not present) */
			continue;
		}
		met++;
		uint64_t d = a->time > o->time ? a->time - o->time : o->time - a->time;
		worst = d > worst ? d : worst;
	}
	/* a loaded machine may leave the drain behind: the kernel then drops records (2 KiB
	 * samples fill the buffers fast), each one counted, and each may leave one switch-out
	 * without its sample; the rest must meet */
	struct gt_kernel_counts c;
	cr_assert_eq(gt_kernel_read(kern, NULL, NULL, &c, err, sizeof err), 0, "%s", err);
	uint64_t lost = c.lost + c.launcher_lost;
	cr_assert_geq(met + lost + no_stack, ours, "%zu of %zu switch-outs have their sample (the "
		      "farthest %llu ns away), %llu records lost, %zu without a stack", met, ours,
		      (unsigned long long)worst, (unsigned long long)lost, no_stack);
	cr_assert_leq(no_stack * 100, ours, "%zu of %zu without a stack", no_stack, ours);
	/* a read finds its byte there when the other side wrote it first (both run on a CPU
	 * of their own): not every round trip switches, but most do */
	cr_assert_geq(met, ROUND_TRIPS / 8, "%zu of %zu met, %llu lost", met, ours,
		      (unsigned long long)lost);
	gt_kernel_index_free(&outs);
	gt_kernel_index_free(&samples);
	gt_kernel_close(&f);
	cli_result_free(&r);
}

/* the ping-pong's parent, from its PIDFILE */
static int traced_pid(const char *pidfile)
{
	int pid = 0;
	FILE *f = fopen(pidfile, "r");
	cr_assert_not_null(f);
	cr_assert_eq(fscanf(f, "%d", &pid), 1);
	fclose(f);
	return pid;
}

struct fsize_case {
	long mib;
	bool on_disk; /* --capture-dir on the test's disk, else the default (a tmpfs) */
};

ParameterizedTestParameters(kernel, a_file_size_limit_stops_the_records_not_gotrace)
{
	static struct fsize_case cases[] = { { 1, false }, { 1, true }, { 2, false },
					     { 2, true }, { 4, false }, { 4, true } };
	return cr_make_param_array(struct fsize_case, cases, sizeof cases / sizeof *cases);
}

/* ulimit -f (prlimit) over gotrace run and the ping-pong it traces: the kernel records pass
 * the limit within 100 000 round trips.  gotrace stops that file at its last whole record,
 * says so in one line, and still converts; the program exits as it does untraced. */
ParameterizedTest(struct fsize_case *c, kernel, a_file_size_limit_stops_the_records_not_gotrace,
		  .timeout = 180)
{
	char dir[512], trace[600], pidfile[600], caps[600], kern[700], err[1024], fsize[32];
	struct cli_result plain, traced;
	cli_tempdir(dir, sizeof dir);
	snprintf(fsize, sizeof fsize, "--fsize=%ld", c->mib << 20);
	cli_path(pidfile, sizeof pidfile, dir, "plain.pids");
	const char *plain_argv[] = { "/usr/bin/prlimit", fsize, GT_TEST_PINGPONG, "100000",
				     pidfile, NULL };
	cli_run(&plain, plain_argv, NULL);
	cli_path(trace, sizeof trace, dir, "p.trace");
	cli_path(pidfile, sizeof pidfile, dir, "traced.pids");
	cli_path(caps, sizeof caps, dir, "caps");
	/* the captures bounded (--max-capture), so that the trace fits the limit too */
	const char *argv[20] = { "/usr/bin/prlimit", fsize, cli_gotrace, "run", "--kernel=on",
				 "--format", "go1.19", "--max-capture", "1M", "--keep-capture",
				 "-o", trace };
	size_t n = 12;
	if (c->on_disk) {
		cr_assert_eq(mkdir(caps, 0700), 0);
		argv[n++] = "--capture-dir";
		argv[n++] = caps;
	}
	const char *rest[] = { "--", GT_TEST_PINGPONG, "100000", pidfile, NULL };
	memcpy(argv + n, rest, sizeof rest);
	cli_run(&traced, argv, NULL);
	cr_assert_eq(plain.status, 0, "untraced: %d %s", plain.status, plain.err);
	cr_assert_eq(traced.status, plain.status, "traced status %d: %s", traced.status, traced.err);
	cr_assert_str_eq(traced.out, plain.out);
	if (strstr(traced.err, "no kernel scheduling data"))
		cr_skip_test("perf refused here: no kernel records to limit (%s)", traced.err);
	cr_assert_eq(cli_count_of(traced.err, "gotrace: kernel records stopped at "), 1, "%s",
		     traced.err);
	snprintf(err, sizeof err, "gotrace: kernel records stopped at %ld.0 MiB: the file size "
		 "limit (RLIMIT_FSIZE) was reached; ", c->mib);
	cr_assert_eq(cli_count_of(traced.err, err), 1, "no '%s' in: %s", err, traced.err);
	struct gt_events *events = gt_events_parse_119(trace);
	cr_assert_not_null(events, "Go 1.19 rejects the trace: %s", traced.err);
	gt_events_free(events);
	/* the kept file ends with a whole record and counts what it could not store */
	if (c->on_disk) /* kept where the run wrote it */
		snprintf(kern, sizeof kern, "%s/gotrace-%d%s", caps, traced_pid(pidfile),
			 GT_KERNEL_SUFFIX);
	else
		snprintf(kern, sizeof kern, "%s%s", trace, GT_KERNEL_SUFFIX);
	struct gt_kernel_counts k;
	cr_assert_eq(gt_kernel_read(kern, NULL, NULL, &k, err, sizeof err), 0, "%s", err);
	cr_assert(!k.unfinished && !k.truncated);
	cr_assert_gt(k.launcher_lost, 0);
	cr_assert_leq(k.bytes, (uint64_t)c->mib << 20);
	cli_result_free(&plain);
	cli_result_free(&traced);
}

/* The file-backed pages of this process, in KiB (/proc/self/status RssFile). */
static long rss_file_kib(void)
{
	FILE *f = fopen("/proc/self/status", "r");
	char line[256];
	long kib = -1;
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "RssFile: %ld", &kib) == 1)
			break;
	if (f)
		fclose(f);
	return kib;
}

static void count_any(uint32_t type, uint16_t misc, const struct gt_kernel_id *id, void *ctx)
{
	(void)type, (void)misc, (void)id;
	++*(size_t *)ctx;
}

/* A kernel file at path (mkstemp's template) of n switch records of 4 threads on 2 CPUs,
 * drained in segments of seg records, each segment in time order, the file not: CPU 0's
 * segment, then CPU 1's of the same times; every 7th record at the time of the one before. */
static void write_switches(char *path, uint32_t n, uint32_t seg)
{
	struct record {
		struct perf_event_header h;
		uint32_t pid, tid;
		uint64_t time;
		uint32_t cpu, res;
		uint64_t id;
	};
	int fd = mkstemp(path);
	cr_assert_geq(fd, 0);
	FILE *f = fdopen(fd, "w");
	struct gt_kernel_header h = {.magic = GT_KERNEL_MAGIC, .version = GT_KERNEL_VERSION,
				     .header_size = sizeof h, .sample_type = GT_KERNEL_TRAILER_TYPE,
				     .clockid = 1, .n_cpus = 2, .pid = 1000};
	cr_assert_eq(fwrite(&h, sizeof h, 1, f), 1u);
	for (uint32_t i = 0; i < n; i++) {
		uint32_t cpu = i / seg % 2, k = i / (2 * seg) * seg + i % seg;
		uint64_t time = 1000000 + 10 * (uint64_t)(k - (k % 7 == 6)) + cpu;
		struct record r = {{PERF_RECORD_SWITCH, i % 2 ? PERF_RECORD_MISC_SWITCH_OUT : 0,
				    sizeof r}, 1000, 1000 + i % 4, time, cpu, 0, 7};
		cr_assert_eq(fwrite(&r, sizeof r, 1, f), 1u);
	}
	cr_assert_eq(fclose(f), 0);
}

/* A walk of a kernel file gives its pages back as it goes: the conversion keeps the file
 * mapped for its CPU samples, and a long run's file (here 24 MiB of switches) would stay
 * resident through it (issue 27, item 7: memory that grows with the run). */
Test(kernel, a_walk_gives_back_the_pages_it_read)
{
	enum { N = 600000, RECORD = 40 };
	char path[] = "/tmp/gt-kernel-walk-XXXXXX";
	write_switches(path, N, N);
	struct gt_kernel_file k;
	char err[512];
	cr_assert_eq(gt_kernel_open(path, &k, err, sizeof err), 0, "%s", err);
	long before = rss_file_kib();
	size_t records = 0;
	struct gt_kernel_counts c = {0};
	gt_kernel_walk(&k, count_any, NULL, &records, &c);
	long grown = rss_file_kib() - before;
	gt_kernel_close(&k);
	unlink(path);
	cr_assert_eq(records, (size_t)N);
	cr_expect_eq(c.switches, (uint64_t)N);
	cr_assert_geq(before, 0, "no RssFile in /proc/self/status");
	cr_expect_lt(grown, 12 * 1024, "%ld KiB of the %d KiB file resident after its walk", grown,
		     N * RECORD / 1024);
}

/* The switches read as asked for (the conversion's) come in gt_kernel_switches' order, ties
 * in the file's order, from a file whose CPUs' drains interleave; what the stream holds
 * does not grow with them (the loaded switches take 32 bytes each: 9 MiB here). */
Test(kernel, streamed_switches_come_in_the_sorted_order)
{
	enum { N = 300000, SEG = 1000 };
	char path[] = "/tmp/gt-kernel-stream-XXXXXX", err[512];
	write_switches(path, N, SEG);
	struct gt_kernel_switch *v;
	size_t n;
	struct gt_kernel_counts c;
	cr_assert_eq(gt_kernel_switches(path, &v, &n, &c, err, sizeof err), 0, "%s", err);
	cr_assert_eq(n, (size_t)N);
	struct mallinfo2 before = mallinfo2();
	struct gt_kernel_switch_stream *s = gt_kernel_switch_stream_open(path, err, sizeof err);
	cr_assert_not_null(s, "%s", err);
	size_t held = mallinfo2().uordblks - before.uordblks;
	struct gt_kernel_switch sw;
	size_t i = 0;
	for (; gt_kernel_switch_stream_next(s, &sw); i++) {
		cr_assert_lt(i, n);
		if (sw.time != v[i].time || sw.tid != v[i].tid || sw.cpu != v[i].cpu ||
		    sw.what != v[i].what)
			cr_assert_fail("switch %zu: %lu tid %u cpu %u, sorted: %lu tid %u cpu %u", i,
				       (unsigned long)sw.time, sw.tid, sw.cpu,
				       (unsigned long)v[i].time, v[i].tid, v[i].cpu);
	}
	cr_expect_eq(i, n);
	cr_expect_lt(held, 64u * 1024, "%zu bytes held for %d switches in %d drains", held, N,
		     N / SEG);
	gt_kernel_switch_stream_close(s);
	free(v);
	unlink(path);
}
