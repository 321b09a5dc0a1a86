/* model_wait: wait lists (chains of waiting threads per hash bucket, in block order) and
 * the choice of which waiters a release wakes (see model_internal.h). */
#include "model_internal.h"

#include <stdlib.h>

#include "common/grow.h"
#include "common/hash.h"

size_t gtm_bucket_of(const struct gt_model *m, uint64_t key)
{
	return (size_t)(gt_hash_mix(key) >> 17) & (m->n_buckets - 1);
}

static void wait_list_rehash(struct gt_model *m, size_t n_buckets)
{
	uint32_t *b = calloc(n_buckets, sizeof *b);
	if (!b)
		return;
	free(m->buckets);
	m->buckets = b;
	m->n_buckets = n_buckets;
	/* re-chain in block order: waiters sorted by block time within a key */
	FOR_EACH_THREAD(m, t) {
		if (!t->in_wait_list)
			continue;
		t->in_wait_list = false;
		m->n_waiting--;
		gtm_wait_add(m, t, t->wait_obj);
	}
}

uint64_t gtm_object_key(const struct gt_model *m, const struct gt_capture_record *r,
			uint64_t obj)
{
	return gtm_object_key_of(m, r->capture, obj);
}

uint64_t gtm_object_key_of(const struct gt_model *m, uint32_t capture, uint64_t obj)
{
	/* a kernel identity (capture.h, GT_OBJ_KERNEL) is the same in every process; user
	 * addresses are below 2^47: the capture goes above them, under GT_OBJ_SOCKET (bit 61) */
	if (obj & GT_OBJ_KERNEL)
		return obj;
	return m->merged ? obj ^ ((uint64_t)(capture & 0x1fff) << 48) : obj;
}

void gtm_wait_add(struct gt_model *m, struct mthread *t, uint64_t key)
{
	/* a thread is in one list at most (a damaged capture can begin a wait inside another,
	 * a block inside a pending syscall's): linked twice, a list would loop */
	gtm_wait_remove(m, t);
	if (m->n_waiting * 2 >= m->n_buckets)
		wait_list_rehash(m, m->n_buckets ? m->n_buckets * 4 : 256);
	if (!m->n_buckets)
		return;
	t->wait_obj = key;
	t->hnext = 0;
	uint32_t *link = &m->buckets[gtm_bucket_of(m, key)];
	/* insert keeping block order (ties: arrival order) */
	while (*link && gtm_thread_at(m, *link)->block_ns <= t->block_ns)
		link = &gtm_thread_at(m, *link)->hnext;
	t->hnext = *link;
	*link = t->serial;
	t->in_wait_list = true;
	m->n_waiting++;
}

void gtm_wait_remove(struct gt_model *m, struct mthread *t)
{
	if (!t->in_wait_list)
		return;
	uint32_t *link = &m->buckets[gtm_bucket_of(m, t->wait_obj)];
	while (*link && *link != t->serial)
		link = &gtm_thread_at(m, *link)->hnext;
	if (*link)
		*link = t->hnext;
	t->hnext = 0;
	t->in_wait_list = false;
	m->n_waiting--;
}

void gtm_unblock_by(struct gt_model *m, struct mthread *waker, struct mthread *w, uint64_t ns,
		    uint64_t stack)
{
	gtm_wait_remove(m, w);
	GTM_EMIT(m, ns, waker, w, .kind = GT_SCHED_GO_UNBLOCK, .p = waker->p, .g = w->g,
		 .seq = ++w->seq, .stack = stack);
	w->state = T_RUNNABLE;
	m->ctr.wakes_matched++;
	gtm_kernel_unblocked(m, w, ns);
}

/* w is in key's wait list, waiting */
static bool waits_on(const struct mthread *w, uint64_t key)
{
	return w->in_wait_list && w->wait_obj == key && w->state == T_WAITING;
}

/* A waiter on key that the release being modelled may wake: it blocked before, in ticks
 * (two facts a few ticks apart may round to the same ns), or at the release's very tick: two
 * CPUs can read one TSC value, and the real release follows the release's stamp (a wait
 * again begins at a switch-out on the kernel's clock, before that real release too). */
static bool may_wake(const struct gt_model *m, const struct mthread *w, uint64_t key)
{
	return waits_on(w, key) && w->block_tsc <= m->fact_tsc;
}

struct mthread *gtm_cond_held_waiter(struct gt_model *m, uint64_t key, uint32_t holder)
{
	for (uint32_t s = m->n_buckets ? m->buckets[gtm_bucket_of(m, key)] : 0; s;) {
		struct mthread *w = gtm_thread_at(m, s);
		s = w->hnext;
		/* its block names this holder: modelled before, it came first, even at the same
		 * tick (two CPUs can read one TSC value) */
		if (w->cond_held && w->cond_holder == holder && waits_on(w, key) &&
		    w->block_tsc <= m->fact_tsc)
			return w;
	}
	return NULL;
}

/* A waiter on key that the release being modelled may wake, of those it looks for (again:
 * only waits again, gtm_wake_again). */
static bool may_wake_of(const struct gt_model *m, const struct mthread *w, uint64_t key, bool again)
{
	return may_wake(m, w, key) && (!again || w->waits_again);
}

/* Gives each waiter that may be woken the place of its next fact in the lookahead
 * (ahead_pos, UINT64_MAX when not there).  The lookahead is read in order, so it stops once
 * the first `want` of them are placed: the rest cannot come before them. */
static void place_in_lookahead(struct gt_model *m, uint64_t key, uint32_t want, bool again)
{
	size_t n = 0, placed = 0;
	for (uint32_t s = m->buckets[gtm_bucket_of(m, key)]; s;) {
		struct mthread *w = gtm_thread_at(m, s);
		s = w->hnext;
		/* a hooked release's, not a wait again after it (its credit's) */
		if (!again && w->wait_obj == key && w->state == T_WAITING && !w->waits_again &&
		    w->block_tsc > m->fact_tsc)
			m->ctr.causal_fallbacks++;
		if (may_wake_of(m, w, key, again)) {
			w->ahead_pos = UINT64_MAX;
			n++;
		}
	}
	if (n < 2)
		return;   /* nothing to choose */
	if (want < n)
		n = want;
	/* every process's: a process-shared object's waiters may be in another one */
	struct gt_capture_record r;
	for (size_t i = 0; placed < n && gtm_peek(m, i, &r); i++) {
		struct mthread *w = gtm_thread_find(m, gtm_serial_find(m, r.capture, r.rec->thread));
		if (w && w->ahead_pos == UINT64_MAX && may_wake_of(m, w, key, again)) {
			w->ahead_pos = i;
			placed++;
		}
	}
}

/* Blocks on key that begin before waker's next fact, up to count of them (only waits again,
 * when again), are woken by its release (stack) as they block. */
static void give_credit(struct gt_model *m, struct mthread *waker, uint64_t key, uint32_t count,
			uint64_t stack, bool again)
{
	if (!waker->credit_count) {
		if (!gt_grow(&m->credit_holders, &m->cap_credits, m->n_credits + 1,
			     sizeof *m->credit_holders))
			return;   /* out of memory: its late waiters get unknown wakers (counted) */
		m->credit_holders[m->n_credits++] = waker->serial;
	}
	waker->credit_key = key;
	waker->credit_count = count;
	waker->credit_stack = stack;
	waker->credit_again = again;
}

/* The waiter on key a release lets in first, after place_in_lookahead: the one whose next
 * fact comes first in the lookahead (a mutex is not FIFO: the waiter that resumes first is
 * the one this release let in), then block order; NULL when none may be woken. */
static struct mthread *first_waiter(struct gt_model *m, uint64_t key, bool again)
{
	struct mthread *best = NULL;
	for (uint32_t s = m->buckets[gtm_bucket_of(m, key)]; s;) {
		struct mthread *w = gtm_thread_at(m, s);
		s = w->hnext;
		if (may_wake_of(m, w, key, again) && (!best || w->ahead_pos < best->ahead_pos))
			best = w;
	}
	return best;
}

/* Whether the fact being modelled is a semaphore's post that waker makes only after its
 * preemption, which another post lets w in before (gtm_post_made_late): its credit waits. */
static bool post_made_late(const struct gt_model *m, const struct mthread *waker, uint64_t key,
			   const struct mthread *w)
{
	return m->kernel && m->cur && m->cur->rec->type == GT_WAKE && m->cur->rec->aux == GT_BK_SEM &&
	       gtm_post_made_late(m, waker, key, w);
}

/* Wakes up to count waiters on key that blocked strictly before the release (in ticks), in
 * the order of first_waiter. */
void gtm_wake_waiters(struct gt_model *m, struct mthread *waker, uint64_t key, uint32_t count,
		      uint64_t ns, uint64_t stack)
{
	if (!m->n_buckets)
		return;
	place_in_lookahead(m, key, count, false);
	while (count) {
		struct mthread *best = first_waiter(m, key, false);
		if (!best || (count == 1 && post_made_late(m, waker, key, best)))
			break;
		gtm_unblock_by(m, waker, best, ns, stack);
		if (count != GT_WAKE_ALL)
			count--;
	}
	if (count && waker->state == T_RUNNING) {
		/* The recorder stamps a wake before the release and writes it only if a waiter
		 * is registered after the release: a waiter that registered in between took its
		 * timestamp after the wake's.  It blocks before the releaser's next fact.  A post
		 * made late is made when its releaser runs again (gtm_credit_resume). */
		give_credit(m, waker, key, count, stack, false);
	}
}

/* How far apart two CPUs' clocks can be (gtm_wake_skewed) */
#define CPU_SKEW_NS 1000u

void gtm_wake_skewed(struct gt_model *m, struct mthread *w, const struct gt_capture_record *end,
		     uint64_t ns)
{
	uint64_t limit = end->tsc + (m->clock.tsc_hz ? CPU_SKEW_NS * m->clock.tsc_hz / 1000000000u
						    : CPU_SKEW_NS);
	struct gt_capture_record r;
	for (size_t i = 0; gtm_peek(m, i, &r) && r.tsc <= limit; i++) {
		const struct gt_p_wake *wk = r.payload;
		if (r.rec->type != GT_WAKE || r.cpu == end->cpu || wk->count != 1 ||
		    r.capture != w->capture || !gtm_releases(m, &r, w->wait_obj))
			continue;
		struct mthread *x = gtm_thread_find(m, gtm_serial_find(m, r.capture, r.rec->thread));
		if (!x || x == w || x->state != T_RUNNING)
			continue;
		uint64_t stack = gtm_captured_stack(m, wk->stack);
		x->wake_spent_tsc = r.tsc;
		gtm_unblock_by(m, x, w, ns, stack ? stack : gtm_synth_stack(m, S_WAKE));
		return;
	}
}

bool gtm_releases(const struct gt_model *m, const struct gt_capture_record *r, uint64_t key)
{
	if (r->rec->type == GT_WAKE)
		return gtm_object_key(m, r, ((const struct gt_p_wake *)r->payload)->obj) == key;
	const struct gt_p_block *b = r->payload;
	return r->rec->type == GT_BLOCK_BEGIN && r->rec->aux == GT_BK_COND &&
	       r->payload_len >= sizeof *b + sizeof(struct gt_p_block_mutex) &&
	       gtm_object_key(m, r, ((const struct gt_p_block_mutex *)(b + 1))->mutex) == key;
}

/* The mutex waiter on key (again: of the waits again, else of the hooked waits) whose wait
 * ends before any other release of key in the lookahead: the release being modelled, the
 * last before that end, let it in; NULL when none. */
static bool ends_first_of(const struct gt_model *m, const struct mthread *w, uint64_t key,
			  bool again)
{
	return w->waits_again == again && w->wait_kind == GT_BK_MUTEX && may_wake(m, w, key);
}

static struct mthread *waiter_ending_first(struct gt_model *m, uint64_t key, bool again)
{
	/* none of key's waiters is one: no need to read the lookahead (up to 4095 records) */
	bool any = false;
	for (uint32_t s = m->buckets[gtm_bucket_of(m, key)]; s && !any;) {
		struct mthread *w = gtm_thread_at(m, s);
		s = w->hnext;
		any = ends_first_of(m, w, key, again);
	}
	struct gt_capture_record r;
	for (size_t i = 0; any && gtm_peek(m, i, &r); i++) {
		if (gtm_releases(m, &r, key))
			return NULL;
		if (r.rec->type != GT_BLOCK_END)
			continue;
		struct mthread *w = gtm_thread_find(m, gtm_serial_find(m, r.capture, r.rec->thread));
		if (w && ends_first_of(m, w, key, again))
			return w;
	}
	return NULL;
}

void gtm_wake_sleeper(struct gt_model *m, struct mthread *waker, uint64_t key, uint64_t ns,
		      uint64_t stack)
{
	struct mthread *w = m->n_buckets ? waiter_ending_first(m, key, true) : NULL;
	if (w)
		gtm_unblock_by(m, waker, w, ns, stack);
}

bool gtm_wake_again(struct gt_model *m, struct mthread *waker, uint64_t key, uint64_t ns,
		    uint64_t stack)
{
	if (m->n_buckets) {
		place_in_lookahead(m, key, 1, true);
		struct mthread *w = first_waiter(m, key, true);
		if (!w)   /* one whose looks missed it: registered after the first, gone by the second */
			w = waiter_ending_first(m, key, false);
		if (w) {
			gtm_unblock_by(m, waker, w, ns, stack);
			return true;
		}
	}
	/* The release is stamped before the real one, which lets in the thread that went to
	 * sleep on key in between: the first wait again before waker's next fact. */
	if (waker->state == T_RUNNING)
		give_credit(m, waker, key, 1, stack, true);
	return false;
}

/* Whether w's credit lets t in on key now (again: t waits again).  A credit stands until w's
 * next fact or sleep (model_kernel.c).  A hooked wake's lets in while w runs (preempted, its
 * release comes when it runs again: gtm_credit_resume); an unseen release's although w may be
 * drawn blocked (a condition wait releases its mutex after its block's stamp, inside glibc). */
static bool credit_open(const struct mthread *w, const struct mthread *t, uint64_t key, bool again)
{
	if (!w->credit_count || w == t || w->credit_key != key)
		return false;
	return w->credit_again ? again : w->state == T_RUNNING;
}

/* t's credit is spent or ended */
static void credit_drop(struct gt_model *m, struct mthread *t)
{
	t->credit_count = 0;
	for (size_t i = 0; i < m->n_credits; i++)
		if (m->credit_holders[i] == t->serial) {
			m->credit_holders[i] = m->credit_holders[--m->n_credits];
			return;
		}
}

/* One credit of w is used */
static void credit_use(struct gt_model *m, struct mthread *w)
{
	if (w->credit_count != GT_WAKE_ALL && !--w->credit_count)
		credit_drop(m, w);
}

/* The holder of the credit that lets t in on key now, of the lowest serial (again: t waits
 * again; only_again: of unseen releases only); NULL when none. */
static struct mthread *credit_for(struct gt_model *m, const struct mthread *t, uint64_t key,
				  bool again, bool only_again)
{
	struct mthread *best = NULL;
	for (size_t i = 0; i < m->n_credits; i++) {
		struct mthread *w = gtm_thread_find(m, m->credit_holders[i]);
		if (w && credit_open(w, t, key, again) && (!only_again || w->credit_again) &&
		    (!best || w->serial < best->serial))
			best = w;
	}
	return best;
}

void gtm_credit_resume(struct gt_model *m, struct mthread *t, uint64_t ns)
{
	if (!t->credit_count || t->credit_again || !m->n_buckets)
		return;
	/* released at its switch-in: may_wake compares blocks with that time */
	uint64_t fact_tsc = m->fact_tsc;
	m->fact_tsc = t->k_in_tsc;
	place_in_lookahead(m, t->credit_key, t->credit_count, false);
	while (t->credit_count) {
		struct mthread *w = first_waiter(m, t->credit_key, false);
		if (!w)
			break;
		gtm_unblock_by(m, t, w, ns, t->credit_stack);
		credit_use(m, t);
	}
	m->fact_tsc = fact_tsc;
}

bool gtm_again_credit(struct gt_model *m, const struct mthread *t, uint64_t key)
{
	return credit_for(m, t, key, true, true) != NULL;
}

/* A wake's credit ends with its thread's next fact. */
void gtm_credit_end(struct gt_model *m, uint32_t serial)
{
	struct mthread *t = gtm_thread_find(m, serial);
	if (t && t->credit_count)
		credit_drop(m, t);
}

/* t has just blocked on its wait_obj at ns: a credit on that object wakes it at once. */
void gtm_wait_credit(struct gt_model *m, struct mthread *t, uint64_t ns)
{
	struct mthread *w = credit_for(m, t, t->wait_obj, t->waits_again, false);
	if (w) {
		gtm_unblock_by(m, w, t, ns, w->credit_stack);
		credit_use(m, w);
	}
}
