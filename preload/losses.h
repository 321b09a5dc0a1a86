/* Losses (losses.c): what a full table of the tracer's made it leave out, counted and said
 * in the capture's notices. */
#ifndef GT_LOSSES_H
#define GT_LOSSES_H

#include "base.h"

#include "gotrace/capture.h"

/* A notice of kind with value at tsc on cpu: 1 when written */
int gt_fact_notice(unsigned cpu, uint8_t kind, uint64_t value, uint64_t tsc) GT_HIDDEN;
/* Table overflows (kind: GT_NOTICE_STACKS_LOST, _THREADS_LOST, _WAITERS_LOST): counted, and
 * said in a notice at the first loss and each time the count doubles (a crash leaves at most
 * half of them unsaid); gt_losses_flush says the rest into records reserve() gives. */
void gt_lose(uint8_t kind) GT_HIDDEN GT_NOINLINE;
void gt_losses_flush(uint64_t *(*reserve)(unsigned cpu, uint32_t nbytes)) GT_HIDDEN;
void gt_losses_reset(void) GT_HIDDEN;

#endif
