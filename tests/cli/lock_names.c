/* Contended locks whose names are known by construction: a global mutex, a member of a
 * global struct, a function's static and one in a heap object.  Each is held by main while
 * one thread blocks on it (main waits until the thread sleeps in the futex, no guessed
 * sleep), then released.  At the end a thread is left waiting on a condvar member of the
 * global struct, so that the report's "still waiting" names it too.  The output is the
 * same traced and untraced. */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>

#include "../preload/targets/wait_blocked.h"

pthread_mutex_t accounts_lock = PTHREAD_MUTEX_INITIALIZER;

struct work_queue {
	long length;
	pthread_mutex_t lock;
	pthread_cond_t ready;
	int closed;
};
struct work_queue work_queue = {
	.lock = PTHREAD_MUTEX_INITIALIZER, .ready = PTHREAD_COND_INITIALIZER,
};

__attribute__((noinline)) static pthread_mutex_t *journal_lock(void)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	return &lock;
}

struct pool {
	long users;
	pthread_mutex_t lock;
};

/* Where the heap lock is first used: its report name says this line (the count after the
 * call keeps it from being a tail call, which would leave this frame out of the stack). */
__attribute__((noinline)) static void pool_enter(struct pool *p)
{
	pthread_mutex_lock(&p->lock); /* LINE:pool_enter */
	p->users++;
}

struct contender {
	pthread_mutex_t *lock;
	struct pool *pool;      /* pool_enter's, instead of lock */
	_Atomic pid_t tid;
};

static void *contend(void *arg)
{
	struct contender *c = arg;
	c->tid = gt_gettid();
	if (c->pool) {
		pool_enter(c->pool);
		pthread_mutex_unlock(&c->pool->lock);
	} else {
		pthread_mutex_lock(c->lock);
		pthread_mutex_unlock(c->lock);
	}
	return NULL;
}

/* main holds lock until a thread blocks on it, then lets it go. */
static void contended(pthread_mutex_t *lock, struct pool *pool)
{
	struct contender c = { .lock = pool ? &pool->lock : lock, .pool = pool };
	pthread_t t;
	pthread_mutex_lock(c.lock);
	if (pthread_create(&t, NULL, contend, &c) != 0)
		exit(2);
	while (!c.tid)
		syscall(SYS_sched_yield);
	gt_wait_blocked(c.tid, SYS_futex, (uintptr_t)c.lock, (uintptr_t)(c.lock + 1));
	pthread_mutex_unlock(c.lock);
	pthread_join(t, NULL);
}

static _Atomic pid_t waiter_tid;

static void *wait_for_work(void *arg)
{
	waiter_tid = gt_gettid();
	pthread_mutex_lock(&work_queue.lock);
	while (!work_queue.closed)
		pthread_cond_wait(&work_queue.ready, &work_queue.lock);
	pthread_mutex_unlock(&work_queue.lock);
	return arg;
}

int main(void)
{
	struct pool *pool = calloc(1, sizeof *pool);
	if (!pool || pthread_mutex_init(&pool->lock, NULL) != 0)
		return 2;
	contended(&accounts_lock, NULL);
	contended(&work_queue.lock, NULL);
	contended(journal_lock(), NULL);
	contended(NULL, pool);

	pthread_t t;
	if (pthread_create(&t, NULL, wait_for_work, NULL) != 0)
		return 2;
	while (!waiter_tid)
		syscall(SYS_sched_yield);
	gt_wait_blocked(waiter_tid, SYS_futex, (uintptr_t)&work_queue.ready,
			(uintptr_t)(&work_queue.ready + 1));
	printf("lock-names: 4 locks contended, a thread left waiting\n");
	fflush(stdout);
	exit(3);   /* with the waiter still blocked; a status of its own, compared */
}
