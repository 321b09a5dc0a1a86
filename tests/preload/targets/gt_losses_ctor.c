/* A library whose constructor blocks on a lock (its own, already held: the timed lock waits
 * out its timeout), so the tracer takes a stack inside dlopen, before dlopen returns. */
#include <pthread.h>
#include <time.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static int ran;

__attribute__((constructor, noinline, visibility("default"))) void gt_losses_ctor_blocks(void)
{
	struct timespec until;
	pthread_mutex_lock(&lock);
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_nsec += 5 * 1000 * 1000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	ran = pthread_mutex_timedlock(&lock, &until) != 0; /* ETIMEDOUT: it blocked */
	pthread_mutex_unlock(&lock);
}

__attribute__((visibility("default"))) int gt_losses_ctor_ran(void) { return ran; }
