/* gt-privdrop SCENARIO: a root process forks a worker that gives up its privileges, as
 * nginx's workers do, then works (tests/preload/test_privdrop.c).  Run as root, in a capture
 * directory of mode 0700 that the worker can no longer enter.  Prints what the worker
 * observed (results, errno, its descriptors, its threads' credentials), so that a traced run
 * compares with an untraced one; the worker's pid goes to stderr.  The file the worker
 * writes is in $GT_PRIVDROP_DATA, else in the capture directory.
 *
 *   worker      setgid, initgroups, setuid to nobody as the worker's first calls; then 4
 *               threads contend a mutex and the worker writes a file opened before the drop
 *   broadcast   the worker's threads exist before setresuid: glibc's setxid broadcast must
 *               change every thread's credentials
 *   grow        after the drop, GT_PRIVDROP_YIELDS sched_yield calls (the capture grows)
 *   raw         the drop by syscall(SYS_setresuid, ...), then 1000 sched_yield calls
 *   exec        after the drop the worker execs this program ("execd"): 4 threads contend
 *               a mutex, 1000 sched_yield calls
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/capability.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/fsuid.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "fd_list.h"
#include "wait_blocked.h"

int capset(void *h, void *d); /* libcap's header declares it, glibc's none */

#define NOBODY 65534
#define N_THREADS 4
#define ROUNDS 2000

static void say(const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof buf, fmt, ap);
	va_end(ap);
	if (write(1, buf, (size_t)n) != n)
		_exit(3);
}

/* r and errno as "r errno-name": errno is printed after a success too (left as it was) */
static const char *res(long r, int e)
{
	static char buf[4][64];
	static int i;
	char *b = buf[i++ % 4];
	snprintf(b, 64, "%ld %s", r, e ? strerrorname_np(e) : "0");
	return b;
}

#define CALL(expr) \
	({ \
		errno = 0; \
		long r_ = (long)(expr); \
		res(r_, errno); \
	})

/* the credentials the kernel holds for the calling thread (glibc's getters ask the kernel) */
static void ids_text(char *buf, size_t cap);

static void say_ids(const char *who)
{
	char buf[128];
	ids_text(buf, sizeof buf);
	say("%s: %s\n", who, buf);
}

static void say_fd(int fd, const char *what)
{
	const char *base = strrchr(what, '/');
	say("fd %d %s\n", fd, fd > 2 && base ? base + 1 : "");
}

/* the worker's descriptors: numbers and, past 0-2, the file's name */
static void say_fds(void)
{
	if (gt_fd_list(say_fd) < 0)
		say("opendir /proc/self/fd: %s\n", strerrorname_np(errno));
}

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static long counter;
static int data_fd = -1;

static _Atomic pid_t contender_tid[16];

static void *contender(void *arg)
{
	long k = (long)arg;
	char line[64];
	atomic_store(&contender_tid[k], (pid_t)syscall(SYS_gettid));
	for (int i = 0; i < ROUNDS; i++) {
		pthread_mutex_lock(&lock);
		counter++;
		if (i % 500 == 0 && data_fd >= 0) {
			int n = snprintf(line, sizeof line, "thread %ld round %d\n", k, i);
			/* pwrite at a place of its own: the file is the same traced or not */
			if (pwrite(data_fd, line, (size_t)n, (off_t)(k * 4 + i / 500) * 32) != n)
				_exit(4);
		}
		pthread_mutex_unlock(&lock);
	}
	return NULL;
}

/* threads that first block on the held lock (each seen asleep in futex), then contend */
static void contend(void)
{
	pthread_t th[N_THREADS];
	pid_t tids[N_THREADS];
	pthread_mutex_lock(&lock);
	for (long k = 0; k < N_THREADS; k++) {
		if (pthread_create(&th[k], NULL, contender, (void *)k) != 0)
			_exit(5);
	}
	/* every thread's tid, as each says it (/proc/self/task may also list a thread of the
	 * tracer's, for the microseconds one opens a file apart) */
	for (int k = 0; k < N_THREADS; k++) {
		while (!(tids[k] = atomic_load(&contender_tid[k])))
			syscall(SYS_sched_yield);
		gt_wait_blocked(tids[k], SYS_futex, (uintptr_t)&lock, (uintptr_t)(&lock + 1));
	}
	pthread_mutex_unlock(&lock);
	for (int k = 0; k < N_THREADS; k++)
		pthread_join(th[k], NULL);
	say("counter %ld\n", counter);
}

/* nginx's order, with nothing between the calls that the tracer hooks (initgroups's own
 * reads are libc's internal calls): without the credential hooks the first fact would come
 * after setuid */
static void drop(void)
{
	const char *g = CALL(setgid(NOBODY));
	const char *i = CALL(initgroups("nobody", NOBODY));
	const char *u = CALL(setuid(NOBODY));
	say("setgid: %s\ninitgroups: %s\nsetuid: %s\n", g, i, u);
	/* as nginx may: /proc/self/task/TID/syscall is readable again (wait_blocked.h) */
	say("dumpable: %s\n", CALL(prctl(PR_SET_DUMPABLE, 1)));
}

/* what the dropped worker may no longer do fails as untraced, with the same errno */
static void after_drop(void)
{
	say("setuid(0): %s\n", CALL(setuid(0)));
	say("seteuid(0): %s\n", CALL(seteuid(0)));
	say("setreuid(0, 0): %s\n", CALL(setreuid(0, 0)));
	say("setresgid(0, 0, 0): %s\n", CALL(setresgid(0, 0, 0)));
	gid_t g = 0;
	say("setgroups: %s\n", CALL(setgroups(1, &g)));
	say("setfsuid(0): %s\n", CALL(setfsuid(0)));
	say("setfsgid(-1): %s\n", CALL(setfsgid((gid_t)-1)));
	struct __user_cap_header_struct h = {.version = 1, .pid = 0};
	struct __user_cap_data_struct d[2] = {{0}};
	say("capset(version 1): %s", CALL(capset(&h, d)));
	say(", version %#x\n", h.version);
	h.version = _LINUX_CAPABILITY_VERSION_3;
	say("capset(none): %s\n", CALL(capset(&h, d)));
	errno = EINTR; /* a success leaves errno alone */
	int r = setuid(NOBODY);
	say("setuid(nobody) again: %d, errno %s\n", r, strerrorname_np(errno));
	say_ids("worker");
}

static int worker_main(const char *scenario, const char *dir)
{
	/* nothing the tracer hooks before the drop: the capture is made by setgid's hook */
	if (!strcmp(scenario, "worker")) {
		drop();
		after_drop();
		contend();
		say_fds();
		return 0;
	}
	if (!strcmp(scenario, "grow")) {
		drop();
		const char *v = getenv("GT_PRIVDROP_YIELDS");
		int n = v ? atoi(v) : 1000;
		for (int i = 0; i < n; i++)
			sched_yield();
		say("yields %d\n", n);
		say_fds();
		return 0;
	}
	if (!strcmp(scenario, "exec")) {
		drop();
		fflush(stdout);
		execl("/proc/self/exe", "gt-privdrop", "execd", (char *)NULL);
		return 10;
	}
	if (!strcmp(scenario, "raw")) {
		/* the system calls themselves, as a program avoiding glibc's broadcast does:
		 * syscall() is the first hooked call */
		long g = syscall(SYS_setresgid, NOBODY, NOBODY, NOBODY);
		long u = syscall(SYS_setresuid, NOBODY, NOBODY, NOBODY);
		say("setresgid: %ld\nsetresuid: %ld\n", g, u);
		for (int i = 0; i < 1000; i++)
			sched_yield();
		say_ids("worker");
		return 0;
	}
	(void)dir;
	return 6;
}

/* threads alive across setresuid: every one of them reports nobody */
static pthread_barrier_t before, after;
static char ids[N_THREADS][128];

static void ids_text(char *buf, size_t cap)
{
	uid_t r, e, s;
	gid_t gr, ge, gs;
	getresuid(&r, &e, &s);
	getresgid(&gr, &ge, &gs);
	snprintf(buf, cap, "uid %u %u %u gid %u %u %u groups %d", r, e, s, gr, ge, gs,
		 getgroups(0, NULL));
}

static void *idler(void *arg)
{
	pthread_barrier_wait(&before);
	pthread_barrier_wait(&after);
	ids_text(ids[(long)arg], sizeof ids[0]);
	return NULL;
}

static int broadcast_main(void)
{
	pthread_t th[N_THREADS];
	pthread_barrier_init(&before, NULL, N_THREADS + 1);
	pthread_barrier_init(&after, NULL, N_THREADS + 1);
	for (long k = 0; k < N_THREADS; k++)
		pthread_create(&th[k], NULL, idler, (void *)k);
	pthread_barrier_wait(&before);
	say("setgroups: %s\n", CALL(setgroups(0, NULL)));
	say("setresgid: %s\n", CALL(setresgid(NOBODY, NOBODY, NOBODY)));
	say("setresuid: %s\n", CALL(setresuid(NOBODY, NOBODY, NOBODY)));
	pthread_barrier_wait(&after);
	for (int k = 0; k < N_THREADS; k++) {
		pthread_join(th[k], NULL);
		say("thread %d: %s\n", k, ids[k]);
	}
	say_ids("worker");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc < 2)
		return 2;
	if (!strcmp(argv[1], "execd")) {
		/* the worker's new program, run as nobody from the start */
		say_ids("execd");
		contend();
		for (int i = 0; i < 1000; i++)
			sched_yield();
		say_fds();
		return 0;
	}
	if (geteuid() != 0) {
		say("not root\n");
		return 7;
	}
	const char *dir = getenv("GT_PRIVDROP_DATA") ? getenv("GT_PRIVDROP_DATA") : getenv("GOTRACE_CAPTURE_DIR");
	char path[4096];
	snprintf(path, sizeof path, "%s/worker.data", dir ? dir : ".");
	/* opened by root, written by the worker after its drop */
	data_fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (data_fd < 0)
		return 8;
	fflush(stdout);
	pid_t pid = fork();
	if (pid == 0) {
		int rc = !strcmp(argv[1], "broadcast") ? broadcast_main() : worker_main(argv[1], dir);
		exit(rc);
	}
	dprintf(2, "worker %d\n", (int)pid);
	int status;
	if (waitpid(pid, &status, 0) != pid)
		return 9;
	say("worker status %#x\n", status);
	return 0;
}
