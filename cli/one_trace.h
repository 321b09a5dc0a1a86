/* one_trace: the captures of a run (or any set of captures) converted into one trace, and
 * the summary of it on stderr, for `gotrace run` and `gotrace convert`.  Few lines whatever
 * the number of processes: the totals, the programs by count, the longest processes; then
 * every loss, early stop, unfinished process and unreadable capture, each naming its process. */
#ifndef GOTRACE_ONE_TRACE_H
#define GOTRACE_ONE_TRACE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "encoder/encoder.h"

enum gt_one_trace_style {
	GT_SUMMARY_RUN,      /* one line per trace, as `gotrace run` prints it */
	GT_SUMMARY_CONVERT,  /* every counter, as `gotrace convert` prints it */
	GT_SUMMARY_QUIET,    /* errors only */
};

/* What one capture's trace may lack, in at most two lines on stderr (an early stop; the
 * facts lost, repaired and skipped); who names its process ("" when it is the only one). */
void gt_cli_print_capture_problems(const struct gt_convert_summary *s, const char *who);

/* The line that says a killed process (s->reaped) ends where it was reaped. */
void gt_cli_say_killed(const struct gt_convert_summary *s);

/* One line when the trace at output holds more events than Go's viewer opens comfortably
 * (GT_VIEWER_EVENTS, measured in docs/benchmarks.md; GOTRACE_VIEWER_EVENTS overrides it),
 * with the ways to a smaller trace. */
void gt_cli_viewer_warning(const char *output, uint64_t events);

/* Converts captures into output.  Returns 0 when the trace was written from every capture,
 * 1 when it was written without the unreadable ones or only up to where a stop signal
 * stopped the conversion (gt_cli_stop_conversions_on), -1 when it was not written (each
 * said on stderr, prefixed "gotrace COMMAND: "). */
int gt_one_trace(const char *command, const char *output, const char *const *captures, size_t n,
		 const struct gt_convert_options *opt, enum gt_one_trace_style style);

#endif
