/* microbench: the cost of one operation, in ns, measured inside the process.
 *
 *   microbench OP CALLS
 *
 * prints "<ns per call> <calls made>" on stdout: the fastest of 5 batches of CALLS/5 timed in
 * thread CPU time (the machine is shared: the fastest batch is the one least disturbed, and
 * time spent descheduled is not counted), after one untimed
 * warm-up batch.  "calls made" counts the warm-up too, so that facts found in a capture can
 * be divided by it.
 *
 * The floor of one fact (what no tracer can go below): rdtsc, rdtscp (which also gives the
 * CPU), the rseq area's cpu_id and sched_getcpu for comparison, and "reserve": rdtsc and the
 * rseq area's cpu_id (rdtscp without one), one atomic fetch-add on the used counter of that
 * CPU's chunk in a MAP_SHARED file mapping and a 16-byte (compact) record stored as two words,
 * its first word last (include/gotrace/capture.h).  "unwN" is
 * libunwind's unw_backtrace of N frames (N <= 40), opened as libgotrace.so opens it.
 * The operations a tracer hooks: "mutex" (an uncontended lock + unlock pair; "mutex-mutexwait"
 * the same while another thread is blocked on another mutex, "mutex-condwait" while two are
 * blocked on a condition variable, "mutex-handoff" right after the same mutex was contended:
 * this thread slept on it and was let in; "rwlock" and "sem" the pair of a rwlock and of a
 * semaphore, "rwlock-rwlockwait" and "sem-semwait" the same while another thread is blocked on
 * another one), "yield"
 * (sched_yield), "read" (one byte of /dev/zero), "pipe" (one byte written into a pipe and
 * read back: a pipe's descriptors carry their kernel key), and "yield-stub" / "read-stub", which call
 * the same functions on an fd (or for a call) that bench/stub.c answers without entering the
 * kernel: run under LD_PRELOAD="libgotrace.so libgtbenchstub.so" against
 * LD_PRELOAD=libgtbenchstub.so alone, the difference is exactly what the tracer adds;
 * "yield-stub-new" takes turns among three callers, so that each fact's stack differs from the
 * last two.
 * Every operation runs below BENCH_DEPTH nested frames, so a stack walk is never short. */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/rseq.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

#include "../tests/preload/targets/wait_blocked.h"
#include "gotrace/capture.h"
#include "stub.h"

#define BENCH_DEPTH 40
#define BATCHES 5
#define CHUNK_BYTES (1u << 20)

static volatile uint64_t sink;

/* This thread's CPU time: time spent descheduled on a shared machine is not the call's. */
static double now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

/* ---- the floor ------------------------------------------------------------------------ */

static void op_rdtsc(long n)
{
	uint64_t acc = 0;
	for (long i = 0; i < n; i++)
		acc += __rdtsc();
	sink = acc;
}

static void op_rdtscp(long n)
{
	uint64_t acc = 0;
	unsigned aux;
	for (long i = 0; i < n; i++) {
		acc += __rdtscp(&aux);
		acc += aux & 0xfff;
	}
	sink = acc;
}

static struct rseq *rseq_area(void)
{
	if (__rseq_size == 0)
		return NULL;
	return (struct rseq *)((char *)__builtin_thread_pointer() + __rseq_offset);
}

static void op_rseq(long n)
{
	volatile struct rseq *rs = rseq_area();
	uint64_t acc = 0;
	for (long i = 0; i < n; i++)
		acc += rs->cpu_id;
	sink = acc;
}

static void op_getcpu(long n)
{
	uint64_t acc = 0;
	for (long i = 0; i < n; i++)
		acc += (unsigned)sched_getcpu();
	sink = acc;
}

struct slot {
	_Atomic(char *) chunk;
	char pad[56];
};
static struct slot slots[GT_MAX_CPUS];

static int map_chunks(void)
{
	char path[] = "/tmp/gt-microbench-XXXXXX";
	int fd = mkstemp(path);
	if (fd < 0)
		return -1;
	unlink(path);
	long ncpu = sysconf(_SC_NPROCESSORS_CONF);
	if (ncpu < 1 || ncpu > GT_MAX_CPUS || ftruncate(fd, (off_t)ncpu * CHUNK_BYTES) < 0)
		return -1;
	char *base = mmap(NULL, (size_t)ncpu * CHUNK_BYTES, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	close(fd);
	if (base == MAP_FAILED)
		return -1;
	for (long c = 0; c < ncpu; c++) {
		char *chunk = base + c * CHUNK_BYTES;
		struct gt_chunk_header *h = (struct gt_chunk_header *)chunk;
		h->magic = GT_CHUNK_MAGIC;
		h->cpu = (uint32_t)c;
		h->used = GT_CHUNK_HEADER_SIZE;
		h->first_tsc = __rdtsc();
		memset(chunk + GT_CHUNK_HEADER_SIZE, 0, CHUNK_BYTES - GT_CHUNK_HEADER_SIZE);
		atomic_store(&slots[c].chunk, chunk);
	}
	return 0;
}

/* One 16-byte fact: timestamp and CPU, reservation, payload, first word (with the
 * timestamp's delta from the chunk's first_tsc) last. */
static void op_reserve(long n)
{
	volatile struct rseq *rs = rseq_area();
	for (long i = 0; i < n; i++) {
		unsigned aux;
		uint64_t tsc;
		if (rs)
			aux = rs->cpu_id, tsc = __rdtsc();
		else
			tsc = __rdtscp(&aux);
		char *chunk = atomic_load_explicit(&slots[aux & 0xfff].chunk, memory_order_relaxed);
		_Atomic uint64_t *used = (_Atomic uint64_t *)(chunk + offsetof(struct gt_chunk_header, used));
		uint64_t off = atomic_fetch_add_explicit(used, 16, memory_order_relaxed);
		if (__builtin_expect(off + 16 > CHUNK_BYTES, 0)) {
			/* a full chunk: start over (a tracer would take a fresh one here) */
			atomic_store_explicit(used, GT_CHUNK_HEADER_SIZE, memory_order_relaxed);
			continue;
		}
		uint64_t *r = (uint64_t *)(chunk + off);
		uint64_t d = tsc - ((struct gt_chunk_header *)chunk)->first_tsc;
		r[1] = (uint64_t)(uintptr_t)r;
		atomic_store_explicit((_Atomic uint64_t *)r,
				      gt_compact_word(GT_C_WAKE_ONE, GT_BK_MUTEX, 1, 0) | d << 32,
				      memory_order_release);
	}
}

static int (*unw_backtrace_fn)(void **, int);
static int unw_frames;

static void op_unw(long n)
{
	void *pcs[GT_MAX_STACK_DEPTH];
	uint64_t acc = 0;
	for (long i = 0; i < n; i++)
		acc += (uint64_t)unw_backtrace_fn(pcs, unw_frames);
	sink = acc;
}

/* ---- hooked operations ------------------------------------------------------------------ */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

/* A pair of calls that an operation measures, in a function of its own (fn): callgrind counts
 * the instructions inside it alone (--toggle-collect=fn), whatever the shape around it; op
 * makes n pairs on obj. */
#define BENCH_PAIR(fn, op, type, obj, first, second) \
	static __attribute__((noinline, noclone)) void fn(type *o, long i) \
	{ \
		first(o); \
		sink = (uint64_t)i; \
		second(o); \
	} \
	static void op(long n) \
	{ \
		for (long i = 0; i < n; i++) \
			fn(&obj, i); \
	}

BENCH_PAIR(bench_pair, op_mutex, pthread_mutex_t, lock, pthread_mutex_lock, pthread_mutex_unlock)

/* The shapes around the pair: other threads blocked elsewhere, or the same mutex contended
 * just before.  Helpers wait for a state they can see, yielding by raw system call (no hook
 * writes a fact for it, no sleep). */
static void yield_raw(void)
{
	syscall(SYS_sched_yield);
}

/* glibc's lock word: 2 once a thread sleeps on the mutex (a hooked waiter registers before) */
static int mutex_has_sleeper(pthread_mutex_t *m)
{
	return __atomic_load_n(&m->__data.__lock, __ATOMIC_ACQUIRE) == 2;
}

/* "mutex-mutexwait": one thread blocked on another mutex, which this one holds */
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;

static void *block_on_held(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&held);
	pthread_mutex_unlock(&held);
	return NULL;
}

/* "rwlock" and "sem": the pair of a rwlock (write lock + unlock) and of a semaphore (post +
 * wait), each in a function of its own as bench_pair; "rwlock-rwlockwait" and "sem-semwait":
 * while another thread is blocked on another rwlock (held for writing) or semaphore (at 0) */
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_rwlock_t rwlock_held = PTHREAD_RWLOCK_INITIALIZER;
static sem_t sem, sem_held;
static _Atomic pid_t blocked_tid;

BENCH_PAIR(bench_rwlock_pair, op_rwlock, pthread_rwlock_t, rwlock, pthread_rwlock_wrlock,
	   pthread_rwlock_unlock)
BENCH_PAIR(bench_sem_pair, op_sem, sem_t, sem, sem_post, sem_wait)

static void *block_on_rwlock(void *arg)
{
	(void)arg;
	atomic_store(&blocked_tid, gt_gettid());
	pthread_rwlock_wrlock(&rwlock_held);
	pthread_rwlock_unlock(&rwlock_held);
	return NULL;
}

static void *block_on_sem(void *arg)
{
	(void)arg;
	atomic_store(&blocked_tid, gt_gettid());
	sem_wait(&sem_held);
	return NULL;
}

/* "mutex-condwait": COND_WAITERS threads blocked on a condition variable */
#define COND_WAITERS 2
static pthread_mutex_t cond_mutex = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int cond_ready, cond_go;

static void *wait_on_cond(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&cond_mutex);
	cond_ready++;
	while (!cond_go)
		pthread_cond_wait(&cond, &cond_mutex);
	pthread_mutex_unlock(&cond_mutex);
	return NULL;
}

/* "mutex-handoff": before each pair, the helper holds `lock`, this thread blocks on it, the
 * helper's unlock lets it in (glibc leaves the word contended) and this thread's unlock ends
 * the contention; then the pair, timed alone (rdtsc around it, the bracket's own cost
 * taken off: the rest of the round is not the pair's). */
enum { HANDOFF_IDLE, HANDOFF_TAKE, HANDOFF_HELD, HANDOFF_STOP };
static _Atomic int handoff = HANDOFF_IDLE;
static uint64_t pair_ticks, bracket_ticks;

static void *handoff_helper(void *arg)
{
	(void)arg;
	for (;;) {
		int s;
		while ((s = atomic_load(&handoff)) != HANDOFF_TAKE)
			if (s == HANDOFF_STOP)
				return NULL;
			else
				yield_raw();
		pthread_mutex_lock(&lock);
		atomic_store(&handoff, HANDOFF_HELD);
		while (!mutex_has_sleeper(&lock))
			yield_raw();
		pthread_mutex_unlock(&lock);
	}
}

static inline uint64_t ticks(void)
{
	unsigned aux;
	uint64_t t = __rdtscp(&aux);
	_mm_lfence();
	return t;
}

static void op_handoff(long n)
{
	for (long i = 0; i < n; i++) {
		atomic_store(&handoff, HANDOFF_TAKE);
		while (atomic_load(&handoff) != HANDOFF_HELD)
			yield_raw();
		atomic_store(&handoff, HANDOFF_IDLE);
		pthread_mutex_lock(&lock); /* sleeps until the helper sees it asleep and unlocks */
		pthread_mutex_unlock(&lock);
		uint64_t t0 = ticks();
		bench_pair(&lock, i);
		uint64_t t1 = ticks();
		uint64_t t2 = ticks();
		pair_ticks += t1 - t0;
		bracket_ticks += t2 - t1;
	}
}

/* ns per tick, over a 20 ms stretch of the monotonic clock */
static double ns_per_tick(void)
{
	struct timespec a, b;
	clock_gettime(CLOCK_MONOTONIC, &a);
	uint64_t t0 = ticks(), t1;
	double ns;
	do {
		clock_gettime(CLOCK_MONOTONIC, &b);
		t1 = ticks();
		ns = (double)(b.tv_sec - a.tv_sec) * 1e9 + (double)(b.tv_nsec - a.tv_nsec);
	} while (ns < 2e7);
	return ns / (double)(t1 - t0);
}

static void op_yield(long n)
{
	for (long i = 0; i < n; i++)
		sched_yield();
}

/* sched_yield from one call site reached by three callers in turn: each stack differs from
 * the two before it two frames down, so every fact walks its stack (the tracer keeps the last
 * two walks from a place, and never has this one) */
static __attribute__((noinline)) void yield_inner(void)
{
	sched_yield();
	__asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays */
}

#define YIELD_FROM(name, k) \
	static __attribute__((noinline)) void name(void) \
	{ \
		yield_inner(); \
		__asm__ volatile("" ::: "memory"); \
		sink += k; \
	}
YIELD_FROM(yield_from_a, 1)
YIELD_FROM(yield_from_b, 2)
YIELD_FROM(yield_from_c, 3)

static void op_yield_new(long n)
{
	static void (*const from[3])(void) = {yield_from_a, yield_from_b, yield_from_c};
	for (long i = 0; i < n; i++)
		from[i % 3]();
}

static int read_fd = -1;

static void op_read(long n)
{
	char c;
	for (long i = 0; i < n; i++)
		if (read(read_fd, &c, 1) != 1)
			abort();
}

/* one byte written into a pipe and read back: the write and read hooks on a pipe */
static int pipe_fds[2] = {-1, -1};

static void op_pipe(long n)
{
	char c = 0;
	for (long i = 0; i < n; i++)
		if (write(pipe_fds[1], &c, 1) != 1 || read(pipe_fds[0], &c, 1) != 1)
			abort();
}

/* ---- driver ------------------------------------------------------------------------------ */

struct run {
	void (*op)(long);
	long batch;
	double best_ns;
};

static __attribute__((noinline)) void at_depth(int depth, struct run *r)
{
	if (depth > 0) {
		at_depth(depth - 1, r);
		__asm__ volatile("" ::: "memory"); /* not a tail call: the frame stays */
		return;
	}
	r->op(r->batch);
	r->best_ns = 1e300;
	double tick_ns = r->op == op_handoff ? ns_per_tick() : 0;
	for (int b = 0; b < BATCHES; b++) {
		pair_ticks = bracket_ticks = 0;
		double t0 = now_ns();
		r->op(r->batch);
		double dt = (now_ns() - t0) / (double)r->batch;
		if (r->op == op_handoff) /* the pairs alone: the round around them is setup */
			dt = ((double)pair_ticks - (double)bracket_ticks) * tick_ns / (double)r->batch;
		if (dt < r->best_ns)
			r->best_ns = dt;
	}
}

/* The pair with other threads around it: they start, reach the state the shape needs, the
 * pairs run, and they are let go and joined. */
static int lock_shape(const char *name, struct run *r)
{
	pthread_t th[COND_WAITERS];
	int n = 0;
	if (!strcmp(name, "mutex-mutexwait")) {
		pthread_mutex_lock(&held);
		n = !pthread_create(&th[0], NULL, block_on_held, NULL);
		while (n && !mutex_has_sleeper(&held))
			yield_raw();
		r->op = op_mutex;
	} else if (!strcmp(name, "rwlock-rwlockwait") || !strcmp(name, "sem-semwait")) {
		int rw = !strcmp(name, "rwlock-rwlockwait");
		if (rw)
			pthread_rwlock_wrlock(&rwlock_held);
		uintptr_t obj = rw ? (uintptr_t)&rwlock_held : (uintptr_t)&sem_held;
		n = !pthread_create(&th[0], NULL, rw ? block_on_rwlock : block_on_sem, NULL);
		while (n && !atomic_load(&blocked_tid))
			yield_raw();
		if (n) /* asleep in futex(2) on the object (tests' helper, raw system calls) */
			gt_wait_blocked(atomic_load(&blocked_tid), SYS_futex, obj,
					obj + (rw ? sizeof rwlock_held : sizeof sem_held));
		r->op = rw ? op_rwlock : op_sem;
	} else if (!strcmp(name, "mutex-condwait")) {
		for (int i = 0; i < COND_WAITERS; i++)
			n += !pthread_create(&th[n], NULL, wait_on_cond, NULL);
		for (int ready = 0; ready < n; yield_raw()) {
			pthread_mutex_lock(&cond_mutex); /* free: each waiter is inside its wait */
			ready = cond_ready;
			pthread_mutex_unlock(&cond_mutex);
		}
		r->op = op_mutex;
	} else {
		n = !pthread_create(&th[0], NULL, handoff_helper, NULL);
		r->op = op_handoff;
	}
	if (n != (strcmp(name, "mutex-condwait") ? 1 : COND_WAITERS)) {
		fprintf(stderr, "microbench: pthread_create failed\n");
		return 1;
	}
	at_depth(BENCH_DEPTH, r);
	if (!strcmp(name, "mutex-mutexwait"))
		pthread_mutex_unlock(&held);
	if (!strcmp(name, "rwlock-rwlockwait"))
		pthread_rwlock_unlock(&rwlock_held);
	if (!strcmp(name, "sem-semwait"))
		sem_post(&sem_held);
	pthread_mutex_lock(&cond_mutex);
	cond_go = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&cond_mutex);
	atomic_store(&handoff, HANDOFF_STOP);
	for (int i = 0; i < n; i++)
		pthread_join(th[i], NULL);
	printf("%.3f %ld\n", r->best_ns, r->batch * (BATCHES + 1));
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: microbench OP CALLS\n");
		return 2;
	}
	const char *name = argv[1];
	long calls = atol(argv[2]);
	if (calls < BATCHES) {
		fprintf(stderr, "microbench: CALLS must be at least %d\n", BATCHES);
		return 2;
	}
	struct run r = {.batch = calls / BATCHES};
	sem_init(&sem, 0, 0);
	sem_init(&sem_held, 0, 0);
	if (!strcmp(name, "rdtsc"))
		r.op = op_rdtsc;
	else if (!strcmp(name, "rdtscp"))
		r.op = op_rdtscp;
	else if (!strcmp(name, "rseq")) {
		if (!rseq_area()) {
			fprintf(stderr, "microbench: glibc registered no rseq area\n");
			return 1;
		}
		r.op = op_rseq;
	} else if (!strcmp(name, "getcpu"))
		r.op = op_getcpu;
	else if (!strcmp(name, "reserve")) {
		if (map_chunks() < 0) {
			perror("microbench: chunk mapping");
			return 1;
		}
		r.op = op_reserve;
	} else if (!strncmp(name, "unw", 3) && atoi(name + 3) > 0 && atoi(name + 3) <= BENCH_DEPTH) {
		unw_frames = atoi(name + 3);
		void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
		unw_backtrace_fn = h ? (int (*)(void **, int))dlsym(h, "unw_backtrace") : NULL;
		if (!unw_backtrace_fn) {
			fprintf(stderr, "microbench: libunwind.so.8 has no unw_backtrace\n");
			return 1;
		}
		r.op = op_unw;
	} else if (!strcmp(name, "mutex"))
		r.op = op_mutex;
	else if (!strcmp(name, "rwlock"))
		r.op = op_rwlock;
	else if (!strcmp(name, "sem"))
		r.op = op_sem;
	else if (!strcmp(name, "mutex-mutexwait") || !strcmp(name, "mutex-condwait") ||
		 !strcmp(name, "mutex-handoff") || !strcmp(name, "rwlock-rwlockwait") ||
		 !strcmp(name, "sem-semwait"))
		return lock_shape(name, &r);
	else if (!strcmp(name, "yield") || !strcmp(name, "yield-stub"))
		r.op = op_yield; /* the stub answers every sched_yield when it is preloaded */
	else if (!strcmp(name, "yield-stub-new"))
		r.op = op_yield_new;
	else if (!strcmp(name, "read") || !strcmp(name, "read-stub")) {
		int fd = open("/dev/zero", O_RDONLY);
		if (fd < 0) {
			perror("microbench: /dev/zero");
			return 1;
		}
		if (!strcmp(name, "read-stub")) {
			if (dup2(fd, GT_BENCH_STUB_FD) < 0) {
				perror("microbench: dup2");
				return 1;
			}
			close(fd);
			fd = GT_BENCH_STUB_FD;
		}
		read_fd = fd;
		r.op = op_read;
	} else if (!strcmp(name, "pipe")) {
		if (pipe(pipe_fds) < 0) {
			perror("microbench: pipe");
			return 1;
		}
		r.op = op_pipe;
	} else {
		fprintf(stderr, "microbench: unknown operation %s\n", name);
		return 2;
	}
	at_depth(BENCH_DEPTH, &r);
	printf("%.3f %ld\n", r.best_ns, r.batch * (BATCHES + 1));
	return 0;
}
