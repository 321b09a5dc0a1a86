/* What the subcommands share when they talk to the user: one-line errors prefixed with
 * "gotrace COMMAND: ", and getopt's failures put the same way. */
#ifndef GOTRACE_CLI_COMMON_H
#define GOTRACE_CLI_COMMON_H

/* Prints "gotrace COMMAND: <message>\n" on stderr. */
void gt_cli_fail(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* For getopt_long run with opterr = 0 and an optstring starting with ':' (after any '+'):
 * reports the option that getopt returned ':' or '?' for, and returns the usage status 2. */
int gt_cli_bad_option(const char *command, int getopt_result, char **argv);

#endif
