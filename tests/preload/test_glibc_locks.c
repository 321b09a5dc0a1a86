/* The hooks lock and unlock a default mutex and a default rwlock and post and take a private
 * semaphore themselves, as glibc does (preload/glibc_locks.h): the program sees the same
 * fields, answers, owners, cancellation and exclusion as untraced.  Each test runs gt-glibc-locks both ways. */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/wait.h>

#include "traced_run.h"

static struct run plain, traced;
static struct capture cap;

static void teardown(void)
{
	capture_close(&cap);
	run_cleanup(&plain);
	run_cleanup(&traced);
}

static void twins(const char *scenario)
{
	const char *argv[] = {test_program("gt-glibc-locks"), scenario, NULL};
	memset(&plain, 0, sizeof plain);
	memset(&traced, 0, sizeof traced);
	const char *diff = run_twins(&plain, &traced, argv, NULL);
	cr_assert_null(diff, "%s", diff);
	cr_assert(WIFEXITED(traced.status) && WEXITSTATUS(traced.status) == 0, "status %#x: %s",
		  traced.status, traced.err);
	cr_assert_eq(count_gotrace_lines(traced.err), 0, "%s", traced.err);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert_eq(capture_count(&cap, GT_NOTICE, GT_NOTICE_DROPPED), 0u);
}

/* the lock word, owner, users and kind after each call, trylock from another thread */
Test(glibc_locks, mutex_fields_as_glibc_leaves_them, .fini = teardown, .timeout = 60)
{
	twins("fields");
	cr_assert(strstr(plain.out, "locked: lock 1 owner self users 1"), "%s", plain.out);
}

/* error-checking, recursive and adaptive mutexes, and an unlocked mutex unlocked */
Test(glibc_locks, other_mutex_types_keep_their_rules, .fini = teardown, .timeout = 60)
{
	twins("types");
}

/* the mutex a condition wait takes back, and a fork child's own tid as the owner */
Test(glibc_locks, condition_wait_and_fork_child_owners, .fini = teardown, .timeout = 60)
{
	twins("condvar");
	run_cleanup(&plain);
	run_cleanup(&traced);
	capture_close(&cap);
	twins("fork");
	cr_assert(strstr(traced.out, "child locked: lock 1 owner self"), "%s", traced.out);
	cr_assert(strstr(traced.out, "child wrlocked: readers 0x3 writers 0 wrphase_futex 1 "
				     "writers_futex 1 writer self"), "%s", traced.out);
}

/* values, an empty semaphore's trywait, a post at SEM_VALUE_MAX */
Test(glibc_locks, semaphore_values_and_errors, .fini = teardown, .timeout = 60)
{
	twins("semaphores");
}

/* sem_wait and sem_timedwait act on a pending cancellation even when they would not block */
Test(glibc_locks, sem_wait_is_a_cancellation_point, .fini = teardown, .timeout = 60)
{
	twins("cancellation");
	cr_assert(strstr(traced.out, "sem_wait: cancelled 1, value 1"), "%s", traced.out);
	cr_assert(strstr(traced.out, "sem_timedwait: cancelled 1, value 1"), "%s", traced.out);
}

/* a bad time or clock given to a free lock or a positive semaphore: glibc's EINVAL, nothing
 * taken (the hooks' own uncontended paths took them) */
Test(glibc_locks, bad_times_and_clocks_take_nothing, .fini = teardown, .timeout = 60)
{
	twins("times");
	cr_assert(strstr(traced.out, "pthread_rwlock_timedwrlock(&l, &bad) = 22"), "%s", traced.out);
	cr_assert(strstr(traced.out, "pthread_rwlock_timedwrlock(&l, none) = 0"), "%s", traced.out);
	cr_assert(strstr(traced.out, "semaphore value 5"), "%s", traced.out);
}

/* four threads on one mutex and one semaphore: no increment lost either way */
Test(glibc_locks, contended_locks_stay_exclusive, .fini = teardown, .timeout = 120)
{
	twins("exclusive");
	cr_assert(strstr(traced.out, "counted 800000 and 800000 of 800000"), "%s", traced.out);
}

/* Every rwlock field after each lock and unlock, in both phases, for the three kinds; the
 * answers of the tries, of a write-held lock's own locks (EDEADLK) and of another thread's
 * tries and timed locks (which time out in glibc). */
Test(glibc_locks, rwlock_fields_as_glibc_leaves_them, .fini = teardown, .timeout = 60)
{
	twins("rwlock-fields");
	cr_assert(strstr(plain.out, "wrlocked: readers 0x3 writers 0 wrphase_futex 1 writers_futex 1 "
				    "writer self shared 0 flags 0"), "%s", plain.out);
	cr_assert(strstr(plain.out, "held: rdlock 35 wrlock 35 tryrdlock 16 trywrlock 16"), "%s",
		  plain.out);
	cr_assert(strstr(plain.out, "another thread: tryrdlock 16 trywrlock 16 timedrdlock 110 "
				    "clockwrlock 110"), "%s", plain.out);
	cr_assert(strstr(plain.out, "rdlocked twice: readers 0x10"), "%s", plain.out);
}

/* a writer asleep on a writer, a reader on a writer, a writer on a reader: each release wakes
 * its sleeper (the hooks' release leaves a release with a sleeper to glibc) */
Test(glibc_locks, rwlock_releases_wake_their_sleepers, .fini = teardown, .timeout = 60)
{
	twins("rwlock-sleepers");
	cr_assert(strstr(traced.out, "a writer asleep on a writer: 0, the sleeper 0\n"), "%s", traced.out);
	cr_assert(strstr(traced.out, "a reader asleep on a writer: 0, the sleeper 0\n"), "%s", traced.out);
	cr_assert(strstr(traced.out, "a writer asleep on a reader: 0, the sleeper 0\n"), "%s", traced.out);
}

/* two writers and two readers on one rwlock: no reader sees a write half done, none lost */
Test(glibc_locks, rwlock_readers_and_writers_stay_exclusive, .fini = teardown, .timeout = 120)
{
	twins("rwlock-exclusive");
	cr_assert(strstr(traced.out, "rwlock counted 200000 and 200000 of 200000, torn 0; readers 0 "
				     "writer bit 0 cur_writer 0"), "%s", traced.out);
}
