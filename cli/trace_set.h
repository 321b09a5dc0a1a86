/* trace_set: which capture becomes which trace file, for `gotrace run` and `gotrace convert`
 * alike.  FILE is the main process's last program image, FILE.<pid> another process's,
 * FILE.<pid>-<n> an image a pid exec'd away from (n = its rank among the pid's images by
 * the time its recording began; the last image keeps the plain name). */
#ifndef GOTRACE_TRACE_SET_H
#define GOTRACE_TRACE_SET_H

#include <glob.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gt_trace_image {
	const char *capture;  /* the capture file (not owned) */
	bool readable;        /* its header could be read */
	uint32_t pid;
	uint64_t start_ns;    /* CLOCK_MONOTONIC when recording began: exec'd images start later */
	bool finalized;       /* the process ended normally and wrote its end records */
	bool detached;        /* recording stopped by gotrace run; the process kept running */
	char command[64];     /* base name of the program, for summaries */
	uint32_t generation;  /* rank among the images of the same pid, by start time */
	bool last;            /* the latest image of its pid */
};

/* A capture's file name as libgotrace.so makes it: gotrace-<pid>[-<n>].gtcap. */
bool gt_is_capture_name(const char *name);

/* uid-<n> in DIR: the directory of the captures of programs a traced process ran after it
 * became user n (preload/capture_file.c). */
bool gt_is_user_dir(const char *dir, const char *name);

/* fn(name) for every capture in DIR ("gotrace-...") and in its user directories
 * ("uid-<n>/gotrace-...", regular files only: those directories are the user's); name is
 * relative to DIR. */
void gt_each_capture(const char *dir, void (*fn)(const char *name, void *ctx), void *ctx);

/* Reads the header of each capture through the capture reader and ranks the images of
 * each pid.  An unreadable capture keeps FALLBACK_PID[i] (the pid its file name says; NULL:
 * 0) and ranks as the earliest. */
void gt_trace_images_identify(struct gt_trace_image *img, size_t n,
			      const char *const *captures, const uint32_t *fallback_pid);

/* The trace name of IMG with SUFFIX appended ("" or ".gtcap"), MAIN_PID's images being
 * FILE itself. */
void gt_trace_image_name(const char *out, const struct gt_trace_image *img, uint32_t main_pid,
			 const char *suffix, char *name, size_t size);

/* The captures of the processes other than the command's that gt_trace_image_name names
 * beside OUT (OUT.PID.gtcap, OUT.PID-N.gtcap) and that exist, sorted, into G (globfree it);
 * false when there are none. */
bool gt_trace_other_captures(const char *out, glob_t *g);

#endif
