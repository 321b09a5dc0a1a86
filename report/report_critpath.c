/* report_critpath: `gotrace report --critical-path`, the walk of encoder.h's gt_critpath over
 * a conversion of the run's captures (written nowhere), printed as text or JSON: the
 * breakdowns by state, thread, function, lock and syscall (each adding up to the interval),
 * then the segments. */
#include "report.h"

#include <gotrace/capture.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "encoder/encoder.h"
#include "names.h"

/* One row of a breakdown. */
struct row {
	char label[192];
	uint64_t ns;
};

struct breakdown {
	const char *title, *key;   /* its text heading, its JSON field */
	struct row *rows;
	size_t n, cap;
};

enum { BY_STATE, BY_THREAD, BY_FUNCTION, BY_LOCK, BY_SYSCALL, BY_COUNT };

static void add(struct breakdown *b, const char *label, uint64_t ns)
{
	size_t i = 0;
	while (i < b->n && strcmp(b->rows[i].label, label) != 0)
		i++;
	if (i == b->n) {
		gt_report_must(gt_grow(&b->rows, &b->cap, b->n + 1, sizeof *b->rows) ? b : NULL);
		snprintf(b->rows[b->n++].label, sizeof b->rows[i].label, "%s", label);
	}
	b->rows[i].ns += ns;
}

static int by_ns(const void *a, const void *b)
{
	const struct row *x = a, *y = b;
	return x->ns < y->ns ? 1 : x->ns > y->ns ? -1 : strcmp(x->label, y->label);
}

static void thread_text(const struct gt_cp_result *r, uint32_t i, char *buf, size_t size)
{
	const struct gt_cp_thread *t = &r->threads[i];
	snprintf(buf, size, "%s (pid %u, tid %u)", t->name[0] ? t->name : "thread", t->pid, t->tid);
}

static bool lock_kind(uint8_t kind)
{
	return kind == GT_BK_MUTEX || kind == GT_BK_RWLOCK_RD || kind == GT_BK_RWLOCK_WR ||
	       kind == GT_BK_COND || kind == GT_BK_SEM || kind == GT_BK_BARRIER ||
	       kind == GT_BK_FUTEX;
}

/* "mutex accounts_lock", "read (pipe)", "wait4 (child)", "sleep", "off-CPU (no hook)". */
static void wait_text(const struct gt_cp_wait *w, char *buf, size_t size)
{
	char nr[32];
	const char *sys = w->has_syscall ? gt_report_syscall_name(w->sys_nr, nr, sizeof nr) : NULL;
	if (lock_kind(w->kind) && w->object)
		snprintf(buf, size, "%s %s", gt_report_block_kind_name(w->kind), w->object);
	else if (lock_kind(w->kind))
		snprintf(buf, size, "%s 0x%" PRIx64, gt_report_block_kind_name(w->kind), w->obj);
	else if (w->kind == GT_CP_WAIT_NET)
		snprintf(buf, size, "%s (%s)", sys, gt_report_fd_kind_name(w->fd_kind));
	else if (w->kind == GT_CP_WAIT_CHILD)
		snprintf(buf, size, "%s (child)", sys);
	else if (w->kind == GT_CP_WAIT_UNTRACED)
		snprintf(buf, size, "off-CPU (no hook)");
	else if (sys)
		snprintf(buf, size, "%s", sys);
	else
		snprintf(buf, size, "%s", gt_report_block_kind_name(w->kind));
}

/* The segment's own wait when it is one of a kind (is), else the wait of another thread it
 * stands in for when that one is; NULL: none. */
static const struct gt_cp_wait *wait_of(const struct gt_cp_result *r, const struct gt_cp_segment *s,
					bool (*is)(const struct gt_cp_wait *))
{
	if (s->wait >= 0 && is(&r->waits[s->wait]))
		return &r->waits[s->wait];
	return s->via >= 0 && is(&r->waits[s->via]) ? &r->waits[s->via] : NULL;
}

static bool on_lock(const struct gt_cp_wait *w)
{
	return lock_kind(w->kind);
}

static bool in_syscall(const struct gt_cp_wait *w)
{
	return w->has_syscall || w->kind == GT_BK_SLEEP;
}

static void fill(const struct gt_cp_result *r, struct breakdown *by)
{
	char text[192];
	for (size_t i = 0; i < r->n_segments; i++) {
		const struct gt_cp_segment *s = &r->segments[i];
		add(&by[BY_STATE], gt_cp_state_names[s->state], s->ns);
		thread_text(r, s->thread, text, sizeof text);
		add(&by[BY_THREAD], text, s->ns);
		for (size_t k = 0; k < s->n_parts; k++) {
			const struct gt_cp_part *p = &r->parts[s->first_part + k];
			add(&by[BY_FUNCTION], p->function ? p->function : "(running, no CPU sample)", p->ns);
		}
		if (!s->n_parts) {
			snprintf(text, sizeof text, "(%s)", gt_cp_state_names[s->state]);
			add(&by[BY_FUNCTION], text, s->ns);
		}
		const struct gt_cp_wait *w = wait_of(r, s, on_lock);
		if (w)
			wait_text(w, text, sizeof text);
		else
			snprintf(text, sizeof text, "(no lock)");
		add(&by[BY_LOCK], text, s->ns);
		if ((w = wait_of(r, s, in_syscall)))
			wait_text(w, text, sizeof text);
		else
			snprintf(text, sizeof text, "(no syscall)");
		add(&by[BY_SYSCALL], text, s->ns);
	}
	for (int b = 0; b < BY_COUNT; b++)
		if (by[b].n > 1)
			qsort(by[b].rows, by[b].n, sizeof *by[b].rows, by_ns);
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

/* A breakdown's top rows, the rest summed in one, and the total. */
static void print_breakdown(FILE *out, const struct breakdown *b, uint64_t total, unsigned top)
{
	fprintf(out, "  By %s:\n", b->title);
	uint64_t rest = 0;
	for (size_t i = 0; i < b->n; i++) {
		if (i >= top) {
			rest += b->rows[i].ns;
			continue;
		}
		fprintf(out, "    %12.3f ms %5.1f%%  %s\n", ms(b->rows[i].ns),
			total ? 100.0 * (double)b->rows[i].ns / (double)total : 0, b->rows[i].label);
	}
	if (b->n > top)
		fprintf(out, "    %12.3f ms %5.1f%%  (%zu more)\n", ms(rest),
			total ? 100.0 * (double)rest / (double)total : 0, b->n - top);
}

static void header_text(FILE *out, const struct gt_cp_result *r)
{
	char who[192];
	thread_text(r, r->thread, who, sizeof who);
	fprintf(out, "Critical path of %s from %.6f s to %.6f s: %.3f ms\n", who,
		(double)r->start_ns / 1e9, (double)r->end_ns / 1e9, ms(r->end_ns - r->start_ns));
	if (!r->kernel)
		fprintf(out, "  without kernel records: running is the time outside traced waits, "
			     "runnable only where another thread was seen on the CPU\n");
}

static void segment_text(FILE *out, const struct gt_cp_result *r, const struct gt_cp_segment *s)
{
	char who[192], what[192] = "", site[256] = "";
	thread_text(r, s->thread, who, sizeof who);
	if (s->wait >= 0)
		wait_text(&r->waits[s->wait], what, sizeof what);
	if (s->state == GT_CP_RUNNABLE && s->cpu_holder >= 0) {
		char holder[160];
		thread_text(r, (uint32_t)s->cpu_holder, holder, sizeof holder);
		snprintf(what, sizeof what, "CPU held by %s", holder);
	}
	if (s->state == GT_CP_RUNNING && s->n_parts && r->parts[s->first_part].function)
		snprintf(what, sizeof what, "%s", r->parts[s->first_part].function);
	if (s->wait >= 0 && r->waits[s->wait].site)
		snprintf(site, sizeof site, " at %s", r->waits[s->wait].site);
	char via[200] = "";
	if (s->via >= 0) {
		char v[160];
		wait_text(&r->waits[s->via], v, sizeof v);
		snprintf(via, sizeof via, " [for %s]", v);
	}
	fprintf(out, "    %12.3f %12.3f  %-14s %s%s%s%s%s\n", ms(s->start_ns), ms(s->ns),
		gt_cp_state_names[s->state], who, what[0] ? ": " : "", what, site, via);
}

/* The longest segments, in time order: at most n. */
static void print_segments(FILE *out, const struct gt_cp_result *r, size_t n)
{
	uint64_t floor = 0;
	if (r->n_segments > n) {
		/* the n-th longest duration: segments at least that long are shown */
		uint64_t *d = gt_report_must(malloc(r->n_segments * sizeof *d));
		for (size_t i = 0; i < r->n_segments; i++)
			d[i] = r->segments[i].ns;
		for (size_t i = 0; i < n; i++)   /* a partial selection: n is small */
			for (size_t j = i + 1; j < r->n_segments; j++)
				if (d[j] > d[i]) {
					uint64_t x = d[i];
					d[i] = d[j];
					d[j] = x;
				}
		floor = d[n - 1];
		free(d);
	}
	fprintf(out, "  Path: %zu segments%s (ms from the start, ms long):\n", r->n_segments,
		r->n_segments > n ? ", the longest in time order" : "");
	size_t shown = 0;
	for (size_t i = 0; i < r->n_segments && shown < n; i++)
		if (r->segments[i].ns >= floor) {
			segment_text(out, r, &r->segments[i]);
			shown++;
		}
}

static void json_breakdown(FILE *out, const struct breakdown *b)
{
	fprintf(out, ",\"by_%s\":[", b->key);
	for (size_t i = 0; i < b->n; i++) {
		fprintf(out, "%s{\"name\":", i ? "," : "");
		gt_report_json_string(out, b->rows[i].label);
		fprintf(out, ",\"ns\":%" PRIu64 "}", b->rows[i].ns);
	}
	fputc(']', out);
}

static void json_segment(FILE *out, const struct gt_cp_result *r, const struct gt_cp_segment *s)
{
	const struct gt_cp_thread *t = &r->threads[s->thread];
	char text[192];
	fprintf(out, "{\"thread\":");
	gt_report_json_string(out, t->name);
	fprintf(out, ",\"pid\":%u,\"tid\":%u,\"state\":\"%s\",\"start_ns\":%" PRIu64
		",\"ns\":%" PRIu64, t->pid, t->tid, gt_cp_state_names[s->state], s->start_ns, s->ns);
	if (s->wait >= 0) {
		wait_text(&r->waits[s->wait], text, sizeof text);
		fprintf(out, ",\"wait\":");
		gt_report_json_string(out, text);
		if (r->waits[s->wait].site) {
			fprintf(out, ",\"site\":");
			gt_report_json_string(out, r->waits[s->wait].site);
		}
	}
	if (s->via >= 0) {
		wait_text(&r->waits[s->via], text, sizeof text);
		fprintf(out, ",\"for\":");
		gt_report_json_string(out, text);
	}
	if (s->cpu_holder >= 0)
		fprintf(out, ",\"cpu_held_by_tid\":%u", r->threads[s->cpu_holder].tid);
	fprintf(out, ",\"functions\":[");
	for (size_t k = 0; k < s->n_parts; k++) {
		const struct gt_cp_part *p = &r->parts[s->first_part + k];
		fprintf(out, "%s{\"function\":", k ? "," : "");
		if (p->function)
			gt_report_json_string(out, p->function);
		else
			fputs("null", out);
		fprintf(out, ",\"ns\":%" PRIu64 "}", p->ns);
	}
	fprintf(out, "]}");
}

static void print_json(FILE *out, const struct gt_cp_result *r, struct breakdown *by)
{
	const struct gt_cp_thread *t = &r->threads[r->thread];
	fprintf(out, "{\"critical_path\":{\"thread\":");
	gt_report_json_string(out, t->name);
	fprintf(out, ",\"pid\":%u,\"tid\":%u,\"start_ns\":%" PRIu64 ",\"end_ns\":%" PRIu64
		",\"ns\":%" PRIu64 ",\"kernel\":%s,\"samples\":%s", t->pid, t->tid, r->start_ns,
		r->end_ns, r->end_ns - r->start_ns, r->kernel ? "true" : "false",
		r->samples ? "true" : "false");
	for (int b = 0; b < BY_COUNT; b++)
		json_breakdown(out, &by[b]);
	fprintf(out, ",\"segments\":[");
	for (size_t i = 0; i < r->n_segments; i++) {
		if (i)
			fputc(',', out);
		json_segment(out, r, &r->segments[i]);
	}
	fprintf(out, "]}}\n");
}

void gt_report_critical_path_print(FILE *out, const struct gt_cp_result *r,
				   const struct gt_report_options *opt, bool brief)
{
	struct breakdown by[BY_COUNT] = {
		[BY_STATE] = {.title = "state", .key = "state"},
		[BY_THREAD] = {.title = "thread", .key = "thread"},
		[BY_FUNCTION] = {.title = "function", .key = "function"},
		[BY_LOCK] = {.title = "lock", .key = "lock"},
		[BY_SYSCALL] = {.title = "syscall", .key = "syscall"},
	};
	fill(r, by);
	unsigned top = brief ? 3 : opt->top ? opt->top : 10;
	if (opt->json) {
		print_json(out, r, by);
	} else {
		header_text(out, r);
		for (int b = 0; b < BY_COUNT; b++)
			if (!brief || b != BY_FUNCTION || r->samples)
				print_breakdown(out, &by[b], r->end_ns - r->start_ns, top);
		if (!brief)
			print_segments(out, r, 3 * (size_t)top);
	}
	for (int b = 0; b < BY_COUNT; b++)
		free(by[b].rows);
}

int gt_report_critical_path(const char *const *captures, size_t n,
			    const struct gt_report_options *opt, const struct gt_cp_query *q,
			    FILE *out, char *err, size_t errlen)
{
	struct gt_critpath *cp = gt_report_must(gt_critpath_new());
	struct gt_convert_options copt = {.kernel_path = opt->kernel, .critical_path = cp,
					  .debug_dirs = opt->debug_dirs,
					  .format = gt_trace_format_default()->format};
	struct gt_convert_set_summary sum;
	/* the model's decisions, the trace they make written nowhere */
	int rc = gt_convert_files(captures, n, "/dev/null", &copt, &sum, err, errlen);
	gt_convert_set_summary_free(&sum);
	struct gt_cp_result r;
	if (rc == 0)
		rc = gt_critpath_walk(cp, q, &r, err, errlen);
	if (rc == 0)   /* its strings are cp's */
		gt_report_critical_path_print(out, &r, opt, false);
	gt_cp_result_free(&r);
	gt_critpath_free(cp);
	return rc;
}
