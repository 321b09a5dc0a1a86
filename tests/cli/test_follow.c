/* gotrace run follows the command's whole process tree (issue 12): it waits for a daemon
 * that double-forked away, Ctrl-C then writes the trace and leaves the daemon running
 * untraced, a closed stderr does not kill it, and --no-follow traces a wrapper's exec'd
 * program but not its children.  Each traced run is compared with the same run untraced;
 * gt-daemon (gt_daemon.c) waits only on pipes the test holds. */
#include "capture_reader.h"
#include "cli_support.h"
#include "oracle.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

static const char daemon_program[] = GT_TEST_DAEMON;

/* ---- helpers ------------------------------------------------------------------------------ */

struct proc_io {
	pid_t pid;
	int out, err;     /* the test's ends of the child's stdout and stderr (err: -1 = shared) */
};

/* Starts argv with stdout and stderr on pipes (one pipe for both when MERGED), TMPDIR set,
 * the descriptors in KEEP inherited, SIGPIPE ignored when IGNORE_PIPE. */
static void start(struct proc_io *p, const char *const *argv, const char *tmpdir, bool merged,
		  bool ignore_pipe, const int *keep, size_t n_keep)
{
	int out[2], err[2];
	cr_assert_eq(pipe2(out, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(err, O_CLOEXEC), 0);
	p->pid = fork();
	cr_assert_geq(p->pid, 0);
	if (p->pid == 0) {
		dup2(out[1], 1);
		dup2(merged ? out[1] : err[1], 2);
		for (size_t i = 0; i < n_keep; i++)
			fcntl(keep[i], F_SETFD, 0);
		if (ignore_pipe)
			signal(SIGPIPE, SIG_IGN);
		setenv("TMPDIR", tmpdir, 1);
		execv(argv[0], (char *const *)argv);
		_exit(99);
	}
	close(out[1]);
	close(err[1]);
	p->out = out[0];
	if (merged) {
		close(err[0]);
		p->err = -1;
	} else {
		p->err = err[0];
	}
}

/* One line from fd (blocking), without its '\n'; "" at end of file. */
static char *read_line(int fd, char *buf, size_t size)
{
	size_t n = 0;
	char c;
	while (n + 1 < size && read(fd, &c, 1) == 1 && c != '\n')
		buf[n++] = c;
	buf[n] = '\0';
	return buf;
}

/* Everything until end of file, malloc'd. */
static char *read_all(int fd)
{
	size_t n = 0, cap = 4096;
	char *s = malloc(cap);
	ssize_t got;
	while ((got = read(fd, s + n, cap - n - 1)) > 0) {
		n += (size_t)got;
		if (cap - n < 2)
			s = realloc(s, cap *= 2);
	}
	s[n] = '\0';
	return s;
}

/* Reads stderr lines into log until one contains needle; false at end of file. */
static bool read_until(int fd, const char *needle, char *log, size_t size)
{
	char line[4096];
	for (;;) {
		read_line(fd, line, sizeof line);
		if (line[0] == '\0')
			return false;
		strncat(log, line, size - strlen(log) - 2);
		strcat(log, "\n");
		if (strstr(line, needle) != NULL)
			return true;
	}
}

static int wait_status(pid_t pid)
{
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static void make_dir(char *out, size_t size, const char *dir, const char *name)
{
	cli_path(out, size, dir, name);
	cr_assert_eq(mkdir(out, 0700), 0, "%s: %s", out, strerror(errno));
}

/* Entries of dir (not . and ..) */
static size_t count_entries(const char *dir)
{
	DIR *d = opendir(dir);
	cr_assert_not_null(d, "%s", dir);
	struct dirent *e;
	size_t n = 0;
	while ((e = readdir(d)) != NULL)
		n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
	closedir(d);
	return n;
}

/* Goroutines created in a trace, as Go 1.19 reads it. */
static size_t goroutines_created(const char *trace)
{
	struct gt_events *ev = gt_events_parse_119(trace);
	cr_assert_not_null(ev, "Go 1.19 rejects %s", trace);
	size_t n = gt_events_count(ev, "GoCreate", GT_ANY, GT_ANY);
	gt_events_free(ev);
	return n;
}

/* ---- a double-forking daemon ---------------------------------------------------------------- */

struct daemon_run {
	struct proc_io io;
	int ctrl, ready;   /* the test's ends: commands to the daemon, its answers */
	pid_t daemon;
	char log[16384];   /* gotrace's stderr read so far */
};

static void start_daemon(struct daemon_run *d, bool traced, const char *dir, const char *tmpdir,
			 bool keep_capture)
{
	int ctrl[2], ready[2];
	char trace[600], cfd[16], rfd[16];
	cr_assert_eq(pipe2(ctrl, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(ready, O_CLOEXEC), 0);
	snprintf(cfd, sizeof cfd, "%d", ctrl[0]);
	snprintf(rfd, sizeof rfd, "%d", ready[1]);
	cli_path(trace, sizeof trace, dir, "t.trace");
	/* per process: the daemon's trace is looked at alone */
	/* Go 1.19's events: goroutines_created() */
	const char *traced_argv[] = { cli_gotrace, "run", "--format=go1.19", "--per-process", "-o",
				      trace, "--keep-capture", "--", daemon_program, "daemon", cfd,
				      rfd, NULL };
	if (!keep_capture)
		traced_argv[6] = "--stacks=unwind"; /* the default: the place is taken */
	const char *plain_argv[] = { daemon_program, "daemon", cfd, rfd, NULL };
	int keep[] = { ctrl[0], ready[1] };
	memset(d, 0, sizeof *d);
	start(&d->io, traced ? traced_argv : plain_argv, tmpdir, false, false, keep, 2);
	close(ctrl[0]);
	close(ready[1]);
	d->ctrl = ctrl[1];
	d->ready = ready[0];
	char line[64];
	read_line(d->ready, line, sizeof line);
	cr_assert(sscanf(line, "ready %d", &d->daemon) == 1, "daemon said '%s'", line);
}

static void ping(struct daemon_run *d)
{
	char line[64];
	cr_assert_eq(write(d->ctrl, "p", 1), 1);
	cr_assert_str_eq(read_line(d->ready, line, sizeof line), "pong");
}

/* The command exited; gotrace says once that it waits for the daemon, and does. */
static void expect_waiting(struct daemon_run *d)
{
	char pid[32];
	cr_assert(read_until(d->io.err, "the command exited; waiting for the traced processes",
			     d->log, sizeof d->log),
		  "gotrace did not say it waits: %s", d->log);
	snprintf(pid, sizeof pid, " %d (gt-daemon)", (int)d->daemon);
	cr_assert_not_null(strstr(d->log, pid), "not waiting for the daemon %s: %s", pid, d->log);
	cr_assert_eq(waitpid(d->io.pid, NULL, WNOHANG), 0, "gotrace ended: %s", d->log);
}

/* The daemon untraced, pinged n times once its parent exited, then told to quit: its
 * stdout (and stderr, which must be empty). */
static char *plain_daemon(const char *dir, int n)
{
	char tmp[600];
	struct daemon_run plain;
	make_dir(tmp, sizeof tmp, dir, "plain-tmp");
	start_daemon(&plain, false, dir, tmp, false);
	cr_assert_eq(wait_status(plain.io.pid), 0);
	for (int i = 0; i < n; i++)
		ping(&plain);
	cr_assert_eq(write(plain.ctrl, "q", 1), 1);
	char *out = read_all(plain.io.out), *err = read_all(plain.io.err);
	cr_assert_str_eq(err, "");
	free(err);
	close(plain.ctrl);
	close(plain.ready);
	return out;
}

/* A fresh DIR (512 bytes) with TMP (600 bytes) in it for gotrace's captures, and gt-daemon
 * under gotrace run there: its parent gone, gotrace waiting for it, pinged once. */
static void traced_daemon(struct daemon_run *d, char *dir, char *tmp, bool keep_capture)
{
	cli_tempdir(dir, 512);
	make_dir(tmp, 600, dir, "tmp");
	start_daemon(d, true, dir, tmp, keep_capture);
	expect_waiting(d);
	ping(d);
}

Test(follow, waits_for_a_double_forking_daemon, .timeout = 120)
{
	char dir[512], tmp[600], trace[700];
	struct daemon_run traced;
	traced_daemon(&traced, dir, tmp, false);
	char *plain_out = plain_daemon(dir, 1);
	cr_assert_eq(waitpid(traced.io.pid, NULL, WNOHANG), 0, "gotrace did not wait");
	cr_assert_eq(write(traced.ctrl, "q", 1), 1);
	int status = wait_status(traced.io.pid);
	char *rest = read_all(traced.io.err);
	char *out = read_all(traced.io.out);
	cr_assert_eq(status, 0, "%s%s", traced.log, rest);
	cr_assert_str_eq(out, plain_out);
	cr_assert_str_eq(out, "parent: done\ndaemon: done, 1 pings, /bin/true status 0\n");

	/* the daemon's trace holds its threads: two workers and the 'p' thread */
	snprintf(trace, sizeof trace, "%s/t.trace.%d", dir, (int)traced.daemon);
	cr_assert(cli_file_exists(trace), "no trace of the daemon: %s%s", traced.log, rest);
	cr_assert_geq(goroutines_created(trace), 3u);
	cr_assert_eq(count_entries(tmp), 0, "captures left behind");
	free(plain_out);
	free(out);
	free(rest);
}

Test(follow, sigint_writes_the_trace_and_leaves_the_daemon_running, .timeout = 120)
{
	char dir[512], tmp[600], trace[700], expected[128];
	struct daemon_run traced;
	traced_daemon(&traced, dir, tmp, true);
	char *plain_out = plain_daemon(dir, 2);
	cr_assert_eq(kill(traced.io.pid, SIGINT), 0);
	cr_assert(read_until(traced.io.err, "recording stopped in", traced.log, sizeof traced.log),
		  "%s", traced.log);
	snprintf(expected, sizeof expected, "recording stopped in pid %d (gt-daemon), which keeps "
		 "running untraced", (int)traced.daemon);
	cr_assert_not_null(strstr(traced.log, expected), "%s", traced.log);
	cr_assert_eq(wait_status(traced.io.pid), 0, "%s", traced.log);

	/* the trace was written and holds the daemon's threads up to the stop */
	snprintf(trace, sizeof trace, "%s/t.trace.%d", dir, (int)traced.daemon);
	cr_assert(cli_file_exists(trace), "no trace of the daemon: %s", traced.log);
	cr_assert_geq(goroutines_created(trace), 3u);
	cr_assert_eq(count_entries(tmp), 0, "captures left behind");

	/* the daemon keeps working untraced: threads, fork and exec, and not a word on stderr;
	 * its kept capture, still mapped by it, gets nothing more */
	cr_assert_eq(kill(traced.daemon, 0), 0, "the daemon is gone");
	ping(&traced);
	char kept[800];
	struct capture cap;
	snprintf(kept, sizeof kept, "%s.gtcap", trace);
	cr_assert_eq(capture_open(&cap, kept), 0, "%s: %s", kept, traced.log);
	cr_assert(cap.hdr->flags & GT_FILE_DETACHED);
	cr_assert_eq(capture_count(&cap, GT_THREAD_NEW, -1), 3u, "recorded after the stop");
	cr_assert_eq(capture_count(&cap, GT_PROCESS, GT_PROC_FORK), 1u, "recorded after the stop");
	cr_assert_eq(capture_count(&cap, GT_CAPTURE_END, -1), 0u, "end records after the stop");
	capture_close(&cap);
	cr_assert_eq(write(traced.ctrl, "q", 1), 1);
	char *out = read_all(traced.io.out);
	char *rest = read_all(traced.io.err);
	cr_assert_str_eq(out, plain_out);
	cr_assert_str_eq(out, "parent: done\ndaemon: done, 2 pings, /bin/true status 0\n");
	/* everything after gotrace's lines is the daemon's: nothing */
	char *save = NULL;
	for (char *line = strtok_r(rest, "\n", &save); line != NULL;
	     line = strtok_r(NULL, "\n", &save))
		cr_assert_eq(strncmp(line, "gotrace", 7), 0, "the daemon noticed: %s", line);
	cr_assert_eq(count_entries(tmp), 0, "the detached daemon wrote a capture");
	free(plain_out);
	free(out);
	free(rest);
}

/* ---- a closed output ------------------------------------------------------------------------- */

/* `gotrace run ... 2>&1 | head -1`: gotrace's messages meet a closed pipe after the first
 * line; it writes every trace anyway and leaves no capture. */
static int head_one(const char *const *argv, const char *tmpdir, int go_fd, char *first,
		    size_t size)
{
	struct proc_io p;
	int keep[] = { go_fd };
	start(&p, argv, tmpdir, true, false, keep, 1);
	read_line(p.out, first, size);
	close(p.out);
	return p.pid;
}

Test(follow, a_closed_output_does_not_kill_gotrace, .timeout = 120)
{
	char dir[512], tmp[600], trace[700], first[64], script[256];
	cli_tempdir(dir, sizeof dir);
	make_dir(tmp, sizeof tmp, dir, "tmp");
	cli_path(trace, sizeof trace, dir, "t.trace");
	int status[2];
	for (int traced = 0; traced < 2; traced++) {
		int go[2];
		cr_assert_eq(pipe2(go, O_CLOEXEC), 0);
		/* the shell goes on once the reader is gone: only gotrace writes after that */
		snprintf(script, sizeof script, "echo first; read x <&%d; /bin/true; /bin/true; "
			 "/bin/true", go[0]);
		const char *plain_argv[] = { "/bin/sh", "-c", script, NULL };
		const char *traced_argv[] = { cli_gotrace, "run", "--per-process", "-o", trace,
					      "--", "/bin/sh", "-c", script, NULL };
		pid_t pid = head_one(traced ? traced_argv : plain_argv, tmp, go[0], first,
				     sizeof first);
		close(go[0]);
		cr_assert_str_eq(first, "first");
		cr_assert_eq(write(go[1], "go\n", 3), 3);
		close(go[1]);
		status[traced] = wait_status(pid);
	}
	cr_assert_eq(status[0], 0);
	cr_assert_eq(status[1], status[0], "gotrace's status %d (141: killed by SIGPIPE)",
		     status[1]);
	cr_assert(cli_file_exists(trace));
	size_t children = 0;
	DIR *d = opendir(dir);
	struct dirent *e;
	while ((e = readdir(d)) != NULL)
		children += strncmp(e->d_name, "t.trace.", 8) == 0;
	closedir(d);
	cr_assert_eq(children, 3, "traces of the three /bin/true missing");
	cr_assert_eq(count_entries(tmp), 0, "captures left behind");
}

/* The command gets SIGPIPE as gotrace got it (default, or ignored), as it would untraced. */
Test(follow, the_command_keeps_its_sigpipe_disposition, .timeout = 60)
{
	char dir[512], tmp[600], trace[700];
	cli_tempdir(dir, sizeof dir);
	make_dir(tmp, sizeof tmp, dir, "tmp");
	cli_path(trace, sizeof trace, dir, "t.trace");
	for (int ignore = 0; ignore < 2; ignore++) {
		char *out[2];
		for (int traced = 0; traced < 2; traced++) {
			const char *plain_argv[] = { "/bin/grep", "SigIgn", "/proc/self/status",
						     NULL };
			const char *traced_argv[] = { cli_gotrace, "run", "-o", trace, "--",
						      "/bin/grep", "SigIgn", "/proc/self/status",
						      NULL };
			struct proc_io p;
			start(&p, traced ? traced_argv : plain_argv, tmp, false, ignore, NULL, 0);
			out[traced] = read_all(p.out);
			char *err = read_all(p.err);
			cr_assert_eq(wait_status(p.pid), 0, "%s", err);
			free(err);
		}
		cr_assert_str_eq(out[1], out[0]);
		/* SIGPIPE is signal 13: bit 12 of the mask */
		unsigned long long mask = strtoull(strchr(out[0], ':') + 1, NULL, 16);
		cr_assert_eq((mask >> (SIGPIPE - 1)) & 1, (unsigned long long)ignore, "%s", out[0]);
		free(out[0]);
		free(out[1]);
	}
}

/* ---- --no-follow through a wrapper ----------------------------------------------------------- */

Test(follow, no_follow_traces_the_program_a_wrapper_execs_not_its_children, .timeout = 120)
{
	char dir[512], tmp[600], trace[700], wrapper[700], text[1024];
	cli_tempdir(dir, sizeof dir);
	make_dir(tmp, sizeof tmp, dir, "tmp");
	cli_path(trace, sizeof trace, dir, "t.trace");
	snprintf(text, sizeof text, "#!/bin/sh\nexec %s fork\n", daemon_program);
	cli_write_file(wrapper, sizeof wrapper, dir, "wrapper", text);
	cr_assert_eq(chmod(wrapper, 0755), 0);

	struct cli_result plain, traced;
	const char *plain_argv[] = { wrapper, NULL };
	char caps[700];
	cli_path(caps, sizeof caps, dir, "captures");
	const char *traced_argv[] = { cli_gotrace, "run", "--format=go1.19", "--no-follow",
				      "--per-process", "--keep-capture", "--capture-dir", caps,
				      "-o", trace, "--", wrapper, NULL };
	cli_run(&plain, plain_argv, NULL);
	cli_run(&traced, traced_argv, NULL);
	cr_assert_eq(traced.status, plain.status, "%s", traced.err);
	cr_assert_eq(plain.status, 0);
	cr_assert_str_eq(traced.out, plain.out);
	cr_assert_str_eq(plain.out, "child: 3 pings\nparent: 2 pings, child status 0, popen\n");

	/* the trace is the program the wrapper exec'd, with its two threads */
	cr_assert_not_null(strstr(traced.err, "t.trace: gt-daemon (pid"), "%s", traced.err);
	cr_assert_geq(goroutines_created(trace), 2u);
	/* beside it only the wrapper's shell image (t.trace.PID-0), no child */
	size_t others = 0, shell = 0;
	DIR *d = opendir(dir);
	struct dirent *e;
	while ((e = readdir(d)) != NULL) {
		if (strncmp(e->d_name, "t.trace.", 8) != 0)
			continue;
		others++;
		shell += strstr(e->d_name, "-0") != NULL;
	}
	closedir(d);
	cr_assert_eq(shell, 1, "the wrapper's image is missing: %s", traced.err);
	cr_assert_eq(others, 1, "a child was traced: %s", traced.err);
	/* and the children (fork, popen) recorded nothing: the two images' captures only (and
	 * the run's kernel records where perf is permitted) */
	cr_assert_eq(count_entries(caps), 2 + (strstr(traced.err, "gotrace: kernel: ") != NULL),
		     "a child wrote a capture: %s", traced.err);
	cli_result_free(&plain);
	cli_result_free(&traced);
}
