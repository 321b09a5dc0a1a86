/* An orphan is adopted by whoever adopts it untraced (issue 28, item 9): gt-orphan's
 * grandchild, orphaned, reports getppid() traced by gotrace run as untraced, although gotrace
 * (a subreaper, so as to wait for daemons) is its parent now.  gotrace asks who adopts its
 * orphans before it becomes a subreaper (cli/follow.c) and the library's getppid names that
 * process (preload/hooks_proc.c). */
#include "cli_support.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <string.h>

Test(orphan, adopted_as_untraced, .timeout = 120)
{
	char dir[512], trace[700];
	cli_tempdir(dir, sizeof dir);
	cli_path(trace, sizeof trace, dir, "o.trace");
	struct cli_result plain, traced;
	const char *plain_argv[] = { GT_TEST_ORPHAN, NULL };
	const char *traced_argv[] = { cli_gotrace, "run", "-o", trace, "--", GT_TEST_ORPHAN, NULL };
	cli_run(&plain, plain_argv, NULL);
	cli_run(&traced, traced_argv, NULL);
	cr_assert_eq(plain.status, 0, "%s", plain.err);
	cr_assert_eq(traced.status, 0, "%s", traced.err);
	cr_assert_not_null(strstr(plain.out, "by its parent: no"), "%s", plain.out);
	cr_assert_str_eq(traced.out, plain.out, "%s", traced.err);
	cr_assert(cli_file_exists(trace), "%s", traced.err);
	cli_result_free(&plain);
	cli_result_free(&traced);
}
