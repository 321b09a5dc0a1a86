/* encoder/tracker.h: the thread-and-wait tracker and the graphs made from its answers (the
 * wait-for graph at a cut, the lock-order graph of --locks=all).  Part of the encoder's face:
 * encoder/encoder.h includes it, and nothing outside encoder/ includes it alone. */
#ifndef GOTRACE_ENCODER_TRACKER_H
#define GOTRACE_ENCODER_TRACKER_H

#include <gotrace/capture.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gt_capture_record;   /* encoder.h: one record in merged order */

/* ---- the thread-and-wait tracker ---------------------------------------------------- */

/* The tracker (tracker.c): the one thread-and-wait state of the captures, fed fact by fact in merged order.
 *
 * At any cut it answers which threads live (capture, serial, tid, name, start routine,
 * existing at start), what each is doing (running, runnable, blocked on object O of kind K
 * since T with its stack, in syscall N on descriptor D since T with its stack) and what the
 * facts tell of holders (the thread holding a lock now, the last thread a wait's end let
 * into it, the last one that released it) and so what a blocked thread waits for
 * (waitfor.c: the wait-for graph and its cycles).  A plain state machine over capture facts: it knows nothing of the trace it
 * may be turned into.  Every user asks it instead of keeping a copy: the model, the window
 * of --from/--to (window.c), the ring capture's state at its window's start (capture_ring.c)
 * and the report.
 *
 * Its rules, one per fact, whoever asks:
 *   - a thread is met by a fact of its own (rec->thread) or announced by its THREAD_NEW;
 *     any fact of its own makes it live (again, after a THREAD_END or its capture's end);
 *   - THREAD_NEW: the child's start routine (when none yet), its creator and create stack;
 *     THREAD_START / THREAD_EXISTING: tid, start routine (when given); EXISTING aux bit 0
 *     says it was blocked when first seen, until its next fact; the tid names this thread
 *     from then on (ids are reused: the latest thread given one is the one it names);
 *   - a lock's holder: the thread a mutex or rwlock BLOCK_BEGIN names (GT_BLOCK_HOLDER_TID
 *     or GT_BLOCK_COND_HELD; none, when it names none), the thread a BLOCK_END lets in (not
 *     a reader), a condition waiter taking its mutex back at its end; a WAKE on it (a
 *     release) leaves it without one, and so does a condition wait's BEGIN of its holder;
 *   - LOCK_ACQUIRE (--locks=all) begins a hold in the thread's held list (a lock it holds
 *     already: one more depth) and makes it the lock's holder, taken there (a reader: not
 *     the holder); LOCK_RELEASE ends one depth, and the hold at depth 0 (the lock then has
 *     no holder); a release of a lock not held is counted as unmatched, nothing else;
 *   - a BLOCK_BEGIN or SYSCALL_BEGIN opens its wait; the matching end (BLOCK_END for a
 *     block, SYSCALL_END for a syscall) or its THREAD_END closes it; other facts leave it
 *     open (a signal handler's, or a mismatched end);
 *   - a BEGIN while its wait is open is a call a signal handler made inside it (the
 *     recorder ends every call a handler's jump leaves, and a thread's end its open calls):
 *     nested, it and its end change nothing, and the open wait keeps its length;
 *   - a YIELD leaves it runnable until its next fact;
 *   - a thread inherits its process's comm: the header's (gt_tracker_capture_header), or the
 *     first GT_PROCESS_NAME's when that one names one; a name equal to it tells nothing;
 *   - the end of a capture ends its threads; what they were doing stays readable;
 *   - a thread its user retires (gt_tracker_retire: it ended, and nothing will ask for it)
 *     is forgotten but for one bit: its later facts change nothing, and the threads held
 *     are those not retired.  A tracker nobody retires threads of keeps every one (the
 *     report, which totals each thread at the end). */

/* Words of a wait's BEGIN record kept as read (header included): a BLOCK_BEGIN with its
 * mutex tail or a SYSCALL_BEGIN with its kernel key fits; longer ones are not written. */
#define GT_TRACKED_RAW_WORDS 8

enum gt_tracked_life {
	GT_LIFE_ANNOUNCED = 1,  /* its THREAD_NEW was read, no fact of its own yet */
	GT_LIFE_LIVE,
	GT_LIFE_ENDED,          /* its THREAD_END, or its capture's end */
};

enum gt_tracked_doing {
	GT_DOING_RUNNING = 0,   /* its latest fact is its own, outside any wait */
	GT_DOING_RUNNABLE,      /* announced and not started, or yielded */
	GT_DOING_BLOCKED,       /* in a BLOCK_BEGIN's wait */
	GT_DOING_SYSCALL,       /* in a SYSCALL_BEGIN's call */
};

/* A wait: a blocking call (BLOCK_BEGIN .. BLOCK_END) or a syscall (SYSCALL_BEGIN ..
 * SYSCALL_END). */
struct gt_tracked_wait {
	bool open;
	bool syscall;
	uint8_t kind;           /* enum gt_block_kind, or enum gt_fd_kind for a syscall */
	uint32_t stack;         /* capture stack id where it began, 0 = none */
	uint64_t since_tsc;     /* its BEGIN's timestamp (as delivered: maybe clamped) */
	uint32_t cpu;           /* where it began */
	/* a block */
	uint64_t obj;           /* object (per kind: capture.h gt_block_kind) */
	uint32_t flags;         /* enum gt_block_flags */
	uint64_t cond_mutex;    /* a condition wait's mutex, when its BEGIN names it; else 0 */
	uint32_t holder;        /* a lock wait: the thread (serial) its BEGIN found holding the
				 * lock, 0 = not named or not met */
	uint32_t holder_tid;    /* ... named by its kernel id (GT_BLOCK_HOLDER_TID), else 0 */
	/* a syscall */
	uint32_t nr;            /* x86-64's SYS_* number, whoever recorded it (syscalls.h) */
	int64_t arg;            /* the descriptor for a descriptor call, else its key argument */
	uint64_t key;           /* the descriptor's kernel key (GT_OBJ_KERNEL), 0 = none */
};

/* A lock a thread holds, from the lock records of --locks=all (LOCK_ACQUIRE .. LOCK_RELEASE;
 * a condition wait releases its mutex and takes it back with records of their own). */
struct gt_tracked_hold {
	uint64_t obj;
	uint8_t kind;               /* GT_BK_MUTEX, GT_BK_RWLOCK_RD or GT_BK_RWLOCK_WR */
	uint32_t flags;             /* the outermost acquisition's enum gt_lock_flags */
	uint32_t stack;             /* ... its stack: where it was taken, 0 = none */
	uint64_t since_tsc;         /* ... its timestamp */
	uint32_t depth;             /* acquisitions not yet released (> 1: a recursive mutex's) */
};

struct gt_tracked_thread {
	uint32_t capture, serial;
	size_t order;               /* its place in the order met (gt_tracker_next's order) */
	uint32_t tid;               /* kernel thread id, 0 until its START/EXISTING */
	char name[16];              /* its last THREAD_NAME, NUL-terminated ("" = none) */
	bool named;
	uint64_t start_routine;     /* 0 = unknown (a thread that existed before recording) */
	bool announced;             /* a THREAD_NEW named it */
	uint32_t creator;           /* that fact's thread (serial) */
	uint32_t create_stack;      /* and its stack id */
	bool identified;            /* its THREAD_START or THREAD_EXISTING was read */
	bool existing;              /* ... and it was a THREAD_EXISTING (there before recording) */
	uint32_t identity_stack;    /* that fact's stack (EXISTING: where first seen) */
	bool blocked_at_start;      /* EXISTING said it was blocked, and no fact of it since */
	enum gt_tracked_life life;
	bool end_seen;              /* its own THREAD_END was read (even if facts follow) */
	uint8_t end_how;            /* that fact's enum gt_end_how */
	uint64_t end_tsc;
	bool has_facts;             /* a fact of its own was read */
	uint64_t first_tsc, last_tsc;  /* of its own facts */
	uint32_t cpu;               /* of its latest fact (announced: its creator's) */
	enum gt_tracked_doing doing;
	struct gt_tracked_wait wait;   /* open: what it waits for now; else its last wait */
	struct gt_tracked_wait last_syscall;  /* its latest SYSCALL_BEGIN's, open or not (zero:
					       * none) */
	uint32_t nested;            /* calls begun inside the open wait and not ended yet */
	/* the open wait's BEGIN record as read (0 words: none, or too long to keep) */
	uint16_t raw_words;
	size_t raw_payload_len;
	uint64_t raw[GT_TRACKED_RAW_WORDS];
	/* the locks it holds now, in the order taken (--locks=all captures; else none) */
	struct gt_tracked_hold *held;
	size_t n_held, cap_held;
};

/* What the facts give of a lock's holders (mutexes and rwlocks): an uncontended acquire has
 * no fact, so the last known acquirer is the last whose wait on it ended with the lock. */
struct gt_tracked_object {
	uint32_t capture;
	uint64_t obj;
	uint8_t kind;               /* enum gt_block_kind of its latest fact */
	uint32_t acquired_by;       /* serial, 0 = none known */
	uint64_t acquired_tsc;
	uint32_t released_by;       /* the last WAKE on it: serial, 0 = none */
	uint64_t released_tsc;
	uint32_t released_stack;    /* that WAKE's stack id, 0 = none */
	/* Its holder now, as far as the facts tell: named by the latest wait on it that began
	 * (the lock word's owner), or the thread a wait's end let in (a write lock; a mutex a
	 * condition wait took back); released by its WAKE.  An uncontended release has no
	 * fact: a holder is only as fresh as the lock's last contended moment. */
	uint32_t holder;            /* serial, 0 = none known */
	uint32_t holder_tid;        /* its kernel id, 0 = unknown (a tid no thread was met with:
				     * holder 0) */
	uint64_t held_tsc;          /* known to hold it since */
	uint32_t held_stack;        /* where it took it (the stack of the wait that let it in),
				     * 0 = not recorded */
};

/* What one fact changed. */
struct gt_tracker_change {
	const struct gt_tracked_thread *thread;  /* the fact's thread, NULL: none */
	/* a wait the fact closed (its end, a new begin, a THREAD_END): as it was while open */
	bool closed;
	struct gt_tracked_wait closed_wait;
	bool nested;   /* a BEGIN or an END of a call nested in the thread's open wait */
	/* a LOCK_ACQUIRE that began a hold: it is the thread's held[n_held - 1], the locks
	 * before it were held as it was taken; false for a recursive mutex's inner acquisition
	 * (hold.depth counts it) */
	bool hold_began;
	/* a LOCK_RELEASE that ended a hold (the outermost release): the hold as it was */
	bool hold_ended;
	struct gt_tracked_hold hold;   /* the hold begun or ended */
	/* a LOCK_RELEASE of a lock the thread is not known to hold (taken before the capture
	 * or the window began, or released by another thread than its taker) */
	bool release_unmatched;
};

struct gt_tracker;

struct gt_tracker *gt_tracker_new(void);
void gt_tracker_free(struct gt_tracker *tr);
/* The next fact of the merged stream (GT_CAPTURE_END: the end of its capture).  change may be
 * NULL.  false when memory runs out (the fact is then not tracked). */
bool gt_tracker_fact(struct gt_tracker *tr, const struct gt_capture_record *r,
		     struct gt_tracker_change *change);
/* Capture (a process image) has no more records: its threads end. */
void gt_tracker_capture_end(struct gt_tracker *tr, uint32_t capture);
/* Capture's header: the comm its threads inherit until its first GT_PROCESS_NAME.  false
 * when memory runs out. */
bool gt_tracker_capture_header(struct gt_tracker *tr, uint32_t capture,
			       const struct gt_file_header *h);
/* The name capture's threads inherit, "" when not known. */
const char *gt_tracker_inherited_name(const struct gt_tracker *tr, uint32_t capture);
/* name (a thread of capture's) when it is its own: not empty, not the inherited one; else
 * NULL. */
const char *gt_tracker_own_name(const struct gt_tracker *tr, uint32_t capture, const char *name);

/* The thread (capture, serial), NULL when never met or retired.  Pointers stay valid until
 * freed or the thread is retired. */
const struct gt_tracked_thread *gt_tracker_thread(const struct gt_tracker *tr, uint32_t capture,
						  uint32_t serial);
/* Every thread held, in the order first met: *pos from 0; NULL after the last. */
const struct gt_tracked_thread *gt_tracker_next(const struct gt_tracker *tr, size_t *pos);
/* Only those live at this cut (announced or live). */
const struct gt_tracked_thread *gt_tracker_next_live(const struct gt_tracker *tr, size_t *pos);
/* The threads held: met and not retired. */
size_t gt_tracker_count(const struct gt_tracker *tr);
/* Forgets thread (capture, serial), which its caller knows ended and nothing will ask for:
 * its state is freed (pointers to it die), its later facts change nothing.  false when it is
 * not held, or memory runs out (it is then kept). */
bool gt_tracker_retire(struct gt_tracker *tr, uint32_t capture, uint32_t serial);
/* Whether thread (capture, serial) was retired. */
bool gt_tracker_retired(const struct gt_tracker *tr, uint32_t capture, uint32_t serial);
/* What is known of lock obj of capture, NULL: nothing. */
const struct gt_tracked_object *gt_tracker_object(const struct gt_tracker *tr, uint32_t capture,
						  uint64_t obj);
/* The thread of capture whose kernel id is tid now (the latest identified with it: ids are
 * reused), NULL: none met. */
const struct gt_tracked_thread *gt_tracker_thread_by_tid(const struct gt_tracker *tr,
							 uint32_t capture, uint32_t tid);

/* ---- the wait-for graph at a cut (waitfor.c) ---- */

/* Whether a wait of kind is on a lock (a mutex or a rwlock), which a thread holds. */
bool gt_lock_kind(uint8_t kind);
/* What thread t, in an open lock wait, waits for: the lock's object (NULL: nothing known of
 * it) and its holder (NULL: not known; *holder_tid then its kernel id when a wait named one,
 * else 0).  In an open join (GT_BK_JOIN): the joined thread while it lives, object NULL. */
const struct gt_tracked_thread *gt_tracker_waits_for(const struct gt_tracker *tr,
						     const struct gt_tracked_thread *t,
						     const struct gt_tracked_object **object,
						     uint32_t *holder_tid);
#define GT_CYCLE_MAX 64u
/* The deadlock through t, if any: the threads of the cycle of "waits for a lock held by"
 * that t is on, t first, into out (up to GT_CYCLE_MAX); their count, 0 when t is on none
 * (or on a longer one).  A cycle is found once from each of its threads: lead says whether
 * t is the one to report it from (the first of them met). */
size_t gt_tracker_deadlock(const struct gt_tracker *tr, const struct gt_tracked_thread *t,
			   const struct gt_tracked_thread **out, bool *lead);
/* The deadlocks among capture's threads at this cut, appended to buf (a C string): per
 * deadlock a line "N threads, each waiting ..." (for the next one, when a join is on it),
 * then one line per thread, indented by two
 * spaces ("A (thread 2) waits for mutex accounts_lock held by B (thread 3)"), each lock by
 * name(ctx, kind, obj) when name gives one, else by address; cut with "..." at size.  Their
 * count. */
size_t gt_tracker_deadlock_text(const struct gt_tracker *tr, uint32_t capture, char *buf,
				size_t size,
				const char *(*name)(void *ctx, uint8_t kind, uint64_t obj),
				void *ctx);

/* A live process's waits (gotrace stacks: read by ptrace, no capture), so that the same
 * graph answers for it: each thread with the wait it sleeps in now. */
struct gt_live_wait {
	uint32_t tid;
	uint8_t kind;        /* enum gt_block_kind of its wait; 0: in none */
	uint64_t obj;        /* the lock (GT_BK_JOIN: not used) */
	uint32_t holder_tid; /* a lock's holder as its words tell, the thread a join waits for;
			      * 0: none known */
};
/* A tracker holding the n threads of waits as capture 0's threads, w[i] as serial i + 1,
 * each in its wait (its holder named by tid: a BLOCK_BEGIN's GT_BLOCK_HOLDER_TID), so that
 * gt_tracker_waits_for and gt_tracker_deadlock answer for the live process; NULL when memory
 * runs out.  Free it with gt_tracker_free. */
struct gt_tracker *gt_tracker_of_live_waits(const struct gt_live_wait *w, size_t n);

/* ---- the lock-order graph (lockorder.c) ---- */

/* The order in which threads took locks (--locks=all captures), per capture: an edge A -> B
 * for every lock A a thread held when it began to hold B, fed the tracker's changes.  Its
 * cycles are the lock-order inversions: orders that can deadlock one day, whether or not
 * they did.  The rules, and why (docs/usage.md, "Lock-order inversions"):
 *   - an edge is made by a hold_began, and by a BLOCK_BEGIN of a lock wait (which may never
 *     end: a deadlock's orders are made too): from each lock the thread held then, in the
 *     order taken (the GT_LOCK_ORDER_DEPTH most recent), to the new one; never into a lock
 *     it holds already (a recursive mutex's inner acquisition begins no hold) nor into one
 *     a try-lock took (GT_LOCK_TRY: it cannot block, as in lockdep); a try-locked lock held
 *     gives edges to later ones (they block);
 *   - a condition wait taking its mutex back (GT_LOCK_COND) blocks like a lock: edges; so
 *     do timed locks (they may still wait until their timeout);
 *   - each edge keeps its first acquisition (thread, where the held lock was taken, where
 *     the new one was, when) and counts the others; memory grows with the distinct edges;
 *   - a cycle is looked for when an edge is made, or when an edge first sees a writer at
 *     one of its ends: the shortest one through it whose every wait can block: the wait for
 *     a lock the next thread holds, unless both take that rwlock as readers (glibc's
 *     default rwlock lets a reader in beside readers); each cycle is kept once, its edges
 *     from the earliest made;
 *   - a cycle all of whose edges one thread made is kept: alone it cannot deadlock on
 *     them, but another thread running the same code can (as TSan and lockdep report). */
struct gt_lock_edge {
	uint32_t capture;
	uint64_t from, to;          /* the lock held, and the one taken while holding it */
	uint8_t from_kind, to_kind; /* GT_BK_MUTEX, GT_BK_RWLOCK_RD, GT_BK_RWLOCK_WR: as the
				     * first acquisition held from and took to */
	bool from_exclusive;        /* some acquisition held from other than as a reader */
	bool to_exclusive;          /* ... took to other than as a reader */
	uint32_t thread;            /* the first acquisition's thread (serial) */
	char thread_name[16];       /* its name then */
	uint32_t from_stack;        /* where that thread took from, 0 = not recorded */
	uint32_t to_stack;          /* where it took to */
	uint32_t to_flags;          /* that acquisition's enum gt_lock_flags (GT_LOCK_WAITED
				     * alone: a wait for it made the edge) */
	uint64_t tsc;               /* when it took to (or began to wait for it) */
	uint64_t count;             /* acquisitions that made it (0: its waits never got it) */
	bool other_threads;         /* some of them by another thread than the first */
};

struct gt_lock_order;

struct gt_lock_order *gt_lock_order_new(void);
void gt_lock_order_free(struct gt_lock_order *g);
/* Fact r and what it changed (gt_tracker_fact's change); false when memory runs out (the
 * edge is then not made, and counted: gt_lock_order_lost). */
bool gt_lock_order_fact(struct gt_lock_order *g, const struct gt_capture_record *r,
			const struct gt_tracker_change *c);
/* The edges, in the order made: i from 0; pointers valid until the next change. */
size_t gt_lock_order_edges(const struct gt_lock_order *g);
const struct gt_lock_edge *gt_lock_order_edge(const struct gt_lock_order *g, size_t i);
/* Edges not made: for want of memory, or from a lock held below the GT_LOCK_ORDER_DEPTH most
 * recent ones of its thread. */
#define GT_LOCK_ORDER_DEPTH 64u
uint64_t gt_lock_order_lost(const struct gt_lock_order *g);
/* The cycles, in the order found: cycle i's edges into out (up to GT_CYCLE_MAX), each
 * edge's to the next one's from, the last one's to the first one's from; their count. */
size_t gt_lock_order_cycles(const struct gt_lock_order *g);
size_t gt_lock_order_cycle(const struct gt_lock_order *g, size_t i,
			   const struct gt_lock_edge **out);
/* Whether one thread made every edge of cycle i. */
bool gt_lock_order_one_thread(const struct gt_lock_order *g, size_t i);

/* How a cycle's locks and sites are named: lock(ctx, kind, obj) (NULL, or returning NULL:
 * by address), site(ctx, capture, stack, buf, size) the program's function that took a lock
 * as "func (file.c:12)" (NULL, or returning NULL: "stack N", or "an unrecorded site"). */
struct gt_lock_namer {
	const char *(*lock)(void *ctx, uint8_t kind, uint64_t obj);
	const char *(*site)(void *ctx, uint32_t capture, uint32_t stack, char *buf, size_t size);
	void *ctx;
};
/* Cycle i in one line, as TSan says an inversion: "lock_a then lock_b at f (x.c:12)
 * (worker (thread 2)), lock_b then lock_a at g (x.c:30) (thread 3)"; threads named by the
 * tracker (their name then, when retired).  Cut at size. */
void gt_lock_order_cycle_text(const struct gt_lock_order *g, size_t i,
			      const struct gt_tracker *tr, const struct gt_lock_namer *namer,
			      char *buf, size_t size);
/* The cycles of capture appended to buf (a C string), one line each, as many as fit whole;
 * their count (those that did not fit included). */
size_t gt_lock_order_text(const struct gt_lock_order *g, uint32_t capture,
			  const struct gt_tracker *tr, const struct gt_lock_namer *namer, char *buf,
			  size_t size);

static inline bool gt_tracked_live(const struct gt_tracked_thread *t)
{
	return t->life == GT_LIFE_ANNOUNCED || t->life == GT_LIFE_LIVE;
}

#endif
