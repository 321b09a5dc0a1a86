/* libgt-stress-lib.so: dlopen'd and dlclose'd in a loop by gt-stress.  Its constructor
 * starts a thread, its destructor joins it, so no code of it runs after dlclose. */
#include <pthread.h>

static pthread_t worker;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t set = PTHREAD_COND_INITIALIZER;
static long value;

static void *work(void *arg)
{
	pthread_mutex_lock(&lock);
	value = (long)arg;
	pthread_cond_signal(&set);
	pthread_mutex_unlock(&lock);
	return NULL;
}

__attribute__((constructor)) static void start(void)
{
	pthread_create(&worker, NULL, work, (void *)7L);
}

__attribute__((destructor)) static void stop(void)
{
	pthread_join(worker, NULL);
}

__attribute__((visibility("default"))) long gt_stress_lib_value(void)
{
	pthread_mutex_lock(&lock);
	while (!value)
		pthread_cond_wait(&set, &lock);
	long v = value;
	pthread_mutex_unlock(&lock);
	return v;
}
