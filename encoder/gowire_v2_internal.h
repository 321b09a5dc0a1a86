/* gowire_v2_internal: the "go 1.22 trace" writer's state, shared by its parts:
 *
 *   gowire_v2.c         the file: batches per M, w22_emit, generations, CPU samples, open/finish
 *   gowire_v2_tables.c  strings and stacks: global ids, defined again in every generation
 *   gowire_v2_events.c  the model's events said in this format (goroutines, Ms, Ps)
 *
 * The model decides who runs where (gowire.h): what is here is encoding state only.
 */
#ifndef GOTRACE_GOWIRE_V2_INTERNAL_H
#define GOTRACE_GOWIRE_V2_INTERNAL_H

#include "gowire.h"
#include "gowire_internal.h"
#include "common/u64map.h"

#define NO_ID UINT64_MAX                 /* NoThread / NoProc / NoGoroutine */
#define BATCH_FLUSH_BYTES (32u * 1024u)  /* an M's batch is written out past this size */
#define MAX_BATCH_BYTES 65536u           /* the readers' limit on a batch's data */
#define OUT_BUFFER_BYTES (1u << 20)
#define MAX_EVENT_BYTES (1u + 11u * 10u)
#define MAX_FRAMES 128u                  /* the readers' limit on a stack */
#define DEFAULT_GENERATION_NS 1000000000ull
#define DEFAULT_GENERATION_BYTES (4ull << 20)

enum { GS_RUNNABLE = 1, GS_RUNNING = 2, GS_SYSCALL = 3, GS_WAITING = 4 };  /* GoStatus */
enum { P_IDLE = 2, P_RUNNING = 1, P_SYSCALL = 3 };                        /* ProcStatus */

/* What the encoding keeps per M: its open batch.  Who runs where is the model's. */
struct m2 {
	uint64_t id;
	struct bytebuf buf;      /* the open batch's events */
	uint64_t base;           /* its base ticks */
	uint64_t n_ev;           /* its events */
	uint64_t last;           /* last ticks written by this M (any generation) */
	bool ended;              /* its last event ended its G: its buffer goes at the boundary */
};

/* What the encoding keeps per G and per P: the sequence number of its last GoStart or
 * GoUnblock (a G's) or ProcStart or GoSyscallBegin (a P's) in the open generation, and the
 * ticks written of its last change of state (w22_emit). */
struct seq2 {
	uint64_t seq;
	uint64_t changed;
};

struct str2 {
	const char *bytes;       /* the interned copy (strings) */
	size_t len;
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
	struct seq2 *ps;
	struct seq2 *gs;         /* the Gs not destroyed, by g_index; the free ones chained */
	size_t n_gs, cap_gs;
	size_t free_g;           /* first free slot of gs + 1, 0 = none */
	struct gt_u64map g_index;  /* G id -> its slot in gs */
	uint64_t ev_g;           /* the G and P of the model's event being written: what its */
	uint64_t ev_p;           /* GoStop, ProcStop, ... change (w22_emit) */
	struct gt_wire_status *live;  /* a boundary's statuses, Gs sorted by id */
	size_t n_live, cap_live;
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

	struct gt_intern strings, stacks;
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

static inline struct wire22 *w22(struct gt_wire *w)
{
	return (struct wire22 *)w;
}

/* gowire_v2.c */
/* One batch of the open generation: EventBatch gen M base size, then data. */
void w22_batch_write(struct wire22 *w, uint64_t m_id, uint64_t base, const uint8_t *data,
		     size_t len);
void w22_m_flush(struct wire22 *w, struct m2 *m);
/* M id (0: NoThread), made on first use; NULL on ENOMEM. */
struct m2 *w22_m(struct wire22 *w, uint64_t id);
/* The slot of G g, made on first use; NULL (ENOMEM, or no G) when there is none. */
struct seq2 *w22_g(struct wire22 *w, uint64_t g);
/* G g was destroyed: its slot is free (memory follows the live Gs). */
void w22_g_end(struct wire22 *w, uint64_t g);
/* Appends one event (type byte, tick delta, args) to m's batch. */
void w22_emit(struct wire22 *w, struct m2 *m, enum gt_go2_event ev, uint64_t ticks,
	      const uint64_t *args);
#define EMIT(w, m, ev, ticks, ...) w22_emit(w, m, GT_GO2_##ev, ticks, (const uint64_t[]){__VA_ARGS__})
/* Opens the first generation, or closes the open one when it is long enough. */
void w22_gen_check(struct wire22 *w, uint64_t ticks);

/* gowire_v2_tables.c */
void w22_use_string(struct wire22 *w, uint64_t id);
void w22_use_stack(struct wire22 *w, uint64_t id);
uint64_t w22_cstring(struct wire22 *w, const char *s);
/* The open generation's Stacks and Strings batches: every id it used, defined. */
void w22_write_tables(struct wire22 *w);
uint64_t w22_string(struct gt_wire *gw, const char *s, size_t len);
void w22_define_stack(struct gt_wire *gw, uint64_t id, const struct gt_wire_frame *frames,
		      size_t n);
uint64_t w22_stack(struct gt_wire *gw, const struct gt_wire_frame *frames, size_t n);
void w22_set_stack_id_base(struct gt_wire *gw, uint64_t id_base);

/* gowire_v2_events.c: the ops that take the model's events */
void w22_sched(struct gt_wire *gw, const struct gt_sched_event *e);
bool w22_running_label(struct gt_wire *gw, uint64_t ticks, const struct gt_wire_actor *who,
		       uint64_t label);
void w22_user_log(struct gt_wire *gw, uint64_t p, const struct gt_wire_actor *who,
		  uint64_t ticks, uint64_t task, uint64_t key, uint64_t stack, const char *msg,
		  size_t len);

#endif
