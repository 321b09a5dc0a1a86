/* The user-facing subcommands that drive a traced program and read its result:
 * `gotrace run` (cmd_run.c) and `gotrace report` (cmd_report.c).  Each takes the
 * subcommand's own argv (argv[0] = the subcommand name) and returns the exit status. */
#ifndef GOTRACE_CLI_COMMANDS_H
#define GOTRACE_CLI_COMMANDS_H

int gt_cmd_run(int argc, char **argv);
int gt_cmd_report(int argc, char **argv);

#endif
