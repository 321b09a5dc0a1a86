/* Signal handlers and blocking calls (tests/preload/test_signals.c).
 *
 *   gt-signals jump N    a SIGALRM handler siglongjmps out of N blocking reads, N sleeps,
 *                        N condition waits and N semaphore waits; then the program makes a
 *                        known number of calls, and says how many of each it made
 *   gt-signals jump-after-write N
 *                        the same, the handler writing (a call nested in the wait) first
 *   gt-signals jump-anywhere N, jump-anywhere-after-write N
 *                        an interval timer's handler jumps back N times from wherever its
 *                        signal lands in a loop of writes to /dev/null: inside the hooks too,
 *                        between a record's reservation and its commit; the handler writing
 *                        first, or not; stderr "jumps N": how many it made
 *   gt-signals threads N N threads with 256 KiB stacks each take a signal whose handler
 *                        writes (a hooked call on a stack that crosses a signal frame), then
 *                        wait together while the main thread reads its RSS: stderr "rss KB"
 *   gt-signals nested    a read on a pipe blocks about 300 ms; a child exits 100 ms into it
 *                        and the SIGCHLD handler reaps it (waitpid, nested in the read);
 *                        another child writes 300 ms after that reap: stderr "read MS"
 *   gt-signals alloc N   N threads allocate and free (an allocator preloaded first: jemalloc,
 *                        tcmalloc), each after a signal whose handler writes, and meet on a
 *                        shared mutex; says what it allocated
 *
 * Every wait here blocks until the timer's signal ends it: its handler leaves by siglongjmp,
 * as interpreters and servers with timeouts do. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wait_blocked.h"

static sigjmp_buf jump_back;
static volatile sig_atomic_t jumps;
static int handler_writes = -1; /* >= 0: the handler writes there before it jumps */

static void jump_handler(int sig)
{
	(void)sig;
	jumps++;
	if (handler_writes >= 0 && write(handler_writes, "j", 1) != 1)
		_exit(8);
	siglongjmp(jump_back, 1);
}

/* the timer fires once, us microseconds from now */
static void arm(long us)
{
	struct itimerval it = {.it_value = {.tv_sec = 0, .tv_usec = us}};
	setitimer(ITIMER_REAL, &it, NULL);
}

enum { W_READ, W_SLEEP, W_COND, W_SEM, W_KINDS };
static const char *const wait_names[W_KINDS] = {"read", "sleep", "cond", "sem"};

struct cond_pair {
	pthread_cond_t cond;
	pthread_mutex_t m;
};

/* Blocks in one call of the kind until the timer's handler jumps out of it. */
static void wait_until_jumped(int kind, int fd, struct cond_pair *pair)
{
	char c;
	struct timespec long_sleep = {.tv_sec = 30};
	static sem_t sem;
	switch (kind) {
	case W_READ:
		if (read(fd, &c, 1) >= 0)
			exit(3);
		break;
	case W_SLEEP:
		nanosleep(&long_sleep, NULL);
		break;
	case W_COND:
		/* a fresh pair each time (made before the timer is armed: a jump out of malloc
		 * would leave its lock held): the abandoned wait stays counted in the old
		 * condvar, and a jump before the wait released it leaves the mutex locked */
		pthread_mutex_lock(&pair->m);
		pthread_cond_wait(&pair->cond, &pair->m);
		break;
	case W_SEM:
		sem_init(&sem, 0, 0);
		sem_wait(&sem);
		break;
	}
	exit(4); /* not reached: nothing ends these waits but the jump */
}

/* One wait left by the handler's jump, the timer armed for delay_us: the delay varies so
 * that some signals land in the hooks' own work, before the call blocks */
static __attribute__((noinline)) void jump_out(int kind, int fd, long delay_us)
{
	struct cond_pair pair = {PTHREAD_COND_INITIALIZER, PTHREAD_MUTEX_INITIALIZER};
	if (!sigsetjmp(jump_back, 1)) {
		arm(delay_us);
		wait_until_jumped(kind, fd, &pair);
	}
}

static int s_jump(int n, int nested)
{
	if (nested)
		handler_writes = open("/dev/null", O_WRONLY);
	struct sigaction sa = {.sa_handler = jump_handler};
	sigaction(SIGALRM, &sa, NULL);
	int p[2];
	if (pipe(p))
		return 2;
	for (int kind = 0; kind < W_KINDS; kind++) {
		for (int i = 0; i < n; i++)
			jump_out(kind, p[0], 1 + 23 * (i % 50));
		printf("%s jumped out of %d\n", wait_names[kind], n);
	}
	/* what comes after: each of these must be recorded */
	struct timespec tick = {.tv_nsec = 1000};
	for (int i = 0; i < 300; i++)
		nanosleep(&tick, NULL);
	for (int i = 0; i < 1000; i++) {
		if (write(p[1], "x", 1) != 1 || read(p[0], &(char){0}, 1) != 1)
			return 5;
		sched_yield();
	}
	printf("jumps %d, then 300 sleeps, 1000 writes, 1000 reads, 1000 yields\n", (int)jumps);
	return 0;
}

/* Writes to /dev/null until the handler has jumped n times: whether each jump came from the
 * hooks, the real call or the loop is the timer's chance. */
static int s_jump_anywhere(int n, int nested)
{
	if (nested)
		handler_writes = open("/dev/null", O_WRONLY);
	int fd = open("/dev/null", O_WRONLY);
	static char buf[64];
	struct sigaction sa = {.sa_handler = jump_handler};
	sigaction(SIGALRM, &sa, NULL);
	struct itimerval every = {.it_interval = {.tv_usec = 37}, .it_value = {.tv_usec = 37}};
	struct itimerval off = {{0, 0}, {0, 0}};
	if (!sigsetjmp(jump_back, 1)) /* armed once jump_back is set */
		setitimer(ITIMER_REAL, &every, NULL);
	while (jumps < n)
		if (write(fd, buf, sizeof buf) != (ssize_t)sizeof buf)
			return 5;
	setitimer(ITIMER_REAL, &off, NULL);
	/* what comes after: each of these must be recorded */
	for (int i = 0; i < 1000; i++)
		if (write(fd, buf, 1) != 1)
			return 5;
	printf("jumped %d times or more, then 1000 writes\n", n);
	fprintf(stderr, "jumps %d\n", (int)jumps);
	return 0;
}

/* ---- threads parked after a signal ---------------------------------------------------- */

static pthread_barrier_t parked, released;
static int devnull = -1;

static void write_handler(int sig)
{
	(void)sig;
	if (write(devnull, "s", 1) != 1)
		_exit(6);
}

static void *signalled_thread(void *arg)
{
	(void)arg;
	pthread_kill(pthread_self(), SIGUSR1);
	pthread_barrier_wait(&parked);
	pthread_barrier_wait(&released);
	return NULL;
}

static long rss_kb(void)
{
	char line[256];
	long kb = -1;
	FILE *f = fopen("/proc/self/status", "r");
	while (f && fgets(line, sizeof line, f))
		if (sscanf(line, "VmRSS: %ld kB", &kb) == 1)
			break;
	if (f)
		fclose(f);
	return kb;
}

static int s_threads(int n)
{
	devnull = open("/dev/null", O_WRONLY);
	struct sigaction sa = {.sa_handler = write_handler};
	sigaction(SIGUSR1, &sa, NULL);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 << 10);
	pthread_barrier_init(&parked, NULL, (unsigned)n + 1);
	pthread_barrier_init(&released, NULL, (unsigned)n + 1);
	pthread_t *th = calloc((size_t)n, sizeof *th);
	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], &attr, signalled_thread, NULL))
			return 7;
	pthread_barrier_wait(&parked);
	fprintf(stderr, "rss %ld\n", rss_kb());
	pthread_barrier_wait(&released);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("%d threads took a signal and waited\n", n);
	return 0;
}

/* ---- a handler's call nested in a blocking read ------------------------------------------ */

static volatile sig_atomic_t reaped;
static volatile pid_t quick_child;

static void reap_handler(int sig)
{
	(void)sig;
	int saved = errno, st;
	if (quick_child > 0 && waitpid(quick_child, &st, WNOHANG) == quick_child)
		reaped = 1;
	errno = saved;
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int s_nested(void)
{
	struct sigaction sa = {.sa_handler = reap_handler, .sa_flags = SA_RESTART};
	sigaction(SIGCHLD, &sa, NULL);
	int p[2];
	if (pipe(p))
		return 2;
	pid_t parent = getpid();
	sigset_t chld, old;
	sigemptyset(&chld);
	sigaddset(&chld, SIGCHLD);
	sigprocmask(SIG_BLOCK, &chld, &old); /* the handler knows the child's pid first */
	pid_t quick = fork();
	quick_child = quick;
	sigprocmask(SIG_SETMASK, &old, NULL);
	if (quick == 0) { /* exits 100 ms into the parent's read */
		gt_proc_wait_blocked(parent, parent, SYS_read, (uintptr_t)p[0], (uintptr_t)p[0] + 1);
		struct timespec t = {.tv_nsec = 100000000};
		nanosleep(&t, NULL);
		_exit(0);
	}
	pid_t writer = fork();
	if (writer == 0) { /* writes 300 ms after the handler reaped the first child */
		while (kill(quick, 0) == 0) /* raw: the polls are not the scenario's */
			syscall(SYS_sched_yield);
		struct timespec t = {.tv_nsec = 300000000};
		nanosleep(&t, NULL);
		_exit(write(p[1], "x", 1) == 1 ? 0 : 1);
	}
	char c;
	double start = now_ms();
	ssize_t n = read(p[0], &c, 1);
	double took = now_ms() - start;
	fprintf(stderr, "read %.1f\n", took);
	int st;
	start = now_ms();
	waitpid(writer, &st, 0);
	fprintf(stderr, "waitpid %.1f\n", now_ms() - start);
	printf("read %zd byte, the handler %s the child during it, the writer exited %d\n", n,
	       reaped ? "reaped" : "did not reap", WEXITSTATUS(st));
	return 0;
}

/* ---- allocation-heavy threads ----------------------------------------------------------- */

static pthread_mutex_t shared_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long shared_sum;

static void *allocating_thread(void *arg)
{
	unsigned seed = (unsigned)(uintptr_t)arg;
	unsigned long sum = 0;
	void *kept[64] = {0};
	pthread_kill(pthread_self(), SIGUSR1);
	for (int i = 0; i < 20000; i++) {
		seed = seed * 1103515245u + 12345u;
		size_t size = 16 + (seed >> 8) % ((seed & 1) ? 64 : 65536);
		unsigned k = (seed >> 20) % 64;
		free(kept[k]);
		kept[k] = malloc(size);
		memset(kept[k], (int)(i & 0xff), size < 64 ? size : 64);
		sum += size;
		if (i % 1000 == 0) {
			pthread_mutex_lock(&shared_lock);
			shared_sum += sum;
			pthread_mutex_unlock(&shared_lock);
		}
	}
	for (int k = 0; k < 64; k++)
		free(kept[k]);
	return (void *)sum;
}

static int s_alloc(int n)
{
	devnull = open("/dev/null", O_WRONLY);
	struct sigaction sa = {.sa_handler = write_handler};
	sigaction(SIGUSR1, &sa, NULL);
	pthread_t th[64];
	if (n > 64)
		return 2;
	for (int i = 0; i < n; i++)
		if (pthread_create(&th[i], NULL, allocating_thread, (void *)(uintptr_t)(i + 1)))
			return 7;
	unsigned long total = 0;
	for (int i = 0; i < n; i++) {
		void *r;
		pthread_join(th[i], &r);
		total += (unsigned long)r;
	}
	printf("%d threads allocated %lu bytes (%lu met on the lock)\n", n, total, shared_sum);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IONBF, 0);
	if (argc == 3 && !strcmp(argv[1], "jump"))
		return s_jump(atoi(argv[2]), 0);
	if (argc == 3 && !strcmp(argv[1], "jump-after-write"))
		return s_jump(atoi(argv[2]), 1);
	if (argc == 3 && !strcmp(argv[1], "jump-anywhere"))
		return s_jump_anywhere(atoi(argv[2]), 0);
	if (argc == 3 && !strcmp(argv[1], "jump-anywhere-after-write"))
		return s_jump_anywhere(atoi(argv[2]), 1);
	if (argc == 3 && !strcmp(argv[1], "threads"))
		return s_threads(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "alloc"))
		return s_alloc(atoi(argv[2]));
	if (argc == 2 && !strcmp(argv[1], "nested"))
		return s_nested();
	fprintf(stderr, "usage: gt-signals jump|threads|alloc N, gt-signals nested\n");
	return 2;
}
