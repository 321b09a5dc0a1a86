/* Symbolizer tests: real PCs and module maps printed by fixture programs, frames compared
 * with the fixture sources (function names, files, marker lines, inline expansion). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

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

Test(inline_c, thread_stack_ends_at_start_routine)
{
	struct fixture fx;
	fx_run(&fx, FX_INLINE, NULL);
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	fx_add_modules(&fx, sym);
	struct gt_frame f[MAX_FRAMES];
	size_t n = symbolize(sym, &fx, "thread", f, MAX_FRAMES);
	/* start_thread and clone3 are cut: the start routine is the outermost frame. */
	cr_assert_eq(n, 1, "only thread_main expected: %s", show(f, n));
	expect_frame(f, n, 0, "thread_main", "inline.c",
		     fx_marker_line(SRC("inline.c"), "thread_capture"));

	uint64_t entry = fx_func(&fx, "thread_main");
	struct gt_frame start = gt_sym_function(sym, entry);
	cr_expect_str_eq(start.func, "thread_main");
	cr_expect_eq(start.pc, entry, "a function entry is written as is, not - 1");
	cr_expect_str_eq(fx_basename(start.file), "inline.c");
	cr_expect_gt(start.line, 0);
	gt_sym_free(sym);
}

Test(inline_c, cap_keeps_innermost_and_outermost)
{
	struct fixture fx;
	fx_run(&fx, FX_INLINE, NULL);
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	fx_add_modules(&fx, sym);
	const char *src = SRC("inline.c");
	struct gt_frame f[MAX_FRAMES];

	size_t n = symbolize(sym, &fx, "deep", f, MAX_FRAMES);
	cr_assert_eq(n, 22, "21 recurse frames and main expected: %s", show(f, n));
	expect_frame(f, n, 0, "recurse", "inline.c", fx_marker_line(src, "deep_capture"));
	for (size_t i = 1; i < 21; i++)
		expect_frame(f, n, i, "recurse", "inline.c",
			     fx_marker_line(src, "recurse_calls_itself"));
	expect_frame(f, n, 21, "main", "inline.c", fx_marker_line(src, "main_calls_recurse"));

	n = symbolize(sym, &fx, "deep", f, 4);
	cr_assert_eq(n, 4, "%s", show(f, n));
	expect_frame(f, n, 0, "recurse", "inline.c", fx_marker_line(src, "deep_capture"));
	expect_frame(f, n, 1, "recurse", "inline.c", fx_marker_line(src, "recurse_calls_itself"));
	expect_frame(f, n, 2, "recurse", "inline.c", fx_marker_line(src, "recurse_calls_itself"));
	expect_frame(f, n, 3, "main", "inline.c", fx_marker_line(src, "main_calls_recurse"));

	n = symbolize(sym, &fx, "deep", f, 1);
	cr_assert_eq(n, 1);
	expect_frame(f, n, 0, "main", "inline.c", fx_marker_line(src, "main_calls_recurse"));
	cr_expect_eq(symbolize(sym, &fx, "deep", f, 0), 0);
	gt_sym_free(sym);
}

Test(inline_c, stats_count_lookups)
{
	struct fixture fx;
	fx_run(&fx, FX_INLINE, NULL);
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	fx_add_modules(&fx, sym);
	const struct fx_stack *s = fx_stack(&fx, "inline");
	struct gt_frame f[MAX_FRAMES];
	gt_sym_stack(sym, s->pcs, s->n, f, MAX_FRAMES);
	gt_sym_stack(sym, s->pcs, s->n, f, MAX_FRAMES);
	struct gt_sym_stats st;
	gt_sym_stats(sym, &st);
	cr_expect_eq(st.pcs_looked_up, 2 * s->n);
	cr_expect_eq(st.modules_failed, 0);
	/* libc has debug info here (libc6-dbg) or .dynsym names; _start has a symbol. */
	cr_expect_leq(st.pcs_unresolved, 2, "unresolved %llu", (unsigned long long)st.pcs_unresolved);
	gt_sym_free(sym);
}

#ifdef FX_CXX
Test(cxx, demangled_template_and_lambda)
{
	struct fixture fx;
	fx_run(&fx, FX_CXX, NULL);
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	fx_add_modules(&fx, sym);
	struct gt_frame f[MAX_FRAMES];
	size_t n = symbolize(sym, &fx, "template", f, MAX_FRAMES);
	const char *src = SRC("cxx.cpp");
	cr_assert_geq(n, 3, "%s", show(f, n));
	expect_frame(f, n, 0, "outerns::inner::Box<int>::get() const", "cxx.cpp",
		     fx_marker_line(src, "template_capture"));
	expect_frame(f, n, 1, "main::{lambda(int)#1}::operator()(int) const", "cxx.cpp",
		     fx_marker_line(src, "lambda_calls_get"));
	expect_frame(f, n, n - 1, "main", "cxx.cpp", 0);
	gt_sym_free(sym);
}

Test(cxx, long_names_keep_their_last_1024_bytes)
{
	struct fixture fx;
	fx_run(&fx, FX_CXX, NULL);
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	fx_add_modules(&fx, sym);
	struct gt_frame f[MAX_FRAMES];
	size_t n = symbolize(sym, &fx, "long", f, MAX_FRAMES);
	cr_assert_geq(n, 2, "%s", show(f, n));
	size_t len = strlen(f[0].func);
	cr_expect_eq(len, 1024, "length %zu", len);
	const char *tail = ">::get() const";
	cr_expect_str_eq(f[0].func + len - strlen(tail), tail);
	cr_expect(strstr(f[0].func, "outerns::inner::Box<") != NULL, "%s", f[0].func);
	expect_frame(f, n, 1, "long_name()", "cxx.cpp", fx_marker_line(SRC("cxx.cpp"), "long_calls_get"));
	gt_sym_free(sym);
}
#endif

Test(modules, dlopened_plugin)
{
	struct fixture fx;
	fx_run(&fx, FX_DLOPEN, FX_PLUGIN);
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	fx_add_modules(&fx, sym);
	struct gt_frame f[MAX_FRAMES];
	size_t n = symbolize(sym, &fx, "plugin", f, MAX_FRAMES);
	cr_assert_eq(n, 2, "plugin_entry, main expected: %s", show(f, n));
	expect_frame(f, n, 0, "plugin_entry", "plugin.c",
		     fx_marker_line(SRC("plugin.c"), "plugin_capture"));
	expect_frame(f, n, 1, "main", "dlopen.c", fx_marker_line(SRC("dlopen.c"), "main_calls_plugin"));
	cr_expect_eq(warnings.n, 0, "unexpected warning: %s", warnings.lines[0]);
	gt_sym_free(sym);
}

/* A stripped copy of the inline fixture must give the same frames as the original. */
static void expect_inline_frames(struct gt_symbolizer *sym, const struct fixture *fx)
{
	struct gt_frame f[MAX_FRAMES];
	size_t n = symbolize(sym, fx, "inline", f, MAX_FRAMES);
	const char *src = SRC("inline.c");
	cr_assert_eq(n, 4, "%s", show(f, n));
	expect_frame(f, n, 0, "helper_leaf", "inline.c", fx_marker_line(src, "leaf_capture"));
	expect_frame(f, n, 1, "helper_mid", "inline.c", fx_marker_line(src, "mid_calls_leaf"));
	expect_frame(f, n, 2, "outer", "inline.c", fx_marker_line(src, "outer_calls_mid"));
	expect_frame(f, n, 3, "main", "inline.c", fx_marker_line(src, "main_calls_outer"));
}

Test(debuginfo, gnu_debuglink_beside_the_binary)
{
	struct fixture fx;
	fx_run(&fx, FX_DEBUGLINK, NULL);
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	fx_add_modules(&fx, sym);
	expect_inline_frames(sym, &fx);
	cr_expect_eq(warnings.n, 0, "unexpected warning: %s", warnings.lines[0]);
	gt_sym_free(sym);
}

/* A debug directory holding .build-id/xx/yyyy.debug for the fixture's build-id. */
static void make_build_id_dir(char *dir, size_t size, const struct fx_module *m)
{
	snprintf(dir, size, "/tmp/gt-sym-test-XXXXXX");
	cr_assert_not_null(mkdtemp(dir));
	char sub[512], link[1024];
	snprintf(sub, sizeof(sub), "%s/.build-id", dir);
	cr_assert_eq(mkdir(sub, 0755), 0);
	snprintf(sub + strlen(sub), sizeof(sub) - strlen(sub), "/%02x", m->build_id[0]);
	cr_assert_eq(mkdir(sub, 0755), 0);
	int at = snprintf(link, sizeof(link), "%s/", sub);
	for (size_t i = 1; i < m->build_id_len; i++)
		at += snprintf(link + at, sizeof(link) - (size_t)at, "%02x", m->build_id[i]);
	snprintf(link + at, sizeof(link) - (size_t)at, ".debug");
	cr_assert_eq(symlink(FX_BUILDID_DEBUG, link), 0);
}

static void remove_tree(const char *dir)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}

Test(debuginfo, build_id_in_a_given_debug_dir)
{
	struct fixture fx;
	fx_run(&fx, FX_BUILDID, NULL);
	struct fx_module *m = fx_main_module(&fx);
	cr_assert_gt(m->build_id_len, 1, "the fixture has no build-id");

	/* Without the directory: names from .symtab, no lines. */
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	fx_add_modules(&fx, sym);
	struct gt_frame f[MAX_FRAMES];
	size_t n = symbolize(sym, &fx, "inline", f, MAX_FRAMES);
	cr_assert_geq(n, 2, "%s", show(f, n));
	expect_frame(f, n, 0, "outer", "fx_buildid", 0);
	cr_expect_eq(f[0].line, 0);
	cr_expect_str_eq(f[0].file, m->path, "no source: the module path");
	gt_sym_free(sym);

	char dir[256];
	make_build_id_dir(dir, sizeof(dir), m);
	const char *const dirs[] = { dir, NULL };
	sym = fx_symbolizer(&warnings, dirs);
	fx_add_modules(&fx, sym);
	expect_inline_frames(sym, &fx);
	cr_expect_eq(warnings.n, 0, "unexpected warning: %s", warnings.lines[0]);
	gt_sym_free(sym);
	remove_tree(dir);
}

Test(debuginfo, no_symbols_at_all_reads_module_plus_offset)
{
	struct fixture fx;
	fx_run(&fx, FX_NOSYM, NULL);
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	fx_add_modules(&fx, sym);
	const struct fx_module *m = fx_main_module(&fx);
	const struct fx_stack *s = fx_stack(&fx, "inline");
	struct gt_frame f[MAX_FRAMES];
	size_t n = gt_sym_stack(sym, s->pcs, s->n, f, MAX_FRAMES);
	cr_assert_geq(n, 2, "%s", show(f, n));
	char want[128];
	snprintf(want, sizeof(want), "fx_nosym+0x%llx",
		 (unsigned long long)(s->pcs[0] - 1 - m->bias));
	expect_frame(f, n, 0, want, NULL, 0);
	cr_expect_str_eq(f[0].file, m->path);
	cr_expect_eq(f[0].line, 0);
	cr_expect_eq(f[0].pc, s->pcs[0] - 1);
	cr_expect_eq(warnings.n, 0, "a binary without symbols is no problem: %s", warnings.lines[0]);
	struct gt_sym_stats st;
	gt_sym_stats(sym, &st);
	cr_expect_geq(st.pcs_unresolved, 2);
	gt_sym_free(sym);
}
