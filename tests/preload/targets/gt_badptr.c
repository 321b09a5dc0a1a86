/* Hooked calls given bad pointers, for tests/preload/test_badptr.c: the kernel answers most
 * with EFAULT, glibc's own code faults on some (a NULL mutex).  Traced, each must end the
 * same way as untraced.
 *
 *   gt-badptr CASE [null|none]   runs CASE with a NULL pointer or with the address of a page
 *                                mapped PROT_NONE; prints "CASE: r=R errno=NAME" (or dies of
 *                                the signal the call raises).  CASE "list" prints the cases.
 */
#include <errno.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *bad;              /* NULL or an inaccessible page */
static int pfd[2], sfd[2], epfd;

static long c_poll(void) { return poll(bad, 1, 0); }
static long c_ppoll(void)
{
	struct timespec zero = {0, 0};
	return ppoll(bad, 1, &zero, NULL);
}
static long c_ppoll_ts(void)
{
	struct pollfd p = {.fd = pfd[1], .events = POLLOUT}; /* ready: NULL waits for it */
	return ppoll(&p, 1, bad, NULL);
}
static long c_select(void)
{
	struct timeval zero = {0, 0};
	return select(pfd[0] + 1, bad, NULL, NULL, bad ? (struct timeval *)bad : &zero);
}
static long c_epoll_wait(void) { return epoll_wait(epfd, bad, 1, 0); }
static long c_nanosleep(void) { return nanosleep(bad, NULL); }
static long c_clock_nanosleep(void)
{
	int r = clock_nanosleep(CLOCK_MONOTONIC, 0, bad, NULL);
	return r ? (errno = r, -1) : 0;
}
static long c_clock_nanosleep_clock(void)
{
	struct timespec ts = {0, 1};
	int r = clock_nanosleep((clockid_t)12345, 0, bad ? &ts : NULL, NULL);
	return r ? (errno = r, -1) : 0;
}
static long c_recvmsg(void) { return recvmsg(sfd[0], bad, MSG_DONTWAIT); }
static long c_sendmsg(void) { return sendmsg(sfd[0], bad, MSG_DONTWAIT); }
static long c_readv(void) { return readv(pfd[0], bad, 1); }
static long c_writev(void) { return writev(pfd[1], bad, 1); }
static long c_read(void)
{
	if (write(sfd[1], "x", 1) != 1) /* ready: the kernel writes into bad at once */
		return -2;
	return read(sfd[0], bad, 1);
}
static long c_futex_wait(void) { return syscall(SYS_futex, bad, FUTEX_WAIT, 0, NULL, NULL, 0); }
static long c_futex_wake(void) { return syscall(SYS_futex, bad, FUTEX_WAKE, 1, NULL, NULL, 0); }
static long c_sem_wait(void) { return sem_wait(bad); }
static long c_sem_post(void) { return sem_post(bad); }
static long c_sem_timedwait(void)
{
	static sem_t s;
	sem_init(&s, 0, 0);
	return sem_timedwait(&s, bad);
}
static long c_mutex_lock(void) { return pthread_mutex_lock(bad); }
static long c_mutex_unlock(void) { return pthread_mutex_unlock(bad); }
static long c_mutex_timedlock(void)
{
	/* held by this thread: EDEADLK, where a NULL timeout would wait for ever */
	static pthread_mutex_t m = PTHREAD_ERRORCHECK_MUTEX_INITIALIZER_NP;
	pthread_mutex_lock(&m);
	return pthread_mutex_timedlock(&m, bad);
}
static long c_cond_wait(void)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&m);
	return pthread_cond_wait(bad, &m);
}
static long c_cond_timedwait(void)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	static pthread_cond_t c = PTHREAD_COND_INITIALIZER;
	pthread_mutex_lock(&m);
	return pthread_cond_timedwait(&c, &m, bad);
}
static long c_cond_signal(void) { return pthread_cond_signal(bad); }
static long c_execve_envp(void)
{
	char *argv[] = {"/bin/true", NULL};
	return execve("/bin/true", argv, bad);
}
static long c_execve_argv(void)
{
	char *envp[] = {NULL};
	return execve("/bin/true", bad, envp);
}
static long c_clone3(void) { return syscall(SYS_clone3, bad, 88); }
static long c_sigaltstack(void) { return sigaltstack(bad, NULL); }
static long c_prctl_name(void) { return prctl(PR_SET_NAME, bad, 0, 0, 0); }
static long c_pipe(void) { return pipe(bad); }
static long c_wait(void)
{
	pid_t p = fork();
	if (p == 0)
		_exit(0);
	long r = waitpid(p, bad, 0);
	return bad ? r : 0;
}

static const struct {
	const char *name;
	long (*fn)(void);
} cases[] = {
	{"poll", c_poll},
	{"ppoll", c_ppoll},
	{"ppoll-timeout", c_ppoll_ts},
	{"select", c_select},
	{"epoll_wait", c_epoll_wait},
	{"nanosleep", c_nanosleep},
	{"clock_nanosleep", c_clock_nanosleep},
	{"clock_nanosleep-clock", c_clock_nanosleep_clock},
	{"recvmsg", c_recvmsg},
	{"sendmsg", c_sendmsg},
	{"readv", c_readv},
	{"writev", c_writev},
	{"read", c_read},
	{"futex-wait", c_futex_wait},
	{"futex-wake", c_futex_wake},
	{"sem_wait", c_sem_wait},
	{"sem_post", c_sem_post},
	{"sem_timedwait", c_sem_timedwait},
	{"mutex_lock", c_mutex_lock},
	{"mutex_unlock", c_mutex_unlock},
	{"mutex_timedlock", c_mutex_timedlock},
	{"cond_wait", c_cond_wait},
	{"cond_timedwait", c_cond_timedwait},
	{"cond_signal", c_cond_signal},
	{"execve-envp", c_execve_envp},
	{"execve-argv", c_execve_argv},
	{"clone3", c_clone3},
	{"sigaltstack", c_sigaltstack},
	{"prctl-name", c_prctl_name},
	{"pipe", c_pipe},
	{"waitpid", c_wait},
};

int main(int argc, char **argv)
{
	size_t n = sizeof cases / sizeof cases[0];
	if (argc == 2 && !strcmp(argv[1], "list")) {
		for (size_t i = 0; i < n; i++)
			printf("%s\n", cases[i].name);
		return 0;
	}
	if (argc != 3)
		return 2;
	if (!strcmp(argv[2], "none")) {
		bad = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		if (bad == MAP_FAILED)
			return 3;
	}
	if (pipe(pfd) || socketpair(AF_UNIX, SOCK_STREAM, 0, sfd) || (epfd = epoll_create1(0)) < 0)
		return 3;
	struct epoll_event ev = {.events = EPOLLIN, .data.fd = pfd[0]};
	epoll_ctl(epfd, EPOLL_CTL_ADD, pfd[0], &ev);
	for (size_t i = 0; i < n; i++) {
		if (strcmp(cases[i].name, argv[1]))
			continue;
		printf("%s %s: ", argv[1], argv[2]);
		fflush(stdout);
		errno = 0;
		long r = cases[i].fn();
		printf("r=%ld errno=%s\n", r, r < 0 ? strerrorname_np(errno) : "-");
		return 0;
	}
	return 2;
}
