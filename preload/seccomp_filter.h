/* Seccomp filters the program installs (seccomp_filter.c). */
#ifndef GT_SECCOMP_FILTER_H
#define GT_SECCOMP_FILTER_H

#include "base.h"

/* 1 when the filter (a struct sock_fprog of the program's) lets every system call the
 * recorder makes through, judged by the call number alone; 1 too when the kernel will refuse
 * it (unreadable); 0 when recording must stop before it is installed */
int gt_filter_lets_tracer_through(const void *fprog) GT_HIDDEN;

#endif
