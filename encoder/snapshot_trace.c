/* snapshot_trace: `gotrace stacks -o`, a live process's threads at one moment as a Go trace.
 * The snapshot is said as the facts a capture would hold, and those go through the model and
 * the writers as a capture's do: each thread is a thread that existed before the trace
 * (THREAD_EXISTING, THREAD_NAME), its stack a STACK record; then, one after the other on
 * CPU 0, each thread that waits logs what it does (a user log: the text output's phrase) and
 * blocks (BLOCK_BEGIN, its holder's TID in the flags as a recorder gives it) or enters its
 * system call (SYSCALL_BEGIN); then each running thread logs on a CPU of its own, and the
 * trace ends SPAN_NS later.  No wake is invented: a lock's holder is named in the log, and a
 * deadlock's threads log inside one user task "deadlock N". */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "encoder.h"
#include "gowire.h"
#include "model.h"

#define SPAN_NS 10000000u     /* how long the snapshot's state is drawn: 10 ms */
#define STEP_NS 1000u         /* between the facts of two threads */
#define LOG_CATEGORY "gotrace stacks"

struct feed {
	struct gt_model *m;
	uint64_t tsc;
	uint64_t words[GT_MAX_RECORD_WORDS];   /* the record being given */
};

/* Gives the model one record of type (aux) of thread serial on cpu, with payload bytes. */
static void give(struct feed *f, uint8_t type, uint8_t aux, uint32_t serial, uint32_t cpu,
		 const void *payload, size_t len)
{
	size_t words = 2 + (len + 7) / 8;
	if (words > GT_MAX_RECORD_WORDS)
		return;
	memset(f->words, 0, words * 8);
	struct gt_rec *rec = (struct gt_rec *)f->words;
	*rec = (struct gt_rec){.type = type, .aux = aux, .nwords = (uint16_t)words,
			       .thread = serial, .tsc = f->tsc};
	memcpy(rec + 1, payload, len);
	struct gt_capture_record r = {rec, rec + 1, len, cpu, f->tsc, 0};
	gt_model_fact(f->m, &r);
}

/* A user annotation of kind by thread serial: name, then msg. */
static void annotate(struct feed *f, uint32_t serial, uint32_t cpu, uint8_t kind, uint64_t task,
		     uint32_t stack, const char *name, const char *msg)
{
	char buf[sizeof(struct gt_p_user) + 2048];
	struct gt_p_user u = {.id = task, .stack = stack};
	size_t name_len = strnlen(name, 256), msg_len = msg ? strnlen(msg, 1024) : 0;
	u.name_len = (uint16_t)name_len;
	u.msg_len = (uint16_t)msg_len;
	memcpy(buf, &u, sizeof u);
	memcpy(buf + sizeof u, name, name_len);
	if (msg_len)
		memcpy(buf + sizeof u + name_len, msg, msg_len);
	give(f, GT_USER, kind, serial, cpu, buf, sizeof u + name_len + msg_len);
}

/* The thread that is serial 1, the trace's G1: the main thread (its TID is the pid), else
 * (it ended: pthread_exit) the first one, so that no goroutine stands for a thread that is
 * not there. */
static size_t first_of(const struct gt_live_snapshot *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->threads[i].tid == s->pid)
			return i;
	return 0;
}

/* The thread serial of thread i: 1 for first_of's, then 2 on in their order. */
static uint32_t serial_of(const struct gt_live_snapshot *s, size_t i)
{
	size_t first = first_of(s);
	if (i == first)
		return 1;
	return (uint32_t)(i < first ? i + 2 : i + 1);
}

static uint32_t serial_of_tid(const struct gt_live_snapshot *s, uint32_t tid)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->threads[i].tid == tid)
			return serial_of(s, i);
	return 0;
}

static uint32_t stack_of(const struct gt_live_snapshot *s, size_t i)
{
	return s->threads[i].n_pcs ? (uint32_t)i + 1 : 0;
}

/* What is there before the first event: stacks, threads, their names. */
static void prologue(struct feed *f, const struct gt_live_snapshot *s)
{
	for (size_t i = 0; i < s->n; i++) {
		const struct gt_snap_thread *t = &s->threads[i];
		if (!t->n_pcs)
			continue;
		struct {
			struct gt_p_stack st;
			uint64_t pcs[GT_MAX_STACK_DEPTH];
		} st = {.st = {.id = stack_of(s, i),
			       .nframes = (uint32_t)(t->n_pcs < GT_MAX_STACK_DEPTH
							 ? t->n_pcs : GT_MAX_STACK_DEPTH)}};
		memcpy(st.pcs, t->pcs, st.st.nframes * sizeof *t->pcs);
		give(f, GT_STACK, 0, 0, 0, &st, sizeof st.st + st.st.nframes * 8);
	}
	for (size_t i = 0; i < s->n; i++) {
		const struct gt_snap_thread *t = &s->threads[i];
		struct gt_p_thread_start ex = {.tid = t->tid, .stack = stack_of(s, i)};
		give(f, GT_THREAD_EXISTING, 0, serial_of(s, i), 0, &ex, sizeof ex);
		struct gt_p_thread_name name = {{0}};
		snprintf(name.name, sizeof name.name, "%s", t->name ? t->name : "");
		give(f, GT_THREAD_NAME, 0, serial_of(s, i), 0, &name, sizeof name);
	}
}

/* Thread i says what it does (inside its deadlock's task, begun by the first of its
 * threads), and waits as it was found waiting. */
static void wait_as_found(struct feed *f, const struct gt_live_snapshot *s, size_t i,
			  bool *tasks)
{
	const struct gt_snap_thread *t = &s->threads[i];
	uint32_t serial = serial_of(s, i), stack = stack_of(s, i);
	f->tsc += STEP_NS;
	uint64_t task = tasks && t->deadlock <= s->n ? t->deadlock : 0;   /* no memory: no task */
	if (task && !tasks[task]) {
		char name[32];
		snprintf(name, sizeof name, "deadlock %u", t->deadlock);
		annotate(f, serial, 0, GT_USER_TASK_BEGIN, task, stack, name, NULL);
		tasks[task] = true;
	}
	annotate(f, serial, 0, GT_USER_LOG, task, stack, LOG_CATEGORY, t->what);
	f->tsc += 1;
	if (t->state == GT_SNAP_BLOCKED) {
		struct gt_p_block b = {.obj = t->object, .stack = stack};
		if (t->block_kind == GT_BK_JOIN)
			b.obj = serial_of_tid(s, (uint32_t)t->object);
		if (t->holder && (t->block_kind == GT_BK_MUTEX || t->block_kind == GT_BK_RWLOCK_RD ||
				  t->block_kind == GT_BK_RWLOCK_WR))
			b.flags = GT_BLOCK_HOLDER_TID | t->holder << GT_BLOCK_HOLDER_SHIFT;
		give(f, GT_BLOCK_BEGIN, t->block_kind, serial, 0, &b, sizeof b);
	} else {
		struct gt_p_syscall sc = {.nr = t->sys_nr, .stack = stack, .arg = t->sys_arg};
		give(f, GT_SYSCALL_BEGIN, t->fd_kind, serial, 0, &sc, sizeof sc);
	}
}

/* The facts of the snapshot, into the model. */
static void feed_snapshot(struct feed *f, const struct gt_live_snapshot *s)
{
	prologue(f, s);
	bool *tasks = calloc(s->n + 1, sizeof *tasks);   /* deadlocks are numbered 1..n */
	for (size_t i = 0; i < s->n; i++)
		if (s->threads[i].state != GT_SNAP_RUNNING)
			wait_as_found(f, s, i, tasks);
	free(tasks);
	/* the running ones last, each on a CPU of its own while there are CPUs: /proc's R is
	 * running or runnable, so those beyond the CPUs are drawn runnable */
	f->tsc += STEP_NS;
	uint32_t cpu = 0;
	for (size_t i = 0; i < s->n; i++) {
		const struct gt_snap_thread *t = &s->threads[i];
		if (t->state != GT_SNAP_RUNNING)
			continue;
		annotate(f, serial_of(s, i), cpu++ % s->n_cpus, GT_USER_LOG, 0, stack_of(s, i),
			 LOG_CATEGORY, t->what);
	}
	/* the end of the trace: a clock pair of the monotonic clock, which is the trace's */
	f->tsc += SPAN_NS;
	struct gt_p_clock end = {.mono_ns = f->tsc};
	give(f, GT_CLOCK, 0, 0, 0, &end, sizeof end);
}

int gt_snapshot_trace_write(const char *path, enum gt_trace_format format,
			    struct gt_symbolizer *sym, const struct gt_live_snapshot *s, char *err,
			    size_t errlen)
{
	struct gt_file_header h = {
		.magic = GT_CAPTURE_MAGIC,
		.version = GT_CAPTURE_VERSION,
		.pid = s->pid,
		.n_cpus = s->n_cpus ? s->n_cpus : 1,
		.clock_source = GT_CLOCK_MONOTONIC,
		.tsc_hz = 1000000000u,
		.start_tsc = s->mono_ns,
		.start_mono_ns = s->mono_ns,
		.start_real_ns = s->real_ns,
		.stack_mode = GT_STACKS_UNWIND,
		.stack_depth = GT_MAX_STACK_DEPTH,
#if defined(__aarch64__)
		.arch = GT_ARCH_AARCH64,
#else
		.arch = GT_ARCH_X86_64,
#endif
	};
	snprintf(h.exe_path, sizeof h.exe_path, "%s", s->exe ? s->exe : "");
	snprintf(h.cmdline, sizeof h.cmdline, "%s", s->comm ? s->comm : "");
	struct gt_live_snapshot sized = *s;
	sized.n_cpus = h.n_cpus;
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		return -1;
	}
	struct gt_wire_options wo = {0};
	struct gt_wire *w = gt_trace_format_of(format)->open(fd, h.n_cpus + 1, &wo);
	struct gt_model_options mo = {.syscall_threshold_ns = GT_DEFAULT_SYSCALL_THRESHOLD_NS,
				      .sym = sym};
	struct gt_model *m = w ? gt_model_new(w, &h, &mo) : NULL;
	struct feed *f = m ? calloc(1, sizeof *f) : NULL;
	int rc = -1;
	if (!f) {
		snprintf(err, errlen, "out of memory");
	} else {
		gt_wire_frequency_source(w, gt_model_frequency, m);
		*f = (struct feed){.m = m, .tsc = s->mono_ns};
		feed_snapshot(f, &sized);
		gt_model_capture_end(m, 0);
		int werr = gt_wire_finish(w, gt_model_finish(m));
		if (werr)
			snprintf(err, errlen, "%s: %s", path, strerror(werr));
		rc = werr ? -1 : 0;
	}
	if (close(fd) < 0 && rc == 0) {
		snprintf(err, errlen, "%s: %s", path, strerror(errno));
		rc = -1;
	}
	if (rc)
		unlink(path);
	free(f);
	gt_model_free(m);
	gt_wire_free(w);
	return rc;
}
