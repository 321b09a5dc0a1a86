/* The flight recorder (GOTRACE_LAST, issue 13): a ring of 16 chunks of 16 KiB wrapped many
 * times by two threads' sched_yield()s keeps the threads made before its window with their
 * names and start routines, shows the one blocked on a mutex and the one in a read across the
 * window's start as blocked there, with their stacks, and converts into a trace that passes
 * every check of Go's readers; so does the ring of a program killed with kill -9.  A duration
 * keeps that much; SIGUSR2 to `gotrace run --last` writes a snapshot while the program runs.
 * Each program runs untraced and traced first (same output, same status). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <fcntl.h>
#include <unistd.h>

#include "oracle.h"
#include "traced_run.h"

#define CHUNK 16384u
#define RING_BYTES (256u << 10)

static struct run plain, traced, tool;
static struct capture cap;
static char *dump;

static void teardown(void)
{
	capture_close(&cap);
	free(dump);
	dump = NULL;
	run_cleanup(&plain);
	run_cleanup(&traced);
	run_cleanup(&tool);
}

TestSuite(ring, .fini = teardown, .timeout = 240);

static const char *const ring_env[] = {"GOTRACE_CHUNK_SIZE=16384", "GOTRACE_LAST=256K",
				       "GOTRACE_STACKS=fp", NULL};

/* The twins of gt-ring SCENARIO with 60000 yields per churn thread (~2.5 MB of compact
 * records, ten times the ring); kill_ms > 0: both are killed once they printed a line. */
static void twins(const char *scenario, int kill_ms)
{
	const char *argv[] = {test_program("gt-ring"), scenario, "60000", NULL};
	char prog[4096];
	snprintf(prog, sizeof prog, "%s", argv[0]);
	argv[0] = prog;
	plain.kill_after_ms = traced.kill_after_ms = kill_ms;
	const char *diff = run_twins(&plain, &traced, argv, ring_env);
	cr_assert_null(diff, "%s", diff);
	if (!kill_ms) {
		cr_assert(WIFEXITED(traced.status) && WEXITSTATUS(traced.status) == 0, "%s", traced.err);
		cr_assert_str_eq(traced.out, "done ok\n");
	}
	cr_assert_eq(count_gotrace_lines(traced.err), 0, "%s", traced.err);
}

/* The capture is a ring that wrapped: its CPU chunks were installed many times over (seq),
 * the file holds the ring and a few keep chunks, and most of the yields are gone. */
static void expect_wrapped_ring(void)
{
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	const struct gt_file_header *h = cap.hdr;
	cr_assert(h->flags & GT_FILE_RING, "flags %#x", h->flags);
	cr_assert_eq(h->ring_bytes, RING_BYTES);
	cr_assert_neq(h->ring_lost_tsc, 0, "no chunk was reused");
	uint64_t ring = 0, keep = 0, max_seq = 0;
	for (uint64_t k = 0; k < h->n_chunks; k++) {
		uint64_t off = h->header_size + k * (uint64_t)CHUNK;
		if (off + CHUNK > cap.size)
			break;
		const struct gt_chunk_header *c = (const void *)((const char *)cap.map + off);
		ring += c->magic == GT_CHUNK_MAGIC;
		keep += c->magic == GT_KEEP_MAGIC;
		if (c->magic == GT_CHUNK_MAGIC && c->seq > max_seq)
			max_seq = c->seq;
	}
	/* the ring: 16 chunks, and one more for each reuse put off because a writer preempted
	 * in it had not committed yet (a few a run under load; without the ring: ~160) */
	cr_expect_leq(ring, RING_BYTES / CHUNK + 10, "%lu CPU chunks", (unsigned long)ring);
	cr_expect_geq(keep, 1);
	cr_expect_leq(keep, 4, "%lu keep chunks", (unsigned long)keep);
	cr_expect_geq(max_seq, 5 * ring, "chunks installed %lu times in a ring of %lu: not wrapped",
		      (unsigned long)max_seq, (unsigned long)ring);
	cr_expect_lt(capture_count(&cap, GT_YIELD, -1), 40000u, "the window holds every yield");
}

/* G of the thread labelled NAME in the Go 1.23 dump, or -1. */
static long g_of(const char *name)
{
	char match[64];
	snprintf(match, sizeof match, "Label=\"%s\"", name);
	char *line = gt_dump_123_header(dump, match, 0);
	cr_assert_not_null(line, "no thread labelled %s in the trace", name);
	const char *g = strstr(line, " G=");
	long v = g ? strtol(g + 3, NULL, 10) : -1;
	free(line);
	return v;
}

/* The thread NAME's first transition out of running is to TO (or to TO2: a pipe read is a
 * syscall, or a network wait when its writer's wake is matched), with FRAME in its stack:
 * it was blocked so when the window began. */
static void expect_blocked_at_start(const char *name, const char *to, const char *to2,
				    const char *frame)
{
	char match[64], first[64] = "";
	long g = g_of(name), when = -1;
	for (int k = 0; k < 2; k++) {
		const char *t = k ? to2 : to;
		if (!t)
			continue;
		char m[64];
		snprintf(m, sizeof m, "GoID=%ld Running->%s", g, t);
		char *h = gt_dump_123_header(dump, m, 0);
		const char *at = h ? strstr(h, " Time=") : NULL;
		long w = at ? strtol(at + 6, NULL, 10) : -1;
		if (w >= 0 && (when < 0 || w < when)) {
			when = w;
			snprintf(first, sizeof first, "%s", m);
		}
		free(h);
	}
	cr_assert_geq(when, 0, "%s never goes Running->%s%s%s", name, to, to2 ? " or " : "", to2 ? to2 : "");
	snprintf(match, sizeof match, "%s", first);
	char *st = gt_dump_123_stack(dump, match, 0, "TransitionStack");
	cr_assert_not_null(st);
	cr_expect(strstr(st, frame), "%s blocks in %s, not in %s", name, st, frame);
	free(st);
}

/* Converts the run's capture (Go 1.19's and 1.23's parsers accept it; full: every check of
 * the oracle, the viewers' pages and profiles too) and dumps it with Go 1.23. */
/* The threads gt-ring made before its churn: blocked when the window began */
static void expect_early_threads_blocked(void)
{
	expect_blocked_at_start("early-blocked", "Waiting", NULL, "early_blocked");
	expect_blocked_at_start("early-reader", "Syscall", "Waiting", "early_reader");
}

/* How often the thread NAME was let go from a wait */
static size_t times_let_go(const char *name)
{
	char match[64];
	snprintf(match, sizeof match, "GoID=%ld Waiting->Runnable", g_of(name));
	return gt_dump_123_count(dump, match);
}

static void convert_and_dump(bool full)
{
	char why[4096];
	cr_assert_eq(run_convert_all(&traced, why, sizeof why), 1, "%s", why);
	char trace[4200];
	snprintf(trace, sizeof trace, "%s/gotrace-%d.gtcap.trace", traced.dir, (int)traced.pid);
	char *report = NULL;
	if (full)
		cr_assert_eq(gt_oracle_check(trace, false, &report), 0, "%s", report);
	free(report);
	dump = gt_dump_123(trace);
	cr_assert_not_null(dump);
}

Test(ring, wrapped_ring_keeps_threads_from_before_its_window)
{
	twins("wrap", 0);
	expect_wrapped_ring();
	convert_and_dump(true);
	expect_early_threads_blocked();
	cr_expect_eq(times_let_go("early-blocked"), 1, "let go in the window");
	/* the report names them with their start routines */
	char capture[4200];
	snprintf(capture, sizeof capture, "%s/gotrace-%d.gtcap", traced.dir, (int)traced.pid);
	const char *argv[] = {test_gotrace(), "report", capture, NULL};
	cr_assert_eq(run_program(&tool, 0, argv, NULL), 0);
	cr_assert(strstr(tool.out, "early-blocked   early_blocked"), "%s", tool.out);
	cr_assert(strstr(tool.out, "early-reader    early_reader"), "%s", tool.out);
	cr_assert(strstr(tool.out, "flight recorder: the window kept starts at "), "%s", tool.out);
}

Test(ring, killed_ring_converts)
{
	twins("hang", 1);
	cr_assert(WIFSIGNALED(traced.status) && WTERMSIG(traced.status) == SIGKILL);
	expect_wrapped_ring();
	cr_expect_eq(cap.hdr->flags & GT_FILE_FINALIZED, 0u);
	convert_and_dump(false);
	expect_early_threads_blocked();
	cr_expect_eq(times_let_go("early-blocked"), 0, "still blocked when killed");
}

/* GOTRACE_LAST as a duration: the chunks replaced within its last 200 ms are kept, older
 * ones reused, so the window (from ring_lost_tsc to the capture's end) spans at least that,
 * while the run lasts several times as long.  Not at most 0.35 s: each new chunk reuses one,
 * so the ring keeps as many chunks as its fastest 200 ms filled, and a slower stretch (the
 * program descheduled beside busy processes) spans more time: 0.360 s was seen under load. */
Test(ring, duration_keeps_the_last_duration)
{
	/* a run of 1 s whatever the machine's speed: 100000 yields took 0.23 s idle, too short
	 * to tell a 200 ms window from the whole run */
	const char *argv[] = {test_program("gt-ring"), "wrap", "1000ms", NULL};
	char prog[4096];
	snprintf(prog, sizeof prog, "%s", argv[0]);
	argv[0] = prog;
	static const char *const env[] = {"GOTRACE_CHUNK_SIZE=16384", "GOTRACE_LAST=200ms",
					  "GOTRACE_STACKS=none", NULL};
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert_null(diff, "%s", diff);
	cr_assert_str_eq(traced.out, "done ok\n");
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	const struct gt_file_header *h = cap.hdr;
	cr_assert(h->flags & GT_FILE_RING);
	cr_assert_eq(h->ring_ns, 200000000u);
	cr_assert_eq(h->ring_bytes, 0u);
	const struct cap_rec *end = capture_find(&cap, GT_CAPTURE_END, -1, 0);
	cr_assert_not_null(end);
	double hz = h->clock_source == GT_CLOCK_TSC ? (double)h->tsc_hz : 1e9;
	cr_assert_neq(h->ring_lost_tsc, 0, "nothing reused");
	double lost_s = (double)(h->ring_lost_tsc - h->start_tsc) / hz;
	double window_s = (double)(end->h->tsc - h->ring_lost_tsc) / hz;
	cr_expect_geq(window_s, 0.2, "a window of %.3f s", window_s);
	cr_expect_gt(lost_s, 0.2, "%.3f s before the window: the run was too short to tell", lost_s);
	char why[4096];
	cr_assert_eq(run_convert_all(&traced, why, sizeof why), 1, "%s", why);
}

/* A busy phase, then a quiet one three times the duration: the quiet one needs no new chunk,
 * so the busy one's chunks are not reused and outlive the duration.  The trace still spans
 * at most the duration: the conversion cuts at the capture's end minus it (what was alive or
 * waiting then is stamped there), and the threads from before it are in the trace. */
Test(ring, duration_cuts_a_quiet_phase_after_a_busy_one)
{
	const char *argv[] = {test_program("gt-ring"), "quiet", "300ms", NULL};
	char prog[4096];
	snprintf(prog, sizeof prog, "%s", argv[0]);
	argv[0] = prog;
	static const char *const env[] = {"GOTRACE_CHUNK_SIZE=16384", "GOTRACE_LAST=200ms",
					  "GOTRACE_STACKS=fp", NULL};
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert_null(diff, "%s", diff);
	cr_assert_str_eq(traced.out, "done ok\n");
	convert_and_dump(true);
	/* the events' times in Go 1.23's dump: from the first to the last */
	long first = -1, last = -1;
	for (const char *at = dump; (at = strstr(at, " Time=")) != NULL; at += 6) {
		long t = strtol(at + 6, NULL, 10);
		first = first < 0 || t < first ? t : first;
		last = t > last ? t : last;
	}
	cr_assert_geq(first, 0, "no event in the trace");
	double span = (double)(last - first) / 1e9;
	cr_expect_leq(span, 0.2, "the trace of --last 200ms spans %.6f s", span);
	cr_expect_gt(span, 0.1, "the trace of --last 200ms spans %.3f s: not the window", span);
	/* the threads from before the window are in it, blocked where they were */
	expect_early_threads_blocked();
}

/* ---- gotrace run --last: a snapshot by SIGUSR2 while the program runs -------------------- */

struct proc {
	pid_t pid;
	int out, err;
};

static void spawn(struct proc *p, const char *const *argv, const char *const *env)
{
	int out[2], err[2];
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(err, O_CLOEXEC), 0);
	p->pid = fork();
	cr_assert_geq(p->pid, 0);
	if (!p->pid) {
		dup2(out[1], 1);
		dup2(err[1], 2);
		for (const char *const *e = env; e && *e; e++)
			putenv((char *)*e);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	close(out[1]);
	close(err[1]);
	p->out = out[0];
	p->err = err[0];
}

/* Bytes of fd appended to buf until it holds needle (true) or the end of file (false). */
static bool read_until(int fd, char *buf, size_t cap, const char *needle)
{
	size_t n = strlen(buf);
	while (!strstr(buf, needle)) {
		ssize_t got = read(fd, buf + n, cap - n - 1);
		if (got <= 0)
			return false;
		n += (size_t)got;
		buf[n] = 0;
	}
	return true;
}

/* gt-ring hang (under gotrace run when snap_dir): churned, then SIGUSR2 to gotrace for a
 * snapshot, then SIGUSR1 lets the program end.  Its stdout and wait status. */
static int hang_run(const char *snap_dir, char *out, size_t out_cap, char *err, size_t err_cap)
{
	char prog[4096], trace[4200];
	snprintf(prog, sizeof prog, "%s", test_program("gt-ring"));
	snprintf(trace, sizeof trace, "%s/r.trace", snap_dir ? snap_dir : "");
	const char *plain_argv[] = {prog, "hang", "60000", NULL};
	const char *run_argv[] = {test_gotrace(), "run", "--last", "256K", "-o", trace, "--", prog,
				  "hang", "60000", NULL};
	static const char *const env[] = {"GOTRACE_CHUNK_SIZE=16384", "GOTRACE_STACKS=fp", NULL};
	struct proc p;
	spawn(&p, snap_dir ? run_argv : plain_argv, env);
	out[0] = err[0] = 0;
	cr_assert(read_until(p.out, out, out_cap, "churned\n"), "%s", out);
	if (snap_dir) {
		cr_assert_eq(kill(p.pid, SIGUSR2), 0);
		cr_assert(read_until(p.err, err, err_cap, "r.trace.snapshot-1:"), "%s", err);
	}
	cr_assert_eq(kill(p.pid, SIGUSR1), 0); /* gotrace forwards it */
	read_until(p.out, out, out_cap, "\x01");
	read_until(p.err, err, err_cap, "\x01");
	int status;
	cr_assert_eq(waitpid(p.pid, &status, 0), p.pid);
	close(p.out);
	close(p.err);
	return status;
}

Test(ring, sigusr2_writes_a_snapshot_while_the_program_runs)
{
	char dir[] = "/tmp/gt-ring-XXXXXX", out[4096], err[16384], pout[4096], perr[4096];
	cr_assert_not_null(mkdtemp(dir));
	int plain_status = hang_run(NULL, pout, sizeof pout, perr, sizeof perr);
	int status = hang_run(dir, out, sizeof out, err, sizeof err);
	cr_assert_eq(status, plain_status, "%s", err);
	cr_assert_str_eq(out, pout);
	cr_assert_str_eq(out, "churned\ndone ok\n");
	char snap[4200], trace[4200];
	snprintf(snap, sizeof snap, "%s/r.trace.snapshot-1", dir);
	snprintf(trace, sizeof trace, "%s/r.trace", dir);
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(snap, true, &report), 0, "%s", report);
	free(report);
	/* the snapshot: taken while early-blocked waited, from before the window */
	dump = gt_dump_123(snap);
	cr_assert_not_null(dump);
	expect_early_threads_blocked();
	cr_expect_eq(times_let_go("early-blocked"), 0, "let go after the snapshot");
	free(dump);
	/* the trace at the end: recording went on */
	dump = gt_dump_123(trace);
	cr_assert_not_null(dump, "%s", err);
	cr_expect_eq(times_let_go("early-blocked"), 1);
	unlink(snap);
	unlink(trace);
	rmdir(dir);
}
