/* gt-stress SCENARIO: what a traced program may do in bulk (tests/preload/test_stress.c).
 * Every scenario prints only what does not depend on timing, so a traced run's output and
 * exit status can be compared with an untraced run; counts that do depend on timing go to
 * stderr ("signals N"), for the test to compare with the capture. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wait_blocked.h"

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static long counter;
static atomic_int stop;

static void locked_add(long n)
{
	pthread_mutex_lock(&mtx);
	counter += n;
	pthread_mutex_unlock(&mtx);
}

/* ---- 2000 threads alive at once: each waits on a barrier that needs them all ---- */
#define LIVE 2000
static pthread_barrier_t all_alive;

static void *live_thread(void *arg)
{
	locked_add((long)(intptr_t)arg);
	pthread_barrier_wait(&all_alive);
	return NULL;
}

static int s_live(void)
{
	static pthread_t th[LIVE];
	pthread_barrier_init(&all_alive, NULL, LIVE + 1);
	for (int i = 0; i < LIVE; i++)
		if (pthread_create(&th[i], NULL, live_thread, (void *)(intptr_t)i) != 0) {
			printf("create %d failed\n", i);
			return 1;
		}
	pthread_barrier_wait(&all_alive);
	for (int i = 0; i < LIVE; i++)
		pthread_join(th[i], NULL);
	printf("%d threads alive at once, sum %ld\n", LIVE, counter);
	return 0;
}

/* ---- thread churn: create/exit, a few at a time ---- */
static void *churn_thread(void *arg)
{
	locked_add((long)(intptr_t)arg & 7);
	return NULL;
}

static int s_churn(long n)
{
	enum { BATCH = 4 };
	pthread_t th[BATCH];
	for (long i = 0; i < n; i += BATCH) {
		for (int k = 0; k < BATCH; k++)
			if (pthread_create(&th[k], NULL, churn_thread, (void *)(intptr_t)(i + k)) != 0) {
				printf("create %ld failed\n", i + k);
				return 1;
			}
		for (int k = 0; k < BATCH; k++)
			pthread_join(th[k], NULL);
	}
	printf("%ld threads created and joined, sum %ld\n", n, counter);
	return 0;
}

/* ---- fork storm under lock traffic ---- */
#define FORKERS 2
#define FORKS_EACH 12
static void atfork_prepare(void) { pthread_mutex_lock(&mtx); }
static void atfork_release(void) { pthread_mutex_unlock(&mtx); }

static void *locker(void *arg)
{
	(void)arg;
	while (!atomic_load(&stop))
		locked_add(1);
	return NULL;
}

static void *child_thread(void *arg)
{
	locked_add(1);
	return arg;
}

static void *forker(void *arg)
{
	int base = (int)(intptr_t)arg, bad = 0;
	for (int i = 0; i < FORKS_EACH; i++) {
		pid_t pid = fork();
		if (pid == 0) {
			/* the child: locks and a thread of its own, then exits with its number */
			pthread_t t;
			pthread_create(&t, NULL, child_thread, NULL);
			locked_add(1);
			pthread_join(t, NULL);
			exit(base + i);
		}
		int st;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != base + i)
			bad++;
	}
	return (void *)(intptr_t)bad;
}

static int s_forks(void)
{
	pthread_t lk[3], fk[FORKERS];
	pthread_atfork(atfork_prepare, atfork_release, atfork_release);
	for (int i = 0; i < 3; i++)
		pthread_create(&lk[i], NULL, locker, NULL);
	int bad = 0;
	for (int i = 0; i < FORKERS; i++)
		pthread_create(&fk[i], NULL, forker, (void *)(intptr_t)(10 + i * FORKS_EACH));
	for (int i = 0; i < FORKERS; i++) {
		void *r;
		pthread_join(fk[i], &r);
		bad += (int)(intptr_t)r;
	}
	atomic_store(&stop, 1);
	for (int i = 0; i < 3; i++)
		pthread_join(lk[i], NULL);
	printf("%d children forked under lock traffic, %d wrong exit statuses\n", FORKERS * FORKS_EACH, bad);
	return bad != 0;
}

/* ---- a 10 kHz signal storm whose handler calls hooked functions ---- */
#define SIGNALS 10000
static atomic_int handled, handler_locked;
static int devnull;

static void on_alarm(int sig)
{
	(void)sig;
	int saved = errno;
	write(devnull, "x", 1);
	if (pthread_mutex_trylock(&mtx) == 0) {
		atomic_fetch_add(&handler_locked, 1);
		pthread_mutex_unlock(&mtx);
	}
	atomic_fetch_add(&handled, 1);
	errno = saved;
}

static void *signal_worker(void *arg)
{
	(void)arg;
	struct timespec ts = {0, 200000};
	while (!atomic_load(&stop)) {
		locked_add(1);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

static int s_signals(void)
{
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGALRM, &sa, NULL);
	pthread_t w[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&w[i], NULL, signal_worker, NULL);
	struct itimerval every = {{0, 100}, {0, 100}}, off = {{0, 0}, {0, 0}};
	setitimer(ITIMER_REAL, &every, NULL);
	long rounds = 0;
	while (atomic_load(&handled) < SIGNALS) {
		/* a blocking call of its own, cut short by the signals */
		struct timespec ms = {0, 1000000};
		nanosleep(&ms, NULL);
		locked_add(1);
		rounds++;
	}
	setitimer(ITIMER_REAL, &off, NULL);
	atomic_store(&stop, 1);
	for (int i = 0; i < 2; i++)
		pthread_join(w[i], NULL);
	fprintf(stderr, "signals %d locked %d\n", atomic_load(&handled), atomic_load(&handler_locked));
	printf("at least %d signals handled, main ran %s\n", SIGNALS, rounds > 0 ? "too" : "not");
	return 0;
}

/* ---- cancellation of threads blocked in cond_wait, sem_wait, read, nanosleep, join ---- */
enum { C_COND, C_SEM, C_READ, C_SLEEP, C_JOIN, C_N };
static const char *const cancel_names[C_N] = {"cond_wait", "sem_wait", "read", "nanosleep", "pthread_join"};
static int cleaned[C_N];
static pid_t cancel_tid[C_N];
static sem_t cancel_sem;
static int cancel_pipe[2];
static pthread_t forever;

static void cleanup(void *arg) { cleaned[(intptr_t)arg]++; }
static void cleanup_unlock(void *arg)
{
	cleaned[(intptr_t)arg]++;
	pthread_mutex_unlock(&mtx); /* cond_wait's cancellation reacquires the mutex */
}

static pid_t pauser_tid;

static void *pauser(void *arg)
{
	(void)arg;
	__atomic_store_n(&pauser_tid, gt_gettid(), __ATOMIC_RELEASE);
	for (;;)
		pause();
	return NULL;
}

static void *cancellee(void *arg)
{
	intptr_t k = (intptr_t)arg;
	__atomic_store_n(&cancel_tid[k], gt_gettid(), __ATOMIC_RELEASE);
	char c;
	struct timespec day = {86400, 0};
	switch (k) {
	case C_COND:
		pthread_mutex_lock(&mtx);
		pthread_cleanup_push(cleanup_unlock, arg);
		for (;;)
			pthread_cond_wait(&cond, &mtx);
		pthread_cleanup_pop(0);
		break;
	case C_SEM:
		pthread_cleanup_push(cleanup, arg);
		sem_wait(&cancel_sem);
		pthread_cleanup_pop(0);
		break;
	case C_READ:
		pthread_cleanup_push(cleanup, arg);
		read(cancel_pipe[0], &c, 1);
		pthread_cleanup_pop(0);
		break;
	case C_SLEEP:
		pthread_cleanup_push(cleanup, arg);
		nanosleep(&day, NULL);
		pthread_cleanup_pop(0);
		break;
	case C_JOIN:
		pthread_cleanup_push(cleanup, arg);
		pthread_join(forever, NULL);
		pthread_cleanup_pop(0);
		break;
	}
	return NULL; /* not reached: cancelled while blocked */
}

static int s_cancel(void)
{
	static const long calls[C_N] = {SYS_futex, SYS_futex, SYS_read, SYS_clock_nanosleep, SYS_futex};
	pthread_t th[C_N];
	sem_init(&cancel_sem, 0, 0);
	pipe(cancel_pipe);
	pthread_create(&forever, NULL, pauser, NULL);
	for (intptr_t k = 0; k < C_N; k++) {
		pthread_create(&th[k], NULL, cancellee, (void *)k);
		/* cancel only once the thread sleeps in its call: that is what is tested */
		while (!__atomic_load_n(&cancel_tid[k], __ATOMIC_ACQUIRE))
			syscall(SYS_sched_yield);
		gt_wait_blocked(cancel_tid[k], calls[k], 0, 0);
	}
	int ok = 0;
	for (int k = 0; k < C_N; k++) {
		void *ret;
		pthread_cancel(th[k]);
		int r = pthread_join(th[k], &ret);
		printf("%s: join %d, cancelled %d, cleanup ran %d\n", cancel_names[k], r,
		       ret == PTHREAD_CANCELED, cleaned[k]);
		ok += r == 0 && ret == PTHREAD_CANCELED && cleaned[k] == 1;
	}
	void *ret;
	/* as the others: cancelled only once it sleeps in pause() (else no syscall is cut) */
	while (!__atomic_load_n(&pauser_tid, __ATOMIC_ACQUIRE))
		syscall(SYS_sched_yield);
#ifdef SYS_pause
	gt_wait_blocked(pauser_tid, SYS_pause, 0, 0);
#else
	gt_wait_blocked(pauser_tid, SYS_ppoll, 0, 0);
#endif
	pthread_cancel(forever);
	pthread_join(forever, &ret);
	printf("pause: cancelled %d\n", ret == PTHREAD_CANCELED);
	return ok == C_N ? 0 : 1;
}

/* ---- dlopen/dlclose of a library whose constructor starts a thread ---- */
static int s_dlopen(const char *self, int n)
{
	char lib[4096];
	snprintf(lib, sizeof lib, "%s", self);
	char *slash = strrchr(lib, '/');
	snprintf(slash ? slash + 1 : lib, sizeof lib - (size_t)(slash ? slash + 1 - lib : 0),
		 "libgt-stress-lib.so");
	long sum = 0;
	for (int i = 0; i < n; i++) {
		void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);
		if (!h) {
			printf("dlopen: %s\n", dlerror());
			return 1;
		}
		long (*value)(void) = (long (*)(void))dlsym(h, "gt_stress_lib_value");
		sum += value ? value() : -1000000;
		dlclose(h);
	}
	printf("%d dlopen/dlclose rounds, sum %ld\n", n, sum);
	return 0;
}

/* ---- mixed traffic, killed with SIGKILL by the test at a random time ---- */
static void *mixed_worker(void *arg)
{
	intptr_t id = (intptr_t)arg;
	struct timespec ts = {0, 50000};
	for (long i = 0;; i++) {
		locked_add(1);
		if (i % 16 == id) {
			pthread_t t;
			if (pthread_create(&t, NULL, churn_thread, NULL) == 0)
				pthread_join(t, NULL);
		}
		if (id == 0) {
			pthread_mutex_lock(&mtx);
			pthread_cond_broadcast(&cond);
			pthread_mutex_unlock(&mtx);
		} else if (id == 1) {
			pthread_mutex_lock(&mtx);
			struct timespec until;
			clock_gettime(CLOCK_REALTIME, &until);
			until.tv_nsec += 200000;
			if (until.tv_nsec >= 1000000000) {
				until.tv_sec++;
				until.tv_nsec -= 1000000000;
			}
			pthread_cond_timedwait(&cond, &mtx, &until);
			pthread_mutex_unlock(&mtx);
		} else {
			nanosleep(&ts, NULL);
		}
	}
	return NULL;
}

static __attribute__((noreturn)) int s_mixed(void)
{
	pthread_t t;
	for (intptr_t i = 0; i < 4; i++)
		pthread_create(&t, NULL, mixed_worker, (void *)i);
	printf("running\n");
	fflush(stdout);
	for (;;)
		pause();
}

/* ---- facts for a given time (the tests of a recording window) ---- */
static int s_busy(long ms)
{
	struct timespec t0, now, tick = {0, 1000000};
	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		locked_add(1);
		sched_yield();
		nanosleep(&tick, NULL);
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while ((now.tv_sec - t0.tv_sec) * 1000 + (now.tv_nsec - t0.tv_nsec) / 1000000 < ms);
	printf("busy for %ld ms\n", ms);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *s = argc > 1 ? argv[1] : "";
	if (!strcmp(s, "live"))
		return s_live();
	if (!strcmp(s, "churn"))
		return s_churn(argc > 2 ? atol(argv[2]) : 100000);
	if (!strcmp(s, "forks"))
		return s_forks();
	if (!strcmp(s, "signals"))
		return s_signals();
	if (!strcmp(s, "cancel"))
		return s_cancel();
	if (!strcmp(s, "dlopen"))
		return s_dlopen(argv[0], argc > 2 ? atoi(argv[2]) : 200);
	if (!strcmp(s, "mixed"))
		s_mixed();
	if (!strcmp(s, "busy"))
		return s_busy(argc > 2 ? atol(argv[2]) : 300);
	fprintf(stderr, "usage: gt-stress live|churn [N]|forks|signals|cancel|dlopen [N]|mixed|busy [MS]\n");
	return 2;
}
