/* convert: see convert.h. */
#include "encoder.h"

#include "capture_reader.h"
#include "cpu_samples.h"
#include "gowire.h"
#include "model.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "capture_set.h"
#include "clock_fit.h"
#include "critical_path.h"
#include "common/grow.h"
#include "kernel/reader.h"
#include "symbolizer/symbolizer.h"
#include "window.h"

static double cpu_seconds(void)
{
	struct rusage ru;
	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The nominal rate of a capture's timestamps. */
static double ticks_per_second(const struct gt_file_header *h)
{
	return h->clock_source == GT_CLOCK_MONOTONIC || !h->tsc_hz ? 1e9 : (double)h->tsc_hz;
}

/* The context switches of a run (kernel/reader.h), given to the model in time order: read
 * as the model looks ahead, each held from then until given. */
struct kswitches {
	struct gt_kernel_switch_stream *s;   /* NULL: none */
	struct gt_kernel_switch *ring;  /* the next n from ring[first], on the captures' clock */
	size_t cap, first, n;           /* cap: a power of two */
	struct gt_clock_pair *pairs;    /* the captures' clock (gt_clock_pairs_tsc) */
	size_t n_pairs, at;
	uint64_t hz;
};

/* The clock pairs of the captures of set (their headers' and GT_CLOCK records, on capture
 * 0's clock), ready for gt_clock_pairs_tsc; *n of them, NULL when memory runs out.  Read
 * ahead of the conversion: a pair recorded late also places the kernel's early records. */
static struct gt_clock_pair *clock_pairs(const struct gt_capture_set *set,
					 const struct gt_file_header *h0, size_t *n)
{
	size_t count = gt_capture_set_count(set), cap = 0;
	const char **paths = calloc(count, sizeof *paths);
	struct gt_clock_pair *p = NULL;
	*n = 0;
	if (!paths)
		return NULL;
	for (size_t i = 0; i < count; i++)
		paths[i] = gt_capture_set_path(set, i);
	struct gt_capture_set *again = gt_capture_set_open(paths, count);
	bool failed = !again || !gt_grow(&p, &cap, 1, sizeof *p);
	if (!failed)
		p[(*n)++] = (struct gt_clock_pair){h0->start_tsc, h0->start_mono_ns};
	struct gt_capture_record r;
	uint32_t index;
	enum gt_set_event ev;
	while (!failed && (ev = gt_capture_set_next(again, &r, &index)) != GT_SET_DONE) {
		/* the pairs of captures on capture 0's counter (the model's condition) */
		if (ev == GT_SET_ENDED || r.rec->type != GT_CLOCK || (r.tsc != r.rec->tsc && count > 1))
			continue;
		const struct gt_p_clock *c = r.payload;
		failed = !gt_grow(&p, &cap, *n + 1, sizeof *p);
		if (!failed)
			p[(*n)++] = (struct gt_clock_pair){r.tsc, c->mono_ns};
	}
	gt_capture_set_close(again);
	free(paths);
	if (failed) {
		free(p);
		*n = 0;
		return NULL;
	}
	*n = gt_clock_pairs_prepare(p, *n, (uint64_t)ticks_per_second(h0));
	return p;
}

/* The switches of path in k, to be read as needed, their times put on the captures' clock. */
static void kswitches_load(struct kswitches *k, const char *path, const struct gt_capture_set *set,
			   const struct gt_file_header *h0, char *err, size_t errlen)
{
	k->s = gt_kernel_switch_stream_open(path, err, errlen);
	if (!k->s)
		return;
	/* the model looks 4096 ahead at most: the ring does not grow */
	k->cap = 8192;
	k->ring = malloc(k->cap * sizeof *k->ring);
	if (!k->ring) {
		snprintf(err, errlen, "%s: out of memory", path);
		gt_kernel_switch_stream_close(k->s);
		k->s = NULL;
		return;
	}
	k->pairs = h0->clock_source == GT_CLOCK_MONOTONIC ? NULL : clock_pairs(set, h0, &k->n_pairs);
	k->hz = h0->clock_source == GT_CLOCK_MONOTONIC ? 0 : h0->tsc_hz;
}

/* Whether switch i after the next one to give (0: it) is read; false past the last. */
static bool kswitches_read(struct kswitches *k, size_t i)
{
	while (k->s && k->n <= i) {
		if (k->n == k->cap) {
			size_t cap = 2 * k->cap;
			struct gt_kernel_switch *ring = malloc(cap * sizeof *ring);
			if (!ring)
				return false;
			for (size_t j = 0; j < k->n; j++)
				ring[j] = k->ring[(k->first + j) & (k->cap - 1)];
			free(k->ring);
			k->ring = ring;
			k->cap = cap;
			k->first = 0;
		}
		struct gt_kernel_switch *sw = &k->ring[(k->first + k->n) & (k->cap - 1)];
		if (!gt_kernel_switch_stream_next(k->s, sw))
			return false;
		sw->time = gt_clock_pairs_tsc(k->pairs, k->n_pairs, k->hz, sw->time, &k->at);
		k->n++;
	}
	return k->n > i;
}

/* The model's lookahead of switches (gt_model_kernel_ahead). */
static const struct gt_kernel_switch *kswitches_peek(void *ctx, size_t i)
{
	struct kswitches *k = ctx;
	return kswitches_read(k, i) ? &k->ring[(k->first + i) & (k->cap - 1)] : NULL;
}

/* Gives the model the switches stamped up to the fact next (all without), in time order (a
 * thread's fact that the clocks' error puts after its own switch-out: model_kernel.c).  While
 * the model takes one, it is lookahead switch 0. */
static void kswitches_feed(struct kswitches *k, struct gt_model *m,
			   const struct gt_capture_record *next)
{
	for (; kswitches_read(k, 0); k->first = (k->first + 1) & (k->cap - 1), k->n--) {
		const struct gt_kernel_switch *s = &k->ring[k->first];
		if (next && s->time > next->tsc)
			return;
		struct gt_model_switch ms = {
			.tsc = s->time, .mono_ns = s->mono, .tid = s->tid, .cpu = s->cpu,
			.in = s->what == GT_KSW_IN,
			.preempted = s->what == GT_KSW_PREEMPTED, .exit = s->what == GT_KSW_EXIT,
			.next = next,
		};
		gt_model_switch(m, &ms);
	}
}

/* The locks of a capture's deadlocks, named as its trace names them */
struct lock_namer {
	struct gt_model *m;
	uint32_t capture;
};

static const char *lock_name(void *ctx, uint8_t kind, uint64_t obj)
{
	struct lock_namer *n = ctx;
	return gt_model_object_name(n->m, n->capture, kind, obj);
}

static const char *lock_site(void *ctx, uint32_t capture, uint32_t stack, char *buf, size_t size)
{
	struct lock_namer *n = ctx;
	return gt_model_stack_site(n->m, capture, stack, buf, size);
}

static void kswitches_close(struct kswitches *k)
{
	gt_kernel_switch_stream_close(k->s);
	free(k->ring);
	free(k->pairs);
}

/* Killed processes: when each capture of set (by its index) was reaped (gt_capture_reaped;
 * a capture converted alone: opt's, found among its run's); NULL when memory runs out. */
static struct gt_reap *reaped_of(const struct gt_capture_set *set,
				 const struct gt_convert_options *opt)
{
	size_t n = gt_capture_set_count(set);
	const char **paths = calloc(n + 1, sizeof *paths);
	for (size_t i = 0; paths && i < n; i++)
		paths[i] = gt_capture_set_path(set, i);
	struct gt_reap *reaped = paths ? gt_capture_reaped(paths, n) : NULL;
	free(paths);
	if (reaped && n == 1 && opt->reaped.mono_ns && !reaped[0].mono_ns) {
		const struct gt_file_header *h = gt_capture_set_header(set, 0);
		if (h && !(h->flags & (GT_FILE_FINALIZED | GT_FILE_DETACHED)))
			reaped[0] = opt->reaped;
	}
	return reaped;
}

/* Writes the trace of set into out (beside it first, renamed into place when complete). */
/* Each capture's part of the summary, and the totals (span: first and last tsc per capture,
 * NULL: unknown; hz: the first capture's ticks per second; m NULL: no model ran; reaped:
 * reaped_of's, NULL: unknown). */
static void summarize_captures(struct gt_capture_set *set, struct gt_model *m,
			       const uint64_t (*span)[2], double hz, const struct gt_reap *reaped,
			       struct gt_convert_set_summary *sum)
{
	const struct gt_file_header *h0 = gt_capture_set_header(set, 0);
	size_t n = gt_capture_set_count(set);
	for (size_t i = 0; i < n; i++) {
		struct gt_convert_capture *c = &sum->captures[i];
		const struct gt_file_header *h = gt_capture_set_header(set, i);
		c->path = gt_capture_set_path(set, i);
		if (!h) {
			snprintf(c->error, sizeof c->error, "%s", gt_capture_set_error(set, i));
			continue;
		}
		c->readable = true;
		c->sum.pid = h->pid;
		gt_capture_stop(h, &c->sum.stop);
		c->finalized = (h->flags & GT_FILE_FINALIZED) != 0;
		c->detached = (h->flags & GT_FILE_DETACHED) != 0;
		/* named as its user knows it: its last GT_PROCESS_NAME, else its executable's */
		struct gt_process_name pn;
		if (!m)
			gt_process_name_from_header(&pn, h);
		const struct gt_process_name *name = m ? gt_model_process(m, (uint32_t)i) : &pn;
		memcpy(c->sum.process, name->name, sizeof c->sum.process);
		memcpy(c->command, name->name, sizeof c->command);
		c->start_mono_ns = h->start_mono_ns;
		if (span && span[i][1] > span[i][0])
			c->seconds = (double)(span[i][1] - span[i][0]) / hz;
		c->sum.reaped = reaped && reaped[i].mono_ns;
		bool by_gotrace = c->sum.reaped && h->reaped_mono_ns == reaped[i].mono_ns;
		if (by_gotrace && WIFSIGNALED(h->reaped_status))
			c->sum.killed_by = WTERMSIG(h->reaped_status);
		if (c->sum.reaped && span && h0 && span[i][0] >= h0->start_tsc) {
			/* to its reap: span is on capture 0's clock */
			double first = (double)h0->start_mono_ns +
				       (double)(span[i][0] - h0->start_tsc) / hz * 1e9;
			if ((double)reaped[i].mono_ns > first)
				c->seconds = ((double)reaped[i].mono_ns - first) / 1e9;
		}
		gt_capture_set_stats(set, i, &c->sum.reader, &c->sum.truncated);
		if (m)
			gt_model_capture_counters(m, (uint32_t)i, &c->sum.model);
		sum->total.truncated |= c->sum.truncated;
		if (n == 1) {
			/* else each capture says its own */
			sum->total.stop = c->sum.stop;
			sum->total.reaped = c->sum.reaped;
			sum->total.killed_by = c->sum.killed_by;
			memcpy(sum->total.process, c->sum.process, sizeof sum->total.process);
		}
#define GT_ADD_READER(f) sum->total.reader.f += c->sum.reader.f;
		GT_ADD_READER(records) GT_ADD_READER(chunks) GT_ADD_READER(chunks_unused)
		GT_ADD_READER(chunks_bad) GT_ADD_READER(chunks_truncated) GT_ADD_READER(bytes_zero)
		GT_ADD_READER(bytes_garbage) GT_ADD_READER(resyncs) GT_ADD_READER(torn_tails)
		GT_ADD_READER(reordered) GT_ADD_READER(reorder_capped) GT_ADD_READER(bytes_total)
		GT_ADD_READER(bytes_read) GT_ADD_READER(chunks_keep) GT_ADD_READER(ring_summary)
		GT_ADD_READER(before_window) GT_ADD_READER(open_unknown)
#undef GT_ADD_READER
	}
}

/* The CPU samples after the last fact: the rest given to m, counted, closed. */
static void finish_samples(struct gt_cpu_samples *cs, struct gt_model *m,
			   struct gt_convert_set_summary *sum)
{
	gt_cpu_samples_finish(cs, m);
	gt_model_offcpu_samples(m, NULL);   /* closed next */
	gt_cpu_samples_counts(cs, &sum->total.samples);
	const struct gt_cpu_sample_counts *sc = &sum->total.samples;
	sum->total.has_samples = sc->written || sc->outside || sc->no_user || sc->offcpu ||
				 sc->elsewhere;
	gt_cpu_samples_close(cs);
}

/* The file the trace for out is written into: out.partial, renamed at the end, or out itself
 * (*in_place) when it is not a regular file (/dev/null, a FIFO, a terminal: renaming over it
 * would replace a device node or a pipe with a file).  Its fd, *tmp its path (to free); -1
 * after one line into err. */
static int open_output(const char *out, char **tmp, bool *in_place, char *err, size_t errlen)
{
	size_t tmp_len = strlen(out) + 16;
	*tmp = malloc(tmp_len);
	if (!*tmp) {
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	struct stat st;
	*in_place = stat(out, &st) == 0 && !S_ISREG(st.st_mode);
	snprintf(*tmp, tmp_len, *in_place ? "%s" : "%s.partial", out);
	int fd = open(*tmp, *in_place ? O_WRONLY | O_CLOEXEC : O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC,
		      0644);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", *tmp, strerror(errno));
		free(*tmp);
	}
	return fd;
}

/* The critical path of captures to draw (gt_critpath_plan), from a conversion of them written
 * nowhere; none (*plan NULL) when there is none. */
static void critical_plan(const char *const *captures, size_t n,
			  const struct gt_convert_options *opt, struct gt_cp_stretch **plan,
			  size_t *n_plan)
{
	struct gt_convert_options first = *opt;
	first.draw_critical_path = false;
	first.progress = NULL;
	first.critical_path = gt_critpath_new();
	struct gt_convert_set_summary sum;
	char err[256];
	*plan = NULL;
	*n_plan = 0;
	if (first.critical_path &&
	    gt_convert_files(captures, n, "/dev/null", &first, &sum, err, sizeof err) == 0)
		gt_critpath_plan(first.critical_path, plan, n_plan);
	gt_convert_set_summary_free(&sum);
	gt_critpath_free(first.critical_path);
}

/* Capture index has no more records: what it left (deadlocks, lock-order inversions) into
 * sum, then its end to the model. */
static void capture_ended(struct gt_model *m, struct gt_window *win, uint32_t index,
			  struct gt_convert_set_summary *sum)
{
	if (win)
		gt_window_capture_end(win, index);
	struct lock_namer namer = {m, index};
	gt_tracker_deadlock_text(gt_model_tracker(m), index, sum->total.deadlock,
				 sizeof sum->total.deadlock, lock_name, &namer);
	struct gt_lock_namer names = {lock_name, lock_site, &namer};
	sum->total.lock_order_inversions +=
		gt_lock_order_text(gt_model_lock_order(m), index, gt_model_tracker(m), &names,
				   sum->total.lock_order, sizeof sum->total.lock_order);
	gt_model_capture_end(m, index);
}

/* The progress said, and whether its reader stopped the conversion (said in sum). */
static bool interrupted(struct gt_capture_set *set, const struct gt_convert_options *opt,
			struct gt_convert_set_summary *sum)
{
	uint64_t done, total;
	gt_capture_set_progress(set, &done, &total);
	if (opt->progress(opt->progress_ctx, done, total))
		return false;
	sum->total.interrupted = true;
	sum->total.interrupted_done = total ? (double)done / (double)total : 0;
	return true;
}

static int convert_set(struct gt_capture_set *set, const char *out,
		       const struct gt_convert_options *opt, const struct gt_cp_stretch *plan,
		       size_t n_plan, struct gt_convert_set_summary *sum, char *err, size_t errlen)
{
	size_t n = gt_capture_set_count(set);
	const struct gt_file_header *h0 = gt_capture_set_header(set, 0);
	struct gt_file_header base = *h0;
	size_t readable = 0;
	for (size_t i = 0; i < n; i++) {
		const struct gt_file_header *h = gt_capture_set_header(set, i);
		readable += h != NULL;
		if (h && h->n_cpus > base.n_cpus)
			base.n_cpus = h->n_cpus;   /* CPUs are shared Ps */
	}
	char *tmp;
	bool in_place;
	int fd = open_output(out, &tmp, &in_place, err, errlen);
	if (fd < 0)
		return -1;
	struct gt_symbolizer *sym = NULL;
	if (!opt->no_symbols) {
		struct gt_sym_options so = {.debug_dirs = opt->debug_dirs};
		sym = gt_sym_new(&so);
	}
	struct gt_wire_options wo = {.generation_ns = opt->generation_ns};
	struct gt_wire *w = gt_trace_format_of(opt->format)->open(fd, base.n_cpus + 1, &wo);
	struct gt_model_options mo = {
		.syscall_threshold_ns = opt->syscall_threshold_ns ? opt->syscall_threshold_ns
								   : GT_DEFAULT_SYSCALL_THRESHOLD_NS,
		.sym = sym,
		.set = set,
		.critical_path = opt->critical_path,
		.critical_plan = plan,
		.n_critical_plan = n_plan,
	};
	/* --from/--to: in the first capture's timestamps */
	struct gt_window *win = NULL;
	if (opt->from_ns || opt->to_ns) {
		double tick = ticks_per_second(h0) / 1e9;
		/* without --from, every record is in it (even one stamped before the start) */
		uint64_t from = opt->from_ns ? h0->start_tsc + (uint64_t)((double)opt->from_ns * tick) : 1;
		uint64_t to = opt->to_ns ? h0->start_tsc + (uint64_t)((double)opt->to_ns * tick)
					 : UINT64_MAX;
		win = gt_window_new(from, to);
		mo.start_tsc = from - 1;
	}
	struct gt_model *m = w && (win || !(opt->from_ns || opt->to_ns)) ? gt_model_new(w, &base, &mo)
									 : NULL;
	if (m)
		gt_wire_frequency_source(w, gt_model_frequency, m);
	uint64_t (*span)[2] = calloc(n, sizeof *span);   /* first and last tsc per capture */
	if (!span) {
		gt_model_free(m);
		m = NULL;
	}
	for (size_t i = 1; m && i < readable; i++)
		if (gt_model_add_capture(m, gt_capture_set_header(set, i)) != 0) {
			gt_model_free(m);
			m = NULL;
		}
	struct gt_reap *reaped = reaped_of(set, opt);
	for (size_t i = 0; m && reaped && i < readable; i++) {
		/* its tsc only on the captures' clock */
		struct gt_reap r = reaped[i];
		if (gt_capture_set_header(set, i)->clock_source != h0->clock_source)
			r.tsc = 0, r.pair = false;
		gt_model_capture_reaped(m, (uint32_t)i, &r);
	}
	struct kswitches ks = {0};
	if (m && opt->kernel_path)
		kswitches_load(&ks, opt->kernel_path, set, h0, sum->total.kernel_error,
			       sizeof sum->total.kernel_error);
	if (kswitches_read(&ks, 0))
		gt_model_kernel_ahead(m, kswitches_peek, &ks);
	int rc = 0;
	struct gt_cpu_samples *cs = NULL;
	if (m && opt->kernel_path) {
		char kerr[512];
		cs = gt_cpu_samples_open(opt->kernel_path, kerr, sizeof kerr);
		if (!cs)
			fprintf(stderr, "gotrace: no CPU samples in the trace: %s\n", kerr);
		gt_model_offcpu_samples(m, cs);
	}
	if (!m) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	} else {
		struct gt_capture_record r;
		uint32_t index;
		enum gt_set_event ev;
		for (uint64_t k = 1; (ev = gt_capture_set_next(set, &r, &index)) != GT_SET_DONE; k++) {
			if (ev == GT_SET_ENDED) {
				capture_ended(m, win, index, sum);
				continue;
			}
			if (!span[index][0])
				span[index][0] = r.tsc;
			span[index][1] = r.tsc;
			if (kswitches_read(&ks, 0))
				kswitches_feed(&ks, m, &r);
			if (cs)
				gt_cpu_samples_until(cs, m, gt_cpu_samples_ticks(m, r.tsc));
			if (!win)
				gt_model_fact(m, &r);
			else if (!gt_window_fact(win, m, &r))
				break;
			if (opt->progress && k % 4096 == 0 && interrupted(set, opt, sum))
				break;
		}
		/* the last ones (a window ends at its last fact, so does a stopped conversion) */
		if (!win && !sum->total.interrupted)
			kswitches_feed(&ks, m, NULL);
		if (cs)
			finish_samples(cs, m, sum);
		uint64_t freq = gt_model_finish(m);
		int werr = gt_wire_finish(w, freq);
		if (win && !gt_window_started(win)) {
			snprintf(err, errlen, "nothing was recorded after --from %.3f s (the captures "
				 "end before it)", (double)opt->from_ns / 1e9);
			rc = -1;
		} else if (werr) {
			snprintf(err, errlen, "%s: %s", tmp, strerror(werr));
			rc = -1;
		}
		gt_model_counters(m, &sum->total.model);
		gt_wire_stats(w, &sum->total.wire);
		sum->total.threads_held = gt_model_threads_held(m);
		if (win && gt_window_threads_held(win) > sum->total.threads_held)
			sum->total.threads_held = gt_window_threads_held(win);
		sum->total.lookahead_read = gt_capture_set_peeked(set);
	}
	summarize_captures(set, m, span, ticks_per_second(h0), reaped, sum);
	free(reaped);
	if (close(fd) < 0 && !rc) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		rc = -1;
	}
	if (!rc && !in_place && rename(tmp, out) < 0) {
		snprintf(err, errlen, "%s: %s", out, strerror(errno));
		rc = -1;
	}
	if (rc && !in_place)
		unlink(tmp);
	gt_model_free(m);
	gt_window_free(win);
	gt_wire_free(w);
	if (sym)
		gt_sym_free(sym);
	free(span);
	kswitches_close(&ks);
	free(tmp);
	return rc;
}

int gt_convert_files(const char *const *captures, size_t n, const char *out,
		     const struct gt_convert_options *opt, struct gt_convert_set_summary *sum,
		     char *err, size_t errlen)
{
	double start = now_seconds(), cpu_start = cpu_seconds();
	memset(sum, 0, sizeof *sum);
	if (!n) {
		snprintf(err, errlen, "no capture given");
		return -1;
	}
	struct gt_capture_set *set = gt_capture_set_open(captures, n);
	sum->captures = set ? calloc(n, sizeof *sum->captures) : NULL;
	if (!sum->captures) {
		gt_capture_set_close(set);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	sum->n = n;
	int rc;
	if (!gt_capture_set_header(set, 0)) {
		/* unreadable ones sort last: none is readable */
		snprintf(err, errlen, "%s", gt_capture_set_error(set, 0));
		for (size_t i = 0; i < n; i++) {
			sum->captures[i].path = gt_capture_set_path(set, i);
			snprintf(sum->captures[i].error, sizeof sum->captures[i].error, "%s",
				 gt_capture_set_error(set, i));
		}
		rc = -1;
	} else {
		struct gt_cp_stretch *plan = NULL;
		size_t n_plan = 0;
		if (opt->draw_critical_path)
			critical_plan(captures, n, opt, &plan, &n_plan);
		rc = convert_set(set, out, opt, plan, n_plan, sum, err, errlen);
		free(plan);
	}
	gt_capture_set_close(set);
	sum->total.pid = sum->captures[0].sum.pid;
	for (size_t i = 0; i < n; i++)
		sum->total.captures += sum->captures[i].readable;
	sum->total.seconds = now_seconds() - start;
	sum->total.cpu_seconds = cpu_seconds() - cpu_start;
	return rc;
}

void gt_convert_set_summary_free(struct gt_convert_set_summary *sum)
{
	free(sum->captures);
	sum->captures = NULL;
	sum->n = 0;
}

int gt_convert_file(const char *capture, const char *out, const struct gt_convert_options *opt,
		    struct gt_convert_summary *sum, char *err, size_t errlen)
{
	struct gt_convert_set_summary set;
	int rc = gt_convert_files(&capture, 1, out, opt, &set, err, errlen);
	*sum = set.total;
	gt_convert_set_summary_free(&set);
	return rc;
}

void gt_convert_losses(const struct gt_convert_summary *s, struct gt_convert_losses *out)
{
	const struct gt_model_counters *mc = &s->model;
	const struct gt_capture_stats *r = &s->reader;
	out->dropped = mc->writer_dropped + mc->writer_stacks_lost + mc->writer_threads_lost +
		       mc->writer_waiters_lost + mc->writer_reentry_lost + s->stop.facts_lost;
	out->repaired = mc->threads_appeared + mc->duplicate_creates + mc->causal_fallbacks +
			mc->ends_without_begin + mc->stacks_missing + r->reordered + s->wire.repaired;
	out->skipped = mc->facts_after_end + mc->facts_ignored + mc->user_skipped + s->wire.skipped;
	out->damaged_bytes = r->bytes_garbage;
	out->torn_records = r->torn_tails;
}

void gt_capture_stop(const struct gt_file_header *h, struct gt_convert_stop *out)
{
	*out = (struct gt_convert_stop){.stopped = (h->flags & GT_FILE_WRITE_FAILED) != 0};
	if (!out->stopped)
		return;
	double hz = ticks_per_second(h);
	out->err = h->stop_errno;
	out->at_seconds = h->stop_tsc > h->start_tsc ? (double)(h->stop_tsc - h->start_tsc) / hz : 0;
	out->facts_lost = h->facts_lost;
	if (h->flags & GT_FILE_AT_BOUND)
		out->bound_bytes = h->max_capture_bytes;
	out->sandboxed = (h->flags & GT_FILE_SANDBOXED) != 0;
}

/* "1 GiB", "512 MiB", "1.5 GiB", "4096 B" */
static void size_text(uint64_t bytes, char *buf, size_t size)
{
	static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int u = 0;
	double v = (double)bytes;
	while (v >= 1024 && u < 4) {
		v /= 1024;
		u++;
	}
	if (v == (double)(uint64_t)v)
		snprintf(buf, size, "%" PRIu64 " %s", (uint64_t)v, units[u]);
	else
		snprintf(buf, size, "%.1f %s", v, units[u]);
}

void gt_convert_stop_text(const struct gt_convert_stop *s, char *buf, size_t size)
{
	if (s->bound_bytes) {
		char bound[32];
		size_text(s->bound_bytes, bound, sizeof bound);
		snprintf(buf, size, "recording stopped at the --max-capture bound of %s after %.3f s; "
			 "at least %" PRIu64 " facts after that were not recorded", bound,
			 s->at_seconds, s->facts_lost);
		return;
	}
	if (s->sandboxed) {
		snprintf(buf, size, "recording stopped at %.3f s: the process entered a seccomp "
			 "sandbox (the recorder's system calls could kill it); it ran on untraced",
			 s->at_seconds);
		return;
	}
	const char *why;
	switch (s->err) {
	case ENOSPC: why = "no space left on the file system"; break;
	case EFBIG: why = "the file size limit (RLIMIT_FSIZE) was reached"; break;
	case EDQUOT: why = "the disk quota was exceeded"; break;
	case ENOMEM: why = "no memory could be mapped for the capture (RLIMIT_AS, or RLIMIT_MEMLOCK "
			   "after the program's mlockall)"; break;
	case 0: why = "the capture could not grow"; break;
	default: why = strerror(s->err); break;
	}
	snprintf(buf, size, "recording stopped early at %.3f s: %s; at least %" PRIu64
		 " facts after that were not recorded", s->at_seconds, why, s->facts_lost);
}

void gt_convert_print_deadlocks(FILE *f, const struct gt_convert_summary *s)
{
	for (const char *line = s->deadlock; *line;) {
		size_t len = strcspn(line, "\n");
		fprintf(f, "gotrace:   %s%.*s\n", line[0] == ' ' ? "  " : "deadlock: ", (int)len, line);
		line += len + (line[len] == '\n');
	}
}

void gt_convert_print_lock_order(FILE *f, const struct gt_convert_summary *s)
{
	uint64_t said = 0;
	for (const char *line = s->lock_order; *line && said < 3; said++) {
		size_t len = strcspn(line, "\n");
		fprintf(f, "gotrace:   lock-order inversion: %.*s\n", (int)len, line);
		line += len + (line[len] == '\n');
	}
	if (s->lock_order_inversions > said)
		fprintf(f, "gotrace:   lock-order inversions: %" PRIu64 " more (gotrace report on the "
			"capture lists every one)\n", s->lock_order_inversions - said);
}

void gt_convert_print_summary(FILE *f, const char *out, const struct gt_convert_summary *s)
{
	const struct gt_capture_stats *r = &s->reader;
	const struct gt_model_counters *mc = &s->model;
	struct gt_convert_losses l;
	gt_convert_losses(s, &l);
	char who[32];
	if (s->captures > 1)
		snprintf(who, sizeof who, "%u processes", s->captures);
	else
		snprintf(who, sizeof who, "pid %u", s->pid);
	fprintf(f, "gotrace: %s: %s, %" PRIu64 " threads, %" PRIu64 " facts, %" PRIu64
		   " events written, %" PRIu64 " facts dropped while recording, %" PRIu64
		   " facts repaired, %" PRIu64 " facts skipped, %" PRIu64
		   " bytes of damage skipped, %.3f s (%.3f s CPU)%s\n",
		out, who, mc->threads, mc->facts, s->wire.events, l.dropped, l.repaired,
		l.skipped, l.damaged_bytes, s->seconds, s->cpu_seconds,
		s->truncated ? " (capture truncated)" : "");
	if (s->stop.stopped) {
		char line[256];
		gt_convert_stop_text(&s->stop, line, sizeof line);
		fprintf(f, "gotrace:   %s\n", line);
	}
	gt_convert_print_deadlocks(f, s);
	gt_convert_print_lock_order(f, s);
#define GT_PRINT_COUNTER(name, text)                                                       \
	if (mc->name)                                                                      \
		fprintf(f, "gotrace:   %-58s %" PRIu64 "\n", text, mc->name);
	GT_MODEL_COUNTERS(GT_PRINT_COUNTER)
#undef GT_PRINT_COUNTER
	struct {
		const char *text;
		uint64_t v;
	} rs[] = {
		{"reader: chunks", r->chunks},
		{"reader: chunks skipped (foreign magic or CPU)", r->chunks_bad},
		{"reader: chunks cut by the end of the file", r->chunks_truncated},
		{"reader: bytes of uncommitted (zero) words", r->bytes_zero},
		{"reader: bytes of garbage skipped", r->bytes_garbage},
		{"reader: resynchronisations after garbage", r->resyncs},
		{"reader: torn records at chunk ends", r->torn_tails},
		{"repaired: records out of order beyond the window (clamped)", r->reordered},
		{"reader: reorder memory cap reached (records released early)", r->reorder_capped},
		{"reader: objects one-word records left unknown", r->open_unknown},
		{"writer: stack frames cut (128 frames / 2048 bytes)", s->wire.frames_cut},
		{"writer: generations (go1.22)", s->wire.generations},
		{"writer: events placed otherwise than modelled (go1.22)", s->wire.repaired},
		{"writer: events the goroutine's state could not take (go1.22)", s->wire.skipped},
		{"flight recorder: keep chunks", r->chunks_keep},
		{"flight recorder: state at the window's start (facts)", r->ring_summary},
		{"flight recorder: facts before the window (not shown)", r->before_window},
	};
	for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++)
		if (rs[i].v)
			fprintf(f, "gotrace:   %-58s %" PRIu64 "\n", rs[i].text, rs[i].v);
}
