/* The conversion progress bar (cli_common.c) on a pseudo-terminal: nothing during the first
 * second, then a bar with the percentage, redrawn in place, erased at the end. */
#include "cli/cli_common.h"

#include <criterion/criterion.h>
#include <fcntl.h>
#include <pty.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int master = -1;

/* stderr becomes the slave side of a fresh pseudo-terminal. */
static void stderr_on_a_pty(void)
{
	int slave;
	cr_assert_eq(openpty(&master, &slave, NULL, NULL, NULL), 0);
	cr_assert_geq(dup2(slave, 2), 0);
	close(slave);
	fcntl(master, F_SETFL, O_NONBLOCK);
}

static size_t drain(char *buf, size_t size)
{
	size_t len = 0;
	ssize_t n;
	fflush(stderr);
	usleep(50 * 1000);
	while (len + 1 < size && (n = read(master, buf + len, size - 1 - len)) > 0)
		len += (size_t)n;
	buf[len] = '\0';
	return len;
}

TestSuite(progress, .init = stderr_on_a_pty);

Test(progress, shown_after_a_second_and_erased)
{
	char text[4096];
	struct gt_cli_progress p;
	gt_cli_progress_start(&p, "out.trace");
	cr_assert(p.tty);
	gt_cli_progress_update(&p, 10, 100);
	cr_assert_eq(drain(text, sizeof text), 0, "drawn before a second: %s", text);

	p.started -= 2.0; /* as if converting for two seconds */
	gt_cli_progress_update(&p, 45, 100);
	drain(text, sizeof text);
	cr_assert_not_null(strstr(text, "\rgotrace: converting out.trace ["), "%s", text);
	cr_assert_not_null(strstr(text, "#############-----------------]  45%  2 s"), "%s", text);

	gt_cli_progress_update(&p, 50, 100); /* within 0.1 s of the last draw: skipped */
	cr_assert_eq(drain(text, sizeof text), 0, "redrawn too often: %s", text);

	p.last_drawn -= 1.0;
	gt_cli_progress_update(&p, 200, 100); /* more than the total: clamped */
	drain(text, sizeof text);
	cr_assert_not_null(strstr(text, "[##############################] 100%"), "%s", text);

	gt_cli_progress_end(&p);
	drain(text, sizeof text);
	cr_assert_str_eq(text, "\r\033[K");
}

Test(progress, never_on_a_pipe)
{
	int fds[2];
	char text[256];
	cr_assert_eq(pipe(fds), 0);
	dup2(fds[1], 2);
	struct gt_cli_progress p;
	gt_cli_progress_start(&p, "out.trace");
	p.started -= 5.0;
	gt_cli_progress_update(&p, 1, 2);
	gt_cli_progress_end(&p);
	fflush(stderr);
	close(2);
	close(fds[1]);
	ssize_t n = read(fds[0], text, sizeof text);
	cr_assert_eq(n, 0, "wrote %zd bytes on a pipe", n);
}
