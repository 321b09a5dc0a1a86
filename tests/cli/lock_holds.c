/* lock_holds: hold times whose truth the program measures itself (issue 23, item 3).  A
 * thread named "holder" holds the global hold_lock N times for about HOLD_NS each, timing
 * every hold with clock_gettime (from the lock's return to the unlock's call), while
 * "contender-1" and "contender-2" take it M times each for SHORT_NS; contender-1's first try
 * is made to wait (the holder keeps its first hold until contender-1 sleeps on the lock, by
 * /proc: tests/preload/targets/wait_blocked.h).  Before them the holder takes it once by
 * pthread_mutex_trylock, uncontended.  The main thread waits on done_cond with done_lock
 * until the holder is done (a condition wait takes done_lock back on return).
 *
 *   mutex       a default mutex
 *   recursive   the holder takes it twice per hold (the hold timed from the outer lock)
 *   errorcheck  the holder's relock inside a hold returns EDEADLK, contender-1's unlock of a
 *               lock it does not hold EPERM: neither is an acquisition or a release
 *   pi          a priority-inheriting mutex
 *   robust      a robust mutex whose first owner, "doomed", ends holding it (a hold that
 *               never ends): the holder takes it with EOWNERDEAD first, for a moment
 *   rwlock      hold_rwlock instead: the holder ("writer" then) writes, the contenders
 *               ("reader-1", "reader-2") read
 *
 * stdout: what was done and the counts, the same traced or not, then lines starting with
 * "time:" (the measured means, in ns).  stderr: the locks' addresses and the condition
 * waits' count, which depends on the scheduling. */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../preload/targets/wait_blocked.h"

#define N_HOLDS 20
#define HOLD_NS 5000000L
#define M_HOLDS 10
#define SHORT_NS 500000L

static pthread_mutex_t hold_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_rwlock_t hold_rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_mutex_t done_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t done_cond = PTHREAD_COND_INITIALIZER;
static int done, recursive, errorcheck, robust, rw;
static int tid_pipe[2], go_pipe[2];

/* What the program counts itself (atomics: no lock of their own). */
static uint64_t acquisitions, holds, held_ns, holder_holds, holder_ns, reads, ownerdead;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void nap(long ns)
{
	struct timespec ts = { .tv_sec = 0, .tv_nsec = ns };
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		continue;
}

static void count(uint64_t *counter, uint64_t n)
{
	__atomic_fetch_add(counter, n, __ATOMIC_RELAXED);
}

static void fail(const char *what, int err)
{
	printf("%s: %s\n", what, strerror(err));
	exit(1);
}

/* Takes the lock (for writing, or for reading when read), counted. */
static void take(int read)
{
	int err = rw ? (read ? pthread_rwlock_rdlock(&hold_rwlock)
			     : pthread_rwlock_wrlock(&hold_rwlock))
		     : pthread_mutex_lock(&hold_lock);
	if (err == EOWNERDEAD && robust) {
		count(&ownerdead, 1);
		err = pthread_mutex_consistent(&hold_lock);
	}
	if (err != 0)
		fail("lock", err);
	count(&acquisitions, 1);
	count(&reads, rw && read);
}

static void give(void)
{
	int err = rw ? pthread_rwlock_unlock(&hold_rwlock) : pthread_mutex_unlock(&hold_lock);
	if (err != 0)
		fail("unlock", err);
}

/* One hold timed from since (the lock's return) to now (just before the unlock). */
static void timed(uint64_t since, int by_holder)
{
	uint64_t ns = now_ns() - since;
	count(&holds, 1);
	count(&held_ns, ns);
	if (by_holder) {
		count(&holder_holds, 1);
		count(&holder_ns, ns);
	}
}

static void *contender_main(void *arg)
{
	int k = (int)(intptr_t)arg;
	char name[16];
	snprintf(name, sizeof name, "%s-%d", rw ? "reader" : "contender", k);
	pthread_setname_np(pthread_self(), name);
	if (k == 1) {
		pid_t me = gt_gettid();
		char go;
		if (errorcheck) {
			int err = pthread_mutex_unlock(&hold_lock);
			printf("contender-1's unlock of a mutex it does not hold: %s\n",
			       err == EPERM ? "EPERM" : strerror(err));
		}
		if (write(tid_pipe[1], &me, sizeof me) != sizeof me ||
		    read(go_pipe[0], &go, 1) != 1)
			fail("pipe", errno);
	}
	for (int i = 0; i < M_HOLDS; i++) {
		take(1);
		uint64_t since = now_ns();
		nap(SHORT_NS);
		timed(since, 0);
		give();
	}
	return NULL;
}

static void *doomed_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "doomed");
	take(0);
	return NULL; /* ends holding it: the next owner gets EOWNERDEAD */
}

static void *holder_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), rw ? "writer" : "holder");
	if (robust) { /* the dead owner's lock, taken back and made consistent */
		take(0);
		timed(now_ns(), 1);
		give();
	}
	int err = rw ? pthread_rwlock_trywrlock(&hold_rwlock) : pthread_mutex_trylock(&hold_lock);
	if (err != 0)
		fail("trylock", err);
	count(&acquisitions, 1);
	uint64_t since = now_ns();
	nap(HOLD_NS);
	timed(since, 1);
	give();
	pthread_t contenders[2];
	for (int k = 0; k < 2; k++)
		pthread_create(&contenders[k], NULL, contender_main, (void *)(intptr_t)(k + 1));
	pid_t first;
	if (read(tid_pipe[0], &first, sizeof first) != sizeof first)
		fail("pipe", errno);
	for (int i = 0; i < N_HOLDS; i++) {
		take(0);
		since = now_ns();
		if (recursive)
			take(0);
		if (errorcheck && i == 0) {
			err = pthread_mutex_lock(&hold_lock);
			printf("the holder's relock: %s\n",
			       err == EDEADLK ? "EDEADLK" : strerror(err));
		}
		if (i == 0) { /* contender-1 waits for this hold */
			if (write(go_pipe[1], "g", 1) != 1)
				fail("pipe", errno);
			if (rw)
				gt_wait_blocked(first, SYS_futex, (uintptr_t)&hold_rwlock,
						(uintptr_t)(&hold_rwlock + 1));
			else
				gt_wait_blocked(first, SYS_futex, (uintptr_t)&hold_lock,
						(uintptr_t)(&hold_lock + 1));
		}
		nap(HOLD_NS);
		if (recursive)
			give();
		timed(since, 1);
		give();
	}
	for (int k = 0; k < 2; k++)
		pthread_join(contenders[k], NULL);
	pthread_mutex_lock(&done_lock);
	done = 1;
	pthread_cond_signal(&done_cond);
	pthread_mutex_unlock(&done_lock);
	return NULL;
}

static int set_type(const char *mode)
{
	pthread_mutexattr_t a;
	pthread_mutexattr_init(&a);
	recursive = strcmp(mode, "recursive") == 0;
	errorcheck = strcmp(mode, "errorcheck") == 0;
	robust = strcmp(mode, "robust") == 0;
	rw = strcmp(mode, "rwlock") == 0;
	if (recursive && pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE) != 0)
		return -1;
	if (errorcheck && pthread_mutexattr_settype(&a, PTHREAD_MUTEX_ERRORCHECK) != 0)
		return -1;
	if (strcmp(mode, "pi") == 0 && pthread_mutexattr_setprotocol(&a, PTHREAD_PRIO_INHERIT) != 0)
		return -1;
	if (robust && pthread_mutexattr_setrobust(&a, PTHREAD_MUTEX_ROBUST) != 0)
		return -1;
	if (!recursive && !errorcheck && !robust && !rw && strcmp(mode, "pi") != 0 &&
	    strcmp(mode, "mutex") != 0)
		return -1;
	return pthread_mutex_init(&hold_lock, &a) == 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (set_type(mode) != 0) {
		fprintf(stderr, "usage: lock_holds mutex|recursive|errorcheck|pi|robust|rwlock\n");
		return 2;
	}
	if (pipe(tid_pipe) != 0 || pipe(go_pipe) != 0)
		return 1;
	pthread_t t;
	if (robust) {
		pthread_create(&t, NULL, doomed_main, NULL);
		pthread_join(t, NULL);
	}
	unsigned cond_waits = 0;
	pthread_mutex_lock(&done_lock);
	pthread_create(&t, NULL, holder_main, NULL);
	while (!done) {
		pthread_cond_wait(&done_cond, &done_lock);
		cond_waits++;
	}
	pthread_mutex_unlock(&done_lock);
	pthread_join(t, NULL);
	printf("%s: acquisitions=%llu holds=%llu holder_holds=%llu reads=%llu ownerdead=%llu\n",
	       mode, (unsigned long long)acquisitions, (unsigned long long)holds,
	       (unsigned long long)holder_holds, (unsigned long long)reads,
	       (unsigned long long)ownerdead);
	printf("time: mean_ns=%llu holder_mean_ns=%llu\n", (unsigned long long)(held_ns / holds),
	       (unsigned long long)(holder_ns / holder_holds));
	fprintf(stderr, "lock_holds: hold_lock=%p hold_rwlock=%p done_lock=%p cond_waits=%u\n",
		(void *)&hold_lock, (void *)&hold_rwlock, (void *)&done_lock, cond_waits);
	return 0;
}
