/* What the subcommands share when they talk to the user: one-line errors prefixed with
 * "gotrace COMMAND: ", and getopt's failures put the same way. */
#ifndef GOTRACE_CLI_COMMON_H
#define GOTRACE_CLI_COMMON_H

#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "encoder/encoder.h"

/* Prints "gotrace COMMAND: <message>\n" on stderr. */
void gt_cli_fail(const char *command, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* For getopt_long run with opterr = 0 and an optstring starting with ':' (after any '+'):
 * reports the option that getopt returned ':' or '?' for, and returns the usage status 2. */
int gt_cli_bad_option(const char *command, int getopt_result, char **argv);

/* "512M", "1.5G", "1GiB", "2T", "4096" (bytes): sizes with binary K/M/G/T suffixes.
 * -1 for anything else (signs, junk, zero, overflow). */
int gt_cli_parse_size(const char *s, uint64_t *bytes);
/* "20us", "1.5ms", "300ns", "2s"; a bare number is in units of bare_ns.  -1 for junk. */
int gt_cli_parse_duration(const char *s, double bare_ns, uint64_t *ns);
/* The trace format (--format TEXT): a name of encoder.h's format table ("go1.22"); TEXT
 * NULL: GOTRACE_FORMAT when set, else the table's default.  Returns 0, or the usage status 2
 * after saying what is wrong. */
int gt_cli_trace_format(const char *command, const char *text, enum gt_trace_format *out);
/* The --format lines of a command's help, the text from column col on (the formats of the
 * table, the default first). */
void gt_cli_format_help(FILE *f, size_t col);
/* The `next:` lines after a trace was written: how to open it with an installed Go that reads
 * its format, and how to report on it without Go (kept: its capture was kept beside it). */
void gt_cli_next_steps(const char *output, enum gt_trace_format format, bool kept);

/* "1.5 MiB", "12 KiB", "300 B". */
void gt_cli_format_size(uint64_t bytes, char *buf, size_t size);
/* The bytes a capture holds (0 when it cannot be stat'ed): its blocks, not the sparse length
 * an unfinished capture keeps reserved. */
uint64_t gt_cli_capture_bytes(const char *path);

/* A progress bar on stderr for a long conversion: drawn only when stderr is a terminal and
 * the work has taken more than a second, then redrawn at most ten times a second, and
 * erased at the end.  update() has the signature of gt_convert_options.progress. */
struct gt_cli_progress {
	const char *label;
	double started, last_drawn;
	bool tty, shown;
};
void gt_cli_progress_start(struct gt_cli_progress *p, const char *label);
/* false, and the conversion stops there, when one of the stop signals is pending */
bool gt_cli_progress_update(void *progress, uint64_t done, uint64_t total);
void gt_cli_progress_end(struct gt_cli_progress *p);

/* The signals that stop a conversion when pending (blocked ones: gotrace run reads its
 * signals through a signalfd, so a SIGTERM would otherwise wait until the end). */
void gt_cli_stop_conversions_on(const sigset_t *signals);
/* The signal that stopped a conversion, 0: none. */
int gt_cli_conversion_stopped(void);
/* "gotrace: conversion of OUTPUT stopped by SIGTERM at 45% of the records: the trace ends
 * there" */
void gt_cli_say_conversion_stopped(const char *output, double done);

#endif
