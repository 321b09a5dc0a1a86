/* One module's file through libdwfl: open it as a dead process's module at its recorded
 * bias, check it against the capture, and turn addresses into frames. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "symbolizer_private.h"

void gt_sym_warnf(struct gt_symbolizer *sym, const char *path, const char *fmt, ...)
{
	/* One warning per module path, however often it is mapped or looked up. */
	for (size_t i = 0; i < sym->n_warned; i++)
		if (sym->warned_paths[i] == path)
			return;
	if (gt_sym_reserve((void **)&sym->warned_paths, sym->n_warned, &sym->cap_warned,
			   sizeof(*sym->warned_paths), 8) < 0)
		return;
	sym->warned_paths[sym->n_warned++] = path;

	char line[1024];
	int n = snprintf(line, sizeof(line), "symbolizer: %s: ", path);
	if (n < 0 || (size_t)n >= sizeof(line))
		n = 0;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line + n, sizeof(line) - (size_t)n, fmt, ap);
	va_end(ap);
	if (sym->warn)
		sym->warn(sym->warn_ctx, line);
	else
		fprintf(stderr, "gotrace: %s\n", line);
}

int gt_sym_push_frame(struct gt_symbolizer *sym, const struct gt_sym_frame *fr)
{
	if (gt_sym_reserve((void **)&sym->frames, sym->n_frames, &sym->cap_frames,
			   sizeof(*sym->frames), 4096) < 0)
		return -1;
	sym->frames[sym->n_frames++] = *fr;
	return 0;
}

static bool fail(struct gt_symbolizer *sym, struct gt_sym_image *img)
{
	img->state = GT_IMG_FAILED;
	sym->stats.modules_failed++;
	gt_sym_image_close(img);
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
static int vdso_memfd(void)
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

bool gt_sym_image_open(struct gt_symbolizer *sym, struct gt_sym_image *img)
{
	const bool vdso = img->flags & GT_SYM_VDSO;
	int fd = -1;
	if (vdso) {
		/* Without a recorded build-id the running kernel's vDSO may be another one:
		 * frames then read [vdso]+0xoff, which is not a problem worth a warning. */
		if (img->build_id_len == 0 || (fd = vdso_memfd()) < 0) {
			img->state = GT_IMG_FAILED;
			return false;
		}
	} else {
		struct stat st;
		if (stat(img->path, &st) != 0) {
			gt_sym_warnf(sym, img->path, "cannot open (%s); its frames read %s+0xoff",
				     strerror(errno), img->base_name);
			return fail(sym, img);
		}
		if (!S_ISREG(st.st_mode)) {
			gt_sym_warnf(sym, img->path, "not a regular file; its frames read %s+0xoff",
				     img->base_name);
			return fail(sym, img);
		}
		fd = open(img->path, O_RDONLY | O_CLOEXEC);
		if (fd < 0) {
			gt_sym_warnf(sym, img->path, "cannot open (%s); its frames read %s+0xoff",
				     strerror(errno), img->base_name);
			return fail(sym, img);
		}
	}

	img->dwfl = dwfl_begin(&sym->callbacks);
	if (!img->dwfl) {
		close(fd);
		gt_sym_warnf(sym, img->path, "libdwfl: %s", dwfl_errmsg(-1));
		return fail(sym, img);
	}
	dwfl_report_begin(img->dwfl);
	/* On success libdwfl owns fd (closed by dwfl_end); on failure it is still ours. */
	img->mod = dwfl_report_elf(img->dwfl, img->base_name, img->path, fd, img->bias, false);
	dwfl_report_end(img->dwfl, NULL, NULL);
	if (!img->mod) {
		close(fd);
		if (!vdso)
			gt_sym_warnf(sym, img->path, "not a usable ELF file (%s); its frames read %s+0xoff",
				     dwfl_errmsg(-1), img->base_name);
		return fail(sym, img);
	}

	const unsigned char *bits = NULL;
	GElf_Addr bits_vaddr;
	int len = dwfl_module_build_id(img->mod, &bits, &bits_vaddr);
	if (img->build_id_len > 0 &&
	    (len != (int)img->build_id_len || memcmp(bits, img->build_id, img->build_id_len) != 0)) {
		char want[2 * GT_SYM_BUILD_ID_MAX + 1], have[2 * GT_SYM_BUILD_ID_MAX + 1];
		format_build_id(img->build_id, img->build_id_len, want, sizeof(want));
		format_build_id(bits, len > 0 ? (size_t)len : 0, have, sizeof(have));
		if (!vdso)
			gt_sym_warnf(sym, img->path,
				     "changed since the capture (build-id %s, recorded %s); its frames read %s+0xoff",
				     have[0] ? have : "none", want, img->base_name);
		return fail(sym, img);
	}

	Dwarf_Addr dw_bias;
	img->has_dwarf = dwfl_module_getdwarf(img->mod, &dw_bias) != NULL;
	img->state = GT_IMG_OK;
	return true;
}

void gt_sym_image_close(struct gt_sym_image *img)
{
	if (img->dwfl)
		dwfl_end(img->dwfl);
	img->dwfl = NULL;
	img->mod = NULL;
}

/* ---- address -> frames --------------------------------------------------------------- */

static const char *die_function_name(struct gt_symbolizer *sym, Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	const char *linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_linkage_name, &attr));
	if (!linkage)
		linkage = dwarf_formstring(dwarf_attr_integrate(die, DW_AT_MIPS_linkage_name, &attr));
	if (linkage && linkage[0] == '_' && linkage[1] == 'Z') {
		const char *name = gt_sym_function_name(sym, linkage);
		if (strcmp(name, linkage) != 0)
			return name;
	}
	const char *plain = dwarf_diename(die);
	if (plain)
		return gt_sym_function_name(sym, plain);
	return linkage ? gt_sym_function_name(sym, linkage) : NULL;
}

/* The caller's position of an inlined call: DW_AT_call_file / DW_AT_call_line. */
static void inlined_call_site(struct gt_symbolizer *sym, Dwarf_Die *cu, Dwarf_Die *inlined,
			      const char **file, uint32_t *line)
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
		if (dwarf_getsrcfiles(cu, &files, &n_files) == 0 && call_file < n_files) {
			const char *name = dwarf_filesrc(files, call_file, NULL, NULL);
			if (name)
				*file = gt_sym_intern(&sym->strings, name);
		}
	}
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
	const char *line_file = NULL;
	uint32_t line_no = 0;
	Dwfl_Line *dl = img->has_dwarf ? dwfl_module_getsrc(img->mod, addr) : NULL;
	if (dl) {
		int lineno = 0;
		const char *src = dwfl_lineinfo(dl, NULL, &lineno, NULL, NULL, NULL);
		if (src) {
			line_file = gt_sym_intern(&sym->strings, src);
			line_no = lineno > 0 ? (uint32_t)lineno : 0;
		}
	}

	/* Inline chain from the DWARF scopes: innermost inlined body outwards to the
	 * concrete function.  Each inlined frame's caller line is its DW_AT_call_line. */
	const char *names[GT_SYM_INLINE_MAX + 1];
	const char *files[GT_SYM_INLINE_MAX + 1];
	uint32_t lines[GT_SYM_INLINE_MAX + 1];
	size_t depth = 0;
	Dwarf_Addr cu_bias;
	Dwarf_Die *cu = img->has_dwarf ? dwfl_module_addrdie(img->mod, addr, &cu_bias) : NULL;
	if (cu) {
		Dwarf_Die *scopes = NULL;
		int n = dwarf_getscopes(cu, addr - cu_bias, &scopes);
		const char *cur_file = line_file;
		uint32_t cur_line = line_no;
		for (int i = 0; i < n && depth <= GT_SYM_INLINE_MAX; i++) {
			int tag = dwarf_tag(&scopes[i]);
			if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
				continue;
			names[depth] = die_function_name(sym, &scopes[i]);
			files[depth] = cur_file;
			lines[depth] = cur_line;
			depth++;
			if (tag == DW_TAG_subprogram || !inlines)
				break;
			inlined_call_site(sym, cu, &scopes[i], &cur_file, &cur_line);
		}
		free(scopes);
	}
	if (!inlines && depth > 0) {
		/* A function's entry: the concrete function's name, not an inlined body's. */
		names[0] = names[depth - 1];
		depth = 1;
	}

	if (depth == 0 || !names[depth - 1]) {
		/* No DWARF function: the symbol table (.symtab, else .dynsym). */
		GElf_Off off;
		GElf_Sym s;
		const char *symname = dwfl_module_addrinfo(img->mod, addr, &off, &s, NULL, NULL, NULL);
		if (depth == 0) {
			names[0] = NULL;
			files[0] = line_file;
			lines[0] = line_no;
			depth = 1;
		}
		if (symname)
			names[depth - 1] = gt_sym_function_name(sym, symname);
	}

	size_t pushed = 0;
	for (size_t i = 0; i < depth; i++) {
		uint64_t inline_level = depth - 1 - i;
		uint64_t pc = addr | (inline_level << GT_SYM_INLINE_SHIFT);
		const char *func = names[i];
		uint32_t flags = func ? GT_FR_RESOLVED : 0;
		if (!func) {
			char buf[256];
			snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, img->base_name, addr - img->bias);
			func = gt_sym_intern(&sym->strings, buf);
		}
		pushed += push(sym, img, pc, func, files[i] ? files[i] : img->path, files[i] ? lines[i] : 0,
			       flags);
	}
	return pushed;
}
