/* Property: whatever the fact stream, the encoder writes a trace both Go readers accept.
 *
 * Random captures: threads created, started, ended, named; blocks and wakes on a few shared
 * objects in right and wrong order; syscalls of every descriptor kind and duration; yields;
 * facts on random CPUs (migrations, invisible preemptions); unknown threads; per-CPU clock
 * skew; user tasks, regions and logs; then sometimes truncation, zeroed ranges or garbage.  Every capture is converted and
 * parsed by Go 1.19 and Go 1.23; a sample also goes through the full trace-oracle (UI start-up,
 * pages, profiles).  A failure prints its seed; GT_PROPERTY_SEED=N replays one capture.
 *
 * GT_PROPERTY_ITERATIONS (default 150) and GT_PROPERTY_FULL_EVERY (default 15) size the run. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "oracle.h"
#include "oracle_v2.h"
#include "test_util.h"

#define T0 1000000ull
#define MAX_THREADS 8

struct rng {
	uint64_t s;
};

static uint64_t rnd(struct rng *r)
{
	r->s ^= r->s << 13;
	r->s ^= r->s >> 7;
	r->s ^= r->s << 17;
	return r->s;
}

static uint64_t below(struct rng *r, uint64_t n)
{
	return n ? rnd(r) % n : 0;
}

enum sim_state { S_NONE, S_CREATED, S_RUNNING, S_BLOCKED, S_SYSCALL, S_DEAD };

struct sim_thread {
	enum sim_state st;
	uint32_t cpu;
	uint8_t kind;         /* block kind while blocked */
	uint64_t obj;
};

static const uint64_t objects[] = {0x7f0000001000ull, 0x7f0000002000ull, 0x7f0000003000ull};

static uint64_t stamp(const int64_t *skew, uint32_t cpu, uint64_t t)
{
	int64_t v = (int64_t)t + skew[cpu];
	return v < (int64_t)T0 ? T0 : (uint64_t)v;
}

/* Builds one random capture at path; returns its size. */
static uint64_t random_capture(uint64_t seed, const char *path)
{
	struct rng r = {seed * 0x9e3779b97f4a7c15ull + 0x1234567ull};
	/* mostly small machines, sometimes a wide one (sparse P ids) */
	uint32_t n_cpus = below(&r, 8) ? 1 + (uint32_t)below(&r, 4) : 1 + (uint32_t)below(&r, 96);
	struct gt_cb *cb = gt_cb_new(n_cpus, 4096 * (1 + (uint32_t)below(&r, 3)), T0);
	int64_t skew[96] = {0};
	if (below(&r, 3) == 0)
		for (uint32_t c = 0; c < n_cpus; c++)
			skew[c] = (int64_t)below(&r, 6000) - 3000;
	struct sim_thread th[MAX_THREADS + 1] = {0};
	uint32_t n_threads = 1;
	uint64_t t = T0 + 10;
	th[1].st = S_RUNNING;
	if (below(&r, 4))
		gt_cb_thread_existing(cb, 0, t, 1, 0, 0);
	if (below(&r, 3) == 0 && n_threads < MAX_THREADS) {
		/* a thread already blocked at start */
		n_threads++;
		th[n_threads] = (struct sim_thread){S_BLOCKED, (uint32_t)below(&r, n_cpus), GT_BK_COND, objects[0]};
		gt_cb_thread_existing(cb, th[n_threads].cpu, t + 1, n_threads, 1, 0);
	}
	static const uint64_t pcs[] = {0x401234, 0x401300, 0x401400};
	for (uint32_t id = 1; id <= 3; id++)
		gt_cb_stack(cb, (uint32_t)below(&r, n_cpus), t + 2, id, pcs + id - 1, 4 - id);
	if (below(&r, 4) == 0) {
		/* a deep stack (cut to 128 frames) redefining id 2 (the first definition wins) */
		uint64_t deep[200];
		for (int i = 0; i < 200; i++)
			deep[i] = below(&r, 10) ? 0x7f0000400000ull + 0x40 * (uint64_t)i : below(&r, 2);
		gt_cb_stack(cb, (uint32_t)below(&r, n_cpus), t + 3, 2 + (uint32_t)below(&r, 2) * 3, deep,
			    1 + (uint32_t)below(&r, 200));
	}

	int n_facts = 20 + (int)below(&r, 400);
	for (int i = 0; i < n_facts; i++) {
		t += 1 + below(&r, below(&r, 4) ? 500 : 50000);
		uint32_t k = 1 + (uint32_t)below(&r, n_threads);
		struct sim_thread *s = &th[k];
		/* usually the thread's own CPU, sometimes another (migration / preemption) */
		uint32_t cpu = below(&r, 5) ? s->cpu : (uint32_t)below(&r, n_cpus);
		s->cpu = cpu;
		uint64_t ts = stamp(skew, cpu, t);
		uint32_t stack = (uint32_t)below(&r, 5);  /* 4: never defined */
		switch (s->st) {
		case S_NONE: case S_DEAD:
			if (below(&r, 20) == 0)  /* a fact from a dead or unknown thread */
				gt_cb_yield(cb, cpu, ts, k, stack);
			break;
		case S_CREATED:
			gt_cb_thread_start(cb, cpu, ts, k, 100 + k, 0x401000 + 0x100 * k);
			s->st = S_RUNNING;
			break;
		case S_BLOCKED: {
			uint32_t res = below(&r, 4) ? GT_BR_OK : (uint32_t)below(&r, 5);
			gt_cb_block_end(cb, cpu, ts, k, s->kind, s->obj, res);
			s->st = S_RUNNING;
			break;
		}
		case S_SYSCALL:
			gt_cb_syscall_end(cb, cpu, ts, k, 0, 1);
			s->st = S_RUNNING;
			break;
		case S_RUNNING: {
			uint64_t what = below(&r, 100);
			if (what < 8 && n_threads < MAX_THREADS) {
				uint32_t child = ++n_threads;
				gt_cb_thread_new(cb, cpu, ts, k, child, stack, 0x401000 + 0x100 * child);
				th[child] = (struct sim_thread){S_CREATED, (uint32_t)below(&r, n_cpus), 0, 0};
			} else if (what < 35) {
				s->kind = 1 + (uint8_t)below(&r, GT_BK_COUNT - 1);
				s->obj = s->kind == GT_BK_JOIN ? 1 + below(&r, n_threads)
							       : objects[below(&r, 3)];
				gt_cb_block_begin(cb, cpu, ts, k, s->kind, s->obj, stack);
				s->st = S_BLOCKED;
			} else if (what < 60) {
				uint8_t kind = 1 + (uint8_t)below(&r, GT_BK_COUNT - 1);
				uint32_t count = below(&r, 3) ? 1 : GT_WAKE_ALL;
				gt_cb_wake(cb, cpu, ts, k, kind, objects[below(&r, 3)], count, stack);
			} else if (what < 78) {
				gt_cb_syscall_begin(cb, cpu, ts, k, (enum gt_fd_kind)below(&r, 6), 0, 3, stack);
				s->st = S_SYSCALL;
			} else if (what < 86) {
				gt_cb_yield(cb, cpu, ts, k, stack);
			} else if (what < 89) {
				gt_cb_thread_name(cb, cpu, ts, k, below(&r, 2) ? "worker" : "io");
			} else if (what < 93 && k != 1) {
				gt_cb_thread_end(cb, cpu, ts, k);
				s->st = S_DEAD;
			} else if (what < 95) {
				/* an end without its begin */
				gt_cb_block_end(cb, cpu, ts, k, GT_BK_MUTEX, objects[0], GT_BR_OK);
			} else if (what < 96) {
				gt_cb_syscall_end(cb, cpu, ts, k, 0, 0);
			} else if (what < 97 && n_threads > 1) {
				/* a duplicate creation of an existing thread */
				gt_cb_thread_new(cb, cpu, ts, k, 2, stack, 0x401000);
			} else {
				/* user annotations, nested right or wrong */
				static const char *const names[] = {"a", "b", "c"};
				gt_cb_user(cb, cpu, ts, k, (enum gt_user_kind)(1 + below(&r, 5)), below(&r, 3),
					   below(&r, 2), stack, names[below(&r, 3)], below(&r, 2) ? "msg" : NULL);
			}
			break;
		}
		}
	}
	if (below(&r, 2))
		gt_cb_capture_end(cb, 0, stamp(skew, 0, t + 10));
	cr_assert_eq(gt_cb_write(cb, path), 0);
	size_t size;
	gt_cb_image(cb, &size);
	gt_cb_free(cb);

	/* damage */
	uint64_t damage = below(&r, 10);
	if (damage == 0 && size > GT_FILE_HEADER_SIZE)
		gt_cb_truncate(path, GT_FILE_HEADER_SIZE + below(&r, size - GT_FILE_HEADER_SIZE));
	else if (damage == 1 && size > GT_FILE_HEADER_SIZE + 64)
		gt_cb_garbage(path, GT_FILE_HEADER_SIZE + below(&r, size - GT_FILE_HEADER_SIZE - 64),
			      8 + below(&r, 56), seed);
	else if (damage == 2 && size > GT_FILE_HEADER_SIZE + 64)
		gt_cb_zero_range(path, GT_FILE_HEADER_SIZE + 64 + below(&r, size - GT_FILE_HEADER_SIZE - 64) / 8 * 8,
				 8 * (1 + below(&r, 8)));
	return size;
}

static long env_long(const char *name, long def)
{
	const char *v = getenv(name);
	return v && *v ? strtol(v, NULL, 10) : def;
}

Test(property, random_fact_streams_always_give_readable_traces, .timeout = 900)
{
	long iterations = env_long("GT_PROPERTY_ITERATIONS", 150);
	long full_every = env_long("GT_PROPERTY_FULL_EVERY", 15);
	long only = env_long("GT_PROPERTY_SEED", -1);
	long base = env_long("GT_PROPERTY_BASE", 1);
	long failures = 0, full_runs = 0;
	for (long i = 0; i < iterations; i++) {
		uint64_t seed = only >= 0 ? (uint64_t)only : (uint64_t)(base + i);
		char cap[PATH_MAX], trace[PATH_MAX];
		snprintf(cap, sizeof cap, "%s/prop-%lu.cap", test_tmpdir(), (unsigned long)seed);
		random_capture(seed, cap);
		struct gt_convert_summary sum;
		if (convert_path(cap, trace, &sum)) {
			cr_log_error("seed %lu: conversion failed", (unsigned long)seed);
			failures++;
			continue;
		}
		/* the two parse checks on every capture; a sample also gets the full oracle */
		bool full = full_every > 0 && (i % full_every == 0 || only >= 0);
		char *report = NULL;
		int st = gt_oracle_check(trace, !full, &report);
		full_runs += full;
		if (st) {
			cr_log_error("seed %lu: %s oracle failed (capture %s):\n%s", (unsigned long)seed,
				     full ? "full" : "parse", cap, report ? report : "");
			failures++;
			free(report);
			continue;
		}
		free(report);
		remove(trace);
		remove(cap);
	}
	cr_log_info("%ld random captures, %ld through the full oracle, %ld failures", iterations,
		    full_runs, failures);
	cr_assert_eq(failures, 0, "%ld of %ld random captures gave a trace a reader rejects "
		     "(seeds in the log; replay with GT_PROPERTY_SEED=N)", failures, iterations);
}

/* The same random streams through the Go 1.22+ writer: Go 1.22's reader, the strictest,
 * accepts every trace, whatever its map order (gt_trace_v2_order_check); half of them get a generation every 100 us (a capture spans a few
 * ms: many boundaries, with threads in every state); a third have the critical path drawn; a
 * sample is read by Go 1.23 too. */
Test(property, random_fact_streams_through_the_go122_writer, .timeout = 900)
{
	char tool[PATH_MAX];
	if (!gt_go_trace_tool("1.22", tool, sizeof tool))
		cr_skip_test("Go 1.22 is not installed (/usr/lib/go-1.22: apt-get install -t "
			     "bookworm-backports golang-1.22-go)");
	long iterations = env_long("GT_PROPERTY_ITERATIONS", 150);
	long only = env_long("GT_PROPERTY_SEED", -1);
	long base = env_long("GT_PROPERTY_BASE", 1);
	long failures = 0, multi = 0;
	for (long i = 0; i < iterations; i++) {
		uint64_t seed = only >= 0 ? (uint64_t)only : (uint64_t)(base + i);
		char cap[PATH_MAX], trace[PATH_MAX + 8], err[512];
		snprintf(cap, sizeof cap, "%s/prop22-%lu.cap", test_tmpdir(), (unsigned long)seed);
		snprintf(trace, sizeof trace, "%s.trace", cap);
		random_capture(seed, cap);
		/* a third with the critical path drawn: its task and regions among the program's */
		struct gt_convert_options opt = {.no_symbols = true, .format = GT_FORMAT_GO122,
						 .generation_ns = seed % 2 ? 100000 : 0,
						 .draw_critical_path = seed % 3 == 0};
		struct gt_convert_summary sum;
		if (gt_convert_file(cap, trace, &opt, &sum, err, sizeof err)) {
			cr_log_error("seed %lu: conversion failed: %s", (unsigned long)seed, err);
			failures++;
			continue;
		}
		uint64_t offsets[1], end;
		ssize_t gens = gt_trace_v2_generations(trace, offsets, 1, &end);
		multi += gens > 1;
		bool ok = gens >= 1 && sum.wire.skipped == 0 && sum.wire.repaired == 0;
		char *why = NULL;
		if (ok && gt_trace_v2_order_check(trace, &why) != 0) {
			/* what Go 1.22's reader would reject with some map orders (not always) */
			cr_log_error("seed %lu: %s (capture %s)", (unsigned long)seed,
				     why ? why : "unreadable", cap);
			ok = false;
		}
		free(why);
		const char *versions[] = {"1.22", i % 10 == 0 || only >= 0 ? "1.23" : NULL};
		for (size_t v = 0; ok && v < 2 && versions[v]; v++) {
			char *dump = NULL, *why = NULL;
			int st = gt_dump_v2(trace, versions[v], &dump, &why);
			if (st != 0) {
				cr_log_error("seed %lu: Go %s rejects the trace (capture %s): %s",
					     (unsigned long)seed, versions[v], cap, why ? why : "");
				ok = false;
			}
			free(dump);
			free(why);
		}
		if (gens < 1 || sum.wire.skipped || sum.wire.repaired)
			cr_log_error("seed %lu: %zd generations, %lu events skipped and %lu placed "
				     "otherwise than modelled by the writer", (unsigned long)seed, gens,
				     (unsigned long)sum.wire.skipped, (unsigned long)sum.wire.repaired);
		if (!ok) {
			failures++;
			continue;
		}
		remove(trace);
		remove(cap);
	}
	cr_log_info("%ld random captures, %ld of several generations, %ld failures", iterations,
		    multi, failures);
	cr_assert_gt(multi, 0, "no capture was cut into generations");
	cr_assert_eq(failures, 0, "%ld of %ld random captures gave a go1.22 trace a reader rejects "
		     "(seeds in the log; replay with GT_PROPERTY_SEED=N)", failures, iterations);
}
