/* symbolizer internals: the structs behind the opaque handle, shared by the symbolizer's
 * own .c files only.  elfutils types stay here, out of the public header. */
#ifndef GOTRACE_SYMBOLIZER_PRIVATE_H
#define GOTRACE_SYMBOLIZER_PRIVATE_H

#include <stdbool.h>
#include <elfutils/libdw.h>
#include <elfutils/libdwfl.h>

#include "symbolizer.h"
#include "common/grow.h"
#include "common/intern.h"
#include "common/u64map.h"

#define GT_SYM_NAME_MAX 1024u      /* longer names keep their last bytes */
#define GT_SYM_BUILD_ID_MAX 64u
#define GT_SYM_INLINE_SHIFT 48     /* inline depth lives in bits 48..55 of a synthetic PC */
#define GT_SYM_INLINE_MAX 255u

/* ---- module problems: one warning line each ---------------------------------------- */

/* X(name, message, frames_degrade): frames_degrade says whether the module's frames all
 * read "module+0xoff" from then on (else names still come from its symbol table). */
#define GT_SYM_PROBLEMS(X)                                                           \
	X(CANNOT_OPEN, "cannot open", true)                                          \
	X(NOT_A_FILE, "not a regular file", true)                                    \
	X(NOT_ELF, "not a usable ELF file", true)                                    \
	X(TRUNCATED, "truncated or corrupt ELF file", true)                          \
	X(CHANGED, "changed since the capture", true)                                \
	X(NO_MEMORY, "out of memory", true)                                          \
	X(DEBUG_UNUSABLE, "debug info unusable", false)                              \
	X(DEBUG_CORRUPT, "corrupt debug info", false)                                \
	X(BAD_DEBUG_DIR, "not found, or a path with ':'; debug directory ignored", false)

enum gt_sym_problem {
#define GT_SYM_PROBLEM_ENUM(name, message, degrade) GT_SYM_##name,
	GT_SYM_PROBLEMS(GT_SYM_PROBLEM_ENUM)
#undef GT_SYM_PROBLEM_ENUM
	GT_SYM_PROBLEM_COUNT
};

const char *gt_sym_problem_message(enum gt_sym_problem p);
bool gt_sym_problem_degrades(enum gt_sym_problem p);

/* ---- interned strings (common/intern.h): stable until gt_sym_free --------------------- */

/* The one stable copy of the first len bytes of str (a NUL is appended); "?" when memory
 * runs out. */
const char *gt_sym_intern_n(struct gt_intern *s, const char *str, size_t len);
const char *gt_sym_intern(struct gt_intern *s, const char *str);

/* Sorted arrays of address ranges: every element starts with uint64_t lo, hi ([lo, hi)).
 * The element holding addr: the last one starting at or before it, or one of the
 * `tries` before that (a longer one around it).  -1 when none does. */
ptrdiff_t gt_sym_find_range(const void *array, size_t n, size_t elem_size, uint64_t addr,
			    size_t tries);

/* ---- modules ------------------------------------------------------------------------- */

enum gt_sym_image_state { GT_IMG_UNOPENED, GT_IMG_OK, GT_IMG_FAILED };

/* An inlined body (or a nested function) inside a concrete function, with what its frame
 * needs, computed once. */
struct gt_sym_scope {
	Dwarf_Die die;
	int32_t parent;               /* index in the function's scopes; -1: the function */
	bool is_function;             /* a nested DW_TAG_subprogram: a physical frame */
	bool named;                   /* name, call_file, call_line filled */
	const char *name;
	const char *call_file;        /* where the parent called it (inlined bodies) */
	uint32_t call_line;
};

struct gt_sym_scope_range {
	uint64_t lo, hi;              /* [lo, hi), DWARF addresses */
	uint32_t scope;
	uint32_t depth;
};

/* The inlined bodies of one concrete function, built the first time one of its PCs is
 * looked up: one walk of its DIEs, then every PC is a scan of a small array. */
struct gt_sym_function_scopes {
	struct gt_sym_scope *scopes;
	size_t n_scopes, cap_scopes;
	struct gt_sym_scope_range *ranges;
	size_t n_ranges, cap_ranges;
};

/* One address range of a concrete function (DW_TAG_subprogram) in a compilation unit;
 * DWARF addresses (before the module's bias). */
struct gt_sym_subprogram {
	uint64_t lo, hi;              /* [lo, hi) */
	Dwarf_Die die;
	const char *name;             /* filled on first use */
	struct gt_sym_function_scopes *inlined; /* NULL until first use */
};

/* A compilation unit's functions by address, built the first time one of its PCs is
 * looked up: dwarf_getscopes would walk the whole unit again for every PC. */
struct gt_sym_cu_index {
	struct gt_sym_subprogram *ranges;
	size_t n;
};

/* A function symbol of a module's symbol table, sorted by address: libdwfl's own
 * address -> symbol search (dwfl_module_addrinfo) walks the whole table on every call. */
struct gt_sym_func {
	uint64_t lo, hi;              /* [lo, hi) */
	const char *raw;              /* libdwfl's string, valid while the module's Dwfl is */
	const char *name;             /* shown name, filled on first use */
	int rank;                     /* among aliases: global > weak > local > sizeless */
};

/* A variable with a static address (sym_data.c): a global, a static, a function's static,
 * a C++ class's static member; DWARF addresses. */
struct gt_sym_variable {
	uint64_t lo, hi;              /* [lo, hi) */
	Dwarf_Die die;
	const char *function;         /* the function it is a static of (libdw's), else NULL */
};

/* One object file as recorded (path, build-id, bias), with its own Dwfl so that a module
 * replaced in the map (dlclose, dlopen elsewhere) never disturbs another one. */
struct gt_sym_unit_range {
	uint64_t lo, hi;              /* [lo, hi), DWARF addresses */
	uint64_t unit;                /* its unit's DIE offset */
};

struct gt_sym_image {
	const char *path;             /* interned; as recorded */
	const char *base_name;        /* interned; for "module+0xoff" */
	uint8_t build_id[GT_SYM_BUILD_ID_MAX];
	size_t build_id_len;
	uint64_t bias;
	uint32_t flags;               /* GT_SYM_MAIN_EXE, GT_SYM_VDSO */
	bool is_tracer;               /* libgotrace.so: cut at the inner end */
	bool is_libc;                 /* its unnamed frames at the outer end are start-up code */
	bool is_unwinder;             /* libunwind: the tracer's when libgotrace.so calls it */
	bool is_loader;               /* ld.so: libunwind calls into it (__tls_get_addr, ...) */
	enum gt_sym_image_state state;
	bool has_dwarf;               /* false: don't ask libdw again for every PC */
	struct gt_sym_func *funcs;    /* sorted by lo, then rank */
	size_t n_funcs;
	struct gt_u64map cu_by_offset;  /* CU DIE offset -> index into cus */
	struct gt_sym_cu_index *cus;
	size_t n_cus, cap_cus;
	/* the units' address ranges, read once when libdw finds no unit for an address: a
	 * module without .debug_aranges (clang emits none) */
	struct gt_sym_unit_range *unit_ranges;
	size_t n_unit_ranges;
	bool unit_ranges_read;
	struct gt_sym_variable *vars; /* sorted by lo, read the first time a name is asked */
	size_t n_vars;
	bool vars_read;
	struct {                      /* .eh_frame_hdr's table (sym_unwind.c), read once */
		const uint8_t *table;  /* pairs of int32: initial location, FDE */
		size_t count;
		uint64_t vaddr;        /* what the table's locations are relative to */
		bool read;
	} eh;
	Dwfl *dwfl;
	Dwfl_Module *mod;
	struct gt_sym_image *next;    /* all images, owned by the symbolizer */
};

struct gt_sym_mapping {
	uint64_t lo, hi;              /* [lo, hi) */
	struct gt_sym_image *img;
	uint64_t delta;               /* img->bias - this mapping's bias: an image is shared by
				       * the processes that map it at other places */
};

/* The module map of one process (gt_sym_use_space). */
struct gt_sym_space {
	struct gt_sym_mapping *maps;
	size_t n_maps, cap_maps;
};

/* ---- frames -------------------------------------------------------------------------- */

#define GT_FR_RESOLVED 1u         /* a function name was found */
#define GT_FR_STARTUP 2u          /* thread start-up function: cut at the outer end */

struct gt_sym_frame {
	struct gt_frame f;
	const struct gt_sym_image *img; /* NULL: no module */
	uint32_t flags;
};

/* Frames of one looked-up PC: frames[first .. first + count). */
struct gt_sym_entry {
	uint32_t first;
	uint32_t count;
};

struct gt_symbolizer {
	Dwfl_Callbacks callbacks;
	char *debuginfo_path;         /* elfutils' ":"-separated search path */
	void (*warn)(void *ctx, const char *line);
	void *warn_ctx;

	struct gt_intern strings;
	struct gt_sym_image *images;
	struct gt_sym_mapping *maps;  /* sorted by lo, disjoint: the current space's */
	size_t n_maps, cap_maps;
	uint32_t space;               /* the current one; the others are kept in spaces */
	struct gt_sym_space *spaces;
	size_t n_spaces;

	struct gt_sym_frame *frames;
	size_t n_frames, cap_frames;
	struct gt_sym_entry *entries;
	size_t n_entries, cap_entries;
	struct gt_u64map stack_cache;     /* adjusted PC -> entry */
	struct gt_u64map function_cache;  /* entry PC -> entry */

	const char **warned_paths;    /* interned paths already warned about */
	size_t n_warned, cap_warned;

	/* libdw's source file strings -> interned copies, direct-mapped: the same few files
	 * come back for PC after PC.  Emptied whenever a module's Dwfl goes away. */
	struct { const char *raw, *interned; } file_cache[256];

	char *(*cxa_demangle)(const char *, char *, size_t *, int *);
	bool demangle_looked_up;

	struct gt_sym_stats stats;

	uint64_t maps_version;        /* bumped by every gt_sym_add_module */
	struct gt_sym_unwind **unwind; /* sym_unwind.c: a Dwfl per space, NULL until used */
	size_t n_unwind;
};

/* sym_module.c */
bool gt_sym_image_open(struct gt_symbolizer *sym, struct gt_sym_image *img);
void gt_sym_image_close(struct gt_symbolizer *sym, struct gt_sym_image *img);
/* A memfd holding this process's vDSO image (the recorded one when the build-ids agree), or
 * -1. */
int gt_sym_vdso_memfd(void);
/* Frames for one address inside img (already adjusted), innermost first, appended to
 * sym->frames; inline expansion when inlines is true.  Returns the number appended. */
size_t gt_sym_image_resolve(struct gt_symbolizer *sym, struct gt_sym_image *img,
			    uint64_t addr, bool inlines);
/* Warns once per path (interned): "symbolizer: PATH: MESSAGE (DETAIL); CONSEQUENCE".
 * detail may be NULL; base_name names the module+0xoff frames. */
void gt_sym_warn(struct gt_symbolizer *sym, const char *path, enum gt_sym_problem problem,
		 const char *detail, const char *base_name);
int gt_sym_push_frame(struct gt_symbolizer *sym, const struct gt_sym_frame *fr);

/* sym_unwind.c */
void gt_sym_unwind_free(struct gt_symbolizer *sym);
/* The start of the function around addr (in img's addresses, bias included) by the unwind
 * tables: the start of the .eh_frame FDE that covers it.  false when none does. */
bool gt_sym_unwind_function_start(struct gt_sym_image *img, uint64_t addr, uint64_t *start);

/* sym_data.c */
void gt_sym_variables_free(struct gt_sym_image *img);

/* sym_names.c */
/* The name to show for a linkage or plain name: demangled when mangled, the last
 * GT_SYM_NAME_MAX bytes kept; interned. */
const char *gt_sym_function_name(struct gt_symbolizer *sym, const char *raw);
bool gt_sym_is_startup_function(const char *name);

#endif
