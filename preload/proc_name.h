/* The process's name as its user knows it (GT_PROCESS_NAME): comm and the command line,
 * read from /proc/self at points where a setproctitle-style rewrite is visible. */
#ifndef GT_PROC_NAME_H
#define GT_PROC_NAME_H

#include "base.h"

#include <stdint.h>

/* Writes GT_PROCESS_NAME (when: enum gt_name_when).  GT_NAME_THREAD writes only when the
 * name or command line changed since the last one written.  Not for a hook's fast path:
 * it opens, reads and closes two /proc files. */
void gt_proc_name_emit(uint8_t when) GT_HIDDEN;
/* In a fork child: forget what the parent wrote; keep the comm it inherited. */
void gt_proc_name_reset(void) GT_HIDDEN;

#endif
