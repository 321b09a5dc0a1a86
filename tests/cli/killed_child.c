/* killed_child [HOW]: the parent forks a child that blocks in a read of an empty pipe, waits
 * until the child sleeps in that read (/proc: tests/preload/targets/wait_blocked.h), lets it
 * block for a second, kills it with SIGKILL (no fact is written at such a death) and reaps
 * it by HOW: waitpid (the default), waitid-pid, waitid-all or waitid-pidfd (waitid's P_PID,
 * P_ALL, P_PIDFD), or waitpid-stopped: stopped by SIGSTOP and seen stopped by
 * waitpid(WUNTRACED) right after its "ready", then killed and reaped by waitpid.  On stderr, what the parent measured of the child's life (from
 * CLOCK_MONOTONIC): it lived at least from its "ready" to the kill and at most from before
 * the fork to the reap's return ("child PID lived LO..HI ms"); stdout is the same traced or
 * not. */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../preload/targets/wait_blocked.h"

static double now_ms(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

/* Reaps child as how says; the signal that killed it (0: none), -1 when that fails. */
static int reap(pid_t child, const char *how)
{
	int status;
	if (strcmp(how, "waitpid") == 0)
		return waitpid(child, &status, 0) != child ? -1 :
		       WIFSIGNALED(status) ? WTERMSIG(status) : 0;
	siginfo_t si = { 0 };
	int r;
	if (strcmp(how, "waitid-pid") == 0) {
		r = waitid(P_PID, (id_t)child, &si, WEXITED);
	} else if (strcmp(how, "waitid-all") == 0) {
		r = waitid(P_ALL, 0, &si, WEXITED);
	} else if (strcmp(how, "waitid-pidfd") == 0) {
		int fd = (int)syscall(SYS_pidfd_open, child, 0);
		r = fd < 0 ? -1 : waitid(P_PIDFD, (id_t)fd, &si, WEXITED);
	} else {
		return -1;
	}
	if (r != 0 || si.si_pid != child)
		return -1;
	return si.si_code == CLD_KILLED ? si.si_status : 0;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "waitpid";
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
	if (strcmp(how, "waitpid-stopped") == 0) {
		/* stopped first and seen stopped: a wait4 that returns a pid and reaps nothing */
		int status;
		if (kill(child, SIGSTOP) != 0 || waitpid(child, &status, WUNTRACED) != child ||
		    !WIFSTOPPED(status))
			return 1;
		how = "waitpid";
	}
	/* not a synchronisation (the child is asleep in its read): the life the test measures */
	struct timespec second = { 1, 0 };
	nanosleep(&second, NULL);
	double killed = now_ms();
	if (kill(child, SIGKILL) != 0)
		return 1;
	int sig = reap(child, how);
	if (sig < 0)
		return 1;
	double reaped = now_ms();
	fprintf(stderr, "child %d lived %.3f..%.3f ms\n", (int)child, killed - is_ready,
		reaped - before_fork);
	printf("child killed by signal %d\n", sig);
	return 0;
}
