/* names: see names.h. */
#include "names.h"

#include <gotrace/capture.h>

#include <stdio.h>

#include "encoder/encoder.h"

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
	case GT_FD_DIR: return "directory";
	case GT_FD_ANON: return "anon inode";
	case GT_FD_POLL: return "poll";
	default: return "-";
	}
}

const char *gt_report_syscall_name(uint32_t nr, char *buf, size_t size)
{
	return gt_syscall_name(nr, buf, size);   /* whichever arch recorded the call */
}
