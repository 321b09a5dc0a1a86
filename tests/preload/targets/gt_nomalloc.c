/* gt-nomalloc: counts the allocations made while hooked calls run.  The program's own
 * malloc family forwards to glibc's and counts while `counting` is set; the hooks' fast paths
 * (uncontended and contended locks, condition variables, semaphores, syscalls, yield, sleep)
 * must not allocate.  Prints "mallocs N".
 * "gt-nomalloc threads": 300 threads created while none of them can start yet (the creator
 * runs SCHED_FIFO on one CPU, the children SCHED_OTHER on it), so every start record the
 * hook hands a child is held at once; prints "mallocs N" counted over the creations (glibc
 * allocates too: compare with the untraced run).
 * "gt-nomalloc handlers": 20 new threads each take a signal whose handler writes, a stack the
 * unwind rules leave to libunwind (its signal frame), the thread's first walk; prints
 * "handlers 20 mallocs N" counted over the handlers. */
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sched.h>
#include <stdlib.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern void *__libc_malloc(size_t);
extern void *__libc_calloc(size_t, size_t);
extern void *__libc_realloc(void *, size_t);
extern void *__libc_memalign(size_t, size_t);
extern void __libc_free(void *);

static atomic_int counting;
static atomic_long allocations;

static void count(void)
{
	if (atomic_load_explicit(&counting, memory_order_relaxed))
		atomic_fetch_add(&allocations, 1);
}

/* exported (the project builds with -fvisibility=hidden): the libraries' calls must find them */
#define EXPORT __attribute__((visibility("default")))
EXPORT void *malloc(size_t n) { count(); return __libc_malloc(n); }
EXPORT void *calloc(size_t n, size_t m) { count(); return __libc_calloc(n, m); }
EXPORT void *realloc(void *p, size_t n) { count(); return __libc_realloc(p, n); }
EXPORT void *memalign(size_t a, size_t n) { count(); return __libc_memalign(a, n); }
EXPORT void *aligned_alloc(size_t a, size_t n) { count(); return __libc_memalign(a, n); }
EXPORT int posix_memalign(void **p, size_t a, size_t n)
{
	count();
	*p = __libc_memalign(a, n);
	return *p ? 0 : 12;
}
EXPORT void free(void *p) { __libc_free(p); }

static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
static sem_t s;
static int fds[2];
static atomic_int phase, stop;

static void *partner(void *arg)
{
	(void)arg;
	char b;
	while (!atomic_load(&stop)) {
		/* contended: hold the lock across a short sleep */
		pthread_mutex_lock(&m);
		struct timespec ts = {0, 200000};
		nanosleep(&ts, NULL);
		pthread_cond_signal(&c);
		pthread_mutex_unlock(&m);
		sem_post(&s);
		if (read(fds[0], &b, 1) != 1)
			break;
	}
	return NULL;
}

static void round_trip(void)
{
	for (int i = 0; i < 20; i++) {
		pthread_mutex_lock(&m);
		pthread_mutex_unlock(&m);
	}
	pthread_mutex_lock(&m);
	struct timespec deadline;
	clock_gettime(CLOCK_REALTIME, &deadline);
	deadline.tv_nsec += 2000000;
	if (deadline.tv_nsec >= 1000000000) {
		deadline.tv_sec++;
		deadline.tv_nsec -= 1000000000;
	}
	pthread_cond_timedwait(&c, &m, &deadline);
	pthread_mutex_unlock(&m);
	sem_wait(&s);
	sched_yield();
	usleep(10);
	if (getenv("GT_NOMALLOC_SELFTEST")) { /* proves the counter sees an allocation */
		void *(*volatile alloc)(size_t) = malloc;
		free(alloc(8));
	}
	if (write(fds[1], "x", 1) != 1)
		atomic_store(&stop, 1);
	usleep(50); /* the partner takes the lock: the next round's first lock contends */
}

static atomic_int started;

static void *noop(void *arg)
{
	atomic_fetch_add(&started, 1);
	return arg;
}

static int create_burst(void)
{
	enum { N = 300 };
	static pthread_t th[N];
	cpu_set_t one;
	CPU_ZERO(&one);
	CPU_SET(sched_getcpu(), &one);
	sched_setaffinity(0, sizeof one, &one); /* the children inherit it */
	struct sched_param fifo = {.sched_priority = 1}, other = {.sched_priority = 0};
	int is_fifo = pthread_setschedparam(pthread_self(), SCHED_FIFO, &fifo) == 0;
	pthread_attr_t at;
	pthread_attr_init(&at);
	pthread_attr_setinheritsched(&at, PTHREAD_EXPLICIT_SCHED);
	pthread_attr_setschedpolicy(&at, SCHED_OTHER);
	pthread_attr_setschedparam(&at, &other);
	int made = 0;
	atomic_store(&counting, 1);
	for (int i = 0; i < N; i++)
		made += pthread_create(&th[i], &at, noop, NULL) == 0;
	atomic_store(&counting, 0);
	int early = atomic_load(&started);
	pthread_setschedparam(pthread_self(), SCHED_OTHER, &other);
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	fprintf(stderr, "creator SCHED_FIFO %d, children started during the creations %d\n", is_fifo, early);
	printf("threads %d mallocs %ld\n", made, atomic_load(&allocations));
	return 0;
}

static pthread_barrier_t go, done;
static int devnull;

static void on_signal(int sig)
{
	(void)sig;
	if (write(devnull, "s", 1) != 1)
		_exit(3);
}

static void *signalled(void *arg)
{
	pthread_barrier_wait(&go);
	pthread_kill(pthread_self(), SIGUSR1);
	pthread_barrier_wait(&done);
	return arg;
}

static int signal_walks(void)
{
	enum { N = 20 };
	pthread_t th[N];
	devnull = open("/dev/null", O_WRONLY);
	struct sigaction sa = {.sa_handler = on_signal};
	sigaction(SIGUSR1, &sa, NULL);
	pthread_barrier_init(&go, NULL, N + 1);
	pthread_barrier_init(&done, NULL, N + 1);
	for (int i = 0; i < N; i++)
		if (pthread_create(&th[i], NULL, signalled, NULL))
			return 1;
	atomic_store(&counting, 1);
	pthread_barrier_wait(&go);
	pthread_barrier_wait(&done);
	atomic_store(&counting, 0);
	for (int i = 0; i < N; i++)
		pthread_join(th[i], NULL);
	printf("handlers %d mallocs %ld\n", N, atomic_load(&allocations));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc > 1 && !strcmp(argv[1], "threads"))
		return create_burst();
	if (argc > 1 && !strcmp(argv[1], "handlers"))
		return signal_walks();
	pthread_t t;
	sem_init(&s, 0, 0);
	if (pipe(fds))
		return 1;
	setvbuf(stdout, NULL, _IONBF, 0);
	pthread_create(&t, NULL, partner, NULL);
	for (int i = 0; i < 5; i++) /* warm-up: first stacks, first chunks */
		round_trip();
	atomic_store(&counting, 1);
	for (int i = 0; i < 200; i++)
		round_trip();
	atomic_store(&counting, 0);
	atomic_store(&stop, 1);
	if (write(fds[1], "x", 1) != 1)
		return 1;
	pthread_join(t, NULL);
	printf("mallocs %ld\n", atomic_load(&allocations));
	(void)phase;
	return 0;
}
