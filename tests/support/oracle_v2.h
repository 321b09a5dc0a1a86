/* Go 1.22+ readers for "go 1.22 trace" files, called directly (docs/formats/go122.md §8) until
 * trace-oracle runs them: the parse dump of one release, and the file's generations.
 *
 * The dump has the form gt_dump_123 returns (oracle.h): its gt_dump_123_* queries read it. */
#ifndef GT_TESTS_ORACLE_V2_H
#define GT_TESTS_ORACLE_V2_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* The `trace` tool of Go VERSION ("1.22", "1.23"): $GT_GO122-style (GT_GO<digits>, a go
 * command) else /usr/lib/go-VERSION/bin/go, then its GOROOT's pkg/tool/<os_arch>/trace.
 * false when that release is not installed. */
bool gt_go_trace_tool(const char *version, char *path, size_t size);

/* Runs the parse dump of Go VERSION on TRACE (-d=1; 1.24 and later: -d=parsed): returns the
 * tool's exit status (0: every event accepted; -1: it could not run), its stdout in *dump
 * and its stderr in *err (malloc'd, NULL-terminated; err may be NULL: then stderr goes to
 * the test's own). */
int gt_dump_v2(const char *trace, const char *version, char **dump, char **err);

/* The number of events in DUMP (lines naming a resource or a task, region, log, label). */
size_t gt_dump_v2_events(const char *dump);

/* Walks the batch headers of a "go 1.22 trace" file: returns its number of generations
 * (-1: not such a file, or a batch of an older generation after a newer one), the offset
 * of each generation's first batch in offsets (up to cap), and in *end the offset after
 * the last complete batch. */
ssize_t gt_trace_v2_generations(const char *trace, uint64_t *offsets, size_t cap,
				uint64_t *end);

/* The offset right after the batch that starts at offset in TRACE (0: no whole batch there). */
uint64_t gt_trace_v2_batch_end(const char *trace, uint64_t offset);

/* Whether every Go reader from 1.22 on reads TRACE's events in one order whatever order its
 * map iteration gives the threads: replays the readers' ordering model
 * (docs/formats/go122.md §2.2; order.go) taking at each step the earliest next event of any M, and requires that each M
 * whose next event is that earliest one can take it.  Go 1.22-1.25 try the earliest M
 * first and, if it must wait, sort the rest by time and try all but the first of them: an
 * event tied with the waiting one can be skipped, and the reader fails with "failed to
 * advance: frontier" on a trace it reads at other times.  0: holds; 1: an event must wait
 * for one with the same or a later time on another M (*why says which, malloc'd); -1:
 * unreadable. */
int gt_trace_v2_order_check(const char *trace, char **why);

#endif
