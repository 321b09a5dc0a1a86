/* gowire_v2: the "go 1.22 trace" writer (docs/formats/go122.md) behind gowire.h's interface.
 *
 * The model says what happened in gowire.h's scheduling events (on Ps, CPU k = P k+1, P 0
 * its prologue, ordered as the 1.19 format needs) and names who did it and on which M
 * (gt_wire_actor); this writer writes them in the 1.22+ format, where every event belongs to
 * a thread (§3.1).  Who runs where is the model's to say; this writer keeps encoding state
 * only (gowire_v2_internal.h):
 *
 *   - an M holds a P exactly while its goroutine runs or sits in a syscall holding it:
 *     GoStart is preceded by ProcStart (unless the model says its M took the P to create it),
 *     every GoStop/GoBlock/GoDestroy followed by ProcStop (the §3.2 primitive; the 1.19
 *     ProcStart/ProcStop of pseudo-threads mean nothing here);
 *   - blocks carry reasons in C terms (§5.3) from the wait the model passes after the stack;
 *   - a syscall that did not block is GoSyscallBegin … GoSyscallEnd at its real end; one that
 *     blocked is GoSyscallBegin, ProcStop, and GoSyscallEndBlocked at its return;
 *   - threads existing at the start are created from P 0 by their own M (so they are named
 *     from time 0), or declared Waiting when they were blocked (§3.4);
 *   - generations close every generation_ns ticks or generation_bytes of events (§1.8): all
 *     batches of the generation, its Frequency, then the strings and stacks it used; the
 *     next one opens with the status of every P and live goroutine (the model's live-state
 *     callback), so a reader keeps one
 *     generation in memory and a cut file is read up to its last complete generation.
 *
 * Ticks are the model's (ns at the capture's nominal rate); each generation's Frequency is
 * the clock fit when it opens, and an offset keeps time continuous across generations whose
 * frequencies differ.  The readers scale a batch's base and each delta apart, truncating
 * each: an event that waits for another thread's is placed (and its batch cut) so that it
 * still follows, whatever the fit within 1 % of 1e9 (gt_clock_frequency's bound).  Events
 * the model emits slightly out of time order across threads are raised to their M's last
 * tick (per-M order is what the readers need; counted). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gowire_v2_internal.h"
#include "common/grow.h"

const struct gt_go2_event_desc gt_go2_events[GT_GO2_EVENT_COUNT] = {
#define GT_GO2_EVENT_DESC(name, goname, byte, nargs, timed) \
	[GT_GO2_##name] = {goname, byte, nargs, timed},
	GT_GO2_EVENTS(GT_GO2_EVENT_DESC)
#undef GT_GO2_EVENT_DESC
};


static void out_append(struct wire22 *w, const uint8_t *p, size_t n)
{
	w->stats.bytes += n;
	if (w->out.len + n > w->out.cap) {
		if (!w->error)
			w->error = gtw_write_all(w->fd, w->out.data, w->out.len);
		w->out.len = 0;
	}
	if (n > w->out.cap) {
		if (!w->error)
			w->error = gtw_write_all(w->fd, p, n);
		return;
	}
	memcpy(w->out.data + w->out.len, p, n);
	w->out.len += n;
}

/* One batch: EventBatch gen M base size, then data. */
void w22_batch_write(struct wire22 *w, uint64_t m_id, uint64_t base, const uint8_t *data,
			size_t len)
{
	uint8_t h[1 + 4 * 10];
	size_t k = 0;
	h[k++] = gt_go2_events[GT_GO2_BATCH].type;
	k += gt_uvarint_put(h + k, w->gen);
	k += gt_uvarint_put(h + k, m_id);
	k += gt_uvarint_put(h + k, base);
	k += gt_uvarint_put(h + k, len);
	out_append(w, h, k);
	out_append(w, data, len);
	w->stats.batches++;
}

void w22_m_flush(struct wire22 *w, struct m2 *m)
{
	if (!m->buf.len)
		return;
	w22_batch_write(w, m->id, m->base, m->buf.data, m->buf.len);
	m->buf.len = 0;
	m->n_ev = 0;
}

/* ---------------------------------------------------------------------------------------- */
/* events on an M */

/* M id (0: NoThread), made on first use. */
struct m2 *w22_m(struct wire22 *w, uint64_t id)
{
	if (!id)
		id = NO_ID;
	bool found;
	uint64_t *slot = gt_u64map_slot(&w->m_by_id, id, &found);
	if (slot && found)
		return w->ms[*slot];
	struct m2 *m = calloc(1, sizeof *m);
	if (!slot || !m || !gt_grow(&w->ms, &w->cap_ms, w->n_ms + 1, sizeof *w->ms)) {
		free(m);
		w->error = ENOMEM;
		return NULL;
	}
	m->id = id;
	*slot = w->n_ms;
	w->ms[w->n_ms++] = m;
	if (w->n_ms > w->stats.ms_held)
		w->stats.ms_held = w->n_ms;
	return m;
}

/* The slot of G g if it has one (never makes it). */
static struct seq2 *g_find(const struct wire22 *w, uint64_t g)
{
	const uint64_t *slot = gt_u64map_find(&w->g_index, g);
	return slot ? &w->gs[*slot] : NULL;
}

struct seq2 *w22_g(struct wire22 *w, uint64_t g)
{
	if (!g || g >= (1ull << 32))
		return NULL;
	bool found;
	uint64_t *slot = gt_u64map_slot(&w->g_index, g, &found);
	if (slot && found)
		return &w->gs[*slot];
	size_t i = w->free_g - 1;
	if (!slot || (!w->free_g && !gt_grow(&w->gs, &w->cap_gs, w->n_gs + 1, sizeof *w->gs))) {
		if (slot)
			gt_u64map_remove(&w->g_index, g);
		w->error = ENOMEM;
		return NULL;
	}
	if (w->free_g)
		w->free_g = (size_t)w->gs[i].changed;   /* a free slot's changed: the next one */
	else
		i = w->n_gs++;
	w->gs[i] = (struct seq2){0};
	*slot = i;
	return &w->gs[i];
}

void w22_g_end(struct wire22 *w, uint64_t g)
{
	const uint64_t *slot = gt_u64map_find(&w->g_index, g);
	if (!slot)
		return;
	size_t i = (size_t)*slot;
	gt_u64map_remove(&w->g_index, g);
	w->gs[i].changed = w->free_g;
	w->free_g = i + 1;
}

/* Where ev records the time it changes a P's or a goroutine's state (NULL: it changes none
 * that an event of another M waits for): its arguments' P or G, else those of the model's
 * event being written. */
static uint64_t *changed_by(struct wire22 *w, enum gt_go2_event ev, const uint64_t *args)
{
	uint64_t g = w->ev_g, p = w->ev_p;
	switch (ev) {
	case GT_GO2_PROC_START: case GT_GO2_PROC_STATUS:
		return args[0] < w->n_ps ? &w->ps[args[0]].changed : NULL;
	case GT_GO2_PROC_STOP: case GT_GO2_GO_SYSCALL_BEGIN:
		return p < w->n_ps ? &w->ps[p].changed : NULL;
	case GT_GO2_GO_START: case GT_GO2_GO_UNBLOCK: case GT_GO2_GO_STATUS: case GT_GO2_GO_CREATE:
		g = args[0];
		break;
	case GT_GO2_GO_STOP: case GT_GO2_GO_BLOCK: case GT_GO2_GO_DESTROY:
	case GT_GO2_GO_SYSCALL_END_BLOCKED: case GT_GO2_GO_DESTROY_SYSCALL:
		break;
	default:
		return NULL;
	}
	struct seq2 *gg = g ? g_find(w, g) : NULL;
	return gg ? &gg->changed : NULL;
}

/* Appends one event (type byte, tick delta, args) to m's batch. */
void w22_emit(struct wire22 *w, struct m2 *m, enum gt_go2_event ev, uint64_t ticks,
		 const uint64_t *args)
{
	if (!m || w->error)
		return;
	const struct gt_go2_event_desc *d = &gt_go2_events[ev];
	int64_t t = (int64_t)ticks + w->offset;
	uint64_t at = t < 0 ? 0 : (uint64_t)t;
	uint64_t floor = w->gen_start + w->offset;
	if (at < floor)
		at = floor;
	if (at < m->last) {
		at = m->last;
		w->stats.ticks_clamped++;
	}
	/* The events that wait for another M's (§2.2) come strictly after it as the readers
	 * see the time: Go 1.22-1.25 try the earliest M first and, when it must wait, all but
	 * the first of the rest sorted by time, so an M tied with the waiting one may never be
	 * tried ("failed to advance: frontier").  They scale the base and each delta apart
	 * (x mul, mul = 1e9 / Frequency >= 0.99 here) and truncate each: the event they wait
	 * for is read at most mul x its ticks, this one more than mul x its ticks - (the
	 * batch's events + 2); with a margin for floats' rounding: at >= changed + 4, and a
	 * new batch unless mul x (at - changed) >= events + 3. */
	uint64_t *changed = changed_by(w, ev, args);
	if (changed && (ev == GT_GO2_PROC_START || ev == GT_GO2_GO_START || ev == GT_GO2_GO_UNBLOCK)) {
		if (at < *changed + 4)
			at = *changed + 4;
		if ((at - *changed) * 99 < (m->n_ev + 3) * 100)
			w22_m_flush(w, m);
	}
	if (changed)
		*changed = at;
	if (m->buf.len + MAX_EVENT_BYTES > BATCH_FLUSH_BYTES)
		w22_m_flush(w, m);
	if (!gtw_bytebuf_reserve(&m->buf, MAX_EVENT_BYTES)) {
		w->error = ENOMEM;
		return;
	}
	if (!m->buf.len) {
		m->base = at;
		m->last = at;
	}
	uint8_t *o = m->buf.data + m->buf.len;
	size_t k = 0;
	o[k++] = d->type;
	k += gt_uvarint_put(o + k, at - m->last);
	for (unsigned i = 0; i < d->nargs; i++)
		k += gt_uvarint_put(o + k, args[i]);
	m->buf.len += k;
	m->n_ev++;
	m->last = at;
	m->ended = false;
	w->gen_bytes += k;
	w->stats.events++;
}


/* ---------------------------------------------------------------------------------------- */
/* generations */

/* freq, if within 1 % of 1e9 (as gt_clock_frequency's fit always is: w22_emit() relies on it),
 * else 1e9. */
static uint64_t near_1e9(uint64_t freq)
{
	return freq >= 990000000u && freq <= 1010000000u ? freq : GT_WIRE_FREQUENCY_NS;
}

static void add_live(void *arg, const struct gt_wire_status *s)
{
	struct wire22 *w = arg;
	if (s->kind >= GT_WIRE_G_RUNNABLE ? !w22_g(w, s->id) : s->id >= w->n_ps)
		return;
	if (!gt_grow(&w->live, &w->cap_live, w->n_live + 1, sizeof *w->live)) {
		w->error = ENOMEM;
		return;
	}
	w->live[w->n_live++] = *s;
}

static int by_id(const void *a, const void *b)
{
	const struct gt_wire_status *x = a, *y = b;
	return x->id < y->id ? -1 : x->id > y->id;
}

static void gen_open(struct wire22 *w, uint64_t ticks)
{
	uint64_t freq = near_1e9(w->opt.frequency ? w->opt.frequency(w->opt.frequency_ctx) : 0);
	if (w->gen) {
		/* the same instant in the old and the new frequency: no jump at the boundary */
		long double at = ((long double)ticks + w->offset) * freq / w->freq;
		w->offset = (int64_t)(at - ticks);
	}
	w->freq = freq;
	w->gen++;
	w->gen_start = ticks;
	w->gen_bytes = 0;
	w->stats.generations++;
	/* §3.4: every P and every live goroutine says where it stands */
	w->n_live = 0;
	for (uint32_t p = 0; p < w->n_ps; p++)
		w->ps[p].seq = 0;
	for (size_t i = 0; i < w->n_gs; i++)
		w->gs[i].seq = 0;   /* free slots too: nothing reads their seq */
	if (w->opt.live)
		w->opt.live(w->opt.live_ctx, add_live, w);
	size_t n_p = 0;
	while (n_p < w->n_live && w->live[n_p].kind <= GT_WIRE_P_SYSCALL)
		n_p++;
	if (w->n_live) {   /* none: no array at all, which qsort may not be given */
		qsort(w->live, n_p, sizeof *w->live, by_id);
		qsort(w->live + n_p, w->n_live - n_p, sizeof *w->live, by_id);
	}
	w->ev_g = 0;
	size_t i = 0;
	for (uint32_t p = 0; p < w->n_ps; p++) {   /* a P the model did not visit: idle */
		const struct gt_wire_status *st = NULL;
		for (; i < n_p && w->live[i].id <= p; i++)
			st = w->live[i].id == p ? &w->live[i] : st;
		if (st && st->kind != GT_WIRE_P_IDLE && st->m)
			EMIT(w, w22_m(w, st->m), PROC_STATUS, ticks, p,
			     st->kind == GT_WIRE_P_RUNNING ? P_RUNNING : P_SYSCALL);
		else
			EMIT(w, w22_m(w, 0), PROC_STATUS, ticks, p, P_IDLE);
	}
	for (i = n_p; i < w->n_live; i++) {
		const struct gt_wire_status *st = &w->live[i];
		struct m2 *m = w22_m(w, st->m);
		if (!m)
			return;
		w->ev_g = st->id;
		switch (st->kind) {
		case GT_WIRE_G_RUNNING: EMIT(w, m, GO_STATUS, ticks, st->id, m->id, GS_RUNNING); break;
		case GT_WIRE_G_SYSCALL: EMIT(w, m, GO_STATUS, ticks, st->id, m->id, GS_SYSCALL); break;
		case GT_WIRE_G_RUNNABLE: EMIT(w, m, GO_STATUS, ticks, st->id, NO_ID, GS_RUNNABLE); break;
		case GT_WIRE_G_WAITING: EMIT(w, m, GO_STATUS, ticks, st->id, NO_ID, GS_WAITING); break;
		default: break;
		}
	}
}

static void gen_close(struct wire22 *w, uint64_t freq)
{
	size_t kept = 0;
	for (size_t i = 0; i < w->n_ms; i++) {
		struct m2 *m = w->ms[i];
		w22_m_flush(w, m);
		if (m->ended && m->id != NO_ID) {
			/* a thread that ended: its M is forgotten (a thread given its id later
			 * starts it again; its events are all after this generation's) */
			gt_u64map_remove(&w->m_by_id, m->id);
			free(m->buf.data);
			free(m);
			continue;
		}
		if (m->id == NO_ID) {
			free(m->buf.data);
			m->buf = (struct bytebuf){0};
		}
		if (kept != i)
			*gt_u64map_find(&w->m_by_id, m->id) = kept;
		w->ms[kept++] = m;
	}
	w->n_ms = kept;
	uint8_t f[1 + 10];
	f[0] = gt_go2_events[GT_GO2_FREQUENCY].type;
	size_t k = 1 + gt_uvarint_put(f + 1, freq);
	w22_batch_write(w, NO_ID, w->gen_start + w->offset, f, k);
	if (w->samples.len > 1)
		w22_batch_write(w, NO_ID, w->gen_start + w->offset, w->samples.data, w->samples.len);
	w->samples.len = 0;
	w22_write_tables(w);
}

/* A generation closes after generation_ns or generation_bytes (once the threads existing at
 * the start are declared). */
void w22_gen_check(struct wire22 *w, uint64_t ticks)
{
	if (ticks > w->max_ticks)
		w->max_ticks = ticks;
	if (!w->gen) {
		gen_open(w, ticks);
		return;
	}
	if (!w->prologue_done ||
	    (ticks < w->gen_start + w->opt.generation_ns && w->gen_bytes < w->opt.generation_bytes))
		return;
	gen_close(w, w->freq);
	gen_open(w, w->max_ticks);
}

/* A CPU sample: absolute ticks, M, P, G, stack in the generation's CPU samples batch; not
 * checked against the scheduling state by the readers (§1.7).  Before the first generation
 * there is nowhere to put it (skipped, counted). */
static void w22_cpu_sample(struct gt_wire *gw, uint64_t ticks, uint64_t p,
			   const struct gt_wire_actor *who, uint64_t stack)
{
	struct wire22 *w = w22(gw);
	if (w->error)
		return;
	if (!w->gen) {
		w->stats.skipped++;
		return;
	}
	struct bytebuf *b = &w->samples;
	if (b->len && b->len + 1 + 5 * 10 > MAX_BATCH_BYTES) {
		w22_batch_write(w, NO_ID, w->gen_start + w->offset, b->data, b->len);
		b->len = 0;
	}
	if (!gtw_bytebuf_reserve(b, 1 + 1 + 5 * 10)) {
		w->error = ENOMEM;
		return;
	}
	if (!b->len)
		b->data[b->len++] = 0x06;   /* EvCPUSamples: the batch's kind */
	uint64_t g = who ? who->g : 0;
	uint64_t m = who && who->m ? who->m : NO_ID;
	w22_use_stack(w, stack);
	b->data[b->len++] = 0x07;       /* EvCPUSample */
	int64_t at = (int64_t)ticks + w->offset;
	b->len += gt_uvarint_put(b->data + b->len, at > 0 ? (uint64_t)at : 0);
	b->len += gt_uvarint_put(b->data + b->len, m);
	b->len += gt_uvarint_put(b->data + b->len, p < w->n_ps ? p : NO_ID);
	b->len += gt_uvarint_put(b->data + b->len, g);   /* 0: none */
	b->len += gt_uvarint_put(b->data + b->len, stack);
	w->stats.events++;
}

static int w22_finish(struct gt_wire *gw, uint64_t ticks_per_second)
{
	struct wire22 *w = w22(gw);
	if (!w->gen)
		gen_open(w, w->max_ticks);
	/* one generation: the clock fit of the whole capture, as in the 1.19 format; later ones
	 * keep the frequency they opened with (their ticks are written for it) */
	gen_close(w, w->gen == 1 && ticks_per_second ? near_1e9(ticks_per_second) : w->freq);
	if (!w->error)
		w->error = gtw_write_all(w->fd, w->out.data, w->out.len);
	w->out.len = 0;
	return w->error;
}

static void w22_stats(const struct gt_wire *gw, struct gt_wire_stats *out)
{
	*out = ((const struct wire22 *)gw)->stats;
}

static void w22_free(struct gt_wire *gw)
{
	struct wire22 *w = w22(gw);
	if (!w)
		return;
	for (size_t i = 0; i < w->n_ms; i++) {
		free(w->ms[i]->buf.data);
		free(w->ms[i]);
	}
	free(w->ms);
	gt_u64map_free(&w->m_by_id);
	free(w->ps);
	free(w->gs);
	gt_u64map_free(&w->g_index);
	free(w->live);
	free(w->out.data);
	gt_intern_free(&w->strings);
	gt_intern_free(&w->stacks);
	free(w->strs);
	free(w->stks);
	gt_u64map_free(&w->stk_by_id);
	gt_u64map_free(&w->undefined);
	free(w->frames);
	free(w->used_strings.v);
	free(w->used_stacks.v);
	free(w->samples.data);
	free(w);
}

static const struct gt_wire_ops wire22_ops = {
	.sched = w22_sched,
	.user_log = w22_user_log,
	.string = w22_string,
	.define_stack = w22_define_stack,
	.stack = w22_stack,
	.set_stack_id_base = w22_set_stack_id_base,
	.cpu_sample = w22_cpu_sample,
	.running_label = w22_running_label,
	.finish = w22_finish,
	.stats = w22_stats,
	.free = w22_free,
};

struct gt_wire *gt_wire_open_go122(int fd, uint32_t n_ps, const struct gt_wire_options *opt)
{
	struct wire22 *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->base.ops = &wire22_ops;
	if (opt)
		w->opt = *opt;
	if (!w->opt.generation_ns)
		w->opt.generation_ns = DEFAULT_GENERATION_NS;
	if (!w->opt.generation_bytes)
		w->opt.generation_bytes = DEFAULT_GENERATION_BYTES;
	w->fd = fd;
	w->n_ps = n_ps ? n_ps : 1;
	w->ps = calloc(w->n_ps, sizeof *w->ps);
	w->out.data = malloc(OUT_BUFFER_BYTES);
	w->out.cap = OUT_BUFFER_BYTES;
	w->next_string_id = 1;
	w->next_stack_id = 1;
	if (!w->ps || !w->out.data || !w22_m(w, NO_ID) ||
	    !gt_grow(&w->strs, &w->cap_strs, 1, sizeof *w->strs)) {
		w22_free(&w->base);
		return NULL;
	}
	const char *header = gt_trace_formats[GT_FORMAT_GO122].header;
	out_append(w, (const uint8_t *)header, GT_TRACE_HEADER_BYTES);
	return &w->base;
}

void gt_wire_frequency_source(struct gt_wire *gw, uint64_t (*frequency)(const void *ctx),
			      const void *ctx)
{
	if (gw->ops != &wire22_ops)
		return;
	w22(gw)->opt.frequency = frequency;
	w22(gw)->opt.frequency_ctx = ctx;
}


void gt_wire_live_state_source(struct gt_wire *gw,
			       void (*live)(const void *ctx, gt_wire_visit *visit, void *arg),
			       const void *ctx)
{
	if (gw->ops != &wire22_ops)
		return;
	w22(gw)->opt.live = live;
	w22(gw)->opt.live_ctx = ctx;
}
