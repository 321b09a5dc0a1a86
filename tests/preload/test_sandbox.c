/* Sandboxes that kill on unknown system calls (issue 28, item 2): gt-sandbox's strict-seccomp
 * thread and its worker under an OpenSSH-like allowlist run traced as untraced.  The tracer
 * ends the capture before the sandbox is entered (lifecycle.c, gt_sandbox_enter) and makes
 * no system call after it; the capture says so (GT_FILE_SANDBOXED) and converts. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "traced_run.h"

static struct run plain, traced;

static void teardown(void)
{
	run_cleanup(&plain);
	run_cleanup(&traced);
}

TestSuite(sandbox, .fini = teardown, .timeout = 120);

/* gt-sandbox MODE N untraced and traced: the same output and status, 0; the capture of
 * process pid (0: the program's) stopped for the sandbox */
static void twins(const char *mode, const char *n)
{
	const char *env[] = {"GOTRACE_CHUNK_SIZE=16384", NULL}; /* chunks fill in the sandbox */
	const char *argv[] = {test_program("gt-sandbox"), mode, n, NULL};
	const char *diff = run_twins(&plain, &traced, argv, env);
	cr_assert(WIFEXITED(plain.status) && WEXITSTATUS(plain.status) == 0, "untraced: %s%s",
		  plain.out, plain.err);
	cr_assert_null(diff, "%s\nuntraced: %straced: %s", diff, plain.out, traced.out);
	cr_assert_eq(count_gotrace_lines(traced.err), 0, "%s", traced.err);
	char why[512];
	cr_assert_geq(run_convert_all(&traced, why, sizeof why), 1, "%s", why);
}

/* the captures of the run that stopped for a sandbox */
static int sandboxed_captures(void)
{
	int n = 0;
	DIR *d = opendir(traced.dir);
	cr_assert_not_null(d);
	for (struct dirent *e; (e = readdir(d));) {
		char path[PATH_MAX + 256];
		struct capture c;
		size_t len = strlen(e->d_name);
		if (len < 6 || strcmp(e->d_name + len - 6, ".gtcap"))
			continue;
		snprintf(path, sizeof path, "%s/%s", traced.dir, e->d_name);
		cr_assert_eq(capture_open(&c, path), 0, "%s", path);
		n += (c.hdr->flags & (GT_FILE_SANDBOXED | GT_FILE_WRITE_FAILED)) ==
		     (GT_FILE_SANDBOXED | GT_FILE_WRITE_FAILED);
		capture_close(&c);
	}
	closedir(d);
	return n;
}

Test(sandbox, strict_thread)
{
	twins("strict", "20000");
	cr_assert_eq(sandboxed_captures(), 1);
}

Test(sandbox, allowlist_worker)
{
	twins("allowlist", "20000");
	cr_assert_eq(sandboxed_captures(), 1, "the worker's alone");
}
