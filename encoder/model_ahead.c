/* model_ahead: the lookahead (gtm_peek, up to 4095 records) filed by thread and by object,
 * each record once as the lookahead fills and dropped as it drains, so that a question about
 * one mutex, condition or thread reads the records that name it, not every record ahead.  A
 * capture with many long waits asks such a question at every condition wait whose answer
 * lies beyond the lookahead (issue 27, item 7: 60% of a database server's conversion). */
#include "model_internal.h"

#include <stdlib.h>

#define NONE UINT64_MAX
#define FIRST_CAP 4096u   /* a power of two above the lookahead's 4095 records */

static struct gtm_ahead_entry *entry(const struct gtm_ahead *a, uint64_t place)
{
	return &a->ring[place & (a->cap - 1)];
}

/* A place kept mod 2^32 in a map, back in the merged order (it lies in [base, end)). */
static uint64_t place_of(const struct gtm_ahead *a, uint64_t low32)
{
	return a->base + (uint32_t)((uint32_t)low32 - (uint32_t)a->base);
}

/* The first place filed under key in map, NONE when none. */
static uint64_t first_of(const struct gtm_ahead *a, const struct gt_u64map *map, uint64_t key)
{
	const uint64_t *v = gt_u64map_find(map, key);
	return v ? place_of(a, *v >> 32) : NONE;
}

/* e's link to the next place filed under object key (its obj's or its mutex's) */
static uint64_t *obj_link(struct gtm_ahead_entry *e, uint64_t key)
{
	return e->has_obj && e->obj == key ? &e->next_obj : &e->next_mutex;
}

static uint64_t next_of_obj(struct gtm_ahead_entry *e, uint64_t key)
{
	return *obj_link(e, key);
}

/* Files place last under key (by_thread: in the threads' map). */
static bool file_under(struct gtm_ahead *a, struct gt_u64map *map, uint64_t key, uint64_t place,
		       bool by_thread)
{
	bool found;
	uint64_t *v = gt_u64map_slot(map, key, &found);
	if (!v)
		return false;
	if (found) {
		struct gtm_ahead_entry *last = entry(a, place_of(a, *v));
		*(by_thread ? &last->next_thread : obj_link(last, key)) = place;
		*v = (*v & ~0xffffffffull) | (uint32_t)place;
	} else {
		*v = (uint64_t)(uint32_t)place << 32 | (uint32_t)place;
	}
	return true;
}

/* The first place filed under key, the oldest, leaves: next comes first (NONE: key goes). */
static void unfile(struct gt_u64map *map, uint64_t key, uint64_t next)
{
	uint64_t *v = gt_u64map_find(map, key);
	if (!v)
		return;
	if (next == NONE)
		gt_u64map_remove(map, key);
	else
		*v = (uint64_t)(uint32_t)next << 32 | (*v & 0xffffffffull);
}

static bool grow(struct gtm_ahead *a)
{
	size_t cap = a->cap ? 2 * a->cap : FIRST_CAP;
	struct gtm_ahead_entry *ring = malloc(cap * sizeof *ring);
	if (!ring)
		return false;
	for (uint64_t p = a->base; p < a->end; p++)
		ring[p & (cap - 1)] = *entry(a, p);
	free(a->ring);
	a->ring = ring;
	a->cap = cap;
	return true;
}

/* Files r at place end. */
static bool add(struct gt_model *m, const struct gt_capture_record *r)
{
	struct gtm_ahead *a = &m->ahead;
	if (a->end - a->base == a->cap && !grow(a))
		return false;
	uint64_t place = a->end;
	struct gtm_ahead_entry *e = entry(a, place);
	*e = (struct gtm_ahead_entry){.thread = (uint64_t)r->capture << 32 | r->rec->thread,
				      .next_thread = NONE, .next_obj = NONE, .next_mutex = NONE};
	const struct gt_p_block *b = r->payload;
	if (r->rec->type == GT_WAKE || r->rec->type == GT_BLOCK_BEGIN) {
		uint64_t obj = r->rec->type == GT_WAKE ? ((const struct gt_p_wake *)r->payload)->obj
						       : b->obj;
		e->obj = gtm_object_key(m, r, obj);
		e->has_obj = true;
	}
	if (r->rec->type == GT_BLOCK_BEGIN && r->rec->aux == GT_BK_COND &&
	    r->payload_len >= sizeof *b + sizeof(struct gt_p_block_mutex)) {
		e->mutex = gtm_object_key(m, r, ((const struct gt_p_block_mutex *)(b + 1))->mutex);
		e->has_mutex = e->mutex != e->obj;   /* filed once under a key */
	}
	a->end++;
	return file_under(a, &a->threads, e->thread, place, true) &&
	       (!e->has_obj || file_under(a, &a->objs, e->obj, place, false)) &&
	       (!e->has_mutex || file_under(a, &a->objs, e->mutex, place, false));
}

/* Drops what was delivered, files what the lookahead shows now.  false when memory ran out:
 * the index is emptied, and rebuilt at the next question. */
static bool sync(struct gt_model *m)
{
	struct gtm_ahead *a = &m->ahead;
	uint64_t base = gtm_peek_base(m);
	for (; a->base < base && a->base < a->end; a->base++) {
		const struct gtm_ahead_entry *e = entry(a, a->base);
		unfile(&a->threads, e->thread, e->next_thread);
		if (e->has_obj)
			unfile(&a->objs, e->obj, e->next_obj);
		if (e->has_mutex)
			unfile(&a->objs, e->mutex, e->next_mutex);
	}
	if (a->base < base)
		a->base = a->end = base;
	struct gt_capture_record r;
	while (gtm_peek(m, (size_t)(a->end - base), &r)) {
		if (!add(m, &r)) {
			gt_u64map_clear(&a->threads);
			gt_u64map_clear(&a->objs);
			a->base = a->end = base;
			return false;
		}
	}
	return true;
}

static void at(const struct gt_model *m, uint64_t place, struct gt_capture_record *out)
{
	gtm_peek(m, (size_t)(place - m->ahead.base), out);
}

/* Whether the wait begun at place (a block on key) ends, at its thread's next fact, before
 * any release of key. */
static bool ends_before_a_release(struct gt_model *m, uint64_t place, uint64_t key)
{
	const struct gtm_ahead *a = &m->ahead;
	uint64_t end = entry(a, place)->next_thread;
	struct gt_capture_record n;
	for (uint64_t p = next_of_obj(entry(a, place), key); p < end;
	     p = next_of_obj(entry(a, p), key)) {
		at(m, p, &n);
		if (gtm_releases(m, &n, key))
			return false;
	}
	if (end == NONE)
		return false;
	at(m, end, &n);
	return !gtm_releases(m, &n, key) && n.rec->type == GT_BLOCK_END;
}

uint32_t gtm_cond_held_waiter_ahead(struct gt_model *m, const struct gt_capture_record *r,
				    uint64_t cond, uint64_t key)
{
	if (!sync(m))
		return 0;
	const struct gtm_ahead *a = &m->ahead;
	struct gt_capture_record n;
	/* the waiter, the mutex and the holder's serial are r's process's */
	uint64_t stop = first_of(a, &a->threads, (uint64_t)r->capture << 32 | r->rec->thread);
	uint64_t cond_key = gtm_object_key(m, r, cond);
	for (uint64_t p = first_of(a, &a->objs, cond_key); p < stop;
	     p = next_of_obj(entry(a, p), cond_key)) {
		at(m, p, &n);
		const struct gt_p_wake *w = n.payload;
		if (n.capture == r->capture && n.rec->type == GT_WAKE && n.rec->aux == GT_BK_COND &&
		    w->obj == cond) {
			stop = p;
			break;
		}
	}
	bool released = false;   /* by another: an unflagged wait after it is not r's */
	for (uint64_t p = first_of(a, &a->objs, key); p < stop; p = next_of_obj(entry(a, p), key)) {
		at(m, p, &n);
		released = released || gtm_releases(m, &n, key);
		const struct gt_p_block *b = n.payload;
		if (n.capture != r->capture || n.rec->type != GT_BLOCK_BEGIN ||
		    n.rec->aux != GT_BK_MUTEX || gtm_object_key(m, &n, b->obj) != key)
			continue;
		if ((b->flags & GT_BLOCK_COND_HELD) ? b->flags >> GT_BLOCK_HOLDER_SHIFT == r->rec->thread
						    : !released && ends_before_a_release(m, p, key))
			return gtm_serial(m, r->capture, n.rec->thread);
	}
	return 0;
}

void gtm_ahead_free(struct gt_model *m)
{
	free(m->ahead.ring);
	gt_u64map_free(&m->ahead.threads);
	gt_u64map_free(&m->ahead.objs);
}
