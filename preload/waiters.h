/* The waiter table (waiters.c): objects some hooked thread is blocked on right now, and per
 * kind of block and bucket of objects the count of threads blocked inside hooks. */
#ifndef GT_WAITERS_H
#define GT_WAITERS_H

#include "fastpath.h"

#define GT_WAITER_SLOTS 1024u
#define GT_WAITER_PROBES 8u

/* An object as the table's words hold it, above their 16 low bits: an address as it is (under
 * 2^48); a kernel key (GT_OBJ_KERNEL, bit 62: a process-shared object) with its top 16 bits
 * folded into the 48 (kept whole, they made its words never match: 8 waits, then every
 * wait lost).  Two objects may share a key: a release then writes a wake nobody takes. */
GT_INLINE uint64_t gt_waiter_key(uint64_t obj)
{
	return (obj ^ (obj >> 48) * 0x9E3779B97F4Aull) & ((1ull << 48) - 1);
}

/* an object's first slot in the table */
GT_INLINE unsigned gt_waiter_home(uint64_t obj)
{
	return (unsigned)((obj >> 3) * 0x9E3779B97F4A7C15ull >> 54) & (GT_WAITER_SLOTS - 1);
}

/* Per gt_block_kind and bucket of objects (gt_blocked_word): threads now blocked inside
 * hooks on an object of that bucket (low 32 bits) and their registrations so far (high 32
 * bits, wrapping).  A release checks the waiter table only when its object's bucket has
 * blocked threads, so an uncontended release costs a relaxed load before the real call and
 * one after it, whatever threads are blocked on objects of other buckets: a changed word
 * means a waiter registered in between (and may be gone).  An object is always in the same
 * bucket, so its registrations are numbered by its bucket's count. */
#define GT_BLOCKED_BUCKET_BITS 8
#define GT_BLOCKED_BUCKETS (1u << GT_BLOCKED_BUCKET_BITS)
extern _Atomic uint64_t gt_n_blocked[GT_BK_COUNT][GT_BLOCKED_BUCKETS] GT_HIDDEN;
#define GT_REGISTERED (1ull << 32)
/* The top bits of the low half of the object times the golden ratio: one 32-bit multiply with
 * its constant inside (a 64-bit one costs every release an instruction more); objects that
 * differ only above their lowest 4 GiB share a bucket.  tests/e2e/targets/order.c repeats it
 * (window-unlock-bucket). */
GT_INLINE _Atomic uint64_t *gt_blocked_word(uint8_t kind, uint64_t obj)
{
	_Atomic uint64_t *row = gt_n_blocked[kind]; /* apart: GCC 12 then adds no instruction */
	return row + ((uint32_t)obj * 0x9E3779B9u >> (32 - GT_BLOCKED_BUCKET_BITS));
}
GT_INLINE uint32_t gt_blocked(uint8_t kind, uint64_t obj)
{
	return (uint32_t)gt_load(gt_blocked_word(kind, obj));
}

int gt_waiters_add(uint64_t obj) GT_HIDDEN; /* its slot + 1, 0 when the table is full */
void gt_waiters_remove(uint64_t obj) GT_HIDDEN;
int gt_waiters_has(uint64_t obj) GT_HIDDEN;
/* For a release that loaded its object's word (gt_blocked_word) as before, ahead of the real
 * call: the tsc a waiter took right after registering on obj since then (it may have resumed
 * and gone already), or 0 when its slot has taken another's registration since.  The tsc
 * comes after that waiter's block began, before its resume, and after every fact the
 * releaser wrote before it loaded the word.  now: a time near the registration (days,
 * not weeks), from which its full tsc is rebuilt. */
uint64_t gt_waiters_registered_since(uint64_t obj, uint8_t kind, uint64_t before,
				     uint64_t now) GT_HIDDEN;
void gt_waiters_reset(void) GT_HIDDEN;

/* ---- the table itself, for gt_waiters_stamp ---- */
/* by slot, the latest registration in it: (gt_waiter_key(obj) << 16 | kind << 12 | bits 0-11
 * of its bucket's registration count before it), and the tsc taken right after it, tagged
 * with bits 12-23 of that count in its top 12 bits.  The tagged tsc is stored first: a reader that sees a
 * registration sees its time (a preempted writer once paired a new registration with a time
 * 25 ms old, before the releaser's own previous facts), and the 24 bits together tell a
 * registration since `before` from one 2048 registrations older. */
extern _Atomic uint64_t gt_waiter_last[GT_WAITER_SLOTS] GT_HIDDEN;
extern _Atomic uint64_t gt_waiter_tsc[GT_WAITER_SLOTS] GT_HIDDEN;
#define GT_TSC_TAG_SHIFT 52
#define GT_TSC_UNTAGGED ((1ull << GT_TSC_TAG_SHIFT) - 1)

/* A registration in slot (its index + 1; 0: the table was full) as its bucket's seq-th, on obj:
 * which one, and a time after the block began and after the registration, visible before the
 * waiter's next try, which precedes the release that lets it in
 * (gt_waiters_registered_since).  Inline: a blocking hook takes it at its own depth. */
GT_INLINE void gt_waiters_stamp(int slot, uint64_t obj, uint8_t kind, uint64_t seq)
{
	unsigned cpu, h = slot ? (unsigned)slot - 1 : gt_waiter_home(obj);
	uint64_t tag = (seq >> 12 & 0xfff) << GT_TSC_TAG_SHIFT;
	atomic_store_explicit(&gt_waiter_tsc[h], tag | (gt_now(&cpu) & GT_TSC_UNTAGGED),
			      memory_order_release);
	atomic_store_explicit(&gt_waiter_last[h],
			      gt_waiter_key(obj) << 16 | (uint64_t)(kind & 0xf) << 12 | (seq & 0xfff),
			      memory_order_release);
}

#endif
