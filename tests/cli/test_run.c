/* gotrace run: exit status and output of the traced command pass through unchanged,
 * signals are forwarded, children get their own trace, and everything that would make the
 * run useless is refused with one line before the command starts. */
#include "cli_support.h"
#include "oracle.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <stdint.h>
#include <poll.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* gotrace run --format go1.19 [OPTION] -o DIR/t.trace -- /bin/sh -c SCRIPT (the tests read
 * the trace with Go 1.19's event model) */
static void run_sh_with(const char *option, const char *dir, const char *script,
			struct cli_result *r, char *trace, size_t size)
{
	const char *argv[12];
	size_t n = 0;
	cli_path(trace, size, dir, "t.trace");
	argv[n++] = cli_gotrace;
	argv[n++] = "run";
	argv[n++] = "--format=go1.19";
	if (option)
		argv[n++] = option;
	const char *rest[] = { "-o", trace, "--", "/bin/sh", "-c", script, NULL };
	memcpy(argv + n, rest, sizeof rest);
	cli_run(r, argv, NULL);
}

static void run_sh(const char *dir, const char *script, struct cli_result *r, char *trace,
		   size_t size)
{
	run_sh_with(NULL, dir, script, r, trace, size);
}

Test(run, exit_status_passes_through)
{
	char dir[512], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	run_sh(dir, "exit 7", &r, trace, sizeof trace);
	cr_assert_eq(r.status, 7, "status %d, stderr: %s", r.status, r.err);
	cr_assert(cli_file_exists(trace), "no trace written: %s", r.err);
	cr_assert_not_null(strstr(r.err, "go tool trace "), "no next command in: %s", r.err);
	cli_result_free(&r);
}

Test(run, death_by_signal_is_128_plus_n_and_still_traced)
{
	char dir[512], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	run_sh(dir, "kill -TERM $$", &r, trace, sizeof trace);
	cr_assert_eq(r.status, 128 + SIGTERM, "status %d, stderr: %s", r.status, r.err);
	cr_assert_not_null(strstr(r.err, "killed by signal 15"), "%s", r.err);
	cli_result_free(&r);

	/* kill -9 leaves the capture without its end records: the trace still converts. */
	run_sh(dir, "kill -KILL $$", &r, trace, sizeof trace);
	cr_assert_eq(r.status, 128 + SIGKILL, "status %d, stderr: %s", r.status, r.err);
	struct gt_events *events = gt_events_parse_119(trace);
	cr_assert_not_null(events, "Go 1.19 rejects the trace of a killed program");
	gt_events_free(events);
	cli_result_free(&r);
}

static pid_t spawn_quiet(const char *const *argv, const char *err_path)
{
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		int err = open(err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
		dup2(err, 2);
		/* else the command, traced or not, could inherit an ignored QUIT */
		cli_default_signals();
		execv(argv[0], (char *const *)argv);
		_exit(99);
	}
	return pid;
}

/* What a process's signal state and each of its threads are doing, for a failure message. */
static void describe_proc(pid_t pid, char *buf, size_t size)
{
	char path[384], line[256], task_dir[64];
	size_t len = (size_t)snprintf(buf, size, "pid %d:", (int)pid);
	snprintf(path, sizeof path, "/proc/%d/status", (int)pid);
	FILE *f = fopen(path, "r");
	while (f != NULL && fgets(line, sizeof line, f) != NULL && len < size)
		if (strncmp(line, "Sig", 3) == 0 || strncmp(line, "ShdPnd", 6) == 0 ||
		    strncmp(line, "State", 5) == 0)
			len += (size_t)snprintf(buf + len, size - len, " %.*s;",
						(int)strcspn(line, "\n"), line);
	if (f != NULL)
		fclose(f);
	snprintf(task_dir, sizeof task_dir, "/proc/%d/task", (int)pid);
	DIR *d = opendir(task_dir);
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL && len < size) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s/syscall", task_dir, e->d_name);
		f = fopen(path, "r");
		if (f != NULL && fgets(line, sizeof line, f) != NULL)
			len += (size_t)snprintf(buf + len, size - len, " task %s syscall %.*s;",
						e->d_name, (int)strcspn(line, " \n"), line);
		if (f != NULL)
			fclose(f);
	}
	if (d != NULL)
		closedir(d);
}

Test(run, forwards_signals_to_the_command, .timeout = 120)
{
	static const int signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGUSR1, SIGUSR2 };
	char dir[512], trace[600], err_path[600];
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "t.trace");
	cli_path(err_path, sizeof err_path, dir, "gotrace.err");
	for (size_t i = 0; i < sizeof signals / sizeof *signals; i++) {
		/* exec: the signal must reach sleep itself, not a shell waiting for it. */
		const char *argv[] = { cli_gotrace, "run", "-o", trace, "--", "/bin/sh", "-c",
				       "ulimit -c 0; exec sleep 30", NULL };
		pid_t pid = spawn_quiet(argv, err_path);
		pid_t sleep_pid = cli_wait_for_child(pid, "sleep");
		int pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
		cr_assert_geq(pidfd, 0, "pidfd_open: %s", strerror(errno));
		cr_assert_eq(kill(pid, signals[i]), 0);
		/* gotrace must end within 20 s (sleep would take 30); if it does not, say what
		 * gotrace and sleep were doing while both still run */
		struct pollfd p = { .fd = pidfd, .events = POLLIN };
		int ready;
		while ((ready = poll(&p, 1, 20 * 1000)) < 0 && errno == EINTR)
			;
		if (ready == 0) {
			char gotrace_state[2048], sleep_state[2048], err[4096];
			describe_proc(pid, gotrace_state, sizeof gotrace_state);
			describe_proc(sleep_pid, sleep_state, sizeof sleep_state);
			FILE *f = fopen(err_path, "r");
			size_t n = f != NULL ? fread(err, 1, sizeof err - 1, f) : 0;
			err[n] = '\0';
			if (f != NULL)
				fclose(f);
			cr_assert_fail("%s did not end the command in 20 s; gotrace %s; sleep %s; "
				       "gotrace's stderr: %s", strsignal(signals[i]), gotrace_state,
				       sleep_state, err);
		}
		close(pidfd);
		int status;
		cr_assert_eq(waitpid(pid, &status, 0), pid);
		cr_assert(WIFEXITED(status), "gotrace itself died of signal %d on %s",
			  WTERMSIG(status), strsignal(signals[i]));
		cr_assert_eq(WEXITSTATUS(status), 128 + signals[i], "%s: status %d",
			     strsignal(signals[i]), WEXITSTATUS(status));
	}
}

Test(run, output_is_identical_to_an_untraced_run, .timeout = 60)
{
	char dir[512], trace[600];
	struct cli_result plain, traced;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "w.trace");
	const char *plain_argv[] = { cli_workpool, "48", "4", NULL };
	const char *traced_argv[] = { cli_gotrace, "run", "-o", trace, "--", cli_workpool, "48",
				      "4", NULL };
	cli_run(&plain, plain_argv, NULL);
	cli_run(&traced, traced_argv, NULL);
	cr_assert_eq(plain.status, 0);
	cr_assert_eq(traced.status, 0, "stderr: %s", traced.err);
	cr_assert_str_not_empty(plain.out);
	cr_assert_str_eq(traced.out, plain.out);
	cr_assert_str_empty(plain.err);
	/* Every stderr line is gotrace's own: the program wrote nothing there. */
	char *save = NULL;
	for (char *line = strtok_r(traced.err, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save))
		cr_assert_eq(strncmp(line, "gotrace", 7), 0, "foreign stderr line: %s", line);
	cli_result_free(&plain);
	cli_result_free(&traced);
}

static size_t count_child_traces(const char *dir, const char *base)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0, len = strlen(base);
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, base, len) != 0 || e->d_name[len] != '.')
			continue;
		const char *pid = e->d_name + len + 1;
		n += *pid != '\0' && strspn(pid, "0123456789") == strlen(pid);
	}
	closedir(d);
	return n;
}

Test(run, a_child_process_gets_its_own_trace)
{
	char dir[512], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	run_sh_with("--per-process", dir, "/bin/echo from-child; exit 0", &r, trace, sizeof trace);
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert_str_eq(r.out, "from-child\n");
	cr_assert(cli_file_exists(trace));
	cr_assert_eq(count_child_traces(dir, "t.trace"), 1, "stderr: %s", r.err);
	cli_result_free(&r);

	char dir2[512], trace2[600];
	cli_tempdir(dir2, sizeof dir2);
	cli_path(trace2, sizeof trace2, dir2, "t.trace");
	const char *argv[] = { cli_gotrace, "run", "--per-process", "--no-follow", "-o", trace2,
			       "--", "/bin/sh", "-c", "/bin/echo from-child; exit 0", NULL };
	cli_run(&r, argv, NULL);
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	cr_assert(cli_file_exists(trace2));
	cr_assert_eq(count_child_traces(dir2, "t.trace"), 0, "--no-follow traced a child");
	cli_result_free(&r);
}

Test(run, appends_to_an_existing_ld_preload)
{
	char dir[512], trace[600], expected[4096], lib[1024], user_lib[1024], env_entry[1100];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cr_assert_not_null(realpath(GT_TEST_PRELOAD_LIB, lib));
	cr_assert_not_null(realpath(GT_TEST_USER_PRELOAD_LIB, user_lib));
	snprintf(env_entry, sizeof env_entry, "LD_PRELOAD=%s", user_lib);
	const char *env[] = { env_entry, NULL };
	cli_path(trace, sizeof trace, dir, "t.trace");
	const char *argv[] = { cli_gotrace, "run", "-o", trace, "--", "/bin/sh", "-c",
			       "printf %s \"$LD_PRELOAD\"", NULL };
	cli_run(&r, argv, env);
	cr_assert_eq(r.status, 0, "stderr: %s", r.err);
	snprintf(expected, sizeof expected, "%s:%s", user_lib, lib);
	cr_assert_str_eq(r.out, expected);
	cli_result_free(&r);
}

/* ---- refusals: one line, nonzero status, the command never starts ------------------- */

static void assert_refused(const struct cli_result *r, int status, const char *needle)
{
	cr_assert_eq(r->status, status, "status %d (want %d), stderr: %s", r->status, status,
		     r->err);
	cr_assert_eq(cli_count_lines(r->err), 1, "not one line: %s", r->err);
	cr_assert_not_null(strstr(r->err, needle), "'%s' not in: %s", needle, r->err);
	cr_assert_eq(strncmp(r->err, "gotrace run: ", 13), 0, "%s", r->err);
}

static void expect_refusal(const char *const *argv, int status, const char *needle)
{
	struct cli_result r;
	cli_run(&r, argv, NULL);
	assert_refused(&r, status, needle);
	cli_result_free(&r);
}

Test(run_errors, static_program)
{
	char dir[512], marker[600], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(marker, sizeof marker, dir, "ran");
	cli_path(trace, sizeof trace, dir, "t.trace");
	const char *argv[] = { cli_gotrace, "run", "-o", trace, "--", cli_static_program, marker,
			       NULL };
	cli_run(&r, argv, NULL);
	assert_refused(&r, 126, "is statically linked: LD_PRELOAD cannot work");
	cr_assert(!cli_file_exists(marker), "the static program ran");
	cli_result_free(&r);
}

Test(run_errors, setuid_program)
{
	if (geteuid() != 0)
		cr_skip_test("making a program setuid to another user needs root");
	char dir[512], copy[600], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(copy, sizeof copy, dir, "setuid-workpool");
	cli_path(trace, sizeof trace, dir, "t.trace");
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "cp %s %s && chown 65534 %s && chmod 4755 %s", cli_workpool,
		 copy, copy, copy);
	cr_assert_eq(system(cmd), 0);
	const char *argv[] = { cli_gotrace, "run", "-o", trace, "--", copy, NULL };
	cli_run(&r, argv, NULL);
	assert_refused(&r, 126, "is setuid: the loader ignores LD_PRELOAD");
	cr_assert_str_empty(r.out, "the setuid program ran");
	cli_result_free(&r);
}

Test(run_errors, command_not_found)
{
	const char *argv[] = { cli_gotrace, "run", "--", "gotrace-no-such-command", NULL };
	expect_refusal(argv, 127, "command not found: gotrace-no-such-command");

	const char *argv2[] = { cli_gotrace, "run", "--", "/nonexistent/program", NULL };
	expect_refusal(argv2, 127, "/nonexistent/program: No such file or directory");
}

Test(run_errors, not_executable)
{
	char dir[512], file[600];
	cli_tempdir(dir, sizeof dir);
	cli_write_file(file, sizeof file, dir, "plain.txt", "not a program\n");
	const char *argv[] = { cli_gotrace, "run", "--", file, NULL };
	expect_refusal(argv, 126, "not executable");
}

Test(run_errors, unwritable_output)
{
	char dir[512], marker[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(marker, sizeof marker, dir, "ran");
	char script[700];
	snprintf(script, sizeof script, "touch %s", marker);
	const char *argv[] = { cli_gotrace, "run", "-o", "/nonexistent-dir/x.trace", "--",
			       "/bin/sh", "-c", script, NULL };
	cli_run(&r, argv, NULL);
	assert_refused(&r, 125, "cannot write /nonexistent-dir/x.trace: No such file");
	cr_assert(!cli_file_exists(marker), "the command ran although the output is unwritable");
	cli_result_free(&r);

	const char *argv2[] = { cli_gotrace, "run", "-o", dir, "--", "/bin/true", NULL };
	expect_refusal(argv2, 125, "is a directory");
}

Test(run_errors, usage_mistakes)
{
	const char *no_command[] = { cli_gotrace, "run", "-o", "x.trace", NULL };
	expect_refusal(no_command, 2, "no command given");

	const char *unknown[] = { cli_gotrace, "run", "--frobnicate", "--", "/bin/true", NULL };
	expect_refusal(unknown, 2, "unknown option '--frobnicate'");

	const char *bad_stacks[] = { cli_gotrace, "run", "--stacks", "dwarf", "/bin/true", NULL };
	expect_refusal(bad_stacks, 2, "--stacks must be unwind, fp or none");

	const char *missing_arg[] = { cli_gotrace, "run", "-o", NULL };
	expect_refusal(missing_arg, 2, "needs an argument");

	const char *bad_duration[] = { cli_gotrace, "run", "--duration", "2s", "/bin/true", NULL };
	expect_refusal(bad_duration, 2, "--duration must be seconds");

	const char *bad_depth[] = { cli_gotrace, "run", "--stack-depth", "129", "/bin/true", NULL };
	expect_refusal(bad_depth, 2, "--stack-depth must be a number of frames from 1 to 128");

	static const char *const bad_lasts[] = { "2x", "1.5M", "0", "s", "10m" };
	for (size_t i = 0; i < sizeof bad_lasts / sizeof *bad_lasts; i++) {
		const char *bad_last[] = { cli_gotrace, "run", "--last", bad_lasts[i], "/bin/true", NULL };
		expect_refusal(bad_last, 2, "--last must be a duration (30s, 500ms) or a size (64M, 1G)");
	}
}

Test(run, help_and_version)
{
	static const char *const commands[] = { "run", "report", "convert" };
	struct cli_result r;
	for (size_t i = 0; i < 3; i++) {
		const char *argv[] = { cli_gotrace, commands[i], "--help", NULL };
		cli_run(&r, argv, NULL);
		cr_assert_eq(r.status, 0, "%s --help: %d", commands[i], r.status);
		char usage[64];
		snprintf(usage, sizeof usage, "usage: gotrace %s", commands[i]);
		cr_assert_not_null(strstr(r.out, usage), "%s --help printed: %s", commands[i],
				   r.out);
		cli_result_free(&r);
	}
	const char *version[] = { cli_gotrace, "--version", NULL };
	cli_run(&r, version, NULL);
	cr_assert_eq(r.status, 0);
	cr_assert_str_eq(r.out, "gotrace " GT_TEST_VERSION "\n");
	cli_result_free(&r);
}

static size_t count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	size_t n = 0;
	cr_assert_not_null(d, "%s: %s", dir, strerror(errno));
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

Test(run, captures_are_cleaned_up_or_kept_where_asked)
{
	char dir[512], tmp[600], caps[600], trace[600], kept[700], env_tmp[700];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(tmp, sizeof tmp, dir, "tmp");
	cr_assert_eq(mkdir(tmp, 0777), 0);
	cli_path(trace, sizeof trace, dir, "t.trace");

	/* Default: a private temporary directory, gone afterwards. */
	snprintf(env_tmp, sizeof env_tmp, "TMPDIR=%s", tmp);
	const char *env[] = { env_tmp, NULL };
	const char *plain[] = { cli_gotrace, "run", "-o", trace, "--", "/bin/true", NULL };
	cli_run(&r, plain, env);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(count_entries(tmp), 0, "a temporary capture directory was left behind");
	cli_result_free(&r);

	/* --capture-dir: the directory stays, the captures go after conversion... */
	cli_path(caps, sizeof caps, dir, "caps");
	const char *in_dir[] = { cli_gotrace, "run", "--capture-dir", caps, "-o", trace, "--",
				 "/bin/true", NULL };
	cli_run(&r, in_dir, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_eq(count_entries(caps), 0, "captures left in --capture-dir");
	cli_result_free(&r);

	/* ... unless kept. */
	const char *keep_in_dir[] = { cli_gotrace, "run", "--capture-dir", caps, "--keep-capture",
				      "-o", trace, "--", "/bin/true", NULL };
	cli_run(&r, keep_in_dir, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	/* the capture, and the kernel's records where perf is permitted (test_kernel.c) */
	cr_assert_eq(count_entries(caps), 1 + (strstr(r.err, "gotrace: kernel: ") != NULL),
		     "--keep-capture --capture-dir kept %zu files: %s", count_entries(caps), r.err);
	cli_result_free(&r);

	/* --keep-capture alone: beside the trace, where gotrace report looks. */
	const char *keep[] = { cli_gotrace, "run", "--keep-capture", "-o", trace, "--",
			       "/bin/true", NULL };
	cli_run(&r, keep, env);
	cr_assert_eq(r.status, 0, "%s", r.err);
	snprintf(kept, sizeof kept, "%s.gtcap", trace);
	cr_assert(cli_file_exists(kept), "no %s: %s", kept, r.err);
	cr_assert_eq(count_entries(tmp), 0, "a temporary capture directory was left behind");
	cli_result_free(&r);
}

Test(run, the_trace_is_the_program_the_command_execs)
{
	char dir[512], trace[600], before_exec[700];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	/* sh execs workpool: FILE is workpool's trace, FILE.<pid>-0 the shell's image. */
	char script[1024];
	snprintf(script, sizeof script, "exec %s 12 2", cli_workpool);
	run_sh_with("--per-process", dir, script, &r, trace, sizeof trace);
	cr_assert_eq(r.status, 0, "%s", r.err);
	char line[1024];
	snprintf(line, sizeof line, "gotrace: %s: workpool (pid ", trace);
	cr_assert_not_null(strstr(r.err, line), "'%s' not in:\n%s", line, r.err);
	struct gt_events *events = gt_events_parse_119(trace);
	cr_assert_not_null(events);
	/* workpool's main thread and its 2 workers, logger and producer. */
	cr_assert_geq(gt_events_count(events, "GoCreate", GT_ANY, GT_ANY), 4);
	gt_events_free(events);
	const char *pid = strstr(r.err, "workpool (pid ") + strlen("workpool (pid ");
	snprintf(before_exec, sizeof before_exec, "%s.%d-0", trace, atoi(pid));
	cr_assert(cli_file_exists(before_exec), "no trace of the image before exec, %s:\n%s",
		  before_exec, r.err);
	cli_result_free(&r);
}

/* --duration stops recording early: the example runs ~0.8 s, its trace covers 0.2 s. */
Test(run, duration_limits_the_recording, .timeout = 60)
{
	char dir[512], trace[600];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "short.trace");
	/* with the kernel's records, which go on after the recording stops: not drawn */
	const char *argv[] = { cli_gotrace, "run", "--format", "go1.19", "--kernel=on",
			       "--duration", "0.2", "-o", trace, "--", cli_workpool, NULL };
	cli_run(&r, argv, NULL);
	cr_assert_eq(r.status, 0, "%s", r.err);
	cr_assert_not_null(strstr(r.out, "240 jobs done"), "the program was cut short: %s", r.out);
	struct gt_events *events = gt_events_parse_119(trace);
	cr_assert_not_null(events);
	cr_assert_gt(events->n, 10);
	int64_t last = events->ev[events->n - 1].ts_ns;
	cr_assert_lt(last, 400 * 1000 * 1000, "trace runs for %lld ns", (long long)last);
	gt_events_free(events);
	cli_result_free(&r);
}

/* The `next:` hint for --format go1.19 names a Go that works: `go` on PATH, else the full
 * path of an installed Debian Go (1.23 before 1.19), else how to get one. */
Test(run, next_hint_names_a_go_that_runs)
{
	char dir[512], trace[600], fake_go[600], path_env[700], hint[800];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "t.trace");
	const char *argv[] = { cli_gotrace, "run", "--format", "go1.19", "-o", trace, "--",
			       "/bin/true", NULL };

	const char *without_go[] = { "PATH=/usr/bin:/bin", NULL };
	cli_run(&r, argv, without_go);
	cr_assert_eq(r.status, 0, "%s", r.err);
	if (access("/usr/lib/go-1.23/bin/go", X_OK) == 0)
		snprintf(hint, sizeof hint, "next: /usr/lib/go-1.23/bin/go tool trace %s\n", trace);
	else if (access("/usr/lib/go-1.19/bin/go", X_OK) == 0)
		snprintf(hint, sizeof hint, "next: /usr/lib/go-1.19/bin/go tool trace %s\n", trace);
	else
		snprintf(hint, sizeof hint, "next: go tool trace %s   (no Go found: apt install "
			 "golang-1.23-go from bookworm-backports)\n", trace);
	cr_assert_not_null(strstr(r.err, hint), "no '%s' in:\n%s", hint, r.err);
	/* report works on the trace alone; the capture adds what only it holds */
	snprintf(hint, sizeof hint, "gotrace report %s   (no Go needed; --keep-capture adds "
		 "lock names", trace);
	cr_assert_not_null(strstr(r.err, hint), "no '%s' in:\n%s", hint, r.err);
	cli_result_free(&r);

	cli_write_file(fake_go, sizeof fake_go, dir, "go", "#!/bin/sh\n");
	cr_assert_eq(chmod(fake_go, 0755), 0);
	snprintf(path_env, sizeof path_env, "PATH=%s:/usr/bin:/bin", dir);
	const char *with_go[] = { path_env, NULL };
	cli_run(&r, argv, with_go);
	cr_assert_eq(r.status, 0, "%s", r.err);
	snprintf(hint, sizeof hint, "next: go tool trace %s\n", trace);
	cr_assert_not_null(strstr(r.err, hint), "no '%s' in:\n%s", hint, r.err);
	cli_result_free(&r);
}

/* Without TMPDIR, --capture-dir or --keep-capture the captures go to a tmpfs (/dev/shm) when
 * it has room: the program does the same, the trace holds it, nothing is left there; a kept
 * capture still goes beside the trace (rename() cannot leave a tmpfs). */
Test(run, captures_default_to_a_tmpfs_with_room, .timeout = 60)
{
	struct statfs fs;
	if (statfs("/dev/shm", &fs) != 0 || fs.f_type != TMPFS_MAGIC ||
	    (uint64_t)fs.f_bavail * fs.f_bsize < (1ull << 30))
		cr_skip_test("/dev/shm is not a tmpfs with 1 GiB free: gotrace uses /tmp there");
	char dir[512], trace[600], seen[600], kept[700], script[1400], where[PATH_MAX] = "";
	struct cli_result plain, traced;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "t.trace");
	cli_path(seen, sizeof seen, dir, "capture-dir");
	/* where the program's capture went, written aside so that stdout can be compared */
	snprintf(script, sizeof script, "echo ok; printf %%s \"$GOTRACE_CAPTURE_DIR\" > %s", seen);
	const char *env[] = { "TMPDIR", NULL };
	const char *untraced[] = { "/bin/sh", "-c", script, NULL };
	cli_run(&plain, untraced, env);
	const char *run[] = { cli_gotrace, "run", "--format", "go1.19", "-o", trace, "--", "/bin/sh",
			      "-c", script, NULL };
	cli_run(&traced, run, env);
	cr_assert_eq(traced.status, plain.status, "%s", traced.err);
	cr_assert_str_eq(traced.out, plain.out);
	FILE *f = fopen(seen, "re");
	cr_assert_not_null(f);
	cr_assert_not_null(fgets(where, sizeof where, f));
	fclose(f);
	cr_assert_eq(strncmp(where, "/dev/shm/gotrace-", 17), 0, "captures went to %s", where);
	struct stat st;
	cr_assert(stat(where, &st) != 0 && errno == ENOENT, "%s was left behind", where);
	struct gt_events *events = gt_events_parse_119(trace);
	cr_assert_not_null(events, "%s", traced.err);
	cr_assert_geq(gt_events_count(events, "GoCreate", GT_ANY, GT_ANY), 1);
	gt_events_free(events);
	cli_result_free(&traced);

	const char *keep[] = { cli_gotrace, "run", "--keep-capture", "-o", trace, "--", "/bin/sh",
			       "-c", script, NULL };
	cli_run(&traced, keep, env);
	cr_assert_eq(traced.status, plain.status, "%s", traced.err);
	cr_assert_str_eq(traced.out, plain.out);
	snprintf(kept, sizeof kept, "%s.gtcap", trace);
	cr_assert(cli_file_exists(kept), "no %s: %s", kept, traced.err);
	cr_assert_null(strstr(traced.err, "cannot move"), "%s", traced.err);
	cli_result_free(&traced);
	cli_result_free(&plain);
}

/* The go command of the newest Go from 1.22 on under /usr/lib/go-1.NN or ROOT/1.NN (as
 * scripts/lib/go-toolchains installs them), in path; false when none. */
static bool newest_installed_go(const char *root, char *path, size_t size)
{
	bool found = false;
	for (unsigned minor = 22; minor < 100; minor++) {
		char go[PATH_MAX];
		snprintf(go, sizeof go, "/usr/lib/go-1.%u/bin/go", minor);
		if (access(go, X_OK) != 0)
			snprintf(go, sizeof go, "%s/1.%u/usr/lib/go-1.%u/bin/go", root, minor, minor);
		if (access(go, X_OK) == 0 && strlen(go) < size) {
			memcpy(path, go, strlen(go) + 1);
			found = true;
		}
	}
	return found;
}

/* go1.22, Go's own format since 1.22 named by its header, is the default (also with
 * --format go1.22 or GOTRACE_FORMAT); the hint names the newest installed Go that reads it,
 * in /usr/lib or where scripts/setup unpacks the releases Debian lacks ($GT_GO_ROOT,
 * /opt/gotrace-go) — not a `go` on PATH whose VERSION says 1.21 — and says how to reach
 * older readers; a format no reader knows is refused before anything runs. */
Test(run, format_go122_and_its_hint)
{
	char dir[512], trace[600], hint[2 * PATH_MAX], old_go[600], path_env[700], root[600];
	char root_env[700], go[PATH_MAX];
	struct cli_result r;
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "t.trace");
	/* a Go 1.21 on PATH: GOROOT/bin/go beside GOROOT/VERSION */
	cli_path(old_go, sizeof old_go, dir, "bin");
	cr_assert_eq(mkdir(old_go, 0755), 0);
	cli_write_file(old_go, sizeof old_go, dir, "VERSION", "go1.21.13\ntime x\n");
	cli_write_file(old_go, sizeof old_go, dir, "bin/go", "#!/bin/sh\n");
	cr_assert_eq(chmod(old_go, 0755), 0);
	snprintf(path_env, sizeof path_env, "PATH=%s/bin:/usr/bin:/bin", dir);
	/* a Go 1.99 unpacked under a GT_GO_ROOT: newer than any installed */
	cli_path(root, sizeof root, dir, "goroot");
	static const char *const levels[] = { "", "/1.99", "/1.99/usr", "/1.99/usr/lib",
					      "/1.99/usr/lib/go-1.99", "/1.99/usr/lib/go-1.99/bin" };
	for (size_t i = 0; i < sizeof levels / sizeof *levels; i++) {
		snprintf(go, sizeof go, "%s%s", root, levels[i]);
		cr_assert_eq(mkdir(go, 0755), 0, "%s", go);
	}
	cli_write_file(go, sizeof go, dir, "goroot/1.99/usr/lib/go-1.99/bin/go", "#!/bin/sh\n");
	cr_assert_eq(chmod(go, 0755), 0);
	snprintf(root_env, sizeof root_env, "GT_GO_ROOT=%s", root);
	const char *no_go[] = { "PATH=/usr/bin:/bin", "GOTRACE_FORMAT", "GT_GO_ROOT", NULL };
	const char *with_env[] = { "PATH=/usr/bin:/bin", "GOTRACE_FORMAT=go1.22", "GT_GO_ROOT", NULL };
	const char *with_old_go[] = { path_env, "GOTRACE_FORMAT", root_env, NULL };
	const char *flag[] = { cli_gotrace, "run", "--format", "go1.22", "-o", trace, "--",
			       "/bin/echo", "hi", NULL };
	const char *no_flag[] = { cli_gotrace, "run", "-o", trace, "--", "/bin/echo", "hi", NULL };
	const char *const *runs[] = { flag, no_flag, no_flag, flag };
	const char *const *envs[] = { no_go, no_go, with_env, with_old_go };
	for (int k = 0; k < 4; k++) {
		cli_run(&r, runs[k], envs[k]);
		cr_assert_eq(r.status, 0, "%s", r.err);
		cr_assert_str_eq(r.out, "hi\n", "the command's own output, as untraced");
		char header[16] = { 0 };
		FILE *f = fopen(trace, "rb");
		cr_assert_not_null(f);
		cr_assert_eq(fread(header, 1, sizeof header, f), sizeof header);
		fclose(f);
		cr_assert_eq(memcmp(header, "go 1.22 trace\0\0\0", 16), 0, "%.16s", header);
		if (k == 3)
			snprintf(go, sizeof go, "%s/1.99/usr/lib/go-1.99/bin/go", root);
		if (k == 3 || newest_installed_go("/opt/gotrace-go", go, sizeof go))
			snprintf(hint, sizeof hint, "next: %s tool trace %s   (Go 1.22 or later; for "
				 "older readers, Go 1.19-1.21 or gotraceui v0.4, use --format go1.19)\n",
				 go, trace);
		else
			snprintf(hint, sizeof hint, "next: go tool trace %s   (no Go found: apt install "
				 "golang-1.23-go from bookworm-backports; Go 1.22 or later reads this "
				 "format, for older readers use --format go1.19)\n", trace);
		cr_assert_not_null(strstr(r.err, hint), "run %d: no '%s' in:\n%s", k, hint, r.err);
		cli_result_free(&r);
	}
	const char *bad[] = { cli_gotrace, "run", "--format", "go1.18", "-o", trace, "--",
			      "/bin/true", NULL };
	cli_run(&r, bad, no_go);
	cr_assert_eq(r.status, 2);
	cr_assert_not_null(strstr(r.err, "--format must be go1.22"), "%s", r.err);
	cli_result_free(&r);
}

/* The one gotrace-* directory in DIR (a capture directory a run left there) into out. */
static void only_capture_dir(const char *dir, char *out, size_t size)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	cr_assert_not_null(d);
	while ((e = readdir(d)) != NULL)
		if (strncmp(e->d_name, "gotrace-", 8) == 0 && n++ == 0)
			snprintf(out, size, "%s/%s", dir, e->d_name);
	closedir(d);
	cr_assert_eq(n, 1, "%d capture directories in %s", n, dir);
}

/* kill -9 of gotrace run leaves its captures in its directory (/dev/shm by default; TMPDIR
 * here, so that the test sees only its own): the next run and gotrace convert name that
 * directory, how many captures it holds, and how to convert or remove it, in one line; the
 * next run's command behaves as untraced; once removed, nothing is said. */
Test(run, captures_of_a_killed_run_are_named_by_the_next, .timeout = 120)
{
	char dir[512], tmp[600], tmpdir[620], trace[600], left[1000], line[2400];
	cli_tempdir(dir, sizeof dir);
	cli_path(tmp, sizeof tmp, dir, "tmp");
	cr_assert_eq(mkdir(tmp, 0700), 0);
	snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", tmp);
	cli_path(trace, sizeof trace, dir, "killed.trace");
	cr_assert_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0); /* cat is ours once gotrace is gone */
	int in[2];
	cr_assert_eq(pipe(in), 0);
	pid_t gotrace = fork();
	cr_assert_geq(gotrace, 0);
	if (gotrace == 0) {
		int null = open("/dev/null", O_WRONLY);
		dup2(in[0], 0);
		dup2(null, 1);
		dup2(null, 2);
		close(in[1]);
		putenv(tmpdir);
		execl(cli_gotrace, cli_gotrace, "run", "-o", trace, "--", "/bin/cat", (char *)NULL);
		_exit(99);
	}
	close(in[0]);
	pid_t cat = cli_wait_for_child(gotrace, "cat");
	cr_assert_eq(kill(gotrace, SIGKILL), 0);
	int status;
	cr_assert_eq(waitpid(gotrace, &status, 0), gotrace);
	close(in[1]); /* cat reads the end and exits 0, as it does untraced */
	cr_assert_eq(waitpid(cat, &status, 0), cat);
	cr_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0, "cat: %#x", status);
	only_capture_dir(tmp, left, sizeof left);
	snprintf(line, sizeof line, "gotrace: %s holds 1 capture (", left);

	struct cli_result plain, next;
	const char *plain_argv[] = { "/bin/echo", "next", NULL };
	cli_run(&plain, plain_argv, NULL);
	cli_path(trace, sizeof trace, dir, "next.trace");
	const char *next_argv[] = { cli_gotrace, "run", "-o", trace, "--", "/bin/echo", "next", NULL };
	const char *env[] = { tmpdir, NULL };
	cli_run(&next, next_argv, env);
	cr_assert_eq(next.status, plain.status, "%s", next.err);
	cr_assert_str_eq(next.out, plain.out);
	cr_assert_eq(cli_count_of(next.err, line), 1, "no '%s' in: %s", line, next.err);
	snprintf(line, sizeof line, "convert: gotrace convert %s -o FILE; remove: rm -r %s\n",
		 left, left);
	cr_assert_eq(cli_count_of(next.err, line), 1, "no '%s' in: %s", line, next.err);
	cr_assert_eq(cli_count_of(next.err, "killed before it cleaned up"), 1, "%s", next.err);
	cli_result_free(&next);

	/* gotrace convert names it too, and converts it */
	cli_path(trace, sizeof trace, dir, "left.trace");
	const char *convert_argv[] = { cli_gotrace, "convert", left, "-o", trace, NULL };
	cli_run(&next, convert_argv, env);
	cr_assert_eq(next.status, 0, "%s", next.err);
	cr_assert_eq(cli_count_of(next.err, line), 1, "no '%s' in: %s", line, next.err);
	cr_assert(cli_file_exists(trace));
	cli_result_free(&next);

	/* removed as it says: the next run says nothing of it */
	snprintf(line, sizeof line, "rm -r %s", left);
	cr_assert_eq(system(line), 0);
	cli_path(trace, sizeof trace, dir, "after.trace");
	cli_run(&next, next_argv, env);
	cr_assert_eq(next.status, plain.status, "%s", next.err);
	cr_assert_eq(cli_count_of(next.err, "killed before it cleaned up"), 0, "%s", next.err);
	cli_result_free(&next);
	cli_result_free(&plain);
}
