/* Go's own trace readers as test oracles, for Criterion tests.
 *
 * Every function runs tests/support/trace-oracle (its path is compiled in), which runs the
 * `trace` tools of Go 1.19, 1.22, 1.23 and 1.26 directly; see that script for the individual
 * checks and scripts/lib/go-toolchains for where each Go is.
 * Strings returned are malloc'd and owned by the caller (free()).  On failure the functions
 * print the tool's own error to stderr, which Criterion keeps in the test log. */
#ifndef GT_TESTS_ORACLE_H
#define GT_TESTS_ORACLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Runs every check of every Go version (quick: only their parse checks) on TRACE.  Returns 0
 * if all passed, 1 if at least one failed, -1 if the oracle could not run at all.  If REPORT is
 * not NULL it receives the full report: one line "ok CHECK" or "FAIL CHECK: reason" per check,
 * each failure followed by the tool's own error lines indented by four spaces.  Check names:
 * parse-V, ui-V and pprof-V for V = 1.19, 1.22, 1.23, 1.26, and thread-V for 1.23 and 1.26
 * (1.19 and 1.22 read the 1.19 format with the old viewer, which has no thread view).  A
 * "go 1.22 trace" is checked by 1.22 and later only, thread-1.22 included; no 1.19 check; and
 * "order": read in one order whatever the readers' map order (gt_trace_v2_order_check). */
int gt_oracle_check(const char *trace, bool quick, char **report);

/* Whether REPORT (from gt_oracle_check) says CHECK passed ("ok CHECK") / failed ("FAIL CHECK:"). */
bool gt_oracle_passed(const char *report, const char *check);
bool gt_oracle_failed(const char *report, const char *check);

/* ---- Go 1.19 `trace -d`: the merged event stream ------------------------------------------ */

#define GT_ANY INT64_MIN /* wildcard for the g and p filters below */
#define GT_EVENT_MAX_ARGS 8

struct gt_event_arg {
  char name[16];
  uint64_t value;
};

struct gt_event {
  int64_t ts_ns;  /* nanoseconds since the earliest event */
  char type[24];  /* Go's name: "GoStart", "GoBlockSync", "ProcStop", ... */
  int64_t p;      /* -1 = no P; the parser's fake Ps are 1000000+ (1000003 = syscalls) */
  int64_t g;      /* G context as Go's parser derived it (0 = none; GoSysExit: the exiting G) */
  uint64_t off;   /* byte offset of the event in the file */
  int n_args;
  /* The dump's name=value pairs after off=, in order: g=, seq=, stack= (GoCreate's new
   * stack), thread=, procs=, ts= (GoSysExit) ... The event's own stack id is not printed. */
  struct gt_event_arg args[GT_EVENT_MAX_ARGS];
  /* The string arguments as printed after the numeric ones ("label=worker" for GoStartLabel,
   * "name=..." for user tasks and regions, "category=... message=..." for UserLog), cut to
   * the size of this field; read them with gt_event_string(). */
  char strings[160];
};

struct gt_events {
  size_t n;
  struct gt_event *ev;
};

/* Parses TRACE with Go 1.19 and returns its events in merged order, or NULL if Go 1.19 rejects
 * the trace (its message goes to stderr). */
struct gt_events *gt_events_parse_119(const char *trace);
void gt_events_free(struct gt_events *events);

/* Index of the first event at or after FROM whose type equals TYPE (NULL = any type) and whose
 * G context and P equal G and P (GT_ANY = any); -1 if none. */
ssize_t gt_events_find(const struct gt_events *events, size_t from, const char *type, int64_t g,
                       int64_t p);
/* Same, matching an argument instead: first event of TYPE at or after FROM with NAME=VALUE
 * (e.g. "GoUnblock" "g" 3: the unblock of G 3, whoever did it). */
ssize_t gt_events_find_arg(const struct gt_events *events, size_t from, const char *type,
                           const char *name, uint64_t value);
/* Where goroutine G ends: its GoEnd, or its last event where none ends it; -1 if it has none. */
ssize_t gt_events_g_end(const struct gt_events *events, int64_t g);
/* Number of events matching TYPE, G and P as in gt_events_find. */
size_t gt_events_count(const struct gt_events *events, const char *type, int64_t g, int64_t p);
/* A new list holding copies of the matching events, in order (free with gt_events_free). */
struct gt_events *gt_events_filter(const struct gt_events *events, const char *type, int64_t g,
                                   int64_t p);
/* Argument NAME of EV; false if the event has no such argument. */
bool gt_event_arg(const struct gt_event *ev, const char *name, uint64_t *value);
/* String argument NAME of EV ("label", "name", "category", "message") copied into BUF of LEN
 * bytes; NULL if absent.  A value runs to the end of the line (a category to " message="). */
const char *gt_event_string(const struct gt_event *ev, const char *name, char *buf, size_t len);

/* ---- Go 1.23 `trace -d=1`: the converted events, with stacks ------------------------------- */

/* The Go 1.23 dump of TRACE, or NULL if Go 1.23 rejects the trace (message on stderr).  Each
 * event is a header line ("M=1 P=1 G=1 StateTransition Time=5 Resource=Goroutine(1)
 * Reason=\"sync\" GoID=1 Running->Waiting") optionally followed by "TransitionStack=" and
 * "Stack=" blocks of frames ("\tfunc @ 0xPC" then "\t\tfile:line"). */
char *gt_dump_123(const char *trace);

/* Number of events in DUMP whose header line contains every space-separated token of MATCH as a
 * whole token (e.g. "GoID=2 Running->Waiting", "Reason=\"sync\"", "G=1 Metric"). */
size_t gt_dump_123_count(const char *dump, const char *match);

/* The header line of the NTH (0-based) event matching MATCH, without its newline; NULL if there
 * is no NTH matching event. */
char *gt_dump_123_header(const char *dump, const char *match, size_t nth);

/* The stack printed under the NTH (0-based) event matching MATCH: WHICH is "Stack" (the event's
 * own stack) or "TransitionStack" (the goroutine's new stack for creations, the blocking stack
 * for blocks).  Returned as one line per frame, innermost first, "func file:line\n"; an empty
 * string if the event has no such block; NULL if there is no NTH matching event. */
char *gt_dump_123_stack(const char *dump, const char *match, size_t nth, const char *which);

/* ---- profiles --------------------------------------------------------------------------------- */

/* `trace -pprof=KIND TRACE` ("sync", "syscall", "sched", "net") with Go GO_VERSION ("1.19",
 * "1.22", "1.23", "1.26"), read back by `pprof -traces -lines`: records separated by lines of
 * dashes, each "   <delay>   func file:line" innermost first.  NULL on failure (message on
 * stderr). */
char *gt_pprof_text(const char *trace, const char *kind, const char *go_version);

#endif
