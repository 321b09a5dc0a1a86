/* The thread table (thread_table.c): pthread_t -> serial, for join and setname on other
 * threads. */
#ifndef GT_THREAD_TABLE_H
#define GT_THREAD_TABLE_H

#include "base.h"

#include <pthread.h>

/* from_child: the thread itself registers (its creator registers it too) */
void gt_threads_put(pthread_t th, uint32_t serial, int from_child) GT_HIDDEN;
uint32_t gt_threads_get(pthread_t th, int *ended) GT_HIDDEN; /* 0: unknown */
void gt_threads_mark_ended(pthread_t th) GT_HIDDEN;
void gt_threads_remove(pthread_t th) GT_HIDDEN;
void gt_threads_reset(void) GT_HIDDEN;

#endif
