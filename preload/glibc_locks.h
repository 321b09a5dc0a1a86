/* glibc's own uncontended paths for its default mutex, its default rwlock and its
 * process-private semaphore, taken inside the hooks (glibc_locks.c checks them against the
 * running glibc first).
 *
 * An uncontended lock + unlock pair through glibc is already ~70 instructions; a hook in
 * front of each call adds ~30 more.  Doing glibc's compare-and-swap in the hook itself costs
 * less than the call it replaces, and leaves the object exactly as glibc leaves it: the lock
 * word (0 free, 1 held, 2 held with a sleeper), the owner's tid, the count of users, the
 * semaphore's value and waiters.  Everything else -- another mutex type, elision, a held
 * lock, a sleeper to wake, a full or empty semaphore -- goes to glibc as before. */
#ifndef GT_GLIBC_LOCKS_H
#define GT_GLIBC_LOCKS_H

#include "base.h"
#include "common/glibc_layout.h"

#include <pthread.h>
#include <limits.h>
#include <semaphore.h>

/* The __kind of the mutexes the hooks lock themselves: 0 (PTHREAD_MUTEX_NORMAL, the default,
 * process-private, no elision flag) once glibc_locks.c has checked glibc's paths, else -1,
 * which no mutex has.  One compare says both. */
extern int gt_glibc_plain_kind GT_HIDDEN;
/* The semaphore's paths, taken only when the functions the hooks would call are glibc's own
 * (none interposed after this library): a post below gt_glibc_post_below (SEM_VALUE_MAX, else
 * 0) and a take from gt_glibc_take_from up (1, else above any value).  One compare each. */
extern uint64_t gt_glibc_post_below GT_HIDDEN;
extern uint32_t gt_glibc_take_from GT_HIDDEN;
/* where glibc keeps the thread's tid, from the thread pointer (struct pthread's tid) */
extern ptrdiff_t gt_glibc_tid_offset GT_HIDDEN;
void gt_glibc_locks_check(void) GT_HIDDEN;

#if defined(__x86_64__)
GT_INLINE int gt_glibc_tid(void)
{
	return *(const __seg_fs int32_t *)gt_glibc_tid_offset;
}
#else
GT_INLINE int gt_glibc_tid(void)
{
	return *(const int32_t *)((const char *)__builtin_thread_pointer() + gt_glibc_tid_offset);
}
#endif

/* __kind 0: PTHREAD_MUTEX_NORMAL (the default), process-private, no elision flag */
GT_INLINE int gt_glibc_mutex_plain(pthread_mutex_t *m)
{
	return __atomic_load_n(&m->__data.__kind, __ATOMIC_RELAXED) == gt_glibc_plain_kind;
}

/* glibc's lll_trylock and the owner's record, for a plain mutex: 0 taken, else EBUSY */
GT_INLINE int gt_glibc_mutex_trylock(pthread_mutex_t *m)
{
	int unlocked = 0;
	if (!__atomic_compare_exchange_n(&m->__data.__lock, &unlocked, 1, 0, __ATOMIC_ACQUIRE,
					 __ATOMIC_RELAXED))
		return EBUSY;
	m->__data.__owner = gt_glibc_tid();
	++m->__data.__nusers;
	return 0;
}

/* glibc's unlock of a plain mutex nobody sleeps on (word 1): 1 done, 0 left as it was (a
 * sleeper set the word to 2 meanwhile: glibc's unlock wakes it).  The owner is cleared before
 * the release, as glibc does: after it, another thread may already own the mutex. */
GT_INLINE int gt_glibc_mutex_unlock(pthread_mutex_t *m)
{
	int owner = m->__data.__owner;
	m->__data.__owner = 0;
	--m->__data.__nusers;
	int held = 1;
	if (GT_LIKELY(__atomic_compare_exchange_n(&m->__data.__lock, &held, 0, 0, __ATOMIC_RELEASE,
						  __ATOMIC_RELAXED)))
		return 1;
	++m->__data.__nusers;
	m->__data.__owner = owner;
	return 0;
}

GT_INLINE int gt_glibc_mutex_sleeper(pthread_mutex_t *m)
{
	return __atomic_load_n(&m->__data.__lock, __ATOMIC_RELAXED) != 1;
}

/* ---- rwlocks: glibc's since 2.25 (their layout: common/glibc_layout.h) ----
 * The hooks take a lock that nobody holds, a read lock in a read phase without a writer,
 * and release those two without a waiter; glibc does everything else (a phase handed over,
 * a sleeper woken, writer-to-writer hand-over, an overflow). */

/* The __flags of the rwlocks the hooks take themselves: 0 (PTHREAD_RWLOCK_PREFER_READER_NP,
 * the default) once glibc_locks.c has checked glibc's paths, else UINT_MAX, which no rwlock
 * has.  A prefer-writer lock hands its release to a waiting writer: glibc's alone. */
extern unsigned gt_glibc_rwlock_plain_flags GT_HIDDEN;

GT_INLINE int gt_glibc_rwlock_plain(pthread_rwlock_t *l)
{
	return l->__data.__flags == gt_glibc_rwlock_plain_flags;
}

/* The paths below are for a plain lock (gt_glibc_rwlock_plain). */

/* trywrlock of a lock without readers or a writer, in either phase: 1 taken, else 0
 * (glibc's). */
GT_INLINE int gt_glibc_rwlock_wrtake(pthread_rwlock_t *l)
{
	unsigned r = __atomic_load_n(&l->__data.__readers, __ATOMIC_RELAXED);
	if ((r & ~GT_RWLOCK_WRPHASE) ||
	    !__atomic_compare_exchange_n(&l->__data.__readers, &r,
					 r | GT_RWLOCK_WRPHASE | GT_RWLOCK_WRLOCKED, 0,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 0;
	__atomic_store_n(&l->__data.__writers_futex, 1, __ATOMIC_RELAXED);
	if (!(r & GT_RWLOCK_WRPHASE)) /* this lock starts the write phase */
		__atomic_store_n(&l->__data.__wrphase_futex, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&l->__data.__cur_writer, gt_glibc_tid(), __ATOMIC_RELAXED);
	return 1;
}

/* tryrdlock of a lock in a read phase without a writer: 1 taken, else 0 (glibc's; the
 * top of the readers' count too, where glibc answers EAGAIN) */
GT_INLINE int gt_glibc_rwlock_rdtake(pthread_rwlock_t *l)
{
	unsigned r = __atomic_load_n(&l->__data.__readers, __ATOMIC_RELAXED);
	unsigned more = r + GT_RWLOCK_READER;
	return !(r & (GT_RWLOCK_WRPHASE | GT_RWLOCK_WRLOCKED)) && (int)more >= 0 &&
	       __atomic_compare_exchange_n(&l->__data.__readers, &r, more, 0, __ATOMIC_ACQUIRE,
					   __ATOMIC_RELAXED);
}

/* The writer's release when no reader waits (only its own bits set) and no writer sleeps
 * (__writers_futex 1): 1 done, else 0 with the lock as it was.  As glibc: __cur_writer
 * cleared, writers' sleeping disabled, then WRLOCKED released in the write phase.  A writer
 * that found sleeping disabled meanwhile only retries; one that may sleep again once it is
 * enabled again is woken by glibc's release. */
GT_INLINE int gt_glibc_rwlock_wrrelease(pthread_rwlock_t *l, unsigned r, int tid)
{
	if (r != (GT_RWLOCK_WRPHASE | GT_RWLOCK_WRLOCKED))
		return 0;
	__atomic_store_n(&l->__data.__cur_writer, 0, __ATOMIC_RELAXED);
	unsigned enabled = 1;
	if (GT_LIKELY(__atomic_compare_exchange_n(&l->__data.__writers_futex, &enabled, 0, 0,
						  __ATOMIC_RELAXED, __ATOMIC_RELAXED))) {
		if (GT_LIKELY(__atomic_compare_exchange_n(&l->__data.__readers, &r, GT_RWLOCK_WRPHASE,
							  0, __ATOMIC_RELEASE, __ATOMIC_RELAXED)))
			return 1;
		__atomic_store_n(&l->__data.__writers_futex, 1, __ATOMIC_RELAXED);
	}
	__atomic_store_n(&l->__data.__cur_writer, tid, __ATOMIC_RELAXED);
	return 0;
}

/* glibc's pthread_rwlock_unlock, in the two cases the hooks take: the writer's
 * release above, or a reader's in a read phase without a writer (a reader less).  1 done,
 * else 0 (glibc's). */
GT_INLINE int gt_glibc_rwlock_release(pthread_rwlock_t *l)
{
	unsigned r = __atomic_load_n(&l->__data.__readers, __ATOMIC_RELAXED);
	int tid = gt_glibc_tid();
	if (__atomic_load_n(&l->__data.__cur_writer, __ATOMIC_RELAXED) == tid)
		return gt_glibc_rwlock_wrrelease(l, r, tid);
	return !(r & (GT_RWLOCK_WRPHASE | GT_RWLOCK_WRLOCKED)) && r >= GT_RWLOCK_READER &&
	       __atomic_compare_exchange_n(&l->__data.__readers, &r, r - GT_RWLOCK_READER, 0,
					   __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

/* ---- cancellation ----
 * glibc 2.36's pthread_testcancel acts when the thread's cancelhandling, masked with
 * GT_CANCEL_MASK (disabled, cancelled, exiting, terminated), is GT_CANCEL_ACTS (cancelled);
 * sem_wait does that test itself and calls it only then.  gt_glibc_cancel_slack is UINT32_MAX
 * (every value calls it) until glibc_locks.c has found the same test in its code and the word's
 * offset from the thread pointer, then 0: one store turns the test on whole. */
#define GT_CANCEL_MASK 0x39
#define GT_CANCEL_ACTS 0x08
extern ptrdiff_t gt_glibc_cancel_offset GT_HIDDEN;
extern uint32_t gt_glibc_cancel_slack GT_HIDDEN;

#if defined(__x86_64__)
GT_INLINE int gt_glibc_cancel_may_act(void)
{
	/* acquire: a slack of 0 comes with the offset stored before it */
	uint32_t slack = __atomic_load_n(&gt_glibc_cancel_slack, __ATOMIC_ACQUIRE);
	uint32_t handling = *(const volatile __seg_fs uint32_t *)gt_glibc_cancel_offset;
	return ((handling & GT_CANCEL_MASK) ^ GT_CANCEL_ACTS) <= slack;
}
#else
GT_INLINE int gt_glibc_cancel_may_act(void)
{
	return 1;
}
#endif

/* glibc's semaphore: struct gt_glibc_sem (common/glibc_layout.h). */

/* sem_post when nobody sleeps on it and it is below the maximum: 1 done, else 0 (glibc's) */
GT_INLINE int gt_glibc_sem_post(sem_t *s)
{
	uint64_t *data = &((struct gt_glibc_sem *)s)->data;
	uint64_t d = __atomic_load_n(data, __ATOMIC_RELAXED);
	if (d >= gt_glibc_post_below) /* at the maximum, or sleepers (the high half) */
		return 0;
	return __atomic_compare_exchange_n(data, &d, d + 1, 0, __ATOMIC_RELEASE, __ATOMIC_RELAXED);
}

/* sem_trywait's decrement of a positive value: 1 taken, else 0 (glibc's) */
GT_INLINE int gt_glibc_sem_take(sem_t *s)
{
	uint64_t *data = &((struct gt_glibc_sem *)s)->data;
	uint64_t d = __atomic_load_n(data, __ATOMIC_RELAXED);
	if ((uint32_t)d < gt_glibc_take_from)
		return 0;
	return __atomic_compare_exchange_n(data, &d, d - 1, 0, __ATOMIC_ACQUIRE, __ATOMIC_RELAXED);
}

#endif
