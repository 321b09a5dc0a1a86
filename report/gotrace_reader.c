/* gotrace_reader: see gotrace_reader.h.
 *
 * One pass over the file: each batch's events take their P and the P's goroutine context
 * (kept across batches of one P, as Go's parsers do); then all timed events are sorted by
 * ticks, ties in file order, which is the merge for traces whose dependencies have strictly
 * smaller timestamps (gotrace's, §2.3). */
#include "gotrace_reader.h"

#include "common/grow.h"
#include "common/u64map.h"
#include "common/varint.h"

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Wire type bytes outside gowire.h's table that still matter for framing or G context. */
enum {
	WIRE_TIMER_GOROUTINE = 35,
	WIRE_GO_STOP = 16,
	WIRE_GO_BLOCK_SEND = 22,
	WIRE_GO_BLOCK_RECV = 23,
	WIRE_GO_BLOCK_SELECT = 24,
	WIRE_GO_START_LOCAL = 38,
	WIRE_GO_BLOCK_GC = 42,
};

struct parser {
	const uint8_t *p, *end, *start;
	uint64_t *vals;
	size_t n_vals, cap_vals;
	struct gt_u64map ctx;       /* P -> its goroutine context */
	size_t cap_ev, cap_strings, cap_stacks;
	char *err;
	size_t errlen;
};

static int failf(struct parser *ps, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int failf(struct parser *ps, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(ps->err, ps->errlen, fmt, ap);
	va_end(ap);
	return -1;
}

static int varint(struct parser *ps, uint64_t *v)
{
	size_t n = gt_uvarint_get(ps->p, ps->end, v);
	if (n == 0)
		return failf(ps, "bad varint at offset %#zx", (size_t)(ps->p - ps->start));
	ps->p += n;
	return 0;
}

static int push_value(struct parser *ps, uint64_t v)
{
	if (!gt_grow(&ps->vals, &ps->cap_vals, ps->n_vals + 1, sizeof *ps->vals))
		return failf(ps, "out of memory");
	ps->vals[ps->n_vals++] = v;
	return 0;
}

/* The values of one event: count + 1 inline varints, or (count field 3) a byte length and
 * varints filling exactly that many bytes. */
static int read_values(struct parser *ps, unsigned count)
{
	ps->n_vals = 0;
	uint64_t v;
	if (count < 3) {
		for (unsigned i = 0; i <= count; i++)
			if (varint(ps, &v) != 0 || push_value(ps, v) != 0)
				return -1;
		return 0;
	}
	uint64_t len;
	if (varint(ps, &len) != 0)
		return -1;
	if (len > (uint64_t)(ps->end - ps->p))
		return failf(ps, "event length %llu past the end of the file",
			     (unsigned long long)len);
	const uint8_t *stop = ps->p + len;
	while (ps->p < stop)
		if (varint(ps, &v) != 0 || push_value(ps, v) != 0)
			return -1;
	if (ps->p != stop)
		return failf(ps, "event has wrong length at offset %#zx", (size_t)(ps->p - ps->start));
	return 0;
}

static uint64_t *context_of(struct parser *ps, uint64_t p)
{
	bool found;
	return gt_u64map_slot(&ps->ctx, p, &found);
}

static enum gt_go_event kind_of_type(uint8_t type)
{
	for (int k = 0; k < GT_GO_EVENT_COUNT; k++)
		if (gt_go_events[k].type == type)
			return (enum gt_go_event)k;
	return GT_GO_EVENT_COUNT;
}

static bool ends_goroutine_context(uint8_t type)
{
	switch (type) {
	case WIRE_GO_STOP:
	case WIRE_GO_BLOCK_SEND:
	case WIRE_GO_BLOCK_RECV:
	case WIRE_GO_BLOCK_SELECT:
	case WIRE_GO_BLOCK_GC:
		return true;
	}
	switch (kind_of_type(type)) {
	case GT_GO_GO_END: case GT_GO_GO_SCHED: case GT_GO_GO_PREEMPT: case GT_GO_GO_SLEEP:
	case GT_GO_GO_BLOCK: case GT_GO_GO_BLOCK_SYNC: case GT_GO_GO_BLOCK_COND:
	case GT_GO_GO_BLOCK_NET: case GT_GO_GO_SYSBLOCK:
		return true;
	default:
		return false;
	}
}

static int add_string(struct parser *ps, struct gt_go_trace *t)
{
	uint64_t id, len;
	if (varint(ps, &id) != 0 || varint(ps, &len) != 0)
		return -1;
	if (len > (uint64_t)(ps->end - ps->p))
		return failf(ps, "string %llu runs past the end of the file", (unsigned long long)id);
	if (!gt_grow(&t->strings, &ps->cap_strings, t->n_strings + 1, sizeof *t->strings))
		return failf(ps, "out of memory");
	char *text = malloc(len + 1);
	if (text == NULL)
		return failf(ps, "out of memory");
	memcpy(text, ps->p, len);
	text[len] = '\0';
	ps->p += len;
	t->strings[t->n_strings++] = (struct gt_go_string){ .id = id, .text = text };
	return 0;
}

static int add_stack(struct parser *ps, struct gt_go_trace *t)
{
	if (ps->n_vals < 2 || ps->vals[1] > 1000 || ps->n_vals != 2 + 4 * ps->vals[1])
		return failf(ps, "bad Stack event before offset %#zx", (size_t)(ps->p - ps->start));
	size_t n = ps->vals[1];
	if (!gt_grow(&t->stacks, &ps->cap_stacks, t->n_stacks + 1, sizeof *t->stacks))
		return failf(ps, "out of memory");
	struct gt_go_frame_ref *frames = calloc(n ? n : 1, sizeof *frames);
	if (frames == NULL)
		return failf(ps, "out of memory");
	for (size_t i = 0; i < n; i++)
		frames[i] = (struct gt_go_frame_ref){ ps->vals[2 + 4 * i], ps->vals[3 + 4 * i],
						      ps->vals[4 + 4 * i], ps->vals[5 + 4 * i] };
	t->stacks[t->n_stacks++] = (struct gt_go_stack_def){ .id = ps->vals[0], .frames = frames,
							     .n = n };
	return 0;
}

static int add_event(struct parser *ps, struct gt_go_trace *t, uint8_t type, uint64_t p,
		     uint64_t *ticks)
{
	if (ps->n_vals == 0)
		return failf(ps, "event without a timestamp before offset %#zx",
			     (size_t)(ps->p - ps->start));
	uint64_t *ctx = context_of(ps, p);
	if (ctx == NULL ||
	    !gt_grow(&t->ev, &ps->cap_ev, t->n_ev + 1, sizeof *t->ev))
		return failf(ps, "out of memory");
	*ticks += ps->vals[0];
	struct gt_go_ev ev = { .ns = *ticks, .p = p, .type = type, .kind = kind_of_type(type) };
	size_t nargs = ps->n_vals - 1;
	if (ev.kind != GT_GO_EVENT_COUNT) {
		const struct gt_go_event_desc *d = &gt_go_events[ev.kind];
		if (nargs < (size_t)d->nargs + d->has_stack)
			return failf(ps, "%s has %zu arguments, wants %u", d->name, nargs,
				     d->nargs + d->has_stack);
		if (d->has_stack)
			ev.stack = ps->vals[1 + d->nargs];
		nargs = d->nargs;
	}
	for (size_t i = 0; i < nargs && i < 4; i++)
		ev.args[i] = ps->vals[1 + i];
	if (ev.kind == GT_GO_GO_SYSEXIT && ev.args[2] != 0)
		ev.ns = ev.args[2]; /* the real return time, when the writer gave one */
	if (ev.kind == GT_GO_CPU_SAMPLE)
		ev.ns = ev.args[0];  /* its batch's clock says nothing (gowire.c) */
	if (ev.kind == GT_GO_GO_SYSEXIT || ev.kind == GT_GO_GO_WAITING)
		ev.g = ev.args[0];
	else if (ev.kind == GT_GO_CPU_SAMPLE)
		ev.g = ev.args[2];
	else
		ev.g = *ctx;
	if (ev.kind == GT_GO_GO_START || ev.kind == GT_GO_GO_START_LABEL ||
	    type == WIRE_GO_START_LOCAL)
		*ctx = ev.args[0];
	else if (ends_goroutine_context(type))
		*ctx = 0;
	t->ev[t->n_ev++] = ev;
	return 0;
}

static int parse(struct parser *ps, struct gt_go_trace *t)
{
	if (ps->end - ps->p < 16 || memcmp(ps->p, "go 1.", 5) != 0 ||
	    memcmp(ps->p + 13, "\0\0\0", 3) != 0 || memcmp(ps->p + 7, " trace", 6) != 0)
		return failf(ps, "not a Go trace (no \"go 1.NN trace\" header)");
	ps->p += 16;
	bool in_batch = false;
	uint64_t batch_p = 0, ticks = 0;
	while (ps->p < ps->end) {
		uint8_t b = *ps->p++, type = b & 0x3f;
		unsigned count = b >> 6;
		if (type == gt_go_events[GT_GO_STRING].type) {
			if (add_string(ps, t) != 0)
				return -1;
			continue;
		}
		if (read_values(ps, type == gt_go_events[GT_GO_STACK].type ? 3 : count) != 0)
			return -1;
		if (type == gt_go_events[GT_GO_BATCH].type) {
			if (ps->n_vals != 2)
				return failf(ps, "bad Batch event");
			in_batch = true;
			batch_p = ps->vals[0];
			ticks = ps->vals[1];
		} else if (type == gt_go_events[GT_GO_FREQUENCY].type) {
			t->frequency = ps->n_vals ? ps->vals[0] : 0;
		} else if (type == gt_go_events[GT_GO_STACK].type) {
			if (add_stack(ps, t) != 0)
				return -1;
		} else if (type == WIRE_TIMER_GOROUTINE) {
			continue;
		} else {
			if (!in_batch)
				return failf(ps, "event type %u before the first batch", type);
			if (add_event(ps, t, type, batch_p, &ticks) != 0)
				return -1;
			if (type == gt_go_events[GT_GO_USER_LOG].type) {
				uint64_t len;
				if (varint(ps, &len) != 0)
					return -1;
				if (len > (uint64_t)(ps->end - ps->p))
					return failf(ps, "UserLog message past the end of the file");
				ps->p += len;
			}
		}
	}
	if (t->frequency == 0 || t->frequency >= (1ull << 63))
		return failf(ps, "no usable Frequency event");
	if (t->n_ev == 0)
		return failf(ps, "the trace holds no events");
	return 0;
}

struct ordered_ev {
	struct gt_go_ev ev;
	size_t order;         /* file order: ties keep it */
};

static int by_time_then_file_order(const void *a, const void *b)
{
	const struct ordered_ev *x = a, *y = b;
	if (x->ev.ns != y->ev.ns)
		return x->ev.ns < y->ev.ns ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

static int by_string_id(const void *a, const void *b)
{
	const struct gt_go_string *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

static int by_stack_id(const void *a, const void *b)
{
	const struct gt_go_stack_def *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

/* Ticks to ns since the earliest event; a stable sort by time (the index breaks ties). */
static int merge(struct gt_go_trace *t)
{
	uint64_t min = UINT64_MAX;
	for (size_t i = 0; i < t->n_ev; i++)
		if (t->ev[i].ns < min)
			min = t->ev[i].ns;
	struct ordered_ev *tmp = malloc(t->n_ev * sizeof *tmp);
	if (tmp == NULL)
		return -1;
	for (size_t i = 0; i < t->n_ev; i++) {
		tmp[i].ev = t->ev[i];
		tmp[i].ev.ns = (uint64_t)((unsigned __int128)(t->ev[i].ns - min) * 1000000000u /
					  t->frequency);
		tmp[i].order = i;
	}
	if (t->n_ev > 1)
		qsort(tmp, t->n_ev, sizeof *tmp, by_time_then_file_order);
	for (size_t i = 0; i < t->n_ev; i++)
		t->ev[i] = tmp[i].ev;
	free(tmp);
	/* NULL arrays when a trace has no strings or stacks: qsort must not see them */
	if (t->n_strings > 1)
		qsort(t->strings, t->n_strings, sizeof *t->strings, by_string_id);
	if (t->n_stacks > 1)
		qsort(t->stacks, t->n_stacks, sizeof *t->stacks, by_stack_id);
	return 0;
}

/* ---- "go 1.22 trace" (docs/formats/go122.md) ----------------------------------------------------
 *
 * Read back into the 1.19 vocabulary above, which is what the report counts: every M's
 * events take its goroutine context (kept across batches and generations), as Go's reader
 * does; block and stop reasons pick the kind (a reason is a string of the generation's table,
 * which follows its events: kinds are decided once every table is read); ticks of each
 * generation go through its own Frequency.  Ids of strings and stacks are read as gotrace
 * writes them, one meaning in every generation (the first definition is kept). */

struct m_ctx {
	uint64_t g;
	bool in_syscall;
	size_t last_start;     /* index + 1 of its last GoStart event, 0 = none */
};

enum { V2_REASON_STOP = 1, V2_REASON_BLOCK = 2 };   /* gt_go_ev.type of events decided late */

static int v2_table(struct parser *ps, struct gt_go_trace *t, const uint8_t *end, bool strings,
		    struct gt_u64map *seen)
{
	while (ps->p < end) {
		uint8_t entry = *ps->p++;
		uint64_t id, n;
		if (entry != (strings ? 5 : 3) || varint(ps, &id) != 0 || varint(ps, &n) != 0)
			return failf(ps, "bad %s batch at offset %#zx", strings ? "Strings" : "Stacks",
				     (size_t)(ps->p - ps->start));
		bool found;
		uint64_t *slot = gt_u64map_slot(seen, id, &found);
		if (slot == NULL)
			return failf(ps, "out of memory");
		if (strings) {
			if (n > (uint64_t)(end - ps->p))
				return failf(ps, "string %llu runs past its batch", (unsigned long long)id);
			char *text = found ? NULL : malloc(n + 1);
			if (!found && (text == NULL || !gt_grow(&t->strings, &ps->cap_strings,
							   t->n_strings + 1, sizeof *t->strings))) {
				free(text);
				return failf(ps, "out of memory");
			}
			if (text != NULL) {
				memcpy(text, ps->p, n);
				text[n] = '\0';
				t->strings[t->n_strings++] = (struct gt_go_string){ .id = id, .text = text };
			}
			ps->p += n;
			continue;
		}
		if (n > 1000)
			return failf(ps, "stack %llu of %llu frames", (unsigned long long)id,
				     (unsigned long long)n);
		ps->n_vals = 0;
		if (push_value(ps, id) != 0 || push_value(ps, n) != 0)
			return -1;
		for (uint64_t i = 0; i < 4 * n; i++) {
			uint64_t v;
			if (varint(ps, &v) != 0 || push_value(ps, v) != 0)
				return -1;
		}
		if (!found && add_stack(ps, t) != 0)
			return -1;
	}
	return 0;
}

static const struct gt_go2_event_desc *v2_desc(uint8_t type)
{
	for (int k = 0; k < GT_GO2_EVENT_COUNT; k++)
		if (gt_go2_events[k].type == type && gt_go2_events[k].timed)
			return &gt_go2_events[k];
	return NULL;
}

static int v2_push(struct parser *ps, struct gt_go_trace *t, enum gt_go_event kind, uint64_t ticks,
		   uint64_t g, uint64_t gen)
{
	if (!gt_grow(&t->ev, &ps->cap_ev, t->n_ev + 1, sizeof *t->ev))
		return failf(ps, "out of memory");
	/* p: the generation until its Frequency is known */
	t->ev[t->n_ev++] = (struct gt_go_ev){ .ns = ticks, .p = gen, .g = g, .kind = kind };
	return 0;
}

/* A CPU samples batch (docs/formats/go122.md §1.7): { 0x07 ticks M P G stack }*, as CPUSample
 * events (G 0: none). */
static int v2_samples(struct parser *ps, struct gt_go_trace *t, const uint8_t *end, uint64_t gen)
{
	while (ps->p < end) {
		uint64_t v[5];
		if (*ps->p++ != 7)
			return failf(ps, "not a CPU sample at offset %#zx", (size_t)(ps->p - ps->start));
		for (int i = 0; i < 5; i++)
			if (varint(ps, &v[i]) != 0)
				return -1;
		if (v2_push(ps, t, GT_GO_CPU_SAMPLE, v[0], v[3], gen) != 0)
			return -1;
		t->ev[t->n_ev - 1].stack = v[4];
		t->ev[t->n_ev - 1].args[1] = v[2];
	}
	return 0;
}

/* The events of one M's batch, in its context. */
static int v2_events(struct parser *ps, struct gt_go_trace *t, const uint8_t *end,
		     struct m_ctx *m, uint64_t gen, uint64_t ticks)
{
	while (ps->p < end) {
		uint8_t type = *ps->p++;
		const struct gt_go2_event_desc *d = v2_desc(type);
		uint64_t dt, a[4] = { 0 };
		if (d == NULL || d->nargs > 4)
			return failf(ps, "event type %u at offset %#zx", type,
				     (size_t)(ps->p - 1 - ps->start));
		if (varint(ps, &dt) != 0)
			return -1;
		for (unsigned i = 0; i < d->nargs; i++)
			if (varint(ps, &a[i]) != 0)
				return -1;
		ticks += dt;
		enum gt_go2_event ev = (enum gt_go2_event)(d - gt_go2_events);
		int rc = 0;
		switch (ev) {
		case GT_GO2_GO_CREATE:
			rc = v2_push(ps, t, GT_GO_GO_CREATE, ticks, m->g, gen);
			t->ev[t->n_ev - 1].args[0] = a[0];
			t->ev[t->n_ev - 1].args[1] = a[1];
			t->ev[t->n_ev - 1].stack = a[2];
			break;
		case GT_GO2_GO_STATUS:
			if (a[2] == 4 && gen == 1)   /* waiting when the trace began */
				rc = v2_push(ps, t, GT_GO_GO_WAITING, ticks, a[0], gen);
			else if (a[2] == 2 || a[2] == 3)
				m->g = a[0];
			m->in_syscall = a[2] == 3;
			break;
		case GT_GO2_GO_START:
			rc = v2_push(ps, t, GT_GO_GO_START, ticks, m->g, gen);
			t->ev[t->n_ev - 1].args[0] = a[0];
			m->g = a[0];
			m->last_start = t->n_ev;
			break;
		case GT_GO2_GO_LABEL:
			if (m->last_start && t->ev[m->last_start - 1].args[0] == m->g) {
				t->ev[m->last_start - 1].kind = GT_GO_GO_START_LABEL;
				t->ev[m->last_start - 1].args[2] = a[0];
			}
			break;
		case GT_GO2_GO_DESTROY: case GT_GO2_GO_DESTROY_SYSCALL:
			rc = v2_push(ps, t, GT_GO_GO_END, ticks, m->g, gen);
			m->g = 0;
			m->in_syscall = false;
			break;
		case GT_GO2_GO_STOP: case GT_GO2_GO_BLOCK:
			rc = v2_push(ps, t, GT_GO_GO_BLOCK, ticks, m->g, gen);
			t->ev[t->n_ev - 1].type = ev == GT_GO2_GO_STOP ? V2_REASON_STOP : V2_REASON_BLOCK;
			t->ev[t->n_ev - 1].args[3] = a[0];
			t->ev[t->n_ev - 1].stack = a[1];
			m->g = 0;
			break;
		case GT_GO2_GO_UNBLOCK:
			rc = v2_push(ps, t, GT_GO_GO_UNBLOCK, ticks, m->g, gen);
			t->ev[t->n_ev - 1].args[0] = a[0];
			t->ev[t->n_ev - 1].stack = a[2];
			break;
		case GT_GO2_GO_SYSCALL_BEGIN:
			rc = v2_push(ps, t, GT_GO_GO_SYSCALL, ticks, m->g, gen);
			t->ev[t->n_ev - 1].stack = a[1];
			m->in_syscall = true;
			break;
		case GT_GO2_GO_SYSCALL_END:
			m->in_syscall = false;
			break;
		case GT_GO2_PROC_STOP:
			/* the CPU given away in a syscall: it blocked */
			if (m->in_syscall && m->g)
				rc = v2_push(ps, t, GT_GO_GO_SYSBLOCK, ticks, m->g, gen);
			m->in_syscall = false;
			break;
		case GT_GO2_GO_SYSCALL_END_BLOCKED:
			rc = v2_push(ps, t, GT_GO_GO_SYSEXIT, ticks, m->g, gen);
			m->g = 0;
			m->in_syscall = false;
			break;
		default:   /* Procs, user annotations: not in the report */
			break;
		}
		if (rc != 0)
			return -1;
	}
	return 0;
}

static enum gt_go_event v2_reason_kind(const struct gt_go_trace *t, const struct gt_go_ev *e)
{
	const char *r = gt_go_trace_string(t, e->args[3]);
	if (e->type == V2_REASON_STOP)
		return strcmp(r, "sched_yield") ? GT_GO_GO_PREEMPT : GT_GO_GO_SCHED;
	if (!strcmp(r, "sleep"))
		return GT_GO_GO_SLEEP;
	/* a pipe hand-off: in the sync profile of Go's tools, a network-style wait here, as
	 * the 1.19 format writes it */
	if (!strcmp(r, "network") || !strncmp(r, "chan ", 5))
		return GT_GO_GO_BLOCK_NET;
	/* the condition variable's name may follow (docs/formats/go122.md §5.3) */
	static const char cond[] = "sync: pthread_cond_wait";
	size_t n = sizeof cond - 1;
	if (!strncmp(r, cond, n) && (r[n] == '\0' || r[n] == ' '))
		return GT_GO_GO_BLOCK_COND;
	if (!strncmp(r, "sync", 4))
		return GT_GO_GO_BLOCK_SYNC;
	return GT_GO_GO_BLOCK;
}

static int parse_v2(struct parser *ps, struct gt_go_trace *t)
{
	ps->p += 16;
	struct gt_u64map ms = { 0 }, seen_strings = { 0 }, seen_stacks = { 0 }, freq = { 0 };
	struct m_ctx *m = NULL;
	size_t n_m = 0, cap_m = 0;
	int rc = 0;
	while (rc == 0 && ps->p < ps->end) {
		uint64_t gen, mid, base, size;
		if (*ps->p++ != 1 || varint(ps, &gen) != 0 || varint(ps, &mid) != 0 ||
		    varint(ps, &base) != 0 || varint(ps, &size) != 0) {
			rc = failf(ps, "bad batch header before offset %#zx", (size_t)(ps->p - ps->start));
			break;
		}
		if (size == 0 || size > (uint64_t)(ps->end - ps->p)) {
			rc = failf(ps, "batch of %llu bytes past the end of the file (cut short?)",
				   (unsigned long long)size);
			break;
		}
		const uint8_t *end = ps->p + size;
		bool found;
		uint64_t *slot;
		switch (*ps->p) {
		case 2: case 4:
			ps->p++;
			rc = v2_table(ps, t, end, *(end - size) == 4,
				      *(end - size) == 4 ? &seen_strings : &seen_stacks);
			break;
		case 6:
			ps->p++;
			rc = v2_samples(ps, t, end, gen);
			break;
		case 8:
			ps->p++;
			slot = gt_u64map_slot(&freq, gen, &found);
			if (slot == NULL || varint(ps, slot) != 0)
				rc = slot ? -1 : failf(ps, "out of memory");
			break;
		default:
			slot = gt_u64map_slot(&ms, mid, &found);
			if (slot == NULL || (!found && !gt_grow(&m, &cap_m, n_m + 1, sizeof *m))) {
				rc = failf(ps, "out of memory");
				break;
			}
			if (!found) {
				m[n_m] = (struct m_ctx){ 0 };
				*slot = n_m++;
			}
			rc = v2_events(ps, t, end, &m[*slot], gen, base);
			break;
		}
		if (rc == 0 && ps->p != end)
			rc = failf(ps, "batch does not end where its size says (offset %#zx)",
				   (size_t)(ps->p - ps->start));
	}
	/* ticks through their generation's Frequency, as ns at 1e9 ticks per second */
	for (size_t i = 0; rc == 0 && i < t->n_ev; i++) {
		struct gt_go_ev *e = &t->ev[i];
		const uint64_t *f = gt_u64map_find(&freq, e->p);
		if (f == NULL || *f == 0) {
			rc = failf(ps, "generation %llu has no Frequency (cut short?)",
				   (unsigned long long)e->p);
			break;
		}
		e->ns = (uint64_t)((unsigned __int128)e->ns * 1000000000u / *f);
		e->p = GT_WIRE_P_NONE;
	}
	t->frequency = 1000000000u;
	if (rc == 0 && t->n_strings > 1)
		qsort(t->strings, t->n_strings, sizeof *t->strings, by_string_id);
	for (size_t i = 0; rc == 0 && i < t->n_ev; i++)
		if (t->ev[i].type == V2_REASON_STOP || t->ev[i].type == V2_REASON_BLOCK)
			t->ev[i].kind = v2_reason_kind(t, &t->ev[i]);
	if (rc == 0 && t->n_ev == 0)
		rc = failf(ps, "the trace holds no events");
	free(m);
	gt_u64map_free(&ms);
	gt_u64map_free(&seen_strings);
	gt_u64map_free(&seen_stacks);
	gt_u64map_free(&freq);
	return rc;
}

int gt_go_trace_read(const char *path, struct gt_go_trace *t, char *err, size_t errlen)
{
	memset(t, 0, sizeof *t);
	FILE *f = fopen(path, "rb");
	if (f == NULL) {
		snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
		return -1;
	}
	uint8_t *data = NULL;
	size_t len = 0, cap = 0;
	for (;;) {
		if (!gt_grow(&data, &cap, len + 65536, 1)) {
			fclose(f);
			free(data);
			snprintf(err, errlen, "out of memory reading %s", path);
			return -1;
		}
		size_t n = fread(data + len, 1, cap - len, f);
		len += n;
		if (n == 0)
			break;
	}
	bool read_error = ferror(f);
	fclose(f);
	if (read_error) {
		free(data);
		snprintf(err, errlen, "cannot read %s", path);
		return -1;
	}
	char why[400];
	struct parser ps = { .p = data, .start = data, .end = data + len, .err = why,
			     .errlen = sizeof why };
	bool v2 = len >= 16 && memcmp(data, "go 1.22 trace\0\0\0", 16) == 0;
	int ret = v2 ? parse_v2(&ps, t) : parse(&ps, t);
	if (ret == 0 && merge(t) != 0) {
		snprintf(why, sizeof why, "out of memory");
		ret = -1;
	}
	free(ps.vals);
	gt_u64map_free(&ps.ctx);
	free(data);
	if (ret != 0) {
		snprintf(err, errlen, "%s: %s", path, why);
		gt_go_trace_free(t);
	}
	return ret;
}

void gt_go_trace_free(struct gt_go_trace *t)
{
	for (size_t i = 0; i < t->n_strings; i++)
		free(t->strings[i].text);
	for (size_t i = 0; i < t->n_stacks; i++)
		free(t->stacks[i].frames);
	free(t->strings);
	free(t->stacks);
	free(t->ev);
	memset(t, 0, sizeof *t);
}

const char *gt_go_trace_string(const struct gt_go_trace *t, uint64_t id)
{
	struct gt_go_string key = { .id = id };
	const struct gt_go_string *s = id == 0 || t->n_strings == 0 ? NULL :
		bsearch(&key, t->strings, t->n_strings, sizeof *t->strings, by_string_id);
	return s != NULL ? s->text : "";
}

const struct gt_go_stack_def *gt_go_trace_stack(const struct gt_go_trace *t, uint64_t id)
{
	struct gt_go_stack_def key = { .id = id };
	return id == 0 || t->n_stacks == 0 ? NULL :
		bsearch(&key, t->stacks, t->n_stacks, sizeof *t->stacks, by_stack_id);
}
