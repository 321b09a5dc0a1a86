/* The life of a capture (lifecycle.c): states, initialisation, start and stop, fork children,
 * the end of the process. */
#ifndef GT_LIFECYCLE_H
#define GT_LIFECYCLE_H

#include "fastpath.h"

enum gt_state {
	GT_ST_UNINIT = 0,     /* no capture yet (also: a fresh fork child) */
	GT_ST_INITIALIZING,
	GT_ST_DELAYED,        /* capture open, GOTRACE_START_DELAY not elapsed */
	GT_ST_RECORDING,
	GT_ST_STOPPED,        /* duration elapsed or program ending: capture complete */
	GT_ST_FAILED,         /* recording gave up (write failure, setup error) */
	GT_ST_DETACHED,       /* gotrace stopped the recording (GT_FILE_DETACHED), or the process
			       * entered a sandbox (gt_sandbox_enter): untraced from then on,
			       * children and exec'd programs too; the file is not ours */
};
extern _Atomic int gt_state GT_HIDDEN;

/* The calling thread is about to enter seccomp (prctl PR_SET_SECCOMP, seccomp(2)), after which
 * a system call of the tracer's may kill the process: the capture is ended now, while they
 * are allowed, and the process goes on untraced, making none (GT_FILE_SANDBOXED). */
void gt_sandbox_enter(void) GT_HIDDEN;
/* nothing of the tracer's is left to do in this process (no end records, no converter) */
GT_INLINE int gt_detached(void) { return gt_load(&gt_state) == GT_ST_DETACHED; }

int gt_init(void) GT_HIDDEN;                 /* 1 when recording or delayed */
int gt_finalize(void) GT_HIDDEN;             /* end records, flags, trim; 1: done */
void gt_exec_trim(void) GT_HIDDEN;           /* before an exec: the capture cut to its chunks */
/* In a copy of our memory made without fork() (clone or syscall without CLONE_VM), as it
 * starts: it passes straight through and never writes into our capture */
void gt_copy_forget(void) GT_HIDDEN;

#endif
