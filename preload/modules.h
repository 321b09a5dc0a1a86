/* The module map (modules.c) and where libgotrace.so itself is. */
#ifndef GT_MODULES_H
#define GT_MODULES_H

#include "base.h"

#include <link.h>

#include "gotrace/capture.h"

void gt_modules_emit_all(void) GT_HIDDEN;
/* dl_iterate_phdr for the tracer, counted: it holds the loader's write lock, which glibc 2.36
 * leaves held in a fork child when another thread held it at the fork (the child then hangs
 * at its first walk).  gt_walks_settle, the last fork handler before glibc forks, waits for
 * the tracer's walks in flight in other threads. */
int gt_walk_objects(int (*cb)(struct dl_phdr_info *, size_t, void *), void *data) GT_HIDDEN;
void gt_walks_settle(void) GT_HIDDEN;
void gt_modules_reset(void) GT_HIDDEN;
/* Before a new stack is written: a PC in no known object (a library whose constructor runs
 * inside dlopen, before our dlopen hook can walk) gets the new objects' module records
 * written first, so the stack symbolizes as it is read. */
void gt_modules_cover(const uintptr_t *pcs, unsigned n) GT_HIDDEN;
extern uintptr_t gt_self_lo GT_HIDDEN, gt_self_hi GT_HIDDEN; /* our own text: trimmed */
extern char gt_self_path[GT_PATH_MAX] GT_HIDDEN;           /* "" when unknown */
void gt_self_range(void) GT_HIDDEN;
/* [lo, hi) of the object holding pc (0, 0: none) */
void gt_module_range(uintptr_t pc, uintptr_t *lo, uintptr_t *hi) GT_HIDDEN;

#endif
