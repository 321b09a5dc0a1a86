/* For target programs: wait until another thread of this process sleeps in a given system
 * call, without sleeping for a guessed time.  /proc/self/task/TID/syscall names the call a
 * thread is blocked in ("202 0xWORD ..." for futex) and only answers once the thread is off
 * the CPU.  Raw system calls keep the polling out of the tracer's hooks, so the captures of
 * the tests hold only what the scenario itself did. */
#ifndef GT_TARGET_WAIT_BLOCKED_H
#define GT_TARGET_WAIT_BLOCKED_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static inline pid_t gt_gettid(void) { return (pid_t)syscall(SYS_gettid); }

/* The number the kernel gives call NR in /proc: under qemu-user (GT_EMULATED_ON,
 * tests/meson.build) the emulator's own call on the host's kernel, in x86-64's numbering:
 * the same call, but for rt_sigsuspend, which qemu 7 waits in as ppoll (each as seen in
 * /proc under qemu-aarch64 7.2).  Guest addresses are the host's: the first argument
 * compares as it is. */
static inline long gt_kernel_nr(long nr)
{
#if defined(__aarch64__)
	static const long x86_64_of[][2] = {
		{SYS_futex, 202}, {SYS_read, 0}, {SYS_ppoll, 271}, {SYS_rt_sigsuspend, 271},
		{SYS_wait4, 61},
	};
	const char *on = getenv("GT_EMULATED_ON");
	if (on && !strcmp(on, "x86_64"))
		for (size_t i = 0; i < sizeof x86_64_of / sizeof x86_64_of[0]; i++)
			if (x86_64_of[i][0] == nr)
				return x86_64_of[i][1];
#endif
	return nr;
}

/* Whether thread TID of process PID (0: this one) is blocked in system call NR with a first
 * argument in [LO, HI). */
static inline int gt_proc_blocked_in(pid_t pid, pid_t tid, long nr, uintptr_t lo, uintptr_t hi)
{
	char path[64], buf[256];
	if (pid)
		snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
	else
		snprintf(path, sizeof path, "/proc/self/task/%d/syscall", (int)tid);
	long fd = syscall(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	long n = syscall(SYS_read, fd, buf, sizeof buf - 1);
	syscall(SYS_close, fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *end;
	long got = strtol(buf, &end, 10);
	if (end == buf || got != gt_kernel_nr(nr))
		return 0;
	uintptr_t arg = (uintptr_t)strtoull(end, NULL, 16);
	return arg >= lo && arg < hi;
}

static inline int gt_blocked_in(pid_t tid, long nr, uintptr_t lo, uintptr_t hi)
{
	return gt_proc_blocked_in(0, tid, nr, lo, hi);
}

/* Returns once thread TID of process PID (0: this one) sleeps in NR on an argument in
 * [LO, HI) (hi == 0: any). */
static inline void gt_proc_wait_blocked(pid_t pid, pid_t tid, long nr, uintptr_t lo, uintptr_t hi)
{
	while (!gt_proc_blocked_in(pid, tid, nr, lo, hi ? hi : UINTPTR_MAX))
		syscall(SYS_sched_yield);
}

/* Returns once thread TID sleeps in NR on an argument in [LO, HI) (hi == 0: any). */
static inline void gt_wait_blocked(pid_t tid, long nr, uintptr_t lo, uintptr_t hi)
{
	gt_proc_wait_blocked(0, tid, nr, lo, hi);
}

#endif
