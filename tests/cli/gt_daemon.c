/* gt-daemon: a program that daemonizes as servers do, for tests/cli/test_follow.c.  It waits
 * only on pipes the test holds (no sleeps) and prints what it did, so that the traced run can
 * be compared with the untraced one.
 *
 *   gt-daemon daemon CTRL READY  the parent forks; the child calls setsid, forks the daemon
 *                                and _exits; the parent reaps it, prints "parent: done" and
 *                                exits 0.  The daemon starts two threads named "d-worker"
 *                                that wait on a condition variable, writes "ready <pid>\n" to
 *                                fd READY, then reads commands from fd CTRL:
 *                                  'p'  a thread locks the mutex and is joined, a child forks,
 *                                       runs /bin/true and is waited for, and "pong\n" goes
 *                                       to fd READY (proof that it still works normally)
 *                                  'q', EOF  the workers are woken and joined, "daemon: done"
 *                                       is printed with what 'p' saw, exit 0
 *   gt-daemon fork               starts two threads, then forks a child that starts one; the
 *                                parent waits for it, reads a line from popen("/bin/echo")
 *                                and prints what happened */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int quit, pings;

static void *worker(void *arg)
{
	pthread_setname_np(pthread_self(), (const char *)arg);
	pthread_mutex_lock(&mtx);
	while (!quit)
		pthread_cond_wait(&cond, &mtx);
	pthread_mutex_unlock(&mtx);
	return NULL;
}

static void *locker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mtx);
	pings++;
	pthread_mutex_unlock(&mtx);
	return NULL;
}

static int run_true(void)
{
	pid_t pid = fork();
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	int status = -1;
	if (pid < 0 || waitpid(pid, &status, 0) != pid)
		return -1;
	return status;
}

static void say(int fd, const char *text)
{
	if (write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		exit(3);
}

static int daemon_main(int ctrl, int ready)
{
	pthread_t w[2];
	char line[64];
	int true_status = 0;
	for (int i = 0; i < 2; i++)
		pthread_create(&w[i], NULL, worker, (void *)"d-worker");
	snprintf(line, sizeof line, "ready %d\n", (int)getpid());
	say(ready, line);
	char c;
	while (read(ctrl, &c, 1) == 1 && c != 'q') {
		if (c != 'p')
			continue;
		pthread_t t;
		pthread_create(&t, NULL, locker, NULL);
		pthread_join(t, NULL);
		true_status |= run_true();
		say(ready, "pong\n");
	}
	pthread_mutex_lock(&mtx);
	quit = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&mtx);
	for (int i = 0; i < 2; i++)
		pthread_join(w[i], NULL);
	printf("daemon: done, %d pings, /bin/true status %d\n", pings, true_status);
	return 0;
}

static int daemonize(int ctrl, int ready)
{
	fflush(stdout);
	pid_t child = fork();
	if (child < 0)
		return 2;
	if (child == 0) {
		setsid();
		pid_t d = fork();
		if (d == 0)
			exit(daemon_main(ctrl, ready));
		_exit(d < 0 ? 2 : 0);
	}
	int status;
	if (waitpid(child, &status, 0) != child || status != 0)
		return 2;
	close(ctrl);
	close(ready);
	printf("parent: done\n");
	return 0;
}

static int fork_main(void)
{
	pthread_t w[2];
	for (int i = 0; i < 2; i++)
		pthread_create(&w[i], NULL, locker, NULL);
	for (int i = 0; i < 2; i++)
		pthread_join(w[i], NULL);
	fflush(stdout);
	pid_t child = fork();
	if (child == 0) {
		pthread_t t;
		pthread_create(&t, NULL, locker, NULL);
		pthread_join(t, NULL);
		printf("child: %d pings\n", pings);
		exit(0);
	}
	int status = -1;
	waitpid(child, &status, 0);
	char line[64] = "";
	FILE *p = popen("/bin/echo popen", "r"); /* its child gets our environment as it is */
	if (p == NULL || fgets(line, sizeof line, p) == NULL || pclose(p) != 0)
		return 4;
	printf("parent: %d pings, child status %d, %s", pings, status, line);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc == 4 && !strcmp(argv[1], "daemon"))
		return daemonize(atoi(argv[2]), atoi(argv[3]));
	if (argc == 2 && !strcmp(argv[1], "fork"))
		return fork_main();
	fprintf(stderr, "usage: gt-daemon daemon CTRL READY | fork\n");
	return 2;
}
