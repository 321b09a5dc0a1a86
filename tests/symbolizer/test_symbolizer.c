/* Symbolizer tests: real PCs and module maps printed by fixture programs, frames compared
 * with the fixture sources (function names, files, marker lines, inline expansion), and the
 * module map (vdso, the tracer's own frames, overlapping modules). */
#include <criterion/criterion.h>
#include <criterion/redirect.h>
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checks.h"
#include "symbolizer/symbolizer_private.h" /* the problem table */


Test(inline_c, inline_frames_expanded_with_call_lines)
{
	struct fixture fx;
	struct gt_symbolizer *sym = load(&fx, FX_INLINE, NULL);
	struct gt_frame f[MAX_FRAMES];
	size_t n = symbolize(sym, &fx, "inline", f, MAX_FRAMES);

	const char *src = SRC("inline.c");
	cr_assert_eq(n, 4, "helper_leaf, helper_mid, outer, main expected: %s", show(f, n));
	expect_frame(f, n, 0, "helper_leaf", "inline.c", fx_marker_line(src, "leaf_capture"));
	expect_frame(f, n, 1, "helper_mid", "inline.c", fx_marker_line(src, "mid_calls_leaf"));
	expect_frame(f, n, 2, "outer", "inline.c", fx_marker_line(src, "outer_calls_mid"));
	expect_frame(f, n, 3, "main", "inline.c", fx_marker_line(src, "main_calls_outer"));

	/* Relative names in the line table ("../tests/...") come out under the compilation
	 * directory: the very source file. */
	char *want_path = realpath(src, NULL), *have_path = realpath(f[0].file, NULL);
	cr_expect_eq(f[0].file[0], '/', "%s", f[0].file);
	cr_expect(want_path && have_path && strcmp(want_path, have_path) == 0, "%s", f[0].file);
	free(want_path);
	free(have_path);

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
	struct gt_symbolizer *sym = load(&fx, FX_INLINE, NULL);
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
	struct gt_symbolizer *sym = load(&fx, FX_INLINE, NULL);
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
	struct gt_symbolizer *sym = load(&fx, FX_INLINE, NULL);
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
	struct gt_symbolizer *sym = load(&fx, FX_CXX, NULL);
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

Test(cxx, inlined_template_from_a_header_is_qualified)
{
	struct fixture fx;
	struct gt_symbolizer *sym = load(&fx, FX_CXX, NULL);
	struct gt_frame f[MAX_FRAMES];
	size_t n = symbolize(sym, &fx, "for_each", f, MAX_FRAMES);
	cr_assert_geq(n, 4, "%s", show(f, n));
	cr_expect_str_eq(f[0].func, "sum_all(std::vector<int, std::allocator<int> > const&)::"
				    "{lambda(int)#1}::operator()(int) const");
	/* No linkage name in DWARF for it: the namespace comes from its declaration's scopes. */
	cr_expect(strncmp(f[1].func, "std::for_each<", 14) == 0, "%s", show(f, n));
	cr_expect_str_eq(fx_basename(f[1].file), "stl_algo.h");
	cr_expect_eq(f[1].pc, (fx_stack(&fx, "for_each")->pcs[1] - 1) | (1ull << 48));
	expect_frame(f, n, 2, "sum_all(std::vector<int, std::allocator<int> > const&)", "cxx.cpp",
		     fx_marker_line(SRC("cxx.cpp"), "for_each_call"));
	expect_frame(f, n, n - 1, "main", "cxx.cpp", 0);
	gt_sym_free(sym);
}

Test(cxx, long_names_keep_their_last_1024_bytes)
{
	struct fixture fx;
	struct gt_symbolizer *sym = load(&fx, FX_CXX, NULL);
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
	struct gt_symbolizer *sym = load(&fx, FX_DLOPEN, FX_PLUGIN);
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

Test(modules, position_dependent_executable)
{
	struct fixture fx;
	struct gt_symbolizer *sym = load(&fx, FX_NOPIE, NULL);
	cr_assert_eq(fx_main_module(&fx)->bias, 0, "the fixture is not ET_EXEC");
	expect_inline_frames(sym, &fx);
	cr_expect_eq(warnings.n, 0, "unexpected warning: %s", warnings.lines[0]);
	gt_sym_free(sym);
}

/* clang emits no .debug_aranges, through which libdw finds the unit of an address: the
 * units' own ranges give the same frames, lines and inlined bodies (issue 27 item 8) */
Test(debuginfo, lines_without_debug_aranges)
{
	struct fixture fx;
	struct gt_symbolizer *sym = load(&fx, FX_NOARANGES, NULL);
	int fd = open(FX_NOARANGES, O_RDONLY);
	elf_version(EV_CURRENT);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	size_t shstrndx;
	cr_assert(elf && elf_getshdrstrndx(elf, &shstrndx) == 0);
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn));) {
		GElf_Shdr sh;
		gelf_getshdr(scn, &sh);
		cr_assert_str_neq(elf_strptr(elf, shstrndx, sh.sh_name), ".debug_aranges");
	}
	elf_end(elf);
	close(fd);
	expect_inline_frames(sym, &fx);
	cr_expect_eq(warnings.n, 0, "unexpected warning: %s", warnings.lines[0]);
	gt_sym_free(sym);
}

Test(debuginfo, gnu_debuglink_beside_the_binary)
{
	struct fixture fx;
	struct gt_symbolizer *sym = load(&fx, FX_DEBUGLINK, NULL);
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

Test(debuginfo, build_id_in_a_given_debug_dir)
{
	struct fixture fx;
	fx_run(&fx, FX_BUILDID, NULL);
	struct fx_module *m = fx_main_module(&fx);
	cr_assert_gt(m->build_id_len, 1, "the fixture has no build-id");

	/* Without the directory: names from .symtab, no lines. */
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	add_modules(&fx, sym);
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
	add_modules(&fx, sym);
	expect_inline_frames(sym, &fx);
	cr_expect_eq(warnings.n, 0, "unexpected warning: %s", warnings.lines[0]);
	gt_sym_free(sym);
	remove_tree(dir);
}

/* A capture converted on another machine, or of another arch, with its binaries copied
 * along into a directory given as a debug directory: a module missing at its recorded path
 * is found there by its name (and must have the recorded build-id, as any file). */
Test(debuginfo, a_module_missing_at_its_path_is_found_by_name_in_a_debug_dir)
{
	struct fixture fx;
	fx_run(&fx, FX_INLINE, NULL);
	struct fx_module *m = fx_main_module(&fx);
	char dir[] = "/tmp/gt-sym-test-XXXXXX", copy[512], cmd[1100];
	cr_assert_not_null(mkdtemp(dir));
	snprintf(copy, sizeof copy, "%s/%s", dir, fx_basename(FX_INLINE));
	snprintf(cmd, sizeof cmd, "cp '%s' '%s'", FX_INLINE, copy);
	cr_assert_eq(system(cmd), 0);
	snprintf(m->path, sizeof m->path, "%s/recorded-elsewhere/%s", dir, fx_basename(copy));

	/* without the directory: a file that cannot be opened */
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	add_modules(&fx, sym);
	struct gt_frame f[MAX_FRAMES];
	size_t n = symbolize(sym, &fx, "inline", f, MAX_FRAMES);
	cr_assert_geq(n, 1);
	cr_expect(strncmp(f[0].func, "fx_inline+0x", 12) == 0, "%s", show(f, n));
	cr_expect_eq(warnings.n, 1, "one warning: the missing file");
	gt_sym_free(sym);

	const char *const dirs[] = { dir, NULL };
	sym = fx_symbolizer(&warnings, dirs);
	add_modules(&fx, sym);
	expect_inline_frames(sym, &fx);
	cr_expect_eq(warnings.n, 0, "unexpected warning: %s", warnings.lines[0]);
	gt_sym_free(sym);
	remove_tree(dir);
}

/* Without symbols a frame reads "module+0x<start of its function>", the start the unwind
 * tables (.eh_frame) give: every address of one function is one name, so that a profile
 * counts the function once, not once per instruction. */
Test(debuginfo, no_symbols_at_all_reads_module_plus_function_start)
{
	struct fixture fx;
	struct gt_symbolizer *sym = load(&fx, FX_NOSYM, NULL);
	const struct fx_module *m = fx_main_module(&fx);
	const struct fx_stack *s = fx_stack(&fx, "inline");
	struct gt_frame f[MAX_FRAMES];
	size_t n = gt_sym_stack(sym, s->pcs, s->n, f, MAX_FRAMES);
	cr_assert_geq(n, 2, "%s", show(f, n));
	char want[128];
	/* the capture's PC lies inside outer (the helpers are inlined into it) */
	snprintf(want, sizeof(want), "fx_nosym+0x%llx",
		 (unsigned long long)(fx_func(&fx, "outer") - m->bias));
	expect_frame(f, n, 0, want, NULL, 0);
	cr_expect_str_eq(f[0].file, m->path);
	cr_expect_eq(f[0].line, 0);
	cr_expect_eq(f[0].pc, s->pcs[0] - 1);
	cr_expect_eq(warnings.n, 0, "a binary without symbols is no problem: %s", warnings.lines[0]);
	struct gt_sym_stats st;
	gt_sym_stats(sym, &st);
	cr_expect_geq(st.pcs_unresolved, 2);

	/* recurse: the capture and the 20 recursive calls are two addresses of one function */
	s = fx_stack(&fx, "deep");
	n = gt_sym_stack(sym, s->pcs, s->n, f, MAX_FRAMES);
	cr_assert_geq(n, 22, "%s", show(f, n));
	cr_assert_neq(f[0].pc, f[1].pc);
	snprintf(want, sizeof(want), "fx_nosym+0x%llx",
		 (unsigned long long)(fx_func(&fx, "recurse") - m->bias));
	for (size_t i = 0; i <= 20; i++)
		expect_frame(f, n, i, want, NULL, 0);
	gt_sym_free(sym);
}

/* ---- the module map ------------------------------------------------------------------ */

/* Offset of a dynamic symbol in this process's vDSO image (the same kernel as the
 * fixture's). */
static uint64_t own_vdso_symbol(const char *name)
{
	FILE *maps = fopen("/proc/self/maps", "r");
	cr_assert_not_null(maps);
	char line[512];
	unsigned long lo = 0, hi = 0;
	while (fgets(line, sizeof(line), maps))
		if (strstr(line, "[vdso]") && sscanf(line, "%lx-%lx", &lo, &hi) == 2)
			break;
	fclose(maps);
	cr_assert_gt(hi, lo, "no vDSO mapped");
	elf_version(EV_CURRENT);
	Elf *elf = elf_memory((char *)lo, hi - lo);
	cr_assert_not_null(elf);
	uint64_t value = 0;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn && !value; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr shdr;
		gelf_getshdr(scn, &shdr);
		if (shdr.sh_type != SHT_DYNSYM)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < shdr.sh_size / shdr.sh_entsize; i++) {
			GElf_Sym s;
			gelf_getsym(data, (int)i, &s);
			const char *sname = elf_strptr(elf, shdr.sh_link, s.st_name);
			if (sname && strcmp(sname, name) == 0)
				value = s.st_value;
		}
	}
	elf_end(elf);
	cr_assert_gt(value, 0, "no %s in the vDSO", name);
	return value;
}

static struct fx_module *vdso_module(struct fixture *fx)
{
	for (size_t i = 0; i < fx->n_modules; i++)
		if (fx->modules[i].flags & GT_SYM_VDSO)
			return &fx->modules[i];
	cr_skip_test("the fixture reported no vDSO");
	return NULL;
}

Test(modules, vdso_from_the_running_kernel_when_build_ids_match)
{
	struct fixture fx;
	struct gt_symbolizer *sym = load(&fx, FX_INLINE, NULL);
	struct fx_module *vdso = vdso_module(&fx);
	uint64_t ra = vdso->bias + own_vdso_symbol("__vdso_clock_gettime") + 5;
	struct gt_frame f[4];
	size_t n = gt_sym_stack(sym, &ra, 1, f, 4);
	cr_assert_eq(n, 1);
	cr_expect(strstr(f[0].func, "clock_gettime") != NULL, "%s", show(f, n));
	cr_expect_eq(f[0].pc, ra - 1);
	cr_expect_eq(warnings.n, 0, "%s", warnings.lines[0]);
	gt_sym_free(sym);
}

Test(modules, vdso_without_build_id_reads_vdso_plus_offset)
{
	struct fixture fx;
	fx_run(&fx, FX_INLINE, NULL);
	struct fx_module *vdso = vdso_module(&fx);
	vdso->build_id_len = 0;
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	add_modules(&fx, sym);
	uint64_t ra = vdso->bias + 0x801;
	struct gt_frame f[4];
	size_t n = gt_sym_stack(sym, &ra, 1, f, 4);
	cr_assert_eq(n, 1);
	cr_expect_str_eq(f[0].func, "[vdso]+0x800");
	cr_expect_eq(warnings.n, 0, "%s", warnings.lines[0]);
	gt_sym_free(sym);
}

/* An address range no fixture module uses. */
#define FAKE_LO 0x100000000000ull

Test(modules, tracer_frames_cut_at_both_ends)
{
	struct fixture fx;
	struct gt_symbolizer *sym = load(&fx, FX_INLINE, NULL);
	/* Never opened: its frames go before anything is looked up in it. */
	cr_assert_eq(gt_sym_add_module(sym, "/nonexistent/libgotrace.so", NULL, 0, FAKE_LO,
				       FAKE_LO, FAKE_LO + 0xffff, 0),
		     0);
	const struct fx_stack *s = fx_stack(&fx, "inline");
	uint64_t pcs[130] = { FAKE_LO + 0x123, FAKE_LO + 0x456 };
	memcpy(pcs + 2, s->pcs, s->n * sizeof(pcs[0]));
	struct gt_frame f[MAX_FRAMES];
	size_t n = gt_sym_stack(sym, pcs, s->n + 2, f, MAX_FRAMES);
	cr_assert_eq(n, 4, "%s", show(f, n));
	expect_frame(f, n, 0, "helper_leaf", "inline.c",
		     fx_marker_line(SRC("inline.c"), "leaf_capture"));
	expect_frame(f, n, 3, "main", "inline.c", 0);

	/* Its thread trampoline, between the start routine and start_thread. */
	const struct fx_stack *t = fx_stack(&fx, "thread");
	cr_assert_geq(t->n, 2);
	pcs[0] = t->pcs[0];
	pcs[1] = FAKE_LO + 0x789;
	memcpy(pcs + 2, t->pcs + 1, (t->n - 1) * sizeof(pcs[0]));
	n = gt_sym_stack(sym, pcs, t->n + 1, f, MAX_FRAMES);
	cr_assert_eq(n, 1, "%s", show(f, n));
	expect_frame(f, n, 0, "thread_main", "inline.c", 0);
	cr_expect_eq(warnings.n, 0, "%s", warnings.lines[0]);
	gt_sym_free(sym);
}

Test(modules, unnamed_libc_frames_cut_at_the_outer_end, .init = make_tmp_dir,
     .fini = remove_tmp_dir)
{
	/* A libc without symbols: start_thread and clone3 read libc.so.6+0x... */
	char libc[512];
	snprintf(libc, sizeof(libc), "%s/libc.so.6", tmp_dir);
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", FX_NOSYM, libc);
	cr_assert_eq(system(cmd), 0);
	struct fixture fx;
	struct gt_symbolizer *sym = load(&fx, FX_INLINE, NULL);
	cr_assert_eq(gt_sym_add_module(sym, libc, NULL, 0, FAKE_LO, FAKE_LO, FAKE_LO + 0xffff, 0), 0);
	const struct fx_stack *s = fx_stack(&fx, "thread");
	uint64_t pcs[3] = { s->pcs[0], FAKE_LO + 0x1001, FAKE_LO + 0x2001 };
	struct gt_frame f[MAX_FRAMES];
	size_t n = gt_sym_stack(sym, pcs, 3, f, MAX_FRAMES);
	cr_assert_eq(n, 1, "%s", show(f, n));
	expect_frame(f, n, 0, "thread_main", "inline.c", 0);

	/* A stack with nothing but libc in it keeps its innermost frame. */
	n = gt_sym_stack(sym, pcs + 1, 2, f, MAX_FRAMES);
	cr_assert_eq(n, 1, "%s", show(f, n));
	expect_frame(f, n, 0, "libc.so.6+0x1000", NULL, 0);
	gt_sym_free(sym);
}

Test(modules, module_added_over_another_replaces_it)
{
	struct fixture fx;
	struct gt_symbolizer *sym = load(&fx, FX_DLOPEN, FX_PLUGIN);
	const struct fx_stack *s = fx_stack(&fx, "plugin");
	struct gt_frame f[MAX_FRAMES];
	size_t n = gt_sym_stack(sym, s->pcs, s->n, f, MAX_FRAMES);
	expect_frame(f, n, 0, "plugin_entry", "plugin.c", 0);

	/* dlclose, then another library at the same place. */
	struct fx_module *plugin = fx_module(&fx, "libfx_plugin.so");
	cr_assert_eq(gt_sym_add_module(sym, FX_NOSYM, NULL, 0, plugin->bias, plugin->lo,
				       plugin->hi, 0),
		     0);
	n = gt_sym_stack(sym, s->pcs, s->n, f, MAX_FRAMES);
	char want[128];
	snprintf(want, sizeof(want), "fx_nosym+0x%llx",
		 (unsigned long long)(s->pcs[0] - 1 - plugin->bias));
	expect_frame(f, n, 0, want, NULL, 0);
	expect_frame(f, n, 1, "main", "dlopen.c", 0);

	/* And the plugin back again. */
	cr_assert_eq(gt_sym_add_module(sym, plugin->path, plugin->build_id, plugin->build_id_len,
				       plugin->bias, plugin->lo, plugin->hi, 0),
		     0);
	n = gt_sym_stack(sym, s->pcs, s->n, f, MAX_FRAMES);
	expect_frame(f, n, 0, "plugin_entry", "plugin.c", 0);
	gt_sym_free(sym);
}

Test(modules, neighbours_sharing_a_boundary_byte_both_stay)
{
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	/* hi given as the end of the first, which is where the second starts */
	cr_assert_eq(gt_sym_add_module(sym, "/nonexistent/liba.so", NULL, 0, FAKE_LO, FAKE_LO,
				       FAKE_LO + 0x1000, 0), 0);
	cr_assert_eq(gt_sym_add_module(sym, "/nonexistent/libb.so", NULL, 0, FAKE_LO + 0x1000,
				       FAKE_LO + 0x1000, FAKE_LO + 0x2000, 0), 0);
	uint64_t pcs[] = { FAKE_LO + 0x11, FAKE_LO + 0x1011 };
	struct gt_frame f[4];
	cr_assert_eq(gt_sym_stack(sym, pcs, 2, f, 4), 2);
	cr_expect_str_eq(f[0].func, "liba.so+0x10");
	cr_expect_str_eq(f[1].func, "libb.so+0x10");
	gt_sym_free(sym);
}

Test(modules, pc_outside_every_module)
{
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	uint64_t pcs[] = { 0, FAKE_LO + 0x1001, 0 };
	struct gt_frame f[4];
	size_t n = gt_sym_stack(sym, pcs, 3, f, 4);
	cr_assert_eq(n, 1, "zero PCs are skipped: %s", show(f, n));
	cr_expect_str_eq(f[0].func, "0x100000001000");
	cr_expect_str_eq(f[0].file, "??");
	cr_expect_eq(f[0].line, 0);
	cr_expect_eq(f[0].pc, FAKE_LO + 0x1000);
	struct gt_frame fn = gt_sym_function(sym, FAKE_LO + 0x2000);
	cr_expect_str_eq(fn.func, "0x100000002000");
	cr_expect_eq(fn.pc, FAKE_LO + 0x2000);
	struct gt_sym_stats st;
	gt_sym_stats(sym, &st);
	cr_expect_eq(st.pcs_looked_up, 2);
	cr_expect_eq(st.pcs_unresolved, 2);
	gt_sym_free(sym);
}

Test(modules, unusable_arguments_refused)
{
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	uint8_t id[65] = { 0 };
	cr_expect_eq(gt_sym_add_module(sym, "/bin/true", NULL, 0, 0, 0x2000, 0x1000, 0), -1,
		     "hi below lo");
	cr_expect_eq(gt_sym_add_module(sym, NULL, NULL, 0, 0, 0x1000, 0x2000, 0), -1, "no path");
	cr_expect_eq(gt_sym_add_module(sym, "", NULL, 0, 0, 0x1000, 0x2000, 0), -1, "empty path");
	cr_expect_eq(gt_sym_add_module(sym, "/bin/true", id, sizeof(id), 0, 0x1000, 0x2000, 0), -1,
		     "build-id too long");
	cr_expect_eq(gt_sym_add_module(sym, NULL, NULL, 0, 0, 0x1000, 0x2000, GT_SYM_VDSO), 0,
		     "the vDSO needs no path");
	gt_sym_free(sym);
}

Test(options, debuginfod_never_asked)
{
	/* A debuginfod "server" on a local port: a lookup would show as a connection. */
	int server = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
	cr_assert_geq(server, 0);
	struct sockaddr_in addr = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof(addr);
	cr_assert_eq(bind(server, (struct sockaddr *)&addr, sizeof(addr)), 0);
	cr_assert_eq(listen(server, 16), 0);
	cr_assert_eq(getsockname(server, (struct sockaddr *)&addr, &len), 0);
	char url[64];
	snprintf(url, sizeof(url), "http://127.0.0.1:%u/", ntohs(addr.sin_port));
	setenv("DEBUGINFOD_URLS", url, 1);
	setenv("DEBUGINFOD_TIMEOUT", "2", 1);

	/* A binary without debug info: elfutils would ask the server for it by build-id. */
	struct fixture fx;
	struct gt_symbolizer *sym = load(&fx, FX_NOSYM, NULL);
	cr_expect_null(getenv("DEBUGINFOD_URLS"), "a conversion must not reach the network");
	struct gt_frame f[MAX_FRAMES];
	cr_expect_gt(symbolize(sym, &fx, "inline", f, MAX_FRAMES), 0);
	gt_sym_free(sym);
	int client = accept(server, NULL, NULL);
	cr_expect_lt(client, 0, "the symbolizer connected to %s", url);
	if (client >= 0)
		close(client);
	close(server);
}

static void redirect_stderr(void)
{
	cr_redirect_stderr();
}

Test(options, default_warnings_go_to_stderr_once, .init = redirect_stderr)
{
	struct gt_symbolizer *sym = gt_sym_new(NULL);
	cr_assert_eq(gt_sym_add_module(sym, "/nonexistent/libgone.so", NULL, 0, FAKE_LO, FAKE_LO,
				       FAKE_LO + 0xffff, 0),
		     0);
	uint64_t pcs[] = { FAKE_LO + 0x11, FAKE_LO + 0x21 };
	struct gt_frame f[4];
	cr_expect_eq(gt_sym_stack(sym, pcs, 2, f, 4), 2);
	cr_expect_str_eq(f[0].func, "libgone.so+0x10");
	cr_expect_str_eq(f[1].func, "libgone.so+0x20");
	gt_sym_free(sym);
	fflush(stderr);
	char text[2048] = "";
	FILE *err = cr_get_redirected_stderr();
	size_t len = fread(text, 1, sizeof(text) - 1, err);
	text[len] = '\0';
	cr_expect(strncmp(text, "gotrace: symbolizer: /nonexistent/libgone.so: ", 46) == 0, "%s",
		  text);
	cr_expect_eq(strchr(text, '\n'), text + len - 1, "one line: %s", text);
}

/* ---- the problem table --------------------------------------------------------------- */

Test(problems, every_problem_has_its_own_message)
{
	for (int p = 0; p < GT_SYM_PROBLEM_COUNT; p++) {
		const char *m = gt_sym_problem_message((enum gt_sym_problem)p);
		cr_assert(m && m[0], "problem %d has no message", p);
		for (int q = 0; q < p; q++)
			cr_expect_str_neq(m, gt_sym_problem_message((enum gt_sym_problem)q));
	}
	cr_expect(gt_sym_problem_degrades(GT_SYM_CHANGED));
	cr_expect(!gt_sym_problem_degrades(GT_SYM_DEBUG_CORRUPT));
	cr_expect_str_eq(gt_sym_problem_message(GT_SYM_PROBLEM_COUNT), "unknown problem");
}

/* A relative debug directory is taken from the working directory (elfutils alone would read
 * it as the main file's subdirectory); one that is not there is warned of and ignored.  (That
 * the resolved one is searched: tests/crossarch, report --debug-dir .) */
Test(problems, relative_debug_dir_resolved_missing_one_warned)
{
	char dir[] = "/tmp/gt-sym-reldir-XXXXXX";
	cr_assert_not_null(mkdtemp(dir));
	cr_assert_eq(chdir(dir), 0);
	cr_assert_eq(mkdir("debug", 0700), 0);
	const char *const dirs[] = { "debug", "missing/debug", NULL };
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, dirs);
	cr_expect_eq(warnings.n, 1);
	cr_expect(strstr(warnings.lines[0], "missing/debug: not found") != NULL, "%s",
		  warnings.lines[0]);
	gt_sym_free(sym);
	rmdir("debug");
	cr_assert_eq(chdir("/"), 0);
	rmdir(dir);
}

/* Rust symbols, legacy and v0, demangled by libiberty without their hash, from DWARF's
 * linkage name and from the symbol table alone. */
static void expect_rust_names(const char *exe, bool dwarf)
{
	struct fixture fx;
	struct gt_symbolizer *sym = load(&fx, exe, NULL);
	struct gt_frame f[MAX_FRAMES];
	const char *src = SRC("rust_names.c");
	size_t n = symbolize(sym, &fx, "legacy", f, MAX_FRAMES);
	cr_assert_geq(n, 2, "%s", show(f, n));
	cr_expect_str_eq(f[0].func, "mycrate::worker::poll", "%s", show(f, n));
	if (dwarf)
		expect_frame(f, n, 0, "mycrate::worker::poll", "rust_names.c",
			     fx_marker_line(src, "legacy_capture"));
	n = symbolize(sym, &fx, "v0", f, MAX_FRAMES);
	cr_assert_geq(n, 2, "%s", show(f, n));
	cr_expect_str_eq(f[0].func, "mycrate::worker::run", "%s", show(f, n));
	if (dwarf)
		expect_frame(f, n, 0, "mycrate::worker::run", "rust_names.c",
			     fx_marker_line(src, "v0_capture"));
	cr_expect_str_eq(gt_sym_function(sym, fx_func(&fx, "legacy_fn")).func,
			 "mycrate::worker::poll");
	cr_expect_str_eq(gt_sym_function(sym, fx_func(&fx, "v0_fn")).func, "mycrate::worker::run");
	gt_sym_free(sym);
}

Test(rust, legacy_and_v0_demangled_from_dwarf)
{
	expect_rust_names(FX_RUST, true);
}

Test(rust, legacy_and_v0_demangled_from_the_symbol_table)
{
	expect_rust_names(FX_RUST_NODWARF, false);
}

/* C++ names stay __cxa_demangle's; a legacy-looking C++ name without a Rust hash too. */
Test(rust, cxx_and_c_names_unchanged)
{
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	cr_expect_str_eq(gt_sym_function_name(sym, "_ZN3foo3barEv"), "foo::bar()");
	cr_expect_str_eq(gt_sym_function_name(sym, "_ZNK7outerns5inner3BoxIiE3getEv"),
			 "outerns::inner::Box<int>::get() const");
	cr_expect_str_eq(gt_sym_function_name(sym, "worker_main"), "worker_main");
	cr_expect_str_eq(gt_sym_function_name(sym, "_Rnot_mangled"), "_Rnot_mangled");
	gt_sym_free(sym);
}

/* ---- gt_sym_unwind -------------------------------------------------------------------- */

#define SELF_COPY 4096   /* of this thread's stack: the test's callers are far above that */

/* This process's file mappings (each file once: its lowest address as the load bias, as a
 * PIE or a shared object maps its first segment at its bias) into sym; how many. */
static size_t add_own_modules(struct gt_symbolizer *sym)
{
	FILE *f = fopen("/proc/self/maps", "r");
	cr_assert_not_null(f);
	char line[4096], last[4096] = "";
	uint64_t first_lo = 0, last_hi = 0;
	size_t n = 0;
	for (bool more = true; more;) {
		unsigned long long lo = 0, hi = 0;
		char path[4096] = "";
		more = fgets(line, sizeof line, f) != NULL;
		if (more && sscanf(line, "%llx-%llx %*s %*s %*s %*s %4095s", &lo, &hi, path) < 2)
			continue;
		if (more && strcmp(path, last) == 0) {
			last_hi = hi;
			continue;
		}
		if (last[0] == '/' && gt_sym_add_module(sym, last, NULL, 0, first_lo, first_lo,
							last_hi, 0) == 0)
			n++;
		snprintf(last, sizeof last, "%s", path);
		first_lo = lo;
		last_hi = hi;
	}
	fclose(f);
	return n;
}

/* A perf-like sample of the caller's own thread here: the registers (DWARF order) the CFI
 * needs, and a copy of the stack from SP on. */
__attribute__((noinline)) static void sample_here(struct gt_sym_regs *regs, uint8_t *stack)
{
	uint64_t sp, fp, ip;
#if defined(__aarch64__)
	uint64_t lr;
	__asm__ volatile("mov %0, sp\n\tmov %1, x29\n\tmov %2, x30\n\tadr %3, ."
			 : "=r"(sp), "=r"(fp), "=r"(lr), "=r"(ip));
	*regs = (struct gt_sym_regs){ .arch = GT_SYM_ARCH_AARCH64, .n = 32 };
	regs->dwarf[29] = fp;
	regs->dwarf[30] = lr;
	regs->dwarf[31] = sp;
#else
	__asm__ volatile("mov %%rsp, %0\n\tmov %%rbp, %1\n\tlea 0(%%rip), %2"
			 : "=r"(sp), "=r"(fp), "=r"(ip));
	*regs = (struct gt_sym_regs){ .arch = GT_SYM_ARCH_X86_64, .n = 17 };
	regs->dwarf[6] = fp;
	regs->dwarf[7] = sp;
	regs->dwarf[16] = ip;
#endif
	regs->sp = sp;
	regs->pc = ip;
	memcpy(stack, (const void *)(uintptr_t)sp, SELF_COPY);
}

/* Whether the frames of pcs name the function the sample was taken from and its caller. */
static bool names_sampler(struct gt_symbolizer *sym, const uint64_t *pcs, size_t n)
{
	struct gt_frame f[MAX_FRAMES];
	size_t k = gt_sym_stack(sym, pcs, n, f, MAX_FRAMES);
	bool here = false, caller = false;
	for (size_t i = 0; i < k; i++) {
		here |= f[i].func && strcmp(f[i].func, "sample_here") == 0;
		caller |= f[i].func && strcmp(f[i].func, "unwind_twice") == 0;
	}
	return here && caller;
}

__attribute__((noinline)) static void unwind_twice(size_t n_frames[2])
{
	struct gt_symbolizer *sym = gt_sym_new(NULL);
	cr_assert_not_null(sym);
	cr_assert_geq(add_own_modules(sym), 2, "the test program and libc");
	static uint8_t stack[SELF_COPY];
	struct gt_sym_regs regs;
	uint64_t pcs[64];
	bool complete;
	sample_here(&regs, stack);
	n_frames[0] = gt_sym_unwind(sym, 1, &regs, stack, SELF_COPY, pcs, 64, &complete);
	cr_assert(names_sampler(sym, pcs, n_frames[0]), "%zu frames", n_frames[0]);
	/* the module map changes (a dlopen): the unwinder reports the modules again */
	cr_assert_eq(gt_sym_add_module(sym, FX_NOSYM, NULL, 0, FAKE_LO, FAKE_LO, FAKE_LO + 0xffff,
				       0), 0);
	n_frames[1] = gt_sym_unwind(sym, 1, &regs, stack, SELF_COPY, pcs, 64, &complete);
	cr_assert(names_sampler(sym, pcs, n_frames[1]), "after a new module: %zu frames",
		  n_frames[1]);
	gt_sym_free(sym);
}

/* A sample is unwound with the modules' CFI from its copied stack, again after the module
 * map changed (libdwfl refuses a module reported again at its place, and drops it). */
Test(unwind, a_copied_stack_unwinds_before_and_after_the_modules_change)
{
	size_t n[2];
	unwind_twice(n);
	cr_assert_eq(n[1], n[0], "%zu frames, then %zu", n[0], n[1]);
}
