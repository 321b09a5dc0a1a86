/* gowire_v2_tables: the "go 1.22 trace" writer's strings and stacks (gowire_v2_internal.h).
 * Ids are global to the file; each generation writes, after its events, a Strings and a
 * Stacks batch defining every id it used (docs/formats/go122.md). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "gowire_v2_internal.h"
#include "common/grow.h"

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

void w22_use_string(struct wire22 *w, uint64_t id)
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

void w22_use_stack(struct wire22 *w, uint64_t id)
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

uint64_t w22_string(struct gt_wire *gw, const char *s, size_t len)
{
	struct wire22 *w = w22(gw);
	bool inserted;
	uint64_t id = gtw_intern_string(&w->strings, &w->next_string_id, &s, &len, &inserted);
	if ((!id && len) || (inserted && !gt_grow(&w->strs, &w->cap_strs, id + 1, sizeof *w->strs))) {
		w->error = ENOMEM;
		return 0;
	}
	if (inserted) {
		w->strs[id] = (struct str2){s, len, 0};
		w->stats.strings++;
	}
	return id;
}

uint64_t w22_cstring(struct wire22 *w, const char *s)
{
	return w22_string(&w->base, s, s ? strlen(s) : 0);
}

void w22_define_stack(struct gt_wire *gw, uint64_t id, const struct gt_wire_frame *frames,
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
		w->frames[w->n_frames + i] = (struct frame2){f->pc, w22_cstring(w, f->func),
							     w22_cstring(w, f->file), f->line};
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

uint64_t w22_stack(struct gt_wire *gw, const struct gt_wire_frame *frames, size_t n)
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

void w22_set_stack_id_base(struct gt_wire *gw, uint64_t id_base)
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
		w22_batch_write(w, NO_ID, w->gen_start + w->offset, t->buf.data, t->buf.len);
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
		w22_batch_write(w, NO_ID, w->gen_start + w->offset, t->buf.data, t->buf.len);
	free(t->buf.data);
}

void w22_write_tables(struct wire22 *w)
{
	struct table_batch t = {gt_go2_events[GT_GO2_STACKS].type, {0}};
	uint64_t lost = 0;
	for (size_t i = 0; i < w->used_stacks.n && !w->error; i++) {
		uint64_t id = w->used_stacks.v[i];
		struct stk2 *s = stack_find(w, id);
		struct frame2 placeholder;
		if (!s) {
			if (!lost)
				lost = w22_cstring(w, "[stack defined later]");
			w22_use_string(w, lost);
			placeholder = (struct frame2){1, lost, lost, 0};
		}
		const struct frame2 *f = s ? &w->frames[s->off] : &placeholder;
		uint32_t n = s ? s->n : 1;
		for (uint32_t j = 0; j < n; j++) {
			w22_use_string(w, f[j].func);
			w22_use_string(w, f[j].file);
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
		memcpy(o + k, s->bytes, s->len);
		t.buf.len += k + s->len;
	}
	table_end(w, &t);
	w->used_stacks.n = w->used_strings.n = 0;
}

