/* offcpu: the "off-CPU stacks" table of `gotrace report` (issue 15, item 4): the kernel's
 * samples at each switch-out of the traced process (`gotrace run --offcpu-stacks`), unwound
 * from the copied user stack and symbolized with the capture's modules, grouped by frames.
 * They name the waits the hooks cannot see (libgomp's inline futex, glibc-internal locks)
 * by their real frames, beside the hooked ones. */
#ifndef GOTRACE_REPORT_OFFCPU_H
#define GOTRACE_REPORT_OFFCPU_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

struct gt_symbolizer;

struct gt_offcpu_group {
	char *frames;         /* one "func (file:line)" per line, innermost first */
	uint64_t count;
};

struct gt_offcpu {
	uint64_t samples;     /* of the process, where a thread left its CPU to wait */
	uint64_t preempted;   /* samples of switch-outs that were preemptions: not grouped */
	uint64_t partial;     /* unwinding stopped early */
	struct gt_offcpu_group *v;   /* by count, descending */
	size_t n;
};

/* The off-CPU samples of process pid in the kernel file at path (nothing when it is absent
 * or has none), with sym holding the process's modules. */
void gt_offcpu_collect(const char *path, uint32_t pid, struct gt_symbolizer *sym,
		       struct gt_offcpu *o);
void gt_offcpu_print_text(FILE *out, const struct gt_offcpu *o, unsigned top);
void gt_offcpu_print_json(FILE *out, const struct gt_offcpu *o, unsigned top);
void gt_offcpu_free(struct gt_offcpu *o);

#endif
