/* The descriptor-kind cache: fstat once per descriptor; close/dup2/dup3/fclose/close_range/
 * closefrom and every hooked call that returns a new descriptor forget the entry.  Pipes,
 * FIFOs and sockets keep their kernel key beside the kind (capture.h, GT_OBJ_KERNEL), stored
 * before the kind. */
#include "fd_kinds.h"
#include "facts.h"

#include <string.h>
#include <sys/stat.h>

uint8_t gt_fd_cache[GT_FD_CACHE];
uint64_t gt_fd_objs[GT_FD_CACHE];
uint32_t gt_fd_defined[GT_FD_CACHE];
/* above every descriptor ever given a kernel key: the end of a process looks no further
 * (the whole cache was 16 pages read and 65536 tests at every exit) */
static _Atomic int gt_fd_objs_end;

static void fd_obj_seen(int fd)
{
	int end = gt_load(&gt_fd_objs_end);
	while (fd >= end && !atomic_compare_exchange_weak(&gt_fd_objs_end, &end, fd + 1))
		;
}

uint8_t gt_fd_kind_slow(int fd)
{
	if (fd < 0)
		return GT_FD_NONE;
	struct stat st;
	if (gt_sys2(SYS_fstat, fd, &st) < 0)
		return GT_FD_NONE;
	uint8_t kind;
	if (S_ISSOCK(st.st_mode))
		kind = GT_FD_SOCKET;
	else if (S_ISFIFO(st.st_mode))
		kind = GT_FD_PIPE;
	else if (S_ISREG(st.st_mode) || S_ISBLK(st.st_mode))
		kind = GT_FD_FILE;
	else if (S_ISDIR(st.st_mode))
		kind = GT_FD_DIR;
	else if (!(st.st_mode & S_IFMT))   /* anon_inode: no file type */
		kind = GT_FD_ANON;
	else
		kind = GT_FD_OTHER;
	if (fd < GT_FD_CACHE) {
		if (gt_fd_has_obj(kind)) {
			gt_fd_objs[fd] = gt_kobj_key(GT_KOBJ_FILE, st.st_dev, st.st_ino, 0) |
					 (kind == GT_FD_SOCKET ? GT_OBJ_SOCKET : 0);
			fd_obj_seen(fd);
		}
		atomic_signal_fence(memory_order_release);
		gt_fd_cache[fd] = kind | 0x80;
	}
	return kind;
}

void gt_fd_forget(int fd)
{
	if (fd >= 0 && fd < GT_FD_CACHE)
		gt_fd_cache[fd] = 0, gt_fd_defined[fd] = 0;
}

void gt_fd_forget_range(unsigned lo, unsigned hi)
{
	if (lo >= GT_FD_CACHE)
		return;
	if (hi >= GT_FD_CACHE)
		hi = GT_FD_CACHE - 1;
	if (lo <= hi) {
		memset(gt_fd_cache + lo, 0, hi - lo + 1);
		memset(gt_fd_defined + lo, 0, (hi - lo + 1) * sizeof *gt_fd_defined);
	}
}

/* The two ends of a socketpair are one object: both keyed by the lower inode. */
void gt_fd_pair(const int sv[2])
{
	struct stat a, b;
	if (sv[0] < 0 || sv[1] < 0 || sv[0] >= GT_FD_CACHE || sv[1] >= GT_FD_CACHE ||
	    gt_sys2(SYS_fstat, sv[0], &a) < 0 || gt_sys2(SYS_fstat, sv[1], &b) < 0)
		return;
	uint64_t obj = gt_kobj_key(GT_KOBJ_FILE, a.st_dev, a.st_ino < b.st_ino ? a.st_ino : b.st_ino, 0) |
		       GT_OBJ_SOCKET;
	for (int i = 0; i < 2; i++) {
		gt_fd_objs[sv[i]] = obj;
		fd_obj_seen(sv[i]);
		atomic_signal_fence(memory_order_release);
		gt_fd_cache[sv[i]] = GT_FD_SOCKET | 0x80;
	}
}

/* The process ends: its pipes and sockets close with it (their last close may be this one),
 * one WAKE GT_BK_FD per cached descriptor, into records reserve() gives. */
void gt_fd_exit_wakes(uint32_t serial, uint64_t *(*reserve)(unsigned cpu, uint32_t nbytes))
{
	for (int fd = 0, end = gt_load(&gt_fd_objs_end); fd < end; fd++) {
		uint64_t *r;
		unsigned cpu;
		if (!gt_fd_has_obj(gt_fd_cache[fd] & 0x7f))
			continue;
		uint64_t tsc = gt_now(&cpu);
		struct gt_p_wake p = {.obj = gt_fd_objs[fd], .count = GT_WAKE_ALL};
		if ((r = reserve(cpu, 16 + sizeof p)))
			gt_fill(r, serial, GT_WAKE, GT_BK_FD, tsc, &p, sizeof p);
	}
}

uint64_t gt_fd_cached_obj(int fd)
{
	if (fd < 0 || fd >= GT_FD_CACHE || !gt_fd_has_obj(gt_fd_cache[fd] & 0x7f))
		return 0;
	return gt_fd_objs[fd];
}
