/* The program keeps its descriptors and its address space: it gets the descriptor numbers and
 * errors it gets untraced, closing everything does not stop the recording, no descriptor of
 * the tracer shows (not even libunwind's pipe), RLIMIT_NOFILE and RLIMIT_AS budgets are its
 * own.  Each test runs gt-fds untraced and traced (run_twins) and reads the capture. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "emulation.h"
#include "traced_run.h"

static struct run plain, traced;
static struct capture cap;

static void teardown(void)
{
	capture_close(&cap);
	run_cleanup(&plain);
	run_cleanup(&traced);
}

static const char *gt_fds(void)
{
	return test_program("gt-fds");
}

/* small chunks and 40000 yields per phase: the file grows and a new window is mapped after
 * the program has closed or replaced its descriptors */
static const char *const many_env[] = {"GOTRACE_CHUNK_SIZE=16384", "GT_FDS_YIELDS=40000", NULL};

static void twins(const char *const argv[], const char *const env[])
{
	memset(&plain, 0, sizeof plain);
	memset(&traced, 0, sizeof traced);
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert_null(diff, "%s", diff);
	cr_assert(WIFEXITED(traced.status) && WEXITSTATUS(traced.status) == 0, "status %#x: %s",
		  traced.status, traced.err);
	cr_assert_eq(count_gotrace_lines(traced.err), 0, "%s", traced.err);
}

/* every fact kept: the file never stopped growing, nothing dropped */
static void assert_complete(size_t yields)
{
	cr_assert_eq(cap.bad_bytes, 0u);
	cr_assert_eq(cap.hdr->flags & GT_FILE_WRITE_FAILED, 0u);
	cr_assert(cap.hdr->flags & GT_FILE_FINALIZED);
	cr_assert_eq(capture_count(&cap, GT_NOTICE, GT_NOTICE_DROPPED), 0u);
	cr_assert_eq(capture_count(&cap, GT_YIELD, -1), yields);
	cr_assert_eq(capture_count(&cap, GT_CAPTURE_END, -1), 1u);
}

Test(fds, low_descriptors_closed_reopened_duplicated, .fini = teardown, .timeout = 60)
{
	const char *argv[] = {gt_fds(), "lowfds", NULL};
	twins(argv, many_env);
	cr_assert(strstr(traced.out, "close 3: -1 EBADF\n"), "%s", traced.out);
	cr_assert(strstr(traced.out, "first free: 10\n"), "%s", traced.out);
	/* the program's own file: as written, not extended by the tracer */
	char a[4200], b[4200];
	snprintf(a, sizeof a, "%s/lowfds.data", plain.dir);
	snprintf(b, sizeof b, "%s/lowfds.data", traced.dir);
	struct stat sa, sb;
	cr_assert(stat(a, &sa) == 0 && stat(b, &sb) == 0);
	cr_assert_eq(sb.st_size, 1600);
	cr_assert_eq(sa.st_size, sb.st_size);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	assert_complete(80000);
	/* more than one window of 64 chunks */
	cr_assert_gt(cap.hdr->n_chunks, 64u);
}

/* open returns the lowest free descriptor (POSIX; daemons rely on it): 200 000 times
 * close(fd) then open() gives fd back, traced as untraced, while the capture grows in 16 KiB
 * chunks and, with "shared", other threads yield and ping-pong process-shared semaphores
 * (whose slow paths look the memory up in /proc/self/maps).  Alone, no descriptor of the
 * tracer is left where the next open would find it. */
struct others {
	char name[8];
};

ParameterizedTestParameters(fds, lowest_free_descriptor_while_others_run)
{
	static struct others others[] = {{"alone"}, {"shared"}};
	return cr_make_param_array(struct others, others, 2);
}

ParameterizedTest(struct others *others, fds, lowest_free_descriptor_while_others_run,
		  .fini = teardown, .timeout = 120)
{
	gt_skip_if_emulated("under qemu-user, clone(CLONE_VM | CLONE_THREAD) without CLONE_FILES "
			    "(files_apart.c's own descriptor table) fails with EINVAL");
	const char *argv[] = {gt_fds(), "lowest", "200000", others->name, NULL};
	const char *env[] = {"GOTRACE_CHUNK_SIZE=16384", "GOTRACE_STACKS=none", NULL};
	twins(argv, env);
	cr_assert_str_eq(traced.out, "lowest: 200000 opens, 0 gave another number than the one "
				     "just closed\n");
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert_eq(cap.bad_bytes, 0u);
	cr_assert(cap.hdr->flags & GT_FILE_FINALIZED);
	cr_assert_eq(cap.hdr->flags & GT_FILE_WRITE_FAILED, 0u);
	cr_assert_gt(cap.hdr->n_chunks, 64u, "the capture grew past a window");
}

/* mlockall(MCL_CURRENT | MCL_FUTURE) under an 8 MiB RLIMIT_MEMLOCK, CAP_IPC_LOCK dropped by
 * the program itself (capset: the tests may run as root): it locks what it locks untraced,
 * its thread and allocations get what they get untraced; the tracer's mappings count for
 * nothing.  With 1 MiB chunks the capture's 32 MiB window (more than the limit) stays
 * unlocked; with 16 KiB chunks its 1 MiB windows turn over, and the capture stops (one line)
 * where it would have to map one more, locked. */
struct memlock_case {
	char chunk[16];
	int stops;
};

ParameterizedTestParameters(fds, mlockall_under_the_locked_memory_limit)
{
	static struct memlock_case cases[] = {{"1048576", 0}, {"16384", 1}};
	return cr_make_param_array(struct memlock_case, cases, 2);
}

ParameterizedTest(struct memlock_case *c, fds, mlockall_under_the_locked_memory_limit,
		  .fini = teardown, .timeout = 60)
{
	gt_skip_if_emulated("under qemu-user, mlockall fails with ENOMEM even untraced");
	char chunk[48];
	snprintf(chunk, sizeof chunk, "GOTRACE_CHUNK_SIZE=%s", c->chunk);
	const char *argv[] = {gt_fds(), "mlockall", "8", NULL};
	const char *env[] = {chunk, NULL};
	memset(&plain, 0, sizeof plain);
	memset(&traced, 0, sizeof traced);
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert_null(diff, "%s", diff);
	cr_assert_str_eq(plain.out, "setrlimit: 0\ndrop CAP_IPC_LOCK: 0\nmlockall: 0\nthread: 0\n"
				    "16 MiB more: refused\nmunlockall: 0\n");
	cr_assert_eq(count_gotrace_lines(traced.err), c->stops, "%s", traced.err);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert(cap.hdr->flags & GT_FILE_FINALIZED);
	cr_assert_eq(cap.bad_bytes, 0u);
	if (!c->stops) {
		assert_complete(200000); /* every yield of the thread */
		return;
	}
	cr_assert(strstr(traced.err, "the program locked its memory (mlockall)"), "%s", traced.err);
	cr_assert(cap.hdr->flags & GT_FILE_WRITE_FAILED);
	cr_assert_eq(cap.hdr->stop_errno, ENOMEM);
	cr_assert_gt(capture_count(&cap, GT_YIELD, -1), 10000u, "the mapped windows were used");
}

Test(fds, shell_exec_3_to_a_file, .fini = teardown, .timeout = 60)
{
	gt_skip_if_emulated(GT_NOT_EMULATED_HOST_PROGRAMS);
	/* the file a shell opens as descriptor 3 keeps exactly what the script wrote */
	const char *script = "exec 3>\"$GOTRACE_CAPTURE_DIR/shell.out\"; i=0; "
			     "while [ $i -lt 8000 ]; do echo line $i >&3; i=$((i+1)); done; "
			     "exec 3>&-; wc -c < \"$GOTRACE_CAPTURE_DIR/shell.out\"";
	const char *argv[] = {"/bin/sh", "-c", script, NULL};
	const char *env[] = {"GOTRACE_CHUNK_SIZE=16384", "GOTRACE_STACKS=none", NULL};
	twins(argv, env);
	cr_assert_str_eq(traced.out, "78890\n");
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert_eq(cap.bad_bytes, 0u);
	cr_assert_eq(cap.hdr->flags & GT_FILE_WRITE_FAILED, 0u);
	size_t writes = 0;
	for (size_t i = 0; i < cap.n; i++)
		if (cap.recs[i].h->type == GT_SYSCALL_BEGIN &&
		    (uint32_t)((const uint64_t *)cap.recs[i].payload)[0] == SYS_write)
			writes++;
	cr_assert_geq(writes, 8000u, "the shell's writes to descriptor 3 are recorded");
	cr_assert_gt(cap.hdr->n_chunks, 9u, "the capture grew after `exec 3>`");
}

Test(fds, daemon_closes_everything_and_goes_on, .fini = teardown, .timeout = 60)
{
	const char *argv[] = {gt_fds(), "closeall", NULL};
	twins(argv, many_env);
	cr_assert(strstr(traced.out, "closed one by one: 0\n"), "%s", traced.out);
	cr_assert(strstr(traced.out, "first free: 3\n"), "%s", traced.out);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	/* the facts after the closing are there: 40000 before, 40000 + 10000 (thread) after */
	assert_complete(90000);
	cr_assert_gt(cap.hdr->n_chunks, 64u);
}

Test(fds, nofile_limit_set_by_the_program, .fini = teardown, .timeout = 60)
{
	const char *argv[] = {gt_fds(), "nofile", "16", NULL};
	twins(argv, NULL);
	cr_assert(strstr(traced.out, "opened 13, then -1 EMFILE\n"), "%s", traced.out);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	assert_complete(2000);
}

Test(fds, nofile_limit_set_before_exec, .fini = teardown, .timeout = 60)
{
	gt_skip_if_emulated(GT_NOT_EMULATED_HOST_PROGRAMS);
	/* `ulimit -n 16` sets the hard limit too: nothing of the tracer fits above it */
	const char *argv[] = {"/bin/sh", "-c", "ulimit -n 16 && exec \"$0\" nofile", gt_fds(), NULL};
	twins(argv, NULL);
	cr_assert(strstr(traced.out, "opened 13, then -1 EMFILE\n"), "%s", traced.out);
	cr_assert_eq(run_capture(&traced, traced.pid, 1, &cap), 0, "the image after exec");
	assert_complete(2000);
}

Test(fds, growth_at_the_descriptor_limit_goes_on, .fini = teardown, .timeout = 60)
{
	gt_skip_if_emulated("under qemu-user, mremap(old, 0, new, MREMAP_MAYMOVE) of a shared map, "
			    "which duplicates the capture's window at the limit, fails with ENOMEM");
	/* the capture cannot be opened to grow while every descriptor is taken: it grows into
	 * its headroom (two windows of 64 chunks) through the mapping, and through a descriptor
	 * again once the program closed its files; the program opens as many files as untraced */
	const char *argv[] = {gt_fds(), "nofile", "16", NULL};
	/* 60000 compact yields of 16 bytes: 960 KB each time, as many chunks as 40000 full ones */
	const char *env[] = {"GOTRACE_CHUNK_SIZE=16384", "GT_FDS_YIELDS=60000", "GT_FDS_AT_LIMIT=1", NULL};
	twins(argv, env);
	cr_assert(strstr(traced.out, "opened 13, then -1 EMFILE\n"), "%s", traced.out);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	/* 60000 before, 60000 at the limit (more than a window of 64 chunks), 60000 after:
	 * more than the headroom in all */
	assert_complete(180000);
	cr_assert_gt(cap.hdr->n_chunks, 128u);
}

Test(fds, growth_at_the_descriptor_limit_stops_past_the_headroom, .fini = teardown, .timeout = 60)
{
	gt_skip_if_emulated("under qemu-user, mremap(old, 0, new, MREMAP_MAYMOVE) of a shared map, "
			    "which duplicates the capture's window at the limit, fails with ENOMEM");
	/* 400000 yields at the limit, more than the headroom of 128 chunks holds: recording
	 * stops with one line and the notice (a page of the headroom is kept for it), the
	 * program runs on as untraced.  The 400000 before the limit outgrew the headroom made
	 * at creation: each growth through a descriptor renewed it. */
	const char *argv[] = {gt_fds(), "nofile", "16", NULL};
	const char *env[] = {"GOTRACE_CHUNK_SIZE=16384", "GOTRACE_STACKS=none", "GT_FDS_YIELDS=400000",
			     "GT_FDS_AT_LIMIT=1", NULL};
	memset(&plain, 0, sizeof plain);
	memset(&traced, 0, sizeof traced);
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert_null(diff, "%s", diff);
	cr_assert(strstr(traced.out, "opened 13, then -1 EMFILE\n"), "%s", traced.out);
	cr_assert_eq(count_gotrace_lines(traced.err), 1, "%s", traced.err);
	cr_assert(strstr(traced.err, "cannot be opened again: too many open files"), "%s", traced.err);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert(cap.hdr->flags & GT_FILE_WRITE_FAILED);
	cr_assert_eq(cap.hdr->stop_errno, EMFILE);
	cr_assert_eq(capture_count(&cap, GT_NOTICE, GT_NOTICE_WRITE_FAILED), 1u);
	cr_assert_eq(cap.bad_bytes, 0u);
	/* the 400000 before the limit, and at it more than a window's worth of 8-byte yields
	 * (the headroom is two) but not all */
	size_t kept = capture_count(&cap, GT_YIELD, -1);
	cr_assert_gt(kept, 400000u + 64u * 16384u / 8u, "%zu yields kept", kept);
	cr_assert_lt(kept, 800000u, "%zu yields kept", kept);
	cr_assert_geq(kept + cap.hdr->facts_lost, 1200000u);
}

Test(fds, exec_child_sees_no_tracer_descriptor, .fini = teardown, .timeout = 60)
{
	const char *argv[] = {gt_fds(), "exec-lsfd", NULL};
	twins(argv, NULL);
	cr_assert_str_eq(traced.out, "fd 0\nfd 1\nfd 2\n3 descriptors\n");
	/* both images were traced: the capture before exec (not finalized: exec ends nothing)
	 * and the exec'd program's */
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert_eq(capture_count(&cap, GT_YIELD, -1), 1000u);
	capture_close(&cap);
	cr_assert_eq(run_capture(&traced, traced.pid, 1, &cap), 0);
	assert_complete(1000);
	cr_assert_gt(capture_count(&cap, GT_STACK, -1), 0u, "stacks unwound: libunwind ran");
}

Test(fds, address_space_limit_1gib, .fini = teardown, .timeout = 60)
{
	const char *argv[] = {gt_fds(), "as", NULL};
	twins(argv, many_env);
	cr_assert_str_eq(traced.out, "setrlimit: 0\nmalloc 600 MiB: ok\nthreads: 8\ndone\n");
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	assert_complete(40000 + 8 * 100);
	/* the capture's mappings: what is written plus at most 64 MiB */
	const char *m = strstr(traced.err, "gtcap mapped ");
	cr_assert_not_null(m, "%s", traced.err);
	unsigned long long mapped = strtoull(m + 13, NULL, 10);
	cr_assert_gt(mapped, 0u);
	cr_assert_leq(mapped, cap.size + (64ull << 20), "%llu mapped for a %zu-byte capture", mapped,
		      cap.size);
}

Test(fds, capture_replaced_by_the_program, .fini = teardown, .timeout = 60)
{
	memset(&plain, 0, sizeof plain);
	memset(&traced, 0, sizeof traced);
	const char *argv[] = {gt_fds(), "replace", NULL};
	const char *diff = run_twins(&plain, &traced, argv, many_env);
	cr_assert_null(diff, "%s", diff);
	cr_assert_str_eq(traced.out, "write: 8\nfstat: 0, size 8\n", "the program's file is its own");
	/* one line says why the recording stopped; what came before is kept */
	cr_assert_eq(count_gotrace_lines(traced.err), 1, "%s", traced.err);
	cr_assert(strstr(traced.err, "the capture file cannot grow: its path names another file"),
		  "%s", traced.err);
	char moved[4200];
	snprintf(moved, sizeof moved, "%s/gotrace-%d.gtcap.moved", traced.dir, (int)traced.pid);
	cr_assert_eq(capture_open(&cap, moved), 0);
	cr_assert(cap.hdr->flags & GT_FILE_WRITE_FAILED);
	cr_assert_gt(capture_count(&cap, GT_YIELD, -1), 0u);
	cr_assert_lt(capture_count(&cap, GT_YIELD, -1), 40000u);
	cr_assert_eq(cap.bad_bytes, 0u);
}

Test(fds, stack_through_frame_without_unwind_info, .fini = teardown, .timeout = 60)
{
#if !defined(__x86_64__)
	cr_skip_test("the frame without unwind information is x86-64 assembly");
#endif
	const char *argv[] = {gt_fds(), "nocfi", NULL};
	twins(argv, NULL);
	/* libunwind's validation pipe would have taken 3 and 4 */
	cr_assert_str_eq(traced.out, "first open: 3\n");
	const char *o = strstr(traced.err, "outer ");
	cr_assert_not_null(o, "%s", traced.err);
	unsigned long long outer = strtoull(o + 6, NULL, 16);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	/* the stack of nanosleep reaches outer() across the frame libunwind had to validate */
	int found = 0;
	for (size_t i = 0; i < cap.n && !found; i++) {
		if (cap.recs[i].h->type != GT_STACK)
			continue;
		const struct gt_p_stack *p = cap.recs[i].payload;
		const uint64_t *pcs = (const uint64_t *)(p + 1);
		for (uint32_t j = 0; j < p->nframes; j++)
			found |= pcs[j] > outer && pcs[j] < outer + 64;
	}
	cr_assert(found, "no stack reaches outer()");
}
