/* report_print: the capture report's text and JSON (report_internal.h). */
#include "report_internal.h"

#include <inttypes.h>
#include <string.h>
#include <sys/wait.h>

#include "names.h"
#include "report.h"

/* ---- text ---------------------------------------------------------------------------- */

static double ms(uint64_t ns)
{
	return (double)ns / 1e6;
}

void gtr_text_stack(FILE *out, struct report *r, uint32_t stack, const char *indent)
{
	struct gt_frame frames[REPORT_MAX_FRAMES];
	size_t n = gtr_frames_of(r, stack, frames);
	char line[2048];
	if (n == 0)
		fprintf(out, "%s(no stack recorded)\n", indent);
	for (size_t i = 0; i < n; i++) {
		gtr_frame_text(&frames[i], line, sizeof line);
		fprintf(out, "%s%s\n", indent, line);
	}
}

static void text_sites(FILE *out, struct report *r, struct wait_site *sites, size_t n,
		       bool syscalls, const struct gt_report_options *opt)
{
	unsigned top = opt->top ? opt->top : 10, n_stacks = opt->stacks ? opt->stacks : 3;
	char name[32], key[GT_REPORT_NAME_MAX];
	/* the object column is as wide as its longest name: never cut */
	int width = 18;
	for (size_t i = 0; i < n && i < top && !syscalls; i++) {
		int len = (int)strlen(gtr_object_name(r, sites[i].key, key, sizeof key));
		width = len > width ? len : width;
	}
	fprintf(out, "  %-3s %-*s %-9s %8s %12s %10s %10s\n", "#", width,
		syscalls ? "syscall" : "object", syscalls ? "fd kind" : "kind", "waits",
		"total ms", "mean ms", "max ms");
	for (size_t i = 0; i < n && i < top; i++) {
		struct wait_site *s = &sites[i];
		if (syscalls)
			snprintf(key, sizeof key, "%s", gt_report_syscall_name((uint32_t)s->key, name,
								   sizeof name));
		else
			gtr_object_name(r, s->key, key, sizeof key);
		fprintf(out, "  %-3zu %-*s %-9s %8" PRIu64 " %12.3f %10.3f %10.3f\n", i + 1, width, key,
			syscalls ? gt_report_fd_kind_name(s->kind) : gt_report_block_kind_name(s->kind), s->count,
			ms(s->total_ns), ms(s->total_ns) / (double)s->count, ms(s->max_ns));
		for (size_t k = 0; k < s->n_stacks && k < n_stacks; k++) {
			struct stack_stat *st = &s->stacks[k];
			fprintf(out, "      %" PRIu64 " %s, %.3f ms total, %.3f ms mean, %.3f ms "
				"max, from:\n", st->count, st->count == 1 ? "wait" : "waits",
				ms(st->total_ns),
				ms(st->total_ns) / (double)st->count, ms(st->max_ns));
			gtr_text_stack(out, r, st->stack, "        ");
		}
		if (s->n_stacks > n_stacks)
			fprintf(out, "      ... and %zu more stacks\n", s->n_stacks - n_stacks);
		if (!syscalls)
			gtr_holders_text(out, r, s, n_stacks);
	}
	if (n > top)
		fprintf(out, "  ... and %zu more\n", n - top);
}

/* Each thread still in a wait when the capture ends: the wait, since when, its stack. */
static void text_still_waiting(FILE *out, struct report *r)
{
	bool header = false;
	for (size_t i = 0; i < r->n_threads; i++) {
		const struct thread_row *t = &r->threads[i];
		if (!gtr_waiting_at_end(t))
			continue;
		if (!header)
			fprintf(out, "\nThreads still waiting when the capture ends\n");
		header = true;
		char name[32], ago[48] = "";
		const struct gt_tracked_wait *w = &t->t->wait;
		uint64_t began = r->start_mono_ns + t->wait_since_ns;
		if (r->live_now_mono_ns)
			snprintf(ago, sizeof ago, ", tid %u) since %.3f ms (%.3f s ago)", t->t->tid,
				 ms(t->wait_since_ns), r->live_now_mono_ns > began
				 ? (double)(r->live_now_mono_ns - began) / 1e9 : 0.0);
		else
			snprintf(ago, sizeof ago, ") since %.3f ms", ms(t->wait_since_ns));
		fprintf(out, "  thread %u (%s%s in %s", t->t->serial, t->t->name[0] ? t->t->name : "-",
			ago, w->syscall ? gt_report_syscall_name(w->nr, name, sizeof name) :
					  gt_report_block_kind_name(w->kind));
		char object[GT_REPORT_NAME_MAX];
		if (!w->syscall && gtr_is_object_kind(w->kind))
			fprintf(out, " %s", gtr_object_name(r, w->obj, object, sizeof object));
		fputs(", at:\n", out);
		gtr_text_stack(out, r, w->stack, "    ");
	}
}

void gtr_print_text(FILE *out, struct report *r, const struct gt_file_header *h,
		       const char *capture, const struct gt_report_options *opt)
{
	static const char *const stack_modes[] = { "none", "fp", "unwind" };
	if (opt->waits_only) {
		text_still_waiting(out, r);
		gtr_wait_for_text(out, r);
		return;
	}
	fprintf(out, "gotrace report\n  capture: %s\n", capture);
	if (opt->trace != NULL)
		fprintf(out, "  trace:   %s\n", opt->trace);
	char killed[160];
	if (h->reaped_mono_ns && WIFSIGNALED(h->reaped_status))
		snprintf(killed, sizeof killed, ", killed by signal %d (%s): it recorded no end, "
			 "times end where gotrace reaped it", WTERMSIG(h->reaped_status),
			 strsignal(WTERMSIG(h->reaped_status)));
	else
		snprintf(killed, sizeof killed, ", killed (it recorded no end): times end where %s",
			 h->reaped_mono_ns ? "gotrace reaped it" :
					     "its parent's wait returned its pid");
	fprintf(out, "  process: pid %u, %s (%s)\n  recorded: %.3f s, stacks: %s%s\n", h->pid,
		r->proc.name, r->proc.cmdline[0] ? r->proc.cmdline : h->exe_path,
		(double)r->end_ns / 1e9,
		h->stack_mode < 3 ? stack_modes[h->stack_mode] : "?",
		(h->flags & GT_FILE_FINALIZED) ? "" :
		r->execd ? ", the process exec'd another program: times end there" :
		r->reaped ? killed :
		", process did not finish normally: times end at its last fact");
	if ((h->flags & GT_FILE_RING) && r->window_tsc > h->start_tsc) {
		double hz = h->clock_source == GT_CLOCK_MONOTONIC || !h->tsc_hz ? 1e9 : (double)h->tsc_hz;
		fprintf(out, "  flight recorder: the window kept starts at %.3f s (what was alive or "
			"waiting then counts from there)\n", (double)(r->window_tsc - h->start_tsc) / hz);
	}
	fprintf(out, "  running = alive and not inside a traced wait (CPU time or runnable)\n");
	if (r->kernel)
		fprintf(out, "  on-CPU = on a CPU, by the kernel's context switches (%s)\n",
			r->kernel_line);
	else if (r->kernel_line[0])
		fprintf(out, "  kernel records %s\n", r->kernel_line);
	fputc('\n', out);

	/* the start routine column is as wide as its longest name: never cut */
	char routine[1100];
	int width = 24;
	for (size_t i = 0; i < r->n_threads; i++) {
		gtr_routine_text(r, r->threads[i].t, routine, sizeof routine);
		if ((int)strlen(routine) > width)
			width = (int)strlen(routine);
	}
	fprintf(out, "Threads\n  %-4s %-7s %-15s %-*s %10s %10s", "#", "tid", "name", width,
		"start routine", "alive ms", "running");
	if (r->kernel)
		fprintf(out, " %10s", "on-CPU");
	for (int c = 0; c < WAIT_CLASS_COUNT; c++)
		fprintf(out, " %10s", gtr_wait_class_name[c]);
	fputc('\n', out);
	for (size_t i = 0; i < r->n_threads; i++) {
		struct thread_row *t = &r->threads[i];
		gtr_routine_text(r, t->t, routine, sizeof routine);
		fprintf(out, "  %-4u %-7u %-15s %-*s %10.3f %10.3f", t->t->serial, t->t->tid,
			t->t->name[0] ? t->t->name : "-", width, routine, ms(gtr_thread_alive_ns(r, t)),
			ms(gtr_thread_running_ns(r, t)));
		if (r->kernel)
			fprintf(out, " %10.3f", ms(gtr_thread_on_cpu_ns(r, t)));
		for (int c = 0; c < WAIT_CLASS_COUNT; c++)
			fprintf(out, " %10.3f", ms(t->wait_ns[c]));
		fputc('\n', out);
	}

	fprintf(out, "\nContended objects (mutex, rwlock, condvar, semaphore, barrier, futex; "
		"by total wait)\n");
	if (r->objects.n == 0)
		fprintf(out, "  none: no thread waited on a lock, condvar or semaphore\n");
	else
		text_sites(out, r, r->objects.v, r->objects.n, false, opt);
	gtr_holds_text(out, r, opt);

	fprintf(out, "\nSyscalls (by total time, per call site)\n");
	if (r->syscalls.n == 0)
		fprintf(out, "  none traced\n");
	else
		text_sites(out, r, r->syscalls.v, r->syscalls.n, true, opt);

	text_still_waiting(out, r);
	gtr_wait_for_text(out, r);
	gtr_order_text(out, r);
	if (r->stop.stopped) {
		char line[256];
		gt_convert_stop_text(&r->stop, line, sizeof line);
		fprintf(out, "\nRecording: %s\n", line);
	}
	if (r->dropped_facts || r->stacks_lost || r->threads_lost || r->waiters_lost || r->reentry_lost)
		fprintf(out, "\nLosses: %" PRIu64 " facts dropped, %" PRIu64 " stacks, %" PRIu64
			" threads, %" PRIu64 " waits and %" PRIu64 " calls from signal handlers not "
			"recorded\n", r->dropped_facts, r->stacks_lost, r->threads_lost,
			r->waiters_lost, r->reentry_lost);
	if (r->waits_unshown)
		fprintf(out, "Not recorded (by an older recorder): %" PRIu64 " mutex waits whose holder "
			"released the mutex inside a condition wait\n", r->waits_unshown);
	gt_hot_print_text(out, &r->hot, opt->top);
	gt_offcpu_print_text(out, &r->offcpu, opt->top);
}

/* ---- JSON ---------------------------------------------------------------------------- */

void gt_report_json_string(FILE *out, const char *s)
{
	fputc('"', out);
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			fprintf(out, "\\%c", c);
		else if (c < 0x20)
			fprintf(out, "\\u%04x", c);
		else
			fputc(c, out);
	}
	fputc('"', out);
}

void gtr_json_stack(FILE *out, struct report *r, uint32_t stack)
{
	struct gt_frame frames[REPORT_MAX_FRAMES];
	size_t n = gtr_frames_of(r, stack, frames);
	fputc('[', out);
	for (size_t i = 0; i < n; i++) {
		fprintf(out, "%s{\"func\":", i ? "," : "");
		gt_report_json_string(out, frames[i].func);
		fputs(",\"file\":", out);
		gt_report_json_string(out, frames[i].file);
		fprintf(out, ",\"line\":%u,\"pc\":\"%#" PRIx64 "\"}", frames[i].line, frames[i].pc);
	}
	fputc(']', out);
}

static void json_sites(FILE *out, struct report *r, struct wait_site *sites, size_t n,
		       bool syscalls, const struct gt_report_options *opt)
{
	unsigned top = opt->top ? opt->top : 10, n_stacks = opt->stacks ? opt->stacks : 3;
	char name[32];
	fputc('[', out);
	for (size_t i = 0; i < n && i < top; i++) {
		struct wait_site *s = &sites[i];
		fputs(i ? ",{" : "{", out);
		if (syscalls)
			fprintf(out, "\"syscall\":\"%s\",\"nr\":%" PRIu64 ",\"fd_kind\":\"%s\"",
				gt_report_syscall_name((uint32_t)s->key, name, sizeof name), s->key,
				gt_report_fd_kind_name(s->kind));
		else
			fprintf(out, "\"address\":\"%#" PRIx64 "\",\"kind\":\"%s\"", s->key,
				gt_report_block_kind_name(s->kind));
		fprintf(out, ",\"waits\":%" PRIu64 ",\"total_ns\":%" PRIu64 ",\"mean_ns\":%" PRIu64
			",\"max_ns\":%" PRIu64 ",\"stacks\":[", s->count, s->total_ns,
			s->total_ns / s->count, s->max_ns);
		for (size_t k = 0; k < s->n_stacks && k < n_stacks; k++) {
			struct stack_stat *st = &s->stacks[k];
			fprintf(out, "%s{\"waits\":%" PRIu64 ",\"total_ns\":%" PRIu64
				",\"max_ns\":%" PRIu64 ",\"frames\":", k ? "," : "", st->count,
				st->total_ns, st->max_ns);
			gtr_json_stack(out, r, st->stack);
			fputc('}', out);
		}
		fputc(']', out);
		if (!syscalls) {
			char object[GT_REPORT_NAME_MAX];
			fputs(",\"name\":", out);
			gt_report_json_string(out, gtr_object_name(r, s->key, object,
								   sizeof object));
		}
		if (!syscalls)
			gtr_holders_json(out, r, s, n_stacks);
		fputc('}', out);
	}
	fputc(']', out);
}

void gtr_print_json(FILE *out, struct report *r, const struct gt_file_header *h,
		       const char *capture, const struct gt_report_options *opt)
{
	fputs("{\"capture\":", out);
	gt_report_json_string(out, capture);
	if (opt->trace != NULL) {
		fputs(",\"trace\":", out);
		gt_report_json_string(out, opt->trace);
	}
	fprintf(out, ",\"pid\":%u,\"process\":", h->pid);
	gt_report_json_string(out, r->proc.name);
	fputs(",\"command\":", out);
	gt_report_json_string(out, r->proc.cmdline[0] ? r->proc.cmdline : h->exe_path);
	fprintf(out, ",\"recorded_ns\":%" PRIu64 ",\"finalized\":%s,\"execd\":%s,\"killed\":%s,"
		"\"threads\":[", r->end_ns, (h->flags & GT_FILE_FINALIZED) ? "true" : "false",
		!(h->flags & GT_FILE_FINALIZED) && r->execd ? "true" : "false",
		r->reaped ? "true" : "false");
	bool first = true;
	for (size_t i = 0; i < r->n_threads; i++) {
		const struct thread_row *t = &r->threads[i];
		char routine[1100];
		gtr_routine_text(r, t->t, routine, sizeof routine);
		fprintf(out, "%s{\"serial\":%u,\"tid\":%u,\"name\":", first ? "" : ",",
			t->t->serial, t->t->tid);
		first = false;
		gt_report_json_string(out, t->t->name);
		fputs(",\"start_routine\":", out);
		gt_report_json_string(out, routine);
		fprintf(out, ",\"alive_ns\":%" PRIu64, gtr_thread_alive_ns(r, t));
		for (int c = 0; c < WAIT_CLASS_COUNT; c++)
			fprintf(out, ",\"%s_ns\":%" PRIu64 ",\"%s_waits\":%" PRIu64,
				gtr_wait_class_name[c], t->wait_ns[c], gtr_wait_class_name[c], t->n_waits[c]);
		fprintf(out, ",\"running_ns\":%" PRIu64 ",\"ended\":%s", gtr_thread_running_ns(r, t),
			t->t->end_seen ? "true" : "false");
		if (r->kernel)
			fprintf(out, ",\"on_cpu_ns\":%" PRIu64, gtr_thread_on_cpu_ns(r, t));
		if (gtr_waiting_at_end(t)) {
			char name[32];
			const struct gt_tracked_wait *w = &t->t->wait;
			fputs(",\"waiting_at_end\":{\"in\":", out);
			gt_report_json_string(out, w->syscall ? gt_report_syscall_name(w->nr, name, sizeof name)
							      : gt_report_block_kind_name(w->kind));
			fprintf(out, ",\"object\":\"%#" PRIx64 "\",\"since_ns\":%" PRIu64
				",\"waited_ns\":%" PRIu64 ",\"frames\":", w->obj, t->wait_since_ns,
				r->end_ns > t->wait_since_ns ? r->end_ns - t->wait_since_ns : 0);
			gtr_json_stack(out, r, w->stack);
			if (!w->syscall && gtr_is_object_kind(w->kind)) {
				char object[GT_REPORT_NAME_MAX];
				fputs(",\"object_name\":", out);
				gt_report_json_string(out, gtr_object_name(r, w->obj, object,
									    sizeof object));
			}
			fputc('}', out);
		}
		fputc('}', out);
	}
	fputs("],\"objects\":", out);
	json_sites(out, r, r->objects.v, r->objects.n, false, opt);
	gtr_holds_json(out, r, opt);
	fputs(",\"syscalls\":", out);
	json_sites(out, r, r->syscalls.v, r->syscalls.n, true, opt);
	gtr_wait_for_json(out, r);
	gtr_order_json(out, r);
	fprintf(out, ",\"dropped_facts\":%" PRIu64 ",\"stacks_lost\":%" PRIu64
		",\"threads_lost\":%" PRIu64 ",\"waiters_lost\":%" PRIu64 ",\"reentry_lost\":%" PRIu64
		",\"waits_unshown\":%" PRIu64 ",\"write_failed\":%s",
		r->dropped_facts, r->stacks_lost, r->threads_lost, r->waiters_lost, r->reentry_lost,
		r->waits_unshown,
		r->stop.stopped ? "true" : "false");
	if (r->stop.stopped) {
		char line[256];
		gt_convert_stop_text(&r->stop, line, sizeof line);
		fprintf(out, ",\"stopped_early\":{\"errno\":%d,\"at_s\":%.6f,\"facts_lost\":%" PRIu64
			",\"max_capture_bytes\":%" PRIu64 ",\"text\":", r->stop.err, r->stop.at_seconds,
			r->stop.facts_lost, r->stop.bound_bytes);
		gt_report_json_string(out, line);
		fputc('}', out);
	}
	gt_hot_print_json(out, &r->hot, opt->top);
	gt_offcpu_print_json(out, &r->offcpu, opt->top);
	fputs("}\n", out);
}
