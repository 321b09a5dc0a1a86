/* trace_format: the Go trace formats gotrace writes, in one table (as Go's
 * internal/trace/version lists its versions): the name --format takes, the file header, which
 * Go releases read it, whether it is the default, and the writer that writes it.  This table
 * is the only place a format is looked up by name (docs/formats/go122.md, go119.md). */
#ifndef GOTRACE_TRACE_FORMAT_H
#define GOTRACE_TRACE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gt_wire;
struct gt_wire_options;

/* X(id, value, name, header, Go minor from, to (0: every later one), converted from (0:
 * never), other readers (NULL: none), default, open).  The header is the file's first 16
 * bytes; the name is "go1.N" for a header "go 1.N trace".  Go 1.23 and later read a go1.19
 * trace through their converter.  The values are fixed: 0 (zeroed options) is go1.19. */
#define GT_TRACE_FORMATS(X)                                                                \
	X(GO119, 0, "go1.19", "go 1.19 trace", 19, 21, 23, "gotraceui v0.4", false,         \
	  gt_wire_open_go119)                                                              \
	X(GO122, 1, "go1.22", "go 1.22 trace", 22, 0, 0, NULL, true, gt_wire_open_go122)

enum gt_trace_format {
#define GT_TRACE_FORMAT_ENUM(id, value, name, header, from, to, conv, other, dflt, open) \
	GT_FORMAT_##id = value,
	GT_TRACE_FORMATS(GT_TRACE_FORMAT_ENUM)
#undef GT_TRACE_FORMAT_ENUM
	GT_FORMAT_COUNT
};

#define GT_TRACE_HEADER_BYTES 16u

struct gt_trace_format_desc {
	enum gt_trace_format format;
	const char *name;         /* what --format and GOTRACE_FORMAT take: "go1.22" */
	char header[GT_TRACE_HEADER_BYTES];  /* "go 1.22 trace", NUL-padded */
	unsigned go_from, go_to;  /* the Go minor releases whose reader reads it; go_to 0: all
				   * from go_from on */
	unsigned go_converted_from;  /* and those from this one on, by converting it; 0: none */
	const char *other_readers;  /* tools beside Go's that read it, NULL: none */
	bool is_default;
	/* The writer: fd (not closed by it), P ids 0 .. n_ps-1 (and GT_WIRE_P_NONE), options
	 * (NULL: the defaults).  The header is written at once.  NULL on ENOMEM. */
	struct gt_wire *(*open)(int fd, uint32_t n_ps, const struct gt_wire_options *opt);
};

extern const struct gt_trace_format_desc gt_trace_formats[GT_FORMAT_COUNT];

/* The format named name ("go1.22"; "1.22" too), NULL when none is. */
const struct gt_trace_format_desc *gt_trace_format_named(const char *name);
/* The format written when none is asked for. */
const struct gt_trace_format_desc *gt_trace_format_default(void);
/* The entry of format (the default's for a value out of range). */
const struct gt_trace_format_desc *gt_trace_format_of(enum gt_trace_format format);

#endif
