/* gowire_v2: the "go 1.22 trace" writer (GO-TRACE-V2.md) behind gowire.h's interface.
 *
 * The model says what happened in the 1.19 vocabulary (events on Ps, CPU k = P k+1, P 0 its
 * prologue) and names who did it (gt_wire_actor); this writer says it again in the 1.22+
 * format, where every event belongs to a thread (an M, id = the thread's TID, §3.1):
 *
 *   - an M holds a P exactly while its goroutine runs or sits in a syscall holding it:
 *     GoStart is preceded by ProcStart, every GoStop/GoBlock/GoDestroy followed by ProcStop
 *     (the §3.2 primitive; the 1.19 ProcStart/ProcStop of pseudo-threads mean nothing here);
 *   - blocks carry reasons in C terms (§5.3) from the wait the model passes after the stack;
 *   - a syscall that did not block is GoSyscallBegin … GoSyscallEnd at its real end; one that
 *     blocked is GoSyscallBegin, ProcStop, and GoSyscallEndBlocked at its return;
 *   - threads existing at the start are created from P 0 by their own M (so they are named
 *     from time 0), or declared Waiting when they were blocked (§3.4);
 *   - generations close every generation_ns ticks or generation_bytes of events (§1.8): all
 *     batches of the generation, its Frequency, then the strings and stacks it used; the
 *     next one opens with the status of every P and live goroutine, so a reader keeps one
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
#include <gotrace/capture.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "gowire.h"
#include "gowire_internal.h"
#include "grow.h"
#include "u64map.h"

const struct gt_go2_event_desc gt_go2_events[GT_GO2_EVENT_COUNT] = {
#define GT_GO2_EVENT_DESC(name, goname, byte, nargs, timed) \
	[GT_GO2_##name] = {goname, byte, nargs, timed},
	GT_GO2_EVENTS(GT_GO2_EVENT_DESC)
#undef GT_GO2_EVENT_DESC
};

#define NO_ID UINT64_MAX                 /* NoThread / NoProc / NoGoroutine */
#define BATCH_FLUSH_BYTES (32u * 1024u)  /* an M's batch is written out past this size */
#define MAX_BATCH_BYTES 65536u           /* the readers' limit on a batch's data */
#define OUT_BUFFER_BYTES (1u << 20)
#define MAX_EVENT_BYTES (1u + 11u * 10u)
#define MAX_FRAMES 128u                  /* the readers' limit on a stack */
#define DEFAULT_GENERATION_NS 1000000000ull
#define DEFAULT_GENERATION_BYTES (4ull << 20)

enum { G_NONE, G_PENDING, G_RUNNABLE, G_RUNNING, G_SYSCALL, G_WAITING, G_DEAD };
enum { GS_RUNNABLE = 1, GS_RUNNING = 2, GS_SYSCALL = 3, GS_WAITING = 4 };  /* GoStatus */
enum { P_IDLE = 2, P_RUNNING = 1, P_SYSCALL = 3 };                        /* ProcStatus */

struct m2 {
	uint64_t id;
	struct bytebuf buf;      /* the open batch's events */
	uint64_t base;           /* its base ticks */
	uint64_t n_ev;           /* its events */
	uint64_t last;           /* last ticks written by this M (any generation) */
	uint32_t p;              /* P held + 1, 0 = none */
	uint64_t g;              /* its goroutine while running or in a syscall, 0 = none */
	uint64_t owner;          /* the live goroutine whose thread this M is, 0 = none */
};

struct g2 {
	uint8_t st;
	bool wait_at_start;      /* G_PENDING: blocked when the trace began */
	uint32_t tid;
	struct m2 *m;            /* its thread, once known */
	uint64_t seq;
	uint64_t new_stk;        /* G_PENDING: its creation's new stack */
	uint64_t create_ticks;
	uint64_t label_shown;    /* string id of the last GoLabel written */
	uint64_t changed;        /* ticks written of its last change of state */
};

struct p2 {
	uint8_t st;
	uint64_t seq;
	struct m2 *m;            /* holder, NULL when idle */
	uint64_t changed;        /* ticks written of its last change of state */
};

struct str2 {
	size_t off, len;         /* in strings.arena */
	uint64_t gen;            /* last generation that used it */
};

struct frame2 {
	uint64_t pc, func, file, line;
};

struct stk2 {
	uint64_t id;
	size_t off;              /* first frame in frames */
	uint32_t n;
	uint64_t gen;
};

struct idlist {
	uint64_t *v;
	size_t n, cap;
};

struct wire22 {
	struct gt_wire base;
	struct gt_wire_options opt;
	int fd;
	int error;
	struct bytebuf out;
	struct gt_wire_stats stats;

	uint32_t n_ps;
	struct p2 *ps;
	struct g2 *gs;
	size_t cap_gs;
	struct m2 **ms;          /* ms[0]: NoThread */
	size_t n_ms, cap_ms;
	struct gt_u64map m_by_id;  /* M id -> index in ms */

	uint64_t gen;            /* the open generation, 0 = none yet */
	uint64_t gen_start;      /* its first tick (model ticks) */
	uint64_t gen_bytes;      /* event bytes written in it */
	uint64_t freq;           /* its Frequency */
	int64_t offset;          /* written ticks = model ticks + offset */
	uint64_t max_ticks;
	bool prologue_done;

	struct intern_table strings, stacks;
	uint64_t next_string_id, next_stack_id;
	struct str2 *strs;       /* by string id */
	size_t cap_strs;
	struct stk2 *stks;
	size_t n_stks, cap_stks;
	struct gt_u64map stk_by_id;  /* stack id -> index in stks + 1 */
	struct gt_u64map undefined;  /* stack id used before defined -> generation it was listed */
	struct frame2 *frames;
	size_t n_frames, cap_frames;
	struct idlist used_strings, used_stacks;  /* ids the open generation references */
	struct bytebuf samples;  /* the open generation's CPU samples batch (§1.7) */
	uint64_t reason_ids[GT_BK_COUNT];
};

static struct wire22 *w22(struct gt_wire *w)
{
	return (struct wire22 *)w;
}

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
static void batch_write(struct wire22 *w, uint64_t m_id, uint64_t base, const uint8_t *data,
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

static void m_flush(struct wire22 *w, struct m2 *m)
{
	if (!m->buf.len)
		return;
	batch_write(w, m->id, m->base, m->buf.data, m->buf.len);
	m->buf.len = 0;
	m->n_ev = 0;
}

/* ---------------------------------------------------------------------------------------- */
/* strings and stacks: global ids, defined again in every generation that uses them */

static void id_push(struct wire22 *w, struct idlist *l, uint64_t id)
{
	if (!gt_grow(&l->v, &l->cap, l->n + 1, sizeof *l->v)) {
		w->error = ENOMEM;
		return;
	}
	l->v[l->n++] = id;
}

static void use_string(struct wire22 *w, uint64_t id)
{
	if (!id || id >= w->next_string_id || w->strs[id].gen == w->gen)
		return;
	w->strs[id].gen = w->gen;
	id_push(w, &w->used_strings, id);
}

static struct stk2 *stack_find(struct wire22 *w, uint64_t id)
{
	const uint64_t *v = gt_u64map_find(&w->stk_by_id, id);
	return v && *v ? &w->stks[*v - 1] : NULL;
}

static void use_stack(struct wire22 *w, uint64_t id)
{
	if (!id)
		return;
	struct stk2 *s = stack_find(w, id);
	const uint64_t *listed = gt_u64map_find(&w->undefined, id);
	bool done = listed && *listed == w->gen;
	if (s) {
		if (s->gen == w->gen)
			return;
		s->gen = w->gen;   /* its frames' strings: when the table is written */
	} else {
		/* not defined yet (the model defines a referenced stack at the latest at its
		 * end): this generation gets a placeholder frame unless it is defined in time */
		bool found;
		uint64_t *slot = gt_u64map_slot(&w->undefined, id, &found);
		if (!slot) {
			w->error = ENOMEM;
			return;
		}
		*slot = w->gen;
	}
	if (!done)
		id_push(w, &w->used_stacks, id);
}

static uint64_t w22_string(struct gt_wire *gw, const char *s, size_t len)
{
	struct wire22 *w = w22(gw);
	bool inserted;
	uint64_t id = gtw_intern_string(&w->strings, &w->next_string_id, &s, &len, &inserted);
	if ((!id && len) || (inserted && !gt_grow(&w->strs, &w->cap_strs, id + 1, sizeof *w->strs))) {
		w->error = ENOMEM;
		return 0;
	}
	if (inserted) {
		/* the arena holds the key bytes: the entry just added is the last */
		w->strs[id] = (struct str2){w->strings.arena.len - len, len, 0};
		w->stats.strings++;
	}
	return id;
}

static uint64_t cstring(struct wire22 *w, const char *s)
{
	return w22_string(&w->base, s, s ? strlen(s) : 0);
}

static void w22_define_stack(struct gt_wire *gw, uint64_t id, const struct gt_wire_frame *frames,
			     size_t n)
{
	struct wire22 *w = w22(gw);
	if (!n || !id || stack_find(w, id))
		return;   /* the first definition wins, as in the 1.19 writer */
	/* the innermost frames and the outermost (the start routine: it names the thread) */
	size_t k = n > MAX_FRAMES ? MAX_FRAMES : n;
	if (!gt_grow(&w->frames, &w->cap_frames, w->n_frames + k, sizeof *w->frames) ||
	    !gt_grow(&w->stks, &w->cap_stks, w->n_stks + 1, sizeof *w->stks)) {
		w->error = ENOMEM;
		return;
	}
	for (size_t i = 0; i < k; i++) {
		const struct gt_wire_frame *f = i + 1 == k ? &frames[n - 1] : &frames[i];
		w->frames[w->n_frames + i] = (struct frame2){f->pc, cstring(w, f->func),
							     cstring(w, f->file), f->line};
	}
	w->stats.frames_cut += n - k;
	bool found;
	uint64_t *slot = gt_u64map_slot(&w->stk_by_id, id, &found);
	if (!slot) {
		w->error = ENOMEM;
		return;
	}
	w->stks[w->n_stks] = (struct stk2){id, w->n_frames, (uint32_t)k, 0};
	*slot = ++w->n_stks;
	w->n_frames += k;
	w->stats.stacks++;
}

static uint64_t w22_stack(struct gt_wire *gw, const struct gt_wire_frame *frames, size_t n)
{
	struct wire22 *w = w22(gw);
	bool inserted;
	uint64_t id = gtw_intern_stack(&w->stacks, &w->next_stack_id, frames, n, &inserted);
	if (!id && n)
		w->error = ENOMEM;
	if (inserted)
		w22_define_stack(gw, id, frames, n);
	return id;
}

static void w22_set_stack_id_base(struct gt_wire *gw, uint64_t id_base)
{
	struct wire22 *w = w22(gw);
	if (id_base > w->next_stack_id)
		w->next_stack_id = id_base;
}

/* A table batch (Strings or Stacks): entries appended to buf, written out before 64 KiB. */
struct table_batch {
	uint8_t kind;
	struct bytebuf buf;
};

static void table_room(struct wire22 *w, struct table_batch *t, size_t room)
{
	if (t->buf.len && t->buf.len + room > MAX_BATCH_BYTES) {
		batch_write(w, NO_ID, w->gen_start + w->offset, t->buf.data, t->buf.len);
		t->buf.len = 0;
	}
	if (!gtw_bytebuf_reserve(&t->buf, room)) {
		w->error = ENOMEM;
		return;
	}
	if (!t->buf.len)
		t->buf.data[t->buf.len++] = t->kind;
}

static void table_end(struct wire22 *w, struct table_batch *t)
{
	if (t->buf.len > 1)
		batch_write(w, NO_ID, w->gen_start + w->offset, t->buf.data, t->buf.len);
	free(t->buf.data);
}

static void write_tables(struct wire22 *w)
{
	struct table_batch t = {gt_go2_events[GT_GO2_STACKS].type, {0}};
	uint64_t lost = 0;
	for (size_t i = 0; i < w->used_stacks.n && !w->error; i++) {
		uint64_t id = w->used_stacks.v[i];
		struct stk2 *s = stack_find(w, id);
		struct frame2 placeholder;
		if (!s) {
			if (!lost)
				lost = cstring(w, "[stack defined later]");
			use_string(w, lost);
			placeholder = (struct frame2){1, lost, lost, 0};
		}
		const struct frame2 *f = s ? &w->frames[s->off] : &placeholder;
		uint32_t n = s ? s->n : 1;
		for (uint32_t j = 0; j < n; j++) {
			use_string(w, f[j].func);
			use_string(w, f[j].file);
		}
		table_room(w, &t, 1 + 2 * 10 + (size_t)n * 40);
		if (w->error)
			break;
		uint8_t *o = t.buf.data + t.buf.len;
		size_t k = 0;
		o[k++] = gt_go2_events[GT_GO2_STACK].type;
		k += gt_uvarint_put(o + k, id);
		k += gt_uvarint_put(o + k, n);
		for (uint32_t j = 0; j < n; j++) {
			k += gt_uvarint_put(o + k, f[j].pc);
			k += gt_uvarint_put(o + k, f[j].func);
			k += gt_uvarint_put(o + k, f[j].file);
			k += gt_uvarint_put(o + k, f[j].line);
		}
		t.buf.len += k;
	}
	table_end(w, &t);
	t = (struct table_batch){gt_go2_events[GT_GO2_STRINGS].type, {0}};
	for (size_t i = 0; i < w->used_strings.n && !w->error; i++) {
		uint64_t id = w->used_strings.v[i];
		const struct str2 *s = &w->strs[id];
		table_room(w, &t, 1 + 2 * 10 + s->len);
		if (w->error)
			break;
		uint8_t *o = t.buf.data + t.buf.len;
		size_t k = 0;
		o[k++] = gt_go2_events[GT_GO2_STRING].type;
		k += gt_uvarint_put(o + k, id);
		k += gt_uvarint_put(o + k, s->len);
		memcpy(o + k, w->strings.arena.data + s->off, s->len);
		t.buf.len += k + s->len;
	}
	table_end(w, &t);
	w->used_stacks.n = w->used_strings.n = 0;
}

/* ---------------------------------------------------------------------------------------- */
/* events on an M */

static struct m2 *m_new(struct wire22 *w, uint64_t id)
{
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
	return m;
}

/* The M of goroutine g: its thread's TID (§3.1: never 0 nor a viewer's pseudo-row id); a
 * TID still held by another live goroutine (a reused or duplicated one) gets an id of its
 * own. */
static struct m2 *m_of(struct wire22 *w, uint64_t g, uint32_t tid)
{
	struct g2 *gg = &w->gs[g];
	if (gg->m)
		return gg->m;
	if (!gg->tid)
		gg->tid = tid;
	uint64_t id = gg->tid ? gg->tid : (1ull << 33) | g;
	if (id >= 1000000 && id <= 1000005)
		id |= 1ull << 32;
	struct m2 *m = m_new(w, id);
	if (m && m->owner && m->owner != g && w->gs[m->owner].st != G_DEAD)
		m = m_new(w, g << 34 | id);
	if (!m)
		return NULL;
	m->owner = g;
	gg->m = m;
	return m;
}

static struct m2 *no_thread(struct wire22 *w)
{
	return w->ms[0];
}

/* Where ev, by m, records the time it changes a P's or a goroutine's state (NULL: it changes
 * none that an event of another M waits for). */
static uint64_t *changed_by(struct wire22 *w, struct m2 *m, enum gt_go2_event ev,
			    const uint64_t *args)
{
	uint64_t g = m->g ? m->g : m->owner;
	switch (ev) {
	case GT_GO2_PROC_START: case GT_GO2_PROC_STATUS:
		return args[0] < w->n_ps ? &w->ps[args[0]].changed : NULL;
	case GT_GO2_PROC_STOP: case GT_GO2_GO_SYSCALL_BEGIN:
		return m->p ? &w->ps[m->p - 1].changed : NULL;
	case GT_GO2_GO_START: case GT_GO2_GO_UNBLOCK: case GT_GO2_GO_STATUS: case GT_GO2_GO_CREATE:
		return args[0] < w->cap_gs ? &w->gs[args[0]].changed : NULL;
	case GT_GO2_GO_STOP: case GT_GO2_GO_BLOCK: case GT_GO2_GO_DESTROY:
	case GT_GO2_GO_SYSCALL_END_BLOCKED: case GT_GO2_GO_DESTROY_SYSCALL:
		return g && g < w->cap_gs ? &w->gs[g].changed : NULL;
	default:
		return NULL;
	}
}

/* Appends one event (type byte, tick delta, args) to m's batch. */
static void emit(struct wire22 *w, struct m2 *m, enum gt_go2_event ev, uint64_t ticks,
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
	uint64_t *changed = changed_by(w, m, ev, args);
	if (changed && (ev == GT_GO2_PROC_START || ev == GT_GO2_GO_START || ev == GT_GO2_GO_UNBLOCK)) {
		if (at < *changed + 4)
			at = *changed + 4;
		if ((at - *changed) * 99 < (m->n_ev + 3) * 100)
			m_flush(w, m);
	}
	if (changed)
		*changed = at;
	if (m->buf.len + MAX_EVENT_BYTES > BATCH_FLUSH_BYTES)
		m_flush(w, m);
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
	w->gen_bytes += k;
	w->stats.events++;
}

#define EMIT(w, m, ev, ticks, ...) emit(w, m, GT_GO2_##ev, ticks, (const uint64_t[]){__VA_ARGS__})

static void proc_stop(struct wire22 *w, struct m2 *m, uint64_t ticks)
{
	if (!m || !m->p)
		return;
	EMIT(w, m, PROC_STOP, ticks, 0);
	w->ps[m->p - 1].st = P_IDLE;
	w->ps[m->p - 1].m = NULL;
	m->p = 0;
}

static void g_stop(struct wire22 *w, uint64_t g, uint64_t ticks, enum gt_go2_event ev,
		   uint64_t reason, uint64_t stk, uint8_t st);

/* m holds P p, running (ProcStart); whoever held it lets it go. */
static void take_p(struct wire22 *w, struct m2 *m, uint32_t p, uint64_t ticks)
{
	if (!m || p >= w->n_ps || m->p == p + 1)
		return;
	proc_stop(w, m, ticks);
	struct m2 *holder = w->ps[p].m;
	if (holder) {
		/* the model moves a goroutine off a CPU before another runs there */
		w->stats.repaired++;
		if (holder->g && w->gs[holder->g].st == G_RUNNING)
			g_stop(w, holder->g, ticks, GT_GO2_GO_STOP, cstring(w, "preempted"), 0,
			       G_RUNNABLE);
		proc_stop(w, holder, ticks);
	}
	EMIT(w, m, PROC_START, ticks, p, ++w->ps[p].seq);
	w->ps[p].st = P_RUNNING;
	w->ps[p].m = m;
	m->p = p + 1;
}

/* A running goroutine stops (GoStop/GoBlock, or GoDestroy) and its thread gives the CPU up. */
static void g_stop(struct wire22 *w, uint64_t g, uint64_t ticks, enum gt_go2_event ev,
		   uint64_t reason, uint64_t stk, uint8_t st)
{
	struct g2 *gg = &w->gs[g];
	struct m2 *m = gg->m;
	if (gg->st != G_RUNNING || !m) {
		w->stats.skipped++;
		return;
	}
	use_string(w, reason);
	use_stack(w, stk);
	if (ev == GT_GO2_GO_DESTROY)
		emit(w, m, ev, ticks, NULL);
	else
		emit(w, m, ev, ticks, (const uint64_t[]){reason, stk});
	gg->st = st;
	m->g = 0;
	proc_stop(w, m, ticks);
}

static const char *sys_name(uint32_t nr)
{
	switch (nr) {
	case SYS_read: return "read";
	case SYS_readv: return "readv";
	case SYS_pread64: return "pread";
	case SYS_recvfrom: return "recv";
	case SYS_recvmsg: return "recvmsg";
	case SYS_write: return "write";
	case SYS_writev: return "writev";
	case SYS_pwrite64: return "pwrite";
	case SYS_sendto: return "send";
	case SYS_sendmsg: return "sendmsg";
	case SYS_ppoll: return "ppoll";
	case SYS_pselect6: return "pselect";
	case SYS_epoll_pwait: return "epoll_pwait";
	case SYS_accept4: return "accept4";
	case SYS_accept: return "accept";
	case SYS_connect: return "connect";
	case SYS_wait4: return "wait4";
	case SYS_waitid: return "waitid";
#ifdef SYS_poll
	case SYS_poll: return "poll";
#endif
#ifdef SYS_select
	case SYS_select: return "select";
#endif
#ifdef SYS_epoll_wait
	case SYS_epoll_wait: return "epoll_wait";
#endif
	default: return NULL;
	}
}

static bool sys_writes(uint32_t nr)
{
	return nr == SYS_write || nr == SYS_writev || nr == SYS_pwrite64 || nr == SYS_sendto ||
	       nr == SYS_sendmsg;
}

/* The block reason in C terms (GO-TRACE-V2.md §5.3), chosen for the profile it lands in:
 * "sync: <call>" (sync), "chan receive/send: <call> pipe" (sync: a hand-off from another
 * thread), "network" exactly (net), "sleep", "wait: <call>" (none). */
static uint64_t block_reason(struct wire22 *w, enum gt_go_event ev, uint64_t wait)
{
	static const char *const by_kind[GT_BK_COUNT] = {
		[GT_BK_MUTEX] = "sync: pthread_mutex_lock",
		[GT_BK_RWLOCK_RD] = "sync: pthread_rwlock_rdlock",
		[GT_BK_RWLOCK_WR] = "sync: pthread_rwlock_wrlock",
		[GT_BK_COND] = "sync: pthread_cond_wait",
		[GT_BK_SEM] = "sync: sem_wait",
		[GT_BK_BARRIER] = "sync: pthread_barrier_wait",
		[GT_BK_JOIN] = "sync: pthread_join",
		[GT_BK_SLEEP] = "sleep",
		[GT_BK_FUTEX] = "sync: futex",
	};
	uint32_t kind = wait & 0xff, fd_kind = (wait >> 8) & 0xff, nr = (uint32_t)(wait >> 16);
	if (kind < GT_BK_COUNT && by_kind[kind]) {
		if (!w->reason_ids[kind])
			w->reason_ids[kind] = cstring(w, by_kind[kind]);
		return w->reason_ids[kind];
	}
	const char *call = sys_name(nr);
	char buf[64];
	if (kind == GT_WIRE_WAIT_UNTRACED)
		return cstring(w, "off-CPU wait, not seen by the hooks");
	if (kind == GT_WIRE_WAIT_CHILD) {
		snprintf(buf, sizeof buf, "wait: %s", call ? call : "child");
		return cstring(w, buf);
	}
	if (kind == GT_WIRE_WAIT_NET && fd_kind != GT_FD_SOCKET &&
	    (fd_kind == GT_FD_PIPE || fd_kind == GT_FD_OTHER)) {
		snprintf(buf, sizeof buf, "%s: %s %s", sys_writes(nr) ? "chan send" : "chan receive",
			 call ? call : "syscall on", fd_kind == GT_FD_PIPE ? "pipe" : "fd");
		return cstring(w, buf);
	}
	switch (ev) {
	case GT_GO_GO_BLOCK_NET: return cstring(w, "network");
	case GT_GO_GO_BLOCK_COND: return cstring(w, by_kind[GT_BK_COND]);
	case GT_GO_GO_SLEEP: return cstring(w, "sleep");
	case GT_GO_GO_BLOCK_SYNC: return cstring(w, "sync");
	default: return cstring(w, "blocked");
	}
}

/* ---------------------------------------------------------------------------------------- */
/* generations */

static void prologue_end(struct wire22 *w);

/* freq, if within 1 % of 1e9 (as gt_clock_frequency's fit always is: emit() relies on it),
 * else 1e9. */
static uint64_t near_1e9(uint64_t freq)
{
	return freq >= 990000000u && freq <= 1010000000u ? freq : GT_WIRE_FREQUENCY_NS;
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
	for (uint32_t p = 0; p < w->n_ps; p++) {
		struct p2 *pp = &w->ps[p];
		pp->seq = 0;
		EMIT(w, pp->m ? pp->m : no_thread(w), PROC_STATUS, ticks, p, pp->m ? pp->st : P_IDLE);
	}
	for (uint64_t g = 1; g < w->cap_gs; g++) {
		struct g2 *gg = &w->gs[g];
		gg->seq = 0;
		struct m2 *m = gg->m ? gg->m : no_thread(w);
		switch (gg->st) {
		case G_RUNNING: EMIT(w, m, GO_STATUS, ticks, g, m->id, GS_RUNNING); break;
		case G_SYSCALL: EMIT(w, m, GO_STATUS, ticks, g, m->id, GS_SYSCALL); break;
		case G_RUNNABLE: EMIT(w, m, GO_STATUS, ticks, g, NO_ID, GS_RUNNABLE); break;
		case G_WAITING: EMIT(w, m, GO_STATUS, ticks, g, NO_ID, GS_WAITING); break;
		default: break;
		}
	}
}

static void gen_close(struct wire22 *w, uint64_t freq)
{
	for (size_t i = 0; i < w->n_ms; i++) {
		struct m2 *m = w->ms[i];
		m_flush(w, m);
		if (!m->owner && !m->p && !m->g) {
			free(m->buf.data);   /* a thread that ended: no more events */
			m->buf = (struct bytebuf){0};
		}
	}
	uint8_t f[1 + 10];
	f[0] = gt_go2_events[GT_GO2_FREQUENCY].type;
	size_t k = 1 + gt_uvarint_put(f + 1, freq);
	batch_write(w, NO_ID, w->gen_start + w->offset, f, k);
	if (w->samples.len > 1)
		batch_write(w, NO_ID, w->gen_start + w->offset, w->samples.data, w->samples.len);
	w->samples.len = 0;
	write_tables(w);
}

/* A generation closes after generation_ns or generation_bytes (once the threads existing at
 * the start are declared). */
static void gen_check(struct wire22 *w, uint64_t ticks)
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

/* ---------------------------------------------------------------------------------------- */
/* the 1.19 vocabulary, said again */

static bool g_slot(struct wire22 *w, uint64_t g)
{
	if (g && g < (1ull << 32) && gt_grow(&w->gs, &w->cap_gs, g + 1, sizeof *w->gs))
		return true;
	if (g)
		w->error = ENOMEM;
	return false;
}

static uint64_t running_on(struct wire22 *w, uint64_t p)
{
	if (p >= w->n_ps || !w->ps[p].m)
		return 0;
	uint64_t g = w->ps[p].m->g;
	return g && w->gs[g].st == G_RUNNING ? g : 0;
}

static void create(struct wire22 *w, uint64_t p, uint64_t ticks, const uint64_t *args,
		   uint64_t actor, uint32_t tid)
{
	uint64_t g = args[0];
	if (!g_slot(w, g) || w->gs[g].st != G_NONE)
		return;
	struct g2 *gg = &w->gs[g];
	if (!w->prologue_done && actor == g) {
		/* existing at the start: declared when the prologue ends, waiting or created */
		*gg = (struct g2){.st = G_PENDING, .tid = tid, .new_stk = args[1],
				  .create_ticks = ticks};
		return;
	}
	use_stack(w, args[1]);
	if (actor == g || !actor || w->gs[actor].st != G_RUNNING) {
		/* first seen mid-trace: created by its own thread on the CPU it shows up on */
		gg->tid = tid;
		struct m2 *m = m_of(w, g, actor == g ? tid : 0);
		take_p(w, m, (uint32_t)p, ticks);
		EMIT(w, m, GO_CREATE, ticks, g, args[1], 0);
	} else {
		use_stack(w, args[2]);
		EMIT(w, w->gs[actor].m, GO_CREATE, ticks, g, args[1], args[2]);
	}
	gg->st = G_RUNNABLE;
	gg->seq = 0;
}

static void prologue_end(struct wire22 *w)
{
	w->prologue_done = true;
	for (uint64_t g = 1; g < w->cap_gs; g++) {
		struct g2 *gg = &w->gs[g];
		if (gg->st != G_PENDING)
			continue;
		struct m2 *m = m_of(w, g, gg->tid);
		if (gg->wait_at_start) {
			EMIT(w, m, GO_STATUS, gg->create_ticks, g, NO_ID, GS_WAITING);
			gg->st = G_WAITING;
		} else {
			/* from P 0, which the prologue owns: named by its start routine from time 0 */
			take_p(w, m, 0, gg->create_ticks);
			use_stack(w, gg->new_stk);
			EMIT(w, m, GO_CREATE, gg->create_ticks, g, gg->new_stk, 0);
			proc_stop(w, m, gg->create_ticks);
			gg->st = G_RUNNABLE;
		}
		gg->seq = 0;
	}
}

static void start(struct wire22 *w, uint64_t p, uint64_t ticks, uint64_t g, uint64_t label,
		  uint32_t tid)
{
	if (!g_slot(w, g) || w->gs[g].st == G_NONE || w->gs[g].st == G_DEAD) {
		w->stats.skipped++;
		return;
	}
	struct g2 *gg = &w->gs[g];
	struct m2 *m = m_of(w, g, tid);
	if (!m)
		return;
	if (gg->st == G_RUNNING && m->p == p + 1)
		return;
	if (gg->st != G_RUNNABLE) {
		/* the model unblocks before it starts: anything else is repaired here */
		w->stats.repaired++;
		if (gg->st == G_RUNNING)
			g_stop(w, g, ticks, GT_GO2_GO_STOP, cstring(w, "preempted"), 0, G_RUNNABLE);
		else if (gg->st == G_WAITING)
			EMIT(w, m, GO_UNBLOCK, ticks, g, ++gg->seq, 0);
		else if (gg->st == G_SYSCALL) {
			proc_stop(w, m, ticks);
			EMIT(w, m, GO_SYSCALL_END_BLOCKED, ticks, 0);
			m->g = 0;
		}
		gg->st = G_RUNNABLE;
	}
	take_p(w, m, (uint32_t)p, ticks);
	EMIT(w, m, GO_START, ticks, g, ++gg->seq);
	gg->st = G_RUNNING;
	m->g = g;
	if (label && label != gg->label_shown) {
		use_string(w, label);
		EMIT(w, m, GO_LABEL, ticks, label);
		gg->label_shown = label;
	}
}

static void unblock(struct wire22 *w, uint64_t actor, uint32_t tid, uint64_t g, uint64_t stk,
		    uint64_t ticks)
{
	if (!g_slot(w, g) || w->gs[g].st != G_WAITING) {
		w->stats.skipped++;
		return;
	}
	/* by the waker's thread; an unknown waker: the woken thread's own (an arrow from
	 * NoThread would start on a row that does not exist, §4.2) */
	struct m2 *m = actor && actor != g && w->gs[actor].m ? w->gs[actor].m
		     : m_of(w, g, actor == g ? tid : 0);
	use_stack(w, stk);
	EMIT(w, m ? m : no_thread(w), GO_UNBLOCK, ticks, g, ++w->gs[g].seq, stk);
	w->gs[g].st = G_RUNNABLE;
}

static void syscall(struct wire22 *w, uint64_t g, uint64_t ticks, uint64_t stk, uint64_t end)
{
	struct g2 *gg = &w->gs[g];
	struct m2 *m = gg->m;
	if (gg->st != G_RUNNING || !m || !m->p) {
		w->stats.skipped++;
		return;
	}
	struct p2 *pp = &w->ps[m->p - 1];
	use_stack(w, stk);
	EMIT(w, m, GO_SYSCALL_BEGIN, ticks, ++pp->seq, stk);
	if (end) {
		EMIT(w, m, GO_SYSCALL_END, end > ticks ? end : ticks, 0);
		return;
	}
	gg->st = G_SYSCALL;
	pp->st = P_SYSCALL;
}

static void sysexit(struct wire22 *w, uint64_t g, uint64_t ticks)
{
	if (!g_slot(w, g) || w->gs[g].st != G_SYSCALL || !w->gs[g].m) {
		w->stats.skipped++;
		return;
	}
	struct m2 *m = w->gs[g].m;
	proc_stop(w, m, ticks);
	EMIT(w, m, GO_SYSCALL_END_BLOCKED, ticks, 0);
	w->gs[g].st = G_RUNNABLE;
	m->g = 0;
}

static void destroy(struct wire22 *w, uint64_t g, uint64_t ticks)
{
	struct g2 *gg = &w->gs[g];
	struct m2 *m = gg->m;
	if (gg->st == G_SYSCALL && m) {
		proc_stop(w, m, ticks);
		EMIT(w, m, GO_DESTROY_SYSCALL, ticks, 0);
		gg->st = G_DEAD;
		m->g = 0;
	} else {
		g_stop(w, g, ticks, GT_GO2_GO_DESTROY, 0, 0, G_DEAD);
	}
	if (m && m->owner == g)
		m->owner = 0;
}

/* A user annotation by the running goroutine: args as the 1.22 event takes them, string
 * and stack ids marked used. */
static void user(struct wire22 *w, uint64_t g, uint64_t ticks, enum gt_go2_event ev,
		 const uint64_t *args, uint64_t name, uint64_t stk)
{
	if (!g || w->gs[g].st != G_RUNNING) {
		w->stats.skipped++;
		return;
	}
	use_string(w, name);
	use_stack(w, stk);
	emit(w, w->gs[g].m, ev, ticks, args);
}

static void w22_event(struct gt_wire *gw, uint64_t p, enum gt_go_event ev, uint64_t ticks,
		      const uint64_t *args, const struct gt_wire_actor *who)
{
	struct wire22 *w = w22(gw);
	if (w->error)
		return;
	gen_check(w, ticks);
	uint32_t tid = who ? who->tid : 0;
	uint64_t g = who && who->g < w->cap_gs ? who->g : 0;
	if (!who || !who->g)
		g = running_on(w, p);
	switch (ev) {
	case GT_GO_GOMAXPROCS:
		prologue_end(w);
		break;
	case GT_GO_GO_CREATE:
		create(w, p, ticks, args, who ? who->g : 0, tid);
		break;
	case GT_GO_GO_WAITING:
		if (args[0] < w->cap_gs && w->gs[args[0]].st == G_PENDING)
			w->gs[args[0]].wait_at_start = true;
		break;
	case GT_GO_GO_START:
		start(w, p, ticks, args[0], 0, tid);
		break;
	case GT_GO_GO_START_LABEL:
		start(w, p, ticks, args[0], args[2], tid);
		break;
	case GT_GO_GO_PREEMPT:
		if (g)
			g_stop(w, g, ticks, GT_GO2_GO_STOP, cstring(w, "preempted"), args[0], G_RUNNABLE);
		break;
	case GT_GO_GO_SCHED:
		if (g)
			g_stop(w, g, ticks, GT_GO2_GO_STOP, cstring(w, "sched_yield"), args[0], G_RUNNABLE);
		break;
	case GT_GO_GO_BLOCK: case GT_GO_GO_BLOCK_SYNC: case GT_GO_GO_BLOCK_COND:
	case GT_GO_GO_SLEEP: case GT_GO_GO_BLOCK_NET:
		if (g)
			g_stop(w, g, ticks, GT_GO2_GO_BLOCK, block_reason(w, ev, args[1]), args[0],
			       G_WAITING);
		break;
	case GT_GO_GO_UNBLOCK:
		unblock(w, who && who->g ? g : 0, tid, args[0], args[2], ticks);
		break;
	case GT_GO_GO_END:
		if (g)
			destroy(w, g, ticks);
		break;
	case GT_GO_GO_SYSCALL:
		if (g)
			syscall(w, g, ticks, args[0], args[1]);
		break;
	case GT_GO_GO_SYSEXIT:
		sysexit(w, args[0], ticks);
		break;
	case GT_GO_PROC_STOP:
		/* a P given up in a syscall; the others were stopped with their goroutine */
		if (p < w->n_ps && w->ps[p].st == P_SYSCALL)
			proc_stop(w, w->ps[p].m, ticks);
		break;
	case GT_GO_USER_TASK_CREATE:
		user(w, g, ticks, GT_GO2_USER_TASK_BEGIN, args, args[2], args[3]);
		break;
	case GT_GO_USER_TASK_END:
		user(w, g, ticks, GT_GO2_USER_TASK_END, args, 0, args[1]);
		break;
	case GT_GO_USER_REGION:
		user(w, g, ticks, args[1] ? GT_GO2_USER_REGION_END : GT_GO2_USER_REGION_BEGIN,
		     (const uint64_t[]){args[0], args[2], args[3]}, args[2], args[3]);
		break;
	default:   /* ProcStart, GoSysBlock: implied by the events above */
		break;
	}
}

static void w22_user_log(struct gt_wire *gw, uint64_t p, uint64_t ticks, uint64_t task,
			 uint64_t key, uint64_t stack, const char *msg, size_t len)
{
	struct wire22 *w = w22(gw);
	if (w->error)
		return;
	gen_check(w, ticks);
	uint64_t value = w22_string(gw, msg, len);
	use_string(w, value);
	user(w, running_on(w, p), ticks, GT_GO2_USER_LOG, (const uint64_t[]){task, key, value, stack},
	     key, stack);
}

/* A running G renamed: its GoLabel on its M now (§2.1), not at its next start only. */
static bool w22_running_label(struct gt_wire *gw, uint64_t ticks, const struct gt_wire_actor *who,
			      uint64_t label)
{
	struct wire22 *w = w22(gw);
	if (w->error || !who || !who->g || who->g >= w->cap_gs || !label)
		return false;
	struct g2 *gg = &w->gs[who->g];
	if (gg->st != G_RUNNING || !gg->m || gg->label_shown == label)
		return false;
	gen_check(w, ticks);
	use_string(w, label);
	EMIT(w, gg->m, GO_LABEL, ticks, label);
	gg->label_shown = label;
	return true;
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
		batch_write(w, NO_ID, w->gen_start + w->offset, b->data, b->len);
		b->len = 0;
	}
	if (!gtw_bytebuf_reserve(b, 1 + 1 + 5 * 10)) {
		w->error = ENOMEM;
		return;
	}
	if (!b->len)
		b->data[b->len++] = 0x06;   /* EvCPUSamples: the batch's kind */
	uint64_t g = who ? who->g : 0;
	uint64_t m = g && g < w->cap_gs && w->gs[g].m ? w->gs[g].m->id : NO_ID;
	use_stack(w, stack);
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
	free(w->out.data);
	gtw_intern_free(&w->strings);
	gtw_intern_free(&w->stacks);
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
	.event = w22_event,
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
	if (!w->ps || !w->out.data || !m_new(w, NO_ID) ||
	    !gt_grow(&w->strs, &w->cap_strs, 1, sizeof *w->strs)) {
		w22_free(&w->base);
		return NULL;
	}
	for (uint32_t p = 0; p < w->n_ps; p++)
		w->ps[p].st = P_IDLE;
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
