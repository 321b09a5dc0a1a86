/* cli_common: see cli_common.h. */
#include "cli_common.h"

#include <getopt.h>
#include <stdarg.h>
#include <stdio.h>

void gt_cli_fail(const char *command, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "gotrace %s: ", command);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

int gt_cli_bad_option(const char *command, int getopt_result, char **argv)
{
	if (getopt_result == ':')
		gt_cli_fail(command, "option '%s' needs an argument (see gotrace %s --help)",
			    argv[optind - 1], command);
	else if (optopt != 0)
		gt_cli_fail(command, "unknown option '-%c' (see gotrace %s --help)", optopt,
			    command);
	else
		gt_cli_fail(command, "unknown option '%s' (see gotrace %s --help)",
			    argv[optind - 1], command);
	return 2;
}
