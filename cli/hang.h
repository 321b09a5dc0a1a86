/* hang: `gotrace run --hang SECONDS`, the hang watchdog (hang.c).
 *
 * Every tick (gt_hang_tick_ms) it looks at each process of the run that still records: the
 * kernel's count of each of its threads' time on a CPU (/proc/PID/task/TID/schedstat, in ns;
 * utime + stime where that file is missing), summed with the number and ids of its threads.
 * A process whose sum has not changed for SECONDS had no thread on a CPU for that long:
 * only then is its capture read (a consistent copy, through the tracker), and it is hung
 * when each of its threads is in a wait the hooks recorded as begun and not ended, begun
 * SECONDS ago or more; one that waits for a child (wait4, waitid) only once no process below
 * it (traced or not: /proc/PID/task/TID/children, their threads timed alike) ran for
 * SECONDS either, and a hung child is said before its parent.  A thread computing, in a
 * wait no hook records, or never met by the hooks is not blocked.  A hang converts the run
 * so far into FILE.hang-N and prints the hung process's waits and wait-for graph (report/,
 * waits_only) on stderr, once: the process must run again before another hang of it is
 * reported.  A quiet process that is not hung is read again only after it ran.  The
 * program is never touched. */
#ifndef GOTRACE_HANG_H
#define GOTRACE_HANG_H

#include <stdint.h>

#include "run.h"

struct gt_hang;

/* The watchdog of the run whose captures are in cd (its path as follow renames it), the
 * snapshots OUTPUT.hang-N written in FORMAT.  NULL when memory runs out. */
struct gt_hang *gt_hang_new(uint64_t hang_ns, const char *output, enum gt_trace_format format,
			    const struct capture_dir *cd);
void gt_hang_free(struct gt_hang *h);
/* The time between ticks: a quarter of hang_ns, from 100 ms to 1 s. */
unsigned gt_hang_tick_ms(uint64_t hang_ns);
/* One look at every process of the run (a struct gt_hang *; follow's on_tick). */
void gt_hang_tick(void *hang);

#endif
