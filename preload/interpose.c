/* The resolver of hooks.def, raw system calls and async-signal-safe logging. */
#include "base.h"
#include "hooks.def"

#include <linux/futex.h>
#include <limits.h>
#include <string.h>

#define GT_DEFINE_REAL(ret, name, params, args, ver) ret (*real_##name) params;
#define GT_DEFINE_REAL_S(ret, name, params, args, nr, kind, arg) ret (*real_##name) params;
GT_HOOKS(GT_DEFINE_REAL)
GT_SYSCALL_HOOKS(GT_DEFINE_REAL_S)
GT_REALS(GT_DEFINE_REAL)

_Atomic int gt_resolved;

static void *lookup_alone(void **slot);

/* The two originals every uncontended lock + unlock calls start as stubs that resolve
 * everything, so GT_REAL_PRESET needs no NULL test (these definitions complete the
 * tentative ones above).  Re-entered from dlsym while resolving, a stub looks its own
 * original up alone. */
static int resolve_then_trylock(pthread_mutex_t *m)
{
	gt_resolve_all();
	if (real_pthread_mutex_trylock == resolve_then_trylock)
		return ((int (*)(pthread_mutex_t *))lookup_alone((void **)&real_pthread_mutex_trylock))(m);
	return real_pthread_mutex_trylock(m);
}

static int resolve_then_unlock(pthread_mutex_t *m)
{
	gt_resolve_all();
	if (real_pthread_mutex_unlock == resolve_then_unlock)
		return ((int (*)(pthread_mutex_t *))lookup_alone((void **)&real_pthread_mutex_unlock))(m);
	return real_pthread_mutex_unlock(m);
}

int (*real_pthread_mutex_trylock)(pthread_mutex_t *m) = resolve_then_trylock;
int (*real_pthread_mutex_unlock)(pthread_mutex_t *m) = resolve_then_unlock;

/* What a symbol this libc lacks resolves to: every hooked function reports failure through
 * its return value (-1/errno or an error number), so "-1, ENOSYS" is the honest answer. */
static long gt_enosys(void)
{
	errno = ENOSYS;
	return -1;
}

static void *gt_lookup(const char *name, const char *version)
{
	void *p = version ? dlvsym(RTLD_NEXT, name, version) : NULL;
	if (!p)
		p = dlsym(RTLD_NEXT, name);
	return p ? p : (void *)gt_enosys;
}

static __thread int gt_resolving __attribute__((tls_model("initial-exec")));

/* Every original by name, for the lookup of one alone when dlsym re-enters a hook. */
#define GT_ORIGINAL(ret, name, params, args, ver) {#name, ver, (void **)&real_##name},
#define GT_ORIGINAL_S(ret, name, params, args, nr, kind, arg) {#name, NULL, (void **)&real_##name},
static const struct {
	const char *name, *version;
	void **slot;
} gt_originals[] = {GT_HOOKS(GT_ORIGINAL) GT_SYSCALL_HOOKS(GT_ORIGINAL_S) GT_REALS(GT_ORIGINAL)};

/* One original looked up alone, for a hook that dlsym re-entered while this thread resolves
 * (an allocator or a dlsym wrapper calling a hooked function); a second re-entry gets the
 * ENOSYS stub rather than a call through NULL or a loop. */
static void *lookup_alone(void **slot)
{
	static __thread int depth __attribute__((tls_model("initial-exec")));
	if (depth > 1)
		return (void *)gt_enosys;
	for (size_t i = 0; i < sizeof gt_originals / sizeof gt_originals[0]; i++) {
		if (gt_originals[i].slot != slot)
			continue;
		depth++;
		void *p = gt_lookup(gt_originals[i].name, gt_originals[i].version);
		depth--;
		gt_store((_Atomic(void *) *)slot, p);
		return p;
	}
	return (void *)gt_enosys;
}

/* GT_REAL of an original still NULL: after gt_resolve_all, only under re-entry. */
void *gt_resolve_one(void **slot)
{
	gt_resolve_all();
	void *p = gt_load((_Atomic(void *) *)slot);
	return p ? p : lookup_alone(slot);
}

void gt_resolve_all(void)
{
	int expected = 0;
	if (gt_load(&gt_resolved) == 2)
		return;
	if (gt_resolving)
		return; /* dlsym re-entered a hook: gt_resolve_one finds what it needs */
	if (!atomic_compare_exchange_strong(&gt_resolved, &expected, 1)) {
		/* asleep, not spinning: the resolving thread may need this one's CPU */
		while (gt_load(&gt_resolved) != 2)
			gt_sys4(SYS_futex, &gt_resolved, FUTEX_WAIT_PRIVATE, 1, NULL);
		return;
	}
	gt_resolving = 1;
	/* Locks first: an allocator called by dlsym may take them. */
	real_pthread_mutex_lock = gt_lookup("pthread_mutex_lock", NULL);
	real_pthread_mutex_unlock = gt_lookup("pthread_mutex_unlock", NULL);
	real_pthread_mutex_trylock = gt_lookup("pthread_mutex_trylock", NULL);
#define GT_RESOLVE(ret, name, params, args, ver) \
	if (!real_##name) \
		real_##name = (ret(*) params)gt_lookup(#name, ver);
#define GT_RESOLVE_S(ret, name, params, args, nr, kind, arg) \
	if (!real_##name) \
		real_##name = (ret(*) params)gt_lookup(#name, NULL);
	GT_HOOKS(GT_RESOLVE)
	GT_SYSCALL_HOOKS(GT_RESOLVE_S)
	GT_REALS(GT_RESOLVE)
	gt_resolving = 0;
	atomic_store(&gt_resolved, 2);
	gt_sys3(SYS_futex, &gt_resolved, FUTEX_WAKE_PRIVATE, INT_MAX);
}

long gt_sys(long nr, long a, long b, long c, long d, long e, long f)
{
#if defined(__x86_64__)
	long ret;
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	__asm__ volatile("syscall"
			 : "=a"(ret)
			 : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8), "r"(r9)
			 : "rcx", "r11", "memory");
	return ret;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = nr;
	register long x0 __asm__("x0") = a;
	register long x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c;
	register long x3 __asm__("x3") = d;
	register long x4 __asm__("x4") = e;
	register long x5 __asm__("x5") = f;
	__asm__ volatile("svc 0"
			 : "+r"(x0)
			 : "r"(x8), "r"(x1), "r"(x2), "r"(x3), "r"(x4), "r"(x5)
			 : "memory");
	return x0;
#else
#error "gotrace supports x86-64 and aarch64"
#endif
}

int gt_lock(_Atomic int *word)
{
	int tid = (int)gt_sys0(SYS_gettid), expected = 0;
	while (!atomic_compare_exchange_strong_explicit(word, &expected, tid, memory_order_acquire,
							memory_order_relaxed)) {
		if ((expected & FUTEX_TID_MASK) == tid)
			return 0;
		long r = gt_sys4(SYS_futex, word, FUTEX_LOCK_PI_PRIVATE, 0, NULL);
		if (r == 0)
			return 1;
		if (r == -EDEADLK)
			return 0;
		/* a holder that is gone (it exited holding the word): taken over */
		if (r == -ESRCH && atomic_compare_exchange_strong(word, &expected, tid))
			return 1;
		expected = 0; /* EINTR, EAGAIN (the holder is exiting): try again */
	}
	return 1;
}

void gt_unlock(_Atomic int *word)
{
	int tid = (int)gt_sys0(SYS_gettid);
	if (!atomic_compare_exchange_strong_explicit(word, &tid, 0, memory_order_release,
						     memory_order_relaxed))
		gt_sys2(SYS_futex, word, FUTEX_UNLOCK_PI_PRIVATE); /* waiters: the kernel hands over */
}

size_t gt_fmt_u64(char *buf, uint64_t v)
{
	char tmp[24];
	size_t n = 0, i;
	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		buf[i] = tmp[n - 1 - i];
	return n;
}

const char *gt_errno_text(int err, char *buf)
{
	switch (err) {
	case ENOSPC: return "no space left on device";
	case EFBIG: return "file size limit exceeded";
	case EDQUOT: return "disk quota exceeded";
	case EACCES: return "permission denied";
	case EEXIST: return "file exists";
	case ENOENT: return "no such directory";
	case EROFS: return "read-only file system";
	case ENOMEM: return "out of memory";
	case EMFILE: return "too many open files";
	case ESTALE: return "its path names another file";
	default:
		memcpy(buf, "errno ", 6);
		buf[6 + gt_fmt_u64(buf + 6, (uint64_t)err)] = 0;
		return buf;
	}
}

size_t gt_append(char *dst, size_t at, size_t cap, const char *s)
{
	while (*s && at + 1 < cap)
		dst[at++] = *s++;
	dst[at] = 0;
	return at;
}

void gt_warn(const char *a, const char *b, const char *c)
{
	char line[512];
	size_t n = 0;
	const char *parts[4] = {"gotrace: ", a, b, c};
	for (int i = 0; i < 4; i++) {
		for (const char *p = parts[i]; p && *p && n < sizeof line - 1; p++)
			line[n++] = *p;
	}
	line[n++] = '\n';
	gt_sys3(SYS_write, 2, line, n);
}

void gt_warn_err(const char *a, const char *b, int err, const char *tail)
{
	char eb[32], c[160];
	size_t n = gt_append(c, 0, sizeof c, ": ");
	n = gt_append(c, n, sizeof c, gt_errno_text(err, eb));
	gt_append(c, n, sizeof c, tail);
	gt_warn(a, b, c);
}
