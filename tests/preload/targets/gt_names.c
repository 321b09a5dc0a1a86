/* Names as the user knows them (tests/preload/test_names.c):
 *   hello              a thread named "helper"; prints argv[0] and /proc/self/comm
 *   execv NAME         execs itself as "hello" with argv[0] = NAME
 *   retitle exit|kill  a forked child rewrites its argv memory ("gt-names: worker process",
 *                      as nginx's workers do) after its capture began; "exit": it exits
 *                      normally; "kill": it creates a thread, then its parent kills it (-9)
 *   rename setname|prctl  a forked child names itself first thing ("child-named", through
 *                      pthread_setname_np or prctl): its capture begins with that call
 *   waiting            a thread the tracer did not start (libc's own pthread_create, as
 *                      jemalloc's background threads get it), named "bg-worker", waits on a
 *                      condvar when the program exits, 50 ms after the wait began
 *   seccomp            as a service under systemd's SystemCallFilter=@system-service: the
 *                      debugging calls (ptrace, process_vm_readv/writev) kill the process
 *                      (SIGSYS); then "hello"
 * Every wait is on the event itself (pipes, waitpid, /proc/self/task/TID/syscall). */
#include <dlfcn.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "wait_blocked.h"

static void *helper(void *arg)
{
	return arg;
}

static void run_thread(const char *name)
{
	pthread_t t;
	if (pthread_create(&t, NULL, helper, NULL) != 0)
		exit(3);
	if (name)
		pthread_setname_np(t, name);
	pthread_join(t, NULL);
}

static void print_names(const char *argv0)
{
	char comm[32] = "";
	FILE *f = fopen("/proc/self/comm", "r");
	if (f) {
		if (!fgets(comm, sizeof comm, f))
			comm[0] = 0;
		fclose(f);
	}
	comm[strcspn(comm, "\n")] = 0;
	printf("argv0=%s comm=%s\n", argv0, comm);
}

/* setproctitle as nginx does it: the new title over the argument strings, the rest zeroed. */
static void retitle(int argc, char **argv, const char *title)
{
	char *end = argv[argc - 1] + strlen(argv[argc - 1]);
	memset(argv[0], 0, (size_t)(end - argv[0]));
	strncpy(argv[0], title, (size_t)(end - argv[0]));
	argv[1] = NULL;
}

static int retitle_child(int argc, char **argv, int kill_it)
{
	int ready[2];
	if (pipe(ready) != 0)
		return 3;
	pid_t pid = fork();
	if (pid < 0)
		return 3;
	if (pid == 0) {
		close(ready[0]);
		run_thread(NULL); /* the child's capture begins here, under the parent's title */
		retitle(argc, argv, "gt-names: worker process");
		if (kill_it) {
			run_thread(NULL); /* the new title is seen when a thread is created */
			if (write(ready[1], "r", 1) != 1)
				_exit(3);
			for (;;)
				pause();
		}
		exit(0);
	}
	close(ready[1]);
	char c;
	if (kill_it) {
		if (read(ready[0], &c, 1) != 1)
			return 3;
		kill(pid, SIGKILL);
	}
	int status;
	if (waitpid(pid, &status, 0) != pid)
		return 3;
	printf("child %s\n", WIFSIGNALED(status) ? "killed" : WIFEXITED(status) ? "exited" : "?");
	return 0;
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static _Atomic pid_t bg_tid;

static void *bg_worker(void *arg)
{
	prctl(PR_SET_NAME, "bg-worker");
	bg_tid = gt_gettid();
	pthread_mutex_lock(&lock);
	for (;;)
		pthread_cond_wait(&cond, &lock); /* never signalled: waiting when the program ends */
	return arg;
}

static int waiting(void)
{
	typedef int (*create_fn)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);
	void *libc = dlopen("libc.so.6", RTLD_NOLOAD | RTLD_LAZY);
	create_fn real_create = libc ? (create_fn)dlsym(libc, "pthread_create") : NULL;
	pthread_t t;
	if (!real_create || real_create(&t, NULL, bg_worker, NULL) != 0)
		return 3;
	while (!bg_tid)
		sched_yield();
	gt_wait_blocked(bg_tid, SYS_futex, (uintptr_t)&cond, (uintptr_t)(&cond + 1));
	/* the wait the trace must show lasts at least this long after it began: far longer than
	 * the thread ran before it (0.1 ms; a preemption under load counts as running here) */
	struct timespec held = {0, 50 * 1000 * 1000};
	nanosleep(&held, NULL);
	printf("exiting while bg-worker waits\n");
	fflush(stdout);
	return 0;
}

/* A filter that kills the process on the calls systemd's @system-service leaves out of the
 * @debug group, and allows every other. */
static void forbid_debugging_calls(void)
{
	struct sock_filter code[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_readv, 3, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_process_vm_writev, 2, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, SYS_ptrace, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
	};
	struct sock_fprog prog = {sizeof code / sizeof *code, code};
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) != 0)
		exit(4);
}

int main(int argc, char **argv)
{
	const char *what = argc > 1 ? argv[1] : "hello";
	if (!strcmp(what, "hello")) {
		run_thread("helper");
		print_names(argv[0]);
		return 0;
	}
	if (!strcmp(what, "execv") && argc > 2) {
		char *args[] = {argv[2], "hello", NULL};
		fflush(stdout);
		execv("/proc/self/exe", args);
		return 127;
	}
	if (!strcmp(what, "retitle") && argc > 2)
		return retitle_child(argc, argv, !strcmp(argv[2], "kill"));
	if (!strcmp(what, "rename") && argc > 2) {
		fflush(stdout);
		pid_t pid = fork();
		if (pid == 0) {
			if (!strcmp(argv[2], "prctl"))
				prctl(PR_SET_NAME, "child-named");
			else
				pthread_setname_np(pthread_self(), "child-named");
			_exit(0);
		}
		int status;
		if (pid < 0 || waitpid(pid, &status, 0) != pid)
			return 3;
		printf("child %s\n", WIFEXITED(status) ? "exited" : "?");
		return 0;
	}
	if (!strcmp(what, "waiting"))
		return waiting();
	if (!strcmp(what, "seccomp")) {
		forbid_debugging_calls();
		run_thread("helper");
		print_names(argv[0]);
		return 0;
	}
	return 2;
}
