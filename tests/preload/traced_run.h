/* Run a target program (traced with libgotrace.so or not) in a fresh capture directory and
 * collect its output, exit status and captures. */
#ifndef GT_TEST_TRACED_RUN_H
#define GT_TEST_TRACED_RUN_H

#include <limits.h>
#include <stddef.h>
#include <sys/types.h>

#include "capture_reader.h"

struct run {
	char dir[PATH_MAX];   /* capture directory (GOTRACE_CAPTURE_DIR) */
	pid_t pid;
	int status;           /* as waitpid */
	char out[65536];
	char err[65536];
	long fsize_limit;     /* > 0: RLIMIT_FSIZE for the child */
	int kill_after_ms;    /* > 0: SIGKILL the child once its stdout has a line, after this */
};

const char *test_preload(void);     /* GT_TEST_PRELOAD */
const char *test_target(void);      /* GT_TEST_TARGET */
const char *test_bindir(void);      /* directory of the test programs */
/* The test program NAME in that directory (one of 8 rotating buffers: copy to keep it). */
const char *test_program(const char *name);

/* argv[0] is the program path; env entries "NAME=value" are added (NULL-terminated list).
 * Returns 0 when the child ran and was waited for. */
int run_program(struct run *r, int traced, const char *const argv[], const char *const env[]);
/* gt-target SCENARIO with extra env */
int run_target(struct run *r, int traced, const char *scenario, const char *const env[]);

/* The same program untraced (into PLAIN) and traced (into TRACED), each in its own
 * directory, with the same argv and env.  Returns NULL when both ended the same way (wait
 * status) with the same stdout, else one line saying what differs.  A test of "the program
 * does not notice" makes the program print what it observed (descriptors, errors, limits). */
const char *run_twins(struct run *plain, struct run *traced, const char *const argv[],
		      const char *const env[]);

/* The capture written by pid (the first one, or with the -N suffix when nth > 0). */
int run_capture(const struct run *r, pid_t pid, int nth, struct capture *c);
/* pid's first capture: how much of its length has no blocks (ls -l shows it, cp without
 * sparse handling copies it); -1 when it cannot be seen */
long long run_capture_unallocated(const struct run *r, pid_t pid);
/* number of capture files in the directory */
int run_count_captures(const struct run *r);
void run_cleanup(struct run *r);

/* `gotrace`: GT_TEST_GOTRACE, else ../cli/gotrace beside the library (as it finds it) */
const char *test_gotrace(void);
/* Converts every capture of the run with `gotrace convert` and holds each trace against
 * Go's readers (the oracle's parse checks).  Returns the number of captures, or -1 with the
 * reason in why. */
int run_convert_all(const struct run *r, char *why, size_t cap);

/* lines of stderr starting with "gotrace:" */
int count_gotrace_lines(const char *text);

#endif
