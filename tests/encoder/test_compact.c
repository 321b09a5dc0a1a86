/* Capture formats 2 and 3's compact records (include/gotrace/capture.h "Compact records"): the
 * reader delivers each as the full record it stands for, so one fact stream written in full
 * (version 1), compact (version 2) and with one-word records too (version 3) reads and
 * converts the same; and captures that earlier recorders wrote in versions 1 and 2
 * (tests/encoder/fixtures) still convert. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "encoder/capture_reader.h"
#include "encoder/syscalls.h"
#include "test_util.h"

#define T0 1000000000ull

static uint64_t syscall_obj(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			    uint32_t nr, int64_t fd, uint32_t stack, uint64_t key)
{
	struct {
		struct gt_p_syscall s;
		struct gt_p_syscall_obj o;
	} p = {{nr, stack, fd}, {key}};
	return gt_cb_record(cb, cpu, GT_SYSCALL_BEGIN, GT_FD_PIPE, thread, t, &p, sizeof p);
}

static uint64_t syscall_end(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			    uint32_t nr, int err, int64_t result)
{
	struct gt_p_syscall_end p = {nr, err, result};
	return gt_cb_record(cb, cpu, GT_SYSCALL_END, 0, thread, t, &p, sizeof p);
}

static uint64_t block_end(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
			  enum gt_block_kind kind, uint64_t obj, enum gt_block_result result, int err)
{
	struct gt_p_block_end p = {obj, result, err};
	return gt_cb_record(cb, cpu, GT_BLOCK_END, (uint8_t)kind, thread, t, &p, sizeof p);
}

/* One fact stream: two threads at work on two CPUs, values at the edges of the compact
 * fields (and past them: full records), and a gap longer than a compact delta reaches. */
static void facts(struct gt_cb *cb)
{
	const uint64_t pcs[] = {0x401000, 0x402000};
	const uint64_t mutex = 0x7f0000001000ull, cond = 0x7f0000002000ull;
	const uint64_t edge = (1ull << 48) - 8, past = 1ull << 48;
	const uint64_t key = GT_OBJ_KERNEL | 0x123456789abcull, key2 = key + 1;
	const uint32_t big_stack = GT_C_STACK_MAX; /* the first id past the compact field */
	uint64_t t = T0;
	gt_cb_clock(cb, 0, t, t);
	gt_cb_thread_existing(cb, 0, t, 1, 0, 0);
	gt_cb_thread_name(cb, 0, t, 1, "main");
	gt_cb_stack(cb, 0, t, 1, pcs, 2);
	gt_cb_stack(cb, 0, t, 2, pcs + 1, 1);
	gt_cb_stack(cb, 0, t, big_stack - 1, pcs, 1);
	gt_cb_stack(cb, 0, t, big_stack, pcs + 1, 1);
	gt_cb_thread_new(cb, 0, t += 100, 1, 2, 1, 0x401500);
	gt_cb_thread_start(cb, 1, t += 100, 2, 4243, 0x401500);
	for (unsigned i = 0; i < 300; i++) {
		uint32_t stack = i % 3 == 0 ? 0 : i % 3 == 1 ? 2 : big_stack - 1 + i % 2;
		uint64_t obj = i % 5 == 0 ? edge : i % 5 == 1 ? past : mutex;
		gt_cb_block_begin(cb, 0, t += 50, 1, GT_BK_MUTEX, obj, stack);
		gt_cb_wake(cb, 1, t += 50, 2, GT_BK_MUTEX, obj, i % 4 == 3 ? 3 : 1, stack);
		block_end(cb, 0, t += 50, 1, GT_BK_MUTEX, obj, i % 7 ? GT_BR_OK : GT_BR_ERROR,
			  i % 7 ? 0 : i % 2 ? 70000 : 22);
		if (i % 4 == 0) /* the lock it waited for, released (GT_C1_WAKE without a stack) */
			gt_cb_wake(cb, 0, t += 50, 1, GT_BK_MUTEX, obj, 1, stack);
		if (i % 6 >= 4) /* a release's wake of a sleeper no hook saw (GT_C2_WAKE_UNSEEN) */
			gt_cb_wake(cb, 0, t += 50, 1, GT_BK_MUTEX, obj, GT_WAKE_UNSEEN, stack);
		if (i % 2) { /* a condition wait naming its mutex (capture.h gt_p_block_mutex):
			      * in its struct or next to it, before and after
			      * (gt_compact_near_mutex), too far, not a word apart, or 4 words
			      * after (low bits GT_BK_COND: three words) */
			static const int64_t near[] = {-1024, -40, 48, 1016, 1024, 32, 4};
			struct {
				struct gt_p_block b;
				struct gt_p_block_mutex m;
			} p = {{cond, stack, 0}, {i % 3 ? mutex : cond + near[i / 3 % 7]}};
			gt_cb_record(cb, 1, GT_BLOCK_BEGIN, GT_BK_COND, 2, t += 50, &p, sizeof p);
		} else {
			gt_cb_block_begin(cb, 1, t += 50, 2, GT_BK_COND, cond, stack);
		}
		gt_cb_wake(cb, 0, t += 50, 1, GT_BK_COND, cond, GT_WAKE_ALL, stack);
		gt_cb_block_end(cb, 1, t += 50, 2, GT_BK_COND, cond, GT_BR_OK);
		gt_cb_block_begin(cb, 0, t += 50, 1, GT_BK_FUTEX, key, stack);
		gt_cb_wake(cb, 1, t += 50, 2, GT_BK_FUTEX, key, 1, stack);
		gt_cb_block_end(cb, 0, t += 50, 1, GT_BK_FUTEX, key, GT_BR_OK);
		int64_t arg = i % 6 == 0 ? -1 : i % 6 == 1 ? (1ll << 31) : 5;
		if (i == 100 || i == 200) { /* descriptor 5's key, by number after it (GT_C_FD_OBJ) */
			struct gt_p_fd d = {.fd = 5, .obj = i == 100 ? key : key2};
			gt_cb_record(cb, 0, GT_FD, GT_FD_PIPE, 0, t += 50, &d, sizeof d);
		}
		if (i % 2)
			syscall_obj(cb, 1, t += 50, 2, 0, arg, stack, i < 200 ? key : key2);
		else
			gt_cb_syscall_begin(cb, 1, t += 50, 2, GT_FD_FILE, 0, arg, stack);
		/* one word up to 15 (capture.h GT_C1_RESULT_MAX) */
		int64_t result = i % 4 == 0 ? -1 : i % 4 == 1 ? (1ll << 40) : i % 8 == 2 ? 4096 :
				 i % 8 == 6 ? 16 : i % 3;
		syscall_end(cb, 1, t += 50, 2, 0, result < 0 ? 11 : 0, result);
		gt_cb_yield(cb, i % 2, t += 50, 1 + i % 2, stack);
		/* --locks=all (version 4): an acquisition with its stack (below 2^16 and waited
		 * or try: two words), its release */
		struct gt_p_lock lk = {.obj = obj, .stack = i % 4 == 3 ? 1u << 16 : stack & 0xffff,
				       .flags = i % 11};
		gt_cb_record(cb, 0, GT_LOCK_ACQUIRE, (uint8_t)(GT_BK_MUTEX + i % 3), 1, t += 50, &lk,
			     sizeof lk);
		lk.stack = 0, lk.flags = 0;
		gt_cb_record(cb, 0, GT_LOCK_RELEASE, i % 3 ? GT_BK_RWLOCK_WR : GT_BK_MUTEX, 1, t += 50,
			     &lk, sizeof lk);
		if (i % 10 == 9) /* ends of waits the capture does not hold: full records */
			gt_cb_block_end(cb, 0, t += 50, 1, GT_BK_SEM, mutex, GT_BR_OK);
		if (i % 10 == 4)
			syscall_end(cb, 1, t += 50, 2, 7, 0, 1);
		if (i == 150) /* longer than 2^32 ns: full records until the next chunk */
			t += 5000000000ull;
	}
	gt_cb_thread_end(cb, 1, t += 100, 2);
	gt_cb_capture_end(cb, 0, t += 100);
}

/* A slow program: its chunks live for minutes.  Threads 1 (on CPU 0) and 2 (on CPU 1) write
 * facts 1.5 * 2^30 ticks apart (a compact delta reaches 2^32 from the chunk's first_tsc, or
 * 2^31 from the thread's last record there, capture.h), thread 3 (CPU 0) 3 * 2^30 apart. */
static void slow_facts(struct gt_cb *cb)
{
	const uint64_t obj = 0x7f0000001000ull;
	uint64_t t = T0, step = 3ull << 29;
	gt_cb_clock(cb, 0, t, t);
	gt_cb_thread_existing(cb, 0, t, 1, 0, 0);
	for (unsigned i = 0; i < 60; i++) {
		gt_cb_block_begin(cb, 0, t += step, 1, GT_BK_MUTEX, obj, 0);
		gt_cb_wake(cb, 1, t += 10, 2, GT_BK_MUTEX, obj, 1, 0);
		gt_cb_block_end(cb, 0, t += 10, 1, GT_BK_MUTEX, obj, GT_BR_OK);
		if (i % 2 == 0)
			gt_cb_yield(cb, 0, t += 10, 3, 0);
	}
	gt_cb_capture_end(cb, 0, t += (1ull << 33));
}

static struct gt_cb *build_with(void (*fill)(struct gt_cb *), uint32_t version, const char *name,
				char *path)
{
	struct gt_cb *cb = gt_cb_new(2, 16384, T0);
	cr_assert_not_null(cb);
	gt_cb_header(cb)->version = version;
	gt_cb_set_compact(cb, version >= 2);
	fill(cb);
	snprintf(path, PATH_MAX, "%s/%s.cap", test_tmpdir(), name);
	cr_assert_eq(gt_cb_write(cb, path), 0);
	return cb;
}

static struct gt_cb *build(uint32_t version, const char *name, char *path)
{
	return build_with(facts, version, name, path);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "%s", path);
	fseek(f, 0, SEEK_END);
	*len = (size_t)ftell(f);
	rewind(f);
	char *b = malloc(*len + 1);
	cr_assert_eq(fread(b, 1, *len, f), *len);
	fclose(f);
	return b;
}

/* The records of the version's capture, against those of the full one: the same once
 * delivered; returns the bytes in the file and counts the records of 8 bytes. */
/* condition waits and system calls on a descriptor read_same_of met in two words
 * (gt_compact_near_mutex, GT_C_FD_OBJ) */
static size_t near_mutex, fd_ref, wake_one, wake_unseen, lock_two;

static size_t read_same_of(void (*fill)(struct gt_cb *), uint32_t version, size_t *compact,
			   size_t *one_word)
{
	char full_path[PATH_MAX], path[PATH_MAX], err[256], name[32];
	snprintf(name, sizeof name, "read-v%u", version);
	struct gt_cb *full = build_with(fill, 1, "read-full", full_path);
	struct gt_cb *cb = build_with(fill, version, name, path);
	*compact = gt_cb_compact_records(cb);
	cr_expect_eq(gt_cb_compact_records(full), 0u);
	struct gt_capture *a = gt_capture_open(full_path, err, sizeof err);
	cr_assert_not_null(a, "%s", err);
	struct gt_capture *b = gt_capture_open(path, err, sizeof err);
	cr_assert_not_null(b, "%s", err);
	cr_expect_eq(gt_capture_header(a)->version, 1u);
	cr_expect_eq(gt_capture_header(b)->version, version);
	struct gt_capture_record ra, rb;
	size_t n = 0, small = 0, bytes_a = 0, bytes_b = 0;
	*one_word = 0;
	for (;; n++) {
		bool more = gt_capture_next(a, &ra);
		cr_assert_eq(gt_capture_next(b, &rb), more, "record %zu", n);
		if (!more)
			break;
		cr_assert_eq(ra.rec->nwords, rb.rec->nwords, "record %zu: %s", n, gt_fact_name(ra.rec->type));
		cr_assert_eq(memcmp(ra.rec, rb.rec, ra.rec->nwords * 8u), 0, "record %zu (%s) differs", n,
			     gt_fact_name(ra.rec->type));
		cr_assert_eq(ra.tsc, rb.tsc);
		cr_assert_eq(ra.cpu, rb.cpu);
		cr_assert_eq(gt_capture_file_bytes(a), ra.rec->nwords * 8u);
		small += gt_capture_file_bytes(b) < rb.rec->nwords * 8u;
		*one_word += gt_capture_file_bytes(b) == 8;
		near_mutex += gt_capture_file_bytes(b) == 16 && rb.rec->nwords == 5 &&
			      rb.rec->type == GT_BLOCK_BEGIN;
		fd_ref += gt_capture_file_bytes(b) == 16 && rb.rec->nwords == 5 &&
			  rb.rec->type == GT_SYSCALL_BEGIN;
		wake_one += gt_capture_file_bytes(b) == 8 && rb.rec->type == GT_WAKE;
		wake_unseen += gt_capture_file_bytes(b) == 16 && rb.rec->type == GT_WAKE &&
			       ((const struct gt_p_wake *)(rb.rec + 1))->count == GT_WAKE_UNSEEN;
		lock_two += gt_capture_file_bytes(b) == 16 &&
			    (rb.rec->type == GT_LOCK_ACQUIRE || rb.rec->type == GT_LOCK_RELEASE);
		bytes_a += gt_capture_file_bytes(a);
		bytes_b += gt_capture_file_bytes(b);
	}
	cr_expect_eq(small, *compact, "each compact record is delivered in full");
	struct gt_capture_stats sa, sb;
	gt_capture_stats(a, &sa);
	gt_capture_stats(b, &sb);
	cr_expect_eq(sb.bytes_garbage + sb.bytes_zero + sa.bytes_garbage + sa.bytes_zero, 0u);
	cr_expect_eq(sb.open_unknown, 0u);
	cr_expect_eq(sb.bytes_read, bytes_b);
	cr_expect_eq(sa.bytes_read, bytes_a);
	gt_capture_close(a);
	gt_capture_close(b);
	gt_cb_free(full);
	gt_cb_free(cb);
	return bytes_b;
}

static size_t read_same(uint32_t version, size_t *compact, size_t *one_word)
{
	return read_same_of(facts, version, compact, one_word);
}

Test(compact, records_read_as_the_full_ones)
{
	size_t c2, c3, one2, one3, n_full;
	char full_path[PATH_MAX];
	struct gt_cb *full = build(1, "full", full_path);
	gt_cb_image(full, &n_full);
	size_t bytes_full = 0;
	{
		char err[256];
		struct gt_capture *a = gt_capture_open(full_path, err, sizeof err);
		cr_assert_not_null(a, "%s", err);
		struct gt_capture_record r;
		while (gt_capture_next(a, &r))
			bytes_full += gt_capture_file_bytes(a);
		gt_capture_close(a);
	}
	gt_cb_free(full);
	near_mutex = fd_ref = wake_one = wake_unseen = 0;
	size_t bytes2 = read_same(2, &c2, &one2);
	cr_expect_eq(near_mutex + fd_ref, 0u, "version 2 has no two-word condition waits or calls");
	size_t bytes3 = read_same(3, &c3, &one3);
	/* i % 2 && !(i % 3): 50, of which 32 and 4 bytes (2 of 7, 14) and 1024 (7) keep the
	 * tail */
	cr_expect_eq(near_mutex, 50 - 14 - 7u, "%zu condition waits in two words", near_mutex);
	/* i odd, arg 5 (i % 6 == 3 or 5), i >= 100: after the FD record; but i % 6 == 5 has a
	 * stack past the compact field (full records): i % 6 == 3 from 105 to 297 */
	cr_expect_eq(fd_ref, 33u, "%zu system calls naming their descriptor", fd_ref);
	/* i % 4 == 0 without a stack (i % 3 == 0): i % 12 == 0 */
	cr_expect_eq(wake_one, 25u, "%zu one-word wakes", wake_one);
	/* i % 6 == 4 (stack 2) but obj past the field (i % 5 == 1: i % 30 == 16, 10 of 50);
	 * i % 6 == 5 has a stack past 2^16 (full records); none in version 2 */
	cr_expect_eq(wake_unseen, 40u, "%zu two-word unseen wakes", wake_unseen);
	/* most records fit, some do not (values past the fields, the long gap) */
	cr_expect_gt(c2, 1500u, "%zu compact records", c2);
	cr_expect_lt(c2, 3000u, "%zu compact records", c2);
	cr_expect_eq(one2, 0u, "version 2 has no one-word records");
	/* version 3: ends of open waits, small results, yields without a stack, thread ends */
	cr_expect_gt(one3, 700u, "%zu one-word records", one3);
	cr_expect_geq(c3, c2);
	/* mutex block 16 instead of 32, the pipe syscall's 24 instead of 40, ... */
	cr_expect_lt(bytes2 * 10, bytes_full * 8, "%zu bytes compact, %zu in full", bytes2, bytes_full);
	/* each saves a word or more against version 2 (76024 against 91184 bytes when written) */
	cr_expect_lt(bytes3 * 100, bytes2 * 87, "%zu bytes v3, %zu v2", bytes3, bytes2);
	cr_expect_eq(lock_two, 0u, "lock records are compact from version 4 only");
	size_t c4, one4;
	read_same(4, &c4, &one4);
	/* an acquisition fits two words with obj below 2^48 (i % 5 != 1), stack below 2^16
	 * (i % 4 != 3) and flags waited and try only (i % 11 < 4); a release with obj below
	 * 2^48; a chunk's first record and those of the long gap are full */
	size_t fit = 0;
	for (unsigned i = 0; i < 300; i++)
		fit += (i % 5 != 1 && i % 4 != 3 && i % 11 < 4) + (i % 5 != 1);
	cr_expect_leq(lock_two, fit, "%zu lock records in two words, %zu fit", lock_two, fit);
	cr_expect_gt(lock_two * 10, fit * 9, "%zu lock records in two words, %zu fit", lock_two, fit);
	cr_expect_eq(c4, c3 + lock_two, "%zu compact in v4, %zu in v3", c4, c3);
}

/* Version 3 keeps a long-lived chunk's records compact; version 2 only its first 2^32 ticks' */
Test(compact, late_records_stay_compact)
{
	size_t c2, c3, one2, one3;
	read_same_of(slow_facts, 2, &c2, &one2);
	read_same_of(slow_facts, 3, &c3, &one3);
	/* thread 1: its first two in 2^32 ticks; thread 2: its chunk's first is full, then two;
	 * thread 3: its first */
	cr_expect_eq(c2, 4 + 2 + 1u, "%zu compact records in version 2", c2);
	/* thread 1: all but its first past 2^31 ticks (then its last in the chunk is 2^31
	 * ticks away); thread 2: all but its chunk's first and its first past 2^31; thread 3:
	 * its first (then 3 * 2^30 apart) */
	cr_expect_eq(c3, 119 + 58 + 1u, "%zu compact records in version 3", c3);
}

/* One-word records a reader cannot take as they are: an end and a wake whose block is gone
 * (obj 0, counted), a form it does not know (garbage, skipped), one in a version 2 capture
 * (the same); what follows reads on and converts. */
Test(compact, one_word_records_it_cannot_resolve, .timeout = 120)
{
	const uint64_t obj = 0x7f0000001000ull;
	char path[PATH_MAX], trace[PATH_MAX], err[256];
	for (uint32_t version = 2; version <= 3; version++) {
		struct gt_cb *cb = gt_cb_new(1, 16384, T0);
		cr_assert_not_null(cb);
		gt_cb_set_compact(cb, true);
		uint64_t t = T0;
		gt_cb_clock(cb, 0, t, t);
		gt_cb_thread_existing(cb, 0, t, 1, 0, 0);
		uint64_t begin = gt_cb_block_begin(cb, 0, t += 100, 1, GT_BK_MUTEX, obj, 0);
		gt_cb_block_end(cb, 0, t += 100, 1, GT_BK_MUTEX, obj, GT_BR_OK);
		uint64_t yield = gt_cb_yield(cb, 0, t += 100, 1, 0);
		gt_cb_wake(cb, 0, t += 100, 1, GT_BK_MUTEX, obj, 1, 0); /* its last block's obj */
		gt_cb_syscall_begin(cb, 0, t += 100, 1, GT_FD_FILE, 7, 3, 0);
		gt_cb_syscall_end(cb, 0, t += 100, 1, 7, 1);
		gt_cb_capture_end(cb, 0, t += 100);
		cr_assert_eq(gt_cb_compact_records(cb), 6u); /* 2 + 1 + 1 + 1 + 2 + 1 words */
		snprintf(path, sizeof path, "%s/one-word-v%u.cap", test_tmpdir(), version);
		cr_assert_eq(gt_cb_write(cb, path), 0);
		gt_cb_free(cb);
		/* the begin never committed; the yield a form of no version; the syscall end as
		 * written, but version 2 has no one-word records */
		uint64_t unknown = gt_compact_word(GT_C_YIELD, 0, 1, 15) | 300ull << 32;
		cr_assert_eq(gt_cb_zero_range(path, begin, 16), 0);
		FILE *f = fopen(path, "r+b");
		cr_assert_not_null(f);
		cr_assert_eq(fseek(f, (long)yield, SEEK_SET), 0);
		cr_assert_eq(fwrite(&unknown, 8, 1, f), 1u);
		if (version == 2) {
			uint32_t v = 2;
			cr_assert_eq(fseek(f, offsetof(struct gt_file_header, version), SEEK_SET), 0);
			cr_assert_eq(fwrite(&v, 4, 1, f), 1u);
		}
		fclose(f);
		struct gt_capture *c = gt_capture_open(path, err, sizeof err);
		cr_assert_not_null(c, "%s", err);
		struct gt_capture_record r;
		uint64_t n[GT_FACT_COUNT] = {0}, end_obj = 1, wake_obj = 1;
		uint32_t end_nr = 99;
		while (gt_capture_next(c, &r)) {
			n[r.rec->type]++;
			if (r.rec->type == GT_BLOCK_END)
				end_obj = ((const struct gt_p_block_end *)r.payload)->obj;
			if (r.rec->type == GT_SYSCALL_END)
				end_nr = ((const struct gt_p_syscall_end *)r.payload)->nr;
			if (r.rec->type == GT_WAKE)
				wake_obj = ((const struct gt_p_wake *)r.payload)->obj;
		}
		struct gt_capture_stats st;
		gt_capture_stats(c, &st);
		gt_capture_close(c);
		cr_expect_eq(n[GT_BLOCK_BEGIN], 0u);
		cr_expect_eq(n[GT_YIELD], 0u);
		cr_expect_eq(st.bytes_zero, 16u);
		cr_expect_eq(n[GT_SYSCALL_BEGIN], 1u);
		cr_expect_eq(n[GT_CAPTURE_END], 1u);
		if (version == 3) {
			cr_expect_eq(n[GT_BLOCK_END], 1u);
			cr_expect_eq(end_obj, 0u, "the end of a wait the capture lost");
			cr_expect_eq(n[GT_SYSCALL_END], 1u);
			cr_expect_eq(end_nr, gt_syscall_canonical(GT_CB_ARCH, 7),
				     "the call the thread's begin opened");
			cr_expect_eq(n[GT_WAKE], 1u);
			cr_expect_eq(wake_obj, 0u, "a wake on the obj of a block the capture lost");
			cr_expect_eq(st.open_unknown, 2u);
			cr_expect_eq(st.bytes_garbage, 8u, "the unknown form");
		} else {
			cr_expect_eq(n[GT_BLOCK_END] + n[GT_SYSCALL_END] + n[GT_WAKE], 0u);
			cr_expect_eq(st.open_unknown, 0u);
			cr_expect_eq(st.bytes_garbage, 32u, "four one-word records");
		}
		struct gt_convert_summary sum;
		cr_assert_eq(convert_path(path, trace, &sum), 0);
		char *report = NULL;
		cr_assert_eq(gt_oracle_check(trace, false, &report), 0, "%s", report ? report : "");
		free(report);
	}
}

ParameterizedTestParameters(compact, versions_convert_to_the_same_trace)
{
	static uint32_t v[] = {2, 3};
	return cr_make_param_array(uint32_t, v, 2);
}

ParameterizedTest(uint32_t *version, compact, versions_convert_to_the_same_trace, .timeout = 120)
{
	char full_path[PATH_MAX], compact_path[PATH_MAX], ta[PATH_MAX], tb[PATH_MAX], name[32];
	snprintf(name, sizeof name, "same-v%u", *version);
	gt_cb_free(build(1, "same-full", full_path));
	gt_cb_free(build(*version, name, compact_path));
	struct gt_convert_summary sa, sb;
	cr_assert_eq(convert_path(full_path, ta, &sa), 0);
	cr_assert_eq(convert_path(compact_path, tb, &sb), 0);
	size_t la, lb;
	char *a = slurp(ta, &la), *b = slurp(tb, &lb);
	cr_expect_gt(la, 1000u);
	cr_assert_eq(la, lb, "%zu bytes from the full records, %zu from the compact ones", la, lb);
	cr_assert_eq(memcmp(a, b, la), 0, "the traces differ");
	free(a);
	free(b);
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(tb, false, &report), 0, "%s", report ? report : "");
	free(report);
}

/* Captures that main's libgotrace recorded (GOTRACE_CHUNK_SIZE=16384, GOTRACE_STACKS=fp,
 * bench/workload condvar|pipe 100): version 1 before compact records, version 2 before
 * one-word ones.  Their records by type and their zero words, as the recorder's own reader
 * read them, and a trace every Go reader accepts. */
struct fixture {
	char name[32];
	uint32_t version;
	uint64_t records, block_begin, wake, syscall_begin, bytes_zero, compact;
};

ParameterizedTestParameters(compact, earlier_captures_convert)
{
	static struct fixture f[] = {{"v1-condvar.gtcap", 1, 428, 133, 134, 0, 0, 0},
				     {"v1-pipe.gtcap", 1, 830, 0, 5, 400, 8, 0},
				     {"v2-condvar.gtcap", 2, 386, 119, 120, 0, 0, 358},
				     {"v2-pipe.gtcap", 2, 830, 0, 5, 400, 16, 800}};
	return cr_make_param_array(struct fixture, f, 4);
}

ParameterizedTest(struct fixture *f, compact, earlier_captures_convert, .timeout = 120)
{
	char path[PATH_MAX], err[256], trace[PATH_MAX];
	const char *dir = getenv("GT_ENCODER_FIXTURES");
	cr_assert_not_null(dir, "GT_ENCODER_FIXTURES (set by meson) names tests/encoder/fixtures");
	snprintf(path, sizeof path, "%s/%s", dir, f->name);
	struct gt_capture *c = gt_capture_open(path, err, sizeof err);
	cr_assert_not_null(c, "%s", err);
	cr_assert_eq(gt_capture_header(c)->version, f->version);
	struct gt_capture_record r;
	uint64_t n[GT_FACT_COUNT] = {0}, total = 0, compact = 0;
	while (gt_capture_next(c, &r)) {
		cr_assert_lt(r.rec->type, GT_FACT_COUNT);
		n[r.rec->type]++;
		total++;
		cr_assert_geq(gt_capture_file_bytes(c), 16u, "no one-word records before version 3");
		compact += gt_capture_file_bytes(c) < r.rec->nwords * 8u;
	}
	struct gt_capture_stats st;
	gt_capture_stats(c, &st);
	gt_capture_close(c);
	cr_expect_eq(st.bytes_garbage, 0u);
	cr_expect_eq(st.bytes_zero, f->bytes_zero);
	cr_expect_eq(total, f->records);
	cr_expect_eq(compact, f->compact);
	cr_expect_eq(n[GT_BLOCK_BEGIN], f->block_begin);
	cr_expect_eq(n[GT_WAKE], f->wake);
	cr_expect_eq(n[GT_SYSCALL_BEGIN], f->syscall_begin);
	/* a copy: the conversion writes its trace next to the capture */
	char copy[PATH_MAX];
	snprintf(copy, sizeof copy, "%s/%s", test_tmpdir(), f->name);
	size_t len;
	char *bytes = slurp(path, &len);
	FILE *o = fopen(copy, "wb");
	cr_assert_not_null(o);
	cr_assert_eq(fwrite(bytes, 1, len, o), len);
	fclose(o);
	free(bytes);
	struct gt_convert_summary sum;
	cr_assert_eq(convert_path(copy, trace, &sum), 0);
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace, false, &report), 0, "%s", report ? report : "");
	free(report);
}

/* Past 2^20 threads a serial does not fit in a compact record's field (bits 8-27): the
 * recorder (and the builder, which writes compact only what expands back exactly) writes
 * that thread's records in full.  Thread 2^20 + 2 takes the same mutex as thread 2, whose
 * serial its low bits are, in the same chunks, each with a block, a wake and an end. */
static const uint32_t past_serials = GT_C_THREAD_MAX + 2;

static void serial_facts(struct gt_cb *cb)
{
	const uint64_t pcs[] = {0x401000};
	const uint64_t obj = 0x7f0000001000ull;
	uint64_t t = T0;
	gt_cb_clock(cb, 0, t, t);
	gt_cb_thread_existing(cb, 0, t, 1, 0, 0);
	gt_cb_stack(cb, 0, t, 1, pcs, 1);
	gt_cb_thread_new(cb, 0, t += 100, 1, 2, 1, 0x401500);
	gt_cb_thread_new(cb, 0, t += 100, 1, past_serials, 1, 0x401600);
	gt_cb_thread_start(cb, 1, t += 100, 2, 1002, 0x401500);
	gt_cb_thread_start(cb, 0, t += 100, past_serials, 1003, 0x401600);
	for (unsigned i = 0; i < 40; i++) {
		uint32_t waiter = i % 2 ? 2 : past_serials, waker = i % 2 ? past_serials : 2;
		gt_cb_block_begin(cb, 0, t += 1000, waiter, GT_BK_MUTEX, obj, 1);
		gt_cb_wake(cb, 1, t += 10, waker, GT_BK_MUTEX, obj, 1, 0);
		gt_cb_block_end(cb, 0, t += 10, waiter, GT_BK_MUTEX, obj, GT_BR_OK);
	}
	gt_cb_thread_end(cb, 0, t += 100, past_serials);
	gt_cb_thread_end(cb, 1, t += 100, 2);
	gt_cb_capture_end(cb, 0, t += 100);
}

Test(compact, serials_past_the_compact_field_stay_apart)
{
	size_t compact, one_word;
	/* read back record by record as the full capture's: no serial taken for another */
	read_same_of(serial_facts, 3, &compact, &one_word);
	/* thread 2's 60 records compact, 2^20 + 2's in full; its thread end too */
	cr_expect_eq(compact, 60u + 1u, "%zu compact records", compact);
	char path[PATH_MAX], trace[PATH_MAX];
	struct gt_cb *cb = build_with(serial_facts, 3, "past-serials", path);
	struct gt_convert_summary sum;
	cr_assert_eq(convert_builder(cb, "past-serials", trace, &sum, 0), 0);
	cr_expect_eq(sum.model.threads, 3u);
	struct gt_events *ev = gt_events_parse_119(trace);
	cr_assert_not_null(ev, "Go 1.19 rejects the trace");
	/* each thread's 20 waits, each unblocked by the other one */
	cr_expect_eq(count19(ev, "GoBlockSync"), 40u);
	cr_expect_eq(count19(ev, "GoUnblock"), 40u);
	gt_events_free(ev);
	gt_cb_free(cb);
}
