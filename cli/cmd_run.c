/* `gotrace run`: start a command with libgotrace.so preloaded, wait for it, then convert
 * the captures of it and of every traced child into Go traces.
 *
 * Everything that would make the run useless is checked before the command starts: the
 * command exists and is executable, the dynamic loader will honour LD_PRELOAD for it (not
 * static, not setuid/setgid or with file capabilities), the library is found, the output
 * is writable.  While the command runs, gotrace only forwards signals and waits. */
#include "run.h"

#include "commands.h"
#include "follow.h"
#include "hang.h"
#include "leftovers.h"
#include "one_trace.h"
#include "program_check.h"
#include "snapshot.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <gotrace/capture.h>

#include "kernel/recorder.h"
#include "kernel/records.h"

#define fail(...) gt_cli_fail("run", __VA_ARGS__)

#ifndef GT_PRELOAD_BUILD_RELPATH
#define GT_PRELOAD_BUILD_RELPATH "../preload/libgotrace.so"
#endif
#ifndef GT_PRELOAD_INSTALL_RELPATH
#define GT_PRELOAD_INSTALL_RELPATH "../lib/gotrace/libgotrace.so"
#endif

/* ---- files ---------------------------------------------------------------------------- */

/* Can OUTPUT be written?  Checked before the command runs, so a long run is not wasted.
 * Leaves an existing file untouched and removes a file it had to create. */
static int check_writable(const char *output)
{
	int fd = open(output, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
	if (fd >= 0) {
		close(fd);
		unlink(output);
		return 0;
	}
	if (errno == EEXIST) {
		struct stat st;
		if (stat(output, &st) == 0 && S_ISDIR(st.st_mode)) {
			fail("cannot write %s: it is a directory", output);
			return -1;
		}
		fd = open(output, O_WRONLY | O_CLOEXEC);
		if (fd >= 0) {
			close(fd);
			return 0;
		}
	}
	fail("cannot write %s: %s", output, strerror(errno));
	return -1;
}

static const char *self_dir(char *buf, size_t size)
{
	ssize_t n = readlink("/proc/self/exe", buf, size - 1);
	if (n <= 0)
		return NULL;
	buf[n] = '\0';
	char *slash = strrchr(buf, '/');
	if (slash == NULL)
		return NULL;
	*slash = '\0';
	return buf;
}

/* libgotrace.so next to this gotrace: in the build tree, or where `meson install` put it. */
static int find_preload_library(char *out, size_t size)
{
	char dir[PATH_MAX], candidate[2][PATH_MAX + 64];
	if (self_dir(dir, sizeof dir) == NULL) {
		fail("cannot find its own executable: %s", strerror(errno));
		return -1;
	}
	snprintf(candidate[0], sizeof candidate[0], "%s/%s", dir, GT_PRELOAD_BUILD_RELPATH);
	snprintf(candidate[1], sizeof candidate[1], "%s%s%s",
		 GT_PRELOAD_INSTALL_RELPATH[0] == '/' ? "" : dir,
		 GT_PRELOAD_INSTALL_RELPATH[0] == '/' ? "" : "/", GT_PRELOAD_INSTALL_RELPATH);
	for (int i = 0; i < 2; i++) {
		/* Absolute: the traced program may chdir before it starts children. */
		if (access(candidate[i], R_OK) == 0 && realpath(candidate[i], out) != NULL &&
		    strlen(out) < size)
			return 0;
	}
	fail("cannot find libgotrace.so (looked for %s and %s)", candidate[0], candidate[1]);
	return -1;
}

static pid_t child_pid;
static char kernel_file[PATH_MAX + 32];   /* the run's kernel scheduling records, or "" */

/* What the conversions draw the threads' CPUs from (NULL: the hooks alone). */
static const char *kernel_path(void)
{
	return kernel_file[0] != '\0' ? kernel_file : NULL;
}

static void set_env_var(const char *name, const char *value)
{
	if (setenv(name, value, 1) != 0)
		_exit(EXIT_GOTRACE_FAILED);
}

/* ---- the --max-capture bound ------------------------------------------------------------ */

/* A quarter of the space free in dir: the captures are the run's largest files, but the
 * traced program shares the disk (it must not meet a full disk because of us) and the trace
 * and a kept capture need room after them; the bound is said when it is reached. */
static uint64_t max_capture_default(const char *dir)
{
	struct statvfs fs;
	if (statvfs(dir, &fs) != 0)
		return 0; /* unknown: the file system's own limits apply */
	uint64_t quarter = (uint64_t)fs.f_bavail * fs.f_frsize / 4;
	return quarter > (64u << 10) ? quarter : 64u << 10;
}

/* GOTRACE_MAX_CAPTURE for the command: --max-capture, else what the user exported, else the
 * default.  The root process's count page (preload/capture_budget.c) is removed after the
 * run by budget_path's name. */
static void set_max_capture(const struct run_options *opt, const char *capture_dir)
{
	const char *exported = getenv("GOTRACE_MAX_CAPTURE");
	uint64_t bytes = opt->max_capture;
	if (!bytes && exported != NULL && exported[0] != '\0')
		return;
	if (!bytes)
		bytes = max_capture_default(capture_dir);
	if (!bytes) {
		unsetenv("GOTRACE_MAX_CAPTURE");
		return;
	}
	char text[24];
	snprintf(text, sizeof text, "%" PRIu64, bytes);
	set_env_var("GOTRACE_MAX_CAPTURE", text);
}

static void remove_budget_page(const char *capture_dir, pid_t root)
{
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/gotrace-%d.budget", capture_dir, (int)root);
	unlink(path);
}

/* ---- running the command -------------------------------------------------------------- */


/* In the child, between fork and exec. */
static void prepare_child_env(const struct run_options *opt, const char *library,
			      const char *capture_dir, pid_t adopter)
{
	const char *old = getenv("LD_PRELOAD");
	if (old != NULL && old[0] != '\0') {
		size_t len = strlen(old) + 1 + strlen(library) + 1;
		char *both = malloc(len);
		if (both == NULL)
			_exit(EXIT_GOTRACE_FAILED);
		snprintf(both, len, "%s:%s", old, library);
		set_env_var("LD_PRELOAD", both);
	} else {
		set_env_var("LD_PRELOAD", library);
	}
	set_env_var("GOTRACE_CAPTURE_DIR", capture_dir);
	set_env_var("GOTRACE_RUN", "1");   /* the summary says what the library would */
	if (adopter > 0) { /* gotrace, the adopter it stands in for, the command (not an orphan) */
		char reaper[64];
		snprintf(reaper, sizeof reaper, "%d:%d:%d", (int)getppid(), (int)adopter,
			 (int)getpid());
		set_env_var("GOTRACE_REAPER", reaper);
	}
	/* The library must only write captures: gotrace converts them afterwards. */
	unsetenv("GOTRACE_OUT");
	if (opt->stacks != NULL)
		set_env_var("GOTRACE_STACKS", opt->stacks);
	if (opt->locks != NULL)
		set_env_var("GOTRACE_LOCKS", opt->locks);
	if (opt->no_follow) {
		/* the command's children know they are not it, even those started with its
		 * environment as it is (popen) */
		char pid[24];
		snprintf(pid, sizeof pid, "%d", (int)getpid());
		set_env_var("GOTRACE_FOLLOW", "0");
		set_env_var("GOTRACE_ROOT_PID", pid);
	}
	if (opt->stack_depth != NULL)
		set_env_var("GOTRACE_STACK_DEPTH", opt->stack_depth);
	if (opt->start_delay != NULL)
		set_env_var("GOTRACE_START_DELAY", opt->start_delay);
	if (opt->duration != NULL)
		set_env_var("GOTRACE_DURATION", opt->duration);
	if (opt->last != NULL)
		set_env_var("GOTRACE_LAST", opt->last);
	set_max_capture(opt, capture_dir);
}

static double now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* SIGUSR2 under --last: the captures of this run so far, copied and converted into
 * OUTPUT.snapshot-N while the processes record on. */
struct snapshot_ctx {
	const struct run_options *opt;
	const struct capture_dir *cd;
	unsigned n;
	char **paths;
	size_t n_paths;
};

static void add_snapshot_capture(const char *name, void *ctx)
{
	struct snapshot_ctx *s = ctx;
	if (gt_run_was_preexisting(s->cd, name))
		return;
	char path[2 * PATH_MAX];
	snprintf(path, sizeof path, "%s/%s", s->cd->path, name);
	char **v = realloc(s->paths, (s->n_paths + 1) * sizeof *v);
	if (v != NULL && (v[s->n_paths] = strdup(path)) != NULL)
		s->n_paths++;
	s->paths = v;
}

static void snapshot_now(void *ctx)
{
	struct snapshot_ctx *s = ctx;
	s->n_paths = 0;
	gt_each_capture(s->cd->path, add_snapshot_capture, s);
	gt_snapshot_write(s->opt->output, s->opt->format, ++s->n, (const char *const *)s->paths, s->n_paths, s->cd->path);
	for (size_t i = 0; i < s->n_paths; i++)
		free(s->paths[i]);
	free(s->paths);
	s->paths = NULL;
}

/* Starts the command; returns its wait status in *status, or an exit status when it could
 * not be started.  Waits for the whole traced tree (follow.c). */
static int run_command(const struct run_options *opt, const char *path, const char *library,
		       struct capture_dir *cd, struct gt_follow *follow, int *status)
{
	int exec_err_pipe[2], go_pipe[2];

	/* go_pipe: the child execs once the kernel's events are open on it */
	if (pipe2(exec_err_pipe, O_CLOEXEC) != 0 || pipe2(go_pipe, O_CLOEXEC) != 0) {
		fail("pipe: %s", strerror(errno));
		return EXIT_GOTRACE_FAILED;
	}
	fflush(NULL);
	/* Signals stay blocked (read by follow) from here on, so none is lost. */
	if (gt_follow_prepare(follow) != 0)
		return EXIT_GOTRACE_FAILED;

	pid_t pid = fork();
	if (pid < 0) {
		fail("fork: %s", strerror(errno));
		return EXIT_GOTRACE_FAILED;
	}
	if (pid == 0) {
		gt_follow_child(follow);
		close(exec_err_pipe[0]);
		close(go_pipe[1]);
		char go;
		while (read(go_pipe[0], &go, 1) < 0 && errno == EINTR)
			;
		prepare_child_env(opt, library, cd->path, follow->adopter);
		execv(path, opt->command);
		int err = errno;
		if (write(exec_err_pipe[1], &err, sizeof err) < 0)
			_exit(EXIT_GOTRACE_FAILED);
		_exit(err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXECUTE);
	}
	child_pid = pid;
	close(exec_err_pipe[1]);
	close(go_pipe[0]);
	struct gt_kernel_options ko = { .sample_hz = opt->cpu_samples,
					.offcpu_stacks = opt->offcpu_stacks };
	struct gt_kernel_rec *kernel = opt->no_kernel ? NULL : gt_kernel_start(pid, cd->path, &ko);
	close(go_pipe[1]);

	int exec_err = 0;
	ssize_t got;
	while ((got = read(exec_err_pipe[0], &exec_err, sizeof exec_err)) < 0 && errno == EINTR)
		;
	close(exec_err_pipe[0]);

	struct snapshot_ctx snap = { .opt = opt, .cd = cd };
	if (opt->last != NULL) {
		follow->on_usr2 = snapshot_now;
		follow->usr2_ctx = &snap;
	}
	struct gt_hang *hang = NULL;
	if (opt->hang_ns && !(hang = gt_hang_new(opt->hang_ns, opt->output, opt->format, cd)))
		fail("out of memory: --hang does not watch this run");
	if (hang != NULL) {
		follow->on_tick = gt_hang_tick;
		follow->tick_ctx = hang;
		follow->tick_ms = gt_hang_tick_ms(opt->hang_ns);
	}
	int waited = gt_follow_wait(follow, pid, cd->path, cd->created, !opt->no_follow,
				    cd->preexisting, cd->n_preexisting, status);
	gt_hang_free(hang);
	if (kernel != NULL) {
		gt_kernel_finish(kernel);
		/* in the directory follow may have renamed */
		snprintf(kernel_file, sizeof kernel_file, "%s/gotrace-%d" GT_KERNEL_SUFFIX,
			 cd->path, (int)pid);
	}
	if (waited != 0)
		return EXIT_GOTRACE_FAILED;
	if (got == (ssize_t)sizeof exec_err) {
		fail("cannot execute %s: %s", opt->command[0], strerror(exec_err));
		return exec_err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXECUTE;
	}
	return -1;
}

static int exit_status_of(int status)
{
	if (WIFEXITED(status))
		return WEXITSTATUS(status);
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return EXIT_GOTRACE_FAILED;
}

static void describe_status(int status, char *buf, size_t size)
{
	if (WIFEXITED(status))
		snprintf(buf, size, "exited with status %d", WEXITSTATUS(status));
	else if (WIFSIGNALED(status))
		snprintf(buf, size, "was killed by signal %d (%s)%s", WTERMSIG(status),
			 strsignal(WTERMSIG(status)), WCOREDUMP(status) ? ", core dumped" : "");
	else
		snprintf(buf, size, "ended with wait status %#x", status);
}

int gt_cmd_run(int argc, char **argv)
{
	struct run_options opt;
	int ret = gt_run_parse_options(argc, argv, &opt);
	if (ret >= 0)
		return ret;

	char path[PATH_MAX], library[PATH_MAX];
	int err = gt_resolve_command(opt.command[0], path, sizeof path);
	if (err != 0) {
		if (err == ENOENT && strchr(opt.command[0], '/') == NULL)
			fail("command not found: %s", opt.command[0]);
		else
			fail("%s: %s", opt.command[0], strerror(err));
		return err == ENOENT ? EXIT_NOT_FOUND : EXIT_CANNOT_EXECUTE;
	}
	if ((ret = gt_check_program(opt.command[0], path)) != 0)
		return ret;
	if (check_writable(opt.output) != 0 || find_preload_library(library, sizeof library) != 0)
		return EXIT_GOTRACE_FAILED;
	gt_leftovers_report();
	struct capture_dir cd;
	if (gt_run_prepare_capture_dir(&cd, opt.capture_dir, opt.keep_capture) != 0)
		return EXIT_GOTRACE_FAILED;

	double started = now_seconds();
	int status;
	struct gt_follow follow;
	ret = run_command(&opt, path, library, &cd, &follow, &status);
	remove_budget_page(cd.path, child_pid);
	if (ret >= 0) {
		gt_run_remove_captures(&cd, NULL, kernel_path());
		return ret;
	}
	double ran = follow.command_ended - started;
	char how[128];
	if (follow.stopped_running)
		snprintf(how, sizeof how, "(pid %d) keeps running; recording stopped",
			 (int)child_pid);
	else
		describe_status(status, how, sizeof how);
	fprintf(stderr, "gotrace: %s %s after %.2f s\n", opt.command[0], how, ran);
	/* a long conversion stops at SIGTERM; not at SIGINT, which may be a second Ctrl-C
	 * meant for the recording, or one for the command still running */
	sigset_t stop_on;
	sigemptyset(&stop_on);
	sigaddset(&stop_on, SIGTERM);
	gt_cli_stop_conversions_on(&stop_on);

	struct run_captures rc;
	gt_run_collect_captures(&cd, child_pid, kernel_path(), &rc);
	bool all_ok;
	gt_run_convert_all(&opt, &rc, &all_ok);
	if (kernel_file[0] != '\0')
		gt_kernel_print_summary(kernel_file);
	bool kept_beside = false;
	if (all_ok && opt.keep_capture && opt.capture_dir == NULL)
		kept_beside = gt_run_keep_beside_output(&opt, &cd, &rc);
	else if (all_ok && !opt.keep_capture)
		gt_run_remove_captures(&cd, &rc, kernel_path());
	else if (rc.n > 0) {
		if (cd.created)
			gt_leftovers_unmark(cd.path); /* kept on purpose, and said here */
		fprintf(stderr, "gotrace: %s kept in %s%s\n", rc.n == 1 ? "capture" : "captures",
			cd.path, all_ok ? "" : " (convert again with: gotrace convert CAPTURE -o FILE)");
	}
	if (all_ok)
		gt_cli_next_steps(opt.output, opt.format, kept_beside);
	gt_run_free_captures(&rc);
	for (size_t i = 0; i < cd.n_preexisting; i++)
		free(cd.preexisting[i]);
	free(cd.preexisting);
	gt_follow_end(&follow);

	int command_status = follow.stopped_running ? 0 : exit_status_of(status);
	return command_status == 0 && !all_ok ? 1 : command_status;
}
