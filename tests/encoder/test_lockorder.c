/* The lock-order graph (encoder/lockorder.c, its API in encoder/encoder.h): built captures of
 * --locks=all's lock records read in merged order, fed to the tracker and the graph its
 * changes; the edges and cycles asserted. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "test_util.h"
#include "encoder/encoder.h"

#define T0 1000000ull
#define A 0x5000ull
#define B 0x6000ull
#define C 0x7000ull
#define D 0x8000ull

/* A capture of threads 1 .. n, each started (tid 100 + serial). */
static struct gt_cb *threads(uint32_t n)
{
	struct gt_cb *cb = gt_cb_new(1, 8192, T0);
	for (uint32_t t = 1; t <= n; t++)
		gt_cb_thread_existing(cb, 0, T0 + t, t, 0, 0);
	return cb;
}

static uint64_t now = T0 + 100;

static void lock_rec(struct gt_cb *cb, uint32_t thread, uint8_t type, uint8_t kind, uint64_t obj,
		     uint32_t stack, uint32_t flags)
{
	struct gt_p_lock p = {.obj = obj, .stack = stack, .flags = flags};
	gt_cb_record(cb, 0, type, kind, thread, now += 10, &p, sizeof p);
}

static void take(struct gt_cb *cb, uint32_t thread, uint64_t obj, uint32_t stack)
{
	lock_rec(cb, thread, GT_LOCK_ACQUIRE, GT_BK_MUTEX, obj, stack, 0);
}

static void drop(struct gt_cb *cb, uint32_t thread, uint64_t obj)
{
	lock_rec(cb, thread, GT_LOCK_RELEASE, GT_BK_MUTEX, obj, 0, 0);
}

/* Thread takes first (stack s1) then second (stack s2), and releases both. */
static void in_order(struct gt_cb *cb, uint32_t thread, uint64_t first, uint32_t s1,
		     uint64_t second, uint32_t s2)
{
	take(cb, thread, first, s1);
	take(cb, thread, second, s2);
	drop(cb, thread, second);
	drop(cb, thread, first);
}

/* The graph of every record of cb (written as name), fed through a tracker; *trp gets the
 * tracker (to free) when not NULL. */
static struct gt_lock_order *graph_of(struct gt_cb *cb, const char *name, struct gt_tracker **trp)
{
	char p[PATH_MAX], err[256];
	snprintf(p, sizeof p, "%s/%s.cap", test_tmpdir(), name);
	cr_assert_eq(gt_cb_write(cb, p), 0);
	gt_cb_free(cb);
	struct gt_capture *c = gt_capture_open(p, err, sizeof err);
	cr_assert_not_null(c, "%s", err);
	struct gt_tracker *tr = gt_tracker_new();
	struct gt_lock_order *g = gt_lock_order_new();
	cr_assert(tr && g);
	struct gt_capture_record r;
	struct gt_tracker_change ch;
	while (gt_capture_next(c, &r)) {
		cr_assert(gt_tracker_fact(tr, &r, &ch));
		cr_assert(gt_lock_order_fact(g, &r, &ch));
	}
	gt_capture_close(c);
	if (trp)
		*trp = tr;
	else
		gt_tracker_free(tr);
	return g;
}

/* Lines of text that begin with prefix. */
static size_t lines_starting(const char *text, const char *prefix)
{
	size_t n = !strncmp(text, prefix, strlen(prefix));
	for (const char *nl = text; (nl = strchr(nl, '\n')); nl++)
		n += !strncmp(nl + 1, prefix, strlen(prefix));
	return n;
}

static void expect_edge(const struct gt_lock_edge *e, uint64_t from, uint64_t to, uint32_t thread,
			uint32_t from_stack, uint32_t to_stack)
{
	cr_assert_not_null(e);
	cr_expect_eq(e->from, from, "from %#lx, want %#lx", (unsigned long)e->from, (unsigned long)from);
	cr_expect_eq(e->to, to, "to %#lx, want %#lx", (unsigned long)e->to, (unsigned long)to);
	cr_expect_eq(e->thread, thread);
	cr_expect_eq(e->from_stack, from_stack);
	cr_expect_eq(e->to_stack, to_stack);
}

static const char *name_lock(void *ctx, uint8_t kind, uint64_t obj)
{
	(void)ctx;
	cr_expect_eq(kind, GT_BK_MUTEX);
	return obj == A ? "lock_a" : obj == B ? "lock_b" : NULL;
}

static const char *name_site(void *ctx, uint32_t capture, uint32_t stack, char *buf, size_t size)
{
	(void)ctx;
	cr_expect_eq(capture, 0u);
	if (stack == 99)
		return NULL;
	snprintf(buf, size, "site%u (x.c:%u)", stack, stack);
	return buf;
}

/* Thread 1 takes A then B; thread 2 (named) B then A, after thread 1 let them go: the graph
 * has both edges with their first acquisitions, and one cycle, said as TSan says it. */
Test(lockorder, two_locks_taken_in_both_orders_make_one_cycle)
{
	struct gt_cb *cb = threads(2);
	gt_cb_thread_name(cb, 0, T0 + 50, 2, "phase2");
	in_order(cb, 1, A, 11, B, 12);
	in_order(cb, 1, A, 13, B, 14);   /* the same order again: the same edge */
	in_order(cb, 2, B, 21, A, 22);
	struct gt_tracker *tr;
	struct gt_lock_order *g = graph_of(cb, "two", &tr);
	cr_assert_eq(gt_lock_order_edges(g), 2);
	expect_edge(gt_lock_order_edge(g, 0), A, B, 1, 11, 12);
	cr_expect_eq(gt_lock_order_edge(g, 0)->count, 2);
	expect_edge(gt_lock_order_edge(g, 1), B, A, 2, 21, 22);
	cr_assert_eq(gt_lock_order_cycles(g), 1);
	const struct gt_lock_edge *cycle[GT_CYCLE_MAX];
	cr_assert_eq(gt_lock_order_cycle(g, 0, cycle), 2);
	cr_expect_eq(cycle[0], gt_lock_order_edge(g, 0), "from the earliest edge");
	cr_expect_eq(cycle[1], gt_lock_order_edge(g, 1));
	cr_expect_not(gt_lock_order_one_thread(g, 0));

	char line[512];
	gt_lock_order_cycle_text(g, 0, tr, NULL, line, sizeof line);
	cr_expect_str_eq(line, "0x5000 then 0x6000 at stack 12 (thread 1), "
			       "0x6000 then 0x5000 at stack 22 (phase2 (thread 2))");
	struct gt_lock_namer namer = {name_lock, name_site, NULL};
	gt_lock_order_cycle_text(g, 0, tr, &namer, line, sizeof line);
	cr_expect_str_eq(line, "lock_a then lock_b at site12 (x.c:12) (thread 1), "
			       "lock_b then lock_a at site22 (x.c:22) (phase2 (thread 2))");
	char buf[1024] = "";
	cr_expect_eq(gt_lock_order_text(g, 0, tr, &namer, buf, sizeof buf), 1);
	cr_expect_str_eq(buf, line);
	cr_expect_eq(gt_lock_order_text(g, 1, tr, &namer, buf, sizeof buf), 0, "another capture");
	gt_lock_order_free(g);
	gt_tracker_free(tr);
}

/* A -> B by thread 1, B -> C by thread 2: no cycle yet; C -> A by thread 3 closes it. */
Test(lockorder, three_locks_in_three_phases_make_one_cycle_of_three)
{
	struct gt_cb *cb = threads(3);
	in_order(cb, 1, A, 11, B, 12);
	in_order(cb, 2, B, 21, C, 22);
	struct gt_lock_order *g = graph_of(cb, "three_open", NULL);
	cr_expect_eq(gt_lock_order_edges(g), 2);
	cr_expect_eq(gt_lock_order_cycles(g), 0, "A -> B -> C is no cycle");
	gt_lock_order_free(g);

	cb = threads(3);
	in_order(cb, 1, A, 11, B, 12);
	in_order(cb, 2, B, 21, C, 22);
	in_order(cb, 3, C, 31, A, 32);
	g = graph_of(cb, "three", NULL);
	cr_assert_eq(gt_lock_order_cycles(g), 1);
	const struct gt_lock_edge *cycle[GT_CYCLE_MAX];
	cr_assert_eq(gt_lock_order_cycle(g, 0, cycle), 3);
	expect_edge(cycle[0], A, B, 1, 11, 12);
	expect_edge(cycle[1], B, C, 2, 21, 22);
	expect_edge(cycle[2], C, A, 3, 31, 32);
	char line[512];
	gt_lock_order_cycle_text(g, 0, NULL, NULL, line, sizeof line);
	cr_expect_str_eq(line, "0x5000 then 0x6000 at stack 12 (thread 1), 0x6000 then 0x7000 at "
			       "stack 22 (thread 2), 0x7000 then 0x5000 at stack 32 (thread 3)");
	gt_lock_order_free(g);
}

/* Thread 2 takes B, then A by a try-lock: no edge into A, no cycle.  A try-locked lock held
 * still orders what is taken after it: thread 3 try-locks C, then locks D. */
Test(lockorder, a_try_lock_adds_no_edge_into_what_it_took)
{
	struct gt_cb *cb = threads(3);
	in_order(cb, 1, A, 11, B, 12);
	take(cb, 2, B, 21);
	lock_rec(cb, 2, GT_LOCK_ACQUIRE, GT_BK_MUTEX, A, 22, GT_LOCK_TRY);
	drop(cb, 2, A);
	drop(cb, 2, B);
	lock_rec(cb, 3, GT_LOCK_ACQUIRE, GT_BK_MUTEX, C, 31, GT_LOCK_TRY);
	take(cb, 3, D, 32);
	struct gt_lock_order *g = graph_of(cb, "try", NULL);
	cr_assert_eq(gt_lock_order_edges(g), 2);
	expect_edge(gt_lock_order_edge(g, 0), A, B, 1, 11, 12);
	expect_edge(gt_lock_order_edge(g, 1), C, D, 3, 31, 32);
	cr_expect_eq(gt_lock_order_cycles(g), 0);
	gt_lock_order_free(g);
}

/* A recursive mutex taken again while held begins no hold: no edge into it, from B taken in
 * between or from itself. */
Test(lockorder, a_recursive_acquisition_adds_no_edge)
{
	struct gt_cb *cb = threads(1);
	take(cb, 1, A, 11);
	take(cb, 1, A, 12);
	take(cb, 1, B, 13);
	take(cb, 1, A, 14);   /* A held: B -> A would be no new wait */
	drop(cb, 1, A);
	drop(cb, 1, B);
	drop(cb, 1, A);
	drop(cb, 1, A);
	struct gt_lock_order *g = graph_of(cb, "recursive", NULL);
	cr_assert_eq(gt_lock_order_edges(g), 1);
	expect_edge(gt_lock_order_edge(g, 0), A, B, 1, 11, 13);
	cr_expect_eq(gt_lock_order_cycles(g), 0);
	gt_lock_order_free(g);
}

/* Four threads take A and B, two in each order: one cycle, found once. */
Test(lockorder, a_cycle_is_reported_once)
{
	struct gt_cb *cb = threads(4);
	in_order(cb, 1, A, 11, B, 12);
	in_order(cb, 2, B, 21, A, 22);
	in_order(cb, 3, A, 31, B, 32);
	in_order(cb, 4, B, 41, A, 42);
	in_order(cb, 2, B, 21, A, 22);
	struct gt_lock_order *g = graph_of(cb, "once", NULL);
	cr_assert_eq(gt_lock_order_edges(g), 2);
	cr_expect_eq(gt_lock_order_cycles(g), 1);
	cr_expect_eq(gt_lock_order_edge(g, 0)->count, 2);
	cr_expect_eq(gt_lock_order_edge(g, 1)->count, 3);
	cr_expect(gt_lock_order_edge(g, 0)->other_threads);
	gt_lock_order_free(g);
}

/* One thread takes A then B, later B then A: a cycle (another thread running the same code
 * would deadlock), said to be one thread's. */
Test(lockorder, one_threads_two_orders_are_a_cycle_of_one_thread)
{
	struct gt_cb *cb = threads(1);
	in_order(cb, 1, A, 11, B, 12);
	in_order(cb, 1, B, 13, A, 14);
	struct gt_lock_order *g = graph_of(cb, "one_thread", NULL);
	cr_assert_eq(gt_lock_order_cycles(g), 1);
	cr_expect(gt_lock_order_one_thread(g, 0));
	gt_lock_order_free(g);
}

/* Readers of rwlock A in crossing orders: thread 1 read-locks A then locks B, thread 2 locks
 * B then read-locks A. */
static struct gt_cb *readers_crossing(void)
{
	struct gt_cb *cb = threads(3);
	lock_rec(cb, 1, GT_LOCK_ACQUIRE, GT_BK_RWLOCK_RD, A, 11, 0);
	take(cb, 1, B, 12);
	drop(cb, 1, B);
	lock_rec(cb, 1, GT_LOCK_RELEASE, GT_BK_RWLOCK_WR, A, 0, 0);
	take(cb, 2, B, 21);
	lock_rec(cb, 2, GT_LOCK_ACQUIRE, GT_BK_RWLOCK_RD, A, 22, 0);
	lock_rec(cb, 2, GT_LOCK_RELEASE, GT_BK_RWLOCK_WR, A, 0, 0);
	drop(cb, 2, B);
	return cb;
}

/* Readers do not block each other: no cycle (thread 2 gets A beside thread 1).  Thread 3
 * write-locks A then locks B: now thread 2's read can wait for a writer holding A, a cycle. */
Test(lockorder, readers_of_one_rwlock_make_no_cycle_until_a_writer_does)
{
	struct gt_lock_order *g = graph_of(readers_crossing(), "readers", NULL);
	cr_expect_eq(gt_lock_order_edges(g), 2);
	cr_expect_eq(gt_lock_order_cycles(g), 0, "readers beside readers never wait");
	gt_lock_order_free(g);

	struct gt_cb *cb = readers_crossing();
	lock_rec(cb, 3, GT_LOCK_ACQUIRE, GT_BK_RWLOCK_WR, A, 31, 0);
	take(cb, 3, B, 32);
	g = graph_of(cb, "writer", NULL);
	cr_expect_eq(gt_lock_order_edges(g), 2, "the writer's order is the readers' edge");
	cr_assert_eq(gt_lock_order_cycles(g), 1);
	const struct gt_lock_edge *cycle[GT_CYCLE_MAX];
	cr_assert_eq(gt_lock_order_cycle(g, 0, cycle), 2);
	expect_edge(cycle[0], A, B, 1, 11, 12);   /* its first acquisition, a reader's */
	cr_expect(cycle[0]->from_exclusive && cycle[0]->other_threads);
	gt_lock_order_free(g);
}

/* A condition wait taking its mutex A back while thread 1 holds B blocks like a lock: an
 * edge B -> A; thread 2 takes A then B: a cycle. */
Test(lockorder, a_condition_waits_retaking_of_its_mutex_is_an_edge)
{
	struct gt_cb *cb = threads(2);
	take(cb, 1, A, 11);
	take(cb, 1, B, 12);
	lock_rec(cb, 1, GT_LOCK_RELEASE, GT_BK_MUTEX, A, 0, GT_LOCK_COND);
	lock_rec(cb, 1, GT_LOCK_ACQUIRE, GT_BK_MUTEX, A, 13, GT_LOCK_COND);
	drop(cb, 1, A);
	drop(cb, 1, B);
	in_order(cb, 2, A, 21, B, 22);
	struct gt_lock_order *g = graph_of(cb, "cond", NULL);
	cr_assert_eq(gt_lock_order_edges(g), 2);
	expect_edge(gt_lock_order_edge(g, 0), A, B, 1, 11, 12);
	expect_edge(gt_lock_order_edge(g, 1), B, A, 1, 12, 13);
	cr_expect_eq(gt_lock_order_edge(g, 1)->to_flags, GT_LOCK_COND);
	cr_expect_eq(gt_lock_order_cycles(g), 1);
	gt_lock_order_free(g);
}

/* Threads 1 and 2 each hold one lock and wait for the other's, and never get it (a
 * deadlock): the waits made the orders, a cycle, neither taken (count 0).  Thread 3 waits for
 * C holding A, then gets it: one edge, taken once. */
Test(lockorder, waits_for_locks_make_orders_a_deadlocks_too)
{
	struct gt_cb *cb = threads(3);
	take(cb, 1, A, 11);
	take(cb, 2, B, 21);
	gt_cb_block_begin(cb, 0, now += 10, 1, GT_BK_MUTEX, B, 12);
	gt_cb_block_begin(cb, 0, now += 10, 2, GT_BK_MUTEX, A, 22);
	take(cb, 3, C, 31);
	gt_cb_block_begin(cb, 0, now += 10, 3, GT_BK_MUTEX, A, 32);
	gt_cb_block_end(cb, 0, now += 10, 3, GT_BK_MUTEX, A, GT_BR_OK);
	lock_rec(cb, 3, GT_LOCK_ACQUIRE, GT_BK_MUTEX, A, 33, GT_LOCK_WAITED);
	struct gt_lock_order *g = graph_of(cb, "waits", NULL);
	cr_assert_eq(gt_lock_order_edges(g), 3);
	expect_edge(gt_lock_order_edge(g, 0), A, B, 1, 11, 12);
	expect_edge(gt_lock_order_edge(g, 1), B, A, 2, 21, 22);
	expect_edge(gt_lock_order_edge(g, 2), C, A, 3, 31, 32);
	cr_expect_eq(gt_lock_order_edge(g, 0)->count, 0, "never taken");
	cr_expect_eq(gt_lock_order_edge(g, 0)->to_flags, GT_LOCK_WAITED);
	cr_expect_eq(gt_lock_order_edge(g, 2)->count, 1, "its wait and its acquisition: once");
	cr_assert_eq(gt_lock_order_cycles(g), 1);
	const struct gt_lock_edge *cycle[GT_CYCLE_MAX];
	cr_assert_eq(gt_lock_order_cycle(g, 0, cycle), 2);
	cr_expect_eq(cycle[0], gt_lock_order_edge(g, 0));
	gt_lock_order_free(g);
}

/* A thread holding 70 locks orders each new one after the 64 it took last: the orders from
 * older ones are counted as not made, never kept (no quadratic number of edges). */
Test(lockorder, a_thread_holding_many_locks_orders_them_after_the_last_64)
{
	struct gt_cb *cb = threads(1);
	for (uint64_t k = 0; k < 70; k++)
		take(cb, 1, 0x10000 + 64 * k, (uint32_t)k + 1);
	struct gt_lock_order *g = graph_of(cb, "deep", NULL);
	size_t want = 0;
	for (size_t k = 1; k < 70; k++)
		want += k < GT_LOCK_ORDER_DEPTH ? k : GT_LOCK_ORDER_DEPTH;
	cr_expect_eq(gt_lock_order_edges(g), want);
	cr_expect_eq(gt_lock_order_lost(g), 1 + 2 + 3 + 4 + 5);
	const struct gt_lock_edge *last = gt_lock_order_edge(g, gt_lock_order_edges(g) - 1);
	expect_edge(last, 0x10000 + 64 * 68, 0x10000 + 64 * 69, 1, 69, 70);
	cr_expect_eq(gt_lock_order_cycles(g), 0);
	gt_lock_order_free(g);
}

/* Converting the two-lock inversion: the summary says it, by address (no symbols). */
Test(lockorder, the_conversion_summary_says_the_inversion)
{
	struct gt_cb *cb = threads(2);
	in_order(cb, 1, A, 11, B, 12);
	in_order(cb, 2, B, 21, A, 22);
	gt_cb_capture_end(cb, 0, now + 10);
	char trace[PATH_MAX];
	struct gt_convert_summary sum;
	cr_assert_eq(convert_builder(cb, "summary", trace, &sum, 0), 0);
	cr_expect_eq(sum.lock_order_inversions, 1);
	cr_expect(strstr(sum.lock_order, "0x5000 then 0x6000 at ") &&
		  strstr(sum.lock_order, "0x6000 then 0x5000 at "), "%s", sum.lock_order);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	gt_convert_print_lock_order(f, &sum);
	fclose(f);
	cr_expect(!strncmp(out, "gotrace:   lock-order inversion: 0x5000 then 0x6000", 51), "%s", out);
	cr_expect_eq(strchr(out, '\n'), out + len - 1, "one line: %s", out);
	free(out);
}

/* Four pairs of locks, each taken in both orders: the summary says three, then how many
 * more. */
Test(lockorder, the_summary_says_three_inversions_then_how_many_more)
{
	struct gt_cb *cb = threads(2);
	for (uint64_t k = 0; k < 4; k++) {
		uint64_t x = 0x10000 + 0x100 * k, y = x + 0x40;
		in_order(cb, 1, x, 11, y, 12);
		in_order(cb, 2, y, 21, x, 22);
	}
	gt_cb_capture_end(cb, 0, now + 10);
	char trace[PATH_MAX];
	struct gt_convert_summary sum;
	cr_assert_eq(convert_builder(cb, "four", trace, &sum, 0), 0);
	cr_expect_eq(sum.lock_order_inversions, 4);
	char *out = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&out, &len);
	gt_convert_print_lock_order(f, &sum);
	fclose(f);
	cr_expect_eq(lines_starting(out, "gotrace:   lock-order inversion: "), 3, "%s", out);
	cr_expect(strstr(out, "lock-order inversion: 0x10200 then 0x10240 at "), "%s", out);
	cr_expect(strstr(out, "\ngotrace:   lock-order inversions: 1 more (gotrace report on the "
			      "capture lists every one)\n"), "%s", out);
	free(out);
}

/* No lock records: no edges, nothing in the summary. */
Test(lockorder, a_capture_without_lock_records_has_no_graph)
{
	struct gt_cb *cb = threads(2);
	gt_cb_block_begin(cb, 0, now += 10, 2, GT_BK_MUTEX, A, 0);
	gt_cb_wake(cb, 0, now += 10, 1, GT_BK_MUTEX, A, 1, 0);
	gt_cb_block_end(cb, 0, now += 10, 2, GT_BK_MUTEX, A, GT_BR_OK);
	gt_cb_capture_end(cb, 0, now + 10);
	char trace[PATH_MAX];
	struct gt_convert_summary sum;
	cr_assert_eq(convert_builder(cb, "nolocks", trace, &sum, 0), 0);
	cr_expect_eq(sum.lock_order_inversions, 0);
	cr_expect_str_empty(sum.lock_order);
}
