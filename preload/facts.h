/* Writing facts (facts.c): the emitters that fill capture.h's payload structs and the fact
 * shapes every hook family shares.  It includes the headers of the small tables behind them
 * (waiters.h, thread_table.h, fd_kinds.h, losses.h), which every hook file uses with it. */
#ifndef GT_FACTS_H
#define GT_FACTS_H

#include "fastpath.h"
#include "fd_kinds.h"
#include "losses.h"
#include "ring.h"
#include "thread_table.h"
#include "waiters.h"

#include <pthread.h>
#include <stdbool.h>
#include <sys/types.h>

/* Records are whole words, so gt_fill copies whole payload structs (capture.h asserts the
 * exact sizes of most). */
GT_STATIC_ASSERT((sizeof(struct gt_p_thread_name) | sizeof(struct gt_p_stackonly) |
		  sizeof(struct gt_p_stack) | sizeof(struct gt_p_module_unload) |
		  sizeof(struct gt_p_clock) | sizeof(struct gt_p_notice) |
		  sizeof(struct gt_p_process)) % 8 == 0, "payloads are whole words");
/* compact forms test a stack id and a serial with one compare: (stack | serial) < max */
GT_STATIC_ASSERT(GT_C_STACK_MAX == GT_C_THREAD_MAX, "one bound for stacks and serials");

/* Fills a reserved record whose payload is one struct and commits it: timestamp and payload
 * first, the first word last.  Inlined with a constant size, the copy is plain stores; the
 * timestamp's relaxed store is a plain mov too, which the vectoriser leaves alone (pairing
 * it with a payload word cost instructions). */
GT_INLINE void gt_fill(uint64_t *r, uint32_t thread, uint8_t type, uint8_t aux, uint64_t tsc,
		       const void *payload, uint32_t size)
{
	gt_store((_Atomic uint64_t *)&r[1], tsc);
	if (size)
		__builtin_memcpy(r + 2, payload, size);
	gt_commit(r, gt_rec_word(type, aux, 16 + size, thread));
}

/* One fact whose payload is one struct (or none: size 0). */
GT_INLINE void gt_emit(uint32_t thread, uint8_t type, uint8_t aux, uint64_t tsc, unsigned cpu,
		       const void *payload, uint32_t size)
{
	uint64_t *r = gt_reserve(cpu, 16 + size, tsc);
	if (GT_UNLIKELY(!r))
		return;
	gt_fill(r, thread, type, aux, tsc, payload, size);
	gt_tls.last_tsc = tsc;
}

/* A fact at tsc in chunk (first_tsc first) 2^31 ticks or more after first: 1 when it may be
 * compact, its timestamp told by the thread's last record there (capture.h: version 3's
 * near), which this fact is then (written full when it may not). */
GT_INLINE int gt_late(struct gt_tls *t, const char *chunk, uint64_t first, uint64_t tsc)
{
	int ok = t->late_chunk == chunk && t->late_tsc >= first && tsc - t->late_tsc < (1ull << 31);
	t->late_chunk = chunk;
	t->late_tsc = tsc;
	return ok;
}

/* gt_emit_c's inline part: 1 when it wrote the compact record (and set t->last_tsc); 0 when
 * it reserved nothing (words 0, or the delta does not fit); -1 when it found the chunk full
 * or the stop passed, leaving the chunk as gt_reserve leaves it.  gt_emit_c_slow does the
 * rest out of line, so a hook whose fact takes this path keeps its registers to itself. */
GT_INLINE int gt_emit_c_try(struct gt_tls *t, uint64_t tsc, unsigned cpu, unsigned words, uint64_t w0,
			    uint64_t w1, uint64_t w2)
{
	char *chunk = gt_slot_chunk(gt_load(&gt_slots[cpu].off));
	uint64_t first = ((const struct gt_chunk_header *)chunk)->first_tsc, d = tsc - first;
	if (GT_UNLIKELY(!words || d >> 31) && !(words && gt_late(t, chunk, first, tsc)))
		return 0;
	_Atomic uint64_t *used = (_Atomic uint64_t *)(chunk + offsetof(struct gt_chunk_header, used));
	uint64_t off = gt_add(used, words * 8);
	if (GT_UNLIKELY(off + words * 8 > gt_cap.chunk_limit || tsc >= gt_stop_tsc()))
		return -1;
	uint64_t *r = (uint64_t *)(chunk + off);
	if (words > 1) {
		gt_writing_open(r, words * 8);
		gt_store((_Atomic uint64_t *)&r[1], w1);
		if (words == 3)
			gt_store((_Atomic uint64_t *)&r[2], w2);
		gt_commit(r, w0 | d << 32);
	} else {
		gt_commit_word(r, w0 | d << 32);
	}
	t->last_tsc = tsc;
	return 1;
}

/* The full record of gt_emit_c_try's outcome `tried` (0 or -1); t->last_tsc set when written. */
void gt_emit_c_slow(struct gt_tls *t, int tried, uint32_t thread, uint8_t type, uint8_t aux,
		    uint64_t tsc, unsigned cpu, const void *payload, uint32_t size) GT_HIDDEN GT_NOINLINE;

/* One fact written compact (capture.h "Compact records": words 1 to 3, w0 from
 * gt_compact_word, w1 and w2 as the type says) when the timestamp fits as a delta from the
 * chunk's first_tsc or the thread's last record there (gt_late), else as the full record
 * (thread, type, aux, payload, size) gt_emit writes.  words 0: the full record (its values
 * do not fit the compact form).  A chunk found full is left as gt_reserve leaves it, and the
 * slow path's record is a full one: the new chunk's base follows this timestamp.  t: the
 * thread's state, whose last_tsc it sets. */
GT_INLINE void gt_emit_c(struct gt_tls *t, uint32_t thread, uint8_t type, uint8_t aux,
			 uint64_t tsc, unsigned cpu, const void *payload, uint32_t size,
			 unsigned words, uint64_t w0, uint64_t w1, uint64_t w2)
{
	int tried = gt_emit_c_try(t, tsc, cpu, words, w0, w1, w2);
	if (GT_UNLIKELY(tried <= 0))
		gt_emit_c_slow(t, tried, thread, type, aux, tsc, cpu, payload, size);
}

/* A WAKE, compact when it can be: one word on the obj of the thread's last block (capture.h
 * GT_C1_WAKE; pending_obj, which gt_thread_adopt clears for a new capture). */
GT_INLINE void gt_fact_wake_emit(struct gt_tls *t, uint32_t serial, uint8_t kind, uint64_t obj,
				 uint32_t stack, uint32_t count, uint64_t tsc, unsigned cpu)
{
	struct gt_p_wake p = {.obj = obj, .stack = stack, .count = count};
	int compact = (count == 1 || count == GT_WAKE_ALL) && obj < GT_C_OBJ_MAX &&
		      (stack | serial) < GT_C_STACK_MAX;
	if (count == 1 && !stack && obj == t->pending_obj && serial < GT_C_THREAD_MAX &&
	    !gt_ring_on())
		gt_emit_c(t, serial, GT_WAKE, kind, tsc, cpu, &p, sizeof p, 1,
			  gt_compact_word(GT_C_YIELD, kind, serial, GT_C1_WAKE), 0, 0);
	else if (count == GT_WAKE_UNSEEN)
		gt_emit_c(t, serial, GT_WAKE, kind, tsc, cpu, &p, sizeof p,
			  obj < GT_C_OBJ_MAX && stack < (1u << 16) && serial < GT_C_THREAD_MAX ? 2 : 0,
			  gt_compact_word(GT_C_YIELD, kind, serial, GT_C2_WAKE_UNSEEN),
			  obj | (uint64_t)stack << 48, 0);
	else
		gt_emit_c(t, serial, GT_WAKE, kind, tsc, cpu, &p, sizeof p, compact ? 2 : 0,
			  gt_compact_word(count == 1 ? GT_C_WAKE_ONE : GT_C_WAKE_ALL, kind, serial,
					  stack >> 16), obj | (uint64_t)stack << 48, 0);
}

extern _Atomic uint32_t gt_next_serial GT_HIDDEN;

/* --locks=all (GOTRACE_LOCKS=all): every mutex and rwlock acquisition and release is a fact;
 * set once before recording starts, read by the lock hooks' fast paths */
extern int gt_lock_records GT_HIDDEN;
/* LOCK_ACQUIRE of obj, stamped now (the lock was just taken), with this stack and flags
 * (capture.h gt_lock_flags); errno kept */
void gt_fact_lock_acquire(struct gt_tls *t, uint8_t kind, uint64_t obj, uint32_t flags) GT_HIDDEN;
/* LOCK_RELEASE of obj, stamped (tsc, cpu) before the release; errno kept */
void gt_fact_lock_release_at(struct gt_tls *t, uint8_t kind, uint64_t obj, uint64_t tsc,
			     unsigned cpu) GT_HIDDEN;

void gt_fact_call_left(struct gt_tls *t) GT_HIDDEN;
void gt_outers_reset(void) GT_HIDDEN; /* a fork child: the other threads' calls are gone */
void gt_fact_block_begin(struct gt_tls *t, uint8_t kind, uint64_t obj, int register_waiter) GT_HIDDEN;
/* stamped by the caller (tsc, cpu from gt_now) before it decided that it blocks */
void gt_fact_block_begin_at(struct gt_tls *t, uint8_t kind, uint64_t obj, int register_waiter,
			    uint64_t tsc, unsigned cpu) GT_HIDDEN;
/* gt_fact_block_begin in two steps, for a hook that tries once more after registering: a
 * releaser checks for waiters after its release, so a retry that still fails is a block
 * its releaser sees.  prepare (timestamp, registration), then commit (stack and fact) or
 * cancel (the retry succeeded: no block). */
struct gt_block {
	uint64_t tsc;
	unsigned cpu;
	uint32_t flags;            /* capture.h gt_block_flags: 0 from prepare, set before commit */
};
void gt_fact_block_prepare(struct gt_tls *t, uint8_t kind, uint64_t obj, int register_waiter,
			   struct gt_block *b) GT_HIDDEN;
void gt_fact_block_commit(struct gt_tls *t, uint8_t kind, uint64_t obj, const struct gt_block *b) GT_HIDDEN;
void gt_fact_block_cancel(struct gt_tls *t, uint8_t kind, uint64_t obj) GT_HIDDEN;
/* pthread_cond_*wait: the mutex's wake (when a thread waits for it) and the condvar block */
void gt_fact_cond_wait_begin(struct gt_tls *t, uint64_t cond, uint64_t mutex) GT_HIDDEN;
void gt_fact_block_end(struct gt_tls *t, uint8_t kind, uint64_t obj, int rc) GT_HIDDEN;
void gt_fact_block_end_at(struct gt_tls *t, uint8_t kind, uint64_t obj, int rc, uint64_t tsc, unsigned cpu) GT_HIDDEN;
void gt_fact_thread_start(struct gt_tls *t, uint64_t start_routine) GT_HIDDEN;
void gt_fact_wake(struct gt_tls *t, uint8_t kind, uint64_t obj, uint32_t count) GT_HIDDEN;
/* a wake stamped before the release, written after it (its check for waiters follows the
 * release, so a waiter that registered before the release is seen) */
void gt_fact_wake_at(struct gt_tls *t, uint8_t kind, uint64_t obj, uint32_t count, uint64_t tsc,
		     unsigned cpu) GT_HIDDEN;
void gt_fact_syscall_begin(struct gt_tls *t, uint32_t nr, uint8_t fd_kind, int64_t arg) GT_HIDDEN;
struct pollfd;
/* poll/ppoll: GT_FD_POLL, arg n; for input on one pipe or socket its kernel key too */
void gt_fact_poll_begin(struct gt_tls *t, uint32_t nr, const struct pollfd *fds, unsigned long n) GT_HIDDEN;
void gt_fact_syscall_end(struct gt_tls *t, uint32_t nr, long result, int err) GT_HIDDEN;
/* by_itself: the named thread is the caller (its name fact is also a fact of its running) */
void gt_fact_thread_name(uint32_t serial, const char *name, bool by_itself) GT_HIDDEN;
void gt_fact_thread_existing(struct gt_tls *t) GT_HIDDEN;
void gt_fact_process(struct gt_tls *t, uint8_t kind, uint64_t tsc, unsigned cpu, pid_t child, int err) GT_HIDDEN;
void gt_finish_pending(struct gt_tls *t) GT_HIDDEN;
void gt_thread_end(struct gt_tls *t, uint8_t how) GT_HIDDEN;
int gt_block_result(int rc) GT_HIDDEN;
/* syscall(SYS_clone, SYS_clone3, SYS_fork, SYS_exit) as raw threads and copies of our memory
 * see them (raw_threads.c): 1 when the call makes a copy, whose 0 return must then call
 * gt_copy_forget */
int gt_raw_syscall(long nr, long a0) GT_HIDDEN;

#endif
