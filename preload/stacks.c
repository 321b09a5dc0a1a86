/* Call stacks: walked from the hook's frame with the unwind rules libunwind would use
 * (frame_rules.c), by libunwind (frame by frame, the tracer's own frames trimmed) when a frame
 * needs more, or by frame pointers; deduplicated in a lock-free hash table so each distinct
 * stack is written once as a GT_STACK record and facts carry its 24-bit id.
 *
 * The program's stack lends a hook a few hundred bytes at most: a signal handler on an 8 KiB
 * alternate stack or a thread with a 16 KiB stack has no more to spare.  libunwind needs
 * about 3 KiB (its context, its cursor, its frames), so it runs on a stack of the tracer's
 * (walk stacks, below); the frame-pointer walk keeps no frame buffer at all. */
#include "stacks.h"
#include "config.h"
#include "facts.h"
#include "frame_rules.h"
#include "walk_memo.h"
#include "hooks.def"
#include "lifecycle.h"
#include "modules.h"

#include <dlfcn.h>
#include <signal.h>
#include <sys/mman.h>

#define UNW_LOCAL_ONLY
#include <libunwind.h>

uint32_t gt_stack_mode;

/* Slot word: bit 63 set, 39 bits of the stack's hash, 24 bits of its id. */
#define GT_STACK_SLOTS (1u << 17)
#define GT_STACK_PROBES 64u
#define GT_STACK_ID_MAX ((1u << 24) - 1)
static _Atomic uint64_t *gt_stack_table;
static _Atomic uint32_t gt_next_stack_id = 1;

static void map_table(int fixed)
{
	long r = gt_sys((long)SYS_mmap, fixed ? (long)gt_stack_table : 0,
			GT_STACK_SLOTS * sizeof(uint64_t), PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS | (fixed ? MAP_FIXED : 0), -1, 0);
	gt_stack_table = (r < 0 && r > -4096) ? NULL : (_Atomic uint64_t *)r;
}

/* libunwind is opened RTLD_LOCAL, never linked: its libunwind.so exports the _Unwind_*
 * ABI and a weak backtrace(), which would otherwise take over the program's C++ exceptions,
 * thread cancellation and glibc's backtrace() (a linked libunwind made pthread_exit crash in
 * libgcc's unwinder).
 *
 * Its walk is taken frame by frame (unw_init_local, unw_step), not by unw_backtrace: that
 * one's fast path keeps a trace cache per thread, 256 KiB mapped at the thread's first walk,
 * found through a __thread variable of the dlopened libunwind, which glibc allocates with
 * the program's malloc at the thread's first use (issue 27 item 3, issue 28 item 12); the
 * frame by frame walk costs more (its cache of rules takes a lock and masks signals at every
 * frame: 15 us for a walk that unw_backtrace's cache makes in 0.4), but stacks are libunwind's
 * only where the rules (frame_rules.c) cannot step.  GOTRACE_STACK_CHECK, a test knob that
 * has libunwind walk every stack again, keeps unw_backtrace.  On aarch64 the frame by frame
 * walk is also the one that works: libunwind 1.6's unw_backtrace starts from an incomplete
 * context there and dereferences NULL in its first step (libunwind/libunwind#150). */
#define GT_UNW_NAME(f) GT_UNW_NAME_(f)
#define GT_UNW_NAME_(f) #f
static int (*gt_unw_trace)(void **, int);  /* unw_walk, or libunwind's unw_backtrace */
static int (*gt_unw_backtrace)(void **, int);
static uintptr_t gt_unw_lo, gt_unw_hi; /* its text, found once (no loader lock later) */

int gt_from_libunwind(void *pc) { return (uintptr_t)pc - gt_unw_lo < gt_unw_hi - gt_unw_lo; }

/* The thread's registers for unw_init_local: a function of x86-64's libunwind, inline
 * assembly (a macro, no symbol) on aarch64 */
#if defined(__x86_64__)
static int (*gt_unw_getcontext)(unw_context_t *);
#define GT_UNW_GETCONTEXT(uc) gt_unw_getcontext(uc)
#define GT_UNW_FIND_GETCONTEXT(h) \
	(gt_unw_getcontext = (int (*)(unw_context_t *))dlsym(h, GT_UNW_NAME(unw_tdep_getcontext)))
#elif defined(__aarch64__)
#define GT_UNW_GETCONTEXT(uc) unw_tdep_getcontext(uc)
#define GT_UNW_FIND_GETCONTEXT(h) ((void)(h), 1)
#endif

#if defined(GT_UNW_GETCONTEXT)
static int (*gt_unw_init_local)(unw_cursor_t *, unw_context_t *);
static int (*gt_unw_step)(unw_cursor_t *);
static int (*gt_unw_get_reg)(unw_cursor_t *, unw_regnum_t, unw_word_t *);

/* The return addresses above this frame's caller into pcs, at most n, as unw_backtrace's
 * slow path finds them (noinline: the context is this frame's) */
static GT_NOINLINE int unw_walk(void **pcs, int n)
{
	unw_context_t uc;
	unw_cursor_t c;
	unw_word_t ip;
	int got = 0;
	if (GT_UNW_GETCONTEXT(&uc) < 0 || gt_unw_init_local(&c, &uc) < 0)
		return 0;
	while (got < n && gt_unw_step(&c) > 0 && gt_unw_get_reg(&c, UNW_REG_IP, &ip) == 0)
		pcs[got++] = (void *)(uintptr_t)ip;
	return got;
}
#endif

static void open_libunwind(void)
{
	static const char *const names[] = {"libunwind.so.8", "libunwind.so"};
	for (unsigned i = 0; i < sizeof names / sizeof names[0] && !gt_unw_trace; i++) {
		void *h = GT_REAL(dlopen)(names[i], RTLD_NOW | RTLD_LOCAL);
		if (!h)
			continue;
#if defined(GT_UNW_GETCONTEXT)
		int found = !!GT_UNW_FIND_GETCONTEXT(h);
		gt_unw_init_local = (int (*)(unw_cursor_t *, unw_context_t *))
			dlsym(h, GT_UNW_NAME(unw_init_local));
		gt_unw_step = (int (*)(unw_cursor_t *))dlsym(h, GT_UNW_NAME(unw_step));
		gt_unw_get_reg = (int (*)(unw_cursor_t *, unw_regnum_t, unw_word_t *))
			dlsym(h, GT_UNW_NAME(unw_get_reg));
		if (found && gt_unw_init_local && gt_unw_step && gt_unw_get_reg)
			gt_unw_trace = unw_walk;
#endif
		gt_unw_backtrace = (int (*)(void **, int))dlsym(h, "unw_backtrace");
		if (!gt_unw_trace)
			gt_unw_trace = gt_unw_backtrace;
		if (gt_unw_trace && gt_unw_backtrace)
			gt_module_range((uintptr_t)gt_unw_backtrace, &gt_unw_lo, &gt_unw_hi);
		else
			gt_unw_trace = NULL;
	}
	if (!gt_unw_trace) {
		gt_warn("libunwind is not available: GOTRACE_STACKS=unwind falls back to fp", "", "");
		gt_stack_mode = GT_STACKS_FP;
	}
}

static inline int in_self(uintptr_t pc) { return pc >= gt_self_lo && pc < gt_self_hi; }

int gt_tracer_pc(uintptr_t pc) { return in_self(pc) || gt_from_libunwind((void *)pc); }

/* one xor and one multiply per frame; each pc's bits only carry upward through the
 * multiplies, so murmur3's finaliser spreads them once at the end */
#define GT_HASH_SEED 0x9E3779B97F4A7C15ull
GT_INLINE uint64_t hash_step(uint64_t h, uintptr_t pc) { return (h ^ pc) * 0xff51afd7ed558ccdull; }
GT_INLINE uint64_t hash_end(uint64_t h, unsigned n)
{
	h ^= n;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

/* The hash of a buffer of frames: the same steps in four chains (frame i in chain i % 4)
 * that run side by side, each multiply waiting for the one before in its chain only, folded
 * in order at the end.  A stack that differs from another in one frame never has its hash. */
GT_INLINE uint64_t hash_frames(const uintptr_t *pcs, unsigned n)
{
	uint64_t h0 = GT_HASH_SEED, h1 = GT_HASH_SEED + 1, h2 = GT_HASH_SEED + 2, h3 = GT_HASH_SEED + 3;
	unsigned i = 0;
	for (; i + 4 <= n; i += 4) {
		h0 = hash_step(h0, pcs[i]);
		h1 = hash_step(h1, pcs[i + 1]);
		h2 = hash_step(h2, pcs[i + 2]);
		h3 = hash_step(h3, pcs[i + 3]);
	}
	if (i < n)
		h0 = hash_step(h0, pcs[i++]);
	if (i < n)
		h1 = hash_step(h1, pcs[i++]);
	if (i < n)
		h2 = hash_step(h2, pcs[i]);
	return hash_end(hash_step(hash_step(hash_step(h0, h1), h2), h3), n);
}

/* ---- the thread's alternate signal stack ------------------------------------------------
 * As last set through sigaltstack (hooked) or found at start.  A new thread has none (the
 * kernel clears it for CLONE_VM children); a fork child inherits both it and this copy. */
struct gt_altstack {
	uintptr_t lo, size;
};
static __thread struct gt_altstack gt_alt __attribute__((tls_model("initial-exec")));

GT_INLINE int on_altstack(uintptr_t sp) { return sp - gt_alt.lo < gt_alt.size; }

GT_EXPORT int sigaltstack(const stack_t *ss, stack_t *old)
{
	int r = GT_REAL(sigaltstack)(ss, old);
	if (r == 0 && ss)
		gt_alt = (ss->ss_flags & SS_DISABLE) ? (struct gt_altstack){0, 0} :
			 (struct gt_altstack){(uintptr_t)ss->ss_sp, ss->ss_size};
	return r;
}

static void altstack_query(void)
{
	stack_t cur;
	if (gt_sys2(SYS_sigaltstack, NULL, &cur) == 0 && !(cur.ss_flags & SS_DISABLE))
		gt_alt = (struct gt_altstack){(uintptr_t)cur.ss_sp, cur.ss_size};
}

/* ---- frame pointers ----------------------------------------------------------------------
 * Walked from our own frame.  Each frame must lie above the previous one and below the
 * stack's top (the alternate stack's in a handler running there), so a program built
 * without frame pointers yields a short stack, never a fault.  With the top unknown (a
 * thread we did not start) only our own frames are followed, which still reaches the hook's
 * caller.  No buffer: the tracer's leading frames are skipped and the rest hashed as they
 * are found; a stack seen for the first time is walked again into its record. */
GT_INLINE int fp_ok(const uintptr_t *fp, uintptr_t hi)
{
	return !((uintptr_t)fp & (sizeof(uintptr_t) - 1)) && (!hi || (uintptr_t)fp + 16 <= hi);
}

GT_INLINE uintptr_t stack_top(uintptr_t sp, const struct gt_tls *t)
{
	return on_altstack(sp) ? gt_alt.lo + gt_alt.size : t->stack_hi;
}

/* The program's len bytes at p can be read without a fault: they lie on the stack between
 * the stack pointer and its top, or the kernel says so.  A hook reads an argument only once
 * this holds: the kernel answers a bad pointer with EFAULT, where a read of ours would be a
 * SIGSEGV the program never gets untraced.  The stack pointer counts as on the thread's
 * stack only within its top 8 KiB (less than any thread's stack): one on a stack of the
 * program's own (coroutines) may lie anywhere below, with holes up to the thread's top. */
#define GT_STACK_SURE (8u << 10)
int gt_readable(const void *p, size_t len)
{
	uintptr_t a = (uintptr_t)p, sp = (uintptr_t)__builtin_frame_address(0);
	if (!p || a + len < a)
		return 0;
	uintptr_t top = stack_top(sp, gt_self());
	if (top > sp && (on_altstack(sp) || top - sp <= GT_STACK_SURE) && a >= sp && a + len <= top)
		return 1;
	return gt_kernel_reads(a) &&
	       (((a ^ (a + len - 1)) & ~(uintptr_t)4095) == 0 || gt_kernel_reads(a + len - 1));
}

/* The first frame record from fp (this function's caller's frame or one of ours) on whose
 * return address is the program's: the hook's (libgotrace.so keeps frame pointers).  Only
 * records of ours are followed, and ours are made by our own code, so none needs checking
 * but for the direction (a chain that goes down is cut: NULL, as when it ends before). */
GT_INLINE uintptr_t *past_own_frames(uintptr_t *fp)
{
	for (unsigned own = 0; own < GT_STACK_OWN_MAX; own++) {
		if (!in_self(fp[1]))
			return fp;
		uintptr_t *next = (uintptr_t *)fp[0];
		if (next <= fp)
			return NULL;
		fp = next;
	}
	return NULL;
}

GT_INLINE unsigned fp_frames(uintptr_t *fp, const struct gt_tls *t, unsigned depth,
			     uint64_t *hash, uint64_t *out)
{
	uintptr_t hi = stack_top((uintptr_t)fp, t);
	unsigned n = 0;
	uint64_t h = GT_HASH_SEED;
	for (fp = past_own_frames(fp); fp && n < depth && fp_ok(fp, hi);) {
		uintptr_t ret = fp[1];
		uintptr_t *next = (uintptr_t *)fp[0];
		if (!ret)
			break;
		if (out)
			out[n] = ret;
		h = hash_step(h, ret);
		n++;
		if (!hi || next <= fp)
			break;
		fp = next;
	}
	*hash = hash_end(h, n);
	return n;
}

static GT_NOINLINE unsigned walk_fp(const struct gt_tls *t, unsigned depth, uint64_t *hash)
{
	return fp_frames(__builtin_frame_address(0), t, depth, hash, NULL);
}

static GT_NOINLINE unsigned walk_fp_into(const struct gt_tls *t, unsigned depth, uint64_t *out)
{
	uint64_t h;
	return fp_frames(__builtin_frame_address(0), t, depth, &h, out);
}

/* ---- the table ------------------------------------------------------------------------ */

/* The id of the stack whose hash is h; *fresh when this call took a new id, whose GT_STACK
 * record the caller writes.  0: table or ids exhausted (counted). */
GT_INLINE uint32_t stack_id_of(uint64_t h, int *fresh)
{
	uint64_t tag = (h >> 25) | (1ull << 39);
	unsigned idx = (unsigned)h & (GT_STACK_SLOTS - 1);
	*fresh = 0;
	for (unsigned probe = 0; probe < GT_STACK_PROBES; probe++) {
		_Atomic uint64_t *slot = &gt_stack_table[(idx + probe) & (GT_STACK_SLOTS - 1)];
		uint64_t w = gt_load(slot);
		if (!w) {
			uint32_t id = gt_add(&gt_next_stack_id, 1);
			if (id > GT_STACK_ID_MAX)
				break;
			/* the id is taken before the slot: a loser of the race reuses the
			 * winner's id and never waits for it */
			if (atomic_compare_exchange_strong(slot, &w, tag << 24 | id)) {
				*fresh = 1;
				return id;
			}
		}
		if ((w >> 24) == tag)
			return (uint32_t)(w & GT_STACK_ID_MAX);
	}
	gt_lose(GT_NOTICE_STACKS_LOST);
	return 0;
}

/* noinline: a new stack is the rare case; inlined, it cost the lookup registers.  pcs NULL:
 * the frames are walked again (frame pointers) straight into the record. */
static GT_NOINLINE void write_stack(const struct gt_tls *t, uint32_t id, const uintptr_t *pcs,
				   unsigned n)
{
	/* a PC in a library whose records are not written yet (a dlopen constructor): the
	 * module records first, so the stack is symbolized as it is read */
	if (pcs)
		gt_modules_cover(pcs, n);
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	uint32_t bytes = 16 + sizeof(struct gt_p_stack) + 8 * n;
	uint64_t *r = gt_reserve(cpu, bytes, tsc);
	if (!r)
		return;
	r[1] = tsc;
	struct gt_p_stack *p = (struct gt_p_stack *)(r + 2);
	p->id = id;
	p->nframes = n;
	uint64_t *frames = (uint64_t *)(p + 1);
	if (pcs) {
		for (unsigned i = 0; i < n; i++)
			frames[i] = pcs[i];
	} else {
		/* the same frames as the first walk: only our own differ, and they are skipped */
		for (unsigned i = walk_fp_into(t, n, frames); i < n; i++)
			frames[i] = 0;
		/* as above, and the stack stamped after any module records it needed */
		gt_modules_cover((const uintptr_t *)frames, n);
		r[1] = gt_now(&cpu);
	}
	gt_commit(r, gt_rec_word(GT_STACK, 0, bytes, 0));
}

static GT_NOINLINE uint32_t stack_id_fp(struct gt_tls *t)
{
	uint8_t was_busy = gt_busy_nest(t, 1);
	int saved_errno = errno;
	uint64_t h;
	uint32_t id = 0;
	unsigned n = walk_fp(t, gt_cfg.stack_depth, &h);
	if (n) {
		int fresh;
		id = stack_id_of(h, &fresh);
		if (fresh)
			write_stack(t, id, NULL, n);
	}
	t->busy = was_busy;
	errno = saved_errno;
	return id;
}

/* ---- walk stacks ---------------------------------------------------------------------
 * libunwind runs on a stack of the tracer's: a mapping of a guard page, the stack, and at
 * its top the frame buffer.  A pool of them, one per CPU that unwinds at the same moment (a
 * walk takes a free one with one atomic exchange, starting at its CPU's, and gives it
 * back), so threads need nothing at exit and memory stays a few per CPU.  The slow paths
 * that need kilobytes run there too: a new chunk (file growth, a warning) and a thread's
 * adoption (in a fork child: the capture's creation and the module map).
 *
 * A signal arriving during a walk runs the program's handler on the walk stack (unless
 * SA_ONSTACK): it gets the 60 KiB below, and the guard page under them.  A handler already
 * on the alternate stack must not leave it: a nested SA_ONSTACK signal would be put at the
 * alternate stack's top (the kernel decides by the stack pointer), over the running
 * handler.  There, signals wait for the walk's end (two system calls, only for hooks
 * called on the alternate stack); they always wait for the slow paths' end. */
#define GT_WALK_MAP ((68u << 10) + GT_MEMO_BYTES)
#define GT_WALK_GUARD 4096u
#define GT_WALKS_MAX 64u
/* the tracer's frame a walk adds between libunwind's walk and gt_stack_id_unwind: gt_call_on */
#define GT_OWN_FRAMES_WALK 1u

struct gt_walk {
	_Atomic uint32_t busy;
	uintptr_t owner;       /* the holder's thread pointer */
	int left;              /* the owner jumped out of the work that held it (jumps.c) */
	uintptr_t pcs[GT_MAX_STACK_DEPTH + GT_STACK_OWN_MAX + GT_OWN_FRAMES_WALK + 1];
	struct gt_memo_set memo[GT_MEMO_SETS];
	/* the walk asked of the walk stack (stack_walked) */
	const uintptr_t *frame;      /* the hook's frame record, NULL: libunwind's walk */
	struct gt_walk_memo *keep;   /* the memo for the rules' words, NULL: none */
	uint32_t memo_said;          /* the memo's id, compared (GOTRACE_STACK_CHECK) */
	unsigned own_frames;
	int alt;                     /* the hook runs on the alternate signal stack */
};
static struct gt_walk *_Atomic gt_walks[GT_WALKS_MAX];

/* fn(a, b, c) with the stack pointer at top (16-byte aligned), for any fn of at most three
 * integer or pointer arguments (the unused ones are ignored); its result, to be cast back to
 * fn's return type.  Its frame is a plain frame-pointer frame on the caller's stack, so
 * libunwind (on its fast path), gdb and a cancellation's unwinder follow it from the walk
 * stack back to the program's. */
uintptr_t gt_call_on(void *fn, void *top, uintptr_t a, uintptr_t b, uintptr_t c) GT_HIDDEN;
#if defined(__x86_64__)
#if defined(__CET__)
#define GT_ENDBR "endbr64\n"
#else
#define GT_ENDBR ""
#endif
__asm__(".text\n"
	".p2align 4\n"
	".globl gt_call_on\n"
	".hidden gt_call_on\n"
	".type gt_call_on, @function\n"
	"gt_call_on:\n"
	".cfi_startproc\n" GT_ENDBR
	"push %rbp\n"
	".cfi_def_cfa_offset 16\n"
	".cfi_offset %rbp, -16\n"
	"mov %rsp, %rbp\n"
	".cfi_def_cfa_register %rbp\n"
	"mov %rdi, %rax\n"
	"mov %rsi, %rsp\n"
	"mov %rdx, %rdi\n"
	"mov %rcx, %rsi\n"
	"mov %r8, %rdx\n"
	"call *%rax\n"
	"mov %rbp, %rsp\n"
	"pop %rbp\n"
	".cfi_def_cfa %rsp, 8\n"
	"ret\n"
	".cfi_endproc\n"
	".size gt_call_on, .-gt_call_on\n");
#elif !defined(__aarch64__) /* aarch64: call_on_aarch64.c */
/* elsewhere everything stays on the program's stack (only the frame buffer is ours) */
uintptr_t gt_call_on(void *fn, void *top, uintptr_t a, uintptr_t b, uintptr_t c)
{
	(void)top;
	return ((uintptr_t(*)(uintptr_t, uintptr_t, uintptr_t))fn)(a, b, c);
}
#endif

static struct gt_walk *walk_new(unsigned k)
{
	long r = gt_sys((long)SYS_mmap, 0, GT_WALK_MAP, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (r < 0 && r > -4096)
		return NULL;
	char *base = (char *)r;
	gt_sys3(SYS_mprotect, base, GT_WALK_GUARD, PROT_NONE);
	struct gt_walk *w = (struct gt_walk *)(base + GT_WALK_MAP - sizeof(struct gt_walk));
	w = (struct gt_walk *)((uintptr_t)w & ~(uintptr_t)63);
	struct gt_walk *none = NULL;
	if (atomic_compare_exchange_strong(&gt_walks[k], &none, w))
		return w;
	gt_sys2(SYS_munmap, base, GT_WALK_MAP);
	return none; /* another thread's, just published */
}

/* A walk stack is held by the thread whose thread pointer is its owner.  A signal handler
 * that interrupted the work holding some may jump out of it (jumps.c): they are given back
 * then, but the one the handler runs on, which is marked left and given back when its owner
 * meets it taking a walk, or at its end (gt_walks_give_left). */
GT_INLINE uintptr_t thread_id(void) { return (uintptr_t)__builtin_thread_pointer(); }

static void walk_give(struct gt_walk *w)
{
	w->owner = 0;
	w->left = 0;
	atomic_store_explicit(&w->busy, 0, memory_order_release);
}

/* w given back when this thread left it */
GT_INLINE void walk_reclaim(struct gt_walk *w)
{
	if (GT_UNLIKELY(w->left) && w->owner == thread_id())
		walk_give(w);
}

void gt_walks_give_left(void)
{
	for (unsigned k = 0; k < GT_WALKS_MAX; k++) {
		struct gt_walk *w = gt_load(&gt_walks[k]);
		if (w)
			walk_reclaim(w);
	}
}

static GT_NOINLINE struct gt_walk *walk_take_slow(unsigned k)
{
	for (unsigned i = 0; i < GT_WALKS_MAX; i++, k++) {
		struct gt_walk *w = gt_load(&gt_walks[k % GT_WALKS_MAX]);
		if (!w && !(w = walk_new(k % GT_WALKS_MAX)))
			continue;
		walk_reclaim(w);
		if (!gt_load(&w->busy) &&
		    !atomic_exchange_explicit(&w->busy, 1, memory_order_acquire)) {
			w->owner = thread_id();
			return w;
		}
	}
	return NULL;
}

/* the current CPU's walk stack, else any free one */
GT_INLINE struct gt_walk *walk_take(void)
{
	unsigned k = 0;
#if defined(__x86_64__)
	if (GT_LIKELY(gt_clock.use_rseq_tsc))
		k = (unsigned)*(const volatile int32_t *)((const char *)__builtin_thread_pointer() +
							  gt_clock.rseq_offset + 4) % GT_WALKS_MAX;
#endif
	struct gt_walk *w = gt_load(&gt_walks[k]);
	if (GT_LIKELY(w && !atomic_exchange_explicit(&w->busy, 1, memory_order_acquire))) {
		w->owner = thread_id();
		return w;
	}
	return walk_take_slow(k);
}

GT_INLINE void *walk_top(struct gt_walk *w) { return (void *)((uintptr_t)w & ~(uintptr_t)15); }

/* The low end of a walk stack: its stack grows down from the top and never gets there
 * while the walk is held for this (a handler interrupting the holder runs on its own). */
GT_INLINE char *walk_low(struct gt_walk *w)
{
	return (char *)(((uintptr_t)w + sizeof *w + 4095 - GT_WALK_MAP) & ~(uintptr_t)4095) +
	       GT_WALK_GUARD;
}

/* sp lies on a walk stack (its guard page included) */
static int on_walk_stack(uintptr_t sp)
{
	for (unsigned k = 0; k < GT_WALKS_MAX; k++) {
		struct gt_walk *w = gt_load(&gt_walks[k]);
		if (w && sp >= (uintptr_t)walk_low(w) - GT_WALK_GUARD && sp < (uintptr_t)(w + 1))
			return 1;
	}
	return 0;
}

void gt_walks_left(void)
{
	uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
	for (unsigned k = 0; k < GT_WALKS_MAX; k++) {
		struct gt_walk *w = gt_load(&gt_walks[k]);
		if (!w || !gt_load(&w->busy) || w->owner != thread_id())
			continue;
		if (sp >= (uintptr_t)walk_low(w) - GT_WALK_GUARD && sp < (uintptr_t)(w + 1))
			w->left = 1; /* the handler runs on it */
		else
			walk_give(w);
	}
}

int gt_jump_leaves(uintptr_t frame_sp, uintptr_t to_sp)
{
	/* a handler runs deeper on the stack it interrupted, or on the alternate stack */
	int walk_frame = on_walk_stack(frame_sp), walk_to = on_walk_stack(to_sp);
	if (walk_frame != walk_to)
		return walk_frame;
	int alt_frame = on_altstack(frame_sp), alt_to = on_altstack(to_sp);
	if (alt_frame != alt_to)
		return alt_frame;
	return to_sp > frame_sp;
}

/* fn(a, b, c) on w's stack (NULL: none could be had, on this one) with every signal held
 * back: on the alternate stack (see above), and around the tracer's locks (a program's
 * handler run while it holds one could wait for a thread that waits for it) */
static GT_NOINLINE uintptr_t call_masked(struct gt_walk *w, void *fn, uintptr_t a, uintptr_t b,
					 uintptr_t c)
{
	uint64_t all = ~0ull, old;
	gt_sys4(SYS_rt_sigprocmask, SIG_SETMASK, &all, &old, sizeof all);
	uintptr_t r = w ? gt_call_on(fn, walk_top(w), a, b, c) :
			  ((uintptr_t(*)(uintptr_t, uintptr_t, uintptr_t))fn)(a, b, c);
	gt_sys4(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof old);
	return r;
}

/* fn(a, b, c) on w's stack, signals held back when masked */
GT_INLINE uintptr_t call_on(struct gt_walk *w, int masked, void *fn, uintptr_t a, uintptr_t b,
			    uintptr_t c)
{
	if (GT_LIKELY(!masked && w))
		return gt_call_on(fn, walk_top(w), a, b, c);
	return call_masked(w, fn, a, b, c);
}

/* libunwind's walk into w->pcs, made on the walk stack; the tracer's leading frames skipped */
GT_INLINE unsigned unwind(struct gt_walk *w, unsigned want, unsigned *skip)
{
	int (*walk)(void **, int) = GT_UNLIKELY(gt_cfg.stack_check) ? gt_unw_backtrace : gt_unw_trace;
	int got = walk((void **)w->pcs, (int)want);
	unsigned n = got > 0 ? (unsigned)got : 0;
	for (*skip = 0; *skip < n && in_self(w->pcs[*skip]); (*skip)++)
		;
	return n;
}

/* GOTRACE_STACK_CHECK: walks by the rules compared with libunwind's, those that differed,
 * stacks left to libunwind, walks made again from a memo (compared too) */
static _Atomic uint64_t gt_check_walks, gt_check_differ, gt_check_libunwind, gt_check_memo;

/* The frames the rules found (pcs, n) against libunwind's walk through all our frames (the
 * only walk before the rules), made now */
static GT_NOINLINE void check_walk(struct gt_walk *w, const uintptr_t *pcs, unsigned n)
{
	uintptr_t *found = (uintptr_t *)walk_low(w); /* w->pcs is walked over again */
	for (unsigned i = 0; i < n; i++)
		found[i] = pcs[i];
	unsigned skip, m = unwind(w, gt_cfg.stack_depth + GT_STACK_OWN_MAX + GT_OWN_FRAMES_WALK + 1,
				  &skip);
	m -= skip;
	if (m > gt_cfg.stack_depth)
		m = gt_cfg.stack_depth;
	int same = m == n;
	for (unsigned i = 0; same && i < n; i++)
		same = found[i] == w->pcs[skip + i];
	gt_add(&gt_check_walks, 1);
	if (!same)
		gt_add(&gt_check_differ, 1);
}

void gt_stacks_check_say(void)
{
	if (!gt_cfg.stack_check || gt_stack_mode != GT_STACKS_UNWIND)
		return;
	char a[24], b[24], c[24], d[24], tail[200];
	a[gt_fmt_u64(a, gt_load(&gt_check_walks))] = 0;
	b[gt_fmt_u64(b, gt_load(&gt_check_differ))] = 0;
	c[gt_fmt_u64(c, gt_load(&gt_check_libunwind))] = 0;
	d[gt_fmt_u64(d, gt_load(&gt_check_memo))] = 0;
	size_t k = gt_append(tail, 0, sizeof tail, " walks by the rule cache compared with libunwind's, ");
	k = gt_append(tail, k, sizeof tail, b);
	k = gt_append(tail, k, sizeof tail, " differed, ");
	k = gt_append(tail, k, sizeof tail, c);
	k = gt_append(tail, k, sizeof tail, " stacks walked by libunwind, ");
	k = gt_append(tail, k, sizeof tail, d);
	gt_append(tail, k, sizeof tail, " walks made again from a memo");
	gt_warn("stack check: ", a, tail);
}

/* The stack from the hook's frame by the rules kept for its return addresses
 * (frame_rules.c), those not known yet learned first, on the walk stack; GT_WALK_LIBUNWIND
 * when a frame is libunwind's to step, or the rules would not stay learned. */
GT_INLINE int walk_by_rules(struct gt_walk *w, const uintptr_t *frame, unsigned depth,
			    struct gt_walk_words *words)
{
	uintptr_t missing;
	int got = gt_frame_rules_walk(frame, depth, w->pcs, words, &missing);
	for (unsigned learned = 0; GT_UNLIKELY(got == GT_WALK_MISSING); learned++) {
		/* on the walk stack already (stack_walked): the loader's lock, signals held back */
		if (learned > depth || !call_masked(NULL, (void *)gt_frame_rule_learn, missing, 0, 0))
			return GT_WALK_LIBUNWIND;
		got = gt_frame_rules_walk(frame, depth, w->pcs, words, &missing);
	}
	return got;
}

GT_INLINE struct gt_memo_set *memo_set(struct gt_walk *w, const uintptr_t *frame)
{
	return gt_memo_set_of(w->memo, frame);
}

/* On the walk stack: the stack walked, by the rules from w->frame (their words kept in
 * w->keep) or by libunwind, and its id */
static uintptr_t stack_walked(struct gt_tls *t, struct gt_walk *w)
{
	unsigned depth = gt_cfg.stack_depth, skip = 0, n;
	uint32_t id = 0;
	struct gt_walk_memo *memo = w->keep;
	t->busy = 1 | GT_BUSY_CALLOUT; /* libunwind calls hooked functions (hooks_io.c) */
	int ruled = w->frame ? walk_by_rules(w, w->frame, depth, memo ? &memo->words : NULL) :
			       GT_WALK_LIBUNWIND;
	if (ruled >= 0) {
		n = (unsigned)ruled;
	} else {
		/* libunwind from here: unwinding costs per frame, so ask for the caller's estimate
		 * of our own frames (and call_masked's), and only when that proved short ask
		 * again with room for all of them */
		unsigned want = depth + w->own_frames + GT_OWN_FRAMES_WALK + (unsigned)w->alt;
		unsigned most = depth + GT_STACK_OWN_MAX + GT_OWN_FRAMES_WALK + 1;
		n = unwind(w, want, &skip);
		if (n == want && n - skip < depth && want < most)
			n = unwind(w, most, &skip);
	}
	t->busy = 1;
	const uintptr_t *pcs = w->pcs + skip;
	n -= skip;
	if (n > depth)
		n = depth;
	if (n) {
		int fresh;
		id = stack_id_of(hash_frames(pcs, n), &fresh);
		if (fresh)
			write_stack(NULL, id, pcs, n);
		if (memo && ruled > 0 && id && memo->words.n)
			gt_memo_keep(memo_set(w, w->frame), memo, w->frame, id);
	}
	if (GT_UNLIKELY(gt_cfg.stack_check)) {
		t->busy = 1 | GT_BUSY_CALLOUT;
		if (ruled >= 0)
			check_walk(w, pcs, n);
		else
			gt_add(&gt_check_libunwind, 1);
		if (w->memo_said && w->memo_said != id)
			gt_add(&gt_check_differ, 1);
	}
	return id;
}

/* The walk from frame (the hook's frame record, NULL: none found) on the walk stack w, the
 * memo's id to compare when it answered (GOTRACE_STACK_CHECK); errno kept, which a walk may
 * set.  Apart from gt_stack_id_unwind so that a memo's answer costs none of this. */
static GT_NOINLINE uint32_t stack_id_walk(struct gt_tls *t, struct gt_walk *w,
					  const uintptr_t *frame, unsigned own_frames,
					  uint32_t memo_said)
{
	int saved_errno = errno;
	w->memo_said = memo_said;
	w->keep = NULL;
	if (frame) {
		if (memo_said) /* the stack is walked too, and the two compared */
			gt_add(&gt_check_memo, 1);
		else
			w->keep = gt_memo_replaced(memo_set(w, frame));
	}
	w->frame = frame;
	w->alt = on_altstack((uintptr_t)__builtin_frame_address(0));
	w->own_frames = own_frames + 2; /* this frame and stack_walked's */
	uint32_t id =
		(uint32_t)call_on(w, w->alt, (void *)stack_walked, (uintptr_t)t, (uintptr_t)w, 0);
	errno = saved_errno;
	return id;
}

/* The stack's id: a memo's when the words its walk read are unchanged, else walked on the
 * walk stack (the program's stack keeps only two frames) */
uint32_t gt_stack_id_unwind(struct gt_tls *t, unsigned own_frames)
{
	if (GT_UNLIKELY(!gt_stack_table)) /* set up after the mode (lifecycle.c) */
		return 0;
	uint8_t was_busy = gt_busy_nest(t, 1);
	uint32_t id = 0;
	struct gt_walk *w = walk_take();
	if (GT_UNLIKELY(!w)) {
		int saved_errno = errno;
		gt_lose(GT_NOTICE_STACKS_LOST);
		errno = saved_errno;
		t->busy = was_busy;
		return 0;
	}
	uintptr_t *fp = __builtin_frame_address(0);
	/* the hook's frame record, found through our frame pointers */
	const uintptr_t *frame = past_own_frames(fp);
	if (frame)
		id = gt_memo_find(memo_set(w, frame), frame);
	if (!id || GT_UNLIKELY(gt_cfg.stack_check))
		id = stack_id_walk(t, w, frame, own_frames, id);
	walk_give(w);
	t->busy = was_busy;
	return id;
}

/* The reservation's slow path and a thread's adoption, on a walk stack (on the program's
 * only when none can be had), signals held back: both may take the tracer's locks (the
 * capture's growth; in a fork child, the capture's creation and the loader's for the module
 * map).  Only a delayed start's check of the time, on every fact until then, takes none. */
uint64_t *gt_reserve_slow_offstack(unsigned cpu, uint32_t nbytes, uint64_t tsc)
{
	struct gt_walk *w = walk_take();
	uint64_t *r = (uint64_t *)call_on(w, gt_load(&gt_state) != GT_ST_DELAYED,
					  (void *)gt_reserve_slow, cpu, nbytes, tsc);
	if (w)
		walk_give(w);
	return r;
}

struct gt_tls *gt_thread_adopt_offstack(struct gt_tls *t)
{
	struct gt_walk *w = walk_take();
	struct gt_tls *r = (struct gt_tls *)call_on(w, 1, (void *)gt_thread_adopt, (uintptr_t)t, 0, 0);
	if (w)
		walk_give(w);
	return r;
}

uintptr_t gt_offstack(int masked, void *fn, uintptr_t a, uintptr_t b, uintptr_t c)
{
	struct gt_walk *w = walk_take();
	int alt = on_altstack((uintptr_t)__builtin_frame_address(0));
	uintptr_t r = call_on(w, masked || alt, fn, a, b, c);
	if (w)
		walk_give(w);
	return r;
}

/* [lo, hi) overlaps the stack table, a walk stack or the libunwind we opened */
int gt_stacks_own(uintptr_t lo, uintptr_t hi)
{
	uintptr_t table = (uintptr_t)gt_stack_table;
	if (table && lo < table + GT_STACK_SLOTS * sizeof(uint64_t) && hi > table)
		return 1;
	if (gt_unw_hi && lo < gt_unw_hi && hi > gt_unw_lo)
		return 1;
	for (unsigned k = 0; k < GT_WALKS_MAX; k++) {
		struct gt_walk *w = gt_load(&gt_walks[k]);
		uintptr_t top = (uintptr_t)w + sizeof *w, base = top > GT_WALK_MAP ? top - GT_WALK_MAP : 0;
		if (w && lo < top && hi > (base & ~(uintptr_t)4095))
			return 1;
	}
	return 0;
}

void *gt_scratch_take(void)
{
	GT_STATIC_ASSERT(GT_SCRATCH_BYTES <= GT_WALK_MAP / 2, "a walk keeps most of its stack");
	struct gt_walk *w = walk_take();
	return w ? walk_low(w) : NULL;
}

void gt_scratch_give(void *mem)
{
	char *base = (char *)mem - GT_WALK_GUARD;
	struct gt_walk *w = (struct gt_walk *)(base + GT_WALK_MAP - sizeof *w); /* as walk_new */
	w = (struct gt_walk *)((uintptr_t)w & ~(uintptr_t)63);
	walk_give(w);
}

/* Each mode's function replaces this frame (tail call): own_frames counts one of ours. */
uint32_t gt_stack_id_slow(struct gt_tls *t, unsigned own_frames)
{
	if (!gt_stack_table)
		return 0;
	if (gt_stack_mode == GT_STACKS_FP)
		return stack_id_fp(t);
	return gt_stack_id_unwind(t, own_frames);
}

void gt_stacks_setup(void)
{
	altstack_query();
	if (gt_stack_mode == GT_STACKS_UNWIND && !gt_unw_trace)
		open_libunwind();
	if (gt_stack_mode != GT_STACKS_NONE && !gt_stack_table)
		map_table(0);
	if (gt_stack_mode == GT_STACKS_UNWIND)
		gt_frame_rules_setup();
	if (!gt_stack_table)
		gt_stack_mode = GT_STACKS_NONE;
}

void gt_stacks_reset(void)
{
	/* a fork child starts a new capture: ids of the parent mean nothing there */
	if (gt_stack_table)
		map_table(1);
	gt_store(&gt_next_stack_id, 1);
	gt_store(&gt_check_walks, 0);
	gt_store(&gt_check_differ, 0);
	gt_store(&gt_check_libunwind, 0);
	gt_store(&gt_check_memo, 0);
	/* walks of the parent's other threads were cut short: their stacks are free here; the
	 * memos name the parent's stack ids */
	for (unsigned k = 0; k < GT_WALKS_MAX; k++) {
		struct gt_walk *w = gt_load(&gt_walks[k]);
		if (w) {
			for (unsigned i = 0; i < GT_MEMO_SETS; i++)
				for (unsigned j = 0; j < GT_MEMO_WAYS; j++)
					w->memo[i].way[j].frame = NULL;
			walk_give(w);
		}
	}
}
