/* model_cp: the critical path drawn on the timeline (gt_convert_options' draw_critical_path):
 * a user task "critical path" and, on the goroutine of each thread the path goes through, a
 * region "critical path" for each of its stretches there (gt_critpath_plan, from a first
 * conversion of the same captures: the model's goroutines and ticks are the same, but for the
 * ticks these events take).
 *
 * A goroutine begins and ends its own regions, as Go's readers want: a region begins at the
 * first event of its thread running inside its stretch (its start, mostly) and ends at its
 * thread's first event at or after the stretch's end (the wake of the next thread, mostly),
 * before the thread leaves its CPU; it stays open across the thread's waits inside the
 * stretch.  Regions nest: the path's begins only where the program has none of its own open
 * on that thread, and ends before a program's region begins there (it begins again later in
 * the stretch, at an event of the thread with none open). */
#include "model_internal.h"

#include <stdlib.h>

#include "critical_path.h"

#define CP_TASK_ID UINT64_C(0x7fffffffffff0001)   /* not a program's, which the model skips */
/* The ticks its own events took move this pass's events later than the plan's by a few. */
#define CP_SLACK_TICKS 16u

static bool user_event(enum gt_sched_kind k)
{
	return k == GT_SCHED_USER_TASK_BEGIN || k == GT_SCHED_USER_TASK_END ||
	       k == GT_SCHED_USER_REGION_BEGIN || k == GT_SCHED_USER_REGION_END;
}

/* t's stretch now: the first of its goroutine not over by ticks (a region open keeps its own
 * until it ends), NULL: none left. */
static const struct gt_cp_stretch *stretch_of(struct gt_model *m, struct mthread *t,
					      uint64_t ticks)
{
	const struct gt_cp_stretch *plan = m->opt.critical_plan;
	size_t n = m->opt.n_critical_plan;
	if (!t->cp_looked) {
		size_t lo = 0, hi = n;   /* the first of g */
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;
			if (plan[mid].g < t->g)
				lo = mid + 1;
			else
				hi = mid;
		}
		t->cp_at = (uint32_t)lo;
		t->cp_looked = true;
	}
	while (!t->cp_open && t->cp_at < n && plan[t->cp_at].g == t->g &&
	       plan[t->cp_at].to <= ticks)
		t->cp_at++;
	return t->cp_at < n && plan[t->cp_at].g == t->g ? &plan[t->cp_at] : NULL;
}

/* t's region begins or ends on P p (where it runs) at want; the task begins with the first. */
static void region(struct gt_model *m, struct mthread *t, bool begin, uint64_t want, uint64_t p)
{
	uint64_t name = gt_wire_cstring(m->w, "critical path");
	uint64_t stk = gtm_thread_routine_stack(m, t, S_UNKNOWN);
	if (begin && !m->cp_task_begun) {
		bool found;
		uint64_t *live = gt_u64map_slot(&m->tasks, CP_TASK_ID, &found);
		if (!live)
			return;
		*live = 1;
		GTM_EMIT(m, want, t, NULL, .kind = GT_SCHED_USER_TASK_BEGIN, .p = p,
			 .task = CP_TASK_ID, .name = name, .stack = stk);
		m->cp_task_begun = true;
	}
	GTM_EMIT(m, want, t, NULL,
		 .kind = begin ? GT_SCHED_USER_REGION_BEGIN : GT_SCHED_USER_REGION_END, .p = p,
		 .task = CP_TASK_ID, .name = name, .stack = stk);
	t->cp_open = begin;
}

/* t's open region ends at want; its stretch is over unless paused (a program's region). */
static void end_region(struct gt_model *m, struct mthread *t, uint64_t want, bool over)
{
	const struct gt_cp_stretch *s = &m->opt.critical_plan[t->cp_at];
	region(m, t, false, want, t->p);
	if (!over)
		return;
	t->cp_at++;
	if (s->last && !m->cp_task_ended) {
		GTM_EMIT(m, want, t, NULL, .kind = GT_SCHED_USER_TASK_END, .p = t->p,
			 .task = CP_TASK_ID, .stack = gtm_thread_routine_stack(m, t, S_UNKNOWN));
		gt_u64map_remove(&m->tasks, CP_TASK_ID);
		m->cp_task_ended = true;
	}
}

void gtm_cp_before(struct gt_model *m, const struct gt_sched_event *e, uint64_t want,
		   struct mthread *a)
{
	bool leaves = e->kind == GT_SCHED_GO_BLOCK || e->kind == GT_SCHED_GO_STOP ||
		      e->kind == GT_SCHED_GO_DESTROY ||
		      (e->kind == GT_SCHED_GO_SYSCALL_BEGIN && !e->sys_end);
	if (!a->cp_open || !leaves)
		return;
	const struct gt_cp_stretch *s = stretch_of(m, a, want);
	bool over = !s || want + CP_SLACK_TICKS >= s->to;
	if (over || e->kind == GT_SCHED_GO_DESTROY)   /* nothing of it after its end */
		end_region(m, a, want, true);
}

void gtm_cp_after(struct gt_model *m, const struct gt_sched_event *e, struct mthread *a)
{
	/* its thread runs after it: it starts, or it woke or created another, or its syscall did
	 * not block */
	bool runs = e->kind == GT_SCHED_GO_START ||
		    (a->state == T_RUNNING &&
		     (e->kind == GT_SCHED_GO_UNBLOCK || (e->kind == GT_SCHED_GO_CREATE && e->g != a->g) ||
		      (e->kind == GT_SCHED_GO_SYSCALL_BEGIN && e->sys_end)));
	if (!runs || !a->g)
		return;
	const struct gt_cp_stretch *s = stretch_of(m, a, e->ticks);
	if (a->cp_open && e->kind != GT_SCHED_GO_START && (!s || e->ticks + CP_SLACK_TICKS >= s->to)) {
		end_region(m, a, e->ticks, true);
		s = stretch_of(m, a, e->ticks);
	}
	if (!a->cp_open && s && !a->n_regions && e->ticks + CP_SLACK_TICKS >= s->from &&
	    e->ticks < s->to)
		region(m, a, true, e->ticks, e->kind == GT_SCHED_GO_START ? e->p : a->p);
}

void gtm_cp_program_region(struct gt_model *m, struct mthread *t, uint64_t want)
{
	if (m->opt.critical_plan && t->cp_open)
		end_region(m, t, want, false);
}

bool gtm_cp_draws(const struct gt_model *m, const struct gt_sched_event *e,
		  const struct mthread *a)
{
	return m->opt.critical_plan && a && !user_event(e->kind);
}
