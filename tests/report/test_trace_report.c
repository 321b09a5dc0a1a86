/* gotrace report on a Go trace alone: a capture written by hand, where every wait is known
 * to the nanosecond, converted by gotrace, then read back by gotrace_reader.c.  The report's
 * numbers are the capture's. */
#include "encoder/encoder.h"
#include "report/gotrace_reader.h"
#include "report/report.h"

#include "report_scenario.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LOCK 0x5000u
#define COND 0x6000u

static char capture_path[256], trace_path[256];
static struct gt_convert_summary converted;   /* of the last write_and_convert */

/* Main (cpu 0) sleeps 2 us .. 400 us.  "worker-a" (cpu 1) waits on LOCK 500 ns and 250 ns
 * from stack 1 and on COND 400 ns; "worker-b" (cpu 2) waits on LOCK 1000 ns from stack 2,
 * reads a pipe for 100 us and a socket for 50 us.  Syscalls are longer than the 20 us
 * threshold, so both block in the trace. */
static void write_and_convert(struct gt_cb *cb);

static void write_capture_and_trace(void)
{
	struct gt_cb *cb = report_scenario_threads(3, 1, 2);
	gt_cb_block_begin(cb, 0, 2000, 1, GT_BK_SLEEP, 0, 1);
	gt_cb_block_begin(cb, 1, 2010, 2, GT_BK_MUTEX, LOCK, 1);
	gt_cb_block_begin(cb, 2, 2100, 3, GT_BK_MUTEX, LOCK, 2);
	gt_cb_block_end(cb, 1, 2510, 2, GT_BK_MUTEX, LOCK, GT_BR_OK);
	gt_cb_block_end(cb, 2, 3100, 3, GT_BK_MUTEX, LOCK, GT_BR_OK);
	gt_cb_block_begin(cb, 1, 4000, 2, GT_BK_MUTEX, LOCK, 1);
	gt_cb_block_end(cb, 1, 4250, 2, GT_BK_MUTEX, LOCK, GT_BR_OK);
	gt_cb_block_begin(cb, 1, 5000, 2, GT_BK_COND, COND, 1);
	gt_cb_block_end(cb, 1, 5400, 2, GT_BK_COND, COND, GT_BR_OK);
	gt_cb_thread_end(cb, 1, 9000, 2);
	gt_cb_syscall_begin(cb, 2, 5000, 3, GT_FD_PIPE, SYS_read, 4, 2);
	gt_cb_syscall_end(cb, 2, 105000, 3, SYS_read, 10);
	gt_cb_syscall_begin(cb, 2, 110000, 3, GT_FD_SOCKET, SYS_recvfrom, 5, 2);
	gt_cb_syscall_end(cb, 2, 160000, 3, SYS_recvfrom, 10);
	gt_cb_thread_end(cb, 2, 200000, 3);
	gt_cb_block_end(cb, 0, 400000, 1, GT_BK_SLEEP, 0, GT_BR_OK);
	gt_cb_thread_end(cb, 0, 450000, 1);
	gt_cb_capture_end(cb, 0, 460000);
	write_and_convert(cb);
}

/* Threads that never waited: a trace without one blocking event. */
static void write_quiet_capture_and_trace(void)
{
	struct gt_cb *cb = report_scenario_threads(3, 1, 2);
	gt_cb_thread_end(cb, 1, 9000, 2);
	gt_cb_thread_end(cb, 2, 9500, 3);
	gt_cb_thread_end(cb, 0, 10000, 1);
	gt_cb_capture_end(cb, 0, 11000);
	write_and_convert(cb);
}

/* Finalizes and writes CB as the capture and converts it into the trace. */
static void write_and_convert(struct gt_cb *cb)
{
	gt_cb_header(cb)->flags |= GT_FILE_FINALIZED;
	snprintf(capture_path, sizeof capture_path, "%s/trace-report-%d.gtcap", GT_TEST_TMPDIR,
		 (int)getpid());
	snprintf(trace_path, sizeof trace_path, "%s/trace-report-%d.trace", GT_TEST_TMPDIR,
		 (int)getpid());
	cr_assert_eq(gt_cb_write(cb, capture_path), 0);
	gt_cb_free(cb);
	struct gt_convert_options opt = { .no_symbols = true };
	char err[512];
	cr_assert_eq(gt_convert_file(capture_path, trace_path, &opt, &converted, err, sizeof err),
		     0, "%s", err);
}

static void cleanup(void)
{
	unlink(capture_path);
	unlink(trace_path);
}

static char *report_of(bool json)
{
	char *text = NULL, err[512];
	size_t len = 0;
	FILE *out = open_memstream(&text, &len);
	struct gt_report_options opt = { .json = json };
	cr_assert_eq(gt_report_go_trace(trace_path, &opt, out, err, sizeof err), 0, "%s", err);
	fclose(out);
	return text;
}

TestSuite(trace_report, .init = write_capture_and_trace, .fini = cleanup);

Test(trace_report, reader_merges_batches_by_time)
{
	struct gt_go_trace t;
	char err[512];
	cr_assert_eq(gt_go_trace_read(trace_path, &t, err, sizeof err), 0, "%s", err);
	cr_assert_eq(t.frequency, 1000000000u);
	size_t creates = 0, sysexits = 0, labels = 0;
	for (size_t i = 0; i < t.n_ev; i++) {
		if (i > 0)
			cr_assert_geq(t.ev[i].ns, t.ev[i - 1].ns, "event %zu before %zu", i, i - 1);
		creates += t.ev[i].kind == GT_GO_GO_CREATE;
		sysexits += t.ev[i].kind == GT_GO_GO_SYSEXIT;
		if (t.ev[i].kind == GT_GO_GO_START_LABEL) {
			const char *label = gt_go_trace_string(&t, t.ev[i].args[2]);
			labels++;
			cr_assert(strcmp(label, "worker-a") == 0 || strcmp(label, "worker-b") == 0,
				  "label %s", label);
		}
	}
	cr_assert_eq(creates, 3);   /* main, worker-a, worker-b */
	cr_assert_eq(sysexits, 1);  /* the pipe read; the socket read is a GoBlockNet */
	cr_assert_gt(labels, 0);
	gt_go_trace_free(&t);
}

/* The goroutine of a thread, by its name, as JSON text from there on. */
static const char *goroutine(const char *json, const char *name)
{
	char key[64];
	snprintf(key, sizeof key, "\"name\":\"%s\"", name);
	const char *g = strstr(json, key);
	cr_assert_not_null(g, "no %s in %s", name, json);
	return g;
}

Test(trace_report, goroutine_times_are_the_capture_waits)
{
	char *json = report_of(true);
	const char *a = goroutine(json, "worker-a"), *b = goroutine(json, "worker-b");
	/* worker-a: LOCK 500 + 250 ns, COND 400 ns; alive from its GoCreate (1010) to 9000;
	 * running from its start (1100) to its end less 1150 ns blocked, 6750 ns, less 4 ns:
	 * each of its 4 GoStarts comes 1 ns after the ProcStart or GoUnblock of the same
	 * instant (the writer keeps each P's ticks strictly increasing, §1.4). */
	cr_assert_not_null(strstr(a, "\"alive_ns\":7990,\"running_ns\":6746,\"sync_ns\":750,"
				     "\"sync_waits\":2,\"cond_ns\":400,\"cond_waits\":1,"), "%s", a);
	/* worker-b: LOCK 1000 ns; the pipe read 100 us in a syscall; the socket 50 us net. */
	cr_assert_not_null(strstr(b, "\"sync_ns\":1000,\"sync_waits\":1,\"cond_ns\":0,"
				     "\"cond_waits\":0,\"net_ns\":50000,\"net_waits\":1,"), "%s", b);
	/* GoSysCall at the call, GoSysExit 1 ns after the ProcStart at the return (§1.4) */
	cr_assert_not_null(strstr(b, "\"syscall_ns\":100001,\"syscall_waits\":1,"
				     "\"short_syscalls\":0,\"ended\":true"), "%s", b);
	/* main slept 398 us */
	cr_assert_not_null(strstr(json, "\"sleep_ns\":398000,\"sleep_waits\":1,"), "%s", json);
	free(json);
}

Test(trace_report, blocking_stacks_with_count_total_mean_max)
{
	char *json = report_of(true);
	const char *by_stack = strstr(json, "\"blocking_by_stack\":[");
	cr_assert_not_null(by_stack, "%s", json);
	/* by total: sleep 398 us, syscall 100 us, net 50 us, sync stack 2 (1000 ns),
	 * sync stack 1 (750 ns in 2), cond 400 ns */
	const char *order[] = {
		"{\"kind\":\"sleep\",\"waits\":1,\"total_ns\":398000,\"mean_ns\":398000,\"max_ns\":398000,",
		"{\"kind\":\"syscall\",\"waits\":1,\"total_ns\":100001,",
		"{\"kind\":\"net\",\"waits\":1,\"total_ns\":50000,",
		"{\"kind\":\"sync\",\"waits\":1,\"total_ns\":1000,\"mean_ns\":1000,\"max_ns\":1000,",
		"{\"kind\":\"sync\",\"waits\":2,\"total_ns\":750,\"mean_ns\":375,\"max_ns\":500,"
		"\"frames\":[{\"func\":\"0x4010ff\"",   /* stack 1, named by address (PC - 1) */
		"{\"kind\":\"cond\",\"waits\":1,\"total_ns\":400,",
	};
	const char *at = by_stack;
	for (size_t i = 0; i < sizeof order / sizeof *order; i++) {
		const char *next = strstr(at, order[i]);
		cr_assert_not_null(next, "'%s' not after position %zu in %s", order[i],
				   (size_t)(at - json), json);
		at = next;
	}
	free(json);

	char *text = report_of(false);
	cr_assert_not_null(strstr(text, "Blocking, by stack (lock addresses are only in the capture: "
				  "use --keep-capture)"), "%s", text);
	cr_assert_not_null(strstr(text, "worker-a"), "%s", text);
	free(text);
}

/* Nothing waited: no blocking stacks to sort or print (qsort was once given NULL here). */
Test(trace_report_quiet, nothing_blocked, .init = write_quiet_capture_and_trace, .fini = cleanup)
{
	char *json = report_of(true);
	cr_assert(strstr(json, "\"blocking_by_stack\":[]") || strstr(json, "\"blocking_by_stack\": []"),
		  "%s", json);
	cr_assert_not_null(strstr(json, "{\"g\":3,"), "three goroutines: %s", json);
	free(json);
	char *text = report_of(false);
	cr_assert_not_null(strstr(text, "Goroutines"), "%s", text);
	free(text);
}

/* worker-a (G2) waits on COND from 5000 to the end; worker-b ends at 9500; main at 30000. */
static void write_waiting_capture_and_trace(void)
{
	struct gt_cb *cb = report_scenario_threads(3, 1, 2);
	gt_cb_block_begin(cb, 1, 5000, 2, GT_BK_COND, COND, 1);
	gt_cb_thread_end(cb, 2, 9500, 3);
	gt_cb_thread_end(cb, 0, 30000, 1);
	gt_cb_capture_end(cb, 0, 31000);
	write_and_convert(cb);
}

/* A goroutine blocked when the trace ends is blocked, not running: the table, the JSON and
 * the "still blocked" list agree. */
Test(trace_report_waiting, blocked_at_the_end_is_not_running,
     .init = write_waiting_capture_and_trace, .fini = cleanup)
{
	char *json = report_of(true);
	/* worker-a never starts again after it names itself: no label in the trace */
	const char *a = strstr(json, "{\"g\":2,");
	cr_assert_not_null(a, "%s", json);
	unsigned long long recorded, alive, running, cond, cond_waits, since, waited;
	cr_assert_eq(sscanf(json, "{\"trace\":%*[^,],\"source\":\"go trace\",\"recorded_ns\":%llu",
			    &recorded), 1, "%s", json);
	const char *p = strstr(a, "\"alive_ns\":");
	cr_assert_not_null(p, "%s", a);
	cr_assert_eq(sscanf(p, "\"alive_ns\":%llu,\"running_ns\":%llu", &alive, &running), 2, "%s", p);
	p = strstr(a, "\"cond_ns\":");
	cr_assert_not_null(p, "%s", a);
	cr_assert_eq(sscanf(p, "\"cond_ns\":%llu,\"cond_waits\":%llu", &cond, &cond_waits), 2, "%s", p);
	p = strstr(a, "\"blocked_at_end\":{\"kind\":\"cond\",\"since_ns\":");
	cr_assert_not_null(p, "%s", a);
	cr_assert_eq(sscanf(p, "\"blocked_at_end\":{\"kind\":\"cond\",\"since_ns\":%llu,"
			    "\"waited_ns\":%llu", &since, &waited), 2, "%s", p);
	/* blocked from 5000 (4000 into the trace) to its end, 30000 (main's end) */
	cr_assert_eq(recorded, 30000, "%s", json);
	cr_assert_eq(since, 4000, "%s", a);
	cr_assert_eq(waited, recorded - since, "%s", a);
	cr_assert_eq(cond, waited, "%s", a);
	cr_assert_eq(cond_waits, 1, "%s", a);
	/* running from its start (1100, 1 ns after its ProcStart) to its block at 5000 */
	cr_assert_eq(running, 3899, "%s", a);
	/* created at 1010: runnable 90 ns before its start */
	cr_assert_eq(alive, 90 + 1 + running + cond, "%s", a);
	free(json);

	char *text = report_of(false);
	const char *row = strstr(text, "\n  2    ");
	cr_assert_not_null(row, "%s", text);
	char name[16], routine[64];
	double alive_ms, running_ms, sync_ms, cond_ms;
	cr_assert_eq(sscanf(row, " 2 %15s %63s %lf %lf %lf %lf", name, routine, &alive_ms,
			    &running_ms, &sync_ms, &cond_ms), 6, "%s", row);
	cr_assert_float_eq(running_ms, 0.004, 1e-9, "%s", row); /* %.3f */
	cr_assert_float_eq(cond_ms, 0.026, 1e-9, "%s", row);
	cr_assert_not_null(strstr(text, "Goroutines still blocked when the trace ends\n"
				  "  g 2 (-) since 0.004 ms, cond, at:"), "%s", text);
	free(text);
}

/* The process is named by its last GT_PROCESS_NAME; threads inherit its first comm (no
 * label); a thread without a start routine is created under a name of its own. */
Test(trace_report_names, process_and_pre_existing_thread_names, .fini = cleanup)
{
	struct gt_cb *cb = gt_cb_new(2, 65536, 1000);
	static const char start[] = "/usr/bin/alias\0-x", end[] = "alias: worker process";
	gt_cb_process_name(cb, 0, 1005, GT_NAME_START, "alias", start, sizeof start);
	gt_cb_thread_existing(cb, 0, 1010, 1, 0, 0);
	gt_cb_thread_name(cb, 0, 1011, 1, "alias");
	gt_cb_thread_existing(cb, 1, 1012, 3, 0, 0);
	gt_cb_thread_name(cb, 1, 1013, 3, "alias");          /* inherited: tells nothing */
	gt_cb_thread_existing(cb, 1, 1014, 4, 0, 0);
	gt_cb_thread_name(cb, 1, 1015, 4, "bg_thd");         /* its own */
	gt_cb_yield(cb, 0, 2000, 1, 0);
	gt_cb_yield(cb, 1, 2100, 3, 0);
	gt_cb_yield(cb, 1, 2200, 4, 0);
	gt_cb_thread_existing(cb, 1, 3000, 5, 0, 0);         /* first met mid-capture */
	gt_cb_thread_name(cb, 1, 3001, 5, "late_one");
	gt_cb_yield(cb, 1, 3100, 5, 0);
	gt_cb_yield(cb, 0, 3200, 1, 0);
	gt_cb_yield(cb, 1, 3300, 4, 0);
	gt_cb_process_name(cb, 0, 4000, GT_NAME_END, "alias", end, sizeof end - 1);
	gt_cb_capture_end(cb, 0, 4100);
	write_and_convert(cb);
	cr_expect_str_eq(converted.process, "alias: worker process");

	char *json = report_of(true);
	cr_assert_not_null(strstr(json, "{\"g\":1,\"name\":\"\",\"start_routine\":\"[main thread]\""),
			   "%s", json);
	cr_assert_not_null(strstr(json, "{\"g\":2,\"name\":\"\",\"start_routine\":"
				  "\"[pre-existing thread]\""), "%s", json);
	cr_assert_not_null(strstr(json, "{\"g\":3,\"name\":\"bg_thd\",\"start_routine\":\"bg_thd\""),
			   "%s", json);
	/* never started again after it was named: no label, but created under its name */
	cr_assert_not_null(strstr(json, "{\"g\":4,\"name\":\"\",\"start_routine\":\"late_one\""),
			   "%s", json);
	cr_assert_null(strstr(json, "\"name\":\"alias\""), "the inherited name is no label: %s", json);
	free(json);
}
