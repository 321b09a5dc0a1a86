/* tracker: see encoder.h, "the thread-and-wait tracker". */
#include "encoder.h"

#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/u64map.h"

/* What a capture's threads share. */
struct tracked_capture {
	char inherited[16];   /* the comm its threads inherit */
	bool process_named;   /* its first GT_PROCESS_NAME was read */
};

struct gt_tracker {
	struct gt_u64map index;              /* capture << 32 | serial -> position + 1 */
	struct gt_tracked_thread **threads;  /* each allocated once: pointers never move; in
					      * the order met, NULL where one was retired */
	size_t n, cap;
	size_t holes;                        /* the NULLs, gone once they are half */
	size_t met;                          /* threads met, retired ones included */
	struct gt_u64map retired;            /* capture << 32 | serial, as bits (u64map.h) */
	size_t n_retired;
	struct gt_u64map tids;               /* capture << 32 | tid -> serial of the latest
					      * thread identified with it */
	struct gt_u64map object_index;       /* object_key -> position + 1 in objects */
	struct gt_tracked_object *objects;
	size_t n_objects, cap_objects;
	struct tracked_capture *caps;        /* by capture; zero: nothing known of it */
	size_t cap_caps;
};

static void thread_free(struct gt_tracked_thread *t)
{
	if (t)
		free(t->held);
	free(t);
}

struct gt_tracker *gt_tracker_new(void)
{
	return calloc(1, sizeof(struct gt_tracker));
}

void gt_tracker_free(struct gt_tracker *tr)
{
	if (!tr)
		return;
	for (size_t i = 0; i < tr->n; i++)
		thread_free(tr->threads[i]);
	free(tr->threads);
	gt_u64map_free(&tr->index);
	gt_u64map_free(&tr->retired);
	gt_u64map_free(&tr->tids);
	free(tr->objects);
	gt_u64map_free(&tr->object_index);
	free(tr->caps);
	free(tr);
}

static uint64_t thread_key(uint32_t capture, uint32_t serial)
{
	return (uint64_t)capture << 32 | serial;
}

const struct gt_tracked_thread *gt_tracker_thread(const struct gt_tracker *tr, uint32_t capture,
						  uint32_t serial)
{
	const uint64_t *pos = gt_u64map_find(&tr->index, thread_key(capture, serial));
	return pos && *pos ? tr->threads[*pos - 1] : NULL;
}

const struct gt_tracked_thread *gt_tracker_next(const struct gt_tracker *tr, size_t *pos)
{
	while (*pos < tr->n && !tr->threads[*pos])
		++*pos;
	return *pos < tr->n ? tr->threads[(*pos)++] : NULL;
}

const struct gt_tracked_thread *gt_tracker_next_live(const struct gt_tracker *tr, size_t *pos)
{
	const struct gt_tracked_thread *t;
	while ((t = gt_tracker_next(tr, pos)) && !gt_tracked_live(t))
		;
	return t;
}

size_t gt_tracker_count(const struct gt_tracker *tr)
{
	return tr->n - tr->holes;
}

/* The thread (capture, serial), made when new; NULL when memory runs out. */
static struct gt_tracked_thread *thread_of(struct gt_tracker *tr, uint32_t capture,
					   uint32_t serial)
{
	bool found;
	uint64_t *slot = gt_u64map_slot(&tr->index, thread_key(capture, serial), &found);
	if (!slot)
		return NULL;
	if (found && *slot)
		return tr->threads[*slot - 1];
	struct gt_tracked_thread *t = calloc(1, sizeof *t);
	if (!t || !gt_grow(&tr->threads, &tr->cap, tr->n + 1, sizeof *tr->threads)) {
		free(t);
		*slot = 0;   /* an entry to nothing: never found (positions start at 1) */
		return NULL;
	}
	t->capture = capture;
	t->serial = serial;
	t->order = tr->met++;
	tr->threads[tr->n++] = t;
	*slot = tr->n;
	return t;
}

bool gt_tracker_retired(const struct gt_tracker *tr, uint32_t capture, uint32_t serial)
{
	return tr->n_retired && gt_u64map_bit(&tr->retired, thread_key(capture, serial));
}

bool gt_tracker_retire(struct gt_tracker *tr, uint32_t capture, uint32_t serial)
{
	uint64_t key = thread_key(capture, serial);
	const uint64_t *pos = gt_u64map_find(&tr->index, key);
	if (!pos || !*pos || !gt_u64map_set_bit(&tr->retired, key))
		return false;
	tr->n_retired++;
	size_t at = *pos - 1;
	thread_free(tr->threads[at]);
	tr->threads[at] = NULL;
	tr->holes++;
	gt_u64map_remove(&tr->index, key);
	/* the order met stays (the --from window gives the live threads in it); the holes go
	 * once they are half the places, each place moved a bounded number of times */
	if (2 * tr->holes > tr->n) {
		size_t kept = 0;
		for (size_t i = 0; i < tr->n; i++) {
			struct gt_tracked_thread *t = tr->threads[i];
			if (!t)
				continue;
			tr->threads[kept++] = t;
			*gt_u64map_find(&tr->index, thread_key(t->capture, t->serial)) = kept;
		}
		tr->n = kept;
		tr->holes = 0;
	}
	return true;
}

/* Objects of one capture: addresses below 2^48, the capture above them. */
static uint64_t object_key(uint32_t capture, uint64_t obj)
{
	return obj ^ (uint64_t)capture << 48;
}

/* The lock obj of capture when it is known, else NULL. */
static struct gt_tracked_object *known_object(const struct gt_tracker *tr, uint32_t capture,
					      uint64_t obj)
{
	const uint64_t *pos = gt_u64map_find(&tr->object_index, object_key(capture, obj));
	if (!pos || !*pos)
		return NULL;
	struct gt_tracked_object *o = &tr->objects[*pos - 1];
	return o->capture == capture && o->obj == obj ? o : NULL;
}

const struct gt_tracked_object *gt_tracker_object(const struct gt_tracker *tr, uint32_t capture,
						  uint64_t obj)
{
	return known_object(tr, capture, obj);
}

/* The lock obj of capture, made when new; NULL when memory runs out or its key is taken by
 * another object (then nothing is said of it). */
static struct gt_tracked_object *object_of(struct gt_tracker *tr, uint32_t capture, uint64_t obj)
{
	bool found;
	uint64_t *slot = gt_u64map_slot(&tr->object_index, object_key(capture, obj), &found);
	if (!slot)
		return NULL;
	if (!found || !*slot) {
		if (!gt_grow(&tr->objects, &tr->cap_objects, tr->n_objects + 1, sizeof *tr->objects))
			return NULL;
		tr->objects[tr->n_objects++] = (struct gt_tracked_object){.capture = capture, .obj = obj};
		*slot = tr->n_objects;
	}
	struct gt_tracked_object *o = &tr->objects[*slot - 1];
	return o->capture == capture && o->obj == obj ? o : NULL;
}

/* Capture's shared state, made when new; NULL when memory runs out. */
static struct tracked_capture *capture_of(struct gt_tracker *tr, uint32_t capture)
{
	if (!gt_grow(&tr->caps, &tr->cap_caps, (size_t)capture + 1, sizeof *tr->caps))
		return NULL;
	return &tr->caps[capture];
}

bool gt_tracker_capture_header(struct gt_tracker *tr, uint32_t capture,
			       const struct gt_file_header *h)
{
	struct tracked_capture *c = capture_of(tr, capture);
	if (!c)
		return false;
	struct gt_process_name proc;
	gt_process_name_from_header(&proc, h);
	memcpy(c->inherited, proc.comm, sizeof c->inherited);
	return true;
}

/* Only the first GT_PROCESS_NAME (recorded at the start) gives the comm threads inherit. */
static void process_name(struct gt_tracker *tr, const struct gt_capture_record *r)
{
	const struct gt_p_process_name *p = r->payload;
	struct tracked_capture *c = capture_of(tr, r->capture);
	if (!c || c->process_named)
		return;
	c->process_named = true;
	size_t len = strnlen(p->comm, sizeof p->comm);
	if (!len)
		return;
	len = len < sizeof c->inherited - 1 ? len : sizeof c->inherited - 1;
	memcpy(c->inherited, p->comm, len);
	c->inherited[len] = '\0';
}

const char *gt_tracker_inherited_name(const struct gt_tracker *tr, uint32_t capture)
{
	return capture < tr->cap_caps ? tr->caps[capture].inherited : "";
}

const char *gt_tracker_own_name(const struct gt_tracker *tr, uint32_t capture, const char *name)
{
	return name[0] && strcmp(name, gt_tracker_inherited_name(tr, capture)) != 0 ? name : NULL;
}

bool gt_lock_kind(uint8_t kind)
{
	return kind == GT_BK_MUTEX || kind == GT_BK_RWLOCK_RD || kind == GT_BK_RWLOCK_WR;
}

const struct gt_tracked_thread *gt_tracker_thread_by_tid(const struct gt_tracker *tr,
							 uint32_t capture, uint32_t tid)
{
	const uint64_t *serial = tid ? gt_u64map_find(&tr->tids, thread_key(capture, tid)) : NULL;
	return serial ? gt_tracker_thread(tr, capture, (uint32_t)*serial) : NULL;
}

/* The holder a lock wait's flags name: by serial (GT_BLOCK_COND_HELD) or by tid. */
static void wait_holder(const struct gt_tracker *tr, uint32_t capture, struct gt_tracked_wait *w)
{
	uint32_t named = w->flags >> GT_BLOCK_HOLDER_SHIFT;
	if (w->flags & GT_BLOCK_COND_HELD) {
		const struct gt_tracked_thread *h = gt_tracker_thread(tr, capture, named);
		w->holder = named;
		w->holder_tid = h ? h->tid : 0;
	} else if (w->flags & GT_BLOCK_HOLDER_TID) {
		const struct gt_tracked_thread *h = gt_tracker_thread_by_tid(tr, capture, named);
		w->holder = h ? h->serial : 0;
		w->holder_tid = named;
	}
}

static void close_wait(struct gt_tracked_thread *t, struct gt_tracker_change *change)
{
	if (!t->wait.open)
		return;
	if (change) {
		change->closed = true;
		change->closed_wait = t->wait;
	}
	t->wait.open = false;
	t->nested = 0;
	t->raw_words = 0;
	t->doing = GT_DOING_RUNNING;
}

/* A BLOCK_BEGIN or SYSCALL_BEGIN of t: its wait, and the record as read. */
static void open_wait(const struct gt_tracker *tr, struct gt_tracked_thread *t,
		      const struct gt_capture_record *r)
{
	const struct gt_rec *rec = r->rec;
	struct gt_tracked_wait w = {.open = true, .kind = rec->aux, .since_tsc = r->tsc,
				    .cpu = r->cpu, .syscall = rec->type == GT_SYSCALL_BEGIN};
	if (!w.syscall) {
		const struct gt_p_block *b = r->payload;
		w.obj = b->obj;
		w.stack = b->stack;
		w.flags = b->flags;
		if (rec->aux == GT_BK_COND && r->payload_len >= sizeof *b + sizeof(struct gt_p_block_mutex))
			w.cond_mutex = ((const struct gt_p_block_mutex *)(b + 1))->mutex;
		if (gt_lock_kind(rec->aux))
			wait_holder(tr, r->capture, &w);
	} else {
		const struct gt_p_syscall *s = r->payload;
		w.nr = s->nr;
		w.stack = s->stack;
		w.arg = s->arg;
		if (r->payload_len >= sizeof *s + sizeof(struct gt_p_syscall_obj))
			w.key = ((const struct gt_p_syscall_obj *)(s + 1))->obj;
	}
	t->wait = w;
	if (w.syscall)
		t->last_syscall = w;
	t->doing = w.syscall ? GT_DOING_SYSCALL : GT_DOING_BLOCKED;
	t->raw_words = 0;
	if (rec->nwords <= GT_TRACKED_RAW_WORDS) {
		memcpy(t->raw, rec, (size_t)rec->nwords * 8);
		t->raw_words = rec->nwords;
		t->raw_payload_len = r->payload_len;
	}
}

/* A fact of t's own: it lives, and has run since anything said it was blocked. */
static void own_fact(struct gt_tracked_thread *t, const struct gt_capture_record *r)
{
	if (!t->has_facts)
		t->first_tsc = r->tsc;
	t->has_facts = true;
	t->last_tsc = r->tsc;
	t->cpu = r->cpu;
	t->life = GT_LIFE_LIVE;
	t->blocked_at_start = false;
	if (t->doing == GT_DOING_RUNNABLE)
		t->doing = GT_DOING_RUNNING;
}

static void thread_new(struct gt_tracker *tr, struct gt_tracked_thread *t,
		       const struct gt_capture_record *r)
{
	const struct gt_p_thread_new *n = r->payload;
	if (!n->child || gt_tracker_retired(tr, r->capture, n->child))
		return;
	uint32_t cpu = t->cpu;
	struct gt_tracked_thread *c = thread_of(tr, r->capture, n->child);
	if (!c)
		return;
	if (!c->start_routine)
		c->start_routine = n->start_routine;
	c->announced = true;
	c->creator = t->serial;
	c->create_stack = n->stack;
	if (!gt_tracked_live(c)) {
		c->life = GT_LIFE_ANNOUNCED;
		c->cpu = cpu;
		c->doing = GT_DOING_RUNNABLE;
	}
}

static void thread_identity(struct gt_tracker *tr, struct gt_tracked_thread *t,
			    const struct gt_capture_record *r)
{
	const struct gt_p_thread_start *s = r->payload;
	t->tid = s->tid;
	bool found;
	uint64_t *serial = s->tid ? gt_u64map_slot(&tr->tids, thread_key(r->capture, s->tid), &found)
				  : NULL;
	if (serial)   /* else (out of memory) the tid names nobody */
		*serial = t->serial;
	if (s->start_routine)
		t->start_routine = s->start_routine;
	t->identified = true;
	t->existing = r->rec->type == GT_THREAD_EXISTING;
	t->identity_stack = s->stack;
	t->blocked_at_start = t->existing && (r->rec->aux & 1);
}

/* Lock obj's holder is now thread serial (0: none known). */
static void set_holder(struct gt_tracked_object *o, uint32_t serial, uint32_t tid, uint64_t tsc,
		       uint32_t stack)
{
	if (o->holder != serial || !serial) {
		o->held_tsc = tsc;
		o->held_stack = stack;
	}
	o->holder = serial;
	o->holder_tid = tid;
}

/* Holders, as far as the facts tell: t's fact r on a lock, or a condition wait's mutex. */
static void track_lock(struct gt_tracker *tr, const struct gt_tracked_thread *t,
		       const struct gt_capture_record *r)
{
	const struct gt_rec *rec = r->rec;
	struct gt_tracked_object *o;
	if (rec->aux == GT_BK_COND) {
		/* the mutex is released inside the wait (when known as held), and taken back by
		 * its end, timed out or not */
		const struct gt_tracked_wait *w = &t->wait;
		if (!w->cond_mutex)
			return;
		if (rec->type == GT_BLOCK_END && (o = object_of(tr, r->capture, w->cond_mutex)))
			set_holder(o, t->serial, t->tid, r->tsc, w->stack);
		else if (rec->type == GT_BLOCK_BEGIN &&
			 (o = known_object(tr, r->capture, w->cond_mutex)) &&
			 o->holder == t->serial)
			set_holder(o, 0, 0, r->tsc, 0);
		return;
	}
	if (!gt_lock_kind(rec->aux))
		return;
	if (rec->type == GT_BLOCK_BEGIN) {
		/* what nothing named before, a wait that names nobody leaves unknown */
		const struct gt_tracked_wait *w = &t->wait;
		o = w->holder || w->holder_tid ? object_of(tr, r->capture, w->obj)
					       : known_object(tr, r->capture, w->obj);
		if (o)
			set_holder(o, w->holder, w->holder_tid, r->tsc, 0);
	} else if (rec->type == GT_BLOCK_END) {
		const struct gt_p_block_end *e = r->payload;
		if (e->result != GT_BR_OK && e->result != GT_BR_OWNERDEAD)
			return;
		o = object_of(tr, r->capture, e->obj);
		if (o) {
			o->kind = rec->aux;
			o->acquired_by = rec->thread;
			o->acquired_tsc = r->tsc;
			/* readers share a read lock: none of them is its holder */
			bool sole = rec->aux != GT_BK_RWLOCK_RD;
			set_holder(o, sole ? t->serial : 0, sole ? t->tid : 0, r->tsc, t->wait.stack);
		}
	} else {
		const struct gt_p_wake *wk = r->payload;
		o = object_of(tr, r->capture, wk->obj);
		if (o) {
			o->kind = rec->aux;
			o->released_by = rec->thread;
			o->released_tsc = r->tsc;
			o->released_stack = wk->stack;
			set_holder(o, 0, 0, r->tsc, 0);
		}
	}
}

/* LOCK_ACQUIRE (--locks=all): a hold begins, or a held lock is taken once more; the lock's
 * holder is t (a writer or a mutex's), taken there.  false when memory runs out. */
static bool lock_acquire(struct gt_tracker *tr, struct gt_tracked_thread *t,
			 const struct gt_capture_record *r, struct gt_tracker_change *change)
{
	const struct gt_p_lock *p = r->payload;
	struct gt_tracked_hold *h = NULL;
	for (size_t i = 0; i < t->n_held && !h; i++)
		if (t->held[i].obj == p->obj)
			h = &t->held[i];
	if (!h) {
		if (!gt_grow(&t->held, &t->cap_held, t->n_held + 1, sizeof *t->held))
			return false;
		h = &t->held[t->n_held++];
		*h = (struct gt_tracked_hold){.obj = p->obj, .kind = r->rec->aux, .flags = p->flags,
					      .stack = p->stack, .since_tsc = r->tsc};
		if (change)
			change->hold_began = true;
		struct gt_tracked_object *o = object_of(tr, r->capture, p->obj);
		if (o && r->rec->aux != GT_BK_RWLOCK_RD) {
			o->kind = r->rec->aux;
			o->acquired_by = t->serial;
			o->acquired_tsc = r->tsc;
			o->holder = t->serial;
			o->holder_tid = t->tid;
			o->held_tsc = r->tsc;
			o->held_stack = p->stack;
		}
	}
	h->depth++;
	if (change)
		change->hold = *h;
	return true;
}

/* LOCK_RELEASE: one depth of t's hold of the lock ends, the hold with the last. */
static void lock_release(struct gt_tracker *tr, struct gt_tracked_thread *t,
			 const struct gt_capture_record *r, struct gt_tracker_change *change)
{
	const struct gt_p_lock *p = r->payload;
	size_t i = 0;
	while (i < t->n_held && t->held[i].obj != p->obj)
		i++;
	if (i == t->n_held) {
		if (change)
			change->release_unmatched = true;
		return;
	}
	struct gt_tracked_hold h = t->held[i];
	if (--t->held[i].depth) {
		if (change)
			change->hold = t->held[i];
		return;
	}
	memmove(&t->held[i], &t->held[i + 1], (t->n_held - i - 1) * sizeof *t->held);
	t->n_held--;
	if (change) {
		change->hold_ended = true;
		change->hold = h;
		change->hold.depth = 0;
	}
	struct gt_tracked_object *o = known_object(tr, r->capture, p->obj);
	if (o && o->holder == t->serial)   /* released_*: its WAKE's, which has its stack */
		set_holder(o, 0, 0, r->tsc, 0);
}

bool gt_tracker_fact(struct gt_tracker *tr, const struct gt_capture_record *r,
		     struct gt_tracker_change *change)
{
	const struct gt_rec *rec = r->rec;
	if (change)
		*change = (struct gt_tracker_change){0};
	if (rec->type == GT_CAPTURE_END) {
		gt_tracker_capture_end(tr, r->capture);
		return true;
	}
	if (rec->type == GT_PROCESS_NAME)
		process_name(tr, r);
	if (!rec->thread || gt_tracker_retired(tr, r->capture, rec->thread))
		return true;   /* a retired thread's facts change nothing */
	struct gt_tracked_thread *t = thread_of(tr, r->capture, rec->thread);
	if (!t)
		return false;
	own_fact(t, r);
	if (change)
		change->thread = t;
	switch (rec->type) {
	case GT_THREAD_NEW:
		thread_new(tr, t, r);
		break;
	case GT_THREAD_START:
	case GT_THREAD_EXISTING:
		thread_identity(tr, t, r);
		break;
	case GT_THREAD_NAME:
		memcpy(t->name, ((const struct gt_p_thread_name *)r->payload)->name, sizeof t->name);
		t->name[sizeof t->name - 1] = '\0';
		t->named = true;
		break;
	case GT_THREAD_END:
		close_wait(t, change);
		t->life = GT_LIFE_ENDED;
		t->end_seen = true;
		t->end_how = rec->aux;
		t->end_tsc = r->tsc;
		break;
	case GT_BLOCK_BEGIN:
	case GT_SYSCALL_BEGIN:
		if (t->wait.open) {
			t->nested++;
			if (change)
				change->nested = true;
			break;
		}
		open_wait(tr, t, r);
		if (rec->type == GT_BLOCK_BEGIN)
			track_lock(tr, t, r);
		break;
	case GT_BLOCK_END:
	case GT_SYSCALL_END:
		if (t->nested) {
			t->nested--;
			if (change)
				change->nested = true;
			break;
		}
		if (t->wait.open && t->wait.syscall == (rec->type == GT_SYSCALL_END))
			close_wait(t, change);
		if (rec->type == GT_BLOCK_END)
			track_lock(tr, t, r);
		break;
	case GT_WAKE:
		track_lock(tr, t, r);
		break;
	case GT_YIELD:
		if (!t->wait.open)
			t->doing = GT_DOING_RUNNABLE;
		break;
	case GT_LOCK_ACQUIRE:
		return lock_acquire(tr, t, r, change);
	case GT_LOCK_RELEASE:
		lock_release(tr, t, r, change);
		break;
	default:
		break;
	}
	return true;
}

void gt_tracker_capture_end(struct gt_tracker *tr, uint32_t capture)
{
	for (size_t i = 0; i < tr->n; i++)
		if (tr->threads[i] && tr->threads[i]->capture == capture)
			tr->threads[i]->life = GT_LIFE_ENDED;
}
