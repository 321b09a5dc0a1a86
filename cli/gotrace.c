/* gotrace: the command.  `gotrace SUBCOMMAND ...`; each subcommand lives in its own file. */
#include <stdio.h>
#include <string.h>

#include "commands.h"

#ifndef GOTRACE_VERSION
#define GOTRACE_VERSION "unknown"
#endif

static const struct gt_command commands[] = {
	{"run", gt_cmd_run, "run a command traced, then write its Go execution trace"},
	{"convert", gt_cmd_convert, "convert captures into Go execution traces"},
	{"report", gt_cmd_report, "threads, contended locks and slow syscalls, without Go"},
	{"stacks", gt_cmd_stacks, "stacks and lock waits of a live process's threads (hangs)"},
};

static void usage(FILE *f)
{
	fprintf(f, "usage: gotrace COMMAND [ARGS...]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n`gotrace COMMAND --help` describes a command; --version prints the version.\n");
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return 2;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") || !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("gotrace %s\n", GOTRACE_VERSION);
		return 0;
	}
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].main(argc - 1, argv + 1);
	fprintf(stderr, "gotrace: unknown command '%s' (see gotrace --help)\n", argv[1]);
	return 2;
}
