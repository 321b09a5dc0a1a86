/* GT_PROCESS_NAME: see proc_name.h.
 *
 * The command line is read into a static buffer (never onto the program's stack) owned by
 * one thread at a time through a try-flag: a thread that finds it taken skips its check,
 * as the owner is writing the same state.  A thread's creation only looks for a change: a
 * hash of the argument area (its bounds from /proc/self/stat at the start; no descriptor,
 * no system call) against what was last written.  Only a
 * change reads /proc/self/comm and /proc/self/cmdline, the kernel's own view, and writes. */
#include "proc_name.h"
#include "facts.h"
#include "files_apart.h"

#include <fcntl.h>
#include <sys/prctl.h>
#include <string.h>

static char gt_cmdline_buf[GT_CMDLINE_MAX];
static _Atomic int gt_name_busy;
static uintptr_t gt_arg_start, gt_arg_end; /* argument area; 0: unknown */
static uint64_t gt_arg_hash;               /* of the area when the last name was written */
static char gt_fork_comm[17];              /* a fork child's inherited comm, until written */

struct proc_read {
	const char *path;
	char *buf;
	size_t cap;
};

static long read_proc_apart(void *job)
{
	struct proc_read *r = job;
	long fd = gt_sys4(SYS_openat, AT_FDCWD, r->path, O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	long n = gt_sys3(SYS_read, fd, r->buf, r->cap);
	gt_sys1(SYS_close, fd);
	return n > 0 ? n : 0;
}

/* Bytes of path read into buf (at most cap), 0 when it cannot be read; the file is open in a
 * descriptor table of its own (files_apart.h): a thread's creation or the end reads it while
 * other threads of the program open theirs. */
static size_t read_proc(const char *path, char *buf, size_t cap)
{
	struct proc_read r = {path, buf, cap};
	return (size_t)gt_files_apart(read_proc_apart, &r);
}

static uint64_t fnv1a(uint64_t h, const volatile char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 0x100000001b3ull;
	return h;
}

/* arg_start and arg_end: fields 48 and 49 of /proc/self/stat (after the comm, which may
 * hold spaces and parentheses: counted from the last ')', field 2's end). */
static void find_arg_area(void)
{
	char *stat = gt_cmdline_buf;
	size_t n = read_proc("/proc/self/stat", stat, sizeof gt_cmdline_buf - 1);
	stat[n] = 0;
	char *p = NULL;
	for (size_t i = 0; i < n; i++)
		if (stat[i] == ')')
			p = stat + i + 1;
	gt_arg_start = gt_arg_end = 0;
	uint64_t v[2] = {0, 0};
	for (int field = 2; p && *p && field < 49;) {
		while (*p == ' ')
			p++;
		field++;
		uint64_t x = 0;
		while (*p >= '0' && *p <= '9')
			x = x * 10 + (uint64_t)(*p++ - '0');
		if (field >= 48)
			v[field - 48] = x;
		while (*p && *p != ' ')
			p++;
	}
	if (v[0] && v[1] > v[0]) {
		gt_arg_start = (uintptr_t)v[0];
		gt_arg_end = (uintptr_t)v[1];
	}
}

/* A hash of the argument area as it is now (0: unknown).  Read in place: it is the top of
 * the initial stack, mapped for the process's life (setproctitle rewrites it, never unmaps
 * it).  Not process_vm_readv: seccomp filters of services (systemd's @system-service) leave
 * it out, and a filtered call kills the process with SIGSYS. */
static uint64_t arg_area_hash(void)
{
	size_t len = gt_arg_end - gt_arg_start;
	if (!gt_arg_start || !len)
		return 0;
	if (len > sizeof gt_cmdline_buf)
		len = sizeof gt_cmdline_buf;
	return fnv1a(0xcbf29ce484222325ull, (const volatile char *)gt_arg_start, len) | 1;
}

void gt_proc_name_emit(uint8_t when)
{
	int expected = 0;
	if (!atomic_compare_exchange_strong(&gt_name_busy, &expected, 1))
		return;
	if (when == GT_NAME_START)
		find_arg_area();
	uint64_t h = arg_area_hash();
	if (when == GT_NAME_THREAD && h && h == gt_arg_hash) {
		atomic_store(&gt_name_busy, 0);
		return;
	}
	struct gt_p_process_name p = {.cmdline_len = 0};
	size_t n;
	if (when == GT_NAME_START && gt_fork_comm[0]) {
		n = strnlen(gt_fork_comm, sizeof p.comm - 1);
		memcpy(p.comm, gt_fork_comm, n);
		gt_fork_comm[0] = 0;
	} else {
		n = read_proc("/proc/self/comm", p.comm, sizeof p.comm - 1);
		if (n > 0 && p.comm[n - 1] == '\n')
			p.comm[n - 1] = 0;
	}
	size_t len = read_proc("/proc/self/cmdline", gt_cmdline_buf, sizeof gt_cmdline_buf);
	if (!n && !len) { /* no descriptor free, /proc not mounted: the last name stands */
		atomic_store(&gt_name_busy, 0);
		return;
	}
	p.cmdline_len = (uint16_t)len;
	uint32_t bytes = (uint32_t)((16 + sizeof p + len + 7) & ~(size_t)7);
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	uint64_t *r = gt_reserve(cpu, bytes, tsc);
	if (r) {
		r[1] = tsc;
		memcpy(r + 2, &p, sizeof p);
		char *tail = (char *)(r + 2) + sizeof p;
		memcpy(tail, gt_cmdline_buf, len);
		memset(tail + len, 0, bytes - (16 + sizeof p + len));
		gt_commit(r, gt_rec_word(GT_PROCESS_NAME, when, bytes, 0));
		gt_arg_hash = h;
	}
	atomic_store(&gt_name_busy, 0);
}

void gt_proc_name_reset(void)
{
	atomic_store(&gt_name_busy, 0);
	gt_arg_hash = 0;
	/* the comm the child's threads inherit, read before its code can rename the thread: its
	 * capture begins at its first fact, which may come after a pthread_setname_np or a
	 * prctl(PR_SET_NAME), whose name is then its own (not its parent's program's) */
	if (gt_sys2(SYS_prctl, PR_GET_NAME, gt_fork_comm) != 0)
		gt_fork_comm[0] = 0;
}
