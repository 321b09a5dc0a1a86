/* follow: `gotrace run` follows the command's whole process tree (follow.c).
 *
 * gotrace is a child subreaper: orphans of the tree (double-forking daemons included) become
 * its children and are reaped by it (a child that recorded no end, killed, gets the time of
 * its reap in its capture's header); the library's getppid names the adopter they would have
 * had (gt_follow.adopter, passed in GOTRACE_REAPER).  After the command exits, it waits for
 * every traced process still alive -- a process of its tree with libgotrace.so mapped, or one
 * whose capture is in the run's directory -- named by pid and start time (/proc/PID/stat),
 * never by pid alone.  While the command runs, the signals gotrace forwards go to the
 * command, once: one sent to the process group they share reached it already
 * (group_signal.h).  A second
 * SIGINT within GT_FOLLOW_STOP_WINDOW seconds, or once the command has exited a SIGINT or
 * SIGTERM, stops recording in every traced process still running (through the stop word of
 * its capture's header: the program does not notice) and ends the wait.
 * SIGPIPE is ignored by gotrace, so a closed stderr never kills it mid-conversion, and so is
 * SIGXFSZ, so a file of its own at RLIMIT_FSIZE fails with EFBIG; the command gets the
 * dispositions gotrace found. */
#ifndef GOTRACE_FOLLOW_H
#define GOTRACE_FOLLOW_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "group_signal.h"

/* A second SIGINT within so many seconds of the first stops the recording while the
 * command runs. */
#define GT_FOLLOW_STOP_WINDOW 3

struct gt_follow {
	sigset_t old_mask;          /* gotrace's signal mask before: the command's */
	struct sigaction old_pipe;  /* SIGPIPE as gotrace found it: the command's */
	struct sigaction old_xfsz;  /* SIGXFSZ likewise */
	int sigfd;                  /* the signals gotrace waits for (signalfd) */
	struct gt_group_signal group;  /* which of them the command got itself */
	double first_sigint;        /* CLOCK_MONOTONIC seconds of the last SIGINT that did
				     * not stop the recording, 0: none */
	bool stopped_running;       /* recording stopped while the command ran on (it was not
				     * waited for: no status) */
	double command_ended;       /* CLOCK_MONOTONIC seconds when the command exited, or the
				     * recording stopped */
	/* set after gt_follow_prepare: SIGUSR2 calls it instead of being forwarded */
	void (*on_usr2)(void *ctx);
	void *usr2_ctx;
	/* set after gt_follow_prepare: called every tick_ms while processes are waited for
	 * (gotrace run --hang); NULL: never */
	void (*on_tick)(void *ctx);
	void *tick_ctx;
	unsigned tick_ms;
	double next_tick;           /* CLOCK_MONOTONIC seconds of the next call, 0: not begun */
	pid_t adopter;              /* who adopts an orphan of gotrace's tree when gotrace is
				     * no subreaper (asked before it became one); 0: unknown */
};

/* Before the fork: the orphans' adopter found, subreaper, SIGPIPE and SIGXFSZ ignored, SIGCHLD
 * and the forwarded signals blocked and read through a signalfd.  0, or -1 after a message. */
int gt_follow_prepare(struct gt_follow *f);

/* In the child, before exec: the signal mask and SIGPIPE and SIGXFSZ dispositions gotrace
 * found. */
void gt_follow_child(const struct gt_follow *f);

/* Waits for COMMAND (its wait status into *status) and then for every traced process of the
 * run: captures in DIR (PATH_MAX bytes) except the names in IGNORE, and, when CHILDREN,
 * processes of the tree with libgotrace.so mapped.  When gotrace is told to stop while
 * processes remain, their recording is stopped (gotrace says which; stopped_running when
 * the command was one of them, then *status is not set); when
 * RENAME_DIR, DIR is first renamed (the new name written into DIR) so that no capture is
 * created in it any more.  0, or -1 after a message. */
int gt_follow_wait(struct gt_follow *f, pid_t command, char *dir, bool rename_dir,
		   bool children, char *const *ignore, size_t n_ignore, int *status);

void gt_follow_end(struct gt_follow *f);

/* Whether the process named by pid and start time (/proc/PID/stat field 22; 0: any) runs. */
bool gt_follow_alive(pid_t pid, uint64_t start);

#endif
