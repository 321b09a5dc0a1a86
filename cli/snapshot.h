/* snapshot: `gotrace run --last`'s SIGUSR2 and `--hang`'s watchdog (snapshot.c).  The
 * captures of the live processes are copied and the copies converted into one trace, while
 * the processes record on; ring captures and the default ones alike. */
#ifndef GOTRACE_SNAPSHOT_H
#define GOTRACE_SNAPSHOT_H

#include <limits.h>
#include <stddef.h>

#include "one_trace.h"

/* A consistent copy of the live capture SRC at DST: CPU chunks reused while they were copied
 * are left out (their magic and seq changed), the header is read after them (its
 * ring_lost_tsc covers what they held) and the keep chunks after it (they hold what the
 * reuse carried).  0, or -1 with errno. */
int gt_snapshot_copy(const char *src, const char *dst);

/* The copies of one snapshot, in a directory of their own beside the run's captures. */
struct gt_snapshot {
	char dir[PATH_MAX];
	char label[32];     /* how its messages name it: "snapshot 2", "hang 1" */
	char **copies;
	size_t n;
};

/* A fresh directory next to TMP_BESIDE.  0, or -1 after a message. */
int gt_snapshot_begin(struct gt_snapshot *s, const char *label, const char *tmp_beside);
/* A consistent copy of CAPTURE added to s: its path, or NULL (silently when the capture is
 * gone: its process ended and took it along; else after a message). */
const char *gt_snapshot_add(struct gt_snapshot *s, const char *capture);
/* The copies converted into NAME in FORMAT, its summary in STYLE.  0, or -1 after a
 * message. */
int gt_snapshot_convert(const struct gt_snapshot *s, const char *name, enum gt_trace_format format,
			enum gt_one_trace_style style);
/* The copies and their directory removed. */
void gt_snapshot_end(struct gt_snapshot *s);

/* Snapshot N of CAPTURES (paths) into OUTPUT.snapshot-N in FORMAT, the copies made in a
 * directory next to TMP_BESIDE and removed after; says on stderr where it went.  0, or -1
 * after a message. */
int gt_snapshot_write(const char *output, enum gt_trace_format format, unsigned n,
		      const char *const *captures, size_t n_captures, const char *tmp_beside);

#endif
