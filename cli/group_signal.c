/* group_signal: see group_signal.h. */
#include "group_signal.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* The sentinel: reads a signal number on fd 0, answers on fd 1 whether it held it. */
static void sentinel(void)
{
	sigset_t all;
	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, NULL);
	close_range(2, ~0u, 0);   /* nothing of gotrace's stays open through it */
	unsigned char sig;
	while (read(0, &sig, 1) == 1) {
		sigset_t one;
		sigemptyset(&one);
		sigaddset(&one, sig);
		const struct timespec now = { 0, 0 };
		unsigned char held = sigtimedwait(&one, NULL, &now) == sig;
		if (write(1, &held, 1) != 1)
			break;
	}
	_exit(0);
}

void gt_group_signal_start(struct gt_group_signal *g)
{
	int ask[2], answer[2];
	*g = (struct gt_group_signal){ .pid = -1, .ask = -1, .answer = -1 };
	if (pipe2(ask, O_CLOEXEC) != 0)
		return;
	if (pipe2(answer, O_CLOEXEC) != 0) {
		close(ask[0]);
		close(ask[1]);
		return;
	}
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		if (getppid() != parent || dup2(ask[0], 0) < 0 || dup2(answer[1], 1) < 0)
			_exit(0);
		sentinel();
	}
	close(ask[0]);
	close(answer[1]);
	if (pid < 0) {
		close(ask[1]);
		close(answer[0]);
		return;
	}
	*g = (struct gt_group_signal){ .pid = pid, .ask = ask[1], .answer = answer[0] };
}

bool gt_group_signal_took(struct gt_group_signal *g, int sig)
{
	unsigned char s = (unsigned char)sig, held = 0;
	ssize_t n;
	if (g->pid < 0)
		return false;
	while ((n = write(g->ask, &s, 1)) < 0 && errno == EINTR)
		;
	if (n == 1)
		while ((n = read(g->answer, &held, 1)) < 0 && errno == EINTR)
			;
	if (n != 1) {
		gt_group_signal_stop(g);
		return false;
	}
	return held;
}

void gt_group_signal_stop(struct gt_group_signal *g)
{
	if (g->pid < 0)
		return;
	close(g->ask);
	close(g->answer);
	while (waitpid(g->pid, NULL, 0) < 0 && errno == EINTR)
		;
	*g = (struct gt_group_signal){ .pid = -1, .ask = -1, .answer = -1 };
}
