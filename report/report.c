/* report: see report.h.
 *
 * One pass over the merged facts.  Each thread has at most one open wait (a BLOCK_BEGIN
 * or a SYSCALL_BEGIN not yet ended); its end closes it and charges the time to the
 * thread, to the object (for lock-like kinds, per blocking stack, as mutrace counts), or
 * to the (syscall, stack) pair.  Stacks are symbolized once, when printed.  Times are taken
 * at the header's rate and corrected by the fit of the clock pairs once all are read, as
 * the trace's Frequency corrects its ticks (clock_fit.h). */
#include "report.h"

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

#define REPORT_MAX_FRAMES 16u

/* ---- what is collected ----------------------------------------------------------------- */

enum wait_class { /* thread time columns */
	WAIT_LOCK,     /* mutex, rwlock, semaphore, barrier, futex */
	WAIT_COND,
	WAIT_JOIN,
	WAIT_SLEEP,
	WAIT_SYSCALL,
	WAIT_CLASS_COUNT
};

static const char *const wait_class_name[WAIT_CLASS_COUNT] = {
	"lock", "cond", "join", "sleep", "syscall",
};

struct open_wait {
	bool open;
	bool syscall;
	uint8_t kind;        /* gt_block_kind, or gt_fd_kind for a syscall */
	uint32_t nr;
	uint32_t stack;
	uint64_t obj;
	uint64_t begin_ns;
};

struct thread_info {
	uint32_t serial;
	uint32_t tid;
	uint64_t start_routine;
	char name[16];
	bool seen, ended, existing;
	uint64_t first_ns, last_ns;
	uint64_t wait_ns[WAIT_CLASS_COUNT];
	uint64_t n_waits[WAIT_CLASS_COUNT];
	struct open_wait wait;
};

struct stack_stat {
	uint32_t stack;
	uint64_t count, total_ns, max_ns;
};

/* A contended object, or a (syscall, stack) pair: the same counters. */
struct wait_site {
	uint64_t key;        /* object address, or syscall number */
	uint8_t kind;        /* gt_block_kind for objects, gt_fd_kind for syscalls */
	size_t same_key;     /* index + 1 of the previous site of this key (another kind) */
	uint64_t count, total_ns, max_ns;
	struct stack_stat *stacks;
	size_t n_stacks, cap_stacks;
};

/* Sites found by key (a u64 map to the newest site of that key), then by kind along the
 * sites of the same key: a program may contend on many objects. */
struct site_table {
	struct wait_site *v;
	size_t n, cap;
	struct gt_u64map by_key;  /* key -> index + 1 into v of its newest site */
};

struct stack_def {
	uint64_t *pcs;        /* a copy: a record lives only until the reader's next one */
	uint32_t n;
	char *frames_key;     /* symbolized "func\tfile\tline\n"..., made when first needed */
};

/* Threads and stacks are found by their ids through maps: memory grows with the ids a
 * capture holds, not with their values. */
struct report {
	struct thread_info *threads;    /* [0] unused; by serial once sorted for printing */
	size_t n_threads, cap_threads;
	struct gt_u64map thread_index;  /* serial -> index in threads */
	struct site_table objects, syscalls;
	struct stack_def *stacks;
	size_t n_stacks, cap_stacks;
	struct gt_u64map stack_index;   /* stack id -> index + 1 in stacks */
	struct gt_symbolizer *sym;
	struct gt_clock clock;
	uint64_t end_ns;
	uint64_t dropped_facts, stacks_lost, threads_lost, waiters_lost, reentry_lost, waits_unshown;
	struct gt_convert_stop stop;    /* from the header: it survives when no record fits */
	bool execd;                     /* the last exec announced did not fail */
	struct gt_process_name proc;    /* the last name recorded (the header's before one) */
	char inherited[16];             /* the first comm recorded: threads start with it */
	bool proc_named;
	bool kernel;                    /* on_cpu holds the kernel's times */
	struct gt_u64map on_cpu;        /* tid -> ns on a CPU, by the kernel's switches */
	char kernel_line[256];          /* what the kernel records are, or why not used */
	struct gt_hot hot;              /* from the trace's CPU samples, when a trace is given */
	struct gt_offcpu offcpu;        /* from the kernel records kept beside */
};

void *gt_report_must(void *p)
{
	if (p == NULL) {
		fputs("gotrace report: out of memory\n", stderr);
		exit(1);
	}
	return p;
}

static void *grow(void *array, size_t *n, size_t want, size_t elem)
{
	if (!gt_grow(&array, n, want, elem))
		gt_report_must(NULL);
	return array;
}

/* The thread of serial, made when first met; valid until the next call. */
static struct thread_info *thread_of(struct report *r, uint32_t serial)
{
	if (serial == 0 || serial >= (1u << 24))
		return NULL;
	bool found;
	uint64_t *index = gt_report_must(gt_u64map_slot(&r->thread_index, serial, &found));
	if (!found) {
		r->n_threads += r->n_threads == 0;   /* entry 0 stays unused */
		r->threads = grow(r->threads, &r->cap_threads, r->n_threads + 1,
				  sizeof *r->threads);
		*index = r->n_threads++;
		r->threads[*index].serial = serial;
	}
	return &r->threads[*index];
}

static struct stack_def *stack_def_of(const struct report *r, uint32_t stack)
{
	const uint64_t *index = stack ? gt_u64map_find(&r->stack_index, stack) : NULL;
	return index != NULL ? &r->stacks[*index - 1] : NULL;
}

static int thread_by_serial(const void *a, const void *b)
{
	const struct thread_info *x = a, *y = b;
	return x->serial < y->serial ? -1 : x->serial > y->serial;
}

static struct wait_site *site_of(struct site_table *t, uint64_t key, uint8_t kind)
{
	bool found;
	uint64_t *newest = gt_report_must(gt_u64map_slot(&t->by_key, key, &found));
	for (size_t i = *newest; i != 0; i = t->v[i - 1].same_key)
		if (t->v[i - 1].kind == kind)
			return &t->v[i - 1];
	t->v = grow(t->v, &t->cap, t->n + 1, sizeof *t->v);
	t->v[t->n] = (struct wait_site){ .key = key, .kind = kind, .same_key = *newest };
	*newest = ++t->n;
	return &t->v[t->n - 1];
}

static void site_add(struct wait_site *s, uint32_t stack, uint64_t ns)
{
	s->count++;
	s->total_ns += ns;
	if (ns > s->max_ns)
		s->max_ns = ns;
	struct stack_stat *st = NULL;
	for (size_t i = 0; i < s->n_stacks && st == NULL; i++)
		if (s->stacks[i].stack == stack)
			st = &s->stacks[i];
	if (st == NULL) {
		s->stacks = grow(s->stacks, &s->cap_stacks, s->n_stacks + 1, sizeof *s->stacks);
		st = &s->stacks[s->n_stacks++];
		*st = (struct stack_stat){ .stack = stack };
	}
	st->count++;
	st->total_ns += ns;
	if (ns > st->max_ns)
		st->max_ns = ns;
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

static bool is_object_kind(uint8_t kind)
{
	return kind != GT_BK_JOIN && kind != GT_BK_SLEEP;
}

static void close_wait(struct report *r, struct thread_info *t, uint64_t now_ns)
{
	struct open_wait *w = &t->wait;
	uint64_t ns = now_ns > w->begin_ns ? now_ns - w->begin_ns : 0;
	enum wait_class c = w->syscall ? WAIT_SYSCALL : class_of_block(w->kind);
	t->wait_ns[c] += ns;
	t->n_waits[c]++;
	if (w->syscall) {
		site_add(site_of(&r->syscalls, w->nr, w->kind), w->stack, ns);
	} else if (is_object_kind(w->kind)) {
		/* Read and write waits on one rwlock are the same object. */
		uint8_t kind = w->kind == GT_BK_RWLOCK_RD ? GT_BK_RWLOCK_WR : w->kind;
		site_add(site_of(&r->objects, w->obj, kind), w->stack, ns);
	}
	w->open = false;
}

static void add_fact(struct report *r, const struct gt_capture_record *cr)
{
	const struct gt_rec *rec = cr->rec;
	uint64_t now = gt_clock_ns(&r->clock, cr->tsc);
	struct thread_info *t = thread_of(r, rec->thread);
	if (now > r->end_ns)
		r->end_ns = now;
	if (t != NULL) {
		if (!t->seen) {
			t->seen = true;
			t->first_ns = now;
		}
		t->last_ns = now;
	}

	switch (rec->type) {
	case GT_THREAD_NEW: {
		const struct gt_p_thread_new *p = cr->payload;
		struct thread_info *child = thread_of(r, p->child);
		if (child != NULL && child->start_routine == 0)
			child->start_routine = p->start_routine;
		break;
	}
	case GT_THREAD_START:
	case GT_THREAD_EXISTING: {
		const struct gt_p_thread_start *p = cr->payload;
		if (t == NULL)
			break;
		t->tid = p->tid;
		t->existing = rec->type == GT_THREAD_EXISTING;
		if (p->start_routine != 0)
			t->start_routine = p->start_routine;
		break;
	}
	case GT_THREAD_NAME:
		if (t != NULL) {
			memcpy(t->name, ((const struct gt_p_thread_name *)cr->payload)->name,
			       sizeof t->name);
			t->name[sizeof t->name - 1] = '\0';
		}
		break;
	case GT_THREAD_END:
		if (t != NULL) {
			if (t->wait.open)
				close_wait(r, t, now);
			t->ended = true;
		}
		break;
	case GT_BLOCK_BEGIN:
	case GT_SYSCALL_BEGIN:
		if (t == NULL)
			break;
		if (t->wait.open) /* its end was lost: close it here */
			close_wait(r, t, now);
		t->wait = (struct open_wait){ .open = true, .kind = rec->aux, .begin_ns = now };
		if (rec->type == GT_BLOCK_BEGIN) {
			const struct gt_p_block *p = cr->payload;
			t->wait.obj = p->obj;
			t->wait.stack = p->stack;
		} else {
			const struct gt_p_syscall *p = cr->payload;
			t->wait.syscall = true;
			t->wait.nr = p->nr;
			t->wait.stack = p->stack;
		}
		break;
	case GT_BLOCK_END:
	case GT_SYSCALL_END:
		if (t != NULL && t->wait.open && t->wait.syscall == (rec->type == GT_SYSCALL_END))
			close_wait(r, t, now);
		break;
	case GT_STACK: {
		const struct gt_p_stack *p = cr->payload;
		if (p->id == 0 || p->id >= (1u << 24) ||
		    sizeof *p + (size_t)p->nframes * 8 > cr->payload_len)
			break;
		bool found;
		uint64_t *index = gt_report_must(gt_u64map_slot(&r->stack_index, p->id, &found));
		if (!found) {
			r->stacks = grow(r->stacks, &r->cap_stacks, r->n_stacks + 1,
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
		if (!r->proc_named)
			memcpy(r->inherited, r->proc.comm, sizeof r->inherited);
		r->proc_named = true;
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
		struct thread_info *t = &r->threads[i];
		t->first_ns = gt_clock_fitted_ns(c, t->first_ns);
		t->last_ns = gt_clock_fitted_ns(c, t->last_ns);
		t->wait.begin_ns = gt_clock_fitted_ns(c, t->wait.begin_ns);
		for (int k = 0; k < WAIT_CLASS_COUNT; k++)
			t->wait_ns[k] = gt_clock_fitted_ns(c, t->wait_ns[k]);
	}
	struct site_table *tables[] = { &r->objects, &r->syscalls };
	for (size_t k = 0; k < 2; k++)
		for (size_t i = 0; i < tables[k]->n; i++) {
			struct wait_site *s = &tables[k]->v[i];
			s->total_ns = gt_clock_fitted_ns(c, s->total_ns);
			s->max_ns = gt_clock_fitted_ns(c, s->max_ns);
			for (size_t j = 0; j < s->n_stacks; j++) {
				s->stacks[j].total_ns = gt_clock_fitted_ns(c, s->stacks[j].total_ns);
				s->stacks[j].max_ns = gt_clock_fitted_ns(c, s->stacks[j].max_ns);
			}
		}
}

/* ---- names ---------------------------------------------------------------------------- */

static size_t frames_of(struct report *r, uint32_t stack, struct gt_frame *out)
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

static void frame_text(const struct gt_frame *f, char *buf, size_t size)
{
	gt_report_frame_text(f->func, f->file, f->line, buf, size);
}

static void routine_text(struct report *r, const struct thread_info *t, char *buf, size_t size)
{
	if (t->start_routine == 0) {
		/* a thread that existed before recording: its own name (comm) if it has one */
		bool named = t->name[0] && strcmp(t->name, r->inherited) != 0;
		snprintf(buf, size, "%s", t->serial == 1 ? "main" : named ? t->name
									   : "[pre-existing thread]");
		return;
	}
	struct gt_frame f = gt_sym_function(r->sym, t->start_routine);
	snprintf(buf, size, "%s", f.func);
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
	size_t n = frames_of(r, stack, frames);
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
	for (size_t i = 0; i < n; i++) {
		group_stacks_by_frames(r, &sites[i]);
		if (sites[i].n_stacks > 1)
			qsort(sites[i].stacks, sites[i].n_stacks, sizeof *sites[i].stacks,
			      stack_by_total_desc);
	}
}

static uint64_t thread_alive_ns(const struct report *r, const struct thread_info *t)
{
	return (t->ended ? t->last_ns : r->end_ns) - t->first_ns;
}

/* A wait still open when the capture ends is waiting, not running: its time so far is
 * charged to the thread's class, as the "still waiting" list says.  Not to an object or
 * syscall site: those count completed waits. */
static void charge_open_waits(struct report *r)
{
	for (size_t i = 1; i < r->n_threads; i++) {
		struct thread_info *t = &r->threads[i];
		if (!t->seen || t->ended || !t->wait.open)
			continue;
		enum wait_class c = t->wait.syscall ? WAIT_SYSCALL : class_of_block(t->wait.kind);
		t->wait_ns[c] += r->end_ns > t->wait.begin_ns ? r->end_ns - t->wait.begin_ns : 0;
		t->n_waits[c]++;
	}
}

/* Alive and not inside a traced wait: on a CPU or runnable. */
static uint64_t thread_running_ns(const struct report *r, const struct thread_info *t)
{
	uint64_t alive = thread_alive_ns(r, t), waited = 0;
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

static uint64_t thread_on_cpu_ns(const struct report *r, const struct thread_info *t)
{
	const uint64_t *ns = gt_u64map_find(&r->on_cpu, t->tid);
	return ns ? *ns : 0;
}

/* ---- text ---------------------------------------------------------------------------- */

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

static void text_stack(FILE *out, struct report *r, uint32_t stack, const char *indent)
{
	struct gt_frame frames[REPORT_MAX_FRAMES];
	size_t n = frames_of(r, stack, frames);
	char line[2048];
	if (n == 0)
		fprintf(out, "%s(no stack recorded)\n", indent);
	for (size_t i = 0; i < n; i++) {
		frame_text(&frames[i], line, sizeof line);
		fprintf(out, "%s%s\n", indent, line);
	}
}

static void text_sites(FILE *out, struct report *r, struct wait_site *sites, size_t n,
		       bool syscalls, const struct gt_report_options *opt)
{
	unsigned top = opt->top ? opt->top : 10, n_stacks = opt->stacks ? opt->stacks : 3;
	char name[32];
	fprintf(out, "  %-3s %-18s %-9s %8s %12s %10s %10s\n", "#",
		syscalls ? "syscall" : "object", syscalls ? "fd kind" : "kind", "waits",
		"total ms", "mean ms", "max ms");
	for (size_t i = 0; i < n && i < top; i++) {
		struct wait_site *s = &sites[i];
		char key[32];
		if (syscalls)
			snprintf(key, sizeof key, "%s", gt_report_syscall_name((uint32_t)s->key, name,
								   sizeof name));
		else
			snprintf(key, sizeof key, "%#" PRIx64, s->key);
		fprintf(out, "  %-3zu %-18s %-9s %8" PRIu64 " %12.3f %10.3f %10.3f\n", i + 1, key,
			syscalls ? gt_report_fd_kind_name(s->kind) : gt_report_block_kind_name(s->kind), s->count,
			ms(s->total_ns), ms(s->total_ns) / (double)s->count, ms(s->max_ns));
		for (size_t k = 0; k < s->n_stacks && k < n_stacks; k++) {
			struct stack_stat *st = &s->stacks[k];
			fprintf(out, "      %" PRIu64 " %s, %.3f ms total, %.3f ms mean, %.3f ms "
				"max, from:\n", st->count, st->count == 1 ? "wait" : "waits",
				ms(st->total_ns),
				ms(st->total_ns) / (double)st->count, ms(st->max_ns));
			text_stack(out, r, st->stack, "        ");
		}
		if (s->n_stacks > n_stacks)
			fprintf(out, "      ... and %zu more stacks\n", s->n_stacks - n_stacks);
	}
	if (n > top)
		fprintf(out, "  ... and %zu more\n", n - top);
}

static void print_text(FILE *out, struct report *r, const struct gt_file_header *h,
		       const char *capture, const struct gt_report_options *opt)
{
	static const char *const stack_modes[] = { "none", "fp", "unwind" };
	fprintf(out, "gotrace report\n  capture: %s\n", capture);
	if (opt->trace != NULL)
		fprintf(out, "  trace:   %s\n", opt->trace);
	fprintf(out, "  process: pid %u, %s (%s)\n  recorded: %.3f s, stacks: %s%s\n", h->pid,
		r->proc.name, r->proc.cmdline[0] ? r->proc.cmdline : h->exe_path,
		(double)r->end_ns / 1e9,
		h->stack_mode < 3 ? stack_modes[h->stack_mode] : "?",
		(h->flags & GT_FILE_FINALIZED) ? "" :
		r->execd ? ", the process exec'd another program: times end there" :
		", process did not finish normally: times end at its last fact");
	if ((h->flags & GT_FILE_RING) && h->ring_lost_tsc > h->start_tsc) {
		double hz = h->clock_source == GT_CLOCK_MONOTONIC || !h->tsc_hz ? 1e9 : (double)h->tsc_hz;
		fprintf(out, "  flight recorder: the window kept starts at %.3f s (what was alive or "
			"waiting then counts from there)\n", (double)(h->ring_lost_tsc - h->start_tsc) / hz);
	}
	fprintf(out, "  running = alive and not inside a traced wait (CPU time or runnable)\n");
	if (r->kernel)
		fprintf(out, "  on-CPU = on a CPU, by the kernel's context switches (%s)\n",
			r->kernel_line);
	else if (r->kernel_line[0])
		fprintf(out, "  kernel records %s\n", r->kernel_line);
	fputc('\n', out);

	/* the start routine column is as wide as its longest name: never cut */
	char routine[1100];
	int width = 24;
	for (size_t i = 1; i < r->n_threads; i++) {
		if (!r->threads[i].seen)
			continue;
		routine_text(r, &r->threads[i], routine, sizeof routine);
		if ((int)strlen(routine) > width)
			width = (int)strlen(routine);
	}
	fprintf(out, "Threads\n  %-4s %-7s %-15s %-*s %10s %10s", "#", "tid", "name", width,
		"start routine", "alive ms", "running");
	if (r->kernel)
		fprintf(out, " %10s", "on-CPU");
	for (int c = 0; c < WAIT_CLASS_COUNT; c++)
		fprintf(out, " %10s", wait_class_name[c]);
	fputc('\n', out);
	for (size_t i = 1; i < r->n_threads; i++) {
		struct thread_info *t = &r->threads[i];
		if (!t->seen)
			continue;
		routine_text(r, t, routine, sizeof routine);
		fprintf(out, "  %-4u %-7u %-15s %-*s %10.3f %10.3f", t->serial, t->tid,
			t->name[0] ? t->name : "-", width, routine, ms(thread_alive_ns(r, t)),
			ms(thread_running_ns(r, t)));
		if (r->kernel)
			fprintf(out, " %10.3f", ms(thread_on_cpu_ns(r, t)));
		for (int c = 0; c < WAIT_CLASS_COUNT; c++)
			fprintf(out, " %10.3f", ms(t->wait_ns[c]));
		fputc('\n', out);
	}

	fprintf(out, "\nContended objects (mutex, rwlock, condvar, semaphore, barrier, futex; "
		"by total wait)\n");
	if (r->objects.n == 0)
		fprintf(out, "  none: no thread waited on a lock, condvar or semaphore\n");
	else
		text_sites(out, r, r->objects.v, r->objects.n, false, opt);

	fprintf(out, "\nSyscalls (by total time, per call site)\n");
	if (r->syscalls.n == 0)
		fprintf(out, "  none traced\n");
	else
		text_sites(out, r, r->syscalls.v, r->syscalls.n, true, opt);

	bool header = false;
	for (size_t i = 1; i < r->n_threads; i++) {
		struct thread_info *t = &r->threads[i];
		if (!t->seen || t->ended || !t->wait.open)
			continue;
		if (!header)
			fprintf(out, "\nThreads still waiting when the capture ends\n");
		header = true;
		char name[32];
		fprintf(out, "  thread %u (%s) since %.3f ms in %s", t->serial,
			t->name[0] ? t->name : "-", ms(t->wait.begin_ns),
			t->wait.syscall ? gt_report_syscall_name(t->wait.nr, name, sizeof name) :
					  gt_report_block_kind_name(t->wait.kind));
		if (!t->wait.syscall && is_object_kind(t->wait.kind))
			fprintf(out, " %#" PRIx64, t->wait.obj);
		fputs(", at:\n", out);
		text_stack(out, r, t->wait.stack, "    ");
	}
	if (r->stop.stopped) {
		char line[256];
		gt_convert_stop_text(&r->stop, line, sizeof line);
		fprintf(out, "\nRecording: %s\n", line);
	}
	if (r->dropped_facts || r->stacks_lost || r->threads_lost || r->waiters_lost || r->reentry_lost)
		fprintf(out, "\nLosses: %" PRIu64 " facts dropped, %" PRIu64 " stacks, %" PRIu64
			" threads, %" PRIu64 " waits and %" PRIu64 " calls from signal handlers not "
			"recorded\n", r->dropped_facts, r->stacks_lost, r->threads_lost,
			r->waiters_lost, r->reentry_lost);
	if (r->waits_unshown)
		fprintf(out, "Not recorded (by an older recorder): %" PRIu64 " mutex waits whose holder "
			"released the mutex inside a condition wait\n", r->waits_unshown);
	gt_hot_print_text(out, &r->hot, opt->top);
	gt_offcpu_print_text(out, &r->offcpu, opt->top);
}

/* ---- JSON ---------------------------------------------------------------------------- */

void gt_report_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

static void json_stack(FILE *out, struct report *r, uint32_t stack)
{
	struct gt_frame frames[REPORT_MAX_FRAMES];
	size_t n = frames_of(r, stack, frames);
	fputc('[', out);
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "%s{\"func\":", i ? "," : "");
		gt_report_json_string(out, frames[i].func);
		fputs(",\"file\":", out);
		gt_report_json_string(out, frames[i].file);
		fprintf(out, ",\"line\":%u,\"pc\":\"%#" PRIx64 "\"}", frames[i].line, frames[i].pc);
	}
	fputc(']', out);
}

static void json_sites(FILE *out, struct report *r, struct wait_site *sites, size_t n,
		       bool syscalls, const struct gt_report_options *opt)
{
	unsigned top = opt->top ? opt->top : 10, n_stacks = opt->stacks ? opt->stacks : 3;
	char name[32];
	fputc('[', out);
	for (size_t i = 0; i < n && i < top; i++) {
		struct wait_site *s = &sites[i];
		fputs(i ? ",{" : "{", out);
		if (syscalls)
			fprintf(out, "\"syscall\":\"%s\",\"nr\":%" PRIu64 ",\"fd_kind\":\"%s\"",
				gt_report_syscall_name((uint32_t)s->key, name, sizeof name), s->key,
				gt_report_fd_kind_name(s->kind));
		else
			fprintf(out, "\"address\":\"%#" PRIx64 "\",\"kind\":\"%s\"", s->key,
				gt_report_block_kind_name(s->kind));
		fprintf(out, ",\"waits\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"mean_ns\":%" PRIu64
			",\"max_ns\":%" PRIu64 ",\"stacks\":[", s->count, s->total_ns,
			s->total_ns / s->count, s->max_ns);
		for (size_t k = 0; k < s->n_stacks && k < n_stacks; k++) {
			struct stack_stat *st = &s->stacks[k];
			fprintf(out, "%s{\"waits\":%" PRIu64 ",\"total_ns\":%" PRIu64
				",\"max_ns\":%" PRIu64 ",\"frames\":", k ? "," : "", st->count,
				st->total_ns, st->max_ns);
			json_stack(out, r, st->stack);
			fputc('}', out);
		}
		fputs("]}", out);
	}
	fputc(']', out);
}

static void print_json(FILE *out, struct report *r, const struct gt_file_header *h,
		       const char *capture, const struct gt_report_options *opt)
{
	fputs("{\"capture\":", out);
	gt_report_json_string(out, capture);
	if (opt->trace != NULL) {
		fputs(",\"trace\":", out);
		gt_report_json_string(out, opt->trace);
	}
	fprintf(out, ",\"pid\":%u,\"process\":", h->pid);
	gt_report_json_string(out, r->proc.name);
	fputs(",\"command\":", out);
	gt_report_json_string(out, r->proc.cmdline[0] ? r->proc.cmdline : h->exe_path);
	fprintf(out, ",\"recorded_ns\":%" PRIu64 ",\"finalized\":%s,\"execd\":%s,\"threads\":[",
		r->end_ns, (h->flags & GT_FILE_FINALIZED) ? "true" : "false",
		!(h->flags & GT_FILE_FINALIZED) && r->execd ? "true" : "false");
	bool first = true;
	for (size_t i = 1; i < r->n_threads; i++) {
		struct thread_info *t = &r->threads[i];
		if (!t->seen)
			continue;
		char routine[1100];
		routine_text(r, t, routine, sizeof routine);
		fprintf(out, "%s{\"serial\":%u,\"tid\":%u,\"name\":", first ? "" : ",", t->serial,
			t->tid);
		first = false;
		gt_report_json_string(out, t->name);
		fputs(",\"start_routine\":", out);
		gt_report_json_string(out, routine);
		fprintf(out, ",\"alive_ns\":%" PRIu64, thread_alive_ns(r, t));
		for (int c = 0; c < WAIT_CLASS_COUNT; c++)
			fprintf(out, ",\"%s_ns\":%" PRIu64 ",\"%s_waits\":%" PRIu64,
				wait_class_name[c], t->wait_ns[c], wait_class_name[c], t->n_waits[c]);
		fprintf(out, ",\"running_ns\":%" PRIu64 ",\"ended\":%s", thread_running_ns(r, t),
			t->ended ? "true" : "false");
		if (r->kernel)
			fprintf(out, ",\"on_cpu_ns\":%" PRIu64, thread_on_cpu_ns(r, t));
		if (!t->ended && t->wait.open) {
			char name[32];
			fputs(",\"waiting_at_end\":{\"in\":", out);
			gt_report_json_string(out, t->wait.syscall ? gt_report_syscall_name(t->wait.nr, name, sizeof name)
							 : gt_report_block_kind_name(t->wait.kind));
			fprintf(out, ",\"object\":\"%#" PRIx64 "\",\"since_ns\":%" PRIu64
				",\"waited_ns\":%" PRIu64 ",\"frames\":", t->wait.obj, t->wait.begin_ns,
				r->end_ns > t->wait.begin_ns ? r->end_ns - t->wait.begin_ns : 0);
			json_stack(out, r, t->wait.stack);
			fputc('}', out);
		}
		fputc('}', out);
	}
	fputs("],\"objects\":", out);
	json_sites(out, r, r->objects.v, r->objects.n, false, opt);
	fputs(",\"syscalls\":", out);
	json_sites(out, r, r->syscalls.v, r->syscalls.n, true, opt);
	fprintf(out, ",\"dropped_facts\":%" PRIu64 ",\"stacks_lost\":%" PRIu64
		",\"threads_lost\":%" PRIu64 ",\"waiters_lost\":%" PRIu64 ",\"reentry_lost\":%" PRIu64
		",\"waits_unshown\":%" PRIu64 ",\"write_failed\":%s",
		r->dropped_facts, r->stacks_lost, r->threads_lost, r->waiters_lost, r->reentry_lost,
		r->waits_unshown,
		r->stop.stopped ? "true" : "false");
	if (r->stop.stopped) {
		char line[256];
		gt_convert_stop_text(&r->stop, line, sizeof line);
		fprintf(out, ",\"stopped_early\":{\"errno\":%d,\"at_s\":%.6f,\"facts_lost\":%" PRIu64
			",\"max_capture_bytes\":%" PRIu64 ",\"text\":", r->stop.err, r->stop.at_seconds,
			r->stop.facts_lost, r->stop.bound_bytes);
		gt_report_json_string(out, line);
		fputc('}', out);
	}
	gt_hot_print_json(out, &r->hot, opt->top);
	gt_offcpu_print_json(out, &r->offcpu, opt->top);
	fputs("}\n", out);
}

/* ---- entry --------------------------------------------------------------------------- */

static void free_report(struct report *r)
{
	struct site_table *tables[] = { &r->objects, &r->syscalls };
	for (size_t t = 0; t < 2; t++) {
		for (size_t i = 0; i < tables[t]->n; i++)
			free(tables[t]->v[i].stacks);
		free(tables[t]->v);
		gt_u64map_free(&tables[t]->by_key);
	}
	free(r->threads);
	gt_u64map_free(&r->thread_index);
	gt_u64map_free(&r->on_cpu);
	gt_u64map_free(&r->stack_index);
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
	struct report r = { 0 };
	gt_clock_init(&r.clock, h);
	gt_capture_stop(h, &r.stop);
	gt_process_name_from_header(&r.proc, h);
	memcpy(r.inherited, r.proc.comm, sizeof r.inherited);
	r.sym = gt_sym_new(NULL);
	if (r.sym == NULL) {
		snprintf(err, errlen, "cannot start the symbolizer");
		gt_capture_close(c);
		return -1;
	}
	struct gt_capture_record cr;
	while (gt_capture_next(c, &cr))
		add_fact(&r, &cr);
	apply_clock_fit(&r);
	charge_open_waits(&r);
	if (opt->kernel != NULL)
		add_on_cpu(&r, opt->kernel);
	/* The indexes are not used after this point: sorting moves the sites and threads. */
	sort_sites(&r, r.objects.v, r.objects.n);
	sort_sites(&r, r.syscalls.v, r.syscalls.n);
	if (r.n_threads > 1)
		qsort(r.threads + 1, r.n_threads - 1, sizeof *r.threads, thread_by_serial);
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
		print_json(out, &r, h, capture, opt);
	else
		print_text(out, &r, h, capture, opt);
	gt_hot_free(&r.hot);
	gt_offcpu_free(&r.offcpu);
	gt_go_trace_free(&t);
	free_report(&r);
	gt_capture_close(c);
	return 0;
}
