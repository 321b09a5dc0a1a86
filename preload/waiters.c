/* The waiter table: objects some hooked thread is blocked on right now, so that a release
 * writes a WAKE only when a thread waits.  1024 words, each (object key << 16 | number of
 * threads blocked on it; gt_waiter_key).  A word whose count is zero is free for any
 * object; an object may own several words (a race between two first waiters), so lookups
 * scan the whole probe window. */
#include "waiters.h"

_Atomic uint64_t gt_n_blocked[GT_BK_COUNT][GT_BLOCKED_BUCKETS];
static _Atomic uint64_t gt_waiters[GT_WAITER_SLOTS];
_Atomic uint64_t gt_waiter_last[GT_WAITER_SLOTS], gt_waiter_tsc[GT_WAITER_SLOTS];

int gt_waiters_add(uint64_t obj)
{
	unsigned home = gt_waiter_home(obj);
	uint64_t key = gt_waiter_key(obj);
	for (int pass = 0; pass < 2; pass++) {
		for (unsigned i = 0; i < GT_WAITER_PROBES; i++) {
			_Atomic uint64_t *s = &gt_waiters[(home + i) & (GT_WAITER_SLOTS - 1)];
			uint64_t w = gt_load(s);
			for (;;) {
				uint64_t count = w & 0xffff;
				int mine = (w >> 16) == key && count && count < 0xffff;
				int free_slot = pass == 1 && !count;
				if (!mine && !free_slot)
					break;
				uint64_t nw = mine ? w + 1 : (key << 16 | 1);
				if (atomic_compare_exchange_weak(s, &w, nw))
					return (int)((home + i) & (GT_WAITER_SLOTS - 1)) + 1;
			}
		}
	}
	return 0;
}

void gt_waiters_remove(uint64_t obj)
{
	unsigned home = gt_waiter_home(obj);
	uint64_t key = gt_waiter_key(obj);
	for (unsigned i = 0; i < GT_WAITER_PROBES; i++) {
		_Atomic uint64_t *s = &gt_waiters[(home + i) & (GT_WAITER_SLOTS - 1)];
		uint64_t w = gt_load(s);
		while ((w >> 16) == key && (w & 0xffff)) {
			if (atomic_compare_exchange_weak(s, &w, w - 1))
				return;
		}
	}
}

int gt_waiters_has(uint64_t obj)
{
	unsigned home = gt_waiter_home(obj);
	uint64_t key = gt_waiter_key(obj);
	for (unsigned i = 0; i < GT_WAITER_PROBES; i++) {
		uint64_t w = gt_load(&gt_waiters[(home + i) & (GT_WAITER_SLOTS - 1)]);
		if ((w >> 16) == key && (w & 0xffff))
			return 1;
	}
	return 0;
}

uint64_t gt_waiters_registered_since(uint64_t obj, uint8_t kind, uint64_t before, uint64_t now)
{
	unsigned home = gt_waiter_home(obj);
	uint64_t key = gt_waiter_key(obj);
	uint32_t since = (uint32_t)(before >> 32) & 0xffffff;
	for (unsigned i = 0; i < GT_WAITER_PROBES; i++) {
		unsigned h = (home + i) & (GT_WAITER_SLOTS - 1);
		uint64_t last = atomic_load_explicit(&gt_waiter_last[h], memory_order_acquire);
		uint64_t tsc = atomic_load_explicit(&gt_waiter_tsc[h], memory_order_acquire);
		/* read again: another registration in this slot between the two loads is a miss */
		if (gt_load(&gt_waiter_last[h]) != last || last >> 16 != key || (last >> 12 & 0xf) != kind)
			continue;
		uint32_t seq = (uint32_t)(tsc >> GT_TSC_TAG_SHIFT) << 12 | (uint32_t)(last & 0xfff);
		if (((seq - since) & 0xffffff) >= 0x800000)
			continue;
		/* the full time, from its distance to now (under 2^51 ticks either way) */
		uint64_t d = (tsc - now) & GT_TSC_UNTAGGED;
		return now + d - (d >> (GT_TSC_TAG_SHIFT - 1) << GT_TSC_TAG_SHIFT);
	}
	return 0;
}

void gt_waiters_reset(void)
{
	for (unsigned i = 0; i < GT_WAITER_SLOTS; i++) {
		gt_store(&gt_waiters[i], 0);
		gt_store(&gt_waiter_last[i], 0);
		gt_store(&gt_waiter_tsc[i], 0);
	}
	for (unsigned k = 0; k < GT_BK_COUNT; k++)
		for (unsigned b = 0; b < GT_BLOCKED_BUCKETS; b++)
			gt_store(&gt_n_blocked[k][b], 0);
}
