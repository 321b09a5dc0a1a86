/* End to end: a program with a contended mutex, traced by `gotrace run`; the sync profile
 * Go 1.19 and Go 1.23 derive from the trace names the inlined helper that takes the lock,
 * the function it is inlined into and the start routine, each with its file and line. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "oracle.h"

static char trace[600], dir[512];

/* The line holding "LINE:<marker>" in the program's source. */
static unsigned marker_line(const char *marker)
{
	FILE *f = fopen(E2E_CONTENDED_SOURCE, "r");
	cr_assert_not_null(f);
	char want[128], line[512];
	snprintf(want, sizeof(want), "LINE:%s */", marker);
	unsigned n = 0, found = 0;
	while (!found && fgets(line, sizeof(line), f))
		if (n++, strstr(line, want))
			found = n;
	fclose(f);
	cr_assert_neq(found, 0, "no marker %s", marker);
	return found;
}

static void trace_contended(void)
{
	snprintf(dir, sizeof(dir), "%s/e2e-XXXXXX", E2E_TMPDIR);
	cr_assert_not_null(mkdtemp(dir));
	snprintf(trace, sizeof(trace), "%s/contended.trace", dir);
	char cmd[2048];
	/* the 1.19 format: its profiles are asked of Go 1.19 below */
	snprintf(cmd, sizeof(cmd), "'%s' run --format go1.19 -o '%s' -- '%s' >'%s/out.txt' 2>&1",
		 E2E_GOTRACE, trace, E2E_CONTENDED, dir);
	cr_assert_eq(system(cmd), 0, "gotrace run failed (see %s/out.txt)", dir);
}

/* the run's directory goes with the test: one was left in the build tree per run */
static void remove_run(void)
{
	char path[600];
	unlink(trace);
	snprintf(path, sizeof(path), "%s/out.txt", dir);
	unlink(path);
	rmdir(dir);
}

/* The profile line of func: "   <delay>   func <path>:<line>" or, inside a record, without
 * the delay column.  NULL if no frame of func is there. */
static const char *frame_line(const char *profile, const char *func, char *out, size_t size)
{
	char needle[128];
	snprintf(needle, sizeof(needle), " %s ", func);
	const char *at = strstr(profile, needle);
	if (!at)
		return NULL;
	const char *start = at;
	while (start > profile && start[-1] != '\n')
		start--;
	const char *end = strchr(at, '\n');
	size_t len = end ? (size_t)(end - start) : strlen(start);
	if (len >= size)
		len = size - 1;
	memcpy(out, start, len);
	out[len] = '\0';
	return out;
}

static void expect_frame(const char *profile, const char *func, const char *marker)
{
	char line[1024], where[64];
	cr_assert_not_null(frame_line(profile, func, line, sizeof(line)), "no %s frame in:\n%s", func,
			   profile);
	snprintf(where, sizeof(where), "/contended.c:%u", marker_line(marker));
	cr_expect(strstr(line, where) != NULL, "%s expected at %s: %s", func, where, line);
}

static void expect_contended_lock_named(const char *go_version)
{
	char *profile = gt_pprof_text(trace, "sync", go_version);
	cr_assert_not_null(profile, "Go %s could not make a sync profile", go_version);
	expect_frame(profile, "take_lock", "contended_lock");
	expect_frame(profile, "add_under_lock", "take_lock_call");
	expect_frame(profile, "worker", "worker_calls");

	/* Innermost first, in one record: the inlined helper, its caller, the start routine;
	 * no tracer or thread start-up frame around them. */
	const char *rec = strstr(profile, " take_lock ");
	const char *caller = rec ? strstr(rec, " add_under_lock ") : NULL;
	const char *routine = caller ? strstr(caller, " worker ") : NULL;
	const char *next_record = rec ? strstr(rec, "-----") : NULL;
	cr_expect(routine && (!next_record || routine < next_record),
		  "take_lock, add_under_lock, worker expected in one record:\n%s", profile);
	cr_expect_null(strstr(profile, "libgotrace"), "a tracer frame in:\n%s", profile);
	cr_expect_null(strstr(profile, "start_thread"), "a start-up frame in:\n%s", profile);
	/* a function name, after its column's spaces (a path may hold "clone" too) */
	cr_expect_null(strstr(profile, " clone"), "a start-up frame in:\n%s", profile);
	cr_expect_null(strstr(profile, " __clone"), "a start-up frame in:\n%s", profile);
	free(profile);
}

Test(e2e_symbols, sync_profile_names_the_contended_lock, .init = trace_contended, .fini = remove_run)
{
	char *report = NULL;
	cr_assert_eq(gt_oracle_check(trace, true, &report), 0, "%s", report ? report : "");
	free(report);
	expect_contended_lock_named("1.19");
	expect_contended_lock_named("1.23");
}
