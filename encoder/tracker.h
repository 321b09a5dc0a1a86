/* tracker: the one thread-and-wait state of the captures, fed fact by fact in merged order.
 *
 * At any cut it answers which threads live (capture, serial, tid, name, start routine,
 * existing at start), what each is doing (running, runnable, blocked on object O of kind K
 * since T with its stack, in syscall N on descriptor D since T with its stack) and what the
 * facts tell of holders (the last thread a wait's end let into a lock, the last one that
 * released it).  A plain state machine over capture facts: it knows nothing of the trace it
 * may be turned into.  Every user asks it instead of keeping a copy: the model, the window
 * of --from/--to (window.c), the ring capture's state at its window's start (capture_ring.c)
 * and the report.
 *
 * Its rules, one per fact, whoever asks:
 *   - a thread is met by a fact of its own (rec->thread) or announced by its THREAD_NEW;
 *     any fact of its own makes it live (again, after a THREAD_END or its capture's end);
 *   - THREAD_NEW: the child's start routine (when none yet), its creator and create stack;
 *     THREAD_START / THREAD_EXISTING: tid, start routine (when given); EXISTING aux bit 0
 *     says it was blocked when first seen, until its next fact;
 *   - a BLOCK_BEGIN or SYSCALL_BEGIN opens its wait (closing one left open: that end was
 *     lost); the matching end (BLOCK_END for a block, SYSCALL_END for a syscall) or its
 *     THREAD_END closes it; other facts leave it open (a signal handler's, or a mismatched
 *     end);
 *   - a YIELD leaves it runnable until its next fact;
 *   - the end of a capture ends its threads; what they were doing stays readable. */
#ifndef GOTRACE_TRACKER_H
#define GOTRACE_TRACKER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "capture_reader.h"

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
	/* a syscall */
	uint32_t nr;            /* SYS_* number */
	int64_t arg;            /* the descriptor for a descriptor call, else its key argument */
	uint64_t key;           /* the descriptor's kernel key (GT_OBJ_KERNEL), 0 = none */
};

struct gt_tracked_thread {
	uint32_t capture, serial;
	size_t order;               /* its place in the order met (gt_tracker_next's pos) */
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
	/* the open wait's BEGIN record as read (0 words: none, or too long to keep) */
	uint16_t raw_words;
	size_t raw_payload_len;
	uint64_t raw[GT_TRACKED_RAW_WORDS];
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
};

/* What one fact changed. */
struct gt_tracker_change {
	const struct gt_tracked_thread *thread;  /* the fact's thread, NULL: none */
	/* a wait the fact closed (its end, a new begin, a THREAD_END): as it was while open */
	bool closed;
	struct gt_tracked_wait closed_wait;
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

/* The thread (capture, serial), NULL when never met.  Pointers stay valid until freed. */
const struct gt_tracked_thread *gt_tracker_thread(const struct gt_tracker *tr, uint32_t capture,
						  uint32_t serial);
/* Every thread met, in the order first met: *pos from 0; NULL after the last. */
const struct gt_tracked_thread *gt_tracker_next(const struct gt_tracker *tr, size_t *pos);
/* Only those live at this cut (announced or live). */
const struct gt_tracked_thread *gt_tracker_next_live(const struct gt_tracker *tr, size_t *pos);
size_t gt_tracker_count(const struct gt_tracker *tr);
/* What is known of lock obj of capture, NULL: nothing. */
const struct gt_tracked_object *gt_tracker_object(const struct gt_tracker *tr, uint32_t capture,
						  uint64_t obj);

static inline bool gt_tracked_live(const struct gt_tracked_thread *t)
{
	return t->life == GT_LIFE_ANNOUNCED || t->life == GT_LIFE_LIVE;
}

#endif
