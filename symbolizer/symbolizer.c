/* symbolizer: the module map from the capture, the PC caches, and a stack's trimming. */
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "symbolizer_private.h"

/* Modules are only ever reported with their files (dwfl_report_elf), so libdwfl never has
 * to find one; refusing here keeps it from looking anywhere else (nor on the network). */
static int find_no_elf(Dwfl_Module *mod, void **userdata, const char *modname,
		       Dwarf_Addr base, char **file_name, Elf **elfp)
{
	(void)mod, (void)userdata, (void)modname, (void)base, (void)file_name, (void)elfp;
	return -1;
}

/* elfutils' search path: the caller's directories (a relative one made absolute from the
 * working directory: elfutils reads a relative entry as the main file's subdirectory), then
 * the main file's own directory and its .debug/, then /usr/lib/debug (build-id links are
 * looked up in every absolute one). */
static char *build_debuginfo_path(struct gt_symbolizer *sym, const char *const *dirs)
{
	size_t len = sizeof(":.debug:/usr/lib/debug");
	for (size_t i = 0; dirs && dirs[i]; i++)
		len += (dirs[i][0] == '/' ? strlen(dirs[i]) : PATH_MAX) + 1;
	char *path = malloc(len);
	if (!path)
		return NULL;
	path[0] = '\0';
	for (size_t i = 0; dirs && dirs[i]; i++) {
		char *abs = dirs[i][0] == '/' ? NULL : realpath(dirs[i], NULL);
		const char *dir = abs ? abs : dirs[i];
		if (dir[0] != '/' || strchr(dir, ':') || strlen(dir) >= PATH_MAX) {
			const char *interned = gt_sym_intern(&sym->strings, dirs[i]);
			gt_sym_warn(sym, interned, GT_SYM_BAD_DEBUG_DIR, NULL, NULL);
			free(abs);
			continue;
		}
		strcat(path, dir);
		strcat(path, ":");
		free(abs);
	}
	strcat(path, ":.debug:/usr/lib/debug");
	return path;
}

struct gt_symbolizer *gt_sym_new(const struct gt_sym_options *opt)
{
	/* elfutils asks debuginfod servers when this is set; a conversion must never touch
	 * the network, so the variable goes for this process. */
	unsetenv("DEBUGINFOD_URLS");

	struct gt_symbolizer *sym = calloc(1, sizeof(*sym));
	if (!sym)
		return NULL;
	if (opt) {
		sym->warn = opt->warn;
		sym->warn_ctx = opt->warn_ctx;
	}
	sym->debuginfo_path = build_debuginfo_path(sym, opt ? opt->debug_dirs : NULL);
	if (!sym->debuginfo_path) {
		gt_sym_free(sym);
		return NULL;
	}
	sym->callbacks.find_elf = find_no_elf;
	sym->callbacks.find_debuginfo = dwfl_standard_find_debuginfo;
	sym->callbacks.section_address = dwfl_offline_section_address;
	sym->callbacks.debuginfo_path = &sym->debuginfo_path;
	return sym;
}

void gt_sym_free(struct gt_symbolizer *sym)
{
	if (!sym)
		return;
	struct gt_sym_image *img = sym->images;
	while (img) {
		struct gt_sym_image *next = img->next;
		gt_sym_image_close(sym, img);
		free(img);
		img = next;
	}
	gt_sym_unwind_free(sym);
	free(sym->maps);
	for (size_t i = 0; i < sym->n_spaces; i++)
		if (i != sym->space)
			free(sym->spaces[i].maps);
	free(sym->spaces);
	free(sym->frames);
	free(sym->entries);
	gt_u64map_free(&sym->stack_cache);
	gt_u64map_free(&sym->function_cache);
	free(sym->warned_paths);
	free(sym->debuginfo_path);
	gt_intern_free(&sym->strings);
	free(sym);
}

/* ---- module map ---------------------------------------------------------------------- */

static struct gt_sym_image *find_or_make_image(struct gt_symbolizer *sym, const char *path,
					       const uint8_t *build_id, size_t build_id_len,
					       uint64_t bias, uint32_t flags)
{
	const char *ipath = gt_sym_intern(&sym->strings, path);
	/* the same file (by build-id) elsewhere in memory is the same image, moved */
	for (struct gt_sym_image *img = sym->images; img; img = img->next)
		if (img->path == ipath && (img->bias == bias || build_id_len) && img->flags == flags &&
		    img->build_id_len == build_id_len &&
		    memcmp(img->build_id, build_id, build_id_len) == 0)
			return img;

	struct gt_sym_image *img = calloc(1, sizeof(*img));
	if (!img)
		return NULL;
	img->path = ipath;
	if (flags & GT_SYM_VDSO) {
		img->base_name = gt_sym_intern(&sym->strings, "[vdso]");
	} else {
		const char *slash = strrchr(path, '/');
		img->base_name = gt_sym_intern(&sym->strings, slash ? slash + 1 : path);
	}
	if (build_id_len)
		memcpy(img->build_id, build_id, build_id_len);
	img->build_id_len = build_id_len;
	img->bias = bias;
	img->flags = flags;
	/* libgotrace.so, and any variant of it (libgotrace-noop.so, libgotrace.so.1) */
	img->is_tracer = strncmp(img->base_name, "libgotrace", 10) == 0 &&
			 strstr(img->base_name, ".so") != NULL;
	img->is_libc = strncmp(img->base_name, "libc.so", 7) == 0 ||
		       strncmp(img->base_name, "libc-", 5) == 0 ||
		       strncmp(img->base_name, "libpthread", 10) == 0;
	img->is_unwinder = strncmp(img->base_name, "libunwind", 9) == 0;
	img->is_loader = strncmp(img->base_name, "ld-", 3) == 0;
	img->state = GT_IMG_UNOPENED;
	img->next = sym->images;
	sym->images = img;
	return img;
}

int gt_sym_add_module(struct gt_symbolizer *sym, const char *path, const uint8_t *build_id,
		      size_t build_id_len, uint64_t bias, uint64_t lo, uint64_t hi,
		      uint32_t flags)
{
	if (!sym || hi < lo || build_id_len > GT_SYM_BUILD_ID_MAX ||
	    (build_id_len && !build_id))
		return -1;
	if (!(flags & GT_SYM_VDSO) && (!path || !path[0]))
		return -1;
	struct gt_sym_image *img = find_or_make_image(sym, path && path[0] ? path : "[vdso]",
						      build_id, build_id_len, bias, flags);
	if (!img)
		return -1;

	/* An overlapped module was unloaded; its cached frames no longer hold.  Sharing only
	 * the boundary byte is no overlap: hi may be the end as well as the last byte (the
	 * preload records the end), and a neighbour may start right there. */
	size_t kept = 0;
	bool replaced = false;
	for (size_t i = 0; i < sym->n_maps; i++) {
		struct gt_sym_mapping *m = &sym->maps[i];
		if (m->lo < hi && lo + 1 < m->hi) {
			replaced = true;
			continue;
		}
		sym->maps[kept++] = *m;
	}
	sym->n_maps = kept;
	sym->maps_version++;
	if (replaced) {
		gt_u64map_clear(&sym->stack_cache);
		gt_u64map_clear(&sym->function_cache);
	}

	if (!gt_grow(&sym->maps, &sym->cap_maps, sym->n_maps + 1, sizeof(*sym->maps)))
		return -1;
	size_t at = sym->n_maps;
	while (at > 0 && sym->maps[at - 1].lo > lo) {
		sym->maps[at] = sym->maps[at - 1];
		at--;
	}
	/* The capture's hi is the highest mapped address; kept here as an end. */
	sym->maps[at] = (struct gt_sym_mapping){
		.lo = lo, .hi = hi == UINT64_MAX ? hi : hi + 1, .img = img, .delta = img->bias - bias,
	};
	sym->n_maps++;
	return 0;
}

static const struct gt_sym_mapping *mapping_at(struct gt_symbolizer *sym, uint64_t pc)
{
	ptrdiff_t i = gt_sym_find_range(sym->maps, sym->n_maps, sizeof(*sym->maps), pc, 1);
	return i < 0 ? NULL : &sym->maps[i];
}

int gt_sym_use_space(struct gt_symbolizer *sym, uint32_t space)
{
	if (!sym || space == sym->space)
		return 0;
	if (space >= sym->n_spaces || sym->space >= sym->n_spaces) {
		size_t n = (space > sym->space ? space : sym->space) + 1;
		struct gt_sym_space *more = realloc(sym->spaces, n * sizeof(*more));
		if (!more)
			return -1;
		memset(more + sym->n_spaces, 0, (n - sym->n_spaces) * sizeof(*more));
		sym->spaces = more;
		sym->n_spaces = n;
	}
	sym->spaces[sym->space] = (struct gt_sym_space){ sym->maps, sym->n_maps, sym->cap_maps };
	sym->maps = sym->spaces[space].maps;
	sym->n_maps = sym->spaces[space].n_maps;
	sym->cap_maps = sym->spaces[space].cap_maps;
	sym->space = space;
	return 0;
}

/* ---- PC -> frames -------------------------------------------------------------------- */

static uint32_t lookup(struct gt_symbolizer *sym, struct gt_u64map *cache, uint64_t addr,
		       bool inlines, bool *ok)
{
	/* the caches hold every space: user addresses are below 2^48 */
	uint64_t key = addr ^ ((uint64_t)sym->space << 48);
	*ok = true;
	const uint64_t *cached = gt_u64map_find(cache, key);
	if (cached)
		return (uint32_t)*cached;

	if (!gt_grow(&sym->entries, &sym->cap_entries, sym->n_entries + 1, sizeof(*sym->entries))) {
		*ok = false;
		return 0;
	}
	struct gt_sym_entry entry = { .first = (uint32_t)sym->n_frames, .count = 0 };
	const struct gt_sym_mapping *map = mapping_at(sym, addr);
	struct gt_sym_image *img = map ? map->img : NULL;
	/* The tracer's own frames are cut anyway: no need to open libgotrace.so. */
	if (img && img->state == GT_IMG_UNOPENED && !img->is_tracer)
		gt_sym_image_open(sym, img);
	if (img && img->state == GT_IMG_OK) {
		/* looked up where the image was first mapped, written where this process has it */
		entry.count = (uint32_t)gt_sym_image_resolve(sym, img, addr + map->delta, inlines);
		for (uint32_t k = 0; k < entry.count; k++)
			sym->frames[entry.first + k].f.pc -= map->delta;
	}
	if (entry.count == 0) {
		char buf[256];
		struct gt_sym_frame fr = { .f = { .pc = addr, .line = 0 }, .img = img };
		if (img) {
			snprintf(buf, sizeof(buf), "%s+0x%" PRIx64, img->base_name,
				 addr + map->delta - img->bias);
			fr.f.file = img->path;
		} else {
			snprintf(buf, sizeof(buf), "0x%" PRIx64, addr);
			fr.f.file = "??";
		}
		fr.f.func = gt_sym_intern(&sym->strings, buf);
		/* The tracer's thread trampoline sits between the start routine and
		 * start_thread: cut at the outer end like the start-up code around it. */
		if (img && img->is_tracer)
			fr.flags |= GT_FR_STARTUP;
		if (gt_sym_push_frame(sym, &fr) == 0)
			entry.count = 1;
	}
	uint32_t index = (uint32_t)sym->n_entries;
	sym->entries[sym->n_entries++] = entry;
	bool found;
	uint64_t *slot = gt_u64map_slot(cache, key, &found);
	if (slot)
		*slot = index;
	return index;
}

static bool entry_resolved(const struct gt_symbolizer *sym, const struct gt_sym_entry *e)
{
	return e->count && (sym->frames[e->first + e->count - 1].flags & GT_FR_RESOLVED);
}

size_t gt_sym_stack(struct gt_symbolizer *sym, const uint64_t *pcs, size_t n,
		    struct gt_frame *out, size_t max)
{
	if (!sym || !pcs || max == 0)
		return 0;

	/* Expanded frames of the whole stack, as indices into sym->frames. */
	size_t cap = 64, count = 0;
	uint32_t stack_buf[64];
	uint32_t *idx = stack_buf;
	for (size_t i = 0; i < n; i++) {
		if (pcs[i] == 0)
			continue;
		/* Every captured PC is a return address: the call is the byte before. */
		uint64_t addr = pcs[i] - 1;
		bool ok;
		uint32_t e = lookup(sym, &sym->stack_cache, addr, true, &ok);
		if (!ok)
			continue;
		sym->stats.pcs_looked_up++;
		const struct gt_sym_entry *entry = &sym->entries[e];
		if (!entry_resolved(sym, entry))
			sym->stats.pcs_unresolved++;
		const struct gt_sym_image *img = sym->frames[entry->first].img;
		/* the tracer's frames: the hook the program called, between it and the call the
		 * hook passes on (a CPU sample's), or the tracer's own work (cut at the inner
		 * end), or its thread trampoline (with the start-up code) */
		if (img && img->is_tracer)
			continue;
		for (uint32_t k = 0; k < entry->count; k++) {
			if (count == cap) {
				uint32_t *grown = malloc(2 * cap * sizeof(*grown));
				if (!grown)
					break;
				memcpy(grown, idx, count * sizeof(*idx));
				if (idx != stack_buf)
					free(idx);
				idx = grown;
				cap *= 2;
			}
			idx[count++] = entry->first + k;
		}
	}

	/* Thread start-up at the outer end: cut at the innermost start-up function whose
	 * outer side holds only start-up functions or unnamed frames, together with unnamed
	 * frames of the same module just inside it (a libc without symbols for
	 * __libc_start_call_main). */
	size_t keep = count;
	bool tail_ok = true;
	for (size_t i = count; i-- > 0 && tail_ok;) {
		const struct gt_sym_frame *fr = &sym->frames[idx[i]];
		if (fr->flags & GT_FR_STARTUP)
			keep = i;
		else if (fr->flags & GT_FR_RESOLVED)
			tail_ok = false;
	}
	if (keep < count) {
		const struct gt_sym_image *startup_img = sym->frames[idx[keep]].img;
		while (keep > 0) {
			const struct gt_sym_frame *fr = &sym->frames[idx[keep - 1]];
			if ((fr->flags & GT_FR_RESOLVED) || !fr->img || fr->img != startup_img)
				break;
			keep--;
		}
	}
	/* Without libc's own symbols (no libc6-dbg), start_thread and clone3 have no names;
	 * unnamed libc frames at the very outer end can only be the start-up code. */
	while (keep > 1) {
		const struct gt_sym_frame *fr = &sym->frames[idx[keep - 1]];
		if ((fr->flags & GT_FR_RESOLVED) || !fr->img || !fr->img->is_libc)
			break;
		keep--;
	}

	size_t written = 0;
	if (keep <= max) {
		for (size_t i = 0; i < keep; i++)
			out[written++] = sym->frames[idx[i]].f;
	} else {
		for (size_t i = 0; i < max - 1; i++)
			out[written++] = sym->frames[idx[i]].f;
		out[written++] = sym->frames[idx[keep - 1]].f;
	}
	if (idx != stack_buf)
		free(idx);
	return written;
}

size_t gt_sym_tracer_work(struct gt_symbolizer *sym, const uint64_t *pcs, size_t n)
{
	if (!sym || !pcs)
		return 0;
	/* libunwind, with the libc and loader code it calls, then the tracer's frames; or the
	 * tracer's frames innermost.  libc right inside a hook without libunwind is the
	 * program's own call, passed on by the hook. */
	size_t i = 0;
	bool unwinding = false;
	const struct gt_sym_mapping *map = NULL;
	for (; i < n; i++) {
		map = pcs[i] ? mapping_at(sym, pcs[i] - 1) : NULL;
		if (!map || !(map->img->is_unwinder || map->img->is_libc || map->img->is_loader))
			break;
		unwinding |= map->img->is_unwinder;
	}
	if (i == n || !map || !map->img->is_tracer || (i > 0 && !unwinding))
		return 0;
	while (i < n && (map = pcs[i] ? mapping_at(sym, pcs[i] - 1) : NULL) && map->img->is_tracer)
		i++;
	return i;
}

struct gt_frame gt_sym_function(struct gt_symbolizer *sym, uint64_t entry)
{
	bool ok;
	uint32_t e = lookup(sym, &sym->function_cache, entry, false, &ok);
	if (!ok)
		return (struct gt_frame){ .pc = entry, .func = "?", .file = "??", .line = 0 };
	sym->stats.pcs_looked_up++;
	if (!entry_resolved(sym, &sym->entries[e]))
		sym->stats.pcs_unresolved++;
	return sym->frames[sym->entries[e].first].f;
}

void gt_sym_stats(const struct gt_symbolizer *sym, struct gt_sym_stats *out)
{
	*out = sym->stats;
}

size_t gt_sym_own_frame(const struct gt_frame *frames, size_t n)
{
	static const char system_headers[] = "/usr/include/";
	for (size_t i = 0; i < n; i++)
		if (strncmp(frames[i].file, system_headers, sizeof system_headers - 1) != 0)
			return i;
	return 0;
}
