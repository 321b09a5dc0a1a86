/* Readers bounded by their input: `gotrace report` and `gotrace convert` on hand-made hostile
 * files whose ids and counts are as large as the formats allow.  Each run stays under
 * 100 MiB of peak RSS (measured on the child) and ends with a bounded result or one clear
 * error line.  (Before: a 28-byte trace naming goroutine 2^24-1 took 3 GiB.) */
#include "capture_builder.h"
#include "cli_support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#define MAX_RSS_KIB (100 * 1024)

/* Runs `gotrace ARGS...` and checks the child's peak RSS: every test runs in its own
 * process, so RUSAGE_CHILDREN holds the gotrace runs of this test only.  An address-space
 * limit makes a regression fail fast instead of filling the machine.  Under
 * AddressSanitizer (which reserves terabytes of address space, and whose shadow and
 * quarantine make most of the RSS) each allocation is bounded instead: one above 100 MiB
 * fails, and with it the run. */
static void run_bounded(struct cli_result *r, const char *const *argv)
{
#if defined(__SANITIZE_ADDRESS__)
	static const char *const env[] = {
		"ASAN_OPTIONS=max_allocation_size_mb=100:allocator_may_return_null=1", NULL
	};
	cli_run(r, argv, env);
#else
	struct rlimit rl = { 1ull << 30, 1ull << 30 };
	cr_assert_eq(setrlimit(RLIMIT_AS, &rl), 0);
	cli_run(r, argv, NULL);
	struct rusage ru;
	cr_assert_eq(getrusage(RUSAGE_CHILDREN, &ru), 0);
	cr_assert_lt(ru.ru_maxrss, MAX_RSS_KIB, "gotrace %s took %ld KiB (status %d): %s",
		     argv[1], ru.ru_maxrss, r->status, r->err);
#endif
}

/* A refusal: status 1 and exactly one line on stderr, holding `words`. */
static void assert_one_error_line(const struct cli_result *r, const char *words)
{
	cr_assert_eq(r->status, 1, "status %d, stderr: %s", r->status, r->err);
	cr_assert_eq(cli_count_lines(r->err), 1, "stderr: %s", r->err);
	cr_assert_not_null(strstr(r->err, words), "'%s' not in: %s", words, r->err);
}

/* ---- Go traces ------------------------------------------------------------------------ */

struct bytes {
	uint8_t *p;
	size_t n, cap;
};

static void put(struct bytes *b, const void *p, size_t n)
{
	if (b->n + n > b->cap) {
		b->cap = (b->n + n) * 2;
		b->p = realloc(b->p, b->cap);
		cr_assert_not_null(b->p);
	}
	memcpy(b->p + b->n, p, n);
	b->n += n;
}

static void put_byte(struct bytes *b, uint8_t v)
{
	put(b, &v, 1);
}

static void put_varint(struct bytes *b, uint64_t v)
{
	for (; v >= 0x80; v >>= 7)
		put_byte(b, (uint8_t)(v | 0x80));
	put_byte(b, (uint8_t)v);
}

/* "go 1.19 trace" header and a Frequency of 1e9. */
static struct bytes trace_start(void)
{
	struct bytes b = { 0 };
	put(&b, "go 1.19 trace\0\0\0", 16);
	put_byte(&b, 0x02);   /* Frequency, one value */
	put_varint(&b, 1000000000);
	return b;
}

static void put_batch(struct bytes *b, uint64_t p)
{
	put_byte(b, 0x41);    /* Batch: p, ticks */
	put_varint(b, p);
	put_varint(b, 0);
}

/* A timed event with its values after the timestamp delta (count field 2: three values). */
static void put_event3(struct bytes *b, uint8_t type, uint64_t a0, uint64_t a1)
{
	put_byte(b, (uint8_t)(type | 2u << 6));
	put_varint(b, 1);
	put_varint(b, a0);
	put_varint(b, a1);
}

static void write_trace(char *path, size_t size, const char *dir, struct bytes *b)
{
	cli_path(path, size, dir, "hostile.gotrace");
	FILE *f = fopen(path, "wb");
	cr_assert_not_null(f);
	cr_assert_eq(fwrite(b->p, 1, b->n, f), b->n);
	cr_assert_eq(fclose(f), 0);
	free(b->p);
}

static void report_trace(struct cli_result *r, struct bytes *b)
{
	char dir[512], path[600];
	cli_tempdir(dir, sizeof dir);
	write_trace(path, sizeof path, dir, b);
	const char *argv[] = { cli_gotrace, "report", path, NULL };
	run_bounded(r, argv);
}

enum { GO_CREATE = 13, GO_START = 14 };

Test(hostile, trace_with_the_largest_goroutine_ids, .timeout = 60)
{
	struct bytes b = trace_start();
	put_batch(&b, 0);
	put_event3(&b, GO_START, (1u << 24) - 1, 0);
	put_event3(&b, GO_START, UINT64_MAX, 0);
	put_byte(&b, GO_CREATE | 3u << 6);   /* GoCreate: ts, g, new stack, stack */
	put_varint(&b, 6);
	put(&b, "\x01\xff\xff\x7f\x00\x00", 6);
	struct cli_result r;
	report_trace(&r, &b);
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert_not_null(strstr(r.out, "\n  2097151 "), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "\n  16777215 "), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "\n  18446744073709551615 "), "%s", r.out);
	cli_result_free(&r);
}

Test(hostile, trace_with_a_batch_on_every_p, .timeout = 60)
{
	/* 100 000 Ps, one event each: the goroutine context per P is a map, not a scan. */
	struct bytes b = trace_start();
	for (uint64_t p = 0; p < 100000; p++) {
		put_batch(&b, p * 7919);
		put_event3(&b, GO_START, p + 1, 0);
	}
	struct cli_result r;
	report_trace(&r, &b);
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert_not_null(strstr(r.out, "\n  100000 "), "%s", r.out);
	cli_result_free(&r);
}

Test(hostile, trace_with_counts_past_its_end, .timeout = 60)
{
	static const struct {
		const char *bytes;
		size_t n;
		const char *error;
	} cases[] = {
		/* a string of 2^62 bytes */
		{ "\x25\x01\x80\x80\x80\x80\x80\x80\x80\x80\x40", 11, "runs past the end" },
		/* a Stack event of 2^62 bytes */
		{ "\xc3\x80\x80\x80\x80\x80\x80\x80\x80\x40", 10, "past the end of the file" },
		/* a Stack of 1000 frames holding one */
		{ "\xc3\x06\x01\xe8\x07\x01\x01\x01", 8, "bad Stack event" },
		/* a varint cut by the end of the file */
		{ "\x41\xff\xff", 3, "bad varint" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct bytes b = trace_start();
		put(&b, cases[i].bytes, cases[i].n);
		struct cli_result r;
		report_trace(&r, &b);
		assert_one_error_line(&r, cases[i].error);
		cli_result_free(&r);
	}
}

/* ---- captures ------------------------------------------------------------------------- */

static void write_capture(struct gt_cb *cb, char *path, size_t size)
{
	char dir[512];
	cli_tempdir(dir, sizeof dir);
	cli_path(path, size, dir, "hostile.cap");
	cr_assert_eq(gt_cb_write(cb, path), 0);
	gt_cb_free(cb);
}

/* `gotrace convert` then `gotrace report` on capture, each bounded; the report's output is
 * left in r. */
static void convert_and_report(struct cli_result *r, const char *capture)
{
	char trace[700];
	snprintf(trace, sizeof trace, "%s.trace", capture);
	const char *convert[] = { cli_gotrace, "convert", "--no-symbols", capture, "-o", trace,
				  NULL };
	run_bounded(r, convert);
	cr_assert_eq(r->status, 0, "stderr: %s", r->err);
	cr_assert(cli_file_exists(trace));
	cli_result_free(r);
	const char *report[] = { cli_gotrace, "report", capture, NULL };
	run_bounded(r, report);
	cr_assert_eq(r->status, 0, "stderr: %s", r->err);
}

Test(hostile, capture_with_thread_serials_and_stack_ids_up_to_2_24, .timeout = 120)
{
	/* One thread in each range of 4096 serials (the model allocated threads 4096 at a time
	 * by serial), the last serial and stack id there can be, and a join on a serial that
	 * never ran. */
	struct gt_cb *cb = gt_cb_new(2, 1u << 20, 1000);
	uint64_t t = 2000, pc = 0x401000;
	uint32_t last = (1u << 24) - 1;
	gt_cb_stack(cb, 0, t++, last, &pc, 1);
	gt_cb_block_begin(cb, 0, t++, 1, GT_BK_JOIN, last - 1, last);
	gt_cb_block_end(cb, 0, t++, 1, GT_BK_JOIN, last - 1, GT_BR_OK);
	for (uint32_t serial = 4097; serial < last; serial += 4096) {
		gt_cb_thread_start(cb, serial & 1, t++, serial, serial, 0x401000);
		gt_cb_yield(cb, serial & 1, t++, serial, last);
	}
	gt_cb_thread_start(cb, 1, t++, last, 7, 0x401000);
	gt_cb_syscall_begin(cb, 1, t++, last, GT_FD_PIPE, 0, 3, last);
	gt_cb_syscall_end(cb, 1, t + 100000, last, 0, 1);
	char capture[600];
	write_capture(cb, capture, sizeof capture);
	struct cli_result r;
	convert_and_report(&r, capture);
	cr_assert_not_null(strstr(r.out, "\n  16773121 "), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "\n  16777215 "), "%s", r.out);
	cli_result_free(&r);
}

Test(hostile, capture_with_a_chunk_on_each_of_4096_cpus, .timeout = 120)
{
	/* The most CPUs a header may name, each with one small chunk: the read windows are no
	 * larger than a chunk. */
	struct gt_cb *cb = gt_cb_new(GT_MAX_CPUS, 4096, 1000);
	for (uint32_t cpu = 0; cpu < GT_MAX_CPUS; cpu++)
		gt_cb_yield(cb, cpu, 2000 + cpu, 1, 0);
	char capture[600];
	write_capture(cb, capture, sizeof capture);
	struct cli_result r;
	convert_and_report(&r, capture);
	cr_assert_not_null(strstr(r.out, "\n  1 "), "%s", r.out);
	cli_result_free(&r);
}
