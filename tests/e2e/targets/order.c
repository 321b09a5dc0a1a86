/* Programs whose wakers are known by construction, and a high-rate one that turns chunks
 * over, for tests/e2e/test_order.c.
 *
 *   order churn THREADS ROUNDS      short syscalls and a shared lock, as fast as possible
 *   order ring-cond ROUNDS          two threads pass a token over mutex+condvar pairs
 *   order ring-sem THREADS ROUNDS   a token ring over one semaphore per thread
 *   order ring-futex THREADS ROUNDS a token ring over one futex word per thread
 *   order ring-pipe THREADS ROUNDS  a token ring over one pipe per thread (a byte read, then
 *                                   written into the next thread's pipe)
 *   order ring-poll THREADS ROUNDS  the same, each read after a poll for input on the pipe
 *
 * In every ring, thread i (created i-th) waits only for a token that thread i-1 alone
 * passes, and main joins thread i after it ends: each unblock has exactly one possible
 * waker.  The two-thread condvar ring uses one mutex per direction; with two threads the
 * only other user of either mutex is the peer, so its mutex blocks are unique too.
 * Each prints one line that does not depend on timing. */
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

static void run(void *(*fn)(void *))
{
	pthread_t th[MAX_THREADS];
	for (int i = 0; i < n_threads; i++)
		if (pthread_create(&th[i], NULL, fn, (void *)(long)i))
			abort();
	for (int i = 0; i < n_threads; i++)
		pthread_join(th[i], NULL);
}

int main(int argc, char **argv)
{
	if (argc < 3)
		return 2;
	const char *what = argv[1];
	int has_threads = strcmp(what, "ring-cond") != 0;
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
	} else {
		return 2;
	}
	return 0;
}
