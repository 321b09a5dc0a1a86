/* lock_order: lock-order inversions that never deadlock, for the lock-order graph (issue 23,
 * item 5).  Each phase runs in a thread of its own, named by it, and is joined before the
 * next one starts: no two threads ever hold locks at once, so the orders cross and nobody
 * waits.  stdout is the same traced or not.
 *
 *   two       "first" takes a then b; then "second" takes b then a
 *   two-try   the same, but "second" takes a by pthread_mutex_trylock (no inversion)
 *   two-heap  "two" with the locks on the heap (named where first used)
 *   three     "first" a then b, "second" b then c, "third" c then a
 * Locks a, b and c are locks[0], [1] and [2] (two-heap: a and b on the heap).  The lines the
 * test looks for are marked by their comments. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static pthread_mutex_t locks[3] = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER,
				   PTHREAD_MUTEX_INITIALIZER};
static pthread_mutex_t *lock_a = &locks[0], *lock_b = &locks[1], *lock_c = &locks[2];
static unsigned done, tried;

/* Holds first while it takes second (each function is a site of its own). */
static __attribute__((noinline)) void take_a_then_b(void)
{
	pthread_mutex_lock(lock_a);   /* a first */
	pthread_mutex_lock(lock_b);   /* b after a */
	done++;
	pthread_mutex_unlock(lock_b);
	pthread_mutex_unlock(lock_a);
}

static __attribute__((noinline)) void take_b_then_a(void)
{
	pthread_mutex_lock(lock_b);   /* b first */
	pthread_mutex_lock(lock_a);   /* a after b */
	done++;
	pthread_mutex_unlock(lock_a);
	pthread_mutex_unlock(lock_b);
}

static __attribute__((noinline)) void take_b_then_try_a(void)
{
	pthread_mutex_lock(lock_b);
	if (pthread_mutex_trylock(lock_a) == 0) {   /* a tried after b */
		tried++;
		pthread_mutex_unlock(lock_a);
	}
	done++;
	pthread_mutex_unlock(lock_b);
}

static __attribute__((noinline)) void take_b_then_c(void)
{
	pthread_mutex_lock(lock_b);
	pthread_mutex_lock(lock_c);   /* c after b */
	done++;
	pthread_mutex_unlock(lock_c);
	pthread_mutex_unlock(lock_b);
}

static __attribute__((noinline)) void take_c_then_a(void)
{
	pthread_mutex_lock(lock_c);
	pthread_mutex_lock(lock_a);   /* a after c */
	done++;
	pthread_mutex_unlock(lock_a);
	pthread_mutex_unlock(lock_c);
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
	else if (!strcmp(mode, "two-heap")) {
		pthread_mutex_t *heap = malloc(2 * sizeof *heap);
		if (!heap || pthread_mutex_init(&heap[0], NULL) || pthread_mutex_init(&heap[1], NULL))
			return 1;
		lock_a = &heap[0];
		lock_b = &heap[1];
		rc = run(two, 2);
		free(heap);
	} else if (!strcmp(mode, "three"))
		rc = run(three, 3);
	else {
		fprintf(stderr, "usage: lock_order two|two-try|two-heap|three\n");
		return 2;
	}
	printf("%s: %u phases, %u try-locks taken\n", mode, done, tried);
	return rc;
}
