/* Names as the user knows them: a program started through a symlink or with its own argv[0]
 * is named so (not after the file it runs), a forked child that rewrites its command line
 * (as nginx's workers do) carries its own, a thread the tracer did not start is named by
 * its comm, and a thread waiting when the program ends is waiting in the report.  Each
 * program runs untraced and traced (same output, same status); the captures, the reports
 * and the traces are checked. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oracle.h"
#include "traced_run.h"

static struct run plain, traced, tool;
static struct capture cap, cap2;
static char alias_dir[64];

static void teardown(void)
{
	capture_close(&cap);
	capture_close(&cap2);
	run_cleanup(&plain);
	run_cleanup(&traced);
	run_cleanup(&tool);
	if (alias_dir[0]) {
		char link[128];
		snprintf(link, sizeof link, "%s/names-alias", alias_dir);
		unlink(link);
		rmdir(alias_dir);
		alias_dir[0] = 0;
	}
}

static const char *gotrace(void)
{
	const char *p = getenv("GT_TEST_GOTRACE");
	cr_assert_not_null(p, "GT_TEST_GOTRACE is not set");
	return p;
}

/* `gotrace ARGS...` untraced, asserting success; its stdout stays in tool.out. */
static const char *gotrace_out(const char *a1, const char *a2, const char *a3, const char *a4)
{
	const char *argv[] = {gotrace(), a1, a2, a3, a4, NULL};
	run_cleanup(&tool);
	memset(&tool, 0, sizeof tool);
	cr_assert_eq(run_program(&tool, 0, argv, NULL), 0);
	cr_assert(WIFEXITED(tool.status) && WEXITSTATUS(tool.status) == 0, "gotrace %s %s: %s",
		  a1, a2, tool.err);
	return tool.out;
}

static void capture_path(const struct run *r, pid_t pid, int nth, char *out, size_t size)
{
	if (nth)
		snprintf(out, size, "%s/gotrace-%d-%d.gtcap", r->dir, (int)pid, nth);
	else
		snprintf(out, size, "%s/gotrace-%d.gtcap", r->dir, (int)pid);
}

static void twins(const char *const argv[])
{
	memset(&plain, 0, sizeof plain);
	memset(&traced, 0, sizeof traced);
	const char *diff = run_twins(&plain, &traced, argv, NULL);
	cr_assert_null(diff, "%s", diff);
	cr_assert(WIFEXITED(traced.status) && WEXITSTATUS(traced.status) == 0, "%s", traced.err);
	cr_assert_eq(count_gotrace_lines(traced.err), 0, "%s", traced.err);
}

/* The JSON report of a capture names the process (name and command line). */
static void expect_report_process(const char *capture, const char *name, const char *command)
{
	char want[512];
	const char *json = gotrace_out("report", "--json", capture, NULL);
	snprintf(want, sizeof want, "\"process\":\"%s\",\"command\":\"%s\"", name, command);
	cr_assert_not_null(strstr(json, want), "want %s in %s", want, json);
	const char *text = gotrace_out("report", capture, NULL, NULL);
	const char *line = strstr(text, "  process: pid ");
	cr_assert_not_null(line, "%s", text);
	snprintf(want, sizeof want, ", %s (%s)\n", name, command);
	cr_assert_not_null(strstr(line, want), "want %s in %s", want, text);
	cr_assert_lt(strstr(line, want), strchr(line, '\n') + 1, "want %s in %s", want, text);
}

Test(names, program_started_through_a_symlink, .fini = teardown, .timeout = 60)
{
	snprintf(alias_dir, sizeof alias_dir, "/tmp/gt-names-XXXXXX");
	cr_assert_not_null(mkdtemp(alias_dir));
	char link[128];
	snprintf(link, sizeof link, "%s/names-alias", alias_dir);
	cr_assert_eq(symlink(test_program("gt-names"), link), 0);
	const char *argv[] = {link, "hello", NULL};
	twins(argv);
	char want[256];
	snprintf(want, sizeof want, "argv0=%s comm=names-alias\n", link);
	cr_assert_str_eq(traced.out, want);

	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert(strstr(cap.hdr->exe_path, "/gt-names"), "the file run: %s", cap.hdr->exe_path);
	char cmdline[GT_CMDLINE_MAX + 1], expect[256];
	const struct gt_p_process_name *n = capture_process_name(&cap, cmdline, sizeof cmdline);
	cr_assert_not_null(n, "no GT_PROCESS_NAME");
	cr_assert_str_eq(n->comm, "names-alias");
	snprintf(expect, sizeof expect, "%s hello", link);
	cr_assert_str_eq(cmdline, expect);
	/* its thread's creation found the command line unchanged: nothing written then */
	cr_assert_eq(capture_count(&cap, GT_THREAD_NEW, -1), 1u);
	cr_assert_eq(capture_count(&cap, GT_PROCESS_NAME, GT_NAME_THREAD), 0u);
	cr_assert_eq(capture_count(&cap, GT_PROCESS_NAME, -1), 2u, "at the start and the end");

	char path[PATH_MAX + 64], trace[PATH_MAX + 64], output[PATH_MAX + 80];
	capture_path(&traced, traced.pid, 0, path, sizeof path);
	expect_report_process(path, "names-alias", expect);
	/* the threads' inherited name is the alias: not a label in the trace (Go 1.19's events) */
	snprintf(trace, sizeof trace, "%s/names.trace", traced.dir);
	snprintf(output, sizeof output, "--output=%s", trace);
	gotrace_out("convert", "--format=go1.19", path, output);
	struct gt_events *ev = gt_events_parse_119(trace);
	cr_assert_not_null(ev);
	size_t labels = 0;
	for (size_t i = 0; i < ev->n; i++) {
		char label[64];
		if (strcmp(ev->ev[i].type, "GoStartLabel") != 0)
			continue;
		labels++;
		cr_expect_str_neq(gt_event_string(&ev->ev[i], "label", label, sizeof label),
				  "names-alias");
	}
	gt_events_free(ev);
	(void)labels;

	/* `gotrace run` says the same in its summary */
	const char *run_argv[] = {gotrace(), "run", "-o", trace, "--", link, "hello", NULL};
	run_cleanup(&tool);
	memset(&tool, 0, sizeof tool);
	cr_assert_eq(run_program(&tool, 0, run_argv, NULL), 0);
	cr_assert(WIFEXITED(tool.status) && WEXITSTATUS(tool.status) == 0, "%s", tool.err);
	cr_assert_not_null(strstr(tool.err, ": names-alias (pid "), "%s", tool.err);
}

/* A service whose seccomp filter kills it on debugging calls (ptrace, process_vm_readv)
 * runs as untraced: the tracer's look for a new command line at each thread creation makes
 * no such call (it once used process_vm_readv: SIGSYS at the first pthread_create). */
Test(names, service_whose_seccomp_filter_forbids_debugging_calls, .fini = teardown, .timeout = 60)
{
	const char *argv[] = {test_program("gt-names"), "seccomp", NULL};
	twins(argv);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert_eq(capture_count(&cap, GT_THREAD_NEW, -1), 1u);
	cr_assert_eq(capture_count(&cap, GT_PROCESS_NAME, -1), 2u, "at the start and the end");
}

Test(names, execv_with_its_own_argv0, .fini = teardown, .timeout = 60)
{
	const char *argv[] = {test_program("gt-names"), "execv", "custom-name", NULL};
	twins(argv);
	/* the kernel names the process after the file exec'd (/proc/self/exe: "exe") */
	cr_assert_str_eq(traced.out, "argv0=custom-name comm=exe\n");
	cr_assert_eq(run_count_captures(&traced), 2);
	cr_assert_eq(run_capture(&traced, traced.pid, 1, &cap), 0, "the exec'd image's capture");
	char cmdline[GT_CMDLINE_MAX + 1];
	const struct gt_p_process_name *n = capture_process_name(&cap, cmdline, sizeof cmdline);
	cr_assert_not_null(n);
	cr_assert_str_eq(n->comm, "exe");
	cr_assert_str_eq(cmdline, "custom-name hello");
	char path[PATH_MAX + 64];
	capture_path(&traced, traced.pid, 1, path, sizeof path);
	expect_report_process(path, "custom-name", "custom-name hello");
}

/* The child of `retitle`: its capture, and the parent's command line. */
static pid_t retitled_child(const char *how, char *parent_cmdline, size_t size)
{
	const char *argv[] = {test_program("gt-names"), "retitle", how, NULL};
	twins(argv);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	const struct cap_rec *fork = capture_find(&cap, GT_PROCESS, GT_PROC_FORK, 0);
	cr_assert_not_null(fork);
	pid_t child = (pid_t)((const struct gt_p_process *)fork->payload)->child_pid;
	cr_assert_eq(run_capture(&traced, child, 0, &cap2), 0, "child %d has no capture", child);
	cr_assert_not_null(capture_process_name(&cap, parent_cmdline, size));
	snprintf(parent_cmdline, size, "%s retitle %s", test_program("gt-names"), how);
	char cmdline[GT_CMDLINE_MAX + 1];
	cr_assert_not_null(capture_process_name(&cap, cmdline, sizeof cmdline));
	cr_assert_str_eq(cmdline, parent_cmdline, "the parent keeps its command line");
	/* the child's capture began under the parent's title */
	const struct cap_rec *first = capture_find(&cap2, GT_PROCESS_NAME, GT_NAME_START, 0);
	cr_assert_not_null(first);
	const struct gt_p_process_name *n = first->payload;
	cr_assert_eq(memcmp(n + 1, test_program("gt-names"), strlen(test_program("gt-names"))), 0);
	return child;
}

Test(names, forked_child_that_retitles_itself_and_exits, .fini = teardown, .timeout = 60)
{
	char parent[PATH_MAX + 32];
	pid_t child = retitled_child("exit", parent, sizeof parent);
	cr_assert_str_eq(traced.out, "child exited\n");
	char cmdline[GT_CMDLINE_MAX + 1];
	const struct gt_p_process_name *n = capture_process_name(&cap2, cmdline, sizeof cmdline);
	cr_assert_str_eq(cmdline, "gt-names: worker process");
	const struct cap_rec *last = capture_find(&cap2, GT_PROCESS_NAME, GT_NAME_END, 0);
	cr_assert_not_null(last, "read again at the end");
	cr_assert_eq(last->payload, (const void *)n);
	cr_assert(cap2.hdr->flags & GT_FILE_FINALIZED);
	char path[PATH_MAX + 64];
	capture_path(&traced, child, 0, path, sizeof path);
	expect_report_process(path, "gt-names: worker process", "gt-names: worker process");
	capture_path(&traced, traced.pid, 0, path, sizeof path);
	expect_report_process(path, "gt-names", parent);
}

Test(names, forked_child_that_retitles_itself_and_is_killed, .fini = teardown, .timeout = 60)
{
	char parent[PATH_MAX + 32];
	pid_t child = retitled_child("kill", parent, sizeof parent);
	cr_assert_str_eq(traced.out, "child killed\n");
	cr_assert_not(cap2.hdr->flags & GT_FILE_FINALIZED, "killed with -9");
	/* what was written last stays: the title seen when its second thread was created */
	char cmdline[GT_CMDLINE_MAX + 1];
	const struct gt_p_process_name *n = capture_process_name(&cap2, cmdline, sizeof cmdline);
	cr_assert_str_eq(cmdline, "gt-names: worker process");
	const struct cap_rec *at_thread = capture_find(&cap2, GT_PROCESS_NAME, GT_NAME_THREAD, 0);
	cr_assert_not_null(at_thread);
	/* of its two threads, only the one created after the rewrite wrote a name */
	cr_assert_eq(capture_count(&cap2, GT_THREAD_NEW, -1), 2u);
	cr_assert_eq(capture_count(&cap2, GT_PROCESS_NAME, GT_NAME_THREAD), 1u);
	cr_assert_eq(at_thread->payload, (const void *)n);
	char path[PATH_MAX + 64];
	capture_path(&traced, child, 0, path, sizeof path);
	expect_report_process(path, "gt-names: worker process", "gt-names: worker process");
}

/* A forked child whose first hooked call names its thread: its capture begins with the comm
 * its threads inherit (the parent's), so the name is its own and labels it in the trace
 * (issue 27 item 8: it read as the parent's program) */
static void child_named_first(const char *how)
{
	const char *argv[] = {test_program("gt-names"), "rename", how, NULL};
	twins(argv);
	cr_assert_str_eq(traced.out, "child exited\n");
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	const struct cap_rec *fork = capture_find(&cap, GT_PROCESS, GT_PROC_FORK, 0);
	cr_assert_not_null(fork);
	pid_t child = (pid_t)((const struct gt_p_process *)fork->payload)->child_pid;
	cr_assert_eq(run_capture(&traced, child, 0, &cap2), 0, "child %d has no capture", child);
	const struct cap_rec *first = capture_find(&cap2, GT_PROCESS_NAME, GT_NAME_START, 0);
	cr_assert_not_null(first);
	cr_assert_str_eq(((const struct gt_p_process_name *)first->payload)->comm, "gt-names");
	char path[PATH_MAX + 64], trace[PATH_MAX + 64], output[PATH_MAX + 80];
	capture_path(&traced, child, 0, path, sizeof path);
	snprintf(trace, sizeof trace, "%s/child.trace", traced.dir);
	snprintf(output, sizeof output, "--output=%s", trace);
	gotrace_out("convert", "--format=go1.19", path, output);
	struct gt_events *ev = gt_events_parse_119(trace);
	cr_assert_not_null(ev);
	bool named = false;
	for (size_t i = 0; i < ev->n; i++) {
		char label[64];
		named |= !strcmp(ev->ev[i].type, "GoStartLabel") &&
			 !strcmp(gt_event_string(&ev->ev[i], "label", label, sizeof label), "child-named");
	}
	gt_events_free(ev);
	cr_assert(named, "the child's thread is not labelled child-named");
}

Test(names, forked_child_named_by_pthread_setname_np_first, .fini = teardown, .timeout = 60)
{
	child_named_first("setname");
}

Test(names, forked_child_named_by_prctl_first, .fini = teardown, .timeout = 60)
{
	child_named_first("prctl");
}

/* The JSON object of the thread named name in a report (from the key on). */
static const char *json_thread(const char *json, const char *key)
{
	const char *t = strstr(json, key);
	cr_assert_not_null(t, "no %s in %s", key, json);
	return t;
}

static unsigned long long json_u64(const char *from, const char *key)
{
	char k[64];
	snprintf(k, sizeof k, "\"%s\":", key);
	const char *p = strstr(from, k);
	cr_assert_not_null(p, "no %s in %s", key, from);
	return strtoull(p + strlen(k), NULL, 10);
}

Test(names, thread_the_tracer_did_not_start_waits_at_the_end, .fini = teardown, .timeout = 60)
{
	const char *argv[] = {test_program("gt-names"), "waiting", NULL};
	twins(argv);
	cr_assert_str_eq(traced.out, "exiting while bg-worker waits\n");
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	/* first met by a hook: announced as existing, named by its comm */
	const struct cap_rec *e = NULL;
	for (size_t i = 0; (e = capture_find(&cap, GT_THREAD_EXISTING, -1, i)); i++)
		if (e->h->thread != 1)
			break;
	cr_assert_not_null(e, "the thread is not announced as existing");
	uint32_t serial = e->h->thread;
	char path[PATH_MAX + 64];
	capture_path(&traced, traced.pid, 0, path, sizeof path);

	/* the capture's report: start routine = its comm; waiting, not running, at the end */
	const char *json = gotrace_out("report", "--json", path, NULL);
	char key[64];
	snprintf(key, sizeof key, "{\"serial\":%u,", serial);
	const char *t = json_thread(json, key);
	cr_assert_not_null(strstr(t, "\"name\":\"bg-worker\",\"start_routine\":\"bg-worker\""), "%s", t);
	const char *w = strstr(t, "\"waiting_at_end\":{\"in\":\"condvar\"");
	cr_assert_not_null(w, "%s", t);
	unsigned long long alive = json_u64(t, "alive_ns"), running = json_u64(t, "running_ns"),
			   cond = json_u64(t, "cond_ns"), lock = json_u64(t, "lock_ns"),
			   waited = json_u64(w, "waited_ns");
	cr_assert_eq(json_u64(t, "cond_waits"), 1);
	cr_assert_eq(cond, waited, "%s", t);
	cr_assert_eq(running + cond + lock + json_u64(t, "syscall_ns") + json_u64(t, "join_ns") +
			     json_u64(t, "sleep_ns"), alive, "%s", t);
	/* main sleeps 50 ms once it sees the thread blocked, then exits */
	cr_assert_geq(waited, 50000000, "it waited 50 ms at least: %s", t);
	cr_assert_gt(waited, running, "it waited (main yields until it sleeps): %s", t);
	const char *text = gotrace_out("report", path, NULL, NULL);
	cr_assert_not_null(strstr(text, "Threads still waiting when the capture ends"), "%s", text);
	snprintf(key, sizeof key, "thread %u (bg-worker) since", serial);
	cr_assert_not_null(strstr(text, key), "%s", text);

	/* the Go trace: its goroutine is created as "bg-worker", blocked on a condvar at the end */
	char trace[PATH_MAX + 64];
	snprintf(trace, sizeof trace, "%s/waiting.trace", traced.dir);
	gotrace_out("convert", path, "-o", trace);
	json = gotrace_out("report", "--json", trace, NULL);
	t = json_thread(json, "\"start_routine\":\"bg-worker\"");
	w = strstr(t, "\"blocked_at_end\":{\"kind\":\"cond\"");
	cr_assert_not_null(w, "%s", t);
	cr_assert_eq(json_u64(t, "cond_ns"), json_u64(w, "waited_ns"), "%s", t);
	cr_assert_eq(json_u64(t, "cond_waits"), 1, "%s", t);
	cr_assert_eq(gt_oracle_check(trace, true, NULL), 0, "Go's readers refuse %s", trace);
}
