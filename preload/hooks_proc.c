/* Processes: fork/vfork, posix_spawn, the exec family, system, daemon, waitid, _exit/_Exit.
 *
 * A fork child gets its own capture (the atfork handler resets the tracer; the capture is
 * created by the child's first fact, so a child that only execs writes none).  exec'd
 * programs stay traced (LD_PRELOAD kept, or put back when the program passes an
 * environment without it); GOTRACE_FOLLOW=0 strips libgotrace.so from what children run
 * (the first traced process's own exec'd images stay traced), and so does a process gotrace
 * detached (child_env.c). */
#include "child_env.h"
#include "files_apart.h"
#include "config.h"
#include "facts.h"
#include "hooks.def"
#include "lifecycle.h"
#include "stacks.h"

#include <stdarg.h>

extern char **environ;

/* ---- a child's environment, in the tracer's memory ---------------------------------------
 * 16 KiB that the program's stack may not have (a hook borrows at most 512 bytes of it).  A
 * vfork child shares our memory and TLS: when its exec succeeds, the parent gives the memory
 * back (gt_child_env_release). */
static __thread void *gt_env_held __attribute__((tls_model("initial-exec")));

static char **env_take(char *const envp[], int follow, void **mem)
{
	GT_STATIC_ASSERT(GT_ENV_SLOTS * sizeof(char *) + GT_ENV_SCRATCH <= GT_SCRATCH_BYTES, "room");
	char *m = gt_scratch_take();
	*mem = m;
	if (!m)
		return (char **)envp; /* no memory of ours to be had: the environment as given */
	gt_env_held = m;
	return gt_child_env(envp, follow, (char **)m, GT_ENV_SLOTS,
			    m + GT_ENV_SLOTS * sizeof(char *), GT_ENV_SCRATCH);
}

static void env_give(void *mem)
{
	if (!mem)
		return;
	if (gt_env_held == mem)
		gt_env_held = NULL;
	gt_scratch_give(mem);
}

void gt_child_env_release(void) { env_give(gt_env_held); }

/* ---- fork ------------------------------------------------------------------------------ */

static pid_t traced_fork(void)
{
	struct gt_tls *t = gt_enter();
	unsigned cpu = 0;
	uint64_t tsc = t ? gt_now(&cpu) : 0;
	gt_files_apart_fork(1);
	pid_t p = GT_REAL(fork)();
	gt_files_apart_fork(p == 0 ? -1 : 0);
	if (p > 0 && t) {
		int saved = errno;
		gt_fact_process(t, GT_PROC_FORK, tsc, cpu, p, 0);
		errno = saved;
	}
	return p;
}

GT_EXPORT pid_t fork(void) { return traced_fork(); }

/* glibc's fork without its atfork handlers: the child, a copy of our memory in which the
 * tracer's own state was not reset, passes straight through */
GT_EXPORT pid_t _Fork(void)
{
	pid_t p = GT_REAL(_Fork)();
	if (p == 0 && gt_load(&gt_enabled))
		gt_copy_forget();
	return p;
}

/* vfork keeps its semantics: the child shares our memory and runs on our stack until it
 * execs or exits.  A C wrapper's frame would not survive the child, so vfork is written in
 * assembly as glibc's is: the return address waits in a register the system call keeps (the
 * child's calls overwrite its stack slot), and C runs only before the call and in the parent
 * after it.  The child's hooks pass straight through (GT_BUSY_UNTRACED is set in the TLS it
 * shares with us: not a loss) and it never touches the capture; the parent records the fork
 * when it resumes. */
#define GT_STR_(x) #x
#define GT_STR(x) GT_STR_(x)

GT_HIDDEN void gt_vfork_enter(void);
GT_HIDDEN pid_t gt_vfork_parent(long r);

GT_HIDDEN void gt_vfork_enter(void) { gt_self()->busy += GT_BUSY_UNTRACED; }

GT_HIDDEN pid_t gt_vfork_parent(long r)
{
	gt_self()->busy -= GT_BUSY_UNTRACED;
	gt_child_env_release(); /* the child's, whose exec succeeded */
	if (r < 0) {
		errno = (int)-r;
		return -1;
	}
	int saved = errno;
	struct gt_tls *t = gt_enter();
	if (t) {
		unsigned cpu;
		uint64_t tsc = gt_now(&cpu);
		gt_fact_process(t, GT_PROC_FORK, tsc, cpu, (pid_t)r, 0);
	}
	errno = saved;
	return (pid_t)r;
}

#if defined(__x86_64__)
__asm__(".text\n"
	".globl vfork\n"
	".type vfork, @function\n"
	".p2align 4\n"
	"vfork:\n"
	"	.cfi_startproc\n"
	"	subq $8, %rsp\n"            /* the call below needs a 16-byte aligned stack */
	"	.cfi_adjust_cfa_offset 8\n"
	"	call gt_vfork_enter\n"
	"	addq $8, %rsp\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"	popq %rdi\n"                /* the return address, kept where syscall keeps it */
	"	.cfi_adjust_cfa_offset -8\n"
	"	.cfi_register %rip, %rdi\n"
	"	movl $" GT_STR(SYS_vfork) ", %eax\n"
	"	syscall\n"
	"	pushq %rdi\n"
	"	.cfi_adjust_cfa_offset 8\n"
	"	.cfi_rel_offset %rip, 0\n"
	"	testq %rax, %rax\n"
	"	jz 1f\n"                     /* the child returns at once */
	"	pushq %rax\n"               /* alignment again */
	"	.cfi_adjust_cfa_offset 8\n"
	"	movq %rax, %rdi\n"
	"	call gt_vfork_parent\n"
	"	popq %rcx\n"
	"	.cfi_adjust_cfa_offset -8\n"
	"1:	ret\n"
	"	.cfi_endproc\n"
	".size vfork, .-vfork\n");
#elif defined(__aarch64__)
__asm__(".text\n"
	".globl vfork\n"
	".type vfork, %function\n"
	".p2align 2\n"
	"vfork:\n"
	"	.cfi_startproc\n"
	"	stp x29, x30, [sp, #-16]!\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset x29, -16\n"
	"	.cfi_offset x30, -8\n"
	"	mov x29, sp\n"
	"	bl gt_vfork_enter\n"
	"	ldp x29, x30, [sp], #16\n"
	"	.cfi_def_cfa_offset 0\n"
	"	.cfi_restore x29\n"
	"	mov x9, x30\n"              /* the return address, kept where svc keeps it */
	"	.cfi_register x30, x9\n"
	"	mov x0, #0x4111\n"          /* CLONE_VM | CLONE_VFORK | SIGCHLD, as glibc */
	"	mov x1, sp\n"
	"	mov x8, #" GT_STR(SYS_clone) "\n"
	"	svc 0\n"
	"	cbz x0, 1f\n"               /* the child returns at once */
	"	.cfi_remember_state\n"
	"	stp x29, x9, [sp, #-16]!\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset x29, -16\n"
	"	.cfi_offset x30, -8\n"
	"	mov x29, sp\n"
	"	bl gt_vfork_parent\n"
	"	ldp x29, x30, [sp], #16\n"
	"	.cfi_def_cfa_offset 0\n"
	"	ret\n"
	"	.cfi_restore_state\n"
	"1:	mov x30, x9\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".size vfork, .-vfork\n");
#endif

/* ---- spawn, exec, system, daemon --------------------------------------------------------- */

static int spawn_common(int (*real)(pid_t *, const char *, const posix_spawn_file_actions_t *,
				    const posix_spawnattr_t *, char *const[], char *const[]),
			pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
	void *mem = NULL;
	char **env = envp ? env_take(envp, gt_follow_spawn(), &mem) : NULL;
	struct gt_tls *t = gt_enter();
	unsigned cpu = 0;
	uint64_t tsc = t ? gt_now(&cpu) : 0;
	pid_t local;
	int r = real(pid ? pid : &local, path, fa, at, argv, env);
	env_give(mem);
	if (t) {
		int saved = errno;
		gt_fact_process(t, GT_PROC_SPAWN, tsc, cpu, r ? 0 : (pid ? *pid : local), r);
		errno = saved;
	}
	return r;
}

GT_EXPORT int posix_spawn(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			  const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
	return spawn_common(GT_REAL(posix_spawn), pid, path, fa, at, argv, envp);
}

GT_EXPORT int posix_spawnp(pid_t *pid, const char *path, const posix_spawn_file_actions_t *fa,
			   const posix_spawnattr_t *at, char *const argv[], char *const envp[])
{
	return spawn_common(GT_REAL(posix_spawnp), pid, path, fa, at, argv, envp);
}

static struct gt_tls *exec_before(void)
{
	/* a fork child that recorded nothing yet (fork + exec) gets no capture of its own */
	struct gt_tls *t = gt_load(&gt_state) == GT_ST_UNINIT ? NULL : gt_enter();
	if (t) {
		unsigned cpu;
		uint64_t tsc = gt_now(&cpu);
		gt_fact_process(t, GT_PROC_EXEC, tsc, cpu, 0, 0);
		gt_exec_trim();
	}
	return t;
}

static int exec_failed(struct gt_tls *t, int r)
{
	int e = errno;
	if (t) {
		unsigned cpu;
		uint64_t tsc = gt_now(&cpu);
		gt_fact_process(t, GT_PROC_EXEC, tsc, cpu, 0, e);
	}
	errno = e;
	return r;
}

enum exec_how { EXEC_PATH, EXEC_SEARCH, EXEC_FD };

static int exec_common(enum exec_how how, const char *file, int fd, char *const argv[], char *const envp[])
{
	void *mem;
	char **env = env_take(envp, gt_follow_exec(), &mem);
	struct gt_tls *t = exec_before();
	int r;
	if (how == EXEC_PATH)
		r = GT_REAL(execve)(file, argv, env);
	else if (how == EXEC_SEARCH)
		r = GT_REAL(execvpe)(file, argv, env);
	else
		r = GT_REAL(fexecve)(fd, argv, env);
	int e = errno;
	env_give(mem);
	errno = e;
	return exec_failed(t, r);
}

GT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	return exec_common(EXEC_PATH, path, -1, argv, envp);
}

GT_EXPORT int execv(const char *path, char *const argv[]) { return exec_common(EXEC_PATH, path, -1, argv, environ); }

GT_EXPORT int execvp(const char *file, char *const argv[])
{
	return exec_common(EXEC_SEARCH, file, -1, argv, environ);
}

GT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return exec_common(EXEC_SEARCH, file, -1, argv, envp);
}

GT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	return exec_common(EXEC_FD, NULL, fd, argv, envp);
}

/* execl, execlp, execle: the argument list becomes an argv on the stack. */
#define GT_COLLECT_ARGS(with_env) \
	va_list ap; \
	size_t n = 0; \
	/* glibc declares arg nonnull, yet execl(path, NULL) is seen in the wild */ \
	const char *volatile first = arg; \
	va_start(ap, arg); \
	if (first) \
		for (n = 1; va_arg(ap, char *); n++) \
			; \
	va_end(ap); \
	char *argv[n + 1]; \
	char *const *envp = environ; \
	argv[0] = (char *)arg; \
	va_start(ap, arg); \
	for (size_t i = 1; i <= n; i++) \
		argv[i] = va_arg(ap, char *); \
	if (with_env) \
		envp = va_arg(ap, char *const *); \
	va_end(ap); \
	argv[n] = NULL;

GT_EXPORT int execl(const char *path, const char *arg, ...)
{
	GT_COLLECT_ARGS(0)
	return exec_common(EXEC_PATH, path, -1, argv, envp);
}

GT_EXPORT int execlp(const char *file, const char *arg, ...)
{
	GT_COLLECT_ARGS(0)
	return exec_common(EXEC_SEARCH, file, -1, argv, envp);
}

GT_EXPORT int execle(const char *path, const char *arg, ...)
{
	GT_COLLECT_ARGS(1)
	return exec_common(EXEC_PATH, path, -1, argv, envp);
}

/* glibc's system() gives the shell the program's environ, which stays the program's: when the
 * shell needs another environment (GOTRACE_FOLLOW=0, or the root's pid to learn), it is spawned
 * here as glibc does it (sysdeps/posix/system.c): SIGINT and SIGQUIT ignored while any
 * system() runs, SIGCHLD blocked, the shell killed if the caller is cancelled. */
static _Atomic int shell_lock;
static int shell_users;
static struct sigaction shell_intr, shell_quit;

static void shell_lock_take(void) { gt_lock(&shell_lock); }

static void shell_restore(const sigset_t *omask)
{
	shell_lock_take();
	if (--shell_users == 0) {
		sigaction(SIGINT, &shell_intr, NULL);
		sigaction(SIGQUIT, &shell_quit, NULL);
	}
	gt_unlock(&shell_lock);
	sigprocmask(SIG_SETMASK, omask, NULL);
}

struct shell_wait {
	pid_t pid;
	const sigset_t *omask;
};

static void shell_cancelled(void *p)
{
	const struct shell_wait *w = p;
	int st;
	gt_sys2(SYS_kill, w->pid, SIGKILL);
	while (gt_sys4(SYS_wait4, w->pid, &st, 0, NULL) == -EINTR)
		;
	shell_restore(w->omask);
}

static int shell_spawn(const char *cmd, char **env, void *env_mem)
{
	struct sigaction ign = {.sa_handler = SIG_IGN};
	sigemptyset(&ign.sa_mask);
	shell_lock_take();
	if (shell_users++ == 0) {
		sigaction(SIGINT, &ign, &shell_intr);
		sigaction(SIGQUIT, &ign, &shell_quit);
	}
	gt_unlock(&shell_lock);
	sigset_t omask, reset;
	sigaddset(&ign.sa_mask, SIGCHLD);
	sigprocmask(SIG_BLOCK, &ign.sa_mask, &omask);
	sigemptyset(&reset);
	if (shell_intr.sa_handler != SIG_IGN)
		sigaddset(&reset, SIGINT);
	if (shell_quit.sa_handler != SIG_IGN)
		sigaddset(&reset, SIGQUIT);
	posix_spawnattr_t at;
	posix_spawnattr_init(&at);
	posix_spawnattr_setsigmask(&at, &omask);
	posix_spawnattr_setsigdefault(&at, &reset);
	posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK);
	char *argv[] = {(char *)"sh", (char *)"-c", (char *)cmd, NULL}; /* glibc 2.36: no "--" */
	pid_t pid;
	int status;
	int ret = GT_REAL(posix_spawn)(&pid, "/bin/sh", NULL, &at, argv, env);
	env_give(env_mem); /* before the wait, which may be cancelled */
	posix_spawnattr_destroy(&at);
	if (ret == 0) {
		struct shell_wait w = {pid, &omask};
		pid_t got;
		pthread_cleanup_push(shell_cancelled, &w);
		do
			got = GT_REAL(waitpid)(pid, &status, 0); /* a cancellation point, as in glibc */
		while (got == -1 && errno == EINTR);
		if (got != pid)
			status = -1;
		pthread_cleanup_pop(0);
	} else {
		status = 127 << 8; /* as if the shell had run _exit(127) */
	}
	shell_restore(&omask);
	if (ret)
		errno = ret;
	return status;
}

static int run_system(const char *cmd)
{
	void *mem;
	char **env = env_take(environ, gt_follow_spawn(), &mem);
	if (env != environ)
		return shell_spawn(cmd, env, mem);
	env_give(mem);
	return GT_REAL(system)(cmd);
}

GT_EXPORT int system(const char *cmd)
{
	struct gt_tls *t = cmd ? gt_enter() : NULL;
	if (!t)
		return cmd ? run_system(cmd) : GT_REAL(system)(cmd);
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	gt_fact_process(t, GT_PROC_SPAWN, tsc, cpu, 0, 0);
	/* the caller waits for the shell: a wait4 for the encoder */
	gt_fact_syscall_begin(t, SYS_wait4, GT_FD_NONE, -1);
	int r = run_system(cmd);
	int e = errno;
	gt_fact_syscall_end(t, SYS_wait4, r, r == -1 ? e : 0);
	errno = e;
	return r;
}

GT_EXPORT int daemon(int nochdir, int noclose)
{
	struct gt_tls *t = gt_enter();
	if (t) {
		/* the calling process _exits inside daemon: say where its child comes from now */
		unsigned cpu;
		uint64_t tsc = gt_now(&cpu);
		gt_fact_process(t, GT_PROC_FORK, tsc, cpu, 0, 0);
	}
	return GT_REAL(daemon)(nochdir, noclose);
}

/* ---- getppid: an orphan's adopter ---------------------------------------------------------
 * gotrace run is a subreaper, so as to wait for daemons: an orphan of the tree becomes its
 * child.  getppid names the process that adopts orphans without gotrace (init, or a
 * subreaper above it; gotrace asked before it became one).  The command is gotrace's child
 * indeed.  /proc/PID/stat still shows gotrace. */
GT_EXPORT pid_t getppid(void)
{
	pid_t p = GT_REAL(getppid)();
	if (GT_UNLIKELY(p == gt_cfg.reaper) && p > 0 && !gt_cfg.is_command)
		return gt_cfg.adopter;
	return p;
}

/* ---- waitid: the child it returned ---------------------------------------------------------
 * wait4 returns the pid of the child it reaped; waitid returns 0 and names the child in *si.
 * Its end's result is that child's pid when *si reports a death (the encoder's waker of the
 * call, and where a child killed without an end ends), else the call's result. */
GT_EXPORT int waitid(idtype_t it, id_t id, siginfo_t *si, int o)
{
	struct gt_tls *t = gt_enter();
	if (!t)
		return GT_REAL(waitid)(it, id, si, o);
	gt_fact_syscall_begin(t, SYS_waitid, GT_FD_NONE, (int64_t)id);
	int r = GT_REAL(waitid)(it, id, si, o);
	int e = errno;
	long result = r;
	if (r == 0 && si && si->si_pid > 0 &&
	    (si->si_code == CLD_EXITED || si->si_code == CLD_KILLED || si->si_code == CLD_DUMPED))
		result = si->si_pid;
	gt_fact_syscall_end(t, SYS_waitid, result, r == -1 ? e : 0);
	errno = e;
	return r;
}

/* ---- the wait4 family: the child it reaped ------------------------------------------------
 * As waitid: its end's result is the pid it returned when that child died, but 0 for a child
 * it reports stopped or continued (WUNTRACED, WCONTINUED): one that lives on, which nothing
 * may take for its death.  The status tells; a caller that passes none has one of ours
 * filled instead (the kernel writes it, nobody reads it). */
static long reaped_pid(pid_t r, int status)
{
	return r > 0 && (WIFSTOPPED(status) || WIFCONTINUED(status)) ? 0 : r;
}

#define GT_WAIT_HOOK(name, params, args, arg) \
	GT_EXPORT pid_t name params \
	{ \
		struct gt_tls *t = gt_enter(); \
		if (!t) \
			return GT_REAL(name) args; \
		int own = 0; \
		if (!st) \
			st = &own; \
		gt_fact_syscall_begin(t, SYS_wait4, GT_FD_NONE, (int64_t)(arg)); \
		pid_t r = GT_REAL(name) args; \
		int e = errno; \
		gt_fact_syscall_end(t, SYS_wait4, r > 0 ? reaped_pid(r, *st) : r, r == -1 ? e : 0); \
		errno = e; \
		return r; \
	}

GT_WAIT_HOOK(wait, (int *st), (st), -1)
GT_WAIT_HOOK(waitpid, (pid_t p, int *st, int o), (p, st, o), p)
GT_WAIT_HOOK(wait4, (pid_t p, int *st, int o, struct rusage *ru), (p, st, o, ru), p)
GT_WAIT_HOOK(wait3, (int *st, int o, struct rusage *ru), (st, o, ru), -1)

/* ---- _exit and _Exit skip atexit and destructors: finalize here ------------------------- */

/* Immediate and async-signal-safe like the call itself: end records only, never the
 * converter (GOTRACE_OUT converts at exit() alone). */
GT_EXPORT void _exit(int status)
{
	if (!gt_self()->busy && !gt_detached())
		gt_offstack(1, (void *)gt_finalize, 0, 0, 0);
	GT_REAL(_exit)(status);
	__builtin_unreachable();
}

GT_EXPORT void _Exit(int status)
{
	if (!gt_self()->busy && !gt_detached())
		gt_offstack(1, (void *)gt_finalize, 0, 0, 0);
	GT_REAL(_Exit)(status);
	__builtin_unreachable();
}
