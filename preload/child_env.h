/* The environment a child starts with (child_env.c): libgotrace.so kept in LD_PRELOAD, or
 * put back, or stripped. */
#ifndef GT_CHILD_ENV_H
#define GT_CHILD_ENV_H

#include "base.h"

/* room for gt_child_env's result on a caller's stack */
#define GT_ENV_SLOTS 1024
#define GT_ENV_SCRATCH 8192

/* envp (NULL: empty, as execve takes it) for a child: LD_PRELOAD kept/added (follow) or
 * stripped; the result points into envp, buf and scratch, or is envp itself */
char **gt_child_env(char *const envp[], int follow, char **buf, size_t nbuf, char *scratch,
		    size_t nscratch) GT_HIDDEN;

/* In a child exec'd by a traced process: what the exec hook added to the environment and
 * the program did not pass (GOTRACE_HIDE) is taken out of environ before main, so that the
 * program sees the environment it was given; the settings stay known to gt_child_env. */
void gt_child_env_hide(void) GT_HIDDEN;

/* the follow argument for an exec (the process's next image) and for a spawned child */
int gt_follow_exec(void) GT_HIDDEN;
int gt_follow_spawn(void) GT_HIDDEN;

/* After a child that shared our memory and TLS (vfork, clone(CLONE_VM | CLONE_VFORK)) execs
 * or exits: the memory its exec hook took for the environment is given back (hooks_proc.c). */
void gt_child_env_release(void) GT_HIDDEN;

#endif
