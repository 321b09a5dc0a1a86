/* gt-procs: processes made without fork(), vfork, _exit and the environment, for
 * tests/preload/test_procs.c.  Every scenario prints what the program observed, so that the
 * traced run can be compared with the untraced one.
 *
 *   gt-procs _Fork|sysfork|clone   a child made without fork() locks, sleeps 1234 ns, writes
 *                                  and exits; the parent then sleeps 2000 ns three times
 *   gt-procs clone_vm              the same with clone(CLONE_VM): the child shares our memory
 *   gt-procs clone_thread          a clone(CLONE_THREAD) thread (on our TLS) blocks on a mutex
 *                                  and a semaphore the main thread holds, then returns
 *   gt-procs clone_settls          the same on a TLS block of its own, a copy of ours
 *   gt-procs clone_vfork           100 clone(CLONE_VM | CLONE_VFORK) children exec a shell that
 *                                  says whether libgotrace.so is in its LD_PRELOAD
 *   gt-procs vfork                 a vfork child's exec fails; it reports errno through the
 *                                  memory it shares with the parent; then one exec succeeds
 *   gt-procs exit-children         three fork children leave by _exit
 *   gt-procs env                   prints its environment (without LD_PRELOAD)
 *   gt-procs system                what system() returns */
#include <errno.h>
#include <linux/futex.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wait_blocked.h"

extern char **environ;

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;

static void sleep_ns(long ns)
{
	struct timespec ts = {0, ns};
	nanosleep(&ts, NULL);
}

static int child_body(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mtx);
	pthread_mutex_unlock(&mtx);
	sleep_ns(1234);
	if (write(1, "child wrote\n", 12) != 12)
		exit(1);
	exit(5); /* atexit handlers and destructors run in the child */
}

/* clone(CLONE_VM) without CLONE_THREAD: another process in our memory (and our TLS) */
static int vm_child_body(void *arg)
{
	(void)arg;
	sleep_ns(1234);
	if (write(1, "child wrote\n", 12) != 12)
		_exit(1);
	_exit(5); /* exit() would run the parent's atexit handlers in the shared memory */
}

static int fork_like(const char *how)
{
	static char stack[256 * 1024] __attribute__((aligned(16)));
	pthread_mutex_lock(&mtx);
	pthread_mutex_unlock(&mtx);
	fflush(stdout);
	pid_t pid;
	if (!strcmp(how, "_Fork"))
		pid = _Fork();
	else if (!strcmp(how, "sysfork"))
#ifdef SYS_fork
		pid = (pid_t)syscall(SYS_fork);
#else /* aarch64: fork is clone with SIGCHLD alone */
		pid = (pid_t)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
#endif
	else if (!strcmp(how, "clone"))
		pid = clone(child_body, stack + sizeof stack, SIGCHLD, NULL);
	else
		pid = clone(vm_child_body, stack + sizeof stack, CLONE_VM | SIGCHLD, NULL);
	if (pid == 0)
		child_body(NULL);
	if (pid < 0) {
		perror(how);
		return 1;
	}
	int st = 0;
	if (waitpid(pid, &st, 0) != pid)
		perror("waitpid");
	/* the parent goes on recording */
	for (int i = 0; i < 3; i++) {
		sleep_ns(2000);
		pthread_mutex_lock(&mtx);
		pthread_mutex_unlock(&mtx);
	}
	printf("%s child exit %d signal %d\n", how, WIFEXITED(st) ? WEXITSTATUS(st) : -1,
	       WIFSIGNALED(st) ? WTERMSIG(st) : 0);
	return 0;
}

/* A thread as threading libraries without pthread make it: clone(CLONE_THREAD) without
 * CLONE_SETTLS, so it runs on our TLS; its exit clears raw_tid and wakes us. */
static sem_t raw_sem;
static _Atomic pid_t raw_tid;

static int raw_thread_body(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mtx); /* held by main until we wait for it */
	pthread_mutex_unlock(&mtx);
	sem_wait(&raw_sem);       /* posted once we wait */
	return 0;
}

static void *nothing(void *arg) { return arg; }

/* glibc's own: the static TLS size, and the thread descriptor above the thread pointer */
extern void _dl_get_tls_static_info(size_t *size, size_t *align);
extern const unsigned int _thread_db_sizeof_pthread;

/* A copy of this thread's TLS block (as a threading library might make one): the thread
 * pointer it needs (the descriptor's self pointers set to it) */
static void *tls_copy(void)
{
	size_t size, align;
	_dl_get_tls_static_info(&size, &align);
	/* the static size counts the descriptor above the thread pointer too: below it lie
	 * size - that bytes (reading size bytes below it left the block now and then) */
	size -= _thread_db_sizeof_pthread;
	char *tp = __builtin_thread_pointer();
	size_t below = (size + 4095) & ~(size_t)4095;
	char *block = aligned_alloc(4096, below + _thread_db_sizeof_pthread + 4096);
	if (!block)
		return NULL;
	char *ntp = block + below;
	memcpy(ntp - size, tp - size, size + _thread_db_sizeof_pthread);
	((void **)ntp)[0] = ntp; /* tcbhead_t: tcb, dtv, self */
	((void **)ntp)[2] = ntp;
	return ntp;
}

static int clone_thread(int own_tls)
{
	static char stack[256 * 1024] __attribute__((aligned(16)));
	/* glibc's locks skip their atomics and wakes until a pthread was created */
	pthread_t th;
	if (pthread_create(&th, NULL, nothing, NULL) || pthread_join(th, NULL))
		return 1;
	const int flags = CLONE_VM | CLONE_FS | CLONE_FILES | CLONE_SIGHAND | CLONE_THREAD |
			  CLONE_SYSVSEM | CLONE_PARENT_SETTID | CLONE_CHILD_CLEARTID |
			  (own_tls ? CLONE_SETTLS : 0);
	void *tls = own_tls ? tls_copy() : NULL;
	if (sem_init(&raw_sem, 0, 0) || (own_tls && !tls))
		return 1;
	pthread_mutex_lock(&mtx);
	pid_t tid = clone(raw_thread_body, stack + sizeof stack, flags, NULL, &raw_tid, tls, &raw_tid);
	if (tid < 0) {
		perror("clone");
		return 1;
	}
	/* glibc's words: a mutex with a waiter holds 2; a semaphore counts waiters up high */
	while (atomic_load((_Atomic int *)&mtx.__data.__lock) != 2)
		syscall(SYS_sched_yield);
	gt_wait_blocked(tid, SYS_futex, (uintptr_t)&mtx, (uintptr_t)(&mtx + 1));
	pthread_mutex_unlock(&mtx);
	gt_wait_blocked(tid, SYS_futex, (uintptr_t)&raw_sem, (uintptr_t)(&raw_sem + 1));
	sem_post(&raw_sem);
	pid_t t;
	while ((t = atomic_load(&raw_tid)) != 0)
		syscall(SYS_futex, &raw_tid, FUTEX_WAIT, t, NULL, NULL, 0);
	sleep_ns(2000);
	printf("raw thread ended\n");
	return 0;
}

static char *const sh_argv[] = {
	(char *)"sh", (char *)"-c",
	(char *)"case \"$LD_PRELOAD\" in *libgotrace*) echo traced;; *) echo plain;; esac", NULL};

static int exec_shell(void *arg)
{
	(void)arg;
	execve("/bin/sh", sh_argv, environ);
	_exit(127);
}

static int clone_vfork(void)
{
	static char stack[64 * 1024] __attribute__((aligned(16)));
	fflush(stdout);
	for (int i = 0; i < 100; i++) {
		pid_t pid = clone(exec_shell, stack + sizeof stack, CLONE_VM | CLONE_VFORK | SIGCHLD, NULL);
		int st = 0;
		if (pid < 0 || waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st))
			return 1;
	}
	return 0;
}

static int vfork_exec_fail(void)
{
	static volatile int child_errno = -1;
	fflush(stdout);
	pid_t pid = vfork();
	if (pid == 0) {
		execl("/nonexistent/gt-procs-no-such-program", "x", (char *)NULL);
		child_errno = errno; /* seen by the parent: vfork shares the memory */
		_exit(127);
	}
	int st = 0;
	waitpid(pid, &st, 0);
	sleep_ns(2000);
	printf("vfork child errno %d exit %d\n", child_errno, WEXITSTATUS(st));
	pid = vfork(); /* and one whose exec succeeds */
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", "exit 3", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &st, 0);
	printf("vfork exec exit %d\n", WEXITSTATUS(st));
	return 0;
}

static int exit_children(void)
{
	pid_t pids[3];
	fflush(stdout);
	for (int i = 0; i < 3; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			sleep_ns(1000);
			_exit(10 + i);
		}
	}
	for (int i = 0; i < 3; i++) {
		int st = 0;
		waitpid(pids[i], &st, 0);
		printf("child %d exit %d\n", i, WEXITSTATUS(st));
	}
	return 0;
}

/* the shell the hook spawns itself gets glibc's arguments: "-x" is an option to it here */
static int system_status(void)
{
	printf("system(\"-x\") %d\n", system("-x"));
	printf("system(\"exit 4\") %d\n", system("exit 4"));
	return 0;
}

static int print_env(void)
{
	for (char **e = environ; *e; e++) {
		if (strncmp(*e, "LD_PRELOAD=", 11))
			printf("%s\n", *e);
		else
			fprintf(stderr, "%s\n", *e); /* differs between the runs by nature */
	}
	printf("getenv GOTRACE_ROOT_PID %s\n", getenv("GOTRACE_ROOT_PID") ? "set" : "unset");
	return 0;
}

int main(int argc, char **argv)
{
	const char *s = argc > 1 ? argv[1] : "";
	if (!strcmp(s, "_Fork") || !strcmp(s, "sysfork") || !strcmp(s, "clone") || !strcmp(s, "clone_vm"))
		return fork_like(s);
	if (!strcmp(s, "vfork"))
		return vfork_exec_fail();
	if (!strcmp(s, "clone_vfork"))
		return clone_vfork();
	if (!strcmp(s, "clone_thread") || !strcmp(s, "clone_settls"))
		return clone_thread(!strcmp(s, "clone_settls"));
	if (!strcmp(s, "exit-children"))
		return exit_children();
	if (!strcmp(s, "env"))
		return print_env();
	if (!strcmp(s, "system"))
		return system_status();
	fprintf(stderr, "usage: gt-procs _Fork|sysfork|clone|clone_vm|vfork|exit-children|env|system\n");
	return 2;
}
