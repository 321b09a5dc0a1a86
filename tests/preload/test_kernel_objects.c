/* Waits that another process ends (targets/gt_kobj.c): each process's capture names the
 * pipe, the child and the process-shared semaphore by their kernel identity (capture.h,
 * GT_OBJ_KERNEL), the same key in both captures, and holds the facts the encoder matches
 * (model_kernel_objects.c): the child's blocked read began before the parent's write and
 * ended after it; the parent's wait4 ended after the child's end.  Each run is compared
 * with the untraced one first. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "traced_run.h"

static struct run plain, traced;
static struct capture parent, child;

static void teardown(void)
{
	capture_close(&parent);
	capture_close(&child);
	run_cleanup(&plain);
	run_cleanup(&traced);
}

TestSuite(kobj, .fini = teardown, .timeout = 60);

/* Runs gt-kobj SCENARIO N untraced and traced, opens both captures. */
static void twins(const char *scenario, const char *n)
{
	const char *argv[] = {test_program("gt-kobj"), scenario, n, NULL};
	memset(&plain, 0, sizeof plain);
	memset(&traced, 0, sizeof traced);
	const char *diff = run_twins(&plain, &traced, argv, NULL);
	cr_assert_null(diff, "%s", diff);
	cr_assert(WIFEXITED(traced.status) && WEXITSTATUS(traced.status) == 0, "%s", traced.err);
	cr_assert_eq(count_gotrace_lines(traced.err), 0, "%s", traced.err);
	cr_assert_eq(run_capture(&traced, traced.pid, 0, &parent), 0);
	const struct cap_rec *f = capture_find(&parent, GT_PROCESS, GT_PROC_FORK, 0);
	cr_assert_not_null(f);
	pid_t c = (pid_t)((const struct gt_p_process *)f->payload)->child_pid;
	cr_assert_eq(run_capture(&traced, c, 0, &child), 0, "child %d has no capture", (int)c);
	cr_assert_eq(child.hdr->ppid, parent.hdr->pid);
}

/* The i-th SYSCALL_BEGIN of call nr in c (its record index), or -1. */
static long nth_syscall(const struct capture *c, uint32_t nr, size_t i)
{
	for (size_t k = 0; k < c->n; k++) {
		const struct cap_rec *r = &c->recs[k];
		if (r->h->type == GT_SYSCALL_BEGIN &&
		    ((const struct gt_p_syscall *)r->payload)->nr == nr && !i--)
			return (long)k;
	}
	return -1;
}

/* The kernel key of a SYSCALL_BEGIN (0 when it has none). */
static uint64_t syscall_obj(const struct cap_rec *r)
{
	if ((size_t)r->h->nwords * 8 < 16 + sizeof(struct gt_p_syscall) + sizeof(struct gt_p_syscall_obj))
		return 0;
	return ((const struct gt_p_syscall_obj *)((const struct gt_p_syscall *)r->payload + 1))->obj;
}

/* The SYSCALL_END of the same thread after record k. */
static const struct cap_rec *end_of(const struct capture *c, long k)
{
	for (size_t j = (size_t)k + 1; j < c->n; j++)
		if (c->recs[j].h->thread == c->recs[k].h->thread &&
		    c->recs[j].h->type == GT_SYSCALL_END)
			return &c->recs[j];
	return NULL;
}

Test(kobj, pipeline_reads_and_writes_carry_the_pipe_key)
{
	twins("pipeline", "20");
	cr_assert_str_eq(traced.out, "child read 20 lines, 150 bytes, then end of file\n"
				     "child exited 0\n");
	long w0 = nth_syscall(&parent, SYS_write, 0);
	cr_assert_geq(w0, 0);
	uint64_t key = syscall_obj(&parent.recs[w0]);
	cr_assert(key & GT_OBJ_KERNEL, "the write names the pipe: %#lx", (unsigned long)key);
	cr_assert_eq(parent.recs[w0].h->aux, GT_FD_PIPE);
	/* every read of the child blocked before the write that ended it began, and returned
	 * after: the facts the encoder matches */
	for (size_t i = 0; i < 20; i++) {
		long w = nth_syscall(&parent, SYS_write, i), r = nth_syscall(&child, SYS_read, i);
		cr_assert(w >= 0 && r >= 0, "write and read %zu", i);
		cr_assert_eq(syscall_obj(&parent.recs[w]), key);
		cr_assert_eq(syscall_obj(&child.recs[r]), key, "read %zu names the same pipe", i);
		const struct cap_rec *e = end_of(&child, r);
		cr_assert_not_null(e);
		cr_assert_gt(((const struct gt_p_syscall_end *)e->payload)->result, 0);
		cr_assert_lt(child.recs[r].h->tsc, parent.recs[w].h->tsc, "read %zu began first", i);
		cr_assert_gt(e->h->tsc, parent.recs[w].h->tsc, "read %zu ended after the write", i);
	}
	/* the end of file: the parent's close of its write end is a wake on the same key,
	 * inside the last read */
	const struct cap_rec *close = NULL;
	for (size_t i = 0; (close = capture_find(&parent, GT_WAKE, GT_BK_FD, i)); i++)
		if (((const struct gt_p_wake *)close->payload)->obj == key)
			break;
	cr_assert_not_null(close, "the parent's close of the pipe is recorded");
	long r = nth_syscall(&child, SYS_read, 20);
	cr_assert_geq(r, 0);
	const struct cap_rec *e = end_of(&child, r);
	cr_assert_eq(((const struct gt_p_syscall_end *)e->payload)->result, 0);
	cr_assert(child.recs[r].h->tsc < close->h->tsc && close->h->tsc < e->h->tsc);
}

Test(kobj, end_of_file_at_the_writer_s_exit)
{
	twins("eof-at-exit", "1");
	cr_assert_str_eq(traced.out, "parent read 5 bytes, then end of file\nchild exited 0\n");
	/* the child wrote and exited without closing: its exit closes the pipe, a wake on its
	 * key before its end, inside the parent's last read */
	long w = nth_syscall(&child, SYS_write, 0);
	cr_assert_geq(w, 0);
	uint64_t key = syscall_obj(&child.recs[w]);
	cr_assert(key & GT_OBJ_KERNEL);
	const struct cap_rec *close = NULL;
	for (size_t i = 0; (close = capture_find(&child, GT_WAKE, GT_BK_FD, i)); i++)
		if (((const struct gt_p_wake *)close->payload)->obj == key)
			break;
	cr_assert_not_null(close, "the child's exit closes the pipe");
	const struct cap_rec *end = capture_find(&child, GT_THREAD_END, GT_END_PROCESS, 0);
	cr_assert(end && close->h->tsc <= end->h->tsc);
	long r = nth_syscall(&parent, SYS_read, 1);
	cr_assert_geq(r, 0);
	cr_assert_eq(syscall_obj(&parent.recs[r]), key);
	const struct cap_rec *e = end_of(&parent, r);
	cr_assert_eq(((const struct gt_p_syscall_end *)e->payload)->result, 0);
	cr_assert(parent.recs[r].h->tsc < close->h->tsc && close->h->tsc < e->h->tsc);
}

static void wait_ends_after_the_child(const char *scenario, int64_t arg)
{
	twins(scenario, "1");
	long w = nth_syscall(&parent, SYS_wait4, 0);
	cr_assert_geq(w, 0, "no wait recorded");
	cr_assert_eq(((const struct gt_p_syscall *)parent.recs[w].payload)->arg, arg ? arg : (int64_t)child.hdr->pid);
	const struct cap_rec *e = end_of(&parent, w);
	cr_assert_not_null(e);
	cr_assert_eq(((const struct gt_p_syscall_end *)e->payload)->result, (int64_t)child.hdr->pid);
	const struct cap_rec *end = capture_find(&child, GT_THREAD_END, GT_END_PROCESS, 0);
	cr_assert_not_null(end, "the child's exit is recorded");
	cr_assert(parent.recs[w].h->tsc < end->h->tsc && end->h->tsc < e->h->tsc,
		  "wait4 began before the child's end and returned after it");
}

Test(kobj, waitpid_ends_after_the_child) { wait_ends_after_the_child("pipeline", 0); }
/* dash waits for its children with wait3: any child (-1) */
Test(kobj, wait3_ends_after_the_child) { wait_ends_after_the_child("pipeline-wait3", -1); }

/* The child's blocks and the parent's releases name one object, by kernel identity. */
static void check_shared(enum gt_block_kind kind, size_t n)
{
	cr_assert_eq(capture_count(&child, GT_BLOCK_BEGIN, kind), n);
	cr_assert_eq(capture_count(&parent, GT_WAKE, kind), n);
	uint64_t key = ((const struct gt_p_block *)capture_find(&child, GT_BLOCK_BEGIN, kind, 0)->payload)->obj;
	cr_assert(key & GT_OBJ_KERNEL, "the object is named by its mapping: %#lx", (unsigned long)key);
	for (size_t i = 0; i < n; i++) {
		const struct cap_rec *b = capture_find(&child, GT_BLOCK_BEGIN, kind, i);
		const struct cap_rec *w = capture_find(&parent, GT_WAKE, kind, i);
		cr_assert_eq(((const struct gt_p_block *)b->payload)->obj, key);
		cr_assert_eq(((const struct gt_p_wake *)w->payload)->obj, key);
		cr_assert_lt(b->h->tsc, w->h->tsc, "wait %zu blocked before its post", i);
	}
}

/* gt-kobj SCENARIO 10: its output, then the blocks of kind and the releases. */
static void shared_case(const char *scenario, const char *out, enum gt_block_kind kind)
{
	twins(scenario, "10");
	cr_assert_str_eq(traced.out, out);
	check_shared(kind, 10);
}

Test(kobj, process_shared_semaphore_across_fork)
{
	shared_case("psem", "child waited 10 times on the inherited mapping\nchild exited 0\n", GT_BK_SEM);
}

Test(kobj, process_shared_semaphore_in_a_file_mapped_twice)
{
	shared_case("psem-file", "child waited 10 times on its own mapping\nchild exited 0\n", GT_BK_SEM);
}

Test(kobj, process_shared_mutex_across_fork)
{
	shared_case("pmutex", "child locked 10 times\nchild exited 0\n", GT_BK_MUTEX);
}

Test(kobj, process_shared_condvar_across_fork)
{
	shared_case("pcond", "child waited for 10 turns\nchild exited 0\n", GT_BK_COND);
}
