/* model_stacks: the stacks events refer to (see model_internal.h).  Captured stack ids are
 * written as the same ids (1 .. 2^24); start-routine and synthetic stacks are interned by
 * the wire writer above SYNTH_STACK_BASE. */
#include "model_internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/hash.h"
#include "symbolizer/symbolizer.h"

static const char *const synth_names[S_COUNT] = {
	[S_TIMEOUT] = "[timeout]", [S_SIGNAL] = "[signal]", [S_UNKNOWN] = "[unknown wakeup]",
	[S_TIMER] = "[timer]", [S_NETPOLL] = "[netpoll]", [S_PREEXISTING] = "[pre-existing thread]",
	[S_MAIN] = "[main thread]", [S_EXIT] = "[thread exit]", [S_STACK_LOST] = "[stack lost]",
	[S_NO_FRAMES] = "[no frames]", [S_WAKE] = "[wake]",
	[S_TRACER] = "[the tracer's own work]", [S_KILLED] = "[process killed]",
};

/* The one frame of a synthetic stack. */
static struct gt_wire_frame synth_frame(enum synth s)
{
	return (struct gt_wire_frame){SYNTH_PC_BASE + (uint64_t)s + 1, synth_names[s], "[gotrace]",
				      0};
}

uint64_t gtm_synth_stack(struct gt_model *m, enum synth s)
{
	if (!m->synth_stack[s]) {
		struct gt_wire_frame f = synth_frame(s);
		m->synth_stack[s] = gt_wire_stack(m->w, &f, 1);
	}
	return m->synth_stack[s];
}

static bool bit_test(const uint8_t *b, uint32_t i)
{
	return b && (b[i >> 3] >> (i & 7)) & 1;
}

static void bit_set(uint8_t *b, uint32_t i)
{
	if (b)
		b[i >> 3] |= (uint8_t)(1u << (i & 7));
}

/* The written id of a capture's stack id: the same number when one capture is converted,
 * else the next free one (first come), so that they stay below 2^24; 0 when none is left. */
static uint32_t stack_id(struct gt_model *m, uint32_t capture, uint32_t id)
{
	if (!id || id >= (1u << 24))
		return 0;
	if (!m->merged)
		return id;
	bool fresh;
	return gtm_renumber(&m->stack_ids, (uint64_t)capture << 32 | id, &m->next_stack_id,
			    1u << 24, &fresh);
}

void gtm_use_space(struct gt_model *m, uint32_t capture)
{
	if (m->merged && m->opt.sym)
		gt_sym_use_space(m->opt.sym, capture);
}

uint64_t gtm_captured_stack(struct gt_model *m, uint32_t id)
{
	return gtm_captured_stack_of(m, m->fact_capture, id);
}

/* A captured stack id as written in events (1 .. 2^24). */
uint64_t gtm_captured_stack_of(struct gt_model *m, uint32_t capture, uint32_t id)
{
	id = stack_id(m, capture, id);
	if (!id)
		return 0;
	bit_set(m->stack_referenced, id);
	if (id > m->max_stack_referenced)
		m->max_stack_referenced = id;
	return id;
}

static void addr_name(char *buf, size_t len, uint64_t pc)
{
	snprintf(buf, len, "0x%" PRIx64, pc);
}

/* Go's readers keep the first frame written for a PC (docs/formats/go119.md §3.1).  In a trace
 * of several processes one address may be two functions (two programs mapped at the same
 * place, as without ASLR): a frame that differs from the one first written for its PC gets
 * the PC moved by its capture into bits 56..62, where no code is. */
static void own_pcs(struct gt_model *m, uint32_t capture, struct gt_wire_frame *wf, size_t k)
{
	for (size_t i = 0; m->merged && i < k; i++) {
		uint64_t id = gt_hash_bytes(wf[i].func, strlen(wf[i].func)) * 31 +
			      gt_hash_bytes(wf[i].file, strlen(wf[i].file)) * 7 + wf[i].line;
		uint64_t pc = wf[i].pc, moved = (uint64_t)(capture % 127 + 1) << 56;
		for (int tries = 0; tries < 2; tries++, pc = wf[i].pc ^ moved) {
			bool found;
			uint64_t *slot = gt_u64map_slot(&m->frame_pcs, pc, &found);
			if (!slot)
				break;
			if (!found)
				*slot = id;
			if (*slot == id) {
				wf[i].pc = pc;
				break;
			}
		}
	}
}

/* The frames of pcs (return addresses of capture's process, innermost first) into wf:
 * symbolized, or named by address; never empty.  Strings live in frames and names. */
static size_t stack_frames(struct gt_model *m, uint32_t capture, const uint64_t *pcs, size_t n,
			   struct gt_frame *frames, char (*names)[24], struct gt_wire_frame *wf,
			   size_t max)
{
	size_t k = 0;
	if (m->opt.sym) {
		gtm_use_space(m, capture);
		k = gt_sym_stack(m->opt.sym, pcs, n, frames, max);
		for (size_t i = 0; i < k; i++)
			wf[i] = (struct gt_wire_frame){frames[i].pc, frames[i].func, frames[i].file,
						       frames[i].line};
	} else {
		/* no symbolizer: keep the innermost frames and the outermost one */
		for (size_t i = 0; i < n && k < max; i++) {
			size_t src = (k == max - 1 && n > max) ? n - 1 : i;
			uint64_t pc = pcs[src] ? pcs[src] - 1 : 0;
			addr_name(names[k], sizeof names[k], pc);
			wf[k] = (struct gt_wire_frame){pc, names[k], "?", 0};
			k++;
		}
	}
	if (!k) {
		/* every frame was the tracer's or start-up code: keep the stack non-empty so
		 * that profiles and unblock intervals still count it */
		wf[0] = synth_frame(S_NO_FRAMES);
		k = 1;
	}
	own_pcs(m, capture, wf, k);
	return k;
}

void gtm_lock_first_use(struct gt_model *m, uint32_t capture, const struct gt_tracked_hold *h)
{
	if (m->opt.sym)
		gtm_object_name(m, capture, h->kind, gtm_object_key_of(m, capture, h->obj),
				stack_id(m, capture, h->stack));
}

/* "func (file.c:12)": a frame as a site. */
static void site_text(const struct gt_frame *f, char *buf, size_t size)
{
	const char *slash = strrchr(f->file, '/');
	if (f->line)
		snprintf(buf, size, "%s (%s:%u)", f->func, slash ? slash + 1 : f->file, f->line);
	else
		snprintf(buf, size, "%s (%s)", f->func, slash ? slash + 1 : f->file);
}

/* Stack id's site (gt_model_stack_site) when it is not its first frame (frames: its frames),
 * named in m->names; nothing when memory runs out (then its first frame names it). */
static void keep_site(struct gt_model *m, uint32_t id, const struct gt_frame *frames, size_t n)
{
	size_t own = gt_sym_own_frame(frames, n);
	if (!own)
		return;
	char buf[512];
	site_text(&frames[own], buf, sizeof buf);
	bool inserted, found;
	const struct gt_intern_entry *e = gt_intern(&m->names, buf, strlen(buf), 1, &inserted);
	uint64_t *slot = e ? gt_u64map_slot(&m->stack_sites, id, &found) : NULL;
	if (slot)
		*slot = (uint64_t)(uintptr_t)e->bytes;
}

/* A GT_STACK record: the stack id defined once, its frames symbolized (or named by address). */
void gtm_define_stack(struct gt_model *m, const struct gt_p_stack *st, const uint64_t *pcs)
{
	uint32_t id = stack_id(m, m->fact_capture, st->id);
	if (!id || bit_test(m->stack_defined, id))
		return;
	bit_set(m->stack_defined, id);
	struct gt_frame frames[GT_WIRE_MAX_FRAMES];
	struct gt_wire_frame wf[GT_WIRE_MAX_FRAMES];
	char names[GT_WIRE_MAX_FRAMES][24];
	size_t k = stack_frames(m, m->fact_capture, pcs, st->nframes, frames, names, wf,
				GT_WIRE_MAX_FRAMES);
	gt_wire_define_stack(m->w, id, wf, k);
	if (m->opt.sym)
		keep_site(m, id, frames, k);
	/* what names a lock outside the modules that is first waited on with this stack */
	uint64_t program_pc = gt_sym_program_pc(m->opt.sym, pcs, st->nframes);
	bool found;
	uint64_t *slot = program_pc ? gt_u64map_slot(&m->program_pcs, id, &found) : NULL;
	if (slot)
		*slot = program_pc;
}

/* Whether capture's stack id is written as id written (never allocates one). */
static bool written_as(const struct gt_model *m, uint32_t capture, uint32_t id, uint64_t written)
{
	if (!m->merged)
		return id == written;
	const uint64_t *slot = gt_u64map_find(&m->stack_ids, (uint64_t)capture << 32 | id);
	return slot && *slot == written;
}

/* The program address of written stack id (gt_sym_program_pc), 0: none.  A fact may come
 * before the STACK record that defines its stack: that is then looked for ahead. */
static uint64_t program_pc_of(struct gt_model *m, uint64_t stack)
{
	const uint64_t *pc = gt_u64map_find(&m->program_pcs, stack);
	if (pc)
		return *pc;
	if (!stack || stack >= (1u << 24) || bit_test(m->stack_defined, (uint32_t)stack))
		return 0;
	struct gt_capture_record r;
	for (size_t i = 0; gtm_peek(m, i, &r); i++) {
		const struct gt_p_stack *st = r.payload;
		if (r.rec->type != GT_STACK || r.payload_len < sizeof *st ||
		    r.payload_len < sizeof *st + (size_t)st->nframes * 8 ||
		    !written_as(m, r.capture, st->id, stack))
			continue;
		gtm_use_space(m, r.capture);
		return gt_sym_program_pc(m->opt.sym, (const uint64_t *)(st + 1), st->nframes);
	}
	return 0;
}

bool gtm_stack_site(void *model, uint32_t capture, uint64_t stack, char *buf, size_t size)
{
	struct gt_model *m = model;
	uint64_t pc = m->opt.sym ? program_pc_of(m, stack) : 0;
	if (!pc)
		return false;
	gtm_use_space(m, capture);
	struct gt_frame f[GT_WIRE_MAX_FRAMES];
	if (!gt_sym_stack(m->opt.sym, &pc, 1, f, GT_WIRE_MAX_FRAMES))
		return false;
	const char *base = strrchr(f[0].file, '/');
	snprintf(buf, size, "%s (%s:%u)", f[0].func, base ? base + 1 : f[0].file, f[0].line);
	return true;
}

const char *gtm_object_name(struct gt_model *m, uint32_t capture, uint8_t kind, uint64_t key,
			    uint64_t stack)
{
	/* a kernel identity (a process-shared object) is no address of this process */
	bool object_kind = kind == GT_BK_MUTEX || kind == GT_BK_RWLOCK_RD ||
			   kind == GT_BK_RWLOCK_WR || kind == GT_BK_COND || kind == GT_BK_SEM ||
			   kind == GT_BK_BARRIER || kind == GT_BK_FUTEX;
	if (!m->opt.sym || !key || (key & GT_OBJ_KERNEL) || !object_kind)
		return NULL;
	bool found;
	uint64_t *slot = gt_u64map_slot(&m->object_names, key, &found);
	if (!slot)
		return NULL;
	if (found)
		return *slot ? (const char *)(uintptr_t)*slot : NULL;
	*slot = 0;
	uint64_t pc = program_pc_of(m, stack);
	gtm_use_space(m, capture);
	char buf[512];
	/* user addresses are below 2^48; a merged trace's capture is above them */
	if (!gt_sym_object_name(m->opt.sym, key & ((1ull << 48) - 1), &pc, pc ? 1 : 0, buf,
				sizeof buf))
		return NULL;
	bool inserted;
	const struct gt_intern_entry *e = gt_intern(&m->names, buf, strlen(buf), 1, &inserted);
	if (e)
		*slot = (uint64_t)(uintptr_t)e->bytes;
	return e ? e->bytes : NULL;
}

const char *gt_model_stack_site(struct gt_model *m, uint32_t capture, uint32_t stack, char *buf,
				size_t size)
{
	uint32_t id = m->opt.sym ? stack_id(m, capture, stack) : 0;
	const uint64_t *kept = id ? gt_u64map_find(&m->stack_sites, id) : NULL;
	if (kept) {
		snprintf(buf, size, "%s", (const char *)(uintptr_t)*kept);
		return buf;
	}
	/* its first frame: the innermost of the program address's inlined ones */
	uint64_t pc = id ? program_pc_of(m, id) : 0;
	gtm_use_space(m, capture);
	struct gt_frame frames[16];
	if (!pc || !gt_sym_stack(m->opt.sym, &pc, 1, frames, 16))
		return NULL;
	site_text(&frames[0], buf, size);
	return buf;
}

uint64_t gtm_pcs_stack(struct gt_model *m, uint32_t capture, const uint64_t *pcs, size_t n)
{
	struct gt_frame frames[GT_WIRE_MAX_FRAMES];
	struct gt_wire_frame wf[GT_WIRE_MAX_FRAMES];
	char names[GT_WIRE_MAX_FRAMES][24];
	size_t k = stack_frames(m, capture, pcs, n, frames, names, wf, GT_WIRE_MAX_FRAMES);
	return gt_wire_stack(m->w, wf, k);
}

uint64_t gtm_pcs_stack_under(struct gt_model *m, uint32_t capture, enum synth top,
			     const uint64_t *pcs, size_t n)
{
	struct gt_frame frames[GT_WIRE_MAX_FRAMES];
	struct gt_wire_frame wf[GT_WIRE_MAX_FRAMES];
	char names[GT_WIRE_MAX_FRAMES][24];
	wf[0] = synth_frame(top);
	size_t k = n ? stack_frames(m, capture, pcs, n, frames, names, wf + 1,
				    GT_WIRE_MAX_FRAMES - 1) : 0;
	return gt_wire_stack(m->w, wf, k + 1);
}

/* The frame of a start routine (its entry address); name: storage for its name. */
static struct gt_wire_frame routine_frame(struct gt_model *m, const struct mthread *t,
					  uint64_t entry, char name[24])
{
	struct gt_wire_frame f;
	if (m->opt.sym) {
		gtm_use_space(m, t->capture);
		struct gt_frame fr = gt_sym_function(m->opt.sym, entry);
		f = (struct gt_wire_frame){entry, fr.func, fr.file, fr.line};
	} else {
		addr_name(name, 24, entry);
		f = (struct gt_wire_frame){entry, name, "?", 0};
	}
	own_pcs(m, t->capture, &f, 1);
	return f;
}

/* One-frame new-stack of a start routine (its entry address: the same for every thread
 * started there, so the goroutine analysis groups them). */
uint64_t gtm_routine_stack(struct gt_model *m, const struct mthread *t, uint64_t entry,
			   enum synth fallback)
{
	if (!entry)
		return gtm_synth_stack(m, fallback);
	bool found;
	/* per process: the same address is another function in another program */
	uint64_t key = m->merged ? entry ^ ((uint64_t)t->capture << 48) : entry;
	uint64_t *slot = gt_u64map_slot(&m->routine_stacks, key, &found);
	if (slot && found)
		return *slot;
	char name[24];
	struct gt_wire_frame f = routine_frame(m, t, entry, name);
	uint64_t id = gt_wire_stack(m->w, &f, 1);
	if (slot)
		*slot = id;
	return id;
}

/* The frame of gtm_thread_routine_stack's stack; name: storage for its name. */
static struct gt_wire_frame thread_routine_frame(struct gt_model *m, const struct mthread *t,
						 enum synth fallback, char name[24])
{
	const char *own = gtm_own_name(m, t);
	if (gtm_start_routine(t))
		return routine_frame(m, t, gtm_start_routine(t), name);
	if (fallback != S_PREEXISTING || !own)
		return synth_frame(fallback);
	/* one frame per name, at a PC of its own past the synthetic ones */
	uint64_t name_id = gt_wire_string(m->w, own, strlen(own));
	return (struct gt_wire_frame){SYNTH_PC_BASE + S_COUNT + 1 + name_id, own, "[gotrace]", 0};
}

uint64_t gtm_thread_routine_stack(struct gt_model *m, const struct mthread *t,
				  enum synth fallback)
{
	if (gtm_start_routine(t))
		return gtm_routine_stack(m, t, gtm_start_routine(t), fallback); /* cached by entry */
	char name[24];
	struct gt_wire_frame f = thread_routine_frame(m, t, fallback, name);
	return gt_wire_stack(m->w, &f, 1);
}

uint64_t gtm_thread_synth_stack(struct gt_model *m, const struct mthread *t,
				const struct gt_wire_frame *top)
{
	char name[24];
	bool main_t = t->serial == m->caps[t->capture].main_serial;
	struct gt_wire_frame f[2] = {*top,
				     thread_routine_frame(m, t, main_t ? S_MAIN : S_PREEXISTING, name)};
	return gt_wire_stack(m->w, f, 2);
}

/* Referenced stacks whose definition was lost get one synthetic frame. */
void gtm_stacks_finish(struct gt_model *m)
{
	for (uint32_t i = 0; i <= m->max_stack_referenced / 8; i += 8) {
		uint64_t ref, def;
		memcpy(&ref, m->stack_referenced + i, 8);
		if (!ref)
			continue;
		memcpy(&def, m->stack_defined + i, 8);
		uint64_t missing = ref & ~def;
		while (missing) {
			uint32_t bit = (uint32_t)__builtin_ctzll(missing);
			missing &= missing - 1;
			struct gt_wire_frame f = synth_frame(S_STACK_LOST);
			gt_wire_define_stack(m->w, i * 8 + bit, &f, 1);
			m->ctr.stacks_missing++;
		}
	}
}
