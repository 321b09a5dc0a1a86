/* The tracer's own descriptors, kept out of the program's table (files_apart.c). */
#ifndef GT_FILES_APART_H
#define GT_FILES_APART_H

#include "base.h"

/* fn(arg) in a thread of the process that has a copy of the descriptor table instead of
 * sharing it: what fn opens never takes a number the program's next open, dup or socket
 * would get, even for the moment it is open.  fn runs with every signal blocked, on the
 * caller's TLS and the tracer's scratch memory: raw system calls only, no libc call that may
 * set errno or take a lock.  Where no such thread can be had (no scratch memory, clone
 * refused: RLIMIT_NPROC, a sandbox), fn runs in the caller, as before.  fn's result. */
long gt_files_apart(long (*fn)(void *), void *arg) GT_HIDDEN;
/* Around fork (begin 1, then 0 in the parent, -1 in the child): waits for the calls in
 * flight; calls made meanwhile run in their caller. */
void gt_files_apart_fork(int begin) GT_HIDDEN;

#endif
