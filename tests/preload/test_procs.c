/* Processes the program makes without fork(), vfork, _exit and the environment: the traced
 * program behaves as untraced (run_twins), and each process writes only its own capture. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "emulation.h"
#include "traced_run.h"

static struct run plain, traced;
static struct capture cap, cap2;
static char outdir[PATH_MAX];

static void teardown(void)
{
	capture_close(&cap);
	capture_close(&cap2);
	run_cleanup(&plain);
	run_cleanup(&traced);
	if (outdir[0]) {
		static struct run r;
		strcpy(r.dir, outdir);
		run_cleanup(&r);
		outdir[0] = 0;
	}
}

static const uint64_t *P(const struct cap_rec *r) { return r->payload; }

static const char *procs(void)
{
	return test_program("gt-procs");
}

/* traced and untraced alike; the traced run said nothing on stderr */
static void twins(const char *scenario, const char *const env[])
{
	const char *argv[] = {procs(), scenario, NULL};
	const char *d = run_twins(&plain, &traced, argv, env);
	cr_assert_null(d, "%s", d);
	cr_assert(WIFEXITED(traced.status) && WEXITSTATUS(traced.status) == 0, "%s", traced.err);
	cr_assert_eq(count_gotrace_lines(traced.err), 0, "%s", traced.err);
}

/* BLOCK_BEGIN of the sleep kind whose requested ns is ns */
static size_t sleeps(const struct capture *c, uint64_t ns)
{
	size_t n = 0;
	for (size_t i = 0; i < c->n; i++)
		if (c->recs[i].h->type == GT_BLOCK_BEGIN && c->recs[i].h->aux == GT_BK_SLEEP &&
		    P(&c->recs[i])[0] == ns)
			n++;
	return n;
}

/* The child (no atfork handlers ran) passes straight through: no capture of its own, nothing
 * in the parent's; the parent keeps recording and finalizes its capture once. */
static void fork_like(const char *how)
{
	twins(how, NULL);
	char want[64];
	snprintf(want, sizeof want, "child wrote\n%s child exit 5 signal 0\n", how);
	cr_assert_str_eq(traced.out, want);
	cr_assert_eq(run_count_captures(&traced), 1, "the child made a capture");
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert(cap.hdr->flags & GT_FILE_FINALIZED);
	cr_assert_eq(capture_count(&cap, GT_CAPTURE_END, -1), 1u, "finalized once");
	cr_assert_eq(sleeps(&cap, 1234), 0u, "the child's sleep is in the parent's capture");
	cr_assert_eq(sleeps(&cap, 2000), 3u, "the parent stopped recording after its child");
}

Test(procs, _Fork_child_writes_no_capture, .fini = teardown, .timeout = 60) { fork_like("_Fork"); }
Test(procs, syscall_fork_child_writes_no_capture, .fini = teardown, .timeout = 60) { fork_like("sysfork"); }
Test(procs, clone_child_writes_no_capture, .fini = teardown, .timeout = 60) { fork_like("clone"); }

/* A child in our memory (clone(CLONE_VM), no CLONE_THREAD) must change nothing there: its
 * _exit neither ends nor trims the parent's capture, and sharing our TLS, it is told from its
 * creator by its tid and passes straight through (its sleep is not the parent's). */
Test(procs, clone_vm_child_leaves_the_capture_alone, .fini = teardown, .timeout = 60)
{
	gt_skip_if_emulated("under qemu-user, clone(CLONE_VM) without CLONE_THREAD fails (EINVAL)");
	twins("clone_vm", NULL);
	cr_assert_str_eq(traced.out, "child wrote\nclone_vm child exit 5 signal 0\n");
	cr_assert_eq(run_count_captures(&traced), 1);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert_eq(capture_count(&cap, GT_CAPTURE_END, -1), 1u, "finalized once");
	cr_assert_eq(sleeps(&cap, 1234), 0u, "the child's sleep is in the parent's capture");
	cr_assert(cap.hdr->flags & GT_FILE_FINALIZED);
	cr_assert_eq(sleeps(&cap, 2000), 3u, "the parent stopped recording after its child");
}

/* The child learns why its exec failed through the memory vfork shares: it must really be
 * vfork.  The child's hooks pass through (its failed exec is not in the parent's capture);
 * the parent records the fork and goes on. */
Test(procs, vfork_shares_memory, .fini = teardown, .timeout = 60)
{
	gt_skip_if_emulated("under qemu-user, vfork is a fork: the child shares no memory");
	twins("vfork", NULL);
	cr_assert_str_eq(traced.out, "vfork child errno 2 exit 127\nvfork exec exit 3\n");
	/* the parent's, and the shell's (the exec'd image stays traced) */
	cr_assert_eq(run_count_captures(&traced), 2);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	const struct cap_rec *f = capture_find(&cap, GT_PROCESS, GT_PROC_FORK, 0);
	cr_assert_not_null(f, "the parent records the vfork");
	cr_assert_gt((uint32_t)P(f)[0], 0u);
	cr_assert_eq(capture_count(&cap, GT_PROCESS, GT_PROC_FORK), 2u);
	cr_assert_eq(capture_count(&cap, GT_PROCESS, GT_PROC_EXEC), 0u, "the child wrote into the parent's capture");
	cr_assert_eq(sleeps(&cap, 2000), 1u);
	cr_assert_eq(capture_count(&cap, GT_CAPTURE_END, -1), 1u);
	cr_assert(cap.hdr->flags & GT_FILE_FINALIZED);
}

static int count_traces(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int n = 0;
	while (d && (e = readdir(d)))
		n += strstr(e->d_name, ".trace") != NULL;
	if (d)
		closedir(d);
	return n;
}

/* GOTRACE_OUT converts at exit() only: children leaving by _exit finalize their captures and
 * run no converter (which would write t-<pid>.trace). */
Test(procs, _exit_runs_no_converter, .fini = teardown, .timeout = 120)
{
	char env_out[PATH_MAX + 32], want[PATH_MAX + 32];
	cr_assert(mkdtemp(strcpy(outdir, "/tmp/gt-out-XXXXXX")));
	snprintf(env_out, sizeof env_out, "GOTRACE_OUT=%s/t-%%p.trace", outdir);
	const char *env[] = {env_out, NULL};
	twins("exit-children", env);
	cr_assert_str_eq(traced.out, "child 0 exit 10\nchild 1 exit 11\nchild 2 exit 12\n");
	snprintf(want, sizeof want, "%s/t-%d.trace", outdir, (int)traced.pid);
	struct stat st;
	cr_assert_eq(stat(want, &st), 0, "the parent's exit() converts: no %s", want);
	cr_assert_eq(count_traces(outdir), 1, "a converter ran for an _exit");
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert_eq(capture_count(&cap, GT_PROCESS, GT_PROC_FORK), 3u);
	for (size_t i = 0; i < 3; i++) {
		pid_t child = (pid_t)(uint32_t)P(capture_find(&cap, GT_PROCESS, GT_PROC_FORK, i))[0];
		cr_assert_eq(run_capture(&traced, child, 0, &cap2), 0, "child %d has no capture", child);
		cr_assert(cap2.hdr->flags & GT_FILE_FINALIZED, "_exit finalizes the capture");
		cr_assert_eq(capture_count(&cap2, GT_CAPTURE_END, -1), 1u);
		capture_close(&cap2);
	}
}

/* The program sees the environment it was given (LD_PRELOAD aside): the capture directory
 * is the same in both runs so that only the tracer could make a difference. */
Test(procs, environment_unchanged, .fini = teardown, .timeout = 60)
{
	char capdir[PATH_MAX + 32];
	cr_assert(mkdtemp(strcpy(traced.dir, "/tmp/gt-test-XXXXXX")));
	snprintf(capdir, sizeof capdir, "GOTRACE_CAPTURE_DIR=%s", traced.dir);
	const char *env[] = {capdir, NULL};
	twins("env", env);
	cr_assert(strstr(traced.out, "getenv GOTRACE_ROOT_PID unset\n"), "%s", traced.out);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert(cap.hdr->flags & GT_FILE_FINALIZED);

	/* GOTRACE_FOLLOW=0 strips libgotrace.so from children, not from the program's environ */
	const char *env0[] = {capdir, "GOTRACE_FOLLOW=0", NULL};
	run_cleanup(&plain);
	memset(&plain, 0, sizeof plain);
	capture_close(&cap);
	twins("env", env0);
	cr_assert(strstr(traced.err, "LD_PRELOAD=") && strstr(traced.err, "libgotrace.so"), "%s", traced.err);

	/* a relative capture directory is resolved for the tracer, not in the environment */
	char cwd[PATH_MAX], rel[2 * PATH_MAX];
	cr_assert_not_null(getcwd(cwd, sizeof cwd));
	size_t n = 0;
	n += (size_t)snprintf(rel + n, sizeof rel - n, "GOTRACE_CAPTURE_DIR=.");
	for (const char *p = cwd; *p; p++)
		if (*p == '/' && p[1])
			n += (size_t)snprintf(rel + n, sizeof rel - n, "/..");
	snprintf(rel + n, sizeof rel - n, "%s", traced.dir);
	const char *envr[] = {rel, NULL};
	run_cleanup(&plain);
	memset(&plain, 0, sizeof plain);
	twins("env", envr);
	cr_assert(strstr(traced.out, rel), "%s", traced.out);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0, "no capture in %s", rel);
}

/* pthread_create's hook hands every child a start record without the program's allocator,
 * even when 300 children hold theirs at once (a static pool has 256). */
Test(procs, pthread_create_hook_does_not_malloc, .fini = teardown, .timeout = 60)
{
	const char *argv[] = {test_program("gt-nomalloc"), "threads", NULL};
	const char *d = run_twins(&plain, &traced, argv, NULL);
	cr_assert_null(d, "%s", d);
	cr_assert(WIFEXITED(traced.status) && WEXITSTATUS(traced.status) == 0, "%s", traced.err);
	cr_assert(strstr(traced.out, "threads 300 "), "%s", traced.out);
	if (!strstr(traced.err, "creator SCHED_FIFO 1"))
		cr_skip_test("SCHED_FIFO refused: the children may start early and free the pool");
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert_eq(capture_count(&cap, GT_THREAD_NEW, -1), 300u);
	cr_assert_eq(capture_count(&cap, GT_THREAD_START, -1), 300u);
}

/* The resolver under re-entry: a library preloaded before libgotrace.so answers its dlsym
 * calls and calls write() meanwhile, whose hook needs an original not resolved yet. */
Test(procs, resolver_reentered_by_dlsym, .fini = teardown, .timeout = 60)
{
	char preload[2 * PATH_MAX + 8];
	snprintf(preload, sizeof preload, "%s %s", test_program("libgt-reenter.so"),
		 test_preload());
	setenv("GT_TEST_PRELOAD", preload, 1);
	const char *argv[] = {test_target(), "threads", NULL};
	const char *d = run_twins(&plain, &traced, argv, NULL);
	cr_assert_null(d, "%s", d);
	cr_assert(WIFEXITED(traced.status) && WEXITSTATUS(traced.status) == 0, "%s", traced.err);
	cr_assert(strstr(traced.err, "gt-reenter: dlsym called write"), "the wrapper was not used: %s", traced.err);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert(cap.hdr->flags & GT_FILE_FINALIZED);
	cr_assert_eq(capture_count(&cap, GT_THREAD_NEW, -1), 4u);
}

/* In the root, system() spawns the shell itself (the shell must learn the root's pid without
 * the program's environ changing): same arguments and statuses as glibc's, and the shell is
 * traced as a child. */
Test(procs, system_as_glibc, .fini = teardown, .timeout = 60)
{
	gt_skip_if_emulated(GT_NOT_EMULATED_HOST_PROGRAMS);
	twins("system", NULL);
	cr_assert_str_eq(traced.out, "system(\"-x\") 512\nsystem(\"exit 4\") 1024\n");
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert_eq(capture_count(&cap, GT_PROCESS, GT_PROC_SPAWN), 2u);
	cr_assert_eq(run_count_captures(&traced), 3, "the two shells are traced");
}

/* The record's thread's facts, time-ordered: a block begun while another is open is nested */
static int nested_blocks(const struct capture *c, uint32_t thread)
{
	int open = 0, nested = 0;
	for (size_t i = 0; i < c->n; i++) {
		if (c->recs[i].h->thread != thread)
			continue;
		if (c->recs[i].h->type == GT_BLOCK_BEGIN)
			nested += open++ > 0;
		else if (c->recs[i].h->type == GT_BLOCK_END && open)
			open--;
	}
	return nested;
}

/* A thread made by clone(CLONE_THREAD) without CLONE_SETTLS runs on its creator's TLS (with
 * CLONE_SETTLS, on a copy of it): it still gets an identity of its own, announced by
 * THREAD_NEW/START, ended when its function returns, and its blocks on the mutex and
 * semaphore the main thread holds are its own, woken by the main thread. */
static void raw_clone_thread(const char *scenario)
{
	/* its threads made by clone alone wait on each other forever there now and then */
	gt_skip_if_emulated("under qemu-user, the target's raw clone threads hang even untraced");
	twins(scenario, NULL);
	cr_assert_str_eq(traced.out, "raw thread ended\n");
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	/* main's first THREAD_NEW is the pthread that makes glibc multi-threaded; the second */
	const struct cap_rec *nw = capture_find(&cap, GT_THREAD_NEW, -1, 1);
	cr_assert_not_null(nw, "no THREAD_NEW for the raw thread");
	cr_assert_eq(nw->h->thread, 1u);
	uint32_t raw = ((const struct gt_p_thread_new *)nw->payload)->child;
	cr_assert_gt(raw, 1u);
	cr_assert_eq(capture_count_thread(&cap, GT_THREAD_START, -1, raw), 1u);
	cr_assert_eq(capture_count_thread(&cap, GT_THREAD_END, GT_END_RETURN, raw), 1u);
	cr_assert_eq(capture_count_thread(&cap, GT_BLOCK_BEGIN, GT_BK_MUTEX, raw), 1u,
		     "the raw thread's contended lock is not its own");
	cr_assert_eq(capture_count_thread(&cap, GT_BLOCK_BEGIN, GT_BK_SEM, raw), 1u);
	cr_assert_eq(capture_count_thread(&cap, GT_BLOCK_END, -1, raw), 2u);
	cr_assert_eq(capture_count_thread(&cap, GT_BLOCK_BEGIN, GT_BK_MUTEX, 1), 0u,
		     "the raw thread's lock is credited to the main thread");
	cr_assert_eq(capture_count_thread(&cap, GT_BLOCK_BEGIN, GT_BK_SEM, 1), 0u);
	cr_assert_eq(capture_count_thread(&cap, GT_WAKE, GT_BK_MUTEX, 1), 1u, "main's unlock wakes it");
	cr_assert_eq(capture_count_thread(&cap, GT_WAKE, GT_BK_SEM, 1), 1u, "main's post wakes it");
	cr_assert_eq(nested_blocks(&cap, 1), 0);
	cr_assert_eq(nested_blocks(&cap, raw), 0);
	cr_assert_eq(sleeps(&cap, 2000), 1u, "main goes on recording");
	cr_assert_eq(capture_count(&cap, GT_CAPTURE_END, -1), 1u);
	/* libunwind's calls into hooks while it walks are the tracer's: no loss */
	cr_assert_eq(capture_count(&cap, GT_NOTICE, GT_NOTICE_REENTRY_LOST), 0u);
	char why[8192];
	cr_assert_eq(run_convert_all(&traced, why, sizeof why), 1, "%s", why);
}

Test(procs, raw_clone_thread_has_its_own_identity, .fini = teardown, .timeout = 120)
{
	raw_clone_thread("clone_thread");
}

Test(procs, raw_clone_thread_on_a_copied_tls_has_its_own_identity, .fini = teardown, .timeout = 120)
{
	raw_clone_thread("clone_settls");
}

/* A child in our memory made by clone(CLONE_VM | CLONE_VFORK) builds its environment in the
 * tracer's memory when it execs (GOTRACE_FOLLOW=0 strips libgotrace.so from it); the parent
 * gives that memory back when the child has exec'd: the 100th child's still is stripped. */
Test(procs, clone_vfork_children_exec_with_their_environment, .fini = teardown, .timeout = 120)
{
	const char *env[] = {"GOTRACE_FOLLOW=0", NULL};
	twins("clone_vfork", env);
	cr_assert_null(strstr(traced.out, "traced"), "%s", traced.out);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &cap), 0);
	cr_assert(cap.hdr->flags & GT_FILE_FINALIZED);
}
