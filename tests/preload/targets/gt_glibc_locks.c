/* gt-glibc-locks SCENARIO: what a program can see of its mutexes and semaphores -- the fields
 * glibc keeps in them, what its other functions answer about them, cancellation -- printed so
 * that a traced run can be compared with an untraced one.  The hooks take a default mutex's
 * and a private semaphore's uncontended paths themselves (preload/glibc_locks.h); nothing of
 * that may show (tests/preload/test_glibc_locks.c). */
#include <errno.h>
#include <limits.h>
#include <pthread.h>
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

/* a forked child's locks carry its own tid */
static void forked(void)
{
	pid_t p = fork();
	if (p == 0) {
		pthread_mutex_t m = PTHREAD_MUTEX_INITIALIZER;
		pthread_mutex_lock(&m);
		show("child locked", &m);
		pthread_mutex_unlock(&m);
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

/* sem_wait is a cancellation point even when the value is positive */
static sem_t positive;

static void *wait_cancelled(void *arg)
{
	(void)arg;
	pthread_setcancelstate(PTHREAD_CANCEL_DISABLE, NULL);
	sem_post((sem_t *)arg); /* pthread_cancel comes after this */
	sem_wait(&gate);
	pthread_setcancelstate(PTHREAD_CANCEL_ENABLE, NULL);
	sem_wait(&positive);
	return (void *)1;
}

static void cancellation(void)
{
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
	printf("cancelled %d, value %d\n", r == PTHREAD_CANCELED, v);
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
	if (all || !strcmp(s, "exclusive"))
		exclusive();
	return 0;
}
