/* The capture reader on damaged captures: every kind of damage is counted and the
 * conversion still yields a trace both Go readers accept. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oracle.h"
#include "test_util.h"

#define T0 1000000ull

static void path_of(char *out, const char *name)
{
	snprintf(out, PATH_MAX, "%s/%s.cap", test_tmpdir(), name);
}

/* A capture with n sleeps of the main thread on CPU 0 and a worker on CPU 1; returns the
 * builder after writing it. */
static struct gt_cb *build(const char *name, int n, uint64_t *offsets)
{
	struct gt_cb *cb = gt_cb_new(2, 8192, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, 1, 0, 0);
	gt_cb_thread_new(cb, 0, T0 + 20, 1, 2, 0, 0x401000);
	gt_cb_thread_start(cb, 1, T0 + 30, 2, 99, 0x401000);
	uint64_t t = T0 + 100;
	for (int i = 0; i < n; i++, t += 100) {
		uint64_t off = gt_cb_block_begin(cb, 0, t, 1, GT_BK_SLEEP, 1, 0);
		if (offsets)
			offsets[i] = off;
		gt_cb_block_end(cb, 0, t + 50, 1, GT_BK_SLEEP, 1, GT_BR_OK);
		gt_cb_yield(cb, 1, t + 60, 2, 0);
	}
	char p[PATH_MAX];
	path_of(p, name);
	cr_assert_eq(gt_cb_write(cb, p), 0);
	return cb;
}

/* Converts and parses with both readers; full: also the whole trace-oracle (UI, pages). */
static void convert_checked(const char *name, struct gt_convert_summary *sum, bool full)
{
	char cap[PATH_MAX], trace[PATH_MAX];
	path_of(cap, name);
	cr_assert_eq(convert_path(cap, trace, sum), 0);
	char *report = NULL;
	cr_expect_eq(gt_oracle_check(trace, !full, &report), 0, "%s", report ? report : "");
	free(report);
}

static void convert_ok(const char *name, struct gt_convert_summary *sum)
{
	convert_checked(name, sum, false);
}

Test(reader, intact_capture_reads_every_record)
{
	gt_cb_free(build("intact", 200, NULL));
	struct gt_convert_summary s;
	convert_ok("intact", &s);
	cr_expect_eq(s.reader.records, 3 + 600);
	cr_expect_eq(s.reader.bytes_garbage, 0);
	cr_expect_eq(s.reader.bytes_zero, 0);
	cr_expect_gt(s.reader.chunks, 2, "records spread over several chunks");
	cr_expect_eq(s.model.facts, 603);
}

Test(reader, torn_tail)
{
	/* the last record of a chunk claims more words than the chunk's used bytes */
	struct gt_cb *cb = gt_cb_new(1, 4096, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, 1, 0, 0);
	gt_cb_block_begin(cb, 0, T0 + 20, 1, GT_BK_SLEEP, 1, 0);
	uint64_t off = gt_cb_block_end(cb, 0, T0 + 30, 1, GT_BK_SLEEP, 1, GT_BR_OK);
	size_t size;
	struct gt_chunk_header *ch = (struct gt_chunk_header *)(gt_cb_image(cb, &size) + GT_FILE_HEADER_SIZE);
	ch->used -= 8;  /* the record's last word is not reserved: torn */
	char p[PATH_MAX];
	path_of(p, "torn");
	cr_assert_eq(gt_cb_write(cb, p), 0);
	gt_cb_free(cb);
	(void)off;
	struct gt_convert_summary s;
	convert_ok("torn", &s);
	cr_expect_eq(s.reader.torn_tails, 1);
	cr_expect_eq(s.reader.records, 2);
	cr_expect_eq(s.reader.bytes_garbage, 24);
}

Test(reader, zeroed_range_is_skipped_word_by_word)
{
	uint64_t offs[50];
	gt_cb_free(build("zeroed", 50, offs));
	char p[PATH_MAX];
	path_of(p, "zeroed");
	/* wipe one whole record (a BLOCK_BEGIN: 32 bytes) */
	cr_assert_eq(gt_cb_zero_range(p, offs[10], 32), 0);
	struct gt_convert_summary s;
	convert_ok("zeroed", &s);
	cr_expect_eq(s.reader.bytes_zero, 32);
	cr_expect_eq(s.reader.records, 3 + 150 - 1);
	cr_expect_eq(s.reader.bytes_garbage, 0);
}

Test(reader, garbage_resynchronises)
{
	uint64_t offs[50];
	gt_cb_free(build("garbage", 50, offs));
	char p[PATH_MAX];
	path_of(p, "garbage");
	cr_assert_eq(gt_cb_garbage(p, offs[20], 32, 7), 0);   /* one record's bytes */
	struct gt_convert_summary s;
	convert_checked("garbage", &s, true);
	cr_expect_geq(s.reader.bytes_garbage, 8);
	cr_expect_leq(s.reader.bytes_garbage + s.reader.bytes_zero, 32);
	cr_expect_geq(s.reader.resyncs, 1);
	cr_expect_geq(s.reader.records, 3 + 150 - 2, "at most the damaged records are lost");
	cr_expect_leq(s.reader.records, 3 + 150);
}

/* gotrace stopped a process that lives on (GT_FILE_DETACHED): a record it was writing at the
 * end of a chunk, payload stored and first word not yet, is uncommitted, not damage; the
 * same bytes in a capture of a process that ended are damage. */
static struct gt_convert_summary uncommitted_tail(const char *name, bool detached)
{
	struct gt_cb *cb = gt_cb_new(1, 8192, T0);
	if (detached)
		gt_cb_header(cb)->flags |= GT_FILE_DETACHED;
	gt_cb_thread_existing(cb, 0, T0 + 10, 1, 0, 0);
	gt_cb_block_begin(cb, 0, T0 + 20, 1, GT_BK_SLEEP, 1, 0);
	gt_cb_block_end(cb, 0, T0 + 30, 1, GT_BK_SLEEP, 1, GT_BR_OK);
	uint64_t off = gt_cb_block_begin(cb, 0, T0 + 40, 1, GT_BK_MUTEX, 0x7f3a5c8e1234ull, 0);
	char p[PATH_MAX];
	path_of(p, name);
	cr_assert_eq(gt_cb_write(cb, p), 0);
	gt_cb_free(cb);
	cr_assert_eq(gt_cb_zero_range(p, off, 8), 0); /* the first word, stored last */
	struct gt_convert_summary s;
	convert_ok(name, &s);
	cr_expect_eq(s.reader.records, 3);
	return s;
}

Test(reader, uncommitted_tail_of_a_detached_capture)
{
	struct gt_convert_summary ended = uncommitted_tail("tail-ended", false);
	struct gt_convert_summary live = uncommitted_tail("tail-detached", true);
	cr_expect_gt(ended.reader.bytes_garbage, 0);
	cr_expect_eq(live.reader.bytes_garbage, 0);
	cr_expect_eq(live.reader.bytes_zero, ended.reader.bytes_zero + ended.reader.bytes_garbage);
	cr_expect_eq(live.reader.bytes_zero, 32, "the whole record");
}

Test(reader, truncated_chunk)
{
	gt_cb_free(build("trunc", 200, NULL));
	char p[PATH_MAX];
	path_of(p, "trunc");
	struct stat st;
	cr_assert_eq(stat(p, &st), 0);
	cr_assert_eq(gt_cb_truncate(p, (uint64_t)st.st_size - 5000), 0);
	struct gt_convert_summary s;
	convert_checked("trunc", &s, true);
	cr_expect(s.truncated);
	cr_expect_eq(s.reader.chunks_truncated, 1);
	cr_expect_lt(s.reader.records, 603);
	cr_expect_gt(s.reader.records, 400);
}

Test(reader, truncated_inside_the_header)
{
	gt_cb_free(build("trunchdr", 5, NULL));
	char p[PATH_MAX];
	path_of(p, "trunchdr");
	cr_assert_eq(gt_cb_truncate(p, 4000), 0);
	struct gt_convert_summary s;
	convert_ok("trunchdr", &s);
	cr_expect(s.truncated);
	cr_expect_eq(s.reader.records, 0);
}

Test(reader, foreign_chunk_magic_skips_the_chunk)
{
	gt_cb_free(build("badchunk", 200, NULL));
	char p[PATH_MAX];
	path_of(p, "badchunk");
	cr_assert_eq(gt_cb_garbage(p, GT_FILE_HEADER_SIZE + 8192 * 2, 4, 3), 0);
	struct gt_convert_summary s;
	convert_ok("badchunk", &s);
	cr_expect_eq(s.reader.chunks_bad, 1);
}

static void expect_refused(const char *path, const char *needle)
{
	struct gt_convert_options opt = {.no_symbols = true};
	struct gt_convert_summary s;
	char err[512], out[PATH_MAX];
	snprintf(out, sizeof out, "%s.trace", path);
	cr_assert_neq(gt_convert_file(path, out, &opt, &s, err, sizeof err), 0);
	cr_expect(strstr(err, needle), "error '%s' lacks '%s'", err, needle);
	cr_expect(!strchr(err, '\n'), "one line");
	cr_expect_neq(access(out, F_OK), 0, "no trace written");
}

Test(reader, newer_version_is_refused)
{
	struct gt_cb *cb = gt_cb_new(1, 4096, T0);
	gt_cb_header(cb)->version = GT_CAPTURE_VERSION + 1;
	char p[PATH_MAX];
	path_of(p, "newer");
	cr_assert_eq(gt_cb_write(cb, p), 0);
	gt_cb_free(cb);
	expect_refused(p, "newer");
}

Test(reader, foreign_empty_and_missing_files_are_refused)
{
	char p[PATH_MAX];
	path_of(p, "foreign");
	FILE *f = fopen(p, "w");
	for (int i = 0; i < 1000; i++)
		fputs("this is not a capture file\n", f);
	fclose(f);
	expect_refused(p, "not a gotrace capture");
	path_of(p, "empty");
	fclose(fopen(p, "w"));
	expect_refused(p, "empty");
	path_of(p, "missing");
	expect_refused(p, "No such file");
}

Test(reader, reorder_window_sorts_a_cpu_stream)
{
	/* a thread preempted between its timestamp and its reservation: records of one CPU
	 * slightly out of order come out sorted */
	struct gt_cb *cb = gt_cb_new(1, 65536, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, 1, 0, 0);
	gt_cb_thread_new(cb, 0, T0 + 20, 1, 2, 0, 0x401000);
	gt_cb_block_begin(cb, 0, T0 + 200, 1, GT_BK_SLEEP, 1, 0);
	gt_cb_thread_start(cb, 0, T0 + 100, 2, 99, 0x401000);  /* stamped earlier, stored later */
	gt_cb_block_end(cb, 0, T0 + 300, 1, GT_BK_SLEEP, 1, GT_BR_OK);
	char p[PATH_MAX];
	path_of(p, "reorder");
	cr_assert_eq(gt_cb_write(cb, p), 0);
	gt_cb_free(cb);
	struct gt_capture *c = gt_capture_open(p, NULL, 0);
	cr_assert(c);
	struct gt_capture_record r;
	uint64_t last = 0;
	int n = 0;
	while (gt_capture_next(c, &r)) {
		cr_expect_geq(r.tsc, last);
		last = r.tsc;
		n++;
	}
	struct gt_capture_stats st;
	gt_capture_stats(c, &st);
	gt_capture_close(c);
	cr_expect_eq(n, 5);
	cr_expect_eq(st.reordered, 0);
}

/* A reader's return stamped at its writer's unlock's very tick, on a lower CPU: a coarse
 * counter (16 ns under qemu) gives them one tick often (e2e rwlock ring under emulation).
 * The return was stamped after its call returned, so the unlock comes first, and the wait
 * has its waker (a rwlock unlock wakes all: no look ahead for a mutex's one).  Within one
 * CPU, records of one tick keep their order. */
Test(reader, at_one_tick_a_return_follows_other_cpus_records)
{
	struct gt_cb *cb = gt_cb_new(2, 65536, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, 1, 0, 0);
	gt_cb_thread_new(cb, 0, T0 + 20, 1, 2, 0, 0x401000);
	gt_cb_thread_start(cb, 1, T0 + 30, 2, 99, 0x401000);
	gt_cb_block_begin(cb, 0, T0 + 100, 1, GT_BK_RWLOCK_RD, 0x7f0000001000ull, 0);
	gt_cb_block_end(cb, 0, T0 + 200, 1, GT_BK_RWLOCK_RD, 0x7f0000001000ull, GT_BR_OK);
	gt_cb_yield(cb, 0, T0 + 200, 1, 0);
	gt_cb_wake(cb, 1, T0 + 200, 2, GT_BK_RWLOCK_WR, 0x7f0000001000ull, GT_WAKE_ALL, 0);
	char p[PATH_MAX];
	path_of(p, "tick");
	cr_assert_eq(gt_cb_write(cb, p), 0);
	gt_cb_free(cb);
	struct gt_capture *c = gt_capture_open(p, NULL, 0);
	cr_assert(c);
	struct gt_capture_record r;
	uint8_t order[3];
	int n = 0;
	while (gt_capture_next(c, &r))
		if (r.tsc == T0 + 200 && n < 3)
			order[n++] = r.rec->type;
	gt_capture_close(c);
	cr_assert_eq(n, 3);
	cr_expect_eq(order[0], GT_WAKE, "the release first");
	cr_expect_eq(order[1], GT_BLOCK_END);
	cr_expect_eq(order[2], GT_YIELD, "CPU 0's own order kept");
	struct gt_convert_summary sum;
	convert_ok("tick", &sum);
	cr_expect_eq(sum.model.unknown_wakeups, 0);
	cr_expect_eq(sum.model.wakes_matched, 1);
}

Test(reader, abandoned_reservation_past_the_chunk_end_is_not_truncation)
{
	/* the recorder's reservation counter may run past the chunk when a record did not fit */
	struct gt_cb *cb = gt_cb_new(1, 4096, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, 1, 0, 0);
	gt_cb_block_begin(cb, 0, T0 + 20, 1, GT_BK_SLEEP, 1, 0);
	size_t size;
	struct gt_chunk_header *ch = (struct gt_chunk_header *)(gt_cb_image(cb, &size) + GT_FILE_HEADER_SIZE);
	ch->used = 4096 + 64;
	char p[PATH_MAX];
	path_of(p, "abandoned");
	cr_assert_eq(gt_cb_write(cb, p), 0);
	gt_cb_free(cb);
	struct gt_convert_summary s;
	convert_ok("abandoned", &s);
	cr_expect_eq(s.reader.records, 2);
	cr_expect_eq(s.reader.chunks_truncated, 0);
	cr_expect(!s.truncated);
	cr_expect_gt(s.reader.bytes_zero, 0, "the unwritten rest of the chunk reads as zero words");
}

/* Reads a capture through the reader; returns the records and the clamp count. */
static int read_all(const char *p, uint64_t *reordered)
{
	struct gt_capture *c = gt_capture_open(p, NULL, 0);
	cr_assert(c);
	struct gt_capture_record r;
	uint64_t last = 0;
	int n = 0;
	while (gt_capture_next(c, &r)) {
		cr_expect_geq(r.tsc, last, "delivered in time order");
		last = r.tsc;
		n++;
	}
	struct gt_capture_stats st;
	gt_capture_stats(c, &st);
	gt_capture_close(c);
	*reordered = st.reordered;
	return n;
}

Test(reader, late_records_within_the_time_bound_are_sorted_beyond_it_clamped)
{
	/* pthread_create is stamped before the call and written after it: the child's records
	 * come first in the file.  The reorder bound is time (1 s), not a record count: 5000
	 * records 10 ns apart (50 us late) are sorted, 3 records 600 ms apart (1.2 s late) are
	 * clamped. */
	static const struct { int late; uint64_t step; } cases[] = {{5000, 10}, {3, 600000000}};
	for (int k = 0; k < 2; k++) {
		int late = cases[k].late;
		struct gt_cb *cb = gt_cb_new(1, 1 << 20, T0);
		gt_cb_thread_existing(cb, 0, T0 + 10, 1, 0, 0);
		for (int i = 0; i < late; i++)
			gt_cb_yield(cb, 0, T0 + 1000 + cases[k].step * (uint64_t)i, 2, 0);
		gt_cb_thread_new(cb, 0, T0 + 500, 1, 2, 0, 0x401000);
		char p[PATH_MAX];
		path_of(p, k ? "late1200ms" : "late5000");
		cr_assert_eq(gt_cb_write(cb, p), 0);
		gt_cb_free(cb);
		uint64_t reordered;
		cr_expect_eq(read_all(p, &reordered), late + 2);
		cr_expect_eq(reordered, k ? 1u : 0u, "%d late: %lu clamped", late,
			     (unsigned long)reordered);
	}
}

/* Writes cb as capture `name` (its path into p), frees it, opens the capture. */
static struct gt_capture *write_and_open(struct gt_cb *cb, const char *name, char *p)
{
	path_of(p, name);
	cr_assert_eq(gt_cb_write(cb, p), 0);
	gt_cb_free(cb);
	struct gt_capture *c = gt_capture_open(p, NULL, 0);
	cr_assert(c);
	return c;
}

Test(reader, peek_shows_what_next_delivers_within_the_lookahead)
{
	/* two CPUs, one of them with late records (sorted and clamped): whatever a peek shows
	 * is what gt_capture_next delivers later, with the same clamped tsc; the lookahead
	 * stops at 4095 records; peeking changes no counter. */
	struct gt_cb *cb = gt_cb_new(2, 1 << 20, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, 1, 0, 0);
	for (int i = 0; i < 400; i++)   /* 2 s: the thread_new after them is clamped */
		gt_cb_yield(cb, 1, T0 + 1000 + 5000000 * (uint64_t)i, 2, 0);
	gt_cb_thread_new(cb, 1, T0 + 500, 1, 2, 0, 0x401000);
	for (int i = 0; i < 6000; i++)
		gt_cb_yield(cb, 0, T0 + 1005 + 10 * (uint64_t)i, 1, 0);
	char p[PATH_MAX];
	struct gt_capture *c = write_and_open(cb, "peek", p);
	enum { N = 4095 };
	static struct { uint64_t tsc, rec_tsc; uint32_t cpu, thread; } seen[N];
	struct gt_capture_record r, q;
	cr_assert(gt_capture_next(c, &r));
	const struct gt_rec *first = r.rec;
	uint64_t first_tsc = r.tsc;
	for (int i = 0; i < N; i++) {
		cr_assert(gt_capture_peek(c, (size_t)i, &q), "peek %d", i);
		seen[i].tsc = q.tsc;
		seen[i].rec_tsc = q.rec->tsc;
		seen[i].cpu = q.cpu;
		seen[i].thread = q.rec->thread;
	}
	cr_expect(!gt_capture_peek(c, N, &q), "the lookahead holds 4095 records");
	cr_expect_eq(r.rec, first, "peeking does not move the delivered record");
	cr_expect_eq(r.rec->tsc, first_tsc);
	for (int i = 0; i < N; i++) {
		cr_assert(gt_capture_next(c, &r));
		cr_expect(r.tsc == seen[i].tsc && r.rec->tsc == seen[i].rec_tsc &&
			  r.cpu == seen[i].cpu && r.rec->thread == seen[i].thread,
			  "record %d differs from its peek", i);
	}
	int n = 1 + N;
	while (gt_capture_next(c, &r))
		n++;
	struct gt_capture_stats st;
	gt_capture_stats(c, &st);
	gt_capture_close(c);
	uint64_t reordered;
	cr_expect_eq(n, read_all(p, &reordered));
	cr_expect_eq(n, 6402);
	cr_expect_eq(st.records, 6402);
	cr_expect_eq(st.reordered, reordered, "peeking clamps nothing more or less");
	cr_expect_eq(reordered, 1);
}

Test(reader, peek_stops_at_a_mebibyte_of_records)
{
	/* 300 stacks of 900 frames (about 7 KiB each): the lookahead holds what fits in 1 MiB
	 * with the delivered record, not 4095 of them */
	static uint64_t pcs[900];
	for (int i = 0; i < 900; i++)
		pcs[i] = 0x401000 + 16 * (uint64_t)i;
	struct gt_cb *cb = gt_cb_new(1, 1 << 22, T0);
	for (uint32_t id = 1; id <= 300; id++)
		gt_cb_stack(cb, 0, T0 + id, id, pcs, 900);
	char p[PATH_MAX];
	struct gt_capture *c = write_and_open(cb, "peek-bytes", p);
	struct gt_capture_record r, q;
	cr_assert(gt_capture_next(c, &r));
	size_t len = (size_t)r.rec->nwords * 8, held = len, i = 0;
	while (gt_capture_peek(c, i, &q)) {
		held += (size_t)q.rec->nwords * 8;
		i++;
	}
	cr_expect_leq(held, 1u << 20);
	cr_expect_gt(held + len, 1u << 20, "%zu records peeked, %zu bytes held", i, held);
	cr_expect_lt(i, 299);
	int n = 1;
	while (gt_capture_next(c, &r))
		n++;
	cr_expect_eq(n, 300);
	gt_capture_close(c);
}

/* A flight recorder's ring (capture.h, "Ring captures"): chunk 0 became a keep chunk (what was
 * carried out of reused chunks), CPU 1's chunk still holds records from before the window's
 * start (ring_lost_tsc), one of them also carried (a reuse cut short).  The reader opens with
 * the state at the window's start, stamped there: threads alive then as THREAD_EXISTING with
 * the start routine of their creation, their names, the wait still open (once), no ended
 * thread and nothing else from before; then the window. */
Test(reader, ring_capture_opens_with_the_state_at_the_window_start)
{
	const uint64_t lost = T0 + 1000;
	struct gt_cb *cb = gt_cb_new(2, 8192, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, 1, 0, 0);                     /* chunk 0: keep */
	gt_cb_thread_new(cb, 0, T0 + 20, 1, 2, 7, 0x401000);
	gt_cb_thread_name(cb, 0, T0 + 21, 2, "old");
	gt_cb_thread_name(cb, 0, T0 + 22, 2, "waiter");
	gt_cb_block_begin(cb, 0, T0 + 40, 2, GT_BK_MUTEX, 0x5000, 0);
	gt_cb_thread_new(cb, 0, T0 + 50, 1, 3, 0, 0x402000);
	gt_cb_thread_end(cb, 0, T0 + 60, 3);
	gt_cb_notice(cb, 0, T0 + 70, GT_NOTICE_STACKS_LOST, 5);
	gt_cb_thread_start(cb, 1, T0 + 30, 2, 99, 0x401000);                 /* chunk 1: CPU 1 */
	gt_cb_block_begin(cb, 1, T0 + 40, 2, GT_BK_MUTEX, 0x5000, 0);      /* the same records */
	gt_cb_notice(cb, 1, T0 + 70, GT_NOTICE_STACKS_LOST, 5);
	gt_cb_yield(cb, 1, T0 + 900, 1, 0);                                  /* before: dropped */
	gt_cb_wake(cb, 1, lost + 100, 1, GT_BK_MUTEX, 0x5000, 1, 0);         /* the window */
	gt_cb_block_end(cb, 1, lost + 200, 2, GT_BK_MUTEX, 0x5000, GT_BR_OK);
	gt_cb_capture_end(cb, 1, lost + 300);
	struct gt_file_header *h = gt_cb_header(cb);
	h->flags |= GT_FILE_RING;
	h->ring_bytes = 8192;
	h->ring_lost_tsc = lost;
	size_t size;
	struct gt_chunk_header *keep = (struct gt_chunk_header *)(gt_cb_image(cb, &size) + GT_FILE_HEADER_SIZE);
	cr_assert_eq(keep->cpu, 0);
	keep->magic = GT_KEEP_MAGIC;
	char p[PATH_MAX], err[256];
	path_of(p, "ring");
	cr_assert_eq(gt_cb_write(cb, p), 0);
	gt_cb_free(cb);

	struct gt_capture *c = gt_capture_open(p, err, sizeof err);
	cr_assert_not_null(c, "%s", err);
	struct gt_capture_record r;
	static const struct { uint8_t type; uint32_t thread; } want[] = {
		{GT_NOTICE, 0}, {GT_THREAD_EXISTING, 1}, {GT_THREAD_EXISTING, 2}, {GT_THREAD_NAME, 2},
		{GT_BLOCK_BEGIN, 2},
		{GT_WAKE, 1}, {GT_BLOCK_END, 2}, {GT_CAPTURE_END, 0},
	};
	size_t n = 0;
	while (gt_capture_next(c, &r)) {
		cr_assert_lt(n, sizeof want / sizeof want[0], "one more: %s", gt_fact_name(r.rec->type));
		cr_expect_eq(r.rec->type, want[n].type, "record %zu: %s, not %s", n,
			     gt_fact_name(r.rec->type), gt_fact_name(want[n].type));
		cr_expect_eq(r.rec->thread, want[n].thread, "record %zu", n);
		if (n < 5)
			cr_expect_eq(r.tsc, lost, "record %zu at %lu", n, (unsigned long)r.tsc);
		if (r.rec->type == GT_THREAD_EXISTING && r.rec->thread == 2) {
			const struct gt_p_thread_start *s = r.payload;
			cr_expect_eq(s->start_routine, 0x401000);
			cr_expect_eq(s->tid, 99);
			cr_expect_eq(s->stack, 7, "the creator's stack");
		}
		if (r.rec->type == GT_THREAD_NAME)
			cr_expect_str_eq(((const struct gt_p_thread_name *)r.payload)->name, "waiter");
		n++;
	}
	cr_expect_eq(n, sizeof want / sizeof want[0]);
	struct gt_capture_stats st;
	gt_capture_stats(c, &st);
	cr_expect_eq(st.chunks_keep, 1);
	cr_expect_eq(st.ring_summary, 5);
	cr_expect_eq(st.before_window, 4, "START, BLOCK_BEGIN, NOTICE and YIELD of CPU 1's chunk");
	gt_capture_close(c);
	struct gt_convert_summary s;
	convert_ok("ring", &s);
	cr_expect_eq(s.model.writer_stacks_lost, 5, "the notice from before the window counts, once");
}

/* The keep chunks hold, of each reused chunk, each thread's last begin or end (capture.h,
 * "Ring captures"), so a thread's begins and ends before the window are not a sequence: here
 * a mutex wait's begin is the last of one reused chunk (its end, not the last of the next one,
 * was not kept), then a syscall's end and, in CPU 1's chunk, the begin of the syscall open at
 * the window's start.  The state at the start is that syscall, not the mutex wait: its end in
 * the window closes it, with nothing repaired. */
Test(reader, ring_summary_takes_each_thread_latest_begin_or_end)
{
	const uint64_t lost = T0 + 1000;
	struct gt_cb *cb = gt_cb_new(2, 8192, T0);
	gt_cb_thread_existing(cb, 0, T0 + 10, 2, 0, 0);                     /* chunk 0: keep */
	gt_cb_block_begin(cb, 0, T0 + 40, 2, GT_BK_MUTEX, 0x5000, 0);
	gt_cb_syscall_end(cb, 0, T0 + 60, 2, 0, 1);
	gt_cb_syscall_end(cb, 0, T0 + 80, 2, 0, 1);
	gt_cb_syscall_begin(cb, 1, lost, 2, GT_FD_PIPE, 0, 3, 0);          /* chunk 1: CPU 1 */
	gt_cb_syscall_end(cb, 1, lost + 200, 2, 0, 1);
	gt_cb_capture_end(cb, 1, lost + 300);
	struct gt_file_header *h = gt_cb_header(cb);
	h->flags |= GT_FILE_RING;
	h->ring_bytes = 8192;
	h->ring_lost_tsc = lost;
	size_t size;
	struct gt_chunk_header *keep = (struct gt_chunk_header *)(gt_cb_image(cb, &size) + GT_FILE_HEADER_SIZE);
	keep->magic = GT_KEEP_MAGIC;
	char p[PATH_MAX], err[256];
	path_of(p, "ring-states");
	cr_assert_eq(gt_cb_write(cb, p), 0);
	gt_cb_free(cb);

	struct gt_capture *c = gt_capture_open(p, err, sizeof err);
	cr_assert_not_null(c, "%s", err);
	struct gt_capture_record r;
	static const uint8_t want[] = {GT_THREAD_EXISTING, GT_SYSCALL_BEGIN, GT_SYSCALL_END,
				       GT_CAPTURE_END};
	size_t n = 0;
	while (gt_capture_next(c, &r)) {
		cr_assert_lt(n, sizeof want, "one more: %s", gt_fact_name(r.rec->type));
		cr_expect_eq(r.rec->type, want[n], "record %zu: %s, not %s", n,
			     gt_fact_name(r.rec->type), gt_fact_name(want[n]));
		n++;
	}
	cr_expect_eq(n, sizeof want);
	gt_capture_close(c);
	struct gt_convert_summary s;
	convert_ok("ring-states", &s);
	cr_expect_eq(s.model.ends_without_begin, 0);
}
