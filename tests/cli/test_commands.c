/* The gotrace command: subcommand dispatch, --help/--version, `convert` with several
 * captures (FILE, FILE.<pid>), its summary and its one-line errors. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "test_util.h"

/* Runs the gotrace binary with args (a shell fragment); stdout and stderr into buffers. */
static int run(const char *args, char *out, size_t outlen, char *err, size_t errlen)
{
	const char *exe = getenv("GOTRACE");
	cr_assert(exe, "GOTRACE (path of the gotrace binary) not set");
	char o[PATH_MAX], e[PATH_MAX], cmd[8 * PATH_MAX];
	snprintf(o, sizeof o, "%s/cli.out", test_tmpdir());
	snprintf(e, sizeof e, "%s/cli.err", test_tmpdir());
	snprintf(cmd, sizeof cmd, "'%s' %s >'%s' 2>'%s'", exe, args, o, e);
	int st = system(cmd);
	FILE *f = fopen(o, "r");
	size_t n = fread(out, 1, outlen - 1, f);
	out[n] = 0;
	fclose(f);
	f = fopen(e, "r");
	n = fread(err, 1, errlen - 1, f);
	err[n] = 0;
	fclose(f);
	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static size_t lines(const char *s)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

Test(cli, help_version_and_unknown_commands)
{
	char out[8192], err[8192];
	cr_expect_eq(run("--help", out, sizeof out, err, sizeof err), 0);
	cr_expect(strstr(out, "convert"), "%s", out);
	cr_expect_eq(run("--version", out, sizeof out, err, sizeof err), 0);
	cr_expect(!strncmp(out, "gotrace ", 8), "%s", out);
	cr_expect_eq(run("frobnicate", out, sizeof out, err, sizeof err), 2);
	cr_expect_eq(lines(err), 1, "one line: %s", err);
	cr_expect_eq(run("convert --help", out, sizeof out, err, sizeof err), 0);
	cr_expect(strstr(out, "--syscall-threshold"));
	cr_expect_eq(run("convert x.cap", out, sizeof out, err, sizeof err), 2);
	cr_expect(strstr(err, "-o FILE") && lines(err) == 1, "%s", err);
	cr_expect_eq(run("convert --syscall-threshold 12parsecs x.cap -o y", out, sizeof out, err, sizeof err), 2);
	cr_expect_eq(lines(err), 1, "%s", err);
}

static void make_capture(const char *path, uint32_t pid)
{
	struct gt_cb *cb = gt_cb_new(1, 8192, 1000000);
	gt_cb_header(cb)->pid = pid;
	gt_cb_thread_existing(cb, 0, 1000010, 1, 0, 0);
	gt_cb_block_begin(cb, 0, 1000100, 1, GT_BK_SLEEP, 10, 0);
	gt_cb_block_end(cb, 0, 1000200, 1, GT_BK_SLEEP, 10, GT_BR_OK);
	cr_assert_eq(gt_cb_write(cb, path), 0);
	gt_cb_free(cb);
}

Test(cli, convert_several_captures)
{
	char a[PATH_MAX], b[PATH_MAX], out[PATH_MAX], args[4 * PATH_MAX], so[8192], se[8192];
	snprintf(a, sizeof a, "%s/cli-a.cap", test_tmpdir());
	snprintf(b, sizeof b, "%s/cli-b.cap", test_tmpdir());
	snprintf(out, sizeof out, "%s/cli.trace", test_tmpdir());
	make_capture(a, 111);
	make_capture(b, 222);
	snprintf(args, sizeof args,
		 "convert --format go1.19 --per-process --no-symbols '%s' '%s' -o '%s'", a, b, out);
	cr_assert_eq(run(args, so, sizeof so, se, sizeof se), 0, "%s", se);
	cr_expect(strstr(se, "1 threads") && strstr(se, "facts") && strstr(se, "events written") &&
		  strstr(se, "repaired") && strstr(se, "skipped"), "summary: %s", se);
	char second[PATH_MAX + 8];
	snprintf(second, sizeof second, "%s.222", out);
	struct gt_events *t1 = gt_events_parse_119(out), *t2 = gt_events_parse_119(second);
	cr_expect(t1 && t2, "Go 1.19 rejected a trace (its error is above)");
	cr_expect_eq(t1 ? count19(t1, "GoSleep") : 0, 1);
	cr_expect_eq(t2 ? count19(t2, "GoSleep") : 0, 1);
	gt_events_free(t1);
	gt_events_free(t2);

	/* a bad capture among good ones: one error line, status 1, the others converted */
	char bad[PATH_MAX];
	snprintf(bad, sizeof bad, "%s/cli-bad.cap", test_tmpdir());
	FILE *f = fopen(bad, "w");
	fputs("not a capture\n", f);
	fclose(f);
	snprintf(args, sizeof args, "convert -q --no-symbols '%s' '%s' -o '%s'", a, bad, out);
	cr_expect_eq(run(args, so, sizeof so, se, sizeof se), 1);
	cr_expect(strstr(se, "not a gotrace capture") && lines(se) == 1, "%s", se);
}
