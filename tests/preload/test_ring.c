/* The flight recorder (GOTRACE_LAST, issue 13): a ring of 16 chunks of 16 KiB wrapped many
 * times by two threads' sched_yield()s keeps the threads made before its window with their
 * names and start routines, shows the one blocked on a mutex and the one in a read across the
 * window's start as blocked there, with their stacks, and converts into a trace every Go
 * reader accepts; so does the ring of a program killed with kill -9.  Each program runs
 * untraced and traced first (same output, same status). */
#include <criterion/criterion.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

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

/* The twins of gt-ring SCENARIO with 40000 yields per churn thread (~2.5 MB of records, ten
 * times the ring); kill_ms > 0: both are killed once they printed a line. */
static void twins(const char *scenario, int kill_ms)
{
	const char *argv[] = {test_program("gt-ring"), scenario, "40000", NULL};
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
	/* the ring (16 chunks, or its CPUs' chunks and the 4 of the quarantine when more) */
	cr_expect_leq(ring, RING_BYTES / CHUNK + 2, "%lu CPU chunks", (unsigned long)ring);
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

/* The thread NAME's first transition out of running is TO (a reason), with FRAME in its
 * stack: it was blocked so when the window began. */
static void expect_blocked_at_start(const char *name, const char *to, const char *frame)
{
	char match[64];
	snprintf(match, sizeof match, "GoID=%ld Running->%s", g_of(name), to);
	char *st = gt_dump_123_stack(dump, match, 0, "TransitionStack");
	cr_assert_not_null(st, "%s never goes Running->%s", name, to);
	cr_expect(strstr(st, frame), "%s blocks in %s, not in %s", name, st, frame);
	free(st);
}

static void convert_and_dump(void)
{
	char why[4096];
	cr_assert_eq(run_convert_all(&traced, why, sizeof why), 1, "%s", why);
	char trace[4200];
	snprintf(trace, sizeof trace, "%s/gotrace-%d.gtcap.trace", traced.dir, (int)traced.pid);
	dump = gt_dump_123(trace);
	cr_assert_not_null(dump);
}

Test(ring, wrapped_ring_keeps_threads_from_before_its_window)
{
	twins("wrap", 0);
	expect_wrapped_ring();
	convert_and_dump();
	expect_blocked_at_start("early-blocked", "Waiting", "early_blocked");
	expect_blocked_at_start("early-reader", "Syscall", "early_reader");
	/* and they are let go in the window */
	char match[64];
	snprintf(match, sizeof match, "GoID=%ld Waiting->Runnable", g_of("early-blocked"));
	cr_expect_eq(gt_dump_123_count(dump, match), 1);
	/* the report names them with their start routines */
	char capture[4200];
	snprintf(capture, sizeof capture, "%s/gotrace-%d.gtcap", traced.dir, (int)traced.pid);
	const char *argv[] = {test_gotrace(), "report", capture, NULL};
	cr_assert_eq(run_program(&tool, 0, argv, NULL), 0);
	cr_assert(strstr(tool.out, "early-blocked   early_blocked"), "%s", tool.out);
	cr_assert(strstr(tool.out, "early-reader    early_reader"), "%s", tool.out);
}

Test(ring, killed_ring_converts)
{
	twins("hang", 1);
	cr_assert(WIFSIGNALED(traced.status) && WTERMSIG(traced.status) == SIGKILL);
	expect_wrapped_ring();
	cr_expect_eq(cap.hdr->flags & GT_FILE_FINALIZED, 0u);
	convert_and_dump();
	expect_blocked_at_start("early-blocked", "Waiting", "early_blocked");
	expect_blocked_at_start("early-reader", "Syscall", "early_reader");
	char match[64];
	snprintf(match, sizeof match, "GoID=%ld Waiting->Runnable", g_of("early-blocked"));
	cr_expect_eq(gt_dump_123_count(dump, match), 0, "still blocked when killed");
}
