/* Symbolizer tests: real PCs and module maps printed by fixture programs, frames compared
 * with the fixture sources (function names, files, marker lines, inline expansion). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "symbolizer.h"

#define SRC(name) FX_SRC_DIR "/" name
#define MAX_FRAMES 64

static struct fx_warnings warnings;

static char frames_text[8192];

/* All frames on one line, for assertion messages. */
static const char *show(const struct gt_frame *f, size_t n)
{
	size_t at = 0;
	frames_text[0] = '\0';
	for (size_t i = 0; i < n && at < sizeof(frames_text); i++)
		at += (size_t)snprintf(frames_text + at, sizeof(frames_text) - at,
				       "[%zu] %s %s:%u pc=%llx; ", i, f[i].func,
				       fx_basename(f[i].file), f[i].line,
				       (unsigned long long)f[i].pc);
	return frames_text;
}

static void expect_frame(const struct gt_frame *f, size_t n, size_t i, const char *func,
			 const char *file_base, uint32_t line)
{
	cr_assert_lt(i, n, "frame %zu missing: %s", i, show(f, n));
	cr_expect_str_eq(f[i].func, func, "frame %zu: %s", i, show(f, n));
	if (file_base)
		cr_expect_str_eq(fx_basename(f[i].file), file_base, "frame %zu: %s", i, show(f, n));
	if (line)
		cr_expect_eq(f[i].line, line, "frame %zu line: %s", i, show(f, n));
}

static size_t symbolize(struct gt_symbolizer *sym, const struct fixture *fx, const char *label,
			struct gt_frame *out, size_t max)
{
	const struct fx_stack *s = fx_stack(fx, label);
	return gt_sym_stack(sym, s->pcs, s->n, out, max);
}

Test(inline_c, inline_frames_expanded_with_call_lines)
{
	struct fixture fx;
	fx_run(&fx, FX_INLINE, NULL);
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	fx_add_modules(&fx, sym);
	struct gt_frame f[MAX_FRAMES];
	size_t n = symbolize(sym, &fx, "inline", f, MAX_FRAMES);

	const char *src = SRC("inline.c");
	cr_assert_eq(n, 4, "helper_leaf, helper_mid, outer, main expected: %s", show(f, n));
	expect_frame(f, n, 0, "helper_leaf", "inline.c", fx_marker_line(src, "leaf_capture"));
	expect_frame(f, n, 1, "helper_mid", "inline.c", fx_marker_line(src, "mid_calls_leaf"));
	expect_frame(f, n, 2, "outer", "inline.c", fx_marker_line(src, "outer_calls_mid"));
	expect_frame(f, n, 3, "main", "inline.c", fx_marker_line(src, "main_calls_outer"));

	/* Inline frames: synthetic PCs (depth in bits 48..55) over the concrete PC - 1. */
	const struct fx_stack *s = fx_stack(&fx, "inline");
	uint64_t ra = s->pcs[0];
	cr_expect_eq(f[2].pc, ra - 1);
	cr_expect_eq(f[1].pc, (ra - 1) | (1ull << 48));
	cr_expect_eq(f[0].pc, (ra - 1) | (2ull << 48));
	cr_expect_eq(f[3].pc, s->pcs[1] - 1);
	cr_expect_eq(warnings.n, 0, "unexpected warning: %s", warnings.lines[0]);
	gt_sym_free(sym);
}
