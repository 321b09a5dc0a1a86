/* gowire: see gowire.h.  The buffers follow Go's runtime/tracebuf.go: ensure(room) flushes
 * a full buffer as one batch, events carry deltas from the previous timed event of the batch,
 * and metadata (strings, stacks) rides inside P 0's buffer, which the model uses for nothing
 * but metadata and prologue events. */
#include "gowire.h"
#include "gowire_internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const struct gt_go_event_desc gt_go_events[GT_GO_EVENT_COUNT] = {
#define GT_GO_EVENT_DESC(name, goname, byte, nargs, stack) [GT_GO_##name] = {goname, byte, nargs, stack},
	GT_GO_EVENTS(GT_GO_EVENT_DESC)
#undef GT_GO_EVENT_DESC
};

#define BATCH_FLUSH_BYTES (32u * 1024u)  /* a P buffer is written out past this size */
#define OUT_BUFFER_BYTES (1u << 20)
#define MAX_EVENT_BYTES (1u + 10u + 12u * 10u)
#define META_P 0u

bool gtw_bytebuf_reserve(struct bytebuf *b, size_t room)
{
	if (b->len + room <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 4096;
	while (cap < b->len + room)
		cap *= 2;
	uint8_t *d = realloc(b->data, cap);
	if (!d)
		return false;
	b->data = d;
	b->cap = cap;
	return true;
}

struct wire_p {
	struct bytebuf buf;
	uint64_t last_ticks;    /* last absolute ticks written on this P */
	uint64_t batch_ticks;   /* running tick value inside the open batch */
	bool open;              /* buf holds an EvBatch header */
};

struct wire19 {
	struct gt_wire base;    /* ops: the 1.19 writer */
	int fd;
	int error;
	uint32_t n_ps;
	struct wire_p *ps;      /* n_ps + 1: the last one is P none */
	struct bytebuf out;
	struct bytebuf samples;  /* an open batch of CPU samples, none when empty */
	struct gt_intern strings, stacks;
	uint64_t next_string_id;
	uint64_t next_stack_id;
	struct gt_wire_stats stats;
};

int gtw_write_all(int fd, const uint8_t *p, size_t len)
{
	size_t done = 0;
	while (done < len) {
		ssize_t n = write(fd, p + done, len - done);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			return errno;
		}
		done += (size_t)n;
	}
	return 0;
}

static void out_flush(struct wire19 *w)
{
	if (!w->error)
		w->error = gtw_write_all(w->fd, w->out.data, w->out.len);
	w->out.len = 0;
}

static void out_append(struct wire19 *w, const uint8_t *p, size_t n)
{
	w->stats.bytes += n;
	if (w->out.len + n > w->out.cap)
		out_flush(w);
	if (n > w->out.cap) {
		/* larger than the whole buffer: write through */
		struct bytebuf saved = w->out;
		w->out = (struct bytebuf){(uint8_t *)p, n, n};
		out_flush(w);
		w->out = saved;
		return;
	}
	memcpy(w->out.data + w->out.len, p, n);
	w->out.len += n;
}

static struct wire_p *wire_p(struct wire19 *w, uint64_t p)
{
	return p < w->n_ps ? &w->ps[p] : &w->ps[w->n_ps];
}

static uint64_t wire_p_id(const struct wire19 *w, const struct wire_p *wp)
{
	return wp == &w->ps[w->n_ps] ? GT_WIRE_P_NONE : (uint64_t)(wp - w->ps);
}

static void batch_flush(struct wire19 *w, struct wire_p *wp)
{
	if (!wp->open)
		return;
	out_append(w, wp->buf.data, wp->buf.len);
	wp->buf.len = 0;
	wp->open = false;
}

/* Room for `room` more bytes in P's buffer, opening a batch (header with base = the P's
 * last ticks, so every later delta is non-negative) when none is open. */
static bool batch_ensure(struct wire19 *w, struct wire_p *wp, size_t room)
{
	if (wp->open && wp->buf.len + room > BATCH_FLUSH_BYTES)
		batch_flush(w, wp);
	if (!gtw_bytebuf_reserve(&wp->buf, room + 32)) {
		w->error = ENOMEM;
		return false;
	}
	if (!wp->open) {
		uint8_t *d = wp->buf.data;
		size_t n = 0;
		/* untimed events: the count field is the number of values minus one (0x41) */
		d[n++] = (uint8_t)(gt_go_events[GT_GO_BATCH].type | (1u << 6));
		n += gt_uvarint_put(d + n, wire_p_id(w, wp));
		n += gt_uvarint_put(d + n, wp->last_ticks);
		wp->buf.len = n;
		wp->batch_ticks = wp->last_ticks;
		wp->open = true;
		w->stats.batches++;
	}
	return true;
}

static const struct gt_wire_ops wire19_ops;
static void w19_free(struct gt_wire *gw);

struct gt_wire *gt_wire_open_go119(int fd, uint32_t n_ps, const struct gt_wire_options *opt)
{
	(void)opt;   /* nothing to choose in this format */
	struct wire19 *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->base.ops = &wire19_ops;
	w->fd = fd;
	w->n_ps = n_ps ? n_ps : 1;
	w->ps = calloc(w->n_ps + 1, sizeof *w->ps);
	w->out.data = malloc(OUT_BUFFER_BYTES);
	w->out.cap = OUT_BUFFER_BYTES;
	w->next_string_id = 1;
	w->next_stack_id = 1;
	if (!w->ps || !w->out.data) {
		w19_free(&w->base);
		return NULL;
	}
	const char *header = gt_trace_formats[GT_FORMAT_GO119].header;
	out_append(w, (const uint8_t *)header, GT_TRACE_HEADER_BYTES);
	return &w->base;
}

static void w19_event(struct gt_wire *gw, uint64_t p, enum gt_go_event ev, uint64_t ticks,
		      const uint64_t *args)
{
	struct wire19 *w = (struct wire19 *)gw;
	const struct gt_go_event_desc *d = &gt_go_events[ev];
	struct wire_p *wp = wire_p(w, p);
	if (!batch_ensure(w, wp, MAX_EVENT_BYTES))
		return;
	if (ticks < wp->last_ticks) {
		ticks = wp->last_ticks;
		w->stats.ticks_clamped++;
	}
	unsigned n = d->nargs + (d->has_stack ? 1u : 0u);
	uint8_t *out = wp->buf.data + wp->buf.len;
	uint64_t delta = ticks - wp->batch_ticks;
	if (n <= 2) {
		size_t k = 0;
		out[k++] = (uint8_t)(d->type | (n << 6));
		k += gt_uvarint_put(out + k, delta);
		for (unsigned i = 0; i < n; i++)
			k += gt_uvarint_put(out + k, args[i]);
		wp->buf.len += k;
	} else {
		uint8_t payload[5 * 10];
		size_t len = gt_uvarint_put(payload, delta);
		for (unsigned i = 0; i < n; i++)
			len += gt_uvarint_put(payload + len, args[i]);
		size_t k = 0;
		out[k++] = (uint8_t)(d->type | (3u << 6));
		k += gt_uvarint_put(out + k, len);
		memcpy(out + k, payload, len);
		wp->buf.len += k + len;
	}
	wp->batch_ticks = ticks;
	wp->last_ticks = ticks;
	w->stats.events++;
}

static void w19_user_log(struct gt_wire *gw, uint64_t p, const struct gt_wire_actor *who,
			 uint64_t ticks, uint64_t task, uint64_t key, uint64_t stack, const char *msg,
			 size_t len)
{
	(void)who;   /* the 1.19 format has no threads: a P is what runs */
	struct wire19 *w = (struct wire19 *)gw;
	struct wire_p *wp = wire_p(w, p);
	if (!batch_ensure(w, wp, MAX_EVENT_BYTES + 10 + len))
		return;
	if (ticks < wp->last_ticks) {
		ticks = wp->last_ticks;
		w->stats.ticks_clamped++;
	}
	uint8_t payload[4 * 10];
	size_t plen = gt_uvarint_put(payload, ticks - wp->batch_ticks);
	plen += gt_uvarint_put(payload + plen, task);
	plen += gt_uvarint_put(payload + plen, key);
	plen += gt_uvarint_put(payload + plen, stack);
	uint8_t *out = wp->buf.data + wp->buf.len;
	size_t k = 0;
	out[k++] = (uint8_t)(gt_go_events[GT_GO_USER_LOG].type | (3u << 6));
	k += gt_uvarint_put(out + k, plen);
	memcpy(out + k, payload, plen);
	k += plen;
	k += gt_uvarint_put(out + k, len);
	if (len)
		memcpy(out + k, msg, len);
	wp->buf.len += k + len;
	wp->batch_ticks = ticks;
	wp->last_ticks = ticks;
	w->stats.events++;
}

uint64_t gtw_intern_string(struct gt_intern *t, uint64_t *next_id, const char **s,
			   size_t *len, bool *fresh)
{
	*fresh = false;
	if (!*len)
		return 0;
	if (*len > GT_WIRE_MAX_NAME) {
		*s += *len - GT_WIRE_MAX_NAME;
		*len = GT_WIRE_MAX_NAME;
	}
	const struct gt_intern_entry *e = gt_intern(t, *s, *len, *next_id, fresh);
	if (!e)
		return 0;
	*next_id += *fresh;
	*s = e->bytes;
	return e->id;
}

uint64_t gtw_intern_stack(struct gt_intern *t, uint64_t *next_id,
			  const struct gt_wire_frame *frames, size_t n, bool *fresh)
{
	*fresh = false;
	if (!n)
		return 0;
	uint64_t pcs[GT_WIRE_MAX_FRAMES];
	size_t k = n < GT_WIRE_MAX_FRAMES ? n : GT_WIRE_MAX_FRAMES;
	for (size_t i = 0; i < k; i++)
		pcs[i] = frames[i].pc;
	return gt_intern_id(t, next_id, pcs, k * sizeof pcs[0], fresh);
}

static uint64_t w19_string(struct gt_wire *gw, const char *s, size_t len)
{
	struct wire19 *w = (struct wire19 *)gw;
	bool inserted;
	uint64_t id = gtw_intern_string(&w->strings, &w->next_string_id, &s, &len, &inserted);
	if (!id && len)
		w->error = ENOMEM;
	if (!inserted)
		return id;
	struct wire_p *wp = wire_p(w, META_P);
	if (!batch_ensure(w, wp, 1 + 20 + len))
		return id;
	uint8_t *out = wp->buf.data + wp->buf.len;
	size_t k = 0;
	out[k++] = gt_go_events[GT_GO_STRING].type;
	k += gt_uvarint_put(out + k, id);
	k += gt_uvarint_put(out + k, len);
	memcpy(out + k, s, len);
	wp->buf.len += k + len;
	w->stats.strings++;
	return id;
}

static uint64_t w19_cstring(struct wire19 *w, const char *s)
{
	return w19_string(&w->base, s, s ? strlen(s) : 0);
}

struct frame_ids {
	uint64_t pc, func, file, line;
};

static size_t frame_bytes(const struct frame_ids *f)
{
	return gt_uvarint_len(f->pc) + gt_uvarint_len(f->func) + gt_uvarint_len(f->file) +
	       gt_uvarint_len(f->line);
}

static void w19_define_stack(struct gt_wire *gw, uint64_t id, const struct gt_wire_frame *frames,
			  size_t n)
{
	struct wire19 *w = (struct wire19 *)gw;
	if (!n || !id)
		return;
	struct frame_ids ids[GT_WIRE_MAX_FRAMES];
	/* Keep the innermost frames that fit, plus the outermost (the start routine). */
	size_t budget = GT_WIRE_MAX_PAYLOAD - gt_uvarint_len(id) - gt_uvarint_len(GT_WIRE_MAX_FRAMES);
	struct frame_ids outer = {frames[n - 1].pc, w19_cstring(w, frames[n - 1].func),
				  w19_cstring(w, frames[n - 1].file), frames[n - 1].line};
	size_t used = n > 1 ? frame_bytes(&outer) : 0;
	size_t max_inner = n > 1 ? GT_WIRE_MAX_FRAMES - 1 : 1;
	size_t k = 0;
	for (size_t i = 0; i + (n > 1 ? 1 : 0) < n && k < max_inner; i++) {
		struct frame_ids f = {frames[i].pc, w19_cstring(w, frames[i].func),
				      w19_cstring(w, frames[i].file), frames[i].line};
		size_t b = frame_bytes(&f);
		if (used + b > budget)
			break;
		used += b;
		ids[k++] = f;
	}
	if (n > 1)
		ids[k++] = outer;
	w->stats.frames_cut += n - k;

	uint8_t payload[GT_WIRE_MAX_PAYLOAD];
	size_t len = gt_uvarint_put(payload, id);
	len += gt_uvarint_put(payload + len, k);
	for (size_t i = 0; i < k; i++) {
		len += gt_uvarint_put(payload + len, ids[i].pc);
		len += gt_uvarint_put(payload + len, ids[i].func);
		len += gt_uvarint_put(payload + len, ids[i].file);
		len += gt_uvarint_put(payload + len, ids[i].line);
	}
	struct wire_p *wp = wire_p(w, META_P);
	if (!batch_ensure(w, wp, 1 + 10 + len))
		return;
	uint8_t *out = wp->buf.data + wp->buf.len;
	size_t h = 0;
	out[h++] = (uint8_t)(gt_go_events[GT_GO_STACK].type | (3u << 6));
	h += gt_uvarint_put(out + h, len);
	memcpy(out + h, payload, len);
	wp->buf.len += h + len;
	w->stats.stacks++;
}

static void w19_set_stack_id_base(struct gt_wire *gw, uint64_t id_base)
{
	struct wire19 *w = (struct wire19 *)gw;
	if (id_base > w->next_stack_id)
		w->next_stack_id = id_base;
}

static uint64_t w19_stack(struct gt_wire *gw, const struct gt_wire_frame *frames, size_t n)
{
	struct wire19 *w = (struct wire19 *)gw;
	bool inserted;
	uint64_t id = gtw_intern_stack(&w->stacks, &w->next_stack_id, frames, n, &inserted);
	if (!id && n)
		w->error = ENOMEM;
	if (inserted)
		w19_define_stack(&w->base, id, frames, n);
	return id;
}

/* 1.19 has no label but GoStartLabel's: the G's next start shows it. */
static bool w19_running_label(struct gt_wire *gw, uint64_t ticks, const struct gt_wire_actor *who,
			      uint64_t label)
{
	(void)gw, (void)ticks, (void)who, (void)label;
	return false;
}

/* CPU samples in batches of their own, as the runtime writes them: the parser takes their
 * time, P and G from the arguments and sorts them apart (ProfileP), so the batch's P and
 * clock say nothing (P 0, base 0, every delta 0). */
static void w19_cpu_sample(struct gt_wire *gw, uint64_t ticks, uint64_t p,
			   const struct gt_wire_actor *who, uint64_t stack)
{
	struct wire19 *w = (struct wire19 *)gw;
	struct bytebuf *b = &w->samples;
	if (b->len > BATCH_FLUSH_BYTES) {
		out_append(w, b->data, b->len);
		b->len = 0;
	}
	if (!gtw_bytebuf_reserve(b, 2 * MAX_EVENT_BYTES)) {
		w->error = ENOMEM;
		return;
	}
	if (!b->len) {
		b->data[b->len++] = (uint8_t)(gt_go_events[GT_GO_BATCH].type | (1u << 6));
		b->len += gt_uvarint_put(b->data + b->len, 0);
		b->len += gt_uvarint_put(b->data + b->len, 0);
		w->stats.batches++;
	}
	uint8_t payload[5 * 10];
	size_t len = gt_uvarint_put(payload, 0);
	len += gt_uvarint_put(payload + len, ticks);
	len += gt_uvarint_put(payload + len, p < w->n_ps ? p : GT_WIRE_P_NONE);
	len += gt_uvarint_put(payload + len, who ? who->g : 0);
	len += gt_uvarint_put(payload + len, stack);
	b->data[b->len++] = (uint8_t)(gt_go_events[GT_GO_CPU_SAMPLE].type | (3u << 6));
	b->len += gt_uvarint_put(b->data + b->len, len);
	memcpy(b->data + b->len, payload, len);
	b->len += len;
	w->stats.events++;
}

static int w19_finish(struct gt_wire *gw, uint64_t ticks_per_second)
{
	struct wire19 *w = (struct wire19 *)gw;
	if (w->samples.len)
		out_append(w, w->samples.data, w->samples.len);
	w->samples.len = 0;
	/* The Frequency goes last, in P 0's buffer, after every P's events are out. */
	for (uint32_t i = 0; i <= w->n_ps; i++)
		if (i != META_P)
			batch_flush(w, &w->ps[i]);
	struct wire_p *wp = wire_p(w, META_P);
	if (batch_ensure(w, wp, 12)) {
		uint8_t *out = wp->buf.data + wp->buf.len;
		size_t k = 0;
		out[k++] = gt_go_events[GT_GO_FREQUENCY].type; /* 0x02: one value */
		k += gt_uvarint_put(out + k, ticks_per_second ? ticks_per_second : 1);
		wp->buf.len += k;
	}
	batch_flush(w, wp);
	out_flush(w);
	return w->error;
}

static void w19_stats(const struct gt_wire *gw, struct gt_wire_stats *out)
{
	const struct wire19 *w = (const struct wire19 *)gw;
	*out = w->stats;
}

static void w19_free(struct gt_wire *gw)
{
	struct wire19 *w = (struct wire19 *)gw;
	if (!w)
		return;
	if (w->ps)
		for (uint32_t i = 0; i <= w->n_ps; i++)
			free(w->ps[i].buf.data);
	free(w->ps);
	free(w->out.data);
	free(w->samples.data);
	gt_intern_free(&w->strings);
	gt_intern_free(&w->stacks);
	free(w);
}

enum gt_go_event gtw_block_event(uint8_t kind)
{
	switch (kind) {
	case GT_BK_COND: return GT_GO_GO_BLOCK_COND;
	case GT_BK_SLEEP: return GT_GO_GO_SLEEP;
	case GT_WIRE_WAIT_NET: return GT_GO_GO_BLOCK_NET;
	case GT_WIRE_WAIT_CHILD: case GT_WIRE_WAIT_UNTRACED: return GT_GO_GO_BLOCK;
	default: return GT_GO_GO_BLOCK_SYNC;
	}
}

/* The down-conversion: each scheduling event as the 1.19 event it stands for, on its P (the
 * 1.19 format has no threads of its own: who is not written). */
static void w19_sched(struct gt_wire *gw, const struct gt_sched_event *e)
{
	enum gt_go_event ev;
	uint64_t a[4] = {0};
	switch (e->kind) {
	case GT_SCHED_PROC_START: ev = GT_GO_PROC_START; a[0] = e->p; break;
	case GT_SCHED_PROC_STOP: ev = GT_GO_PROC_STOP; break;
	case GT_SCHED_PROCS: ev = GT_GO_GOMAXPROCS; a[0] = e->n_procs; break;
	case GT_SCHED_GO_CREATE:
		ev = GT_GO_GO_CREATE;
		a[0] = e->g, a[1] = e->new_stack, a[2] = e->stack;
		break;
	case GT_SCHED_GO_WAITING: ev = GT_GO_GO_WAITING; a[0] = e->g; break;
	case GT_SCHED_GO_START:
		ev = e->label ? GT_GO_GO_START_LABEL : GT_GO_GO_START;
		a[0] = e->g, a[1] = e->seq, a[2] = e->label;
		break;
	case GT_SCHED_GO_STOP:
		ev = e->stop == GT_STOP_YIELD ? GT_GO_GO_SCHED : GT_GO_GO_PREEMPT;
		a[0] = e->stack;
		break;
	case GT_SCHED_GO_BLOCK: ev = gtw_block_event(e->wait.kind); a[0] = e->stack; break;
	case GT_SCHED_GO_UNBLOCK:
		ev = GT_GO_GO_UNBLOCK;
		a[0] = e->g, a[1] = e->seq, a[2] = e->stack;
		break;
	case GT_SCHED_GO_DESTROY: ev = GT_GO_GO_END; break;
	case GT_SCHED_GO_SYSCALL_BEGIN: ev = GT_GO_GO_SYSCALL; a[0] = e->stack; break;
	case GT_SCHED_GO_SYSCALL_BLOCKED: ev = GT_GO_GO_SYSBLOCK; break;
	case GT_SCHED_GO_SYSCALL_END_BLOCKED: ev = GT_GO_GO_SYSEXIT; a[0] = e->g, a[1] = e->seq; break;
	case GT_SCHED_USER_TASK_BEGIN:
		ev = GT_GO_USER_TASK_CREATE;
		a[0] = e->task, a[1] = e->parent, a[2] = e->name, a[3] = e->stack;
		break;
	case GT_SCHED_USER_TASK_END: ev = GT_GO_USER_TASK_END; a[0] = e->task, a[1] = e->stack; break;
	case GT_SCHED_USER_REGION_BEGIN: case GT_SCHED_USER_REGION_END:
		ev = GT_GO_USER_REGION;
		a[0] = e->task, a[1] = e->kind == GT_SCHED_USER_REGION_END, a[2] = e->name;
		a[3] = e->stack;
		break;
	default:
		return;
	}
	w19_event(gw, e->p, ev, e->ticks, a);
}

static const struct gt_wire_ops wire19_ops = {
	.sched = w19_sched,
	.event = w19_event,
	.user_log = w19_user_log,
	.string = w19_string,
	.define_stack = w19_define_stack,
	.stack = w19_stack,
	.set_stack_id_base = w19_set_stack_id_base,
	.cpu_sample = w19_cpu_sample,
	.running_label = w19_running_label,
	.finish = w19_finish,
	.stats = w19_stats,
	.free = w19_free,
};

/* The one interface of both writers (gowire.h): each call goes to the writer's own. */
void gt_wire_sched(struct gt_wire *w, const struct gt_sched_event *e)
{
	w->ops->sched(w, e);
}

void gt_wire_event(struct gt_wire *w, uint64_t p, enum gt_go_event ev, uint64_t ticks,
		   const uint64_t *args)
{
	if (w->ops->event)
		w->ops->event(w, p, ev, ticks, args);
}

void gt_wire_user_log(struct gt_wire *w, uint64_t p, const struct gt_wire_actor *who,
		      uint64_t ticks, uint64_t task, uint64_t key, uint64_t stack, const char *msg,
		      size_t len)
{
	w->ops->user_log(w, p, who, ticks, task, key, stack, msg, len);
}

uint64_t gt_wire_string(struct gt_wire *w, const char *s, size_t len)
{
	return w->ops->string(w, s, len);
}

uint64_t gt_wire_cstring(struct gt_wire *w, const char *s)
{
	return w->ops->string(w, s, s ? strlen(s) : 0);
}

void gt_wire_define_stack(struct gt_wire *w, uint64_t id, const struct gt_wire_frame *frames,
			  size_t n)
{
	w->ops->define_stack(w, id, frames, n);
}

uint64_t gt_wire_stack(struct gt_wire *w, const struct gt_wire_frame *frames, size_t n)
{
	return w->ops->stack(w, frames, n);
}

void gt_wire_set_stack_id_base(struct gt_wire *w, uint64_t id_base)
{
	w->ops->set_stack_id_base(w, id_base);
}

void gt_wire_cpu_sample(struct gt_wire *w, uint64_t ticks, uint64_t p,
			const struct gt_wire_actor *who, uint64_t stack)
{
	w->ops->cpu_sample(w, ticks, p, who, stack);
}

bool gt_wire_running_label(struct gt_wire *w, uint64_t ticks, const struct gt_wire_actor *who,
			   uint64_t label)
{
	return w->ops->running_label(w, ticks, who, label);
}

int gt_wire_finish(struct gt_wire *w, uint64_t ticks_per_second)
{
	return w->ops->finish(w, ticks_per_second);
}

void gt_wire_stats(const struct gt_wire *w, struct gt_wire_stats *out)
{
	w->ops->stats(w, out);
}

void gt_wire_free(struct gt_wire *w)
{
	if (w)
		w->ops->free(w);
}
