/* hang: see hang.h. */
#include "hang.h"
#include "follow.h"
#include "snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <gotrace/capture.h>

#include "common/hash.h"
#include "common/u64map.h"
#include "encoder/encoder.h"
#include "report/report.h"

#define TICK_MIN_MS 100u
#define TICK_MAX_MS 1000u
#define BELOW_DEPTH_MAX 64u   /* generations of processes below one that are looked at */

/* What moves when any thread of a process runs, starts or ends (or any process below one,
 * for the processes below it). */
struct signature {
	uint64_t cpu_ns;   /* the threads' (processes') time on a CPU, summed */
	uint64_t tids;     /* their ids, mixed and summed */
	size_t n;          /* their number */
};

/* A process of the run that records, watched. */
struct watched {
	char *name;              /* its capture, relative to the run's directory */
	pid_t pid;
	uint64_t start_ticks;    /* its start time (/proc/PID/stat field 22) */
	uint64_t start_mono_ns;  /* when its capture began: an exec'd image's is later */
	struct signature sig;
	uint64_t moved_ns;       /* CLOCK_MONOTONIC when sig last changed */
	uint64_t retry_ns;       /* its capture not read again before (0: no bound) */
	bool judged;             /* its capture read since it last moved: hung (and said so)
				  * or not */
	/* while it is quiet: its children, theirs, ... (traced or not), and when they last
	 * ran (0: not read since it moved); a thread waiting for a child is blocked only when
	 * none of them ran for SECONDS */
	struct signature below;
	uint64_t below_moved_ns;
	bool waits_below;        /* its capture said a thread waits for a child */
};

struct gt_hang {
	uint64_t hang_ns;
	const char *output;
	enum gt_trace_format format;
	const struct capture_dir *cd;
	struct gt_u64map seen;   /* hashes of the capture names met (never read again) */
	struct watched *v;
	size_t n, cap;
	unsigned hangs;          /* said so far: the last snapshot is OUTPUT.hang-<hangs> */
};

static uint64_t mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

unsigned gt_hang_tick_ms(uint64_t hang_ns)
{
	uint64_t ms = hang_ns / 4 / 1000000u;
	return ms < TICK_MIN_MS ? TICK_MIN_MS : ms > TICK_MAX_MS ? TICK_MAX_MS : (unsigned)ms;
}

struct gt_hang *gt_hang_new(uint64_t hang_ns, const char *output, enum gt_trace_format format,
			    const struct capture_dir *cd)
{
	struct gt_hang *h = calloc(1, sizeof *h);
	if (h)
		*h = (struct gt_hang){ .hang_ns = hang_ns, .output = output, .format = format,
				       .cd = cd };
	return h;
}

static void forget(struct gt_hang *h, size_t i)
{
	free(h->v[i].name);
	h->v[i] = h->v[--h->n];
}

void gt_hang_free(struct gt_hang *h)
{
	if (!h)
		return;
	while (h->n)
		forget(h, 0);
	free(h->v);
	gt_u64map_free(&h->seen);
	free(h);
}

/* The header of capture name of the run (up to its paths unless whole); false when it
 * cannot be read or its writer has not filled it yet. */
static bool read_header(const struct gt_hang *h, const char *name, struct gt_file_header *out,
			bool whole)
{
	char path[2 * PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", h->cd->path, name);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return false;
	size_t want = whole ? sizeof *out : offsetof(struct gt_file_header, exe_path);
	bool ok = pread(fd, out, want, 0) == (ssize_t)want &&
		  memcmp(out->magic, GT_CAPTURE_MAGIC, sizeof out->magic) == 0 && out->pid != 0;
	close(fd);
	return ok;
}

/* Whether the writer of the capture whose header is hd still records at now: not ended, not
 * stopped by gotrace or a full disk, within --duration. */
static bool records(const struct gt_file_header *hd, uint64_t now)
{
	if (hd->flags & (GT_FILE_FINALIZED | GT_FILE_DETACHED | GT_FILE_WRITE_FAILED))
		return false;
	return !hd->duration_ns || now < hd->start_mono_ns + hd->start_delay_ns + hd->duration_ns;
}

/* gt_each_capture's callback: a capture not met before is watched while its process lives
 * and records; an exec'd image replaces the one before it. */
static void meet_capture(const char *name, void *ctx)
{
	struct gt_hang *h = ctx;
	uint64_t key = gt_hash_bytes(name, strlen(name));
	struct gt_file_header hd;
	if (gt_run_was_preexisting(h->cd, name) || gt_u64map_find(&h->seen, key) ||
	    !read_header(h, name, &hd, false))
		return;
	bool found;
	uint64_t *slot = gt_u64map_slot(&h->seen, key, &found);
	if (!slot || !records(&hd, mono_ns()))
		return;
	for (size_t i = 0; i < h->n; i++) {
		struct watched *w = &h->v[i];
		if (w->pid != (pid_t)hd.pid || w->start_ticks != hd.proc_start_ticks)
			continue;
		if (w->start_mono_ns > hd.start_mono_ns)
			return;   /* an older image of it */
		forget(h, i);
		break;
	}
	if (h->n == h->cap) {
		size_t cap = h->cap ? 2 * h->cap : 8;
		struct watched *v = realloc(h->v, cap * sizeof *v);
		if (!v)
			return;
		h->v = v;
		h->cap = cap;
	}
	char *copy = strdup(name);
	if (!copy)
		return;
	h->v[h->n++] = (struct watched){ .name = copy, .pid = (pid_t)hd.pid,
					 .start_ticks = hd.proc_start_ticks,
					 .start_mono_ns = hd.start_mono_ns,
					 .sig = { .n = SIZE_MAX } };
}

/* The start of file name under directory fd (at most size - 1 bytes, NUL-terminated);
 * false when it cannot be read. */
static bool read_small(int fd, const char *name, char *buf, size_t size)
{
	int f = openat(fd, name, O_RDONLY | O_CLOEXEC);
	ssize_t n = f >= 0 ? read(f, buf, size - 1) : -1;
	if (f >= 0)
		close(f);
	buf[n > 0 ? n : 0] = '\0';
	return n > 0;
}

/* The user and system times of a stat file (a thread's or a process's) in ns; 0 when it
 * cannot be read. */
static uint64_t stat_cpu_ns(int fd, const char *name)
{
	char buf[1024];
	const char *fields = read_small(fd, name, buf, sizeof buf) ? strrchr(buf, ')') : NULL;
	unsigned long long user, sys;
	/* after the name: 3 state ... 14 utime, 15 stime */
	if (!fields || sscanf(fields + 1, " %*c %*s %*s %*s %*s %*s %*s %*s %*s %*s %*s %llu %llu",
			      &user, &sys) != 2)
		return 0;
	return (user + sys) * (1000000000u / (uint64_t)sysconf(_SC_CLK_TCK));
}

/* Thread tid's time on a CPU in ns (task: its process's /proc/PID/task): the kernel's
 * exact sum (schedstat), or else its user and system times in clock ticks; 0 when it is
 * gone. */
static uint64_t thread_cpu_ns(int task, uint32_t tid)
{
	char name[32], buf[64];
	snprintf(name, sizeof name, "%u/schedstat", tid);
	if (read_small(task, name, buf, sizeof buf))
		return strtoull(buf, NULL, 10);
	snprintf(name, sizeof name, "%u/stat", tid);
	return stat_cpu_ns(task, name);
}

/* fn(task, tid, ctx) for each thread of pid (task: its /proc/PID/task); false when the
 * process is gone. */
static bool each_thread(pid_t pid, void (*fn)(int task, uint32_t tid, void *ctx), void *ctx)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)pid);
	DIR *d = opendir(path);
	if (!d)
		return false;
	for (struct dirent *e; (e = readdir(d));)
		if (e->d_name[0] >= '0' && e->d_name[0] <= '9')
			fn(dirfd(d), (uint32_t)strtoul(e->d_name, NULL, 10), ctx);
	closedir(d);
	return true;
}

static void add_to_signature(int task, uint32_t tid, void *ctx)
{
	struct signature *s = ctx;
	s->cpu_ns += thread_cpu_ns(task, tid);
	s->tids += gt_hash_mix(tid);
	s->n++;
}

static bool same(const struct signature *a, const struct signature *b)
{
	return a->cpu_ns == b->cpu_ns && a->tids == b->tids && a->n == b->n;
}

struct below {
	struct signature *sig;
	unsigned depth;
};

static void add_below(pid_t pid, struct signature *s, unsigned depth);

/* each_thread's callback: the children thread tid started (its children file), each with
 * its threads' time on a CPU, as exact as the process's own signature (so that a child is
 * seen quiet at the tick its parent sees it quiet), and what lies below it. */
static void add_children(int task, uint32_t tid, void *ctx)
{
	struct below *b = ctx;
	char name[32], list[4096];
	snprintf(name, sizeof name, "%u/children", tid);
	if (!read_small(task, name, list, sizeof list))
		return;
	for (char *at = list, *end; *at; at = end) {
		long child = strtol(at, &end, 10);
		if (end == at)
			break;
		each_thread((pid_t)child, add_to_signature, b->sig);
		add_below((pid_t)child, b->sig, b->depth + 1);
	}
}

/* The processes below pid, traced or not, added to s. */
static void add_below(pid_t pid, struct signature *s, unsigned depth)
{
	struct below b = { s, depth };
	if (depth < BELOW_DEPTH_MAX)
		each_thread(pid, add_children, &b);
}

/* Whether a system call (the tracker's number: x86-64's on any arch) waits for a child. */
static bool waits_for_child(uint32_t nr)
{
	char buf[32];
	const char *name = gt_syscall_name(nr, buf, sizeof buf);
	return strcmp(name, "wait4") == 0 || strcmp(name, "waitid") == 0;
}

/* What the capture says of a quiet process's threads. */
enum verdict {
	NOT_HUNG,   /* a thread outside any recorded wait: not until the process moves */
	BELOW_RAN,  /* a thread waits for a child, and a process below ran in SECONDS */
	TOO_SOON,   /* every thread in a recorded wait, one begun less than SECONDS ago */
	HUNG,
};

struct judging {
	const struct gt_tracker *tr;
	struct gt_clock clock;
	uint64_t start_mono_ns;   /* the capture's */
	bool below_quiet;         /* no process below ran for SECONDS */
	enum verdict verdict;
	uint64_t latest_ns;       /* the latest begin of a wait, CLOCK_MONOTONIC */
};

static void judge_thread(int task, uint32_t tid, void *ctx)
{
	(void)task;
	struct judging *j = ctx;
	const struct gt_tracked_thread *t = gt_tracker_thread_by_tid(j->tr, 0, tid);
	if (!t || !gt_tracked_live(t) || !t->wait.open) {
		j->verdict = NOT_HUNG;
		return;
	}
	if (t->wait.syscall && waits_for_child(t->wait.nr) && !j->below_quiet &&
	    j->verdict != NOT_HUNG)
		j->verdict = BELOW_RAN;
	uint64_t since = j->start_mono_ns + gt_clock_ns(&j->clock, t->wait.since_tsc);
	if (since > j->latest_ns)
		j->latest_ns = since;
}

/* Reads the copy of w's capture through the tracker, then asks it about each of w's
 * threads now: HUNG when each is in an open wait begun at or before cut_ns (else
 * *latest_ns is the latest begin), one for a child only when below_quiet. */
static enum verdict judge(const struct watched *w, const char *copy, uint64_t cut_ns,
			  bool below_quiet, uint64_t *latest_ns)
{
	char err[256];
	struct gt_capture *c = gt_capture_open(copy, err, sizeof err);
	struct gt_tracker *tr = c ? gt_tracker_new() : NULL;
	struct judging j = { .tr = tr, .below_quiet = below_quiet, .verdict = HUNG };
	bool ok = tr && gt_tracker_capture_header(tr, 0, gt_capture_header(c));
	struct gt_capture_record r;
	while (ok && gt_capture_next(c, &r))
		ok = gt_tracker_fact(tr, &r, NULL);
	if (ok) {
		gt_clock_init(&j.clock, gt_capture_header(c));
		j.start_mono_ns = gt_capture_header(c)->start_mono_ns;
		if (!each_thread(w->pid, judge_thread, &j))
			j.verdict = NOT_HUNG;
	}
	gt_tracker_free(tr);
	if (c)
		gt_capture_close(c);
	if (!ok)
		return NOT_HUNG;
	*latest_ns = j.latest_ns;
	return j.verdict == HUNG && j.latest_ns > cut_ns ? TOO_SOON : j.verdict;
}

struct snapshot_of_run {
	struct gt_hang *h;
	struct gt_snapshot *snap;
	const char *except;   /* the hung process's capture, copied already */
};

static void add_other_capture(const char *name, void *ctx)
{
	struct snapshot_of_run *s = ctx;
	char path[2 * PATH_MAX];
	if (strcmp(name, s->except) == 0 || gt_run_was_preexisting(s->h->cd, name))
		return;
	snprintf(path, sizeof path, "%s/%s", s->h->cd->path, name);
	gt_snapshot_add(s->snap, path);
}

/* The hung process's waits and wait-for graph as the report gives them, each line under
 * gotrace's prefix. */
static void print_waits(const char *copy)
{
	char *text = NULL, err[256];
	size_t len = 0;
	FILE *mem = open_memstream(&text, &len);
	struct gt_report_options ropt = { .waits_only = true };
	int rc = mem ? gt_report_capture(copy, &ropt, mem, err, sizeof err) : -1;
	if (mem)
		fclose(mem);
	if (rc != 0)
		fprintf(stderr, "gotrace:   its waits cannot be read: %s\n", mem ? err : strerror(errno));
	for (const char *line = rc == 0 ? text : NULL; line && *line;) {
		size_t n = strcspn(line, "\n");
		if (n)   /* the report's blank lines between its sections left out */
			fprintf(stderr, "gotrace:   %.*s\n", (int)n, line);
		line += n + (line[n] == '\n');
	}
	free(text);
}

/* w is hung: the run so far into OUTPUT.hang-N, and what w's threads wait for. */
static void say_hang(struct gt_hang *h, const struct watched *w, struct gt_snapshot *snap,
		     const char *copy, uint64_t now)
{
	struct snapshot_of_run s = { h, snap, w->name };
	gt_each_capture(h->cd->path, add_other_capture, &s);
	char name[PATH_MAX];
	snprintf(name, sizeof name, "%s.hang-%u", h->output, ++h->hangs);
	bool written = gt_snapshot_convert(snap, name, h->format, GT_SUMMARY_QUIET) == 0;
	struct gt_file_header hd;
	struct gt_process_name pn = { .name = "?" };
	if (read_header(h, w->name, &hd, true))
		gt_process_name_from_header(&pn, &hd);
	fprintf(stderr, "gotrace: hang: every thread of %s (pid %d) has been blocked for %.2f s; "
		"the program runs on\n", pn.name, (int)w->pid, (double)(now - w->moved_ns) / 1e9);
	print_waits(copy);
	if (written)
		fprintf(stderr, "gotrace:   the run so far: %s\n", name);
}

/* Whether no process below w ran for SECONDS (read since w was last seen quiet). */
static bool below_quiet(const struct gt_hang *h, const struct watched *w, uint64_t now)
{
	return w->below_moved_ns && now - w->below_moved_ns >= h->hang_ns;
}

/* w has been quiet for SECONDS: its capture read, and its hang said. */
static void look_closer(struct gt_hang *h, struct watched *w, uint64_t now)
{
	char label[32], path[2 * PATH_MAX];
	struct gt_snapshot snap;
	snprintf(label, sizeof label, "hang %u", h->hangs + 1);
	snprintf(path, sizeof path, "%s/%s", h->cd->path, w->name);
	w->judged = true;
	if (gt_snapshot_begin(&snap, label, h->cd->path) != 0)
		return;
	const char *copy = gt_snapshot_add(&snap, path);
	uint64_t latest = 0;
	enum verdict v = copy ? judge(w, copy, now - h->hang_ns, below_quiet(h, w, now), &latest)
			      : NOT_HUNG;
	if (v == HUNG) {
		say_hang(h, w, &snap, copy, now);
	} else if (v == TOO_SOON) {
		w->judged = false;
		w->retry_ns = latest + h->hang_ns;
	} else if (v == BELOW_RAN) {
		w->judged = false;
		w->waits_below = true;
	}
	gt_snapshot_end(&snap);
}

/* Looks at w now: false when it is gone or no longer records. */
static bool look(struct gt_hang *h, struct watched *w, uint64_t now)
{
	struct gt_file_header hd;
	struct signature sig = { 0 };
	if (!read_header(h, w->name, &hd, false) || !records(&hd, now) ||
	    !gt_follow_alive(w->pid, w->start_ticks) ||
	    !each_thread(w->pid, add_to_signature, &sig))
		return false;
	if (!same(&sig, &w->sig)) {
		*w = (struct watched){ .name = w->name, .pid = w->pid,
				       .start_ticks = w->start_ticks,
				       .start_mono_ns = w->start_mono_ns, .sig = sig, .moved_ns = now };
		return true;
	}
	if (w->judged)
		return true;
	/* quiet: what lies below it, from now on, for a thread that waits for a child */
	struct signature below = { 0 };
	add_below(w->pid, &below, 0);
	if (!w->below_moved_ns || !same(&below, &w->below)) {
		w->below = below;
		w->below_moved_ns = now;
	}
	return true;
}

/* Whether w's capture is to be read now. */
static bool due(const struct gt_hang *h, const struct watched *w, uint64_t now)
{
	return !w->judged && now - w->moved_ns >= h->hang_ns && now >= w->retry_ns &&
	       (!w->waits_below || below_quiet(h, w, now));
}

static int youngest_first(const void *a, const void *b)
{
	const struct watched *x = a, *y = b;
	return x->start_mono_ns > y->start_mono_ns ? -1 : x->start_mono_ns < y->start_mono_ns;
}

void gt_hang_tick(void *hang)
{
	struct gt_hang *h = hang;
	gt_each_capture(h->cd->path, meet_capture, h);
	uint64_t now = mono_ns();
	for (size_t i = 0; i < h->n;) {
		if (look(h, &h->v[i], now))
			i++;
		else
			forget(h, i);
	}
	/* a child hung is said before the parent that waits for it, in the same tick */
	qsort(h->v, h->n, sizeof *h->v, youngest_first);
	for (size_t i = 0; i < h->n; i++)
		if (due(h, &h->v[i], now))
			look_closer(h, &h->v[i], now);
}
