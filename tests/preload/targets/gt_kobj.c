/* Waits that another process ends, for tests/preload/test_kernel_objects.c.  Every wait
 * blocks by construction: the side that ends it first waits until the waiter sleeps in the
 * system call (/proc/PID/task/TID/syscall), never for a guessed time.
 *
 *   gt-kobj pipeline N    fork; the parent writes N lines into a pipe, each once the child
 *                         sleeps in read, then closes it; the child reads to end of file.
 *                         The parent then sleeps in waitpid until the child ends, and the
 *                         child exits only once its parent sleeps there.
 *   gt-kobj pipeline-wait3 N   the same, the parent waiting with wait3 (as dash does)
 *   gt-kobj eof-at-exit   fork; the child writes a line into a pipe once the parent sleeps
 *                         in read, then exits (no close) once it sleeps there again: the
 *                         parent reads the line, then end of file
 *   gt-kobj psem N        a process-shared semaphore in MAP_SHARED|MAP_ANONYMOUS memory
 *                         inherited across fork: the child waits N times, the parent posts
 *                         each time the child sleeps on it
 *   gt-kobj psem-file N   the same with the semaphore in a file that each process maps on its
 *                         own (different addresses, same file and offset)
 *   gt-kobj psem-two N    the child and a thread of the parent ("sem-waiter") wait on one
 *                         process-shared semaphore, the child first: N times the parent posts
 *                         twice, waking the child, then (once the child sleeps again) the
 *                         thread, the waiter queued first in the kernel each time
 *   gt-kobj pmutex N      a process-shared mutex inherited across fork: N times the parent
 *                         holds it until the child sleeps trying to lock it
 *   gt-kobj pcond N       a process-shared condition variable (and mutex): N times the child
 *                         waits for its turn, the parent signals once it sleeps
 *   gt-kobj psem-many N   postgres' shape: MANY_CHILDREN children, each sleeping on a
 *                         semaphore of its own in one shared array (PGSemaphoreLock); N rounds,
 *                         in each the parent posts every child's once that child sleeps on it
 * Each prints lines that do not depend on timing.  Its polling loops yield through raw
 * system calls: a waiting process adds no facts to its capture (however long the other one
 * takes to be scheduled), so the facts a wake is matched with stay close together. */
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "wait_blocked.h"

static void die(const char *what)
{
	perror(what);
	exit(3);
}

/* The parent returns once the child sleeps in NR (first argument ARG, or any when ~0). */
static void wait_child_in(pid_t child, long nr, uintptr_t arg)
{
	if (arg == ~(uintptr_t)0)
		gt_proc_wait_blocked(child, child, nr, 0, 0);
	else
		gt_proc_wait_blocked(child, child, nr, arg, arg + 1);
}

/* The child's progress (waits done), in memory both processes share: the parent ends the
 * next wait only once the child has come back from the previous one and sleeps again. */
static _Atomic long *progress;

static void wait_progress(long n)
{
	while (atomic_load(progress) < n)
		syscall(SYS_sched_yield);
}

static void shared_progress(void)
{
	progress = mmap(NULL, sizeof *progress, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (progress == MAP_FAILED)
		die("mmap");
}

static int use_wait3;

static int child_status(pid_t child)
{
	int st;
	if ((use_wait3 ? wait3(&st, 0, NULL) : waitpid(child, &st, 0)) != child)
		die("waitpid");
	return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

/* Runs child_fn(n) in a forked child that exits after it; returns the child's pid. */
static pid_t fork_child(void (*child_fn)(int), int n)
{
	fflush(stdout);
	pid_t child = fork();
	if (child < 0)
		die("fork");
	if (!child) {
		child_fn(n);
		fflush(stdout);
		_exit(0);
	}
	return child;
}

static int pipeline(int n)
{
	int fds[2];
	if (pipe(fds))
		die("pipe");
	fflush(stdout);
	pid_t child = fork();
	if (child < 0)
		die("fork");
	if (!child) {
		close(fds[1]);
		char buf[64];
		long got = 0, lines = 0;
		ssize_t r;
		while ((r = read(fds[0], buf, sizeof buf)) > 0) {
			got += r;
			for (ssize_t i = 0; i < r; i++)
				lines += buf[i] == '\n';
			atomic_fetch_add(progress, 1);
		}
		printf("child read %ld lines, %ld bytes, then %s\n", lines, got, r ? "an error" : "end of file");
		fflush(stdout);
		/* the parent's waitpid blocks: exit only once it sleeps there */
		gt_proc_wait_blocked(getppid(), getppid(), SYS_wait4, 0, 0);
		_exit(0);
	}
	close(fds[0]);
	for (int i = 0; i < n; i++) {
		wait_progress(i);
		wait_child_in(child, SYS_read, (uintptr_t)fds[0]);
		char line[32];
		int len = snprintf(line, sizeof line, "line %d\n", i);
		if (write(fds[1], line, (size_t)len) != len)
			die("write");
	}
	wait_progress(n);
	wait_child_in(child, SYS_read, (uintptr_t)fds[0]);
	close(fds[1]);
	printf("child exited %d\n", child_status(child));
	return 0;
}

static int eof_fds[2];

static void eof_child(int n)
{
	(void)n;
	pid_t parent = getppid();
	gt_proc_wait_blocked(parent, parent, SYS_read, (uintptr_t)eof_fds[0], (uintptr_t)eof_fds[0] + 1);
	if (write(eof_fds[1], "line\n", 5) != 5)
		die("write");
	while (atomic_load(progress) < 1)
		syscall(SYS_sched_yield);
	gt_proc_wait_blocked(parent, parent, SYS_read, (uintptr_t)eof_fds[0], (uintptr_t)eof_fds[0] + 1);
}

static int eof_at_exit(void)
{
	if (pipe(eof_fds))
		die("pipe");
	pid_t child = fork_child(eof_child, 0);
	close(eof_fds[1]);
	char buf[64];
	ssize_t r, got = 0;
	while ((r = read(eof_fds[0], buf, sizeof buf)) > 0) {
		got += r;
		atomic_fetch_add(progress, 1);
	}
	printf("parent read %zd bytes, then %s\n", got, r ? "an error" : "end of file");
	printf("child exited %d\n", child_status(child));
	return 0;
}

static int psem(int n, int in_file)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	int fd = -1;
	sem_t *s;
	if (in_file) {
		char path[] = "/tmp/gt-kobj-XXXXXX";
		fd = mkstemp(path);
		if (fd < 0 || unlink(path) || ftruncate(fd, (off_t)(2 * page)))
			die("semaphore file");
		/* the semaphore at offset page + 64 of the file */
		char *m = mmap(NULL, 2 * page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (m == MAP_FAILED)
			die("mmap");
		s = (sem_t *)(m + page + 64);
	} else {
		s = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
		if (s == MAP_FAILED)
			die("mmap");
	}
	if (sem_init(s, 1, 0))
		die("sem_init");
	fflush(stdout);
	pid_t child = fork();
	if (child < 0)
		die("fork");
	if (!child) {
		sem_t *cs = s;
		if (in_file) {
			/* a mapping of its own: another address, the same file and offset */
			char *m = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)page);
			if (m == MAP_FAILED)
				die("child mmap");
			cs = (sem_t *)(m + 64);
		}
		int ok = 0;
		for (int i = 0; i < n; i++) {
			ok += sem_wait(cs) == 0;
			atomic_fetch_add(progress, 1);
		}
		printf("child waited %d times on %s\n", ok, cs == s ? "the inherited mapping" : "its own mapping");
		fflush(stdout);
		_exit(0);
	}
	for (int i = 0; i < n; i++) {
		wait_progress(i);
		wait_child_in(child, SYS_futex, ~(uintptr_t)0);
		if (sem_post(s))
			die("sem_post");
	}
	printf("child exited %d\n", child_status(child));
	return 0;
}

/* psem-two: the semaphore, the rounds the thread may wait in, its waits done, its tid. */
static sem_t *two_sem;
static _Atomic long two_round, two_done;
static _Atomic pid_t two_tid;

static void *two_waiter(void *arg)
{
	long n = (long)arg;
	pthread_setname_np(pthread_self(), "sem-waiter");
	atomic_store(&two_tid, gt_gettid());
	for (long i = 0; i < n; i++) {
		while (atomic_load(&two_round) <= i)
			syscall(SYS_sched_yield);
		if (sem_wait(two_sem))
			die("sem_wait");
		atomic_fetch_add(&two_done, 1);
	}
	return NULL;
}

static void two_child(int n)
{
	int ok = 0;
	for (int i = 0; i < n; i++) {
		ok += sem_wait(two_sem) == 0;
		atomic_fetch_add(progress, 1);
	}
	printf("child waited %d times\n", ok);
}

static int psem_two(int n)
{
	two_sem = mmap(NULL, sizeof *two_sem, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (two_sem == MAP_FAILED || sem_init(two_sem, 1, 0))
		die("semaphore");
	uintptr_t lo = (uintptr_t)two_sem, hi = lo + sizeof *two_sem;
	pid_t child = fork_child(two_child, n);
	pthread_t th;
	if (pthread_create(&th, NULL, two_waiter, (void *)(long)n))
		die("pthread_create");
	while (!atomic_load(&two_tid))
		syscall(SYS_sched_yield);
	for (long i = 0; i < n; i++) {
		/* the child queues first, then the thread: a post wakes the one queued first */
		wait_progress(i);
		wait_child_in(child, SYS_futex, lo);
		atomic_store(&two_round, i + 1);
		gt_wait_blocked(two_tid, SYS_futex, lo, hi);
		if (sem_post(two_sem))
			die("sem_post");
		wait_progress(i + 1);
		if (i + 1 < n)   /* queued again behind the thread: the next post is the thread's */
			wait_child_in(child, SYS_futex, lo);
		if (sem_post(two_sem))
			die("sem_post");
		while (atomic_load(&two_done) <= i)
			syscall(SYS_sched_yield);
	}
	if (pthread_join(th, NULL))
		die("pthread_join");
	printf("the thread waited %ld times\n", (long)atomic_load(&two_done));
	printf("child exited %d\n", child_status(child));
	return 0;
}

/* Process-shared mutex and condition variable in memory inherited across fork. */
static struct pshared {
	pthread_mutex_t m;
	pthread_cond_t c;
	_Atomic long locked;       /* rounds the parent has locked m for (pmutex) */
	long turn;                 /* under m (pcond) */
} *ps;

static void pshared_init(void)
{
	ps = mmap(NULL, sizeof *ps, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (ps == MAP_FAILED)
		die("mmap");
	pthread_mutexattr_t ma;
	pthread_condattr_t ca;
	if (pthread_mutexattr_init(&ma) || pthread_mutexattr_setpshared(&ma, PTHREAD_PROCESS_SHARED) ||
	    pthread_mutex_init(&ps->m, &ma) || pthread_condattr_init(&ca) ||
	    pthread_condattr_setpshared(&ca, PTHREAD_PROCESS_SHARED) || pthread_cond_init(&ps->c, &ca))
		die("pshared init");
}

static void pmutex_child(int n)
{
	for (long i = 0; i < n; i++) {
		while (atomic_load(&ps->locked) <= i)   /* the parent holds it for round i */
			syscall(SYS_sched_yield);
		pthread_mutex_lock(&ps->m);
		pthread_mutex_unlock(&ps->m);
		atomic_fetch_add(progress, 1);
	}
	printf("child locked %d times\n", n);
}

static int pmutex(int n)
{
	pshared_init();
	pid_t child = fork_child(pmutex_child, n);
	for (long i = 0; i < n; i++) {
		wait_progress(i);
		pthread_mutex_lock(&ps->m);
		atomic_store(&ps->locked, i + 1);
		wait_child_in(child, SYS_futex, (uintptr_t)&ps->m);
		pthread_mutex_unlock(&ps->m);
	}
	printf("child exited %d\n", child_status(child));
	return 0;
}

static void pcond_child(int n)
{
	for (long i = 0; i < n; i++) {
		pthread_mutex_lock(&ps->m);
		while (ps->turn <= i)
			pthread_cond_wait(&ps->c, &ps->m);
		pthread_mutex_unlock(&ps->m);
		atomic_fetch_add(progress, 1);
	}
	printf("child waited for %d turns\n", n);
}

static int pcond(int n)
{
	pshared_init();
	pid_t child = fork_child(pcond_child, n);
	for (long i = 0; i < n; i++) {
		wait_progress(i);
		wait_child_in(child, SYS_futex, ~(uintptr_t)0);
		pthread_mutex_lock(&ps->m);
		ps->turn = i + 1;
		pthread_cond_signal(&ps->c);
		pthread_mutex_unlock(&ps->m);
	}
	printf("child exited %d\n", child_status(child));
	return 0;
}

/* psem-many: each child's semaphore and waits done, in memory all share */
enum { MANY_CHILDREN = 6 };
static struct many {
	sem_t sem[MANY_CHILDREN];
	_Atomic long done[MANY_CHILDREN];
} *many;
static int many_me;

static void many_child(int n)
{
	int ok = 0;
	for (int i = 0; i < n; i++) {
		ok += sem_wait(&many->sem[many_me]) == 0;
		atomic_fetch_add(&many->done[many_me], 1);
	}
	fflush(stdout);
	_exit(ok != n);   /* no line of its own: the children's would interleave */
}

static int psem_many(int n)
{
	many = mmap(NULL, sizeof *many, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (many == MAP_FAILED)
		die("mmap");
	pid_t child[MANY_CHILDREN];
	for (many_me = 0; many_me < MANY_CHILDREN; many_me++) {
		if (sem_init(&many->sem[many_me], 1, 0))
			die("sem_init");
		child[many_me] = fork_child(many_child, n);
	}
	for (long i = 0; i < n; i++)
		for (int c = 0; c < MANY_CHILDREN; c++) {
			while (atomic_load(&many->done[c]) < i)
				syscall(SYS_sched_yield);
			wait_child_in(child[c], SYS_futex, (uintptr_t)&many->sem[c]);
			if (sem_post(&many->sem[c]))
				die("sem_post");
		}
	int bad = 0;
	for (int c = 0; c < MANY_CHILDREN; c++)
		bad += child_status(child[c]) != 0;
	printf("%d children waited %d times each, %d did not\n", MANY_CHILDREN, n, bad);
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 3)
		return 2;
	int n = atoi(argv[2]);
	if (n < 1)
		return 2;
	shared_progress();
	if (!strcmp(argv[1], "pipeline"))
		return pipeline(n);
	if (!strcmp(argv[1], "pipeline-wait3")) {
		use_wait3 = 1;
		return pipeline(n);
	}
	if (!strcmp(argv[1], "psem"))
		return psem(n, 0);
	if (!strcmp(argv[1], "psem-file"))
		return psem(n, 1);
	if (!strcmp(argv[1], "psem-two"))
		return psem_two(n);
	if (!strcmp(argv[1], "eof-at-exit"))
		return eof_at_exit();
	if (!strcmp(argv[1], "pmutex"))
		return pmutex(n);
	if (!strcmp(argv[1], "pcond"))
		return pcond(n);
	if (!strcmp(argv[1], "psem-many"))
		return psem_many(n);
	return 2;
}
