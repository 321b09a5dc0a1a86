/* gt_snapshot_trace_write (snapshot_trace.c) on snapshots built by hand, without a live
 * process or a symbolizer: every state a thread can be found in, in both formats, read by
 * Go's readers; one goroutine per thread, also when the main thread is gone. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>

#include "test_util.h"

static const uint64_t pcs_a[] = {0x401010, 0x401020}, pcs_b[] = {0x402010};

/* Process 100's threads, its main thread gone: 101 and 102 in an AB/BA deadlock, 103 joining
 * 101, 104 asleep, 105 reading a pipe, 106 running. */
static const struct gt_snap_thread threads[] = {
	{.tid = 101, .name = "worker", .state = GT_SNAP_BLOCKED, .block_kind = GT_BK_MUTEX,
	 .object = 0x7000, .holder = 102, .what = "mutex b, held by thread 102", .deadlock = 1,
	 .pcs = pcs_a, .n_pcs = 2},
	{.tid = 102, .name = "worker", .state = GT_SNAP_BLOCKED, .block_kind = GT_BK_MUTEX,
	 .object = 0x7040, .holder = 101, .what = "mutex a, held by thread 101", .deadlock = 1,
	 .pcs = pcs_a, .n_pcs = 2},
	{.tid = 103, .name = "joiner", .state = GT_SNAP_BLOCKED, .block_kind = GT_BK_JOIN,
	 .object = 101, .what = "thread 101 to end", .pcs = pcs_b, .n_pcs = 1},
	{.tid = 104, .name = "sleeper", .state = GT_SNAP_BLOCKED, .block_kind = GT_BK_SLEEP,
	 .what = "sleeping in nanosleep", .pcs = pcs_b, .n_pcs = 1},
	{.tid = 105, .name = "reader", .state = GT_SNAP_SYSCALL, .sys_nr = SYS_read, .sys_arg = 3,
	 .fd_kind = GT_FD_PIPE, .what = "sleeping in read of fd 3", .pcs = pcs_b, .n_pcs = 1},
	{.tid = 106, .name = "busy", .state = GT_SNAP_RUNNING, .what = "running"},
};

static void write_snapshot(enum gt_trace_format format, char *path, size_t size)
{
	snprintf(path, size, "%s/snapshot-%d.trace", test_tmpdir(), (int)format);
	struct gt_live_snapshot s = {.pid = 100, .exe = "/usr/bin/prog", .comm = "prog",
				     .n_cpus = 2, .mono_ns = 5000000000u, .threads = threads,
				     .n = sizeof threads / sizeof *threads};
	char err[256] = "";
	cr_assert_eq(gt_snapshot_trace_write(path, format, NULL, &s, err, sizeof err), 0, "%s",
		     err);
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(path, true, &report), 0, "%s", report ? report : "");
	free(report);
}

Test(snapshot_trace, every_state_in_go122)
{
	char path[4096];
	write_snapshot(GT_FORMAT_GO122, path, sizeof path);
	char *dump = gt_dump_123(path);
	cr_assert(dump);
	/* six goroutines, each on its thread's M, none for the main thread that is gone */
	cr_assert_eq(gt_dump_123_count(dump, "NotExist->Runnable"), 6, "%s", dump);
	cr_assert_eq(gt_dump_123_count(dump, "GoID=7"), 0, "%s", dump);
	static const struct {
		const char *match;
		size_t n;
	} expect[] = {
		{"M=101 Running->Waiting Reason=\"sync: pthread_mutex_lock\"", 1},
		{"M=102 Running->Waiting Reason=\"sync: pthread_mutex_lock\"", 1},
		{"M=103 Running->Waiting Reason=\"sync: pthread_join\"", 1},
		{"M=104 Running->Waiting Reason=\"sleep\"", 1},
		{"M=105 Running->Syscall", 1},
		{"M=106 Log Category=\"gotrace stacks\" Message=\"running\"", 1},
		{"Running->Waiting", 4},
		{"TaskBegin ID=1 Type=\"deadlock 1\"", 1},
		{"Log Task=1", 2},
		{"Log Task=0", 4},
	};
	for (size_t i = 0; i < sizeof expect / sizeof *expect; i++)
		cr_assert_eq(gt_dump_123_count(dump, expect[i].match), expect[i].n,
			     "'%s' not %zu times in:\n%s", expect[i].match, expect[i].n, dump);
	/* nothing ends a wait: no thread is drawn waking another */
	cr_assert_eq(gt_dump_123_count(dump, "Waiting->Runnable"), 0, "%s", dump);
	free(dump);
}

Test(snapshot_trace, every_state_in_go119)
{
	char path[4096];
	write_snapshot(GT_FORMAT_GO119, path, sizeof path);
	struct gt_events *ev = gt_events_parse_119(path);
	cr_assert(ev);
	cr_assert_eq(count19(ev, "GoCreate"), 6);
	cr_assert_eq(count19(ev, "GoBlockSync"), 3);   /* two mutexes, a join */
	cr_assert_eq(count19(ev, "GoSleep"), 1);
	cr_assert_eq(count19(ev, "GoSysBlock"), 1);
	cr_assert_eq(count19(ev, "GoUnblock"), 0);
	cr_assert_eq(count19(ev, "UserLog"), 6);
	cr_assert_eq(count19(ev, "UserTaskCreate"), 1);
	gt_events_free(ev);
}

Test(snapshot_trace, unwritable_path_said_in_err)
{
	struct gt_live_snapshot s = {.pid = 100, .n_cpus = 1, .threads = threads, .n = 1};
	char err[256] = "";
	cr_assert_eq(gt_snapshot_trace_write("/nonexistent/dir/x.trace", GT_FORMAT_GO122, NULL,
					     &s, err, sizeof err), -1);
	cr_assert_str_eq(err, "/nonexistent/dir/x.trace: No such file or directory");
}
