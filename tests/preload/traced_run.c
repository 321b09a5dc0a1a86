#include "traced_run.h"
#include "oracle.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

const char *test_preload(void)
{
	const char *p = getenv("GT_TEST_PRELOAD");
	return p ? p : "libgotrace.so";
}

const char *test_target(void)
{
	const char *p = getenv("GT_TEST_TARGET");
	return p ? p : "gt-target";
}

const char *test_bindir(void)
{
	static char dir[PATH_MAX];
	snprintf(dir, sizeof dir, "%s", test_target());
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = 0;
	return dir;
}

const char *test_program(const char *name)
{
	static char path[8][PATH_MAX];
	static unsigned k;
	char *p = path[k++ % 8];
	snprintf(p, PATH_MAX, "%s/%s", test_bindir(), name);
	return p;
}

static void slurp(const char *path, char *buf, size_t cap)
{
	buf[0] = 0;
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return;
	ssize_t n = read(fd, buf, cap - 1);
	buf[n > 0 ? n : 0] = 0;
	close(fd);
}

int run_program(struct run *r, int traced, const char *const argv[], const char *const env[])
{
	if (!r->dir[0]) {
		snprintf(r->dir, sizeof r->dir, "/tmp/gt-test-XXXXXX");
		if (!mkdtemp(r->dir))
			return -1;
	}
	char outp[PATH_MAX + 16], errp[PATH_MAX + 16];
	snprintf(outp, sizeof outp, "%s/stdout", r->dir);
	snprintf(errp, sizeof errp, "%s/stderr", r->dir);

	/* environment: ours without GOTRACE_* and LD_PRELOAD, then the run's settings */
	size_t n = 0, cap = 16;
	for (char **e = environ; *e; e++)
		cap++;
	for (const char *const *e = env; e && *e; e++)
		cap++;
	char **envp = calloc(cap, sizeof *envp);
	for (char **e = environ; *e; e++)
		if (strncmp(*e, "GOTRACE_", 8) && strncmp(*e, "LD_PRELOAD=", 11))
			envp[n++] = *e;
	static char preload[PATH_MAX + 16], capdir[PATH_MAX + 32];
	snprintf(preload, sizeof preload, "LD_PRELOAD=%s", test_preload());
	snprintf(capdir, sizeof capdir, "GOTRACE_CAPTURE_DIR=%s", r->dir);
	if (traced)
		envp[n++] = preload;
	int own_dir = 0;
	for (const char *const *e = env; e && *e; e++)
		own_dir |= !strncmp(*e, "GOTRACE_CAPTURE_DIR=", 20);
	if (!own_dir)
		envp[n++] = capdir;
	for (const char *const *e = env; e && *e; e++)
		envp[n++] = (char *)*e;
	envp[n] = NULL;

	pid_t pid = fork();
	if (pid < 0)
		return -1;
	if (pid == 0) {
		int o = open(outp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		int e = open(errp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
		dup2(o, 1);
		dup2(e, 2);
		/* the program sees exactly 0, 1, 2: descriptor tests compare with untraced runs */
		if (o > 2)
			close(o);
		if (e > 2)
			close(e);
		close_range(3, ~0u, 0); /* and nothing of Criterion's (its pipe, its arena) */
		if (r->fsize_limit > 0) {
			struct rlimit rl = {(rlim_t)r->fsize_limit, (rlim_t)r->fsize_limit};
			setrlimit(RLIMIT_FSIZE, &rl);
		}
		execve(argv[0], (char *const *)argv, envp);
		_exit(127);
	}
	r->pid = pid;
	if (r->kill_after_ms > 0) {
		struct stat st;
		for (int i = 0; i < 2000; i++) {
			if (stat(outp, &st) == 0 && st.st_size > 0)
				break;
			usleep(5000);
		}
		usleep((useconds_t)r->kill_after_ms * 1000);
		kill(pid, SIGKILL);
	}
	waitpid(pid, &r->status, 0);
	free(envp);
	slurp(outp, r->out, sizeof r->out);
	slurp(errp, r->err, sizeof r->err);
	return 0;
}

int run_target(struct run *r, int traced, const char *scenario, const char *const env[])
{
	const char *argv[] = {test_target(), scenario, NULL};
	return run_program(r, traced, argv, env);
}

int run_capture(const struct run *r, pid_t pid, int nth, struct capture *c)
{
	char path[PATH_MAX + 64];
	if (nth)
		snprintf(path, sizeof path, "%s/gotrace-%d-%d.gtcap", r->dir, (int)pid, nth);
	else
		snprintf(path, sizeof path, "%s/gotrace-%d.gtcap", r->dir, (int)pid);
	return capture_open(c, path);
}

long long run_capture_unallocated(const struct run *r, pid_t pid)
{
	char path[PATH_MAX + 64];
	struct stat st;
	snprintf(path, sizeof path, "%s/gotrace-%d.gtcap", r->dir, (int)pid);
	if (stat(path, &st) < 0)
		return -1;
	return (long long)st.st_size - (long long)st.st_blocks * 512;
}

int run_count_captures(const struct run *r)
{
	DIR *d = opendir(r->dir);
	struct dirent *e;
	int n = 0;
	if (!d)
		return -1;
	while ((e = readdir(d)))
		if (!strncmp(e->d_name, "gotrace-", 8) && strstr(e->d_name, ".gtcap"))
			n++;
	closedir(d);
	return n;
}

const char *test_gotrace(void)
{
	static char path[PATH_MAX];
	const char *env = getenv("GT_TEST_GOTRACE");
	if (env)
		return env;
	snprintf(path, sizeof path, "%s", test_preload());
	char *slash = strrchr(path, '/');
	snprintf(slash ? slash + 1 : path, sizeof path - (size_t)(slash ? slash + 1 - path : 0),
		 "../cli/gotrace");
	return path;
}

int run_convert_all(const struct run *r, char *why, size_t cap)
{
	DIR *d = opendir(r->dir);
	struct dirent *e;
	int n = 0;
	if (!d) {
		snprintf(why, cap, "no directory %s", r->dir);
		return -1;
	}
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (strncmp(e->d_name, "gotrace-", 8) || len < 6 || strcmp(e->d_name + len - 6, ".gtcap"))
			continue;
		char capture[PATH_MAX + 300], trace[PATH_MAX + 310], cmd[3 * PATH_MAX + 700];
		snprintf(capture, sizeof capture, "%s/%s", r->dir, e->d_name);
		snprintf(trace, sizeof trace, "%s.trace", capture);
		snprintf(cmd, sizeof cmd, "'%s' convert -q '%s' -o '%s' 2>&1", test_gotrace(), capture,
			 trace);
		FILE *p = popen(cmd, "r");
		char out[4096] = "";
		size_t got = p ? fread(out, 1, sizeof out - 1, p) : 0;
		out[got] = 0;
		int st = p ? pclose(p) : -1;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			snprintf(why, cap, "gotrace convert %s: status %#x: %s", e->d_name, st, out);
			n = -1;
			break;
		}
		char *report = NULL;
		if (gt_oracle_check(trace, true, &report) != 0) {
			snprintf(why, cap, "Go's readers reject the trace of %s:\n%s", e->d_name,
				 report ? report : "");
			n = -1;
		}
		free(report);
		if (n < 0)
			break;
		n++;
	}
	closedir(d);
	return n;
}

void run_cleanup(struct run *r)
{
	DIR *d = opendir(r->dir);
	struct dirent *e;
	char path[PATH_MAX + 300];
	if (!d)
		return;
	if (getenv("GT_TEST_KEEP")) { /* for a look at a failure's capture and trace */
		fprintf(stderr, "kept: %s\n", r->dir);
		closedir(d);
		return;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s", r->dir, e->d_name);
		unlink(path);
	}
	closedir(d);
	rmdir(r->dir);
}

int count_gotrace_lines(const char *text)
{
	int n = 0;
	for (const char *p = text; p && *p;) {
		if (!strncmp(p, "gotrace:", 8))
			n++;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	return n;
}

const char *run_twins(struct run *plain, struct run *traced, const char *const argv[],
		      const char *const env[])
{
	static char diff[512];
	if (run_program(plain, 0, argv, env) != 0 || run_program(traced, 1, argv, env) != 0)
		return "could not run the program";
	if (plain->status != traced->status) {
		snprintf(diff, sizeof diff, "wait status %#x untraced, %#x traced (stderr: %.300s)",
			 plain->status, traced->status, traced->err);
		return diff;
	}
	if (strcmp(plain->out, traced->out) != 0) {
		size_t i = 0;
		while (plain->out[i] && plain->out[i] == traced->out[i])
			i++;
		size_t from = i > 60 ? i - 60 : 0;
		snprintf(diff, sizeof diff, "stdout differs at byte %zu: untraced \"%.120s\", "
			 "traced \"%.120s\"", i, plain->out + from, traced->out + from);
		return diff;
	}
	return NULL;
}
