/* Process-shared objects by kernel identity (shared_objs.c). */
#ifndef GT_SHARED_OBJS_H
#define GT_SHARED_OBJS_H

#include "base.h"
#include "gotrace/capture.h"

/* The kernel key (gt_kobj_key, GT_KOBJ_MEMORY) of the word at addr when it lies in shared
 * memory (MAP_SHARED file or shmem mapping), else 0.  Reads /proc/self/maps with raw system
 * calls and a descriptor open for the read's duration only; costs a few tens of µs. */
uint64_t gt_shared_obj(const void *addr) GT_HIDDEN;

/* glibc's semaphore on 64-bit atomics (nptl/semaphoreP.h, struct new_sem): the value in the
 * low 32 bits of data, the number of waiters in the high 32; private is FUTEX_PRIVATE (0,
 * LLL_PRIVATE) for a process-private one and FUTEX_SHARED (128, LLL_SHARED) for pshared. */
struct gt_glibc_sem {
	uint64_t data;
	int private_;
	int pad;
};

static inline int gt_sem_pshared(const void *s)
{
	return ((const volatile struct gt_glibc_sem *)s)->private_ != 0;
}

static inline int gt_sem_has_waiters(const void *s)
{
	return (__atomic_load_n(&((const struct gt_glibc_sem *)s)->data, __ATOMIC_RELAXED) >> 32) != 0;
}

#endif
