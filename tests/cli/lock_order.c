/* lock_order: lock-order inversions that never deadlock, for the lock-order graph (issue 23,
 * item 5).  Each phase runs in a thread of its own, named by it, and is joined before the
 * next one starts: no two threads ever hold locks at once, so the orders cross and nobody
 * waits.  stdout is the same traced or not.
 *
 *   two       "first" takes lock_a then lock_b; then "second" takes lock_b then lock_a
 *   two-try   the same, but "second" takes lock_a by pthread_mutex_trylock (no inversion)
 *   three     "first" lock_a then lock_b, "second" lock_b then lock_c, "third" lock_c then
 *             lock_a
 * The lines the test looks for are marked by their comments. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_c = PTHREAD_MUTEX_INITIALIZER;
static unsigned done, tried;

/* Holds first while it takes second (each function is a site of its own). */
static __attribute__((noinline)) void take_a_then_b(void)
{
	pthread_mutex_lock(&lock_a);   /* a first */
	pthread_mutex_lock(&lock_b);   /* b after a */
	done++;
	pthread_mutex_unlock(&lock_b);
	pthread_mutex_unlock(&lock_a);
}

static __attribute__((noinline)) void take_b_then_a(void)
{
	pthread_mutex_lock(&lock_b);   /* b first */
	pthread_mutex_lock(&lock_a);   /* a after b */
	done++;
	pthread_mutex_unlock(&lock_a);
	pthread_mutex_unlock(&lock_b);
}

static __attribute__((noinline)) void take_b_then_try_a(void)
{
	pthread_mutex_lock(&lock_b);
	if (pthread_mutex_trylock(&lock_a) == 0) {   /* a tried after b */
		tried++;
		pthread_mutex_unlock(&lock_a);
	}
	done++;
	pthread_mutex_unlock(&lock_b);
}

static __attribute__((noinline)) void take_b_then_c(void)
{
	pthread_mutex_lock(&lock_b);
	pthread_mutex_lock(&lock_c);   /* c after b */
	done++;
	pthread_mutex_unlock(&lock_c);
	pthread_mutex_unlock(&lock_b);
}

static __attribute__((noinline)) void take_c_then_a(void)
{
	pthread_mutex_lock(&lock_c);
	pthread_mutex_lock(&lock_a);   /* a after c */
	done++;
	pthread_mutex_unlock(&lock_a);
	pthread_mutex_unlock(&lock_c);
}

struct phase {
	const char *name;
	void (*take)(void);
};

static void *phase_main(void *arg)
{
	const struct phase *p = arg;
	pthread_setname_np(pthread_self(), p->name);
	p->take();
	return NULL;
}

/* The phases one after the other, each in its own thread. */
static int run(const struct phase *phases, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		pthread_t t;
		if (pthread_create(&t, NULL, phase_main, (void *)&phases[i]) != 0 ||
		    pthread_join(t, NULL) != 0)
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	static const struct phase two[] = {{"first", take_a_then_b}, {"second", take_b_then_a}};
	static const struct phase two_try[] = {{"first", take_a_then_b},
					       {"second", take_b_then_try_a}};
	static const struct phase three[] = {{"first", take_a_then_b}, {"second", take_b_then_c},
					     {"third", take_c_then_a}};
	const char *mode = argc > 1 ? argv[1] : "";
	int rc;
	if (!strcmp(mode, "two"))
		rc = run(two, 2);
	else if (!strcmp(mode, "two-try"))
		rc = run(two_try, 2);
	else if (!strcmp(mode, "three"))
		rc = run(three, 3);
	else {
		fprintf(stderr, "usage: lock_order two|two-try|three\n");
		return 2;
	}
	printf("%s: %u phases, %u try-locks taken\n", mode, done, tried);
	return rc;
}
