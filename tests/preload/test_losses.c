/* Every loss counted and said: a capture that cannot grow (RLIMIT_FSIZE, a full file system)
 * records what fits, says when and why it stopped and how many facts came after, and `gotrace
 * run`, `convert` and `report` say so in one line; a table overflow is a counted loss; an
 * image left by exec is called exec'd, a program that exited 0 never crashed.  Also where
 * nothing may get lost: stacks inside a dlopen constructor are symbolized, a relative
 * GOTRACE_OUT survives a chdir. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emulation.h"
#include "oracle.h"
#include "traced_run.h"

static struct run plain, traced, tool;
static struct capture cap;
static char mounted[PATH_MAX + 16];
static char shm_dir[32]; /* a capture directory on /dev/shm, when not "" */

static void teardown(void)
{
	capture_close(&cap);
	if (shm_dir[0]) {
		char path[PATH_MAX + 64];
		snprintf(path, sizeof path, "%s/gotrace-%d.gtcap", shm_dir, (int)traced.pid);
		unlink(path);
		rmdir(shm_dir);
	}
	if (mounted[0]) {
		umount(mounted);
		rmdir(mounted);
	}
	run_cleanup(&tool);
	run_cleanup(&traced);
	run_cleanup(&plain);
}

static const char *prog(const char *name)
{
	return test_program(name);
}

/* `gotrace ARGS...` untraced, its output in tool (in a directory of its own) */
static void run_gotrace_env(const char *const argv[], const char *const env[])
{
	run_cleanup(&tool);
	memset(&tool, 0, sizeof tool);
	cr_assert_eq(run_program(&tool, 0, argv, env), 0);
}

static void run_gotrace(const char *const argv[]) { run_gotrace_env(argv, NULL); }

static int lines_with(const char *text, const char *needle)
{
	int n = 0;
	for (const char *p = text; (p = strstr(p, needle)); p++)
		n++;
	return n;
}

static const char *capture_path(const struct run *r, const char *dir, int nth)
{
	static char path[PATH_MAX + 64];
	if (nth)
		snprintf(path, sizeof path, "%s/gotrace-%d-%d.gtcap", dir ? dir : r->dir, (int)r->pid, nth);
	else
		snprintf(path, sizeof path, "%s/gotrace-%d.gtcap", dir ? dir : r->dir, (int)r->pid);
	return path;
}

static off_t file_size(const char *path)
{
	struct stat st;
	return stat(path, &st) == 0 ? st.st_size : -1;
}

/* The capture of a run that could not grow: what fitted is kept, the stop is in the header
 * and in a notice, every yield is either recorded or counted lost, the exit was normal. */
static void check_stopped(const char *path, int err, long limit, long n_yields)
{
	cr_assert_eq(capture_open(&cap, path), 0);
	const struct gt_file_header *h = cap.hdr;
	cr_assert(h->flags & GT_FILE_WRITE_FAILED);
	cr_assert(h->flags & GT_FILE_FINALIZED, "exited normally after the stop");
	cr_assert_eq(h->stop_errno, err);
	cr_assert_gt(h->stop_tsc, h->start_tsc);
	cr_assert_eq(capture_count(&cap, GT_NOTICE, GT_NOTICE_WRITE_FAILED), 1u);
	const struct cap_rec *n = capture_find(&cap, GT_NOTICE, GT_NOTICE_WRITE_FAILED, 0);
	cr_assert_eq(*(const uint64_t *)n->payload, (uint64_t)err);
	cr_assert_eq(n->h->tsc, h->stop_tsc);
	/* recording went on until not one more chunk fitted */
	off_t size = file_size(path);
	cr_assert_leq(size, limit);
	cr_assert_gt(size + 2 * (off_t)h->chunk_size, limit, "stopped at %ld of %ld bytes", (long)size, limit);
	size_t kept = capture_count(&cap, GT_YIELD, -1);
	cr_assert_gt(kept, (size_t)(limit - 4 * (long)h->chunk_size) / 24, "%zu yields kept", kept);
	cr_assert_geq(kept + h->facts_lost, (size_t)n_yields, "%zu kept + %lu lost", kept,
		      (unsigned long)h->facts_lost);
	cr_assert_eq(cap.bad_bytes, 0u);
	capture_close(&cap);
	memset(&cap, 0, sizeof cap);
}

/* convert, report and report --json on the capture each say it in one line */
static void check_said(const char *capture, const char *why)
{
	char trace[PATH_MAX + 16];
	snprintf(trace, sizeof trace, "%s/t.trace", traced.dir);
	const char *conv[] = {test_gotrace(), "convert", capture, "-o", trace, NULL};
	run_gotrace(conv);
	cr_assert(WIFEXITED(tool.status) && WEXITSTATUS(tool.status) == 0, "%s", tool.err);
	cr_assert_eq(lines_with(tool.err, "recording stopped early at "), 1, "%s", tool.err);
	cr_assert(strstr(tool.err, why), "%s", tool.err);
	cr_assert(strstr(tool.err, "facts after that were not recorded"), "%s", tool.err);
	const char *rep[] = {test_gotrace(), "report", capture, NULL};
	run_gotrace(rep);
	cr_assert_eq(lines_with(tool.out, "recording stopped early at "), 1, "%s", tool.out);
	cr_assert(!strstr(tool.out, "did not finish normally"), "%s", tool.out);
	const char *json[] = {test_gotrace(), "report", "--json", capture, NULL};
	run_gotrace(json);
	cr_assert(strstr(tool.out, "\"finalized\":true"), "%s", tool.out);
	char want[64];
	snprintf(want, sizeof want, "\"stopped_early\":{\"errno\":%d,", why[0] == 'f' ? EFBIG : ENOSPC);
	cr_assert(strstr(tool.out, want), "%s", tool.out);
	cr_assert(strstr(tool.out, "\"facts_lost\":"), "%s", tool.out);
}

Test(losses, file_size_limit_fills_what_it_can, .fini = teardown, .timeout = 120)
{
	/* the program limits itself, after the capture exists: the capture runs into it */
	const char *argv[] = {prog("gt-losses"), "yields", "300000", "2097152", NULL};
	const char *env[] = {"GOTRACE_STACKS=none", "GOTRACE_CHUNK_SIZE=65536", NULL};
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert_null(diff, "%s", diff);
	cr_assert_str_eq(traced.out, "yields 300000 done\n");
	cr_assert_eq(count_gotrace_lines(traced.err), 1, "%s", traced.err);
	check_stopped(capture_path(&traced, NULL, 0), EFBIG, 2097152, 300000);
	check_said(capture_path(&traced, NULL, 0), "file size limit (RLIMIT_FSIZE)");
}

struct fsize_case {
	long mib;
	int on_tmpfs; /* the capture on /dev/shm, else beside the run on a disk */
};

ParameterizedTestParameters(losses, file_size_limit_never_kills_the_program)
{
	static struct fsize_case cases[] = {{1, 1}, {1, 0}, {2, 1}, {2, 0}, {4, 1}, {4, 0}};
	return cr_make_param_array(struct fsize_case, cases, sizeof cases / sizeof *cases);
}

/* ulimit -f, set before the program starts (bare LD_PRELOAD): the program writes half of it
 * itself and exits 0 as untraced; the capture stops at the limit without SIGXFSZ, even where
 * chunk 0 never got its full stride (1 MiB), and says so. */
ParameterizedTest(struct fsize_case *c, losses, file_size_limit_never_kills_the_program,
		  .fini = teardown, .timeout = 120)
{
	char own[PATH_MAX + 16], capdir[PATH_MAX + 32], bytes[24];
	if (c->on_tmpfs)
		cr_assert(mkdtemp(strcpy(shm_dir, "/dev/shm/gt-test-XXXXXX")));
	snprintf(bytes, sizeof bytes, "%ld", c->mib << 19);
	memset(&plain, 0, sizeof plain);
	memset(&traced, 0, sizeof traced);
	cr_assert(mkdtemp(strcpy(plain.dir, "/tmp/gt-test-XXXXXX")));
	cr_assert(mkdtemp(strcpy(traced.dir, "/tmp/gt-test-XXXXXX")));
	plain.fsize_limit = traced.fsize_limit = c->mib << 20;
	snprintf(own, sizeof own, "%s/own", traced.dir);
	snprintf(capdir, sizeof capdir, "GOTRACE_CAPTURE_DIR=%s", c->on_tmpfs ? shm_dir : traced.dir);
	const char *argv[] = {prog("gt-losses"), "busy", "200000", bytes, own, NULL};
	const char *env[] = {"GOTRACE_STACKS=none", capdir, NULL};
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert_null(diff, "%s", diff);
	char capture[PATH_MAX + 64];
	snprintf(capture, sizeof capture, "%s", capture_path(&traced, c->on_tmpfs ? shm_dir : NULL, 0));
	char want[64];
	snprintf(want, sizeof want, "busy 200000 wrote %ld\n", c->mib << 19);
	cr_assert_str_eq(traced.out, want);
	cr_assert_eq(count_gotrace_lines(traced.err), 1, "%s", traced.err);
	cr_assert(strstr(traced.err, "file size limit exceeded"), "%s", traced.err);
	cr_assert_eq(capture_open(&cap, capture), 0);
	cr_assert(cap.hdr->flags & GT_FILE_FINALIZED, "exited normally after the stop");
	cr_assert_eq(cap.hdr->stop_errno, EFBIG);
	cr_assert_leq(cap.size, (size_t)(c->mib << 20));
	cr_assert_eq(cap.bad_bytes, 0u);
	capture_close(&cap);
	memset(&cap, 0, sizeof cap);
	check_said(capture, "file size limit (RLIMIT_FSIZE)");
}

Test(losses, full_file_system, .fini = teardown, .timeout = 180)
{
	if (geteuid() != 0)
		cr_skip_test("mounting a 5 MiB tmpfs needs root (CI runs as root)");
	memset(&traced, 0, sizeof traced);
	cr_assert(mkdtemp(strcpy(traced.dir, "/tmp/gt-test-XXXXXX")));
	snprintf(mounted, sizeof mounted, "%s/fs", traced.dir);
	cr_assert_eq(mkdir(mounted, 0700), 0);
	if (mount("tmpfs", mounted, "tmpfs", 0, "size=5m") != 0) {
		int e = errno;
		rmdir(mounted);
		mounted[0] = 0;
		cr_skip_test("cannot mount a tmpfs here: %s", strerror(e));
	}
	char capdir[PATH_MAX + 64];
	snprintf(capdir, sizeof capdir, "GOTRACE_CAPTURE_DIR=%s", mounted);
	const char *argv[] = {prog("gt-losses"), "yields", "800000", NULL};
	const char *env[] = {"GOTRACE_STACKS=none", "GOTRACE_CHUNK_SIZE=65536", capdir, NULL};
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert_null(diff, "%s", diff);
	check_stopped(capture_path(&traced, mounted, 0), ENOSPC, 5 << 20, 800000);
	check_said(capture_path(&traced, mounted, 0), "no space left");
	unlink(capture_path(&traced, mounted, 0));

	/* gotrace run: one line, and a program that exited 0 is not called crashed (a bound above
	 * the disk's size: the default, a quarter of the free space, would stop it first) */
	char out[PATH_MAX + 16];
	snprintf(out, sizeof out, "%s/run.trace", traced.dir);
	const char *run[] = {test_gotrace(), "run", "--stacks", "none", "--capture-dir", mounted,
			     "--max-capture", "1T", "-o", out, "--", prog("gt-losses"), "yields",
			     "800000", NULL};
	const char *chunk[] = {"GOTRACE_CHUNK_SIZE=65536", NULL};
	run_gotrace_env(run, chunk);
	cr_assert(WIFEXITED(tool.status) && WEXITSTATUS(tool.status) == 0, "%s", tool.err);
	cr_assert_str_eq(tool.out, plain.out);
	cr_assert_eq(lines_with(tool.err, "recording stopped early at "), 1, "%s", tool.err);
	cr_assert(strstr(tool.err, "no space left"), "%s", tool.err);
	cr_assert(!strstr(tool.err, "did not finish normally"), "%s", tool.err);
	cr_assert_geq(file_size(out), 1, "the trace of what fitted");
}

Test(losses, exec_image_called_exec, .fini = teardown, .timeout = 120)
{
	gt_skip_if_emulated(GT_NOT_EMULATED_HOST_PROGRAMS);
	char cmd[PATH_MAX + 64], out[PATH_MAX + 16];
	snprintf(cmd, sizeof cmd, "exec %s yields 10", prog("gt-losses"));
	const char *argv[] = {"/bin/sh", "-c", cmd, NULL};
	const char *diff = run_twins(&plain, &traced, argv, NULL);
	cr_assert_null(diff, "%s", diff);
	/* the shell's image and the program it became: the first says it exec'd */
	cr_assert_eq(run_count_captures(&traced), 2);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert_eq(capture_count(&cap, GT_PROCESS, GT_PROC_EXEC), 1u);
	cr_assert(!(cap.hdr->flags & GT_FILE_FINALIZED));
	const char *rep[] = {test_gotrace(), "report", capture_path(&traced, NULL, 0), NULL};
	run_gotrace(rep);
	cr_assert(strstr(tool.out, "the process exec'd another program"), "%s", tool.out);
	cr_assert(!strstr(tool.out, "did not finish normally"), "%s", tool.out);
	const char *json[] = {test_gotrace(), "report", "--json", capture_path(&traced, NULL, 0), NULL};
	run_gotrace(json);
	cr_assert(strstr(tool.out, "\"finalized\":false,\"execd\":true,"), "%s", tool.out);

	snprintf(out, sizeof out, "%s/x.trace", traced.dir);
	const char *run[] = {test_gotrace(), "run", "--per-process", "-o", out, "--", "/bin/sh", "-c",
			     cmd, NULL};
	run_gotrace(run);
	cr_assert(WIFEXITED(tool.status) && WEXITSTATUS(tool.status) == 0, "%s", tool.err);
	cr_assert_str_eq(tool.out, plain.out);
	cr_assert_eq(lines_with(tool.err, "then exec'd another program"), 1, "%s", tool.err);
	cr_assert(!strstr(tool.err, "did not finish normally"), "%s", tool.err);
}

/* A program that execs itself 200 times is traced in every image: each capture is named
 * (gotrace-PID-1 ... -200: the names do not stop at 99), each image but the last says it
 * exec'd, the last ended normally, and the run's summary calls no image unfinished. */
Test(losses, every_one_of_200_self_execs_traced, .fini = teardown, .timeout = 120)
{
	const char *argv[] = {prog("gt-losses"), "execs", "200", NULL};
	const char *diff = run_twins(&plain, &traced, argv, NULL);
	cr_assert_null(diff, "%s", diff);
	cr_assert_str_eq(traced.out, "execs done\n");
	cr_assert_eq(count_gotrace_lines(traced.err), 0, "%s", traced.err);
	cr_assert_eq(run_count_captures(&traced), 201);
	for (int nth = 0; nth <= 200; nth++) {
		cr_assert_eq(run_capture(&traced, traced.pid, nth, &cap), 0, "image %d", nth);
		cr_assert_eq(capture_count(&cap, GT_YIELD, -1), 1u, "image %d", nth);
		cr_assert_eq(capture_count(&cap, GT_PROCESS, GT_PROC_EXEC), nth < 200 ? 1u : 0u);
		cr_assert_eq(!!(cap.hdr->flags & GT_FILE_FINALIZED), nth == 200, "image %d", nth);
		capture_close(&cap);
		memset(&cap, 0, sizeof cap);
	}
	char out[PATH_MAX + 16];
	snprintf(out, sizeof out, "%s/x.trace", traced.dir);
	const char *run[] = {test_gotrace(), "run", "-o", out, "--", prog("gt-losses"), "execs",
			     "200", NULL};
	run_gotrace(run);
	cr_assert(WIFEXITED(tool.status) && WEXITSTATUS(tool.status) == 0, "%s", tool.err);
	cr_assert_str_eq(tool.out, plain.out);
	cr_assert(strstr(tool.err, ": 201 processes, 201 threads,"), "%s", tool.err);
	cr_assert(!strstr(tool.err, "did not finish normally"), "%s", tool.err);
	cr_assert(!strstr(tool.err, "cannot create the capture"), "%s", tool.err);
}

/* An image that execs leaves its capture cut to the chunks it used, as a normal exit does
 * (issue 27 item 8: `--keep-capture` kept an exec'd image's at 64 MiB apparent for 72 KiB
 * used).  Both images of `execs 1` make one yield: with as many chunks (one per CPU they
 * wrote on, which migrations decide), their kept captures are as long. */
Test(losses, an_exec_trims_the_capture_it_leaves, .fini = teardown, .timeout = 60)
{
	const char *argv[] = {prog("gt-losses"), "execs", "1", NULL};
	const char *diff = run_twins(&plain, &traced, argv, NULL);
	cr_assert_null(diff, "%s", diff);
	char out[PATH_MAX + 16];
	snprintf(out, sizeof out, "%s/x.trace", traced.dir);
	const char *run[] = {test_gotrace(), "run", "--keep-capture", "-o", out, "--",
			     prog("gt-losses"), "execs", "1", NULL};
	run_gotrace(run);
	cr_assert(WIFEXITED(tool.status) && WEXITSTATUS(tool.status) == 0, "%s", tool.err);
	DIR *d = opendir(traced.dir);
	cr_assert_not_null(d);
	struct dirent *e;
	off_t size[2] = {-1, -1}, used[2] = {-1, -1}; /* [1]: the image that exited */
	uint32_t chunks[2] = {0, 0};
	int kept = 0;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (strncmp(e->d_name, "x.trace", 7) || len < 6 || strcmp(e->d_name + len - 6, ".gtcap"))
			continue;
		char path[PATH_MAX + 300];
		snprintf(path, sizeof path, "%s/%s", traced.dir, e->d_name);
		struct gt_file_header h;
		struct stat st;
		FILE *f = fopen(path, "rb");
		cr_assert(f && fread(&h, sizeof h, 1, f) == 1 && stat(path, &st) == 0, "%s", path);
		fclose(f);
		int exited = (h.flags & GT_FILE_FINALIZED) != 0;
		size[exited] = st.st_size;
		used[exited] = (off_t)(h.header_size + h.n_chunks * (uint64_t)h.chunk_size);
		chunks[exited] = h.n_chunks;
		kept++;
	}
	closedir(d);
	cr_assert_eq(kept, 2, "%s", tool.err);
	cr_assert_geq(size[0], 0, "no capture of the image that exec'd");
	cr_assert_geq(size[1], 0, "no capture of the image that exited");
	for (int i = 0; i < 2; i++)
		cr_assert_leq(size[i], used[i], "%lld bytes for %lld in chunks", (long long)size[i],
			      (long long)used[i]);
	if (chunks[0] == chunks[1])
		cr_assert_eq(size[0], size[1], "%u chunks each", chunks[0]);
}

/* An exec that fails leaves the image recording: its capture, cut before the exec, grows
 * again from there (200000 one-word yields fill 16 KiB chunks a hundred times over). */
Test(losses, a_failed_exec_records_on, .fini = teardown, .timeout = 60)
{
	const char *argv[] = {prog("gt-losses"), "exec-fails", "200000", NULL};
	const char *env[] = {"GOTRACE_CHUNK_SIZE=16384", NULL};
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert_null(diff, "%s", diff);
	cr_assert_str_eq(traced.out, "yields 200000 done\n");
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert_eq(cap.bad_bytes, 0u);
	cr_assert_eq(cap.hdr->facts_lost, 0u);
	cr_assert(cap.hdr->flags & GT_FILE_FINALIZED);
	cr_assert_eq(capture_count(&cap, GT_YIELD, -1), 200000u);
	const struct cap_rec *x = capture_find(&cap, GT_PROCESS, GT_PROC_EXEC, 1);
	cr_assert_not_null(x, "the failed exec is not in the capture");
	cr_assert_eq(((const struct gt_p_process *)x->payload)->err, ENOENT);
}

/* Runs a program that overflows a table, twins compared; the capture stays open in cap and
 * the notices of kind are summed. */
static uint64_t run_overflow(const char *const argv[], const char *const env[], const char *out,
			     int kind)
{
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert_null(diff, "%s", diff);
	cr_assert_str_eq(traced.out, out);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	uint64_t lost = 0;
	for (size_t i = 0; i < cap.n; i++)
		if (cap.recs[i].h->type == GT_NOTICE && cap.recs[i].h->aux == kind)
			lost += *(const uint64_t *)cap.recs[i].payload;
	return lost;
}

/* The converter's summary names the counter; the JSON report (when json_key) has the count. */
static void check_counted(const char *counter, const char *json_key, uint64_t lost)
{
	capture_close(&cap);
	memset(&cap, 0, sizeof cap);
	const char *path = capture_path(&traced, NULL, 0);
	char trace[PATH_MAX + 16], want[128];
	snprintf(trace, sizeof trace, "%s/o.trace", traced.dir);
	const char *conv[] = {test_gotrace(), "convert", path, "-o", trace, NULL};
	run_gotrace(conv);
	cr_assert(WIFEXITED(tool.status) && WEXITSTATUS(tool.status) == 0, "%s", tool.err);
	cr_assert(strstr(tool.err, counter), "%s", tool.err);
	snprintf(want, sizeof want, "%lu facts dropped while recording", (unsigned long)lost);
	cr_assert(strstr(tool.err, want), "%s", tool.err);
	if (!json_key)
		return;
	const char *json[] = {test_gotrace(), "report", "--json", path, NULL};
	run_gotrace(json);
	snprintf(want, sizeof want, "\"%s\":%lu,", json_key, (unsigned long)lost);
	cr_assert(strstr(tool.out, want), "no %s in %.2000s", want, tool.out);
}

Test(losses, waiter_table_overflow_counted, .fini = teardown, .timeout = 120)
{
	const char *argv[] = {prog("gt-losses"), "waiters", "12", NULL};
	uint64_t lost = run_overflow(argv, NULL, "12 waiters woken\n", GT_NOTICE_WAITERS_LOST);
	/* 12 waits in a window of 8 slots */
	cr_assert_geq(lost, 4u);
	cr_assert_leq(lost, 12u);
	check_counted("waits the recorder's table could not hold (waker unknown)", "waiters_lost", lost);
}

Test(losses, stack_table_overflow_counted, .fini = teardown, .timeout = 180)
{
	/* 2^18 call paths against a table of 2^17 slots */
	const char *argv[] = {prog("gt-losses"), "stacks", "18", NULL};
	const char *env[] = {"GOTRACE_STACKS=fp", NULL};
	uint64_t lost = run_overflow(argv, env, "262144 call paths\n", GT_NOTICE_STACKS_LOST);
	uint64_t without = 0;
	for (size_t i = 0; i < cap.n; i++)
		if (cap.recs[i].h->type == GT_YIELD &&
		    !((const struct gt_p_stackonly *)cap.recs[i].payload)->stack)
			without++;
	/* every yield without a stack is a counted loss (a few other facts may lose one too) */
	cr_assert_geq(without, 262144u - (1u << 17));
	cr_assert_geq(lost, without);
	cr_assert_leq(lost, without + 16, "%lu lost, %lu yields without a stack",
		      (unsigned long)lost, (unsigned long)without);
	check_counted("stacks the recorder reported lost", "stacks_lost", lost);
}

Test(losses, thread_table_overflow_counted, .fini = teardown, .timeout = 180)
{
	/* 4200 threads and main against a table of 4096 */
	const char *argv[] = {prog("gt-losses"), "threads", "4200", NULL};
	const char *env[] = {"GOTRACE_STACKS=none", NULL};
	uint64_t lost = run_overflow(argv, env, "4200 threads\n", GT_NOTICE_THREADS_LOST);
	cr_assert_eq(lost, 4200u + 1 - 4096, "%lu threads lost", (unsigned long)lost);
	/* (a JSON report of 4201 threads is larger than a run keeps of stdout) */
	check_counted("threads the recorder's table could not hold", NULL, lost);
}

static char *slurp_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	char *buf = malloc((size_t)n + 1);
	*len = fread(buf, 1, (size_t)n, f);
	fclose(f);
	return buf;
}

Test(losses, dlopen_constructor_symbolized, .fini = teardown, .timeout = 120)
{
	const char *argv[] = {prog("gt-losses"), "dlopen", prog("libgt_losses_ctor.so"), NULL};
	const char *diff = run_twins(&plain, &traced, argv, NULL);
	cr_assert_null(diff, "%s", diff);
	cr_assert_str_eq(traced.out, "constructor ran\n");
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert_geq(capture_count(&cap, GT_BLOCK_BEGIN, GT_BK_MUTEX), 1u);
	capture_close(&cap);
	memset(&cap, 0, sizeof cap);

	char trace[PATH_MAX + 16];
	snprintf(trace, sizeof trace, "%s/d.trace", traced.dir);
	const char *conv[] = {test_gotrace(), "convert", capture_path(&traced, NULL, 0), "-o", trace, NULL};
	run_gotrace(conv);
	cr_assert(WIFEXITED(tool.status) && WEXITSTATUS(tool.status) == 0, "%s", tool.err);
	size_t len = 0;
	char *bytes = slurp_file(trace, &len);
	cr_assert_not_null(bytes);
	/* the block inside the constructor names its function: the module was known in time */
	cr_assert_not_null(memmem(bytes, len, "gt_losses_ctor_blocks", 21),
			   "the constructor's frame is not symbolized");
	free(bytes);
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace, true, &report), 0, "%s", report ? report : "");
	free(report);
	unlink(trace);
}

Test(losses, relative_out_survives_chdir, .fini = teardown, .timeout = 120)
{
	memset(&traced, 0, sizeof traced);
	cr_assert(mkdtemp(strcpy(traced.dir, "/tmp/gt-test-XXXXXX")));
	char caps[PATH_MAX + 16], trace[PATH_MAX + 16];
	snprintf(caps, sizeof caps, "%s/caps", traced.dir);
	snprintf(trace, sizeof trace, "%s/rel.trace", traced.dir);
	cr_assert_eq(mkdir(caps, 0700), 0);
	/* the program starts here and leaves for / before it ends */
	cr_assert_eq(chdir(traced.dir), 0);
	const char *argv[] = {prog("gt-losses"), "chdir", "/", NULL};
	const char *env[] = {"GOTRACE_OUT=rel.trace", "GOTRACE_CAPTURE_DIR=caps", NULL};
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert_null(diff, "%s", diff);
	cr_assert_str_eq(traced.out, "in /\n");
	cr_assert_str_eq(traced.err, "", "no message: %s", traced.err);
	cr_assert_geq(file_size(trace), 1, "no trace at %s", trace);
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace, true, &report), 0, "%s", report ? report : "");
	free(report);
	cr_assert_eq(capture_open(&cap, capture_path(&traced, caps, 0)), 0);
	cr_assert_eq(capture_count(&cap, GT_THREAD_START, -1), 1u);
	capture_close(&cap);
	memset(&cap, 0, sizeof cap);
	unlink(capture_path(&traced, caps, 0));
	rmdir(caps);
	unlink(trace);
}
