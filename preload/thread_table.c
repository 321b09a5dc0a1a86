/* The thread table: pthread_t -> serial, for a join or a setname on another thread.  Open
 * addressing over 4096 slots; a removed thread leaves a tombstone. */
#include "thread_table.h"
#include "losses.h"

#include <string.h>

#define GT_THREAD_SLOTS 4096u
#define GT_TOMBSTONE ((uintptr_t)1)
struct gt_thread_slot {
	_Atomic uintptr_t key;
	_Atomic uint32_t serial;
	_Atomic uint32_t ended;
};
static struct gt_thread_slot gt_threads[GT_THREAD_SLOTS];

static inline unsigned thread_home(uintptr_t key)
{
	return (unsigned)((key >> 4) * 0x9E3779B97F4A7C15ull >> 52) & (GT_THREAD_SLOTS - 1);
}

void gt_threads_put(pthread_t th, uint32_t serial, int from_child)
{
	uintptr_t key = (uintptr_t)th;
	unsigned home = thread_home(key);
	for (unsigned i = 0; i < GT_THREAD_SLOTS; i++) {
		struct gt_thread_slot *s = &gt_threads[(home + i) & (GT_THREAD_SLOTS - 1)];
		uintptr_t k = gt_load(&s->key);
		/* a lost race with the thread's other registration (creator or child) for this
		 * slot finds the key there: it must not take a second slot */
		if (k == key || ((k == 0 || k == GT_TOMBSTONE) &&
				 (atomic_compare_exchange_strong(&s->key, &k, key) || k == key))) {
			/* the parent registers too (its child may not have run yet); it must not
			 * revive a child that already ended */
			if (from_child || gt_load(&s->serial) != serial)
				gt_store(&s->ended, 0);
			gt_store(&s->serial, serial);
			return;
		}
	}
	if (from_child) /* once per thread: its creator tries too */
		gt_lose(GT_NOTICE_THREADS_LOST);
}

static struct gt_thread_slot *thread_find(uintptr_t key)
{
	unsigned home = thread_home(key);
	for (unsigned i = 0; i < GT_THREAD_SLOTS; i++) {
		struct gt_thread_slot *s = &gt_threads[(home + i) & (GT_THREAD_SLOTS - 1)];
		uintptr_t k = gt_load(&s->key);
		if (k == key)
			return s;
		if (k == 0)
			return NULL;
	}
	return NULL;
}

uint32_t gt_threads_get(pthread_t th, int *ended)
{
	struct gt_thread_slot *s = thread_find((uintptr_t)th);
	if (ended)
		*ended = s ? (int)gt_load(&s->ended) : 0;
	return s ? gt_load(&s->serial) : 0;
}

void gt_threads_mark_ended(pthread_t th)
{
	struct gt_thread_slot *s = thread_find((uintptr_t)th);
	if (s)
		gt_store(&s->ended, 1);
}

void gt_threads_remove(pthread_t th)
{
	struct gt_thread_slot *s = thread_find((uintptr_t)th);
	if (s)
		gt_store(&s->key, GT_TOMBSTONE);
}

void gt_threads_reset(void)
{
	/* after fork only the forking thread lives; its pthread_t stays valid */
	memset(gt_threads, 0, sizeof gt_threads);
}
