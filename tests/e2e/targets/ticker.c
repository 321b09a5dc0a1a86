/* Named threads passing a turn round a ring under a mutex and a condition variable, a turn
 * every 10 ms for about three seconds: a run long enough for a trace of several
 * generations, with waits of the same kinds in each. */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

#define THREADS 3
#define ROUNDS 300

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_changed = PTHREAD_COND_INITIALIZER;
static int turn;

static void *runner(void *arg)
{
	int me = (int)(long)arg;
	char name[16];
	snprintf(name, sizeof name, "ticker-%d", me);
	pthread_setname_np(pthread_self(), name);
	for (;;) {
		pthread_mutex_lock(&lock);
		while (turn < ROUNDS && turn % THREADS != me)
			pthread_cond_wait(&turn_changed, &lock);
		int over = turn >= ROUNDS;
		pthread_mutex_unlock(&lock);
		if (over)
			return NULL;
		struct timespec ts = {0, 10 * 1000 * 1000};
		nanosleep(&ts, NULL);
		pthread_mutex_lock(&lock);
		turn++;
		pthread_cond_broadcast(&turn_changed);
		pthread_mutex_unlock(&lock);
	}
}

int main(void)
{
	pthread_t t[THREADS];
	for (long i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, runner, (void *)i);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	printf("rounds %d\n", turn);
	return 0;
}
