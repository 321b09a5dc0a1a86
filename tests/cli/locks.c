/* locks: lock scenarios whose truth is known by construction, for the holders and the
 * wait-for graph (issue 23).  Each thread names itself; a thread waits until another one
 * sleeps on a lock through /proc (tests/preload/targets/wait_blocked.h), never by a guessed
 * time.  stdout is the same traced or not; stderr gives the locks' addresses.
 *
 *   holder     "holder" takes a mutex; "waiter" blocks on it; the holder releases it once
 *              the waiter sleeps (3 rounds)
 *   holder-recursive, holder-errorcheck, holder-pi, holder-robust   the same with a mutex of
 *              that type
 *   rwlock     "writer" holds a rwlock for writing; "reader" blocks on a read lock; the
 *              writer releases it once the reader sleeps
 *   deadlock2  "alpha" holds lock 0 and takes lock 1, "beta" holds lock 1 and takes lock 0
 *   deadlock3  "t0", "t1", "t2": ti holds lock i and takes lock (i + 1) % 3
 * The deadlocks say "deadlocked" once every thread of the cycle sleeps, then wait for the
 * end (a timeout's signal). */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../preload/targets/wait_blocked.h"

static pthread_mutex_t locks[3] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
				   PTHREAD_MUTEX_INITIALIZER};
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t all_hold;
static pid_t tids[3];
static int n_cycle;

static void wait_sleeping_on(pid_t tid, const void *lock, size_t size)
{
	gt_wait_blocked(tid, SYS_futex, (uintptr_t)lock, (uintptr_t)lock + size);
}

/* ---- holder ---- */
static int tid_pipe[2], go_pipe[2];

static void *waiter_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "waiter");
	pid_t me = gt_gettid();
	char go;
	if (write(tid_pipe[1], &me, sizeof me) != sizeof me)
		return NULL;
	for (int round = 0; round < 3; round++) {
		if (read(go_pipe[0], &go, 1) != 1)   /* the holder has the lock */
			return NULL;
		pthread_mutex_lock(&locks[0]);
		pthread_mutex_unlock(&locks[0]);
		if (write(tid_pipe[1], &me, sizeof me) != sizeof me)   /* done with it */
			return NULL;
	}
	return NULL;
}

static void *holder_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "holder");
	pthread_t waiter;
	pid_t tid;
	pthread_create(&waiter, NULL, waiter_main, NULL);
	if (read(tid_pipe[0], &tid, sizeof tid) != sizeof tid)
		return NULL;
	for (int round = 0; round < 3; round++) {
		pthread_mutex_lock(&locks[0]);
		if (write(go_pipe[1], "g", 1) != 1)
			return NULL;
		wait_sleeping_on(tid, &locks[0], sizeof locks[0]);
		pthread_mutex_unlock(&locks[0]);
		if (read(tid_pipe[0], &tid, sizeof tid) != sizeof tid)
			return NULL;
	}
	pthread_join(waiter, NULL);
	return NULL;
}

/* ---- rwlock ---- */
static void *reader_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "reader");
	pid_t me = gt_gettid();
	if (write(tid_pipe[1], &me, sizeof me) != sizeof me)
		return NULL;
	pthread_rwlock_rdlock(&rw);
	pthread_rwlock_unlock(&rw);
	return NULL;
}

static void *writer_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "writer");
	pthread_t reader;
	pthread_rwlock_wrlock(&rw);
	pthread_create(&reader, NULL, reader_main, NULL);
	pid_t tid;
	if (read(tid_pipe[0], &tid, sizeof tid) != sizeof tid)
		return NULL;
	wait_sleeping_on(tid, &rw, sizeof rw);
	pthread_rwlock_unlock(&rw);
	pthread_join(reader, NULL);
	return NULL;
}

/* ---- deadlocks ---- */
static void *cycle_main(void *arg)
{
	static const char *const names2[] = {"alpha", "beta"};
	static const char *const names3[] = {"t0", "t1", "t2"};
	int i = (int)(intptr_t)arg;
	pthread_setname_np(pthread_self(), n_cycle == 2 ? names2[i] : names3[i]);
	tids[i] = gt_gettid();
	pthread_mutex_lock(&locks[i]);
	pthread_barrier_wait(&all_hold);
	pthread_mutex_lock(&locks[(i + 1) % n_cycle]);
	return NULL;
}

static int run_cycle(int n)
{
	pthread_t threads[3];
	n_cycle = n;
	pthread_barrier_init(&all_hold, NULL, (unsigned)n + 1);
	for (int i = 0; i < n; i++)
		pthread_create(&threads[i], NULL, cycle_main, (void *)(intptr_t)i);
	pthread_barrier_wait(&all_hold);
	for (int i = 0; i < n; i++)
		wait_sleeping_on(tids[i], &locks[(i + 1) % n], sizeof locks[0]);
	printf("deadlocked: %d threads\n", n);
	fflush(stdout);
	for (int i = 0; i < n; i++)
		pthread_join(threads[i], NULL);   /* never returns */
	return 1;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	fprintf(stderr, "locks: lock0=%p lock1=%p lock2=%p rwlock=%p\n", (void *)&locks[0],
		(void *)&locks[1], (void *)&locks[2], (void *)&rw);
	if (pipe(tid_pipe) != 0 || pipe(go_pipe) != 0)
		return 1;
	pthread_t t;
	static const struct {
		const char *mode;
		int type, protocol, robust;
	} kinds[] = {
		{"holder-recursive", PTHREAD_MUTEX_RECURSIVE, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_STALLED},
		{"holder-errorcheck", PTHREAD_MUTEX_ERRORCHECK, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_STALLED},
		{"holder-pi", PTHREAD_MUTEX_DEFAULT, PTHREAD_PRIO_INHERIT, PTHREAD_MUTEX_STALLED},
		{"holder-robust", PTHREAD_MUTEX_DEFAULT, PTHREAD_PRIO_NONE, PTHREAD_MUTEX_ROBUST},
	};
	for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++) {
		if (strcmp(mode, kinds[i].mode) != 0)
			continue;
		pthread_mutexattr_t a;
		pthread_mutexattr_init(&a);
		if (pthread_mutexattr_settype(&a, kinds[i].type) != 0 ||
		    pthread_mutexattr_setprotocol(&a, kinds[i].protocol) != 0 ||
		    pthread_mutexattr_setrobust(&a, kinds[i].robust) != 0 ||
		    pthread_mutex_init(&locks[0], &a) != 0)
			return 1;
		mode = "holder";
	}
	if (strcmp(mode, "holder") == 0 || strcmp(mode, "rwlock") == 0) {
		pthread_create(&t, NULL, mode[0] == 'h' ? holder_main : writer_main, NULL);
		pthread_join(t, NULL);
		printf("%s: done\n", mode);
		return 0;
	}
	if (strcmp(mode, "deadlock2") == 0)
		return run_cycle(2);
	if (strcmp(mode, "deadlock3") == 0)
		return run_cycle(3);
	fprintf(stderr, "usage: locks holder[-recursive|-errorcheck|-pi|-robust]|rwlock|deadlock2|deadlock3\n");
	return 2;
}
