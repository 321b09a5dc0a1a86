/* report.c on a capture written by hand, where every wait is known to the nanosecond:
 * per-object count / total / mean / max and per-stack split, per-thread time by kind,
 * syscalls per call site, threads still waiting at the end, recorder losses. */
#include "report/names.h"
#include "report/report.h"
#include "symbolizer/symbolizer.h"
#include "encoder/syscalls.h"

#include "report_scenario.h"

#include <criterion/criterion.h>
#include <dlfcn.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#define LOCK 0x5000u
#define COND 0x6000u
#define OTHER_LOCK 0x7000u

static char capture_path[256];

/* Threads 2 and 3 ("worker-a", "worker-b") fight over LOCK; 2 waits on COND once; 3 reads
 * a pipe for 3 us; 2 is left blocked on OTHER_LOCK when the capture ends at 10 us. */
static void write_capture(void)
{
	struct gt_cb *cb = report_scenario_threads(2, 1, 0);
	/* LOCK: 500 ns from stack 1 (thread 2), 1000 ns from stack 2 (thread 3), then
	 * 250 ns from stack 1 again. */
	gt_cb_block_begin(cb, 1, 2000, 2, GT_BK_MUTEX, LOCK, 1);
	gt_cb_block_begin(cb, 0, 2100, 3, GT_BK_MUTEX, LOCK, 2);
	gt_cb_block_end(cb, 1, 2500, 2, GT_BK_MUTEX, LOCK, GT_BR_OK);
	gt_cb_block_end(cb, 0, 3100, 3, GT_BK_MUTEX, LOCK, GT_BR_OK);
	gt_cb_block_begin(cb, 1, 4000, 2, GT_BK_MUTEX, LOCK, 1);
	gt_cb_block_end(cb, 1, 4250, 2, GT_BK_MUTEX, LOCK, GT_BR_OK);
	gt_cb_block_begin(cb, 1, 5000, 2, GT_BK_COND, COND, 1);
	gt_cb_block_end(cb, 1, 5400, 2, GT_BK_COND, COND, GT_BR_OK);
	gt_cb_syscall_begin(cb, 0, 5000, 3, GT_FD_PIPE, SYS_read, 4, 2);
	gt_cb_syscall_end(cb, 0, 8000, 3, SYS_read, 10);
	gt_cb_thread_end(cb, 0, 8100, 3);
	gt_cb_block_begin(cb, 1, 9000, 2, GT_BK_MUTEX, OTHER_LOCK, 1);
	gt_cb_notice(cb, 0, 9500, GT_NOTICE_DROPPED, 3);
	gt_cb_capture_end(cb, 0, 11000);
	gt_cb_header(cb)->flags |= GT_FILE_FINALIZED;
	snprintf(capture_path, sizeof capture_path, "%s/report-counts-%d.gtcap",
		 GT_TEST_TMPDIR, (int)getpid());
	cr_assert_eq(gt_cb_write(cb, capture_path), 0);
	gt_cb_free(cb);
}

static char *report_of(bool json)
{
	return report_scenario_report(capture_path, json);
}

static void cleanup(void)
{
	unlink(capture_path);
}

TestSuite(report_counts, .init = write_capture, .fini = cleanup);

Test(report_counts, objects_like_mutrace)
{
	char *json = report_of(true);
	const char *lock = strstr(json, "\"address\":\"0x5000\",\"kind\":\"mutex\",\"waits\":3,"
				  "\"total_ns\":1750,\"mean_ns\":583,\"max_ns\":1000");
	cr_assert_not_null(lock, "%s", json);
	/* Its stacks, by total wait: stack 2 (1000 ns once) before stack 1 (750 ns twice). */
	cr_assert_not_null(strstr(lock, "\"stacks\":[{\"waits\":1,\"total_ns\":1000,\"max_ns\":1000,"),
			   "%s", lock);
	cr_assert_not_null(strstr(lock, "{\"waits\":2,\"total_ns\":750,\"max_ns\":500,"), "%s", lock);
	cr_assert_not_null(strstr(json, "\"address\":\"0x6000\",\"kind\":\"condvar\",\"waits\":1,"
				  "\"total_ns\":400"), "%s", json);
	/* Still blocked at the end: not a completed wait, so not among the objects. */
	cr_assert_null(strstr(json, "\"address\":\"0x7000\""), "%s", json);
	free(json);
}

Test(report_counts, threads_syscalls_and_losses)
{
	char *json = report_of(true);
	const char *a = strstr(json, "\"serial\":2,\"tid\":102,\"name\":\"worker-a\"");
	const char *b = strstr(json, "\"serial\":3,\"tid\":103,\"name\":\"worker-b\"");
	cr_assert(a != NULL && b != NULL, "%s", json);
	/* worker-a: LOCK 500 + 250 ns, and OTHER_LOCK from 9000 to the end (11000) is waiting,
	 * not running: alive 9900 ns from its start at 1100, 3150 of them waiting. */
	cr_assert_not_null(strstr(a, "\"lock_ns\":2750,\"lock_waits\":3,\"cond_ns\":400"), "%s", a);
	cr_assert_not_null(strstr(a, "\"alive_ns\":9900,"), "%s", a);
	cr_assert_not_null(strstr(a, "\"running_ns\":6750,\"ended\":false"), "%s", a);
	cr_assert_not_null(strstr(b, "\"lock_ns\":1000,\"lock_waits\":1,"), "%s", b);
	cr_assert_not_null(strstr(b, "\"syscall_ns\":3000,\"syscall_waits\":1,"), "%s", b);
	/* Thread 3 lived from 1150 to 8100 (6950 ns), 4000 of them waiting. */
	cr_assert_not_null(strstr(b, "\"alive_ns\":6950,"), "%s", b);
	cr_assert_not_null(strstr(b, "\"running_ns\":2950,\"ended\":true"), "%s", b);
	cr_assert_not_null(strstr(a, "\"ended\":false,\"waiting_at_end\":{\"in\":\"mutex\","
				     "\"object\":\"0x7000\",\"since_ns\":8000,\"waited_ns\":2000,"),
			   "%s", a);
	char read_site[128];
	snprintf(read_site, sizeof read_site, "\"syscalls\":[{\"syscall\":\"read\",\"nr\":%d,"
		 "\"fd_kind\":\"pipe\",\"waits\":1,\"total_ns\":3000", (int)GT_SYS_read);
	cr_assert_not_null(strstr(json, read_site), "%s", json);
	cr_assert_not_null(strstr(json, "\"dropped_facts\":3,"), "%s", json);
	free(json);
}

Test(report_counts, text_says_the_same)
{
	char *text = report_of(false);
	cr_assert_not_null(strstr(text, "worker-a"), "%s", text);
	cr_assert_not_null(strstr(text, "Contended objects"), "%s", text);
	/* "#  object  kind  waits  total ms  mean ms  max ms" */
	const char *row = strstr(text, "0x5000");
	cr_assert_not_null(row, "%s", text);
	char kind[16];
	unsigned waits;
	double total_ms, mean_ms, max_ms;
	cr_assert_eq(sscanf(row, "0x5000 %15s %u %lf %lf %lf", kind, &waits, &total_ms, &mean_ms,
			    &max_ms), 5, "%s", row);
	cr_assert_str_eq(kind, "mutex");
	cr_assert_eq(waits, 3);
	cr_assert_float_eq(max_ms, 0.001, 1e-9);
	cr_assert_float_eq(mean_ms, 0.001, 1e-9);
	cr_assert_not_null(strstr(text, "Threads still waiting when the capture ends"), "%s", text);
	cr_assert_not_null(strstr(text, "thread 2 (worker-a) since 0.008 ms in mutex 0x7000"),
			   "%s", text);
	cr_assert_not_null(strstr(text, "Losses: 3 facts dropped"), "%s", text);
	free(text);
}

/* ---- stacks that read the same are one group ------------------------------------------ */

static uint64_t return_address[2];

__attribute__((noinline)) static void note_return_address(int i)
{
	return_address[i] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	__asm__ volatile("" ::: "memory");
}

/* Two calls on one source line: two return addresses, one (function, file, line). */
__attribute__((noinline)) static void two_calls_on_one_line(void)
{
	note_return_address(0); note_return_address(1); __asm__ volatile("" ::: "memory");
}

extern char _end[];

Test(report_groups, stack_ids_with_the_same_frames_are_one_group)
{
	two_calls_on_one_line();
	cr_assert_neq(return_address[0], return_address[1]);
	Dl_info self;
	cr_assert_neq(dladdr((void *)two_calls_on_one_line, &self), 0);
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	cr_assert_gt(n, 0);
	exe[n] = '\0';
	uint64_t base = (uint64_t)(uintptr_t)self.dli_fbase;

	struct gt_cb *cb = gt_cb_new(1, 65536, 1000);
	gt_cb_module(cb, 0, 1000, exe, NULL, 0, base, base, (uint64_t)(uintptr_t)_end,
		     GT_SYM_MAIN_EXE);
	gt_cb_thread_existing(cb, 0, 1001, 1, 0, 0);
	const uint64_t first[] = { return_address[0] }, second[] = { return_address[1] };
	gt_cb_stack(cb, 0, 1002, 1, first, 1);
	gt_cb_stack(cb, 0, 1003, 2, second, 1);
	/* 300 ns from stack 1, then 200 and 700 ns from stack 2, on one condvar; the same
	 * split on a pipe read. */
	gt_cb_block_begin(cb, 0, 2000, 1, GT_BK_COND, COND, 1);
	gt_cb_block_end(cb, 0, 2300, 1, GT_BK_COND, COND, GT_BR_OK);
	gt_cb_block_begin(cb, 0, 3000, 1, GT_BK_COND, COND, 2);
	gt_cb_block_end(cb, 0, 3200, 1, GT_BK_COND, COND, GT_BR_OK);
	gt_cb_block_begin(cb, 0, 4000, 1, GT_BK_COND, COND, 2);
	gt_cb_block_end(cb, 0, 4700, 1, GT_BK_COND, COND, GT_BR_OK);
	gt_cb_syscall_begin(cb, 0, 5000, 1, GT_FD_PIPE, SYS_read, 4, 1);
	gt_cb_syscall_end(cb, 0, 5300, 1, SYS_read, 1);
	gt_cb_syscall_begin(cb, 0, 6000, 1, GT_FD_PIPE, SYS_read, 4, 2);
	gt_cb_syscall_end(cb, 0, 6900, 1, SYS_read, 1);
	gt_cb_capture_end(cb, 0, 7000);
	gt_cb_header(cb)->flags |= GT_FILE_FINALIZED;
	snprintf(capture_path, sizeof capture_path, "%s/report-groups-%d.gtcap",
		 GT_TEST_TMPDIR, (int)getpid());
	cr_assert_eq(gt_cb_write(cb, capture_path), 0);
	gt_cb_free(cb);

	char *json = report_of(true);
	const char *cond = strstr(json, "\"address\":\"0x6000\",\"kind\":\"condvar\",\"waits\":3,");
	cr_assert_not_null(cond, "%s", json);
	cr_assert_not_null(strstr(cond, "\"stacks\":[{\"waits\":3,\"total_ns\":1200,\"max_ns\":700,"
				   "\"frames\":[{\"func\":\"two_calls_on_one_line\""), "%s", cond);
	cr_assert_not_null(strstr(json, "\"fd_kind\":\"pipe\",\"waits\":2,\"total_ns\":1200,"
				  "\"mean_ns\":600,\"max_ns\":900,\"stacks\":[{\"waits\":2,"
				  "\"total_ns\":1200,\"max_ns\":900,\"frames\":[{\"func\":"
				  "\"two_calls_on_one_line\""), "%s", json);
	/* One group per site: no second entry in either stack list. */
	cr_assert_null(strstr(json, "}]},{\"waits\""), "%s", json);
	free(json);

	char *text = report_of(false);
	const char *group = strstr(text, "3 waits, 0.001 ms total");
	cr_assert_not_null(group, "%s", text);
	cr_assert_not_null(strstr(group, "two_calls_on_one_line (test_report_counts.c:"), "%s", text);
	cr_assert_null(strstr(text, "more stacks"), "%s", text);
	free(text);
	unlink(capture_path);
}

/* ---- times follow the clock pairs, as the trace's Frequency does ----------------------- */

Test(report_clock, waits_follow_the_fitted_rate)
{
	/* nominal 3 GHz, true 2.97 GHz per the clock pairs: 297e6 ticks are 100 ms, not 99 */
	const uint64_t start = REPORT_CLOCK_START, tick = REPORT_CLOCK_TICK;
	struct gt_cb *cb = report_scenario_fitted_clock();
	gt_cb_block_begin(cb, 0, start + tick, 1, GT_BK_MUTEX, LOCK, 0);
	gt_cb_block_end(cb, 0, start + 2 * tick, 1, GT_BK_MUTEX, LOCK, GT_BR_OK);
	gt_cb_capture_end(cb, 0, start + 10 * tick);
	snprintf(capture_path, sizeof capture_path, "%s/report-clock-%d.gtcap", GT_TEST_TMPDIR,
		 (int)getpid());
	cr_assert_eq(gt_cb_write(cb, capture_path), 0);
	gt_cb_free(cb);

	char *json = report_of(true);
	cr_assert_not_null(strstr(json, "\"recorded_ns\":1000000000,"), "%s", json);
	cr_assert_not_null(strstr(json, "\"lock_ns\":100000000,\"lock_waits\":1,"), "%s", json);
	cr_assert_not_null(strstr(json, "\"address\":\"0x5000\",\"kind\":\"mutex\",\"waits\":1,"
				  "\"total_ns\":100000000,\"mean_ns\":100000000,"
				  "\"max_ns\":100000000,"), "%s", json);
	free(json);
	unlink(capture_path);
}

/* ---- start routines are never cut --------------------------------------------------- */

__attribute__((noinline)) void *a_start_routine_whose_name_is_longer_than_the_column(void *arg)
{
	__asm__ volatile("" ::: "memory");
	return arg;
}

Test(report_names, start_routine_column_widens_to_the_longest_name)
{
	Dl_info self;
	void *(*routine)(void *) = a_start_routine_whose_name_is_longer_than_the_column;
	cr_assert_neq(dladdr((void *)routine, &self), 0);
	char exe[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
	cr_assert_gt(n, 0);
	exe[n] = '\0';
	uint64_t base = (uint64_t)(uintptr_t)self.dli_fbase, entry = (uint64_t)(uintptr_t)routine;

	struct gt_cb *cb = gt_cb_new(1, 65536, 1000);
	gt_cb_module(cb, 0, 1000, exe, NULL, 0, base, base, (uint64_t)(uintptr_t)_end,
		     GT_SYM_MAIN_EXE);
	gt_cb_thread_existing(cb, 0, 1001, 1, 0, 0);
	gt_cb_thread_new(cb, 0, 1010, 1, 2, 0, entry);
	gt_cb_thread_start(cb, 0, 1100, 2, 102, entry);
	gt_cb_thread_end(cb, 0, 1200, 2);
	gt_cb_capture_end(cb, 0, 2000);
	gt_cb_header(cb)->flags |= GT_FILE_FINALIZED;
	snprintf(capture_path, sizeof capture_path, "%s/report-names-%d.gtcap", GT_TEST_TMPDIR,
		 (int)getpid());
	cr_assert_eq(gt_cb_write(cb, capture_path), 0);
	gt_cb_free(cb);

	char *text = report_of(false);
	const char *name = "a_start_routine_whose_name_is_longer_than_the_column";
	const char *header = strstr(text, "\n  #    tid     name            start routine");
	const char *row = strstr(text, "\n  2    102     ");
	cr_assert(header != NULL && row != NULL, "%s", text);
	cr_assert_not_null(strstr(row, name), "the whole name: %s", text);
	/* the columns after it line up with the header's */
	const char *alive_header = strstr(header, "alive ms");
	const char *alive_row = strstr(row + 1, "0.000");
	cr_assert(alive_header && alive_row, "%s", text);
	cr_assert_eq(alive_header + strlen("alive ms") - header, alive_row + strlen("0.000") - row,
		     "%s", text);
	free(text);
	char *json = report_of(true);
	char want[128];
	snprintf(want, sizeof want, "\"start_routine\":\"%s\"", name);
	cr_assert_not_null(strstr(json, want), "%s", json);
	free(json);
	unlink(capture_path);
}

/* Every system call of the target is named, from <sys/syscall.h> at build time (issue 27:
 * postgres' setgroups showed as syscall_116); a number no call has stays a number. */
Test(report_names, every_system_call_has_its_name)
{
	char buf[32];
	/* calls as the reader delivers them: x86-64's numbers, whichever arch recorded them */
	cr_expect_str_eq(gt_report_syscall_name(GT_SYS_setgroups, buf, sizeof buf), "setgroups");
	cr_expect_str_eq(gt_report_syscall_name(GT_SYS_read, buf, sizeof buf), "read");
	cr_expect_str_eq(gt_report_syscall_name(GT_SYS_io_uring_enter, buf, sizeof buf),
			 "io_uring_enter");
	cr_expect_str_eq(gt_report_syscall_name(GT_SYS_clock_nanosleep, buf, sizeof buf),
			 "clock_nanosleep");
	cr_expect_str_eq(gt_report_syscall_name(gt_syscall_canonical(GT_ARCH_AARCH64, 64), buf,
						sizeof buf), "write", "aarch64's write");
	cr_expect_str_eq(gt_report_syscall_name(100000, buf, sizeof buf), "syscall_100000");
}
