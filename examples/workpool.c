/* workpool: a small worker pool that makes a gotrace trace worth looking at.
 *
 * A producer thread feeds jobs through a bounded queue (one mutex, two condition
 * variables) to a pool of workers.  Every worker folds its result into shared totals under
 * one deliberately contended lock, and reports progress through a pipe to a logger thread
 * that blocks in read().  The producer sleeps between batches, so the timeline shows
 * bursts of work, lock contention, condvar hand-offs, a blocking syscall and sleeps.
 * All threads are named.  It runs for about a second and prints a deterministic summary.
 *
 * usage: workpool [JOBS [WORKERS]]   (defaults: 240 jobs, 4 workers)
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define QUEUE_CAPACITY 8
#define BATCH_SIZE 12
#define BATCH_PAUSE_NS 40000000L   /* 40 ms between batches: ~20 batches = ~0.8 s */
#define MAX_WORKERS 64
#define NO_MORE_JOBS 0u

struct job_queue {
	pthread_mutex_t lock;
	pthread_cond_t not_empty;
	pthread_cond_t not_full;
	unsigned jobs[QUEUE_CAPACITY];
	unsigned head, count;
};

static struct job_queue queue = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.not_empty = PTHREAD_COND_INITIALIZER,
	.not_full = PTHREAD_COND_INITIALIZER,
};

/* The contended lock: every finished job takes it and holds it while it folds the result
 * into the totals (slowly, on purpose). */
static pthread_mutex_t totals_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t totals_checksum;
static unsigned totals_jobs;

static int log_pipe[2];
static unsigned n_jobs = 240, n_workers = 4;

static void die(const char *what, int err)
{
	fprintf(stderr, "workpool: %s: %s\n", what, strerror(err));
	exit(1);
}

static void pause_ns(long ns)
{
	struct timespec ts = { .tv_sec = ns / 1000000000L, .tv_nsec = ns % 1000000000L };
	while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
		;
}

/* CPU work whose result does not depend on which thread does it. */
static __attribute__((noinline)) uint64_t compute_job(unsigned job)
{
	uint64_t x = job * 0x9e3779b97f4a7c15ull;
	for (int i = 0; i < 150000; i++)
		x = (x ^ (x >> 29)) * 0xbf58476d1ce4e5b9ull + (uint64_t)i;
	return x;
}

static __attribute__((noinline)) void queue_push(unsigned job)
{
	pthread_mutex_lock(&queue.lock);
	while (queue.count == QUEUE_CAPACITY)
		pthread_cond_wait(&queue.not_full, &queue.lock);
	queue.jobs[(queue.head + queue.count) % QUEUE_CAPACITY] = job;
	queue.count++;
	pthread_cond_signal(&queue.not_empty);
	pthread_mutex_unlock(&queue.lock);
}

static __attribute__((noinline)) unsigned queue_pop(void)
{
	pthread_mutex_lock(&queue.lock);
	while (queue.count == 0)
		pthread_cond_wait(&queue.not_empty, &queue.lock);
	unsigned job = queue.jobs[queue.head];
	queue.head = (queue.head + 1) % QUEUE_CAPACITY;
	queue.count--;
	pthread_cond_signal(&queue.not_full);
	pthread_mutex_unlock(&queue.lock);
	return job;
}

/* Returns how many jobs are recorded, this one included. */
static __attribute__((noinline)) unsigned record_result(uint64_t result)
{
	pthread_mutex_lock(&totals_lock);
	/* Held across a little work so that the other workers queue up behind it. */
	totals_checksum += compute_job((unsigned)result) >> 8;
	unsigned recorded = ++totals_jobs;
	pthread_mutex_unlock(&totals_lock);
	return recorded;
}

static __attribute__((noinline)) void log_progress(unsigned recorded)
{
	char line[64];
	int len = snprintf(line, sizeof line, "%u jobs recorded\n", recorded);
	if (write(log_pipe[1], line, (size_t)len) != len)
		die("write to log pipe", errno);
}

static void *producer_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "producer");
	for (unsigned job = 1; job <= n_jobs; job++) {
		queue_push(job);
		if (job % BATCH_SIZE == 0)
			pause_ns(BATCH_PAUSE_NS);
	}
	for (unsigned i = 0; i < n_workers; i++)
		queue_push(NO_MORE_JOBS);
	return NULL;
}

static void *worker_main(void *arg)
{
	unsigned worker = (unsigned)(uintptr_t)arg, done = 0;
	char name[16];
	snprintf(name, sizeof name, "worker-%u", worker);
	pthread_setname_np(pthread_self(), name);
	for (;;) {
		unsigned job = queue_pop();
		if (job == NO_MORE_JOBS)
			break;
		unsigned recorded = record_result(compute_job(job));
		done++;
		if (recorded % 10 == 0)
			log_progress(recorded);
	}
	return (void *)(uintptr_t)done;
}

static void *logger_main(void *arg)
{
	unsigned *lines = arg;
	char buf[256];
	ssize_t n;
	pthread_setname_np(pthread_self(), "logger");
	while ((n = read(log_pipe[0], buf, sizeof buf)) != 0) {
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("read from log pipe", errno);
		}
		for (ssize_t i = 0; i < n; i++)
			*lines += buf[i] == '\n';
	}
	return NULL;
}

static unsigned parse_count(const char *text, unsigned max)
{
	char *end;
	unsigned long v = strtoul(text, &end, 10);
	if (*text == '\0' || *end != '\0' || v == 0 || v > max) {
		fprintf(stderr, "workpool: bad count '%s' (1..%u)\n", text, max);
		exit(2);
	}
	return (unsigned)v;
}

int main(int argc, char **argv)
{
	pthread_t producer, logger, workers[MAX_WORKERS];
	unsigned log_lines = 0, jobs_done = 0;
	int err;

	if (argc > 1)
		n_jobs = parse_count(argv[1], 1000000);
	if (argc > 2)
		n_workers = parse_count(argv[2], MAX_WORKERS);
	if (pipe(log_pipe) != 0)
		die("pipe", errno);

	if ((err = pthread_create(&logger, NULL, logger_main, &log_lines)) != 0)
		die("pthread_create", err);
	for (unsigned i = 0; i < n_workers; i++)
		if ((err = pthread_create(&workers[i], NULL, worker_main,
					  (void *)(uintptr_t)(i + 1))) != 0)
			die("pthread_create", err);
	if ((err = pthread_create(&producer, NULL, producer_main, NULL)) != 0)
		die("pthread_create", err);

	pthread_join(producer, NULL);
	for (unsigned i = 0; i < n_workers; i++) {
		void *done;
		pthread_join(workers[i], &done);
		jobs_done += (unsigned)(uintptr_t)done;
	}
	close(log_pipe[1]);
	pthread_join(logger, NULL);
	close(log_pipe[0]);

	printf("workpool: %u jobs done by %u workers (%u recorded), checksum %016llx, "
	       "%u progress lines\n", jobs_done, n_workers, totals_jobs,
	       (unsigned long long)totals_checksum, log_lines);
	return 0;
}
