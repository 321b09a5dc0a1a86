/* sigint_counter: a command whose SIGINTs can be counted, for tests/cli/test_stop.c.
 *
 *   sigint_counter count    counts the SIGINTs it is sent, writing "sigint N\n" on stdout
 *                           at each (so that a test knows it was handled)
 *   sigint_counter ignore   ignores SIGINT (as mariadbd does)
 *
 * It prints "ready\n" on stdout, then reads stdin until EOF (no sleeps: the test decides when
 * it ends) and prints "sigints: N\n" (count) or "sigints ignored\n" (ignore), exit 0.  A
 * signal sent before the test closes stdin is handled before the read that sees EOF returns. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static volatile sig_atomic_t sigints;

static void count(int sig)
{
	(void)sig;
	char line[32] = "sigint ";
	line[7] = (char)('0' + ++sigints % 10);
	line[8] = '\n';
	if (write(1, line, 9) != 9)
		_exit(1);
}

int main(int argc, char **argv)
{
	int ignore = argc > 1 && strcmp(argv[1], "ignore") == 0;
	struct sigaction sa = { .sa_handler = ignore ? SIG_IGN : count };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	if (write(1, "ready\n", 6) != 6)
		return 1;
	char buf[64];
	ssize_t n;
	while ((n = read(0, buf, sizeof buf)) != 0)
		if (n < 0 && errno != EINTR)
			return 1;
	if (ignore)
		printf("sigints ignored\n");
	else
		printf("sigints: %d\n", (int)sigints);
	return 0;
}
