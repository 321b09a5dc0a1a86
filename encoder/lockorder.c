/* lockorder: the lock-order graph of each capture and its cycles, the lock-order inversions
 * (see encoder.h, "the lock-order graph").  Locks are nodes, found by (capture, obj); an edge
 * is found by its two nodes.  A cycle is searched for from the edge that may close it,
 * breadth first over edges (not nodes: whether a wait blocks depends on both edges at a
 * lock), so the one kept is the shortest through it. */
#include "encoder.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/grow.h"
#include "common/hash.h"
#include "common/u64map.h"

struct lock_node {
	uint32_t capture;
	uint64_t obj;
	size_t same_key;    /* index + 1 of the previous node of the same map key, 0: none */
	size_t first_out;   /* index + 1 of its newest out-edge, 0: none */
	size_t n_in;        /* edges into it */
};

struct edge {
	struct gt_lock_edge e;
	uint32_t from_node, to_node;
	size_t next_out;    /* index + 1 of the from node's previous out-edge, 0: none */
};

struct cycle {
	size_t first, n;    /* its edges' indices: cycle_edges[first .. first + n) */
};

struct gt_lock_order {
	struct lock_node *nodes;
	size_t n_nodes, cap_nodes;
	struct gt_u64map node_index;   /* node_key -> index + 1 of its newest node */
	struct edge *edges;
	size_t n_edges, cap_edges;
	struct gt_u64map edge_index;   /* from node << 32 | to node -> index + 1 */
	size_t *cycle_edges;
	size_t n_cycle_edges, cap_cycle_edges;
	struct cycle *cycles;
	size_t n_cycles, cap_cycles;
	struct gt_u64map cycle_index;  /* hash of a cycle's edges -> index + 1 */
	/* the search's scratch, one slot per edge: seen in search number stamp, reached from */
	uint32_t *seen;
	size_t *via, *queue;
	size_t cap_seen, cap_via, cap_queue;
	uint32_t stamp;
	uint64_t lost;
};

struct gt_lock_order *gt_lock_order_new(void)
{
	return calloc(1, sizeof(struct gt_lock_order));
}

void gt_lock_order_free(struct gt_lock_order *g)
{
	if (!g)
		return;
	free(g->nodes);
	gt_u64map_free(&g->node_index);
	free(g->edges);
	gt_u64map_free(&g->edge_index);
	free(g->cycle_edges);
	free(g->cycles);
	gt_u64map_free(&g->cycle_index);
	free(g->seen);
	free(g->via);
	free(g->queue);
	free(g);
}

static uint64_t node_key(uint32_t capture, uint64_t obj)
{
	return obj ^ gt_hash_mix(capture);
}

/* The node of lock obj of capture, made when new: its index + 1, 0 when memory runs out. */
static size_t node_of(struct gt_lock_order *g, uint32_t capture, uint64_t obj)
{
	bool found;
	uint64_t *newest = gt_u64map_slot(&g->node_index, node_key(capture, obj), &found);
	if (!newest)
		return 0;
	for (size_t i = *newest; i; i = g->nodes[i - 1].same_key)
		if (g->nodes[i - 1].capture == capture && g->nodes[i - 1].obj == obj)
			return i;
	if (!gt_grow(&g->nodes, &g->cap_nodes, g->n_nodes + 1, sizeof *g->nodes))
		return 0;   /* a found key keeps its nodes; a new one stays 0: no node */
	g->nodes[g->n_nodes] = (struct lock_node){.capture = capture, .obj = obj,
						  .same_key = *newest};
	*newest = ++g->n_nodes;
	return g->n_nodes;
}

/* Whether the wait of edge e's thread for the lock it took can block on edge f's thread
 * holding it: not when both are readers of one rwlock (glibc's default lets a reader in
 * beside readers). */
static bool can_block(const struct edge *e, const struct edge *f)
{
	return e->e.to_exclusive || f->e.from_exclusive;
}

/* A new search: scratch for every edge, and its stamp; 0 when memory runs out. */
static uint32_t new_search(struct gt_lock_order *g)
{
	/* grown slots are zero, a stamp never given */
	if (!gt_grow(&g->seen, &g->cap_seen, g->n_edges, sizeof *g->seen) ||
	    !gt_grow(&g->via, &g->cap_via, g->n_edges, sizeof *g->via) ||
	    !gt_grow(&g->queue, &g->cap_queue, g->n_edges, sizeof *g->queue))
		return 0;
	if (!++g->stamp) {
		memset(g->seen, 0, g->cap_seen * sizeof *g->seen);
		g->stamp = 1;
	}
	return g->stamp;
}

/* The cycle of edges path[0 .. n), kept unless it was already; false when memory runs out. */
static bool keep_cycle(struct gt_lock_order *g, size_t *path, size_t n)
{
	/* from its earliest edge: one cycle, one order, whichever edge closed it */
	size_t first = 0;
	for (size_t i = 1; i < n; i++)
		if (path[i] < path[first])
			first = i;
	size_t rotated[GT_CYCLE_MAX];
	for (size_t i = 0; i < n; i++)
		rotated[i] = path[(first + i) % n];
	bool found;
	uint64_t *slot = gt_u64map_slot(&g->cycle_index, gt_hash_bytes(rotated, n * sizeof *rotated),
					&found);
	if (!slot)
		return false;
	if (found) {
		const struct cycle *c = &g->cycles[*slot - 1];
		if (c->n == n && !memcmp(&g->cycle_edges[c->first], rotated, n * sizeof *rotated))
			return true;   /* already kept */
	}
	if (!gt_grow(&g->cycle_edges, &g->cap_cycle_edges, g->n_cycle_edges + n,
		     sizeof *g->cycle_edges) ||
	    !gt_grow(&g->cycles, &g->cap_cycles, g->n_cycles + 1, sizeof *g->cycles)) {
		if (!found)
			gt_u64map_remove(&g->cycle_index, gt_hash_bytes(rotated, n * sizeof *rotated));
		return false;
	}
	memcpy(&g->cycle_edges[g->n_cycle_edges], rotated, n * sizeof *rotated);
	g->cycles[g->n_cycles] = (struct cycle){.first = g->n_cycle_edges, .n = n};
	g->n_cycle_edges += n;
	if (!found)   /* (another cycle of the same hash keeps the slot) */
		*slot = g->n_cycles + 1;
	g->n_cycles++;
	return true;
}

/* The shortest cycle through edge e0 whose every wait can block, kept when new; false when
 * memory runs out. */
static bool find_cycle(struct gt_lock_order *g, size_t e0)
{
	const struct edge *start = &g->edges[e0];
	if (!g->nodes[start->to_node].first_out || !g->nodes[start->from_node].n_in)
		return true;   /* no way on from its lock, or none back to the held one */
	uint32_t stamp = new_search(g);
	if (!stamp)
		return false;
	size_t head = 0, tail = 0;
	g->seen[e0] = stamp;
	g->queue[tail++] = e0;
	while (head < tail) {
		size_t e = g->queue[head++];
		for (size_t f = g->nodes[g->edges[e].to_node].first_out; f; f = g->edges[f - 1].next_out) {
			size_t k = f - 1;
			if (g->seen[k] == stamp || !can_block(&g->edges[e], &g->edges[k]))
				continue;
			g->seen[k] = stamp;
			g->via[k] = e;
			if (g->edges[k].to_node != start->from_node || !can_block(&g->edges[k], start)) {
				g->queue[tail++] = k;
				continue;
			}
			/* back at the lock e0 held: the path from e0 to k, if not too long */
			size_t path[GT_CYCLE_MAX], n = 0;
			for (size_t at = k; at != e0; at = g->via[at]) {
				if (n == GT_CYCLE_MAX - 1)
					return true;
				path[n++] = at;
			}
			path[n++] = e0;
			for (size_t i = 0; i < n / 2; i++) {
				size_t x = path[i];
				path[i] = path[n - 1 - i];
				path[n - 1 - i] = x;
			}
			return keep_cycle(g, path, n);
		}
	}
	return true;
}

/* Thread t held from when it took, or began to wait for, to (acquired: took). */
static bool add_edge(struct gt_lock_order *g, const struct gt_tracked_thread *t,
		     const struct gt_tracked_hold *from, const struct gt_tracked_hold *to,
		     bool acquired)
{
	size_t a = node_of(g, t->capture, from->obj);
	size_t b = a ? node_of(g, t->capture, to->obj) : 0;
	bool found;
	uint64_t *slot = b ? gt_u64map_slot(&g->edge_index, (uint64_t)(a - 1) << 32 | (b - 1), &found)
			   : NULL;
	if (!slot) {
		g->lost++;
		return false;
	}
	bool from_exclusive = from->kind != GT_BK_RWLOCK_RD, to_exclusive = to->kind != GT_BK_RWLOCK_RD;
	if (found) {
		struct gt_lock_edge *e = &g->edges[*slot - 1].e;
		e->count += acquired;
		e->other_threads |= e->thread != t->serial;
		/* a writer at one of its ends: a wait that could not block now can */
		bool more = (from_exclusive && !e->from_exclusive) || (to_exclusive && !e->to_exclusive);
		e->from_exclusive |= from_exclusive;
		e->to_exclusive |= to_exclusive;
		return !more || find_cycle(g, *slot - 1);
	}
	if (!gt_grow(&g->edges, &g->cap_edges, g->n_edges + 1, sizeof *g->edges)) {
		gt_u64map_remove(&g->edge_index, (uint64_t)(a - 1) << 32 | (b - 1));
		g->lost++;
		return false;
	}
	size_t i = g->n_edges++;
	struct edge *e = &g->edges[i];
	*e = (struct edge){
		.e = {.capture = t->capture, .from = from->obj, .to = to->obj,
		      .from_kind = from->kind, .to_kind = to->kind,
		      .from_exclusive = from_exclusive, .to_exclusive = to_exclusive,
		      .thread = t->serial, .from_stack = from->stack, .to_stack = to->stack,
		      .to_flags = to->flags, .tsc = to->since_tsc, .count = acquired},
		.from_node = (uint32_t)(a - 1), .to_node = (uint32_t)(b - 1),
		.next_out = g->nodes[a - 1].first_out,
	};
	memcpy(e->e.thread_name, t->name, sizeof e->e.thread_name);
	*slot = i + 1;
	g->nodes[a - 1].first_out = i + 1;
	g->nodes[b - 1].n_in++;
	return find_cycle(g, i);
}

bool gt_lock_order_fact(struct gt_lock_order *g, const struct gt_capture_record *r,
			const struct gt_tracker_change *c)
{
	const struct gt_tracked_thread *t = c->thread;
	const struct gt_tracked_wait *w = t ? &t->wait : NULL;
	struct gt_tracked_hold to;
	size_t n_before;   /* the locks held as it was taken: held[0 .. n_before) */
	if (c->hold_began) {
		/* a try-lock cannot block: nothing it took was waited for holding the others */
		if (c->hold.flags & GT_LOCK_TRY)
			return true;
		to = c->hold;
		n_before = t->n_held - 1;
	} else if (w && r->rec->type == GT_BLOCK_BEGIN && !c->nested && w->open && !w->syscall &&
		   gt_lock_kind(w->kind)) {
		/* a wait for a lock makes its orders, whether it gets the lock or not (a
		 * deadlock's) */
		to = (struct gt_tracked_hold){.obj = w->obj, .kind = w->kind, .flags = GT_LOCK_WAITED,
					      .stack = w->stack, .since_tsc = w->since_tsc};
		n_before = t->n_held;
	} else {
		return true;
	}
	/* from the most recent GT_LOCK_ORDER_DEPTH held (as lockdep bounds its held locks): a
	 * thread that holds thousands makes no quadratic number of edges */
	size_t first = n_before > GT_LOCK_ORDER_DEPTH ? n_before - GT_LOCK_ORDER_DEPTH : 0;
	g->lost += first;
	bool ok = true;
	for (size_t i = first; i < n_before; i++)
		if (t->held[i].obj != to.obj)
			ok &= add_edge(g, t, &t->held[i], &to, c->hold_began);
	return ok;
}

size_t gt_lock_order_edges(const struct gt_lock_order *g)
{
	return g->n_edges;
}

const struct gt_lock_edge *gt_lock_order_edge(const struct gt_lock_order *g, size_t i)
{
	return i < g->n_edges ? &g->edges[i].e : NULL;
}

uint64_t gt_lock_order_lost(const struct gt_lock_order *g)
{
	return g->lost;
}

size_t gt_lock_order_cycles(const struct gt_lock_order *g)
{
	return g->n_cycles;
}

size_t gt_lock_order_cycle(const struct gt_lock_order *g, size_t i,
			   const struct gt_lock_edge **out)
{
	if (i >= g->n_cycles)
		return 0;
	const struct cycle *c = &g->cycles[i];
	for (size_t k = 0; k < c->n; k++)
		out[k] = &g->edges[g->cycle_edges[c->first + k]].e;
	return c->n;
}

bool gt_lock_order_one_thread(const struct gt_lock_order *g, size_t i)
{
	const struct gt_lock_edge *edges[GT_CYCLE_MAX];
	size_t n = gt_lock_order_cycle(g, i, edges);
	for (size_t k = 0; k < n; k++)
		if (edges[k]->other_threads || edges[k]->thread != edges[0]->thread)
			return false;
	return n > 0;
}

/* "name (thread N)" or "thread N": its name now, else when it made edge e (retired). */
static void edge_thread_text(const struct gt_tracker *tr, const struct gt_lock_edge *e,
			     char *buf, size_t size)
{
	const struct gt_tracked_thread *t = tr ? gt_tracker_thread(tr, e->capture, e->thread) : NULL;
	char name[sizeof e->thread_name];
	memcpy(name, t ? t->name : e->thread_name, sizeof name);
	name[sizeof name - 1] = '\0';
	const char *own = tr ? gt_tracker_own_name(tr, e->capture, name) : name[0] ? name : NULL;
	if (own)
		snprintf(buf, size, "%s (thread %u)", own, e->thread);
	else
		snprintf(buf, size, "thread %u", e->thread);
}

/* The lock's name copied into buf (a namer may give both names of a line in one buffer). */
static const char *lock_text(const struct gt_lock_namer *namer, uint8_t kind, uint64_t obj,
			     char *buf, size_t size)
{
	const char *name = namer && namer->lock ? namer->lock(namer->ctx, kind, obj) : NULL;
	if (name)
		snprintf(buf, size, "%s", name);
	else
		snprintf(buf, size, "%#" PRIx64, obj);
	return buf;
}

void gt_lock_order_cycle_text(const struct gt_lock_order *g, size_t i,
			      const struct gt_tracker *tr, const struct gt_lock_namer *namer,
			      char *buf, size_t size)
{
	const struct gt_lock_edge *edges[GT_CYCLE_MAX];
	size_t n = gt_lock_order_cycle(g, i, edges), len = 0;
	if (size)
		buf[0] = '\0';
	for (size_t k = 0; k < n && len < size; k++) {
		const struct gt_lock_edge *e = edges[k];
		char from[256], to[256], site[512], who[48];
		const char *at = namer && namer->site && e->to_stack
					 ? namer->site(namer->ctx, e->capture, e->to_stack, site, sizeof site)
					 : NULL;
		if (!at) {
			if (e->to_stack)
				snprintf(site, sizeof site, "stack %u", e->to_stack);
			else
				snprintf(site, sizeof site, "an unrecorded site");
			at = site;
		}
		edge_thread_text(tr, e, who, sizeof who);
		int w = snprintf(buf + len, size - len, "%s%s then %s at %s (%s)", k ? ", " : "",
				 lock_text(namer, e->from_kind, e->from, from, sizeof from),
				 lock_text(namer, e->to_kind, e->to, to, sizeof to), at, who);
		len += w > 0 ? (size_t)w : 0;
	}
}

size_t gt_lock_order_text(const struct gt_lock_order *g, uint32_t capture,
			  const struct gt_tracker *tr, const struct gt_lock_namer *namer, char *buf,
			  size_t size)
{
	size_t found = 0, len = strlen(buf);
	for (size_t i = 0; i < g->n_cycles; i++) {
		if (g->edges[g->cycle_edges[g->cycles[i].first]].e.capture != capture)
			continue;
		found++;
		char line[1024];
		gt_lock_order_cycle_text(g, i, tr, namer, line, sizeof line);
		size_t need = strlen(line) + (len ? 1 : 0);
		if (len + need + 1 > size || strlen(line) + 1 >= sizeof line)
			continue;   /* counted; only whole lines are said */
		snprintf(buf + len, size - len, "%s%s", len ? "\n" : "", line);
		len += need;
	}
	return found;
}
