/* report: see report.h.
 *
 * One pass over the merged facts.  Each thread has at most one open wait (a BLOCK_BEGIN
 * or a SYSCALL_BEGIN not yet ended); its end closes it and charges the time to the
 * thread, to the object (for lock-like kinds, per blocking stack, as mutrace counts), or
 * to the (syscall, stack) pair.  Stacks are symbolized once, when printed.  Times are taken
 * at the header's rate and corrected by the fit of the clock pairs once all are read, as
 * the trace's Frequency corrects its ticks (clock_fit.h). */
#include "report.h"
#include "report_internal.h"

#include "hot_functions.h"
#include "names.h"
#include "offcpu.h"

#include "common/grow.h"
#include "common/hash.h"
#include "common/u64map.h"
#include "encoder/encoder.h"
#include "kernel/reader.h"
#include "kernel/records.h"
#include "symbolizer/symbolizer.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *const gtr_wait_class_name[WAIT_CLASS_COUNT] = {
	"lock", "cond", "join", "sleep", "syscall",
};

void *gt_report_must(void *p)
{
	if (p == NULL) {
		fputs("gotrace report: out of memory\n", stderr);
		exit(1);
	}
	return p;
}

void *gtr_grow(void *array, size_t *n, size_t want, size_t elem)
{
	if (!gt_grow(&array, n, want, elem))
		gt_report_must(NULL);
	return array;
}

/* The row of tracked thread t; valid until the next call. */
static struct thread_row *row_of(struct report *r, const struct gt_tracked_thread *t)
{
	if (t->order >= r->n_threads) {
		r->threads = gtr_grow(r->threads, &r->cap_threads, t->order + 1, sizeof *r->threads);
		r->n_threads = t->order + 1;
	}
	r->threads[t->order].t = t;
	return &r->threads[t->order];
}

static struct stack_def *stack_def_of(const struct report *r, uint32_t stack)
{
	const uint64_t *index = stack ? gt_u64map_find(&r->stack_index, stack) : NULL;
	return index != NULL ? &r->stacks[*index - 1] : NULL;
}

static int thread_by_serial(const void *a, const void *b)
{
	const struct thread_row *x = a, *y = b;
	return x->t->serial < y->t->serial ? -1 : x->t->serial > y->t->serial;
}

/* The threads that had facts, by serial, their times fitted (apply_clock_fit). */
static void rows_by_serial(struct report *r)
{
	size_t n = 0, pos = 0;
	for (const struct gt_tracked_thread *t; (t = gt_tracker_next(r->tracker, &pos));) {
		if (!t->has_facts)
			continue;
		struct thread_row row = t->order < r->n_threads ? r->threads[t->order]
								: (struct thread_row){0};
		row.t = t;
		row.first_ns = gt_clock_ns(&r->clock, t->first_tsc);
		row.last_ns = gt_clock_ns(&r->clock, t->last_tsc);
		row.wait_since_ns = gt_clock_ns(&r->clock, t->wait.since_tsc);
		r->threads = gtr_grow(r->threads, &r->cap_threads, n + 1, sizeof *r->threads);
		r->threads[n++] = row;   /* n <= t->order: no row read later is overwritten */
	}
	r->n_threads = n;
	if (n > 1)
		qsort(r->threads, n, sizeof *r->threads, thread_by_serial);
}

static struct wait_site *site_of(struct site_table *t, uint64_t key, uint8_t kind)
{
	bool found;
	uint64_t *newest = gt_report_must(gt_u64map_slot(&t->by_key, key, &found));
	for (size_t i = *newest; i != 0; i = t->v[i - 1].same_key)
		if (t->v[i - 1].kind == kind)
			return &t->v[i - 1];
	t->v = gtr_grow(t->v, &t->cap, t->n + 1, sizeof *t->v);
	t->v[t->n] = (struct wait_site){ .key = key, .kind = kind, .same_key = *newest };
	*newest = ++t->n;
	return &t->v[t->n - 1];
}

void gtr_stack_stat_add(struct stack_stat **v, size_t *n, size_t *cap, uint32_t stack,
			uint64_t ns)
{
	struct stack_stat *st = NULL;
	for (size_t i = 0; i < *n && st == NULL; i++)
		if ((*v)[i].stack == stack)
			st = &(*v)[i];
	if (st == NULL) {
		*v = gtr_grow(*v, cap, *n + 1, sizeof **v);
		st = &(*v)[(*n)++];
		*st = (struct stack_stat){ .stack = stack };
	}
	st->count++;
	st->total_ns += ns;
	if (ns > st->max_ns)
		st->max_ns = ns;
}

static void site_add(struct wait_site *s, uint32_t stack, uint64_t ns)
{
	s->count++;
	s->total_ns += ns;
	if (ns > s->max_ns)
		s->max_ns = ns;
	gtr_stack_stat_add(&s->stacks, &s->n_stacks, &s->cap_stacks, stack, ns);
}

static enum wait_class class_of_block(uint8_t kind)
{
	switch (kind) {
	case GT_BK_COND: return WAIT_COND;
	case GT_BK_JOIN: return WAIT_JOIN;
	case GT_BK_SLEEP: return WAIT_SLEEP;
	default: return WAIT_LOCK;
	}
}

bool gtr_is_object_kind(uint8_t kind)
{
	return kind != GT_BK_JOIN && kind != GT_BK_SLEEP;
}

/* Wait w of row t ended at now_ns: its time to the thread and to its site. */
static void charge_wait(struct report *r, struct thread_row *t, const struct gt_tracked_wait *w,
			uint64_t now_ns)
{
	uint64_t begin_ns = gt_clock_ns(&r->clock, w->since_tsc);
	uint64_t ns = now_ns > begin_ns ? now_ns - begin_ns : 0;
	enum wait_class c = w->syscall ? WAIT_SYSCALL : class_of_block(w->kind);
	t->wait_ns[c] += ns;
	t->n_waits[c]++;
	if (w->syscall) {
		site_add(site_of(&r->syscalls, w->nr, w->kind), w->stack, ns);
	} else if (gtr_is_object_kind(w->kind)) {
		/* Read and write waits on one rwlock are the same object. */
		uint8_t kind = w->kind == GT_BK_RWLOCK_RD ? GT_BK_RWLOCK_WR : w->kind;
		struct wait_site *s = site_of(&r->objects, w->obj, kind);
		site_add(s, w->stack, ns);
		gtr_holder_add(r, s, w, ns);
	}
}

/* The first stack an object was waited on with: what names an object outside the modules. */
static void note_first_use(struct report *r, const struct gt_tracked_wait *w)
{
	if (!w->open || w->syscall || w->stack == 0 || !gtr_is_object_kind(w->kind))
		return;
	bool found;
	uint64_t *stack = gt_report_must(gt_u64map_slot(&r->first_use, w->obj, &found));
	if (!found)
		*stack = w->stack;
}

static void add_fact(struct report *r, const struct gt_capture_record *cr)
{
	const struct gt_rec *rec = cr->rec;
	uint64_t now = gt_clock_ns(&r->clock, cr->tsc);
	if (now > r->end_ns)
		r->end_ns = now;
	struct gt_tracker_change change;
	if (!gt_tracker_fact(r->tracker, cr, &change))
		gt_report_must(NULL);
	if (change.closed)
		charge_wait(r, row_of(r, change.thread), &change.closed_wait, now);
	if (change.thread)
		note_first_use(r, &change.thread->wait);
	gtr_holds_fact(r, cr, &change, now);
	gtr_order_fact(r, cr, &change);

	switch (rec->type) {
	case GT_STACK: {
		const struct gt_p_stack *p = cr->payload;
		if (p->id == 0 || p->id >= (1u << 24) ||
		    sizeof *p + (size_t)p->nframes * 8 > cr->payload_len)
			break;
		bool found;
		uint64_t *index = gt_report_must(gt_u64map_slot(&r->stack_index, p->id, &found));
		if (!found) {
			r->stacks = gtr_grow(r->stacks, &r->cap_stacks, r->n_stacks + 1,
					 sizeof *r->stacks);
			*index = ++r->n_stacks;
		}
		struct stack_def *def = &r->stacks[*index - 1];
		free(def->pcs);
		def->n = p->nframes;
		def->pcs = gt_report_must(malloc((size_t)p->nframes * sizeof *def->pcs + 1));
		memcpy(def->pcs, p + 1, (size_t)p->nframes * sizeof *def->pcs);
		break;
	}
	case GT_MODULE: {
		const struct gt_p_module *p = cr->payload;
		const uint8_t *tail = (const uint8_t *)(p + 1);
		if (sizeof *p + (size_t)p->build_id_len + p->path_len > cr->payload_len)
			break;
		char path[GT_PATH_MAX + 1];
		memcpy(path, tail + p->build_id_len, p->path_len);
		path[p->path_len] = '\0';
		gt_sym_add_module(r->sym, path, tail, p->build_id_len, p->base, p->lo, p->hi,
				  p->flags);
		break;
	}
	case GT_CLOCK:
		gt_clock_add_pair(&r->clock, rec->tsc,
				  ((const struct gt_p_clock *)cr->payload)->mono_ns);
		break;
	case GT_PROCESS_NAME:
		gt_process_name_from_fact(&r->proc, cr->payload, cr->payload_len);
		break;
	case GT_PROCESS:
		if (rec->aux == GT_PROC_EXEC)
			r->execd = ((const struct gt_p_process *)cr->payload)->err == 0;
		break;
	case GT_NOTICE: {
		uint64_t value = ((const struct gt_p_notice *)cr->payload)->value;
		switch (rec->aux) {
		case GT_NOTICE_DROPPED: r->dropped_facts += value; break;
		case GT_NOTICE_STACKS_LOST: r->stacks_lost += value; break;
		case GT_NOTICE_THREADS_LOST: r->threads_lost += value; break;
		case GT_NOTICE_WAITERS_LOST: r->waiters_lost += value; break;
		case GT_NOTICE_REENTRY_LOST: r->reentry_lost += value; break;
		case GT_NOTICE_WAITS_UNSHOWN: r->waits_unshown += value; break;
		}
		break;
	}
	default:
		break;
	}
}

/* Every time collected, from the header's rate to the rate the clock pairs fit. */
static void apply_clock_fit(struct report *r)
{
	const struct gt_clock *c = &r->clock;
	if (gt_clock_frequency(c) == 1000000000u)
		return;
	r->end_ns = gt_clock_fitted_ns(c, r->end_ns);
	for (size_t i = 0; i < r->n_threads; i++) {
		struct thread_row *t = &r->threads[i];
		t->first_ns = gt_clock_fitted_ns(c, t->first_ns);
		t->last_ns = gt_clock_fitted_ns(c, t->last_ns);
		t->wait_since_ns = gt_clock_fitted_ns(c, t->wait_since_ns);
		for (int k = 0; k < WAIT_CLASS_COUNT; k++)
			t->wait_ns[k] = gt_clock_fitted_ns(c, t->wait_ns[k]);
	}
	struct site_table *tables[] = { &r->objects, &r->syscalls };
	for (size_t k = 0; k < 2; k++)
		for (size_t i = 0; i < tables[k]->n; i++)
			gtr_site_fit(r, &tables[k]->v[i]);
}

void gtr_site_fit(struct report *r, struct wait_site *s)
{
	const struct gt_clock *c = &r->clock;
	s->total_ns = gt_clock_fitted_ns(c, s->total_ns);
	s->max_ns = gt_clock_fitted_ns(c, s->max_ns);
	for (size_t j = 0; j < s->n_stacks; j++) {
		s->stacks[j].total_ns = gt_clock_fitted_ns(c, s->stacks[j].total_ns);
		s->stacks[j].max_ns = gt_clock_fitted_ns(c, s->stacks[j].max_ns);
	}
	gtr_holders_fit(r, s);
}

/* ---- names ---------------------------------------------------------------------------- */

size_t gtr_frames_of(struct report *r, uint32_t stack, struct gt_frame *out)
{
	const struct stack_def *def = stack_def_of(r, stack);
	if (def == NULL || def->pcs == NULL)
		return 0;
	return gt_sym_stack(r->sym, def->pcs, def->n, out, REPORT_MAX_FRAMES);
}

static const char *base_name(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash != NULL ? slash + 1 : path;
}

void gt_report_frame_text(const char *func, const char *file, uint64_t line, char *buf,
			  size_t size)
{
	if (line != 0)
		snprintf(buf, size, "%s (%s:%" PRIu64 ")", func, base_name(file), line);
	else
		snprintf(buf, size, "%s (%s)", func, base_name(file));
}

void gtr_frame_text(const struct gt_frame *f, char *buf, size_t size)
{
	gt_report_frame_text(f->func, f->file, f->line, buf, size);
}

void gtr_routine_text(struct report *r, const struct gt_tracked_thread *t, char *buf,
			 size_t size)
{
	if (t->start_routine == 0) {
		/* a thread that existed before recording: its own name (comm) if it has one */
		const char *own = gt_tracker_own_name(r->tracker, t->capture, t->name);
		snprintf(buf, size, "%s",
			 t->serial == 1 ? "[main thread]" : own ? own : "[pre-existing thread]");
		return;
	}
	struct gt_frame f = gt_sym_function(r->sym, t->start_routine);
	snprintf(buf, size, "%s", f.func);
}

const char *gtr_object_name(struct report *r, uint64_t obj, char *buf, size_t size)
{
	if (obj & GT_OBJ_KERNEL) {   /* a process-shared object's kernel identity */
		snprintf(buf, size, "%#" PRIx64, obj);
		return buf;
	}
	const uint64_t *stack = gt_u64map_find(&r->first_use, obj);
	const struct stack_def *def = stack ? stack_def_of(r, (uint32_t)*stack) : NULL;
	gt_sym_object_name(r->sym, obj, def ? def->pcs : NULL, def ? def->n : 0, buf, size);
	return buf;   /* the address when nothing else names it */
}

/* ---- ordering ------------------------------------------------------------------------ */

/* The symbolized frames of a stack as one string: two stack ids whose PCs differ (two
 * calls on one line, a different inlining path) but read the same are one group. */
static const char *frames_key(struct report *r, uint32_t stack)
{
	static const char none[] = "";
	struct stack_def *def = stack_def_of(r, stack);
	if (def == NULL || def->pcs == NULL)
		return none;
	if (def->frames_key != NULL)
		return def->frames_key;
	struct gt_frame frames[REPORT_MAX_FRAMES];
	size_t n = gtr_frames_of(r, stack, frames);
	char *key = NULL;
	size_t len = 0;
	FILE *f = gt_report_must(open_memstream(&key, &len));
	for (size_t i = 0; i < n; i++)
		fprintf(f, "%s\t%s\t%u\n", frames[i].func, frames[i].file, frames[i].line);
	if (fclose(f) != 0)
		gt_report_must(NULL);
	def->frames_key = key;
	return key;
}

/* Folds the per-stack-id counters of each site into per-frame-list groups; the first stack
 * id of a group stands for it when frames are printed. */
static void group_stacks_by_frames(struct report *r, struct wait_site *s)
{
	/* groups found by a hash of their frames; a group whose hash another one took first
	 * by a scan (rare: 64-bit hashes) */
	struct gt_u64map index = { 0 };
	const char **keys = gt_report_must(malloc((s->n_stacks + 1) * sizeof *keys));
	size_t kept = 0;
	for (size_t i = 0; i < s->n_stacks; i++) {
		struct stack_stat *st = &s->stacks[i];
		const char *key = frames_key(r, st->stack);
		bool found;
		uint64_t *slot = gt_report_must(
			gt_u64map_slot(&index, gt_hash_bytes(key, strlen(key)), &found));
		size_t k = kept;   /* a new group, unless found */
		if (found && strcmp(keys[*slot - 1], key) == 0)
			k = *slot - 1;
		else if (found)
			for (k = 0; k < kept && strcmp(keys[k], key) != 0; k++)
				continue;
		if (k == kept) {
			if (!found)
				*slot = kept + 1;
			keys[kept] = key;
			s->stacks[kept++] = *st;
			continue;
		}
		struct stack_stat *group = &s->stacks[k];
		group->count += st->count;
		group->total_ns += st->total_ns;
		if (st->max_ns > group->max_ns)
			group->max_ns = st->max_ns;
	}
	s->n_stacks = kept;
	free(keys);
	gt_u64map_free(&index);
}

static int by_total_desc(const void *a, const void *b)
{
	const struct wait_site *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return x->key < y->key ? -1 : x->key > y->key;
}

static int stack_by_total_desc(const void *a, const void *b)
{
	const struct stack_stat *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static void sort_sites(struct report *r, struct wait_site *sites, size_t n)
{
	if (n == 0)   /* sites is NULL then, which qsort must not be given */
		return;
	qsort(sites, n, sizeof *sites, by_total_desc);
	for (size_t i = 0; i < n; i++)
		gtr_site_order(r, &sites[i]);
}

void gtr_site_order(struct report *r, struct wait_site *s)
{
	group_stacks_by_frames(r, s);
	gtr_holders_sort(s);
	if (s->n_stacks > 1)
		qsort(s->stacks, s->n_stacks, sizeof *s->stacks, stack_by_total_desc);
}

uint64_t gtr_thread_alive_ns(const struct report *r, const struct thread_row *t)
{
	return (t->t->end_seen ? t->last_ns : r->end_ns) - t->first_ns;
}

/* Still in a wait when the capture ends. */
bool gtr_waiting_at_end(const struct thread_row *t)
{
	return !t->t->end_seen && t->t->wait.open;
}

/* A wait still open when the capture ends is waiting, not running: its time so far is
 * charged to the thread's class, as the "still waiting" list says.  Not to an object or
 * syscall site: those count completed waits. */
static void charge_open_waits(struct report *r)
{
	for (size_t i = 0; i < r->n_threads; i++) {
		struct thread_row *t = &r->threads[i];
		if (!gtr_waiting_at_end(t))
			continue;
		const struct gt_tracked_wait *w = &t->t->wait;
		enum wait_class c = w->syscall ? WAIT_SYSCALL : class_of_block(w->kind);
		t->wait_ns[c] += r->end_ns > t->wait_since_ns ? r->end_ns - t->wait_since_ns : 0;
		t->n_waits[c]++;
	}
}

/* Alive and not inside a traced wait: on a CPU or runnable. */
uint64_t gtr_thread_running_ns(const struct report *r, const struct thread_row *t)
{
	uint64_t alive = gtr_thread_alive_ns(r, t), waited = 0;
	for (int c = 0; c < WAIT_CLASS_COUNT; c++)
		waited += t->wait_ns[c];
	return alive > waited ? alive - waited : 0;
}

/* Each thread's time on a CPU: from each switch-in to its switch-out or exit (a thread
 * cannot migrate while on a CPU; the records are in time order). */
static void add_on_cpu(struct report *r, const char *path)
{
	struct gt_kernel_switch *v;
	size_t n;
	struct gt_kernel_counts c;
	char err[sizeof r->kernel_line - 16];
	if (gt_kernel_switches(path, &v, &n, &c, err, sizeof err) != 0) {
		snprintf(r->kernel_line, sizeof r->kernel_line, "not used: %s", err);
		return;
	}
	gt_kernel_describe(&c, r->kernel_line, sizeof r->kernel_line);
	struct gt_u64map since = { 0 };   /* tid -> time of its switch-in + 1, 0: off */
	bool found;
	for (size_t i = 0; i < n; i++) {
		const struct gt_kernel_switch *s = &v[i];
		if (s->what == GT_KSW_IN) {
			*(uint64_t *)gt_report_must(gt_u64map_slot(&since, s->tid, &found)) = s->time + 1;
			continue;
		}
		uint64_t *in = gt_u64map_find(&since, s->tid);
		if (in == NULL || *in == 0)
			continue;
		uint64_t *total = gt_report_must(gt_u64map_slot(&r->on_cpu, s->tid, &found));
		*total += s->time + 1 > *in ? s->time + 1 - *in : 0;
		*in = 0;
	}
	gt_u64map_free(&since);
	free(v);
	r->kernel = true;
}

uint64_t gtr_thread_on_cpu_ns(const struct report *r, const struct thread_row *t)
{
	const uint64_t *ns = gt_u64map_find(&r->on_cpu, t->t->tid);
	return ns ? *ns : 0;
}

/* ---- entry --------------------------------------------------------------------------- */

static void free_report(struct report *r)
{
	struct site_table *tables[] = { &r->objects, &r->syscalls };
	for (size_t t = 0; t < 2; t++) {
		for (size_t i = 0; i < tables[t]->n; i++) {
			free(tables[t]->v[i].stacks);
			gtr_holders_free(&tables[t]->v[i]);
		}
		free(tables[t]->v);
		gt_u64map_free(&tables[t]->by_key);
	}
	free(r->threads);
	gtr_holds_free(r);
	gtr_order_free(r);
	gt_tracker_free(r->tracker);
	gt_u64map_free(&r->on_cpu);
	gt_u64map_free(&r->stack_index);
	gt_u64map_free(&r->first_use);
	for (size_t i = 0; i < r->n_stacks; i++) {
		free(r->stacks[i].pcs);
		free(r->stacks[i].frames_key);
	}
	free(r->stacks);
	if (r->sym != NULL)
		gt_sym_free(r->sym);
}

int gt_report_capture(const char *capture, const struct gt_report_options *opt, FILE *out,
		      char *err, size_t errlen)
{
	struct gt_capture *c = gt_capture_open(capture, err, errlen);
	if (c == NULL)
		return -1;
	const struct gt_file_header *h = gt_capture_header(c);
	struct report r = { .start_mono_ns = h->start_mono_ns,
			    .live_now_mono_ns = opt->live_now_mono_ns };
	gt_clock_init(&r.clock, h);
	gt_capture_stop(h, &r.stop);
	gt_process_name_from_header(&r.proc, h);
	r.sym = gt_sym_new(&(struct gt_sym_options){.debug_dirs = opt->debug_dirs});
	r.tracker = gt_report_must(gt_tracker_new());
	if (!gt_tracker_capture_header(r.tracker, 0, h))
		gt_report_must(NULL);
	if (r.sym == NULL) {
		snprintf(err, errlen, "cannot start the symbolizer");
		gt_capture_close(c);
		return -1;
	}
	struct gt_capture_stats st;
	gt_capture_stats(c, &st);
	r.window_tsc = st.window_tsc;   /* known once opened: the facts before it are a summary */
	struct gt_capture_record cr;
	while (gt_capture_next(c, &cr))
		add_fact(&r, &cr);
	/* killed: it lived, in the state its last facts left it, until it was reaped (by its
	 * parent: gt_capture_reaped, or by gotrace: its header) */
	uint64_t reaped = opt->reaped_mono_ns ? opt->reaped_mono_ns : h->reaped_mono_ns;
	uint64_t reaped_ns = reaped > h->start_mono_ns ? reaped - h->start_mono_ns : 0;
	if (!(h->flags & GT_FILE_FINALIZED) && !r.execd && reaped_ns > r.end_ns) {
		r.end_ns = reaped_ns;
		r.reaped = true;
	}
	rows_by_serial(&r);
	apply_clock_fit(&r);
	charge_open_waits(&r);
	if (opt->kernel != NULL)
		add_on_cpu(&r, opt->kernel);
	/* The indexes are not used after this point: sorting moves the sites. */
	sort_sites(&r, r.objects.v, r.objects.n);
	sort_sites(&r, r.syscalls.v, r.syscalls.n);
	gtr_holds_finish(&r);
	/* the CPU samples are in the trace only: unwound and symbolized at conversion */
	struct gt_go_trace t = { 0 };
	char terr[256];
	if (opt->trace != NULL && gt_go_trace_read(opt->trace, &t, terr, sizeof terr) == 0)
		gt_hot_collect(&t, &r.hot);
	/* FILE.gtkern beside FILE.gtcap (and beside the trace FILE) */
	char kernel[4096];
	size_t len = strlen(capture);
	if (len > 6 && strcmp(capture + len - 6, ".gtcap") == 0 && len < sizeof kernel - 16) {
		snprintf(kernel, sizeof kernel, "%.*s" GT_KERNEL_SUFFIX, (int)(len - 6), capture);
		gt_offcpu_collect(kernel, h->pid, r.sym, &r.offcpu);
	}
	if (opt->json)
		gtr_print_json(out, &r, h, capture, opt);
	else
		gtr_print_text(out, &r, h, capture, opt);
	gt_hot_free(&r.hot);
	gt_offcpu_free(&r.offcpu);
	gt_go_trace_free(&t);
	free_report(&r);
	gt_capture_close(c);
	return 0;
}
