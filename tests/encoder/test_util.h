/* Shared helpers of the encoder tests: convert a built capture and parse the result. */
#ifndef GOTRACE_TEST_UTIL_H
#define GOTRACE_TEST_UTIL_H

#include "capture_builder.h"
#include "encoder/capture_reader.h"
#include "encoder/cpu_samples.h"
#include "encoder/encoder.h"
#include "encoder/gowire.h"
#include "encoder/model.h"
#include "oracle.h"

/* A fresh temporary directory (removed at exit is not needed: under /tmp). */
const char *test_tmpdir(void);
/* Writes cb to <tmp>/<name>.cap and converts it to <tmp>/<name>.trace (path in trace,
 * PATH_MAX bytes).  Returns gt_convert_file's status. */
int convert_builder(struct gt_cb *cb, const char *name, char *trace,
		    struct gt_convert_summary *sum, uint64_t syscall_threshold_ns);
int convert_path(const char *capture, char *trace, struct gt_convert_summary *sum);
/* Converts the n captures (one trace, opt's options; kernel_path too) in the go1.22 format
 * beside the first and returns 0 when its writer wrote every event as the model emitted it
 * (its repaired and skipped counters 0), else -1 after saying so on stderr (or the
 * conversion's failure).  convert_builder and convert_path run it on every capture they
 * convert. */
int check_go122_writer(const char *const *caps, size_t n, const struct gt_convert_options *opt);

/* Queries over tests/support/oracle.h that the encoder tests share. */
/* Index of the K-th (0-based) Go 1.19 event of TYPE; with NAME, of TYPE whose argument NAME
 * equals VALUE; -1 when absent. */
ssize_t nth19(const struct gt_events *t, const char *type, size_t k);
ssize_t nth19_arg(const struct gt_events *t, const char *type, const char *name, uint64_t value,
		  size_t k);
/* Argument NAME of EV, or DEF. */
int64_t arg19(const struct gt_event *ev, const char *name, int64_t def);
size_t count19(const struct gt_events *t, const char *type);

/* One Go 1.23 event of a dump (gt_dump_123): its header line, G context, Reason= and the
 * function names of its stacks, innermost first, ';'-separated. */
struct ev23 {
	char line[256];
	int64_t g;
	char reason[48];
	char stack[512];
	char tstack[512];
};
/* The NTH event whose header holds every token of MATCH; false when there is none. */
bool find23(const char *dump, const char *match, size_t nth, struct ev23 *out);

#endif
