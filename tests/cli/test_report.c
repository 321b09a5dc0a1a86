/* gotrace report on the bundled example: per-thread times by start routine, the contended
 * lock with the stack that waited on it (record_result in workpool.c), in text and JSON;
 * and its refusals. */
#include "cli_support.h"

#include <criterion/criterion.h>
#include <stdbool.h>
#include <ctype.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Runs `gotrace report ARGS... FILE`. */
static void report(struct cli_result *r, const char *file, const char *flag)
{
	const char *argv[] = { cli_gotrace, "report", flag != NULL ? flag : file,
			       flag != NULL ? file : NULL, NULL };
	cli_run(r, argv, NULL);
}

Test(report, text_names_threads_and_the_contended_lock, .timeout = 60)
{
	char dir[512], trace[600], expected[128];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_trace_workpool(dir, 96, trace, sizeof trace);
	report(&r, trace, NULL);
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert_str_empty(r.err);
	for (int i = 1; i <= 4; i++) {
		/* One row per worker: its name, then its start routine. */
		char row[64];
		snprintf(row, sizeof row, "worker-%d", i);
		const char *at = strstr(r.out, row);
		cr_assert_not_null(at, "no row for %s in:\n%s", row, r.out);
		const char *eol = strchrnul(at, '\n');
		const char *routine = strstr(at, "worker_main");
		cr_assert(routine != NULL && routine < eol, "%s row lacks worker_main:\n%s", row,
			  r.out);
	}
	cr_assert_not_null(strstr(r.out, "producer_main"));
	cr_assert_not_null(strstr(r.out, "logger_main"));
	const char *objects = strstr(r.out, "Contended objects");
	cr_assert_not_null(objects, "%s", r.out);
	cr_assert_not_null(strstr(objects, " mutex "), "%s", objects);
	snprintf(expected, sizeof expected, "record_result (workpool.c:%u)",
		 cli_workpool_line("pthread_mutex_lock(&totals_lock)"));
	cr_assert_not_null(strstr(objects, expected), "'%s' not in:\n%s", expected, objects);
	snprintf(expected, sizeof expected, "queue_pop (workpool.c:%u)",
		 cli_workpool_line("pthread_cond_wait(&queue.not_empty"));
	cr_assert_not_null(strstr(objects, expected), "'%s' not in:\n%s", expected, objects);
	cr_assert_not_null(strstr(r.out, "Syscalls"), "%s", r.out);
	cli_result_free(&r);

	/* The capture itself gives the same report, minus the trace line. */
	char capture[700];
	snprintf(capture, sizeof capture, "%s.gtcap", trace);
	report(&r, capture, NULL);
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert_not_null(strstr(r.out, "record_result (workpool.c:"), "%s", r.out);
	cli_result_free(&r);
}

Test(report, json_holds_the_same_facts, .timeout = 60)
{
	char dir[512], trace[600], json[700];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_trace_workpool(dir, 96, trace, sizeof trace);
	report(&r, trace, "--json");
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cli_write_file(json, sizeof json, dir, "report.json", r.out);
	cli_check_report_json(json, "");
	cli_result_free(&r);
}

Test(report, refusals)
{
	char dir[512], trace[600], garbage[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);

	/* A trace whose capture was not kept: reported from the trace, saying what the capture
	 * would add. */
	cli_path(trace, sizeof trace, dir, "plain.trace");
	const char *run[] = { cli_gotrace, "run", "-o", trace, "--", "/bin/true", NULL };
	cli_run(&r, run, NULL);
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cli_result_free(&r);
	report(&r, trace, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_empty(r.err);
	cr_assert_not_null(strstr(r.out, "from the Go trace alone"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "--keep-capture"), "%s", r.out);
	cli_result_free(&r);
	/* A damaged one: one line. */
	char cut[700];
	cli_write_file(cut, sizeof cut, dir, "cut.trace", "go 1.19 trace");
	report(&r, cut, NULL);
	cr_assert_eq(r.status, 1);
	cr_assert_eq(cli_count_lines(r.err), 1, "%s", r.err);
	cli_result_free(&r);

	cli_write_file(garbage, sizeof garbage, dir, "garbage",
		       "this is neither a capture nor a trace\n");
	report(&r, garbage, NULL);
	cr_assert_eq(r.status, 1);
	cr_assert_eq(cli_count_lines(r.err), 1, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "neither a gotrace capture nor a Go trace"), "%s", r.err);
	cli_result_free(&r);

	report(&r, "/nonexistent/file.gtcap", NULL);
	cr_assert_eq(r.status, 1);
	cr_assert_eq(cli_count_lines(r.err), 1, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "No such file"), "%s", r.err);
	cli_result_free(&r);

	const char *unknown[] = { cli_gotrace, "report", "--xml", trace, NULL };
	cli_run(&r, unknown, NULL);
	cr_assert_eq(r.status, 2);
	cr_assert_eq(cli_count_lines(r.err), 1, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "unknown option '--xml'"), "%s", r.err);
	cli_result_free(&r);
}

/* A program killed while it waits: the report says where each thread was stuck. */
Test(report, threads_still_waiting_when_killed, .timeout = 60)
{
	char dir[512], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "hung.trace");
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int devnull = open("/dev/null", O_WRONLY);
		dup2(devnull, 2);
		execl(cli_gotrace, cli_gotrace, "run", "--keep-capture", "-o", trace, "--",
		      "/bin/sleep", "30", (char *)NULL);
		_exit(99);
	}
	cli_wait_for_child(pid, "sleep");
	usleep(200 * 1000); /* into its nanosleep */
	kill(pid, SIGTERM);
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM, "status %#x", status);
	report(&r, trace, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	const char *waiting = strstr(r.out, "Threads still waiting when the capture ends");
	cr_assert_not_null(waiting, "%s", r.out);
	cr_assert_not_null(strstr(waiting, "thread 1 "), "%s", waiting);
	cr_assert_not_null(strstr(waiting, " in sleep"), "%s", waiting);
	cli_result_free(&r);
}

/* Without the capture, the Go trace alone: per goroutine by name and start routine, the
 * blocking stacks, record_result's mutex among them, in text and JSON. */
Test(report, from_the_go_trace_without_a_capture, .timeout = 60)
{
	char dir[512], trace[600], capture[700], frame[128];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	/* Whether the workers meet at totals_lock depends on the scheduler (on a loaded machine
	 * they may never overlap there): trace until the capture, whose report is tested
	 * above, says they did, so what this test expects of the trace is known to be true. */
	bool contended = false;
	for (int attempt = 0; attempt < 5 && !contended; attempt++) {
		cli_trace_workpool(dir, 40, trace, sizeof trace);
		report(&r, trace, "--json");
		cr_assert_eq(r.status, 0, "%s", r.err);
		contended = strstr(r.out, "{\"func\":\"record_result\"") != NULL;
		cli_result_free(&r);
	}
	cr_assert(contended, "5 runs of the example, no wait at record_result in any capture");
	snprintf(capture, sizeof capture, "%s.gtcap", trace);
	cr_assert_eq(unlink(capture), 0);

	report(&r, trace, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "Blocking, by stack (lock addresses are only in the "
				  "capture: use --keep-capture)"), "%s", r.out);
	for (int w = 1; w <= 4; w++) {
		char row[64];
		snprintf(row, sizeof row, "worker-%d        worker_main", w);
		cr_assert_not_null(strstr(r.out, row), "no '%s' in:\n%s", row, r.out);
	}
	snprintf(frame, sizeof frame, "record_result (workpool.c:%u)",
		 cli_workpool_line("pthread_mutex_lock(&totals_lock)"));
	const char *site = strstr(r.out, frame);
	cr_assert_not_null(site, "no '%s' in:\n%s", frame, r.out);
	/* the row above the frame is a "sync" group */
	const char *row = site;
	while (row > r.out && !(strncmp(row, "\n  ", 3) == 0 && isdigit((unsigned char)row[3])))
		row--;
	unsigned rank, waits;
	char kind[16];
	cr_assert_eq(sscanf(row, "\n  %u %15s %u", &rank, kind, &waits), 3, "%.200s", row);
	cr_assert_str_eq(kind, "sync");
	cr_assert_gt(waits, 0);
	cli_result_free(&r);

	report(&r, trace, "--json");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "\"name\":\"worker-1\",\"start_routine\":\"worker_main\""),
			   "%s", r.out);
	cr_assert_not_null(strstr(r.out, "\"kind\":\"sync\""), "%s", r.out);
	cr_assert_not_null(strstr(r.out, "{\"func\":\"record_result\""), "%s", r.out);
	cli_result_free(&r);
}

/* The report of a "go 1.22 trace" is the report of the "go 1.19 trace" of the same capture:
 * the same goroutines, names, waits of each kind and stacks; times agree to the rounding of
 * each format's ticks (compared within 1 us), so the JSON is compared with them masked. */
static char *mask_ns(const char *json, const char *trace)
{
	char *out = malloc(strlen(json) + 1), *o = out;
	cr_assert_not_null(out);
	for (const char *p = json; *p;) {
		if (!strncmp(p, "_ns\":", 5)) {
			memcpy(o, p, 5);
			o += 5;
			p += 5;
			while (isdigit((unsigned char)*p))
				p++;
		} else if (!strncmp(p, trace, strlen(trace))) {
			p += strlen(trace);   /* the trace's own name */
		} else {
			*o++ = *p++;
		}
	}
	*o = 0;
	return out;
}

static long long json_ns(const char *json, const char *key)
{
	const char *p = strstr(json, key);
	cr_assert_not_null(p, "no %s", key);
	return strtoll(p + strlen(key), NULL, 10);
}

Test(report, go122_trace_reports_as_its_go119_twin, .timeout = 60)
{
	char dir[512], trace[600], capture[700], t19[700], t22[700];
	struct cli_result r19, r22, c;
	cli_tempdir(dir, sizeof dir);
	cli_trace_workpool(dir, 40, trace, sizeof trace);
	snprintf(capture, sizeof capture, "%s.gtcap", trace);
	cli_path(t19, sizeof t19, dir, "a19.trace");
	cli_path(t22, sizeof t22, dir, "a22.trace");
	const char *conv19[] = { cli_gotrace, "convert", "-q", "--format", "go1.19", capture, "-o",
				 t19, NULL };
	const char *conv22[] = { cli_gotrace, "convert", "-q", "--format", "go1.22", capture, "-o",
				 t22, NULL };
	cli_run(&c, conv19, NULL);
	cr_assert_eq(c.status, 0, "%s", c.err);
	cli_result_free(&c);
	cli_run(&c, conv22, NULL);
	cr_assert_eq(c.status, 0, "%s", c.err);
	cli_result_free(&c);
	report(&r19, t19, "--json");
	report(&r22, t22, "--json");
	cr_assert_eq(r19.status, 0, "%s", r19.err);
	cr_assert_eq(r22.status, 0, "%s", r22.err);
	cr_assert_not_null(strstr(r22.out, "\"source\":\"go trace\""), "%s", r22.out);
	char *m19 = mask_ns(r19.out, t19), *m22 = mask_ns(r22.out, t22);
	cr_assert_str_eq(m22, m19);
	/* G1's times; and the span: a 1.19 trace ends where its epilogue stops every P, at the
	 * last fact recorded (a microsecond or so after the main thread's end), a 1.22 one at
	 * its last goroutine event */
	static const char *const totals[] = { "\"sync_ns\":", "\"cond_ns\":", "\"running_ns\":",
					      "\"recorded_ns\":" };
	for (size_t i = 0; i < sizeof totals / sizeof *totals; i++) {
		long long a = json_ns(r19.out, totals[i]), b = json_ns(r22.out, totals[i]);
		cr_assert_leq(llabs(a - b), i == 3 ? 10000 : 1000, "%s %lld vs %lld", totals[i], a, b);
	}
	free(m19);
	free(m22);
	cli_result_free(&r19);
	cli_result_free(&r22);
}

/* A run of several processes kept a capture per process (TRACE.gtcap, TRACE.PID.gtcap), named
 * on one line: the text report covers every one of them, each under its own header; --json,
 * one object, is of the first and names the others on stderr (issue 27: the others were left
 * out silently).  A later run with the same TRACE removes them: its report is its own. */
Test(report, every_process_of_a_kept_run, .timeout = 60)
{
	char dir[512], trace[600];
	struct cli_result r, plain;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "tree.trace");
	const char *run[] = { cli_gotrace, "run", "--keep-capture", "-o", trace, "--", "/bin/sh",
			      "-c", "/bin/echo one | /bin/cat; /bin/true", NULL };
	cli_run(&plain, run + 6, NULL);
	cli_run(&r, run, NULL);
	cr_assert_eq(r.status, plain.status, "%s", r.err);
	cr_assert_str_eq(r.out, plain.out);
	cr_assert_str_eq(r.out, "one\n");
	cli_result_free(&plain);
	cr_assert_eq(cli_count_of(r.err, "capture kept as"), 1, "%s", r.err);
	cr_assert_not_null(strstr(r.err, "more of the run's other processes beside it"), "%s", r.err);
	cli_result_free(&r);
	report(&r, trace, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	int reports = 0;
	for (const char *p = r.out; (p = strstr(p, "gotrace report\n")); p++)
		reports++;
	cr_assert_geq(reports, 4, "sh, echo, cat and true each a report: %d\n%s", reports, r.out);
	cr_assert_not_null(strstr(r.out, "process: pid"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, ", cat (/bin/cat)"), "%s", r.out);
	cr_assert_not_null(strstr(r.out, ", echo (/bin/echo one)"), "%s", r.out);
	cli_result_free(&r);
	report(&r, trace, "--json");
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(r.out[0], '{', "%s", r.out);
	cr_assert_not_null(strstr(r.err, "other processes' captures beside it"), "%s", r.err);
	cli_result_free(&r);
	const char *again[] = { cli_gotrace, "run", "--keep-capture", "-o", trace, "--", "/bin/true",
				NULL };
	cli_run(&r, again, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_str_empty(r.out);
	cr_assert_not_null(strstr(r.err, "captures of a previous run beside"), "%s", r.err);
	cli_result_free(&r);
	report(&r, trace, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(cli_count_of(r.out, "gotrace report\n"), 1, "%s", r.out);
	cr_assert_not_null(strstr(r.out, ", true (/bin/true)"), "%s", r.out);
	cli_result_free(&r);
}
