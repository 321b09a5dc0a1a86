/* critical_chain MODE FILE: a chain of stages whose critical path is known by construction,
 * each stage's duration (CLOCK_MONOTONIC, from the hand-off that let it go to its own hand-off
 * to the next: stage-a from its creation) into FILE as "STAGE NS" lines, with "stage-b-cpu NS"
 * (stage-b's CPU time in its stage), "decoy-cpu NS" (the decoy's) and "decoy-tid TID".  Each hand-off passes its time on
 * (through the pipes' bytes, across the process boundary too).
 *
 *   stage-a sleeps 150 ms, then broadcasts a condition variable (threads, pinned) or writes a
 *           pipe (child);
 *   stage-b, woken by it, burns 200 ms of CPU, then writes a pipe: a thread, or in MODE child
 *           the main thread of a child process forked first;
 *   stage-c, woken by that write, burns 150 ms of CPU and returns; main joins it last.
 *   decoy, woken by stage-a (a semaphore) after stage-b (threads, pinned) or at once (child),
 *           burns 60 ms of CPU and returns; main joins it first: it is never on the path.
 *
 * MODE pinned runs the whole process on one CPU, so that stage-b and the decoy take turns:
 * stage-b is runnable part of its stage.  stdout is the same traced or not. */
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t go = PTHREAD_COND_INITIALIZER;
static bool went, child_mode;
static sem_t decoy_go;
static int a_to_b[2], b_to_c[2];
static uint64_t stage_ns[3], b_cpu_ns, decoy_cpu_ns;
static uint64_t a_created, a_handoff;   /* when main created stage-a, when stage-a woke b */
static int decoy_tid;

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static uint64_t cpu_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Burns ms of this thread's CPU time. */
static void burn(unsigned ms)
{
	uint64_t until = cpu_ns() + (uint64_t)ms * 1000000u;
	for (volatile unsigned spin = 0; cpu_ns() < until; spin++)
		continue;
}

static void wait_go(void)
{
	pthread_mutex_lock(&lock);
	while (!went)
		pthread_cond_wait(&go, &lock);
	pthread_mutex_unlock(&lock);
}

static void *stage_a(void *arg)
{
	(void)arg;
	struct timespec nap = {0, 150000000};
	nanosleep(&nap, NULL);
	uint64_t handoff = now_ns();
	stage_ns[0] = handoff - a_created;
	if (child_mode) {
		if (write(a_to_b[1], &handoff, sizeof handoff) != sizeof handoff)
			exit(5);
		return NULL;
	}
	pthread_mutex_lock(&lock);
	a_handoff = handoff;
	went = true;
	pthread_cond_signal(&go);
	pthread_mutex_unlock(&lock);
	sem_post(&decoy_go);
	return NULL;
}

/* Stage b: woken by stage a, burns, wakes stage c; its duration. */
static uint64_t stage_b_work(void)
{
	uint64_t c0 = cpu_ns(), from;
	if (child_mode) {
		if (read(a_to_b[0], &from, sizeof from) != sizeof from)
			exit(5);
	} else {
		wait_go();
		from = a_handoff;   /* written under the lock, before went */
	}
	burn(200);
	uint64_t handoff = now_ns();
	b_cpu_ns = cpu_ns() - c0;
	if (write(b_to_c[1], &handoff, sizeof handoff) != sizeof handoff)
		exit(5);
	return handoff - from;
}

static void *stage_b(void *arg)
{
	(void)arg;
	stage_ns[1] = stage_b_work();
	return NULL;
}

static void *stage_c(void *arg)
{
	(void)arg;
	uint64_t from;
	if (read(b_to_c[0], &from, sizeof from) != sizeof from)
		exit(5);
	burn(150);
	stage_ns[2] = now_ns() - from;
	return NULL;
}

static void *decoy(void *arg)
{
	(void)arg;
	decoy_tid = gettid();
	if (!child_mode)
		while (sem_wait(&decoy_go) != 0)
			continue;
	uint64_t c0 = cpu_ns();
	burn(60);
	decoy_cpu_ns = cpu_ns() - c0;
	return NULL;
}

static pthread_t start(void *(*fn)(void *), const char *name)
{
	pthread_t t;
	if (pthread_create(&t, NULL, fn, NULL) != 0)
		exit(4);
	pthread_setname_np(t, name);
	return t;
}

int main(int argc, char **argv)
{
	if (argc != 3 || (strcmp(argv[1], "threads") && strcmp(argv[1], "child") &&
			  strcmp(argv[1], "pinned"))) {
		fprintf(stderr, "usage: critical_chain threads|child|pinned FILE\n");
		return 2;
	}
	child_mode = strcmp(argv[1], "child") == 0;
	if (strcmp(argv[1], "pinned") == 0) {
		cpu_set_t one;
		CPU_ZERO(&one);
		CPU_SET(sched_getcpu(), &one);
		if (sched_setaffinity(0, sizeof one, &one) != 0)
			return 3;
	}
	if (pipe(a_to_b) != 0 || pipe(b_to_c) != 0 || sem_init(&decoy_go, 0, 0) != 0)
		return 4;
	FILE *f = fopen(argv[2], "w");
	if (f == NULL)
		return 4;
	pid_t child = 0;
	if (child_mode) {
		fflush(NULL);
		child = fork();
		if (child < 0)
			return 4;
		if (child == 0) {
			prctl(PR_SET_NAME, "stage-b");
			uint64_t ns = stage_b_work();
			fprintf(f, "stage-b %llu\nstage-b-cpu %llu\n", (unsigned long long)ns,
				(unsigned long long)b_cpu_ns);
			fclose(f);
			_exit(0);
		}
	}
	a_created = now_ns();
	pthread_t a = start(stage_a, "stage-a");
	pthread_t b = child_mode ? 0 : start(stage_b, "stage-b");
	pthread_t c = start(stage_c, "stage-c");
	pthread_t d = start(decoy, "decoy");
	pthread_join(d, NULL);
	pthread_join(a, NULL);
	if (!child_mode)
		pthread_join(b, NULL);
	pthread_join(c, NULL);
	int status = 0;
	if (child_mode && (waitpid(child, &status, 0) != child || status != 0))
		return 6;
	fprintf(f, "stage-a %llu\n", (unsigned long long)stage_ns[0]);
	if (!child_mode)
		fprintf(f, "stage-b %llu\nstage-b-cpu %llu\n", (unsigned long long)stage_ns[1],
			(unsigned long long)b_cpu_ns);
	fprintf(f, "decoy-tid %d\ndecoy-cpu %llu\n", decoy_tid, (unsigned long long)decoy_cpu_ns);
	fprintf(f, "stage-c %llu\n", (unsigned long long)stage_ns[2]);
	fclose(f);
	printf("critical_chain %s: done\n", argv[1]);
	return 0;
}
