/* gt-orphan: an orphaned grandchild asks who adopted it (issue 28, item 9), for
 * tests/cli/test_orphan.c.  The parent forks a child that forks the grandchild and exits;
 * once the child is reaped, the grandchild (an orphan now) sends getppid() back through a
 * pipe, and the parent prints it with the daemon's classic check.  gotrace run is a
 * subreaper (it waits for daemons): the library's getppid names who adopts orphans untraced. */
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

int main(void)
{
	int go[2], answer[2];
	if (pipe(go) || pipe(answer))
		return 3;
	pid_t child = fork();
	if (child < 0)
		return 3;
	if (child == 0) {
		pid_t g = fork();
		if (g == 0) {
			char c;
			close(go[1]);
			if (read(go[0], &c, 1) != 1)
				_exit(3);
			pid_t p = getppid();
			_exit(write(answer[1], &p, sizeof p) == (ssize_t)sizeof p ? 0 : 3);
		}
		_exit(g < 0 ? 3 : 0);
	}
	close(go[0]);
	close(answer[1]);
	int st;
	pid_t adopter = 0;
	if (waitpid(child, &st, 0) != child || write(go[1], "x", 1) != 1 ||
	    read(answer[0], &adopter, sizeof adopter) != (ssize_t)sizeof adopter)
		return 3;
	printf("orphan adopted by pid %d; getppid() == 1: %s; by its parent: %s\n", (int)adopter,
	       adopter == 1 ? "yes" : "no", adopter == getpid() ? "yes" : "no");
	return 0;
}
