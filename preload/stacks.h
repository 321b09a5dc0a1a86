/* Call stacks (stacks.c): captured, trimmed of the tracer's frames, deduplicated, written
 * once as GT_STACK records; facts carry the id. */
#ifndef GT_STACKS_H
#define GT_STACKS_H

#include "fastpath.h"

extern uint32_t gt_stack_mode GT_HIDDEN;
/* own_frames: the tracer's frames between the stack walk and the hook's caller, counting
 * gt_stack_id_slow (a hook calling gt_stack_id directly has 2, a gt_fact_* function 3).  A
 * low estimate costs a second walk, never a frame; at most GT_STACK_OWN_MAX are trimmed. */
#define GT_STACK_OWN_MAX 16u
#define GT_OWN_FRAMES_HOOK 2u
#define GT_OWN_FRAMES_FACT 3u
uint32_t gt_stack_id_slow(struct gt_tls *t, unsigned own_frames) GT_HIDDEN GT_NOINLINE;
GT_INLINE uint32_t gt_stack_id(struct gt_tls *t, unsigned own_frames)
{
	if (gt_stack_mode == GT_STACKS_NONE)
		return 0;
	return gt_stack_id_slow(t, own_frames);
}
void gt_stacks_reset(void) GT_HIDDEN;
/* pc lies in the libunwind we opened (its validation pipe: hooks_io.c) */
int gt_from_libunwind(void *pc) GT_HIDDEN;
void gt_stacks_setup(void) GT_HIDDEN;

#endif
