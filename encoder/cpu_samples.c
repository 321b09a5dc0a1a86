/* cpu_samples: see cpu_samples.h. */
#include "cpu_samples.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "kernel/reader.h"
#include "kernel/samples.h"
#include "critical_path.h"
#include "model_internal.h"
#include "symbolizer/symbolizer.h"

struct sample_ref {
	uint64_t time;      /* CLOCK_MONOTONIC ns */
	uint64_t offset;    /* of the record in the file */
};

struct gt_cpu_samples {
	struct gt_kernel_file f;
	struct gt_kernel_counts kc;
	struct sample_ref *refs;   /* the CPU samples, by time */
	size_t n, cap, next;
	struct gt_u64map threads;  /* pid << 32 | tid -> struct mthread * */
	uint64_t threads_known;    /* m->threads_met at the last look at every thread */
	uint64_t retired_known;    /* m->n_retired then: a thread retired since was freed */
	struct gt_kernel_index offcpu;   /* the off-CPU samples, by thread and time */
	struct gt_cpu_sample_counts c;
};

static void add_ref(uint64_t offset, uint64_t time, uint32_t kind, void *ctx)
{
	struct gt_cpu_samples *s = ctx;
	if (kind != GT_KERNEL_EV_CPU) {
		s->c.offcpu += kind == GT_KERNEL_EV_OFFCPU;
		return;
	}
	if (!gt_grow(&s->refs, &s->cap, s->n + 1, sizeof *s->refs))
		return;
	s->refs[s->n++] = (struct sample_ref){ time, offset };
}

static int by_time(const void *a, const void *b)
{
	const struct sample_ref *x = a, *y = b;
	return x->time < y->time ? -1 : x->time > y->time ? 1 : (x->offset > y->offset) - (x->offset < y->offset);
}

struct gt_cpu_samples *gt_cpu_samples_open(const char *path, char *err, size_t err_size)
{
	struct gt_cpu_samples *s = calloc(1, sizeof *s);
	if (!s) {
		snprintf(err, err_size, "out of memory");
		return NULL;
	}
	if (gt_kernel_open(path, &s->f, err, err_size) != 0) {
		free(s);
		return NULL;
	}
	/* each CPU's records are in time order, not the file (docs/formats/kernel-records.md §10) */
	gt_kernel_walk(&s->f, NULL, add_ref, s, &s->kc);
	if (s->n > 1)   /* none: refs is NULL, which qsort must not get */
		qsort(s->refs, s->n, sizeof *s->refs, by_time);
	s->c.kernel_lost = s->kc.lost + s->kc.launcher_lost;
	if (s->c.offcpu && !gt_kernel_index_build(&s->f, GT_KERNEL_EV_OFFCPU, &s->offcpu))
		fprintf(stderr, "gotrace: out of memory: untraced waits without their off-CPU "
				"stacks\n");
	return s;
}

uint64_t gt_cpu_samples_ticks(const struct gt_model *m, uint64_t tsc)
{
	return gt_clock_ticks(&m->clock, tsc);
}

/* The thread of (pid, tid): a thread's tid is known from its first fact on, which may come
 * after the map was made, so a miss looks again at every thread. */
static struct mthread *thread_of(struct gt_cpu_samples *s, struct gt_model *m, uint32_t pid,
				 uint32_t tid)
{
	uint64_t key = (uint64_t)pid << 32 | tid;
	if (s->retired_known != m->n_retired) {
		gt_u64map_clear(&s->threads);
		s->retired_known = m->n_retired;
	}
	const uint64_t *v = gt_u64map_find(&s->threads, key);
	if (v != NULL && s->threads_known == m->threads_met)
		return (struct mthread *)(uintptr_t)*v;
	/* every thread held (the dead are retired after their last sample); a tid used again
	 * is the later thread's */
	struct mthread *found = NULL;
	for (size_t i = 0; i < m->n_threads; i++) {
		struct mthread *t = m->threads[i];
		if (gtm_tid(t) == tid && t->capture < m->n_caps && m->caps[t->capture].pid == pid &&
		    (found == NULL || found->serial < t->serial))
			found = t;
	}
	bool fresh;
	uint64_t *slot = found ? gt_u64map_slot(&s->threads, key, &fresh) : NULL;
	if (slot)
		*slot = (uintptr_t)found;
	s->threads_known = m->threads_met;
	return found;
}

/* The capture of process pid, when no thread says it. */
static bool capture_of(const struct gt_model *m, uint32_t pid, uint32_t *capture)
{
	for (uint32_t i = 0; i < m->n_caps; i++)
		if (m->caps[i].pid == pid) {
			*capture = i;
			return true;
		}
	return false;
}

/* The written stack of sample k of a process of capture, 0 when it has no user registers.
 * The tracer's own work (its code, its libunwind) is one synthetic frame on the program's
 * call into the tracer: its cost, said as such, not a function of the program's. */
/* The function a sample of pcs (n of them, own the tracer's) was in, for the critical path:
 * its innermost frame's. */
static void sample_function(struct gt_model *m, const uint64_t *pcs, size_t n, size_t own,
			    char *fn, size_t size)
{
	struct gt_frame f[GT_WIRE_MAX_FRAMES];
	if (own)
		snprintf(fn, size, "gotrace (the tracer's own work)");
	else if (m->opt.sym && gt_sym_stack(m->opt.sym, pcs, n, f, GT_WIRE_MAX_FRAMES))
		snprintf(fn, size, "%s", f[0].func);
	else
		snprintf(fn, size, "0x%" PRIx64, pcs[0]);
}

/* ... and, when fn is not NULL, the function it was in (sample_function). */
static uint64_t sample_stack(struct gt_model *m, uint32_t capture,
			     const struct gt_kernel_sample *k, bool *complete, bool *tracer,
			     char *fn, size_t fn_size)
{
	uint64_t pcs[GT_WIRE_MAX_FRAMES];
	gtm_use_space(m, capture);
	size_t n = gt_kernel_sample_unwind(m->opt.sym, k, pcs, GT_WIRE_MAX_FRAMES, complete);
	size_t own = n ? gt_sym_tracer_work(m->opt.sym, pcs, n) : 0;
	*tracer = own > 0;
	if (fn && n)
		sample_function(m, pcs, n, own, fn, fn_size);
	if (own)
		return gtm_pcs_stack_under(m, capture, S_TRACER, pcs + own, n - own);
	return n ? gtm_pcs_stack(m, capture, pcs, n) : 0;
}

static void write_sample(struct gt_cpu_samples *s, struct gt_model *m,
			 const struct gt_kernel_sample *k, uint64_t ticks)
{
	struct mthread *t = thread_of(s, m, k->pid, k->tid);
	uint32_t capture;
	if (t) {
		capture = t->capture;
	} else if (!capture_of(m, k->pid, &capture)) {
		s->c.elsewhere++;   /* another process's trace holds it */
		return;
	}
	bool complete, tracer;
	char fn[256];
	bool named = m->opt.critical_path && t && t->g;
	uint64_t stack = sample_stack(m, capture, k, &complete, &tracer, named ? fn : NULL,
				      sizeof fn);
	if (!stack) {
		s->c.no_user++;
		return;
	}
	s->c.tracer += tracer;
	s->c.partial += !complete;
	s->c.no_thread += !t || !t->g;
	struct gt_wire_actor who = { t ? t->g : 0, t ? t->m_id : 0 };
	uint64_t p = k->cpu + 1 < m->n_ps ? k->cpu + 1 : GT_WIRE_P_NONE;
	gt_wire_cpu_sample(m->w, ticks, p, &who, stack);
	if (named)
		gt_critpath_sample(m->opt.critical_path, ticks, t->g, fn);
	s->c.written++;
}

void gt_cpu_samples_until(struct gt_cpu_samples *s, struct gt_model *m, uint64_t ticks)
{
	for (; s->next < s->n; s->next++) {
		struct gt_kernel_sample k;
		uint64_t at = gtm_mono_ticks(m, s->refs[s->next].time);
		if (at > ticks)
			return;
		if (!gt_kernel_sample_at(&s->f, s->refs[s->next].offset, &k))
			continue;
		/* before the trace starts (its prologue) there is no goroutine to name */
		if (!m->prologue_closed || !m->seen_fact || at < m->t0)
			s->c.outside++;
		else
			write_sample(s, m, &k, at);
	}
}

uint64_t gt_cpu_samples_offcpu_stack(struct gt_cpu_samples *s, struct gt_model *m,
				     const struct mthread *t, uint64_t mono_ns)
{
	if (!s || !s->offcpu.n || t->capture >= m->n_caps)
		return 0;
	const struct gt_kernel_at *a = gt_kernel_index_find(&s->offcpu, m->caps[t->capture].pid,
							    gtm_tid(t), mono_ns,
							    GT_KERNEL_SWITCH_SLACK_NS);
	struct gt_kernel_sample k;
	bool complete;
	/* taken before its SWITCH record: a later one is the next switch-out's */
	if (!a || a->time > mono_ns || !gt_kernel_sample_at(&s->f, a->offset, &k))
		return 0;
	bool tracer;
	uint64_t stack = sample_stack(m, t->capture, &k, &complete, &tracer, NULL, 0);
	s->c.offcpu_waits += stack != 0;
	return stack;
}

void gt_cpu_samples_finish(struct gt_cpu_samples *s, struct gt_model *m)
{
	gt_cpu_samples_until(s, m, m->now);
	s->c.outside += s->n - s->next;
	s->next = s->n;
}

void gt_cpu_samples_counts(const struct gt_cpu_samples *s, struct gt_cpu_sample_counts *out)
{
	*out = s->c;
}

void gt_cpu_samples_close(struct gt_cpu_samples *s)
{
	if (!s)
		return;
	gt_kernel_close(&s->f);
	gt_u64map_free(&s->threads);
	gt_kernel_index_free(&s->offcpu);
	free(s->refs);
	free(s);
}

void gt_cpu_samples_describe(const struct gt_cpu_sample_counts *c, FILE *f)
{
	const struct { uint64_t n; const char *what; } parts[] = {
		{ c->partial, ", %" PRIu64 " of them with a partial stack" },
		{ c->no_thread, ", %" PRIu64 " of threads the captures do not have" },
		{ c->tracer, ", %" PRIu64 " of them the tracer's own work" },
		{ c->outside, "; %" PRIu64 " outside the traced time" },
		{ c->no_user, "; %" PRIu64 " without user registers" },
		{ c->offcpu, "; %" PRIu64 " off-CPU stacks" },
		{ c->offcpu_waits, " (%" PRIu64 " naming untraced waits)" },
		{ c->elsewhere, "; %" PRIu64 " of processes traced apart" },
		{ c->kernel_lost, "; %" PRIu64 " kernel records lost (samples among them)" },
	};
	fprintf(f, "gotrace: CPU samples: %" PRIu64 " in the trace", c->written);
	for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++)
		if (parts[i].n)
			fprintf(f, parts[i].what, parts[i].n);
	fputc('\n', f);
}
