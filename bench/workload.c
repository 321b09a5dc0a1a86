/* workload: small programs whose synchronisation a tracer records, for scripts/bench.
 *
 *   workload mutex   [ROUNDS]   4 threads take one lock ROUNDS times each (default 20000)
 *   workload condvar [ROUNDS]   2 threads pass a turn through a condition variable
 *                               ROUNDS times each way (default 10000)
 *   workload pipe    [ROUNDS [SECONDS]]  2 threads pass one byte back and forth through 2
 *                               pipes ROUNDS times (default 10000), or until SECONDS have passed
 *   workload churn   [THREADS]  creates and joins THREADS threads one after the other
 *                               (default 10000)
 *
 * Prints one line that the work did what it should (counts), so a run whose result differs
 * from the untraced one is seen. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long rounds;
static double seconds; /* pipe: stop after this long (0: after ROUNDS) */

static void check(int rc, const char *what)
{
	if (rc) {
		fprintf(stderr, "workload: %s: %s\n", what, strerror(rc));
		exit(1);
	}
}

/* ---- mutex: 4 threads, one lock --------------------------------------------------------- */

static pthread_mutex_t big_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t all_started;
static unsigned long shared_counter;

static void *mutex_worker(void *arg)
{
	(void)arg;
	/* all four contend from the start, not one after the other as they are created */
	pthread_barrier_wait(&all_started);
	unsigned long local = 1;
	for (long i = 0; i < rounds; i++) {
		pthread_mutex_lock(&big_lock);
		/* as long a critical section as the work outside it: the lock is contended */
		for (int k = 0; k < 100; k++)
			shared_counter = shared_counter * 3 + 1;
		pthread_mutex_unlock(&big_lock);
		for (int k = 0; k < 100; k++)
			local = local * 5 + (unsigned long)k;
	}
	if (local == 0)
		puts("unreachable");
	return NULL;
}

static void run_mutex(void)
{
	pthread_t th[4];
	check(pthread_barrier_init(&all_started, NULL, 4), "pthread_barrier_init");
	for (int i = 0; i < 4; i++)
		check(pthread_create(&th[i], NULL, mutex_worker, NULL), "pthread_create");
	for (int i = 0; i < 4; i++)
		check(pthread_join(th[i], NULL), "pthread_join");
	printf("mutex: %ld rounds x 4 threads, counter %lu\n", rounds, shared_counter);
}

/* ---- condvar ping-pong ------------------------------------------------------------------ */

static pthread_mutex_t turn_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t turn_changed = PTHREAD_COND_INITIALIZER;
static int turn;
static long passes;

static void *condvar_player(void *arg)
{
	int me = (int)(long)arg;
	for (long i = 0; i < rounds; i++) {
		pthread_mutex_lock(&turn_lock);
		while (turn != me)
			pthread_cond_wait(&turn_changed, &turn_lock);
		turn = 1 - me;
		passes++;
		pthread_cond_signal(&turn_changed);
		pthread_mutex_unlock(&turn_lock);
	}
	return NULL;
}

static void run_condvar(void)
{
	pthread_t th[2];
	for (long i = 0; i < 2; i++)
		check(pthread_create(&th[i], NULL, condvar_player, (void *)i), "pthread_create");
	for (int i = 0; i < 2; i++)
		check(pthread_join(th[i], NULL), "pthread_join");
	printf("condvar: %ld passes\n", passes);
}

/* ---- pipe ping-pong --------------------------------------------------------------------- */

static int ping[2], pong[2];

static void must_io(ssize_t got, const char *what)
{
	if (got != 1) {
		perror(what);
		exit(1);
	}
}

static void *pipe_echo(void *arg)
{
	(void)arg;
	char c;
	for (long i = 0; i < rounds; i++) {
		ssize_t got = read(ping[0], &c, 1);
		if (got == 0 && seconds > 0)
			break; /* the main thread's time is up: it closed the pipe */
		must_io(got, "workload: read ping");
		c++;
		must_io(write(pong[1], &c, 1), "workload: write pong");
	}
	return NULL;
}

static void run_pipe(void)
{
	if (pipe(ping) || pipe(pong)) {
		perror("workload: pipe");
		exit(1);
	}
	pthread_t th;
	check(pthread_create(&th, NULL, pipe_echo, NULL), "pthread_create");
	unsigned char c = 0;
	unsigned long sum = 0;
	struct timespec t0, t;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	long i;
	for (i = 0; i < rounds; i++) {
		if (seconds > 0 && (i & 1023) == 0) {
			clock_gettime(CLOCK_MONOTONIC, &t);
			double spent =
				(double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9;
			if (spent >= seconds)
				break;
		}
		must_io(write(ping[1], &c, 1), "workload: write ping");
		must_io(read(pong[0], &c, 1), "workload: read pong");
		sum += c;
	}
	close(ping[1]);
	check(pthread_join(th, NULL), "pthread_join");
	printf("pipe: %ld round trips, sum %lu\n", i, sum);
}

/* ---- thread churn ----------------------------------------------------------------------- */

static void *churn_body(void *arg) { return arg; }

static void run_churn(void)
{
	unsigned long sum = 0;
	for (long i = 0; i < rounds; i++) {
		pthread_t th;
		void *ret;
		check(pthread_create(&th, NULL, churn_body, (void *)(i & 7)), "pthread_create");
		check(pthread_join(th, &ret), "pthread_join");
		sum += (unsigned long)ret;
	}
	printf("churn: %ld threads, sum %lu\n", rounds, sum);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*run)(void);
		long default_rounds;
	} workloads[] = {
		{"mutex", run_mutex, 20000},
		{"condvar", run_condvar, 10000},
		{"pipe", run_pipe, 10000},
		{"churn", run_churn, 10000},
	};
	if (argc < 2 || argc > 4 || (argc == 4 && strcmp(argv[1], "pipe"))) {
		fprintf(stderr, "usage: workload mutex|condvar|pipe|churn [ROUNDS]\n"
				"       workload pipe ROUNDS SECONDS\n");
		return 2;
	}
	for (size_t i = 0; i < sizeof workloads / sizeof workloads[0]; i++) {
		if (strcmp(argv[1], workloads[i].name))
			continue;
		rounds = argc >= 3 ? atol(argv[2]) : workloads[i].default_rounds;
		seconds = argc == 4 ? atof(argv[3]) : 0;
		if (rounds < 1 || seconds < 0) {
			fprintf(stderr, "workload: ROUNDS must be positive, SECONDS >= 0\n");
			return 2;
		}
		workloads[i].run();
		return 0;
	}
	fprintf(stderr, "workload: unknown workload %s\n", argv[1]);
	return 2;
}
