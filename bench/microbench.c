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
 * The operations a tracer hooks: "mutex" (an uncontended lock + unlock pair), "yield"
 * (sched_yield), "read" (one byte of /dev/zero), "pipe" (one byte written into a pipe and
 * read back: a pipe's descriptors carry their kernel key), and "yield-stub" / "read-stub", which call
 * the same functions on an fd (or for a call) that bench/stub.c answers without entering the
 * kernel: run under LD_PRELOAD="libgotrace.so libgtbenchstub.so" against
 * LD_PRELOAD=libgtbenchstub.so alone, the difference is exactly what the tracer adds.
 * Every operation runs below BENCH_DEPTH nested frames, so a stack walk is never short. */
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/rseq.h>
#include <time.h>
#include <unistd.h>
#include <x86intrin.h>

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

static void op_mutex(long n)
{
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&lock);
		sink = (uint64_t)i;
		pthread_mutex_unlock(&lock);
	}
}

static void op_yield(long n)
{
	for (long i = 0; i < n; i++)
		sched_yield();
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
	for (int b = 0; b < BATCHES; b++) {
		double t0 = now_ns();
		r->op(r->batch);
		double dt = (now_ns() - t0) / (double)r->batch;
		if (dt < r->best_ns)
			r->best_ns = dt;
	}
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
	else if (!strcmp(name, "yield") || !strcmp(name, "yield-stub"))
		r.op = op_yield; /* the stub answers every sched_yield when it is preloaded */
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
