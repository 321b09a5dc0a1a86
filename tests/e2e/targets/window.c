/* libgt-window.so: preloaded after libgotrace.so (LD_PRELOAD="libgotrace.so libgt-window.so"),
 * it is what the hooks call as the real pthread_mutex_unlock and pthread_cond_wait.  A
 * program arms it with gt_window_arm(obj, before, after); the next call on obj runs before()
 * first, inside the hook's gap between its look for waiters and the real call, and after()
 * (when not NULL) right after the real call, before the hook's look after the release
 * (targets/order.c). */
#include <dlfcn.h>
#include <pthread.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <unistd.h>

static _Atomic(void *) armed_obj;
static void (*armed_before)(void), (*armed_after)(void);

__attribute__((visibility("default"))) void gt_window_arm(void *obj, void (*before)(void),
							   void (*after)(void))
{
	armed_before = before;
	armed_after = after;
	atomic_store(&armed_obj, obj);
}

/* The after() to run once the real call returns, or NULL. */
static void (*open_if_armed(void *obj))(void)
{
	void *want = obj;
	if (!atomic_compare_exchange_strong(&armed_obj, &want, NULL))
		return NULL;
	/* a raw write: the caller may be blocked already in the capture */
	static const char say[] = "gt-window: opened\n";
	syscall(SYS_write, 2, say, sizeof say - 1);
	armed_before();
	return armed_after;
}

__attribute__((visibility("default"))) int pthread_mutex_unlock(pthread_mutex_t *m)
{
	static int (*real)(pthread_mutex_t *);
	if (!real)
		real = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_unlock");
	void (*after)(void) = open_if_armed(m);
	int r = real(m);
	if (after)
		after();
	return r;
}

/* the version libgotrace.so looks up (dlvsym), as glibc's current one on x86-64; aarch64's
 * glibc has GLIBC_2.17 alone, so both fall back to the default version there (interpose.c) */
__attribute__((visibility("default"))) int gt_window_cond_wait(pthread_cond_t *c, pthread_mutex_t *m)
{
	static int (*real)(pthread_cond_t *, pthread_mutex_t *);
	if (!real)
		real = (int (*)(pthread_cond_t *, pthread_mutex_t *))dlvsym(RTLD_NEXT, "pthread_cond_wait",
									    "GLIBC_2.3.2");
	if (!real)
		real = (int (*)(pthread_cond_t *, pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_cond_wait");
	open_if_armed(c);
	return real(c, m);
}
__asm__(".symver gt_window_cond_wait, pthread_cond_wait@@GLIBC_2.3.2");
