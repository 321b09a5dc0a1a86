/* What every room of libgotrace.so uses: attributes, relaxed atomics, raw system calls and
 * async-signal-safe one-line warnings (interpose.c). */
#ifndef GT_BASE_H
#define GT_BASE_H

#include <errno.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/syscall.h>

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
/* Between a lock's release and the release hook's look for waiters after it: a waiter
 * registers, fences, then tries the lock (facts.c block_register), so the look must not pass
 * the release, or both miss each other.  x86-64's releases (glibc's and the hooks') are
 * locked instructions, full barriers already; aarch64's are release stores, which a later
 * load may pass. */
#if defined(__aarch64__)
#define gt_release_then_look() atomic_thread_fence(memory_order_seq_cst)
#else
#define gt_release_then_look() ((void)0)
#endif

/* ---- raw system calls: the tracer never goes through an interposable libc symbol ------ */

long gt_sys(long nr, long a, long b, long c, long d, long e, long f) GT_HIDDEN;
#define gt_sys0(n) gt_sys((n), 0, 0, 0, 0, 0, 0)
#define gt_sys1(n, a) gt_sys((n), (long)(a), 0, 0, 0, 0, 0)
#define gt_sys2(n, a, b) gt_sys((n), (long)(a), (long)(b), 0, 0, 0, 0)
#define gt_sys3(n, a, b, c) gt_sys((n), (long)(a), (long)(b), (long)(c), 0, 0, 0)
#define gt_sys4(n, a, b, c, d) gt_sys((n), (long)(a), (long)(b), (long)(c), (long)(d), 0, 0)

/* ---- the tracer's own locks ------------------------------------------------------------
 * A word holding 0 or its holder's tid, a priority-inheriting futex (futex(2), FUTEX_LOCK_PI):
 * a waiter sleeps and lends its priority to the holder, so a real-time thread never spins
 * while the thread it waits for is preempted on its CPU.  gt_lock: 1 taken, 0 when the
 * calling thread holds it already (a signal handler interrupted it). */
int gt_lock(_Atomic int *word) GT_HIDDEN;
void gt_unlock(_Atomic int *word) GT_HIDDEN;

/* ---- messages: no malloc, no stdio (they may run in a signal handler or at _exit) ----- */

/* One line on stderr through write(2), async-signal-safe ("gotrace: " prefix added). */
void gt_warn(const char *a, const char *b, const char *c) GT_HIDDEN;
/* gt_warn(a, b, ": <err as text><tail>") */
void gt_warn_err(const char *a, const char *b, int err, const char *tail) GT_HIDDEN;
size_t gt_fmt_u64(char *buf, uint64_t v) GT_HIDDEN;
/* "no space left on device", ..., else "errno N" written into buf (32 bytes) */
const char *gt_errno_text(int err, char *buf) GT_HIDDEN;
/* s appended to dst[at..cap), always NUL-terminated; returns the new length */
size_t gt_append(char *dst, size_t at, size_t cap, const char *s) GT_HIDDEN;

#endif
