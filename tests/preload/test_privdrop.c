/* Privilege drops keep tracing (issue 12): a root process's fork child that gives up its
 * credentials (nginx's workers) records, although it can no longer open or create anything
 * in the 0700 capture directory; a process at its RLIMIT_NOFILE keeps growing its capture
 * (issue 10).  Each runs gt-privdrop / gt-fds untraced and traced (run_twins) and reads the
 * capture; the worker's trace goes through Go's readers. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "oracle.h"
#include "traced_run.h"

static struct run plain, traced, tool;
static struct capture cap;
static char mounted[PATH_MAX];

static void teardown(void)
{
	capture_close(&cap);
	if (mounted[0]) {
		umount(mounted);
		mounted[0] = 0;
	}
	run_cleanup(&tool);
	run_cleanup(&plain);
	run_cleanup(&traced);
}

static void need_root(void)
{
	if (geteuid() != 0)
		cr_skip_test("dropping privileges to nobody needs root (CI runs as root)");
}

/* gt-privdrop SCENARIO untraced and traced: the same output and status, no line of ours;
 * the worker's capture opened into cap (its pid is on the program's stderr) */
static void twins_in(const char *scenario, const char *const env[], mode_t dir_mode)
{
	const char *argv[] = {test_program("gt-privdrop"), scenario, NULL};
	memset(&plain, 0, sizeof plain);
	memset(&traced, 0, sizeof traced);
	strcpy(plain.dir, "/tmp/gt-test-XXXXXX");
	strcpy(traced.dir, "/tmp/gt-test-XXXXXX");
	cr_assert(mkdtemp(plain.dir) && mkdtemp(traced.dir));
	cr_assert(chmod(plain.dir, dir_mode) == 0 && chmod(traced.dir, dir_mode) == 0);
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert_null(diff, "%s\nuntraced:\n%s\ntraced:\n%s", diff, plain.out, traced.out);
	cr_assert(WIFEXITED(traced.status) && WEXITSTATUS(traced.status) == 0, "status %#x: %s",
		  traced.status, traced.err);
	cr_assert(strstr(traced.out, "worker status 0\n"), "%s", traced.out);
	cr_assert_eq(count_gotrace_lines(traced.err), 0, "%s", traced.err);
	/* the capture directory is root's, as made (0711 as by `gotrace run`) */
	struct stat st;
	cr_assert(stat(traced.dir, &st) == 0 && st.st_uid == 0 && (st.st_mode & 0777) == dir_mode);
	const char *w = strstr(traced.err, "worker ");
	cr_assert_not_null(w, "%s", traced.err);
	pid_t worker = (pid_t)atoi(w + 7);
	cr_assert_eq(run_capture(&traced, worker, 0, &cap), 0, "the worker's capture");
	/* still root's and private (never handed to nobody) */
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/gotrace-%d.gtcap", traced.dir, (int)worker);
	cr_assert(stat(path, &st) == 0 && st.st_uid == 0 && (st.st_mode & 0777) == 0600);
	cr_assert_eq(cap.bad_bytes, 0u);
	cr_assert_eq(cap.hdr->flags & GT_FILE_WRITE_FAILED, 0u);
	cr_assert_eq(capture_count(&cap, GT_NOTICE, GT_NOTICE_DROPPED), 0u);
	/* an image left by exec ends without them (read as exec'd) */
	if (strcmp(scenario, "exec")) {
		cr_assert(cap.hdr->flags & GT_FILE_FINALIZED);
		cr_assert_eq(capture_count(&cap, GT_CAPTURE_END, -1), 1u);
	}
}

/* in a directory of mode 0700: nobody of the worker's can enter it after the drop */
static void twins(const char *scenario, const char *const env[])
{
	twins_in(scenario, env, 0700);
}

static char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = malloc(1 << 20);
	*len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	return buf;
}

Test(privdrop, worker_drops_to_nobody_and_records, .fini = teardown, .timeout = 120)
{
	need_root();
	twins("worker", NULL);
	cr_assert(strstr(traced.out, "setuid: 0 0\ndumpable: 0 0\nsetuid(0): -1 EPERM\n"), "%s", traced.out);
	cr_assert(strstr(traced.out, "worker: uid 65534 65534 65534 gid 65534 65534 65534"), "%s",
		  traced.out);
	cr_assert(strstr(traced.out, "counter 8000\n"), "%s", traced.out);
	/* the worker's descriptors: 0-2 and the file it writes, nothing of the tracer's */
	cr_assert(strstr(traced.out, "fd 0 \nfd 1 \nfd 2 \nfd 3 worker.data\nworker status"), "%s",
		  traced.out);
	/* the file the worker wrote after its drop, byte for byte */
	char a[PATH_MAX + 32], b[PATH_MAX + 32];
	snprintf(a, sizeof a, "%s/worker.data", plain.dir);
	snprintf(b, sizeof b, "%s/worker.data", traced.dir);
	size_t la = 0, lb = 0;
	char *da = slurp(a, &la), *db = slurp(b, &lb);
	cr_assert(da && db && la > 0 && la == lb && !memcmp(da, db, la), "%zu vs %zu bytes", la, lb);
	free(da);
	free(db);

	/* its threads and their blocks on the lock are in its capture */
	cr_assert_eq(capture_count(&cap, GT_THREAD_START, -1), 4u);
	cr_assert_geq(capture_count(&cap, GT_BLOCK_BEGIN, GT_BK_MUTEX), 4u);
	cr_assert_geq(capture_count(&cap, GT_WAKE, GT_BK_MUTEX), 1u);
	/* the credential changes themselves, as system calls */
	cr_assert_geq(capture_count(&cap, GT_SYSCALL_BEGIN, -1), 3u);

	char trace[PATH_MAX + 16], capture[PATH_MAX + 64];
	snprintf(trace, sizeof trace, "%s/w.trace", traced.dir);
	snprintf(capture, sizeof capture, "%s/gotrace-%u.gtcap", traced.dir, cap.hdr->pid);
	const char *conv[] = {test_gotrace(), "convert", capture, "-o", trace, NULL};
	memset(&tool, 0, sizeof tool);
	cr_assert_eq(run_program(&tool, 0, conv, NULL), 0);
	cr_assert(WIFEXITED(tool.status) && WEXITSTATUS(tool.status) == 0, "%s", tool.err);
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace, true, &report), 0, "%s", report ? report : "");
	free(report);
	unlink(trace);
}

Test(privdrop, threads_alive_across_the_drop, .fini = teardown, .timeout = 120)
{
	/* glibc's setxid broadcast changes every thread's credentials, traced as untraced */
	need_root();
	twins("broadcast", NULL);
	for (int k = 0; k < 4; k++) {
		char want[96];
		snprintf(want, sizeof want, "thread %d: uid 65534 65534 65534 gid 65534 65534 65534 groups 0\n", k);
		cr_assert(strstr(traced.out, want), "%s", traced.out);
	}
	cr_assert_eq(capture_count(&cap, GT_THREAD_START, -1), 4u);
}

Test(privdrop, dropped_worker_grows_its_capture, .fini = teardown, .timeout = 120)
{
	/* 80000 facts in 16 KiB chunks after the drop: more than a window of 64 chunks */
	need_root();
	const char *env[] = {"GOTRACE_CHUNK_SIZE=16384", "GT_PRIVDROP_YIELDS=80000", NULL};
	twins("grow", env);
	cr_assert(strstr(traced.out, "yields 80000\nfd 0 \nfd 1 \nfd 2 \nfd 3 worker.data\n"), "%s",
		  traced.out);
	cr_assert_eq(capture_count(&cap, GT_YIELD, -1), 80000u);
	cr_assert_gt(cap.hdr->n_chunks, 64u);
	/* the worker cannot trim its capture: the length reserved right before the drop, 4 GiB
	 * beyond what was allocated then (more than the 2 MiB headroom of 16 KiB chunks), stays */
	pid_t worker = (pid_t)atoi(strstr(traced.err, "worker ") + 7);
	long long unallocated = run_capture_unallocated(&traced, worker);
	cr_assert(unallocated > (2ll << 20) && unallocated <= (4ll << 30), "%lld bytes unallocated",
		  unallocated);
}

Test(privdrop, raw_system_call_drop, .fini = teardown, .timeout = 120)
{
	need_root();
	twins("raw", NULL);
	cr_assert(strstr(traced.out, "setresuid: 0\n"), "%s", traced.out);
	cr_assert(strstr(traced.out, "worker: uid 65534 65534 65534 gid 65534 65534 65534"), "%s",
		  traced.out);
	cr_assert_eq(capture_count(&cap, GT_YIELD, -1), 1000u);
}

Test(privdrop, program_execd_after_the_drop, .fini = teardown, .timeout = 120)
{
	/* in gotrace run's 0711 directory the worker, still root, makes uid-65534 (0700,
	 * nobody's) where the program it execs as nobody creates its capture */
	need_root();
	twins_in("exec", NULL, 0711);
	cr_assert(strstr(traced.out, "execd: uid 65534 65534 65534 gid 65534 65534 65534"), "%s",
		  traced.out);
	cr_assert(strstr(traced.out, "counter 8000\nfd 0 \nfd 1 \nfd 2 \nworker status 0\n"), "%s",
		  traced.out);
	/* the image before the exec, in the run's directory: the drop, then the exec */
	cr_assert_geq(capture_count(&cap, GT_SYSCALL_BEGIN, -1), 2u);
	struct capture execd;
	char dir[PATH_MAX + 16], path[PATH_MAX + 64];
	snprintf(dir, sizeof dir, "%s/uid-65534", traced.dir);
	struct stat st;
	cr_assert(stat(dir, &st) == 0 && st.st_uid == 65534 && (st.st_mode & 0777) == 0700);
	cr_assert_eq(capture_find_file(dir, cap.hdr->pid, path, sizeof path), 0, "no capture in %s", dir);
	cr_assert(stat(path, &st) == 0 && st.st_uid == 65534 && (st.st_mode & 0777) == 0600);
	cr_assert_eq(capture_open(&execd, path), 0);
	cr_assert_eq(execd.bad_bytes, 0u);
	cr_assert(execd.hdr->flags & GT_FILE_FINALIZED);
	cr_assert_eq(capture_count(&execd, GT_THREAD_START, -1), 4u);
	cr_assert_geq(capture_count(&execd, GT_BLOCK_BEGIN, GT_BK_MUTEX), 4u);
	cr_assert_eq(capture_count(&execd, GT_YIELD, -1), 1000u);
	capture_close(&execd);
	/* left for the harness to clean: the user directory and its capture */
	unlink(path);
	rmdir(dir);
	/* the untraced run made none */
	snprintf(dir, sizeof dir, "%s/uid-65534", plain.dir);
	cr_assert(stat(dir, &st) != 0);
}

Test(privdrop, gotrace_run_converts_the_program_execd_as_nobody, .fini = teardown, .timeout = 120)
{
	/* gotrace run's own directory (in TMPDIR): 0711, the user directory collected,
	 * converted and removed with it */
	need_root();
	memset(&tool, 0, sizeof tool);
	strcpy(tool.dir, "/tmp/gt-test-XXXXXX");
	cr_assert(mkdtemp(tool.dir));
	cr_assert(chmod(tool.dir, 0711) == 0); /* as /tmp lets nobody in */
	char tmpdir[PATH_MAX + 16], data[PATH_MAX + 32], trace[PATH_MAX + 16], want[128];
	snprintf(tmpdir, sizeof tmpdir, "TMPDIR=%s", tool.dir);
	snprintf(data, sizeof data, "GT_PRIVDROP_DATA=%s", tool.dir);
	snprintf(trace, sizeof trace, "%s/run.trace", tool.dir);
	/* per process: each image's summary line is looked at */
	const char *argv[] = {test_gotrace(), "run", "--per-process", "-o", trace, "--",
			      test_program("gt-privdrop"), "exec", NULL};
	const char *env[] = {tmpdir, data, NULL};
	cr_assert_eq(run_program(&tool, 0, argv, env), 0);
	cr_assert(WIFEXITED(tool.status) && WEXITSTATUS(tool.status) == 0, "%s", tool.err);
	cr_assert(strstr(tool.out, "counter 8000\n"), "%s", tool.out);
	const char *w = strstr(tool.err, "worker ");
	cr_assert_not_null(w, "%s", tool.err);
	int worker = atoi(w + 7);
	/* the worker's image before the exec and the program it execd as nobody */
	snprintf(want, sizeof want, "gt-privdrop (pid %d, then exec'd another program)", worker);
	cr_assert(strstr(tool.err, want), "%s", tool.err);
	snprintf(want, sizeof want, "gt-privdrop (pid %d), 5 threads", worker);
	cr_assert(strstr(tool.err, want), "%s", tool.err);
	cr_assert(!strstr(tool.err, "left "), "%s", tool.err);
	/* nothing of the run is left in TMPDIR but the traces and the worker's file */
	DIR *d = opendir(tool.dir);
	struct dirent *e;
	while (d && (e = readdir(d)))
		cr_assert(e->d_name[0] == '.' || !strncmp(e->d_name, "run.trace", 9) ||
			  !strcmp(e->d_name, "worker.data") || !strcmp(e->d_name, "stdout") ||
			  !strcmp(e->d_name, "stderr"), "left: %s", e->d_name);
	if (d)
		closedir(d);
	char execd[PATH_MAX + 32];
	snprintf(execd, sizeof execd, "%s.%d", trace, worker);
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(execd, true, &report), 0, "%s", report ? report : "");
	free(report);
}

Test(privdrop, dropped_worker_on_a_full_disk_stops_loudly, .fini = teardown, .timeout = 120)
{
	/* growth after the drop gets its blocks from MADV_POPULATE_WRITE: a full file system
	 * stops the recording with one line, never a SIGBUS */
	need_root();
	memset(&plain, 0, sizeof plain);
	memset(&traced, 0, sizeof traced);
	strcpy(traced.dir, "/tmp/gt-test-XXXXXX");
	cr_assert(mkdtemp(traced.dir));
	if (mount("tmpfs", traced.dir, "tmpfs", 0, "size=5m,mode=0700") != 0)
		cr_skip_test("cannot mount a tmpfs here: %s", strerror(errno));
	strcpy(mounted, traced.dir);
	const char *argv[] = {test_program("gt-privdrop"), "grow", NULL};
	const char *env[] = {"GOTRACE_CHUNK_SIZE=65536", "GOTRACE_STACKS=none",
			     "GT_PRIVDROP_YIELDS=800000", NULL};
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert_null(diff, "%s", diff);
	cr_assert(strstr(traced.out, "yields 800000\n"), "%s", traced.out);
	cr_assert(strstr(traced.out, "worker status 0\n"), "%s", traced.out);
	cr_assert(strstr(traced.err, "could not grow: no space left on device"), "%s", traced.err);
	/* one line per process that stopped: the parent (root) stops too when it needs a chunk
	 * once the worker has filled the file system (a move to the other CPU, under load) */
	struct capture parent;
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &parent), 0);
	unsigned stopped = 1 + !!(parent.hdr->flags & GT_FILE_WRITE_FAILED);
	capture_close(&parent);
	cr_assert_eq(count_gotrace_lines(traced.err), stopped, "%s", traced.err);
	pid_t worker = (pid_t)atoi(strstr(traced.err, "worker ") + 7);
	cr_assert_eq(run_capture(&traced, worker, 0, &cap), 0);
	cr_assert(cap.hdr->flags & GT_FILE_WRITE_FAILED);
	cr_assert(cap.hdr->flags & GT_FILE_FINALIZED);
	cr_assert_eq(cap.hdr->stop_errno, ENOSPC);
	cr_assert_eq(capture_count(&cap, GT_NOTICE, GT_NOTICE_WRITE_FAILED), 1u);
	cr_assert_eq(cap.bad_bytes, 0u);
	/* recording went on until the file system was full: over 4 MiB of one-word yields */
	size_t kept = capture_count(&cap, GT_YIELD, -1);
	cr_assert_gt(kept, (size_t)(4 << 20) / 8, "%zu yields kept", kept);
	cr_assert_geq(kept + cap.hdr->facts_lost, 800000u);
}
