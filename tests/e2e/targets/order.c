/* Programs whose wakers are known by construction, and a high-rate one that turns chunks
 * over, for tests/e2e/test_order.c.
 *
 *   order churn THREADS ROUNDS      short syscalls and a shared lock, as fast as possible
 *   order ring-cond ROUNDS          two threads pass a token over mutex+condvar pairs
 *   order ring-sem THREADS ROUNDS   a token ring over one semaphore per thread
 *   order ring-futex THREADS ROUNDS a token ring over one futex word per thread
 *   order ring-rwlock ROUNDS        two threads pass a token, waiting on each other's rwlock
 *   order window-unlock             a mutex waiter arrives between the unlock hook's look for
 *                                   waiters and the real unlock, and has resumed (and left
 *                                   the waiter table) before the hook looks again
 *   order window-condwait           a mutex waiter arrives between the condvar wait hook's
 *                                   look for waiters and glibc's release of the mutex
 *   order window-unlock-bucket      window-unlock while a second thread sleeps on another
 *                                   mutex of the same bucket of blocked counts (main holds it)
 *   order ring-pipe THREADS ROUNDS  a token ring over one pipe per thread (a byte read, then
 *                                   written into the next thread's pipe)
 *   order ring-poll THREADS ROUNDS  the same, each read after a poll for input on the pipe
 *   order queue-cond WORKERS ROUNDS a work queue: main, the producer, puts WORKERS items in
 *                                   one at a time (each with a signal of the queue's one
 *                                   condvar) and waits on a semaphore until all are taken,
 *                                   ROUNDS times; the workers wait on that condvar and take
 *                                   items under the queue's mutex, contending for it
 *
 * In every ring, thread i (created i-th) waits only for a token that thread i-1 alone
 * passes, and main joins thread i after it ends: each unblock has exactly one possible
 * waker.  The two-thread condvar ring uses one mutex per direction; with two threads the
 * only other user of either mutex is the peer, so its mutex blocks are unique too (as are
 * the rwlock ring's).  Each prints one line that does not depend on timing.
 *
 * The windows are opened by libgt-window.so (targets/window.c) when it is preloaded after
 * libgotrace.so, so that it is the hooks' "real" function: it runs open_window() in the
 * hook's gap, just before the real call (and passed() right after it); without it (the
 * untraced twin) the program runs them itself around its call, which the waiter then meets
 * the same way.
 *
 * In the work queue only main signals or broadcasts the condvar, and the workers wait on no
 * other: every end of a worker's condition wait is main's doing.  Their mutex waits, for each
 * other or for main, have no one possible waker. */
#include <dlfcn.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "../../preload/targets/wait_blocked.h"

#define MAX_THREADS 16

static int n_threads;
static long rounds;

/* ---- churn -------------------------------------------------------------------------------- */

static pthread_mutex_t churn_lock = PTHREAD_MUTEX_INITIALIZER;
static long churn_count;
static int devnull;

static void *churn(void *arg)
{
	(void)arg;
	char b = 0;
	for (long r = 0; r < rounds; r++) {
		if (write(devnull, &b, 1) != 1)
			abort();
		pthread_mutex_lock(&churn_lock);
		churn_count++;
		pthread_mutex_unlock(&churn_lock);
	}
	return NULL;
}

/* ---- ring over mutex + condvar (two threads) ------------------------------------------------ */

static struct {
	pthread_mutex_t m;
	pthread_cond_t c;
	int token;
} pair[2] = {{PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 1},
	     {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0}};

static void *ring_cond(void *arg)
{
	int i = (int)(long)arg;
	for (long r = 0; r < rounds; r++) {
		pthread_mutex_lock(&pair[i].m);
		while (!pair[i].token)
			pthread_cond_wait(&pair[i].c, &pair[i].m);
		pair[i].token = 0;
		pthread_mutex_unlock(&pair[i].m);
		pthread_mutex_lock(&pair[1 - i].m);
		pair[1 - i].token = 1;
		pthread_cond_signal(&pair[1 - i].c);
		pthread_mutex_unlock(&pair[1 - i].m);
	}
	return NULL;
}

/* ---- ring over semaphores ---------------------------------------------------------------- */

static sem_t sems[MAX_THREADS];

static void *ring_sem(void *arg)
{
	int i = (int)(long)arg;
	for (long r = 0; r < rounds; r++) {
		while (sem_wait(&sems[i]))
			;
		sem_post(&sems[(i + 1) % n_threads]);
	}
	return NULL;
}

/* ---- ring over futex words ---------------------------------------------------------------- */

static _Atomic int words[MAX_THREADS];

static void *ring_futex(void *arg)
{
	int i = (int)(long)arg;
	for (long r = 0; r < rounds; r++) {
		while (!atomic_exchange(&words[i], 0))
			syscall(SYS_futex, &words[i], FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
		int next = (i + 1) % n_threads;
		atomic_store(&words[next], 1);
		syscall(SYS_futex, &words[next], FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	}
	return NULL;
}

/* ---- ring over rwlocks (two threads) ----------------------------------------------------
 * Thread i passes its k-th token by releasing its write hold on gate[i][k % 2]; the peer
 * waits for it by read-locking that gate (blocked while i holds it).  i takes the gate back
 * one round later, once the peer, having read it, passed a token back: no gate is taken
 * again before its reader is done, and either thread blocks only on the other. */

static pthread_rwlock_t gate[2][2] = {{PTHREAD_RWLOCK_INITIALIZER, PTHREAD_RWLOCK_INITIALIZER},
				      {PTHREAD_RWLOCK_INITIALIZER, PTHREAD_RWLOCK_INITIALIZER}};
static _Atomic int armed;

static void *ring_rwlock(void *arg)
{
	int i = (int)(long)arg, j = 1 - i;
	pthread_rwlock_wrlock(&gate[i][0]);
	pthread_rwlock_wrlock(&gate[i][1]);
	atomic_fetch_add(&armed, 1);
	while (atomic_load(&armed) < 2)
		syscall(SYS_sched_yield);
	for (long k = 0; k < rounds; k++) {
		/* thread 1's k-th token is thread 0's k-th pass; thread 0's is thread 1's (k-1)-th */
		if (i == 1 || k > 0) {
			pthread_rwlock_t *g = &gate[j][(i == 1 ? k : k - 1) % 2];
			pthread_rwlock_rdlock(g);
			pthread_rwlock_unlock(g);
		}
		if (k > 0)
			pthread_rwlock_wrlock(&gate[i][(k - 1) % 2]);
		pthread_rwlock_unlock(&gate[i][k % 2]);
	}
	pthread_rwlock_unlock(&gate[i][rounds % 2]);
	return NULL;
}

/* ---- windows ------------------------------------------------------------------------------ */

static pthread_mutex_t wm = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t wc = PTHREAD_COND_INITIALIZER;
static _Atomic int go, waiter_passed;
static _Atomic pid_t waiter_tid;
static int ready;

/* The waiter is let go and is asleep on wm's lock word when this returns. */
static void open_window(void)
{
	atomic_store(&go, 1);
	gt_wait_blocked(atomic_load(&waiter_tid), SYS_futex, (uintptr_t)&wm, (uintptr_t)&wm + 4);
}

static void *window_waiter(void *arg)
{
	(void)arg;
	atomic_store(&waiter_tid, gt_gettid());
	while (!atomic_load(&go))
		syscall(SYS_sched_yield);
	pthread_mutex_lock(&wm);
	atomic_store(&waiter_passed, 1);
	ready = 1;
	pthread_cond_signal(&wc);
	pthread_mutex_unlock(&wm);
	return NULL;
}

/* The waiter has the mutex: its block has ended. */
static void passed(void)
{
	while (!atomic_load(&waiter_passed))
		syscall(SYS_sched_yield);
}

typedef void arm_fn(void *obj, void (*before)(void), void (*after)(void));

/* Runs open_window() inside the hook's gap before obj's next real call, and after() once that
 * returns, when libgt-window.so is there (1); else open_window() now (0). */
static int arm(void *obj, void (*after)(void))
{
	arm_fn *arm_window = (arm_fn *)dlsym(RTLD_DEFAULT, "gt_window_arm");
	if (arm_window)
		arm_window(obj, open_window, after);
	else
		open_window();
	return arm_window != NULL;
}

/* A mutex whose bucket of blocked counts is wm's: the hooks' release of wm then finds
 * threads blocked in its bucket, none on wm itself.  The bucket is the hash of
 * preload/waiters.h, gt_blocked_word, repeated here. */
static _Alignas(64) char mates[64 * 1024];
static _Atomic pid_t mate_tid;
static _Atomic int mate_done;

static unsigned blocked_bucket(const void *obj)
{
	return (uint32_t)(uintptr_t)obj * 0x9E3779B9u >> 24;
}

static pthread_mutex_t *bucket_mate(void)
{
	for (size_t off = 0; off + sizeof(pthread_mutex_t) <= sizeof mates; off += 8)
		if (blocked_bucket(mates + off) == blocked_bucket(&wm))
			return (pthread_mutex_t *)(void *)(mates + off);
	abort();
}

static void *mate_waiter(void *arg)
{
	atomic_store(&mate_tid, gt_gettid());
	pthread_mutex_lock(arg);
	pthread_mutex_unlock(arg);
	atomic_store(&mate_done, 1);
	return NULL;
}

static void window(int condwait, int mate)
{
	pthread_t th, mate_th;
	pthread_mutex_t *m = NULL;
	pthread_mutex_lock(&wm);
	if (pthread_create(&th, NULL, window_waiter, NULL))
		abort();
	while (!atomic_load(&waiter_tid))
		syscall(SYS_sched_yield);
	if (mate) {
		m = bucket_mate();
		pthread_mutex_init(m, NULL);
		pthread_mutex_lock(m);
		if (pthread_create(&mate_th, NULL, mate_waiter, m) || pthread_detach(mate_th))
			abort();
		while (!atomic_load(&mate_tid))
			syscall(SYS_sched_yield);
		gt_wait_blocked(atomic_load(&mate_tid), SYS_futex, (uintptr_t)m, (uintptr_t)m + 4);
	}
	if (condwait) {
		arm(&wc, NULL);
		while (!ready)
			pthread_cond_wait(&wc, &wm);
		pthread_mutex_unlock(&wm);
	} else if (arm(&wm, passed)) {
		pthread_mutex_unlock(&wm);
	} else {
		pthread_mutex_unlock(&wm);
		passed();
	}
	pthread_join(th, NULL);
	if (mate) { /* detached, not joined: main's only blocks are the window's */
		pthread_mutex_unlock(m);
		while (!atomic_load(&mate_done))
			syscall(SYS_sched_yield);
	}
}

/* ---- ring over pipes ------------------------------------------------------------------------ */

static int pipes[MAX_THREADS][2];

static int ring_polls;

static void *ring_pipe(void *arg)
{
	int i = (int)(long)arg;
	char token;
	struct pollfd pfd = {.fd = pipes[i][0], .events = POLLIN};
	for (long r = 0; r < rounds; r++) {
		if ((ring_polls && poll(&pfd, 1, -1) != 1) || read(pipes[i][0], &token, 1) != 1 ||
		    write(pipes[(i + 1) % n_threads][1], &token, 1) != 1)
			abort();
	}
	return NULL;
}

/* ---- a work queue: workers wait on one condvar that only main signals ---------------------- */

static pthread_mutex_t queue_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t queue_ready = PTHREAD_COND_INITIALIZER;
static long queue_items, queue_served;
static int queue_closed;
static sem_t queue_taken;

static void *queue_worker(void *arg)
{
	(void)arg;
	for (;;) {
		pthread_mutex_lock(&queue_lock);
		while (!queue_items && !queue_closed)
			pthread_cond_wait(&queue_ready, &queue_lock);
		if (!queue_items) {
			pthread_mutex_unlock(&queue_lock);
			return NULL;
		}
		queue_items--;
		queue_served++;
		pthread_mutex_unlock(&queue_lock);
		sem_post(&queue_taken);
	}
}

static void queue_produce(void)
{
	for (long r = 0; r < rounds; r++) {
		for (int k = 0; k < n_threads; k++) {
			pthread_mutex_lock(&queue_lock);
			queue_items++;
			pthread_cond_signal(&queue_ready);
			pthread_mutex_unlock(&queue_lock);
		}
		for (int k = 0; k < n_threads; k++)
			while (sem_wait(&queue_taken))
				;
	}
	pthread_mutex_lock(&queue_lock);
	queue_closed = 1;
	pthread_cond_broadcast(&queue_ready);
	pthread_mutex_unlock(&queue_lock);
}

static void run(void *(*fn)(void *))
{
	pthread_t th[MAX_THREADS];
	for (int i = 0; i < n_threads; i++)
		if (pthread_create(&th[i], NULL, fn, (void *)(long)i))
			abort();
	if (fn == queue_worker)
		queue_produce();
	for (int i = 0; i < n_threads; i++)
		pthread_join(th[i], NULL);
}

int main(int argc, char **argv)
{
	if (argc == 2 && !strncmp(argv[1], "window-", 7)) {
		window(!strcmp(argv[1], "window-condwait"), !strcmp(argv[1], "window-unlock-bucket"));
		printf("%s\n", argv[1]);
		return 0;
	}
	if (argc < 3)
		return 2;
	const char *what = argv[1];
	int has_threads = strcmp(what, "ring-cond") != 0 && strcmp(what, "ring-rwlock") != 0;
	if (has_threads && argc < 4)
		return 2;
	n_threads = has_threads ? atoi(argv[2]) : 2;
	rounds = atol(argv[has_threads ? 3 : 2]);
	if (n_threads < 2 || n_threads > MAX_THREADS || rounds < 1)
		return 2;
	if (!strcmp(what, "churn")) {
		devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
		run(churn);
		printf("churn %ld\n", churn_count);
	} else if (!strcmp(what, "ring-cond")) {
		run(ring_cond);
		printf("ring-cond %ld rounds\n", rounds);
	} else if (!strcmp(what, "ring-sem")) {
		for (int i = 0; i < n_threads; i++)
			sem_init(&sems[i], 0, i == 0);
		run(ring_sem);
		printf("ring-sem %d threads %ld rounds\n", n_threads, rounds);
	} else if (!strcmp(what, "ring-rwlock")) {
		run(ring_rwlock);
		printf("ring-rwlock %ld rounds\n", rounds);
	} else if (!strcmp(what, "ring-futex")) {
		words[0] = 1;
		run(ring_futex);
		printf("ring-futex %d threads %ld rounds\n", n_threads, rounds);
	} else if (!strcmp(what, "ring-pipe") || !strcmp(what, "ring-poll")) {
		ring_polls = !strcmp(what, "ring-poll");
		for (int i = 0; i < n_threads; i++)
			if (pipe(pipes[i]))
				abort();
		if (write(pipes[0][1], "t", 1) != 1)
			abort();
		run(ring_pipe);
		printf("%s %d threads %ld rounds\n", what, n_threads, rounds);
	} else if (!strcmp(what, "queue-cond")) {
		sem_init(&queue_taken, 0, 0);
		run(queue_worker);
		printf("queue-cond %d workers %ld items served\n", n_threads, queue_served);
	} else {
		return 2;
	}
	return 0;
}
