/* gotrace_reader: reads back a "go 1.19 trace" (docs/formats/go119.md §1) such as gotrace
 * writes: batches, varints, strings, stacks, each P's events with their goroutine context,
 * merged by timestamp.  The event types are gowire.h's table; types outside it are read
 * by their framing and kept with GT_GO_EVENT_COUNT as their kind.
 *
 * For `gotrace report TRACE` when no capture was kept: what a Go trace alone can say. */
#ifndef GOTRACE_GOTRACE_READER_H
#define GOTRACE_GOTRACE_READER_H

#include "encoder/encoder.h"

#include <stddef.h>
#include <stdint.h>

struct gt_go_ev {
	uint64_t ns;          /* since the earliest event (Frequency applied) */
	uint64_t p;           /* batch P (GT_WIRE_P_NONE for "no P") */
	uint64_t g;           /* goroutine: the P's context, or the argument for GoSysExit,
			       * GoWaiting (the events that name their G) */
	enum gt_go_event kind;
	uint8_t type;         /* wire type byte (low 6 bits) */
	uint64_t args[4];     /* arguments after the timestamp, stack not counted */
	uint64_t stack;       /* stack id, 0 = none */
};

struct gt_go_frame_ref {
	uint64_t pc, func, file, line;   /* func and file are string ids */
};

struct gt_go_stack_def {
	uint64_t id;
	struct gt_go_frame_ref *frames;  /* innermost first */
	size_t n;
};

struct gt_go_string {
	uint64_t id;
	char *text;
};

struct gt_go_trace {
	struct gt_go_ev *ev;             /* merged, by time */
	size_t n_ev;
	uint64_t frequency;              /* ticks per second */
	struct gt_go_string *strings;    /* sorted by id */
	size_t n_strings;
	struct gt_go_stack_def *stacks;  /* sorted by id */
	size_t n_stacks;
};

/* Reads PATH.  Returns 0, or -1 after writing one line (no newline) into err. */
int gt_go_trace_read(const char *path, struct gt_go_trace *t, char *err, size_t errlen);
void gt_go_trace_free(struct gt_go_trace *t);

/* The string of id ("" for 0 or an undefined id) and the stack of id (NULL if none). */
const char *gt_go_trace_string(const struct gt_go_trace *t, uint64_t id);
const struct gt_go_stack_def *gt_go_trace_stack(const struct gt_go_trace *t, uint64_t id);

#endif
