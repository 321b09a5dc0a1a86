/* Unwind rules per return address and the walk made with them (frame_rules.c). */
#ifndef GT_FRAME_RULES_H
#define GT_FRAME_RULES_H

#include "fastpath.h"

#define GT_WALK_MISSING (-1)   /* a rule not known yet: *missing, to learn */
#define GT_WALK_LIBUNWIND (-2) /* a frame only libunwind steps: it walks the stack */
/* The words of memory a walk's frames depend on: each return address, and the saved frame
 * pointers a CFA was found from.  The same words at the same places give the same walk; each
 * is one the walk read, in the order it read them, so that checking them one by one reads
 * only where the walk would, up to the first that differs.  n is 0 when the walk cannot be
 * made again from them (a signal frame, a depth above GT_WALK_WORDS_FRAMES). */
#define GT_WALK_WORDS_FRAMES 32u
#define GT_WALK_WORDS (2 * GT_WALK_WORDS_FRAMES + 1)
struct gt_walk_words {
	unsigned n;
	uint64_t gen; /* the rules' generation the walk used */
	const uintptr_t *at[GT_WALK_WORDS];
	uintptr_t val[GT_WALK_WORDS];
};
/* The return addresses from the hook's frame record on (frame: saved rbp, return address),
 * at most depth, into pcs, as libunwind's fast path finds them: their number, or one of
 * the above; into words (when not NULL), what they depend on.  No lock, no system call,
 * nothing written but pcs and words. */
int gt_frame_rules_walk(const uintptr_t *frame, unsigned depth, uintptr_t *pcs,
			struct gt_walk_words *words, uintptr_t *missing) GT_HIDDEN;
/* the rules' generation: a walk's words stand for it while it stays (no dlclose since) */
extern _Atomic uint64_t gt_rules_gen GT_HIDDEN;
GT_INLINE uint64_t gt_frame_rules_gen(void) { return gt_load(&gt_rules_gen); }
/* Finds and keeps pc's rule (the loader's lock: on a walk stack, signals held back); 0
 * when it could not be kept (its slots in the table are full) */
uintptr_t gt_frame_rule_learn(uintptr_t pc) GT_HIDDEN;
/* after a dlclose: rules learned before are not used again */
void gt_frame_rules_forget(void) GT_HIDDEN;
/* [lo, hi) overlaps the rule table */
int gt_frame_rules_own(uintptr_t lo, uintptr_t hi) GT_HIDDEN;
void gt_frame_rules_setup(void) GT_HIDDEN;

#endif
