/* The --max-capture bound (GOTRACE_MAX_CAPTURE, capture_budget.c): the bytes the captures of
 * one run may hold together, counted in a page every traced process of the run maps. */
#ifndef GT_CAPTURE_BUDGET_H
#define GT_CAPTURE_BUDGET_H

#include "base.h"

#include "gotrace/capture.h"

/* Right after the capture h was created: join the run's count (its header counted), and
 * write the bound into h. */
void gt_budget_attach(struct gt_file_header *h) GT_HIDDEN;
/* bytes more for a chunk: 1 when they fit under the bound (counted), 0 when not */
int gt_budget_take(uint64_t bytes) GT_HIDDEN;
/* bytes the bound leaves (UINT64_MAX without one): growth allocates no further ahead */
uint64_t gt_budget_left(void) GT_HIDDEN;
/* a chunk taken but never used */
void gt_budget_give_back(uint64_t bytes) GT_HIDDEN;

#endif
