/* snapshot: `gotrace run --last`'s SIGUSR2 (snapshot.c).  The captures of the live processes
 * are copied and the copies converted into one trace, while the processes record on. */
#ifndef GOTRACE_SNAPSHOT_H
#define GOTRACE_SNAPSHOT_H

#include <stddef.h>

/* A consistent copy of the live capture SRC at DST: CPU chunks reused while they were copied
 * are left out (their magic and seq changed), the header is read after them (its
 * ring_lost_tsc covers what they held) and the keep chunks after it (they hold what the
 * reuse carried).  0, or -1 with errno. */
int gt_snapshot_copy(const char *src, const char *dst);

/* Snapshot N of CAPTURES (paths) into OUTPUT.snapshot-N, the copies made in a directory
 * next to TMP_BESIDE and removed after; says on stderr where it went.  0, or -1 after a
 * message. */
int gt_snapshot_write(const char *output, unsigned n, const char *const *captures, size_t n_captures,
		      const char *tmp_beside);

#endif
