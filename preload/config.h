/* GOTRACE_* settings, parsed once per program image (config.c). */
#ifndef GT_CONFIG_H
#define GT_CONFIG_H

#include "base.h"

#include "gotrace/capture.h"

struct gt_config {
	const char *out;          /* GOTRACE_OUT or NULL */
	char capture_dir[1024];   /* GOTRACE_CAPTURE_DIR or "" (cwd) */
	uint32_t stack_mode;      /* enum gt_stack_mode */
	uint32_t stack_depth;     /* 1 .. GT_MAX_STACK_DEPTH */
	uint64_t start_delay_ns;
	uint64_t duration_ns;
	uint32_t chunk_size;      /* bytes, multiple of 4096 */
	uint64_t last_bytes;      /* GOTRACE_LAST as a size: a ring of that many chunk bytes */
	uint64_t last_ns;         /* GOTRACE_LAST as a duration (0, 0: no ring) */
	int follow;               /* exec'd programs stay traced */
	int stack_check;          /* GOTRACE_STACK_CHECK: each unwind stack also walked the long way */
	int locks_all;            /* GOTRACE_LOCKS=all: every lock acquisition and release recorded */
	int is_root;              /* the process the user started (not a traced child) */
	int under_run;            /* GOTRACE_RUN=1: started by `gotrace run`, whose summary says
				   * where recording stopped at the --max-capture bound */
	char root_pid[24];        /* its pid, for children's GOTRACE_ROOT_PID (child_env.c) */
	uint64_t max_capture;     /* GOTRACE_MAX_CAPTURE: bytes for the run's captures, 0: none */
	uint64_t tsc_hz;          /* GOTRACE_TSC_HZ: the TSC rate an ancestor measured, 0: none */
	/* GOTRACE_REAPER "R:A:C": gotrace run (R), a subreaper, stands in for A as the adopter of
	 * orphans; C, its command, is R's own child (0: none of these).  is_command: this
	 * process is C (its fork children are not) */
	int reaper, adopter, is_command;
};
extern struct gt_config gt_cfg GT_HIDDEN;
void gt_config_load(void) GT_HIDDEN;

#endif
