/* Process-shared objects by kernel identity (shared_objs.c). */
#ifndef GT_SHARED_OBJS_H
#define GT_SHARED_OBJS_H

#include "base.h"
#include "glibc_locks.h"
#include "gotrace/capture.h"

#include <pthread.h>

/* The kernel key (gt_kobj_key, GT_KOBJ_MEMORY) of the word at addr when it lies in shared
 * memory (MAP_SHARED file or shmem mapping), else 0.  Reads /proc/self/maps with raw system
 * calls and a descriptor open for the read's duration only; costs a few tens of µs. */
uint64_t gt_shared_obj(const void *addr) GT_HIDDEN;

/* Every mapping of the process, [start, end) into spans (at most cap): how many.  Opens
 * /proc/self/maps: for a thread of files_apart.h. */
size_t gt_maps_read(uint64_t (*spans)[2], size_t cap) GT_HIDDEN;

static inline int gt_sem_pshared(const void *s)
{
	return ((const volatile struct gt_glibc_sem *)s)->private_ != 0;
}

static inline int gt_sem_has_waiters(const void *s)
{
	return (__atomic_load_n(&((const struct gt_glibc_sem *)s)->data, __ATOMIC_RELAXED) >> 32) != 0;
}

/* glibc's mutex: PTHREAD_MUTEX_PSHARED_BIT (128) in __kind; __lock is 2 (or has
 * FUTEX_WAITERS, robust and PI mutexes) while a thread may sleep on it. */
static inline int gt_mutex_pshared(const pthread_mutex_t *m)
{
	return (((const volatile pthread_mutex_t *)m)->__data.__kind & 128) != 0;
}

static inline int gt_mutex_has_waiters(const void *m)
{
	unsigned lock = (unsigned)__atomic_load_n(&((const pthread_mutex_t *)m)->__data.__lock,
						  __ATOMIC_RELAXED);
	return lock == 2 || (lock & 0x80000000u);
}

/* glibc's condition variable (2.25+): __wrefs bit 0 says process-shared, the bits from 3 up
 * count the waiters. */
static inline int gt_cond_pshared(const pthread_cond_t *c)
{
	return (((const volatile pthread_cond_t *)c)->__data.__wrefs & 1) != 0;
}

static inline int gt_cond_has_waiters(const void *c)
{
	return (__atomic_load_n(&((const pthread_cond_t *)c)->__data.__wrefs, __ATOMIC_RELAXED) >> 3) != 0;
}

#endif
