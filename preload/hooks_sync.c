/* Synchronisation: mutexes, rwlocks, condition variables, semaphores, barriers, yield and
 * the sleep family.
 *
 * Acquisitions try first and record only when they would block (BLOCK_BEGIN, the real
 * blocking call, BLOCK_END), so every lock type keeps its exact semantics and return values:
 * the try returns what the lock would return whenever the lock would not block (0,
 * EOWNERDEAD, EAGAIN, EINVAL, ENOTRECOVERABLE), and EBUSY leads to the real lock.
 * Releases write a WAKE only when a hooked thread is blocked on that object: when nobody
 * waits, a load of a word per kind and bucket of objects (waiters.h) before the real call
 * and one after it.  A waiter takes its timestamp, then registers (the word counts it), then
 * (mutex, rwlock, semaphore) tries once more and records its block only if that fails; the
 * releaser looks for waiters before its release and after it, so a waiter that release let
 * in is seen, even one that has resumed since (GT_RELEASE_WAITED, release_raced). */
#include "facts.h"
#include "glibc_locks.h"
#include "hooks.def"
#include "shared_objs.h"
#include "stacks.h"

#define GT_OBJ(p) ((uint64_t)(uintptr_t)(p))

/* ---- mutexes released inside a condition wait --------------------------------------------
 * glibc releases the mutex inside the real pthread_cond_wait, after the hook has looked for
 * the mutex's waiters and stamped the condvar block: a mutex waiter that registers in
 * between is let in by a release that has no fact of its own.  The wait marks its mutex
 * under the owner's tid (glibc keeps it in __data.__owner; 0 with lock elision: no mark)
 * from before its look until the real call returns; a mutex waiter that, once registered,
 * finds its mutex held by a thread so marked flags its block GT_BLOCK_COND_HELD with that
 * thread's serial, and the encoder draws the condition wait's release as its waker (the
 * condvar block names the mutex).  Slots are per tid: only tids equal modulo the size share
 * one, and a wrong match only sets a flag that no condvar block answers. */
#define GT_COND_HOLDERS 1024u
static _Atomic uint64_t gt_cond_holding[GT_COND_HOLDERS];
static _Atomic uint32_t gt_cond_holder[GT_COND_HOLDERS];  /* the marking thread's serial */

static inline int mutex_owner(pthread_mutex_t *m)
{
	return __atomic_load_n(&m->__data.__owner, __ATOMIC_RELAXED);
}

/* The flags of a wait for m: GT_BLOCK_COND_HELD and its holder's serial when marked, else
 * its holder's tid (GT_BLOCK_HOLDER_TID; not when m is shared with other processes, whose
 * threads may hold it: glibc marks every robust mutex process-shared, so the memory, not the
 * flag, says whether it is). */
static uint32_t mutex_holder_flags(pthread_mutex_t *m, int shared)
{
	int owner = mutex_owner(m);
	unsigned h = (unsigned)owner % GT_COND_HOLDERS;
	if (owner <= 0)
		return 0;
	if (atomic_load_explicit(&gt_cond_holding[h], memory_order_acquire) == GT_OBJ(m)) {
		uint32_t held = gt_block_cond_held(gt_load(&gt_cond_holder[h]));
		if (held)
			return held;
	}
	return shared ? 0 : gt_block_holder_tid(owner);
}

/* The flags of a wait for rwlock l: its writer's tid when a writer holds it (readers are not
 * named anywhere in it). */
static uint32_t rwlock_holder_flags(pthread_rwlock_t *l)
{
	if (l->__data.__shared)
		return 0;
	return gt_block_holder_tid(__atomic_load_n(&l->__data.__cur_writer, __ATOMIC_RELAXED));
}

/* A process-shared object is named by its kernel identity (shared_objs.h), looked up only in
 * slow paths (a wait that blocks, a release that finds waiters): its waiters and releasers
 * may be in other processes, where its memory has another address. */
static uint64_t shared_obj(int pshared, const void *o)
{
	uint64_t k;
	return GT_UNLIKELY(pshared) && (k = gt_shared_obj(o)) ? k : GT_OBJ(o);
}

/* The release of a process-shared object: the waiter table sees this process's waiters only,
 * so the object's own count of sleepers is looked at, before and after the release (the
 * stamp between the first look and the release, as GT_RELEASE_WAITED). */
#define GT_RELEASE_SHARED(fn, real, type, kind, count, has_waiters) \
	static GT_NOINLINE int fn(type *o) \
	{ \
		struct gt_tls *t = gt_enter(); \
		if (!t) \
			return real(o); \
		int seen = has_waiters(o); \
		unsigned cpu; \
		uint64_t tsc = gt_now(&cpu); \
		int r = real(o); \
		if (seen || has_waiters(o)) { \
			int e = errno; \
			gt_fact_wake_at(t, kind, shared_obj(1, o), count, tsc, cpu); \
			errno = e; \
		} \
		return r; \
	}

/* ---- the time of the timed and clock waits ------------------------------------------------
 * glibc answers a clock it cannot wait on, or a time whose nanoseconds are out of range,
 * with EINVAL before it looks at the lock (a mutex: its clock only): such a call is glibc's
 * whole, so that a free lock is not taken.  The time is read where glibc reads it, so a bad
 * pointer faults as it would untraced. */
GT_INLINE int gt_clock_waitable(clockid_t c) { return c == CLOCK_REALTIME || c == CLOCK_MONOTONIC; }
GT_INLINE int gt_time_valid(const struct timespec *ts)
{
	return (unsigned long)ts->tv_nsec < 1000000000ul;
}
/* a time given (a rwlock's wait may have none): the pointer passes through an empty asm, as
 * glibc's headers declare it non-null and the compiler would drop the test */
GT_INLINE int gt_time_given(const struct timespec *ts)
{
	uintptr_t p = (uintptr_t)ts;
	__asm__("" : "+r"(p));
	return p != 0;
}

/* ---- mutexes ---------------------------------------------------------------------------- */

/* --locks=all: a lock call's result r took mutex m (robust: EOWNERDEAD too), a fact.  Lock
 * records name a mutex by its address, even a process-shared one (glibc marks every robust
 * mutex so): a hold is its thread's, in its process, and the kernel identity of shared
 * memory costs a read of /proc/self/maps (tens of microseconds) that no lock may pay. */
static void mutex_acquired(struct gt_tls *t, pthread_mutex_t *m, int r, uint32_t flags)
{
	if (r == 0 || r == EOWNERDEAD)
		gt_fact_lock_acquire(t, GT_BK_MUTEX, GT_OBJ(m), flags | (r ? GT_LOCK_OWNERDEAD : 0));
}

/* --locks=all: the try-locks' acquisitions, flagged (a try never waits: no lock order). */
static GT_NOINLINE int mutex_trylock_recorded(pthread_mutex_t *m)
{
	struct gt_tls *t = gt_enter();
	int r = GT_REAL_PRESET(pthread_mutex_trylock)(m);
	if (t)
		mutex_acquired(t, m, r, GT_LOCK_TRY);
	return r;
}

GT_EXPORT GT_FRAMELESS int pthread_mutex_trylock(pthread_mutex_t *m)
{
	if (GT_UNLIKELY(gt_lock_records))
		return mutex_trylock_recorded(m);
	return GT_REAL_PRESET(pthread_mutex_trylock)(m);
}

/* The uncontended lock is the try and nothing else (glibc's own, done here for a default
 * mutex: glibc_locks.h); everything that records is in a
 * noinline function the hook tail-calls, so the hook builds no frame and its caller's
 * return address is the recording function's (frame-pointer stacks stay whole).
 * Contended: timestamp, registration, then one more try: an unlock that let this thread in
 * came after that failed try, so its look after the release sees the registration (a
 * holder that released in between is not anybody's waker: no block); a holder inside a
 * condition wait releases it there, unseen: the block says so. */
#define GT_MUTEX_HOOK(name, first, params, args) \
	static GT_NOINLINE int name##_contended params \
	{ \
		struct gt_tls *t = gt_enter(); \
		if (!t) \
			return GT_REAL(name) args; \
		int pshared = gt_mutex_pshared(m); \
		uint64_t obj = shared_obj(pshared, m); \
		struct gt_block b; \
		gt_fact_block_prepare(t, GT_BK_MUTEX, obj, 1, &b); \
		int r = GT_REAL_PRESET(pthread_mutex_trylock)(m); \
		if (r != EBUSY) { \
			gt_fact_block_cancel(t, GT_BK_MUTEX, obj); \
			if (GT_UNLIKELY(gt_lock_records)) \
				mutex_acquired(t, m, r, 0); \
			return r; \
		} \
		b.flags = mutex_holder_flags(m, obj != GT_OBJ(m)); \
		gt_fact_block_commit(t, GT_BK_MUTEX, obj, &b); \
		r = GT_REAL(name) args; \
		gt_fact_block_end(t, GT_BK_MUTEX, obj, r); \
		if (GT_UNLIKELY(gt_lock_records)) \
			mutex_acquired(t, m, r, GT_LOCK_WAITED); \
		return r; \
	} \
	/* --locks=all: the try, then the acquisition's fact (contended: the wait's path) */ \
	static GT_NOINLINE int name##_recorded params \
	{ \
		struct gt_tls *t = gt_enter(); \
		if (!t) \
			return GT_REAL(name) args; \
		int r = GT_REAL_PRESET(pthread_mutex_trylock)(m); \
		if (r == EBUSY) \
			return name##_contended args; \
		mutex_acquired(t, m, r, 0); \
		return r; \
	} \
	GT_EXPORT GT_FRAMELESS int name params \
	{ \
		first; \
		if (GT_UNLIKELY(gt_lock_records)) \
			return name##_recorded args; \
		int r = gt_glibc_mutex_plain(m) ? gt_glibc_mutex_trylock(m) \
						: GT_REAL_PRESET(pthread_mutex_trylock)(m); \
		if (GT_LIKELY(r != EBUSY)) \
			return r; \
		return name##_contended args; \
	}

GT_MUTEX_HOOK(pthread_mutex_lock, (void)0, (pthread_mutex_t *m), (m))
GT_MUTEX_HOOK(pthread_mutex_timedlock, (void)0, (pthread_mutex_t *m, const struct timespec *ts),
	      (m, ts))
GT_MUTEX_HOOK(pthread_mutex_clocklock,
	      if (GT_UNLIKELY(!gt_clock_waitable(c))) return GT_REAL(pthread_mutex_clocklock)(m, c, ts),
	      (pthread_mutex_t *m, clockid_t c, const struct timespec *ts), (m, c, ts))

/* Registrations on obj since its release loaded `before` (for rwlocks both words, packed:
 * the readers' registration count in the high half, the writers' in the low half). */
static uint64_t registered_since(uint8_t kind, uint64_t obj, uint64_t before, uint64_t now)
{
	if (kind != GT_BK_RWLOCK_WR)
		return gt_waiters_registered_since(obj, kind, before, now);
	uint64_t rd = gt_waiters_registered_since(obj, GT_BK_RWLOCK_RD, before, now);
	uint64_t wr = gt_waiters_registered_since(obj, GT_BK_RWLOCK_WR, before << 32, now);
	return rd > wr ? rd : wr;
}

/* A release that saw no waiter on its object at its look, but whose bucket's word changed by
 * its look after the release: a waiter registered in between, and its failed retry came
 * before this release, which may be what let it in (it may have resumed and gone since).  A
 * timestamp before the release would cost every uncontended release an rdtsc, and one taken
 * now may follow the waiter's resume: the wake takes the time the waiter registered at. */
static GT_NOINLINE int release_raced(uint8_t kind, uint64_t obj, uint32_t count, int r, uint64_t before)
{
	struct gt_tls *t = gt_enter();
	if (!t)
		return r;
	unsigned cpu;
	uint64_t now = gt_now(&cpu);
	uint64_t at = registered_since(kind, obj, before, now);
	if (at || gt_waiters_has(obj)) {
		int e = errno;
		/* the waiter's time is another CPU's clock: skewed (by 39 ticks, seen), it
		 * could precede this thread's own fact just before the release */
		if (at && at < t->last_tsc)
			at = t->last_tsc;
		gt_fact_wake_at(t, kind, obj, count, at && at < now ? at : now, cpu);
		errno = e;
	}
	return r;
}

/* A release when threads of its kind are blocked on objects of its bucket.  A waiter on its
 * own object, seen before the real call, is still blocked (it can leave only through a
 * release): the wake is stamped between the look and the release, written after it (errno
 * kept).  Without one, the release goes on as an uncontended one: a waiter shows in the table
 * before its bucket counts it (block_register), so those counted are on other objects, and
 * one that registers on this object after the look changes the word (release_raced). */
#define GT_RELEASE_WAITED(fn, real, type, kind, count) \
	static GT_NOINLINE int fn(type *o, _Atomic uint64_t *word, uint64_t before) \
	{ \
		struct gt_tls *t; \
		if (!gt_waiters_has(GT_OBJ(o)) || !(t = gt_enter())) { \
			int r = real(o); \
			gt_release_then_look(); \
			if (gt_load(word) != before) \
				return release_raced(kind, GT_OBJ(o), count, r, before); \
			return r; \
		} \
		unsigned cpu; \
		uint64_t tsc = gt_now(&cpu); \
		int r = real(o); \
		int e = errno; \
		gt_fact_wake_at(t, kind, GT_OBJ(o), count, tsc, cpu); \
		errno = e; \
		return r; \
	}

/* The release hooks: the word of the object's bucket loaded before the real call (blocked
 * threads: the waited path) and after it (changed: the raced path), both reached by tail
 * calls, so the recording function returns to the hook's caller.  released(o): glibc's
 * uncontended release done here (glibc_locks.h), else 0 and the real call does it. */
#define GT_RELEASE_HOOK(name, real, type, kind, count, waited, shared_release, shared, released, \
			first) \
	static GT_NOINLINE int name##_real(type *o, _Atomic uint64_t *word, uint64_t before) \
	{ \
		int r = real(o); \
		gt_release_then_look(); \
		if (GT_UNLIKELY(gt_load(word) != before)) \
			return release_raced(kind, GT_OBJ(o), count, r, before); \
		return r; \
	} \
	GT_INLINE int name##_body(type *o); \
	GT_EXPORT GT_FRAMELESS int name(type *o) \
	{ \
		first; \
		return name##_body(o); \
	} \
	GT_INLINE int name##_body(type *o) \
	{ \
		if (GT_UNLIKELY(shared_release(o))) \
			return shared(o); \
		_Atomic uint64_t *word = gt_blocked_word(kind, GT_OBJ(o)); \
		/* acquire: the waiters the word counts are in the table (block_register) */ \
		uint64_t before = atomic_load_explicit(word, memory_order_acquire); \
		if (GT_UNLIKELY((uint32_t)before)) \
			return waited(o, word, before); \
		if (!released(o)) \
			return name##_real(o, word, before); \
		gt_release_then_look(); \
		if (GT_UNLIKELY(gt_load(word) != before)) \
			return release_raced(kind, GT_OBJ(o), count, 0, before); \
		return 0; \
	}

GT_RELEASE_WAITED(mutex_unlock_waited, GT_REAL_PRESET(pthread_mutex_unlock), pthread_mutex_t, GT_BK_MUTEX, 1)
GT_RELEASE_SHARED(mutex_unlock_shared, GT_REAL_PRESET(pthread_mutex_unlock), pthread_mutex_t, GT_BK_MUTEX, 1,
		  gt_mutex_has_waiters)

/* A mutex whose lock word says a thread sleeps on it: its release wakes one.  A process-shared
 * one is looked at as above; a private one's sleeper may be a hooked waiter, named by a wake
 * as the waited path names it, or a thread no hook saw block (a condition waiter taking its
 * mutex back inside glibc, after its signal), named by a GT_WAKE_UNSEEN wake: the kernel's
 * records show that sleep.  Stamped before the release too (after it, a sleeper woken on
 * this CPU would run before the stamp).  glibc leaves the word contended after a sleeper
 * took the mutex: its next release writes one too, which wakes nobody. */
static GT_NOINLINE int mutex_unlock_contended(pthread_mutex_t *m)
{
	if (gt_mutex_pshared(m))
		return mutex_unlock_shared(m);
	struct gt_tls *t = gt_enter();
	if (!t)
		return GT_REAL_PRESET(pthread_mutex_unlock)(m);
	uint64_t before = gt_load(gt_blocked_word(GT_BK_MUTEX, GT_OBJ(m)));
	int seen = (uint32_t)before && gt_waiters_has(GT_OBJ(m));
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	int r = GT_REAL_PRESET(pthread_mutex_unlock)(m);
	int e = errno;
	if (seen || gt_waiters_has(GT_OBJ(m)) || registered_since(GT_BK_MUTEX, GT_OBJ(m), before, tsc))
		gt_fact_wake_at(t, GT_BK_MUTEX, GT_OBJ(m), 1, tsc, cpu);
	else if (r == 0)   /* not an error-checking mutex's refusal: it woke its sleeper */
		gt_fact_wake_at(t, GT_BK_MUTEX, GT_OBJ(m), GT_WAKE_UNSEEN, tsc, cpu);
	errno = e;
	return r;
}

/* a default mutex nobody sleeps on (gt_mutex_has_waiters said so): released as glibc does */
GT_INLINE int mutex_released(pthread_mutex_t *m)
{
	return gt_glibc_mutex_plain(m) && gt_glibc_mutex_unlock(m);
}

static GT_NOINLINE int mutex_unlock_recorded(pthread_mutex_t *m);
GT_RELEASE_HOOK(pthread_mutex_unlock, GT_REAL_PRESET(pthread_mutex_unlock), pthread_mutex_t, GT_BK_MUTEX, 1,
		mutex_unlock_waited, gt_mutex_has_waiters, mutex_unlock_contended, mutex_released,
		if (GT_UNLIKELY(gt_lock_records)) return mutex_unlock_recorded(o))

/* --locks=all: the release's fact, stamped before it, written once it succeeded (by address,
 * as mutex_acquired says) */
static GT_NOINLINE int mutex_unlock_recorded(pthread_mutex_t *m)
{
	struct gt_tls *t = gt_enter();
	if (!t)
		return pthread_mutex_unlock_body(m);
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	int r = pthread_mutex_unlock_body(m);
	if (r == 0)
		gt_fact_lock_release_at(t, GT_BK_MUTEX, GT_OBJ(m), tsc, cpu);
	return r;
}

/* ---- rwlocks ---------------------------------------------------------------------------- */

/* As the mutex: the uncontended lock is the try (glibc's own, done here for a default lock in
 * the simple states: glibc_locks.h; else glibc's try), everything that records in a noinline
 * function the hook tail-calls.  Contended: timestamp, registration, one more try. */
#define GT_RWLOCK_HOOK(name, try, taken, kind, first, params, args) \
	static GT_NOINLINE int name##_contended params \
	{ \
		struct gt_tls *t = gt_enter(); \
		if (!t) \
			return GT_REAL(name) args; \
		struct gt_block b; \
		gt_fact_block_prepare(t, kind, GT_OBJ(l), 1, &b); \
		int r = GT_REAL(try)(l); \
		if (r != EBUSY) { \
			gt_fact_block_cancel(t, kind, GT_OBJ(l)); \
			if (GT_UNLIKELY(gt_lock_records) && r == 0) \
				gt_fact_lock_acquire(t, kind, GT_OBJ(l), 0); \
			return r; \
		} \
		b.flags = rwlock_holder_flags(l); \
		gt_fact_block_commit(t, kind, GT_OBJ(l), &b); \
		r = GT_REAL(name) args; \
		gt_fact_block_end(t, kind, GT_OBJ(l), r); \
		if (GT_UNLIKELY(gt_lock_records) && r == 0) \
			gt_fact_lock_acquire(t, kind, GT_OBJ(l), GT_LOCK_WAITED); \
		return r; \
	} \
	static GT_NOINLINE int name##_recorded params \
	{ \
		struct gt_tls *t = gt_enter(); \
		if (!t) \
			return GT_REAL(name) args; \
		int r = GT_REAL(try)(l); \
		if (r == EBUSY) \
			return name##_contended args; \
		if (r == 0) \
			gt_fact_lock_acquire(t, kind, GT_OBJ(l), 0); \
		return r; \
	} \
	GT_EXPORT GT_FRAMELESS int name params \
	{ \
		first; \
		if (GT_UNLIKELY(gt_lock_records)) \
			return name##_recorded args; \
		if (GT_LIKELY(gt_glibc_rwlock_plain(l) && taken(l))) \
			return 0; \
		int r = GT_REAL(try)(l); \
		if (GT_LIKELY(r != EBUSY)) \
			return r; \
		return name##_contended args; \
	}

/* the timed and clock locks: a bad time or clock is glibc's to answer (no time: no wait's end) */
#define GT_RWLOCK_TIMED(name, args) \
	if (GT_UNLIKELY(gt_time_given(ts) && !gt_time_valid(ts))) \
		return GT_REAL(name) args
#define GT_RWLOCK_CLOCK(name, args) \
	if (GT_UNLIKELY(gt_time_given(ts) && (!gt_clock_waitable(c) || !gt_time_valid(ts)))) \
		return GT_REAL(name) args

GT_RWLOCK_HOOK(pthread_rwlock_rdlock, pthread_rwlock_tryrdlock, gt_glibc_rwlock_rdtake, GT_BK_RWLOCK_RD,
	       (void)0, (pthread_rwlock_t *l), (l))
GT_RWLOCK_HOOK(pthread_rwlock_wrlock, pthread_rwlock_trywrlock, gt_glibc_rwlock_wrtake, GT_BK_RWLOCK_WR,
	       (void)0, (pthread_rwlock_t *l), (l))
GT_RWLOCK_HOOK(pthread_rwlock_timedrdlock, pthread_rwlock_tryrdlock, gt_glibc_rwlock_rdtake,
	       GT_BK_RWLOCK_RD, GT_RWLOCK_TIMED(pthread_rwlock_timedrdlock, (l, ts)),
	       (pthread_rwlock_t *l, const struct timespec *ts), (l, ts))
GT_RWLOCK_HOOK(pthread_rwlock_timedwrlock, pthread_rwlock_trywrlock, gt_glibc_rwlock_wrtake,
	       GT_BK_RWLOCK_WR, GT_RWLOCK_TIMED(pthread_rwlock_timedwrlock, (l, ts)),
	       (pthread_rwlock_t *l, const struct timespec *ts), (l, ts))
GT_RWLOCK_HOOK(pthread_rwlock_clockrdlock, pthread_rwlock_tryrdlock, gt_glibc_rwlock_rdtake,
	       GT_BK_RWLOCK_RD, GT_RWLOCK_CLOCK(pthread_rwlock_clockrdlock, (l, c, ts)),
	       (pthread_rwlock_t *l, clockid_t c, const struct timespec *ts), (l, c, ts))
GT_RWLOCK_HOOK(pthread_rwlock_clockwrlock, pthread_rwlock_trywrlock, gt_glibc_rwlock_wrtake,
	       GT_BK_RWLOCK_WR, GT_RWLOCK_CLOCK(pthread_rwlock_clockwrlock, (l, c, ts)),
	       (pthread_rwlock_t *l, clockid_t c, const struct timespec *ts), (l, c, ts))

/* Readers and writers wait on the same object: one wake covers both kinds, and both words
 * are looked at before and after the release (for release_raced, both registration counts
 * packed in one word).  A waiter seen before the real call: as GT_RELEASE_WAITED. */
static inline int rwlock_words_changed(pthread_rwlock_t *l, uint64_t rd, uint64_t wr)
{
	gt_release_then_look();
	return gt_load(gt_blocked_word(GT_BK_RWLOCK_RD, GT_OBJ(l))) != rd ||
	       gt_load(gt_blocked_word(GT_BK_RWLOCK_WR, GT_OBJ(l))) != wr;
}

static GT_NOINLINE int rwlock_unlock_raced(pthread_rwlock_t *l, int r, uint64_t rd, uint64_t wr)
{
	return release_raced(GT_BK_RWLOCK_WR, GT_OBJ(l), GT_WAKE_ALL, r, (rd & ~0xffffffffull) | wr >> 32);
}

static GT_NOINLINE int rwlock_unlock_real(pthread_rwlock_t *l, uint64_t rd, uint64_t wr)
{
	int r = GT_REAL(pthread_rwlock_unlock)(l);
	if (GT_UNLIKELY(rwlock_words_changed(l, rd, wr)))
		return rwlock_unlock_raced(l, r, rd, wr);
	return r;
}

static GT_NOINLINE int rwlock_unlock_waited(pthread_rwlock_t *l, uint64_t rd, uint64_t wr)
{
	struct gt_tls *t;
	if (!gt_waiters_has(GT_OBJ(l)) || !(t = gt_enter()))
		return rwlock_unlock_real(l, rd, wr);
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	int r = GT_REAL(pthread_rwlock_unlock)(l);
	int e = errno;
	gt_fact_wake_at(t, GT_BK_RWLOCK_WR, GT_OBJ(l), GT_WAKE_ALL, tsc, cpu);
	errno = e;
	return r;
}

/* The release: glibc's own for a default lock in the simple cases (glibc_locks.h), between
 * the two looks at the words, as GT_RELEASE_HOOK. */
GT_INLINE int rwlock_unlock_body(pthread_rwlock_t *l)
{
	_Atomic uint64_t *rd_word = gt_blocked_word(GT_BK_RWLOCK_RD, GT_OBJ(l));
	_Atomic uint64_t *wr_word = gt_blocked_word(GT_BK_RWLOCK_WR, GT_OBJ(l));
	uint64_t rd = atomic_load_explicit(rd_word, memory_order_acquire);
	uint64_t wr = atomic_load_explicit(wr_word, memory_order_acquire);
	if (GT_UNLIKELY((uint32_t)rd | (uint32_t)wr))
		return rwlock_unlock_waited(l, rd, wr);
	if (!gt_glibc_rwlock_plain(l) || !gt_glibc_rwlock_release(l))
		return rwlock_unlock_real(l, rd, wr);
	if (GT_UNLIKELY(rwlock_words_changed(l, rd, wr)))
		return rwlock_unlock_raced(l, 0, rd, wr);
	return 0;
}

/* --locks=all: as the mutex's (a rwlock's release says no mode: its holder knows) */
static GT_NOINLINE int rwlock_unlock_recorded(pthread_rwlock_t *l)
{
	struct gt_tls *t = gt_enter();
	if (!t)
		return rwlock_unlock_body(l);
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	int r = rwlock_unlock_body(l);
	if (r == 0)
		gt_fact_lock_release_at(t, GT_BK_RWLOCK_WR, GT_OBJ(l), tsc, cpu);
	return r;
}

GT_EXPORT GT_FRAMELESS int pthread_rwlock_unlock(pthread_rwlock_t *l)
{
	if (GT_UNLIKELY(gt_lock_records))
		return rwlock_unlock_recorded(l);
	return rwlock_unlock_body(l);
}

/* --locks=all: the try-locks' acquisitions, flagged */
#define GT_RWLOCK_TRY_HOOK(name, kind) \
	static GT_NOINLINE int name##_recorded(pthread_rwlock_t *l) \
	{ \
		struct gt_tls *t = gt_enter(); \
		int r = GT_REAL(name)(l); \
		if (t && r == 0) \
			gt_fact_lock_acquire(t, kind, GT_OBJ(l), GT_LOCK_TRY); \
		return r; \
	} \
	GT_EXPORT GT_FRAMELESS int name(pthread_rwlock_t *l) \
	{ \
		if (GT_UNLIKELY(gt_lock_records)) \
			return name##_recorded(l); \
		return GT_REAL(name)(l); \
	}

GT_RWLOCK_TRY_HOOK(pthread_rwlock_tryrdlock, GT_BK_RWLOCK_RD)
GT_RWLOCK_TRY_HOOK(pthread_rwlock_trywrlock, GT_BK_RWLOCK_WR)

/* ---- condition variables ---------------------------------------------------------------
 * A wait always blocks.  It also releases the mutex, which may wake a mutex waiter. */

/* --locks=all: a condition wait releases its mutex (a fact before the wait's) */
static void cond_releases(struct gt_tls *t, uint64_t mutex)
{
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	gt_fact_lock_release_at(t, GT_BK_MUTEX, mutex, tsc, cpu);
}

#define GT_COND_WAIT_HOOK(name, params, args) \
	GT_EXPORT int name params \
	{ \
		struct gt_tls *t = gt_enter(); \
		if (!t) \
			return GT_REAL(name) args; \
		uint64_t obj = shared_obj(gt_cond_pshared(c), c); \
		int owner = mutex_owner(m); \
		_Atomic uint64_t *mark = owner > 0 ? &gt_cond_holding[(unsigned)owner % GT_COND_HOLDERS] : NULL; \
		if (mark) { /* seq_cst: before the look for the mutex's waiters */ \
			gt_store(&gt_cond_holder[(unsigned)owner % GT_COND_HOLDERS], t->serial); \
			atomic_store(mark, GT_OBJ(m)); \
		} \
		uint64_t mutex = shared_obj(gt_mutex_pshared(m), m); \
		if (GT_UNLIKELY(gt_lock_records)) \
			cond_releases(t, GT_OBJ(m)); \
		gt_fact_cond_wait_begin(t, obj, mutex); \
		int r = GT_REAL(name) args; \
		uint64_t marked = GT_OBJ(m); \
		if (mark) \
			atomic_compare_exchange_strong(mark, &marked, 0); \
		gt_fact_block_end(t, GT_BK_COND, obj, r); \
		/* the mutex is taken back whatever the wait's end, but for a refused call */ \
		if (GT_UNLIKELY(gt_lock_records) && r != EPERM && r != EINVAL) \
			gt_fact_lock_acquire(t, GT_BK_MUTEX, GT_OBJ(m), GT_LOCK_COND | \
					     (r == EOWNERDEAD ? GT_LOCK_OWNERDEAD : 0)); \
		return r; \
	}

GT_COND_WAIT_HOOK(pthread_cond_wait, (pthread_cond_t *c, pthread_mutex_t *m), (c, m))
GT_COND_WAIT_HOOK(pthread_cond_timedwait, (pthread_cond_t *c, pthread_mutex_t *m, const struct timespec *ts),
		  (c, m, ts))
GT_COND_WAIT_HOOK(pthread_cond_clockwait,
		  (pthread_cond_t *c, pthread_mutex_t *m, clockid_t k, const struct timespec *ts), (c, m, k, ts))

GT_RELEASE_WAITED(cond_signal_waited, GT_REAL(pthread_cond_signal), pthread_cond_t, GT_BK_COND, 1)
GT_RELEASE_WAITED(cond_broadcast_waited, GT_REAL(pthread_cond_broadcast), pthread_cond_t, GT_BK_COND,
		  GT_WAKE_ALL)

GT_RELEASE_SHARED(cond_signal_shared, GT_REAL(pthread_cond_signal), pthread_cond_t, GT_BK_COND, 1,
		  gt_cond_has_waiters)
GT_RELEASE_SHARED(cond_broadcast_shared, GT_REAL(pthread_cond_broadcast), pthread_cond_t, GT_BK_COND,
		  GT_WAKE_ALL, gt_cond_has_waiters)

/* a condvar's release is glibc's alone */
GT_INLINE int cond_released(pthread_cond_t *c)
{
	(void)c;
	return 0;
}

GT_RELEASE_HOOK(pthread_cond_signal, GT_REAL(pthread_cond_signal), pthread_cond_t, GT_BK_COND, 1,
		cond_signal_waited, gt_cond_pshared, cond_signal_shared, cond_released, (void)0)
GT_RELEASE_HOOK(pthread_cond_broadcast, GT_REAL(pthread_cond_broadcast), pthread_cond_t, GT_BK_COND,
		GT_WAKE_ALL, cond_broadcast_waited, gt_cond_pshared, cond_broadcast_shared, cond_released,
		(void)0)

/* ---- semaphores: -1/errno convention; the try's EAGAIN must not leak into errno ------ */

#define GT_SEM_HOOK(name, first, params, args) \
	static GT_NOINLINE int name##_general params \
	{ \
		struct gt_tls *t = gt_enter(); \
		if (!t) \
			return GT_REAL(name) args; \
		int saved = errno; \
		int r = GT_REAL(sem_trywait)(s); \
		if (r == 0 || errno != EAGAIN) \
			return r; \
		uint64_t obj = shared_obj(gt_sem_pshared(s), s); \
		struct gt_block b; \
		gt_fact_block_prepare(t, GT_BK_SEM, obj, 1, &b); \
		if (GT_REAL(sem_trywait)(s) == 0) { \
			gt_fact_block_cancel(t, GT_BK_SEM, obj); \
			errno = saved; \
			return 0; \
		} \
		errno = saved; \
		gt_fact_block_commit(t, GT_BK_SEM, obj, &b); \
		r = GT_REAL(name) args; \
		int e = errno; \
		gt_fact_block_end(t, GT_BK_SEM, obj, r ? e : 0); \
		errno = e; \
		return r; \
	} \
	/* a pending cancellation may act: glibc's test first, in a function of its own so \
	 * that the hook builds no frame */ \
	static GT_NOINLINE __attribute__((unused)) int name##_cancellable params \
	{ \
		pthread_testcancel(); \
		if (gt_glibc_sem_take(s)) \
			return 0; \
		return name##_general args; \
	} \
	GT_EXPORT GT_FRAMELESS int name params \
	{ \
		first; \
		if (gt_glibc_sem_take(s)) \
			return 0; \
		return name##_general args; \
	}

/* sem_wait and sem_timedwait are cancellation points even when they do not block, as
 * glibc's test first (its test done in the hook: glibc_locks.h); sem_timedwait and
 * sem_clockwait first answer a bad time or clock (sem_clockwait is not one) */
GT_SEM_HOOK(sem_wait, if (GT_UNLIKELY(gt_glibc_cancel_may_act())) return sem_wait_cancellable(s),
	    (sem_t *s), (s))
GT_SEM_HOOK(sem_timedwait,
	    if (GT_UNLIKELY(!gt_time_valid(ts))) return GT_REAL(sem_timedwait)(s, ts);
	    if (GT_UNLIKELY(gt_glibc_cancel_may_act())) return sem_timedwait_cancellable(s, ts),
	    (sem_t *s, const struct timespec *ts), (s, ts))
GT_SEM_HOOK(sem_clockwait,
	    if (GT_UNLIKELY(!gt_clock_waitable(c) || !gt_time_valid(ts)))
		    return GT_REAL(sem_clockwait)(s, c, ts),
	    (sem_t *s, clockid_t c, const struct timespec *ts), (s, c, ts))

GT_RELEASE_WAITED(sem_post_waited, GT_REAL(sem_post), sem_t, GT_BK_SEM, 1)

GT_RELEASE_SHARED(sem_post_shared, GT_REAL(sem_post), sem_t, GT_BK_SEM, 1, gt_sem_has_waiters)

/* a process-shared semaphore (the bucket's word is not its), or threads blocked in the bucket */
static GT_NOINLINE int sem_post_looked(sem_t *s, uint64_t before)
{
	if (gt_sem_pshared(s))
		return sem_post_shared(s);
	return sem_post_waited(s, gt_blocked_word(GT_BK_SEM, GT_OBJ(s)), before);
}

static GT_NOINLINE int sem_post_real(sem_t *s, uint64_t before)
{
	int r = GT_REAL(sem_post)(s);
	gt_release_then_look();
	if (GT_UNLIKELY(gt_load(gt_blocked_word(GT_BK_SEM, GT_OBJ(s))) != before))
		return release_raced(GT_BK_SEM, GT_OBJ(s), 1, r, before);
	return r;
}

/* As GT_RELEASE_HOOK, but one test says both "process-shared" and "threads blocked in the
 * bucket" (2 of the pair's instructions, 48 for a budget of 49); a private semaphore nobody
 * sleeps on is posted as glibc does. */
GT_EXPORT GT_FRAMELESS int sem_post(sem_t *s)
{
	_Atomic uint64_t *word = gt_blocked_word(GT_BK_SEM, GT_OBJ(s));
	/* acquire: the waiters the word counts are in the table (block_register) */
	uint64_t before = atomic_load_explicit(word, memory_order_acquire);
	if (GT_UNLIKELY((uint32_t)before | (uint32_t)((struct gt_glibc_sem *)s)->private_))
		return sem_post_looked(s, before);
	if (!gt_glibc_sem_post(s))
		return sem_post_real(s, before);
	gt_release_then_look();
	if (GT_UNLIKELY(gt_load(word) != before))
		return release_raced(GT_BK_SEM, GT_OBJ(s), 1, 0, before);
	return 0;
}

/* ---- barriers ----------------------------------------------------------------------------
 * Every arriver but the last blocks; the last (glibc returns PTHREAD_BARRIER_SERIAL_THREAD
 * to the thread that completes the round) releases the others.  Which one is last is known
 * only afterwards, so the serial thread's block is closed at the instant it called and its
 * wake is stamped one tick later: both precede the others' resumption. */
GT_EXPORT int pthread_barrier_wait(pthread_barrier_t *b)
{
	struct gt_tls *t = gt_enter();
	if (!t)
		return GT_REAL(pthread_barrier_wait)(b);
	gt_fact_block_begin(t, GT_BK_BARRIER, GT_OBJ(b), 1);
	unsigned cpu;
	uint64_t called = gt_now(&cpu);
	int r = GT_REAL(pthread_barrier_wait)(b);
	if (r == PTHREAD_BARRIER_SERIAL_THREAD) {
		gt_fact_block_end_at(t, GT_BK_BARRIER, GT_OBJ(b), 0, called, cpu);
		gt_fact_wake_emit(t, t->serial, GT_BK_BARRIER, GT_OBJ(b), 0, GT_WAKE_ALL, called + 1, cpu);
	} else {
		gt_fact_block_end(t, GT_BK_BARRIER, GT_OBJ(b), r);
	}
	return r;
}

/* ---- yield and sleep ---------------------------------------------------------------------- */

/* The general path: a stack, another clock, a thread to announce, a fact that is not
 * compact.  Reached by a tail call, it returns to the program (frame-pointer stacks stay
 * whole).  tried: 1 when the hook wrote nothing, else what its gt_emit_c_try said of the
 * fact stamped tsc on cpu. */
static GT_NOINLINE int yield_traced(int tried, uint64_t tsc, unsigned cpu)
{
	struct gt_tls *t = tried == 1 ? gt_enter() : &gt_tls;
	if (t) {
		gt_busy_on(t);
		uint32_t stack = tried == 1 ? gt_stack_id(t, GT_OWN_FRAMES_HOOK) : 0;
		struct gt_p_stackonly p = {.stack = stack};
		uint32_t serial = t->serial;
		if (tried == 1) {
			tsc = gt_now(&cpu);
			/* two calls, each with a constant length: one folded call costs a fact
			 * with fp stacks 15 instructions more (callgrind 261 -> 276) */
			if (!stack) /* one word (capture.h GT_C1_YIELD) */
				gt_emit_c(t, serial, GT_YIELD, 0, tsc, cpu, &p, sizeof p,
					  serial < GT_C_THREAD_MAX,
					  gt_compact_word(GT_C_YIELD, 0, serial, GT_C1_YIELD), 0, 0);
			else
				gt_emit_c(t, serial, GT_YIELD, 0, tsc, cpu, &p, sizeof p,
					  serial < GT_C_THREAD_MAX ? 2 : 0,
					  gt_compact_word(GT_C_YIELD, 0, serial, 0), stack, 0);
		} else {
			gt_emit_c_slow(t, tried, serial, GT_YIELD, 0, tsc, cpu, &p, sizeof p);
		}
		t->busy = 0;
	}
	return GT_REAL(sched_yield)();
}

/* The fast path builds no frame: no stack, the fact compact, everything else a tail call. */
GT_EXPORT GT_FRAMELESS int sched_yield(void)
{
	int clock;
	struct gt_tls *t = gt_enter_fast(&clock);
	if (GT_UNLIKELY(!t))
		return yield_traced(1, 0, 0);
	gt_busy_on(t);
	unsigned cpu;
	uint64_t tsc = gt_now_fast(clock, &cpu);
	uint32_t serial = t->serial;
	int tried = gt_emit_c_try(t, tsc, cpu, serial < GT_C_THREAD_MAX, /* one word: GT_C1_YIELD */
				  gt_compact_word(GT_C_YIELD, 0, serial, GT_C1_YIELD), 0, 0);
	if (GT_UNLIKELY(tried <= 0))
		return yield_traced(tried, tsc, cpu); /* still busy: the fact is stamped, not written */
	t->busy = 0;
	return GT_REAL(sched_yield)();
}

/* a sleep's length, 0 when unknown: read only when it can be (the kernel answers EFAULT) */
static uint64_t ts_ns(const struct timespec *ts)
{
	if (!gt_readable(ts, sizeof *ts) || ts->tv_sec < 0 || ts->tv_nsec < 0)
		return 0;
	return (uint64_t)ts->tv_sec * 1000000000ull + (uint64_t)ts->tv_nsec;
}

GT_EXPORT int nanosleep(const struct timespec *req, struct timespec *rem)
{
	struct gt_tls *t = gt_enter();
	if (!t)
		return GT_REAL(nanosleep)(req, rem);
	uint64_t ns = ts_ns(req);
	gt_fact_block_begin(t, GT_BK_SLEEP, ns, 0);
	int r = GT_REAL(nanosleep)(req, rem);
	int e = errno;
	gt_fact_block_end(t, GT_BK_SLEEP, ns, r ? e : 0);
	errno = e;
	return r;
}

GT_EXPORT int clock_nanosleep(clockid_t c, int flags, const struct timespec *req, struct timespec *rem)
{
	struct gt_tls *t = gt_enter();
	if (!t)
		return GT_REAL(clock_nanosleep)(c, flags, req, rem);
	uint64_t ns = (flags & TIMER_ABSTIME) ? 0 : ts_ns(req);
	gt_fact_block_begin(t, GT_BK_SLEEP, ns, 0);
	int r = GT_REAL(clock_nanosleep)(c, flags, req, rem);
	gt_fact_block_end(t, GT_BK_SLEEP, ns, r);
	return r;
}

GT_EXPORT unsigned int sleep(unsigned int s)
{
	struct gt_tls *t = gt_enter();
	if (!t)
		return GT_REAL(sleep)(s);
	uint64_t ns = (uint64_t)s * 1000000000ull;
	gt_fact_block_begin(t, GT_BK_SLEEP, ns, 0);
	unsigned int left = GT_REAL(sleep)(s);
	int e = errno;
	gt_fact_block_end(t, GT_BK_SLEEP, ns, left ? EINTR : 0);
	errno = e;
	return left;
}

GT_EXPORT int usleep(useconds_t us)
{
	struct gt_tls *t = gt_enter();
	if (!t)
		return GT_REAL(usleep)(us);
	uint64_t ns = (uint64_t)us * 1000ull;
	gt_fact_block_begin(t, GT_BK_SLEEP, ns, 0);
	int r = GT_REAL(usleep)(us);
	int e = errno;
	gt_fact_block_end(t, GT_BK_SLEEP, ns, r ? e : 0);
	errno = e;
	return r;
}
