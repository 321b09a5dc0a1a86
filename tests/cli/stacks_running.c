/* See stacks_running.h. */
#include "stacks_running.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

/* Returns once the main thread of pid sleeps in a system call other than write (every mode of
 * the targets ends in one: pause, a join), or has ended:
 * the ready line can reach the test before the target's write of it returned, and a first
 * sample would then see the main thread still writing, a moment later sleeping. */
static void wait_main_settled(pid_t pid)
{
	char path[64], buf[64];
	snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)pid, (int)pid);
	for (;;) {
		int fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return;
		ssize_t n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0)
			return;
		buf[n] = 0;
		char *end;
		long nr = strtol(buf, &end, 10);
		if (end != buf && nr >= 0 && nr != SYS_write)
			return;
		sched_yield();
	}
}

void start_program(struct running *r, const char *program, const char *mode, const char *arg)
{
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	r->pid = fork();
	cr_assert_geq(r->pid, 0);
	if (r->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);   /* a failed test leaves no target behind */
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execl(program, program, mode, arg, (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	r->out = fdopen(fds[0], "r");
	cr_assert(fgets(r->ready, sizeof r->ready, r->out) != NULL, "%s %s gave no ready line",
		  program, mode);
	cr_assert(!strncmp(r->ready, "ready", 5), "%s %s said %s", program, mode, r->ready);
	wait_main_settled(r->pid);
}

int finish(struct running *r, bool kill_it)
{
	if (kill_it)
		kill(r->pid, SIGKILL);
	int status;
	cr_assert_eq(waitpid(r->pid, &status, 0), r->pid);
	fclose(r->out);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}
