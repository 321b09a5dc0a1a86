/* sched_latency ROUNDS HOLD_MS FILE: a scheduler latency known by construction.  A waiter
 * thread, pinned to the first CPU the process may use, reads a pipe ROUNDS times.  For each
 * byte the main thread waits on another CPU until the waiter sleeps in that read (seen in
 * /proc/self/task/TID/syscall), moves to the waiter's CPU as a SCHED_FIFO thread (which no
 * normal thread preempts), stamps CLOCK_MONOTONIC, writes the byte and keeps that CPU for
 * HOLD_MS more before it becomes a normal thread again and moves away: the woken waiter runs
 * only then, and stamps CLOCK_MONOTONIC as soon as its read returns.  FILE gets "ROUND
 * LATENCY_NS WAITER_TID" lines (the waiter's stamp minus the writer's, HOLD_MS at least);
 * stdout is the same traced or not.  Exit status 3: fewer than two CPUs; 4: SCHED_FIFO
 * refused (it needs root, CAP_SYS_NICE or RLIMIT_RTPRIO). */
#include <pthread.h>
#include <sched.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_ROUNDS 64
static int rounds, pipe_fd[2];
static uint64_t hold_ns;
static int waiter_tid;
static pthread_barrier_t started;
static uint64_t run_ns[MAX_ROUNDS];

static uint64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The calling thread onto cpu (sched_setaffinity moves it there before it returns). */
static bool pin(int cpu)
{
	cpu_set_t set;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return sched_setaffinity(0, sizeof set, &set) == 0;
}

/* The calling thread SCHED_FIFO (fifo) or back to SCHED_OTHER. */
static bool fifo(bool on)
{
	struct sched_param p = { .sched_priority = on ? 1 : 0 };
	return sched_setscheduler(0, on ? SCHED_FIFO : SCHED_OTHER, &p) == 0;
}

static void *waiter(void *arg)
{
	bool ready = pin((int)(intptr_t)arg);
	waiter_tid = ready ? gettid() : 0;
	pthread_barrier_wait(&started);
	if (!ready)
		return NULL;
	for (int r = 0; r < rounds; r++) {
		char c;
		if (read(pipe_fd[0], &c, 1) != 1)
			return NULL;
		run_ns[r] = now_ns();
	}
	return (void *)1;
}

/* Whether thread tid sleeps in read(pipe_fd[0]): its syscall file starts "0 0x<fd> ". */
static bool in_read(int tid)
{
	char path[64], line[256], want[32];
	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
	snprintf(want, sizeof want, "0 0x%x ", pipe_fd[0]);
	FILE *f = fopen(path, "r");
	bool yes = f != NULL && fgets(line, sizeof line, f) != NULL &&
		   strncmp(line, want, strlen(want)) == 0;
	if (f != NULL)
		fclose(f);
	return yes;
}

int main(int argc, char **argv)
{
	if (argc != 4)
		return 2;
	rounds = atoi(argv[1]);
	hold_ns = strtoull(argv[2], NULL, 10) * 1000000u;
	FILE *out = fopen(argv[3], "w");
	cpu_set_t allowed;
	if (rounds < 1 || rounds > MAX_ROUNDS || !out || pipe(pipe_fd) != 0 ||
	    sched_getaffinity(0, sizeof allowed, &allowed) != 0)
		return 2;
	int cpus[2], n = 0;
	for (int c = 0; c < CPU_SETSIZE && n < 2; c++)
		if (CPU_ISSET(c, &allowed))
			cpus[n++] = c;
	if (n < 2)
		return 3;
	if (!fifo(true) || !fifo(false))
		return 4;
	pthread_t t;
	pthread_barrier_init(&started, NULL, 2);
	if (!pin(cpus[1]) || pthread_create(&t, NULL, waiter, (void *)(intptr_t)cpus[0]) != 0)
		return 1;
	pthread_barrier_wait(&started);
	int tid = waiter_tid;
	if (tid == 0)
		return 1;
	uint64_t wake_ns[MAX_ROUNDS];
	for (int r = 0; r < rounds; r++) {
		while (!in_read(tid))
			;   /* (no sched_yield: its hook's facts would flood the trace) */
		if (!fifo(true) || !pin(cpus[0]))
			return 1;
		wake_ns[r] = now_ns();
		if (write(pipe_fd[1], "x", 1) != 1)
			return 1;
		while (now_ns() - wake_ns[r] < hold_ns)
			;
		if (!fifo(false) || !pin(cpus[1]))
			return 1;
	}
	void *ok;
	pthread_join(t, &ok);
	if (ok == NULL)
		return 1;
	for (int r = 0; r < rounds; r++)
		fprintf(out, "%d %llu %d\n", r, (unsigned long long)(run_ns[r] - wake_ns[r]), tid);
	printf("sched_latency: %d rounds\n", rounds);
	return fclose(out) == 0 ? 0 : 1;
}
