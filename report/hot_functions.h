/* hot_functions: the "hottest functions" table of `gotrace report`, from the CPU samples of
 * a Go trace (`gotrace run --cpu-samples`, issue 15 item 5): per function the samples it
 * was running in (self: innermost frame) and the samples it was on the stack of (total). */
#ifndef GOTRACE_HOT_FUNCTIONS_H
#define GOTRACE_HOT_FUNCTIONS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "gotrace_reader.h"

struct gt_hot_fn {
	const char *func, *file;   /* the trace's strings */
	uint64_t line;             /* of its first sample */
	uint64_t self, total;
};

struct gt_hot {
	uint64_t samples;          /* CPU samples in the trace */
	struct gt_hot_fn *v;       /* by self, then total, descending */
	size_t n;
};

/* From t's CPU samples (t must outlive hot). */
void gt_hot_collect(const struct gt_go_trace *t, struct gt_hot *hot);
/* The table's top rows: text (a section of its own) or JSON (",\"hot_functions\":{...}",
 * a member of the report's object).  Nothing without samples. */
void gt_hot_print_text(FILE *out, const struct gt_hot *hot, unsigned top);
void gt_hot_print_json(FILE *out, const struct gt_hot *hot, unsigned top);
void gt_hot_free(struct gt_hot *hot);

#endif
