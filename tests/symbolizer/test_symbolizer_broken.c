/* Symbolizer tests: modules that are missing, changed or broken degrade to "<module>+0x<off>"
 * frames with one warning each, and never crash or hang the symbolizer. */
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

/* The inline fixture's main module pointed at another file: every frame of it must read
 * "<base>+0x<off>" with the right offset, and exactly one warning names the module. */
static void expect_degraded(struct fixture *fx, const char *path, const char *base,
			    const char *warning_part)
{
	struct fx_module *m = fx_main_module(fx);
	snprintf(m->path, sizeof(m->path), "%s", path);
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	add_modules(fx, sym);
	struct gt_frame f[MAX_FRAMES];
	for (int round = 0; round < 2; round++) {
		for (size_t k = 0; k < fx->n_stacks; k++) {
			const struct fx_stack *s = &fx->stacks[k];
			size_t n = gt_sym_stack(sym, s->pcs, s->n, f, MAX_FRAMES);
			cr_assert_gt(n, 0);
			char want[128];
			snprintf(want, sizeof(want), "%s+0x%llx", base,
				 (unsigned long long)(s->pcs[0] - 1 - m->bias));
			cr_expect_str_eq(f[0].func, want, "%s", show(f, n));
			cr_expect_str_eq(f[0].file, path);
			cr_expect_eq(f[0].line, 0);
		}
	}
	cr_expect_eq(warnings.n, 1, "one warning expected, got %zu: %s", warnings.n,
		     warnings.lines[0]);
	cr_expect(strstr(warnings.lines[0], path) != NULL, "warning names the module: %s",
		  warnings.lines[0]);
	if (warning_part)
		cr_expect(strstr(warnings.lines[0], warning_part) != NULL, "%s", warnings.lines[0]);
	struct gt_sym_stats st;
	gt_sym_stats(sym, &st);
	cr_expect_eq(st.modules_failed, 1);
	gt_sym_free(sym);
}

/* A copy of the inline fixture, then cut to size bytes (0: kept whole). */
static void copy_fixture(const char *to, off_t size)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "cp '%s' '%s'", FX_INLINE, to);
	cr_assert_eq(system(cmd), 0);
	if (size)
		cr_assert_eq(truncate(to, size), 0);
}

TestSuite(broken, .init = make_tmp_dir, .fini = remove_tmp_dir);

Test(broken, build_id_mismatch)
{
	struct fixture fx;
	fx_run(&fx, FX_INLINE, NULL);
	struct fx_module *m = fx_main_module(&fx);
	cr_assert_gt(m->build_id_len, 0);
	m->build_id[0] ^= 0xff; /* the file changed since the capture */
	char path[4096];
	snprintf(path, sizeof(path), "%s", m->path);
	expect_degraded(&fx, path, "fx_inline", "build-id");
}

Test(broken, missing_file)
{
	struct fixture fx;
	fx_run(&fx, FX_INLINE, NULL);
	char path[512];
	snprintf(path, sizeof(path), "%s/gone", tmp_dir);
	expect_degraded(&fx, path, "gone", NULL);
}

Test(broken, directory_in_place_of_the_file)
{
	struct fixture fx;
	fx_run(&fx, FX_INLINE, NULL);
	char path[512];
	snprintf(path, sizeof(path), "%s/fx_dir", tmp_dir);
	cr_assert_eq(mkdir(path, 0755), 0);
	expect_degraded(&fx, path, "fx_dir", NULL);
}

Test(broken, fifo_in_place_of_the_file, .timeout = 20)
{
	/* Opening a FIFO would wait for a writer forever. */
	struct fixture fx;
	fx_run(&fx, FX_INLINE, NULL);
	char path[512];
	snprintf(path, sizeof(path), "%s/fx_fifo", tmp_dir);
	cr_assert_eq(mkfifo(path, 0644), 0);
	expect_degraded(&fx, path, "fx_fifo", "not a regular file");
}

Test(broken, truncated_elf_header)
{
	struct fixture fx;
	fx_run(&fx, FX_INLINE, NULL);
	char path[512];
	snprintf(path, sizeof(path), "%s/fx_trunc", tmp_dir);
	copy_fixture(path, 40);
	expect_degraded(&fx, path, "fx_trunc", NULL);
}

Test(broken, empty_file)
{
	struct fixture fx;
	fx_run(&fx, FX_INLINE, NULL);
	char path[512];
	snprintf(path, sizeof(path), "%s/fx_empty", tmp_dir);
	FILE *f = fopen(path, "w");
	cr_assert_not_null(f);
	fclose(f);
	expect_degraded(&fx, path, "fx_empty", NULL);
}

Test(broken, unreadable_file)
{
	if (geteuid() == 0)
		cr_skip_test("running as root: a mode-000 file stays readable");
	struct fixture fx;
	fx_run(&fx, FX_INLINE, NULL);
	char path[512];
	snprintf(path, sizeof(path), "%s/fx_noread", tmp_dir);
	copy_fixture(path, 0);
	cr_assert_eq(chmod(path, 0), 0);
	expect_degraded(&fx, path, "fx_noread", NULL);
}

/* File offset and size of a section of the ELF file at path. */
static void find_section(const char *path, const char *name, off_t *offset, size_t *size)
{
	elf_version(EV_CURRENT);
	int fd = open(path, O_RDONLY);
	cr_assert_geq(fd, 0);
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	cr_assert_not_null(elf);
	size_t shstrndx;
	cr_assert_eq(elf_getshdrstrndx(elf, &shstrndx), 0);
	*size = 0;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr shdr;
		gelf_getshdr(scn, &shdr);
		const char *sname = elf_strptr(elf, shstrndx, shdr.sh_name);
		if (sname && strcmp(sname, name) == 0) {
			*offset = (off_t)shdr.sh_offset;
			*size = shdr.sh_size;
		}
	}
	elf_end(elf);
	close(fd);
	cr_assert_gt(*size, 0, "no %s in %s", name, path);
}

/* Overwrites a section of the file with bytes from a fixed pseudo-random sequence
 * (fill < 0) or with one byte value. */
static void scribble_section(const char *path, const char *name, int fill)
{
	off_t offset;
	size_t size;
	find_section(path, name, &offset, &size);
	unsigned char *bytes = malloc(size);
	uint32_t x = 12345;
	for (size_t i = 0; i < size; i++) {
		x = x * 1103515245u + 12345u;
		bytes[i] = fill < 0 ? (unsigned char)(x >> 16) : (unsigned char)fill;
	}
	int fd = open(path, O_WRONLY);
	cr_assert_geq(fd, 0);
	cr_assert_eq(pwrite(fd, bytes, size, offset), (ssize_t)size);
	close(fd);
	free(bytes);
}

/* A broken copy symbolizes without crashing, every frame has a name (the right function
 * from the symbol table, "<base>+0x<its start>" from the unwind tables, or "<base>+0x<off>"
 * when the file is unusable), and at most one warning names it. */
static void expect_survives(struct fixture *fx, const char *path, const char *base)
{
	struct fx_module *m = fx_main_module(fx);
	snprintf(m->path, sizeof(m->path), "%s", path);
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	add_modules(fx, sym);
	struct gt_frame f[MAX_FRAMES];
	const struct fx_stack *s = fx_stack(fx, "inline");
	size_t n = gt_sym_stack(sym, s->pcs, s->n, f, MAX_FRAMES);
	cr_assert_gt(n, 0);
	for (size_t k = 0; k < fx->n_stacks; k++)
		gt_sym_stack(sym, fx->stacks[k].pcs, fx->stacks[k].n, f, MAX_FRAMES);
	n = gt_sym_stack(sym, s->pcs, s->n, f, MAX_FRAMES);
	char start_name[128], offset_name[128];
	snprintf(start_name, sizeof(start_name), "%s+0x%llx", base,
		 (unsigned long long)(fx_func(fx, "outer") - m->bias));
	snprintf(offset_name, sizeof(offset_name), "%s+0x%llx", base,
		 (unsigned long long)(s->pcs[0] - 1 - m->bias));
	/* The innermost PC lies in outer(), with helper_mid and helper_leaf inlined. */
	bool named = false;
	for (size_t i = 0; i < n && !named; i++)
		named = strcmp(f[i].func, "outer") == 0 || strcmp(f[i].func, start_name) == 0 ||
			strcmp(f[i].func, offset_name) == 0;
	cr_expect(named, "outer, %s or %s expected: %s", start_name, offset_name, show(f, n));
	cr_expect_leq(warnings.n, 1, "%zu warnings: %s", warnings.n, warnings.lines[1]);
	for (size_t i = 0; i < warnings.n && i < 16; i++)
		cr_expect(strstr(warnings.lines[i], path) != NULL, "%s", warnings.lines[i]);
	gt_sym_free(sym);
}

Test(broken, truncated_in_the_middle)
{
	struct fixture fx;
	fx_run(&fx, FX_INLINE, NULL);
	char path[512];
	snprintf(path, sizeof(path), "%s/fx_half", tmp_dir);
	struct stat st;
	cr_assert_eq(stat(FX_INLINE, &st), 0);
	copy_fixture(path, st.st_size / 2);
	expect_survives(&fx, path, "fx_half");
	cr_expect_eq(warnings.n, 1, "a truncated file is worth a warning");
}

Test(broken, truncated_in_the_text)
{
	struct fixture fx;
	fx_run(&fx, FX_INLINE, NULL);
	char path[512];
	snprintf(path, sizeof(path), "%s/fx_text", tmp_dir);
	off_t offset;
	size_t size;
	find_section(FX_INLINE, ".text", &offset, &size);
	copy_fixture(path, offset + 16);
	expect_survives(&fx, path, "fx_text");
	cr_expect_eq(warnings.n, 1, "a truncated file is worth a warning");
}

static const char *const dwarf_sections[] = {
	".debug_info", ".debug_abbrev", ".debug_line", ".debug_str", ".debug_rnglists",
	".debug_aranges", ".debug_line_str",
};

Test(broken, garbage_in_each_dwarf_section)
{
	struct fixture fx;
	fx_run(&fx, FX_INLINE, NULL);
	for (size_t i = 0; i < sizeof(dwarf_sections) / sizeof(dwarf_sections[0]); i++) {
		for (int fill = -1; fill <= 0xff; fill += 0x100) {
			char path[512];
			snprintf(path, sizeof(path), "%s/fx_dwarf%zu_%d", tmp_dir, i, fill);
			copy_fixture(path, 0);
			off_t offset;
			size_t size;
			find_section(path, dwarf_sections[i], &offset, &size);
			scribble_section(path, dwarf_sections[i], fill);
			expect_survives(&fx, path, fx_basename(path));
		}
	}
}

Test(broken, garbage_in_the_symbol_tables)
{
	struct fixture fx;
	fx_run(&fx, FX_INLINE, NULL);
	static const char *const sections[] = { ".symtab", ".strtab", ".dynsym", ".dynstr",
						".shstrtab" };
	for (size_t i = 0; i < sizeof(sections) / sizeof(sections[0]); i++) {
		char path[512];
		snprintf(path, sizeof(path), "%s/fx_sym%zu", tmp_dir, i);
		copy_fixture(path, 0);
		scribble_section(path, sections[i], -1);
		expect_survives(&fx, path, fx_basename(path));
	}
}
