/* model_internal: the model's private state, shared by its parts (model.h is the API).
 *
 *   model.c         the fact dispatch: one handler per fact type, new / finish / free
 *   model_sched.c   threads → Gs and CPUs → Ps: ticks, creation, the prologue, the §5.2
 *                   primitive, syscalls, the epilogue
 *   model_wait.c    wait queues and the choice of which waiters a release wakes
 *   model_kernel_objects.c  wakes through pipes, sockets and child exits (kernel keys)
 *   model_stacks.c  captured, start-routine and synthetic stacks, the symbolizer calls
 *   model_kernel.c  the kernel's context switches placing the threads (issue 15)
 *   model_ahead.c   the lookahead's records by thread and by object, as it fills and drains
 *   clock_fit.c     tsc → ticks and the clock fit (shared with the report)
 *
 * Names with the gtm_ prefix are internal to these files. */
#ifndef GOTRACE_MODEL_INTERNAL_H
#define GOTRACE_MODEL_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "clock_fit.h"
#include "model.h"
#include "common/intern.h"
#include "common/u64map.h"
#include "encoder.h"

#define SYNTH_STACK_BASE ((1ull << 24) + 1)
#define SYNTH_PC_BASE 0xffff000000000000ull
#define JOIN_KEY_BIT (1ull << 63)

#define MAX_REGIONS 16   /* user regions open at once per thread */

enum tstate { T_UNSEEN = 0, T_RUNNABLE, T_RUNNING, T_WAITING, T_SYSBLOCKED, T_DEAD };

/* What a thread waits for, beyond enum gt_block_kind. */
#define WAIT_NET 100
#define WAIT_PROLOGUE 101
#define WAIT_KERNEL 102      /* wait4/waitid whose child's end is known (GoBlock) */
#define WAIT_UNTRACED 103    /* off its CPU without a hook around it (model_kernel.c) */

/* Synthetic frames (docs/formats/go119.md §5.6): unique PCs outside real code. */
enum synth {
	S_TIMEOUT, S_SIGNAL, S_UNKNOWN, S_TIMER, S_NETPOLL, S_PREEXISTING, S_MAIN, S_EXIT,
	S_STACK_LOST, S_NO_FRAMES, S_WAKE, S_TRACER, S_KILLED, S_COUNT
};

/* A thread as the model draws it.  What the facts say of it (identity, the wait its hook
 * opened, its latest syscall) is the tracker's, in facts; the fields below are the model's
 * own: its drawing state, its decisions (which wait a release ends, when a syscall blocked),
 * the values it reads ahead of the tracker, and the times at which it applied a wait (at a
 * kernel switch, or after the fact that began it), which are not the facts' times. */
struct mthread {
	/* drawing state (G, §2.3 sequence, ticks, label): the trace's, not the facts' */
	uint64_t g;             /* 0: not created yet */
	uint64_t seq;           /* §2.3 counter */
	uint64_t dep;           /* tick of the last event concerning this G */
	uint64_t label;         /* string id of its name, 0 = none */
	uint64_t label_shown;   /* the label its G last showed in the 1.22+ format (GoLabel) */
	uint64_t m_id;          /* its M in the 1.22+ format (gtm_m_id), 0 = none yet */
	/* read ahead: its THREAD_NAME at its THREAD_EXISTING (name_ahead in model.c), so that it
	 * is created under it; the tracker has the name once that fact comes */
	bool named_ahead;
	char name_ahead[16];
	uint32_t tid_ahead;     /* read ahead: its THREAD_START's tid (kernel switches) */
	/* the wait the model drew (hook, syscall, kernel): its wait-list key (per process, join
	 * keys by the model's serial), and when the model applied it (a kernel switch's time
	 * for waits the hooks did not draw; ns by the clock fit of that moment) */
	uint64_t wait_obj;
	uint64_t block_ns;
	uint64_t block_tsc;     /* wakes are matched in ticks, not rounded ns */
	uint64_t credit_key;    /* a wake of this thread that found fewer waiters than it may */
	uint64_t credit_stack;  /* release: blocks on credit_key that begin before its next */
	uint32_t credit_count;  /* fact are its (model_wait.c); 0 = none */
	bool credit_again;      /* ... only its waiters' waits again (gtm_wake_again) */
	uint64_t wake_spent_tsc;  /* its wake stamped then ended a wait already, which the
				   * clocks put before it (gtm_wake_skewed): it wakes nobody */
	uint64_t sys_ns;        /* fact time of the pending syscall by the clock fit then (its
				 * call: gtm_sys) */
	uint64_t sys_obj;       /* its wait-list key (a kernel key, a child), 0 = none */
	uint64_t kobj_waker_fact;  /* model_kernel_objects.c: the fact (number) that ends its
				    * pending syscall, once known */
	uint64_t ahead_pos;     /* during a wake: place of its next fact in the lookahead */
	uint32_t sys_p;         /* the P its pending syscall began on */
	uint32_t p;             /* P it runs on when T_RUNNING */
	uint32_t hnext;         /* next waiter in its wait bucket (serial), 0 = end */
	uint8_t state;          /* enum tstate: as drawn */
	uint8_t wait_kind;      /* gt_block_kind, or a model-only WAIT_* kind */
	bool in_syscall;        /* a syscall began and is not yet resolved (drawn) */
	bool sys_awaiting_end;  /* resolved as blocked (or preempted inside it) before its end
				 * fact arrived */
	bool in_wait_list;
	bool futex_no_wait;     /* its FUTEX_WAIT returned EAGAIN at once: no block shown */
	bool prologue_start;    /* existed at start, running: start after the Gomaxprocs */
	bool cond_held;         /* its mutex wait began while the holder was inside a condition
				 * wait (GT_BLOCK_COND_HELD), whose release inside glibc may be its
				 * waker */
	uint32_t cond_holder;   /* that holder (the model's serial) */
	uint32_t cond_releaser; /* that condition waiter, whose block waits for this one's */
	/* a condition wait whose block is drawn after that of defer_waiter (serial; 0 = none),
	 * which its release inside glibc lets in (model.c, cond_release) */
	uint32_t defer_waiter;
	uint64_t defer_key, defer_ns, defer_tsc, defer_stack;
	uint32_t first_cpu;     /* its THREAD_EXISTING's CPU: where the prologue starts it */
	uint32_t serial;        /* the model's: the capture's own when only one is converted */
	uint32_t capture;       /* the capture (process) it belongs to: the model's index */
	/* what the facts say of it (m->tracker): identity, open wait, latest syscall; NULL
	 * while the tracker has not met it (a thread the model looked at ahead) */
	const struct gt_tracked_thread *facts;
	/* the kernel's switches as the model applied them (model_kernel.c) */
	uint32_t k_cpu;         /* the CPU the kernel last ran it on */
	bool k_seen;            /* the kernel reported a switch of it: it places it */
	bool k_on;              /* on k_cpu now, by the kernel */
	bool k_out_preempted;   /* its last switch-out (at k_out_ns) left it runnable */
	bool k_out_pending;     /* ... and waits for its own fact just after it */
	bool k_handler;         /* on its CPU for a signal handler inside its open wait */
	bool k_exited;          /* the kernel reported its exit: no CPU sample names it after */
	uint64_t died_ns;       /* T_DEAD since (gtm_thread_died) */
	/* the model drew a hook's block whose end has not come: set when drawn (a deferred
	 * condition wait later than its BEGIN, none for a futex that did not wait or a join of
	 * an ended thread), kept across a signal handler's syscall; not the tracker's open wait */
	bool hook_wait_open;
	uint8_t block_ev;       /* its event (enum gt_go_event) and stack: a lost hand-off */
	uint64_t block_stack;   /* inside it blocks again as the same wait (model_kernel.c) */
	bool waits_again;       /* its wait is such a second one */
	/* a condition wait's mutex as a wait-list key: the one its block names, else (older
	 * recorders) the one of the wake just before at the same stack; 0 = none */
	uint64_t cond_mutex;
	uint64_t woke_mutex;    /* its last wake of a mutex (key) and that wake's stack id: a */
	uint32_t woke_stack;    /* condition wait's, when its block does not name the mutex */
	uint64_t k_out_ns, k_out_tsc;
	uint64_t k_out_mono;    /* the kernel's time of it (its off-CPU sample's) */
	uint64_t k_in_tsc;      /* its last switch-in */
	uint8_t n_regions;      /* open user regions, innermost last: regions drawn, not facts */
	bool cp_looked, cp_open;  /* the critical path drawn (model_cp.c): its stretch found, */
	uint32_t cp_at;           /* its region open; the stretch (in the plan) */
	struct {
		uint64_t task, name;
	} regions[MAX_REGIONS];
};

struct mproc {
	uint32_t running;       /* thread serial, 0 = none */
	bool started;
	uint64_t last;          /* last tick on this P */
};

#define MAX_SERIAL (1u << 24)
/* The model's serial of every retired thread of a merged trace (gtm_serial): never given to a
 * thread met, it stands for m->retired_thread. */
#define RETIRED_SERIAL (UINT32_MAX - 1)

/* One capture of the trace (one process image); a trace of one capture has one. */
struct mcapture {
	struct gt_process_name proc;  /* the latest name of the process */
	char process[48];           /* "name[pid]": the label prefix of its threads (merged) */
	uint64_t label;             /* string id of process, merged traces only */
	uint64_t last_ns;           /* time of its latest fact */
	uint64_t stop_tsc;          /* recording stopped here (--duration, a bound, a detach;
				     * UINT64_MAX: at exit): the kernel's later switches of its
				     * threads are not drawn */
	uint32_t main_serial;       /* the model's serial of its main thread, 0 until met */
	uint64_t reaped_ns;         /* killed: dead by then (its parent's wait4), 0: unknown */
	bool end_pending;           /* its facts ended before reaped_ns: its threads end there */
	uint32_t pid, ppid;
	struct gt_model_counters ctr;  /* its counters, while another capture's are in m->ctr */
};

/* One record of the lookahead in the index of model_ahead.c: its place in the merged order
 * (gtm_peek_base + i), the keys it is filed under, and the next record filed under each. */
struct gtm_ahead_entry {
	uint64_t thread;            /* capture << 32 | the capture's thread serial */
	uint64_t obj;               /* the object key a block or wake names (has_obj) */
	uint64_t mutex;             /* the mutex key a condition wait's block names (has_mutex) */
	uint64_t next_thread, next_obj, next_mutex;  /* places, UINT64_MAX: none */
	bool has_obj, has_mutex;
};

/* The index (model_ahead.c): entries of the places [base, end), at place & (cap - 1); per
 * key, its first and last place (mod 2^32: first << 32 | last). */
struct gtm_ahead {
	struct gtm_ahead_entry *ring;
	size_t cap;
	uint64_t base, end;
	struct gt_u64map threads;   /* entry.thread -> first << 32 | last */
	struct gt_u64map objs;      /* object key (obj or mutex) -> first << 32 | last */
};

struct gt_model {
	struct gt_wire *w;
	struct gt_tracker *tracker; /* the facts' view of threads and waits, fed first */
	struct gt_lock_order *order;  /* the lock-order graph, fed the tracker's changes */
	struct gt_model_options opt;
	struct gt_file_header h;
	struct gt_model_counters ctr;
	struct gt_clock clock;

	/* Threads, each allocated once so that pointers never move; memory grows with the
	 * threads held, not with their serials (read from the file) nor with those that died:
	 * a dead thread nothing refers to any more is retired (gtm_retire_dead), its serial
	 * kept as one bit, and from then on stands for m->retired_thread. */
	struct gt_u64map by_serial;       /* serial -> struct mthread * */
	struct mthread **threads;         /* every thread held; in serial order when sorted */
	size_t n_threads, cap_threads;
	bool threads_sorted;
	size_t threads_held_peak;         /* the most held at once (merged: or serials mapped) */
	uint64_t threads_met;             /* every thread ever made (cpu_samples.c's cache) */
	struct gt_u64map retired;         /* serials retired, as bits (u64map.h) */
	uint64_t n_retired;
	struct mthread retired_thread;    /* what a retired serial is: dead, created */
	uint32_t *dying;                  /* serials of the dead not retired yet */
	size_t n_dying, cap_dying, dying_scan_at;
	uint64_t next_g;

	struct mproc *ps;           /* P 0 (metadata, prologue) .. n_cpus */
	uint32_t n_ps;

	uint32_t *buckets;          /* wait lists: heads (serials) of waiter chains */
	size_t n_buckets;
	size_t n_waiting;
	uint32_t *credit_holders;   /* serials of the threads with a credit_count, so that a */
	size_t n_credits;           /* block looks at them, not at every thread (model_wait.c) */
	size_t cap_credits;
	size_t n_deferred;          /* threads with a defer_waiter */

	bool prologue_closed;
	uint64_t floor;             /* live events are at or after this tick */
	uint64_t now;               /* latest fact time seen */
	uint64_t fact_tsc;          /* timestamp of the fact being modelled */
	const struct gt_capture_record *cur;  /* the fact being modelled */
	uint64_t n_facts;           /* facts modelled, of every capture (the merged order) */
	/* during a kernel switch: the fact read after it, not modelled yet (fact n_facts + 1;
	 * the lookahead then starts at n_facts + 2) */
	const struct gt_capture_record *pending;
	uint64_t t0;                /* time of the first fact: where the prologue sits */
	bool seen_fact;

	/* Captures: several in a merged trace, whose threads, stacks and objects are keyed by
	 * (capture, id) and given the model's own numbers (gtm_serial, gtm_object_key). */
	struct mcapture *caps;
	uint32_t n_caps;
	uint32_t n_ends_pending;    /* captures with end_pending */
	uint32_t cur_cap;           /* whose counters m->ctr holds */
	uint32_t fact_capture;      /* the capture of the fact being modelled */
	bool merged;                /* more than one capture: ids are remapped */
	struct gt_u64map serials;   /* (capture << 32 | serial) -> model serial, merged: of the
				     * threads not retired */
	struct gt_u64map serials_retired;  /* merged: (capture << 32 | serial) retired, as bits:
					    * such a thread's facts are RETIRED_SERIAL's */
	struct gt_u64map stack_ids; /* (capture << 32 | stack id) -> written id, merged */
	struct gt_u64map frame_pcs; /* written PC -> identity of its first frame, merged */
	uint32_t next_serial, next_stack_id;

	uint64_t synth_stack[S_COUNT];
	struct gt_u64map routine_stacks;
	struct gt_u64map tasks;     /* user task id -> 1 while live */
	bool cp_task_begun, cp_task_ended;  /* the critical path's task (model_cp.c) */

	bool kernel;                /* kernel switches given: they place the threads */
	/* the switches still to come, the caller's (gt_model_kernel_ahead, gtm_peek_switch) */
	const struct gt_kernel_switch *(*switch_peek)(void *ctx, size_t i);
	void *switch_ctx;
	struct gt_u64map by_tid;    /* kernel thread id -> serial (model_kernel.c) */
	struct gt_u64map m_owner;   /* M id -> serial of the thread that has it (gtm_m_id) */
	struct gt_cpu_samples *offcpu;  /* the off-CPU samples naming such waits, NULL: none */

	struct gt_u64map program_pcs;   /* written stack id -> its first program address
					 * (gt_sym_program_pc), when it has one */
	struct gt_u64map object_names;  /* object key -> its name in names, 0: none */
	struct gt_u64map stack_sites;   /* written stack id -> the name in names of its site
					 * (gt_sym_own_frame) when that is not its first frame */
	struct gt_intern names;
	struct gtm_ahead ahead;     /* the lookahead by thread and object (model_ahead.c) */

	uint8_t *stack_defined, *stack_referenced;  /* bitmaps over captured stack ids */
	uint32_t max_stack_referenced;              /* where a scan of them can stop */
};

/* The number key has in map, the next one (*next, below limit) when key is new (*fresh);
 * 0 when none is left or memory runs out.  How ids of several captures are renumbered. */
static inline uint32_t gtm_renumber(struct gt_u64map *map, uint64_t key, uint32_t *next,
				    uint32_t limit, bool *fresh)
{
	bool found;
	uint64_t *slot = gt_u64map_slot(map, key, &found);
	*fresh = slot && !found;
	if (!slot)
		return 0;
	if (*fresh)
		*slot = *next < limit ? (*next)++ : 0;
	return (uint32_t)*slot;
}

/* The model's serial of a capture's thread serial (0: none, or not representable): the same
 * number when one capture is converted. */
uint32_t gtm_serial(struct gt_model *m, uint32_t capture, uint32_t serial);
static inline uint32_t gtm_rec_serial(struct gt_model *m, const struct gt_capture_record *r)
{
	return gtm_serial(m, r->capture, r->rec->thread);
}
/* The model's serial of a capture's thread serial when it has one already (never allocates):
 * the thread a record looked at ahead belongs to, 0 when not met yet. */
uint32_t gtm_serial_find(const struct gt_model *m, uint32_t capture, uint32_t serial);
static inline bool gtm_rec_is(const struct gt_model *m, const struct gt_capture_record *r,
			      uint32_t serial)
{
	return gtm_serial_find(m, r->capture, r->rec->thread) == serial;
}
/* The one lookahead: the record i places after the fact being modelled (0: the next one), in
 * the merged order of every capture (r->capture says whose); false beyond the lookahead or
 * at the end.  Lookahead record i is fact number n_facts + 1 + i. */
bool gtm_peek(const struct gt_model *m, size_t i, struct gt_capture_record *out);
/* The place in the merged order of lookahead record 0 (records delivered so far). */
uint64_t gtm_peek_base(const struct gt_model *m);
/* The thread whose block on mutex key, held by condition waiter r's thread, comes in the
 * lookahead after the condition wait r (on cond), before the next fact of r's thread and
 * before any wake of cond: flagged GT_BLOCK_COND_HELD by that holder, or not flagged (it
 * looked before the holder marked its wait) with no other release of the mutex around it
 * before its end; 0 when none is in view (model_ahead.c: it reads the records that name the
 * mutex, the condition and the threads, not the whole lookahead). */
uint32_t gtm_cond_held_waiter_ahead(struct gt_model *m, const struct gt_capture_record *r,
				    uint64_t cond, uint64_t key);
void gtm_ahead_free(struct gt_model *m);

/* t's latest syscall as the facts give it (call, descriptor, fd kind, stack): zero when
 * none. */
static inline const struct gt_tracked_wait *gtm_sys(const struct mthread *t)
{
	static const struct gt_tracked_wait none;
	return t->facts ? &t->facts->last_syscall : &none;
}

/* t's kernel thread id (the 1.22+ writer's M): its THREAD_START's or THREAD_EXISTING's, or
 * read ahead; 0 until known. */
static inline uint32_t gtm_tid(const struct mthread *t)
{
	return t->facts && t->facts->identified ? t->facts->tid : t->tid_ahead;
}

/* t's last name, even the inherited one ("" = none). */
static inline const char *gtm_name(const struct mthread *t)
{
	if (t->named_ahead)
		return t->name_ahead;
	return t->facts ? t->facts->name : "";
}

/* t's name when it is its own, not the one its process's threads inherit; else NULL. */
static inline const char *gtm_own_name(const struct gt_model *m, const struct mthread *t)
{
	return gt_tracker_own_name(m->tracker, t->capture, gtm_name(t));
}

/* t's start routine, 0 = unknown (a thread that existed before recording). */
static inline uint64_t gtm_start_routine(const struct mthread *t)
{
	return t->facts ? t->facts->start_routine : 0;
}

/* The entry of serial if held, else NULL (never allocates; a retired serial: NULL). */
static inline struct mthread *gtm_thread_find(const struct gt_model *m, uint32_t serial)
{
	const uint64_t *v = gt_u64map_find(&m->by_serial, serial);
	return v ? (struct mthread *)(uintptr_t)*v : NULL;
}

/* An existing entry (serial known to be allocated). */
static inline struct mthread *gtm_thread_at(const struct gt_model *m, uint32_t serial)
{
	return gtm_thread_find(m, serial);
}

/* Runs the statement after it for every allocated thread t, in serial order (the order of
 * the events it emits). */
#define FOR_EACH_THREAD(m, t)                                                              \
	for (size_t i_ = gtm_threads_by_serial(m); i_ < (m)->n_threads; i_++)             \
		for (struct mthread *t = (m)->threads[i_]; t; t = NULL)

/* model_sched.c */
/* The thread of serial, made when new; m->retired_thread for a retired one; NULL when memory
 * runs out. */
struct mthread *gtm_thread_get(struct gt_model *m, uint32_t serial);
/* t died (T_DEAD): retired once nothing refers to it any more. */
void gtm_thread_died(struct gt_model *m, struct mthread *t);
/* Retires the dead that nothing refers to: called before a fact, once the CPU samples before
 * it are written. */
void gtm_retire_dead(struct gt_model *m);
size_t gtm_threads_by_serial(struct gt_model *m);   /* sorts m->threads; returns 0 */
/* The tick an event of a (and b) on P p wanted at want gets (after P's and their last);
 * gtm_take_tick also uses it up. */
uint64_t gtm_next_tick(const struct gt_model *m, uint32_t p, const struct mthread *a,
		       const struct mthread *b, uint64_t want);
uint64_t gtm_take_tick(struct gt_model *m, uint32_t p, struct mthread *a, struct mthread *b,
		       uint64_t want);
/* Emits e (its p and fields set; kind gt_sched_kind) performed by a (NULL: no thread),
 * concerning a and b, at gtm_take_tick's tick for want. */
void gtm_emit(struct gt_model *m, struct gt_sched_event e, uint64_t want, struct mthread *a,
	      struct mthread *b);
#define GTM_EMIT(m, want, a, b, ...) \
	gtm_emit(m, (struct gt_sched_event){__VA_ARGS__}, want, a, b)
/* t existed before the trace: created on P 0 (waiting: it was blocked then). */
void gtm_create_in_prologue(struct gt_model *m, struct mthread *t, uint32_t serial,
			    bool waiting);
void gt_model_live_state(const void *ctx, gt_wire_visit *visit, void *arg);
/* t's M in the 1.22+ format, chosen on first use. */
uint64_t gtm_m_id(struct gt_model *m, struct mthread *t);
void gtm_ensure_main(struct gt_model *m);
void gtm_close_prologue(struct gt_model *m);
struct mthread *gtm_known_thread(struct gt_model *m, uint32_t serial);
void gtm_syscall_resolve(struct gt_model *m, struct mthread *t, uint64_t now, bool blocked);
struct mthread *gtm_fact_thread(struct gt_model *m, const struct gt_capture_record *r,
				uint64_t ns, enum synth reason);
void gtm_sched_finish(struct gt_model *m);
/* A GT_PROCESS fact (a fork, spawn or exec) to the critical path's recorder, if any. */
void gtm_observe_process(struct gt_model *m, const struct gt_capture_record *r, uint64_t ns);
/* t runs on cpu at ns (§5.2), without a fact of its own */
void gtm_run_thread(struct gt_model *m, struct mthread *t, uint32_t cpu, uint64_t ns);

/* model_cp.c: the critical path drawn (opt.critical_plan) */
/* Whether e of a is one to draw the path around (a plan, a thread, not a user event). */
bool gtm_cp_draws(const struct gt_model *m, const struct gt_sched_event *e,
		  const struct mthread *a);
/* Before e of a, wanted at want: a region over ends while a still runs. */
void gtm_cp_before(struct gt_model *m, const struct gt_sched_event *e, uint64_t want,
		   struct mthread *a);
/* After e of a (its ticks set): a region over ends, one in its stretch begins. */
void gtm_cp_after(struct gt_model *m, const struct gt_sched_event *e, struct mthread *a);
/* Running t's program begins a region of its own at want: the path's ends first. */
void gtm_cp_program_region(struct gt_model *m, struct mthread *t, uint64_t want);

/* model_wait.c */
/* The one place where a wait-list key is formed for the synchronisation object obj of fact r
 * (its block or wake): per process, an address meaning nothing in another one.  An object
 * the kernel identifies across processes (flagged in the object word or the fact's aux) is
 * to be keyed here without the capture. */
uint64_t gtm_object_key(const struct gt_model *m, const struct gt_capture_record *r,
			uint64_t obj);
/* the same for an object of capture (its index) */
uint64_t gtm_object_key_of(const struct gt_model *m, uint32_t capture, uint64_t obj);
void gtm_wait_add(struct gt_model *m, struct mthread *t, uint64_t key);
void gtm_wait_remove(struct gt_model *m, struct mthread *t);
void gtm_wake_waiters(struct gt_model *m, struct mthread *waker, uint64_t key, uint32_t count,
		      uint64_t ns, uint64_t stack);
/* A release of key that wakes a sleeper no hook saw block (GT_WAKE_UNSEEN): the one of
 * its waiters waiting again (a sleep the kernel showed inside a hook wait, gtm_block_again)
 * whose next fact comes first, else a hooked waiter whose wait ends before any other
 * release, is unblocked (true); else the first to wait again before the waker's next fact. */
bool gtm_wake_again(struct gt_model *m, struct mthread *waker, uint64_t key, uint64_t ns,
		    uint64_t stack);
/* After a hooked release of mutex key has let in its waiters: the thread asleep on it again
 * whose wait ends before any other release, if any, is unblocked too (the release's futex
 * wake went to it while a hooked waiter that never slept took the mutex). */
void gtm_wake_sleeper(struct gt_model *m, struct mthread *waker, uint64_t key, uint64_t ns,
		      uint64_t stack);
/* Whether fact r releases key: a wake of it, or a condition wait whose block names it as its
 * mutex (glibc releases that mutex inside the wait, where no hook sees it). */
bool gtm_releases(const struct gt_model *m, const struct gt_capture_record *r, uint64_t key);
/* w's hook wait on its wait_obj ends now (end) with no waker drawn: a release of it by
 * another thread on another CPU, stamped up to a microsecond after the end (two CPUs' clocks
 * differ by that much under a VM), was its waker; it is spent on it. */
void gtm_wake_skewed(struct gt_model *m, struct mthread *w, const struct gt_capture_record *end,
		     uint64_t ns);
/* Whether a release of key that found no wait again is still to let one in, t aside (its
 * credit) */
bool gtm_again_credit(struct gt_model *m, const struct mthread *t, uint64_t key);
void gtm_wait_credit(struct gt_model *m, struct mthread *t, uint64_t ns);
/* t, preempted after a release it stamped that found fewer waiters than it may wake (its
 * credit), runs again at ns: the release is made now, and lets in those that blocked on it
 * since (a worker preempted inside sem_post, queue-cond). */
void gtm_credit_resume(struct gt_model *m, struct mthread *t, uint64_t ns);
void gtm_credit_end(struct gt_model *m, uint32_t serial);
size_t gtm_bucket_of(const struct gt_model *m, uint64_t key);
void gtm_unblock_by(struct gt_model *m, struct mthread *waker, struct mthread *w, uint64_t ns,
		    uint64_t stack);
/* The earliest blocked GT_BLOCK_COND_HELD waiter on key, held by holder (serial), that the
 * fact being modelled may wake, else NULL. */
struct mthread *gtm_cond_held_waiter(struct gt_model *m, uint64_t key, uint32_t holder);

/* model_kernel_objects.c */
void gtm_kobj_syscall_begin(struct gt_model *m, struct mthread *t,
			    const struct gt_capture_record *r, uint64_t ns);
void gtm_kobj_syscall_end(struct gt_model *m, struct mthread *t);
void gtm_kobj_release(struct gt_model *m, struct mthread *t, const struct gt_capture_record *r,
		      uint64_t ns, uint64_t stack);
/* t's pending syscall blocked: 0 when no known event ends it, else how it waits (WAIT_NET
 * for a pipe or socket, WAIT_KERNEL for a child). */
uint8_t gtm_kobj_block(struct gt_model *m, struct mthread *t);
/* t's pending syscall is a poll on one pipe: without a known waker a syscall, as a read */
bool gtm_kobj_polls_pipe(const struct mthread *t);

/* model.c: counters go to capture's (those of m->ctr) */
void gtm_count_for(struct gt_model *m, uint32_t capture);
/* The running t, woken from its hook wait, leaves its CPU again before the wait's end (at
 * ns, tsc): it waits again on the same object (a condition wait: on its mutex). */
void gtm_block_again(struct gt_model *m, struct mthread *t, uint64_t ns, uint64_t tsc);

/* model_kernel.c */
/* t's kernel thread id is known (a THREAD_START or THREAD_EXISTING fact). */
void gtm_kernel_tid(struct gt_model *m, struct mthread *t);
/* The CPU a fact of t (recorded on cpu) runs it on: where the kernel runs it, when it does. */
uint32_t gtm_kernel_cpu(const struct gt_model *m, const struct mthread *t, uint32_t cpu);
/* w was just unblocked: started at once where the kernel already runs it. */
void gtm_kernel_unblocked(struct gt_model *m, struct mthread *w, uint64_t ns);
/* The fact of thread serial (at ns) is modelled: off its CPU if the kernel switched it out
 * just before (the clocks' error) or its switch-out waited for this fact. */
void gtm_kernel_fact_done(struct gt_model *m, uint32_t serial, uint64_t ns);
/* t is to run on cpu: the thread there leaves first if the kernel switched it out already
 * (its switch-out waiting for a fact of its own). */
void gtm_kernel_take_cpu(struct gt_model *m, const struct mthread *t, uint32_t cpu);
/* The lookahead of switches: the switch i places after those given so far (0: the next
 * one), NULL beyond the last. */
const struct gt_kernel_switch *gtm_peek_switch(const struct gt_model *m, size_t i);
/* Whether the semaphore post t stamped (the fact being modelled), which would end w's wait on
 * key, is made only after t's preemption: see model_kernel.c. */
bool gtm_post_made_late(const struct gt_model *m, const struct mthread *t, uint64_t key,
			const struct mthread *w);

/* Killed processes whose threads end where they were reaped, not at their last fact
 * (struct mcapture's end_pending): those reaped by ns end, all of them when all (at the
 * trace's end, each at its reap, which may extend the trace). */
void gtm_pending_ends(struct gt_model *m, uint64_t ns, bool all);
/* A CLOCK_MONOTONIC time as model ticks: nominal-rate ns since the capture's start (its
 * header's clock pair) + the offset; the trace's Frequency makes them fitted ns. */
uint64_t gtm_mono_ticks(const struct gt_model *m, uint64_t mono);

/* model_stacks.c */
uint64_t gtm_synth_stack(struct gt_model *m, enum synth s);
uint64_t gtm_captured_stack(struct gt_model *m, uint32_t id);   /* of the fact's capture */
uint64_t gtm_captured_stack_of(struct gt_model *m, uint32_t capture, uint32_t id);
void gtm_define_stack(struct gt_model *m, const struct gt_p_stack *st, const uint64_t *pcs);
uint64_t gtm_routine_stack(struct gt_model *m, const struct mthread *t, uint64_t entry,
			   enum synth fallback);
/* The start-routine stack of t: its routine's; for a pre-existing thread (no routine) with a
 * name of its own (its comm), that name; else the fallback frame. */
uint64_t gtm_thread_routine_stack(struct gt_model *m, const struct mthread *t,
				  enum synth fallback);
/* A synthetic frame (top) on t's start-routine frame (main's: "main"): Go's goroutine
 * analysis names a goroutine by the root frame of its first stack, which is then t's own. */
uint64_t gtm_thread_synth_stack(struct gt_model *m, const struct mthread *t,
				const struct gt_wire_frame *top);
void gtm_use_space(struct gt_model *m, uint32_t capture);   /* the symbolizer's process */
/* A stack of capture's process (return addresses, innermost first; a CPU sample's) written
 * like every other (symbolized, interned by content): its wire id. */
uint64_t gtm_pcs_stack(struct gt_model *m, uint32_t capture, const uint64_t *pcs, size_t n);
/* The same with a synthetic frame innermost: the tracer's own work and the program's call
 * into it (pcs, which may be empty). */
uint64_t gtm_pcs_stack_under(struct gt_model *m, uint32_t capture, enum synth top,
			     const uint64_t *pcs, size_t n);
void gtm_stacks_finish(struct gt_model *m);
/* Written stack id of capture's as the place its program waited: "func (file:line)" of its
 * first program frame into buf (m: the model, a gt_cp_site_fn); false when it has none. */
bool gtm_stack_site(void *m, uint32_t capture, uint64_t stack, char *buf, size_t size);
/* The name of an object of capture's that a thread waits on (key: gtm_object_key's, kind:
 * enum gt_block_kind, stack: the wait's written stack id), by gt_sym_object_name and the same
 * for the whole trace (its first wait names it); NULL when only its address would (or no
 * symbolizer). */
const char *gtm_object_name(struct gt_model *m, uint32_t capture, uint8_t kind, uint64_t key,
			    uint64_t stack);
/* A lock's acquisition (--locks=all) that began a hold, with its captured stack: it names
 * the lock when nothing did before (a lock first used without waiting), as the report does. */
void gtm_lock_first_use(struct gt_model *m, uint32_t capture, const struct gt_tracked_hold *h);

#endif
