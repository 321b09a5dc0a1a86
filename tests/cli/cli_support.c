/* cli_support: see cli_support.h. */
#include "cli_support.h"

#include <criterion/criterion.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char cli_gotrace[] = GT_TEST_GOTRACE;
const char cli_workpool[] = GT_TEST_WORKPOOL;
const char cli_static_program[] = GT_TEST_STATIC_PROGRAM;
const char cli_workpool_source[] = GT_TEST_WORKPOOL_SOURCE;

struct sink {
	int fd;
	char *buf;
	size_t len, cap;
};

static void drain(struct sink *s)
{
	if (s->cap - s->len < 4096) {
		s->cap = s->cap * 2 + 8192;
		s->buf = realloc(s->buf, s->cap);
		cr_assert_not_null(s->buf);
	}
	ssize_t n = read(s->fd, s->buf + s->len, s->cap - s->len - 1);
	if (n > 0) {
		s->len += (size_t)n;
	} else if (n == 0 || errno != EINTR) {
		close(s->fd);
		s->fd = -1;
	}
}

void cli_run(struct cli_result *r, const char *const *argv, const char *const *env)
{
	cli_run_until(r, argv, env, NULL, 0, 0);
}

/* Whether the stream in s holds needle. */
static bool holds(const struct sink *s, const char *needle)
{
	return s->buf != NULL && memmem(s->buf, s->len, needle, strlen(needle)) != NULL;
}

void cli_run_until(struct cli_result *r, const char *const *argv, const char *const *env,
		   const char *needle, double watch_s, int sig)
{
	int out_pipe[2], err_pipe[2];
	cr_assert_eq(pipe2(out_pipe, O_CLOEXEC), 0);
	cr_assert_eq(pipe2(err_pipe, O_CLOEXEC), 0);
	fflush(NULL);
	pid_t pid = fork();
	cr_assert_geq(pid, 0);
	if (pid == 0) {
		dup2(out_pipe[1], 1);
		dup2(err_pipe[1], 2);
		int devnull = open("/dev/null", O_RDONLY);
		dup2(devnull, 0);
		for (size_t i = 0; env != NULL && env[i] != NULL; i++) {
			if (strchr(env[i], '=') != NULL)
				putenv((char *)env[i]);
			else
				unsetenv(env[i]);
		}
		execv(argv[0], (char *const *)argv);
		fprintf(stderr, "cannot execute %s: %s\n", argv[0], strerror(errno));
		_exit(99);
	}
	close(out_pipe[1]);
	close(err_pipe[1]);
	struct sink sinks[2] = { { .fd = out_pipe[0] }, { .fd = err_pipe[0] } };
	struct timespec seen, now;
	bool watching = false, signalled = needle == NULL;
	while (sinks[0].fd >= 0 || sinks[1].fd >= 0) {
		struct pollfd p[2] = { { .fd = sinks[0].fd, .events = POLLIN },
				       { .fd = sinks[1].fd, .events = POLLIN } };
		int wait_ms = -1;
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (!signalled && watching) {
			double left = watch_s - (double)(now.tv_sec - seen.tv_sec) -
				      (double)(now.tv_nsec - seen.tv_nsec) / 1e9;
			if (left <= 0) {
				kill(pid, sig);
				signalled = true;
			} else {
				wait_ms = (int)(left * 1e3) + 1;
			}
		}
		if (poll(p, 2, wait_ms) < 0)
			continue;
		for (int i = 0; i < 2; i++)
			if (sinks[i].fd >= 0 && (p[i].revents & (POLLIN | POLLHUP | POLLERR)))
				drain(&sinks[i]);
		if (!signalled && !watching && (holds(&sinks[0], needle) || holds(&sinks[1], needle))) {
			clock_gettime(CLOCK_MONOTONIC, &seen);
			watching = true;
		}
	}
	int status;
	while (waitpid(pid, &status, 0) < 0)
		cr_assert_eq(errno, EINTR);
	r->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	for (int i = 0; i < 2; i++) {
		if (sinks[i].buf == NULL)
			sinks[i].buf = calloc(1, 1);
		sinks[i].buf[sinks[i].len] = '\0';
	}
	r->out = sinks[0].buf;
	r->err = sinks[1].buf;
}

void cli_result_free(struct cli_result *r)
{
	free(r->out);
	free(r->err);
}

size_t cli_count_lines(const char *text)
{
	size_t n = 0;
	for (const char *p = text; *p; p++)
		n += *p == '\n';
	if (*text && text[strlen(text) - 1] != '\n')
		n++;
	return n;
}

/* The test's directories go when its process ends (one test per process): ~540 were left
 * in the build tree by a few runs of the suite. */
static char *tempdirs[16];
static size_t n_tempdirs;

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	remove(path);
	return 0;
}

static void remove_tempdirs(void)
{
	for (size_t i = 0; i < n_tempdirs; i++)
		nftw(tempdirs[i], remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

void cli_tempdir(char *out, size_t size)
{
	mkdir(GT_TEST_TMPDIR, 0777);
	snprintf(out, size, "%s/run-XXXXXX", GT_TEST_TMPDIR);
	cr_assert_not_null(mkdtemp(out), "mkdtemp %s: %s", out, strerror(errno));
	if (n_tempdirs == 0)
		atexit(remove_tempdirs);
	if (n_tempdirs < sizeof tempdirs / sizeof *tempdirs)
		tempdirs[n_tempdirs++] = strdup(out);
}

char *cli_path(char *out, size_t size, const char *dir, const char *name)
{
	snprintf(out, size, "%s/%s", dir, name);
	return out;
}

char *cli_read_file(const char *path)
{
	FILE *f = fopen(path, "r");
	if (!f)
		return NULL;
	char *text = NULL;
	size_t size = 0;
	FILE *m = open_memstream(&text, &size);
	char buf[4096];
	size_t n;
	while (m && (n = fread(buf, 1, sizeof buf, f)) > 0)
		fwrite(buf, 1, n, m);
	fclose(f);
	if (m)
		fclose(m);
	return text;
}

bool cli_file_exists(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0;
}

void cli_write_file(char *out, size_t size, const char *dir, const char *name, const char *text)
{
	cli_path(out, size, dir, name);
	FILE *f = fopen(out, "w");
	cr_assert_not_null(f, "%s: %s", out, strerror(errno));
	fputs(text, f);
	fclose(f);
	chmod(out, 0644);
}

static bool read_line(const char *path, char *buf, size_t size)
{
	FILE *f = fopen(path, "r");
	bool ok = f != NULL && fgets(buf, (int)size, f) != NULL;
	if (f != NULL)
		fclose(f);
	return ok;
}

void cli_default_signals(void)
{
	sigset_t none;
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	for (int sig = 1; sig < NSIG; sig++)
		if (sig != SIGKILL && sig != SIGSTOP)
			signal(sig, SIG_DFL);
}

pid_t cli_wait_for_child(pid_t parent, const char *comm)
{
	char path[64], line[256], child_comm[64];
	for (int tries = 0; tries < 2000; tries++) {
		snprintf(path, sizeof path, "/proc/%d/task/%d/children", (int)parent, (int)parent);
		/* each child: gotrace has its signal sentinel beside the command */
		char *next = read_line(path, line, sizeof line) ? line : NULL;
		long child;
		while (next != NULL && (child = strtol(next, &next, 10)) > 0) {
			snprintf(path, sizeof path, "/proc/%ld/comm", child);
			if (read_line(path, child_comm, sizeof child_comm) &&
			    strncmp(child_comm, comm, strlen(comm)) == 0 &&
			    child_comm[strlen(comm)] == '\n')
				return (pid_t)child;
		}
		usleep(10 * 1000);
	}
	cr_assert_fail("pid %d never ran %s", (int)parent, comm);
	return -1;
}

void cli_trace_workpool(const char *dir, unsigned jobs, char *trace, size_t size)
{
	char jobs_text[16];
	snprintf(jobs_text, sizeof jobs_text, "%u", jobs);
	cli_path(trace, size, dir, "workpool.trace");
	const char *argv[] = { cli_gotrace, "run", "--keep-capture", "-o", trace, "--",
			       cli_workpool, jobs_text, "4", NULL };
	struct cli_result r;
	cli_run(&r, argv, NULL);
	cr_assert_eq(r.status, 0, "gotrace run failed (%d): %s", r.status, r.err);
	cli_result_free(&r);
}

unsigned cli_workpool_line(const char *needle)
{
	return cli_source_line(cli_workpool_source, needle);
}

unsigned cli_source_line(const char *source, const char *needle)
{
	FILE *f = fopen(source, "r");
	cr_assert_not_null(f, "%s: %s", source, strerror(errno));
	char line[512];
	unsigned n = 0, found = 0;
	while (!found && fgets(line, sizeof line, f) != NULL) {
		n++;
		if (strstr(line, needle) != NULL)
			found = n;
	}
	fclose(f);
	cr_assert_neq(found, 0, "'%s' not in %s", needle, source);
	return found;
}

size_t cli_count_of(const char *text, const char *needle)
{
	size_t n = 0;
	for (const char *p = text; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

char *cli_report_of(const char *trace, bool json)
{
	struct cli_result r;
	const char *argv[] = {cli_gotrace, "report", json ? "--json" : trace, json ? trace : NULL,
			      NULL};
	cli_run(&r, argv, NULL);
	cr_assert_eq(r.status, 0, "report: %s", r.err);
	free(r.err);
	return r.out;
}

void cli_check_report_json(const char *json_path, const char *extra_args)
{
	char cmd[2048];
	snprintf(cmd, sizeof cmd, "python3 %s %u %s < %s", GT_TEST_CHECK_REPORT_JSON,
		 cli_workpool_line("pthread_mutex_lock(&totals_lock)"), extra_args, json_path);
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p, "%s", cmd);
	char verdict[4096] = "";
	size_t n = fread(verdict, 1, sizeof verdict - 1, p);
	verdict[n] = '\0';
	cr_assert_eq(pclose(p), 0, "report --json: %s", verdict);
	cr_assert_str_eq(verdict, "ok\n");
}

void cli_load_start(struct cli_load *l, bool on)
{
	l->n = 0;
	long cpus = on ? sysconf(_SC_NPROCESSORS_ONLN) : 0;
	for (long i = 0; i < cpus && l->n < 64; i++) {
		pid_t pid = fork();
		cr_assert_geq(pid, 0);
		if (pid == 0)
			for (volatile unsigned long spin = 0;; spin++)
				continue;
		l->pids[l->n++] = pid;
	}
}

void cli_load_stop(struct cli_load *l)
{
	for (int i = 0; i < l->n; i++) {
		kill(l->pids[i], SIGKILL);
		waitpid(l->pids[i], NULL, 0);
	}
}
