/* One module's file through libdwfl: open it as a dead process's module at its recorded
 * bias, check it against the capture, and turn addresses into frames. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dwarf.h>
#include <gelf.h>
#include <elfutils/libdw.h>

#include "symbolizer_private.h"

static void cu_index_free(struct gt_sym_cu_index *ix);

static const struct {
	const char *message;
	bool degrade;
} problems[GT_SYM_PROBLEM_COUNT] = {
#define GT_SYM_PROBLEM_ROW(name, text, degrades) [GT_SYM_##name] = { text, degrades },
	GT_SYM_PROBLEMS(GT_SYM_PROBLEM_ROW)
#undef GT_SYM_PROBLEM_ROW
};

const char *gt_sym_problem_message(enum gt_sym_problem p)
{
	return p < GT_SYM_PROBLEM_COUNT ? problems[p].message : "unknown problem";
}

bool gt_sym_problem_degrades(enum gt_sym_problem p)
{
	return p < GT_SYM_PROBLEM_COUNT && problems[p].degrade;
}

void gt_sym_warn(struct gt_symbolizer *sym, const char *path, enum gt_sym_problem problem,
		 const char *detail, const char *base_name)
{
	/* One warning per module path, however often it is mapped or looked up. */
	for (size_t i = 0; i < sym->n_warned; i++)
		if (sym->warned_paths[i] == path)
			return;
	if (!gt_grow(&sym->warned_paths, &sym->cap_warned, sym->n_warned + 1,
		     sizeof(*sym->warned_paths)))
		return;
	sym->warned_paths[sym->n_warned++] = path;

	char line[1024];
	const char *consequence = "";
	char degraded[300];
	if (gt_sym_problem_degrades(problem) && base_name) {
		snprintf(degraded, sizeof(degraded), "; its frames read %s+0xoff", base_name);
		consequence = degraded;
	} else if (problem == GT_SYM_DEBUG_UNUSABLE || problem == GT_SYM_DEBUG_CORRUPT) {
		consequence = "; names from its symbol table only";
	}
	snprintf(line, sizeof(line), "symbolizer: %s: %s%s%s%s%s", path,
		 gt_sym_problem_message(problem), detail ? " (" : "", detail ? detail : "",
		 detail ? ")" : "", consequence);
	if (sym->warn)
		sym->warn(sym->warn_ctx, line);
	else
		fprintf(stderr, "gotrace: %s\n", line);
}

int gt_sym_push_frame(struct gt_symbolizer *sym, const struct gt_sym_frame *fr)
{
	if (!gt_grow(&sym->frames, &sym->cap_frames, sym->n_frames + 1, sizeof(*sym->frames)))
		return -1;
	sym->frames[sym->n_frames++] = *fr;
	return 0;
}

static bool fail(struct gt_symbolizer *sym, struct gt_sym_image *img)
{
	img->state = GT_IMG_FAILED;
	sym->stats.modules_failed++;
	gt_sym_image_close(sym, img);
	return false;
}

static void format_build_id(const uint8_t *id, size_t len, char *out, size_t out_size)
{
	size_t at = 0;
	for (size_t i = 0; i < len && at + 3 <= out_size; i++)
		at += (size_t)snprintf(out + at, out_size - at, "%02x", id[i]);
	if (at == 0 && out_size)
		out[0] = '\0';
}

/* The running system's vDSO, copied into a memfd so that libdwfl reads it like a file.
 * Only used when its build-id equals the recorded one (same kernel build). */
int gt_sym_vdso_memfd(void)
{
	FILE *maps = fopen("/proc/self/maps", "re");
	if (!maps)
		return -1;
	char line[512];
	uint64_t lo = 0, hi = 0;
	bool found = false;
	while (fgets(line, sizeof(line), maps)) {
		if (strstr(line, "[vdso]") && sscanf(line, "%" SCNx64 "-%" SCNx64, &lo, &hi) == 2) {
			found = true;
			break;
		}
	}
	fclose(maps);
	if (!found || hi <= lo)
		return -1;
	int fd = memfd_create("gotrace-vdso", MFD_CLOEXEC);
	if (fd < 0)
		return -1;
	const char *image = (const char *)(uintptr_t)lo;
	size_t size = (size_t)(hi - lo);
	for (size_t done = 0; done < size;) {
		ssize_t w = write(fd, image + done, size - done);
		if (w <= 0) {
			close(fd);
			return -1;
		}
		done += (size_t)w;
	}
	return fd;
}

static int compare_funcs(const void *a, const void *b)
{
	const struct gt_sym_func *x = a, *y = b;
	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	return (x->rank > y->rank) - (x->rank < y->rank);
}

/* The module's function symbols, for binary search (libdwfl's table, through its API).
 * A symbol without a size (hand-written assembly) covers the addresses up to the next
 * symbol, as libdwfl's own search would have it. */
static void index_functions(struct gt_sym_image *img)
{
	int n = dwfl_module_getsymtab(img->mod);
	if (n <= 0)
		return;
	img->funcs = malloc((size_t)n * sizeof(*img->funcs));
	if (!img->funcs)
		return;
	for (int i = 1; i < n; i++) {
		GElf_Sym s;
		GElf_Addr addr;
		GElf_Word shndx;
		const char *name = dwfl_module_getsym_info(img->mod, i, &s, &addr, &shndx, NULL, NULL);
		int type = GELF_ST_TYPE(s.st_info);
		if (!name || !name[0] || shndx == SHN_UNDEF || shndx == SHN_ABS)
			continue;
		if (type != STT_FUNC && type != STT_GNU_IFUNC && (type != STT_NOTYPE || !s.st_size))
			continue;
		int bind = GELF_ST_BIND(s.st_info);
		img->funcs[img->n_funcs++] = (struct gt_sym_func){
			.lo = addr, .hi = addr + s.st_size, .raw = name,
			.rank = bind == STB_GLOBAL ? 3 : bind == STB_WEAK ? 2 : 1,
		};
	}
	qsort(img->funcs, img->n_funcs, sizeof(*img->funcs), compare_funcs);
	for (size_t i = 0; i < img->n_funcs; i++) {
		struct gt_sym_func *f = &img->funcs[i];
		if (f->hi > f->lo)
			continue;
		size_t next = i + 1;
		while (next < img->n_funcs && img->funcs[next].lo == f->lo)
			next++;
		f->hi = next < img->n_funcs ? img->funcs[next].lo : f->lo + 1;
		f->rank = 0; /* a sized alias at the same address wins */
	}
	qsort(img->funcs, img->n_funcs, sizeof(*img->funcs), compare_funcs);
}

/* The function symbol holding addr, or NULL. */
static struct gt_sym_func *function_at(struct gt_sym_image *img, uint64_t addr)
{
	ptrdiff_t i = gt_sym_find_range(img->funcs, img->n_funcs, sizeof(*img->funcs), addr, 16);
	return i < 0 ? NULL : &img->funcs[i];
}

/* Any section or segment reaching past the end of the file: the file was cut short. */
static bool elf_truncated(Elf *elf, uint64_t file_size)
{
	size_t n;
	GElf_Ehdr ehdr;
	if (!gelf_getehdr(elf, &ehdr) || elf_getshdrnum(elf, &n) != 0 ||
	    ehdr.e_shoff + (uint64_t)n * ehdr.e_shentsize > file_size ||
	    ehdr.e_phoff + (uint64_t)ehdr.e_phnum * ehdr.e_phentsize > file_size ||
	    elf_getphdrnum(elf, &n) != 0)
		return true;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr))
			return true;
		if (shdr.sh_type != SHT_NOBITS && shdr.sh_offset + shdr.sh_size > file_size)
			return true;
	}
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr phdr;
		if (!gelf_getphdr(elf, (int)i, &phdr))
			return true;
		if (phdr.p_offset + phdr.p_filesz > file_size)
			return true;
	}
	return false;
}

static bool elf_has_section(Elf *elf, const char *name)
{
	size_t shstrndx;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return false;
	for (Elf_Scn *scn = elf_nextscn(elf, NULL); scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr shdr;
		const char *sname = gelf_getshdr(scn, &shdr) ? elf_strptr(elf, shstrndx, shdr.sh_name)
							     : NULL;
		if (sname && strcmp(sname, name) == 0)
			return true;
	}
	return false;
}

/* A module's file missing at its recorded path (a capture converted on another machine, or
 * of another arch, with its binaries copied along): the file of the same name in the
 * caller's debug directories, the first of sym->debuginfo_path's entries up to its empty
 * one; -1 when none has it.  Its build-id is checked as any file's. */
static int open_moved(const struct gt_symbolizer *sym, const struct gt_sym_image *img)
{
	for (const char *dir = sym->debuginfo_path, *end; *dir != ':' && *dir; dir = end + 1) {
		if ((end = strchr(dir, ':')) == NULL)
			return -1;
		char path[PATH_MAX];
		int len = snprintf(path, sizeof path, "%.*s/%s", (int)(end - dir), dir,
				   img->base_name);
		int fd = len > 0 && (size_t)len < sizeof path
				 ? open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK) : -1;
		if (fd >= 0)
			return fd;
	}
	return -1;
}

bool gt_sym_image_open(struct gt_symbolizer *sym, struct gt_sym_image *img)
{
	const bool vdso = img->flags & GT_SYM_VDSO;
	int fd = -1;
	if (vdso) {
		/* Without a recorded build-id the running kernel's vDSO may be another one:
		 * frames then read [vdso]+0xoff, which is not a problem worth a warning. */
		if (img->build_id_len == 0 || (fd = gt_sym_vdso_memfd()) < 0) {
			img->state = GT_IMG_FAILED;
			return false;
		}
	} else {
		/* O_NONBLOCK: a FIFO in the file's place must not wait for a writer; what is
		 * not a regular file is refused on the descriptor itself, so nothing can swap
		 * the file between the check and the use. */
		fd = open(img->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
		int open_errno = errno;
		if (fd < 0 && open_errno == ENOENT)
			fd = open_moved(sym, img);
		if (fd < 0) {
			gt_sym_warn(sym, img->path, GT_SYM_CANNOT_OPEN, strerror(open_errno),
				    img->base_name);
			return fail(sym, img);
		}
		struct stat st;
		if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
			close(fd);
			gt_sym_warn(sym, img->path, GT_SYM_NOT_A_FILE, NULL, img->base_name);
			return fail(sym, img);
		}
	}

	struct stat file_st;
	off_t file_size = fstat(fd, &file_st) == 0 ? file_st.st_size : -1;

	img->dwfl = dwfl_begin(&sym->callbacks);
	if (!img->dwfl) {
		close(fd);
		gt_sym_warn(sym, img->path, GT_SYM_NO_MEMORY, dwfl_errmsg(-1), img->base_name);
		return fail(sym, img);
	}
	dwfl_report_begin(img->dwfl);
	/* On success libdwfl owns fd (closed by dwfl_end); on failure it is still ours. */
	img->mod = dwfl_report_elf(img->dwfl, img->base_name, img->path, fd, img->bias, false);
	dwfl_report_end(img->dwfl, NULL, NULL);
	if (!img->mod) {
		close(fd);
		if (!vdso)
			gt_sym_warn(sym, img->path, GT_SYM_NOT_ELF, dwfl_errmsg(-1), img->base_name);
		return fail(sym, img);
	}

	const unsigned char *bits = NULL;
	GElf_Addr bits_vaddr;
	int len = dwfl_module_build_id(img->mod, &bits, &bits_vaddr);
	if (img->build_id_len > 0 &&
	    (len != (int)img->build_id_len || memcmp(bits, img->build_id, img->build_id_len) != 0)) {
		char want[2 * GT_SYM_BUILD_ID_MAX + 1], have[2 * GT_SYM_BUILD_ID_MAX + 1];
		char detail[sizeof(want) + sizeof(have) + 32];
		format_build_id(img->build_id, img->build_id_len, want, sizeof(want));
		format_build_id(bits, len > 0 ? (size_t)len : 0, have, sizeof(have));
		snprintf(detail, sizeof(detail), "build-id %s, recorded %s", have[0] ? have : "none",
			 want);
		if (!vdso)
			gt_sym_warn(sym, img->path, GT_SYM_CHANGED, detail, img->base_name);
		return fail(sym, img);
	}

	GElf_Addr elf_bias;
	Elf *elf = dwfl_module_getelf(img->mod, &elf_bias);
	if (!elf || (file_size >= 0 && elf_truncated(elf, (uint64_t)file_size))) {
		if (!vdso)
			gt_sym_warn(sym, img->path, GT_SYM_TRUNCATED, NULL, img->base_name);
		return fail(sym, img);
	}

	Dwarf_Addr dw_bias;
	img->has_dwarf = dwfl_module_getdwarf(img->mod, &dw_bias) != NULL;
	if (!img->has_dwarf) {
		/* No DWARF at all is normal (a stripped binary): symbol names only.  Anything
		 * else means broken debug info; the symbol table is still used. */
		const char *why = dwfl_errmsg(-1);
		const char *debug_file = NULL;
		dwfl_module_info(img->mod, NULL, NULL, NULL, NULL, NULL, NULL, &debug_file);
		if (debug_file || elf_has_section(elf, ".debug_info"))
			gt_sym_warn(sym, img->path, GT_SYM_DEBUG_UNUSABLE, why, img->base_name);
	}
	index_functions(img);
	img->state = GT_IMG_OK;
	return true;
}

void gt_sym_image_close(struct gt_symbolizer *sym, struct gt_sym_image *img)
{
	memset(sym->file_cache, 0, sizeof(sym->file_cache));
	free(img->funcs);
	img->funcs = NULL;
	img->n_funcs = 0;
	for (size_t i = 0; i < img->n_cus; i++)
		cu_index_free(&img->cus[i]);
	free(img->cus);
	img->cus = NULL;
	img->n_cus = img->cap_cus = 0;
	free(img->unit_ranges);
	img->unit_ranges = NULL;
	memset(&img->eh, 0, sizeof img->eh);
	img->n_unit_ranges = 0;
	img->unit_ranges_read = false;
	gt_sym_variables_free(img);
	gt_u64map_free(&img->cu_by_offset);
	if (img->dwfl)
		dwfl_end(img->dwfl);
	img->dwfl = NULL;
	img->mod = NULL;
}

/* ---- address -> frames --------------------------------------------------------------- */

/* Text from debug info must be printable UTF-8: anything else means the section holds
 * garbage, and its names would be wrong ones. */
static bool plausible_text(const char *p)
{
	const unsigned char *u = (const unsigned char *)p;
	if (!*u)
		return false;
	while (*u) {
		unsigned c = *u++;
		if (c < 0x20 || c == 0x7f)
			return false;
		if (c < 0x80)
			continue;
		int more = (c & 0xe0) == 0xc0 ? 1 : (c & 0xf0) == 0xe0 ? 2 : (c & 0xf8) == 0xf0 ? 3 : -1;
		if (more < 0)
			return false;
		while (more-- > 0)
			if ((*u++ & 0xc0) != 0x80)
				return false;
	}
	return true;
}

/* What the DWARF walk found for one address, innermost first. */
struct inline_chain {
	const char *names[GT_SYM_INLINE_MAX + 1];
	const char *files[GT_SYM_INLINE_MAX + 1];
	uint32_t lines[GT_SYM_INLINE_MAX + 1];
	size_t depth;
	bool corrupt;
};

static const char *checked(struct gt_symbolizer *sym, struct inline_chain *c, const char *text,
			   bool is_function)
{
	if (!text)
		return NULL;
	if (!plausible_text(text)) {
		c->corrupt = true;
		return NULL;
	}
	return is_function ? gt_sym_function_name(sym, text) : gt_sym_intern(&sym->strings, text);
}

/* A source file as the line table names it, under the unit's compilation directory when
 * relative (a build system's "../src/x.c"), so that it names one file wherever it is read. */
static const char *source_path(struct gt_symbolizer *sym, struct inline_chain *c,
			       const char *name, const char *comp_dir)
{
	if (!name || name[0] == '/' || !comp_dir || comp_dir[0] != '/')
		return checked(sym, c, name, false);
	char joined[4096];
	int n = snprintf(joined, sizeof(joined), "%s/%s", comp_dir, name);
	return checked(sym, c, n > 0 && (size_t)n < sizeof(joined) ? joined : name, false);
}

static bool is_cplusplus(Dwarf_Die *die)
{
	Dwarf_Die cu;
	if (!dwarf_diecu(die, &cu, NULL, NULL))
		return false;
	int lang = dwarf_srclang(&cu);
	return lang == DW_LANG_C_plus_plus || lang == DW_LANG_C_plus_plus_03 ||
	       lang == DW_LANG_C_plus_plus_11 || lang == DW_LANG_C_plus_plus_14;
}

/* A C++ name without a linkage name (GCC gives none to template instances inlined from
 * headers, e.g. std::for_each<...>): qualified with the namespaces and classes around its
 * declaration. */
static const char *qualified_name(struct gt_symbolizer *sym, struct inline_chain *c,
				  Dwarf_Die *die, const char *plain)
{
	Dwarf_Attribute attr;
	Dwarf_Die decl = *die, next;
	for (int hops = 0; hops < 8; hops++) {
		if (dwarf_formref_die(dwarf_attr(&decl, DW_AT_abstract_origin, &attr), &next) ||
		    dwarf_formref_die(dwarf_attr(&decl, DW_AT_specification, &attr), &next))
			decl = next;
		else
			break;
	}
	Dwarf_Die *scopes = NULL;
	int n = dwarf_getscopes_die(&decl, &scopes);
	char buf[4096];
	size_t at = 0;
	for (int i = n - 1; i >= 1; i--) {
		int tag = dwarf_tag(&scopes[i]);
		if (tag != DW_TAG_namespace && tag != DW_TAG_class_type &&
		    tag != DW_TAG_structure_type && tag != DW_TAG_union_type)
			continue;
		const char *scope_name = dwarf_diename(&scopes[i]);
		if (!scope_name && tag == DW_TAG_namespace)
			scope_name = "(anonymous namespace)";
		if (!scope_name || !plausible_text(scope_name))
			continue;
		int w = snprintf(buf + at, sizeof(buf) - at, "%s::", scope_name);
		if (w < 0 || (size_t)w >= sizeof(buf) - at)
			break;
		at += (size_t)w;
	}
	free(scopes);
	if (at == 0)
		return checked(sym, c, plain, true);
	snprintf(buf + at, sizeof(buf) - at, "%s", plain);
	return checked(sym, c, buf, true);
}

static const char *die_function_name(struct gt_symbolizer *sym, struct inline_chain *c,
				     Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!linkage)
		linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	if (linkage && linkage[0] == '_' && (linkage[1] == 'Z' || linkage[1] == 'R')) {
		const char *name = checked(sym, c, linkage, true);
		if (name && strcmp(name, linkage) != 0)
			return name;
	}
	const char *plain = dwarf_diename(die);
	if (plain && plain[0]) {
		if (!linkage && plausible_text(plain) && is_cplusplus(die))
			return qualified_name(sym, c, die, plain);
		return checked(sym, c, plain, true);
	}
	return linkage ? checked(sym, c, linkage, true) : NULL;
}

/* The caller's position of an inlined call: DW_AT_call_file / DW_AT_call_line. */
static void inlined_call_site(struct gt_symbolizer *sym, struct inline_chain *c, Dwarf_Die *cu,
			      Dwarf_Die *inlined, const char **file, uint32_t *line)
{
	Dwarf_Attribute attr;
	Dwarf_Word call_file = 0, call_line = 0;
	*line = 0;
	if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_line, &attr), &call_line) == 0)
		*line = (uint32_t)call_line;
	*file = NULL;
	if (dwarf_formudata(dwarf_attr(inlined, DW_AT_call_file, &attr), &call_file) == 0) {
		Dwarf_Files *files;
		size_t n_files;
		if (dwarf_getsrcfiles(cu, &files, &n_files) == 0 && call_file < n_files)
			*file = source_path(sym, c, dwarf_filesrc(files, call_file, NULL, NULL),
					    dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &attr)));
	}
}

/* ---- a compilation unit's functions ---- */

#define GT_SYM_WALK_DEPTH_MAX 64  /* guards recursion on corrupt DWARF */

static int compare_subprograms(const void *a, const void *b)
{
	const struct gt_sym_subprogram *x = a, *y = b;
	return (x->lo > y->lo) - (x->lo < y->lo);
}

static void collect_subprograms(Dwarf_Die *parent, struct gt_sym_cu_index *ix, size_t *cap,
				int depth)
{
	Dwarf_Die child;
	if (depth > GT_SYM_WALK_DEPTH_MAX || dwarf_child(parent, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);
		if (tag == DW_TAG_subprogram) {
			Dwarf_Addr base, start, end;
			ptrdiff_t off = 0;
			while ((off = dwarf_ranges(&child, off, &base, &start, &end)) > 0) {
				if (end <= start)
					continue;
				if (!gt_grow(&ix->ranges, cap, ix->n + 1, sizeof(*ix->ranges)))
					return;
				ix->ranges[ix->n++] =
					(struct gt_sym_subprogram){ .lo = start, .hi = end, .die = child };
			}
		} else if (tag == DW_TAG_namespace || tag == DW_TAG_class_type ||
			   tag == DW_TAG_structure_type || tag == DW_TAG_union_type ||
			   tag == DW_TAG_module) {
			/* C++ member functions may be defined inside their scopes. */
			collect_subprograms(&child, ix, cap, depth + 1);
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

static struct gt_sym_cu_index *cu_index(struct gt_sym_image *img, Dwarf_Die *cu)
{
	uint64_t key = dwarf_dieoffset(cu);
	const uint64_t *at = gt_u64map_find(&img->cu_by_offset, key);
	if (at)
		return &img->cus[*at];
	if (!gt_grow(&img->cus, &img->cap_cus, img->n_cus + 1, sizeof(*img->cus)))
		return NULL;
	struct gt_sym_cu_index *ix = &img->cus[img->n_cus];
	memset(ix, 0, sizeof(*ix));
	size_t cap = 0;
	collect_subprograms(cu, ix, &cap, 0);
	if (ix->n > 1)
		qsort(ix->ranges, ix->n, sizeof(*ix->ranges), compare_subprograms);
	bool found;
	uint64_t *slot = gt_u64map_slot(&img->cu_by_offset, key, &found);
	if (!slot) {
		free(ix->ranges);
		return NULL;
	}
	*slot = img->n_cus;
	return &img->cus[img->n_cus++];
}

static void cu_index_free(struct gt_sym_cu_index *ix)
{
	for (size_t i = 0; i < ix->n; i++) {
		struct gt_sym_function_scopes *fs = ix->ranges[i].inlined;
		if (!fs)
			continue;
		free(fs->scopes);
		free(fs->ranges);
		free(fs);
	}
	free(ix->ranges);
}

static struct gt_sym_subprogram *subprogram_at(struct gt_sym_cu_index *ix, uint64_t addr)
{
	ptrdiff_t i = gt_sym_find_range(ix->ranges, ix->n, sizeof(*ix->ranges), addr, 8);
	return i < 0 ? NULL : &ix->ranges[i];
}

/* ---- one function's inlined bodies ---- */

static bool has_pc_attributes(Dwarf_Die *die)
{
	return dwarf_hasattr(die, DW_AT_low_pc) || dwarf_hasattr(die, DW_AT_ranges);
}

/* Records the inlined bodies and nested functions below scope, through lexical blocks
 * (also those without addresses of their own). */
static void collect_scopes(struct gt_sym_function_scopes *fs, Dwarf_Die *scope, int32_t parent,
			   uint32_t depth)
{
	Dwarf_Die child;
	if (depth > GT_SYM_WALK_DEPTH_MAX || dwarf_child(scope, &child) != 0)
		return;
	do {
		int tag = dwarf_tag(&child);
		if (tag == DW_TAG_lexical_block || tag == DW_TAG_try_block ||
		    tag == DW_TAG_catch_block) {
			collect_scopes(fs, &child, parent, depth + 1);
			continue;
		}
		if (tag != DW_TAG_inlined_subroutine && tag != DW_TAG_subprogram)
			continue;
		if (!has_pc_attributes(&child))
			continue; /* a declaration, or an inlined body optimised away */
		if (!gt_grow(&fs->scopes, &fs->cap_scopes, fs->n_scopes + 1, sizeof(*fs->scopes)))
			return;
		int32_t index = (int32_t)fs->n_scopes++;
		fs->scopes[index] = (struct gt_sym_scope){
			.die = child, .parent = parent, .is_function = tag == DW_TAG_subprogram,
		};
		Dwarf_Addr base, start, end;
		ptrdiff_t off = 0;
		while ((off = dwarf_ranges(&child, off, &base, &start, &end)) > 0) {
			if (end <= start)
				continue;
			if (!gt_grow(&fs->ranges, &fs->cap_ranges, fs->n_ranges + 1, sizeof(*fs->ranges)))
				return;
			fs->ranges[fs->n_ranges++] = (struct gt_sym_scope_range){
				.lo = start, .hi = end, .scope = (uint32_t)index, .depth = depth,
			};
		}
		collect_scopes(fs, &child, index, depth + 1);
	} while (dwarf_siblingof(&child, &child) == 0);
}

static struct gt_sym_function_scopes *function_scopes(struct gt_sym_subprogram *sp)
{
	if (!sp->inlined) {
		sp->inlined = calloc(1, sizeof(*sp->inlined));
		if (sp->inlined)
			collect_scopes(sp->inlined, &sp->die, -1, 0);
	}
	return sp->inlined;
}

/* The innermost inlined body (or nested function) holding addr: -1 for none. */
static int32_t innermost_scope(const struct gt_sym_function_scopes *fs, uint64_t addr)
{
	int32_t best = -1;
	uint32_t best_depth = 0;
	for (size_t i = 0; i < fs->n_ranges; i++) {
		const struct gt_sym_scope_range *r = &fs->ranges[i];
		if (r->lo <= addr && addr < r->hi && (best < 0 || r->depth > best_depth)) {
			best = (int32_t)r->scope;
			best_depth = r->depth;
		}
	}
	return best;
}

static void name_scope(struct gt_symbolizer *sym, struct inline_chain *c, Dwarf_Die *cu,
		       struct gt_sym_scope *scope)
{
	if (scope->named)
		return;
	scope->name = die_function_name(sym, c, &scope->die);
	if (!scope->is_function)
		inlined_call_site(sym, c, cu, &scope->die, &scope->call_file, &scope->call_line);
	scope->named = true;
}

static int unit_range_cmp(const void *a, const void *b)
{
	const struct gt_sym_unit_range *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

/* Every unit's address ranges (dwarf_ranges reads DW_AT_ranges or low_pc/high_pc). */
static void read_unit_ranges(struct gt_sym_image *img)
{
	img->unit_ranges_read = true;
	size_t cap = 0;
	Dwarf_Addr bias;
	for (Dwarf_Die *cu = NULL; (cu = dwfl_module_nextcu(img->mod, cu, &bias));) {
		Dwarf_Addr base, lo, hi;
		for (ptrdiff_t off = 0; (off = dwarf_ranges(cu, off, &base, &lo, &hi)) > 0;) {
			if (lo >= hi)
				continue;
			if (!gt_grow(&img->unit_ranges, &cap, img->n_unit_ranges + 1,
				     sizeof *img->unit_ranges))
				return;
			img->unit_ranges[img->n_unit_ranges++] =
				(struct gt_sym_unit_range){lo, hi, dwarf_dieoffset(cu)};
		}
	}
	if (img->n_unit_ranges)
		qsort(img->unit_ranges, img->n_unit_ranges, sizeof *img->unit_ranges, unit_range_cmp);
}

/* The unit holding addr: libdw's lookup (through .debug_aranges), else the units' own
 * ranges; NULL when none holds it. */
static Dwarf_Die *unit_at(struct gt_sym_image *img, uint64_t addr, Dwarf_Addr *bias,
			  Dwarf_Die *storage)
{
	Dwarf_Die *cu = dwfl_module_addrdie(img->mod, addr, bias);
	if (cu)
		return cu;
	Dwarf *dw = dwfl_module_getdwarf(img->mod, bias);
	if (!dw)
		return NULL;
	if (!img->unit_ranges_read)
		read_unit_ranges(img);
	uint64_t a = addr - *bias;
	size_t lo = 0, hi = img->n_unit_ranges;
	while (lo < hi) {   /* the last range starting at or below a */
		size_t mid = lo + (hi - lo) / 2;
		if (img->unit_ranges[mid].lo <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo || a >= img->unit_ranges[lo - 1].hi)
		return NULL;
	return dwarf_offdie(dw, img->unit_ranges[lo - 1].unit, storage);
}

/* The source line of addr in its unit cu, when libdw's module lookup found none. */
static void unit_line(struct gt_symbolizer *sym, struct inline_chain *c, Dwarf_Die *cu,
		      uint64_t dw_addr, const char **line_file, uint32_t *line_no)
{
	Dwarf_Line *l = dwarf_getsrc_die(cu, dw_addr);
	int lineno = 0;
	const char *raw = l ? dwarf_linesrc(l, NULL, NULL) : NULL;
	if (!raw || dwarf_lineno(l, &lineno) != 0)
		return;
	Dwarf_Attribute at;
	*line_file = source_path(sym, c, raw, dwarf_formstring(dwarf_attr(cu, DW_AT_comp_dir, &at)));
	*line_no = *line_file && lineno > 0 ? (uint32_t)lineno : 0;
}

/* The DWARF part: source line of addr and the chain of inlined bodies around it, from
 * the unit's function index and the function's own index of inlined bodies. */
static void dwarf_chain(struct gt_symbolizer *sym, struct gt_sym_image *img, uint64_t addr,
			bool inlines, struct inline_chain *c, const char **line_file,
			uint32_t *line_no)
{
	Dwfl_Line *dl = dwfl_module_getsrc(img->mod, addr);
	if (dl) {
		int lineno = 0;
		const char *raw = dwfl_lineinfo(dl, NULL, &lineno, NULL, NULL, NULL);
		size_t slot = ((uintptr_t)raw >> 3) % 256;
		if (raw && sym->file_cache[slot].raw == raw) {
			*line_file = sym->file_cache[slot].interned;
		} else {
			*line_file = source_path(sym, c, raw, dwfl_line_comp_dir(dl));
			if (*line_file) {
				sym->file_cache[slot].raw = raw;
				sym->file_cache[slot].interned = *line_file;
			}
		}
		*line_no = *line_file && lineno > 0 ? (uint32_t)lineno : 0;
	}

	Dwarf_Addr cu_bias;
	Dwarf_Die unit;
	Dwarf_Die *cu = unit_at(img, addr, &cu_bias, &unit);
	if (cu && !dl)
		unit_line(sym, c, cu, addr - cu_bias, line_file, line_no);
	struct gt_sym_cu_index *ix = cu ? cu_index(img, cu) : NULL;
	struct gt_sym_subprogram *sp = ix ? subprogram_at(ix, addr - cu_bias) : NULL;
	if (!sp)
		return;
	if (!sp->name)
		sp->name = die_function_name(sym, c, &sp->die);
	struct gt_sym_function_scopes *fs = function_scopes(sp);
	int32_t at = fs ? innermost_scope(fs, addr - cu_bias) : -1;

	const char *cur_file = *line_file;
	uint32_t cur_line = *line_no;
	if (!inlines) {
		/* A function's entry: the innermost physical function, no inlined bodies. */
		while (at >= 0 && !fs->scopes[at].is_function)
			at = fs->scopes[at].parent;
	}
	for (; at >= 0 && c->depth < GT_SYM_INLINE_MAX; at = fs->scopes[at].parent) {
		struct gt_sym_scope *scope = &fs->scopes[at];
		name_scope(sym, c, cu, scope);
		c->names[c->depth] = scope->name;
		c->files[c->depth] = cur_file;
		c->lines[c->depth] = cur_line;
		c->depth++;
		if (scope->is_function)
			return;
		cur_file = scope->call_file;
		cur_line = scope->call_line;
	}
	c->names[c->depth] = sp->name;
	c->files[c->depth] = cur_file;
	c->lines[c->depth] = cur_line;
	c->depth++;
}

static size_t push(struct gt_symbolizer *sym, const struct gt_sym_image *img, uint64_t pc,
		   const char *func, const char *file, uint32_t line, uint32_t flags)
{
	struct gt_sym_frame fr = {
		.f = { .pc = pc, .func = func, .file = file, .line = line },
		.img = img,
		.flags = flags,
	};
	if (func && gt_sym_is_startup_function(func))
		fr.flags |= GT_FR_STARTUP;
	return gt_sym_push_frame(sym, &fr) == 0;
}

size_t gt_sym_image_resolve(struct gt_symbolizer *sym, struct gt_sym_image *img,
			    uint64_t addr, bool inlines)
{
	struct inline_chain c;
	const char *line_file = NULL;
	uint32_t line_no = 0;
	c.depth = 0;
	c.corrupt = false;
	if (img->has_dwarf) {
		dwarf_chain(sym, img, addr, inlines, &c, &line_file, &line_no);
		if (c.corrupt) {
			/* Garbage in the debug info: none of it is trusted from now on, and
			 * frames already cached from it are dropped. */
			gt_sym_warn(sym, img->path, GT_SYM_DEBUG_CORRUPT, NULL, img->base_name);
			img->has_dwarf = false;
			gt_u64map_clear(&sym->stack_cache);
			gt_u64map_clear(&sym->function_cache);
			c.depth = 0;
			line_file = NULL;
			line_no = 0;
		}
	}

	/* The concrete function's symbol (.symtab, else .dynsym, as libdwfl picks): the name when DWARF has
	 * none, and the better one for C++ when it is mangled (GCC gives lambdas and static
	 * functions no DW_AT_linkage_name, so DWARF alone would say "operator()"). */
	if (c.depth == 0) {
		c.names[0] = NULL;
		c.files[0] = line_file;
		c.lines[0] = line_no;
		c.depth = 1;
	}
	const char **physical = &c.names[c.depth - 1];
	struct gt_sym_func *fn = function_at(img, addr);
	const char *symname = fn ? fn->raw : NULL;
	if (symname && !plausible_text(symname))
		symname = NULL;
	if (symname && (!*physical || (symname[0] == '_' && symname[1] == 'Z'))) {
		const char *name = fn && fn->name ? fn->name : gt_sym_function_name(sym, symname);
		if (fn)
			fn->name = name;
		if (!*physical || strcmp(name, symname) != 0)
			*physical = name;
	}

	size_t pushed = 0;
	for (size_t i = 0; i < c.depth; i++) {
		uint64_t inline_level = c.depth - 1 - i;
		uint64_t pc = addr | (inline_level << GT_SYM_INLINE_SHIFT);
		const char *func = c.names[i];
		uint32_t flags = func ? GT_FR_RESOLVED : 0;
		if (!func) {
			/* named by its function's start, so that its addresses are one function */
			uint64_t start = addr;
			gt_sym_unwind_function_start(img, addr, &start);
			char buf[256];
			snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, img->base_name, start - img->bias);
			func = gt_sym_intern(&sym->strings, buf);
		}
		pushed += push(sym, img, pc, func, c.files[i] ? c.files[i] : img->path,
			       c.files[i] ? c.lines[i] : 0, flags);
	}
	return pushed;
}
