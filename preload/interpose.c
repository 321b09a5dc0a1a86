/* The resolver of hooks.def, raw system calls and async-signal-safe logging. */
#include "base.h"
#include "hooks.def"

#include <string.h>

#define GT_DEFINE_REAL(ret, name, params, args, ver) ret (*real_##name) params;
#define GT_DEFINE_REAL_S(ret, name, params, args, nr, kind, arg) ret (*real_##name) params;
GT_HOOKS(GT_DEFINE_REAL)
GT_SYSCALL_HOOKS(GT_DEFINE_REAL_S)
GT_REALS(GT_DEFINE_REAL)

_Atomic int gt_resolved;

/* The two originals every uncontended lock + unlock calls start as stubs that resolve
 * everything, so GT_REAL_PRESET needs no NULL test (these definitions complete the
 * tentative ones above). */
static int resolve_then_trylock(pthread_mutex_t *m)
{
	gt_resolve_all();
	return real_pthread_mutex_trylock(m);
}

static int resolve_then_unlock(pthread_mutex_t *m)
{
	gt_resolve_all();
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

void gt_resolve_all(void)
{
	int expected = 0;
	if (gt_load(&gt_resolved) == 2)
		return;
	if (gt_resolving)
		return; /* dlsym re-entered a hook: it gets what is resolved so far (the locks
			 * first, below); the rest are still NULL */
	if (!atomic_compare_exchange_strong(&gt_resolved, &expected, 1)) {
		while (gt_load(&gt_resolved) != 2)
			gt_sys0(SYS_sched_yield);
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
