/* The memo of a walk stack's last walks (stacks.c): made again cheaply when the words of
 * memory that decided their frames are unchanged (frame_rules.h, struct gt_walk_words).  The
 * walk stack's holder alone reads and writes them. */
#ifndef GT_WALK_MEMO_H
#define GT_WALK_MEMO_H

#include "frame_rules.h"

#include <stdatomic.h>

/* The last walks made by the rules on a walk stack, made again cheaply (a memo): a thread's
 * next call from the same place usually has the same stack, and the same words of memory
 * that its walk read give the same frames (frame_rules.h).  Two ways per set of the hook's
 * frame record; frame is written last (NULL while the rest is: a handler may jump out). */
#define GT_MEMO_SETS 8u
#define GT_MEMO_WAYS 2u
struct gt_walk_memo {
	const uintptr_t *frame;
	uint32_t id;
	struct gt_walk_words words;
};
struct gt_memo_set {
	struct gt_walk_memo way[GT_MEMO_WAYS];
	unsigned next; /* the way a new walk replaces: the one not used last */
};
/* the walk stacks' mappings hold their memos above the stack */
#define GT_MEMO_BYTES (((sizeof(struct gt_memo_set) * GT_MEMO_SETS) + 4095) & ~(size_t)4095)

/* the set of a walk from frame record frame: a hash of it and its return address */
GT_INLINE struct gt_memo_set *gt_memo_set_of(struct gt_memo_set *sets, const uintptr_t *frame)
{
	GT_STATIC_ASSERT(GT_MEMO_SETS == 8, "three bits of the hash choose the set");
	uint64_t h = ((uintptr_t)frame ^ frame[1]) * 0x9E3779B97F4A7C15ull;
	return &sets[h >> 61];
}

/* the stack's id when the walk from frame is the one m kept: its words are unchanged */
GT_INLINE uint32_t gt_memo_id(const struct gt_walk_memo *m, const uintptr_t *frame)
{
	if (m->frame != frame || m->words.gen != gt_frame_rules_gen())
		return 0;
	for (unsigned k = 0; k < m->words.n; k++)
		if (*m->words.at[k] != m->words.val[k])
			return 0;
	return m->id;
}

/* the id a way of set keeps for the walk from frame (0: none); the other way is replaced next */
GT_INLINE uint32_t gt_memo_find(struct gt_memo_set *set, const uintptr_t *frame)
{
	for (unsigned i = 0; i < GT_MEMO_WAYS; i++) {
		uint32_t id = gt_memo_id(&set->way[i], frame);
		if (id) {
			set->next = i ^ 1;
			return id;
		}
	}
	return 0;
}

/* the way of set a new walk replaces, emptied for its words (the walk writes them there) */
GT_INLINE struct gt_walk_memo *gt_memo_replaced(struct gt_memo_set *set)
{
	struct gt_walk_memo *m = &set->way[set->next];
	m->frame = NULL;
	atomic_signal_fence(memory_order_seq_cst);
	return m;
}

/* the walk from frame, whose words m (a way of set) holds, has the stack id; the set's other
 * way goes next */
GT_INLINE void gt_memo_keep(struct gt_memo_set *set, struct gt_walk_memo *m,
			    const uintptr_t *frame, uint32_t id)
{
	m->id = id;
	atomic_signal_fence(memory_order_seq_cst);
	m->frame = frame;
	set->next ^= 1;
}

#endif
