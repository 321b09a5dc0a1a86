#include "test_util.h"

#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *test_tmpdir(void)
{
	static char dir[PATH_MAX];
	if (!dir[0]) {
		snprintf(dir, sizeof dir, "%s/gt-encoder-test.XXXXXX",
			 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
		if (!mkdtemp(dir))
			return "/tmp";
	}
	return dir;
}

int check_go122_writer(const char *const *caps, size_t n, const struct gt_convert_options *opt)
{
	char trace[PATH_MAX], err[512];
	snprintf(trace, sizeof trace, "%s.w22.trace", caps[0]);
	struct gt_convert_options o22 = *opt;
	o22.format = GT_FORMAT_GO122;
	struct gt_convert_set_summary set;
	int rc = gt_convert_files(caps, n, trace, &o22, &set, err, sizeof err);
	struct gt_wire_stats ws = set.total.wire;
	gt_convert_set_summary_free(&set);
	if (rc) {
		fprintf(stderr, "convert %s (go1.22): %s\n", caps[0], err);
		return rc;
	}
	remove(trace);
	if (!ws.skipped)   /* it has no scheduling state, so nothing to repair */
		return 0;
	fprintf(stderr, "%s: the go1.22 writer skipped %" PRIu64 " events (CPU samples before "
		"the model's first event)\n", caps[0], ws.skipped);
	return -1;
}

int convert_path(const char *capture, char *trace, struct gt_convert_summary *sum)
{
	snprintf(trace, PATH_MAX, "%s.trace", capture);
	struct gt_convert_options opt = {.no_symbols = true};
	char err[512];
	int rc = gt_convert_file(capture, trace, &opt, sum, err, sizeof err);
	if (rc)
		fprintf(stderr, "convert %s: %s\n", capture, err);
	return rc ? rc : check_go122_writer(&capture, 1, &opt);
}

int convert_builder(struct gt_cb *cb, const char *name, char *trace,
		    struct gt_convert_summary *sum, uint64_t syscall_threshold_ns)
{
	char cap[PATH_MAX];
	snprintf(cap, sizeof cap, "%s/%s.cap", test_tmpdir(), name);
	if (gt_cb_write(cb, cap))
		return -1;
	snprintf(trace, PATH_MAX, "%s/%s.trace", test_tmpdir(), name);
	struct gt_convert_options opt = {.no_symbols = true,
					 .syscall_threshold_ns = syscall_threshold_ns};
	char err[512];
	int rc = gt_convert_file(cap, trace, &opt, sum, err, sizeof err);
	if (rc)
		fprintf(stderr, "convert %s: %s\n", cap, err);
	const char *caps[] = {cap};
	return rc ? rc : check_go122_writer(caps, 1, &opt);
}

ssize_t nth19(const struct gt_events *t, const char *type, size_t k)
{
	ssize_t i = -1;
	do
		i = gt_events_find(t, (size_t)(i + 1), type, GT_ANY, GT_ANY);
	while (i >= 0 && k-- > 0);
	return i;
}

ssize_t nth19_arg(const struct gt_events *t, const char *type, const char *name, uint64_t value,
		  size_t k)
{
	ssize_t i = -1;
	do
		i = gt_events_find_arg(t, (size_t)(i + 1), type, name, value);
	while (i >= 0 && k-- > 0);
	return i;
}

int64_t arg19(const struct gt_event *ev, const char *name, int64_t def)
{
	uint64_t v;
	return gt_event_arg(ev, name, &v) ? (int64_t)v : def;
}

size_t count19(const struct gt_events *t, const char *type)
{
	return gt_events_count(t, type, GT_ANY, GT_ANY);
}

/* gt_dump_123_stack's "func file:line" lines as "func;func": the location is the last word. */
static void stack_names(const char *dump, const char *match, size_t nth, const char *which,
			char *out, size_t len)
{
	out[0] = 0;
	char *text = gt_dump_123_stack(dump, match, nth, which);
	if (!text)
		return;
	size_t used = 0;
	for (char *line = strtok(text, "\n"); line && used < len; line = strtok(NULL, "\n")) {
		char *loc = strrchr(line, ' ');
		if (loc)
			*loc = 0;
		used += (size_t)snprintf(out + used, len - used, "%s%s", used ? ";" : "", line);
	}
	free(text);
}

bool find23(const char *dump, const char *match, size_t nth, struct ev23 *out)
{
	memset(out, 0, sizeof *out);
	char *header = dump ? gt_dump_123_header(dump, match, nth) : NULL;
	if (!header)
		return false;
	snprintf(out->line, sizeof out->line, "%s", header);
	const char *g = strstr(header, " G=");
	out->g = g ? strtoll(g + 3, NULL, 10) : 0;
	const char *reason = strstr(header, "Reason=\"");
	if (reason) {
		reason += 8;
		snprintf(out->reason, sizeof out->reason, "%.*s", (int)strcspn(reason, "\""), reason);
	}
	free(header);
	stack_names(dump, match, nth, "Stack", out->stack, sizeof out->stack);
	stack_names(dump, match, nth, "TransitionStack", out->tstack, sizeof out->tstack);
	return true;
}
