/* gotrace stacks -o: a live thread's state in the words of the encoder's snapshot trace. */
#ifndef GOTRACE_CLI_STACKS_TRACE_H
#define GOTRACE_CLI_STACKS_TRACE_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "encoder/encoder.h"

/* What gotrace stacks found a thread doing: /proc's state and system call, for a futex
 * wait the lock it named (kind NULL: none), its stack, and the deadlock it is on. */
struct gt_stacks_found {
	pid_t tid;
	const char *comm;
	const char *what;        /* in words; up to its first newline */
	char state;              /* /proc's: R, S, D, ... */
	long nr;                 /* the system call it sleeps in, -1: none */
	const uint64_t *args;    /* its six arguments */
	const char *kind;        /* "mutex", "condvar", "rwlock", "semaphore", "join", "futex" */
	uint64_t object;         /* the lock's address */
	pid_t holder;            /* its holder (a join: the thread joined), 0: none known */
	const uint64_t *pcs;     /* its stack, innermost first */
	size_t n_pcs;
	uint32_t deadlock;       /* the deadlock it is on (1, 2, ...), 0: none */
};

struct gt_symbolizer;
/* Writes the snapshot of the n threads of process pid (named comm) to path in format, their
 * stacks symbolized by sym (which holds its modules).  0, or 1 after saying why not. */
int gt_stacks_write_trace(const char *path, enum gt_trace_format format,
			  struct gt_symbolizer *sym, pid_t pid, const char *comm,
			  const struct gt_stacks_found *found, size_t n);

#endif
