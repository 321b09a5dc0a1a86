/* group_signal: was a signal gotrace got sent to its process group, or to gotrace alone?
 * (group_signal.c)
 *
 * The command runs in gotrace's process group.  A signal sent to the group (`kill -INT %1`,
 * Ctrl-C, a program's kill(0, ...)) reaches the command itself; one sent to gotrace alone
 * must be forwarded.  siginfo cannot tell them apart, so a sentinel, a child of gotrace that
 * sits in the group with every signal blocked, receives what the group receives: a signal
 * gotrace got is the group's when the sentinel holds it pending too. */
#ifndef GOTRACE_GROUP_SIGNAL_H
#define GOTRACE_GROUP_SIGNAL_H

#include <stdbool.h>
#include <sys/types.h>

struct gt_group_signal {
	pid_t pid;      /* the sentinel, or -1: none (then only the kernel's are the group's) */
	int ask, answer;
};

/* Starts the sentinel.  The signals it watches must be blocked in gotrace already (the
 * sentinel inherits the mask).  Never fails: without a sentinel, gt_group_signal_took says
 * false. */
void gt_group_signal_start(struct gt_group_signal *g);

/* Whether the sentinel holds SIG pending (then it is taken from it, so that the next one
 * is told apart).  Called after gotrace read SIG: the kernel queues a group's signal on its
 * members newest first (attach_pid adds at the head), so the sentinel, started after
 * gotrace joined the group, already holds it. */
bool gt_group_signal_took(struct gt_group_signal *g, int sig);

void gt_group_signal_stop(struct gt_group_signal *g);

#endif
