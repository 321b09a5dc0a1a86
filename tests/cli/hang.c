/* hang: programs for the hang watchdog (gotrace run --hang; issue 23, item 6) whose truth is
 * known by construction.  The work is a fixed amount of computation (about 1.5 s of one CPU
 * per thread on an idle machine, 2 s for the worker), never a sleep; stdout is the same
 * traced or not.
 *
 *   deadlock   "alpha" and "beta" compute, each says so on stderr ("hang: alpha worked"),
 *              then alpha holds lock_a and takes lock_b while beta holds lock_b and takes
 *              lock_a; main joins them (forever: a timeout's signal ends it)
 *   busy       two "sleeper"s wait on a condition variable while "worker" computes; then
 *              main wakes them and everything ends (exit 0)
 *   busy-in-handler  the same, but worker computes inside a signal handler that
 *              interrupted its read of a pipe: its hooks' last word is a read begun and not
 *              ended, the kernel's count of its CPU time moves
 *   parent-of-busy, parent-of-deadlock  a child process computes as worker does and ends,
 *              or deadlocks as above, while its parent waits for it in waitpid */
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../preload/targets/wait_blocked.h"

#define WORK_ROUNDS 900000000ull    /* about 1.5 s of one CPU, idle */
#define BUSY_ROUNDS 1200000000ull   /* about 2 s */

static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER, lock_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t worked, holding;
static uint64_t results[2];

/* Computation no compiler can shorten: xorshift64 rounds. */
static uint64_t work(uint64_t x, uint64_t rounds)
{
	for (uint64_t i = 0; i < rounds; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
	}
	return x;
}

/* ---- deadlock ---- */
static void *cycle_main(void *arg)
{
	int i = (int)(intptr_t)arg;
	const char *name = i ? "beta" : "alpha";
	pthread_setname_np(pthread_self(), name);
	results[i] = work((uint64_t)i + 1, WORK_ROUNDS);
	fprintf(stderr, "hang: %s worked\n", name);
	if (pthread_barrier_wait(&worked) == PTHREAD_BARRIER_SERIAL_THREAD) {
		printf("work done: %016llx\n", (unsigned long long)(results[0] ^ results[1]));
		fflush(stdout);
	}
	pthread_mutex_lock(i ? &lock_b : &lock_a);
	pthread_barrier_wait(&holding);
	pthread_mutex_lock(i ? &lock_a : &lock_b);
	return NULL;
}

static int deadlock(void)
{
	pthread_t t[2];
	pthread_barrier_init(&worked, NULL, 2);
	pthread_barrier_init(&holding, NULL, 2);
	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, cycle_main, (void *)(intptr_t)i);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);   /* never returns */
	return 1;
}

/* ---- busy ---- */
static pthread_mutex_t gate = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t opened = PTHREAD_COND_INITIALIZER;
static int is_open;
static int wake_pipe[2];
static _Atomic pid_t worker_tid;

static void *sleeper_main(void *arg)
{
	(void)arg;
	pthread_setname_np(pthread_self(), "sleeper");
	pthread_mutex_lock(&gate);
	while (!is_open)
		pthread_cond_wait(&opened, &gate);
	pthread_mutex_unlock(&gate);
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	results[0] = work(7, BUSY_ROUNDS);
	if (write(wake_pipe[1], "x", 1) != 1)   /* ends the read it interrupted */
		_exit(3);
}

static void *worker_main(void *arg)
{
	pthread_setname_np(pthread_self(), "worker");
	if (!arg) {
		results[0] = work(7, BUSY_ROUNDS);
		return NULL;
	}
	atomic_store(&worker_tid, gt_gettid());
	char c;
	while (read(wake_pipe[0], &c, 1) != 1)
		continue;
	return NULL;
}

static int busy(int in_handler)
{
	pthread_t sleepers[2], worker;
	struct sigaction sa = { .sa_handler = on_usr1, .sa_flags = SA_RESTART };
	if (pipe(wake_pipe) != 0 || sigaction(SIGUSR1, &sa, NULL) != 0)
		return 1;
	for (int i = 0; i < 2; i++)
		pthread_create(&sleepers[i], NULL, sleeper_main, NULL);
	pthread_create(&worker, NULL, worker_main, in_handler ? "in handler" : NULL);
	if (in_handler) {
		while (!atomic_load(&worker_tid))
			syscall(SYS_sched_yield);
		gt_wait_blocked(atomic_load(&worker_tid), SYS_read, (uintptr_t)wake_pipe[0],
				(uintptr_t)wake_pipe[0] + 1);
		pthread_kill(worker, SIGUSR1);
	}
	pthread_join(worker, NULL);
	pthread_mutex_lock(&gate);
	is_open = 1;
	pthread_cond_broadcast(&opened);
	pthread_mutex_unlock(&gate);
	for (int i = 0; i < 2; i++)
		pthread_join(sleepers[i], NULL);
	printf("busy: %016llx\n", (unsigned long long)results[0]);
	return 0;
}

/* ---- a parent waiting for its child ---- */
static int parent_of(const char *mode)
{
	fflush(stdout);
	pid_t child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		int status = 0;
		if (strcmp(mode, "deadlock") == 0) {
			status = deadlock();
		} else {
			printf("child: %016llx\n", (unsigned long long)work(7, BUSY_ROUNDS));
			fflush(stdout);
		}
		_exit(status);
	}
	int status;
	if (waitpid(child, &status, 0) != child)
		return 1;
	printf("parent: child exited %d\n", WIFEXITED(status) ? WEXITSTATUS(status) : -1);
	return 0;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	if (strncmp(mode, "parent-of-", 10) == 0)
		return parent_of(mode + 10);
	if (strcmp(mode, "deadlock") == 0)
		return deadlock();
	if (strcmp(mode, "busy") == 0 || strcmp(mode, "busy-in-handler") == 0)
		return busy(strcmp(mode, "busy") != 0);
	fprintf(stderr, "usage: hang deadlock|busy|busy-in-handler|parent-of-busy|parent-of-deadlock\n");
	return 2;
}
