/* Flight-recorder scenarios (tests/preload/test_ring.c).
 *
 *   gt-ring wrap N    threads made before a long churn: "early-blocked" blocks on a mutex main
 *                     holds, "early-reader" in a read of an empty pipe; then N sched_yield()s
 *                     per churn thread (two of them), which wrap a small ring many times;
 *                     then main lets both go, joins everyone, prints "done"; N as "<M>ms":
 *                     the churn threads yield for M ms of the monotonic clock (a run whose
 *                     length does not depend on the machine's speed or load)
 *   gt-ring hang N    the same start and churn, then prints "churned" and waits for SIGUSR1
 *                     (gotrace forwards it; a test may kill the program instead), then as wrap
 *   gt-ring quiet N   the same start and churn, then a quiet phase of 600 ms (main sleeps
 *                     30 ms and yields, 20 times: a fact now and then), then as wrap
 */
#include "wait_blocked.h"

#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static int pipe_fds[2];
static pid_t blocked_tid, reader_tid;
static long churn_n, churn_ms;

static long elapsed_ms(const struct timespec *from)
{
	struct timespec now;
	clock_gettime(CLOCK_MONOTONIC, &now);
	return (now.tv_sec - from->tv_sec) * 1000 + (now.tv_nsec - from->tv_nsec) / 1000000;
}

static void *early_blocked(void *arg)
{
	(void)arg;
	blocked_tid = gt_gettid();
	pthread_mutex_lock(&held);
	pthread_mutex_unlock(&held);
	return NULL;
}

static void *early_reader(void *arg)
{
	(void)arg;
	char c;
	reader_tid = gt_gettid();
	return read(pipe_fds[0], &c, 1) == 1 ? NULL : (void *)1;
}

static void *churn(void *arg)
{
	(void)arg;
	struct timespec start;
	clock_gettime(CLOCK_MONOTONIC, &start);
	for (long i = 0; churn_ms ? (i % 1000 || elapsed_ms(&start) < churn_ms) : i < churn_n; i++)
		sched_yield();
	return NULL;
}

int main(int argc, char **argv)
{
	if (argc < 3 || (strcmp(argv[1], "wrap") && strcmp(argv[1], "hang") &&
			 strcmp(argv[1], "quiet"))) {
		fprintf(stderr, "usage: gt-ring wrap|hang|quiet N\n");
		return 2;
	}
	churn_n = atol(argv[2]);
	if (strstr(argv[2], "ms"))
		churn_ms = churn_n;
	sigset_t usr1;
	sigemptyset(&usr1);
	sigaddset(&usr1, SIGUSR1);
	pthread_sigmask(SIG_BLOCK, &usr1, NULL); /* every thread: only sigwait takes it */
	if (pipe(pipe_fds))
		return 1;
	pthread_t b, r, c[2];
	pthread_mutex_lock(&held);
	pthread_create(&b, NULL, early_blocked, NULL);
	pthread_setname_np(b, "early-blocked");
	pthread_create(&r, NULL, early_reader, NULL);
	pthread_setname_np(r, "early-reader");
	while (!__atomic_load_n(&blocked_tid, __ATOMIC_ACQUIRE) || !__atomic_load_n(&reader_tid, __ATOMIC_ACQUIRE))
		sched_yield();
	gt_wait_blocked(blocked_tid, SYS_futex, (uintptr_t)&held, (uintptr_t)(&held + 1));
	gt_wait_blocked(reader_tid, SYS_read, (uintptr_t)pipe_fds[0], (uintptr_t)pipe_fds[0] + 1);
	for (int i = 0; i < 2; i++)
		pthread_create(&c[i], NULL, churn, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(c[i], NULL);
	if (!strcmp(argv[1], "hang")) {
		printf("churned\n");
		fflush(stdout);
		int sig;
		sigwait(&usr1, &sig);
	}
	for (int i = 0; !strcmp(argv[1], "quiet") && i < 20; i++) {
		const struct timespec step = { 0, 30 * 1000 * 1000 };
		nanosleep(&step, NULL);
		sched_yield();
	}
	pthread_mutex_unlock(&held);
	if (write(pipe_fds[1], "x", 1) != 1)
		return 1;
	void *rr;
	pthread_join(b, NULL);
	pthread_join(r, &rr);
	printf("done %s\n", rr ? "read failed" : "ok");
	return 0;
}
