/* Sandboxes that kill on unknown system calls, for tests/preload/test_sandbox.c (issue 28,
 * item 2).  Traced, a system call of the tracer's that the sandbox does not allow kills the
 * program; untraced, each runs to its end.
 *
 *   gt-sandbox strict N      a thread enters strict seccomp (read, write, _exit, sigreturn)
 *                            and answers N round trips through two pipes, then exits with
 *                            SYS_exit; the main thread joins it and prints the count
 *   gt-sandbox allowlist N   a forked worker installs an allowlist like OpenSSH's preauth
 *                            sandbox (anything else kills the process with SIGSYS), then
 *                            answers N round trips through two pipes it had not used, locking
 *                            a mutex, polling and yielding at each; the parent prints how the
 *                            worker ended and the count
 * Both make their pipes before entering the sandbox and use them only in it. */
#include "../../../preload/libc_syscalls.h"
#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int to_sandbox[2], from_sandbox[2];
static long rounds;

/* the parent's side: N bytes sent, each answered */
static long drive(void)
{
	long done = 0;
	for (long i = 0; i < rounds; i++) {
		char c = (char)i, back;
		/* a sandboxed thread killed alone never answers: 10 s */
		struct pollfd p = {.fd = from_sandbox[0], .events = POLLIN};
		if (write(to_sandbox[1], &c, 1) != 1 || poll(&p, 1, 10000) != 1 ||
		    read(from_sandbox[0], &back, 1) != 1 || back != c)
			break;
		done++;
	}
	return done;
}

static void *strict_thread(void *arg)
{
	(void)arg;
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_STRICT, 0, 0, 0))
		syscall(SYS_exit, 3);
	char c;
	for (long i = 0; i < rounds; i++)
		if (read(to_sandbox[0], &c, 1) != 1 || write(from_sandbox[1], &c, 1) != 1)
			break;
	syscall(SYS_exit, 0); /* the only way out of strict mode */
	return NULL;
}

static int run_strict(void)
{
	pthread_t th;
	if (pthread_create(&th, NULL, strict_thread, NULL))
		return 3;
	long done = drive();
	pthread_join(th, NULL);
	printf("strict: %ld of %ld round trips\n", done, rounds);
	return done == rounds ? 0 : 1;
}

#define ALLOW(nr) \
	BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

#if defined(__aarch64__)
#define AUDIT_ARCH_HERE AUDIT_ARCH_AARCH64
#else
#define AUDIT_ARCH_HERE AUDIT_ARCH_X86_64
#endif
#ifndef SYS_time /* aarch64 has no time, poll or select (the vDSO, ppoll and pselect6) */
#define SYS_time SYS_gettimeofday
#endif

/* OpenSSH's preauth allowlist (sandbox-seccomp-filter.c), as far as the arch has the calls */
static int install_allowlist(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, AUDIT_ARCH_HERE, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		ALLOW(SYS_brk), ALLOW(SYS_clock_gettime), ALLOW(SYS_clock_nanosleep),
		ALLOW(SYS_close), ALLOW(SYS_exit), ALLOW(SYS_exit_group), ALLOW(SYS_futex),
		ALLOW(SYS_getpgid), ALLOW(SYS_getpid), ALLOW(SYS_getrandom),
		ALLOW(SYS_gettimeofday), ALLOW(SYS_getuid), ALLOW(SYS_geteuid), ALLOW(SYS_madvise),
		ALLOW(SYS_mmap), ALLOW(SYS_mprotect), ALLOW(SYS_mremap), ALLOW(SYS_munmap),
		ALLOW(SYS_nanosleep), ALLOW(GT_NR_POLL), ALLOW(SYS_ppoll), ALLOW(SYS_pselect6),
		ALLOW(SYS_read), ALLOW(SYS_rt_sigprocmask), ALLOW(GT_NR_SELECT), ALLOW(SYS_shutdown),
		ALLOW(SYS_sigaltstack), ALLOW(SYS_time), ALLOW(SYS_write), ALLOW(SYS_writev),
		ALLOW(SYS_rt_sigreturn), ALLOW(SYS_sched_yield),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	struct sock_fprog prog = {sizeof filter / sizeof filter[0], filter};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0))
		return -1;
	return prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0);
}

static void worker(void)
{
	static pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	if (install_allowlist())
		_exit(3);
	char c;
	struct pollfd p = {.fd = to_sandbox[0], .events = POLLIN};
	while (poll(&p, 1, -1) == 1 && read(to_sandbox[0], &c, 1) == 1) {
		pthread_mutex_lock(&m);
		sched_yield();
		pthread_mutex_unlock(&m);
		if (write(from_sandbox[1], &c, 1) != 1)
			break;
	}
	_exit(0);
}

static int run_allowlist(void)
{
	pid_t p = fork();
	if (p < 0)
		return 3;
	if (p == 0) {
		close(to_sandbox[1]);
		close(from_sandbox[0]);
		worker();
	}
	close(to_sandbox[0]);
	close(from_sandbox[1]); /* a worker killed: end of file */
	long done = drive();
	close(to_sandbox[1]); /* the worker's end of file */
	int st;
	if (waitpid(p, &st, 0) != p)
		return 3;
	if (WIFSIGNALED(st))
		printf("allowlist: worker killed by signal %d (%s)\n", WTERMSIG(st), strsignal(WTERMSIG(st)));
	else
		printf("allowlist: worker exited %d\n", WEXITSTATUS(st));
	printf("allowlist: %ld of %ld round trips\n", done, rounds);
	return done == rounds && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : 1;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	rounds = atol(argv[2]);
	signal(SIGPIPE, SIG_IGN);
	if (pipe(to_sandbox) || pipe(from_sandbox))
		return 3;
	if (!strcmp(argv[1], "strict"))
		return run_strict();
	if (!strcmp(argv[1], "allowlist"))
		return run_allowlist();
	return 2;
}
