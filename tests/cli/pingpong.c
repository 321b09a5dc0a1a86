/* pingpong N PIDFILE: a parent and its forked child pass one byte back and forth N times
 * through two pipes, so each blocks in read about N times: a known floor of voluntary
 * context switches.  Their pids go into PIDFILE ("parent child\n"), for the test to find
 * their kernel records; stdout is the same traced or not. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	long n = strtol(argv[1], NULL, 10);
	int ping[2], pong[2];
	char b = 'x';
	if (pipe(ping) != 0 || pipe(pong) != 0)
		return 1;
	pid_t child = fork();
	if (child < 0)
		return 1;
	if (child == 0) {
		for (long i = 0; i < n; i++)
			if (read(ping[0], &b, 1) != 1 || write(pong[1], &b, 1) != 1)
				_exit(1);
		_exit(0);
	}
	FILE *f = fopen(argv[2], "w");
	if (f == NULL || fprintf(f, "%d %d\n", (int)getpid(), (int)child) < 0 || fclose(f) != 0)
		return 1;
	for (long i = 0; i < n; i++)
		if (write(ping[1], &b, 1) != 1 || read(pong[0], &b, 1) != 1)
			return 1;
	int status;
	if (waitpid(child, &status, 0) != child || status != 0)
		return 1;
	printf("%ld round trips\n", n);
	return 0;
}
