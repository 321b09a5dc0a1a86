/* gotrace stacks PID (issue 25, items 1 and 2) on programs that reach a known state
 * (stacks_target.c): an AB/BA deadlock (the cycle, both locks named, the holders), a thread
 * blocked reading a pipe, 40 threads waiting on one condition variable (one group), a rwlock's
 * writer and a semaphore named by their kinds; C++ frames and a stripped binary's debuglink; a
 * counting program sampled five times while it runs ends as it does unsampled; signals sent
 * while the target is being stopped all reach it; a process already traced and another
 * user's process are refused with one line, unharmed. */
#include "cli_support.h"
#include "stacks_running.h"

#include <criterion/criterion.h>
#include <dirent.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../preload/targets/wait_blocked.h"

static const char target[] = GT_TEST_STACKS_TARGET;

/* The target in mode under gotrace run (run_options: its options, NULL-terminated), the
 * trace written in dir. */
static void start_under_run(struct running *r, const char *dir, const char *const *run_options,
			    const char *mode)
{
	const char *argv[16];
	size_t n = 0;
	char trace[256];
	snprintf(trace, sizeof trace, "%s/run.trace", dir);
	argv[n++] = cli_gotrace;
	argv[n++] = "run";
	for (; *run_options; run_options++)
		argv[n++] = *run_options;
	const char *tail[] = {"-o", trace, "--", target, mode, NULL};
	memcpy(argv + n, tail, sizeof tail);
	int fds[2];
	cr_assert_eq(pipe(fds), 0);
	r->pid = fork();
	cr_assert_geq(r->pid, 0);
	if (r->pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL);
		dup2(fds[1], 1);
		close(fds[0]);
		close(fds[1]);
		execv(cli_gotrace, (char *const *)argv);
		_exit(127);
	}
	close(fds[1]);
	r->out = fdopen(fds[0], "r");
	cr_assert(fgets(r->ready, sizeof r->ready, r->out) != NULL, "gotrace run %s: no ready line",
		  mode);
}

static void start(struct running *r, const char *mode, const char *arg)
{
	start_program(r, target, mode, arg);
}

static void stacks(struct cli_result *out, pid_t pid, bool json)
{
	char pid_text[16];
	snprintf(pid_text, sizeof pid_text, "%d", (int)pid);
	const char *argv[] = {cli_gotrace, "stacks", json ? "--json" : pid_text, pid_text, NULL};
	if (!json)
		argv[3] = NULL;
	cli_run(out, argv, NULL);
}

Test(stacks, deadlock_names_both_locks_and_holders)
{
	struct running r;
	start(&r, "deadlock", NULL);
	int a, b;   /* a holds lock_a and waits for lock_b; b the other way round */
	cr_assert_eq(sscanf(r.ready, "ready %d %d", &a, &b), 2);
	struct cli_result out;
	stacks(&out, r.pid, false);
	cr_assert_eq(out.status, 0, "%s", out.err);
	char line[256];
	snprintf(line, sizeof line, "thread %d waits for mutex lock_b, held by thread %d\n", a, b);
	cr_assert(strstr(out.out, line), "no '%s' in:\n%s", line, out.out);
	snprintf(line, sizeof line, "thread %d waits for mutex lock_a, held by thread %d\n", b, a);
	cr_assert(strstr(out.out, line), "no '%s' in:\n%s", line, out.out);
	cr_assert_eq(cli_count_of(out.out, "Deadlock "), 1, "%s", out.out);
	cr_assert(strstr(out.out, "Deadlock 1: 2 threads, each waiting for a lock the next one "
			 "holds"), "%s", out.out);
	snprintf(line, sizeof line, "1 thread [sleeping in futex: mutex lock_b, held by thread "
		 "%d]: %d (stacks_target)\n", b, a);
	cr_assert(strstr(out.out, line), "no '%s' in:\n%s", line, out.out);
	cr_assert(strstr(out.out, "  take_a_then_b\n"), "%s", out.out);
	cr_assert(strstr(out.out, "  take_b_then_a\n"), "%s", out.out);
	cr_assert(!strstr(out.out, "Recorded by gotrace"), "not loaded, yet:\n%s", out.out);
	cli_result_free(&out);

	stacks(&out, r.pid, true);
	cr_assert_eq(out.status, 0, "%s", out.err);
	char cycle[64];
	snprintf(cycle, sizeof cycle, "\"deadlocks\": [[%d, %d]]", a < b ? a : b, a < b ? b : a);
	cr_assert(strstr(out.out, cycle), "no '%s' in:\n%s", cycle, out.out);
	cr_assert_eq(cli_count_of(out.out, "\"kind\": \"mutex\""), 2, "%s", out.out);
	cli_result_free(&out);
	/* still deadlocked, both threads still asleep on the other's lock */
	cr_assert(gt_proc_blocked_in(r.pid, a, SYS_futex, 0, UINTPTR_MAX));
	cr_assert(gt_proc_blocked_in(r.pid, b, SYS_futex, 0, UINTPTR_MAX));
	finish(&r, true);
}

Test(stacks, three_thread_deadlock_is_one_cycle)
{
	struct running r;
	start(&r, "deadlock3", NULL);
	int t[3];   /* t[i] holds lock i and waits for lock i + 1 (of a, b, c) */
	cr_assert_eq(sscanf(r.ready, "ready %d %d %d", &t[0], &t[1], &t[2]), 3);
	struct cli_result out;
	stacks(&out, r.pid, false);
	cr_assert_eq(out.status, 0, "%s", out.err);
	static const char *const waited[3] = {"lock_b", "lock_c", "lock_a"};
	const char *deadlock = strstr(out.out, "\nDeadlock 1: 3 threads, each waiting for a lock "
				      "the next one holds\n");
	cr_assert(deadlock, "%s", out.out);
	for (int i = 0; i < 3; i++) {
		char line[160];
		snprintf(line, sizeof line, "  thread %d (stacks_target) waits for mutex %s, held by "
			 "thread %d\n", t[i], waited[i], t[(i + 1) % 3]);
		cr_assert(strstr(deadlock, line), "no '%s' in:\n%s", line, out.out);
	}
	cr_assert_eq(cli_count_of(out.out, "\nDeadlock "), 1, "%s", out.out);
	cli_result_free(&out);
	finish(&r, true);
}

/* Sampled until it is gone: each sample whole or refused in one line, the run unharmed. */
Test(stacks, process_ending_while_sampled, .timeout = 120)
{
	struct running r;
	start(&r, "count", "100000000");
	char pid_text[16];
	snprintf(pid_text, sizeof pid_text, "%d", (int)r.pid);
	const char *argv[] = {cli_gotrace, "stacks", "--every", "1ms", "--count", "1000000",
			      pid_text, NULL};
	struct cli_result out;
	cli_run(&out, argv, NULL);   /* ends once the target has, a zombie until reaped */
	cr_assert_eq(out.status, 1, "%s", out.err);
	char line[96];
	snprintf(line, sizeof line, "gotrace stacks: process %d ended while it was read\n",
		 (int)r.pid);
	cr_assert_str_eq(out.err, line);
	cr_assert(strstr(out.out, "Sample 1 of 1000000: "), "%s", out.out);
	cli_result_free(&out);
	char counted[64] = "";
	cr_assert(fgets(counted, sizeof counted, r.out) != NULL);
	cr_assert_str_eq(counted, "counted 400000000\n");
	cr_assert_eq(finish(&r, false), 3);
}

/* The deadlock's two threads, each waiting for the other's lock: lock names in, tids out. */
static void assert_two_thread_deadlock(const char *program, const char *mode,
				       const char *first_waits, const char *second_waits,
				       struct cli_result *out)
{
	struct running r;
	int a, b;
	start_program(&r, program, mode, NULL);
	cr_assert_eq(sscanf(r.ready, "ready %d %d", &a, &b), 2, "%s said %s", program, r.ready);
	stacks(out, r.pid, false);
	cr_assert_eq(out->status, 0, "%s", out->err);
	char line[256];
	snprintf(line, sizeof line, "  thread %d waits for mutex %s, held by thread %d\n", a,
		 first_waits, b);
	cr_assert(strstr(out->out, line), "no '%s' in:\n%s", line, out->out);
	snprintf(line, sizeof line, "  thread %d waits for mutex %s, held by thread %d\n", b,
		 second_waits, a);
	cr_assert(strstr(out->out, line), "no '%s' in:\n%s", line, out->out);
	cr_assert_eq(cli_count_of(out->out, "\nDeadlock 1: 2 threads"), 1, "%s", out->out);
	finish(&r, true);
}

Test(stacks, cpp_frames_demangled_and_locks_named)
{
#ifndef GT_TEST_STACKS_CPP
	cr_skip_test("no C++ compiler when the tests were built");
#else
	struct cli_result out;
	assert_two_thread_deadlock(GT_TEST_STACKS_CPP, NULL, "bank::checking.mu",
				   "bank::savings.mu", &out);
	cr_assert_eq(cli_count_of(out.out, "\n  void bank::transfer<long>(bank::Account&, "
				  "bank::Account&, long, int)\n"), 2, "%s", out.out);
	cr_assert_eq(cli_count_of(out.out, "\n  std::mutex::lock()\n"), 2, "%s", out.out);
	cli_result_free(&out);
#endif
}

Test(stacks, stripped_binary_read_through_its_debuglink)
{
	struct cli_result out;
	assert_two_thread_deadlock(GT_TEST_STACKS_STRIPPED, "deadlock", "lock_b", "lock_a", &out);
	/* take_a_then_b's second lock: the first "lock_b" call of the file */
	unsigned line = cli_source_line(GT_TEST_STACKS_SOURCE, "pthread_mutex_lock(&lock_b);");
	static const char func[] = "\n  take_a_then_b\n      ";
	const char *frame = strstr(out.out, func);
	cr_assert(frame, "%s", out.out);
	char where[64];
	snprintf(where, sizeof where, "/stacks_target.c:%u\n", line);
	const char *end = strchr(frame + strlen(func), '\n');
	cr_assert(end && !strncmp(end + 1 - strlen(where), where, strlen(where)),
		  "no '%s' at the end of take_a_then_b's line in:\n%s", where, out.out);
	cli_result_free(&out);
}

Test(stacks, rwlock_writer_and_semaphore_named_by_kind)
{
	struct running r;
	start(&r, "kinds", NULL);
	int reader, waiter;
	cr_assert_eq(sscanf(r.ready, "ready %d %d", &reader, &waiter), 2);
	struct cli_result out;
	stacks(&out, r.pid, false);
	cr_assert_eq(out.status, 0, "%s", out.err);
	char line[160];
	snprintf(line, sizeof line, "1 thread [sleeping in futex: rwlock table_lock, held by "
		 "thread %d]: %d (stacks_target)\n", (int)r.pid, reader);
	cr_assert(strstr(out.out, line), "no '%s' in:\n%s", line, out.out);
	snprintf(line, sizeof line, "1 thread [sleeping in futex: semaphore jobs_ready]: %d "
		 "(stacks_target)\n", waiter);
	cr_assert(strstr(out.out, line), "no '%s' in:\n%s", line, out.out);
	cr_assert(!strstr(out.out, "Deadlock"), "%s", out.out);
	cli_result_free(&out);
	finish(&r, true);
}

/* A writer waiting for two readers to leave: glibc keeps only their number, which is said. */
Test(stacks, rwlock_readers_counted_for_a_waiting_writer)
{
	struct running r;
	start(&r, "readers", NULL);
	int writer;
	cr_assert_eq(sscanf(r.ready, "ready %d", &writer), 1);
	struct cli_result out;
	stacks(&out, r.pid, false);
	cr_assert_eq(out.status, 0, "%s", out.err);
	char line[200];
	snprintf(line, sizeof line, "1 thread [sleeping in futex: rwlock readers_lock, read by 2 "
		 "threads (glibc counts readers, not which)]: %d (stacks_target)\n", writer);
	cr_assert(strstr(out.out, line), "no '%s' in:\n%s", line, out.out);
	cr_assert(!strstr(out.out, "Wait-for graph"), "readers are no edge:\n%s", out.out);
	cli_result_free(&out);
	stacks(&out, r.pid, true);
	cr_assert_eq(out.status, 0, "%s", out.err);
	cr_assert(strstr(out.out, "\"kind\": \"rwlock\", "), "%s", out.out);
	cr_assert(strstr(out.out, "\"holder\": 0, \"readers\": 2, \"name\": \"readers_lock\"}"),
		  "%s", out.out);
	cli_result_free(&out);
	finish(&r, true);
}

Test(stacks, thread_blocked_reading_a_pipe)
{
	struct running r;
	start(&r, "pipe", NULL);
	int reader, fd;
	cr_assert_eq(sscanf(r.ready, "ready %d %d", &reader, &fd), 2);
	struct cli_result out;
	stacks(&out, r.pid, false);
	cr_assert_eq(out.status, 0, "%s", out.err);
	char line[128];
	snprintf(line, sizeof line, "1 thread [sleeping in read of fd %d]: %d (stacks_target)\n"
		 "  __libc_read\n", fd, reader);
	cr_assert(strstr(out.out, line), "no '%s' in:\n%s", line, out.out);
	cr_assert(strstr(out.out, "  read_pipe\n"), "%s", out.out);
	cr_assert(!strstr(out.out, "Deadlock"), "%s", out.out);
	cli_result_free(&out);
	/* the read goes on: it returns what is written to the pipe once it is there */
	cr_assert(gt_proc_blocked_in(r.pid, reader, SYS_read, (uintptr_t)fd, (uintptr_t)fd + 1));
	finish(&r, true);
}

Test(stacks, pool_on_one_condvar_is_one_group)
{
	struct running r;
	start(&r, "pool", NULL);
	struct cli_result out;
	stacks(&out, r.pid, false);
	cr_assert_eq(out.status, 0, "%s", out.err);
	cr_assert(strstr(out.out, ": 41 threads, stopped for "), "%s", out.out);
	cr_assert(strstr(out.out, "\n40 threads [sleeping in futex: condvar pool_cond]: "),
		  "%s", out.out);
	/* two groups: the main thread, and the pool */
	cr_assert_eq(cli_count_of(out.out, "\n1 thread ["), 1, "%s", out.out);
	cr_assert_eq(cli_count_of(out.out, " threads ["), 1, "%s", out.out);
	cr_assert(strstr(out.out, "  pool_worker\n"), "%s", out.out);
	cli_result_free(&out);
	finish(&r, true);
}

Test(stacks, sampled_counting_program_ends_as_unsampled, .timeout = 120)
{
	const char *count = "1000000000";   /* seconds of counting: longer than 5 samples */
	struct running r;
	start(&r, "count", count);
	char plain[128] = "";
	cr_assert(fgets(plain, sizeof plain, r.out) != NULL);
	int plain_status = finish(&r, false);
	cr_assert_eq(plain_status, 3);

	start(&r, "count", count);
	for (int i = 0; i < 5; i++) {
		struct cli_result out;
		stacks(&out, r.pid, false);
		cr_assert_eq(out.status, 0, "sample %d: %s", i, out.err);
		cr_assert(strstr(out.out, "  count\n"), "sample %d:\n%s", i, out.out);
		cli_result_free(&out);
	}
	char sampled[128] = "";
	cr_assert(fgets(sampled, sizeof sampled, r.out) != NULL);
	cr_assert_str_eq(sampled, plain);
	cr_assert_eq(finish(&r, false), plain_status);
}

Test(stacks, already_traced_process_is_left_alone)
{
	struct running r;
	start(&r, "pipe", NULL);
	int reader, fd;
	cr_assert_eq(sscanf(r.ready, "ready %d %d", &reader, &fd), 2);
	cr_assert_eq(ptrace(PTRACE_SEIZE, r.pid, 0, 0), 0);   /* this test is its debugger */
	struct cli_result out;
	stacks(&out, r.pid, false);
	cr_assert_eq(out.status, 1);
	char line[160];
	snprintf(line, sizeof line, "gotrace stacks: process %d is already traced by process %d",
		 (int)r.pid, (int)getpid());
	cr_assert(!strncmp(out.err, line, strlen(line)), "%s", out.err);
	cr_assert_eq(cli_count_lines(out.err), 1, "%s", out.err);
	cr_assert_str_eq(out.out, "");
	cli_result_free(&out);
	cr_assert(gt_proc_blocked_in(r.pid, reader, SYS_read, (uintptr_t)fd, (uintptr_t)fd + 1));
	finish(&r, true);
}

/* gotrace stacks PID run as nobody (65534): the test runs as root. */
static void stacks_as_nobody(struct cli_result *out, pid_t pid)
{
	char pid_text[16];
	snprintf(pid_text, sizeof pid_text, "%d", (int)pid);
	const char *argv[] = {"/usr/bin/setpriv", "--reuid=65534", "--regid=65534",
			      "--clear-groups", cli_gotrace, "stacks", pid_text, NULL};
	cli_run(out, argv, NULL);
}

Test(stacks, another_users_process_is_refused_in_one_line)
{
	if (geteuid() != 0)
		cr_skip_test("needs root, to run gotrace stacks as another user (nobody)");
	struct running r;
	start(&r, "pipe", NULL);
	struct cli_result out;
	stacks_as_nobody(&out, r.pid);
	cr_assert_eq(out.status, 1, "%s", out.err);
	char line[160];
	snprintf(line, sizeof line, "gotrace stacks: process %d belongs to another user (uid 0): "
		 "run gotrace stacks as that user or as root\n", (int)r.pid);
	cr_assert_str_eq(out.err, line);
	cli_result_free(&out);
	finish(&r, true);
}

/* A process of gotrace's own user that made itself undumpable (prctl PR_SET_DUMPABLE 0)
 * refuses ptrace and /proc/PID/maps to all but root: one line says so.  (The refusals of
 * kernel.yama.ptrace_scope cannot be tested here: this kernel has no Yama, and the file is
 * absent.) */
Test(stacks, undumpable_process_is_refused_in_one_line)
{
	if (geteuid() != 0)
		cr_skip_test("needs root, to run the target and gotrace stacks as nobody: as root, "
			     "an undumpable process is traced all the same");
	struct running r;
	start(&r, "undumpable", NULL);
	int reader, fd;
	cr_assert_eq(sscanf(r.ready, "ready %d %d", &reader, &fd), 2);
	struct cli_result out;
	stacks_as_nobody(&out, r.pid);
	cr_assert_eq(out.status, 1, "%s", out.err);
	char line[200];
	snprintf(line, sizeof line, "gotrace stacks: the kernel refused to trace process %d "
		 "(Permission denied): it may have made itself undumpable (prctl "
		 "PR_SET_DUMPABLE); run as root\n", (int)r.pid);
	cr_assert_str_eq(out.err, line);
	cr_assert_str_eq(out.out, "");
	cli_result_free(&out);
	cr_assert(gt_proc_blocked_in(r.pid, reader, SYS_read, (uintptr_t)fd, (uintptr_t)fd + 1));
	finish(&r, true);
}

/* --every --count: a deadlock does not move between samples, a counting program does. */
Test(stacks, repeated_samples_tell_a_hang_from_a_slow_process, .timeout = 120)
{
	struct running r;
	start(&r, "deadlock", NULL);
	char pid_text[16];
	snprintf(pid_text, sizeof pid_text, "%d", (int)r.pid);
	const char *argv[] = {cli_gotrace, "stacks", "--every", "50ms", "--count", "3", pid_text,
			      NULL};
	struct cli_result out;
	cli_run(&out, argv, NULL);
	cr_assert_eq(out.status, 0, "%s", out.err);
	cr_assert(strstr(out.out, "Sample 1 of 3: process "), "%s", out.out);
	cr_assert_eq(cli_count_of(out.out, "\nNo thread moved since the last sample: the same 3 "
				  "threads"), 2, "%s", out.out);
	cr_assert_eq(cli_count_of(out.out, "\nDeadlock 1: "), 3, "%s", out.out);
	cli_result_free(&out);
	finish(&r, true);

	start(&r, "count", "1000000000");
	snprintf(pid_text, sizeof pid_text, "%d", (int)r.pid);
	cli_run(&out, argv, NULL);
	cr_assert_eq(out.status, 0, "%s", out.err);
	cr_assert_eq(cli_count_of(out.out, "\nMoved since the last sample: "), 2, "%s", out.out);
	cr_assert(!strstr(out.out, "No thread moved"), "%s", out.out);
	cli_result_free(&out);
	cr_assert_eq(finish(&r, false), 3);
}

/* The thread's state letter in /proc ('?' when it cannot be read). */
static char thread_state(pid_t pid, pid_t tid)
{
	char path[64], buf[512];
	snprintf(path, sizeof path, "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	FILE *f = fopen(path, "re");
	size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
	if (f)
		fclose(f);
	buf[n] = 0;
	const char *close = strrchr(buf, ')');
	return close && close[1] == ' ' ? close[2] : '?';
}

struct signals_in_the_stop {
	int sock;           /* the test's end of GOTRACE_TEST_STACKS_SEIZED */
	pid_t pid, tid;
	const char *failed; /* NULL: every step done */
};

/* Once gotrace stacks has seized every thread (and interrupted none), sends tid three
 * signals, waits until the first holds it in its signal-delivery stop (state 't': the signal
 * is then gotrace's to pass on or lose), and lets gotrace go on. */
static void *send_signals_in_the_stop(void *arg)
{
	struct signals_in_the_stop *s = arg;
	struct pollfd p = {.fd = s->sock, .events = POLLIN};
	char byte;
	if (poll(&p, 1, 60000) != 1 || read(s->sock, &byte, 1) != 1) {
		s->failed = "gotrace stacks never said it had seized the threads";
		return NULL;
	}
	pid_t tgid = s->pid;
	syscall(SYS_tgkill, tgid, s->tid, SIGUSR1);
	syscall(SYS_tgkill, tgid, s->tid, SIGUSR2);
	syscall(SYS_tgkill, tgid, s->tid, SIGWINCH);
	struct timespec start, now;
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		if (thread_state(s->pid, s->tid) == 't')
			break;
		sched_yield();
		clock_gettime(CLOCK_MONOTONIC, &now);
	} while (now.tv_sec - start.tv_sec < 60);
	if (thread_state(s->pid, s->tid) != 't')
		s->failed = "the signalled thread never stopped for its tracer";
	if (write(s->sock, "g", 1) != 1 && !s->failed)
		s->failed = "gotrace stacks could not be let go on";
	return NULL;
}

/* Signals that reach a thread while gotrace stacks stops it are the program's: each one is
 * handled once it runs again, as it would have been without gotrace. */
Test(stacks, signals_sent_while_stopping_all_reach_the_target, .timeout = 120)
{
	struct running r;
	start(&r, "signals", NULL);
	int reader, write_end;
	cr_assert_eq(sscanf(r.ready, "ready %d %d", &reader, &write_end), 2);
	int sv[2];
	cr_assert_eq(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
	struct signals_in_the_stop s = {.sock = sv[0], .pid = r.pid, .tid = reader};
	pthread_t helper;
	cr_assert_eq(pthread_create(&helper, NULL, send_signals_in_the_stop, &s), 0);
	char hook[64], pid_text[16];
	snprintf(hook, sizeof hook, "GOTRACE_TEST_STACKS_SEIZED=%d", sv[1]);
	snprintf(pid_text, sizeof pid_text, "%d", (int)r.pid);
	const char *argv[] = {cli_gotrace, "stacks", pid_text, NULL};
	const char *env[] = {hook, NULL};
	struct cli_result out;
	cli_run(&out, argv, env);
	pthread_join(helper, NULL);
	close(sv[0]);
	close(sv[1]);
	cr_assert_null(s.failed, "%s", s.failed);
	cr_assert_eq(out.status, 0, "%s", out.err);
	cli_result_free(&out);

	char path[64];
	snprintf(path, sizeof path, "/proc/%d/fd/%d", (int)r.pid, write_end);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	cr_assert_geq(fd, 0);
	cr_assert_eq(write(fd, "q", 1), 1);   /* the reader prints what it counted */
	close(fd);
	char counts[64] = "";
	cr_assert(fgets(counts, sizeof counts, r.out) != NULL);
	cr_assert_str_eq(counts, "signals 1 1 1\n");
	cr_assert_eq(finish(&r, false), 0);
}

static double mono_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The process of thread tid. */
static pid_t process_of(pid_t tid)
{
	char path[64], buf[4096];
	snprintf(path, sizeof path, "/proc/%d/status", (int)tid);
	FILE *f = fopen(path, "re");
	cr_assert_not_null(f);
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = 0;
	const char *at = strstr(buf, "\nTgid:");
	cr_assert_not_null(at);
	return (pid_t)atoi(at + 6);
}

/* How long ago the capture says thread tid's wait on lock began: "(X s ago) in mutex LOCK". */
static double recorded_ago(const char *out, pid_t tid, const char *lock)
{
	const char *recorded = strstr(out, "\nRecorded by gotrace, loaded in process ");
	cr_assert_not_null(recorded, "%s", out);
	char key[64];
	snprintf(key, sizeof key, ", tid %d) since ", (int)tid);
	const char *line = strstr(recorded, key);
	cr_assert_not_null(line, "no '%s' in:\n%s", key, out);
	double since_ms, ago;
	char what[64];
	cr_assert_eq(sscanf(line + strlen(key), "%lf ms (%lf s ago) in mutex %63[^,]", &since_ms,
			    &ago, what), 3, "%s", line);
	cr_assert_str_eq(what, lock);
	return ago;
}

/* Under gotrace run --locks=all, gotrace stacks adds what the capture knows: each blocked
 * thread's recorded wait with its stack and since when, and where each holder took the lock
 * it holds.  The waits began between the target's start and its ready line; the two samples'
 * "ago" differ by the time between them. */
Test(stacks, capture_of_gotrace_run_adds_recorded_waits_and_acquisition_sites, .timeout = 120)
{
	char dir[] = "/tmp/gt-test-stacks-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	struct running r;
	const char *options[] = {"--locks=all", NULL};
	double started = mono_s();
	start_under_run(&r, dir, options, "deadlock");
	double ready = mono_s();
	int a, b;
	cr_assert_eq(sscanf(r.ready, "ready %d %d", &a, &b), 2, "%s", r.ready);
	pid_t pid = process_of(a);

	struct cli_result first, second;
	double first_before = mono_s();
	stacks(&first, pid, false);
	double first_after = mono_s();
	stacks(&second, pid, false);
	double second_after = mono_s();
	cr_assert_eq(first.status, 0, "%s", first.err);
	cr_assert_eq(second.status, 0, "%s", second.err);
	const char *recorded = strstr(first.out, "\nRecorded by gotrace, loaded in process ");
	cr_assert_not_null(recorded, "%s", first.out);
	char line[256];
	snprintf(line, sizeof line, "tid %d), at:\n      take_a_then_b (stacks_target.c:", b);
	cr_assert(strstr(recorded, line), "no '%s' in:\n%s", line, recorded);
	/* where each holder took the lock the other waits for */
	snprintf(line, sizeof line, "tid %d) took at:\n      take_b_then_a (stacks_target.c:", b);
	cr_assert(strstr(recorded, line), "no '%s' in:\n%s", line, recorded);
	snprintf(line, sizeof line, "tid %d) took at:\n      take_a_then_b (stacks_target.c:", a);
	cr_assert(strstr(recorded, line), "no '%s' in:\n%s", line, recorded);

	const double slack = 0.002;   /* printed to the ms; the capture's clock fit */
	double ago = recorded_ago(first.out, a, "lock_b");
	cr_expect(ago >= first_before - ready - slack && ago <= first_after - started + slack,
		  "blocked %.3f s ago, not within [%.3f, %.3f]", ago, first_before - ready,
		  first_after - started);
	double later = recorded_ago(second.out, a, "lock_b");
	cr_expect(later - ago >= 0 - slack && later - ago <= second_after - first_before + slack,
		  "%.3f s ago, then %.3f s ago, %.3f s apart at most", ago, later,
		  second_after - first_before);
	cr_expect(recorded_ago(first.out, b, "lock_a") <= first_after - started + slack);
	cli_result_free(&first);
	cli_result_free(&second);

	kill(pid, SIGKILL);
	finish(&r, false);   /* gotrace run ends once its command was killed */
	char trace[300];
	snprintf(trace, sizeof trace, "%s/run.trace", dir);
	unlink(trace);
	rmdir(dir);
}

/* Every file of dir removed, then dir. */
static void remove_dir(const char *dir)
{
	DIR *d = opendir(dir);
	for (struct dirent *e; d && (e = readdir(d)) != NULL;) {
		char path[512];
		snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
		if (e->d_name[0] != '.')
			unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* A bare LD_PRELOAD of libgotrace.so (no gotrace run): its capture is found all the same. */
Test(stacks, capture_of_a_bare_preload_adds_recorded_waits, .timeout = 120)
{
	char dir[] = "/tmp/gt-test-stacks-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(setenv("LD_PRELOAD", GT_TEST_PRELOAD_LIB, 1), 0);
	cr_assert_eq(setenv("GOTRACE_CAPTURE_DIR", dir, 1), 0);
	cr_assert_eq(setenv("GOTRACE_LOCKS", "all", 1), 0);
	struct running r;
	start(&r, "deadlock", NULL);
	unsetenv("LD_PRELOAD");
	int a, b;
	cr_assert_eq(sscanf(r.ready, "ready %d %d", &a, &b), 2);
	struct cli_result out;
	stacks(&out, r.pid, false);
	cr_assert_eq(out.status, 0, "%s", out.err);
	char line[256];
	snprintf(line, sizeof line, "\nRecorded by gotrace, loaded in process %d (capture %s/",
		 (int)r.pid, dir);
	const char *recorded = strstr(out.out, line);
	cr_assert_not_null(recorded, "no '%s' in:\n%s", line, out.out);
	snprintf(line, sizeof line, "tid %d) took at:\n      take_a_then_b (stacks_target.c:", a);
	cr_assert(strstr(recorded, line), "no '%s' in:\n%s", line, recorded);
	cli_result_free(&out);
	finish(&r, true);
	remove_dir(dir);
}
