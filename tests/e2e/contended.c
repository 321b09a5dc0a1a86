/* A contended mutex, taken inside a static inline helper: the sync profile of its trace must
 * name the helper, the function it is inlined into and the thread's start routine, each at
 * the line marked here. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define WORKERS 4
#define ROUNDS 40

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static volatile unsigned long counter;

static void hold_for_a_while(void)
{
	struct timespec ts = { 0, 200000 };
	nanosleep(&ts, NULL);
}

static inline __attribute__((always_inline)) void take_lock(void)
{
	pthread_mutex_lock(&lock); /* LINE:contended_lock */
}

__attribute__((noinline)) static void add_under_lock(void)
{
	take_lock(); /* LINE:take_lock_call */
	counter++;
	hold_for_a_while();
	pthread_mutex_unlock(&lock);
}

static void *worker(void *arg)
{
	for (int i = 0; i < ROUNDS; i++)
		add_under_lock(); /* LINE:worker_calls */
	return arg;
}

int main(void)
{
	pthread_t t[WORKERS];
	for (int i = 0; i < WORKERS; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(t[i], NULL);
	printf("%lu\n", counter);
	return counter == WORKERS * ROUNDS ? 0 : 1;
}
