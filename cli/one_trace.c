/* one_trace: see one_trace.h. */
#include "one_trace.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli_common.h"

#define MAX_PROGRAMS_SHOWN 6
#define LONGEST_SHOWN 3

void gt_cli_print_capture_problems(const struct gt_convert_summary *s, const char *who)
{
	if (s->stop.stopped) {
		char line[256];
		gt_convert_stop_text(&s->stop, line, sizeof line);
		fprintf(stderr, "gotrace:   %s%s\n", who, line);
	}
	struct gt_convert_losses l;
	gt_convert_losses(s, &l);
	if (l.dropped || l.repaired || l.damaged_bytes || l.torn_records || s->truncated)
		fprintf(stderr, "gotrace:   %s%" PRIu64 " facts dropped while recording, %" PRIu64
			" repaired, %" PRIu64 " bytes of damage and %" PRIu64 " torn records "
			"skipped%s (details: gotrace convert on the capture)\n", who, l.dropped,
			l.repaired, l.damaged_bytes, l.torn_records,
			s->truncated ? ", capture truncated" : "");
}

/* Go's viewers (1.19 and 1.23) need about 0.4 GiB and 6 s of CPU per million events to open a
 * trace (docs/benchmarks.md, "Traces a viewer can open"): 20 s past about 3.4 million, 2 GiB
 * past about 5 million */
#define GT_VIEWER_EVENTS 3000000u

void gt_cli_viewer_warning(const char *output, uint64_t events)
{
	uint64_t limit = GT_VIEWER_EVENTS;
	const char *v = getenv("GOTRACE_VIEWER_EVENTS");
	char *end;
	if (v && *v) {
		unsigned long long x = strtoull(v, &end, 10);
		if (!*end && x)
			limit = x;
	}
	if (events <= limit)
		return;
	fprintf(stderr, "gotrace:   %s holds %" PRIu64 " events, more than Go's viewer opens "
		"comfortably (%" PRIu64 "); for a smaller trace: gotrace run --last, gotrace convert "
		"--from T --to T, or read it with gotrace report (no viewer)\n", output, events,
		limit);
}

struct program {
	const char *name;
	size_t count;
};

static int by_count(const void *a, const void *b)
{
	const struct program *x = a, *y = b;
	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->name, y->name);
}

static int by_length(const void *a, const void *b)
{
	const struct gt_convert_capture *x = *(const struct gt_convert_capture *const *)a;
	const struct gt_convert_capture *y = *(const struct gt_convert_capture *const *)b;
	return x->seconds > y->seconds ? -1 : x->seconds < y->seconds;
}

/* "programs: 200 true, 1 sh" and "longest: sh (pid 10) 0.59 s, ...". */
static void print_processes(const struct gt_convert_set_summary *sum)
{
	struct program *prog = calloc(sum->n, sizeof *prog);
	const struct gt_convert_capture **order = calloc(sum->n, sizeof *order);
	size_t n_prog = 0, n_order = 0;
	if (!prog || !order) {
		free(prog);
		free(order);
		return;
	}
	for (size_t i = 0; i < sum->n; i++) {
		const struct gt_convert_capture *c = &sum->captures[i];
		if (!c->readable)
			continue;
		order[n_order++] = c;
		size_t k = 0;
		while (k < n_prog && strcmp(prog[k].name, c->command) != 0)
			k++;
		if (k == n_prog)
			prog[n_prog++] = (struct program){ c->command, 0 };
		prog[k].count++;
	}
	qsort(prog, n_prog, sizeof *prog, by_count);
	fprintf(stderr, "gotrace:   programs:");
	for (size_t k = 0; k < n_prog && k < MAX_PROGRAMS_SHOWN; k++)
		fprintf(stderr, "%s %zu %s", k ? "," : "", prog[k].count, prog[k].name);
	if (n_prog > MAX_PROGRAMS_SHOWN)
		fprintf(stderr, " and %zu more", n_prog - MAX_PROGRAMS_SHOWN);
	fputc('\n', stderr);
	qsort(order, n_order, sizeof *order, by_length);
	fprintf(stderr, "gotrace:   longest:");
	for (size_t k = 0; k < n_order && k < LONGEST_SHOWN; k++)
		fprintf(stderr, "%s %s (pid %u) %.3f s", k ? "," : "", order[k]->command,
			order[k]->sum.pid, order[k]->seconds);
	fputc('\n', stderr);
	free(prog);
	free(order);
}

/* Whether capture i's process went on as another program (a later capture of its pid):
 * then it did not crash, it exec'd. */
static bool exec_left(const struct gt_convert_set_summary *sum, size_t i)
{
	for (size_t k = 0; k < sum->n; k++)
		if (k != i && sum->captures[k].readable &&
		    sum->captures[k].sum.pid == sum->captures[i].sum.pid &&
		    sum->captures[k].start_mono_ns > sum->captures[i].start_mono_ns)
			return true;
	return false;
}

void gt_cli_say_killed(const struct gt_convert_summary *s)
{
	if (s->killed_by)
		fprintf(stderr, "gotrace:   pid %u was killed by signal %d (%s): it recorded no "
			"end, and the trace ends it where gotrace reaped it\n", s->pid,
			s->killed_by, strsignal(s->killed_by));
	else
		fprintf(stderr, "gotrace:   pid %u was killed: it recorded no end, and the trace "
			"ends it where its parent's wait returned its pid\n", s->pid);
}

int gt_one_trace(const char *command, const char *output, const char *const *captures, size_t n,
		 const struct gt_convert_options *opt, enum gt_one_trace_style style)
{
	struct gt_convert_options copt = *opt;
	struct gt_cli_progress progress;
	gt_cli_progress_start(&progress, output);
	if (style != GT_SUMMARY_QUIET) {
		copt.progress = gt_cli_progress_update;
		copt.progress_ctx = &progress;
	}
	struct gt_convert_set_summary sum;
	char err[512];
	int rc = gt_convert_files(captures, n, output, &copt, &sum, err, sizeof err);
	gt_cli_progress_end(&progress);
	if (rc != 0) {
		gt_cli_fail(command, "%s", err);
		gt_convert_set_summary_free(&sum);
		return -1;
	}
	size_t readable = 0;
	uint64_t bytes = 0;
	for (size_t i = 0; i < sum.n; i++) {
		readable += sum.captures[i].readable;
		bytes += gt_cli_capture_bytes(sum.captures[i].path);
	}
	const struct gt_convert_capture *first = &sum.captures[0];
	char size[32];
	gt_cli_format_size(bytes, size, sizeof size);
	if (style == GT_SUMMARY_CONVERT)
		gt_convert_print_summary(stderr, output, &sum.total);
	else if (style == GT_SUMMARY_RUN && readable == 1)
		fprintf(stderr, "gotrace: %s: %s (pid %u), %" PRIu64 " threads, %" PRIu64
			" events (capture %s, converted in %.2f s)\n", output, first->command,
			first->sum.pid, sum.total.model.threads, sum.total.wire.events, size,
			sum.total.seconds);
	else if (style == GT_SUMMARY_RUN)
		fprintf(stderr, "gotrace: %s: %zu processes, %" PRIu64 " threads, %" PRIu64
			" events (captures %s, converted in %.2f s)\n", output, readable,
			sum.total.model.threads, sum.total.wire.events, size, sum.total.seconds);
	if (style != GT_SUMMARY_QUIET && readable > 1)
		print_processes(&sum);
	if (style != GT_SUMMARY_QUIET && sum.total.has_samples)
		gt_cpu_samples_describe(&sum.total.samples, stderr);
	if (style != GT_SUMMARY_QUIET)
		gt_cli_viewer_warning(output, sum.total.wire.events);
	const struct gt_model_counters *mc = &sum.total.model;
	if (style == GT_SUMMARY_RUN && mc->kernel_switches)
		fprintf(stderr, "gotrace:   threads placed by the kernel's context switches: %" PRIu64
			" drawn, %" PRIu64 " preemptions, %" PRIu64 " off-CPU waits the hooks did "
			"not see\n", mc->kernel_switches, mc->kernel_preemptions,
			mc->kernel_untraced_waits);
	if (style != GT_SUMMARY_QUIET && sum.total.kernel_error[0])
		fprintf(stderr, "gotrace:   kernel records not used: %s\n", sum.total.kernel_error);
	for (size_t i = 0; i < sum.n; i++) {
		const struct gt_convert_capture *c = &sum.captures[i];
		char who[128] = "";
		if (!c->readable) {
			gt_cli_fail(command, "%s (left out of %s)", c->error, output);
			continue;
		}
		if (readable > 1)
			snprintf(who, sizeof who, "pid %u (%s): ", c->sum.pid, c->command);
		if (style == GT_SUMMARY_RUN || (style == GT_SUMMARY_CONVERT && readable > 1))
			gt_cli_print_capture_problems(&c->sum, who);
		if (style == GT_SUMMARY_RUN && c->detached && !exec_left(&sum, i))
			fprintf(stderr, "gotrace:   pid %u keeps running untraced: the trace ends "
				"where gotrace stopped its recording\n", c->sum.pid);
		else if (style == GT_SUMMARY_RUN && c->sum.reaped && !exec_left(&sum, i))
			gt_cli_say_killed(&c->sum);
		else if (style == GT_SUMMARY_RUN && !c->finalized && !exec_left(&sum, i))
			fprintf(stderr, "gotrace:   pid %u did not finish normally (killed, crashed or "
				"still running): the trace ends at its last recorded fact\n",
				c->sum.pid);
	}
	if (style == GT_SUMMARY_RUN)   /* convert's summary has them */
		gt_convert_print_deadlocks(stderr, &sum.total);
	if (style == GT_SUMMARY_RUN)
		gt_convert_print_lock_order(stderr, &sum.total);
	if (sum.total.interrupted)
		gt_cli_say_conversion_stopped(output, sum.total.interrupted_done);
	rc = readable == sum.n && !sum.total.interrupted ? 0 : 1;
	gt_convert_set_summary_free(&sum);
	return rc;
}
