/* u64map: the map behind every table keyed by ids read from a file (threads, stacks,
 * goroutines, Ps, start routines, user tasks). */
#include "common/u64map.h"

#include <criterion/criterion.h>

Test(u64map, holds_any_key_and_finds_what_it_holds)
{
	struct gt_u64map m = { 0 };
	bool found;
	/* 0 and UINT64_MAX are keys like the others */
	static const uint64_t edge[] = { 0, 1, UINT64_MAX, 1ull << 63 };
	for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
		cr_assert_null(gt_u64map_find(&m, edge[i]));
		uint64_t *v = gt_u64map_slot(&m, edge[i], &found);
		cr_assert(v != NULL && !found && *v == 0);
		*v = i + 100;
	}
	/* enough keys to grow the table several times, spread like hostile ids */
	for (uint64_t k = 2; k < 100000; k++)
		*gt_u64map_slot(&m, k * 0x10001, &found) = k;
	for (size_t i = 0; i < sizeof edge / sizeof edge[0]; i++) {
		uint64_t *v = gt_u64map_slot(&m, edge[i], &found);
		cr_assert(found);
		cr_assert_eq(*v, i + 100);
		cr_assert_eq(gt_u64map_find(&m, edge[i]), v);
	}
	for (uint64_t k = 2; k < 100000; k++)
		cr_assert_eq(*gt_u64map_find(&m, k * 0x10001), k);
	cr_assert_null(gt_u64map_find(&m, 0x10001ull * 100000));
	cr_assert_lt(m.cap, 4 * 131072, "the table grew past twice what it holds");
	gt_u64map_free(&m);
	cr_assert_null(gt_u64map_find(&m, 1));
	cr_assert_null(gt_u64map_find(&m, 0));
}

/* Keys that come and go (threads that end): what stays is found, what went is not, and the
 * table holds no more than the most keys it held at once. */
Test(u64map, removes_keys_and_finds_the_others)
{
	struct gt_u64map m = { 0 };
	bool found;
	cr_assert_not(gt_u64map_remove(&m, 7), "nothing to remove from an empty map");
	/* runs of colliding keys: removal must move the later keys of a run, not cut it */
	for (uint64_t round = 0; round < 50; round++) {
		for (uint64_t k = 0; k < 1000; k++)
			*gt_u64map_slot(&m, round * 1000 + k, &found) = round * 1000 + k + 1;
		/* keep every third key of the round, remove the rest */
		for (uint64_t k = 0; k < 1000; k++)
			if (k % 3)
				cr_assert(gt_u64map_remove(&m, round * 1000 + k));
	}
	for (uint64_t key = 0; key < 50000; key++) {
		const uint64_t *v = gt_u64map_find(&m, key);
		if (key % 1000 % 3) {
			cr_assert_null(v, "key %lu was removed", (unsigned long)key);
		} else {
			cr_assert_not_null(v, "key %lu was kept", (unsigned long)key);
			cr_assert_eq(*v, key + 1);
		}
	}
	cr_assert_eq(m.n, 50u * 334u - 1u, "key 0 lives apart: %zu", m.n);
	cr_assert_leq(m.cap, 65536u, "the table grew with every key ever held: %zu", m.cap);
	cr_assert_not(gt_u64map_remove(&m, 1));
	cr_assert(gt_u64map_remove(&m, 0));
	cr_assert_null(gt_u64map_find(&m, 0));
	gt_u64map_free(&m);
}

Test(u64map, holds_a_set_of_numbers_as_bits)
{
	struct gt_u64map m = { 0 };
	for (uint64_t n = 0; n < 100000; n += 7)
		cr_assert(gt_u64map_set_bit(&m, n));
	for (uint64_t n = 0; n < 100000; n++)
		cr_assert_eq(gt_u64map_bit(&m, n), n % 7 == 0, "%lu", (unsigned long)n);
	cr_assert_leq(m.n, 100000u / 64 + 1, "64 numbers to an entry");
	gt_u64map_free(&m);
}
