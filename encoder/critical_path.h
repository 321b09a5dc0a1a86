/* critical_path: what the model tells the critical path's recorder (encoder.h gt_critpath),
 * as it decides it.  The model owns every decision (who woke whom, when a thread ran, which
 * syscall blocked); the recorder only keeps each thread's intervals, compactly, for
 * gt_critpath_walk. */
#ifndef GOTRACE_CRITICAL_PATH_H
#define GOTRACE_CRITICAL_PATH_H

#include <stdbool.h>
#include <stdint.h>

#include "encoder.h"
#include "gowire.h"

/* A thread an event is about, as the model knows it then (g 0: none). */
struct gt_cp_who {
	uint64_t g;
	uint32_t capture, pid, tid;
	const char *name;
	bool main;                  /* the main thread of capture 0 */
	bool process_main;          /* the main thread of its capture */
};

/* Names a written stack: "func (file:line)" of its program frame into buf; false: none. */
typedef bool gt_cp_site_fn(void *ctx, uint32_t capture, uint64_t stack, char *buf, size_t size);

/* One scheduling event as the model emits it (e, its ticks set), performed by a, about b
 * (GO_UNBLOCK's woken thread, GO_CREATE's new one); a's open block's object and latest
 * syscall number. */
struct gt_cp_event {
	const struct gt_sched_event *e;
	struct gt_cp_who a, b;
	uint64_t obj;
	uint32_t sys_nr;
};

void gt_critpath_site_source(struct gt_critpath *cp, gt_cp_site_fn *site, void *ctx);
void gt_critpath_event(struct gt_critpath *cp, const struct gt_cp_event *ev);
/* A CPU sample of thread g at ticks in function (its innermost frame). */
void gt_critpath_sample(struct gt_critpath *cp, uint64_t ticks, uint64_t g, const char *function);
/* Thread g made process pid at ticks (a fork or spawn; an exec: its own pid): the next main
 * thread of a capture of pid that appears with no creator was made by it. */
void gt_critpath_process(struct gt_critpath *cp, uint64_t ticks, uint64_t g, uint32_t pid);
/* The conversion ended: ticks per second of the trace, whether kernel switches placed the
 * threads. */
void gt_critpath_finish(struct gt_critpath *cp, uint64_t frequency, bool kernel);

/* A stretch of the main thread's path in one goroutine, in the model's ticks, for drawing it
 * (model_cp.c): [from, to), the one ending last marked. */
struct gt_cp_stretch {
	uint64_t g, from, to;
	bool last;
};
/* The stretches of the path of the first process's main thread, sorted by goroutine then
 * time (free *out); -1 when there is none or memory runs out. */
int gt_critpath_plan(const struct gt_critpath *cp, struct gt_cp_stretch **out, size_t *n);

#endif
