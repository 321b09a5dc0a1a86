/* Unwind rules per return address and the walk made with them (frame_rules.c). */
#ifndef GT_FRAME_RULES_H
#define GT_FRAME_RULES_H

#include "fastpath.h"

#define GT_WALK_MISSING (-1)   /* a rule not known yet: *missing, to learn */
#define GT_WALK_LIBUNWIND (-2) /* a frame only libunwind steps: it walks the stack */
/* The return addresses from the hook's frame record on (frame: saved rbp, return address),
 * at most depth, into pcs, as libunwind's fast path finds them: their number, or one of
 * the above.  No lock, no system call, nothing written but pcs. */
int gt_frame_rules_walk(const uintptr_t *frame, unsigned depth, uintptr_t *pcs,
			uintptr_t *missing) GT_HIDDEN;
/* Finds and keeps pc's rule (the loader's lock: on a walk stack, signals held back); 0
 * when it could not be kept (its slots in the table are full) */
uintptr_t gt_frame_rule_learn(uintptr_t pc) GT_HIDDEN;
/* after a dlclose: rules learned before are not used again */
void gt_frame_rules_forget(void) GT_HIDDEN;
/* [lo, hi) overlaps the rule table */
int gt_frame_rules_own(uintptr_t lo, uintptr_t hi) GT_HIDDEN;
void gt_frame_rules_setup(void) GT_HIDDEN;

#endif
