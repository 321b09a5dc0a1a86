/* Blocking system calls through libc: GT_SYSCALL_BEGIN (with the descriptor's kind),
 * the real call, GT_SYSCALL_END (result and errno), errno preserved.  The plain ones are
 * generated from GT_SYSCALL_HOOKS; open (variadic), fcntl (only its waiting locks) and
 * syscall(SYS_futex) are written out. */
#include "capture_file.h"
#include "facts.h"
#include "hooks.def"
#include "libc_syscalls.h"
#include "lifecycle.h"
#include "seccomp_filter.h"
#include "stacks.h"

#include <linux/futex.h>
#include <linux/seccomp.h>
#include <stdarg.h>

/* a new descriptor (open, F_DUPFD, accept) may have the number of a closed one whose kind is cached */
static inline void forget_result(long r)
{
	if (r >= 0)
		gt_fd_forget((int)r);
}

/* libunwind's validation pipe (below): its write, which aarch64's libunwind makes through
 * write() where x86-64's makes it through syscall(SYS_write), is answered by the probe.  A
 * hook's first and second arguments (0 when it has fewer): for write the descriptor and the
 * address to test. */
#define GT_UNW_PIPE_R (-2)
#define GT_UNW_PIPE_W (-3)
static long unw_validate(uintptr_t addr);
static long unw_validate_arg(int none, ...);
#define GT_FIRST_ARG(...) GT_FIRST_ARG_(__VA_ARGS__, 0)
#define GT_FIRST_ARG_(a, ...) (a + 0)
#define GT_SECOND_ARG(...) GT_SECOND_ARG_(__VA_ARGS__, 0, 0)
#define GT_SECOND_ARG_(a, b, ...) b

#define GT_SYSCALL_HOOK(ret, name, params, args, nr, kind, arg) \
	GT_EXPORT ret name params \
	{ \
		struct gt_tls *gt_t_ = gt_enter(); \
		if (!gt_t_) { \
			if (GT_UNLIKELY(nr == SYS_write && \
					(long)GT_FIRST_ARG args == GT_UNW_PIPE_W && \
					gt_self()->busy)) \
				return (ret)unw_validate_arg(0, GT_SECOND_ARG args); \
			return GT_REAL(name) args; \
		} \
		gt_fact_syscall_begin(gt_t_, nr, kind, (int64_t)(arg)); \
		ret gt_r_ = GT_REAL(name) args; \
		int gt_e_ = errno; \
		if (nr == SYS_accept || nr == SYS_accept4) \
			forget_result((long)gt_r_); \
		gt_fact_syscall_end(gt_t_, nr, (long)gt_r_, gt_r_ == (ret)-1 ? gt_e_ : 0); \
		errno = gt_e_; \
		return gt_r_; \
	}

GT_SYSCALL_HOOKS(GT_SYSCALL_HOOK)

/* ---- poll: GT_SYSCALL_HOOK's shape, with the polled descriptor's key ------------------- */

#define GT_POLL_HOOK(name, params, args, nr) \
	GT_EXPORT int name params \
	{ \
		struct gt_tls *t = gt_enter(); \
		if (!t) \
			return GT_REAL(name) args; \
		gt_fact_poll_begin(t, nr, fds, n); \
		int r = GT_REAL(name) args; \
		int e = errno; \
		gt_fact_syscall_end(t, nr, r, r < 0 ? e : 0); \
		errno = e; \
		return r; \
	}

GT_POLL_HOOK(poll, (struct pollfd *fds, nfds_t n, int to), (fds, n, to), GT_NR_POLL)
GT_POLL_HOOK(__poll_chk, (struct pollfd *fds, nfds_t n, int to, size_t fl), (fds, n, to, fl), GT_NR_POLL)
GT_POLL_HOOK(ppoll, (struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *ss),
	     (fds, n, ts, ss), SYS_ppoll)
GT_POLL_HOOK(__ppoll_chk,
	     (struct pollfd *fds, nfds_t n, const struct timespec *ts, const sigset_t *ss, size_t fl),
	     (fds, n, ts, ss, fl), SYS_ppoll)

/* ---- open: FIFOs and network file systems block here --------------------------------- */

struct open_args {
	int (*fn)();
	int dfd;
	const char *path;
	int flags;
	mode_t mode;
	int at;
	int nomode;
};

static int call_open(const struct open_args *a)
{
	if (a->nomode)
		return a->at ? a->fn(a->dfd, a->path, a->flags) : a->fn(a->path, a->flags);
	return a->at ? a->fn(a->dfd, a->path, a->flags, a->mode) : a->fn(a->path, a->flags, a->mode);
}

/* Every open flavour: a new descriptor's number may be cached for a closed one. */
static int open_hooked(const struct open_args *a)
{
	struct gt_tls *t = gt_enter();
	if (!t) {
		int r = call_open(a);
		forget_result(r);
		return r;
	}
	gt_fact_syscall_begin(t, SYS_openat, GT_FD_NONE, a->flags);
	int r = call_open(a);
	int e = errno;
	forget_result(r);
	gt_fact_syscall_end(t, SYS_openat, r, r < 0 ? e : 0);
	errno = e;
	return r;
}

static int needs_mode(int flags) { return (flags & O_CREAT) || (flags & __O_TMPFILE) == __O_TMPFILE; }

#define GT_OPEN_PARAMS_0 const char *path, int flags
#define GT_OPEN_PARAMS_1 int dfd, const char *path, int flags
#define GT_OPEN_DFD_0 AT_FDCWD
#define GT_OPEN_DFD_1 dfd

#define GT_OPEN_HOOK(name, at) \
	GT_EXPORT int name(GT_OPEN_PARAMS_##at, ...) \
	{ \
		mode_t mode = 0; \
		if (needs_mode(flags)) { \
			va_list ap; \
			va_start(ap, flags); \
			mode = (mode_t)va_arg(ap, int); \
			va_end(ap); \
		} \
		struct open_args a = {(int (*)())GT_REAL(name), GT_OPEN_DFD_##at, path, flags, mode, at, 0}; \
		return open_hooked(&a); \
	}

GT_OPEN_HOOK(open, 0)
GT_OPEN_HOOK(open64, 0)
GT_OPEN_HOOK(openat, 1)
GT_OPEN_HOOK(openat64, 1)

/* _FORTIFY_SOURCE: __open_2 and friends (no mode argument) */
#define GT_OPEN2_HOOK(name, at) \
	GT_EXPORT int name(GT_OPEN_PARAMS_##at) \
	{ \
		struct open_args a = {(int (*)())GT_REAL(name), GT_OPEN_DFD_##at, path, flags, 0, at, 1}; \
		return open_hooked(&a); \
	}

GT_OPEN2_HOOK(__open_2, 0)
GT_OPEN2_HOOK(__open64_2, 0)
GT_OPEN2_HOOK(__openat_2, 1)
GT_OPEN2_HOOK(__openat64_2, 1)

/* ---- fcntl: only F_SETLKW / F_OFD_SETLKW wait ------------------------------------------- */

static int fcntl_common(int (*real)(int, int, ...), int fd, int cmd, void *arg)
{
	struct gt_tls *t;
	if ((cmd != F_SETLKW && cmd != F_OFD_SETLKW) || !(t = gt_enter())) {
		int r = real(fd, cmd, arg);
		if (cmd == F_DUPFD || cmd == F_DUPFD_CLOEXEC)
			forget_result(r);
		return r;
	}
	gt_fact_syscall_begin(t, SYS_fcntl, gt_fd_kind(fd), fd);
	int r = real(fd, cmd, arg);
	int e = errno;
	gt_fact_syscall_end(t, SYS_fcntl, r, r < 0 ? e : 0);
	errno = e;
	return r;
}

GT_EXPORT int fcntl(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *); /* like glibc: one pointer-sized argument, maybe unused */
	va_end(ap);
	return fcntl_common(GT_REAL(fcntl), fd, cmd, arg);
}

GT_EXPORT int fcntl64(int fd, int cmd, ...)
{
	va_list ap;
	va_start(ap, cmd);
	void *arg = va_arg(ap, void *);
	va_end(ap);
	return fcntl_common(GT_REAL(fcntl64), fd, cmd, arg);
}

/* ---- libunwind's memory validation, without descriptors ---------------------------------
 * libunwind tests that an address is readable by writing one byte of it into a pipe of its
 * own (pipe2 at its first unwind, syscall(SYS_write) per test, write() on aarch64; its read()
 * and close() of the pipe only check and reopen it).  Two descriptors the program would see: inside our
 * unwinding its pipe2 gets two numbers that are no descriptors (their read and close fail
 * EBADF: libunwind asks for the pipe again), and the write is answered by a probe. */
GT_EXPORT int pipe2(int fds[2], int flags)
{
	if (GT_UNLIKELY(gt_self()->busy) && gt_from_libunwind(__builtin_return_address(0))) {
		fds[0] = GT_UNW_PIPE_R;
		fds[1] = GT_UNW_PIPE_W;
		return 0;
	}
	int r = GT_REAL(pipe2)(fds, flags);
	if (!r) {
		gt_fd_forget(fds[0]);
		gt_fd_forget(fds[1]);
	}
	return r;
}

/* rt_sigprocmask reads the new set before it looks at `how`: with an invalid one it fails
 * EFAULT when the 8 bytes cannot be read, EINVAL when they can, and changes nothing.
 * Readability goes by pages, so the aligned 8 bytes holding addr answer for it. */
static int probe_unreadable(uintptr_t addr)
{
	return gt_sys4(SYS_rt_sigprocmask, -1, addr & ~(uintptr_t)7, NULL, 8) != -EINVAL;
}

/* Checked once against an address that cannot be read; if the kernel answered otherwise,
 * nothing is readable (a shorter stack or a fact without its argument, never a fault). */
int gt_kernel_reads(uintptr_t addr)
{
	static _Atomic int works; /* 0 unknown, 1 yes, 2 no */
	int w = gt_load(&works);
	if (!w) {
		long here = 0;
		int kernel_page = probe_unreadable(~(uintptr_t)4095);
		w = kernel_page && !probe_unreadable((uintptr_t)&here) ? 1 : 2;
		gt_store(&works, w);
	}
	return w == 1 && !probe_unreadable(addr);
}

static long unw_validate(uintptr_t addr)
{
	if (!gt_kernel_reads(addr)) {
		errno = EFAULT;
		return -1;
	}
	return 1;
}

/* unw_validate of the address after none, which may be any hook's second argument (a
 * union for accept: passed through the dots, read only for write's const void *) */
static long unw_validate_arg(int none, ...)
{
	va_list ap;
	va_start(ap, none);
	const void *addr = va_arg(ap, const void *);
	va_end(ap);
	return unw_validate((uintptr_t)addr);
}

/* a raw credential change (of the calling thread alone): the capture is made before it, as
 * by the hooks of libc's wrappers (hooks.def, GT_CRED_HOOKS) */
static int credential_nr(long nr)
{
	switch (nr) {
	case SYS_setuid: case SYS_setgid: case SYS_setreuid: case SYS_setregid:
	case SYS_setresuid: case SYS_setresgid: case SYS_setfsuid: case SYS_setfsgid:
	case SYS_setgroups: case SYS_capset:
		return 1;
	default:
		return 0;
	}
}

/* ---- syscall(SYS_futex, ...): waits block on the futex word, wakes release it ---------- */

GT_EXPORT long syscall(long nr, ...)
{
	va_list ap;
	va_start(ap, nr);
	long a0 = va_arg(ap, long), a1 = va_arg(ap, long), a2 = va_arg(ap, long);
	long a3 = va_arg(ap, long), a4 = va_arg(ap, long), a5 = va_arg(ap, long);
	va_end(ap);
	/* (int): libunwind passes an int, the upper half of a0 is garbage.  Outside our
	 * unwinding libunwind first finds the pipe unreadable and opens a real one. */
	if (GT_UNLIKELY(nr == SYS_write && (int)a0 == GT_UNW_PIPE_W && gt_self()->busy))
		return unw_validate((uintptr_t)a1);
	struct gt_tls *t;
	if (GT_UNLIKELY(credential_nr(nr))) {
		int saved = errno;
		if (gt_enter() && (nr == SYS_setuid || nr == SYS_setreuid || nr == SYS_setresuid))
			gt_capture_user_dir((uint32_t)(nr == SYS_setuid ? a0 : a1));
		errno = saved;
	}
	if (GT_UNLIKELY(nr == SYS_seccomp) &&
	    (a0 == SECCOMP_SET_MODE_STRICT ||
	     (a0 == SECCOMP_SET_MODE_FILTER && !gt_filter_lets_tracer_through((void *)a2))))
		gt_sandbox_enter();
	if (nr != SYS_futex || !(t = gt_enter())) {
		if (GT_UNLIKELY(nr == SYS_clone || nr == SYS_clone3 || nr == SYS_exit ||
				nr == GT_NR_FORK) && gt_raw_syscall(nr, a0)) {
			/* a copy of our memory (with no stack of its own: it returns here) */
			long r = GT_REAL(syscall)(nr, a0, a1, a2, a3, a4, a5);
			if (r == 0)
				gt_copy_forget();
			return r;
		}
		return GT_REAL(syscall)(nr, a0, a1, a2, a3, a4, a5);
	}
	uint64_t word = (uint64_t)a0;
	switch (a1 & FUTEX_CMD_MASK) {
	case FUTEX_WAIT:
	case FUTEX_WAIT_BITSET:
	case FUTEX_LOCK_PI:
	case FUTEX_LOCK_PI2:
	case FUTEX_WAIT_REQUEUE_PI: {
		gt_fact_block_begin(t, GT_BK_FUTEX, word, 1);
		long r = GT_REAL(syscall)(nr, a0, a1, a2, a3, a4, a5);
		int e = errno;
		gt_fact_block_end(t, GT_BK_FUTEX, word, r == -1 ? e : 0);
		errno = e;
		return r;
	}
	case FUTEX_WAKE:
	case FUTEX_WAKE_BITSET:
	case FUTEX_WAKE_OP:
	case FUTEX_REQUEUE:
	case FUTEX_CMP_REQUEUE:
	case FUTEX_UNLOCK_PI: {
		/* looked for before and after, stamped between (hooks_sync.c, GT_RELEASE_WAITED) */
		uint64_t before = gt_load(gt_blocked_word(GT_BK_FUTEX, word));
		int seen = (uint32_t)before && gt_waiters_has(word);
		unsigned cpu;
		uint64_t tsc = gt_now(&cpu);
		long r = GT_REAL(syscall)(nr, a0, a1, a2, a3, a4, a5);
		if (seen || (gt_blocked(GT_BK_FUTEX, word) && gt_waiters_has(word)) ||
		    gt_waiters_registered_since(word, GT_BK_FUTEX, before, tsc)) {
			int saved = errno;
			gt_fact_wake_at(t, GT_BK_FUTEX, word,
					(a1 & FUTEX_CMD_MASK) == FUTEX_UNLOCK_PI ? 1 : (uint32_t)a2, tsc, cpu);
			errno = saved;
		}
		return r;
	}
	default:
		break;
	}
	return GT_REAL(syscall)(nr, a0, a1, a2, a3, a4, a5);
}

/* ---- descriptor cache upkeep -------------------------------------------------------------- */

/* A pipe, FIFO or socket descriptor about to be closed: a wake of its readers (the last
 * close of a pipe's write end is their end of file; the encoder decides which close that
 * was), stamped before the close.  Only descriptors whose kind is cached (used by a hooked
 * call): no fstat here. */
static void closing(int fd)
{
	uint64_t obj = gt_fd_cached_obj(fd);
	struct gt_tls *t;
	if (GT_UNLIKELY(obj) && (t = gt_enter()))
		gt_fact_wake(t, GT_BK_FD, obj, GT_WAKE_ALL);
	gt_fd_forget(fd);
}

GT_EXPORT int close(int fd)
{
	int e = errno;
	closing(fd);
	errno = e;
	return GT_REAL(close)(fd);
}

GT_EXPORT int dup2(int fd, int fd2)
{
	int e = errno;
	if (fd2 != fd)
		closing(fd2);
	errno = e;
	return GT_REAL(dup2)(fd, fd2);
}

GT_EXPORT int dup3(int fd, int fd2, int flags)
{
	int e = errno;
	if (fd2 != fd)
		closing(fd2);
	errno = e;
	return GT_REAL(dup3)(fd, fd2, flags);
}

GT_EXPORT int fclose(FILE *f)
{
	if (f) {
		int e = errno;
		closing(fileno(f));
		errno = e;
	}
	return GT_REAL(fclose)(f);
}

GT_EXPORT int close_range(unsigned int lo, unsigned int hi, int flags)
{
	int r = GT_REAL(close_range)(lo, hi, flags);
	if (!r && !(flags & CLOSE_RANGE_CLOEXEC))
		gt_fd_forget_range(lo, hi);
	return r;
}

GT_EXPORT void closefrom(int lo)
{
	GT_REAL(closefrom)(lo);
	if (lo >= 0)
		gt_fd_forget_range((unsigned)lo, ~0u);
}

GT_EXPORT int socketpair(int dom, int type, int proto, int sv[2])
{
	int r = GT_REAL(socketpair)(dom, type, proto, sv);
	if (!r) {
		int e = errno;
		gt_fd_forget(sv[0]);
		gt_fd_forget(sv[1]);
		gt_fd_pair(sv);
		errno = e;
	}
	return r;
}

GT_EXPORT int pipe(int fds[2])
{
	int r = GT_REAL(pipe)(fds);
	if (!r) {
		gt_fd_forget(fds[0]);
		gt_fd_forget(fds[1]);
	}
	return r;
}

/* Calls that return one new descriptor: its number may be cached for a closed one (closed
 * by a call we do not see, such as closedir or an exec'd helper's close_range). */
#define GT_NEW_FD_HOOK(name, params, args) \
	GT_EXPORT int name params \
	{ \
		int r = GT_REAL(name) args; \
		forget_result(r); \
		return r; \
	}

GT_NEW_FD_HOOK(socket, (int dom, int type, int proto), (dom, type, proto))
GT_NEW_FD_HOOK(dup, (int fd), (fd))
GT_NEW_FD_HOOK(eventfd, (unsigned int v, int flags), (v, flags))
GT_NEW_FD_HOOK(epoll_create, (int n), (n))
GT_NEW_FD_HOOK(epoll_create1, (int flags), (flags))
GT_NEW_FD_HOOK(memfd_create, (const char *name, unsigned int flags), (name, flags))
GT_NEW_FD_HOOK(timerfd_create, (int c, int flags), (c, flags))
GT_NEW_FD_HOOK(signalfd, (int fd, const sigset_t *m, int flags), (fd, m, flags))
GT_NEW_FD_HOOK(inotify_init, (void), ())
GT_NEW_FD_HOOK(inotify_init1, (int flags), (flags))
