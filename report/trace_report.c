/* gt_report_go_trace (report.h): the report from a Go trace alone, for `gotrace report TRACE`
 * when no capture was kept.
 *
 * One pass over the merged events with a small state machine per goroutine (running,
 * runnable, blocked, in a syscall): a block closes at its GoUnblock, a blocking syscall
 * (GoSysCall + GoSysBlock) at its GoSysExit.  Blocks are charged to the goroutine by kind and
 * to the blocking stack, grouped by its frames (function, file, line), as the capture report
 * groups them.  Lock addresses are not in a Go trace, hence "by stack". */
#include "gotrace_reader.h"
#include "hot_functions.h"
#include "report.h"
#include "common/grow.h"
#include "common/hash.h"
#include "common/u64map.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#define TRACE_REPORT_MAX_FRAMES 16u

enum block_class { /* goroutine time columns */
	BLOCK_SYNC,    /* GoBlockSync: mutex, rwlock, semaphore, barrier, join, futex */
	BLOCK_COND,    /* GoBlockCond */
	BLOCK_NET,     /* GoBlockNet: sockets and poll that blocked */
	BLOCK_SLEEP,   /* GoSleep */
	BLOCK_OTHER,   /* GoBlock, or waiting since before the trace (GoWaiting) */
	BLOCK_SYSCALL, /* GoSysCall + GoSysBlock ... GoSysExit */
	BLOCK_CLASS_COUNT
};

static const char *const block_class_name[BLOCK_CLASS_COUNT] = {
	"sync", "cond", "net", "sleep", "other", "syscall",
};

enum g_state { G_DEAD, G_RUNNABLE, G_RUNNING, G_BLOCKED };

struct goroutine {
	uint64_t id;
	bool seen, ended;
	enum g_state state;
	uint64_t since_ns;          /* when the current state began */
	uint8_t block;              /* enum block_class while G_BLOCKED */
	uint64_t block_stack;
	uint64_t syscall_ns, syscall_stack;   /* the last GoSysCall, until its GoSysBlock */
	uint64_t created_ns, end_ns;
	uint64_t label;             /* string id of its name */
	uint64_t start_stack;       /* GoCreate's new-stack: the start routine */
	uint64_t running_ns;
	uint64_t blocked_ns[BLOCK_CLASS_COUNT], n_blocked[BLOCK_CLASS_COUNT];
	uint64_t short_syscalls;    /* GoSysCall that did not block: no duration known */
};

struct stack_group {
	uint8_t block;
	uint64_t stack;             /* the first stack id with these frames */
	const char *key;            /* "func\tfile\tline\n"..., owned by trace_report.keys */
	uint64_t count, total_ns, max_ns;
};

/* Goroutines and groups are found through maps: memory grows with what the trace holds,
 * not with the ids it names. */
struct trace_report {
	const struct gt_go_trace *t;
	struct goroutine *g;        /* [0] unused; by id once sorted for printing */
	size_t n_g, cap_g;
	struct gt_u64map g_index;   /* goroutine id -> index in g */
	char **keys;                /* per stack of t->stacks, made when first needed */
	struct stack_group *groups;
	size_t n_groups, cap_groups;
	struct gt_u64map group_index; /* hash of (kind, frames) -> index + 1 of its first group */
	uint64_t end_ns;
	struct gt_hot hot;          /* from the CPU samples */
};

/* The goroutine of id, made when first met; valid until the next call. */
static struct goroutine *goroutine_of(struct trace_report *r, uint64_t id)
{
	if (id == 0)
		return NULL;
	bool found;
	uint64_t *index = gt_report_must(gt_u64map_slot(&r->g_index, id, &found));
	if (!found) {
		r->n_g += r->n_g == 0;   /* entry 0 stays unused */
		if (!gt_grow(&r->g, &r->cap_g, r->n_g + 1, sizeof *r->g))
			gt_report_must(NULL);
		*index = r->n_g++;
		r->g[*index] = (struct goroutine){ .id = id };
	}
	r->g[*index].seen = true;
	return &r->g[*index];
}

static int goroutine_by_id(const void *a, const void *b)
{
	const struct goroutine *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

static char *make_frames_key(const struct gt_go_trace *t, const struct gt_go_stack_def *s);

/* The frames of a stack as one string, made once per stack. */
static const char *frames_key(struct trace_report *r, uint64_t stack)
{
	static const char none[] = "";
	const struct gt_go_stack_def *s = gt_go_trace_stack(r->t, stack);
	if (s == NULL)
		return none;
	char **cached = &r->keys[s - r->t->stacks];
	if (*cached == NULL)
		*cached = make_frames_key(r->t, s);
	return *cached;
}

static char *make_frames_key(const struct gt_go_trace *t, const struct gt_go_stack_def *s)
{
	char *key = NULL;
	size_t len = 0;
	FILE *f = gt_report_must(open_memstream(&key, &len));
	for (size_t i = 0; i < s->n; i++)
		fprintf(f, "%s\t%s\t%" PRIu64 "\n", gt_go_trace_string(t, s->frames[i].func),
			gt_go_trace_string(t, s->frames[i].file), s->frames[i].line);
	if (fclose(f) != 0)
		gt_report_must(NULL);
	return key;
}

static bool group_is(const struct stack_group *g, uint8_t block, const char *key)
{
	return g->block == block && strcmp(g->key, key) == 0;
}

static void group_add(struct trace_report *r, uint8_t block, uint64_t stack, uint64_t ns)
{
	const char *key = frames_key(r, stack);
	/* Found through a hash of (kind, frames); a group whose hash another one took first is
	 * found by a scan (rare: 64-bit hashes). */
	uint64_t hash = gt_hash_bytes(key, strlen(key)) * BLOCK_CLASS_COUNT + block;
	bool found;
	uint64_t *slot = gt_report_must(gt_u64map_slot(&r->group_index, hash, &found));
	struct stack_group *g = found && group_is(&r->groups[*slot - 1], block, key)
					? &r->groups[*slot - 1] : NULL;
	for (size_t i = 0; found && i < r->n_groups && g == NULL; i++)
		if (group_is(&r->groups[i], block, key))
			g = &r->groups[i];
	if (g == NULL) {
		if (!gt_grow(&r->groups, &r->cap_groups, r->n_groups + 1, sizeof *r->groups))
			gt_report_must(NULL);
		g = &r->groups[r->n_groups++];
		*g = (struct stack_group){ .block = block, .stack = stack, .key = key };
		if (!found)
			*slot = r->n_groups;
	}
	g->count++;
	g->total_ns += ns;
	if (ns > g->max_ns)
		g->max_ns = ns;
}

static void stop_running(struct goroutine *g, uint64_t now)
{
	if (g->state == G_RUNNING)
		g->running_ns += now - g->since_ns;
}

static void block(struct goroutine *g, enum block_class c, uint64_t stack, uint64_t since,
		  uint64_t now)
{
	stop_running(g, now);
	g->state = G_BLOCKED;
	g->block = (uint8_t)c;
	g->block_stack = stack;
	g->since_ns = since;
}

static void unblock(struct trace_report *r, struct goroutine *g, uint64_t now)
{
	if (g->state != G_BLOCKED)
		return;
	uint64_t ns = now > g->since_ns ? now - g->since_ns : 0;
	g->blocked_ns[g->block] += ns;
	g->n_blocked[g->block]++;
	if (g->block != BLOCK_OTHER || g->block_stack != 0)
		group_add(r, g->block, g->block_stack, ns);
	g->state = G_RUNNABLE;
	g->since_ns = now;
}

static void add_event(struct trace_report *r, const struct gt_go_ev *e)
{
	struct goroutine *g = goroutine_of(r, e->g);
	uint64_t now = e->ns;
	r->end_ns = now;
	switch (e->kind) {
	case GT_GO_GO_CREATE: {
		struct goroutine *child = goroutine_of(r, e->args[0]);
		if (child != NULL) {
			child->state = G_RUNNABLE;
			child->created_ns = child->since_ns = now;
			child->start_stack = e->args[1];
		}
		break;
	}
	case GT_GO_GO_WAITING:
		if (g != NULL)
			block(g, BLOCK_OTHER, 0, now, now);
		break;
	case GT_GO_GO_START:
	case GT_GO_GO_START_LABEL: {
		struct goroutine *started = goroutine_of(r, e->args[0]);
		if (started == NULL)
			break;
		if (e->kind == GT_GO_GO_START_LABEL)
			started->label = e->args[2];
		started->state = G_RUNNING;
		started->since_ns = now;
		break;
	}
	case GT_GO_GO_END:
		if (g != NULL) {
			stop_running(g, now);
			g->state = G_DEAD;
			g->ended = true;
			g->end_ns = now;
		}
		break;
	case GT_GO_GO_SCHED:
	case GT_GO_GO_PREEMPT:
		if (g != NULL) {
			stop_running(g, now);
			g->state = G_RUNNABLE;
			g->since_ns = now;
		}
		break;
	case GT_GO_GO_BLOCK_SYNC:
	case GT_GO_GO_BLOCK_COND:
	case GT_GO_GO_BLOCK_NET:
	case GT_GO_GO_SLEEP:
	case GT_GO_GO_BLOCK:
		if (g != NULL) {
			enum block_class c = e->kind == GT_GO_GO_BLOCK_SYNC ? BLOCK_SYNC
					   : e->kind == GT_GO_GO_BLOCK_COND ? BLOCK_COND
					   : e->kind == GT_GO_GO_BLOCK_NET  ? BLOCK_NET
					   : e->kind == GT_GO_GO_SLEEP      ? BLOCK_SLEEP
									    : BLOCK_OTHER;
			block(g, c, e->stack, now, now);
		}
		break;
	case GT_GO_GO_SYSCALL:
		if (g != NULL) {
			g->short_syscalls++;
			g->syscall_ns = now;
			g->syscall_stack = e->stack;
		}
		break;
	case GT_GO_GO_SYSBLOCK:
		if (g != NULL) {
			/* the GoSysCall before it was a blocking one after all */
			if (g->short_syscalls > 0)
				g->short_syscalls--;
			block(g, BLOCK_SYSCALL, g->syscall_stack, g->syscall_ns, now);
		}
		break;
	case GT_GO_GO_UNBLOCK:
	case GT_GO_GO_SYSEXIT: {
		struct goroutine *woken = goroutine_of(r, e->kind == GT_GO_GO_UNBLOCK ? e->args[0]
										    : e->g);
		if (woken != NULL)
			unblock(r, woken, now);
		break;
	}
	default:
		break;
	}
}

/* A goroutine still blocked when the trace ends is waiting, not running: its time so far
 * goes to its kind, as the "still blocked" list says (not to a stack group: those count
 * completed blocks). */
static void charge_open_blocks(struct trace_report *r)
{
	for (size_t i = 1; i < r->n_g; i++) {
		struct goroutine *g = &r->g[i];
		if (!g->seen || g->state != G_BLOCKED)
			continue;
		g->blocked_ns[g->block] += r->end_ns > g->since_ns ? r->end_ns - g->since_ns : 0;
		g->n_blocked[g->block]++;
	}
}

/* ---- names and order ------------------------------------------------------------------- */

static const char *routine_of(const struct trace_report *r, const struct goroutine *g)
{
	const struct gt_go_stack_def *s = gt_go_trace_stack(r->t, g->start_stack);
	if (s == NULL || s->n == 0)
		return "-";
	return gt_go_trace_string(r->t, s->frames[0].func);
}

static uint64_t alive_ns(const struct trace_report *r, const struct goroutine *g)
{
	uint64_t end = g->ended ? g->end_ns : r->end_ns;
	return end > g->created_ns ? end - g->created_ns : 0;
}

static uint64_t running_ns(const struct trace_report *r, const struct goroutine *g)
{
	uint64_t ns = g->running_ns;
	if (g->state == G_RUNNING && r->end_ns > g->since_ns)
		ns += r->end_ns - g->since_ns;
	return ns;
}

static int group_by_total_desc(const void *a, const void *b)
{
	const struct stack_group *x = a, *y = b;
	if (x->total_ns != y->total_ns)
		return x->total_ns < y->total_ns ? 1 : -1;
	return x->stack < y->stack ? -1 : x->stack > y->stack;
}

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

/* ---- text ----------------------------------------------------------------------------- */

static const char by_stack_heading[] =
	"by stack (lock addresses are only in the capture: use --keep-capture)";

static void text_stack(FILE *out, const struct trace_report *r, uint64_t stack)
{
	const struct gt_go_stack_def *s = gt_go_trace_stack(r->t, stack);
	char line[2200];
	if (s == NULL || s->n == 0)
		fprintf(out, "        (no stack recorded)\n");
	for (size_t i = 0; s != NULL && i < s->n && i < TRACE_REPORT_MAX_FRAMES; i++) {
		gt_report_frame_text(gt_go_trace_string(r->t, s->frames[i].func),
				     gt_go_trace_string(r->t, s->frames[i].file), s->frames[i].line,
				     line, sizeof line);
		fprintf(out, "        %s\n", line);
	}
}

static void print_text(FILE *out, const struct trace_report *r, const char *trace,
		       const struct gt_report_options *opt)
{
	unsigned top = opt->top ? opt->top : 10;
	fprintf(out, "gotrace report (from the Go trace alone: no capture beside it)\n"
		"  trace:    %s\n  recorded: %.3f s\n"
		"  running = on a CPU in the trace; blocked = waiting until an unblock\n\n",
		trace, (double)r->end_ns / 1e9);
	/* the start routine column is as wide as its longest name: never cut */
	int width = 24;
	for (size_t i = 1; i < r->n_g; i++)
		if (r->g[i].seen && (int)strlen(routine_of(r, &r->g[i])) > width)
			width = (int)strlen(routine_of(r, &r->g[i]));
	fprintf(out, "Goroutines (one per thread)\n  %-4s %-15s %-*s %10s %10s", "g", "name",
		width, "start routine", "alive ms", "running");
	for (int c = 0; c < BLOCK_CLASS_COUNT; c++)
		fprintf(out, " %10s", block_class_name[c]);
	fputc('\n', out);
	for (size_t i = 1; i < r->n_g; i++) {
		const struct goroutine *g = &r->g[i];
		if (!g->seen)
			continue;
		const char *name = gt_go_trace_string(r->t, g->label);
		fprintf(out, "  %-4" PRIu64 " %-15s %-*s %10.3f %10.3f", g->id,
			name[0] ? name : "-", width, routine_of(r, g), ms(alive_ns(r, g)),
			ms(running_ns(r, g)));
		for (int c = 0; c < BLOCK_CLASS_COUNT; c++)
			fprintf(out, " %10.3f", ms(g->blocked_ns[c]));
		fputc('\n', out);
	}

	fprintf(out, "\nBlocking, %s\n", by_stack_heading);
	if (r->n_groups == 0)
		fprintf(out, "  none: no goroutine blocked\n");
	else
		fprintf(out, "  %-3s %-9s %8s %12s %10s %10s\n", "#", "kind", "waits", "total ms",
			"mean ms", "max ms");
	for (size_t i = 0; i < r->n_groups && i < top; i++) {
		const struct stack_group *s = &r->groups[i];
		fprintf(out, "  %-3zu %-9s %8" PRIu64 " %12.3f %10.3f %10.3f\n", i + 1,
			block_class_name[s->block], s->count, ms(s->total_ns),
			ms(s->total_ns) / (double)s->count, ms(s->max_ns));
		text_stack(out, r, s->stack);
	}
	if (r->n_groups > top)
		fprintf(out, "  ... and %zu more\n", r->n_groups - top);

	bool header = false;
	for (size_t i = 1; i < r->n_g; i++) {
		const struct goroutine *g = &r->g[i];
		if (!g->seen || g->state != G_BLOCKED)
			continue;
		if (!header)
			fprintf(out, "\nGoroutines still blocked when the trace ends\n");
		header = true;
		const char *name = gt_go_trace_string(r->t, g->label);
		fprintf(out, "  g %" PRIu64 " (%s) since %.3f ms, %s, at:\n", g->id,
			name[0] ? name : "-", ms(g->since_ns), block_class_name[g->block]);
		text_stack(out, r, g->block_stack);
	}
	gt_hot_print_text(out, &r->hot, opt->top);
	fprintf(out, "\nLock, condvar and semaphore addresses, fd kinds and syscall names are only "
		"in the capture: `gotrace run --keep-capture` keeps it as %s.gtcap.\n", trace);
}

/* ---- JSON ----------------------------------------------------------------------------- */

static void json_stack(FILE *out, const struct trace_report *r, uint64_t stack)
{
	const struct gt_go_stack_def *s = gt_go_trace_stack(r->t, stack);
	fputc('[', out);
	for (size_t i = 0; s != NULL && i < s->n && i < TRACE_REPORT_MAX_FRAMES; i++) {
		fprintf(out, "%s{\"func\":", i ? "," : "");
		gt_report_json_string(out, gt_go_trace_string(r->t, s->frames[i].func));
		fputs(",\"file\":", out);
		gt_report_json_string(out, gt_go_trace_string(r->t, s->frames[i].file));
		fprintf(out, ",\"line\":%" PRIu64 ",\"pc\":\"%#" PRIx64 "\"}", s->frames[i].line,
			s->frames[i].pc);
	}
	fputc(']', out);
}

static void print_json(FILE *out, const struct trace_report *r, const char *trace,
		       const struct gt_report_options *opt)
{
	unsigned top = opt->top ? opt->top : 10;
	fputs("{\"trace\":", out);
	gt_report_json_string(out, trace);
	fprintf(out, ",\"source\":\"go trace\",\"recorded_ns\":%" PRIu64 ",\"goroutines\":[",
		r->end_ns);
	bool first = true;
	for (size_t i = 1; i < r->n_g; i++) {
		const struct goroutine *g = &r->g[i];
		if (!g->seen)
			continue;
		fprintf(out, "%s{\"g\":%" PRIu64 ",\"name\":", first ? "" : ",", g->id);
		first = false;
		gt_report_json_string(out, gt_go_trace_string(r->t, g->label));
		fputs(",\"start_routine\":", out);
		gt_report_json_string(out, routine_of(r, g));
		fprintf(out, ",\"alive_ns\":%" PRIu64 ",\"running_ns\":%" PRIu64, alive_ns(r, g),
			running_ns(r, g));
		for (int c = 0; c < BLOCK_CLASS_COUNT; c++)
			fprintf(out, ",\"%s_ns\":%" PRIu64 ",\"%s_waits\":%" PRIu64,
				block_class_name[c], g->blocked_ns[c], block_class_name[c],
				g->n_blocked[c]);
		fprintf(out, ",\"short_syscalls\":%" PRIu64 ",\"ended\":%s", g->short_syscalls,
			g->ended ? "true" : "false");
		if (g->state == G_BLOCKED) {
			fprintf(out, ",\"blocked_at_end\":{\"kind\":\"%s\",\"since_ns\":%" PRIu64
				",\"waited_ns\":%" PRIu64 ",\"frames\":", block_class_name[g->block],
				g->since_ns, r->end_ns > g->since_ns ? r->end_ns - g->since_ns : 0);
			json_stack(out, r, g->block_stack);
			fputc('}', out);
		}
		fputc('}', out);
	}
	fputs("],\"blocking_by_stack\":[", out);
	for (size_t i = 0; i < r->n_groups && i < top; i++) {
		const struct stack_group *s = &r->groups[i];
		fprintf(out, "%s{\"kind\":\"%s\",\"waits\":%" PRIu64 ",\"total_ns\":%" PRIu64
			",\"mean_ns\":%" PRIu64 ",\"max_ns\":%" PRIu64 ",\"frames\":", i ? "," : "",
			block_class_name[s->block], s->count, s->total_ns, s->total_ns / s->count,
			s->max_ns);
		json_stack(out, r, s->stack);
		fputc('}', out);
	}
	fputs("],\"note\":", out);
	gt_report_json_string(out, by_stack_heading);
	gt_hot_print_json(out, &r->hot, opt->top);
	fputs("}\n", out);
}

/* ---- entry ---------------------------------------------------------------------------- */

int gt_report_go_trace(const char *trace, const struct gt_report_options *opt, FILE *out,
		       char *err, size_t errlen)
{
	struct gt_go_trace t;
	if (gt_go_trace_read(trace, &t, err, errlen) != 0)
		return -1;
	struct trace_report r = { .t = &t };
	r.keys = gt_report_must(calloc(t.n_stacks + 1, sizeof *r.keys));
	for (size_t i = 0; i < t.n_ev; i++)
		if (t.ev[i].kind != GT_GO_CPU_SAMPLE)   /* instants: no goroutine changes */
			add_event(&r, &t.ev[i]);
	gt_hot_collect(&t, &r.hot);
	charge_open_blocks(&r);
	if (r.n_groups > 1) /* groups is NULL when nothing blocked: qsort must not see it */
		qsort(r.groups, r.n_groups, sizeof *r.groups, group_by_total_desc);
	if (r.n_g > 1)
		qsort(r.g + 1, r.n_g - 1, sizeof *r.g, goroutine_by_id);
	if (opt->json)
		print_json(out, &r, trace, opt);
	else
		print_text(out, &r, trace, opt);
	for (size_t i = 0; i < t.n_stacks; i++)
		free(r.keys[i]);
	free(r.keys);
	free(r.groups);
	gt_hot_free(&r.hot);
	free(r.g);
	gt_u64map_free(&r.g_index);
	gt_u64map_free(&r.group_index);
	gt_go_trace_free(&t);
	return 0;
}
