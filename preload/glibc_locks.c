/* The check that glibc_locks.h's mutex and rwlock paths are the running glibc's: they are run
 * against glibc's own functions on objects of this file, and any difference leaves glibc
 * doing it all.  The semaphore's layout needs no check: a process-shared semaphore is shared with
 * processes of other glibc builds, so glibc keeps it as it is (since 2.21). */
#include "glibc_locks.h"

#include "hooks.def"
#include "modules.h"

#include <limits.h>
#include <gnu/libc-version.h>
#include <stdlib.h>
#include <string.h>

int gt_glibc_plain_kind = -1;
unsigned gt_glibc_rwlock_plain_flags = UINT_MAX;
uint64_t gt_glibc_post_below;
uint32_t gt_glibc_take_from = UINT32_MAX;
ptrdiff_t gt_glibc_tid_offset;
ptrdiff_t gt_glibc_cancel_offset;
uint32_t gt_glibc_cancel_slack = UINT32_MAX;

/* glibc's elision (glibc.elision.enable=1 in GLIBC_TUNABLES) marks a default mutex at its
 * first lock and takes it in a transaction: only glibc's own lock does that. */
static int elision_asked(void)
{
	const char *t = getenv("GLIBC_TUNABLES");
	return t && strstr(t, "elision.enable=1");
}

/* The word of glibc's thread descriptor (at the thread pointer) that holds tid: the only one
 * in its first KiB equal to it, else -1. */
static ptrdiff_t find_tid_offset(int tid)
{
	const int32_t *self = __builtin_thread_pointer();
	ptrdiff_t found = -1;
	for (ptrdiff_t i = 1; i < 256; i++) {
		if (self[i] != tid)
			continue;
		if (found >= 0)
			return -1;
		found = i * (ptrdiff_t)sizeof(int32_t);
	}
	return found;
}

static int mutex_is(const pthread_mutex_t *m, int lock, int owner, unsigned users)
{
	return m->__data.__lock == lock && m->__data.__owner == owner &&
	       m->__data.__nusers == users && m->__data.__count == 0 && m->__data.__kind == 0;
}

static int mutex_agrees(int tid)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	if (GT_REAL(pthread_mutex_lock)(&m) || !mutex_is(&m, 1, tid, 1))
		return 0;
	if (GT_REAL(pthread_mutex_unlock)(&m) || !mutex_is(&m, 0, 0, 0))
		return 0;
	/* ours then glibc's, glibc's then ours, and a busy one */
	if (gt_glibc_mutex_trylock(&m) || !mutex_is(&m, 1, tid, 1) ||
	    GT_REAL(pthread_mutex_trylock)(&m) != EBUSY || gt_glibc_mutex_trylock(&m) != EBUSY ||
	    GT_REAL(pthread_mutex_unlock)(&m) || !mutex_is(&m, 0, 0, 0))
		return 0;
	if (GT_REAL(pthread_mutex_lock)(&m) || !gt_glibc_mutex_unlock(&m) || !mutex_is(&m, 0, 0, 0))
		return 0;
	return 1;
}

/* Two rwlocks taken and released the same way, a by glibc's functions, b by the hooks' paths
 * where they take it (else by glibc's): every byte the same after each step. */
struct rwlock_pair {
	pthread_rwlock_t a, b;
};

static int same(const struct rwlock_pair *p)
{
	return !memcmp(&p->a, &p->b, sizeof p->a);
}

static int wrlock_both(struct rwlock_pair *p)
{
	return !GT_REAL(pthread_rwlock_wrlock)(&p->a) && gt_glibc_rwlock_wrtake(&p->b) && same(p);
}

static int rdlock_both(struct rwlock_pair *p)
{
	return !GT_REAL(pthread_rwlock_rdlock)(&p->a) && gt_glibc_rwlock_rdtake(&p->b) && same(p);
}

static int unlock_both(struct rwlock_pair *p)
{
	return !GT_REAL(pthread_rwlock_unlock)(&p->a) && gt_glibc_rwlock_release(&p->b) && same(p);
}

/* a lock held for writing: neither glibc's trylocks nor the paths take it */
static int both_refuse(struct rwlock_pair *p)
{
	return GT_REAL(pthread_rwlock_trywrlock)(&p->a) == EBUSY &&
	       GT_REAL(pthread_rwlock_tryrdlock)(&p->a) == EBUSY && !gt_glibc_rwlock_wrtake(&p->b) &&
	       !gt_glibc_rwlock_rdtake(&p->b) && same(p);
}

static int rwlock_agrees(void)
{
	struct rwlock_pair p = {PTHREAD_RWLOCK_INITIALIZER, PTHREAD_RWLOCK_INITIALIZER};
	int agree = /* a write phase from the idle read phase, then again in the write phase */
		wrlock_both(&p) && both_refuse(&p) && unlock_both(&p) && wrlock_both(&p) &&
		unlock_both(&p) &&
		/* glibc's read phase from the write phase, then two readers of it */
		!GT_REAL(pthread_rwlock_rdlock)(&p.a) && !gt_glibc_rwlock_rdtake(&p.b) &&
		!GT_REAL(pthread_rwlock_rdlock)(&p.b) && same(&p) && rdlock_both(&p) &&
		GT_REAL(pthread_rwlock_trywrlock)(&p.b) == EBUSY && !gt_glibc_rwlock_wrtake(&p.b) &&
		unlock_both(&p) && unlock_both(&p) &&
		/* a reader in the idle read phase; the write phase from it, released by glibc */
		rdlock_both(&p) && unlock_both(&p) && wrlock_both(&p) &&
		!GT_REAL(pthread_rwlock_unlock)(&p.a) && !GT_REAL(pthread_rwlock_unlock)(&p.b) && same(&p);
	return agree;
}

/* Whether fn is glibc's own: a library preloaded after this one that interposes it too (a
 * lock profiler, a test's window) is called as the original, so the hooks must not bypass it.
 * glibc's range is found once, by the loader's list of objects (dladdr would search the
 * symbols, about 80,000 instructions a call, at every process's start). */
static int from_libc(void *fn)
{
	static uintptr_t lo, hi;
	if (!hi)
		gt_module_range((uintptr_t)gnu_get_libc_version, &lo, &hi);
	return (uintptr_t)fn - lo < hi - lo;
}

/* glibc's pthread_testcancel (x86-64, 2.36: the 2.34 and 2.35 ones differ) starts
 *	mov %fs:0x10,%rdx		the thread's descriptor, at the thread pointer
 *	mov OFFSET(%rdx),%eax		its cancelhandling
 *	and $GT_CANCEL_MASK,%eax
 *	cmp $GT_CANCEL_ACTS,%eax
 *	je 1f				act on the cancellation
 *	ret
 * and sem_wait's test is turned on only if it does; any other code leaves it called every time. */
static void find_cancel_test(void)
{
#if defined(__x86_64__)
	static const uint8_t self[] = {0x64, 0x48, 0x8b, 0x14, 0x25, 0x10, 0, 0, 0};
	static const uint8_t endbr64[] = {0xf3, 0x0f, 0x1e, 0xfa};
	const uint8_t *c = (const uint8_t *)pthread_testcancel;
	if (!from_libc((void *)c))
		return;
	if (!memcmp(c, endbr64, sizeof endbr64))
		c += sizeof endbr64;
	if (memcmp(c, self, sizeof self) || c[9] != 0x8b || c[10] != 0x82 || c[15] != 0x83 ||
	    c[16] != 0xe0 || c[17] != GT_CANCEL_MASK || c[18] != 0x83 || c[19] != 0xf8 ||
	    c[20] != GT_CANCEL_ACTS || c[21] != 0x74 || c[22] != 1 || c[23] != 0xc3 ||
	    *(void *const __seg_fs *)0x10 != __builtin_thread_pointer())
		return;
	int32_t offset;
	memcpy(&offset, c + 11, sizeof offset);
	gt_glibc_cancel_offset = offset;
	__atomic_store_n(&gt_glibc_cancel_slack, 0, __ATOMIC_RELEASE); /* after the offset */
#endif
}

void gt_glibc_locks_check(void)
{
	if (gt_glibc_plain_kind == 0 || elision_asked())
		return;
	int tid = (int)gt_sys0(SYS_gettid);
	gt_glibc_tid_offset = find_tid_offset(tid);
	int tid_found = gt_glibc_tid_offset >= 0 && gt_glibc_tid() == tid;
	if (tid_found && from_libc((void *)GT_REAL(pthread_mutex_lock)) &&
	    from_libc((void *)GT_REAL(pthread_mutex_timedlock)) &&
	    from_libc((void *)GT_REAL(pthread_mutex_clocklock)) &&
	    from_libc((void *)GT_REAL_PRESET(pthread_mutex_trylock)) &&
	    from_libc((void *)GT_REAL_PRESET(pthread_mutex_unlock)))
		gt_glibc_plain_kind = mutex_agrees(tid) ? 0 : -1;
	if (tid_found && from_libc((void *)GT_REAL(pthread_rwlock_rdlock)) &&
	    from_libc((void *)GT_REAL(pthread_rwlock_wrlock)) &&
	    from_libc((void *)GT_REAL(pthread_rwlock_timedrdlock)) &&
	    from_libc((void *)GT_REAL(pthread_rwlock_timedwrlock)) &&
	    from_libc((void *)GT_REAL(pthread_rwlock_clockrdlock)) &&
	    from_libc((void *)GT_REAL(pthread_rwlock_clockwrlock)) &&
	    from_libc((void *)GT_REAL(pthread_rwlock_tryrdlock)) &&
	    from_libc((void *)GT_REAL(pthread_rwlock_trywrlock)) &&
	    from_libc((void *)GT_REAL(pthread_rwlock_unlock)))
		gt_glibc_rwlock_plain_flags = rwlock_agrees() ? 0 : UINT_MAX;
	if (from_libc((void *)GT_REAL(sem_post)) && from_libc((void *)GT_REAL(sem_wait)) &&
	    from_libc((void *)GT_REAL(sem_timedwait)) && from_libc((void *)GT_REAL(sem_clockwait)) &&
	    from_libc((void *)GT_REAL(sem_trywait))) {
		gt_glibc_post_below = SEM_VALUE_MAX;
		gt_glibc_take_from = 1;
	}
	find_cancel_test();
}
