/* Targets for `gotrace stacks` (tests/cli/test_stacks.c), each reaching a known state and
 * saying "ready" on stdout once it is there (its threads asleep in the calls the test
 * expects, by /proc, not by a guessed sleep):
 *   deadlock: two threads, each holding one mutex and waiting for the other's (AB/BA);
 *   deadlock3: three threads in a ring: lock_a then lock_b, lock_b then lock_c, lock_c then
 *             lock_a;
 *   kinds:    the main thread holds table_lock (a rwlock) for writing, a thread waits to
 *             read it, another waits on semaphore jobs_ready;
 *   pipe:     a thread blocked reading an empty pipe;
 *   undumpable: as pipe, once the process made itself undumpable (prctl PR_SET_DUMPABLE 0),
 *             run as nobody (65534) when started as root;
 *   pool:     40 threads waiting on one condition variable;
 *   count N:  counts to N in each of 4 threads (ready once all count) and prints the sum,
 *             exiting with status 3;
 *   readers:  two threads hold readers_lock (a rwlock) for reading, each then blocked
 *             reading an empty pipe; a third waits to write it (glibc's primary writer,
 *             asleep on the lock's __wrphase_futex until the readers leave);
 *   signals:  a thread blocked reading an empty pipe counts the SIGUSR1, SIGUSR2 and SIGWINCH
 *             it is given (handlers with SA_RESTART); once a byte comes through the pipe it
 *             prints the counts and the process exits with status 0 (ready: its tid and the
 *             pipe's write end, for the test to open through /proc). */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>

#include "../preload/targets/wait_blocked.h"

#define POOL_THREADS 40

pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;
pthread_mutex_t pool_mutex = PTHREAD_MUTEX_INITIALIZER;
pthread_cond_t pool_cond = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t both_hold;
static volatile pid_t tids[POOL_THREADS];
static int pipe_fds[2];

pthread_mutex_t lock_c = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t *const ring[3] = {&lock_a, &lock_b, &lock_c};

/* Thread i of three takes ring[i], then ring[i + 1]: a cycle through all three. */
static void *take_in_ring(void *arg)
{
	intptr_t i = (intptr_t)arg;
	tids[i] = gt_gettid();
	pthread_mutex_lock(ring[i]);
	pthread_barrier_wait(&both_hold);
	pthread_mutex_lock(ring[(i + 1) % 3]);
	return NULL;
}

pthread_rwlock_t table_lock = PTHREAD_RWLOCK_INITIALIZER;
sem_t jobs_ready;

static void *read_table(void *arg)
{
	(void)arg;
	tids[0] = gt_gettid();
	pthread_rwlock_rdlock(&table_lock);
	return NULL;
}

static void *wait_for_job(void *arg)
{
	(void)arg;
	tids[1] = gt_gettid();
	sem_wait(&jobs_ready);
	return NULL;
}

static void *take_a_then_b(void *arg)
{
	(void)arg;
	tids[0] = gt_gettid();
	pthread_mutex_lock(&lock_a);
	pthread_barrier_wait(&both_hold);
	pthread_mutex_lock(&lock_b);
	return NULL;
}

static void *take_b_then_a(void *arg)
{
	(void)arg;
	tids[1] = gt_gettid();
	pthread_mutex_lock(&lock_b);
	pthread_barrier_wait(&both_hold);
	pthread_mutex_lock(&lock_a);
	return NULL;
}

static void *read_pipe(void *arg)
{
	(void)arg;
	char c;
	tids[0] = gt_gettid();
	return (void *)(intptr_t)read(pipe_fds[0], &c, 1);
}

pthread_rwlock_t readers_lock = PTHREAD_RWLOCK_INITIALIZER;

static void *read_and_hold(void *arg)
{
	char c;
	pthread_rwlock_rdlock(&readers_lock);
	tids[(intptr_t)arg] = gt_gettid();
	return (void *)(intptr_t)read(pipe_fds[0], &c, 1);
}

static void *write_after_readers(void *arg)
{
	(void)arg;
	tids[2] = gt_gettid();
	pthread_rwlock_wrlock(&readers_lock);
	return NULL;
}

static volatile sig_atomic_t signals_met[3];   /* SIGUSR1, SIGUSR2, SIGWINCH */

static void count_signal(int sig)
{
	signals_met[sig == SIGUSR1 ? 0 : sig == SIGUSR2 ? 1 : 2]++;
}

static void *count_signals_until_a_byte(void *arg)
{
	(void)arg;
	char c;
	tids[0] = gt_gettid();
	ssize_t n = read(pipe_fds[0], &c, 1);
	printf("signals %d %d %d\n", (int)signals_met[0], (int)signals_met[1],
	       (int)signals_met[2]);
	return (void *)(intptr_t)n;
}

static void *pool_worker(void *arg)
{
	tids[(intptr_t)arg] = gt_gettid();
	pthread_mutex_lock(&pool_mutex);
	for (;;)
		pthread_cond_wait(&pool_cond, &pool_mutex);
	return NULL;
}

static volatile unsigned long counted[4];
static unsigned long count_to;

static void *count(void *arg)
{
	tids[(intptr_t)arg] = gt_gettid();
	for (unsigned long i = 0; i < count_to; i++)
		counted[(intptr_t)arg]++;
	return NULL;
}

static void wait_started(int n)
{
	for (int i = 0; i < n; i++)
		while (!tids[i])
			syscall(SYS_sched_yield);
}

int main(int argc, char **argv)
{
	pthread_t t[POOL_THREADS];
	const char *mode = argc > 1 ? argv[1] : "";
	if (!strcmp(mode, "deadlock")) {
		pthread_barrier_init(&both_hold, NULL, 2);
		pthread_create(&t[0], NULL, take_a_then_b, NULL);
		pthread_create(&t[1], NULL, take_b_then_a, NULL);
		wait_started(2);
		gt_wait_blocked(tids[0], SYS_futex, (uintptr_t)&lock_b, (uintptr_t)(&lock_b + 1));
		gt_wait_blocked(tids[1], SYS_futex, (uintptr_t)&lock_a, (uintptr_t)(&lock_a + 1));
		printf("ready %d %d\n", (int)tids[0], (int)tids[1]);
	} else if (!strcmp(mode, "deadlock3")) {
		pthread_barrier_init(&both_hold, NULL, 3);
		for (intptr_t i = 0; i < 3; i++)
			pthread_create(&t[i], NULL, take_in_ring, (void *)i);
		wait_started(3);
		for (int i = 0; i < 3; i++) {
			uintptr_t next = (uintptr_t)ring[(i + 1) % 3];
			gt_wait_blocked(tids[i], SYS_futex, next, next + sizeof(pthread_mutex_t));
		}
		printf("ready %d %d %d\n", (int)tids[0], (int)tids[1], (int)tids[2]);
	} else if (!strcmp(mode, "kinds")) {
		pthread_rwlock_wrlock(&table_lock);
		sem_init(&jobs_ready, 0, 0);
		pthread_create(&t[0], NULL, read_table, NULL);
		pthread_create(&t[1], NULL, wait_for_job, NULL);
		wait_started(2);
		gt_wait_blocked(tids[0], SYS_futex, (uintptr_t)&table_lock,
				(uintptr_t)(&table_lock + 1));
		gt_wait_blocked(tids[1], SYS_futex, (uintptr_t)&jobs_ready,
				(uintptr_t)(&jobs_ready + 1));
		printf("ready %d %d\n", (int)tids[0], (int)tids[1]);
	} else if (!strcmp(mode, "undumpable")) {
		if (getuid() == 0 && (setgid(65534) != 0 || setuid(65534) != 0))
			return 1;
		prctl(PR_SET_PDEATHSIG, SIGKILL);   /* cleared by the change of user */
		prctl(PR_SET_DUMPABLE, 1);   /* so is this: its own /proc files, until blocked */
		if (pipe(pipe_fds) != 0)
			return 1;
		pthread_create(&t[0], NULL, read_pipe, NULL);
		wait_started(1);
		gt_wait_blocked(tids[0], SYS_read, (uintptr_t)pipe_fds[0], (uintptr_t)pipe_fds[0] + 1);
		prctl(PR_SET_DUMPABLE, 0);
		printf("ready %d %d\n", (int)tids[0], pipe_fds[0]);
	} else if (!strcmp(mode, "pipe")) {
		if (pipe(pipe_fds) != 0)
			return 1;
		pthread_create(&t[0], NULL, read_pipe, NULL);
		wait_started(1);
		gt_wait_blocked(tids[0], SYS_read, (uintptr_t)pipe_fds[0], (uintptr_t)pipe_fds[0] + 1);
		printf("ready %d %d\n", (int)tids[0], pipe_fds[0]);
	} else if (!strcmp(mode, "readers")) {
		if (pipe(pipe_fds) != 0)
			return 1;
		for (intptr_t i = 0; i < 2; i++)
			pthread_create(&t[i], NULL, read_and_hold, (void *)i);
		wait_started(2);   /* both hold it for reading */
		pthread_create(&t[2], NULL, write_after_readers, NULL);
		wait_started(3);
		gt_wait_blocked(tids[2], SYS_futex, (uintptr_t)&readers_lock,
				(uintptr_t)(&readers_lock + 1));
		printf("ready %d\n", (int)tids[2]);
	} else if (!strcmp(mode, "signals")) {
		struct sigaction sa = {.sa_handler = count_signal, .sa_flags = SA_RESTART};
		sigaction(SIGUSR1, &sa, NULL);
		sigaction(SIGUSR2, &sa, NULL);
		sigaction(SIGWINCH, &sa, NULL);
		if (pipe(pipe_fds) != 0)
			return 1;
		pthread_create(&t[0], NULL, count_signals_until_a_byte, NULL);
		wait_started(1);
		gt_wait_blocked(tids[0], SYS_read, (uintptr_t)pipe_fds[0], (uintptr_t)pipe_fds[0] + 1);
		printf("ready %d %d\n", (int)tids[0], pipe_fds[1]);
		fflush(stdout);
		pthread_join(t[0], NULL);
		return 0;
	} else if (!strcmp(mode, "pool")) {
		for (intptr_t i = 0; i < POOL_THREADS; i++)
			pthread_create(&t[i], NULL, pool_worker, (void *)i);
		wait_started(POOL_THREADS);
		for (int i = 0; i < POOL_THREADS; i++)
			gt_wait_blocked(tids[i], SYS_futex, (uintptr_t)&pool_cond,
					(uintptr_t)(&pool_cond + 1));
		printf("ready\n");
	} else if (!strcmp(mode, "count") && argc > 2) {
		count_to = strtoul(argv[2], NULL, 10);
		for (intptr_t i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, count, (void *)i);
		wait_started(4);
		printf("ready\n");
		fflush(stdout);
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		printf("counted %lu\n", counted[0] + counted[1] + counted[2] + counted[3]);
		return 3;
	} else {
		fprintf(stderr, "usage: stacks_target deadlock|deadlock3|kinds|readers|pipe|undumpable|signals|pool|count N\n");
		return 2;
	}
	fflush(stdout);
	pause();   /* until the test kills it */
	return 0;
}
