/* report_holds.c on captures written by hand with the lock records of --locks=all, where
 * every hold is known to the nanosecond: per lock its acquisitions, contended share, holds
 * (total, mean, max; recursive ones timed from the outermost acquisition), hold sites and
 * holders, try-locks, condition waits, rwlock reads, releases not paired, locks held at the
 * end; where a holder took a lock others waited for; and a capture without lock records. */
#include "report/report.h"

#include "report_scenario.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define LOCK 0x5000u
#define COND 0x6000u
#define UNPAIRED 0x7000u
#define RWLOCK 0x8000u

static char capture_path[256];

static void lock_record(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread, uint8_t type,
			enum gt_block_kind kind, uint64_t obj, uint32_t stack, uint32_t flags)
{
	struct gt_p_lock p = { .obj = obj, .stack = stack, .flags = flags };
	cr_assert_neq(gt_cb_record(cb, cpu, type, (uint8_t)kind, thread, t, &p, sizeof p), 0);
}

static void acquire(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
		    enum gt_block_kind kind, uint64_t obj, uint32_t stack, uint32_t flags)
{
	lock_record(cb, cpu, t, thread, GT_LOCK_ACQUIRE, kind, obj, stack, flags);
}

static void release(struct gt_cb *cb, uint32_t cpu, uint64_t t, uint32_t thread,
		    enum gt_block_kind kind, uint64_t obj)
{
	lock_record(cb, cpu, t, thread, GT_LOCK_RELEASE, kind, obj, 0, 0);
}

static void write_capture(struct gt_cb *cb, const char *name)
{
	gt_cb_header(cb)->flags |= GT_FILE_FINALIZED;
	snprintf(capture_path, sizeof capture_path, "%s/report-holds-%s-%d.gtcap", GT_TEST_TMPDIR,
		 name, (int)getpid());
	cr_assert_eq(gt_cb_write(cb, capture_path), 0);
	gt_cb_free(cb);
}

/* worker-a (thread 2, tid 102, CPU 1) and worker-b (thread 3, CPU 0); stack 1 is
 * {0x401100, ...} (read back at pc 0x4010ff), stack 2 {0x401300, ...} (0x4012ff).  LOCK's
 * holds: a 500 (stack 1); b 1000 (stack 2) after waiting 2100..2600 while a held it; a 300
 * (stack 1, taken twice: recursive); a 100 (try-lock, stack 1); b 100 (stack 2) until its
 * condition wait releases it, then 100 more (taken back by the wait, stack 2); a holds it
 * from 9000 to the end.  RWLOCK: a and b read 300 each (stacks 1, 2), b writes 400 (stack 2).
 * b releases UNPAIRED, never taken. */
static void write_holds(void)
{
	struct gt_cb *cb = report_scenario_threads(2, 1, 0);
	acquire(cb, 1, 2000, 2, GT_BK_MUTEX, LOCK, 1, 0);
	struct gt_p_block wait = { .obj = LOCK, .stack = 2, .flags = gt_block_holder_tid(102) };
	gt_cb_record(cb, 0, GT_BLOCK_BEGIN, GT_BK_MUTEX, 3, 2100, &wait, sizeof wait);
	release(cb, 1, 2500, 2, GT_BK_MUTEX, LOCK);
	gt_cb_block_end(cb, 0, 2600, 3, GT_BK_MUTEX, LOCK, GT_BR_OK);
	acquire(cb, 0, 2600, 3, GT_BK_MUTEX, LOCK, 2, GT_LOCK_WAITED);
	release(cb, 0, 3600, 3, GT_BK_MUTEX, LOCK);
	acquire(cb, 1, 4000, 2, GT_BK_MUTEX, LOCK, 1, 0);
	acquire(cb, 1, 4100, 2, GT_BK_MUTEX, LOCK, 2, 0);
	release(cb, 1, 4200, 2, GT_BK_MUTEX, LOCK);
	release(cb, 1, 4300, 2, GT_BK_MUTEX, LOCK);
	acquire(cb, 1, 5000, 2, GT_BK_MUTEX, LOCK, 1, GT_LOCK_TRY);
	release(cb, 1, 5100, 2, GT_BK_MUTEX, LOCK);
	acquire(cb, 0, 6000, 3, GT_BK_MUTEX, LOCK, 2, 0);
	release(cb, 0, 6100, 3, GT_BK_MUTEX, LOCK);
	gt_cb_block_begin(cb, 0, 6100, 3, GT_BK_COND, COND, 2);
	gt_cb_block_end(cb, 0, 6500, 3, GT_BK_COND, COND, GT_BR_OK);
	acquire(cb, 0, 6500, 3, GT_BK_MUTEX, LOCK, 2, GT_LOCK_COND);
	release(cb, 0, 6600, 3, GT_BK_MUTEX, LOCK);
	acquire(cb, 1, 7000, 2, GT_BK_RWLOCK_RD, RWLOCK, 1, 0);
	acquire(cb, 0, 7100, 3, GT_BK_RWLOCK_RD, RWLOCK, 2, 0);
	release(cb, 1, 7300, 2, GT_BK_RWLOCK_WR, RWLOCK);
	release(cb, 0, 7400, 3, GT_BK_RWLOCK_WR, RWLOCK);
	acquire(cb, 0, 7500, 3, GT_BK_RWLOCK_WR, RWLOCK, 2, 0);
	release(cb, 0, 7900, 3, GT_BK_RWLOCK_WR, RWLOCK);
	release(cb, 0, 8000, 3, GT_BK_MUTEX, UNPAIRED);
	acquire(cb, 1, 9000, 2, GT_BK_MUTEX, LOCK, 1, 0);
	gt_cb_capture_end(cb, 0, 11000);
	write_capture(cb, "holds");
}

static void cleanup(void)
{
	unlink(capture_path);
}

TestSuite(report_holds, .init = write_holds, .fini = cleanup);

Test(report_holds, each_lock_like_mutrace)
{
	char *json = report_scenario_report(capture_path, true);
	const char *holds = strstr(json, ",\"holds\":{\"locks\":[");
	cr_assert_not_null(holds, "%s", json);
	/* by total hold: LOCK (2100 ns), RWLOCK (1000), UNPAIRED (none) */
	const char *lock = strstr(holds, "{\"address\":\"0x5000\",\"kind\":\"mutex\",");
	const char *rw = strstr(holds, "{\"address\":\"0x8000\",\"kind\":\"rwlock\",");
	const char *unpaired = strstr(holds, "{\"address\":\"0x7000\",\"kind\":\"mutex\",");
	cr_assert(lock && rw && unpaired && lock < rw && rw < unpaired, "%s", holds);
	cr_assert_not_null(
		strstr(lock, "\"acquisitions\":8,\"waited\":1,\"contended_share\":0.125000,"
			     "\"try_locks\":1,\"cond_retakes\":1,\"ownerdead\":0,\"reads\":0,"
			     "\"holds\":6,\"total_ns\":2100,\"mean_ns\":350,\"max_ns\":1000,"
			     "\"unmatched_releases\":0,\"held_at_end\":1,\"before_window\":0,"),
		"%s", lock);
	/* sites by total: stack 2 (1000 + 100 + 100), then stack 1 (500 + 300 + 100) */
	cr_assert_not_null(strstr(lock, "\"sites\":[{\"holds\":3,\"total_ns\":1200,\"max_ns\":1000,"
					"\"frames\":[{\"func\":"),
			   "%s", lock);
	const char *site2 = strstr(lock, "},{\"holds\":3,\"total_ns\":900,\"max_ns\":500,");
	cr_assert_not_null(site2, "%s", lock);
	cr_assert(strstr(lock, "\"pc\":\"0x4012ff\"") < site2 &&
			  strstr(site2, "\"pc\":\"0x4010ff\""),
		  "%s", lock);
	cr_assert_not_null(strstr(lock,
				  "\"holders\":[{\"serial\":3,\"tid\":103,\"name\":\"worker-b\","
				  "\"holds\":3,\"total_ns\":1200},{\"serial\":2,\"tid\":102,"
				  "\"name\":\"worker-a\",\"holds\":3,\"total_ns\":900}]}"),
			   "%s", lock);
	cr_assert_not_null(
		strstr(rw, "\"acquisitions\":3,\"waited\":0,\"contended_share\":0.000000,"
			   "\"try_locks\":0,\"cond_retakes\":0,\"ownerdead\":0,\"reads\":2,"
			   "\"holds\":3,\"total_ns\":1000,\"mean_ns\":333,\"max_ns\":400,"
			   "\"unmatched_releases\":0,\"held_at_end\":0,\"before_window\":0,"),
		"%s", rw);
	cr_assert_not_null(strstr(unpaired, "\"acquisitions\":0,\"waited\":0,"), "%s", unpaired);
	cr_assert_not_null(strstr(unpaired, "\"holds\":0,\"total_ns\":0,\"mean_ns\":0,\"max_ns\":0,"
					    "\"unmatched_releases\":1,\"held_at_end\":0,\"before_"
					    "window\":0,\"sites\":[],"
					    "\"holders\":[]}"),
			   "%s", unpaired);
	const char *end = strstr(
		holds, "],\"unmatched_releases\":1,\"held_at_end\":[{\"serial\":2,"
		       "\"tid\":102,\"name\":\"worker-a\",\"thread_ended\":false,"
		       "\"kind\":\"mutex\",\"address\":\"0x5000\",\"object_name\":\"0x5000\","
		       "\"since_ns\":8000,\"depth\":1,\"frames\":[{\"func\":");
	cr_assert_not_null(end, "%s", holds);
	cr_assert_null(strstr(end, "\"serial\":3"), "one lock held at the end: %s", end);
	free(json);
}

Test(report_holds, a_holder_took_the_lock_its_waiter_waited_for)
{
	char *json = report_scenario_report(capture_path, true);
	const char *object = strstr(json, "\"objects\":[{\"address\":\"0x5000\",\"kind\":\"mutex\","
					  "\"waits\":1,\"total_ns\":500,");
	cr_assert_not_null(object, "%s", json);
	const char *holder =
		strstr(object, "\"holders\":[{\"serial\":2,\"tid\":102,"
			       "\"name\":\"worker-a\",\"waits\":1,\"total_ns\":500,\"releases\":[],"
			       "\"taken_at\":[{\"func\":");
	cr_assert_not_null(holder, "%s", object);
	const char *pc = strstr(holder, "\"pc\":\"0x4010ff\"");
	cr_assert(pc && pc < strstr(holder, "]}"), "taken at stack 1: %s", holder);
	free(json);

	char *text = report_scenario_report(capture_path, false);
	const char *held = strstr(text, "      held by worker-a (thread 2) during 1 wait, 0.001 ms "
					"waited; took it at:\n        ");
	cr_assert_not_null(held, "%s", text);
	free(text);
}

Test(report_holds, text_says_the_same)
{
	char *text = report_scenario_report(capture_path, false);
	const char *section = strstr(text, "\nLock holds (--locks=all: ");
	cr_assert_not_null(section, "%s", text);
	cr_assert_null(strstr(text, "hold times: not recorded"), "%s", text);
	/* "#  lock  kind  acquired  contended  holds  total ms  mean ms  max ms" */
	const char *row = strstr(section, "\n  1   0x5000 ");
	cr_assert_not_null(row, "%s", section);
	char kind[16];
	unsigned acquired, holds;
	double contended, total_ms, mean_ms, max_ms;
	cr_assert_eq(sscanf(row, "\n  1   0x5000 %15s %u %lf%% %u %lf %lf %lf", kind, &acquired,
			    &contended, &holds, &total_ms, &mean_ms, &max_ms),
		     7, "%s", row);
	cr_assert_str_eq(kind, "mutex");
	cr_assert_eq(acquired, 8);
	cr_assert_float_eq(contended, 12.5, 1e-9);
	cr_assert_eq(holds, 6);
	cr_assert_float_eq(total_ms, 0.002, 1e-9);
	cr_assert_float_eq(max_ms, 0.001, 1e-9);
	cr_assert_not_null(
		strstr(row, "\n      1 taken by try-lock; 1 taken back by a condition "
			    "wait; 1 taken again inside a hold of the same thread (timed with "
			    "it); 1 hold still open at the end\n      3 holds, 0.001 ms total"),
		"%s", row);
	cr_assert_not_null(
		strstr(row, "      held by worker-b (thread 3): 3 holds, 0.001 ms\n"
			    "      held by worker-a (thread 2): 3 holds, 0.001 ms\n  2   0x8000 "),
		"%s", row);
	cr_assert_not_null(strstr(section, "\n      2 taken for reading\n"), "%s", section);
	cr_assert_not_null(strstr(section, "\n      1 release not paired with an acquisition\n"),
			   "%s", section);
	cr_assert_not_null(strstr(section, "\n  1 release of a lock not known held, not paired: "),
			   "%s", section);
	cr_assert_not_null(strstr(section,
				  "\nLocks held when the capture ends\n  mutex 0x5000 held "
				  "by worker-a (thread 2) since 0.008 ms, taken at:\n"),
			   "%s", section);
	free(text);
}

/* Hold times follow the clock pairs as waits do: nominal 3 GHz, 2.97 GHz by the pairs. */
Test(report_holds_clock, holds_follow_the_fitted_rate)
{
	const uint64_t start = REPORT_CLOCK_START, tick = REPORT_CLOCK_TICK;
	struct gt_cb *cb = report_scenario_fitted_clock();
	acquire(cb, 0, start + tick, 1, GT_BK_MUTEX, LOCK, 0, 0);
	release(cb, 0, start + 3 * tick, 1, GT_BK_MUTEX, LOCK);
	gt_cb_capture_end(cb, 0, start + 10 * tick);
	write_capture(cb, "clock");
	char *json = report_scenario_report(capture_path, true);
	cr_assert_not_null(strstr(json, "\"holds\":1,\"total_ns\":200000000,\"mean_ns\":200000000,"
					"\"max_ns\":200000000,"),
			   "%s", json);
	cr_assert_not_null(strstr(json, "\"holders\":[{\"serial\":1,\"tid\":1001,\"name\":\"\","
					"\"holds\":1,\"total_ns\":200000000}]"),
			   "%s", json);
	free(json);
	unlink(capture_path);
}

/* Without lock records: the report as before, and one line saying how to get hold times. */
Test(report_holds_none, one_line_says_how_to_record_them)
{
	struct gt_cb *cb = report_scenario_threads(2, 1, 0);
	struct gt_p_block wait = { .obj = LOCK, .stack = 1, .flags = gt_block_holder_tid(103) };
	gt_cb_record(cb, 1, GT_BLOCK_BEGIN, GT_BK_MUTEX, 2, 2000, &wait, sizeof wait);
	gt_cb_block_end(cb, 1, 2500, 2, GT_BK_MUTEX, LOCK, GT_BR_OK);
	gt_cb_capture_end(cb, 0, 3000);
	write_capture(cb, "none");
	char *text = report_scenario_report(capture_path, false);
	const char *line = strstr(text, "\n  hold times: not recorded (`gotrace run --locks=all` "
					"records them)\n\nSyscalls");
	cr_assert_not_null(line, "%s", text);
	cr_assert_eq(strstr(text, "--locks=all"),
		     line + strlen("\n  hold times: not recorded (`gotrace run "), "one line: %s",
		     text);
	cr_assert_null(strstr(text, "Lock holds"), "%s", text);
	cr_assert_null(strstr(text, "Locks held"), "%s", text);
	cr_assert_null(strstr(text, "took it at"), "%s", text);
	free(text);
	char *json = report_scenario_report(capture_path, true);
	cr_assert_not_null(strstr(json, "]}],\"holds\":null,\"syscalls\":"), "%s", json);
	cr_assert_not_null(strstr(json, "\"releases\":[],\"taken_at\":null}"), "%s", json);
	free(json);
	unlink(capture_path);
}

/* A deadlock under --locks=all: each thread took its lock without waiting, and the report
 * says where (the holder's held list), in the wait-for graph and in the cycle. */
Test(report_holds_deadlock, where_each_holder_took_its_lock)
{
	struct gt_cb *cb = report_scenario_threads(2, 1, 0);
	acquire(cb, 1, 2000, 2, GT_BK_MUTEX, LOCK, 1, 0);
	acquire(cb, 0, 2100, 3, GT_BK_MUTEX, UNPAIRED, 2, 0);
	struct gt_p_block a = { .obj = UNPAIRED, .stack = 1, .flags = gt_block_holder_tid(103) };
	struct gt_p_block b = { .obj = LOCK, .stack = 2, .flags = gt_block_holder_tid(102) };
	gt_cb_record(cb, 1, GT_BLOCK_BEGIN, GT_BK_MUTEX, 2, 3000, &a, sizeof a);
	gt_cb_record(cb, 0, GT_BLOCK_BEGIN, GT_BK_MUTEX, 3, 3100, &b, sizeof b);
	gt_cb_capture_end(cb, 0, 5000);
	write_capture(cb, "deadlock");
	char *text = report_scenario_report(capture_path, false);
	const char *graph = strstr(text, "\nWait-for graph when the capture ends");
	cr_assert_not_null(graph, "%s", text);
	cr_assert_not_null(
		strstr(graph,
		       "\n  worker-a (thread 2) waits for mutex 0x7000, held by "
		       "worker-b (thread 3): blocked in mutex 0x5000 since 0.002 ms; took it "
		       "at 0x4012ff (?\?)\n"),
		"%s", graph);
	const char *cycle = strstr(graph, "\nDeadlock 1: 2 threads");
	cr_assert_not_null(cycle, "%s", graph);
	cr_assert_not_null(
		strstr(cycle,
		       "\n  worker-a (thread 2) waits for mutex 0x7000, held by "
		       "worker-b (thread 3), at:\n      0x4010ff (?\?)\n      0x4011ff (?\?)\n"
		       "    which worker-b (thread 3) took at:\n      0x4012ff (?\?)\n"),
		"%s", cycle);
	cr_assert_not_null(
		strstr(cycle, "    which worker-a (thread 2) took at:\n      0x4010ff (?\?)\n"),
		"%s", cycle);
	cr_assert_null(strstr(cycle, "not recorded"), "%s", cycle);
	free(text);
	char *json = report_scenario_report(capture_path, true);
	cr_assert_not_null(strstr(json, "\"held_by\":3,\"frames\":[{\"func\":\"0x4010ff\","), "%s",
			   json);
	cr_assert_not_null(strstr(json, "\"held_taken_at\":[{\"func\":\"0x4012ff\","), "%s", json);
	cr_assert_not_null(strstr(json, "\"held_taken_at\":[{\"func\":\"0x4010ff\","), "%s", json);
	cr_assert_not_null(strstr(json, "\"state\":\"blocked in mutex 0x5000 since 0.002 ms\","
					"\"taken_at\":[{\"func\":\"0x4012ff\","),
			   "%s", json);
	free(json);
	unlink(capture_path);
}

/* A flight recorder's capture: what came before the window reaches the report as a summary
 * stamped at the window's start.  A hold before the window is not counted; one that began
 * before it and ended in it is counted, not timed; one inside it is timed. */
Test(report_holds_ring, holds_before_the_window_are_not_timed)
{
	const uint64_t lost = 2000;
	struct gt_cb *cb = gt_cb_new(2, 8192, 1000);
	gt_cb_thread_existing(cb, 0, 1010, 1, 0, 0);                /* chunk 0: keep */
	acquire(cb, 1, 1100, 1, GT_BK_MUTEX, LOCK, 0, GT_LOCK_TRY); /* chunk 1: CPU 1 */
	release(cb, 1, 1200, 1, GT_BK_MUTEX, LOCK);
	acquire(cb, 1, 1500, 1, GT_BK_MUTEX, LOCK, 0, 0);
	release(cb, 1, lost + 100, 1, GT_BK_MUTEX, LOCK); /* the window */
	acquire(cb, 1, lost + 200, 1, GT_BK_MUTEX, LOCK, 0, 0);
	release(cb, 1, lost + 500, 1, GT_BK_MUTEX, LOCK);
	gt_cb_capture_end(cb, 1, lost + 600);
	struct gt_file_header *h = gt_cb_header(cb);
	h->flags |= GT_FILE_RING;
	h->ring_bytes = 8192;
	h->ring_lost_tsc = lost;
	size_t size;
	struct gt_chunk_header *keep =
		(struct gt_chunk_header *)(gt_cb_image(cb, &size) + GT_FILE_HEADER_SIZE);
	keep->magic = GT_KEEP_MAGIC;
	write_capture(cb, "ring");
	char *json = report_scenario_report(capture_path, true);
	cr_assert_not_null(
		strstr(json, "{\"address\":\"0x5000\",\"kind\":\"mutex\",\"name\":\"0x5000\","
			     "\"acquisitions\":1,\"waited\":0,\"contended_share\":0.000000,"
			     "\"try_locks\":0,\"cond_retakes\":0,\"ownerdead\":0,\"reads\":0,"
			     "\"holds\":1,\"total_ns\":300,\"mean_ns\":300,\"max_ns\":300,"
			     "\"unmatched_releases\":0,\"held_at_end\":0,\"before_window\":1,"),
		"%s", json);
	free(json);
	char *text = report_scenario_report(capture_path, false);
	cr_assert_not_null(strstr(text,
				  "\n      1 hold began before the recorder's window (counted, "
				  "not timed)\n"),
			   "%s", text);
	free(text);
	unlink(capture_path);
}
