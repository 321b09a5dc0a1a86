/* glibc's lock layouts (x86-64, glibc 2.25 on), known once: what the recorder's own lock
 * paths (preload/glibc_locks.h) and the reading of a live process's locks
 * (symbolizer/sym_live_locks.c) both need.  Header only, without code that links: preload/
 * includes it too.  The fields are glibc's own names in its <pthread.h> types; only what
 * those types do not say is written here. */
#ifndef GT_COMMON_GLIBC_LAYOUT_H
#define GT_COMMON_GLIBC_LAYOUT_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

/* ---- mutexes: __lock (0 free, 1 held, 2 held with a sleeper), __owner (the holder's tid),
 * __nusers; a waiter sleeps on __lock, the mutex's first word ---- */
#define GT_GLIBC_MUTEX_OWNER offsetof(pthread_mutex_t, __data.__owner)

/* ---- rwlocks (nptl/pthread_rwlock_common.c) ----
 * __readers holds the phase (WRPHASE: a write phase), WRLOCKED (a primary writer), RWAITING
 * (readers waiting for a writer) and, from bit 3, the number of readers; __cur_writer is the
 * writer's tid; __writers_futex is 1 while a primary writer lets other writers sleep, with
 * FUTEX_USED (2) once one may; __wrphase_futex is 1 in a write phase, with FUTEX_USED once a
 * thread may sleep on it.  Readers sleep on __wrphase_futex (while it is 1 | FUTEX_USED), writers on
 * __writers_futex (1 | FUTEX_USED), but for the primary writer, which waits on
 * __wrphase_futex (while it is FUTEX_USED alone) for the readers of a read phase to leave. */
#define GT_RWLOCK_FUTEX_USED 2u   /* PTHREAD_RWLOCK_FUTEX_USED: "a thread may sleep on it" */
#define GT_RWLOCK_WRPHASE 1u
#define GT_RWLOCK_WRLOCKED 2u
#define GT_RWLOCK_READER 8u /* 1 << PTHREAD_RWLOCK_READER_SHIFT */
#define GT_GLIBC_RWLOCK_READERS offsetof(pthread_rwlock_t, __data.__readers)
#define GT_GLIBC_RWLOCK_WRITER offsetof(pthread_rwlock_t, __data.__cur_writer)
#define GT_GLIBC_RWLOCK_READERS_FUTEX offsetof(pthread_rwlock_t, __data.__wrphase_futex)
#define GT_GLIBC_RWLOCK_WRITERS_FUTEX offsetof(pthread_rwlock_t, __data.__writers_futex)

/* ---- condition variables (2.25 on): a waiter sleeps on __g_signals[g] of its group g;
 * __wseq's low bit is the group new waiters join, __g_size[g] the waiters still in group g,
 * __wrefs from bit 3 the waiters referring to it ---- */
#define GT_GLIBC_COND_SIGNALS offsetof(pthread_cond_t, __data.__g_signals)
#define GT_GLIBC_COND_WSEQ offsetof(pthread_cond_t, __data.__wseq)
#define GT_GLIBC_COND_SIZES offsetof(pthread_cond_t, __data.__g_size)
#define GT_GLIBC_COND_WREFS offsetof(pthread_cond_t, __data.__wrefs)
#define GT_GLIBC_COND_WREF 8u   /* one waiter in __wrefs */

/* ---- semaphores on 64-bit atomics (struct new_sem): the value in the low 32 bits of
 * data, the number of sleepers in the high 32 bits (sleepers wait on the value's word);
 * private_ 0 for a process-private one ---- */
struct gt_glibc_sem {
	uint64_t data;
	int private_;
	int pad;
};

#endif
