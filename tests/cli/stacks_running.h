/* A target of `gotrace stacks` (stacks_target.c) started in a known state, for the tests
 * of gotrace stacks (test_stacks.c, test_stacks_trace.c). */
#ifndef GT_TESTS_CLI_STACKS_RUNNING_H
#define GT_TESTS_CLI_STACKS_RUNNING_H

#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

struct running {
	pid_t pid;
	FILE *out;
	char ready[128];   /* its "ready ..." line */
};

/* Starts program in mode (with arg; both may be NULL) and waits for its "ready" line. */
void start_program(struct running *r, const char *program, const char *mode, const char *arg);
/* Waits for the target to end and returns its status (128+N when killed by signal N). */
int finish(struct running *r, bool kill_it);

#endif
