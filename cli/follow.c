/* follow: see follow.h. */
#include "follow.h"
#include "cli_common.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gotrace/capture.h>

#define fail(...) gt_cli_fail("run", __VA_ARGS__)

static const int forwarded_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
#define N_FORWARDED (sizeof forwarded_signals / sizeof *forwarded_signals)

static double monotonic_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The process that adopts an orphan of ours while gotrace is no subreaper (init, or a
 * subreaper above gotrace): a grandchild made an orphan says whom getppid() names once its
 * parent is reaped.  0 when it cannot be found. */
static pid_t orphan_adopter(void)
{
	int go[2], answer[2];
	pid_t adopter = 0;
	if (pipe2(go, O_CLOEXEC) != 0)
		return 0;
	if (pipe2(answer, O_CLOEXEC) != 0) {
		close(go[0]);
		close(go[1]);
		return 0;
	}
	pid_t child = fork();
	if (child == 0) {
		if (fork() == 0) {
			char c;
			close(go[1]);
			pid_t p = read(go[0], &c, 1) == 1 ? getppid() : 0;
			_exit(write(answer[1], &p, sizeof p) == (ssize_t)sizeof p ? 0 : 1);
		}
		_exit(0);
	}
	close(go[0]);
	close(answer[1]);
	int st;
	if (child > 0 && waitpid(child, &st, 0) == child && write(go[1], "", 1) == 1 &&
	    read(answer[0], &adopter, sizeof adopter) != (ssize_t)sizeof adopter)
		adopter = 0;
	close(go[1]);
	close(answer[0]);
	return adopter;
}

int gt_follow_prepare(struct gt_follow *f)
{
	sigset_t set;
	*f = (struct gt_follow){ .sigfd = -1 };
	/* gotrace's own messages to a closed pipe fail with EPIPE instead of killing it */
	struct sigaction ign = { .sa_handler = SIG_IGN };
	sigaction(SIGPIPE, &ign, &f->old_pipe);
	/* and a file of gotrace's at RLIMIT_FSIZE (kernel records, the trace) fails with EFBIG */
	sigaction(SIGXFSZ, &ign, &f->old_xfsz);
	/* orphans of the tree (daemons) are reparented to gotrace, which reaps them; the
	 * library's getppid names the one that would have adopted them (GOTRACE_REAPER) */
	f->adopter = orphan_adopter();
	if (prctl(PR_SET_CHILD_SUBREAPER, 1) != 0) {
		fprintf(stderr, "gotrace: cannot become a subreaper (%s): daemons of the command "
			"are not waited for\n", strerror(errno));
		f->adopter = 0;
	}
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	for (size_t i = 0; i < N_FORWARDED; i++)
		sigaddset(&set, forwarded_signals[i]);
	sigprocmask(SIG_BLOCK, &set, &f->old_mask);
	f->sigfd = signalfd(-1, &set, SFD_CLOEXEC);
	if (f->sigfd < 0) {
		fail("signalfd: %s", strerror(errno));
		gt_follow_child(f);
		return -1;
	}
	gt_group_signal_start(&f->group);
	return 0;
}

void gt_follow_child(const struct gt_follow *f)
{
	sigaction(SIGPIPE, &f->old_pipe, NULL);
	sigaction(SIGXFSZ, &f->old_xfsz, NULL);
	sigprocmask(SIG_SETMASK, &f->old_mask, NULL);
}

void gt_follow_end(struct gt_follow *f)
{
	if (f->sigfd >= 0)
		close(f->sigfd);
	f->sigfd = -1;
	gt_group_signal_stop(&f->group);
}

/* ---- processes ------------------------------------------------------------------------ */

struct proc_stat {
	char state;
	pid_t ppid;
	uint64_t start;  /* field 22: clock ticks since boot */
};

/* false when the process is gone */
static bool read_stat(pid_t pid, struct proc_stat *st)
{
	char path[64], buf[1024];
	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	ssize_t n = read(fd, buf, sizeof buf - 1);
	close(fd);
	if (n <= 0)
		return false;
	buf[n] = '\0';
	/* the command in parentheses may hold anything: the fields follow the last ')' */
	const char *p = strrchr(buf, ')');
	if (p == NULL)
		return false;
	unsigned long long start = 0;
	int ppid = 0;
	/* 3 state, 4 ppid, 5..21 skipped, 22 starttime */
	if (sscanf(p + 1, " %c %d %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s "
		   "%*s %*s %llu", &st->state, &ppid, &start) != 3)
		return false;
	st->ppid = (pid_t)ppid;
	st->start = start;
	return true;
}

bool gt_follow_alive(pid_t pid, uint64_t start)
{
	struct proc_stat st;
	return pid > 0 && read_stat(pid, &st) && st.state != 'Z' && st.state != 'X' &&
	       (start == 0 || st.start == start);
}

static bool maps_gotrace(pid_t pid)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/maps", (int)pid);
	FILE *m = fopen(path, "re");
	char *line = NULL;
	size_t cap = 0;
	bool found = false;
	while (m != NULL && !found && getline(&line, &cap, m) > 0)
		found = strstr(line, "/libgotrace.so") != NULL;
	free(line);
	if (m != NULL)
		fclose(m);
	return found;
}

struct proc {
	pid_t pid;
	uint64_t start;
};

struct procs {
	struct proc *v;
	size_t n, cap;
};

static void procs_add(struct procs *s, pid_t pid, uint64_t start)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->v[i].pid == pid)
			return;
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 16;
		s->v = realloc(s->v, s->cap * sizeof *s->v);
		if (s->v == NULL) {
			fail("out of memory");
			exit(EXIT_FAILURE);
		}
	}
	s->v[s->n++] = (struct proc){ pid, start };
}

/* Live processes below gotrace (its subreaper's tree) with libgotrace.so mapped: traced, or
 * about to be (a fork child writes its capture at its first fact). */
static void add_traced_descendants(struct procs *s)
{
	struct procs all = { 0 };
	pid_t *parent = NULL;
	DIR *d = opendir("/proc");
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		struct proc_stat st;
		char *end;
		long pid = strtol(e->d_name, &end, 10);
		if (*end != '\0' || pid <= 0 || !read_stat((pid_t)pid, &st) || st.state == 'Z')
			continue;
		procs_add(&all, (pid_t)pid, st.start);
		parent = realloc(parent, all.cap * sizeof *parent);
		if (parent == NULL) {
			fail("out of memory");
			exit(EXIT_FAILURE);
		}
		parent[all.n - 1] = st.ppid;
	}
	if (d != NULL)
		closedir(d);
	pid_t self = getpid();
	for (size_t i = 0; i < all.n; i++) {
		pid_t up = parent[i];
		/* up the parents: the depth bound guards against a pid reused meanwhile */
		for (size_t depth = 0; up > 1 && up != self && depth < all.n; depth++) {
			size_t k = 0;
			while (k < all.n && all.v[k].pid != up)
				k++;
			up = k < all.n ? parent[k] : 0;
		}
		if (up == self && maps_gotrace(all.v[i].pid))
			procs_add(s, all.v[i].pid, all.v[i].start);
	}
	free(all.v);
	free(parent);
}

/* ---- captures ------------------------------------------------------------------------- */

static bool is_capture_name(const char *name)
{
	size_t len = strlen(name);
	return strncmp(name, "gotrace-", 8) == 0 && len > 14 &&
	       strcmp(name + len - 6, ".gtcap") == 0;
}

static bool ignored(const char *name, char *const *ignore, size_t n_ignore)
{
	for (size_t i = 0; i < n_ignore; i++)
		if (strcmp(ignore[i], name) == 0)
			return true;
	return false;
}

/* The process a capture belongs to: the header's pid and start time, or, while the writer
 * has not filled the header yet, the pid of the file name (start time unknown). */
static struct proc capture_owner(int dirfd, const char *name)
{
	struct gt_file_header h;
	struct proc p = { .pid = (pid_t)strtol(name + 8, NULL, 10) };
	int fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return p;
	if (pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
	    memcmp(h.magic, GT_CAPTURE_MAGIC, sizeof h.magic) == 0 && h.pid != 0) {
		p.pid = (pid_t)h.pid;
		p.start = h.proc_start_ticks;
	}
	close(fd);
	return p;
}

/* Calls fn for each capture of the run (not an ignored name) whose process is alive. */
static void each_live_capture(const char *dir, char *const *ignore, size_t n_ignore,
			      void (*fn)(int dirfd, const char *name, struct proc p, void *ctx),
			      void *ctx)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		if (!is_capture_name(e->d_name) || ignored(e->d_name, ignore, n_ignore))
			continue;
		struct proc p = capture_owner(dirfd(d), e->d_name);
		if (gt_follow_alive(p.pid, p.start))
			fn(dirfd(d), e->d_name, p, ctx);
	}
	if (d != NULL)
		closedir(d);
}

static void add_capture_proc(int dirfd, const char *name, struct proc p, void *ctx)
{
	(void)dirfd, (void)name;
	procs_add(ctx, p.pid, p.start);
}

/* ---- stopping the recording of a live process ------------------------------------------ */

static uint64_t clock_now(uint32_t clock_source)
{
	if (clock_source == GT_CLOCK_TSC) {
#if defined(__x86_64__)
		return __builtin_ia32_rdtsc();
#elif defined(__aarch64__)
		uint64_t v;
		__asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v));
		return v;
#endif
	}
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The writer reads the stop word of its header page on every fact (capture.h): the flag
 * first, then the word, so that a writer setting its own stop word meanwhile keeps ours. */
static void stop_capture(int dirfd, const char *name, struct proc p, void *ctx)
{
	(void)ctx;
	int fd = openat(dirfd, name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	void *map = fd < 0 ? MAP_FAILED : mmap(NULL, GT_FILE_HEADER_SIZE, PROT_READ | PROT_WRITE,
					       MAP_SHARED, fd, 0);
	int err = errno;
	if (fd >= 0)
		close(fd);
	struct gt_file_header *h = map;
	if (map == MAP_FAILED ||
	    !(atomic_load((_Atomic uint32_t *)&h->flags) & GT_FILE_STOP_WORD)) {
		fprintf(stderr, "gotrace: cannot stop the recording of pid %d (%s): its capture "
			"%s is converted as it stands\n", (int)p.pid,
			map == MAP_FAILED ? strerror(err) : "its writer does not read a stop word",
			name);
		if (map != MAP_FAILED)
			munmap(map, GT_FILE_HEADER_SIZE);
		return;
	}
	atomic_fetch_or((_Atomic uint32_t *)&h->flags, GT_FILE_DETACHED);
	atomic_store((_Atomic uint64_t *)&h->stop_at_tsc, clock_now(h->clock_source));
	munmap(map, GT_FILE_HEADER_SIZE);
}

/* No capture is created in DIR any more: it moves to a fresh name (a process of the tree
 * that would start one now finds no directory and stays untraced, silently). */
static void retire_dir(char *dir)
{
	char moved[PATH_MAX];
	if (snprintf(moved, sizeof moved, "%s-XXXXXX", dir) >= (int)sizeof moved ||
	    mkdtemp(moved) == NULL)
		return;
	if (rename(dir, moved) != 0) {
		rmdir(moved);
		return;
	}
	strcpy(dir, moved);
}

static void say_pids(const char *head, const struct procs *s, const char *tail)
{
	fprintf(stderr, "gotrace: %s %s", head, s->n == 1 ? "pid" : "pids");
	for (size_t i = 0; i < s->n; i++) {
		char path[64], comm[64] = "";
		snprintf(path, sizeof path, "/proc/%d/comm", (int)s->v[i].pid);
		FILE *c = fopen(path, "re");
		if (c != NULL && fgets(comm, sizeof comm, c) != NULL)
			comm[strcspn(comm, "\n")] = '\0';
		if (c != NULL)
			fclose(c);
		fprintf(stderr, "%s%d%s%s%s", i ? ", " : " ", (int)s->v[i].pid, comm[0] ? " (" : "",
			comm, comm[0] ? ")" : "");
	}
	fprintf(stderr, "%s\n", tail);
}

static void detach_all(const struct procs *live, char *dir, bool rename_dir,
		       char *const *ignore, size_t n_ignore)
{
	if (rename_dir)
		retire_dir(dir);
	each_live_capture(dir, ignore, n_ignore, stop_capture, NULL);
	say_pids("recording stopped in", live, live->n == 1 ? ", which keeps running untraced" :
		 ", which keep running untraced");
}

/* ---- waiting ------------------------------------------------------------------------------ */

/* The name (into name, NAME_MAX + 1 bytes) of the last capture in d of process pid (start
 * time start, 0: unknown) begun before mono_ns: an exec'd image's is followed by the next
 * one's.  false when there is none. */
static bool last_capture_of(DIR *d, char *const *ignore, size_t n_ignore, pid_t pid,
			    uint64_t start, uint64_t mono_ns, char *name)
{
	struct dirent *e;
	bool found = false;
	uint64_t latest = 0;
	while ((e = readdir(d)) != NULL) {
		struct gt_file_header h;
		if (!is_capture_name(e->d_name) || ignored(e->d_name, ignore, n_ignore) ||
		    strtol(e->d_name + 8, NULL, 10) != pid)
			continue;
		int fd = openat(dirfd(d), e->d_name, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
		bool its = fd >= 0 && pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
			   memcmp(h.magic, GT_CAPTURE_MAGIC, sizeof h.magic) == 0 &&
			   h.pid == (uint32_t)pid && (start == 0 || h.proc_start_ticks == start) &&
			   h.start_mono_ns < mono_ns && h.start_mono_ns >= latest;
		if (fd >= 0)
			close(fd);
		if (its) {
			snprintf(name, NAME_MAX + 1, "%s", e->d_name);
			latest = h.start_mono_ns;
			found = true;
		}
	}
	return found;
}

/* When gotrace learnt of a child's death: a clock pair (capture.h: reaped_mono_ns). */
struct death_time {
	uint64_t tsc, mono_ns;
};

/* Child pid (start time start, 0: unknown) died with status and gotrace learnt of it at
 * at: when its last capture in dir recorded no end (killed by a signal it cannot handle),
 * its header says when and how (capture.h: reaped_mono_ns), for the conversion. */
static void note_reap(const char *dir, char *const *ignore, size_t n_ignore, pid_t pid,
		      uint64_t start, struct death_time at, int status)
{
	uint64_t mono_ns = at.mono_ns;
	char name[NAME_MAX + 1];
	DIR *d = opendir(dir);
	int fd = -1;
	if (d != NULL && last_capture_of(d, ignore, n_ignore, pid, start, mono_ns, name))
		fd = openat(dirfd(d), name, O_RDWR | O_CLOEXEC | O_NOFOLLOW);
	struct gt_file_header h;
	if (fd >= 0 && pread(fd, &h, sizeof h, 0) == (ssize_t)sizeof h &&
	    !(h.flags & (GT_FILE_FINALIZED | GT_FILE_DETACHED))) {
		struct { uint64_t mono_ns, tsc; uint32_t status, pad; } death = {
			.mono_ns = mono_ns, .status = (uint32_t)status,
			.tsc = h.clock_source == GT_CLOCK_TSC ? at.tsc : mono_ns };
		off_t offset = offsetof(struct gt_file_header, reaped_mono_ns);
		if (pwrite(fd, &death, sizeof death, offset) != (ssize_t)sizeof death)
			fprintf(stderr, "gotrace: cannot note the death of pid %d in %s (%s): its "
				"trace ends at its last fact\n", (int)pid, name, strerror(errno));
	}
	if (fd >= 0)
		close(fd);
	if (d != NULL)
		closedir(d);
}

/* Reaps every child that died.  Each is first seen dead but left unreaped (WNOWAIT), so
 * that its start time names it and its pid cannot be reused meanwhile; the time is taken
 * then, the moment gotrace learns of the death (SIGCHLD, read through the signalfd). */
static void reap(pid_t command, int *status, bool *command_done, struct gt_follow *f,
		 const char *dir, char *const *ignore, size_t n_ignore)
{
	siginfo_t si;
	for (;;) {
		si.si_pid = 0;
		if (waitid(P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid <= 0)
			return;
		struct death_time at = { clock_now(GT_CLOCK_TSC), clock_now(GT_CLOCK_MONOTONIC) };
		struct proc_stat ps;
		uint64_t start = read_stat(si.si_pid, &ps) ? ps.start : 0;
		int st;
		pid_t p = waitpid(si.si_pid, &st, 0);
		if (p <= 0)
			continue;
		if (p == command && !*command_done) {
			*status = st;
			*command_done = true;
			f->command_ended = monotonic_seconds();
		}
		if (WIFSIGNALED(st))   /* an exit records its end itself */
			note_reap(dir, ignore, n_ignore, p, start, at, st);
	}
}

/* The tick due now, if any (on_tick); the milliseconds until the next one, -1: none. */
static int tick(struct gt_follow *f)
{
	if (f->on_tick == NULL)
		return -1;
	double now = monotonic_seconds();
	if (f->next_tick == 0)
		f->next_tick = now + f->tick_ms / 1e3;
	if (now >= f->next_tick) {
		f->on_tick(f->tick_ctx);
		now = monotonic_seconds();
		f->next_tick = now + f->tick_ms / 1e3;
	}
	return (int)((f->next_tick - now) * 1e3) + 1;
}

/* Waits until a process of LIVE ends, a signal comes or TIMEOUT ms pass (-1: no bound);
 * returns the signal (0: none). */
static int wait_event(const struct gt_follow *f, const struct procs *live, int timeout)
{
	struct pollfd *pfd = calloc(live->n + 1, sizeof *pfd);
	int sig = 0;
	size_t n = 1;
	if (pfd == NULL) {
		fail("out of memory");
		exit(EXIT_FAILURE);
	}
	pfd[0] = (struct pollfd){ .fd = f->sigfd, .events = POLLIN };
	for (size_t i = 0; i < live->n; i++) {
		int fd = (int)syscall(SYS_pidfd_open, live->v[i].pid, 0);
		if (fd < 0) {
			/* gone meanwhile (look again at once), or no pidfds: look again soon */
			timeout = errno == ESRCH ? 0 : timeout >= 0 && timeout < 100 ? timeout : 100;
			continue;
		}
		pfd[n++] = (struct pollfd){ .fd = fd, .events = POLLIN };
		/* the pidfd is the process meant only if it still has that start time */
		if (!gt_follow_alive(live->v[i].pid, live->v[i].start))
			timeout = 0;
	}
	if (poll(pfd, n, timeout) > 0 && (pfd[0].revents & POLLIN)) {
		struct signalfd_siginfo si;
		if (read(f->sigfd, &si, sizeof si) == (ssize_t)sizeof si)
			sig = (int)si.ssi_signo;
	}
	for (size_t i = 1; i < n; i++)
		close(pfd[i].fd);
	free(pfd);
	return sig;
}

/* The traced processes of the run still alive. */
static void collect_live(struct procs *live, const char *dir, bool children, char *const *ignore,
			 size_t n_ignore)
{
	each_live_capture(dir, ignore, n_ignore, add_capture_proc, live);
	if (children)
		add_traced_descendants(live);
}

/* A SIGINT while the command runs: the second within the window stops the recording. */
static bool second_sigint(const struct gt_follow *f)
{
	return f->first_sigint > 0 &&
	       monotonic_seconds() - f->first_sigint <= GT_FOLLOW_STOP_WINDOW;
}

/* After a SIGINT that did not stop the recording (and reached the command). */
static void first_sigint(struct gt_follow *f)
{
	if (f->first_sigint == 0)
		fprintf(stderr, "gotrace: SIGINT: another within %d s stops the recording and writes "
			"the trace; the command keeps running\n", GT_FOLLOW_STOP_WINDOW);
	f->first_sigint = monotonic_seconds();
}

/* Stops the recording of the command and the rest of the tree while they run on; false
 * when the command has exited meanwhile or nothing is traced. */
static bool stop_running(struct gt_follow *f, pid_t command, char *dir, bool rename_dir,
			 bool children, char *const *ignore, size_t n_ignore, int *status,
			 bool *command_done)
{
	struct procs live = { 0 };
	reap(command, status, command_done, f, dir, ignore, n_ignore);
	collect_live(&live, dir, children, ignore, n_ignore);
	bool stop = !*command_done && live.n > 0;
	if (stop) {
		detach_all(&live, dir, rename_dir, ignore, n_ignore);
		f->stopped_running = true;
		f->command_ended = monotonic_seconds();
	}
	free(live.v);
	return stop;
}

int gt_follow_wait(struct gt_follow *f, pid_t command, char *dir, bool rename_dir,
		   bool children, char *const *ignore, size_t n_ignore, int *status)
{
	bool command_done = false, said = false;
	/* while the command runs: reap, and forward what is sent to gotrace alone (a signal
	 * sent to the process group, from the terminal or by kill, reached the command) */
	while (!command_done) {
		struct signalfd_siginfo si;
		struct pollfd sigs = { .fd = f->sigfd, .events = POLLIN };
		int next = tick(f);
		if (next >= 0 && poll(&sigs, 1, next) <= 0)
			continue;   /* the next tick (or EINTR) */
		ssize_t n = read(f->sigfd, &si, sizeof si);
		if (n < 0 && errno == EINTR)
			continue;
		if (n != (ssize_t)sizeof si) {
			fail("reading signals: %s", strerror(errno));
			return -1;
		}
		int sig = (int)si.ssi_signo;
		/* asked first, so that the sentinel never keeps one gotrace has read */
		bool to_group = sig != SIGCHLD && (gt_group_signal_took(&f->group, sig) ||
						   si.ssi_code == SI_KERNEL);
		if (sig == SIGUSR2 && f->on_usr2) {
			f->on_usr2(f->usr2_ctx);
		} else if (sig == SIGINT && second_sigint(f) &&
			   stop_running(f, command, dir, rename_dir, children, ignore, n_ignore,
					status, &command_done)) {
			return 0;
		} else if (sig != SIGCHLD && !to_group) {
			kill(command, sig); /* not reaped yet: still the command */
		}
		if (sig == SIGINT)
			first_sigint(f);
		reap(command, status, &command_done, f, dir, ignore, n_ignore);
	}
	for (;;) {
		struct procs live = { 0 };
		reap(command, status, &command_done, f, dir, ignore, n_ignore);
		collect_live(&live, dir, children, ignore, n_ignore);
		if (live.n == 0)
			return 0;
		if (!said) {
			say_pids("the command exited; waiting for the traced processes still "
				 "running:", &live, " (Ctrl-C stops their recording and writes the "
				 "trace; they keep running)");
			said = true;
		}
		int sig = wait_event(f, &live, tick(f));
		if (sig == SIGUSR2 && f->on_usr2)
			f->on_usr2(f->usr2_ctx);
		if (sig == SIGINT || sig == SIGTERM) {
			detach_all(&live, dir, rename_dir, ignore, n_ignore);
			free(live.v);
			return 0;
		}
		free(live.v);
	}
}
