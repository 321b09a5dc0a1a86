/* names: see names.h. */
#include "names.h"

#include <gotrace/capture.h>

#include <stdio.h>
#include <sys/syscall.h>

const char *gt_report_block_kind_name(uint8_t kind)
{
	switch (kind) {
	case GT_BK_MUTEX: return "mutex";
	case GT_BK_RWLOCK_RD:
	case GT_BK_RWLOCK_WR: return "rwlock";
	case GT_BK_COND: return "condvar";
	case GT_BK_SEM: return "semaphore";
	case GT_BK_BARRIER: return "barrier";
	case GT_BK_JOIN: return "join";
	case GT_BK_SLEEP: return "sleep";
	case GT_BK_FUTEX: return "futex";
	default: return "object";
	}
}

const char *gt_report_fd_kind_name(uint8_t kind)
{
	switch (kind) {
	case GT_FD_SOCKET: return "socket";
	case GT_FD_PIPE: return "pipe";
	case GT_FD_FILE: return "file";
	case GT_FD_OTHER: return "device";
	case GT_FD_POLL: return "poll";
	default: return "-";
	}
}

#define SC(name) { SYS_##name, #name }
static const struct { long nr; const char *name; } syscall_names[] = {
	SC(read), SC(write), SC(pread64), SC(pwrite64), SC(readv), SC(writev),
	SC(preadv), SC(pwritev), SC(openat), SC(close), SC(fsync), SC(fdatasync),
	SC(accept4), SC(connect), SC(recvfrom), SC(sendto), SC(recvmsg), SC(sendmsg),
	SC(recvmmsg), SC(sendmmsg), SC(ppoll), SC(pselect6), SC(epoll_pwait), SC(wait4),
	SC(waitid), SC(nanosleep), SC(clock_nanosleep), SC(futex), SC(rt_sigtimedwait),
	SC(rt_sigsuspend), SC(ioctl), SC(flock), SC(fcntl), SC(sendfile), SC(splice),
	SC(msync), SC(sync), SC(syncfs), SC(sync_file_range), SC(copy_file_range),
	SC(io_getevents), SC(msgrcv), SC(msgsnd), SC(semop), SC(semtimedop), SC(mq_timedreceive),
	SC(mq_timedsend), SC(getrandom), SC(tee), SC(vmsplice),
#ifdef SYS_poll
	SC(poll), SC(select), SC(epoll_wait), SC(pause), SC(open), SC(accept),
#endif
};
#undef SC

const char *gt_report_syscall_name(uint32_t nr, char *buf, size_t size)
{
	for (size_t i = 0; i < sizeof syscall_names / sizeof *syscall_names; i++)
		if (syscall_names[i].nr == (long)nr)
			return syscall_names[i].name;
	snprintf(buf, size, "syscall_%u", nr);
	return buf;
}
