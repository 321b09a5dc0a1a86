/* Target programs for tests/preload/test_losses.c: what a tracer may lose, and where it must
 * not get lost.  Each scenario prints what it did; the test compares that with an untraced
 * run.
 *   yields N [FSIZE]   N sched_yield calls (one fact each), with RLIMIT_FSIZE set to FSIZE
 *                      bytes first when given (the capture runs into it, the program not)
 *   chdir DIR          changes into DIR, then starts and joins a thread
 *   dlopen LIB         dlopen(LIB), whose constructor blocks on a lock
 *   waiters N          N threads wait at once on condvars that all hash to one waiter-table
 *                      window (more than it holds), then are woken
 *   threads N          N threads alive (ended, not joined) at once, then joined: more than
 *                      the tracer's thread table holds
 *   stacks BITS        2^BITS yields, each from a call path of its own (more stacks than the
 *                      tracer's stack table holds)
 *   execs N            execs itself N times (each image one yield), the last exits 0
 *   exec-fails N       an exec that fails (no such program), then N yields
 *   busy N BYTES FILE  two threads make N yields each while main writes BYTES to FILE, 4 KiB
 *                      a write (under a file size limit the program itself keeps to) */
#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

static int yields(long n, long fsize)
{
	if (fsize > 0) {
		struct rlimit rl = {(rlim_t)fsize, (rlim_t)fsize};
		if (setrlimit(RLIMIT_FSIZE, &rl) != 0)
			perror("setrlimit");
	}
	for (long i = 0; i < n; i++)
		sched_yield();
	printf("yields %ld done\n", n);
	return 0;
}

static void *nothing(void *arg) { return arg; }

static int change_dir(const char *dir)
{
	if (chdir(dir) != 0) {
		perror(dir);
		return 1;
	}
	pthread_t th;
	pthread_create(&th, NULL, nothing, NULL);
	pthread_join(th, NULL);
	printf("in %s\n", dir);
	return 0;
}

static int load(const char *lib)
{
	void *h = dlopen(lib, RTLD_NOW);
	if (!h) {
		printf("dlopen: %s\n", dlerror());
		return 1;
	}
	int (*ran)(void) = (int (*)(void))dlsym(h, "gt_losses_ctor_ran");
	printf("constructor %s\n", ran && ran() ? "ran" : "did not run");
	dlclose(h);
	return 0;
}

/* ---- waiters: the hash of preload/facts.c's waiter table, to pick colliding objects ---- */
#define WAITER_SLOTS 1024u
#define MAX_WAITERS 64
#define POOL 65536
static pthread_cond_t pool[POOL];
static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t all_in = PTHREAD_COND_INITIALIZER;
static pthread_cond_t *chosen[MAX_WAITERS];
static int n_in, go, n_waiters;

static unsigned waiter_home(uint64_t obj)
{
	return (unsigned)((obj >> 3) * 0x9E3779B97F4A7C15ull >> 54) & (WAITER_SLOTS - 1);
}

static void *waiter(void *arg)
{
	pthread_cond_t *c = arg;
	pthread_mutex_lock(&m);
	/* main takes m back only once this thread is inside pthread_cond_wait: registered */
	if (++n_in == n_waiters)
		pthread_cond_signal(&all_in);
	while (!go)
		pthread_cond_wait(c, &m);
	pthread_mutex_unlock(&m);
	return NULL;
}

static int waiters(int n)
{
	if (n < 1 || n > MAX_WAITERS)
		return 2;
	unsigned home = waiter_home((uint64_t)(uintptr_t)&pool[0]);
	int k = 0;
	for (int i = 0; i < POOL && k < n; i++)
		if (waiter_home((uint64_t)(uintptr_t)&pool[i]) == home)
			chosen[k++] = &pool[i];
	if (k < n) {
		printf("only %d condvars share a window\n", k);
		return 1;
	}
	for (int i = 0; i < n; i++)
		pthread_cond_init(chosen[i], NULL);
	n_waiters = n;
	pthread_t th[MAX_WAITERS];
	for (int i = 0; i < n; i++)
		pthread_create(&th[i], NULL, waiter, chosen[i]);
	pthread_mutex_lock(&m);
	while (n_in < n)
		pthread_cond_wait(&all_in, &m);
	go = 1;
	for (int i = 0; i < n; i++)
		pthread_cond_broadcast(chosen[i]);
	pthread_mutex_unlock(&m);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("%d waiters woken\n", n);
	return 0;
}

static sem_t started;

static void *announce(void *arg)
{
	sem_post(&started);
	return arg;
}

static int many_threads(int n)
{
	sem_init(&started, 0, 0);
	pthread_t *th = calloc((size_t)n, sizeof *th);
	pthread_attr_t attr;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	int made = 0;
	for (int i = 0; i < n; i++)
		made += pthread_create(&th[i], &attr, announce, NULL) == 0;
	/* every thread has registered itself before the first join frees a table slot */
	for (int i = 0; i < made; i++)
		sem_wait(&started);
	for (int i = 0; i < made; i++)
		pthread_join(th[i], NULL);
	printf("%d threads\n", made);
	free(th);
	return 0;
}

static void *yielder(void *arg)
{
	for (long i = 0, n = (long)(intptr_t)arg; i < n; i++)
		sched_yield();
	return NULL;
}

static int busy(long n, long bytes, const char *path)
{
	static char page[4096];
	pthread_t th[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, yielder, (void *)(intptr_t)n);
	FILE *f = fopen(path, "w");
	long wrote = 0;
	while (f && wrote < bytes) {
		size_t k = bytes - wrote < (long)sizeof page ? (size_t)(bytes - wrote) : sizeof page;
		if (fwrite(page, 1, k, f) != k || fflush(f) != 0)
			break;
		wrote += (long)k;
	}
	if (f)
		fclose(f);
	for (int i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	printf("busy %ld wrote %ld\n", n, wrote);
	return 0;
}

static int execs(char *self, long left)
{
	sched_yield();
	if (left <= 0) {
		printf("execs done\n");
		return 0;
	}
	char n[24];
	snprintf(n, sizeof n, "%ld", left - 1);
	char *argv[] = {self, (char *)"execs", n, NULL};
	execv(self, argv);
	perror("execv");
	return 1;
}

/* ---- stacks: one call path per bit pattern ---- */
static volatile int sink;

/* two call sites, no tail calls: each level is a frame, each bit a return address */
static __attribute__((noinline)) void descend(unsigned long path, int level)
{
	if (!level) {
		sched_yield();
	} else if (path & 1) {
		descend(path >> 1, level - 1);
		sink += 1;
	} else {
		descend(path >> 1, level - 1);
		sink += 2;
	}
}

static int stacks(int bits)
{
	for (unsigned long i = 0; i < 1ul << bits; i++)
		descend(i, bits);
	printf("%lu call paths\n", 1ul << bits);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc >= 3 && !strcmp(argv[1], "yields"))
		return yields(atol(argv[2]), argc >= 4 ? atol(argv[3]) : 0);
	if (argc == 3 && !strcmp(argv[1], "chdir"))
		return change_dir(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "dlopen"))
		return load(argv[2]);
	if (argc == 3 && !strcmp(argv[1], "waiters"))
		return waiters(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "threads"))
		return many_threads(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "stacks"))
		return stacks(atoi(argv[2]));
	if (argc == 3 && !strcmp(argv[1], "exec-fails")) {
		char *none[] = {(char *)"/nonexistent/gt-losses-none", NULL};
		execv(none[0], none);
		return yields(atol(argv[2]), 0);
	}
	if (argc == 3 && !strcmp(argv[1], "execs"))
		return execs(argv[0], atol(argv[2]));
	if (argc == 5 && !strcmp(argv[1], "busy"))
		return busy(atol(argv[2]), atol(argv[3]), argv[4]);
	fprintf(stderr, "usage: gt-losses yields N [FSIZE] | chdir DIR | dlopen LIB | waiters N | "
		"threads N | stacks BITS | busy N BYTES FILE | execs N\n");
	return 2;
}
