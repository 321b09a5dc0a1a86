/* killed_child: the parent forks a child that blocks in a read of an empty pipe, waits until
 * the child sleeps in that read (/proc: tests/preload/targets/wait_blocked.h), lets it block
 * for a second, kills it with SIGKILL (no
 * fact is written at such a death) and reaps it.  On stderr, what the parent measured of the
 * child's life (from CLOCK_MONOTONIC): it lived at least from its "ready" to the kill and at
 * most from before the fork to the reap's return ("child PID lived LO..HI ms"); stdout is
 * the same traced or not. */
#include <signal.h>
#include <stdio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../preload/targets/wait_blocked.h"

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

int main(void)
{
	int ready[2], never[2];
	if (pipe(ready) != 0 || pipe(never) != 0)
		return 1;
	double before_fork = now_ms();
	pid_t child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		char b;
		if (write(ready[1], "r", 1) == 1)
			(void)read(never[0], &b, 1);   /* nothing is ever written */
		_exit(3);
	}
	char b;
	if (read(ready[0], &b, 1) != 1)
		return 1;
	gt_proc_wait_blocked(child, child, SYS_read, (uintptr_t)never[0], (uintptr_t)never[0] + 1);
	double is_ready = now_ms();
	struct timespec second = { 1, 0 };
	nanosleep(&second, NULL);
	double killed = now_ms();
	int status;
	if (kill(child, SIGKILL) != 0 || waitpid(child, &status, 0) != child)
		return 1;
	double reaped = now_ms();
	fprintf(stderr, "child %d lived %.3f..%.3f ms\n", (int)child, killed - is_ready,
		reaped - before_fork);
	printf("child killed by signal %d\n", WIFSIGNALED(status) ? WTERMSIG(status) : 0);
	return 0;
}
