/* Stopping a recording (issue 27, item 5).  Each command runs as a shell's job would: the
 * leader of its own process group, SIGINT sent either to the group (`kill -INT %1`, Ctrl-C)
 * or to gotrace alone.  What sigint_counter saw is compared with an untraced run's. */
#include <criterion/criterion.h>

#include <errno.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli_support.h"
#include "oracle.h"

struct job {
	pid_t pid;         /* the leader of its process group: gotrace, or the command */
	int in, out, err;  /* its stdin (written), stdout and stderr (read) */
	char log[8192];    /* what was read of stderr */
	size_t log_len;
};

static void start(struct job *j, const char *const *argv)
{
	int in[2], out[2], err[2];
	cr_assert(pipe(in) == 0 && pipe(out) == 0 && pipe(err) == 0);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		setpgid(0, 0);
		cli_default_signals();
		dup2(in[0], 0);
		dup2(out[1], 1);
		dup2(err[1], 2);
		for (int fd = 3; fd < 64; fd++)
			close(fd);
		execv(argv[0], (char *const *)argv);
		_exit(99);
	}
	setpgid(pid, pid);  /* whichever of the two runs first */
	close(in[0]);
	close(out[1]);
	close(err[1]);
	*j = (struct job){ .pid = pid, .in = in[1], .out = out[0], .err = err[0] };
}

/* Reads fd into buf (from *len) until it holds needle; fails the test after 60 s or at
 * EOF, with what was read. */
static void read_until(int fd, char *buf, size_t size, size_t *len, const char *needle)
{
	buf[*len] = '\0';
	while (strstr(buf, needle) == NULL) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int ready = poll(&p, 1, 60 * 1000);
		cr_assert_gt(ready, 0, "no \"%s\" within 60 s; read: %s", needle, buf);
		ssize_t n = read(fd, buf + *len, size - 1 - *len);
		cr_assert_gt(n, 0, "no \"%s\" before the end; read: %s", needle, buf);
		*len += (size_t)n;
		buf[*len] = '\0';
	}
}

static void err_until(struct job *j, const char *needle)
{
	read_until(j->err, j->log, sizeof j->log, &j->log_len, needle);
}

/* stdin closed (sigint_counter ends), then the rest of stdout. */
static char *finish_output(struct job *j, const char *so_far)
{
	close(j->in);
	size_t cap = 4096, len = strlen(so_far);
	char *out = malloc(cap);
	cr_assert_not_null(out);
	strcpy(out, so_far);
	ssize_t n;
	while ((n = read(j->out, out + len, cap - 1 - len)) > 0)
		len += (size_t)n;
	out[len] = '\0';
	close(j->out);
	return out;
}

static int wait_status(pid_t pid)
{
	int status;
	cr_assert_eq(waitpid(pid, &status, 0), pid);
	cr_assert(WIFEXITED(status), "wait status %#x", status);
	return WEXITSTATUS(status);
}

enum way { TO_GROUP, TO_GOTRACE };

/* Sends SIGINT to j's group, or to j alone. */
static void sigint(const struct job *j, enum way way)
{
	cr_assert_eq(kill(way == TO_GROUP ? -j->pid : j->pid, SIGINT), 0);
}

/* sigint_counter MODE untraced, sent `sigints` SIGINTs to its group: its whole stdout. */
static char *untraced(const char *mode, int sigints)
{
	const char *argv[] = { GT_TEST_SIGINT_COUNTER, mode, NULL };
	struct job j;
	char out[256] = "";
	size_t len = 0;
	start(&j, argv);
	read_until(j.out, out, sizeof out, &len, "ready\n");
	for (int i = 1; i <= sigints; i++) {
		char handled[32];
		sigint(&j, TO_GROUP);
		snprintf(handled, sizeof handled, "sigint %d\n", i);
		if (strcmp(mode, "count") == 0)
			read_until(j.out, out, sizeof out, &len, handled);
	}
	char *all = finish_output(&j, out);
	cr_assert_eq(wait_status(j.pid), 0);
	close(j.err);
	return all;
}

static void start_traced(struct job *j, const char *mode, const char *trace, char *out,
			 size_t size, size_t *len)
{
	const char *argv[] = { cli_gotrace, "run", "--format", "go1.19", "-o", trace, "--",
			       GT_TEST_SIGINT_COUNTER, mode, NULL };
	start(j, argv);
	read_until(j->out, out, size, len, "ready\n");
}

Test(stop, a_sigint_reaches_the_command_once_however_sent, .timeout = 120)
{
	char dir[512], trace[600];
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "t.trace");
	char *plain = untraced("count", 1);
	cr_assert_str_eq(plain, "ready\nsigint 1\nsigints: 1\n");
	for (enum way way = TO_GROUP; way <= TO_GOTRACE; way++) {
		struct job j;
		char out[256] = "";
		size_t len = 0;
		start_traced(&j, "count", trace, out, sizeof out, &len);
		sigint(&j, way);
		/* said once gotrace forwarded it, or decided the group's reached the command */
		err_until(&j, "SIGINT: another within");
		read_until(j.out, out, sizeof out, &len, "sigint 1\n");
		char *traced = finish_output(&j, out);
		cr_assert_eq(wait_status(j.pid), 0, "%s", j.log);
		cr_assert_str_eq(traced, plain, "SIGINT sent to %s: %s",
				 way == TO_GROUP ? "the process group" : "gotrace", j.log);
		free(traced);
		close(j.err);
	}
	free(plain);
}

/* Two SIGINTs sent WAY to a traced sigint_counter MODE: the second stops the recording,
 * gotrace writes the trace and exits 0, the command runs on; its whole stdout. */
static char *stopped_by_a_second_sigint(const char *mode, enum way way, const char *trace)
{
	struct job j;
	char out[256] = "", expected[160];
	size_t len = 0;
	start_traced(&j, mode, trace, out, sizeof out, &len);
	pid_t command = cli_wait_for_child(j.pid, "sigint_counter");
	bool counts = strcmp(mode, "count") == 0;
	sigint(&j, way);
	err_until(&j, "SIGINT: another within");
	if (counts)
		read_until(j.out, out, sizeof out, &len, "sigint 1\n");
	sigint(&j, way);
	snprintf(expected, sizeof expected, "recording stopped in pid %d (sigint_counter), which "
		 "keeps running untraced", (int)command);
	err_until(&j, expected);
	if (counts && way == TO_GROUP)
		read_until(j.out, out, sizeof out, &len, "sigint 2\n");
	cr_assert_eq(wait_status(j.pid), 0, "%s", j.log);
	/* gotrace is done, the command still runs */
	cr_assert_eq(kill(command, 0), 0, "the command is gone: %s", j.log);
	struct gt_events *events = gt_events_parse_119(trace);
	cr_assert_not_null(events, "Go 1.19 rejects the trace: %s", j.log);
	gt_events_free(events);
	close(j.err);
	return finish_output(&j, out);
}

Test(stop, a_second_sigint_stops_the_recording_and_the_command_runs_on, .timeout = 120)
{
	char dir[512], trace[600];
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "t.trace");
	/* sent to the group, both reach the command as untraced; the second sent to gotrace
	 * alone is gotrace's */
	char *plain[] = { untraced("count", 2), untraced("count", 1) };
	for (enum way way = TO_GROUP; way <= TO_GOTRACE; way++) {
		char *traced = stopped_by_a_second_sigint("count", way, trace);
		cr_assert_str_eq(traced, plain[way]);
		free(traced);
		free(plain[way]);
	}
}

Test(stop, a_command_that_ignores_sigint_is_stopped_from_recording, .timeout = 120)
{
	char dir[512], trace[600];
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "t.trace");
	char *plain = untraced("ignore", 2);
	cr_assert_str_eq(plain, "ready\nsigints ignored\n");
	for (enum way way = TO_GROUP; way <= TO_GOTRACE; way++) {
		char *traced = stopped_by_a_second_sigint("ignore", way, trace);
		cr_assert_str_eq(traced, plain);
		free(traced);
	}
	free(plain);
}

Test(stop, sigterm_stops_a_long_conversion, .timeout = 120)
{
	char dir[512], trace[600], tmp[600];
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "t.trace");
	cli_path(tmp, sizeof tmp, dir, "captures");
	/* 30,000 threads: about 200,000 events, far more than are converted before the
	 * conversion first looks for a signal */
	const char *argv[] = { cli_gotrace, "run", "--format", "go1.19", "--capture-dir", tmp, "-o",
			       trace, "--", GT_TEST_STRESS, "churn", "30000", NULL };
	struct job j;
	start(&j, argv);
	err_until(&j, "exited with status 0 after");
	cr_assert_eq(kill(j.pid, SIGTERM), 0);
	cr_assert_eq(wait_status(j.pid), 1, "%s", j.log);
	ssize_t n;
	while ((n = read(j.err, j.log + j.log_len, sizeof j.log - 1 - j.log_len)) > 0)
		j.log_len += (size_t)n;
	j.log[j.log_len] = '\0';
	char expected[700];
	snprintf(expected, sizeof expected, "conversion of %s stopped by SIGTERM at ", trace);
	cr_assert_not_null(strstr(j.log, expected), "%s", j.log);
	cr_assert_gt(cli_count_of(j.log, "kept in"), 0, "no capture kept to convert: %s", j.log);
	/* what was converted is a trace */
	struct gt_events *events = gt_events_parse_119(trace);
	cr_assert_not_null(events, "Go 1.19 rejects the stopped conversion's trace: %s", j.log);
	gt_events_free(events);
	close(j.in);
	close(j.out);
	close(j.err);
}
