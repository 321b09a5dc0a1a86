/* gotrace stacks PID: the threads of a live process that was not started under gotrace, for
 * hang triage: options, output and refusals.  Every thread is stopped with PTRACE_SEIZE and
 * PTRACE_INTERRUPT (no signal is sent: a seized thread in a system call restarts it; a
 * signal met on the way is delivered), unwound by the symbolizer (gt_sym_live_threads), and
 * detached at once; what it is blocked in comes from /proc before the stop.  A futex wait's
 * lock, its kind and holders come from the symbolizer (gt_sym_live_lock, glibc's layouts),
 * its name too; the wait-for graph and its cycles from the encoder's one graph
 * (gt_tracker_of_live_waits, encoder/waitfor.c).  Threads with the same state and stack are
 * printed together, as in Go's goroutine dump, then the graph's edges and cycles. */
#include <dirent.h>
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli_common.h"
#include "commands.h"
#include "stacks_recorded.h"
#include "encoder/encoder.h"
#include "report/report.h"
#include "stacks_trace.h"
#include "symbolizer/symbolizer.h"

#define STACK_MAX 64
#define NAME_MAX_LEN 256
#define WHAT_MAX (4 * NAME_MAX_LEN)   /* wait_text's phrase */

struct live_thread {
	pid_t tid;
	char comm[32];
	char state;             /* /proc's: R, S, D, T, t, Z */
	unsigned long long cpu; /* user and system time so far, in clock ticks */
	char wchan[64];
	long nr;                /* the system call it sleeps in; -1 when none */
	uint64_t args[6];
	bool seized, gone;
	uint64_t pcs[STACK_MAX];
	size_t n_pcs;
	bool complete;
	struct gt_live_lock wait;   /* its futex wait, when it is one (wait.kind 0: none) */
	char lock[NAME_MAX_LEN];
	char *key;              /* state, wait and stack as text: threads with one key group */
	int group;
};

struct snapshot {
	pid_t pid;
	char comm[32];
	struct live_thread *t;      /* in the order of their tids */
	size_t n;
	double stopped_ms;
	double seen_ms;             /* when it was stopped, CLOCK_MONOTONIC */
	struct gt_tracker *graph;   /* t[i] is its thread i + 1: the wait-for graph */
};

static void usage(FILE *f)
{
	fprintf(f,
		"usage: gotrace stacks [--json] [--every SEC --count N] [-o FILE [--format F]] PID\n\n"
		"Prints the stack of every thread of live process PID, with what each is blocked in:\n"
		"for a lock, its name, its kind and (for a mutex) the thread holding it.  Threads\n"
		"with the same state and stack are printed together, with a count; then the\n"
		"wait-for graph, and each cycle of it as a deadlock.  The process need not run\n"
		"under gotrace: it is stopped with ptrace only while its stacks are read, then\n"
		"left running as before.  A process under a debugger is left alone.\n\n"
		"  --json         the snapshot as one JSON object (one per sample)\n"
		"  --every SEC    the time between samples (default 1; \"500ms\" too)\n"
		"  --count N      N samples, each after the first saying which threads moved\n"
		"                 since the one before: none moving is a hang, not slowness\n"
		"  -o FILE        also writes the snapshot as a Go execution trace: a goroutine\n"
		"                 per thread, in its state, with its stack (one sample only)\n");
	gt_cli_format_help(f, 23);   /* with -o */
}

static bool read_text(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "re");
	if (!f)
		return false;
	size_t n = fread(buf, 1, size - 1, f);
	fclose(f);
	buf[n] = 0;
	return true;
}

/* A "Key:\tvalue" line of /proc/PID/status as a number; -1 when absent. */
static long status_field(pid_t pid, const char *key)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	if (!read_text(path, buf, sizeof buf))
		return -1;
	char *at = strstr(buf, key);
	return at ? strtol(at + strlen(key), NULL, 10) : -1;
}

static long ptrace_scope(void)
{
	char buf[16];
	return read_text("/proc/sys/kernel/yama/ptrace_scope", buf, sizeof buf) ? atol(buf) : 0;
}

/* One line saying why ptrace was refused, and what would allow it. */
static void explain_refusal(pid_t pid, int err)
{
	long uid = status_field(pid, "\nUid:");
	long scope = ptrace_scope();
	if (geteuid() != 0 && uid >= 0 && (uid_t)uid != geteuid())
		fprintf(stderr, "gotrace stacks: process %d belongs to another user (uid %ld): "
			"run gotrace stacks as that user or as root\n", (int)pid, uid);
	else if (geteuid() != 0 && scope == 1)
		fprintf(stderr, "gotrace stacks: kernel.yama.ptrace_scope is 1, so only a process's "
			"parent may trace it: run as root, or set `sysctl kernel.yama.ptrace_scope=0`\n");
	else if (scope == 2 && geteuid() != 0)
		fprintf(stderr, "gotrace stacks: kernel.yama.ptrace_scope is 2, so only root "
			"(CAP_SYS_PTRACE) may trace a process: run as root\n");
	else if (scope == 3)
		fprintf(stderr, "gotrace stacks: kernel.yama.ptrace_scope is 3, so no process may be "
			"traced until the next boot\n");
	else
		fprintf(stderr, "gotrace stacks: the kernel refused to trace process %d (%s): it "
			"may have made itself undumpable (prctl PR_SET_DUMPABLE); run as root\n",
			(int)pid, strerror(err));
}

/* The thread's state, wait channel and system call, as /proc tells them. */
static void read_thread(pid_t pid, struct live_thread *t)
{
	char path[96], buf[512];
	snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)t->tid);
	t->state = '?';
	if (read_text(path, buf, sizeof buf)) {
		char *open = strchr(buf, '('), *close = strrchr(buf, ')');
		if (open && close && close > open) {
			size_t len = (size_t)(close - open - 1);
			len = len < sizeof t->comm - 1 ? len : sizeof t->comm - 1;
			memcpy(t->comm, open + 1, len);
			t->comm[len] = 0;
			unsigned long long user = 0, sys = 0;
			if (sscanf(close + 1, " %c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu",
				   &t->state, &user, &sys) == 3)
				t->cpu = user + sys;
		}
	}
	snprintf(path, sizeof path, "/proc/%d/task/%d/wchan", (int)pid, (int)t->tid);
	if (!read_text(path, t->wchan, sizeof t->wchan) || !strcmp(t->wchan, "0"))
		t->wchan[0] = 0;
	snprintf(path, sizeof path, "/proc/%d/task/%d/syscall", (int)pid, (int)t->tid);
	t->nr = -1;
	if (read_text(path, buf, sizeof buf) && buf[0] != 'r' && strtol(buf, NULL, 10) >= 0) {
		char *p = buf;
		/* this machine's number, as the encoder numbers calls (x86-64's) */
		t->nr = (long)gt_syscall_canonical(GT_ARCH_NATIVE, (uint32_t)strtol(p, &p, 10));
		for (int i = 0; i < 6; i++)
			t->args[i] = strtoull(p, &p, 16);
	}
}

static int by_tid(const void *a, const void *b)
{
	pid_t x = ((const struct live_thread *)a)->tid, y = ((const struct live_thread *)b)->tid;
	return (x > y) - (x < y);
}

static bool list_threads(struct snapshot *s)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/task", (int)s->pid);
	DIR *d = opendir(path);
	if (!d)
		return false;
	size_t cap = 0;
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (e->d_name[0] < '0' || e->d_name[0] > '9')
			continue;
		if (s->n == cap) {
			cap = cap ? 2 * cap : 16;
			struct live_thread *more = realloc(s->t, cap * sizeof *more);
			if (!more)
				break;
			s->t = more;
		}
		s->t[s->n] = (struct live_thread){.tid = atoi(e->d_name)};
		read_thread(s->pid, &s->t[s->n]);
		s->n++;
	}
	closedir(d);
	qsort(s->t, s->n, sizeof *s->t, by_tid);
	return s->n > 0;
}

/* For tests only (tests/cli/test_stacks.c): with GOTRACE_TEST_STACKS_SEIZED=FD, once every
 * thread is seized and none interrupted yet, a byte is written to FD and one read back, so
 * that a test can send the target signals that meet the stop. */
static void test_hook_seized(void)
{
	const char *fd = getenv("GOTRACE_TEST_STACKS_SEIZED");
	char byte = 's';
	if (fd && write(atoi(fd), &byte, 1) == 1 && read(atoi(fd), &byte, 1) != 1)
		fprintf(stderr, "gotrace stacks: GOTRACE_TEST_STACKS_SEIZED's reply was lost\n");
}

/* Seizes and interrupts every thread; false (each seized one released) when refused. */
static bool stop_all(struct snapshot *s, int *err)
{
	size_t seized = 0;
	for (size_t i = 0; i < s->n; i++) {
		struct live_thread *t = &s->t[i];
		if (t->state == 'Z' || t->state == 'X') {
			t->gone = true;   /* ended: a zombie cannot be traced, nor has a stack */
			continue;
		}
		if (ptrace(PTRACE_SEIZE, t->tid, 0, 0) != 0) {
			/* a thread that is exiting refuses with EPERM: a refusal is the process's
			 * only when its first thread is refused */
			if (errno == ESRCH || (errno == EPERM && seized)) {
				t->gone = true;
				continue;
			}
			*err = errno;
			for (size_t k = 0; k < i; k++)
				if (s->t[k].seized)
					ptrace(PTRACE_DETACH, s->t[k].tid, 0, 0);
			return false;
		}
		t->seized = true;
		seized++;
	}
	test_hook_seized();
	for (size_t i = 0; i < s->n; i++)
		if (s->t[i].seized)
			ptrace(PTRACE_INTERRUPT, s->t[i].tid, 0, 0);
	for (size_t i = 0; i < s->n; i++) {
		struct live_thread *t = &s->t[i];
		int status;
		while (t->seized && !t->gone) {
			if (waitpid(t->tid, &status, __WALL) != t->tid || !WIFSTOPPED(status)) {
				t->gone = true;   /* it exited meanwhile */
				break;
			}
			if (status >> 16 == PTRACE_EVENT_STOP)
				break;
			/* a signal arrived first: it is delivered now, as it would have been without
			 * us (a signal given at the detach from the interrupt's stop would be lost),
			 * then the interrupt (pending still; asked again, which costs nothing) */
			ptrace(PTRACE_CONT, t->tid, 0, (void *)(intptr_t)WSTOPSIG(status));
			ptrace(PTRACE_INTERRUPT, t->tid, 0, 0);
		}
	}
	return true;
}

static void resume_all(struct snapshot *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->t[i].seized && !s->t[i].gone)
			ptrace(PTRACE_DETACH, s->t[i].tid, 0, 0);
}

static void got_stack(void *ctx, uint32_t tid, const uint64_t *pcs, size_t n, bool complete)
{
	struct snapshot *s = ctx;
	for (size_t i = 0; i < s->n; i++) {
		if (s->t[i].tid != (pid_t)tid)
			continue;
		memcpy(s->t[i].pcs, pcs, n * sizeof *pcs);
		s->t[i].n_pcs = n;
		s->t[i].complete = complete;
	}
}

static double now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static void append(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
static void append(char **buf, size_t *len, size_t *cap, const char *fmt, ...)
{
	va_list ap;
	for (;;) {
		va_start(ap, fmt);
		int n = vsnprintf(*buf ? *buf + *len : NULL, *buf ? *cap - *len : 0, fmt, ap);
		va_end(ap);
		if (n < 0)
			return;
		if (*buf && *len + (size_t)n < *cap) {
			*len += (size_t)n;
			return;
		}
		size_t more = (*cap + (size_t)n + 1) * 2;
		char *b = realloc(*buf, more);
		if (!b)
			return;
		*buf = b;
		*cap = more;
	}
}

/* What a futex waiter waits for: "mutex lock_b, held by thread 12", "thread 12 to end". */
static void waits_for_text(const struct live_thread *t, char *out, size_t size)
{
	const char *kind = gt_sym_live_lock_kind(t->wait.kind);
	char readers[96] = "";
	if (t->wait.readers > 0)
		snprintf(readers, sizeof readers, ", read by %d thread%s (glibc counts readers, "
			 "not which)", t->wait.readers, t->wait.readers == 1 ? "" : "s");
	if (t->wait.kind == GT_BK_JOIN)
		snprintf(out, size, "thread %d to end", t->wait.holder);
	else if (t->wait.holder)
		snprintf(out, size, "%s %s, held by thread %d%s", kind, t->lock, t->wait.holder,
			 readers);
	else
		snprintf(out, size, "%s %s%s", kind, t->lock, readers);
}

/* What the thread is doing, in one phrase: "sleeping in futex: mutex lock_b, held by 12". */
static void wait_text(const struct live_thread *t, char *out, size_t size)
{
	static const char *const states[128] = {
		['R'] = "running", ['S'] = "sleeping", ['D'] = "in uninterruptible sleep",
		['T'] = "stopped", ['t'] = "stopped by a debugger", ['Z'] = "exited",
	};
	const char *state = (unsigned char)t->state < 128 && states[(unsigned char)t->state]
		? states[(unsigned char)t->state] : "in an unknown state";
	char callbuf[32], edge[2 * NAME_MAX_LEN];
	const char *call = t->nr >= 0 ? gt_syscall_name((uint32_t)t->nr, callbuf, sizeof callbuf)
				      : NULL;
	if (t->nr < 0 || t->state == 'R')
		snprintf(out, size, "%s", state);
	else if (t->wait.kind) {
		waits_for_text(t, edge, sizeof edge);
		snprintf(out, size, "%s in futex: %s", state, edge);
	}
	else if (t->nr == GT_SYS_read || t->nr == GT_SYS_write || t->nr == GT_SYS_pread64)
		snprintf(out, size, "%s in %s of fd %d", state, call, (int)t->args[0]);
	else
		snprintf(out, size, "%s in %s", state, call);
}

/* Symbolizes each thread's stack, names its lock, and builds its group key. */
static void describe(struct gt_symbolizer *sym, struct snapshot *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct live_thread *t = &s->t[i];
		struct gt_frame f[STACK_MAX];
		size_t n = gt_sym_stack(sym, t->pcs, t->n_pcs, f, STACK_MAX);
		if (t->nr == GT_SYS_futex && t->state != 'R') {
			gt_sym_live_lock(s->pid, t->args[0], (uint32_t)t->args[2], f, n, &t->wait);
			char buf[NAME_MAX_LEN];
			const char *name = gt_sym_object_name(sym, t->wait.object, NULL, 0, buf,
							      sizeof buf);
			if (name)
				snprintf(t->lock, sizeof t->lock, "%s", name);
			else
				snprintf(t->lock, sizeof t->lock, "0x%llx",
					 (unsigned long long)t->wait.object);
		}
		char what[WHAT_MAX];
		wait_text(t, what, sizeof what);
		size_t len = 0, cap = 0;
		append(&t->key, &len, &cap, "%s\n", what);
		for (size_t k = 0; k < n; k++)
			append(&t->key, &len, &cap, "%s\n%s:%u\n", f[k].func, f[k].file, f[k].line);
		if (!t->complete && t->n_pcs)
			append(&t->key, &len, &cap, "...\n");
		if (!t->n_pcs)
			append(&t->key, &len, &cap, "(no stack: the thread could not be read)\n");
	}
}

/* Threads with the same key get the group of the first of them; returns the group count. */
static int group_threads(struct snapshot *s)
{
	int groups = 0;
	for (size_t i = 0; i < s->n; i++) {
		s->t[i].group = -1;
		for (size_t k = 0; k < i && s->t[i].group < 0; k++)
			if (!strcmp(s->t[k].key, s->t[i].key))
				s->t[i].group = s->t[k].group;
		if (s->t[i].group < 0)
			s->t[i].group = groups++;
	}
	return groups;
}

/* The wait-for graph of the snapshot's waits, in the encoder's one graph. */
static bool make_graph(struct snapshot *s)
{
	struct gt_live_wait *w = calloc(s->n ? s->n : 1, sizeof *w);
	for (size_t i = 0; w && i < s->n; i++)
		w[i] = (struct gt_live_wait){.tid = (uint32_t)s->t[i].tid, .kind = s->t[i].wait.kind,
					     .obj = s->t[i].wait.object,
					     .holder_tid = (uint32_t)s->t[i].wait.holder};
	s->graph = w ? gt_tracker_of_live_waits(w, s->n) : NULL;
	free(w);
	return s->graph != NULL;
}

/* Whether thread i waits for another thread, by the graph. */
static bool waits_for_thread(const struct snapshot *s, size_t i)
{
	const struct gt_tracked_object *o;
	uint32_t tid;
	gt_tracker_waits_for(s->graph, gt_tracker_thread(s->graph, 0, (uint32_t)i + 1), &o, &tid);
	return tid != 0;
}

/* The cycle of the wait-for graph thread i leads (the first of it in tid order): its
 * length and threads (indexes in s->t), 0 when it leads none. */
static size_t cycle_led_by(const struct snapshot *s, size_t i, size_t *cycle)
{
	const struct gt_tracked_thread *found[GT_CYCLE_MAX];
	bool lead;
	size_t n = gt_tracker_deadlock(s->graph, gt_tracker_thread(s->graph, 0, (uint32_t)i + 1),
				       found, &lead);
	for (size_t k = 0; k < n; k++)
		cycle[k] = found[k]->serial - 1;
	return lead ? n : 0;
}

static void print_text(FILE *out, struct snapshot *s, int groups)
{
	fprintf(out, "process %d (%s): %zu thread%s, stopped for %.1f ms\n", (int)s->pid,
		s->comm, s->n, s->n == 1 ? "" : "s", s->stopped_ms);
	for (int g = 0; g < groups; g++) {
		size_t count = 0, first = 0;
		for (size_t i = 0; i < s->n; i++)
			if (s->t[i].group == g && !count++)
				first = i;
		const char *key = s->t[first].key, *nl = strchr(key, '\n');
		fprintf(out, "\n%zu thread%s [%.*s]:", count, count == 1 ? "" : "s",
			(int)(nl - key), key);
		for (size_t i = 0; i < s->n; i++)
			if (s->t[i].group == g)
				fprintf(out, " %d", (int)s->t[i].tid);
		fprintf(out, " (%s)\n", s->t[first].comm);
		/* the key's other lines: a function, then its file:line */
		bool func = true;
		for (const char *p = nl + 1, *end; *p; p = end + 1, func = !func) {
			end = strchr(p, '\n');
			fprintf(out, "%s%.*s\n", func ? "  " : "      ", (int)(end - p), p);
		}
	}
	bool edges = false;
	for (size_t i = 0; i < s->n; i++) {
		const struct live_thread *t = &s->t[i];
		if (!waits_for_thread(s, i))
			continue;
		if (!edges)
			fprintf(out, "\nWait-for graph:\n");
		edges = true;
		char edge[2 * NAME_MAX_LEN];
		waits_for_text(t, edge, sizeof edge);
		fprintf(out, "  thread %d waits for %s\n", (int)t->tid, edge);
	}
	size_t found = 0;
	for (size_t i = 0; i < s->n; i++) {
		size_t cycle[GT_CYCLE_MAX];
		size_t n = cycle_led_by(s, i, cycle);
		if (!n)
			continue;
		bool joins = false;
		for (size_t k = 0; k < n; k++)
			joins |= s->t[cycle[k]].wait.kind == GT_BK_JOIN;
		fprintf(out, "\nDeadlock %zu: %zu threads, each waiting for %s\n", ++found, n,
			joins ? "the next one" : "a lock the next one holds");
		for (size_t k = 0; k < n; k++) {
			const struct live_thread *t = &s->t[cycle[k]];
			char edge[2 * NAME_MAX_LEN];
			waits_for_text(t, edge, sizeof edge);
			fprintf(out, "  thread %d (%s) waits for %s\n", (int)t->tid, t->comm, edge);
		}
	}
}

static void print_json(FILE *out, struct snapshot *s)
{
	fprintf(out, "{\"pid\": %d, \"comm\": ", (int)s->pid);
	gt_report_json_string(out, s->comm);
	fprintf(out, ", \"stopped_ms\": %.3f, \"threads\": [", s->stopped_ms);
	for (size_t i = 0; i < s->n; i++) {
		const struct live_thread *t = &s->t[i];
		const char *nl = strchr(t->key, '\n');
		char what[WHAT_MAX];
		snprintf(what, sizeof what, "%.*s", (int)(nl - t->key), t->key);
		fprintf(out, "%s\n  {\"tid\": %d, \"group\": %d, \"state\": \"%c\", \"syscall\": %ld, "
			"\"comm\": ", i ? "," : "", (int)t->tid, t->group, t->state, t->nr);
		gt_report_json_string(out, t->comm);
		fprintf(out, ", \"wchan\": ");
		gt_report_json_string(out, t->wchan);
		fprintf(out, ", \"waiting\": ");
		gt_report_json_string(out, what);
		if (t->wait.kind) {
			fprintf(out, ", \"lock\": {\"kind\": \"%s\", \"address\": \"0x%llx\", "
				"\"holder\": %d, ", gt_sym_live_lock_kind(t->wait.kind),
				(unsigned long long)t->wait.object, t->wait.holder);
			if (t->wait.readers >= 0)
				fprintf(out, "\"readers\": %d, ", t->wait.readers);
			fprintf(out, "\"name\": ");
			gt_report_json_string(out, t->lock);
			fprintf(out, "}");
		}
		fprintf(out, ", \"stack\": [");
		bool first = true;
		for (const char *p = nl + 1, *end; *p; p = end + 1) {
			end = strchr(p, '\n');
			const char *line = *end ? strchr(end + 1, '\n') : NULL;
			char frame[2048];
			if (line)
				snprintf(frame, sizeof frame, "%.*s (%.*s)", (int)(end - p), p,
					 (int)(line - end - 1), end + 1);
			else
				snprintf(frame, sizeof frame, "%.*s", (int)(end - p), p);
			fprintf(out, "%s", first ? "" : ", ");
			gt_report_json_string(out, frame);
			first = false;
			if (line)
				end = line;
		}
		fprintf(out, "]}");
	}
	fprintf(out, "\n], \"deadlocks\": [");
	size_t found = 0;
	for (size_t i = 0; i < s->n; i++) {
		size_t cycle[GT_CYCLE_MAX];
		size_t n = cycle_led_by(s, i, cycle);
		if (!n)
			continue;
		fprintf(out, "%s[", found++ ? ", " : "");
		for (size_t k = 0; k < n; k++)
			fprintf(out, "%s%d", k ? ", " : "", (int)s->t[cycle[k]].tid);
		fprintf(out, "]");
	}
	fprintf(out, "]}\n");
}

/* Whether the process has ended: gone, or a zombie its parent has not reaped yet. */
static bool process_ended(pid_t pid)
{
	struct live_thread leader = {.tid = pid};
	read_thread(pid, &leader);
	return leader.state == '?' || leader.state == 'Z' || leader.state == 'X';
}

/* -o FILE: the snapshot as a Go trace too. */
struct trace_request {
	const char *path;
	enum gt_trace_format format;
};

/* Writes the snapshot as a Go trace (stacks_trace.c), each deadlock's threads numbered. */
static int write_trace(const struct trace_request *trace, struct gt_symbolizer *sym,
		       struct snapshot *s)
{
	struct gt_stacks_found *found = calloc(s->n, sizeof *found);
	int rc = 1;
	if (found) {
		for (size_t i = 0; i < s->n; i++) {
			const struct live_thread *t = &s->t[i];
			found[i] = (struct gt_stacks_found){t->tid, t->comm, t->key, t->state, t->nr,
				t->args, t->wait.kind ? gt_sym_live_lock_kind(t->wait.kind) : NULL,
				t->wait.object, t->wait.holder, t->pcs, t->n_pcs, 0};
		}
		for (size_t i = 0, deadlocks = 0; i < s->n; i++) {
			size_t cycle[GT_CYCLE_MAX];
			size_t n = cycle_led_by(s, i, cycle);
			deadlocks += n > 0;
			for (size_t k = 0; k < n; k++)
				found[cycle[k]].deadlock = (uint32_t)deadlocks;
		}
		rc = gt_stacks_write_trace(trace->path, trace->format, sym, s->pid, s->comm, found,
					   s->n);
	}
	free(found);
	return rc;
}

/* Reads the snapshot of s->pid (and writes it as a trace when asked): 0, or the command's
 * exit status when it could not. */
static int take_snapshot(struct snapshot *s, const struct trace_request *trace)
{
	char path[64];
	snprintf(path, sizeof path, "/proc/%d/comm", (int)s->pid);
	if (!read_text(path, s->comm, sizeof s->comm) || !list_threads(s)) {
		fprintf(stderr, "gotrace stacks: no process %d\n", (int)s->pid);
		return 1;
	}
	s->comm[strcspn(s->comm, "\n")] = 0;
	long tracer = status_field(s->pid, "\nTracerPid:");
	if (tracer > 0) {
		fprintf(stderr, "gotrace stacks: process %d is already traced by process %ld (a "
			"debugger?); it is left alone: detach the debugger first\n", (int)s->pid,
			tracer);
		return 1;
	}
	/* the modules first: the process is stopped only while its threads are unwound */
	struct gt_symbolizer *sym = gt_sym_new(NULL);
	struct gt_sym_live *live = sym ? gt_sym_live_open(sym, s->pid) : NULL;
	if (live == NULL) {
		/* /proc/PID/maps asks the permission ptrace does */
		snprintf(path, sizeof path, "/proc/%d/maps", (int)s->pid);
		FILE *maps = fopen(path, "re");
		int maps_errno = errno;
		if (process_ended(s->pid))
			fprintf(stderr, "gotrace stacks: process %d ended while it was read\n",
				(int)s->pid);
		else if (maps == NULL && (maps_errno == EACCES || maps_errno == EPERM))
			explain_refusal(s->pid, maps_errno);
		else
			fprintf(stderr, "gotrace stacks: the modules of process %d could not be "
				"read\n", (int)s->pid);
		if (maps != NULL)
			fclose(maps);
		gt_sym_free(sym);
		return 1;
	}
	int err = 0;
	double start = now_ms();
	if (!stop_all(s, &err)) {
		gt_sym_live_close(live);
		gt_sym_free(sym);
		/* a process that ends refuses too: then that is what is said */
		if (process_ended(s->pid))
			fprintf(stderr, "gotrace stacks: process %d ended while it was read\n",
				(int)s->pid);
		else
			explain_refusal(s->pid, err);
		return 1;
	}
	size_t kept = 0;   /* threads that ended meanwhile are no longer the process's */
	for (size_t i = 0; i < s->n; i++)
		if (!s->t[i].gone)
			s->t[kept++] = s->t[i];
	s->n = kept;
	uint64_t pcs[STACK_MAX];
	int rc = kept ? gt_sym_live_threads(live, s->pid, pcs, STACK_MAX, got_stack, s) : -1;
	resume_all(s);
	s->stopped_ms = now_ms() - start;
	s->seen_ms = start;
	gt_sym_live_close(live);
	if (kept == 0) {
		fprintf(stderr, "gotrace stacks: process %d ended while it was read\n", (int)s->pid);
		gt_sym_free(sym);
		return 1;
	}
	if (rc != 0) {
		fprintf(stderr, "gotrace stacks: the threads of process %d could not be unwound\n",
			(int)s->pid);
		gt_sym_free(sym);
		return 1;
	}
	describe(sym, s);
	if (!make_graph(s)) {
		fprintf(stderr, "gotrace stacks: out of memory\n");
		gt_sym_free(sym);
		return 1;
	}
	rc = trace->path ? write_trace(trace, sym, s) : 0;
	gt_sym_free(sym);
	return rc;
}

/* After a later sample: which threads moved since the one before (another state or stack,
 * CPU time used, or new), which tells a hang (none moved) from a slow process. */
static void print_moved(FILE *out, const struct snapshot *now, const struct snapshot *before)
{
	size_t moved = 0;
	for (size_t i = 0; i < now->n; i++) {
		bool same = false;
		for (size_t k = 0; k < before->n && !same; k++)
			same = before->t[k].tid == now->t[i].tid && before->t[k].cpu == now->t[i].cpu &&
			       !strcmp(before->t[k].key, now->t[i].key);
		if (!same)
			fprintf(out, "%s %d", moved++ ? "" : "\nMoved since the last sample:",
				(int)now->t[i].tid);
	}
	if (moved)
		fprintf(out, " (%zu of %zu threads)\n", moved, now->n);
	else
		fprintf(out, "\nNo thread moved since the last sample: the same %zu threads in the "
			"same states and stacks, without CPU time\n", now->n);
}

static void free_snapshot(struct snapshot *s)
{
	for (size_t i = 0; i < s->n; i++)
		free(s->t[i].key);
	free(s->t);
	gt_tracker_free(s->graph);
	*s = (struct snapshot){.pid = s->pid};
}

int gt_cmd_stacks(int argc, char **argv)
{
	static const struct option options[] = {
		{"json", no_argument, NULL, 'j'},
		{"every", required_argument, NULL, 'e'},
		{"count", required_argument, NULL, 'c'},
		{"output", required_argument, NULL, 'o'},
		{"format", required_argument, NULL, 'f'},
		{"help", no_argument, NULL, 'h'},
		{NULL, 0, NULL, 0},
	};
	bool json = false;
	uint64_t every_ns = 1000000000;
	long count = 1;
	struct trace_request trace = {NULL, 0};
	const char *format = NULL;
	int c;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+:ho:", options, NULL)) != -1) {
		char *end;
		if (c == 'j') {
			json = true;
		} else if (c == 'e') {
			if (gt_cli_parse_duration(optarg, 1e9, &every_ns) != 0 || every_ns == 0) {
				gt_cli_fail("stacks", "--every takes a duration (\"2\" or \"500ms\"), "
					    "not '%s'", optarg);
				return 2;
			}
		} else if (c == 'c') {
			count = strtol(optarg, &end, 10);
			if (count < 1 || *end) {
				gt_cli_fail("stacks", "--count takes a number of samples (1 or more), "
					    "not '%s'", optarg);
				return 2;
			}
		} else if (c == 'o') {
			trace.path = optarg;
		} else if (c == 'f') {
			format = optarg;
		} else if (c == 'h') {
			usage(stdout);
			return 0;
		} else {
			return gt_cli_bad_option("stacks", c, argv);
		}
	}
	char *end;
	long pid = optind + 1 == argc ? strtol(argv[optind], &end, 10) : 0;
	if (pid <= 0 || *end) {
		usage(stderr);
		return 2;
	}
	if (format && !trace.path) {
		gt_cli_fail("stacks", "--format is the format of the trace -o FILE writes");
		return 2;
	}
	if (trace.path && gt_cli_trace_format("stacks", format, &trace.format) != 0)
		return 2;
	if (trace.path && count > 1) {
		gt_cli_fail("stacks", "-o writes one snapshot, not --count %ld samples: sample "
			    "without -o to see which threads move, then take the trace", count);
		return 2;
	}
	struct snapshot before = {.pid = (pid_t)pid}, now = before;
	int rc = 0;
	for (long k = 0; k < count && rc == 0; k++) {
		if (k > 0) {
			struct timespec wait = {(time_t)(every_ns / 1000000000),
						(long)(every_ns % 1000000000)};
			while (nanosleep(&wait, &wait) != 0 && errno == EINTR)
				;
		}
		if ((rc = take_snapshot(&now, &trace)) != 0)
			break;
		int groups = group_threads(&now);
		if (json) {
			print_json(stdout, &now);
		} else {
			if (count > 1)
				printf("%sSample %ld of %ld: ", k ? "\n" : "", k + 1, count);
			print_text(stdout, &now, groups);
			if (k > 0)
				print_moved(stdout, &now, &before);
			gt_stacks_recorded(stdout, now.pid, (uint64_t)(now.seen_ms * 1e6));
		}
		fflush(stdout);
		free_snapshot(&before);
		before = now;
		now = (struct snapshot){.pid = (pid_t)pid};
	}
	free_snapshot(&before);
	free_snapshot(&now);
	return rc;
}
