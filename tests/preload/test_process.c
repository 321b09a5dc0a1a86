/* fork, exec, system: each process image gets its own capture; the parent records where its
 * children come from; GOTRACE_FOLLOW=0 keeps children untraced, not the program's exec. */
#include <criterion/criterion.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../support/emulation.h"
#include "traced_run.h"

static struct run run;
static struct capture cap, cap2;

static void teardown(void)
{
	capture_close(&cap);
	capture_close(&cap2);
	run_cleanup(&run);
}

static const uint64_t *P(const struct cap_rec *r) { return r->payload; }

Test(process, fork_child_gets_own_capture, .fini = teardown, .timeout = 30)
{
	memset(&run, 0, sizeof run);
	cr_assert_eq(run_target(&run, 1, "fork", NULL), 0);
	cr_assert_eq(run_capture(&run, run.pid, 0, &cap), 0);
	const struct cap_rec *f = capture_find(&cap, GT_PROCESS, GT_PROC_FORK, 0);
	cr_assert_not_null(f);
	pid_t child = (pid_t)(uint32_t)P(f)[0];
	cr_assert_gt(child, 0);
	cr_assert_eq(run_capture(&run, child, 0, &cap2), 0, "child %d has no capture", child);
	cr_assert_eq(cap2.hdr->pid, (uint32_t)child);
	cr_assert_eq(cap2.hdr->ppid, (uint32_t)run.pid);
	/* the forking thread is the child's main thread; its facts start afresh */
	const struct cap_rec *e = capture_find(&cap2, GT_THREAD_EXISTING, -1, 0);
	cr_assert_not_null(e);
	cr_assert_eq(e->h->thread, 1u);
	cr_assert_eq((uint32_t)P(e)[0], (uint32_t)child, "tid of the child's main thread");
	cr_assert_eq(capture_count_thread(&cap2, GT_THREAD_NEW, -1, 1), 1u);
	cr_assert(cap2.hdr->flags & GT_FILE_FINALIZED);
	cr_assert_geq(capture_count(&cap2, GT_MODULE, -1), 3u, "the child's capture has its module map");
	/* nothing of the child leaked into the parent's capture */
	cr_assert_eq(capture_count(&cap, GT_THREAD_NEW, -1), 0u);
	cr_assert(cap.hdr->flags & GT_FILE_FINALIZED);
}

Test(process, exec_keeps_tracing, .fini = teardown, .timeout = 30)
{
	memset(&run, 0, sizeof run);
	cr_assert_eq(run_target(&run, 1, "exec", NULL), 0);
	cr_assert(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0, "%s", run.err);
	cr_assert_eq(run_count_captures(&run), 2);
	/* the image before exec says where it went */
	cr_assert_eq(run_capture(&run, run.pid, 0, &cap), 0);
	const struct cap_rec *x = capture_find(&cap, GT_PROCESS, GT_PROC_EXEC, 0);
	cr_assert_not_null(x);
	cr_assert_eq((int32_t)(P(x)[0] >> 32), 0, "exec did not fail");
	/* the exec'd image (same pid) is traced into its own file */
	cr_assert_eq(run_capture(&run, run.pid, 1, &cap2), 0);
	cr_assert_eq(cap2.hdr->pid, (uint32_t)run.pid);
	cr_assert_eq(capture_count(&cap2, GT_THREAD_NEW, -1), 4u);
	cr_assert(cap2.hdr->flags & GT_FILE_FINALIZED);
}

/* --no-follow leaves children untraced, not the program's own next image */
Test(process, follow_0_keeps_exec_traced, .fini = teardown, .timeout = 30)
{
	const char *env[] = {"GOTRACE_FOLLOW=0", NULL};
	memset(&run, 0, sizeof run);
	cr_assert_eq(run_target(&run, 1, "exec", env), 0);
	cr_assert(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0, "%s", run.err);
	cr_assert_eq(run_count_captures(&run), 2);
	cr_assert_eq(run_capture(&run, run.pid, 1, &cap2), 0);
	cr_assert_eq(capture_count(&cap2, GT_THREAD_NEW, -1), 4u);
	cr_assert_eq(count_gotrace_lines(run.err), 0);
}

Test(process, system_traces_the_shell, .fini = teardown, .timeout = 30)
{
	memset(&run, 0, sizeof run);
	cr_assert_eq(run_target(&run, 1, "system", NULL), 0);
	cr_assert_str_eq(run.out, "system 5\n");
	cr_assert_eq(run_capture(&run, run.pid, 0, &cap), 0);
	cr_assert_eq(capture_count(&cap, GT_PROCESS, GT_PROC_SPAWN), 1u);
	/* the caller waits for the shell */
	size_t waits = 0;
	for (size_t i = 0; i < cap.n; i++)
		if (cap.recs[i].h->type == GT_SYSCALL_BEGIN && (uint32_t)P(&cap.recs[i])[0] == SYS_wait4)
			waits++;
	cr_assert_eq(waits, 1u);
	gt_skip_if_emulated(GT_NOT_EMULATED_HOST_PROGRAMS);
	cr_assert_geq(run_count_captures(&run), 2, "the shell is traced too");
}

Test(process, system_follow_0, .fini = teardown, .timeout = 30)
{
	const char *env[] = {"GOTRACE_FOLLOW=0", NULL};
	memset(&run, 0, sizeof run);
	cr_assert_eq(run_target(&run, 1, "system", env), 0);
	cr_assert_str_eq(run.out, "system 5\n");
	cr_assert_eq(run_count_captures(&run), 1);
}
