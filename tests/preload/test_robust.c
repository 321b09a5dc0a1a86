/* What a demanding user relies on: no allocation in hooks, hooks inside signal handlers,
 * a capture that survives SIGKILL, write failures that stop recording without touching the
 * program, one clear line for a bad setting. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../support/emulation.h"
#include "traced_run.h"

static struct run run;
static struct capture cap;

static void teardown(void)
{
	capture_close(&cap);
	run_cleanup(&run);
}

static void nomalloc(const char *stacks, const char *selftest, const char *expect)
{
	char mode[64];
	const char *prog = test_program("gt-nomalloc");
	snprintf(mode, sizeof mode, "GOTRACE_STACKS=%s", stacks);
	const char *argv[] = {prog, NULL};
	const char *env[] = {mode, selftest, NULL};
	memset(&run, 0, sizeof run);
	cr_assert_eq(run_program(&run, 1, argv, env), 0);
	cr_assert(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0, "%s", run.err);
	cr_assert_str_eq(run.out, expect);
	cr_assert_eq(run_capture(&run, run.pid, 0, &cap), 0);
	/* the region really went through the hooks, contended ones included */
	cr_assert_geq(capture_count(&cap, GT_BLOCK_BEGIN, GT_BK_MUTEX), 1u);
	cr_assert_geq(capture_count(&cap, GT_YIELD, -1), 200u);
	cr_assert_geq(capture_count(&cap, GT_SYSCALL_BEGIN, -1), 400u);
}

Test(robust, no_malloc_in_hooks_unwind, .fini = teardown, .timeout = 60) { nomalloc("unwind", NULL, "mallocs 0\n"); }
Test(robust, no_malloc_in_hooks_fp, .fini = teardown, .timeout = 60) { nomalloc("fp", NULL, "mallocs 0\n"); }
Test(robust, no_malloc_in_hooks_none, .fini = teardown, .timeout = 60) { nomalloc("none", NULL, "mallocs 0\n"); }
Test(robust, no_malloc_counter_works, .fini = teardown, .timeout = 60)
{
	nomalloc("none", "GT_NOMALLOC_SELFTEST=1", "mallocs 200\n");
}

/* A thread's first walk (a hooked call in a signal handler crosses a signal frame, which
 * libunwind's unw_backtrace walked) allocates nothing of the program's: unw_backtrace's
 * per-thread cache sat behind a __thread variable of the dlopened libunwind, which glibc
 * allocated with malloc. */
Test(robust, no_malloc_in_first_walks, .fini = teardown, .timeout = 60)
{
	const char *argv[] = {test_program("gt-nomalloc"), "handlers", NULL};
	const char *env[] = {"GOTRACE_STACKS=unwind", NULL};
	memset(&run, 0, sizeof run);
	cr_assert_eq(run_program(&run, 1, argv, env), 0);
	cr_assert(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0, "%s", run.err);
	cr_assert_str_eq(run.out, "handlers 20 mallocs 0\n");
	cr_assert_eq(run_capture(&run, run.pid, 0, &cap), 0);
	size_t writes = 0;
	for (size_t i = 0; i < cap.n; i++)
		writes += cap.recs[i].h->type == GT_SYSCALL_BEGIN &&
			  *(const uint32_t *)cap.recs[i].payload == SYS_write;
	cr_assert_eq(writes, 20u, "each handler's write went through the hook");
}

Test(robust, hooks_in_signal_handler, .fini = teardown, .timeout = 30)
{
	memset(&run, 0, sizeof run);
	cr_assert_eq(run_target(&run, 1, "signal", NULL), 0);
	cr_assert(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0);
	cr_assert_eq(run_capture(&run, run.pid, 0, &cap), 0);
	/* each of the 200 handlers wrote through the write hook */
	size_t writes = 0;
	for (size_t i = 0; i < cap.n; i++)
		if (cap.recs[i].h->type == GT_SYSCALL_BEGIN && (uint32_t)((const uint64_t *)cap.recs[i].payload)[0] == SYS_write)
			writes++;
	cr_assert_eq(writes, 200u);
	cr_assert_eq(capture_count(&cap, GT_SYSCALL_END, -1), capture_count(&cap, GT_SYSCALL_BEGIN, -1));
	cr_assert_eq(capture_count(&cap, GT_YIELD, -1), 200u);
	cr_assert_eq(cap.bad_bytes, 0u);
}

Test(robust, sigkill_leaves_readable_capture, .fini = teardown, .timeout = 30)
{
	memset(&run, 0, sizeof run);
	run.kill_after_ms = 150;
	cr_assert_eq(run_target(&run, 1, "spin", NULL), 0);
	cr_assert(WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGKILL);
	cr_assert_eq(run_capture(&run, run.pid, 0, &cap), 0);
	cr_assert_eq(cap.bad_bytes, 0u);
	cr_assert_eq(cap.hdr->flags & GT_FILE_FINALIZED, 0u);
	cr_assert_eq(capture_count(&cap, GT_CAPTURE_END, -1), 0u);
	cr_assert_gt(capture_count(&cap, GT_YIELD, -1), 20u, "facts committed before the kill are kept");
	cr_assert_geq(capture_count(&cap, GT_MODULE, -1), 3u);
	/* never trimmed: its length is what is allocated plus the headroom of two 32 MiB windows
	 * for growth without a descriptor, not the 64 GiB it may grow to */
	long long unallocated = run_capture_unallocated(&run, run.pid);
	cr_assert(unallocated >= 0 && unallocated <= (64ll << 20), "%lld bytes unallocated", unallocated);
}

Test(robust, abort_leaves_readable_capture, .fini = teardown, .timeout = 30)
{
	memset(&run, 0, sizeof run);
	cr_assert_eq(run_target(&run, 1, "abort", NULL), 0);
	cr_assert(WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGABRT);
	cr_assert_eq(run_capture(&run, run.pid, 0, &cap), 0);
	cr_assert_eq(cap.bad_bytes, 0u);
	cr_assert_eq(capture_count(&cap, GT_THREAD_EXISTING, -1), 1u);
}

struct exit_case {
	char scenario[16];
	int code;
};

ParameterizedTestParameters(robust, exit_finalizes)
{
	static struct exit_case cases[] = {{"exit42", 42}, {"_exit9", 9}, {"threads", 0}};
	return cr_make_param_array(struct exit_case, cases, 3);
}

ParameterizedTest(struct exit_case *c, robust, exit_finalizes, .timeout = 30)
{
	memset(&run, 0, sizeof run);
	cr_assert_eq(run_target(&run, 1, c->scenario, NULL), 0);
	cr_assert(WIFEXITED(run.status) && WEXITSTATUS(run.status) == c->code);
	cr_assert_eq(run_capture(&run, run.pid, 0, &cap), 0);
	cr_assert(cap.hdr->flags & GT_FILE_FINALIZED);
	cr_assert_eq(capture_count(&cap, GT_CAPTURE_END, -1), 1u);
	/* the end is the last fact, and the file was trimmed to the chunks in use */
	cr_assert_eq(cap.recs[cap.n - 1].h->type, GT_CAPTURE_END);
	cr_assert_eq(cap.size, GT_FILE_HEADER_SIZE + cap.hdr->n_chunks * cap.hdr->chunk_size);
	capture_close(&cap);
	run_cleanup(&run);
}

Test(robust, chunk_turnover_keeps_every_fact, .fini = teardown, .timeout = 30)
{
	const char *env[] = {"GOTRACE_CHUNK_SIZE=16384", "GOTRACE_STACKS=none", NULL};
	memset(&run, 0, sizeof run);
	cr_assert_eq(run_target(&run, 1, "many", env), 0);
	cr_assert_eq(run_capture(&run, run.pid, 0, &cap), 0);
	/* 40000 one-word yields: 20 chunks of 16 KiB at least */
	cr_assert_geq(cap.hdr->n_chunks, 20u);
	cr_assert_eq(capture_count(&cap, GT_YIELD, -1), 40000u);
	cr_assert_eq(cap.bad_bytes, 0u);
	/* compact, but for the record that opens each new chunk (its base is that record's time) */
	cr_assert_geq(cap.compact, 40000u - cap.hdr->n_chunks, "%zu compact records", cap.compact);
	/* clock pairs ride along with new chunks */
	cr_assert_geq(capture_count(&cap, GT_CLOCK, -1), 2u);
}

Test(robust, file_size_limit_stops_recording_only, .fini = teardown, .timeout = 30)
{
	const char *env[] = {"GOTRACE_CHUNK_SIZE=16384", "GOTRACE_STACKS=none", NULL};
	memset(&run, 0, sizeof run);
	run.fsize_limit = 200000;
	cr_assert_eq(run_target(&run, 1, "many", env), 0);
	cr_assert(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0, "no SIGXFSZ for the program");
	cr_assert_str_eq(run.out, "many done\n");
	cr_assert_eq(count_gotrace_lines(run.err), 1, "one line: %s", run.err);
	cr_assert(strstr(run.err, "file size limit exceeded"), "%s", run.err);
	cr_assert_eq(run_capture(&run, run.pid, 0, &cap), 0);
	cr_assert(cap.hdr->flags & GT_FILE_WRITE_FAILED);
	cr_assert_gt(capture_count(&cap, GT_YIELD, -1), 1000u, "what fitted is kept");
	cr_assert_lt(capture_count(&cap, GT_YIELD, -1), 40000u);
	cr_assert_eq(cap.bad_bytes, 0u);
}

Test(robust, unwritable_capture_dir, .fini = teardown, .timeout = 30)
{
	const char *env[] = {"GOTRACE_CAPTURE_DIR=/nonexistent/gotrace-test", NULL};
	memset(&run, 0, sizeof run);
	cr_assert_eq(run_target(&run, 1, "exit42", env), 0);
	cr_assert(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 42);
	cr_assert_str_eq(run.out, "bye\n");
	cr_assert_eq(count_gotrace_lines(run.err), 1, "[%s]", run.err);
	cr_assert(strstr(run.err, "cannot create the capture"), "%s", run.err);
}

struct bad_setting {
	char env[48];
	char mention[32];
};

ParameterizedTestParameters(robust, malformed_setting)
{
	static struct bad_setting cases[] = {
		{"GOTRACE_STACKS=bogus", "GOTRACE_STACKS=bogus"},
		{"GOTRACE_STACK_DEPTH=500", "GOTRACE_STACK_DEPTH=500"},
		{"GOTRACE_START_DELAY=soon", "GOTRACE_START_DELAY=soon"},
		{"GOTRACE_DURATION=-1", "GOTRACE_DURATION=-1"},
		{"GOTRACE_FOLLOW=yes", "GOTRACE_FOLLOW=yes"},
	};
	return cr_make_param_array(struct bad_setting, cases, 5);
}

ParameterizedTest(struct bad_setting *b, robust, malformed_setting, .timeout = 30)
{
	const char *env[] = {b->env, NULL};
	memset(&run, 0, sizeof run);
	cr_assert_eq(run_target(&run, 1, "exit42", env), 0);
	cr_assert(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 42);
	cr_assert_eq(count_gotrace_lines(run.err), 1, "%s", run.err);
	cr_assert(strstr(run.err, b->mention), "%s", run.err);
	/* the default applies */
	cr_assert_eq(run_capture(&run, run.pid, 0, &cap), 0);
	cr_assert_eq(cap.hdr->stack_mode, GT_STACKS_UNWIND);
	cr_assert_eq(cap.hdr->stack_depth, 32u);
	cr_assert_eq(cap.hdr->start_delay_ns, 0u);
	cr_assert_eq(cap.hdr->duration_ns, 0u);
	cr_assert(cap.hdr->flags & GT_FILE_FINALIZED);
	capture_close(&cap);
	run_cleanup(&run);
}

/* A process starts with the first 64 KiB of its first chunk allocated (capture_file.c,
 * GT_FIRST_CHUNK): a short one leaves a capture of that many blocks, one chunk long; one that
 * writes more gets the rest of the chunk and keeps every fact.  Pinned to one CPU by taskset
 * (traced too: the program is its exec'd image), so that no second CPU's chunk widens it. */
static void first_chunk(const char *scenario, struct run *plain, char (*path)[PATH_MAX + 64])
{
	if (access("/usr/bin/taskset", X_OK) != 0)
		cr_skip_test("no /usr/bin/taskset to keep the program on one CPU");
	gt_skip_if_emulated(GT_NOT_EMULATED_HOST_PROGRAMS);
	const char *argv[] = {"/usr/bin/taskset", "-c", "0", test_target(), scenario, NULL};
	const char *env[] = {"GOTRACE_STACKS=none", NULL};
	memset(&run, 0, sizeof run);
	memset(plain, 0, sizeof *plain);
	const char *diff = run_twins(plain, &run, argv, env);
	cr_assert_null(diff, "%s", diff);
	/* the image taskset became by exec: gotrace-<pid>-1.gtcap */
	snprintf(*path, sizeof *path, "%s/gotrace-%d-1.gtcap", run.dir, (int)run.pid);
	cr_assert_eq(run_capture(&run, run.pid, 1, &cap), 0);
	cr_assert_str_eq(cap.hdr->exe_path, test_target());
	cr_assert_eq(cap.hdr->chunk_size, 1u << 20);
	cr_assert_eq(cap.hdr->n_chunks, 1u);
	cr_assert_eq(cap.size, GT_FILE_HEADER_SIZE + (1u << 20));
	cr_assert_eq(cap.bad_bytes, 0u);
	cr_assert(cap.hdr->flags & GT_FILE_FINALIZED);
}

Test(robust, short_process_allocates_64_kib, .fini = teardown, .timeout = 30)
{
	struct run plain;
	char path[PATH_MAX + 64];
	struct stat st;
	first_chunk("exit42", &plain, &path);
	cr_assert_eq(capture_count(&cap, GT_CAPTURE_END, -1), 1u);
	cr_assert_eq(stat(path, &st), 0);
	cr_assert_leq(st.st_blocks * 512, GT_FILE_HEADER_SIZE + (64 << 10), "%lld bytes allocated",
		      (long long)st.st_blocks * 512);
	run_cleanup(&plain);
}

Test(robust, first_chunk_widens_past_64_kib, .fini = teardown, .timeout = 30)
{
	struct run plain;
	char path[PATH_MAX + 64];
	first_chunk("many", &plain, &path);
	/* 40000 one-word yields: 320 KB in the one chunk, none lost */
	cr_assert_eq(capture_count(&cap, GT_YIELD, -1), 40000u);
	const struct gt_chunk_header *ch = (const void *)((const char *)cap.map + GT_FILE_HEADER_SIZE);
	cr_assert_gt(ch->used, 40000u * 8);
	run_cleanup(&plain);
}

/* The chunks allocated ahead are written with zeros through the page cache (capture_file.c
 * zero_fill), so that opening one maps pages already there instead of bringing each in
 * through the file system on a hook's thread: a killed run's file holds them beyond its
 * last chunk (looked at before anything reads the file). */
Test(robust, chunks_ahead_are_in_the_page_cache, .fini = teardown, .timeout = 60)
{
	if (access("/usr/bin/taskset", X_OK) != 0)
		cr_skip_test("no /usr/bin/taskset to keep the program on one CPU");
	gt_skip_if_emulated(GT_NOT_EMULATED_HOST_PROGRAMS);
	const char *argv[] = {"/usr/bin/taskset", "-c", "0", test_target(), "fill", NULL};
	const char *env[] = {"GOTRACE_STACKS=none", NULL};
	struct run plain;
	memset(&run, 0, sizeof run);
	memset(&plain, 0, sizeof plain);
	plain.kill_after_ms = run.kill_after_ms = 50;
	const char *diff = run_twins(&plain, &run, argv, env);
	cr_assert_null(diff, "%s", diff);
	cr_assert(WIFSIGNALED(run.status) && WTERMSIG(run.status) == SIGKILL);
	char path[PATH_MAX + 64];
	snprintf(path, sizeof path, "%s/gotrace-%d-1.gtcap", run.dir, (int)run.pid);
	int fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0, "%s: %s", path, strerror(errno));
	struct statfs fs;
	cr_assert_eq(fstatfs(fd, &fs), 0);
	if (fs.f_type == TMPFS_MAGIC)
		cr_skip_test("the capture directory is on a tmpfs, where chunks are not written ahead");
	struct stat st;
	cr_assert_eq(fstat(fd, &st), 0);
	const struct gt_file_header *h = mmap(NULL, GT_FILE_HEADER_SIZE, PROT_READ, MAP_SHARED, fd, 0);
	cr_assert_neq(h, MAP_FAILED);
	uint64_t chunk = h->chunk_size, used = GT_FILE_HEADER_SIZE + h->n_chunks * chunk;
	cr_assert_geq(h->n_chunks, 4u, "3.2 MB of facts on one CPU fill 4 chunks");
	cr_assert_gt((uint64_t)st.st_size, used + chunk);
	size_t len = (size_t)st.st_size - used, pages = (len + 4095) / 4096, resident = 0;
	char *rest = mmap(NULL, len, PROT_READ, MAP_SHARED, fd, (off_t)used);
	unsigned char *vec = malloc(pages);
	cr_assert(rest != MAP_FAILED && vec);
	cr_assert_eq(mincore(rest, len, vec), 0, "mincore: %s", strerror(errno));
	for (size_t i = 0; i < pages; i++)
		resident += vec[i] & 1;
	/* the growth that made chunk 3 allocated 3 more ahead */
	cr_assert_geq(resident, 3 * chunk / 4096, "%zu of the %zu pages past the last chunk are in the page cache",
		      resident, pages);
	free(vec);
	munmap(rest, len);
	munmap((void *)h, GT_FILE_HEADER_SIZE);
	close(fd);
	cr_assert_eq(run_capture(&run, run.pid, 1, &cap), 0);
	cr_assert_eq(capture_count(&cap, GT_YIELD, -1), 400000u);
	cr_assert_eq(cap.bad_bytes, 0u);
	run_cleanup(&plain);
}
