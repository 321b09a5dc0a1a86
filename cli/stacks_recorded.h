/* stacks_recorded: what gotrace's own capture knows of a live process it was loaded into
 * (gotrace run, or LD_PRELOAD of libgotrace.so), for gotrace stacks (stacks_recorded.c). */
#ifndef GOTRACE_STACKS_RECORDED_H
#define GOTRACE_STACKS_RECORDED_H

#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* The capture process pid records into (a mapping of a .gtcap file whose header names pid),
 * read from a consistent copy through the report (its waits: each blocked thread's
 * recorded stack and since when, the holders and where they took their locks with
 * --locks=all), printed to out under a heading; now_mono_ns is when the process was seen.
 * Nothing when gotrace is not loaded in it; a capture that cannot be read is said in one
 * line. */
void gt_stacks_recorded(FILE *out, pid_t pid, uint64_t now_mono_ns);

#endif
