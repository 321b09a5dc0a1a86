/* The system call a libc function makes, named for the facts that record it.  Where the
 * architecture has no call of the function's name (aarch64 has only the newer ones), glibc
 * makes another in its place, and the fact names that one.  The tests include this too. */
#ifndef GT_LIBC_SYSCALLS_H
#define GT_LIBC_SYSCALLS_H

#include <sys/syscall.h>

#ifdef SYS_poll
#define GT_NR_POLL SYS_poll
#else
#define GT_NR_POLL SYS_ppoll
#endif
#ifdef SYS_select
#define GT_NR_SELECT SYS_select
#else
#define GT_NR_SELECT SYS_pselect6
#endif
#ifdef SYS_epoll_wait
#define GT_NR_EPOLL_WAIT SYS_epoll_wait
#else
#define GT_NR_EPOLL_WAIT SYS_epoll_pwait
#endif
#ifdef SYS_fork
#define GT_NR_FORK SYS_fork
#else
#define GT_NR_FORK SYS_clone /* aarch64: fork is clone with SIGCHLD alone */
#endif
#ifdef SYS_pause
#define GT_NR_PAUSE SYS_pause
#else
#define GT_NR_PAUSE SYS_rt_sigsuspend
#endif

#endif
