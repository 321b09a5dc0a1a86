/* Call stacks: captured with libunwind (unw_backtrace) or by walking frame pointers, the
 * tracer's own frames trimmed, deduplicated in a lock-free hash table so each distinct stack
 * is written once as a GT_STACK record and facts carry its 24-bit id. */
#include "stacks.h"
#include "config.h"
#include "facts.h"
#include "hooks.def"
#include "modules.h"

#include <dlfcn.h>
#include <sys/mman.h>

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
 * libgcc's unwinder). */
static int (*gt_unw_backtrace)(void **, int);
static void *gt_unw_base;

int gt_from_libunwind(void *pc)
{
	Dl_info di;
	return gt_unw_base && dladdr(pc, &di) && di.dli_fbase == gt_unw_base;
}

static void open_libunwind(void)
{
	static const char *const names[] = {"libunwind.so.8", "libunwind.so"};
	for (unsigned i = 0; i < sizeof names / sizeof names[0] && !gt_unw_backtrace; i++) {
		void *h = GT_REAL(dlopen)(names[i], RTLD_NOW | RTLD_LOCAL);
		if (h)
			gt_unw_backtrace = (int (*)(void **, int))dlsym(h, "unw_backtrace");
	}
	Dl_info di;
	if (gt_unw_backtrace && dladdr((void *)(uintptr_t)gt_unw_backtrace, &di))
		gt_unw_base = di.dli_fbase;
	if (!gt_unw_backtrace) {
		gt_warn("libunwind is not available: GOTRACE_STACKS=unwind falls back to fp", "", "");
		gt_stack_mode = GT_STACKS_FP;
	}
}

void gt_stacks_setup(void)
{
	if (gt_stack_mode == GT_STACKS_UNWIND && !gt_unw_backtrace)
		open_libunwind();
	if (gt_stack_mode != GT_STACKS_NONE && !gt_stack_table)
		map_table(0);
	if (!gt_stack_table)
		gt_stack_mode = GT_STACKS_NONE;
}

void gt_stacks_reset(void)
{
	/* a fork child starts a new capture: ids of the parent mean nothing there */
	if (gt_stack_table)
		map_table(1);
	gt_store(&gt_next_stack_id, 1);
}

static inline int in_self(uintptr_t pc) { return pc >= gt_self_lo && pc < gt_self_hi; }

/* Frame-pointer walk from our own frame.  Each frame must lie above the previous one and
 * below the thread's stack top, so a program built without frame pointers yields a short
 * stack, never a fault.  With the top unknown (a thread we did not start) only our own
 * frames are followed, which still reaches the hook's caller. */
static GT_NOINLINE unsigned walk_fp(struct gt_tls *t, uintptr_t *pcs, unsigned max)
{
	uintptr_t *fp = __builtin_frame_address(0);
	uintptr_t hi = t->stack_hi;
	unsigned n = 0;
	while (n < max) {
		if (((uintptr_t)fp & (sizeof(uintptr_t) - 1)) || (hi && (uintptr_t)fp + 16 > hi))
			break;
		uintptr_t ret = fp[1];
		uintptr_t *next = (uintptr_t *)fp[0];
		if (!ret)
			break;
		pcs[n++] = ret;
		if (!hi && !in_self(ret))
			break;
		if (next <= fp)
			break;
		fp = next;
	}
	return n;
}

static uint64_t hash_pcs(const uintptr_t *pcs, unsigned n)
{
	/* one xor and one multiply per frame; each pc's bits only carry upward through the
	 * multiplies, so murmur3's finaliser spreads them once at the end */
	uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
	for (unsigned i = 0; i < n; i++)
		h = (h ^ pcs[i]) * 0xff51afd7ed558ccdull;
	h ^= h >> 33;
	h *= 0xc4ceb9fe1a85ec53ull;
	h ^= h >> 33;
	return h;
}

/* noinline: a new stack is the rare case; inlined, it cost the lookup registers */
static GT_NOINLINE void write_stack(uint32_t id, const uintptr_t *pcs, unsigned n)
{
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
	for (unsigned i = 0; i < n; i++)
		frames[i] = pcs[i];
	gt_commit(r, gt_rec_word(GT_STACK, 0, bytes, 0));
}

/* Fills raw with up to want return addresses, the first in gt_stack_id_slow's caller. */
static unsigned capture_pcs(struct gt_tls *t, uintptr_t *raw, unsigned want)
{
	if (gt_stack_mode == GT_STACKS_FP)
		return walk_fp(t, raw, want);
	int got = gt_unw_backtrace((void **)raw, (int)want);
	return got > 0 ? (unsigned)got : 0;
}

uint32_t gt_stack_id_slow(struct gt_tls *t, unsigned own_frames)
{
	uintptr_t raw[GT_MAX_STACK_DEPTH + GT_STACK_OWN_MAX];
	unsigned depth = gt_cfg.stack_depth, skip = 0;
	/* unwinding costs per frame: ask for the caller's estimate of our own frames (walk_fp
	 * adds one), and only when that proved short ask again with room for all of them */
	unsigned want = depth + own_frames;
	uint8_t was_busy = t->busy;
	int saved_errno = errno;
	t->busy = 1;
	unsigned n = capture_pcs(t, raw, want);
	while (skip < n && in_self(raw[skip]))
		skip++;
	if (n == want && n - skip < depth && want < depth + GT_STACK_OWN_MAX) {
		want = depth + GT_STACK_OWN_MAX;
		n = capture_pcs(t, raw, want);
		for (skip = 0; skip < n && in_self(raw[skip]); skip++)
			;
	}
	uintptr_t *pcs = raw + skip;
	n -= skip;
	if (n > depth)
		n = depth;
	uint32_t id = 0;
	if (n && gt_stack_table) {
		uint64_t h = hash_pcs(pcs, n);
		uint64_t tag = (h >> 25) | (1ull << 39);
		unsigned idx = (unsigned)h & (GT_STACK_SLOTS - 1);
		for (unsigned probe = 0; probe < GT_STACK_PROBES && !id; probe++) {
			_Atomic uint64_t *slot = &gt_stack_table[(idx + probe) & (GT_STACK_SLOTS - 1)];
			uint64_t w = gt_load(slot);
			if (!w) {
				uint32_t fresh = gt_add(&gt_next_stack_id, 1);
				if (fresh > GT_STACK_ID_MAX)
					break;
				/* the id is taken before the slot: a loser of the race reuses the
				 * winner's id and never waits for it */
				if (atomic_compare_exchange_strong(slot, &w, tag << 24 | fresh)) {
					write_stack(fresh, pcs, n);
					id = fresh;
					break;
				}
			}
			if ((w >> 24) == tag)
				id = (uint32_t)(w & GT_STACK_ID_MAX);
		}
		if (!id)
			gt_lose(GT_NOTICE_STACKS_LOST);
	}
	t->busy = was_busy;
	errno = saved_errno;
	return id;
}
