/* Jumps out of signal handlers: siglongjmp, longjmp and their aliases.
 *
 * A handler that jumps (a timeout in an interpreter or a server) never returns into the code
 * it interrupted.  When that code is the tracer's work on the thread (busy), the work is
 * left: busy is cleared, its walk stacks are given back, a waiter registration it made is
 * undone; otherwise every later hook of the thread would pass straight through.  When it is
 * a hooked call's real call (pending), the call ends now, interrupted by the signal.  When
 * it is a record being written (reserved, not yet committed), its words become zero, which
 * readers take for a record never committed, rather than a torn one they count as damage.
 *
 * The jump's target says what it leaves: the frames below its stack pointer on the same
 * stack (gt_jump_leaves).  A jump that stays inside the handler leaves nothing.  glibc keeps
 * that stack pointer in the jmp_buf, mangled with the thread's pointer guard; where it cannot
 * be read here, a jump is taken to leave everything, as nearly all do. */
#include "facts.h"
#include "hooks.def"
#include "stacks.h"

/* the stack pointer the jump restores */
static uintptr_t jump_target_sp(const struct __jmp_buf_tag *env)
{
#if defined(__x86_64__) && defined(__GLIBC__)
	/* glibc's PTR_MANGLE: xor with the guard at %fs:0x30, then rotate left by 17 */
	uintptr_t v = (uintptr_t)env->__jmpbuf[6], guard; /* JB_RSP */
	__asm__("mov %%fs:0x30, %0" : "=r"(guard));
	return (v >> 17 | v << 47) ^ guard;
#else
	(void)env;
	return UINTPTR_MAX;
#endif
}

/* ---- records being written (fastpath.h: gt_writing_open) --------------------------------
 * A handler's record nested in the one it interrupted keeps that one aside; more deeply
 * nested handlers' records take its place (such a jump may then tear a record). */

/* The record w, when the jump to `to` leaves its writer: its words zeroed unless its first
 * word was stored (the commit came first).  Zero words are what a record never committed
 * reads as; a record whose payload is stored but not its first word reads as damage.
 * 1: it was left. */
static int writing_left(struct gt_writing *w, uintptr_t to)
{
	uint64_t *rec = w->rec;
	if (!rec || !gt_jump_leaves(w->sp, to))
		return 0;
	if (!gt_load((_Atomic uint64_t *)rec))
		for (uint32_t i = 1; i < w->bytes / 8; i++)
			gt_store((_Atomic uint64_t *)&rec[i], 0);
	w->rec = NULL;
	return 1;
}

/* The records the jump leaves, the nested one first; one it does not leave stays open */
static void writings_left(struct gt_tls *t, uintptr_t to)
{
	if (!t->writing.rec && t->writing_outer.rec)
		gt_writing_move(&t->writing, &t->writing_outer);
	while (writing_left(&t->writing, to) && t->writing_outer.rec)
		gt_writing_move(&t->writing, &t->writing_outer);
}

static void jump_from_hook(const struct __jmp_buf_tag *env)
{
	struct gt_tls *t = gt_self();
	uint8_t busy = t->busy;
	int writing = gt_tls.writing.rec || gt_tls.writing_outer.rec;
	if (GT_LIKELY(!busy && t->pending == GT_PENDING_NONE && !writing) || (busy & GT_BUSY_UNTRACED))
		return;
	int saved_errno = errno;
	uintptr_t to = jump_target_sp(env);
	int work_left = 0;
	/* raw clone threads on this TLS write there too: whose record it is, nobody knows */
	if (writing && t == &gt_tls)
		writings_left(t, to);
	if (busy) {
		/* the handler interrupted the tracer's work; it may jump inside itself */
		if (!gt_jump_leaves(t->busy_sp, to))
			goto out;
		work_left = 1;
		t->busy = 0;
	}
	/* a pending call, or a registration of a block the work had not begun; then the call
	 * that one was nested in (facts.c), when the jump leaves it too */
	if (t->pending != GT_PENDING_NONE ? gt_jump_leaves(t->busy_sp, to) : work_left)
		gt_fact_call_left(t);
	while ((t->pending & GT_PENDING_CALL) && gt_jump_leaves(t->busy_sp, to))
		gt_fact_call_left(t);
	if (work_left) /* last: this handler may run on one of them */
		gt_walks_left();
out:
	errno = saved_errno;
}

#define GT_JUMP_HOOK(name) \
	GT_EXPORT __attribute__((noreturn)) void name(struct __jmp_buf_tag env[1], int val) \
	{ \
		jump_from_hook(env); \
		GT_REAL(name)(env, val); \
		__builtin_unreachable(); \
	}

GT_JUMP_HOOK(longjmp)
GT_JUMP_HOOK(_longjmp)
GT_JUMP_HOOK(siglongjmp)
GT_JUMP_HOOK(__longjmp_chk)
