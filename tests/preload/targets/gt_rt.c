/* Real-time threads on one CPU, for tests/preload/test_rt.c (issue 28, item 3).
 *
 *   gt-rt N   a SCHED_FIFO thread of priority 10 calls sched_yield N times (a fact each, so
 *             the capture keeps growing) while one of priority 20 on the same CPU wakes
 *             every 200 µs, N / 100 times, and yields 20 times at each wake.  Prints "done"
 *             and the counts.  Exit 77 when SCHED_FIFO or the CPU cannot be had.
 *
 * A hang must not keep a CPU: RLIMIT_RTTIME kills a real-time thread that runs 10 s without
 * sleeping, and the main thread (not real-time) ends the process after 60 s, saying so. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static long n_low;
static _Atomic long low_done, high_done;

static int make_rt(int prio)
{
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(0, &one);
	struct sched_param sp = {.sched_priority = prio};
	if (sched_setaffinity(0, sizeof one, &one))
		return -1;
	return sched_setscheduler(0, SCHED_FIFO, &sp);
}

static void *low(void *arg)
{
	(void)arg;
	for (long i = 0; i < n_low; i++)
		sched_yield();
	low_done = n_low;
	return NULL;
}

static void *high(void *arg)
{
	(void)arg;
	struct timespec next;
	clock_gettime(CLOCK_MONOTONIC, &next);
	long n = n_low / 100;
	for (long i = 0; i < n; i++) {
		next.tv_nsec += 200000;
		if (next.tv_nsec >= 1000000000) {
			next.tv_nsec -= 1000000000;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
		for (int k = 0; k < 20; k++)
			sched_yield();
	}
	high_done = n;
	return NULL;
}

/* each thread makes itself real-time first: 77 from either means it could not */
static void *start_low(void *arg) { return make_rt(10) ? (void *)1 : low(arg); }
static void *start_high(void *arg) { return make_rt(20) ? (void *)1 : high(arg); }

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	n_low = atol(argv[1]);
	struct rlimit rt = {10000000, 11000000}; /* µs of real-time CPU without a sleep */
	if (setrlimit(RLIMIT_RTTIME, &rt))
		return 77;
	pthread_t l, h;
	if (pthread_create(&l, NULL, start_low, NULL) || pthread_create(&h, NULL, start_high, NULL))
		return 3;
	struct timespec until;
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 60;
	void *rl = NULL, *rh = NULL;
	if (pthread_timedjoin_np(l, &rl, &until) || pthread_timedjoin_np(h, &rh, &until)) {
		printf("hung: %ld of %ld low, %ld high\n", (long)low_done, n_low, (long)high_done);
		fflush(stdout);
		syscall(SYS_exit_group, 1); /* no exit handler: the threads may hold anything */
	}
	if (rl || rh) {
		fprintf(stderr, "gt-rt: SCHED_FIFO on CPU 0 refused\n");
		return 77;
	}
	printf("done: %ld low, %ld high\n", (long)low_done, (long)high_done);
	return 0;
}
