/* run_captures: the capture directory of a `gotrace run` and what becomes of the captures
 * after the run: collected, converted (one trace, or one per process on every CPU), kept
 * beside the trace or removed (run.h). */
#include "run.h"
#include "report/report.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/magic.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/wait.h>
#include <unistd.h>

#include "leftovers.h"
#include "one_trace.h"
#include "program_check.h"

#include "kernel/records.h"

#define fail(...) gt_cli_fail("run", __VA_ARGS__)

/* ---- the capture directory ------------------------------------------------------------- */

static void add_preexisting(const char *name, void *ctx)
{
	struct capture_dir *cd = ctx;
	cd->preexisting = realloc(cd->preexisting, (cd->n_preexisting + 1) * sizeof *cd->preexisting);
	cd->preexisting[cd->n_preexisting++] = strdup(name);
}

/* Where the fresh capture directory goes when the user named no place: TMPDIR when set, else
 * a tmpfs (/dev/shm) with room, else /tmp.  On a disk file system every capture costs its
 * process an inode and blocks, and gotrace their release (with the `discard` mount option,
 * a synchronous discard per file: on ext4 a shell loop of short processes ran 2.3x slower
 * than on a tmpfs).  A tmpfs keeps what a crashed or killed process committed just as well;
 * the captures take memory instead of disk until they are converted and removed.  Kept
 * captures move beside the trace, which rename() cannot do across file systems: those go to
 * /tmp as before. */
#define GT_TMPFS_MIN_FREE (1ull << 30)

static const char *default_capture_parent(bool keep)
{
	const char *tmp = getenv("TMPDIR");
	struct statfs fs;
	if (tmp != NULL && tmp[0] != '\0')
		return tmp;
	if (!keep && statfs("/dev/shm", &fs) == 0 && fs.f_type == TMPFS_MAGIC &&
	    (uint64_t)fs.f_bavail * (uint64_t)fs.f_bsize >= GT_TMPFS_MIN_FREE &&
	    access("/dev/shm", W_OK | X_OK) == 0)
		return "/dev/shm";
	return "/tmp";
}

int gt_run_prepare_capture_dir(struct capture_dir *cd, const char *requested, bool keep)
{
	*cd = (struct capture_dir){ 0 };
	if (requested == NULL) {
		snprintf(cd->path, sizeof cd->path, "%s/gotrace-XXXXXX", default_capture_parent(keep));
		if (mkdtemp(cd->path) == NULL) {
			fail("cannot create a capture directory %s: %s", cd->path, strerror(errno));
			return -1;
		}
		cd->created = true;
		if (gt_leftovers_mark(cd->path) != 0) {
			fail("cannot mark %s as this run's: %s", cd->path, strerror(errno));
			rmdir(cd->path);
			return -1;
		}
		/* others may enter, not list or create: a traced process that becomes another
		 * user makes uid-<uid> here (0700, that user's) for the programs it then runs;
		 * every capture stays 0600 */
		if (chmod(cd->path, 0711) != 0) {
			fail("cannot set the mode of %s: %s", cd->path, strerror(errno));
			return -1;
		}
		return 0;
	}
	if (mkdir(requested, 0777) != 0 && errno != EEXIST) {
		fail("cannot create capture directory %s: %s", requested, strerror(errno));
		return -1;
	}
	if (realpath(requested, cd->path) == NULL || access(cd->path, W_OK | X_OK) != 0) {
		fail("cannot write into capture directory %s: %s", requested, strerror(errno));
		return -1;
	}
	gt_each_capture(cd->path, add_preexisting, cd);
	return 0;
}

bool gt_run_was_preexisting(const struct capture_dir *cd, const char *name)
{
	for (size_t i = 0; i < cd->n_preexisting; i++)
		if (strcmp(cd->preexisting[i], name) == 0)
			return true;
	return false;
}

/* ---- conversion ----------------------------------------------------------------------- */

struct convert_result {
	uint64_t capture_bytes;
	struct gt_convert_summary sum;
};

/* Converts in this process, with the encoder library `gotrace convert` uses (reaped: when
 * the capture's process was reaped, killed, as its run's captures say; 0: unknown). */
static int convert_capture(const char *capture, const char *output, enum gt_trace_format format,
			   const char *kernel, struct gt_reap reaped, struct convert_result *r)
{
	struct gt_convert_options copt = { .format = format, .kernel_path = kernel,
					   .reaped = reaped };
	char err[512];
	*r = (struct convert_result){ 0 };
	r->capture_bytes = gt_cli_capture_bytes(capture);
	struct gt_cli_progress progress;
	gt_cli_progress_start(&progress, output);
	copt.progress = gt_cli_progress_update;
	copt.progress_ctx = &progress;
	int rc = gt_convert_file(capture, output, &copt, &r->sum, err, sizeof err);
	gt_cli_progress_end(&progress);
	if (rc != 0) {
		fail("%s", err);
		return -1;
	}
	if (r->sum.interrupted)
		gt_cli_say_conversion_stopped(output, r->sum.interrupted_done);
	return r->sum.interrupted ? -1 : 0;
}

/* ---- after the run: the captures ------------------------------------------------------- */

static bool is_main(const struct run_captures *rc, size_t i)
{
	return rc->img[i].pid == rc->main_pid;
}

static int by_process(const void *a, const void *b, void *main_pid)
{
	const struct gt_trace_image *x = a, *y = b;
	uint32_t m = *(const uint32_t *)main_pid;
	bool xm = x->pid == m, ym = y->pid == m;
	if (xm != ym)
		return xm ? -1 : 1;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	return x->generation < y->generation ? -1 : x->generation > y->generation;
}

static void *xrealloc(void *p, size_t size)
{
	p = realloc(p, size);
	if (p == NULL) {
		fail("out of memory");
		exit(EXIT_GOTRACE_FAILED);
	}
	return p;
}

struct collecting {
	const struct capture_dir *cd;
	struct run_captures *rc;
	uint32_t *file_pid;
};

static void collect_one(const char *name, void *ctx)
{
	struct collecting *c = ctx;
	struct run_captures *rc = c->rc;
	if (gt_run_was_preexisting(c->cd, name))
		return;
	const char *base = strrchr(name, '/');
	base = base ? base + 1 : name;
	rc->paths = xrealloc(rc->paths, (rc->n + 1) * sizeof *rc->paths);
	c->file_pid = xrealloc(c->file_pid, (rc->n + 1) * sizeof *c->file_pid);
	size_t len = strlen(c->cd->path) + 1 + strlen(name) + 1;
	rc->paths[rc->n] = xrealloc(NULL, len);
	snprintf(rc->paths[rc->n], len, "%s/%s", c->cd->path, name);
	c->file_pid[rc->n] = (uint32_t)strtoul(base + 8, NULL, 10);
	rc->n++;
}

void gt_run_collect_captures(const struct capture_dir *cd, pid_t main_pid, const char *kernel,
			     struct run_captures *rc)
{
	*rc = (struct run_captures){ .main_pid = (uint32_t)main_pid, .kernel = kernel };
	struct collecting c = { cd, rc, NULL };
	gt_each_capture(cd->path, collect_one, &c);
	rc->img = xrealloc(NULL, (rc->n ? rc->n : 1) * sizeof *rc->img);
	gt_trace_images_identify(rc->img, rc->n, (const char *const *)rc->paths, c.file_pid);
	free(c.file_pid);
	if (rc->n > 1)
		qsort_r(rc->img, rc->n, sizeof *rc->img, by_process, &rc->main_pid);
}

void gt_run_free_captures(struct run_captures *rc)
{
	for (size_t i = 0; i < rc->n; i++)
		free(rc->paths[i]);
	free(rc->paths);
	free(rc->img);
}

void gt_run_remove_captures(const struct capture_dir *cd, const struct run_captures *rc,
			    const char *kernel)
{
	for (size_t i = 0; rc != NULL && i < rc->n; i++)
		unlink(rc->img[i].capture);
	if (kernel != NULL)
		unlink(kernel);
	DIR *d = opendir(cd->path);
	struct dirent *e;
	while (d != NULL && (e = readdir(d)) != NULL) {
		char sub[PATH_MAX + NAME_MAX + 2];
		if (!gt_is_user_dir(cd->path, e->d_name))
			continue;
		snprintf(sub, sizeof sub, "%s/%s", cd->path, e->d_name);
		rmdir(sub); /* emptied, unless it holds what is not ours */
	}
	if (d != NULL)
		closedir(d);
	if (cd->created)
		gt_leftovers_unmark(cd->path);
	if (cd->created && rmdir(cd->path) != 0)
		fprintf(stderr, "gotrace: left %s behind: %s\n", cd->path, strerror(errno));
}

static void print_conversion(const char *output, const struct gt_trace_image *cap,
			     const struct convert_result *r)
{
	char size[32];
	gt_cli_format_size(r->capture_bytes, size, sizeof size);
	/* an image its pid left by exec (a later one exists) did not crash: it ended there */
	fprintf(stderr, "gotrace: %s: %s (pid %u%s), %" PRIu64 " threads, %" PRIu64 " events "
		"(capture %s, converted in %.2f s)\n", output,
		r->sum.process[0] ? r->sum.process : cap->command, cap->pid,
		cap->last ? "" : ", then exec'd another program", r->sum.model.threads,
		r->sum.wire.events, size, r->sum.seconds);
	gt_cli_viewer_warning(output, r->sum.wire.events);
	gt_cli_print_capture_problems(&r->sum, "");
	if (cap->detached && cap->last)
		fprintf(stderr, "gotrace:   pid %u keeps running untraced: the trace ends where "
			"gotrace stopped its recording\n", cap->pid);
	else if (r->sum.reaped && cap->last)
		gt_cli_say_killed(&r->sum);
	else if (!cap->finalized && cap->last)
		fprintf(stderr, "gotrace:   pid %u did not finish normally (killed, crashed or "
			"still running): the trace ends at its last recorded fact\n", cap->pid);
}

/* A conversion of --per-process in a child process: its result through a pipe. */
struct convert_job {
	pid_t pid;
	int fd;
};

static struct convert_job start_conversion(const char *capture, const char *output,
					   enum gt_trace_format format, const char *kernel,
					   struct gt_reap reaped)
{
	struct convert_job j = { -1, -1 };
	int fds[2];
	if (pipe2(fds, O_CLOEXEC) != 0)
		return j;
	fflush(NULL);
	j.pid = fork();
	if (j.pid == 0) {
		close(fds[0]);
		struct { int ok; struct convert_result r; } out;
		struct gt_convert_options copt = { .format = format, .kernel_path = kernel,
						   .reaped = reaped };
		char err[512];
		out.r = (struct convert_result){ .capture_bytes = gt_cli_capture_bytes(capture) };
		out.ok = gt_convert_file(capture, output, &copt, &out.r.sum, err, sizeof err) == 0;
		if (!out.ok)
			fail("%s", err);
		fflush(stderr);
		_exit(write(fds[1], &out, sizeof out) == (ssize_t)sizeof out ? 0 : 1);
	}
	close(fds[1]);
	if (j.pid < 0) {
		close(fds[0]);
		return j;
	}
	j.fd = fds[0];
	return j;
}

static bool finish_conversion(struct convert_job *j, struct convert_result *r)
{
	struct { int ok; struct convert_result r; } in = { 0 };
	size_t got = 0;
	ssize_t n;
	while (got < sizeof in && (n = read(j->fd, (char *)&in + got, sizeof in - got)) != 0) {
		if (n < 0 && errno != EINTR)
			break;
		got += n > 0 ? (size_t)n : 0;
	}
	close(j->fd);
	while (waitpid(j->pid, NULL, 0) < 0 && errno == EINTR)
		;
	*r = in.r;
	return got == sizeof in && in.ok;
}

/* --per-process: a trace per capture, converted by as many child processes at once as
 * there are CPUs (a tree of many processes converts on all of them), reported in order. */
static void convert_per_process(const struct run_options *opt, const struct run_captures *rc,
				bool *all_ok)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	size_t width = cpus > 1 ? (size_t)cpus : 1;
	struct convert_job *jobs = xrealloc(NULL, (rc->n ? rc->n : 1) * sizeof *jobs);
	char (*outputs)[PATH_MAX + 64] = xrealloc(NULL, (rc->n ? rc->n : 1) * sizeof *outputs);
	/* a killed process ends where it was reaped, which its parent's capture may say */
	const char **paths = xrealloc(NULL, (rc->n ? rc->n : 1) * sizeof *paths);
	for (size_t i = 0; i < rc->n; i++)
		paths[i] = rc->img[i].capture;
	struct gt_reap *reaped = gt_capture_reaped(paths, rc->n), none = { 0 };
	free(paths);
	size_t started = 0;
	for (size_t i = 0; i < rc->n; i++) {
		/* a child's capture is not converted with --no-follow */
		bool skip = opt->no_follow && !is_main(rc, i);
		for (; started < rc->n && started < i + width; started++) {
			jobs[started] = (struct convert_job){ -1, -1 };
			if (opt->no_follow && !is_main(rc, started))
				continue;
			gt_trace_image_name(opt->output, &rc->img[started], rc->main_pid, "",
					    outputs[started], sizeof outputs[started]);
			jobs[started] = start_conversion(rc->img[started].capture, outputs[started],
							 opt->format, rc->kernel,
							 reaped ? reaped[started] : none);
		}
		if (skip)
			continue;
		struct convert_result r;
		bool ok;
		if (jobs[i].pid < 0) /* no child to spare: here, with the progress bar */
			ok = convert_capture(rc->img[i].capture, outputs[i], opt->format, rc->kernel,
					     reaped ? reaped[i] : none, &r) == 0;
		else
			ok = finish_conversion(&jobs[i], &r);
		if (!ok) {
			*all_ok = false;
			continue;
		}
		print_conversion(outputs[i], &rc->img[i], &r);
	}
	free(reaped);
	free(outputs);
	free(jobs);
}

/* --critical-path: the breakdowns' top lines of the main thread's path, on stderr after the
 * summary, each line "gotrace: ". */
static void print_critical_path(const struct gt_critpath *cp)
{
	struct gt_cp_query q = {0};
	struct gt_cp_result r;
	char err[256], *text = NULL;
	size_t len = 0;
	if (gt_critpath_walk(cp, &q, &r, err, sizeof err) != 0) {
		fail("no critical path: %s", err);
		return;
	}
	FILE *f = open_memstream(&text, &len);
	if (f) {
		struct gt_report_options ropt = {0};
		gt_report_critical_path_print(f, &r, &ropt, true);
		fclose(f);
	}
	for (const char *line = text; line && *line;) {
		size_t n = strcspn(line, "\n");
		fprintf(stderr, "gotrace: %.*s\n", (int)n, line);
		line += n + (line[n] == '\n');
	}
	free(text);
	gt_cp_result_free(&r);
}

void gt_run_convert_all(const struct run_options *opt, const struct run_captures *rc,
			bool *all_ok)
{
	*all_ok = true;
	if (rc->n == 0 || !is_main(rc, 0)) {
		fail("pid %d wrote no capture: libgotrace.so did not load into it or was "
		     "disabled (see its messages above)", (int)rc->main_pid);
		*all_ok = false;
	}
	if (!opt->per_process) {
		/* one trace: every capture of the run (the command's own alone with --no-follow) */
		const char **paths = xrealloc(NULL, (rc->n ? rc->n : 1) * sizeof *paths);
		size_t n = 0;
		for (size_t i = 0; i < rc->n; i++)
			if (!opt->no_follow || is_main(rc, i))
				paths[n++] = rc->img[i].capture;
		struct gt_convert_options copt = { .format = opt->format,
						   .kernel_path = rc->kernel };
		copt.critical_path = opt->critical_path ? gt_critpath_new() : NULL;
		copt.draw_critical_path = opt->critical_path;
		if (n && gt_one_trace("run", opt->output, paths, n, &copt, GT_SUMMARY_RUN) != 0)
			*all_ok = false;
		else if (n && copt.critical_path)
			print_critical_path(copt.critical_path);
		gt_critpath_free(copt.critical_path);
		free(paths);
		return;
	}
	convert_per_process(opt, rc, all_ok);
}

/* A previous run's captures kept beside the same FILE (FILE.PID.gtcap, FILE.PID-N.gtcap) are
 * removed before this run's come, as FILE.gtcap and FILE.gtkern are replaced: the captures
 * beside FILE are then its run's alone, which `gotrace report FILE` reports together. */
static void remove_previous_captures(const char *out)
{
	glob_t g;
	if (!gt_trace_other_captures(out, &g))
		return;
	size_t removed = 0;
	for (size_t i = 0; i < g.gl_pathc; i++)
		removed += unlink(g.gl_pathv[i]) == 0;
	if (removed)
		fprintf(stderr, "gotrace: %zu captures of a previous run beside %s removed\n",
			removed, out);
	globfree(&g);
}

/* --keep-capture without --capture-dir: the captures move next to the traces, as
 * FILE.gtcap and FILE.<pid>.gtcap, where `gotrace report FILE` finds them; one line names
 * them (a build's hundreds of processes are not a line each).  Returns whether the
 * command's own capture got there. */
bool gt_run_keep_beside_output(const struct run_options *opt, const struct capture_dir *cd,
			       const struct run_captures *rc)
{
	bool main_kept = false, left = false;
	size_t kept = 0;
	char named[PATH_MAX + 64] = "";   /* the command's own, else the first kept */
	remove_previous_captures(opt->output);
	for (size_t i = 0; i < rc->n; i++) {
		char target[PATH_MAX + 64];
		const struct gt_trace_image *cap = &rc->img[i];
		gt_trace_image_name(opt->output, cap, rc->main_pid, ".gtcap", target, sizeof target);
		if (rename(cap->capture, target) == 0) {
			bool main_image = is_main(rc, i) && cap->last;
			main_kept |= main_image;
			if (main_image || !kept)
				snprintf(named, sizeof named, "%s", target);
			kept++;
		} else {
			/* Another file system (EXDEV): a capture may be large, leave it be. */
			fprintf(stderr, "gotrace: capture kept as %s (cannot move it to %s: %s)\n",
				cap->capture, target, strerror(errno));
			left = true;
		}
	}
	if (kept > 1)
		fprintf(stderr, "gotrace: capture kept as %s, and %zu more of the run's other "
				"processes beside it (%s.PID.gtcap)\n", named, kept - 1, opt->output);
	else if (kept)
		fprintf(stderr, "gotrace: capture kept as %s\n", named);
	if (rc->kernel != NULL) {
		char target[PATH_MAX + 16];
		snprintf(target, sizeof target, "%s" GT_KERNEL_SUFFIX, opt->output);
		if (rename(rc->kernel, target) == 0)
			fprintf(stderr, "gotrace: kernel records kept as %s\n", target);
		else
			left = true;
	}
	if (cd->created)
		gt_leftovers_unmark(cd->path);
	if (!left && cd->created)
		rmdir(cd->path);
	return main_kept;
}
