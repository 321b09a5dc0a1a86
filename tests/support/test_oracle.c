/* The oracle proves itself: hand-built traces that follow docs/formats/go119.md pass every check
 * of every Go version, and traces that break one rule fail exactly the checks that rule breaks:
 * Go 1.19 and 1.22 read the 1.19 format with the old parser and viewer, Go 1.23 and 1.26
 * convert it, and each pair fails alike. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "oracle.h"

/* ---- a minimal "go 1.19 trace" writer (docs/formats/go119.md §1) ---------------------------- */

enum {
	EV_BATCH = 1,
	EV_FREQUENCY = 2,
	EV_STACK = 3,
	EV_GOMAXPROCS = 4,
	EV_PROC_START = 5,
	EV_PROC_STOP = 6,
	EV_GO_CREATE = 13,
	EV_GO_START = 14,
	EV_GO_END = 15,
	EV_GO_PREEMPT = 18,
	EV_GO_UNBLOCK = 21,
	EV_GO_BLOCK_SYNC = 25,
	EV_GO_SYSCALL = 28,
	EV_GO_SYSEXIT = 29,
	EV_GO_SYSBLOCK = 30,
	EV_GO_IN_SYSCALL = 32,
	EV_STRING = 37,
	EV_GO_START_LABEL = 41,
};
#define NO_P UINT64_MAX

struct tw {
	unsigned char bytes[4096];
	size_t len;
	uint64_t last_ticks; /* of the current batch */
};

static void put(struct tw *w, unsigned char b)
{
	cr_assert_lt(w->len, sizeof w->bytes);
	w->bytes[w->len++] = b;
}

static size_t varint(unsigned char *out, uint64_t v)
{
	size_t n = 0;
	do {
		out[n++] = (unsigned char)((v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
	return n;
}

static void put_varint(struct tw *w, uint64_t v)
{
	unsigned char buf[10];
	size_t n = varint(buf, v);
	for (size_t i = 0; i < n; i++)
		put(w, buf[i]);
}

static void header(struct tw *w)
{
	memcpy(w->bytes, "go 1.19 trace\0\0\0", 16);
	w->len = 16;
}

static void batch(struct tw *w, uint64_t p, uint64_t ticks)
{
	put(w, EV_BATCH | 1 << 6);
	put_varint(w, p);
	put_varint(w, ticks);
	w->last_ticks = ticks;
}

/* A timed event at TICKS with N arguments: count field n (n <= 2) or 3 with a byte length. */
static void event(struct tw *w, int type, uint64_t ticks, int n, const uint64_t *args)
{
	cr_assert_geq(ticks, w->last_ticks);
	unsigned char body[128];
	size_t len = varint(body, ticks - w->last_ticks);
	w->last_ticks = ticks;
	for (int i = 0; i < n; i++)
		len += varint(body + len, args[i]);
	put(w, (unsigned char)(type | (n < 3 ? n : 3) << 6));
	if (n >= 3)
		put_varint(w, len);
	for (size_t i = 0; i < len; i++)
		put(w, body[i]);
}
#define EV(w, type, ticks, ...)                                                                    \
	event(w, type, ticks, sizeof((uint64_t[]){ __VA_ARGS__ }) / sizeof(uint64_t),              \
	      (uint64_t[]){ __VA_ARGS__ })
#define EV0(w, type, ticks) event(w, type, ticks, 0, NULL)

static void string(struct tw *w, uint64_t id, const char *s)
{
	put(w, EV_STRING);
	put_varint(w, id);
	put_varint(w, strlen(s));
	while (*s)
		put(w, (unsigned char)*s++);
}

/* A one-frame stack. */
static void stack1(struct tw *w, uint64_t id, uint64_t pc, uint64_t fn, uint64_t file,
		   uint64_t line)
{
	unsigned char body[64];
	size_t len = varint(body, id);
	len += varint(body + len, 1);
	len += varint(body + len, pc);
	len += varint(body + len, fn);
	len += varint(body + len, file);
	len += varint(body + len, line);
	put(w, EV_STACK | 3 << 6);
	put_varint(w, len);
	for (size_t i = 0; i < len; i++)
		put(w, body[i]);
}

static void frequency(struct tw *w)
{
	put(w, EV_FREQUENCY);
	put_varint(w, 1000000000); /* ticks are nanoseconds */
}

/* Strings 1 "main", 2 "main.c", 3 "worker", 4 "main thread"; stacks 1 main:10 (G1's start), 2 worker:20 (G2's
 * start), 3 main:12 (G1's blocking calls), 4 worker:22 (G2 wakes G1). */
static void metadata(struct tw *w, bool with_frequency)
{
	string(w, 1, "main");
	string(w, 2, "main.c");
	string(w, 3, "worker");
	string(w, 4, "main thread");
	stack1(w, 1, 0x401000, 1, 2, 10);
	stack1(w, 2, 0x402000, 3, 2, 20);
	stack1(w, 3, 0x401010, 1, 2, 12);
	stack1(w, 4, 0x402010, 3, 2, 22);
	if (with_frequency)
		frequency(w);
}

enum variant { GOOD, LEFT_RUNNING, STACK_FIRST, NO_FREQUENCY, LABELLED };

/* The §5.4 prologue, then G1 creates G2 and blocks on a mutex that G2 releases before it ends;
 * G1 then makes a blocking syscall (GoSysCall + GoSysBlock + ProcStop ... GoSysExit) and is
 * preempted at the end (LEFT_RUNNING: it stays running; LABELLED: its last start carries the
 * label "main thread"). */
static void build_main_trace(struct tw *w, enum variant v)
{
	header(w);
	if (v == STACK_FIRST)
		stack1(w, 9, 0x409000, 1, 2, 90);
	batch(w, 1, 100);
	EV(w, EV_GO_CREATE, 100, 1, 1, 0);
	EV(w, EV_PROC_START, 101, 1);
	EV(w, EV_GOMAXPROCS, 102, 2, 0);
	EV(w, EV_GO_START, 103, 1, 1);
	EV(w, EV_GO_CREATE, 104, 2, 2, 3);
	EV(w, EV_GO_BLOCK_SYNC, 105, 3);
	EV(w, EV_GO_START, 106, 2, 1);
	EV(w, EV_GO_UNBLOCK, 107, 1, 2, 4);
	EV0(w, EV_GO_END, 108);
	EV(w, EV_GO_START, 109, 1, 3);
	EV(w, EV_GO_SYSCALL, 110, 3);
	EV0(w, EV_GO_SYSBLOCK, 111);
	EV0(w, EV_PROC_STOP, 112);
	EV(w, EV_GO_SYSEXIT, 120, 1, 4, 0);
	EV(w, EV_PROC_START, 121, 1);
	if (v == LABELLED)
		EV(w, EV_GO_START_LABEL, 122, 1, 5, 4);
	else
		EV(w, EV_GO_START, 122, 1, 5);
	if (v != LEFT_RUNNING)
		EV(w, EV_GO_PREEMPT, 130, 0);
	batch(w, 0, 130);
	metadata(w, v != NO_FREQUENCY);
}

/* G3 exists at trace start inside a syscall, written with GoInSyscall (which §3.3 forbids). */
static void build_in_syscall_trace(struct tw *w)
{
	header(w);
	batch(w, 1, 100);
	EV(w, EV_GO_CREATE, 100, 1, 1, 0);
	EV(w, EV_GO_CREATE, 101, 3, 1, 0);
	EV(w, EV_GO_IN_SYSCALL, 102, 3);
	EV(w, EV_PROC_START, 103, 1);
	EV(w, EV_GOMAXPROCS, 104, 2, 0);
	EV(w, EV_GO_START, 105, 1, 1);
	EV(w, EV_GO_PREEMPT, 106, 3);
	EV(w, EV_GO_SYSEXIT, 107, 3, 2, 0);
	EV(w, EV_GO_START, 108, 3, 3);
	EV0(w, EV_GO_END, 109);
	batch(w, 0, 110);
	metadata(w, true);
}

static char trace_path[64];

static const char *save(const struct tw *w)
{
	strcpy(trace_path, "/tmp/gt-oracle-test-XXXXXX");
	int fd = mkstemp(trace_path);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, w->bytes, w->len), (ssize_t)w->len);
	close(fd);
	return trace_path;
}

static void remove_trace(void)
{
	if (trace_path[0])
		unlink(trace_path);
}

static const char *main_trace(enum variant v)
{
	static struct tw w;
	memset(&w, 0, sizeof w);
	build_main_trace(&w, v);
	return save(&w);
}

TestSuite(oracle, .fini = remove_trace);

/* ---- the writer itself matches the example bytes of docs/formats/go119.md §1.3 ------------- */

Test(oracle, writer_matches_format_examples)
{
	struct tw w = { 0 };
	batch(&w, NO_P, 1000);
	const unsigned char batch_bytes[] = { 0x41, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
					      0xff, 0xff, 0xff, 0x01, 0xe8, 0x07 };
	cr_assert_eq(w.len, sizeof batch_bytes);
	cr_assert_arr_eq(w.bytes, batch_bytes, sizeof batch_bytes);

	w = (struct tw){ .last_ticks = 0 };
	EV(&w, EV_GO_START, 5, 2, 1);
	EV(&w, EV_GO_CREATE, 8, 2, 2, 5);
	string(&w, 1, "main");
	const unsigned char events[] = { 0x8e, 0x05, 0x02, 0x01, 0xcd, 0x04, 0x03, 0x02, 0x02,
					 0x05, 0x25, 0x01, 0x04, 0x6d, 0x61, 0x69, 0x6e };
	cr_assert_eq(w.len, sizeof events);
	cr_assert_arr_eq(w.bytes, events, sizeof events);
}

/* ---- verdicts ----------------------------------------------------------------------------- */

static const char *const versions[] = { "1.19", "1.22", "1.23", "1.26" };
#define N_VERSIONS (sizeof versions / sizeof *versions)

static const char *all_checks[] = {
	"parse-1.19", "ui-1.19", "pprof-1.19", "parse-1.22", "ui-1.22",     "pprof-1.22",
	"parse-1.23", "ui-1.23", "thread-1.23", "pprof-1.23", "parse-1.26", "ui-1.26",
	"thread-1.26", "pprof-1.26"
};
#define N_CHECKS (sizeof all_checks / sizeof *all_checks)

/* Number of verdict lines ("ok CHECK", "FAIL CHECK: ...") in REPORT. */
static size_t verdicts(const char *report)
{
	size_t n = 0;
	for (const char *line = report; *line;) {
		n += !strncmp(line, "ok ", 3) || !strncmp(line, "FAIL ", 5);
		const char *nl = strchr(line, '\n');
		line = nl ? nl + 1 : line + strlen(line);
	}
	return n;
}

/* Runs the full oracle and asserts that it ran exactly the N_RUN checks of RUN and that
 * exactly those in FAILING failed. */
static void expect_checks(const char *trace, const char *const *run, size_t n_run,
			  const char *const *failing, size_t n_failing)
{
	char *report = NULL;
	int rc = gt_oracle_check(trace, false, &report);
	cr_assert_not_null(report);
	cr_log_info("oracle report:\n%s", report);
	cr_assert_eq(rc, n_failing ? 1 : 0, "status %d, report:\n%s", rc, report);
	cr_assert_eq(verdicts(report), n_run, "checks run:\n%s", report);
	for (size_t i = 0; i < n_run; i++) {
		bool should_fail = false;
		for (size_t j = 0; j < n_failing; j++)
			should_fail |= !strcmp(run[i], failing[j]);
		if (should_fail)
			cr_assert(gt_oracle_failed(report, run[i]), "%s should fail:\n%s", run[i],
				  report);
		else
			cr_assert(gt_oracle_passed(report, run[i]), "%s should pass:\n%s", run[i],
				  report);
	}
	free(report);
}

static void expect_verdicts(const char *trace, const char *const *failing, size_t n_failing)
{
	expect_checks(trace, all_checks, N_CHECKS, failing, n_failing);
}

Test(oracle, good_trace_passes_every_check)
{
	expect_verdicts(main_trace(GOOD), NULL, 0);
}

Test(oracle, quick_mode_runs_only_the_parse_checks)
{
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(main_trace(GOOD), true, &report), 0);
	char check[32];
	for (size_t i = 0; i < N_VERSIONS; i++) {
		snprintf(check, sizeof check, "parse-%s", versions[i]);
		cr_assert(gt_oracle_passed(report, check), "%s:\n%s", check, report);
	}
	cr_assert_eq(verdicts(report), N_VERSIONS, "only the parse checks:\n%s", report);
	free(report);
}

Test(oracle, goroutine_running_at_the_end_fails_the_old_viewers)
{
	const char *failing[] = { "ui-1.19", "ui-1.22" };
	expect_verdicts(main_trace(LEFT_RUNNING), failing, 2);
}

Test(oracle, go_in_syscall_fails_the_new_thread_views)
{
	struct tw w = { 0 };
	build_in_syscall_trace(&w);
	const char *failing[] = { "thread-1.23", "thread-1.26" };
	expect_verdicts(save(&w), failing, 2);
}

Test(oracle, stack_before_the_first_batch_fails_the_new_parsers)
{
	/* The viewer and profiles are not run once the parse failed, and count as failed. */
	const char *failing[] = { "parse-1.23", "ui-1.23", "thread-1.23", "pprof-1.23",
				  "parse-1.26", "ui-1.26", "thread-1.26", "pprof-1.26" };
	expect_verdicts(main_trace(STACK_FIRST), failing, 8);
}

Test(oracle, missing_frequency_fails_every_parse)
{
	char *report = NULL;
	expect_verdicts(main_trace(NO_FREQUENCY), all_checks, N_CHECKS);
	gt_oracle_check(trace_path, true, &report);
	/* Each version's failure is followed by that tool's own words. */
	char line[64];
	for (size_t i = 0; i < N_VERSIONS; i++) {
		snprintf(line, sizeof line, "FAIL parse-%s:", versions[i]);
		const char *fail = strstr(report, line);
		cr_assert_not_null(fail, "%s\n%s", line, report);
		const char *next = strchr(fail, '\n');
		cr_assert_not_null(next);
		const char *eol = strchr(next + 1, '\n');
		const char *msg = strstr(next + 1, "no EvFrequency event");
		cr_assert(!strncmp(next + 1, "    ", 4) && msg && (!eol || msg < eol),
			  "Go %s's error is shown:\n%s", versions[i], report);
	}
	free(report);
}

/* ---- the Go 1.22 format: docs/formats/go122.md §1.9's example -------------------------------- */

/* Read natively from Go 1.22 on, each with its thread view; Go 1.19 cannot read it at all.
 * Last, the order check (gt_trace_v2_order_check). */
static const char *const v2_checks[] = {
	"parse-1.22", "ui-1.22", "thread-1.22", "pprof-1.22", "parse-1.23", "ui-1.23",
	"thread-1.23", "pprof-1.23", "parse-1.26", "ui-1.26", "thread-1.26", "pprof-1.26", "order"
};
#define N_V2_CHECKS (sizeof v2_checks / sizeof *v2_checks)

#define V2_NO_THREAD 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01
/* G1 runs on M 100 and P 1, blocks in pthread_mutex_lock; then frequency, stacks, strings. */
static const unsigned char v2_head[] = {
	'g', 'o', ' ', '1', '.', '2', '2', ' ', 't', 'r', 'a', 'c', 'e', 0, 0, 0,
	0x01, 0x01, 0x64, 0xe8, 0x07, 0x0f, 0x0d, 0x00, 0x01, 0x01, 0x19, 0x01, 0x01, 0x64,
	0x02, 0x14, 0x09, 0x03, 0x01, 0x0b, 0x01
};
static const unsigned char v2_frequency[] = { 0x01, 0x01, V2_NO_THREAD, 0xe8, 0x07, 0x06,
					      0x08, 0x80, 0x94, 0xeb, 0xdc, 0x03 };
static const unsigned char v2_tables[] = {
	0x01, 0x01, V2_NO_THREAD, 0xe8, 0x07, 0x0b, 0x02, 0x03, 0x01, 0x01, 0x80, 0xa0, 0x80,
	0x02, 0x01, 0x02, 0x0a, 0x01, 0x01, V2_NO_THREAD, 0xe8, 0x07, 0x2b, 0x04,
	0x05, 0x01, 0x04, 'm', 'a', 'i', 'n',
	0x05, 0x02, 0x0b, '/', 's', 'r', 'c', '/', 'm', 'a', 'i', 'n', '.', 'c',
	0x05, 0x03, 0x12, 'p', 't', 'h', 'r', 'e', 'a', 'd', '_', 'm', 'u', 't', 'e', 'x', '_',
	'l', 'o', 'c', 'k'
};

static const char *v2_trace(bool with_frequency)
{
	static struct tw w;
	memset(&w, 0, sizeof w);
	memcpy(w.bytes, v2_head, sizeof v2_head);
	w.len = sizeof v2_head;
	if (with_frequency) {
		memcpy(w.bytes + w.len, v2_frequency, sizeof v2_frequency);
		w.len += sizeof v2_frequency;
	}
	memcpy(w.bytes + w.len, v2_tables, sizeof v2_tables);
	w.len += sizeof v2_tables;
	return save(&w);
}

Test(oracle, go122_trace_passes_every_check_from_go122_on)
{
	cr_assert_eq(sizeof v2_head + sizeof v2_frequency + sizeof v2_tables, 142);
	expect_checks(v2_trace(true), v2_checks, N_V2_CHECKS, NULL, 0);
}

Test(oracle, go122_trace_without_frequency_fails_every_go122_parse)
{
	expect_checks(v2_trace(false), v2_checks, N_V2_CHECKS, v2_checks, N_V2_CHECKS - 1);
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace_path, true, &report), 1);
	cr_assert_null(strstr(report, "1.19"), "Go 1.19 is not run:\n%s", report);
	cr_assert_not_null(strstr(report, "no frequency event found"), "%s", report);
	free(report);
}

/* P 1's idle status (NoThread) and M 100's ProcStart of P 1 at the same tick: Go 1.22-1.25
 * take it here (two Ms: their sort keeps the heap's order), but with more than 12 Ms tied
 * their sort may put the status first and skip it ("failed to advance: frontier"). */
Test(oracle, go122_trace_with_a_tie_fails_the_order_check)
{
	static const unsigned char tie[] = {
		0x01, 0x01, 0x64, 0xe8, 0x07, 0x13,
		0x0a, 0x00, 0x01, 0x01,            /* ProcStart p=1 seq=1 */
		0x0e, 0x01, 0x01, 0x01, 0x00,      /* GoCreate g=1 new stack 1 */
		0x10, 0x01, 0x01, 0x01,            /* GoStart g=1 seq=1 */
		0x14, 0x01, 0x03, 0x01,            /* GoBlock reason 3 stack 1 */
		0x0b, 0x01,                        /* ProcStop */
		0x01, 0x01, V2_NO_THREAD, 0xe8, 0x07, 0x04,
		0x0d, 0x00, 0x01, 0x02,            /* ProcStatus p=1 Idle */
	};
	static struct tw w;
	memset(&w, 0, sizeof w);
	memcpy(w.bytes, v2_head, 16);
	memcpy(w.bytes + 16, tie, sizeof tie);
	w.len = 16 + sizeof tie;
	memcpy(w.bytes + w.len, v2_frequency, sizeof v2_frequency);
	w.len += sizeof v2_frequency;
	memcpy(w.bytes + w.len, v2_tables, sizeof v2_tables);
	w.len += sizeof v2_tables;
	const char *trace = save(&w);
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace, true, &report), 1, "%s", report);
	cr_assert(gt_oracle_passed(report, "parse-1.22"), "%s", report);
	cr_assert(gt_oracle_failed(report, "order"), "%s", report);
	cr_assert_not_null(strstr(report, "M 100's ProcStart(1, 1) must wait"), "%s", report);
	free(report);
}

Test(oracle, unreadable_file_is_an_oracle_error)
{
	cr_assert_eq(gt_oracle_check("/nonexistent/trace", true, NULL), -1);
}

/* ---- parsed views ------------------------------------------------------------------------- */

Test(oracle, events_119_are_parsed_with_their_arguments)
{
	struct gt_events *ev = gt_events_parse_119(main_trace(GOOD));
	cr_assert_not_null(ev);
	cr_assert_eq(ev->n, 17);
	cr_assert_str_eq(ev->ev[0].type, "GoCreate");
	cr_assert_eq(ev->ev[0].ts_ns, 0);
	cr_assert_eq(ev->ev[0].p, 1);
	uint64_t v;
	cr_assert(gt_event_arg(&ev->ev[0], "stack", &v) && v == 1);

	cr_assert_eq(gt_events_count(ev, "GoStart", GT_ANY, GT_ANY), 4);
	cr_assert_eq(gt_events_count(ev, "GoStart", 1, GT_ANY), 3);
	cr_assert_eq(gt_events_count(ev, NULL, GT_ANY, 1), 16);

	/* G2 unblocks G1 with seq 2, after G1 blocked. */
	ssize_t block = gt_events_find(ev, 0, "GoBlockSync", 1, GT_ANY);
	ssize_t unblock = gt_events_find_arg(ev, 0, "GoUnblock", "g", 1);
	cr_assert(block >= 0 && unblock > block);
	cr_assert_eq(ev->ev[unblock].g, 2);
	cr_assert(gt_event_arg(&ev->ev[unblock], "seq", &v) && v == 2);
	cr_assert_eq(ev->ev[unblock].ts_ns, 7);
	cr_assert_eq(gt_events_find(ev, (size_t)unblock + 1, "GoBlockSync", GT_ANY, GT_ANY), -1);

	/* Go's parser moves every GoSysExit to its fake syscall P. */
	ssize_t sysexit = gt_events_find(ev, 0, "GoSysExit", 1, 1000003);
	cr_assert_geq(sysexit, 0);
	cr_assert_eq(ev->ev[sysexit].ts_ns, 20);

	struct gt_events *g1 = gt_events_filter(ev, NULL, 1, GT_ANY);
	cr_assert_eq(g1->n, gt_events_count(ev, NULL, 1, GT_ANY));
	cr_assert_str_eq(g1->ev[0].type, "GoStart");
	gt_events_free(g1);
	gt_events_free(ev);
}

Test(oracle, labels_are_string_arguments)
{
	const char *trace = main_trace(LABELLED);
	expect_verdicts(trace, NULL, 0);
	struct gt_events *ev = gt_events_parse_119(trace);
	cr_assert_not_null(ev);
	ssize_t i = gt_events_find(ev, 0, "GoStartLabel", 1, GT_ANY);
	cr_assert_geq(i, 0);
	char label[32];
	cr_assert_str_eq(gt_event_string(&ev->ev[i], "label", label, sizeof label), "main thread");
	cr_assert_null(gt_event_string(&ev->ev[i], "message", label, sizeof label));
	uint64_t seq;
	cr_assert(gt_event_arg(&ev->ev[i], "seq", &seq) && seq == 5);
	gt_events_free(ev);

	char *dump = gt_dump_123(trace);
	cr_assert_not_null(dump);
	cr_assert_eq(gt_dump_123_count(dump, "G=1 Label"), 1);
	cr_assert(strstr(dump, "Label=\"main thread\" Resource=Goroutine(1)"), "%s", dump);
	free(dump);
}

Test(oracle, events_119_of_a_rejected_trace_are_null)
{
	cr_assert_null(gt_events_parse_119(main_trace(NO_FREQUENCY)));
	cr_assert_null(gt_dump_123(trace_path));
}

static void expect_stack(const char *dump, const char *match, const char *which,
			 const char *expected)
{
	char *s = gt_dump_123_stack(dump, match, 0, which);
	cr_assert_not_null(s, "no event matches %s", match);
	cr_assert_str_eq(s, expected, "%s of the first \"%s\"", which, match);
	free(s);
}

Test(oracle, dump_123_shows_stacks_with_file_and_line)
{
	char *dump = gt_dump_123(main_trace(GOOD));
	cr_assert_not_null(dump);
	cr_assert_eq(gt_dump_123_count(dump, "GoID=1 Running->Waiting"), 1);
	cr_assert_eq(gt_dump_123_count(dump, "GoID=1 Runnable->Running"), 3);
	cr_assert_eq(gt_dump_123_count(dump, "GoID=2 NotExist->Runnable"), 1);

	expect_stack(dump, "GoID=1 Running->Waiting", "Stack", "main main.c:12\n");
	expect_stack(dump, "GoID=2 NotExist->Runnable", "TransitionStack", "worker main.c:20\n");
	expect_stack(dump, "GoID=2 NotExist->Runnable", "Stack", "main main.c:12\n");
	expect_stack(dump, "GoID=1 Waiting->Runnable", "Stack", "worker main.c:22\n");
	/* A start carries no stack in the new model. */
	expect_stack(dump, "GoID=1 Runnable->Running", "Stack", "");
	cr_assert_null(gt_dump_123_stack(dump, "GoID=1 Running->Waiting", 1, "Stack"));
	free(dump);
}

Test(oracle, pprof_text_names_the_blocking_line)
{
	const char *trace = main_trace(GOOD);
	for (size_t i = 0; i < N_VERSIONS; i++) {
		const char *version = versions[i];
		char *sync = gt_pprof_text(trace, "sync", version);
		cr_assert_not_null(sync);
		cr_assert(strstr(sync, "main main.c:12"), "%s sync profile:\n%s", version, sync);
		free(sync);
		char *sched = gt_pprof_text(trace, "sched", version);
		cr_assert_not_null(sched);
		cr_assert(strstr(sched, "worker main.c:22"), "%s sched profile:\n%s", version,
			  sched);
		free(sched);
	}
	char *syscall = gt_pprof_text(trace, "syscall", "1.19");
	cr_assert(strstr(syscall, "10ns   main main.c:12"), "syscall profile:\n%s", syscall);
	free(syscall);
	cr_assert_null(gt_pprof_text(trace, "nonsense", "1.19"));
	cr_assert_null(gt_pprof_text(trace, "sync", "1.18"), "a version the oracle has no tools of");
}
