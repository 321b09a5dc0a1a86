/* See stacks_running.h. */
#include "stacks_running.h"

#include <criterion/criterion.h>
#include <signal.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

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
