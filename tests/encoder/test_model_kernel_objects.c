/* Wakes through kernel objects (encoder/model_kernel_objects.c): a read pending on a pipe
 * key is a network wait unblocked by the last write (data) or close (end of file) on that
 * key that began during it; a wait4 is unblocked by the end of the child it returned.  Each
 * test builds a capture, converts it, and asserts on what Go 1.19 parses out of the trace. */
#include <criterion/criterion.h>
#include <limits.h>
#include <string.h>
#include <sys/syscall.h>

#include "oracle.h"
#include "test_util.h"

#define T0 1000000ull
#define MAIN 1u
#define READER 2u
#define OTHER 3u
#define PID 4242u

static const uint64_t key_a = GT_OBJ_KERNEL | 0x1234, key_b = GT_OBJ_KERNEL | 0x5678;

struct run {
	struct gt_events *t19;
	struct gt_convert_summary sum;
	char trace[PATH_MAX];
};

static struct run r;

static void teardown(void)
{
	gt_events_free(r.t19);
	memset(&r, 0, sizeof r);
}

TestSuite(kobj, .fini = teardown);

/* MAIN, READER and OTHER exist from the start, on CPUs 0, 1 and 2. */
static struct gt_cb *start(void)
{
	struct gt_cb *cb = gt_cb_new(3, 64 * 1024, T0);
	cr_assert(cb);
	gt_cb_header(cb)->pid = PID;
	gt_cb_thread_existing(cb, 0, T0 + 10, MAIN, 0, 0);
	gt_cb_thread_existing(cb, 1, T0 + 11, READER, 0, 0);
	gt_cb_thread_existing(cb, 2, T0 + 12, OTHER, 0, 0);
	return cb;
}

/* A syscall on a pipe: SYSCALL_BEGIN with its key tail, as the recorder writes it. */
static void pipe_call(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread, uint32_t nr,
		      uint64_t key)
{
	struct {
		struct gt_p_syscall s;
		struct gt_p_syscall_obj o;
	} p = {{.nr = nr, .arg = 5}, {key}};
	cr_assert(gt_cb_record(cb, cpu, GT_SYSCALL_BEGIN, GT_FD_PIPE, thread, t, &p, sizeof p));
}

/* A write of one byte into a pipe, returning 1 µs later. */
static void write_call(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread, uint64_t key)
{
	pipe_call(cb, cpu, t, thread, SYS_write, key);
	gt_cb_syscall_end(cb, cpu, t + 1000, thread, SYS_write, 1);
}

static void convert(struct gt_cb *cb, const char *name)
{
	cr_assert_eq(convert_builder(cb, name, r.trace, &r.sum, 20000), 0);
	gt_cb_free(cb);
	r.t19 = gt_events_parse_119(r.trace);
	cr_assert(r.t19, "Go 1.19 rejected the trace (its error is above)");
}

/* The G context of the unblock of the K-th G created in the prologue after G1 (READER is
 * G2, OTHER G3), or -1 when it has none. */
static int64_t waker_of(uint64_t g)
{
	ssize_t b = nth19_arg(r.t19, "GoUnblock", "g", g, 0);
	return b < 0 ? -1 : r.t19->ev[b].g;
}

Test(kobj, pipe_read_unblocked_by_the_writer)
{
	struct gt_cb *cb = start();
	pipe_call(cb, 1, T0 + 1000, READER, SYS_read, key_a);
	write_call(cb, 0, T0 + 50000, MAIN, key_a);
	gt_cb_syscall_end(cb, 1, T0 + 52000, READER, SYS_read, 1);
	convert(cb, "kobj-read");
	cr_assert_eq(count19(r.t19, "GoBlockNet"), 1);
	cr_assert_eq(r.t19->ev[nth19(r.t19, "GoBlockNet", 0)].g, 2, "the reader blocks");
	cr_assert_eq(waker_of(2), 1, "unblocked by the writer (G1)");
	cr_assert_eq(r.sum.model.kernel_wakes, 1);
	cr_assert_eq(r.sum.model.unknown_wakeups, 0);
}

/* A signal handler's calls inside the read (the recorder nests them: a SIGCHLD handler's
 * waitpid) come before the read's return: the write still wakes the read, which is a network
 * wait, even when another thread ran on the reader's CPU before the write came. */
Test(kobj, a_handler_call_inside_the_read_leaves_its_waker)
{
	struct gt_cb *cb = start();
	pipe_call(cb, 1, T0 + 1000, READER, SYS_read, key_a);
	gt_cb_yield(cb, 1, T0 + 10000, OTHER, 0); /* the reader is off its CPU */
	gt_cb_syscall_begin(cb, 1, T0 + 20000, READER, GT_FD_NONE, SYS_wait4, -1, 0);
	gt_cb_syscall_end(cb, 1, T0 + 21000, READER, SYS_wait4, 4243);
	write_call(cb, 0, T0 + 50000, MAIN, key_a);
	gt_cb_syscall_end(cb, 1, T0 + 52000, READER, SYS_read, 1);
	convert(cb, "kobj-nested");
	cr_assert_eq(count19(r.t19, "GoBlockNet"), 1);
	cr_assert_eq(r.t19->ev[nth19(r.t19, "GoBlockNet", 0)].g, 2, "the reader blocks");
	cr_assert_eq(waker_of(2), 1, "unblocked by the writer (G1)");
	cr_assert_eq(r.sum.model.kernel_wakes, 1);
	cr_assert_eq(r.sum.model.unknown_wakeups, 0);
}

Test(kobj, the_last_write_before_the_return_wakes)
{
	struct gt_cb *cb = start();
	pipe_call(cb, 1, T0 + 1000, READER, SYS_read, key_a);
	write_call(cb, 0, T0 + 50000, MAIN, key_a);
	write_call(cb, 2, T0 + 60000, OTHER, key_a);
	gt_cb_syscall_end(cb, 1, T0 + 62000, READER, SYS_read, 2);
	convert(cb, "kobj-last");
	cr_assert_eq(waker_of(2), 3, "the second writer (G3)");
	cr_assert_eq(r.sum.model.kernel_wakes, 1);
}

Test(kobj, end_of_file_is_woken_by_the_close_and_data_by_the_write)
{
	struct gt_cb *cb = start();
	/* a read that returns data: the write wakes it, not the close that follows */
	pipe_call(cb, 1, T0 + 1000, READER, SYS_read, key_a);
	write_call(cb, 0, T0 + 50000, MAIN, key_a);
	gt_cb_wake(cb, 2, T0 + 55000, OTHER, GT_BK_FD, key_a, GT_WAKE_ALL, 0);
	gt_cb_syscall_end(cb, 1, T0 + 60000, READER, SYS_read, 1);
	/* a read that returns 0: the close wakes it, not the write before it */
	pipe_call(cb, 1, T0 + 100000, READER, SYS_read, key_a);
	write_call(cb, 0, T0 + 150000, MAIN, key_b);
	gt_cb_wake(cb, 2, T0 + 155000, OTHER, GT_BK_FD, key_a, GT_WAKE_ALL, 0);
	gt_cb_syscall_end(cb, 1, T0 + 160000, READER, SYS_read, 0);
	convert(cb, "kobj-eof");
	cr_assert_eq(count19(r.t19, "GoBlockNet"), 2);
	ssize_t u0 = nth19_arg(r.t19, "GoUnblock", "g", 2, 0), u1 = nth19_arg(r.t19, "GoUnblock", "g", 2, 1);
	cr_assert(u0 >= 0 && u1 >= 0);
	cr_assert_eq(r.t19->ev[u0].g, 1, "data: the writer");
	cr_assert_eq(r.t19->ev[u1].g, 3, "end of file: the closer (the write was on another pipe)");
}

Test(kobj, poll_for_input_unblocked_by_the_writer)
{
	struct gt_cb *cb = start();
	struct {
		struct gt_p_syscall s;
		struct gt_p_syscall_obj o;
	} p = {{.nr = SYS_ppoll, .arg = 1}, {key_a}};
	cr_assert(gt_cb_record(cb, 1, GT_SYSCALL_BEGIN, GT_FD_POLL, READER, T0 + 1000, &p, sizeof p));
	write_call(cb, 0, T0 + 50000, MAIN, key_a);
	gt_cb_syscall_end(cb, 1, T0 + 52000, READER, SYS_ppoll, 1);
	/* a poll that timed out (0) was ended by no write */
	cr_assert(gt_cb_record(cb, 1, GT_SYSCALL_BEGIN, GT_FD_POLL, READER, T0 + 100000, &p, sizeof p));
	write_call(cb, 0, T0 + 150000, MAIN, key_a);
	gt_cb_syscall_end(cb, 1, T0 + 152000, READER, SYS_ppoll, 0);
	convert(cb, "kobj-poll");
	cr_assert_eq(count19(r.t19, "GoBlockNet"), 1, "the ready poll is a network wait");
	cr_assert_eq(waker_of(2), 1, "the ready poll: unblocked by the writer (G1)");
	cr_assert_eq(r.sum.model.kernel_wakes, 1, "the timed-out poll has no waker");
	cr_assert_eq(count19(r.t19, "GoSysBlock"), 1, "a poll on a pipe without a waker stays a syscall, as a read");
}

Test(kobj, another_pipe_or_a_write_before_the_read_wakes_nothing)
{
	struct gt_cb *cb = start();
	write_call(cb, 0, T0 + 500, MAIN, key_a);
	pipe_call(cb, 1, T0 + 1000, READER, SYS_read, key_a);
	write_call(cb, 2, T0 + 50000, OTHER, key_b);
	gt_cb_syscall_end(cb, 1, T0 + 90000, READER, SYS_read, 1);
	convert(cb, "kobj-none");
	cr_assert_eq(count19(r.t19, "GoBlockNet"), 0, "a pipe read without a known waker stays a syscall");
	cr_assert_eq(count19(r.t19, "GoSysBlock"), 1);
	cr_assert_eq(r.sum.model.kernel_wakes, 0);
}

/* One capture stands for parent and child (pid == ppid): the model's matching of a wait4
 * with the end of the process it returned. */
static void wait4_case(int64_t result, const char *name)
{
	struct gt_cb *cb = start();
	gt_cb_header(cb)->ppid = PID;
	gt_cb_syscall_begin(cb, 1, T0 + 1000, READER, GT_FD_NONE, SYS_wait4, -1, 0);
	gt_cb_record(cb, 0, GT_THREAD_END, GT_END_PROCESS, MAIN, T0 + 50000, NULL, 0);
	gt_cb_syscall_end(cb, 1, T0 + 60000, READER, SYS_wait4, result);
	convert(cb, name);
}

Test(kobj, wait4_unblocked_by_the_child_it_returns)
{
	wait4_case(PID, "kobj-wait4");
	cr_assert_eq(count19(r.t19, "GoBlock"), 1, "a wait with a known waker");
	cr_assert_eq(waker_of(2), 1, "unblocked by the ending process's thread (G1)");
	cr_assert_eq(r.sum.model.kernel_wakes, 1);
}

Test(kobj, wait4_of_another_child_is_not_unblocked_by_this_one)
{
	wait4_case(PID + 1, "kobj-wait4-other");
	cr_assert_eq(count19(r.t19, "GoBlock"), 0);
	cr_assert_eq(r.sum.model.kernel_wakes, 0);
}
