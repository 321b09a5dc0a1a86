/* gt-bench: nanoseconds per operation of the hot hooks, for comparing a traced run with an
 * untraced one (the same binary, with and without LD_PRELOAD).
 *   lock-unlock  an uncontended pthread_mutex_lock + unlock pair
 *   yield        sched_yield (one GT_YIELD fact with a stack, plus the system call)
 *   cond-signal  pthread_cond_signal with nobody waiting
 *   barrier1     pthread_barrier_wait on a barrier of one: no system call; traced, it
 *                writes three facts (BLOCK_BEGIN with a stack, BLOCK_END, WAKE) */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static pthread_barrier_t b;

__attribute__((noinline)) static void lock_unlock(void)
{
	pthread_mutex_lock(&m);
	pthread_mutex_unlock(&m);
}

__attribute__((noinline)) static void yield(void) { sched_yield(); }
__attribute__((noinline)) static void signal_nobody(void) { pthread_cond_signal(&c); }
__attribute__((noinline)) static void barrier1(void) { pthread_barrier_wait(&b); }

static double best_of(void (*op)(void), long n)
{
	double best = 1e30;
	for (int round = 0; round < 7; round++) {
		double t0 = now_ns();
		for (long i = 0; i < n; i++)
			op();
		double per = (now_ns() - t0) / n;
		if (per < best)
			best = per;
	}
	return best;
}

int main(int argc, char **argv)
{
	const char *which = argc > 1 ? argv[1] : "all";
	pthread_barrier_init(&b, NULL, 1);
	if (!strcmp(which, "all") || !strcmp(which, "lock-unlock"))
		printf("lock-unlock %.2f ns\n", best_of(lock_unlock, 2000000));
	if (!strcmp(which, "all") || !strcmp(which, "cond-signal"))
		printf("cond-signal %.2f ns\n", best_of(signal_nobody, 2000000));
	if (!strcmp(which, "all") || !strcmp(which, "barrier1"))
		printf("barrier1 %.2f ns\n", best_of(barrier1, 1000000));
	if (!strcmp(which, "all") || !strcmp(which, "yield"))
		printf("yield %.2f ns\n", best_of(yield, 200000));
	return 0;
}
