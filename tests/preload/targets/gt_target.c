/* gt-target SCENARIO: small programs run under libgotrace.so by the preload tests.  Each
 * scenario prints what its calls returned, so a traced run's output and exit status can be
 * compared with an untraced run. */
#include <errno.h>
#include <fcntl.h>
#include <linux/futex.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/file.h>
#include <sys/prctl.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../../preload/libc_syscalls.h"
#include "wait_blocked.h"

static pthread_mutex_t mtx = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static pthread_rwlock_t rw = PTHREAD_RWLOCK_INITIALIZER;
static sem_t sem;
static pthread_barrier_t barrier;
static atomic_int flag;
static pid_t main_tid;

/* Returns once the main thread sleeps in a futex on a word of OBJ (SIZE bytes). */
static void wait_main_blocked_on(const void *obj, size_t size)
{
	gt_wait_blocked(main_tid, SYS_futex, (uintptr_t)obj, (uintptr_t)obj + size);
}

static void msleep(int ms)
{
	struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
	nanosleep(&ts, NULL);
}

/* ---- threads ---- */
static void *plain(void *arg) { return arg; }
static void *exits(void *arg)
{
	pthread_exit(arg);
}
static _Atomic pid_t cancelled_tid;
static void *cancelled(void *arg)
{
	(void)arg;
	atomic_store(&cancelled_tid, gt_gettid());
	for (;;)
		pause(); /* a cancellation point */
	return NULL;
}
static void *named(void *arg)
{
	(void)arg;
	prctl(PR_SET_NAME, "prctl-name");
	/* still alive when main joins it: that join blocks (on a word of our descriptor) */
	wait_main_blocked_on((void *)pthread_self(), 4096);
	return NULL;
}

static int s_threads(void)
{
	pthread_t a, b, c, d;
	void *ret;
	pthread_create(&a, NULL, plain, (void *)1);
	pthread_create(&b, NULL, exits, (void *)2);
	pthread_create(&c, NULL, cancelled, NULL);
	pthread_create(&d, NULL, named, NULL);
	pthread_setname_np(d, "set-name");
	/* cancelled while it sleeps in pause() */
	while (!atomic_load(&cancelled_tid))
		syscall(SYS_sched_yield);
	gt_wait_blocked(atomic_load(&cancelled_tid), GT_NR_PAUSE, 0, 0);
	pthread_cancel(c);
	int r = pthread_join(a, &ret);
	printf("join a %d\n", r);
	r = pthread_join(b, &ret);
	printf("join b %d ret %ld\n", r, (long)ret);
	r = pthread_join(c, &ret);
	printf("join c %d cancelled %d\n", r, ret == PTHREAD_CANCELED);
	r = pthread_join(d, NULL);
	printf("join d %d\n", r);
	return 0;
}

/* ---- mutexes ---- */
static void *hold_then_release(void *arg)
{
	pthread_mutex_t *m = arg;
	pthread_mutex_lock(m);
	atomic_store(&flag, 1);
	wait_main_blocked_on(m, sizeof *m); /* the lock is contended: main sleeps on it */
	pthread_mutex_unlock(m);
	/* main's join of this thread blocks too (on a word of our descriptor), whichever of
	 * the two runs first once the lock is passed */
	wait_main_blocked_on((void *)pthread_self(), 4096);
	return NULL;
}

static void *die_holding(void *arg)
{
	pthread_mutex_lock(arg);
	return NULL; /* owner dies: robust mutex -> EOWNERDEAD */
}

static int contend(pthread_mutex_t *m)
{
	pthread_t t;
	atomic_store(&flag, 0);
	pthread_create(&t, NULL, hold_then_release, m);
	while (!atomic_load(&flag))
		sched_yield();
	int r = pthread_mutex_lock(m);
	pthread_mutex_unlock(m);
	pthread_join(t, NULL);
	return r;
}

static int s_mutex(void)
{
	pthread_mutexattr_t at;
	pthread_mutex_t m;
	printf("normal contended %d\n", contend(&mtx));

	pthread_mutexattr_init(&at);
	pthread_mutexattr_settype(&at, PTHREAD_MUTEX_ERRORCHECK);
	pthread_mutex_init(&m, &at);
	int r1 = pthread_mutex_lock(&m), r2 = pthread_mutex_lock(&m);
	int r3 = pthread_mutex_unlock(&m), r4 = pthread_mutex_unlock(&m);
	printf("errorcheck lock %d relock %d unlock %d unlock-again %d\n", r1, r2, r3, r4);
	pthread_mutex_destroy(&m);

	pthread_mutexattr_settype(&at, PTHREAD_MUTEX_RECURSIVE);
	pthread_mutex_init(&m, &at);
	r1 = pthread_mutex_lock(&m);
	r2 = pthread_mutex_lock(&m);
	r3 = pthread_mutex_unlock(&m);
	r4 = pthread_mutex_unlock(&m);
	printf("recursive %d %d %d %d\n", r1, r2, r3, r4);
	printf("recursive contended %d\n", contend(&m));
	pthread_mutex_destroy(&m);

	pthread_mutexattr_settype(&at, PTHREAD_MUTEX_ADAPTIVE_NP);
	pthread_mutex_init(&m, &at);
	printf("adaptive contended %d\n", contend(&m));
	pthread_mutex_destroy(&m);

	pthread_mutexattr_settype(&at, PTHREAD_MUTEX_NORMAL);
	pthread_mutexattr_setprotocol(&at, PTHREAD_PRIO_INHERIT);
	pthread_mutex_init(&m, &at);
	printf("pi contended %d\n", contend(&m));
	pthread_mutex_destroy(&m);

	if (getenv("GT_EMULATED_ON")) { /* qemu-user has no set_robust_list: the lock waits */
		printf("robust owner died: not emulated\n");
	} else {
		pthread_mutexattr_setprotocol(&at, PTHREAD_PRIO_NONE);
		pthread_mutexattr_setrobust(&at, PTHREAD_MUTEX_ROBUST);
		pthread_mutex_init(&m, &at);
		pthread_t t;
		pthread_create(&t, NULL, die_holding, &m);
		pthread_join(t, NULL);
		int r = pthread_mutex_lock(&m);
		printf("robust owner died %s\n", r == EOWNERDEAD ? "EOWNERDEAD" : "?");
		pthread_mutex_consistent(&m);
		pthread_mutex_unlock(&m);
		pthread_mutex_destroy(&m);
	}

	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	pthread_mutex_lock(&mtx);
	atomic_store(&flag, 0);
	printf("timedlock self-held %d\n", pthread_mutex_timedlock(&mtx, &ts) == ETIMEDOUT);
	pthread_mutex_unlock(&mtx);
	return 0;
}

/* ---- condition variables, rwlocks, semaphores, barriers ---- */
static void *signaller(void *arg)
{
	(void)arg;
	wait_main_blocked_on(&cond, sizeof cond);
	pthread_mutex_lock(&mtx);
	atomic_store(&flag, 1);
	pthread_cond_signal(&cond);
	/* signalled, main sleeps on the mutex inside glibc, where no hook sees it */
	wait_main_blocked_on(&mtx, sizeof mtx);
	pthread_mutex_unlock(&mtx);
	return NULL;
}

static _Atomic pid_t reader_tid;
static void *reader(void *arg)
{
	(void)arg;
	atomic_store(&reader_tid, gt_gettid());
	int r = pthread_rwlock_rdlock(&rw);
	pthread_rwlock_unlock(&rw);
	return (void *)(long)r;
}

static void *poster(void *arg)
{
	(void)arg;
	wait_main_blocked_on(&sem, sizeof sem);
	sem_post(&sem);
	return NULL;
}

static void *barrier_late(void *arg)
{
	(void)arg;
	wait_main_blocked_on(&barrier, sizeof barrier);
	pthread_barrier_wait(&barrier);
	return NULL;
}

static int s_sync(void)
{
	pthread_t t;
	void *ret;
	atomic_store(&flag, 0);
	pthread_create(&t, NULL, signaller, NULL);
	pthread_mutex_lock(&mtx);
	while (!atomic_load(&flag))
		pthread_cond_wait(&cond, &mtx);
	pthread_mutex_unlock(&mtx);
	pthread_join(t, NULL);
	printf("cond woken\n");

	pthread_rwlock_wrlock(&rw);
	pthread_create(&t, NULL, reader, NULL);
	while (!atomic_load(&reader_tid))
		syscall(SYS_sched_yield);
	gt_wait_blocked(atomic_load(&reader_tid), SYS_futex, (uintptr_t)&rw, (uintptr_t)(&rw + 1));
	pthread_rwlock_unlock(&rw);
	pthread_join(t, &ret);
	printf("rwlock reader %ld\n", (long)ret);

	sem_init(&sem, 0, 0);
	pthread_create(&t, NULL, poster, NULL);
	printf("sem_wait %d\n", sem_wait(&sem));
	pthread_join(t, NULL);
	errno = 0;
	int tr = sem_trywait(&sem);
	printf("sem_trywait %d errno %d\n", tr, errno);

	pthread_barrier_init(&barrier, NULL, 2);
	pthread_create(&t, NULL, barrier_late, NULL);
	int r = pthread_barrier_wait(&barrier);
	pthread_join(t, NULL);
	printf("barrier %d\n", r == 0 || r == PTHREAD_BARRIER_SERIAL_THREAD);

	printf("yield %d\n", sched_yield());
	printf("usleep %d\n", usleep(1000));
	printf("sleep %u\n", sleep(0));
	return 0;
}

/* ---- blocking system calls ---- */
static void *pipe_writer(void *arg)
{
	int fd = *(int *)arg;
	msleep(30);
	write(fd, "x", 1);
	return NULL;
}

static void *futex_waker(void *arg)
{
	msleep(30);
	atomic_store((atomic_int *)arg, 1);
	syscall(SYS_futex, arg, FUTEX_WAKE_PRIVATE, 1, NULL, NULL, 0);
	return NULL;
}

static int s_syscalls(void)
{
	int p[2], sv[2];
	char c;
	pthread_t t;
	pipe(p);
	pthread_create(&t, NULL, pipe_writer, &p[1]);
	printf("read %zd\n", read(p[0], &c, 1));
	pthread_join(t, NULL);

	socketpair(AF_UNIX, SOCK_STREAM, 0, sv);
	send(sv[0], "ab", 2, 0);
	char buf[8];
	printf("recv %zd\n", recv(sv[1], buf, sizeof buf, 0));
	struct pollfd pfd = {sv[1], POLLIN, 0};
	printf("poll %d\n", poll(&pfd, 1, 10));
	fd_set rs;
	FD_ZERO(&rs);
	FD_SET(sv[1], &rs);
	struct timeval tv = {0, 1000};
	printf("select %d\n", select(sv[1] + 1, &rs, NULL, NULL, &tv));
	int ep = epoll_create1(0);
	struct epoll_event ev = {.events = EPOLLIN}, out;
	epoll_ctl(ep, EPOLL_CTL_ADD, sv[1], &ev);
	printf("epoll_wait %d\n", epoll_wait(ep, &out, 1, 5));
	close(ep);

	char path[] = "/tmp/gt-target-XXXXXX";
	int fd = mkstemp(path);
	printf("write %zd\n", write(fd, "hello", 5));
	printf("fsync %d\n", fsync(fd));
	printf("pread %zd\n", pread(fd, buf, 5, 0));
	printf("flock %d\n", flock(fd, LOCK_EX));
	struct flock fl = {.l_type = F_WRLCK, .l_whence = SEEK_SET};
	printf("fcntl setlkw %d\n", fcntl(fd, F_SETLKW, &fl));
	close(fd);
	fd = open(path, O_RDONLY);
	printf("open %d\n", fd >= 0);
	close(fd);
	unlink(path);

	/* descriptors that are neither files nor devices: an eventfd, a directory */
	int efd = eventfd(1, 0);
	uint64_t count;
	printf("eventfd read %zd\n", read(efd, &count, sizeof count));
	close(efd);
	int dir = open("/tmp", O_RDONLY | O_DIRECTORY);
	printf("fsync directory %d\n", fsync(dir));
	close(dir);

	pid_t pid = fork();
	if (pid == 0)
		_exit(7);
	int st;
	int waited = waitpid(pid, &st, 0) == pid;
	printf("waitpid %d status %d\n", waited, WEXITSTATUS(st));

	atomic_int word = 0;
	pthread_create(&t, NULL, futex_waker, &word);
	while (!atomic_load(&word))
		syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	pthread_join(t, NULL);
	printf("futex woken\n");

	errno = 0;
	ssize_t bad = read(-1, buf, 1);
	printf("read bad fd %zd errno %d\n", bad, errno);
	return 0;
}

/* ---- processes ---- */
static int s_fork(void)
{
	pthread_mutex_lock(&mtx);
	pthread_mutex_unlock(&mtx);
	pid_t pid = fork();
	if (pid == 0) {
		pthread_t t;
		pthread_create(&t, NULL, plain, NULL);
		pthread_join(t, NULL);
		exit(3);
	}
	int st;
	waitpid(pid, &st, 0);
	printf("child exit %d\n", WEXITSTATUS(st));
	return 0;
}

static int s_exec(const char *self)
{
	fflush(stdout);
	execl(self, self, "threads", (char *)NULL);
	perror("execl");
	return 1;
}

static int s_system(void)
{
	int r = system("exit 5");
	printf("system %d\n", WEXITSTATUS(r));
	return 0;
}

/* ---- signals ---- */
static void handler(int sig)
{
	(void)sig;
	pthread_mutex_lock(&mtx);
	pthread_mutex_unlock(&mtx);
	write(1, "handled\n", 8);
}

static int s_signal(void)
{
	signal(SIGUSR1, handler);
	for (int i = 0; i < 200; i++) {
		raise(SIGUSR1);
		sched_yield();
	}
	return 0;
}

/* many small facts: chunk turnover and file growth */
static int s_many(void)
{
	for (int i = 0; i < 40000; i++)
		sched_yield();
	printf("many done\n");
	return 0;
}

/* a loop of facts that the test kills with SIGKILL */
static __attribute__((noreturn)) int s_spin(void)
{
	printf("spinning\n");
	fflush(stdout);
	for (;;) {
		sched_yield();
		usleep(100);
	}
}

/* 400000 facts, 3.2 MB of one-word yields: chunks filled and more allocated ahead; then it
 * waits for the test's SIGKILL */
static __attribute__((noreturn)) int s_fill(void)
{
	for (int i = 0; i < 400000; i++)
		sched_yield();
	printf("filled\n");
	fflush(stdout);
	for (;;)
		pause();
}

static int s_exit_code(int code, int how)
{
	pthread_mutex_lock(&mtx);
	pthread_mutex_unlock(&mtx);
	printf("bye\n");
	fflush(stdout);
	if (how == 1)
		_exit(code);
	if (how == 2)
		abort();
	return code;
}

/* One call from the same frame address, reached by two chains of callers that differ only
 * two frames down: the tracer's memo of a walk (stacks.c) must tell them apart. */
static __attribute__((noinline)) int leaf_call(int fd)
{
	char c;
	int r = (int)read(fd, &c, 0);
	__asm__ volatile("" ::: "memory"); /* no tail call: the frame stays */
	return r;
}

static __attribute__((noinline)) int middle(int fd)
{
	int r = leaf_call(fd);
	__asm__ volatile("" ::: "memory");
	return r;
}

static __attribute__((noinline)) int via_a(int fd)
{
	volatile int pad[8] = {fd};
	return middle(pad[0]) + 1;
}

static __attribute__((noinline)) int via_b(int fd)
{
	volatile int pad[8] = {fd};
	return middle(pad[0]) + 2;
}

static int s_callers(void)
{
	int fd = open("/dev/null", O_RDONLY), sum = 0;
	for (int i = 0; i < 4000; i++)
		sum += i & 2 ? via_a(fd) : via_b(fd);
	close(fd);
	printf("callers %d\n", sum);
	return 0;
}

int main(int argc, char **argv)
{
	setvbuf(stdout, NULL, _IOLBF, 0);
	main_tid = gt_gettid();
	const char *s = argc > 1 ? argv[1] : "";
	if (!strcmp(s, "threads"))
		return s_threads();
	if (!strcmp(s, "mutex"))
		return s_mutex();
	if (!strcmp(s, "sync"))
		return s_sync();
	if (!strcmp(s, "syscalls"))
		return s_syscalls();
	if (!strcmp(s, "callers"))
		return s_callers();
	if (!strcmp(s, "fork"))
		return s_fork();
	if (!strcmp(s, "exec"))
		return s_exec(argv[0]);
	if (!strcmp(s, "system"))
		return s_system();
	if (!strcmp(s, "signal"))
		return s_signal();
	if (!strcmp(s, "many"))
		return s_many();
	if (!strcmp(s, "spin"))
		return s_spin();
	if (!strcmp(s, "fill"))
		return s_fill();
	if (!strcmp(s, "exit42"))
		return s_exit_code(42, 0);
	if (!strcmp(s, "_exit9"))
		return s_exit_code(9, 1);
	if (!strcmp(s, "abort"))
		return s_exit_code(0, 2);
	fprintf(stderr, "usage: gt-target threads|mutex|sync|syscalls|callers|fork|exec|system|signal|spin|fill|exit42|_exit9|abort\n");
	return 2;
}
