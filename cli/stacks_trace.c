/* gotrace stacks -o: what /proc said a live thread was doing, in the words of the encoder's
 * snapshot trace (encoder.h, gt_snap_thread): the kind of lock a futex wait is for, a sleep,
 * or another system call with the kind of descriptor it waits on. */
#include "stacks_trace.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "cli_common.h"

/* What descriptor fd of process pid is, as the recorder tells it (enum gt_fd_kind). */
static uint8_t fd_kind(pid_t pid, int64_t fd)
{
	char path[64], link[128];
	snprintf(path, sizeof path, "/proc/%d/fd/%lld", (int)pid, (long long)fd);
	ssize_t len = readlink(path, link, sizeof link - 1);
	if (len < 0)
		return GT_FD_NONE;
	link[len] = 0;
	if (!strncmp(link, "pipe:", 5))
		return GT_FD_PIPE;
	if (!strncmp(link, "socket:", 7))
		return GT_FD_SOCKET;
	if (!strncmp(link, "anon_inode:", 11))
		return GT_FD_ANON;
	struct stat st;
	if (stat(path, &st) != 0)
		return GT_FD_OTHER;
	if (S_ISFIFO(st.st_mode))
		return GT_FD_PIPE;
	if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
		return GT_FD_FILE;
	return S_ISDIR(st.st_mode) ? GT_FD_DIR : GT_FD_OTHER;
}

/* The calls whose first argument is the descriptor they wait on. */
static bool waits_on_fd(long nr)
{
	switch (nr) {
	case SYS_read: case SYS_write: case SYS_pread64: case SYS_pwrite64: case SYS_readv:
	case SYS_writev: case SYS_connect: case SYS_accept: case SYS_accept4: case SYS_sendto:
	case SYS_recvfrom: case SYS_sendmsg: case SYS_recvmsg: case SYS_fcntl: case SYS_flock:
	case SYS_fsync: case SYS_fdatasync:
		return true;
	default:
		return false;
	}
}

static bool readiness_wait(long nr)
{
	switch (nr) {
	case SYS_ppoll: case SYS_pselect6: case SYS_epoll_pwait: case SYS_epoll_pwait2:
#ifdef SYS_poll /* x86-64's older calls; aarch64 has only the p-forms */
	case SYS_poll: case SYS_select: case SYS_epoll_wait:
#endif
		return true;
	default:
		return false;
	}
}

static uint8_t block_kind(const char *kind, uint64_t word, uint64_t object)
{
	if (!strcmp(kind, "mutex"))
		return GT_BK_MUTEX;
	if (!strcmp(kind, "condvar"))
		return GT_BK_COND;
	if (!strcmp(kind, "semaphore"))
		return GT_BK_SEM;
	if (!strcmp(kind, "join"))
		return GT_BK_JOIN;
	if (!strcmp(kind, "rwlock"))   /* writers sleep 12 bytes into the lock, readers 8 */
		return word - object == 12 ? GT_BK_RWLOCK_WR : GT_BK_RWLOCK_RD;
	return GT_BK_FUTEX;
}

/* Fills out's state and what it waits for from what was found of a thread of pid. */
static void snap_state(pid_t pid, const struct gt_stacks_found *found, struct gt_snap_thread *out)
{
	long nr = found->nr;
	if (nr < 0 || found->state == 'R') {
		out->state = GT_SNAP_RUNNING;
	} else if (found->kind) {
		out->state = GT_SNAP_BLOCKED;
		out->block_kind = block_kind(found->kind, found->args[0], found->object);
		/* a join's object is the thread it waits for, which is its "holder" */
		out->object = out->block_kind == GT_BK_JOIN ? (uint64_t)found->holder
							    : found->object;
		out->holder = out->block_kind == GT_BK_JOIN ? 0 : (uint32_t)found->holder;
	} else if (nr == SYS_nanosleep || nr == SYS_clock_nanosleep) {
		out->state = GT_SNAP_BLOCKED;
		out->block_kind = GT_BK_SLEEP;
	} else {
		out->state = GT_SNAP_SYSCALL;
		out->sys_nr = (uint32_t)nr;
		out->sys_arg = (int64_t)found->args[0];
		out->fd_kind = readiness_wait(nr) ? GT_FD_POLL
			     : waits_on_fd(nr) ? fd_kind(pid, out->sys_arg) : GT_FD_NONE;
	}
}

static uint64_t clock_ns(clockid_t clock)
{
	struct timespec ts;
	clock_gettime(clock, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int gt_stacks_write_trace(const char *path, enum gt_trace_format format,
			  struct gt_symbolizer *sym, pid_t pid, const char *comm,
			  const struct gt_stacks_found *found, size_t n)
{
	struct gt_snap_thread *t = calloc(n ? n : 1, sizeof *t);
	char **what = calloc(n ? n : 1, sizeof *what);
	char exe[PATH_MAX] = "", link[64];
	snprintf(link, sizeof link, "/proc/%d/exe", (int)pid);
	ssize_t len = readlink(link, exe, sizeof exe - 1);
	exe[len > 0 ? len : 0] = 0;
	long cpus = sysconf(_SC_NPROCESSORS_CONF);
	struct gt_live_snapshot s = {
		.pid = (uint32_t)pid, .exe = exe, .comm = comm,
		.n_cpus = cpus > 0 ? (uint32_t)cpus : 1,
		.mono_ns = clock_ns(CLOCK_MONOTONIC), .real_ns = clock_ns(CLOCK_REALTIME),
		.threads = t, .n = n,
	};
	int rc = 1;
	char err[512] = "out of memory";
	if (t && what) {
		for (size_t i = 0; i < n; i++) {
			const struct gt_stacks_found *f = &found[i];
			what[i] = strndup(f->what, strcspn(f->what, "\n"));
			t[i] = (struct gt_snap_thread){.tid = (uint32_t)f->tid, .name = f->comm,
				.what = what[i], .deadlock = f->deadlock, .pcs = f->pcs,
				.n_pcs = f->n_pcs};
			snap_state(pid, f, &t[i]);
		}
		rc = gt_snapshot_trace_write(path, format, sym, &s, err, sizeof err) ? 1 : 0;
	}
	if (rc)
		gt_cli_fail("stacks", "no trace written: %s", err);
	for (size_t i = 0; what && i < n; i++)
		free(what[i]);
	free(what);
	free(t);
	return rc;
}
