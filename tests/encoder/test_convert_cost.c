/* Conversion time grows with the facts, not with the program's shape (issue 27, item 7): what
 * the model reads ahead of the fact it models (the lookahead: up to 4095 records), counted
 * as the summary's lookahead_read, stays a few records per fact where each fact asks a
 * question whose answer lies beyond the lookahead. */
#include <criterion/criterion.h>
#include <limits.h>
#include <sys/syscall.h>

#include "test_util.h"

#define T0 1000000ull
#define SLEEPERS 100u
#define ROUNDS 4u
#define BUSY_FACTS 50u          /* main's facts between two sleepers' waits */
#define COND_BASE 0x7f0000100000ull
#define MUTEX_BASE 0x7f0000200000ull

/* sleeper's (serial 2 + i) timed condition wait on a condition variable and mutex of its own
 * that nobody signals (a database server's idle threads), the block naming the mutex */
static void timed_wait(struct gt_cb *cb, uint64_t t, uint32_t i)
{
	struct {
		struct gt_p_block b;
		struct gt_p_block_mutex m;
	} p = {{.obj = COND_BASE + 64 * i, .stack = 1}, {.mutex = MUTEX_BASE + 64 * i}};
	cr_assert(gt_cb_record(cb, 1, GT_BLOCK_BEGIN, GT_BK_COND, 2 + i, t, &p, sizeof p));
}

/* Each of SLEEPERS threads waits ROUNDS times until its timeout, while main makes
 * BUSY_FACTS short system calls' facts between two of their waits: a sleeper's next fact is
 * SLEEPERS * BUSY_FACTS records after its block, beyond the lookahead. */
static struct gt_cb *sleepers(void)
{
	const uint64_t pcs[] = {0x401000, 0x401100};
	struct gt_cb *cb = gt_cb_new(2, 1u << 20, T0);
	cr_assert_not_null(cb);
	uint64_t t = T0;
	gt_cb_clock(cb, 0, t, t);
	gt_cb_stack(cb, 0, t, 1, pcs, 2);
	gt_cb_thread_existing(cb, 0, t, 1, 0, 0);
	for (uint32_t i = 0; i < SLEEPERS; i++)
		gt_cb_thread_existing(cb, 1, t += 10, 2 + i, 0, 0x401500);
	for (uint32_t round = 0; round < ROUNDS; round++) {
		for (uint32_t i = 0; i < SLEEPERS; i++) {
			if (round)
				gt_cb_block_end(cb, 1, t += 10, 2 + i, GT_BK_COND, COND_BASE + 64 * i,
						GT_BR_TIMEOUT);
			timed_wait(cb, t += 10, i);
			for (uint32_t k = 0; k < BUSY_FACTS / 2; k++) {
				gt_cb_syscall_begin(cb, 0, t += 10, 1, GT_FD_FILE, SYS_getpid, 0, 1);
				gt_cb_syscall_end(cb, 0, t += 10, 1, SYS_getpid, 1);
			}
		}
	}
	for (uint32_t i = 0; i < SLEEPERS; i++)
		gt_cb_block_end(cb, 1, t += 10, 2 + i, GT_BK_COND, COND_BASE + 64 * i, GT_BR_TIMEOUT);
	gt_cb_capture_end(cb, 0, t += 10);
	return cb;
}

Test(convert_cost, long_condition_waits_read_the_lookahead_once)
{
	struct gt_cb *cb = sleepers();
	char trace[PATH_MAX];
	struct gt_convert_summary sum;
	cr_assert_eq(convert_builder(cb, "sleepers", trace, &sum, 0), 0);
	gt_cb_free(cb);
	uint64_t facts = sum.model.facts;
	cr_assert_geq(facts, SLEEPERS * ROUNDS * (BUSY_FACTS + 2), "%lu facts",
		      (unsigned long)facts);
	/* each condition wait asked whether a waiter on its mutex blocks before its next
	 * fact: read in full, 4095 records per wait, 400 waits (1.6 M records); read once as
	 * the lookahead fills, about one record per fact */
	cr_expect_leq(sum.lookahead_read, 4 * facts, "%lu records read ahead for %lu facts",
		      (unsigned long)sum.lookahead_read, (unsigned long)facts);
	/* every wait drawn, and ended by its timeout ([timeout], no waker) */
	cr_expect_eq(sum.model.unknown_wakeups, SLEEPERS * ROUNDS);
	cr_expect_eq(sum.model.wakes_matched, 0u, "nobody signals a sleeper");
}
