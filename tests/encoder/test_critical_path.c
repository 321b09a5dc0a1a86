/* The critical path's walk (encoder/critical_path.c) over a built capture whose path is known:
 * main creates stage-a, stage-b and a decoy and joins stage-b; stage-a sleeps, then signals the
 * condition variable stage-b waits on; stage-b runs until it ends; the decoy runs and ends off
 * the path.  The segments tile the interval exactly, each stage is its own thread's, the waits
 * followed are named, the decoy is absent; --thread and --from/--to choose other intervals. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "test_util.h"

#define T0 1000000ull
#define COND 0x7f0000003000ull
enum { MAIN = 1, STAGE_A, STAGE_B, DECOY };

/* Times after T0, in ns (the capture's clock is CLOCK_MONOTONIC). */
#define A_SLEEP_BEGIN 3000u
#define A_SLEEP_END 100000u
#define A_SIGNAL 101000u
#define B_WOKEN 101500u
#define B_END 200000u
#define MAIN_END 201000u

static void build(const char *path)
{
	const uint64_t pcs[] = {0x401000, 0x401100};
	struct gt_cb *cb = gt_cb_new(2, 1u << 20, T0);
	cr_assert_not_null(cb);
	uint64_t t = T0;
	gt_cb_clock(cb, 0, t, t);
	gt_cb_thread_existing(cb, 0, t, MAIN, 0, 0);
	gt_cb_stack(cb, 0, t, 1, pcs, 2);
	gt_cb_thread_new(cb, 0, T0 + 1000, MAIN, STAGE_A, 1, 0x401500);
	gt_cb_thread_new(cb, 0, T0 + 1100, MAIN, STAGE_B, 1, 0x401600);
	gt_cb_thread_new(cb, 0, T0 + 1200, MAIN, DECOY, 1, 0x401700);
	gt_cb_thread_start(cb, 1, T0 + 2000, STAGE_A, 5001, 0x401500);
	gt_cb_thread_name(cb, 1, T0 + 2000, STAGE_A, "stage-a");
	gt_cb_block_begin(cb, 0, T0 + 2500, MAIN, GT_BK_JOIN, STAGE_B, 1);
	gt_cb_block_begin(cb, 1, T0 + A_SLEEP_BEGIN, STAGE_A, GT_BK_SLEEP, 97000, 1);
	gt_cb_thread_start(cb, 0, T0 + 3500, STAGE_B, 5002, 0x401600);
	gt_cb_thread_name(cb, 0, T0 + 3500, STAGE_B, "stage-b");
	gt_cb_block_begin(cb, 0, T0 + 4000, STAGE_B, GT_BK_COND, COND, 1);
	gt_cb_thread_start(cb, 1, T0 + 5000, DECOY, 5003, 0x401700);
	gt_cb_thread_name(cb, 1, T0 + 5000, DECOY, "decoy");
	gt_cb_thread_end(cb, 1, T0 + 50000, DECOY);
	gt_cb_block_end(cb, 1, T0 + A_SLEEP_END, STAGE_A, GT_BK_SLEEP, 97000, GT_BR_TIMEOUT);
	gt_cb_wake(cb, 1, T0 + A_SIGNAL, STAGE_A, GT_BK_COND, COND, 1, 1);
	gt_cb_block_end(cb, 0, T0 + B_WOKEN, STAGE_B, GT_BK_COND, COND, GT_BR_OK);
	gt_cb_thread_end(cb, 1, T0 + 102000, STAGE_A);
	gt_cb_thread_end(cb, 0, T0 + B_END, STAGE_B);
	gt_cb_block_end(cb, 0, T0 + B_END + 500, MAIN, GT_BK_JOIN, STAGE_B, GT_BR_OK);
	gt_cb_thread_end(cb, 0, T0 + MAIN_END, MAIN);
	gt_cb_capture_end(cb, 0, T0 + MAIN_END + 100);
	cr_assert_eq(gt_cb_write(cb, path), 0);
	gt_cb_free(cb);
}

/* The capture converted with a recorder. */
static struct gt_critpath *record(void)
{
	char dir[] = "/tmp/gt-test-critpath-XXXXXX", cap[64], trace[64], err[256];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(cap, sizeof cap, "%s/c.gtcap", dir);
	snprintf(trace, sizeof trace, "%s/c.trace", dir);
	build(cap);
	struct gt_critpath *cp = gt_critpath_new();
	cr_assert_not_null(cp);
	struct gt_convert_options opt = {.no_symbols = true, .critical_path = cp,
					 .format = GT_FORMAT_GO122};
	struct gt_convert_summary sum;
	cr_assert_eq(gt_convert_file(cap, trace, &opt, &sum, err, sizeof err), 0, "%s", err);
	unlink(cap);
	unlink(trace);
	rmdir(dir);
	return cp;
}

/* The walk of q into r (cp to free after). */
static struct gt_critpath *walk(const struct gt_cp_query *q, struct gt_cp_result *r)
{
	char err[256];
	struct gt_critpath *cp = record();
	cr_assert_eq(gt_critpath_walk(cp, q, r, err, sizeof err), 0, "%s", err);
	return cp;
}

/* The segments tile [start_ns, end_ns) in time order; running ones' parts add up to them. */
static void assert_tiles(const struct gt_cp_result *r)
{
	uint64_t at = r->start_ns;
	for (size_t i = 0; i < r->n_segments; i++) {
		const struct gt_cp_segment *s = &r->segments[i];
		cr_assert_eq(s->start_ns, at, "segment %zu starts at %lu, not %lu", i,
			     (unsigned long)s->start_ns, (unsigned long)at);
		cr_assert_gt(s->ns, 0, "segment %zu is empty", i);
		uint64_t parts = 0;
		for (size_t k = 0; k < s->n_parts; k++)
			parts += r->parts[s->first_part + k].ns;
		cr_assert(s->n_parts == 0 || parts == s->ns, "segment %zu: parts %lu of %lu", i,
			  (unsigned long)parts, (unsigned long)s->ns);
		at += s->ns;
	}
	cr_assert_eq(at, r->end_ns);
}

/* ns of thread name on the path, in state (GT_CP_STATE_COUNT: any). */
static uint64_t share(const struct gt_cp_result *r, const char *name, enum gt_cp_state state)
{
	uint64_t ns = 0;
	for (size_t i = 0; i < r->n_segments; i++) {
		const struct gt_cp_segment *s = &r->segments[i];
		if (strcmp(r->threads[s->thread].name, name) == 0 &&
		    (state == GT_CP_STATE_COUNT || s->state == state))
			ns += s->ns;
	}
	return ns;
}

/* Within the few ticks the model moves events by to keep each P's order strict. */
#define NEAR(got, want) \
	cr_assert(((got) > (want) ? (got) - (want) : (want) - (got)) <= 50, "%s: %lu, not %lu", \
		  #got, (unsigned long)(got), (unsigned long)(want))

Test(critical_path, main_thread_chain)
{
	struct gt_cp_query q = {0};
	struct gt_cp_result r;
	struct gt_critpath *cp = walk(&q, &r);
	assert_tiles(&r);
	cr_assert(r.threads[r.thread].main);
	cr_assert(!r.kernel);
	NEAR(r.end_ns, MAIN_END);
	/* stage-a from its creation to its signal, its sleep its own wait */
	NEAR(share(&r, "stage-a", GT_CP_STATE_COUNT), A_SIGNAL - 1000);
	NEAR(share(&r, "stage-a", GT_CP_WAITING), A_SLEEP_END - A_SLEEP_BEGIN);
	/* stage-b from the signal to its end: what main's join waited for */
	NEAR(share(&r, "stage-b", GT_CP_STATE_COUNT), B_END - A_SIGNAL);
	cr_assert_eq(share(&r, "decoy", GT_CP_STATE_COUNT), 0);
	for (size_t i = 0; i < r.n_segments; i++) {
		const struct gt_cp_segment *s = &r.segments[i];
		const char *name = r.threads[s->thread].name;
		if (strcmp(name, "stage-b") == 0)
			cr_assert(s->via >= 0 && r.waits[s->via].kind == GT_BK_JOIN, "stage-b via join");
		if (strcmp(name, "stage-a") == 0) {
			cr_assert(s->via >= 0 && r.waits[s->via].kind == GT_BK_COND, "stage-a via cond");
			cr_assert_eq(r.waits[s->via].obj, COND);
		}
		if (s->thread == r.thread)
			cr_assert_eq(s->via, -1, "main's own time is followed through no wait");
	}
	gt_cp_result_free(&r);
	gt_critpath_free(cp);
}

Test(critical_path, thread_by_name_and_window)
{
	struct gt_cp_query q = {.thread = "stage-b"};
	struct gt_cp_result r;
	struct gt_critpath *cp = walk(&q, &r);
	assert_tiles(&r);
	cr_assert_str_eq(r.threads[r.thread].name, "stage-b");
	/* its own chain: back through stage-a to main, which created both */
	cr_assert_gt(share(&r, "stage-a", GT_CP_STATE_COUNT), 0);
	NEAR(r.end_ns, B_END);
	gt_cp_result_free(&r);
	gt_critpath_free(cp);

	/* a window inside stage-a's sleep: all of it that sleep */
	q = (struct gt_cp_query){.from_ns = 10000, .to_ns = 90000};
	cp = walk(&q, &r);
	assert_tiles(&r);
	NEAR(r.start_ns, 10000u);
	NEAR(r.end_ns, 90000u);
	cr_assert_eq(share(&r, "stage-a", GT_CP_WAITING), r.end_ns - r.start_ns);
	gt_cp_result_free(&r);
	gt_critpath_free(cp);
}

Test(critical_path, unknown_thread_refused)
{
	struct gt_cp_query q = {.thread = "nosuch"};
	struct gt_cp_result r;
	char err[256];
	struct gt_critpath *cp = record();
	cr_assert_eq(gt_critpath_walk(cp, &q, &r, err, sizeof err), -1);
	cr_assert_str_eq(err, "no thread named nosuch in the trace");
	gt_critpath_free(cp);
}

/* The path drawn in the trace (draw_critical_path): a task "critical path" and regions on the
 * goroutines of main (G1), stage-a (G2) and stage-b (G3), none on the decoy's (G4), each
 * begun and ended by its goroutine; every Go reader reads both formats. */
static void drawn(enum gt_trace_format format)
{
	char dir[] = "/tmp/gt-test-critpath-XXXXXX", cap[64], trace[64], err[256];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(cap, sizeof cap, "%s/c.gtcap", dir);
	snprintf(trace, sizeof trace, "%s/c.trace", dir);
	build(cap);
	struct gt_convert_options opt = {.no_symbols = true, .draw_critical_path = true,
					 .format = format};
	struct gt_convert_summary sum;
	cr_assert_eq(gt_convert_file(cap, trace, &opt, &sum, err, sizeof err), 0, "%s", err);
	cr_assert_eq(sum.wire.skipped + sum.wire.repaired + sum.model.user_skipped, 0);
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace, false, &report), 0, "%s", report);
	free(report);
	char *dump = gt_dump_123(trace);
	cr_assert_not_null(dump);
	cr_assert_eq(gt_dump_123_count(dump, "TaskBegin Type=\"critical path\""), 1, "%s", dump);
	cr_assert_eq(gt_dump_123_count(dump, "TaskEnd"), 1, "%s", dump);
	const char *on_path[] = {"G=1", "G=2", "G=3"};
	for (size_t i = 0; i < 3; i++) {
		char begin[64], end[64];
		snprintf(begin, sizeof begin, "%s RegionBegin Type=\"critical path\"", on_path[i]);
		snprintf(end, sizeof end, "%s RegionEnd Type=\"critical path\"", on_path[i]);
		cr_assert_geq(gt_dump_123_count(dump, begin), 1, "%s\n%s", begin, dump);
		cr_assert_eq(gt_dump_123_count(dump, begin), gt_dump_123_count(dump, end), "%s",
			     dump);
	}
	cr_assert_eq(gt_dump_123_count(dump, "G=4 RegionBegin"), 0, "%s", dump);
	free(dump);
	unlink(cap);
	unlink(trace);
	rmdir(dir);
}

Test(critical_path, drawn_go122, .timeout = 300) { drawn(GT_FORMAT_GO122); }
Test(critical_path, drawn_go119, .timeout = 300) { drawn(GT_FORMAT_GO119); }
