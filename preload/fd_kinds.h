/* The descriptor-kind cache (fd_kinds.c): what a descriptor is (file, pipe, socket, other),
 * and for pipes and sockets their kernel key, fstat'ed once per descriptor. */
#ifndef GT_FD_KINDS_H
#define GT_FD_KINDS_H

#include "base.h"

#include "gotrace/capture.h"

#define GT_FD_CACHE 65536
/* by descriptor: the kernel key of a cached pipe or socket */
extern uint64_t gt_fd_objs[GT_FD_CACHE] GT_HIDDEN;
/* the capture where an FD record gave the descriptor's key (its start_tsc's low bits and 1;
 * 0: none since the descriptor was cached), so that its SYSCALL_BEGINs name it by number
 * (capture.h GT_C_FD_OBJ) */
extern uint32_t gt_fd_defined[GT_FD_CACHE] GT_HIDDEN;

GT_INLINE int gt_fd_has_obj(uint8_t kind)
{
	return kind == GT_FD_PIPE || kind == GT_FD_SOCKET;
}

/* by descriptor: its kind | 0x80; 0: not cached */
extern uint8_t gt_fd_cache[GT_FD_CACHE] GT_HIDDEN;
/* gt_fd_kind for a descriptor not cached: fstat'ed, and cached */
uint8_t gt_fd_kind_slow(int fd) GT_HIDDEN GT_NOINLINE;
/* the descriptor's kind (capture.h GT_FD_*), GT_FD_NONE for a bad one */
GT_INLINE uint8_t gt_fd_kind(int fd)
{
	if (GT_LIKELY((unsigned)fd < GT_FD_CACHE)) {
		uint8_t cached = gt_fd_cache[fd];
		if (GT_LIKELY(cached))
			return cached & 0x7f;
	}
	return gt_fd_kind_slow(fd);
}
void gt_fd_forget(int fd) GT_HIDDEN;
void gt_fd_forget_range(unsigned lo, unsigned hi) GT_HIDDEN;
/* socketpair: both ends cached as one socket object */
void gt_fd_pair(const int sv[2]) GT_HIDDEN;
/* the kernel key of a pipe/FIFO/socket descriptor whose kind is cached, else 0 (no fstat) */
uint64_t gt_fd_cached_obj(int fd) GT_HIDDEN;
/* at the process's end: a close wake for each cached pipe or socket descriptor */
void gt_fd_exit_wakes(uint32_t serial, uint64_t *(*reserve)(unsigned cpu, uint32_t nbytes)) GT_HIDDEN;

#endif
