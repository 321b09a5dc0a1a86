/* The life of a capture (lifecycle.c): states, initialisation, start and stop, fork children,
 * the end of the process. */
#ifndef GT_LIFECYCLE_H
#define GT_LIFECYCLE_H

#include "fastpath.h"

enum gt_state {
	GT_ST_UNINIT = 0,     /* no capture yet (also: a fresh fork child) */
	GT_ST_INITIALIZING,
	GT_ST_DELAYED,        /* capture open, GOTRACE_START_DELAY not elapsed */
	GT_ST_RECORDING,
	GT_ST_STOPPED,        /* duration elapsed or program ending: capture complete */
	GT_ST_FAILED,         /* recording gave up (write failure, setup error) */
	GT_ST_DETACHED,       /* gotrace stopped the recording (GT_FILE_DETACHED): untraced from
			       * then on, children and exec'd programs too; the file is not ours */
};
extern _Atomic int gt_state GT_HIDDEN;

int gt_init(void) GT_HIDDEN;                 /* 1 when recording or delayed */
void gt_finalize(int convert) GT_HIDDEN;     /* end records, flags, trim, convert */

#endif
