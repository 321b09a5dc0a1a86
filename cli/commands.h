/* The gotrace subcommands: one entry per command in gotrace.c's table, each implemented
 * in its own cmd_<name>.c with this signature (argv[0] is the subcommand name). */
#ifndef GOTRACE_COMMANDS_H
#define GOTRACE_COMMANDS_H

struct gt_command {
	const char *name;
	int (*main)(int argc, char **argv);
	const char *summary;
};

int gt_cmd_convert(int argc, char **argv);
int gt_cmd_run(int argc, char **argv);
int gt_cmd_report(int argc, char **argv);
int gt_cmd_stacks(int argc, char **argv);

#endif
