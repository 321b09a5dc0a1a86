/* glibc's own uncontended paths for its default mutex and its process-private semaphore,
 * taken inside the hooks (glibc_locks.c checks them against the running glibc first).
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

/* glibc's semaphore on 64-bit atomics (struct new_sem): the value in the low 32 bits of data,
 * the number of sleepers in the high 32 bits; private_ 0 for a process-private one. */
struct gt_glibc_sem {
	uint64_t data;
	int private_;
	int pad;
};

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
