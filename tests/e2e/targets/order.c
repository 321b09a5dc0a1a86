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
 *   order stall ATTEMPTS            a writer stopped in the middle of a record while the ring
 *                                   turns over (below), ATTEMPTS times
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
#include <link.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "../../preload/targets/wait_blocked.h"
#include "gotrace/capture.h"

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

/* ---- stall: a writer stopped between its reservation and its commit ---------------------- */

/* main sends SIGUSR1 to a thread that writes to /dev/null in a loop, alone on a CPU; the
 * handler stops it there when the signal finds it in the tracer's code, and main reads the
 * capture: when that CPU's current chunk holds a reservation not committed yet (the
 * writer's), main, moved to that CPU, writes until the chunk is in use again (GOTRACE_LAST=64K,
 * 16 KiB chunks: the quarantine and every put-off reuse passed) or STALL_MAX_WRITES facts,
 * lets the writer commit and ends; otherwise it lets it go on and tries again.  Untraced, the
 * signal never finds the tracer and nothing stops.  Whether it stopped the writer in a
 * record, and whether that chunk was used again meanwhile, go to stderr. */
#define STALL_MAX_WRITES 100000

enum { STALL_ASKED, STALL_PASSED, STALL_STOPPED };
static _Atomic int stall_state, stall_over, stall_cpu;
static _Atomic unsigned stall_release;
static uintptr_t tracer_lo, tracer_hi;
static int capture_fd = -1;

/* A raw system call: the handler calls no hook (one that interrupted the tracer's own work
 * would pass straight through and count a loss) */
static long raw_call(long nr, long a, long b, long c)
{
#if defined(__x86_64__)
	long r;
	register long r10 __asm__("r10") = 0;
	__asm__ volatile("syscall" : "=a"(r) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10)
			 : "rcx", "r11", "memory");
	return r;
#elif defined(__aarch64__)
	register long x8 __asm__("x8") = nr, x0 __asm__("x0") = a, x1 __asm__("x1") = b;
	register long x2 __asm__("x2") = c, x3 __asm__("x3") = 0;
	__asm__ volatile("svc 0" : "+r"(x0) : "r"(x8), "r"(x1), "r"(x2), "r"(x3) : "memory");
	return x0;
#else
	return syscall(nr, a, b, c, 0);
#endif
}

static long raw_futex(void *word, int op, long val) { return raw_call(SYS_futex, (long)word, op, val); }

static uintptr_t interrupted_pc(void *uc)
{
#if defined(__x86_64__)
	return (uintptr_t)((ucontext_t *)uc)->uc_mcontext.gregs[REG_RIP];
#elif defined(__aarch64__)
	return (uintptr_t)((ucontext_t *)uc)->uc_mcontext.pc;
#else
	(void)uc;
	return 0;
#endif
}

/* libgotrace.so's code, when it is loaded */
static int find_tracer(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size, (void)data;
	if (!info->dlpi_name || !strstr(info->dlpi_name, "libgotrace"))
		return 0;
	for (int i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X)) {
			tracer_lo = info->dlpi_addr + ph->p_vaddr;
			tracer_hi = tracer_lo + ph->p_memsz;
		}
	}
	return 1;
}

/* The capture this process writes, as its mapping in /proc/self/maps names it (-1: none) */
static int open_capture(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4096];
	int fd = -1;
	while (f && fd < 0 && fgets(line, sizeof line, f)) {
		char *path = strchr(line, '/');
		size_t n = path ? strcspn(path, "\n") : 0;
		if (n > 6 && !strncmp(path + n - 6, ".gtcap", 6)) {
			path[n] = 0;
			fd = open(path, O_RDONLY | O_CLOEXEC);
		}
	}
	if (f)
		fclose(f);
	return fd;
}

/* The newest chunk of CPU cpu (its index, header in *c), or -1 */
static long current_chunk(const struct gt_file_header *h, int cpu, struct gt_chunk_header *c)
{
	long best = -1;
	struct gt_chunk_header x;
	for (uint64_t k = 0; k < h->n_chunks; k++)
		if (pread(capture_fd, &x, sizeof x, (off_t)(h->header_size + k * h->chunk_size)) == sizeof x &&
		    x.magic == GT_CHUNK_MAGIC && x.cpu == (uint32_t)cpu && (best < 0 || x.seq > c->seq))
			best = (long)k, *c = x;
	return best;
}

/* Where in chunk k (header c) a reservation is not committed yet: its offset, else 0 */
static uint64_t open_record(const struct gt_file_header *h, long k, const struct gt_chunk_header *c)
{
	static uint64_t words[(1u << 20) / 8];
	uint64_t end = c->used < h->chunk_size ? c->used : h->chunk_size;
	if (end > sizeof words ||
	    pread(capture_fd, words, end, (off_t)(h->header_size + k * h->chunk_size)) != (ssize_t)end)
		return 0;
	for (uint64_t off = GT_CHUNK_HEADER_SIZE; off + 8 <= end;) {
		uint64_t w = words[off / 8];
		if (!w)
			return off;
		uint64_t len = (w & GT_COMPACT_BIT) ? gt_compact_words(w) * 8 : ((w >> 16) & 0xffff) * 8;
		if (!len)
			return 0;
		off += len;
	}
	return 0;
}

static void stall_handler(int sig, siginfo_t *si, void *uc)
{
	(void)sig, (void)si;
	uintptr_t pc = interrupted_pc(uc);
	int stop = pc >= tracer_lo && pc < tracer_hi;
	unsigned gen = atomic_load(&stall_release), cpu = 0;
	raw_call(SYS_getcpu, (long)&cpu, 0, 0);
	atomic_store(&stall_cpu, (int)cpu);
	atomic_store(&stall_state, stop ? STALL_STOPPED : STALL_PASSED);
	raw_futex((void *)&stall_state, FUTEX_WAKE_PRIVATE, 1);
	while (stop && atomic_load(&stall_release) == gen)
		raw_futex((void *)&stall_release, FUTEX_WAIT_PRIVATE, gen);
}

static void *stall_writer(void *arg)
{
	(void)arg;
	char b = 0;
	while (!atomic_load(&stall_over))
		if (write(devnull, &b, 1) != 1)
			abort();
	return NULL;
}

/* this thread on the CPU cpu of the set, if it has one */
static void stall_on(const cpu_set_t *set, int cpu)
{
	cpu_set_t one;
	if (cpu < 0 || !CPU_ISSET(cpu, set))
		return;
	CPU_ZERO(&one);
	CPU_SET(cpu, &one);
	sched_setaffinity(0, sizeof one, &one);
}

/* The writer is stopped in the tracer on CPU cpu: 1 when it is in a record, after main wrote
 * on that CPU until the record's chunk was in use again (*reused = 1) or STALL_MAX_WRITES
 * facts */
static int stall_turnover(const cpu_set_t *all, int cpu, int *reused)
{
	struct gt_file_header h;
	struct gt_chunk_header c = {0}, now;
	if (capture_fd < 0 || pread(capture_fd, &h, sizeof h, 0) != sizeof h)
		return 0;
	long k = current_chunk(&h, cpu, &c);
	if (k < 0 || !open_record(&h, k, &c))
		return 0;
	stall_on(all, cpu);
	char b = 0;
	for (long n = 0; n < STALL_MAX_WRITES; n++) {
		if (write(devnull, &b, 1) != 1)
			abort();
		if (pread(capture_fd, &now, sizeof now, (off_t)(h.header_size + k * h.chunk_size)) == sizeof now &&
		    now.magic == GT_CHUNK_MAGIC && now.seq != c.seq) {
			*reused = 1;
			break;
		}
	}
	return 1;
}

static void stall(long attempts)
{
	/* the writer alone on a CPU, so that a signal meets it anywhere in its loop rather than
	 * where main's wake-ups preempt it; main on another */
	cpu_set_t all;
	int cpus[2] = {-1, -1};
	if (sched_getaffinity(0, sizeof all, &all))
		abort();
	for (int c = 0, k = 0; c < CPU_SETSIZE && k < 2; c++)
		if (CPU_ISSET(c, &all))
			cpus[k++] = c;
	stall_on(&all, cpus[0]);
	dl_iterate_phdr(find_tracer, NULL);
	capture_fd = open_capture();
	struct sigaction sa = {.sa_sigaction = stall_handler, .sa_flags = SA_SIGINFO | SA_RESTART};
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);
	devnull = open("/dev/null", O_WRONLY | O_CLOEXEC);
	pthread_t writer;
	if (pthread_create(&writer, NULL, stall_writer, NULL))
		abort();
	stall_on(&all, cpus[1]);
	int stops = 0, reused = 0;
	long a = 0;
	for (; a < attempts && !stops; a++) {
		atomic_store(&stall_state, STALL_ASKED);
		pthread_kill(writer, SIGUSR1);
		int st;
		while ((st = atomic_load(&stall_state)) == STALL_ASKED)
			raw_futex((void *)&stall_state, FUTEX_WAIT_PRIVATE, STALL_ASKED);
		if (st == STALL_STOPPED) {
			stops = stall_turnover(&all, atomic_load(&stall_cpu), &reused);
			stall_on(&all, cpus[1]);
			atomic_fetch_add(&stall_release, 1);
			raw_futex((void *)&stall_release, FUTEX_WAKE_PRIVATE, 1);
		}
	}
	atomic_store(&stall_over, 1);
	pthread_join(writer, NULL);
	fprintf(stderr, "stops %d (%ld signals), its chunk reused %d\n", stops, a, reused);
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
	if (!strcmp(what, "stall")) {
		stall(atol(argv[2]));
		printf("stall\n");
		return 0;
	}
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
