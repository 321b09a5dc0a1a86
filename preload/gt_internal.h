/* libgotrace.so internals: the state every hook shares and the inline fast path.
 *
 * A fact is written by gt_emit*(): one timestamp (rdtscp gives the CPU too), one atomic
 * fetch-add on the current CPU's chunk, a few stores, and the record's first word stored
 * last with release semantics (capture.h).  Everything exceptional -- not initialised,
 * recording not started or stopped, chunk full, duration over -- lands in the one noinline
 * gt_reserve_slow(): before initialisation every CPU slot points at a constant "full" chunk,
 * so the first fact takes the slow path without an extra branch (mimalloc's empty heap).
 */
#ifndef GT_INTERNAL_H
#define GT_INTERNAL_H

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <fcntl.h>

#include "gotrace/capture.h"

#define GT_EXPORT __attribute__((visibility("default")))
#define GT_HIDDEN __attribute__((visibility("hidden")))
#define GT_LIKELY(x) __builtin_expect(!!(x), 1)
#define GT_UNLIKELY(x) __builtin_expect(!!(x), 0)
#define GT_NOINLINE __attribute__((noinline))
#define GT_INLINE static inline __attribute__((always_inline))
/* For hooks whose fast path only calls the original: no frame to build.  Safe for
 * frame-pointer stacks only when every path that records is a tail call. */
#if defined(__clang__)
#define GT_FRAMELESS
#else
#define GT_FRAMELESS __attribute__((optimize("omit-frame-pointer")))
#endif

#define gt_load(p) atomic_load_explicit((p), memory_order_relaxed)
#define gt_store(p, v) atomic_store_explicit((p), (v), memory_order_relaxed)
#define gt_add(p, v) atomic_fetch_add_explicit((p), (v), memory_order_relaxed)

/* ---- configuration (env.c) ---------------------------------------------------------- */

struct gt_config {
	const char *out;          /* GOTRACE_OUT or NULL */
	char capture_dir[1024];   /* GOTRACE_CAPTURE_DIR or "" (cwd) */
	uint32_t stack_mode;      /* enum gt_stack_mode */
	uint32_t stack_depth;     /* 1 .. GT_MAX_STACK_DEPTH */
	uint64_t start_delay_ns;
	uint64_t duration_ns;
	uint32_t chunk_size;      /* bytes, multiple of 4096 */
	int follow;               /* exec'd programs stay traced */
	int is_root;              /* the process the user started (not a traced child) */
};
extern struct gt_config gt_cfg GT_HIDDEN;
void gt_config_load(void) GT_HIDDEN;

/* ---- per-thread state (one small initial-exec TLS struct) -------------------------- */

enum gt_pending { GT_PENDING_NONE = 0, GT_PENDING_BLOCK = 1, GT_PENDING_SYSCALL = 2 };

struct gt_tls {
	uint32_t serial;          /* capture-local thread id, 0 = not yet known */
	uint32_t epoch;           /* gt_epoch when this thread was last announced */
	uint8_t busy;             /* inside tracer code: nested hooks pass straight through */
	uint8_t ended;            /* GT_THREAD_END written: no more facts from this thread */
	uint8_t exit_how;         /* set by the pthread_exit hook */
	uint8_t trampoline;       /* started through gt_thread_trampoline */
	uint8_t pending;          /* enum gt_pending: a blocking call in progress */
	uint8_t pending_kind;     /* gt_block_kind of it */
	uint8_t waiter_registered;/* pending block registered in the waiter table */
	uint8_t pad;
	uint32_t pending_nr;
	uint64_t pending_obj;
	uintptr_t stack_hi;       /* frame-pointer walks stay below this (0 = unknown) */
};
extern __thread struct gt_tls gt_tls GT_HIDDEN __attribute__((tls_model("initial-exec")));

/* ---- global state --------------------------------------------------------------------- */

enum gt_state {
	GT_ST_UNINIT = 0,     /* no capture yet (also: a fresh fork child) */
	GT_ST_INITIALIZING,
	GT_ST_DELAYED,        /* capture open, GOTRACE_START_DELAY not elapsed */
	GT_ST_RECORDING,
	GT_ST_STOPPED,        /* duration elapsed or program ending: capture complete */
	GT_ST_FAILED,         /* recording gave up (write failure, setup error) */
};

struct gt_slot {
	_Atomic(char *) chunk;    /* current chunk of this CPU (or the constant full chunk) */
	char pad[56];
};

extern _Atomic int gt_enabled GT_HIDDEN;     /* 0: every hook passes straight through */
extern _Atomic int gt_state GT_HIDDEN;
extern _Atomic uint32_t gt_epoch GT_HIDDEN;  /* bumped when recording (re)starts */
extern _Atomic uint32_t gt_next_serial GT_HIDDEN;
/* threads now blocked inside hooks, per gt_block_kind: a release checks the waiter table
 * only when its kind has blocked threads, so an uncontended unlock costs one relaxed load */
extern _Atomic uint64_t gt_n_blocked[GT_BK_COUNT] GT_HIDDEN;
extern _Atomic uint64_t gt_dropped GT_HIDDEN;
extern struct gt_slot gt_slots[GT_MAX_CPUS] GT_HIDDEN;
extern uint32_t gt_chunk_size GT_HIDDEN;
extern uint64_t gt_stop_tsc GT_HIDDEN;       /* facts at or after this go to the slow path */
extern struct gt_file_header *gt_header GT_HIDDEN;

/* ---- clock ---------------------------------------------------------------------------- */

enum gt_cpu_source { GT_CPU_RDTSCP = 0, GT_CPU_RSEQ = 1, GT_CPU_GETCPU = 2 };
extern int gt_clock_tsc GT_HIDDEN;           /* 1: rdtsc timestamps, 0: CLOCK_MONOTONIC ns */
extern int gt_cpu_source GT_HIDDEN;
extern int gt_use_rdtscp GT_HIDDEN;          /* TSC timestamps and rdtscp for the CPU */
extern int gt_use_rseq_tsc GT_HIDDEN;        /* TSC timestamps, CPU from glibc's rseq area */
extern ptrdiff_t gt_rseq_offset GT_HIDDEN;
uint64_t gt_now_slow(unsigned *cpu) GT_HIDDEN;
uint64_t gt_mono_ns(void) GT_HIDDEN;
uint64_t gt_real_ns(void) GT_HIDDEN;
void gt_clock_setup(void) GT_HIDDEN;
extern uint64_t gt_tsc_hz GT_HIDDEN;

/* rdtsc (~11 ns here) plus the CPU number the kernel keeps in the thread's rseq area (one
 * load) beats rdtscp (~22 ns); a migration between the two reads only files the fact under
 * the CPU the thread just left, which the per-CPU reservation tolerates. */
#if defined(__x86_64__)
GT_INLINE uint64_t gt_now(unsigned *cpu)
{
	if (GT_LIKELY(gt_use_rseq_tsc)) {
		const char *tp = __builtin_thread_pointer();
		uint32_t lo, hi;
		*cpu = (unsigned)*(const volatile int32_t *)(tp + gt_rseq_offset + 4) & (GT_MAX_CPUS - 1);
		__asm__ volatile("rdtsc" : "=a"(lo), "=d"(hi));
		return ((uint64_t)hi << 32) | lo;
	}
	if (GT_LIKELY(gt_use_rdtscp)) {
		uint32_t lo, hi, aux;
		__asm__ volatile("rdtscp" : "=a"(lo), "=d"(hi), "=c"(aux));
		*cpu = aux & 0xfff; /* Linux puts node << 12 | cpu in TSC_AUX */
		return ((uint64_t)hi << 32) | lo;
	}
	return gt_now_slow(cpu);
}
#else
GT_INLINE uint64_t gt_now(unsigned *cpu) { return gt_now_slow(cpu); }
#endif

/* ---- raw system calls: the tracer never goes through an interposable libc symbol ------ */

long gt_sys(long nr, long a, long b, long c, long d, long e, long f) GT_HIDDEN;
#define gt_sys0(n) gt_sys((n), 0, 0, 0, 0, 0, 0)
#define gt_sys1(n, a) gt_sys((n), (long)(a), 0, 0, 0, 0, 0)
#define gt_sys2(n, a, b) gt_sys((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define gt_sys3(n, a, b, c) gt_sys((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define gt_sys4(n, a, b, c, d) gt_sys((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

/* One line on stderr through write(2), async-signal-safe ("gotrace: " prefix added). */
void gt_warn(const char *a, const char *b, const char *c) GT_HIDDEN;
size_t gt_fmt_u64(char *buf, uint64_t v) GT_HIDDEN;

/* ---- records -------------------------------------------------------------------------- */

uint64_t *gt_reserve_slow(unsigned cpu, uint32_t nbytes, uint64_t tsc) GT_HIDDEN GT_NOINLINE;
/* a reservation that bypasses the stop check (end-of-capture records) */
uint64_t *gt_reserve_final(unsigned cpu, uint32_t nbytes) GT_HIDDEN;

GT_INLINE uint64_t *gt_reserve(unsigned cpu, uint32_t nbytes, uint64_t tsc)
{
	char *chunk = gt_load(&gt_slots[cpu].chunk);
	_Atomic uint64_t *used = (_Atomic uint64_t *)(chunk + offsetof(struct gt_chunk_header, used));
	uint64_t off = gt_add(used, nbytes);
	if (GT_UNLIKELY(off + nbytes > gt_chunk_size || tsc >= gt_stop_tsc))
		return gt_reserve_slow(cpu, nbytes, tsc);
	return (uint64_t *)(chunk + off);
}

GT_INLINE uint64_t gt_rec_word(uint8_t type, uint8_t aux, uint32_t nbytes, uint32_t thread)
{
	return (uint64_t)type | (uint64_t)aux << 8 | (uint64_t)(nbytes / 8) << 16 |
	       (uint64_t)thread << 32;
}

GT_INLINE void gt_commit(uint64_t *rec, uint64_t first_word)
{
	atomic_store_explicit((_Atomic uint64_t *)rec, first_word, memory_order_release);
}

/* The fixed-shape fact: 16-byte header + 16-byte payload. */
GT_INLINE void gt_emit32(uint32_t thread, uint8_t type, uint8_t aux, uint64_t tsc, unsigned cpu,
			 uint64_t p0, uint64_t p1)
{
	uint64_t *r = gt_reserve(cpu, 32, tsc);
	if (GT_UNLIKELY(!r))
		return;
	r[1] = tsc;
	r[2] = p0;
	r[3] = p1;
	gt_commit(r, gt_rec_word(type, aux, 32, thread));
}

GT_INLINE uint64_t gt_pack2(uint32_t lo, uint32_t hi) { return (uint64_t)lo | (uint64_t)hi << 32; }

/* ---- hook entry ----------------------------------------------------------------------- */

struct gt_tls *gt_thread_adopt(struct gt_tls *t) GT_HIDDEN GT_NOINLINE;

/* NULL: pass straight through (tracing off, failed, or the tracer itself is calling). */
GT_INLINE struct gt_tls *gt_enter(void)
{
	if (GT_UNLIKELY(!gt_load(&gt_enabled)))
		return NULL;
	struct gt_tls *t = &gt_tls;
	if (GT_UNLIKELY(t->busy | t->ended))
		return NULL;
	if (GT_UNLIKELY(t->epoch != gt_load(&gt_epoch)))
		return gt_thread_adopt(t);
	return t;
}

/* ---- stacks (stacks.c) ---------------------------------------------------------------- */

extern uint32_t gt_stack_mode GT_HIDDEN;
/* own_frames: the tracer's frames between the stack walk and the hook's caller, counting
 * gt_stack_id_slow (a hook calling gt_stack_id directly has 2, a gt_fact_* function 3).  A
 * low estimate costs a second walk, never a frame; at most GT_STACK_OWN_MAX are trimmed. */
#define GT_STACK_OWN_MAX 16u
#define GT_OWN_FRAMES_HOOK 2u
#define GT_OWN_FRAMES_FACT 3u
uint32_t gt_stack_id_slow(struct gt_tls *t, unsigned own_frames) GT_HIDDEN GT_NOINLINE;
GT_INLINE uint32_t gt_stack_id(struct gt_tls *t, unsigned own_frames)
{
	if (gt_stack_mode == GT_STACKS_NONE)
		return 0;
	return gt_stack_id_slow(t, own_frames);
}
void gt_stacks_reset(void) GT_HIDDEN;
void gt_stacks_setup(void) GT_HIDDEN;

/* ---- facts (facts.c: the shapes every hook family shares) ----------------------------- */

void gt_fact_block_begin(struct gt_tls *t, uint8_t kind, uint64_t obj, int register_waiter) GT_HIDDEN;
void gt_fact_block_end(struct gt_tls *t, uint8_t kind, uint64_t obj, int rc) GT_HIDDEN;
void gt_fact_block_end_at(struct gt_tls *t, uint8_t kind, uint64_t obj, int rc, uint64_t tsc, unsigned cpu) GT_HIDDEN;
void gt_fact_thread_start(struct gt_tls *t, uint64_t start_routine) GT_HIDDEN;
void gt_fact_wake_if_waiters(struct gt_tls *t, uint8_t kind, uint64_t obj, uint32_t count) GT_HIDDEN;
void gt_fact_wake(struct gt_tls *t, uint8_t kind, uint64_t obj, uint32_t count) GT_HIDDEN;
void gt_fact_syscall_begin(struct gt_tls *t, uint32_t nr, uint8_t fd_kind, int64_t arg) GT_HIDDEN;
void gt_fact_syscall_end(struct gt_tls *t, uint32_t nr, long result, int err) GT_HIDDEN;
void gt_fact_thread_name(uint32_t serial, const char *name) GT_HIDDEN;
void gt_fact_thread_existing(struct gt_tls *t) GT_HIDDEN;
void gt_fact_notice(unsigned cpu, uint8_t kind, uint64_t value) GT_HIDDEN;
void gt_fact_process(struct gt_tls *t, uint8_t kind, uint64_t tsc, unsigned cpu, pid_t child, int err) GT_HIDDEN;
void gt_fact_clock(unsigned cpu, int final) GT_HIDDEN;
void gt_finish_pending(struct gt_tls *t) GT_HIDDEN;
int gt_block_result(int rc) GT_HIDDEN;
uint8_t gt_fd_kind(int fd) GT_HIDDEN;
void gt_fd_forget(int fd) GT_HIDDEN;

/* waiter table: objects some hooked thread is blocked on right now */
int gt_waiters_add(uint64_t obj) GT_HIDDEN;
void gt_waiters_remove(uint64_t obj) GT_HIDDEN;
int gt_waiters_has(uint64_t obj) GT_HIDDEN;
void gt_waiters_reset(void) GT_HIDDEN;

/* thread table: pthread_t -> serial, for join and setname on other threads */
void gt_threads_put(pthread_t th, uint32_t serial, int from_child) GT_HIDDEN;
uint32_t gt_threads_get(pthread_t th, int *ended) GT_HIDDEN;
void gt_threads_mark_ended(pthread_t th) GT_HIDDEN;
void gt_threads_remove(pthread_t th) GT_HIDDEN;
void gt_threads_reset(void) GT_HIDDEN;
void gt_thread_end(struct gt_tls *t, uint8_t how) GT_HIDDEN;

/* ---- capture lifecycle (capture.c) ---------------------------------------------------- */

int gt_init(void) GT_HIDDEN;                 /* 1 when recording or delayed */
void gt_finalize(int convert) GT_HIDDEN;     /* end records, flags, trim, convert */
void gt_after_fork_child(void) GT_HIDDEN;
int gt_capture_path(char *buf, size_t n) GT_HIDDEN;
void gt_lock_growth(void) GT_HIDDEN;
void gt_unlock_growth(void) GT_HIDDEN;

/* ---- modules (modules.c) -------------------------------------------------------------- */

void gt_modules_emit_all(void) GT_HIDDEN;
void gt_modules_reset(void) GT_HIDDEN;
extern uintptr_t gt_self_lo GT_HIDDEN, gt_self_hi GT_HIDDEN; /* our own text: trimmed */
void gt_self_range(void) GT_HIDDEN;

/* ---- process control (hooks_proc.c) --------------------------------------------------- */

/* environment for a child: LD_PRELOAD kept/added (follow) or stripped */
char **gt_child_env(char *const envp[], int follow, char **buf, size_t nbuf, char *scratch,
		    size_t nscratch) GT_HIDDEN;
extern char gt_self_path[GT_PATH_MAX] GT_HIDDEN;
void gt_env_strip_self(void) GT_HIDDEN;     /* GOTRACE_FOLLOW=0: drop us from LD_PRELOAD */

#endif
