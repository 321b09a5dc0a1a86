/* convert: see convert.h. */
#include "convert.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "symbolizer.h"

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

int gt_convert_file(const char *capture, const char *out, const struct gt_convert_options *opt,
		    struct gt_convert_summary *sum, char *err, size_t errlen)
{
	double start = now_seconds(), cpu_start = cpu_seconds();
	memset(sum, 0, sizeof *sum);
	struct gt_capture *c = gt_capture_open(capture, err, errlen);
	if (!c)
		return -1;
	const struct gt_file_header *h = gt_capture_header(c);
	sum->pid = h->pid;
	gt_capture_stop(h, &sum->stop);

	size_t tmp_len = strlen(out) + 16;
	char *tmp = malloc(tmp_len);
	if (!tmp) {
		gt_capture_close(c);
		snprintf(err, errlen, "out of memory");
		return -1;
	}
	snprintf(tmp, tmp_len, "%s.partial", out);
	int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		free(tmp);
		gt_capture_close(c);
		return -1;
	}
	struct gt_symbolizer *sym = NULL;
	if (!opt->no_symbols) {
		struct gt_sym_options so = {.debug_dirs = opt->debug_dirs};
		sym = gt_sym_new(&so);
	}
	struct gt_wire *w = gt_wire_open(fd, h->n_cpus + 1);
	struct gt_model_options mo = {
		.syscall_threshold_ns = opt->syscall_threshold_ns ? opt->syscall_threshold_ns
								   : GT_DEFAULT_SYSCALL_THRESHOLD_NS,
		.sym = sym,
		.lookahead = c,
	};
	struct gt_model *m = w ? gt_model_new(w, h, &mo) : NULL;
	int rc = 0;
	if (!m) {
		snprintf(err, errlen, "out of memory");
		rc = -1;
	} else {
		struct gt_capture_record r;
		for (uint64_t n = 1; gt_capture_next(c, &r); n++) {
			gt_model_fact(m, &r);
			if (opt->progress && n % 4096 == 0) {
				struct gt_capture_stats st;
				gt_capture_stats(c, &st);
				opt->progress(opt->progress_ctx,
					      st.bytes_read + st.bytes_zero + st.bytes_garbage,
					      st.bytes_total);
			}
		}
		uint64_t freq = gt_model_finish(m);
		int werr = gt_wire_finish(w, freq);
		if (werr) {
			snprintf(err, errlen, "%s: %s", tmp, strerror(werr));
			rc = -1;
		}
		gt_model_counters(m, &sum->model);
		memcpy(sum->process, gt_model_process(m)->name, sizeof sum->process);
		gt_wire_stats(w, &sum->wire);
	}
	gt_capture_stats(c, &sum->reader);
	sum->truncated = gt_capture_truncated(c);
	if (close(fd) < 0 && !rc) {
		snprintf(err, errlen, "%s: %s", tmp, strerror(errno));
		rc = -1;
	}
	if (!rc && rename(tmp, out) < 0) {
		snprintf(err, errlen, "%s: %s", out, strerror(errno));
		rc = -1;
	}
	if (rc)
		unlink(tmp);
	gt_model_free(m);
	gt_wire_free(w);
	if (sym)
		gt_sym_free(sym);
	gt_capture_close(c);
	free(tmp);
	sum->seconds = now_seconds() - start;
	sum->cpu_seconds = cpu_seconds() - cpu_start;
	return rc;
}

void gt_convert_losses(const struct gt_convert_summary *s, struct gt_convert_losses *out)
{
	const struct gt_model_counters *mc = &s->model;
	const struct gt_capture_stats *r = &s->reader;
	out->dropped = mc->writer_dropped + mc->writer_stacks_lost + mc->writer_threads_lost +
		       mc->writer_waiters_lost + s->stop.facts_lost;
	out->repaired = mc->threads_appeared + mc->duplicate_creates + mc->causal_fallbacks +
			mc->ends_without_begin + mc->stacks_missing + r->reordered;
	out->skipped = mc->facts_after_end + mc->facts_ignored + mc->user_skipped;
	out->damaged_bytes = r->bytes_garbage;
	out->torn_records = r->torn_tails;
}

void gt_capture_stop(const struct gt_file_header *h, struct gt_convert_stop *out)
{
	*out = (struct gt_convert_stop){.stopped = (h->flags & GT_FILE_WRITE_FAILED) != 0};
	if (!out->stopped)
		return;
	double hz = h->clock_source == GT_CLOCK_MONOTONIC || !h->tsc_hz ? 1e9 : (double)h->tsc_hz;
	out->err = h->stop_errno;
	out->at_seconds = h->stop_tsc > h->start_tsc ? (double)(h->stop_tsc - h->start_tsc) / hz : 0;
	out->facts_lost = h->facts_lost;
}

void gt_convert_stop_text(const struct gt_convert_stop *s, char *buf, size_t size)
{
	const char *why;
	switch (s->err) {
	case ENOSPC: why = "no space left on the file system"; break;
	case EFBIG: why = "the file size limit (RLIMIT_FSIZE) was reached"; break;
	case EDQUOT: why = "the disk quota was exceeded"; break;
	case 0: why = "the capture could not grow"; break;
	default: why = strerror(s->err); break;
	}
	snprintf(buf, size, "recording stopped early at %.3f s: %s; at least %" PRIu64
		 " facts after that were not recorded", s->at_seconds, why, s->facts_lost);
}

void gt_convert_print_summary(FILE *f, const char *out, const struct gt_convert_summary *s)
{
	const struct gt_capture_stats *r = &s->reader;
	const struct gt_model_counters *mc = &s->model;
	struct gt_convert_losses l;
	gt_convert_losses(s, &l);
	fprintf(f, "gotrace: %s: pid %u, %" PRIu64 " threads, %" PRIu64 " facts, %" PRIu64
		   " events written, %" PRIu64 " facts dropped while recording, %" PRIu64
		   " facts repaired, %" PRIu64 " facts skipped, %" PRIu64
		   " bytes of damage skipped, %.3f s (%.3f s CPU)%s\n",
		out, s->pid, mc->threads, mc->facts, s->wire.events, l.dropped, l.repaired,
		l.skipped, l.damaged_bytes, s->seconds, s->cpu_seconds,
		s->truncated ? " (capture truncated)" : "");
	if (s->stop.stopped) {
		char line[256];
		gt_convert_stop_text(&s->stop, line, sizeof line);
		fprintf(f, "gotrace:   %s\n", line);
	}
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
		{"writer: stack frames cut (128 frames / 2048 bytes)", s->wire.frames_cut},
	};
	for (size_t i = 0; i < sizeof rs / sizeof rs[0]; i++)
		if (rs[i].v)
			fprintf(f, "gotrace:   %-58s %" PRIu64 "\n", rs[i].text, rs[i].v);
}
