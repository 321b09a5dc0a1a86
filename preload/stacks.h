/* Call stacks (stacks.c): captured, trimmed of the tracer's frames, deduplicated, written
 * once as GT_STACK records; facts carry the id. */
#ifndef GT_STACKS_H
#define GT_STACKS_H

#include "fastpath.h"

extern uint32_t gt_stack_mode GT_HIDDEN;
/* own_frames: the tracer's frames between the stack walk and the hook's caller, counting
 * gt_stack_id_slow or gt_stack_id_unwind (a hook calling gt_stack_id directly has 2, a
 * gt_fact_* function 3).  A low estimate costs a second walk, never a frame; at most
 * GT_STACK_OWN_MAX are trimmed. */
#define GT_STACK_OWN_MAX 16u
#define GT_OWN_FRAMES_HOOK 2u
#define GT_OWN_FRAMES_FACT 3u
uint32_t gt_stack_id_slow(struct gt_tls *t, unsigned own_frames) GT_HIDDEN GT_NOINLINE;
uint32_t gt_stack_id_unwind(struct gt_tls *t, unsigned own_frames) GT_HIDDEN GT_NOINLINE;
GT_INLINE uint32_t gt_stack_id(struct gt_tls *t, unsigned own_frames)
{
	if (GT_LIKELY(gt_stack_mode == GT_STACKS_UNWIND)) /* the default, called directly */
		return gt_stack_id_unwind(t, own_frames);
	if (gt_stack_mode == GT_STACKS_NONE)
		return 0;
	return gt_stack_id_slow(t, own_frames);
}
void gt_stacks_reset(void) GT_HIDDEN;
/* pc lies in the libunwind we opened (its validation pipe: hooks_io.c) */
int gt_from_libunwind(void *pc) GT_HIDDEN;
/* pc lies in libgotrace.so or in that libunwind: a hooked call from there is the tracer's */
int gt_tracer_pc(uintptr_t pc) GT_HIDDEN;
void gt_stacks_setup(void) GT_HIDDEN;
/* len bytes at p, an argument of the program's, can be read without a fault (a system call
 * when they are not on the thread's stack) */
int gt_readable(const void *p, size_t len) GT_HIDDEN;
/* the kernel can read the byte at addr (one system call; hooks_io.c) */
int gt_kernel_reads(uintptr_t addr) GT_HIDDEN;
/* GOTRACE_STACK_CHECK's outcome, one line on stderr */
void gt_stacks_check_say(void) GT_HIDDEN;

/* A jump (siglongjmp) to the frame whose stack pointer is to_sp leaves the frame at frame_sp:
 * the jump's target lies above it on the same stack, or the frame is on a stack the target is
 * not (the tracer's walk stack, the alternate signal stack) */
int gt_jump_leaves(uintptr_t frame_sp, uintptr_t to_sp) GT_HIDDEN;
/* a jump left the tracer's work on this thread: the walk stacks it holds are given back, the
 * one it may run on now at its next walk or its end (gt_walks_give_left) */
void gt_walks_left(void) GT_HIDDEN;
void gt_walks_give_left(void) GT_HIDDEN;

/* Work that needs more of a stack than a hook may borrow from the program's (at most 512
 * bytes more than the untraced call) runs on the tracer's walk stacks.
 * gt_offstack: fn(a, b, c) there (on the program's stack when none can be had), signals
 * held back when masked (fn may take the tracer's locks) or when called on the alternate
 * stack; fn's result, to be cast back. */
uintptr_t gt_offstack(int masked, void *fn, uintptr_t a, uintptr_t b, uintptr_t c) GT_HIDDEN;
/* GT_SCRATCH_BYTES of the tracer's memory for a hook's large locals (a child's environment)
 * until given back; NULL when none can be had */
#define GT_SCRATCH_BYTES (20u << 10)
void *gt_scratch_take(void) GT_HIDDEN;
/* [lo, hi) overlaps the tracer's stack memory: the stack table, a walk stack, libunwind */
int gt_stacks_own(uintptr_t lo, uintptr_t hi) GT_HIDDEN;
void gt_scratch_give(void *mem) GT_HIDDEN;

#endif
