/* Captures are portable: the same known program (fixtures/condwake.c: main wakes the thread
 * "waiter" ROUNDS times through a condition variable, each time once it waits) recorded on
 * x86-64 and on aarch64 converts on this host, whatever its arch, into traces every Go
 * reader accepts, with the program's two threads, the waiter's ROUNDS condition waits each
 * woken by main, and stacks named by the program's functions.
 *
 * fixtures/condwake-<arch>.gtcap were recorded with their binaries at another path (as on
 * another machine): `gotrace convert --debug-dir fixtures` finds them there by name.  Its
 * system calls (numbered differently on each arch) are named by `gotrace report`.  A fresh
 * pair is recorded too, aarch64 through binfmt_misc and qemu-user, and the two must agree:
 * same threads, same number of waits and of wakes by main. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli_support.h"
#include "oracle.h"

#define ROUNDS 50         /* fixtures/condwake-<arch>.gtcap: `condwake 50` */
#define FRESH_ROUNDS 30

/* What a trace shows of condwake, read by Go 1.23. */
struct condwake_seen {
	size_t goroutines;      /* ended (Running->NotExist): condwake's threads all end */
	size_t cond_waits;      /* Running->Waiting in a condition wait, all by one goroutine */
	size_t woken_by_main;   /* that goroutine's Waiting->Runnable by G 1 */
};

static const char *fixtures(void)
{
	const char *dir = getenv("GT_CROSSARCH_FIXTURES");
	cr_assert_not_null(dir, "GT_CROSSARCH_FIXTURES (set by meson) names tests/crossarch/fixtures");
	return dir;
}

/* `gotrace convert --format format --debug-dir fixtures capture -o trace`, asserting that it
 * succeeded and that no module of the program was missing. */
static void convert(const char *capture, const char *format, const char *trace,
		    const char *program)
{
	const char *argv[] = {cli_gotrace, "convert", "--format", format, "--debug-dir",
			      fixtures(), capture, "-o", trace, NULL};
	struct cli_result r;
	cli_run(&r, argv, NULL);
	cr_assert_eq(r.status, 0, "%s:\n%s", capture, r.err);
	char warned[128];   /* the symbolizer's warnings read "PATH: problem" */
	snprintf(warned, sizeof warned, "/%s:", program);
	cr_assert_null(strstr(r.err, warned), "the program's module is found:\n%s", r.err);
	cli_result_free(&r);
}

/* The GoID=N token of a Go 1.23 dump's header line. */
static long go_id(const char *header)
{
	const char *at = strstr(header, " GoID=");
	cr_assert_not_null(at, "%s", header);
	return strtol(at + 6, NULL, 10);
}

/* Every Go reader accepts trace; what Go 1.23 sees of condwake in it, the stacks checked.
 * wait: the tokens of a condition wait's header (its reason is the format's). */
static struct condwake_seen read_condwake(const char *trace, const char *wait_match)
{
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace, false, &report), 0, "%s: oracle:\n%s", trace,
		     report ? report : "(none)");
	free(report);
	char *dump = gt_dump_123(trace);
	cr_assert_not_null(dump, "%s: Go 1.23 reads it", trace);
	struct condwake_seen s = {
		.goroutines = gt_dump_123_count(dump, "Running->NotExist"),
		.cond_waits = gt_dump_123_count(dump, wait_match),
	};
	cr_assert_gt(s.cond_waits, 0, "%s: no condition wait", trace);
	char *first = gt_dump_123_header(dump, wait_match, 0);
	long waiter = go_id(first);
	free(first);
	cr_assert_neq(waiter, 1, "the waiter is not main");
	char match[128];
	snprintf(match, sizeof match, "GoID=%ld %s", waiter, wait_match);
	cr_assert_eq(gt_dump_123_count(dump, match), s.cond_waits, "%s: one goroutine waits",
		     trace);
	snprintf(match, sizeof match, "G=1 GoID=%ld Waiting->Runnable", waiter);
	s.woken_by_main = gt_dump_123_count(dump, match);

	/* the stacks name the program's functions, whatever arch they were recorded on */
	char *wait = gt_dump_123_stack(dump, wait_match, 0, "TransitionStack");
	cr_assert_not_null(wait);
	cr_assert_not_null(strstr(wait, "wait_once "), "%s: the wait's stack:\n%s", trace, wait);
	cr_assert_not_null(strstr(wait, "waiter_main "), "%s: the wait's stack:\n%s", trace, wait);
	free(wait);
	char *wake = gt_dump_123_stack(dump, match, 0, "Stack");
	cr_assert_not_null(wake);
	cr_assert_not_null(strstr(wake, "wake_once "), "%s: the wake's stack:\n%s", trace, wake);
	cr_assert_not_null(strstr(wake, "\nmain "), "%s: the wake's stack:\n%s", trace, wake);
	free(wake);
	free(dump);
	return s;
}

/* capture converted in both formats, each trace read; what both show (they must agree). */
static struct condwake_seen convert_and_read(const char *capture, const char *dir,
					      const char *name, const char *program)
{
	char trace[1024];
	struct condwake_seen seen[2];
	const char *formats[] = {"go1.19", "go1.22"};
	/* go1.22's reason names the call and the variable (by the program's symbols) */
	const char *waits[] = {"Reason=\"sync.(*Cond).Wait\" Running->Waiting",
			       "pthread_cond_wait cond\" Running->Waiting"};
	for (int i = 0; i < 2; i++) {
		snprintf(trace, sizeof trace, "%s/%s-%s.trace", dir, name, formats[i]);
		convert(capture, formats[i], trace, program);
		seen[i] = read_condwake(trace, waits[i]);
	}
	cr_assert(memcmp(&seen[0], &seen[1], sizeof seen[0]) == 0,
		  "%s: go1.19 and go1.22 traces differ", capture);
	return seen[0];
}

static void expect_condwake(const struct condwake_seen *s, size_t rounds, const char *what)
{
	cr_expect_eq(s->goroutines, 2, "%s: main and the waiter", what);
	cr_expect_eq(s->cond_waits, rounds, "%s: one condition wait per round", what);
	cr_expect_eq(s->woken_by_main, rounds, "%s: each woken by main", what);
}

/* Whether report has a row naming call on a descriptor of kind (its syscall table). */
static bool syscall_row(const char *report, const char *call, const char *kind)
{
	for (const char *line = report; line && *line; line = strchr(line, '\n'), line += !!line) {
		char name[32], fd_kind[32];
		int index;
		if (sscanf(line, " %d %31s %31s", &index, name, fd_kind) == 3 &&
		    strcmp(name, call) == 0 && strcmp(fd_kind, kind) == 0)
			return true;
	}
	return false;
}

/* Parameters are indices: Criterion may run a case in a process of its own. */
static const char *const arches[] = {"x86_64", "aarch64"};

ParameterizedTestParameters(fixtures, a_capture_of_each_arch_converts_here)
{
	static int index[] = {0, 1};
	return cr_make_param_array(int, index, sizeof index / sizeof *index);
}

ParameterizedTest(int *index, fixtures, a_capture_of_each_arch_converts_here, .timeout = 300)
{
	const char *arch = arches[*index];
	char dir[1024], capture[1024], name[64];
	cli_tempdir(dir, sizeof dir);
	snprintf(capture, sizeof capture, "%s/condwake-%s.gtcap", fixtures(), arch);
	snprintf(name, sizeof name, "condwake-%s", arch);
	struct condwake_seen s = convert_and_read(capture, dir, name, name);
	expect_condwake(&s, ROUNDS, capture);
	/* the waiter's read and main's write on the pipe, by name whatever their numbers */
	char *report = cli_report_of(capture, false);
	cr_expect(syscall_row(report, "read", "pipe") && syscall_row(report, "write", "pipe"),
		  "%s: its read and write:\n%s", capture, report);
	free(report);
	/* the report finds the program through --debug-dir too, given relative to where it runs */
	cr_assert_eq(chdir(fixtures()), 0);
	const char *argv[] = {cli_gotrace, "report", "--debug-dir", ".", capture, NULL};
	struct cli_result r;
	cli_run(&r, argv, NULL);
	cr_assert_eq(r.status, 0, "report: %s", r.err);
	cr_expect(strstr(r.out, "wait_once (condwake.c:"), "%s: the waiter's stack:\n%s", capture,
		  r.out);
	cr_expect(!strstr(r.err, "symbolizer"), "%s: %s", capture, r.err);
	cli_result_free(&r);
}

/* Whether this machine runs aarch64 programs (binfmt_misc's qemu-aarch64 entry) and has an
 * aarch64 libgotrace.so; else why not, into why. */
static bool can_record(const char *arch, const char **lib, char *why, size_t size)
{
	const char *env = strcmp(arch, "aarch64") == 0 ? "GT_LIBGOTRACE_AARCH64"
						      : "GT_LIBGOTRACE_X86_64";
	*lib = getenv(env) ? getenv(env)
			   : strcmp(arch, "aarch64") == 0 ? GT_TEST_LIBGOTRACE_AARCH64
							  : GT_TEST_LIBGOTRACE_X86_64;
	if (access(*lib, R_OK) != 0) {
		snprintf(why, size, "no %s libgotrace.so at %s (build it, or set %s)", arch, *lib,
			 env);
		return false;
	}
	char *status = cli_read_file("/proc/sys/fs/binfmt_misc/qemu-aarch64");
	bool enabled = status && strncmp(status, "enabled", 7) == 0;
	free(status);
	bool native = strcmp(arch, GT_TEST_BUILD_ARCH) == 0;
	if (!native && strcmp(arch, "aarch64") == 0 && !enabled) {
		snprintf(why, size, "qemu-aarch64 is not registered in binfmt_misc");
		return false;
	}
	return true;
}

/* Records `condwake FRESH_ROUNDS` (the committed binary of arch) with lib preloaded into
 * dir; the capture's path into capture. */
static void record(const char *arch, const char *lib, const char *dir, char *capture,
		   size_t size)
{
	char program[1024], preload[1100], capdir[1100], rounds[16];
	snprintf(program, sizeof program, "%s/condwake-%s", fixtures(), arch);
	snprintf(preload, sizeof preload, "LD_PRELOAD=%s", lib);
	snprintf(capdir, sizeof capdir, "GOTRACE_CAPTURE_DIR=%s", dir);
	snprintf(rounds, sizeof rounds, "%d", FRESH_ROUNDS);
	const char *argv[] = {program, rounds, NULL};
	const char *env[] = {preload, capdir, "GOTRACE_STACKS", "GOTRACE_OUT", NULL};
	struct cli_result r;
	cli_run(&r, argv, env);
	cr_assert_eq(r.status, 0, "%s: %s", program, r.err);
	char want[32];
	snprintf(want, sizeof want, "rounds %d\n", FRESH_ROUNDS);
	cr_assert_str_eq(r.out, want);
	cli_result_free(&r);
	DIR *d = opendir(dir);
	cr_assert_not_null(d);
	capture[0] = '\0';
	for (struct dirent *e; (e = readdir(d)) != NULL;)
		if (strncmp(e->d_name, "gotrace-", 8) == 0 && strstr(e->d_name, ".gtcap"))
			cr_assert_lt((size_t)snprintf(capture, size, "%s/%s", dir, e->d_name), size);
	closedir(d);
	cr_assert(capture[0], "%s left no capture in %s", program, dir);
}

/* A capture recorded now under emulation (an aarch64 program, the aarch64 libgotrace.so,
 * run through binfmt_misc) converts here as the x86-64 run of the same program does. */
Test(emulation, a_fresh_aarch64_capture_converts_as_the_x86_64_one, .timeout = 600)
{
	const char *lib[2];
	char why[1200];
	for (int i = 0; i < 2; i++)
		if (!can_record(arches[i], &lib[i], why, sizeof why))
			cr_skip_test("%s", why);
	struct condwake_seen seen[2];
	for (int i = 0; i < 2; i++) {
		char dir[1024], capture[1200], name[64];
		cli_tempdir(dir, sizeof dir);
		record(arches[i], lib[i], dir, capture, sizeof capture);
		snprintf(name, sizeof name, "condwake-%s", arches[i]);
		seen[i] = convert_and_read(capture, dir, name, name);
		expect_condwake(&seen[i], FRESH_ROUNDS, name);
	}
	cr_assert_eq(seen[1].goroutines, seen[0].goroutines, "threads");
	cr_assert_eq(seen[1].cond_waits, seen[0].cond_waits, "waits");
	cr_assert_eq(seen[1].woken_by_main, seen[0].woken_by_main, "wakes by main");
}
