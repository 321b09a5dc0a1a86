/* Several captures in one trace (gt_convert_files): records merged by time on one clock,
 * threads, stacks and objects of different processes kept apart, labels naming the process,
 * counters per capture; both Go readers accept the result. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encoder/capture_set.h"
#include "oracle.h"
#include "test_util.h"

#define T0 1000000ull                /* capture A's start (ns, CLOCK_MONOTONIC) */
#define COND 0x7f0000001000ull       /* the same address in both processes */
#define B_HZ 2000000000ull           /* capture B counts a TSC at 2 GHz */
#define B_TSC0 5000000ull

/* B's timestamp of the instant A's clock reads t */
static uint64_t b_tsc(uint64_t t)
{
	return B_TSC0 + (t - (T0 + 50)) * (B_HZ / 1000000000ull);
}

/* A (pid 100, "alpha"): its main thread starts thread 2, which waits on condition variable
 * COND until main broadcasts it.  B (pid 200, "beta", on another clock, from T0 + 50): its
 * main thread waits on the same address, before the broadcast, and resumes after it with no
 * waker in its process. */
static void write_captures(char *a, char *b, size_t size)
{
	static const uint64_t pcs_a[] = {0x401234, 0x401300}, pcs_b[] = {0x501234, 0x501300};
	struct gt_cb *ca = gt_cb_new(2, 64 * 1024, T0);
	gt_cb_header(ca)->pid = 100;
	strcpy(gt_cb_header(ca)->exe_path, "/usr/bin/alpha");
	gt_cb_thread_existing(ca, 0, T0 + 10, 1, 0, 0);
	gt_cb_stack(ca, 0, T0 + 11, 1, pcs_a, 2);
	gt_cb_thread_new(ca, 0, T0 + 20, 1, 2, 1, 0x401000);
	gt_cb_thread_start(ca, 1, T0 + 30, 2, 1002, 0x401000);
	gt_cb_block_begin(ca, 1, T0 + 100, 2, GT_BK_COND, COND, 1);
	gt_cb_wake(ca, 0, T0 + 300, 1, GT_BK_COND, COND, GT_WAKE_ALL, 1);
	gt_cb_block_end(ca, 1, T0 + 310, 2, GT_BK_COND, COND, GT_BR_OK);
	snprintf(a, size, "%s/merge-a.cap", test_tmpdir());
	cr_assert_eq(gt_cb_write(ca, a), 0);
	gt_cb_free(ca);

	struct gt_cb *cbb = gt_cb_new(2, 64 * 1024, B_TSC0);
	gt_cb_set_clock(cbb, GT_CLOCK_TSC, B_HZ);
	gt_cb_header(cbb)->pid = 200;
	gt_cb_header(cbb)->start_mono_ns = T0 + 50;
	strcpy(gt_cb_header(cbb)->exe_path, "/usr/bin/beta");
	gt_cb_thread_existing(cbb, 0, b_tsc(T0 + 60), 1, 0, 0);
	gt_cb_stack(cbb, 0, b_tsc(T0 + 61), 1, pcs_b, 2);
	gt_cb_block_begin(cbb, 0, b_tsc(T0 + 200), 1, GT_BK_COND, COND, 1);
	gt_cb_block_end(cbb, 0, b_tsc(T0 + 400), 1, GT_BK_COND, COND, GT_BR_OK);
	snprintf(b, size, "%s/merge-b.cap", test_tmpdir());
	cr_assert_eq(gt_cb_write(cbb, b), 0);
	gt_cb_free(cbb);
}

Test(merge, processes_stay_apart_on_one_clock)
{
	char a[PATH_MAX], b[PATH_MAX], trace[PATH_MAX], err[512];
	write_captures(a, b, sizeof a);
	snprintf(trace, sizeof trace, "%s/merge.trace", test_tmpdir());
	/* given in the other order: captures are taken by start time */
	const char *const caps[] = {b, a};
	struct gt_convert_options opt = {.no_symbols = true};
	struct gt_convert_set_summary sum;
	cr_assert_eq(gt_convert_files(caps, 2, trace, &opt, &sum, err, sizeof err), 0, "%s", err);
	cr_assert_eq(check_go122_writer(caps, 2, &opt), 0);
	cr_assert_eq(sum.n, 2);
	cr_expect_eq(sum.captures[0].sum.pid, 100, "the earliest capture first");
	cr_expect_str_eq(sum.captures[1].command, "beta");
	cr_expect_eq(sum.total.captures, 2);
	cr_expect_eq(sum.total.model.threads, 3);
	/* A's broadcast wakes A's waiter only; B's waiter on the same address has no waker */
	cr_expect_eq(sum.captures[0].sum.model.wakes_matched, 1);
	cr_expect_eq(sum.captures[1].sum.model.wakes_matched, 0);
	cr_expect_eq(sum.captures[1].sum.model.unknown_wakeups, 1);
	gt_convert_set_summary_free(&sum);

	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace, false, &report), 0, "%s", report ? report : "");
	free(report);
	struct gt_events *t = gt_events_parse_119(trace);
	cr_assert_not_null(t);
	/* G1 alpha's main, G2 its thread, G3 beta's main; B's block (T0 + 200 on A's clock)
	 * falls between A's block and A's wake */
	ssize_t a_block = nth19(t, "GoBlockCond", 0), b_block = nth19(t, "GoBlockCond", 1);
	ssize_t wake = nth19_arg(t, "GoUnblock", "g", 2, 0);
	cr_assert(a_block >= 0 && b_block >= 0 && wake >= 0);
	cr_expect_eq(t->ev[a_block].g, 2);
	cr_expect_eq(t->ev[b_block].g, 3, "B's block is on B's goroutine");
	cr_expect_eq(t->ev[wake].g, 1, "A's main wakes A's thread");
	cr_expect_lt(t->ev[a_block].ts_ns, t->ev[b_block].ts_ns);
	cr_expect_lt(t->ev[b_block].ts_ns, t->ev[wake].ts_ns, "B's clock was not translated");
	ssize_t b_wake = nth19_arg(t, "GoUnblock", "g", 3, 0);
	cr_assert_geq(b_wake, 0);
	cr_expect_eq(t->ev[b_wake].g, 0, "B's waiter woken by a goroutine of another process");
	/* labels name the process */
	char label[64];
	ssize_t l3 = nth19_arg(t, "GoStartLabel", "g", 3, 0);
	cr_assert_geq(l3, 0);
	cr_expect_str_eq(gt_event_string(&t->ev[l3], "label", label, sizeof label), "beta[200]");
	gt_events_free(t);

	/* each process's stack 1 is its own */
	char *d = gt_dump_123(trace);
	cr_assert_not_null(d);
	struct ev23 e;
	cr_assert(find23(d, "GoID=2 Running->Waiting", 0, &e));
	cr_expect(strstr(e.tstack, "0x401233") || strstr(e.stack, "0x401233"), "%s | %s", e.stack,
		  e.tstack);
	cr_assert(find23(d, "GoID=3 Running->Waiting", 0, &e));
	cr_expect(strstr(e.tstack, "0x501233") || strstr(e.stack, "0x501233"), "%s | %s", e.stack,
		  e.tstack);
	free(d);
}

Test(merge, one_capture_is_the_single_conversion)
{
	char a[PATH_MAX], b[PATH_MAX], one[PATH_MAX], set[PATH_MAX], err[512];
	write_captures(a, b, sizeof a);
	snprintf(one, sizeof one, "%s/one.trace", test_tmpdir());
	snprintf(set, sizeof set, "%s/set.trace", test_tmpdir());
	struct gt_convert_options opt = {.no_symbols = true};
	struct gt_convert_summary s;
	cr_assert_eq(gt_convert_file(a, one, &opt, &s, err, sizeof err), 0, "%s", err);
	const char *const caps[] = {a};
	struct gt_convert_set_summary sum;
	cr_assert_eq(gt_convert_files(caps, 1, set, &opt, &sum, err, sizeof err), 0, "%s", err);
	gt_convert_set_summary_free(&sum);
	char cmp[2 * PATH_MAX + 16];
	snprintf(cmp, sizeof cmp, "cmp -s '%s' '%s'", one, set);
	cr_expect_eq(system(cmp), 0, "a set of one differs from the capture's own trace");
}

Test(merge, unreadable_captures_are_left_out_and_said)
{
	char a[PATH_MAX], b[PATH_MAX], bad[PATH_MAX], trace[PATH_MAX], err[512];
	write_captures(a, b, sizeof a);
	snprintf(bad, sizeof bad, "%s/merge-bad.cap", test_tmpdir());
	FILE *f = fopen(bad, "w");
	fputs("not a capture\n", f);
	fclose(f);
	snprintf(trace, sizeof trace, "%s/bad.trace", test_tmpdir());
	const char *const caps[] = {bad, a};
	struct gt_convert_options opt = {.no_symbols = true};
	struct gt_convert_set_summary sum;
	cr_assert_eq(gt_convert_files(caps, 2, trace, &opt, &sum, err, sizeof err), 0, "%s", err);
	cr_assert_eq(sum.n, 2);
	cr_expect(sum.captures[0].readable && !sum.captures[1].readable);
	cr_expect(strstr(sum.captures[1].error, "not a gotrace capture"), "%s",
		  sum.captures[1].error);
	gt_convert_set_summary_free(&sum);
	const char *const only_bad[] = {bad};
	cr_expect_neq(gt_convert_files(only_bad, 1, trace, &opt, &sum, err, sizeof err), 0);
	gt_convert_set_summary_free(&sum);
}

/* What one step of a set's merge gave: a record (capture, thread, type, tsc) or an end. */
struct step {
	uint32_t capture, thread;
	uint8_t type;           /* 0: the end of capture */
	uint64_t tsc;
};

static struct step step_of(const struct gt_capture_record *r)
{
	return (struct step){r->capture, r->rec->thread, r->rec->type, r->tsc};
}

static bool same_step(struct step a, struct step b)
{
	return a.capture == b.capture && a.thread == b.thread && a.type == b.type && a.tsc == b.tsc;
}

/* Every step of the merge of caps; with peeks: before each step, a peek as far as it goes
 * (every 97th step) or of the next record, each checked against what is delivered next.
 * Returns the number of steps; *first_view: how far the first peek saw. */
static size_t merge_steps(const char *const *caps, size_t n, bool peeks, struct step *out,
			  size_t cap, size_t *first_view)
{
	struct gt_capture_set *s = gt_capture_set_open(caps, n);
	cr_assert_not_null(s);
	static struct step view[4096];
	size_t n_view = 0, used = 0, k = 0;
	struct gt_capture_record r;
	uint32_t index;
	enum gt_set_event ev;
	for (;; k++) {
		if (peeks && (k % 97 == 0 || used == n_view)) {
			size_t want = k % 97 == 0 ? 4096 : 1;
			for (n_view = used = 0; n_view < want && gt_capture_set_peek(s, n_view, &r);)
				view[n_view++] = step_of(&r);
			if (!k)
				*first_view = n_view;
		}
		if ((ev = gt_capture_set_next(s, &r, &index)) == GT_SET_DONE)
			break;
		cr_assert_lt(k, cap);
		out[k] = ev == GT_SET_RECORD ? step_of(&r) : (struct step){index, 0, 0, 0};
		if (ev == GT_SET_RECORD && peeks) {
			cr_assert_lt(used, n_view, "step %zu: a record no peek showed", k);
			cr_assert(same_step(out[k], view[used]), "step %zu differs from its peek", k);
			used++;
		}
	}
	cr_expect(!peeks || !gt_capture_set_peek(s, 0, &r), "nothing to peek at the end");
	gt_capture_set_close(s);
	return k;
}

Test(merge, a_peek_of_the_set_shows_what_the_merge_delivers)
{
	/* A: 200 stacks of 7 KiB, its reader shows 1 MiB of them at a time; B: 3000 small
	 * records in between; D: none, from T0 + 500; C: 50 records, from T0 + 20000 (opened
	 * when the merge reaches it).  The set's peek sees what its merge delivers next, ends
	 * where every capture's records are merged, and changes nothing of the merge. */
	static uint64_t pcs[900];
	for (int i = 0; i < 900; i++)
		pcs[i] = 0x401000 + 16 * (uint64_t)i;
	struct gt_cb *cb[4];
	static const uint64_t start[4] = {T0, T0 + 5, T0 + 20000, T0 + 500};
	char path[4][PATH_MAX];
	for (int i = 0; i < 4; i++) {
		cb[i] = gt_cb_new(1, 1 << 22, start[i]);
		gt_cb_header(cb[i])->pid = 100 * (uint32_t)(i + 1);
		gt_cb_header(cb[i])->start_mono_ns = start[i];
	}
	for (uint32_t id = 1; id <= 200; id++)
		gt_cb_stack(cb[0], 0, T0 + 100 * id, id, pcs, 900);
	for (uint64_t k = 0; k < 3000; k++)
		gt_cb_yield(cb[1], 0, T0 + 5 + 7 * k, 1, 0);
	for (uint64_t k = 0; k < 50; k++)
		gt_cb_yield(cb[2], 0, T0 + 20000 + 3 * k, 1, 0);
	for (int i = 0; i < 4; i++) {
		snprintf(path[i], sizeof path[i], "%s/peek-%d.cap", test_tmpdir(), i);
		cr_assert_eq(gt_cb_write(cb[i], path[i]), 0);
		gt_cb_free(cb[i]);
	}
	const char *const caps[] = {path[0], path[1], path[2], path[3]};
	enum { STEPS = 200 + 3000 + 50 + 4 };
	static struct step plain[STEPS + 1], peeked[STEPS + 1];
	size_t view = 0, unused;
	cr_assert_eq(merge_steps(caps, 4, false, plain, STEPS + 1, &unused), STEPS);
	cr_assert_eq(merge_steps(caps, 4, true, peeked, STEPS + 1, &view), STEPS);
	for (size_t k = 0; k < STEPS; k++)
		cr_assert(same_step(plain[k], peeked[k]), "step %zu: peeking changed the merge", k);
	cr_expect(view > 300 && view < 3000, "the first peek saw %zu records: A's reader bounds it", view);
	/* each capture ends right after its last record; D (empty, index 2 in start order)
	 * where the merge reached its start */
	for (size_t k = 0; k < STEPS; k++) {
		if (plain[k].type)
			continue;
		uint32_t c = plain[k].capture;
		if (c == 2) {
			cr_expect(plain[k - 1].tsc < T0 + 500 && plain[k + 1].tsc >= T0 + 500,
				  "D ends where the merge reaches its start");
			continue;
		}
		cr_expect(k > 0 && plain[k - 1].capture == c && plain[k - 1].type,
			  "capture %u ends after its last record", c);
		for (size_t j = k + 1; j < STEPS; j++)
			cr_expect(plain[j].capture != c, "capture %u has a record after its end", c);
	}
}

Test(merge, a_peek_opens_a_bounded_number_of_captures)
{
	/* 100 processes one after the other, 2 records each: a peek from the start sees the
	 * records of the 64 captures it may open before the merge delivers from them, not of
	 * all 100; peeking changes nothing of the merge */
	enum { N = 100 };
	static char path[N][PATH_MAX];
	const char *caps[N];
	for (int i = 0; i < N; i++) {
		uint64_t t = T0 + 1000 * (uint64_t)i;
		struct gt_cb *cb = gt_cb_new(1, 16384, t);
		gt_cb_header(cb)->pid = 1000 + (uint32_t)i;
		gt_cb_header(cb)->start_mono_ns = t;
		gt_cb_thread_existing(cb, 0, t + 10, 1, 0, 0);
		gt_cb_yield(cb, 0, t + 20, 1, 0);
		snprintf(path[i], sizeof path[i], "%s/open-%d.cap", test_tmpdir(), i);
		cr_assert_eq(gt_cb_write(cb, path[i]), 0);
		gt_cb_free(cb);
		caps[i] = path[i];
	}
	static struct step plain[3 * N + 1], peeked[3 * N + 1];
	size_t view = 0, unused;
	cr_assert_eq(merge_steps(caps, N, false, plain, 3 * N + 1, &unused), 3 * N);
	cr_assert_eq(merge_steps(caps, N, true, peeked, 3 * N + 1, &view), 3 * N);
	for (size_t k = 0; k < 3 * N; k++)
		cr_assert(same_step(plain[k], peeked[k]), "step %zu: peeking changed the merge", k);
	cr_expect_eq(view, 2 * 64, "the first peek saw %zu records", view);
}
