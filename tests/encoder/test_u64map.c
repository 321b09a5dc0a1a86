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
