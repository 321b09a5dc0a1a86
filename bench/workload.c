/* workload: small programs whose synchronisation a tracer records, for scripts/bench.
 *
 *   workload mutex   [ROUNDS [THREADS]]  THREADS threads (default 4) take one lock ROUNDS
 *                               times each (default 20000)
 *   workload condvar [ROUNDS]   2 threads pass a turn through a condition variable
 *                               ROUNDS times each way (default 10000)
 *   workload pipe    [ROUNDS [SECONDS]]  2 threads pass one byte back and forth through 2
 *                               pipes ROUNDS times (default 10000), or until SECONDS have passed
 *   workload churn   [THREADS]  creates and joins THREADS threads one after the other
 *                               (default 10000)
 *   workload server  [JOBS [WORKERS]]  2 producers hand JOBS jobs (default 100000) to
 *                               WORKERS workers (default 8) through a queue of 16 slots
 *                               guarded by one mutex and two condition variables
 *   workload timers  [SLEEPERS [SECONDS]]  a database server's shape (mariadbd): SLEEPERS
 *                               threads (default 400) in 50 ms timed condition waits, each
 *                               on a condition variable and mutex of its own, beside 4
 *                               producers and 32 workers on one queue, for SECONDS (default 3)
 *
 * Prints one line that the work did what it should (counts), so a run whose result differs
 * from the untraced one is seen. */
#include <pthread.h>
#include <stdio.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 256

static long rounds;
static double seconds; /* pipe: stop after this long (0: after ROUNDS) */
static int threads;    /* mutex, server: how many threads take the lock (workers) */

static void check(int rc, const char *what)
{
	if (rc) {
		fprintf(stderr, "workload: %s: %s\n", what, strerror(rc));
		exit(1);
	}
}

/* ---- mutex: THREADS threads, one lock --------------------------------------------------- */

static pthread_mutex_t big_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t all_started;
static unsigned long shared_counter;

static void *mutex_worker(void *arg)
{
	(void)arg;
	/* all contend from the start, not one after the other as they are created */
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
	pthread_t th[MAX_THREADS];
	check(pthread_barrier_init(&all_started, NULL, (unsigned)threads), "pthread_barrier_init");
	for (int i = 0; i < threads; i++)
		check(pthread_create(&th[i], NULL, mutex_worker, NULL), "pthread_create");
	for (int i = 0; i < threads; i++)
		check(pthread_join(th[i], NULL), "pthread_join");
	printf("mutex: %ld rounds x %d threads, counter %lu\n", rounds, threads, shared_counter);
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

/* ---- server: a work queue, more workers than CPUs ---------------------------------------- */

/* A thread pool's shape: short critical sections on one lock, a little work per job outside
 * it, workers waiting for jobs and producers waiting for room, so some threads are always
 * blocked while the others lock and unlock; each job's result is added to a shared total
 * under a second, seldom contended lock, as a server counts what it served. */
#define QUEUE_SLOTS 16
#define PRODUCERS 2

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static long queue[QUEUE_SLOTS];
static int queue_head, queue_len;
static int producers_done;
static pthread_mutex_t total_lock = PTHREAD_MUTEX_INITIALIZER;
static unsigned long jobs_total;

/* the work of one job outside the lock: its result depends on the job alone, so the sum of
 * all results is the same whichever worker took which job */
static unsigned long job_work(long job, int steps)
{
	unsigned long x = (unsigned long)job;
	for (int k = 0; k < steps; k++)
		x = x * 6364136223846793005UL + 1442695040888963407UL;
	return x;
}

static void *server_producer(void *arg)
{
	long first = (long)arg;
	for (long job = first; job < rounds; job += PRODUCERS) {
		/* a request is read and parsed before it is queued */
		long item = (long)(job_work(job, 100) >> 1);
		pthread_mutex_lock(&queue_lock);
		while (queue_len == QUEUE_SLOTS)
			pthread_cond_wait(&not_full, &queue_lock);
		queue[(queue_head + queue_len) % QUEUE_SLOTS] = item;
		queue_len++;
		pthread_cond_signal(&not_empty);
		pthread_mutex_unlock(&queue_lock);
	}
	return NULL;
}

static void *server_worker(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&queue_lock);
		while (queue_len == 0 && !producers_done)
			pthread_cond_wait(&not_empty, &queue_lock);
		if (queue_len == 0) {
			pthread_mutex_unlock(&queue_lock);
			break;
		}
		long job = queue[queue_head];
		queue_head = (queue_head + 1) % QUEUE_SLOTS;
		queue_len--;
		pthread_cond_signal(&not_full);
		pthread_mutex_unlock(&queue_lock);
		unsigned long result = job_work(job, 1000);
		pthread_mutex_lock(&total_lock);
		jobs_total += result;
		pthread_mutex_unlock(&total_lock);
	}
	return NULL;
}

static void run_server(void)
{
	pthread_t workers[MAX_THREADS], producers[PRODUCERS];
	for (int i = 0; i < threads; i++)
		check(pthread_create(&workers[i], NULL, server_worker, NULL), "pthread_create");
	for (long i = 0; i < PRODUCERS; i++)
		check(pthread_create(&producers[i], NULL, server_producer, (void *)i),
		      "pthread_create");
	for (int i = 0; i < PRODUCERS; i++)
		check(pthread_join(producers[i], NULL), "pthread_join");
	pthread_mutex_lock(&queue_lock);
	producers_done = 1;
	pthread_cond_broadcast(&not_empty);
	pthread_mutex_unlock(&queue_lock);
	for (int i = 0; i < threads; i++)
		check(pthread_join(workers[i], NULL), "pthread_join");
	printf("server: %ld jobs, %d workers, %d producers, sum %lu\n", rounds, threads, PRODUCERS,
	       jobs_total);
}

/* ---- timers: many long timed waits beside a busy queue (a database server's shape) ------ */

/* mariadbd's background and idle connection threads wait in pthread_cond_timedwait, each on
 * a condition variable of its own that nobody signals, while a few threads pass work through
 * one queue: a capture with many threads, many condition variables and waits longer than
 * the conversion's lookahead (issue 27, item 7). */
#define TIMER_WAIT_NS 50000000L
#define TIMER_PRODUCERS 4
#define TIMER_WORKERS 32

struct sleeper {
	pthread_mutex_t lock;
	pthread_cond_t tick;
	long timeouts;
};

static volatile int timers_stop;

static void *timer_sleeper(void *arg)
{
	struct sleeper *s = arg;
	pthread_mutex_lock(&s->lock);
	while (!timers_stop) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += TIMER_WAIT_NS;
		if (until.tv_nsec >= 1000000000L) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000L;
		}
		if (pthread_cond_timedwait(&s->tick, &s->lock, &until) == ETIMEDOUT)
			s->timeouts++;
	}
	pthread_mutex_unlock(&s->lock);
	return NULL;
}

/* a producer queues jobs until the time is up (the server's producer, without a job count) */
static void *timer_producer(void *arg)
{
	long job = (long)arg;
	while (!timers_stop) {
		long item = (long)(job_work(job, 2000) >> 1);
		pthread_mutex_lock(&queue_lock);
		while (queue_len == QUEUE_SLOTS && !timers_stop)
			pthread_cond_wait(&not_full, &queue_lock);
		if (queue_len < QUEUE_SLOTS) {
			queue[(queue_head + queue_len) % QUEUE_SLOTS] = item;
			queue_len++;
			pthread_cond_signal(&not_empty);
		}
		pthread_mutex_unlock(&queue_lock);
		job += TIMER_PRODUCERS;
	}
	return NULL;
}

static void run_timers(void)
{
	long n = rounds;
	struct sleeper *s = calloc((size_t)n, sizeof *s);
	pthread_t *th = calloc((size_t)n + TIMER_PRODUCERS + TIMER_WORKERS, sizeof *th);
	check(s && th ? 0 : ENOMEM, "calloc");
	for (long i = 0; i < n; i++) {
		check(pthread_mutex_init(&s[i].lock, NULL), "pthread_mutex_init");
		check(pthread_cond_init(&s[i].tick, NULL), "pthread_cond_init");
		check(pthread_create(&th[i], NULL, timer_sleeper, &s[i]), "pthread_create");
	}
	for (long i = 0; i < TIMER_WORKERS; i++)
		check(pthread_create(&th[n + i], NULL, server_worker, NULL), "pthread_create");
	for (long i = 0; i < TIMER_PRODUCERS; i++)
		check(pthread_create(&th[n + TIMER_WORKERS + i], NULL, timer_producer, (void *)i),
		      "pthread_create");
	double secs = seconds > 0 ? seconds : 3;
	struct timespec run = {(time_t)secs, (long)((secs - (double)(time_t)secs) * 1e9)};
	nanosleep(&run, NULL);
	timers_stop = 1;
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&s[i].lock);
		pthread_cond_signal(&s[i].tick);
		pthread_mutex_unlock(&s[i].lock);
	}
	pthread_mutex_lock(&queue_lock);
	pthread_cond_broadcast(&not_full);
	pthread_mutex_unlock(&queue_lock);
	for (long i = 0; i < TIMER_PRODUCERS; i++)
		check(pthread_join(th[n + TIMER_WORKERS + i], NULL), "pthread_join");
	pthread_mutex_lock(&queue_lock);
	producers_done = 1;
	pthread_cond_broadcast(&not_empty);
	pthread_mutex_unlock(&queue_lock);
	long timeouts = 0;
	for (long i = 0; i < n + TIMER_WORKERS; i++)
		check(pthread_join(th[i], NULL), "pthread_join");
	for (long i = 0; i < n; i++)
		timeouts += s[i].timeouts;
	printf("timers: %ld sleepers (%s timeouts), %d workers, %d producers\n", n,
	       timeouts > 0 ? "with" : "no", TIMER_WORKERS, TIMER_PRODUCERS);
	free(s);
	free(th);
}

/* parked: ROUNDS threads with 256 KiB stacks alive at once, each blocked on a condition
 * variable (a fact with its stack) until the last one has started: what a live thread costs in
 * memory, the tracer's share of it included (issue 28, item 12) */
static pthread_mutex_t park_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t park_all_in = PTHREAD_COND_INITIALIZER, park_go = PTHREAD_COND_INITIALIZER;
static long parked;
static int park_released;

static void *park(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&park_lock);
	if (++parked == rounds)
		pthread_cond_signal(&park_all_in);
	while (!park_released)
		pthread_cond_wait(&park_go, &park_lock);
	pthread_mutex_unlock(&park_lock);
	return NULL;
}

static void run_parked(void)
{
	pthread_t *t = calloc((size_t)rounds, sizeof *t);
	pthread_attr_t attr;
	check(t ? 0 : ENOMEM, "calloc");
	check(pthread_attr_init(&attr), "pthread_attr_init");
	check(pthread_attr_setstacksize(&attr, 256 << 10), "pthread_attr_setstacksize");
	for (long i = 0; i < rounds; i++)
		check(pthread_create(&t[i], &attr, park, NULL), "pthread_create");
	pthread_mutex_lock(&park_lock);
	while (parked < rounds)
		pthread_cond_wait(&park_all_in, &park_lock);
	park_released = 1;
	pthread_cond_broadcast(&park_go);
	pthread_mutex_unlock(&park_lock);
	for (long i = 0; i < rounds; i++)
		check(pthread_join(t[i], NULL), "pthread_join");
	free(t);
	printf("parked: %ld threads, all alive at once\n", rounds);
}

int main(int argc, char **argv)
{
	static const struct {
		const char *name;
		void (*run)(void);
		long default_rounds;
		char third; /* what a third argument is: 's' SECONDS, 't' THREADS, 0 none */
		int default_threads;
	} workloads[] = {
		{"mutex", run_mutex, 20000, 't', 4},
		{"condvar", run_condvar, 10000, 0, 0},
		{"pipe", run_pipe, 10000, 's', 0},
		{"churn", run_churn, 10000, 0, 0},
		{"server", run_server, 100000, 't', 8},
		{"parked", run_parked, 1000, 0, 0},
		{"timers", run_timers, 400, 's', 0},
	};
	for (size_t i = 0; argc >= 2 && i < sizeof workloads / sizeof workloads[0]; i++) {
		if (strcmp(argv[1], workloads[i].name))
			continue;
		if (argc > (workloads[i].third ? 4 : 3))
			break;
		rounds = argc >= 3 ? atol(argv[2]) : workloads[i].default_rounds;
		seconds = argc == 4 && workloads[i].third == 's' ? atof(argv[3]) : 0;
		threads = argc == 4 && workloads[i].third == 't' ? atoi(argv[3])
								 : workloads[i].default_threads;
		if (rounds < 1 || seconds < 0 || threads < 0 || threads > MAX_THREADS ||
		    (workloads[i].third == 't' && threads < 1)) {
			fprintf(stderr,
				"workload: ROUNDS must be positive, SECONDS >= 0, THREADS"
				" 1 to %d\n",
				MAX_THREADS);
			return 2;
		}
		workloads[i].run();
		return 0;
	}
	fprintf(stderr, "usage: workload mutex|condvar|pipe|churn|server|parked|timers [ROUNDS]\n"
			"       workload mutex|server ROUNDS THREADS\n"
			"       workload pipe|timers ROUNDS SECONDS\n");
	return 2;
}
