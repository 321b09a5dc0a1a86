/* Lock-order inversions (issue 23, item 5) on lock_order.c and lock_order_cpp.cpp, whose
 * orders are known by construction and never deadlock: each `gotrace run --locks=all` is
 * compared with the untraced run (same stdout and status), then its summary, its report in
 * text and JSON and its trace in every Go reader are asserted.  Each scenario runs idle and
 * with a busy loop on every CPU. */
#include "cli_support.h"
#include "oracle.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A program, its source and the source's base name (as frames give it). */
struct target {
	const char *program, *source, *file;
};

static const struct target c_target = {GT_TEST_LOCK_ORDER, GT_TEST_LOCK_ORDER_SOURCE,
				       "lock_order.c"};

/* `PROGRAM MODE` untraced, then traced (with locks) into dir/MODE.trace, the capture kept: the
 * same status (0) and stdout; the traced run into traced. */
static void run_both(const struct target *target, const char *mode, const char *locks,
		     bool loaded, const char *dir, char *trace, size_t size,
		     struct cli_result *traced)
{
	const char *program = target->program;
	cli_path(trace, size, dir, mode);
	strncat(trace, ".trace", size - strlen(trace) - 1);
	const char *plain_argv[] = {program, mode, NULL};
	const char *traced_argv[] = {cli_gotrace, "run", locks, "--keep-capture", "-o", trace,
				     "--", program, mode, NULL};
	struct cli_result plain;
	struct cli_load load;
	cli_load_start(&load, loaded);
	cli_run(&plain, plain_argv, NULL);
	cli_run(traced, traced_argv, NULL);
	cli_load_stop(&load);
	cr_assert_eq(plain.status, 0, "%s", plain.err);
	cr_assert_eq(traced->status, plain.status, "traced %d: %s", traced->status, traced->err);
	cr_assert_str_eq(traced->out, plain.out, "stderr: %s", traced->err);
	cli_result_free(&plain);
}

static char *report_of(const char *trace, bool json)
{
	char capture[700];
	snprintf(capture, sizeof capture, "%s.gtcap", trace);
	struct cli_result r;
	const char *argv[] = {cli_gotrace, "report", json ? "--json" : capture, json ? capture : NULL,
			      NULL};
	cli_run(&r, argv, NULL);
	cr_assert_eq(r.status, 0, "report: %s", r.err);
	free(r.err);
	return r.out;
}

/* "take (FILE:N)": where the line of target's source marked by comment is. */
static void site(const struct target *target, char *out, size_t size, const char *take,
		 const char *comment)
{
	snprintf(out, size, "%s (%s:%u)", take, target->file,
		 cli_source_line(target->source, comment));
}

/* Whether the frames of some lock named lock in json hold func: where it was taken. */
static bool taken_in(const char *json, const char *lock, const char *func)
{
	char key[256], frame[256];
	snprintf(key, sizeof key, "\"object_name\":\"%s\",\"frames\":[", lock);
	snprintf(frame, sizeof frame, "\"func\":\"%s\"", func);
	for (const char *at = json; (at = strstr(at, key)); at += strlen(key)) {
		const char *in = strstr(at, frame), *end = strstr(at, "]}");
		if (in && end && in < end)
			return true;
	}
	return false;
}

/* The inversion's edge "X then Y at SITE (NAME (thread " into out. */
static void edge_text(char *out, size_t size, const char *held, const char *taken,
		      const char *at, const char *thread)
{
	snprintf(out, size, "%s then %s at %s (%s (thread ", held, taken, at, thread);
}

struct edge {
	const char *held, *taken, *take, *comment, *thread;
};

/* The inversion of the n edges (in the order their threads ran) is in the run's summary,
 * once, in one line; in the report's text with the stacks of both acquisitions; and in its
 * JSON; the trace reads in every Go reader. */
static void inversion_found(const struct target *target, const char *mode,
			    const struct edge *edges, size_t n, bool loaded)
{
	char dir[512], trace[600], text_edge[3][640], at[256], line[640];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	run_both(target, mode, "--locks=all", loaded, dir, trace, sizeof trace, &r);
	for (size_t i = 0; i < n; i++) {
		site(target, at, sizeof at, edges[i].take, edges[i].comment);
		edge_text(text_edge[i], sizeof text_edge[i], edges[i].held, edges[i].taken, at,
			  edges[i].thread);
	}

	/* the summary: "gotrace:   lock-order inversion: E1, E2[, E3]" */
	const char *summary = strstr(r.err, "gotrace:   lock-order inversion: ");
	cr_assert_not_null(summary, "no inversion in the summary:\n%s", r.err);
	cr_assert_eq(cli_count_of(r.err, "lock-order inversion"), 1, "%s", r.err);
	const char *end = strchr(summary, '\n');
	const char *at_edge = summary;
	for (size_t i = 0; i < n; i++) {
		at_edge = strstr(at_edge, text_edge[i]);
		cr_assert(at_edge && at_edge < end, "'%s' not in the summary's line, in order:\n%s",
			  text_edge[i], r.err);
	}
	cr_assert_null(strstr(r.err, "deadlock:"), "it never deadlocked: %s", r.err);

	/* the report: the same line, then each thread's two acquisitions with their stacks */
	char *text = report_of(trace, false);
	const char *inv = strstr(text, "  1. lock-order inversion: ");
	cr_assert_not_null(inv, "%s", text);
	cr_assert_null(strstr(text, "  2. lock-order inversion"), "one cycle: %s", text);
	end = strchr(inv, '\n');
	at_edge = inv;
	for (size_t i = 0; i < n; i++) {
		at_edge = strstr(at_edge, text_edge[i]);
		cr_assert(at_edge && at_edge < end, "'%s' not in the report's line:\n%s", text_edge[i],
			  text);
	}
	const char *detail = end;
	for (size_t i = 0; i < n; i++) {
		snprintf(line, sizeof line, "%s (thread ", edges[i].thread);
		detail = strstr(detail, line);
		cr_assert_not_null(detail, "'%s' not in:\n%s", line, text);
		snprintf(line, sizeof line, " took mutex %s at:\n", edges[i].taken);
		detail = strstr(detail, line);
		cr_assert_not_null(detail, "'%s' not in:\n%s", line, text);
		site(target, at, sizeof at, edges[i].take, edges[i].comment);
		const char *frame = strstr(detail, at);
		snprintf(line, sizeof line, "holding mutex %s, taken at:\n", edges[i].held);
		const char *holding = strstr(detail, line);
		cr_assert(frame && holding && frame < holding, "'%s' not the stack of %s:\n%s", at,
			  edges[i].taken, detail);
		snprintf(line, sizeof line, "%s (%s:", edges[i].take, target->file);
		cr_assert_not_null(strstr(holding, line), "%s took %s there:\n%s", edges[i].take,
				   edges[i].held, holding);
		detail = holding;
	}
	cr_assert_null(strstr(text, "Deadlock"), "%s", text);
	free(text);

	char *json = report_of(trace, true);
	snprintf(line, sizeof line, "\"lock_order\":{\"recorded\":true,\"edges\":%zu,\"lost\":0,"
		 "\"inversions\":[{\"text\":\"", n);
	const char *order = strstr(json, line);
	cr_assert_not_null(order, "'%s' not in %s", line, json);
	for (size_t i = 0; i < n; i++) {
		cr_assert_not_null(strstr(order, text_edge[i]), "'%s' not in %s", text_edge[i], order);
		/* both locks of the edge taken in its function */
		cr_assert(taken_in(order, edges[i].held, edges[i].take), "%s held by %s: %s",
			  edges[i].held, edges[i].take, order);
		cr_assert(taken_in(order, edges[i].taken, edges[i].take), "%s taken by %s: %s",
			  edges[i].taken, edges[i].take, order);
	}
	cr_assert_not_null(strstr(order, "\"one_thread\":false"), "%s", order);
	free(json);

	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace, true, &report), 0, "%s", report ? report : "");
	free(report);
	cli_result_free(&r);
}

Test(lock_order, two_locks_in_two_phases, .timeout = 300)
{
	static const struct edge edges[] = {
		{"locks[0]", "locks[1]", "take_a_then_b", "/* b after a */", "first"},
		{"locks[1]", "locks[0]", "take_b_then_a", "/* a after b */", "second"},
	};
	for (int loaded = 0; loaded < 2; loaded++)
		inversion_found(&c_target, "two", edges, 2, loaded);
}

Test(lock_order, three_locks_in_three_phases, .timeout = 300)
{
	static const struct edge edges[] = {
		{"locks[0]", "locks[1]", "take_a_then_b", "/* b after a */", "first"},
		{"locks[1]", "locks[2]", "take_b_then_c", "/* c after b */", "second"},
		{"locks[2]", "locks[0]", "take_c_then_a", "/* a after c */", "third"},
	};
	for (int loaded = 0; loaded < 2; loaded++)
		inversion_found(&c_target, "three", edges, 3, loaded);
}

/* Locks on the heap are named where they were first used, the same in the summary (the
 * conversion's names, as the trace gives them) and in the report. */
Test(lock_order, heap_locks_named_where_first_taken, .timeout = 300)
{
	char a[128], b[128], at[96];
	site(&c_target, at, sizeof at, "take_a_then_b", "/* a first */");
	snprintf(a, sizeof a, "first used at %s", at);
	site(&c_target, at, sizeof at, "take_a_then_b", "/* b after a */");
	snprintf(b, sizeof b, "first used at %s", at);
	const struct edge edges[] = {
		{a, b, "take_a_then_b", "/* b after a */", "first"},
		{b, a, "take_b_then_a", "/* a after b */", "second"},
	};
	for (int loaded = 0; loaded < 2; loaded++)
		inversion_found(&c_target, "two-heap", edges, 2, loaded);
}

#ifdef GT_TEST_LOCK_ORDER_CPP
/* C++'s std::mutex through std::lock_guard: each site is the program's function, not the
 * std::mutex::lock inlined into it. */
Test(lock_order, cpp_std_mutexes_in_two_phases, .timeout = 300)
{
	static const struct target cpp = {GT_TEST_LOCK_ORDER_CPP, GT_TEST_LOCK_ORDER_CPP_SOURCE,
					  "lock_order_cpp.cpp"};
	static const struct edge edges[] = {
		{"first_mu", "second_mu", "forward()", "// second after first", "forward"},
		{"second_mu", "first_mu", "backward()", "// first after second", "backward"},
	};
	for (int loaded = 0; loaded < 2; loaded++)
		inversion_found(&cpp, "cpp", edges, 2, loaded);
}
#endif

/* Phase two takes lock_a by a try-lock: it cannot block, no edge, no inversion; only the
 * order a -> b is recorded. */
Test(lock_order, a_try_lock_makes_no_inversion, .timeout = 300)
{
	for (int loaded = 0; loaded < 2; loaded++) {
		char dir[512], trace[600];
		struct cli_result r;
		cli_tempdir(dir, sizeof dir);
		run_both(&c_target, "two-try", "--locks=all", loaded, dir, trace, sizeof trace, &r);
		cr_assert_str_eq(r.out, "two-try: 2 phases, 1 try-locks taken\n", "the try-lock took it");
		cr_assert_null(strstr(r.err, "lock-order inversion"), "%s", r.err);
		char *text = report_of(trace, false);
		cr_assert_not_null(strstr(text, "\nLock-order inversions: none (1 lock order, no "
					      "cycle)\n"), "%s", text);
		free(text);
		char *json = report_of(trace, true);
		cr_assert_not_null(strstr(json, "\"lock_order\":{\"recorded\":true,\"edges\":1,"
					      "\"lost\":0,\"inversions\":[]}"), "%s", json);
		free(json);
		cli_result_free(&r);
	}
}

/* A deadlock (tests/cli/locks.c: "alpha" holds locks[0] and waits for locks[1], "beta" the
 * other way round) stopped by timeout: its waits made the orders, and the summary gives the
 * inversion beside the deadlock; the report says neither got its second lock. */
Test(lock_order, a_deadlocks_waits_are_an_inversion_too, .timeout = 300)
{
	const char *locks = GT_TEST_LOCKS;
	unsigned line = cli_source_line(GT_TEST_LOCKS_SOURCE,
					"pthread_mutex_lock(&locks[(i + 1) % n_cycle]);");
	char edge[2][256];
	snprintf(edge[0], sizeof edge[0], "locks[0] then locks[1] at cycle_main (locks.c:%u) "
		 "(alpha (thread ", line);
	snprintf(edge[1], sizeof edge[1], "locks[1] then locks[0] at cycle_main (locks.c:%u) "
		 "(beta (thread ", line);
	for (int loaded = 0; loaded < 2; loaded++) {
		char dir[512], trace[600];
		struct cli_result r;
		struct cli_load load;
		cli_tempdir(dir, sizeof dir);
		cli_path(trace, sizeof trace, dir, "deadlock.trace");
		/* 8 s: room for a loaded machine to reach the deadlock (it says so on stdout) */
		const char *argv[] = {"/usr/bin/timeout", "8", cli_gotrace, "run", "--locks=all",
				      "--keep-capture", "-o", trace, "--", locks, "deadlock2", NULL};
		cli_load_start(&load, loaded);
		cli_run(&r, argv, NULL);
		cli_load_stop(&load);
		cr_assert_eq(r.status, 124, "stopped by timeout: %s", r.err);
		cr_assert_str_eq(r.out, "deadlocked: 2 threads\n", "%s", r.err);
		cr_assert_not_null(strstr(r.err, "gotrace:   deadlock: 2 threads"), "%s", r.err);
		const char *inv = strstr(r.err, "gotrace:   lock-order inversion: ");
		cr_assert_not_null(inv, "%s", r.err);
		const char *end = strchr(inv, '\n');
		for (int i = 0; i < 2; i++) {
			const char *at = strstr(inv, edge[i]);
			cr_assert(at && at < end, "'%s' not in:\n%s", edge[i], r.err);
		}
		char *text = report_of(trace, false);
		cr_assert_eq(cli_count_of(text, " waited (never got it) for mutex locks["), 2, "%s", text);
		free(text);
		cli_result_free(&r);
	}
}

/* Without --locks=all nothing is recorded of uncontended locks: the report says, in one
 * line, what inversions need. */
Test(lock_order, without_lock_records_the_report_says_what_is_needed, .timeout = 120)
{
	char dir[512], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	run_both(&c_target, "two", "--locks=contended", false, dir, trace, sizeof trace, &r);
	cr_assert_null(strstr(r.err, "lock-order inversion"), "%s", r.err);
	char *text = report_of(trace, false);
	cr_assert_not_null(strstr(text, "\nLock-order inversions: not looked for (they need "
				      "gotrace run --locks=all)\n"), "%s", text);
	cr_assert_eq(cli_count_of(text, "Lock-order"), 1, "%s", text);
	free(text);
	char *json = report_of(trace, true);
	cr_assert_not_null(strstr(json, "\"lock_order\":{\"recorded\":false,"), "%s", json);
	free(json);
	cli_result_free(&r);
}
