/* gt-fds SCENARIO: programs that use descriptors and address space the way daemons and
 * shells do.  Each prints what it observed (descriptor numbers, errors, counts), so a traced
 * run's output can be compared with an untraced one (tests/preload/test_fds.c). */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "fd_list.h"

/* printed through a descriptor of its own: the scenarios close 0-2 too */
static int out = 1;

static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (write(out, buf, (size_t)n) != n)
		_exit(3);
}

/* r and errno as "r" or "-1 ERRNO" */
static const char *res(long r)
{
	static char buf[4][64];
	static int i;
	char *b = buf[i++ % 4];
	if (r < 0)
		snprintf(b, 64, "%ld %s", r, strerrorname_np(errno));
	else
		snprintf(b, 64, "%ld", r);
	return b;
}

/* facts the tracer must record: one GT_YIELD each */
static void yields(int n)
{
	for (int i = 0; i < n; i++)
		sched_yield();
}

static int n_yields(void)
{
	const char *v = getenv("GT_FDS_YIELDS");
	return v ? atoi(v) : 1000;
}

/* Closes what it did not open, reopens over 0-2, dup2/dup3/F_DUPFD onto low numbers. */
static int s_lowfds(void)
{
	out = fcntl(1, F_DUPFD, 100);
	yields(n_yields());
	for (int fd = 0; fd < 10; fd++) {
		if (fd == out)
			continue;
		long r = close(fd);
		say("close %d: %s\n", fd, res(r));
	}
	for (int i = 0; i < 3; i++) {
		long r = open("/dev/null", O_RDWR);
		say("open /dev/null: %s\n", res(r));
	}
	char path[4200];
	snprintf(path, sizeof path, "%s/lowfds.data", getenv("GOTRACE_CAPTURE_DIR"));
	int f = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	say("open data: %s\n", res(f));
	say("dup2 to 5: %s\n", res(dup2(f, 5)));
	say("dup3 to 6: %s\n", res(dup3(f, 6, O_CLOEXEC)));
	say("F_DUPFD 0: %s\n", res(fcntl(f, F_DUPFD, 0)));
	say("F_DUPFD_CLOEXEC 3: %s\n", res(fcntl(f, F_DUPFD_CLOEXEC, 3)));
	say("close 9: %s\n", res(close(9)));
	say("F_GETFD 9: %s\n", res(fcntl(9, F_GETFD)));
	say("dup2 9 to 4: %s\n", res(dup2(9, 4)));
	int p[2];
	say("pipe2: %s", res(pipe2(p, O_CLOEXEC)));
	say(" %d %d\n", p[0], p[1]);
	yields(n_yields());
	for (int i = 0; i < 100; i++)
		if (write(3, "0123456789abcdef", 16) != 16)
			say("write failed: %s\n", res(-1));
	say("first free: %s\n", res(open("/dev/null", O_RDONLY)));
	return 0;
}

/* A daemon: closes every descriptor from 3 up, every way there is, and goes on working. */
static void *worker(void *arg)
{
	yields(n_yields() / 4);
	return arg;
}

static int s_closeall(void)
{
	yields(n_yields());
	say("close_range: %s\n", res(close_range(3, ~0u, 0)));
	closefrom(3);
	say("closefrom: done\n");
	say("SYS_close_range: %s\n", res(syscall(SYS_close_range, 3, ~0u, 0)));
	int closed = 0;
	for (int fd = 3; fd < 1024; fd++)
		closed += close(fd) == 0;
	say("closed one by one: %d\n", closed);
	pthread_t th;
	say("pthread_create: %d\n", pthread_create(&th, NULL, worker, NULL));
	yields(n_yields());
	say("pthread_join: %d\n", pthread_join(th, NULL));
	say("first free: %s\n", res(open("/dev/null", O_RDONLY)));
	return 0;
}

/* How many files fit under RLIMIT_NOFILE (argv[2]: set it here first). */
static int s_nofile(const char *limit)
{
	if (limit) {
		struct rlimit rl = {(rlim_t)atoi(limit), (rlim_t)atoi(limit)};
		say("setrlimit: %s\n", res(setrlimit(RLIMIT_NOFILE, &rl)));
	}
	yields(n_yields());
	int fds[4096], n = 0;
	for (;;) {
		int fd = open("/dev/null", O_RDONLY);
		if (fd < 0) {
			say("opened %d, then %s\n", n, res(fd));
			break;
		}
		fds[n++] = fd;
		if (n == 4096)
			break;
	}
	say("last %d\n", n ? fds[n - 1] : -1);
	if (getenv("GT_FDS_AT_LIMIT"))
		yields(n_yields());
	for (int i = 0; i < n; i++)
		close(fds[i]);
	yields(n_yields());
	return 0;
}

static void say_fd(int fd, const char *what)
{
	/* 0-2 are the harness's files, in a directory of each run */
	say("fd %d%s%s\n", fd, fd > 2 ? " " : "", fd > 2 ? what : "");
}

/* The descriptors this program was given: numbers and what they are, 0-2 aside. */
static int s_lsfd(void)
{
	yields(n_yields());
	int n = gt_fd_list(say_fd);
	if (n < 0)
		return 4;
	say("%d descriptors\n", n);
	return 0;
}

static int s_exec_lsfd(const char *self)
{
	yields(n_yields());
	execl(self, self, "lsfd", (char *)NULL);
	return 5;
}

/* A program that puts a file of its own where its capture was (renaming the capture away):
 * the tracer must not grow or truncate that file. */
static int s_replace(void)
{
	char path[4200], moved[4300];
	snprintf(path, sizeof path, "%s/gotrace-%d.gtcap", getenv("GOTRACE_CAPTURE_DIR"), (int)getpid());
	snprintf(moved, sizeof moved, "%s.moved", path);
	rename(path, moved); /* fails untraced: there is no capture */
	int f = open(path, O_CREAT | O_WRONLY | O_TRUNC, 0600);
	say("write: %s\n", res(write(f, "impostor", 8)));
	yields(n_yields());
	struct stat st;
	long r = fstat(f, &st);
	say("fstat: %s, size %lld\n", res(r), (long long)st.st_size);
	return 0;
}

/* RLIMIT_AS of 1 GiB, then what such a program does: a large allocation, threads. */
static void *stack_user(void *arg)
{
	volatile char buf[64 << 10];
	buf[0] = 1;
	yields(100);
	return buf[0] ? arg : NULL;
}

static unsigned long long gtcap_mapped(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	char line[4400];
	unsigned long long sum = 0, lo, hi;
	while (f && fgets(line, sizeof line, f))
		if (strstr(line, ".gtcap") && sscanf(line, "%llx-%llx", &lo, &hi) == 2)
			sum += hi - lo;
	if (f)
		fclose(f);
	return sum;
}

static int s_as(void)
{
	struct rlimit rl = {1ull << 30, 1ull << 30};
	say("setrlimit: %s\n", res(setrlimit(RLIMIT_AS, &rl)));
	char *p = malloc(600u << 20);
	say("malloc 600 MiB: %s\n", p ? "ok" : strerror(errno));
	pthread_t th[8];
	int made = 0;
	for (int i = 0; i < 8; i++)
		made += pthread_create(&th[i], NULL, stack_user, NULL) == 0;
	say("threads: %d\n", made);
	for (int i = 0; i < made; i++)
		pthread_join(th[i], NULL);
	yields(n_yields());
	free(p);
	/* for the test: how much of the address space the capture holds (stderr: untraced 0) */
	fprintf(stderr, "gtcap mapped %llu\n", gtcap_mapped());
	say("done\n");
	return 0;
}

/* A stack through a frame without unwind information: libunwind validates the frame-pointer
 * chain there (its validation pipe). */
static void leaf(void)
{
	struct timespec ts = {0, 1000};
	nanosleep(&ts, NULL);
}

#if defined(__x86_64__)
__asm__(".text\n"
	".globl gt_nocfi_call\n"
	".type gt_nocfi_call, @function\n"
	"gt_nocfi_call:\n"
	"	push %rbp\n"
	"	mov %rsp, %rbp\n"
	"	call *%rdi\n"
	"	pop %rbp\n"
	"	ret\n"
	".size gt_nocfi_call, .-gt_nocfi_call\n");
void gt_nocfi_call(void (*fn)(void));

static __attribute__((noinline)) void outer(void)
{
	gt_nocfi_call(leaf);
	__asm__ volatile("");
}

static int s_nocfi(void)
{
	fprintf(stderr, "outer %p\n", (void *)outer);
	outer();
	say("first open: %s\n", res(open("/dev/null", O_RDONLY)));
	return 0;
}
#else
static int s_nocfi(void)
{
	leaf();
	return 6; /* x86-64 only: the test skips */
}
#endif

/* ---- lowest: open returns the lowest free descriptor, whatever the other threads do ---- */
static atomic_int lowest_done;

/* chunks filled: one fact a yield */
static void *filler(void *arg)
{
	while (!atomic_load(&lowest_done))
		sched_yield();
	return arg;
}

/* a ping-pong of two process-shared semaphores: each side's wait blocks, and a blocking wait
 * on a process-shared object is where the tracer looks its memory up */
static sem_t *pp;

static void *ping(void *arg)
{
	while (!atomic_load(&lowest_done)) {
		sem_post(&pp[0]);
		sem_wait(&pp[1]);
	}
	return arg;
}

static void *pong(void *arg)
{
	while (!atomic_load(&lowest_done)) {
		sem_wait(&pp[0]);
		sem_post(&pp[1]);
	}
	return arg;
}

/* close(fd); open() N times, counting each open that did not give the number just closed,
 * while OTHERS threads run: none ("alone"), a thread that yields ("grow": the capture grows
 * meanwhile), or that thread and two that ping-pong ("shared") */
static int s_lowest(long n, int others)
{
	const char *path = "lowest.data";
	int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
	pp = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (fd < 0 || pp == MAP_FAILED)
		return 1;
	sem_init(&pp[0], 1, 0);
	sem_init(&pp[1], 1, 0);
	pthread_t th[3];
	void *(*body[3])(void *) = {filler, ping, pong};
	for (int i = 0; i < others; i++)
		pthread_create(&th[i], NULL, body[i], NULL);
	long other = 0;
	for (long i = 0; i < n; i++) {
		close(fd);
		int again = open(path, O_RDWR);
		if (again < 0)
			return 1;
		other += again != fd;
		fd = again;
	}
	atomic_store(&lowest_done, 1);
	sem_post(&pp[0]); /* whichever side waits goes on, sees the end */
	sem_post(&pp[1]);
	for (int i = 0; i < others; i++)
		pthread_join(th[i], NULL);
	say("lowest: %ld opens, %ld gave another number than the one just closed\n", n, other);
	return other ? 1 : 0;
}

/* ---- mlockall under RLIMIT_MEMLOCK ---- */

/* CAP_IPC_LOCK dropped (effective and permitted, this thread's: the process has one yet), so
 * that RLIMIT_MEMLOCK holds as for an ordinary user: raw capget/capset, no libcap */
static int drop_ipc_lock(void)
{
	struct { uint32_t version; int pid; } head = {0x20080522 /* _LINUX_CAPABILITY_VERSION_3 */, 0};
	struct { uint32_t effective, permitted, inheritable; } data[2];
	if (syscall(SYS_capget, &head, data) != 0)
		return -1;
	data[0].effective &= ~(1u << 14); /* CAP_IPC_LOCK */
	data[0].permitted &= ~(1u << 14);
	return (int)syscall(SYS_capset, &head, data);
}

static void *toucher(void *arg)
{
	char *p = malloc(1 << 20); /* locked as it faults in: counted against the limit */
	for (int i = 0; p && i < (1 << 20); i += 4096)
		p[i] = 1;
	for (int i = 0; i < 200000; i++)
		sched_yield();
	free(p);
	return arg;
}

/* mlockall(MCL_CURRENT | MCL_FUTURE) under an RLIMIT_MEMLOCK of MIB MiB, then a thread that
 * touches 1 MiB and yields 200 000 times, then 16 MiB more; each step's result printed */
static int s_mlockall(long mib)
{
	struct rlimit lim = {(rlim_t)mib << 20, (rlim_t)mib << 20};
	say("setrlimit: %s\n", res(setrlimit(RLIMIT_MEMLOCK, &lim)));
	say("drop CAP_IPC_LOCK: %s\n", res(drop_ipc_lock()));
	say("mlockall: %s\n", res(mlockall(MCL_CURRENT | MCL_FUTURE)));
	pthread_t th;
	pthread_attr_t small; /* an 8 MiB stack, locked, would not fit */
	pthread_attr_init(&small);
	pthread_attr_setstacksize(&small, 256 << 10);
	int r = pthread_create(&th, &small, toucher, NULL);
	say("thread: %d\n", r);
	if (!r)
		pthread_join(th, NULL);
	void *big = malloc(16 << 20); /* past the limit: refused untraced as traced */
	say("16 MiB more: %s\n", big ? "got" : "refused");
	free(big);
	say("munlockall: %s\n", res(munlockall()));
	return 0;
}

int main(int argc, char **argv)
{
	const char *s = argc > 1 ? argv[1] : "";
	if (!strcmp(s, "lowfds"))
		return s_lowfds();
	if (!strcmp(s, "closeall"))
		return s_closeall();
	if (!strcmp(s, "nofile"))
		return s_nofile(argc > 2 ? argv[2] : NULL);
	if (!strcmp(s, "lsfd"))
		return s_lsfd();
	if (!strcmp(s, "exec-lsfd"))
		return s_exec_lsfd(argv[0]);
	if (!strcmp(s, "as"))
		return s_as();
	if (!strcmp(s, "replace"))
		return s_replace();
	if (!strcmp(s, "nocfi"))
		return s_nocfi();
	if (!strcmp(s, "mlockall") && argc == 3)
		return s_mlockall(atol(argv[2]));
	if (!strcmp(s, "lowest") && argc == 4)
		return s_lowest(atol(argv[2]), !strcmp(argv[3], "shared") ? 3 : !strcmp(argv[3], "grow"));
	fprintf(stderr, "usage: gt-fds lowfds|closeall|nofile [LIMIT]|lsfd|exec-lsfd|as|replace|nocfi"
		"|lowest N alone|grow|shared|mlockall MIB\n");
	return 2;
}
