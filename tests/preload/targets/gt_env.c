/* A child exec'd with an environment of the program's choosing, for tests/preload/test_env.c
 * (issue 28, item 8): traced, it must see exactly that environment.
 *
 *   gt-env show          prints environ, getenv of the tracer's variables, and the non-empty
 *                        entries of /proc/self/environ (the tracer clears its own there:
 *                        they read as empty ones)
 *   gt-env empty         execve(self, show) with an empty environment
 *   gt-env null          the same with envp NULL (Linux: empty)
 *   gt-env chosen        with {FOO=bar, LD_PRELOAD=libm.so.6, BAZ=}
 *   gt-env env-i         runs `env -i FOO=1 self show` with the program's environ
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern char **environ;

static int show(void)
{
	for (char **e = environ; *e; e++)
		printf("environ %s\n", *e);
	static const char *const ours[] = {"LD_PRELOAD", "GOTRACE_ROOT_PID", "GOTRACE_TSC_HZ",
					   "GOTRACE_CAPTURE_DIR", "GOTRACE_HIDE", "GOTRACE_RUN"};
	for (size_t i = 0; i < sizeof ours / sizeof ours[0]; i++)
		printf("getenv %s %s\n", ours[i], getenv(ours[i]) ? getenv(ours[i]) : "(unset)");
	static char buf[1 << 16];
	int fd = open("/proc/self/environ", O_RDONLY);
	ssize_t n = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	for (ssize_t i = 0; i < n; i += (ssize_t)strlen(buf + i) + 1)
		if (buf[i])
			printf("/proc/self/environ %s\n", buf + i);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 2)
		return 2;
	char self[4096];
	ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
	if (len < 0)
		return 3;
	self[len] = 0;
	char *show_argv[] = {self, "show", NULL};
	if (!strcmp(argv[1], "show"))
		return show();
	if (!strcmp(argv[1], "empty")) {
		char *none[] = {NULL};
		execve(self, show_argv, none);
	} else if (!strcmp(argv[1], "null")) {
		execve(self, show_argv, NULL);
	} else if (!strcmp(argv[1], "chosen")) {
		char *chosen[] = {"FOO=bar", "LD_PRELOAD=libm.so.6", "BAZ=", NULL};
		execve(self, show_argv, chosen);
	} else if (!strcmp(argv[1], "env-i")) {
		char *env_argv[] = {"env", "-i", "FOO=1", self, "show", NULL};
		execv("/usr/bin/env", env_argv);
	} else {
		return 2;
	}
	perror("exec");
	return 3;
}
