/* gt-glibc-locks SCENARIO: what a program can see of its mutexes, rwlocks and semaphores -- the
 * fields glibc keeps in them, what its other functions answer about them, cancellation --
 * printed so that a traced run can be compared with an untraced one.  The hooks take a default
 * mutex's, a default rwlock's and a private semaphore's uncontended paths themselves
 * (preload/glibc_locks.h); nothing of that may show (tests/preload/test_glibc_locks.c). */
#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static int tid(void)
{
	return (int)syscall(SYS_gettid);
}

/* the fields glibc keeps; the owner as "self", "none" or a number that is neither */
static void show(const char *when, const pthread_mutex_t *m)
{
	int o = m->__data.__owner;
	printf("%s: lock %d owner %s users %u count %d kind %d\n", when, m->__data.__lock,
	       o == tid() ? "self" : o == 0 ? "none" : "other", m->__data.__nusers, m->__data.__count,
	       m->__data.__kind);
}

static pthread_mutex_t shared_m = PTHREAD_MUTEX_INITIALIZER;

static void *try_from_another(void *arg)
{
	(void)arg;
	return (void *)(long)pthread_mutex_trylock(&shared_m);
}

static void fields(void)
{
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	show("initial", &m);
	printf("lock %d\n", pthread_mutex_lock(&m));
	show("locked", &m);
	printf("trylock held %d\n", pthread_mutex_trylock(&m));
	printf("unlock %d\n", pthread_mutex_unlock(&m));
	show("unlocked", &m);
	printf("trylock %d\n", pthread_mutex_trylock(&m));
	show("trylocked", &m);
	printf("unlock %d\n", pthread_mutex_unlock(&m));
	printf("timedlock %d\n", pthread_mutex_timedlock(&m, &(struct timespec){0, 0}));
	show("timedlocked", &m);
	printf("unlock %d\n", pthread_mutex_unlock(&m));

	pthread_mutex_lock(&shared_m);
	pthread_t t;
	void *r;
	pthread_create(&t, NULL, try_from_another, NULL);
	pthread_join(t, &r);
	printf("trylock from another thread %ld\n", (long)r);
	pthread_mutex_unlock(&shared_m);
	show("after", &shared_m);
}

/* the other types go to glibc: their own rules hold */
static void types(void)
{
	pthread_mutexattr_t a;
	pthread_mutex_t m;
	int kinds[] = {PTHREAD_MUTEX_ERRORCHECK, PTHREAD_MUTEX_RECURSIVE, PTHREAD_MUTEX_ADAPTIVE_NP};
	for (int i = 0; i < 3; i++) {
		pthread_mutexattr_init(&a);
		pthread_mutexattr_settype(&a, kinds[i]);
		pthread_mutex_init(&m, &a);
		int r1 = pthread_mutex_lock(&m);
		int r2 = kinds[i] == PTHREAD_MUTEX_ADAPTIVE_NP ? pthread_mutex_trylock(&m)
							       : pthread_mutex_lock(&m);
		printf("type %d: %d %d", kinds[i], r1, r2);
		show("", &m);
		printf(" unlock %d", pthread_mutex_unlock(&m));
		printf(" %d", pthread_mutex_unlock(&m));
		printf(" %d\n", pthread_mutex_unlock(&m));
		pthread_mutex_destroy(&m);
		pthread_mutexattr_destroy(&a);
	}
	/* an unlocked default mutex unlocked: glibc lets it */
	pthread_mutex_t d = PTHREAD_MUTEX_INITIALIZER;
	printf("unlock unlocked %d\n", pthread_mutex_unlock(&d));
	show("unlocked twice", &d);
}

/* a condition wait hands the mutex back with the owner's record */
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int ready;

static void *signaller(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&shared_m);
	ready = 1;
	pthread_cond_signal(&cv);
	pthread_mutex_unlock(&shared_m);
	return NULL;
}

static void condvar(void)
{
	pthread_mutex_lock(&shared_m);
	pthread_t t;
	pthread_create(&t, NULL, signaller, NULL);
	while (!ready)
		pthread_cond_wait(&cv, &shared_m);
	show("after the wait", &shared_m);
	pthread_mutex_unlock(&shared_m);
	pthread_join(t, NULL);
	show("released", &shared_m);
}

/* ---- rwlocks ---- */

/* the fields glibc keeps; the writer as "self", "none" or "other" */
static void show_rw(const char *when, const pthread_rwlock_t *l)
{
	int w = l->__data.__cur_writer;
	printf("%s: readers %#x writers %u wrphase_futex %u writers_futex %u writer %s shared %d "
	       "flags %u\n",
	       when, l->__data.__readers, l->__data.__writers, l->__data.__wrphase_futex,
	       l->__data.__writers_futex, w == tid() ? "self" : w == 0 ? "none" : "other",
	       l->__data.__shared, l->__data.__flags);
}

static pthread_rwlock_t shared_rw;
static const struct timespec long_ago = {0, 0};

/* what another thread gets from shared_rw: its tries and its timed locks (which time out
 * where the lock is held against them) */
static void *rw_from_another(void *arg)
{
	(void)arg;
	int rd = pthread_rwlock_tryrdlock(&shared_rw);
	if (!rd)
		pthread_rwlock_unlock(&shared_rw);
	int wr = pthread_rwlock_trywrlock(&shared_rw);
	if (!wr)
		pthread_rwlock_unlock(&shared_rw);
	int trd = pthread_rwlock_timedrdlock(&shared_rw, &long_ago);
	if (!trd)
		pthread_rwlock_unlock(&shared_rw);
	int twr = pthread_rwlock_clockwrlock(&shared_rw, CLOCK_MONOTONIC, &long_ago);
	if (!twr)
		pthread_rwlock_unlock(&shared_rw);
	printf("another thread: tryrdlock %d trywrlock %d timedrdlock %d clockwrlock %d\n", rd, wr,
	       trd, twr);
	return NULL;
}

static void rw_another(void)
{
	pthread_t t;
	pthread_create(&t, NULL, rw_from_another, NULL);
	pthread_join(t, NULL);
	show_rw("after another thread", &shared_rw);
}

/* each step of one rwlock of the kind: the write phase and the read phase, taken from each
 * other, by this thread and against another one */
static void rwlock_kind(int kind)
{
	pthread_rwlockattr_t a;
	pthread_rwlockattr_init(&a);
	pthread_rwlockattr_setkind_np(&a, kind);
	pthread_rwlock_init(&shared_rw, &a);
	pthread_rwlockattr_destroy(&a);
	pthread_rwlock_t *l = &shared_rw;
	printf("kind %d\n", kind);
	show_rw("initial", l);
	printf("wrlock %d\n", pthread_rwlock_wrlock(l));
	show_rw("wrlocked", l);
	printf("held: rdlock %d wrlock %d tryrdlock %d trywrlock %d\n", pthread_rwlock_rdlock(l),
	       pthread_rwlock_wrlock(l), pthread_rwlock_tryrdlock(l), pthread_rwlock_trywrlock(l));
	rw_another();
	printf("unlock %d\n", pthread_rwlock_unlock(l));
	show_rw("unlocked", l);
	printf("wrlock %d\n", pthread_rwlock_wrlock(l));
	show_rw("wrlocked in the write phase", l);
	printf("unlock %d\n", pthread_rwlock_unlock(l));
	show_rw("unlocked again", l);
	printf("rdlock %d\n", pthread_rwlock_rdlock(l));
	show_rw("rdlocked from the write phase", l);
	printf("rdlock %d\n", pthread_rwlock_rdlock(l));
	show_rw("rdlocked twice", l);
	printf("trywrlock %d tryrdlock %d\n", pthread_rwlock_trywrlock(l), pthread_rwlock_tryrdlock(l));
	show_rw("rdlocked three times", l);
	rw_another();
	for (int i = 0; i < 3; i++) {
		printf("unlock %d\n", pthread_rwlock_unlock(l));
		show_rw("a reader less", l);
	}
	printf("rdlock %d\n", pthread_rwlock_rdlock(l));
	show_rw("rdlocked in the read phase", l);
	printf("unlock %d\n", pthread_rwlock_unlock(l));
	printf("trywrlock %d\n", pthread_rwlock_trywrlock(l));
	show_rw("trywrlocked", l);
	printf("unlock %d\n", pthread_rwlock_unlock(l));
	printf("tryrdlock %d\n", pthread_rwlock_tryrdlock(l));
	show_rw("tryrdlocked", l);
	printf("unlock %d\n", pthread_rwlock_unlock(l));
	printf("timedwrlock %d\n", pthread_rwlock_timedwrlock(l, &long_ago));
	show_rw("timedwrlocked", l);
	printf("unlock %d\n", pthread_rwlock_unlock(l));
	printf("clockrdlock %d\n", pthread_rwlock_clockrdlock(l, CLOCK_REALTIME, &long_ago));
	show_rw("clockrdlocked", l);
	printf("unlock %d\n", pthread_rwlock_unlock(l));
	show_rw("released", l);
	rw_another();
	pthread_rwlock_destroy(l);
}

static void rwlock_fields(void)
{
	rwlock_kind(PTHREAD_RWLOCK_PREFER_READER_NP);
	rwlock_kind(PTHREAD_RWLOCK_PREFER_WRITER_NP);
	rwlock_kind(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	printf("static: wrlock %d", pthread_rwlock_wrlock(&l));
	show_rw("", &l);
	printf("static: unlock %d", pthread_rwlock_unlock(&l));
	show_rw("", &l);
}

/* Threads asleep in glibc on a rwlock this thread holds: its release must wake them (glibc's
 * release, which the hooks leave it).  The sleepers call libc's own functions: a blocked
 * thread the hooks saw sends the release to glibc anyway (their waited path).  A sleeper is
 * waited for by its futex word's "a thread may sleep here" bit and its state in /proc, not by
 * time. */
static pthread_rwlock_t sleepers_rw = PTHREAD_RWLOCK_INITIALIZER;
static _Atomic int sleeper_tid;

static int sleeping(int t)
{
	char path[64], stat[512];
	snprintf(path, sizeof path, "/proc/self/task/%d/stat", t);
	FILE *f = fopen(path, "r");
	if (!f)
		return 0;
	size_t n = fread(stat, 1, sizeof stat - 1, f);
	fclose(f);
	stat[n] = 0;
	const char *end = strrchr(stat, ')');
	return end && end[1] == ' ' && end[2] == 'S';
}

typedef int rwlock_fn(pthread_rwlock_t *);

static rwlock_fn *libc_rwlock(const char *name)
{
	void *libc = dlopen("libc.so.6", RTLD_LAZY | RTLD_NOLOAD);
	rwlock_fn *fn = libc ? (rwlock_fn *)dlsym(libc, name) : NULL;
	if (!fn) {
		fprintf(stderr, "no %s in libc.so.6\n", name);
		exit(2);
	}
	return fn;
}

static void *rw_sleeper(void *arg)
{
	rwlock_fn *lock = libc_rwlock(arg ? "pthread_rwlock_wrlock" : "pthread_rwlock_rdlock");
	rwlock_fn *unlock = libc_rwlock("pthread_rwlock_unlock");
	sleeper_tid = tid();
	int r = lock(&sleepers_rw);
	unlock(&sleepers_rw);
	return (void *)(long)r;
}

/* holding sleepers_rw for writing (write) or reading, with a writer (writer) or a reader
 * asleep on word's bit 2: released, the sleeper takes the lock and leaves */
static void rw_wake(const char *what, int write, int writer, const unsigned *word)
{
	int r = write ? pthread_rwlock_wrlock(&sleepers_rw) : pthread_rwlock_rdlock(&sleepers_rw);
	pthread_t t;
	sleeper_tid = 0;
	pthread_create(&t, NULL, rw_sleeper, writer ? &sleeper_tid : NULL);
	while (!sleeper_tid || !(__atomic_load_n(word, __ATOMIC_RELAXED) & 2) || !sleeping(sleeper_tid))
		sched_yield();
	show_rw(what, &sleepers_rw);
	r |= pthread_rwlock_unlock(&sleepers_rw);
	void *got;
	pthread_join(t, &got);
	printf("%s: %d, the sleeper %ld\n", what, r, (long)got);
	show_rw("after it", &sleepers_rw);
}

static void rwlock_sleepers(void)
{
	rw_wake("a writer asleep on a writer", 1, 1, &sleepers_rw.__data.__writers_futex);
	rw_wake("a reader asleep on a writer", 1, 0, &sleepers_rw.__data.__wrphase_futex);
	rw_wake("a writer asleep on a reader", 0, 1, &sleepers_rw.__data.__wrphase_futex);
}

/* writers move two counters together, readers look at both: no reader sees them apart and
 * no increment is lost, whatever the phase each lock and unlock finds */
enum { RW_WRITERS = 2, RW_READERS = 2, RW_ROUNDS = 100000 };
static pthread_rwlock_t counters_rw = PTHREAD_RWLOCK_INITIALIZER;
static long counter_a, counter_b, torn;

static void *rw_writer(void *arg)
{
	(void)arg;
	for (int i = 0; i < RW_ROUNDS; i++) {
		pthread_rwlock_wrlock(&counters_rw);
		counter_a++;
		counter_b++;
		pthread_rwlock_unlock(&counters_rw);
	}
	return NULL;
}

static void *rw_reader(void *arg)
{
	long seen_apart = 0;
	(void)arg;
	for (int i = 0; i < RW_ROUNDS; i++) {
		pthread_rwlock_rdlock(&counters_rw);
		seen_apart += counter_a != counter_b;
		pthread_rwlock_unlock(&counters_rw);
	}
	return (void *)seen_apart;
}

static void rwlock_exclusive(void)
{
	pthread_t t[RW_WRITERS + RW_READERS];
	for (int i = 0; i < RW_WRITERS + RW_READERS; i++)
		pthread_create(&t[i], NULL, i < RW_WRITERS ? rw_writer : rw_reader, NULL);
	for (int i = 0; i < RW_WRITERS + RW_READERS; i++) {
		void *r;
		pthread_join(t[i], &r);
		torn += (long)r;
	}
	unsigned r = counters_rw.__data.__readers;
	printf("rwlock counted %ld and %ld of %d, torn %ld; readers %u writer bit %u cur_writer %d\n",
	       counter_a, counter_b, RW_WRITERS * RW_ROUNDS, torn, r >> 3, r >> 1 & 1,
	       counters_rw.__data.__cur_writer);
}

/* a forked child's locks carry its own tid */
static void forked(void)
{
	pid_t p = fork();
	if (p == 0) {
		pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
		pthread_mutex_lock(&m);
		show("child locked", &m);
		pthread_mutex_unlock(&m);
		pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
		pthread_rwlock_wrlock(&l);
		show_rw("child wrlocked", &l);
		pthread_rwlock_unlock(&l);
		fflush(stdout);
		_exit(0);
	}
	int st;
	waitpid(p, &st, 0);
	printf("child status %d\n", st);
}

/* many threads, one mutex and one semaphore: each increment is exclusive */
enum { THREADS = 4, ROUNDS = 200000 };
static long counted_by_mutex, counted_by_sem;
static sem_t gate;

static void *hammer(void *arg)
{
	(void)arg;
	for (int i = 0; i < ROUNDS; i++) {
		pthread_mutex_lock(&shared_m);
		counted_by_mutex++;
		pthread_mutex_unlock(&shared_m);
		sem_wait(&gate);
		counted_by_sem++;
		sem_post(&gate);
	}
	return NULL;
}

static void exclusive(void)
{
	pthread_t t[THREADS];
	sem_init(&gate, 0, 1);
	for (int i = 0; i < THREADS; i++)
		pthread_create(&t[i], NULL, hammer, NULL);
	for (int i = 0; i < THREADS; i++)
		pthread_join(t[i], NULL);
	int v;
	sem_getvalue(&gate, &v);
	printf("counted %ld and %ld of %d, gate %d\n", counted_by_mutex, counted_by_sem,
	       THREADS * ROUNDS, v);
	show("after", &shared_m);
}

static void semaphores(void)
{
	sem_t s;
	int v;
	sem_init(&s, 0, 0);
	printf("post %d", sem_post(&s));
	sem_getvalue(&s, &v);
	printf(" value %d", v);
	printf(" wait %d", sem_wait(&s));
	sem_getvalue(&s, &v);
	printf(" value %d", v);
	int r = sem_trywait(&s);
	printf(" trywait %d errno %d\n", r, errno);
	sem_init(&s, 0, SEM_VALUE_MAX);
	r = sem_post(&s);
	printf("post at the maximum %d errno %d\n", r, errno);
}

/* sem_wait and sem_timedwait are cancellation points even when the value is positive */
static sem_t positive;
static int timed;

static void *wait_cancelled(void *arg)
{
	(void)arg;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	sem_post((sem_t *)arg); /* pthread_cancel comes after this */
	sem_wait(&gate);
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	if (timed) {
		struct timespec ts;
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_sec += 60;
		sem_timedwait(&positive, &ts);
	} else {
		sem_wait(&positive);
	}
	return (void *)1;
}

static void cancellation_of(int timed_wait)
{
	timed = timed_wait;
	sem_t started;
	sem_init(&started, 0, 0);
	sem_init(&gate, 0, 0);
	sem_init(&positive, 0, 1);
	pthread_t t;
	pthread_create(&t, NULL, wait_cancelled, &started);
	sem_wait(&started);
	pthread_cancel(t);
	sem_post(&gate);
	void *r;
	pthread_join(t, &r);
	int v;
	sem_getvalue(&positive, &v);
	printf("%s: cancelled %d, value %d\n", timed ? "sem_timedwait" : "sem_wait",
	       r == PTHREAD_CANCELED, v);
}

static void cancellation(void)
{
	cancellation_of(0);
	cancellation_of(1);
}

/* A free lock or a positive semaphore given a bad time or clock: glibc answers EINVAL and takes
 * nothing (a mutex: only for its clock); a rwlock given no time at all is taken. */
static void times(void)
{
	struct timespec bad = {0, -1}, late = {0, 1000000000}, good;
	clock_gettime(CLOCK_REALTIME, &good);
	good.tv_sec += 60;
	pthread_rwlock_t l = PTHREAD_RWLOCK_INITIALIZER;
	pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
	sem_t s;
	sem_init(&s, 0, 5);
	const struct timespec *none = NULL;
	__asm__("" : "+r"(none)); /* the headers say non-null: passed as a program may */
	int r;
#define RW(call) (r = (call), printf(#call " = %d\n", r), r ? 0 : pthread_rwlock_unlock(&l))
	RW(pthread_rwlock_timedwrlock(&l, &bad));
	RW(pthread_rwlock_timedrdlock(&l, &late));
	RW(pthread_rwlock_timedwrlock(&l, none));
	RW(pthread_rwlock_clockwrlock(&l, CLOCK_PROCESS_CPUTIME_ID, &good));
	RW(pthread_rwlock_clockrdlock(&l, CLOCK_MONOTONIC, &bad));
	RW(pthread_rwlock_clockrdlock(&l, CLOCK_PROCESS_CPUTIME_ID, none));
#define MU(call) (r = (call), printf(#call " = %d\n", r), r ? 0 : pthread_mutex_unlock(&m))
	MU(pthread_mutex_timedlock(&m, &bad));
	MU(pthread_mutex_clocklock(&m, CLOCK_PROCESS_CPUTIME_ID, &good));
	MU(pthread_mutex_clocklock(&m, CLOCK_MONOTONIC, &late));
#define SE(call) (errno = 0, r = (call), printf(#call " = %d, errno %d\n", r, errno))
	SE(sem_timedwait(&s, &bad));
	SE(sem_clockwait(&s, CLOCK_THREAD_CPUTIME_ID, &good));
	SE(sem_clockwait(&s, CLOCK_MONOTONIC, &late));
	int v;
	sem_getvalue(&s, &v);
	printf("semaphore value %d\n", v);
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	const char *s = argc > 1 ? argv[1] : "all";
	int all = !strcmp(s, "all");
	if (all || !strcmp(s, "fields"))
		fields();
	if (all || !strcmp(s, "types"))
		types();
	if (all || !strcmp(s, "condvar"))
		condvar();
	if (all || !strcmp(s, "fork"))
		forked();
	if (all || !strcmp(s, "semaphores"))
		semaphores();
	if (all || !strcmp(s, "cancellation"))
		cancellation();
	if (all || !strcmp(s, "times"))
		times();
	if (all || !strcmp(s, "exclusive"))
		exclusive();
	if (all || !strcmp(s, "rwlock-fields"))
		rwlock_fields();
	if (all || !strcmp(s, "rwlock-sleepers"))
		rwlock_sleepers();
	if (all || !strcmp(s, "rwlock-exclusive"))
		rwlock_exclusive();
	return 0;
}
