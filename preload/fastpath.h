/* The inline fast path every hook runs: the thread's TLS, entry (gt_enter), the clock read
 * (gt_now), the reservation (gt_reserve) and the commit.
 *
 * A fact costs one timestamp (rdtsc, with the CPU from glibc's rseq area), one atomic
 * fetch-add on the current CPU's chunk, a few stores, and the record's first word stored
 * last with release semantics (capture.h).  Everything exceptional -- not initialised,
 * recording not started or stopped, chunk full, duration over -- lands in the one noinline
 * gt_reserve_slow() (lifecycle.c): before initialisation every CPU slot points at a constant
 * "full" chunk, so the first fact takes the slow path without an extra branch (mimalloc's
 * empty heap).
 */
#ifndef GT_FASTPATH_H
#define GT_FASTPATH_H

#include "base.h"
#include "capture_file.h"

#include "gotrace/capture.h"

/* ---- per-thread state (one small initial-exec TLS struct) -------------------------- */

enum gt_pending { GT_PENDING_NONE = 0, GT_PENDING_BLOCK = 1, GT_PENDING_SYSCALL = 2 };
/* pending's bits beside the call (facts.c, calls nested in a pending one): a signal handler's
 * call nested in it saved the outer call's state; the outer call had a call nested in it */
#define GT_PENDING_CALL 3u
#define GT_PENDING_OUTER 0x80u
#define GT_PENDING_NESTED 0x40u

/* A record being written: where, its length, and a stack address of its writer */
struct gt_writing {
	uint64_t *rec;
	uint32_t bytes;
	uintptr_t sp;
};

struct gt_tls {
	uint32_t serial;          /* capture-local thread id, 0 = not yet known */
	uint32_t epoch;           /* gt_epoch when this thread was last announced */
	uint8_t busy;             /* inside tracer code: nested hooks pass straight through (a
				   * loss, counted, unless GT_BUSY_CALLOUT or GT_BUSY_UNTRACED
				   * says why) */
	uint8_t ended;            /* GT_TLS_ENDED: GT_THREAD_END written, no more facts from this
				   * thread; GT_TLS_SHARED: raw clone threads run on this TLS too */
	uint8_t exit_how;         /* set by the pthread_exit hook */
	uint8_t trampoline;       /* started through gt_thread_trampoline */
	uint8_t pending;          /* enum gt_pending: a blocking call in progress */
	uint8_t pending_kind;     /* gt_block_kind of it */
	uint8_t waiter_registered;/* pending block registered in the waiter table */
	uint8_t raw;              /* made by clone() (raw_threads.c): pthread_self() is not its own */
	uint32_t pending_nr;
	int32_t owner_tid;        /* GT_TLS_SHARED: the thread this TLS belongs to */
	uint64_t pending_obj;     /* of the thread's last block in this capture (GT_NO_OBJ: none) */
	uintptr_t stack_hi;       /* frame-pointer walks stay below this (0 = unknown) */
	uint64_t last_tsc;        /* of the last fact this thread wrote (gt_emit): a wake stamped
				   * with another CPU's time never precedes it (release_raced) */
	/* the chunk and timestamp of the last fact gt_emit_c met in a chunk older than a compact
	 * delta reaches from its first_tsc: later ones count from it (capture.h, version 3) */
	const char *late_chunk;
	uint64_t late_tsc;
	/* a stack address of the tracer's work that last set busy, kept while the call it began
	 * is pending: a signal handler's jump (siglongjmp) above it leaves them (jumps.c) */
	uintptr_t busy_sp;
	uint64_t registered_obj;  /* waiter_registered's object, before its block is begun */
	/* the record this thread writes now, from its reservation to its commit (0: none), and
	 * the one a signal handler's record interrupted: a jump out of the handler leaves it
	 * whole (jumps.c) */
	struct gt_writing writing, writing_outer;
};
extern __thread struct gt_tls gt_tls GT_HIDDEN __attribute__((tls_model("initial-exec")));
#define GT_NO_OBJ UINT64_MAX      /* objs leave bit 63 clear (capture.h) */
#define GT_TLS_ENDED 1
#define GT_TLS_SHARED 2
/* The stack pointer, for busy_sp */
GT_INLINE uintptr_t gt_sp(void)
{
#if defined(__x86_64__)
	uintptr_t sp;
	__asm__("mov %%rsp, %0" : "=r"(sp));
	return sp;
#elif defined(__aarch64__)
	uintptr_t sp;
	__asm__("mov %0, sp" : "=r"(sp));
	return sp;
#else
	return (uintptr_t)__builtin_frame_address(0);
#endif
}
/* The tracer's work begins on this thread: a handler's hooks pass straight through until
 * it ends, or until a jump out of the handler leaves it (jumps.c) */
GT_INLINE void gt_busy_on(struct gt_tls *t)
{
	t->busy_sp = gt_sp();
	t->busy = 1;
}
/* the same where the work may be nested in other work: what busy was, for the end to restore */
GT_INLINE uint8_t gt_busy_nest(struct gt_tls *t, uint8_t busy)
{
	uint8_t was = t->busy;
	if (!was)
		t->busy_sp = gt_sp();
	t->busy = busy;
	return was;
}
/* busy: the tracer calls code that calls hooks itself (libunwind, the loader's resolution) */
#define GT_BUSY_CALLOUT 2
/* busy for good or for a while: another process runs on this memory and TLS (a vfork child,
 * clone(CLONE_VM)), or a thread the tracer could not hold (counted as such) */
#define GT_BUSY_UNTRACED 0x80

/* A thread made by clone(CLONE_VM) without CLONE_SETTLS runs on its creator's TLS, which is
 * then marked GT_TLS_SHARED: every hook on it takes gt_enter's unlikely branch, where the
 * thread is told by its tid (raw_threads.c).  Elsewhere the TLS is the thread's own. */
struct gt_tls *gt_raw_self(struct gt_tls *t) GT_HIDDEN;
/* gt_enter's unlikely branch: tracing off, the TLS shared, the thread busy, ended or not yet
 * announced in this recording (ra: the hook's caller) */
struct gt_tls *gt_enter_odd(struct gt_tls *t, void *ra) GT_HIDDEN GT_NOINLINE;
void gt_raw_reset(void) GT_HIDDEN; /* a fork child: the other threads are gone */

/* the calling thread's state, for the tracer's own paths (never NULL) */
GT_INLINE struct gt_tls *gt_self(void)
{
	struct gt_tls *t = &gt_tls;
	return GT_UNLIKELY(t->ended & GT_TLS_SHARED) ? gt_raw_self(t) : t;
}

extern _Atomic int gt_enabled GT_HIDDEN;     /* 0: every hook passes straight through */
/* bumped when recording (re)starts; GT_EPOCH_OFF is set with gt_enabled = 0 (gt_disable), so
 * that gt_enter's one compare of the thread's epoch with this word also says "enabled": no
 * thread's epoch has that bit (gt_epoch_now), so every hook then takes the slow branch. */
extern _Atomic uint32_t gt_epoch GT_HIDDEN;
#define GT_EPOCH_OFF (1u << 31)
GT_INLINE uint32_t gt_epoch_now(void) { return gt_load(&gt_epoch) & ~GT_EPOCH_OFF; }
void gt_disable(void) GT_HIDDEN;             /* gt_enabled = 0, for good in this image */
/* Stacks none and a TSC clock, so a hook may write its fact on the inline fast path
 * (gt_enter_fast, gt_now_fast): which clock, else 0 and the hook takes its general path */
enum { GT_FAST_RSEQ = 1, GT_FAST_RDTSCP = 2 };
extern int gt_fast_facts GT_HIDDEN;

/* ---- the clock (clock.c sets these up) ------------------------------------------------ */

/* The clock in force, one struct at a fixed address (its fields read as globals are); the
 * three gt_now reads come first, in one cache line. */
struct gt_clock {
	int use_rseq_tsc;         /* TSC timestamps, CPU from glibc's rseq area */
	int use_rdtscp;           /* TSC timestamps and rdtscp for the CPU */
	ptrdiff_t rseq_offset;    /* of glibc's rseq area from the thread pointer */
	int tsc;                  /* 1: rdtsc timestamps, 0: CLOCK_MONOTONIC ns */
	int cpu_source;           /* enum gt_cpu_source (clock.h) */
	uint64_t tsc_hz;
	char tsc_hz_text[24];     /* tsc_hz in decimal when the TSC is used */
};
extern struct gt_clock gt_clock GT_HIDDEN;
uint64_t gt_now_slow(unsigned *cpu) GT_HIDDEN;

/* rdtsc (~11 ns here) plus the CPU number the kernel keeps in the thread's rseq area (one
 * load) beats rdtscp (~22 ns); a migration between the two reads only files the fact under
 * the CPU the thread just left, which the per-CPU reservation tolerates. */
#if defined(__x86_64__)
/* the rseq area's cpu_id, read %fs-relative (no load of the thread pointer first) */
GT_INLINE unsigned gt_rseq_cpu(void)
{
	return (unsigned)*(const volatile __seg_fs int32_t *)(gt_clock.rseq_offset + 4) & (GT_MAX_CPUS - 1);
}

GT_INLINE uint64_t gt_now(unsigned *cpu)
{
	if (GT_LIKELY(gt_clock.use_rseq_tsc)) {
		uint32_t lo, hi;
		*cpu = gt_rseq_cpu();
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		return ((uint64_t)hi << 32) | lo;
	}
	if (GT_LIKELY(gt_clock.use_rdtscp)) {
		uint32_t lo, hi, aux;
		__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
		*cpu = aux & 0xfff; /* Linux puts node << 12 | cpu in TSC_AUX */
		return ((uint64_t)hi << 32) | lo;
	}
	return gt_now_slow(cpu);
}
/* gt_now for a hook that gt_enter_fast let in, with the clock it said (GT_FAST_*) */
GT_INLINE uint64_t gt_now_fast(int clock, unsigned *cpu)
{
	uint32_t lo, hi;
	if (GT_LIKELY(clock == GT_FAST_RSEQ)) {
		*cpu = gt_rseq_cpu();
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	} else {
		uint32_t aux;
		__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
		*cpu = aux & 0xfff;
	}
	return ((uint64_t)hi << 32) | lo;
}
/* the counter alone (clock setup, gt_now_slow) */
GT_INLINE uint64_t gt_counter(void)
{
	uint32_t lo, hi;
	__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
	return ((uint64_t)hi << 32) | lo;
}
#elif defined(__aarch64__)
/* aarch64: the generic timer's virtual count, which Linux lets user space read (the vDSO's
 * clock_gettime reads it too).  The isb keeps the read from being taken ahead of the code
 * before it, as the vDSO does; the CPU comes from glibc's rseq area, else getcpu
 * (gt_now_slow: qemu-user has no rseq). */
GT_INLINE uint64_t gt_counter(void)
{
	uint64_t v;
	__asm__ volatile("isb\n\tmrs %0, cntvct_el0" : "=r"(v) : : "memory");
	return v;
}
GT_INLINE unsigned gt_rseq_cpu(void)
{
	const char *tp = (const char *)__builtin_thread_pointer();
	return (unsigned)*(const volatile int32_t *)(tp + gt_clock.rseq_offset + 4) & (GT_MAX_CPUS - 1);
}
GT_INLINE uint64_t gt_now(unsigned *cpu)
{
	if (GT_LIKELY(gt_clock.use_rseq_tsc)) {
		*cpu = gt_rseq_cpu();
		return gt_counter();
	}
	return gt_now_slow(cpu);
}
/* gt_now for a hook that gt_enter_fast let in (only GT_FAST_RSEQ here) */
GT_INLINE uint64_t gt_now_fast(int clock, unsigned *cpu)
{
	(void)clock;
	*cpu = gt_rseq_cpu();
	return gt_counter();
}
#else
GT_INLINE uint64_t gt_counter(void) { return 0; } /* never read: gt_clock.tsc stays 0 */
GT_INLINE uint64_t gt_now(unsigned *cpu) { return gt_now_slow(cpu); }
GT_INLINE uint64_t gt_now_fast(int clock, unsigned *cpu) { return (void)clock, gt_now_slow(cpu); }
#endif

/* ---- reserve and commit (chunks: capture_file.c maps them, chunk_refill.c installs them) -- */

/* A slot holds its chunk as an offset from the constant full chunk, so that a zeroed slot
 * means "full": the table lives in pages that MADV_WIPEONFORK zeroes in any child made
 * without fork() (_Fork, syscall(SYS_fork), clone), whose first fact thus takes the slow
 * path, where the owner of the capture is checked (lifecycle.c). */
struct gt_slot {
	_Atomic uintptr_t off;    /* current chunk of this CPU - gt_full_chunk (0: full chunk) */
	char pad[56];
};
extern struct gt_slot gt_slots[GT_MAX_CPUS] GT_HIDDEN;
extern struct gt_chunk_header gt_full_chunk GT_HIDDEN;

GT_INLINE char *gt_slot_chunk(uintptr_t off) { return (char *)&gt_full_chunk + off; }
GT_INLINE uintptr_t gt_slot_off(const char *chunk) { return (uintptr_t)(chunk - (char *)&gt_full_chunk); }

/* The capture's header page is mapped (MAP_FIXED) over this page-aligned variable
 * (capture_file.c), so its stop word is read at a fixed address like any global, and gotrace
 * can stop a process without signalling it by writing the stop word of its capture.
 * Before a capture exists (and where the fixed mapping is refused) it is plain memory. */
union gt_header_page {
	struct gt_file_header h;
	char bytes[GT_FILE_HEADER_SIZE];
};
extern union gt_header_page gt_header_page GT_HIDDEN;

/* facts stamped at or after this go to the slow path (capture.h: stop_at_tsc).  A plain
 * load, which the compare takes as its memory operand (an atomic one costs a mov more); each
 * hook reads it afresh, a stop from gotrace is seen by the next fact. */
GT_INLINE uint64_t gt_stop_tsc(void)
{
	return gt_header_page.h.stop_at_tsc;
}

/* The record at rec, nbytes long, is being written by this thread: until its commit, a jump
 * out of a signal handler that interrupted the writing leaves zero words, which readers take
 * for a record never committed, instead of a record torn between its payload and its first
 * word (jumps.c).  Payload stores come after this (the fence), and before it the reserved
 * words are still zero.  Every record a reservation gives is opened so, and its commit (or
 * the jump) closes it; a record opened while another is (a signal handler's, nested in the
 * record it interrupted) keeps that one aside until its own commit. */
/* to's record becomes from's, from's closes (no call: the hooks' frames stay as they were) */
GT_INLINE void gt_writing_move(struct gt_writing *to, struct gt_writing *from)
{
	to->sp = from->sp;
	to->bytes = from->bytes;
	atomic_signal_fence(memory_order_release);
	to->rec = from->rec;
	atomic_signal_fence(memory_order_release);
	from->rec = NULL;
}

GT_INLINE uint64_t *gt_writing_open(uint64_t *rec, uint32_t nbytes)
{
	struct gt_tls *t = &gt_tls;
	if (GT_UNLIKELY(t->writing.rec != NULL))
		gt_writing_move(&t->writing_outer, &t->writing);
	t->writing.sp = gt_sp();
	t->writing.bytes = nbytes;
	atomic_signal_fence(memory_order_release);
	t->writing.rec = rec;
	atomic_signal_fence(memory_order_release);
	return rec;
}

GT_INLINE void gt_writing_close(void)
{
	struct gt_tls *t = &gt_tls;
	atomic_signal_fence(memory_order_release);
	if (GT_UNLIKELY(t->writing_outer.rec != NULL))
		gt_writing_move(&t->writing, &t->writing_outer);
	else
		t->writing.rec = NULL;
}

uint64_t *gt_reserve_slow(unsigned cpu, uint32_t nbytes, uint64_t tsc) GT_HIDDEN GT_NOINLINE;
/* the same on a stack of the tracer's (stacks.c): the program's lends a hook little */
uint64_t *gt_reserve_slow_offstack(unsigned cpu, uint32_t nbytes, uint64_t tsc) GT_HIDDEN GT_NOINLINE;

GT_INLINE uint64_t *gt_reserve(unsigned cpu, uint32_t nbytes, uint64_t tsc)
{
	char *chunk = gt_slot_chunk(gt_load(&gt_slots[cpu].off));
	_Atomic uint64_t *used = (_Atomic uint64_t *)(chunk + offsetof(struct gt_chunk_header, used));
	uint64_t off = gt_add(used, nbytes);
	uint64_t *r = (uint64_t *)(chunk + off);
	if (GT_UNLIKELY(off + nbytes > gt_cap.chunk_limit || tsc >= gt_stop_tsc()) &&
	    !(r = gt_reserve_slow_offstack(cpu, nbytes, tsc)))
		return NULL;
	return gt_writing_open(r, nbytes);
}

GT_INLINE uint64_t gt_rec_word(uint8_t type, uint8_t aux, uint32_t nbytes, uint32_t thread)
{
	return (uint64_t)type | (uint64_t)aux << 8 | (uint64_t)(nbytes / 8) << 16 |
	       (uint64_t)thread << 32;
}

/* The record's first word, stored last: a record opened by gt_writing_open is then whole */
GT_INLINE void gt_commit(uint64_t *rec, uint64_t first_word)
{
	atomic_store_explicit((_Atomic uint64_t *)rec, first_word, memory_order_release);
	gt_writing_close();
}

/* A one-word record: its one store commits it, nothing was opened */
GT_INLINE void gt_commit_word(uint64_t *rec, uint64_t word)
{
	atomic_store_explicit((_Atomic uint64_t *)rec, word, memory_order_release);
}

/* ---- hook entry ----------------------------------------------------------------------- */

struct gt_tls *gt_thread_adopt(struct gt_tls *t) GT_HIDDEN GT_NOINLINE;
struct gt_tls *gt_thread_adopt_offstack(struct gt_tls *t) GT_HIDDEN GT_NOINLINE;

/* NULL: pass straight through (tracing off, failed, or the tracer itself is calling).
 * One compare says enabled and announced (GT_EPOCH_OFF), one more not busy, not ended and
 * not shared; busy is read alone, as the byte its stores write (a wider load would wait for
 * the previous hook's store of it). */
GT_INLINE struct gt_tls *gt_enter(void)
{
	struct gt_tls *t = &gt_tls;
	if (GT_UNLIKELY(t->epoch != gt_load(&gt_epoch)) || GT_UNLIKELY(t->busy | t->ended))
		return gt_enter_odd(t, __builtin_return_address(0));
	return t;
}

/* gt_enter for a hook whose fact may take the fast path: NULL when it cannot, for whatever
 * reason, and the hook takes its general path (which calls gt_enter).  Not shared, so the
 * state is this thread's own gt_tls; *clock: gt_fast_facts, for gt_now_fast. */
GT_INLINE struct gt_tls *gt_enter_fast(int *clock)
{
	struct gt_tls *t = &gt_tls;
	*clock = gt_fast_facts; /* first: with stacks, the general path comes at once */
	if (GT_UNLIKELY(!*clock) || GT_UNLIKELY(t->epoch != gt_load(&gt_epoch)) ||
	    GT_UNLIKELY(t->busy | t->ended))
		return NULL;
	return t;
}

#endif
