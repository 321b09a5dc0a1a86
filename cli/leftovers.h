/* leftovers: the captures of a `gotrace run` that never cleaned up (killed with SIGKILL, or
 * the machine's power lost) found and named by the next run and by `gotrace convert`.
 *
 * A run's fresh capture directory (gotrace-XXXXXX in $TMPDIR, /dev/shm or /tmp) holds a
 * mark, gotrace.run, with gotrace's pid and start time; the run removes it with the
 * directory.  A directory of the user's that still has its mark while no such process
 * lives was left behind: one line says where it is, how many captures it holds and how to
 * convert or remove them.  The captures stay where they are: a process of the killed run
 * may still be writing its own. */
#ifndef GOTRACE_LEFTOVERS_H
#define GOTRACE_LEFTOVERS_H

#define GT_RUN_MARK "gotrace.run"

/* Marks DIR as this gotrace's capture directory.  0, or -1 with errno. */
int gt_leftovers_mark(const char *dir);

/* DIR's mark removed: the run ends here, having converted, kept or removed its captures. */
void gt_leftovers_unmark(const char *dir);

/* One line on stderr per capture directory a dead run left in the places gotrace run puts
 * them; nothing when there is none. */
void gt_leftovers_report(void);

#endif
