/* Data addresses -> names: the variable (and the member or element inside it) a lock is, by
 * DWARF, the symbol table or the module; or, outside every module, the code that first used
 * it.  Names hold no run-time address, so two runs of one binary name a lock alike. */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <dwarf.h>
#include <gelf.h>

#include "symbolizer_private.h"

#define MAX_TYPE_DEPTH 16      /* members and elements followed inside one variable */
#define MAX_SCOPE_DEPTH 16     /* namespaces, functions and blocks walked for variables */
#define MAX_ARRAY_DIMS 8

/* ---- the variables of a module -------------------------------------------------------- */

static bool die_type(Dwarf_Die *die, Dwarf_Die *type)
{
	Dwarf_Attribute attr;
	return dwarf_formref_die(dwarf_attr_integrate(die, DW_AT_type, &attr), type) != NULL;
}

static uint64_t type_size(Dwarf_Die *type)
{
	Dwarf_Word size;
	return dwarf_aggregate_size(type, &size) == 0 ? size : 0;
}

static const char *die_name(Dwarf_Die *die)
{
	Dwarf_Attribute attr;
	return dwarf_formstring(dwarf_attr_integrate(die, DW_AT_name, &attr));
}

/* A variable at a fixed address (DW_OP_addr alone: not a TLS or a register variable). */
static void add_variable(struct gt_sym_image *img, Dwarf_Die *die, const char *function,
			 size_t *cap)
{
	Dwarf_Attribute attr;
	Dwarf_Op *ops;
	size_t n_ops;
	if (!dwarf_attr(die, DW_AT_location, &attr) || dwarf_getlocation(&attr, &ops, &n_ops) != 0 ||
	    n_ops != 1 || ops[0].atom != DW_OP_addr)
		return;
	Dwarf_Die type;
	uint64_t size = die_type(die, &type) ? type_size(&type) : 0;
	if (!gt_grow(&img->vars, cap, img->n_vars + 1, sizeof *img->vars))
		return;
	img->vars[img->n_vars++] = (struct gt_sym_variable){
		.lo = ops[0].number, .hi = ops[0].number + (size ? size : 1), .die = *die,
		.function = function,
	};
}

static void collect_variables(struct gt_sym_image *img, Dwarf_Die *parent, const char *function,
			      size_t *cap, int depth)
{
	Dwarf_Die child;
	if (depth > MAX_SCOPE_DEPTH || dwarf_child(parent, &child) != 0)
		return;
	do {
		switch (dwarf_tag(&child)) {
		case DW_TAG_variable:
			add_variable(img, &child, function, cap);
			break;
		case DW_TAG_subprogram:
			collect_variables(img, &child, die_name(&child), cap, depth + 1);
			break;
		case DW_TAG_lexical_block:
		case DW_TAG_namespace:
			collect_variables(img, &child, function, cap, depth + 1);
			break;
		default:
			break;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
}

static int compare_variables(const void *a, const void *b)
{
	const struct gt_sym_variable *x = a, *y = b;
	return x->lo < y->lo ? -1 : x->lo > y->lo ? 1 : 0;
}

static void read_variables(struct gt_sym_image *img)
{
	img->vars_read = true;
	if (!img->has_dwarf)
		return;
	size_t cap = 0;
	Dwarf_Addr bias;
	for (Dwarf_Die *cu = NULL; (cu = dwfl_module_nextcu(img->mod, cu, &bias));)
		collect_variables(img, cu, NULL, &cap, 0);
	if (img->n_vars)
		qsort(img->vars, img->n_vars, sizeof *img->vars, compare_variables);
}

void gt_sym_variables_free(struct gt_sym_image *img)
{
	free(img->vars);
	img->vars = NULL;
	img->n_vars = 0;
	img->vars_read = false;
}

/* ---- a variable's name, then the member or element inside it ---------------------------- */

/* printf at *at in buf, *at moved past it (a name too long is cut at size - 1). */
__attribute__((format(printf, 4, 5)))
static void append(char *buf, size_t size, size_t *at, const char *fmt, ...)
{
	if (*at >= size)
		return;
	va_list ap;
	va_start(ap, fmt);
	int w = vsnprintf(buf + *at, size - *at, fmt, ap);
	va_end(ap);
	if (w > 0)
		*at = *at + (size_t)w < size ? *at + (size_t)w : size - 1;
}

static void variable_name(struct gt_symbolizer *sym, const struct gt_sym_variable *v, char *buf,
			  size_t size, size_t *at)
{
	Dwarf_Die die = v->die;
	Dwarf_Attribute attr;
	const char *linkage = dwarf_formstring(dwarf_attr_integrate(&die, DW_AT_linkage_name, &attr));
	if (linkage && linkage[0] == '_' && linkage[1] == 'Z') {
		/* C++: the demangled name says its class and namespaces (Registry::mu_) */
		const char *shown = gt_sym_function_name(sym, linkage);
		if (shown && strcmp(shown, linkage) != 0) {
			append(buf, size, at, "%s", shown);
			return;
		}
	}
	const char *plain = die_name(&die);
	if (v->function)
		append(buf, size, at, "%s::", v->function);
	append(buf, size, at, "%s", plain ? plain : linkage ? linkage : "?");
}

/* The C library's and the C++ library's own fields (__data, __size, _M_mutex): a lock's
 * name stops where the implementation's inside begins. */
static bool reserved_name(const char *name)
{
	return name[0] == '_' && (name[1] == '_' || (name[1] >= 'A' && name[1] <= 'Z'));
}

static bool member_location(Dwarf_Die *member, uint64_t *offset)
{
	Dwarf_Attribute attr;
	Dwarf_Word value;
	if (!dwarf_attr(member, DW_AT_data_member_location, &attr)) {
		*offset = 0;   /* a union's members, or a struct's first: no location */
		return true;
	}
	if (dwarf_formudata(&attr, &value) != 0)
		return false;
	*offset = value;
	return true;
}

/* The member of struct, class or union type holding byte off: its DIE and offset; in a
 * union, the first member declared that holds it. */
static bool member_at(Dwarf_Die *type, uint64_t off, Dwarf_Die *member, uint64_t *member_off)
{
	Dwarf_Die child, mtype;
	if (dwarf_child(type, &child) != 0)
		return false;
	do {
		uint64_t at;
		if (dwarf_tag(&child) != DW_TAG_member || !member_location(&child, &at) ||
		    !die_type(&child, &mtype))
			continue;
		uint64_t size = type_size(&mtype);
		if (off >= at && off < at + (size ? size : 1)) {
			*member = child;
			*member_off = at;
			return true;
		}
	} while (dwarf_siblingof(&child, &child) == 0);
	return false;
}

/* An array's element type and its dimensions' lengths; false when a length is unknown. */
static bool array_shape(Dwarf_Die *array, Dwarf_Die *element, uint64_t *dims, size_t *n_dims)
{
	Dwarf_Die child;
	*n_dims = 0;
	if (!die_type(array, element) || dwarf_child(array, &child) != 0)
		return false;
	do {
		if (dwarf_tag(&child) != DW_TAG_subrange_type)
			continue;
		Dwarf_Attribute attr;
		Dwarf_Word value;
		if (*n_dims == MAX_ARRAY_DIMS)
			return false;
		if (dwarf_formudata(dwarf_attr(&child, DW_AT_count, &attr), &value) == 0)
			dims[(*n_dims)++] = value;
		else if (dwarf_formudata(dwarf_attr(&child, DW_AT_upper_bound, &attr), &value) == 0)
			dims[(*n_dims)++] = value + 1;
		else
			return false;
	} while (dwarf_siblingof(&child, &child) == 0);
	return *n_dims > 0;
}

/* ".member", "[i]" down to the object at byte off of a variable of type var_type. */
static void inside_path(Dwarf_Die *var_type, uint64_t off, char *buf, size_t size, size_t *at)
{
	Dwarf_Die type = *var_type;
	for (int depth = 0; depth < MAX_TYPE_DEPTH; depth++) {
		Dwarf_Die peeled;
		if (dwarf_peel_type(&type, &peeled) != 0)
			break;
		int tag = dwarf_tag(&peeled);
		if (tag == DW_TAG_structure_type || tag == DW_TAG_class_type ||
		    tag == DW_TAG_union_type) {
			Dwarf_Die member;
			uint64_t member_off;
			if (!member_at(&peeled, off, &member, &member_off))
				break;
			const char *name = dwarf_diename(&member);
			if (name && reserved_name(name))
				break;
			if (name)   /* an anonymous struct or union adds no name */
				append(buf, size, at, ".%s", name);
			off -= member_off;
			if (!die_type(&member, &type))
				break;
		} else if (tag == DW_TAG_array_type) {
			Dwarf_Die element;
			uint64_t dims[MAX_ARRAY_DIMS];
			size_t n_dims;
			uint64_t stride = 0;
			if (!array_shape(&peeled, &element, dims, &n_dims) ||
			    (stride = type_size(&element)) == 0)
				break;
			for (size_t k = n_dims; k-- > 1;)
				stride *= dims[k];
			for (size_t k = 0; k < n_dims; k++) {
				append(buf, size, at, "[%" PRIu64 "]", off / stride);
				off %= stride;
				if (k + 1 < n_dims)
					stride /= dims[k + 1];
			}
			type = element;
		} else {
			break;
		}
	}
	if (off)
		append(buf, size, at, "+0x%" PRIx64, off);
}

/* ---- the name of a static address ----------------------------------------------------- */

/* addr in img's own addresses: by DWARF, then the symbol table; false when neither names it. */
static bool static_name(struct gt_symbolizer *sym, struct gt_sym_image *img, uint64_t addr,
			char *buf, size_t size)
{
	size_t at = 0;
	if (!img->vars_read)
		read_variables(img);
	Dwarf_Addr bias;
	if (img->n_vars && dwfl_module_getdwarf(img->mod, &bias)) {
		ptrdiff_t i = gt_sym_find_range(img->vars, img->n_vars, sizeof *img->vars,
						addr - bias, 4);
		if (i >= 0) {
			const struct gt_sym_variable *v = &img->vars[i];
			variable_name(sym, v, buf, size, &at);
			Dwarf_Die die = v->die, type;
			if (die_type(&die, &type))
				inside_path(&type, addr - bias - v->lo, buf, size, &at);
			return true;
		}
	}
	GElf_Off offset;
	GElf_Sym elf_sym;
	const char *name = dwfl_module_addrinfo(img->mod, addr, &offset, &elf_sym, NULL, NULL, NULL);
	if (!name || GELF_ST_TYPE(elf_sym.st_info) != STT_OBJECT || offset >= elf_sym.st_size)
		return false;
	append(buf, size, &at, "%s", gt_sym_function_name(sym, name));
	if (offset)
		append(buf, size, &at, "+0x%" PRIx64, offset);
	return true;
}

static bool runtime_image(const struct gt_sym_image *img)
{
	return img->is_libc || img->is_loader || img->is_tracer || img->is_unwinder ||
	       strncmp(img->base_name, "libstdc++", 9) == 0 ||
	       strncmp(img->base_name, "libgcc_s", 8) == 0;
}

uint64_t gt_sym_program_pc(struct gt_symbolizer *sym, const uint64_t *pcs, size_t n)
{
	for (size_t i = 0; sym && i < n; i++) {
		if (pcs[i] == 0)
			continue;
		/* an address in no module would make a name that changes from run to run */
		ptrdiff_t m = gt_sym_find_range(sym->maps, sym->n_maps, sizeof *sym->maps,
						pcs[i] - 1, 1);
		if (m >= 0 && !runtime_image(sym->maps[m].img))
			return pcs[i];
	}
	return 0;
}

const char *gt_sym_object_name(struct gt_symbolizer *sym, uint64_t addr,
			       const uint64_t *first_pcs, size_t n, char *buf, size_t size)
{
	if (size == 0)
		return buf;
	ptrdiff_t m = sym ? gt_sym_find_range(sym->maps, sym->n_maps, sizeof *sym->maps, addr, 1)
			  : -1;
	if (m >= 0) {
		const struct gt_sym_mapping *map = &sym->maps[m];
		struct gt_sym_image *img = map->img;
		uint64_t img_addr = addr + map->delta;
		if (img->state == GT_IMG_UNOPENED)
			gt_sym_image_open(sym, img);
		if (img->state == GT_IMG_OK && static_name(sym, img, img_addr, buf, size))
			return buf;
		snprintf(buf, size, "%s+0x%" PRIx64, img->base_name, img_addr - img->bias);
		return buf;
	}
	uint64_t pc = first_pcs ? gt_sym_program_pc(sym, first_pcs, n) : 0;
	/* the innermost of its inlined frames: a stack cut to max keeps the innermost max - 1 */
	struct gt_frame frames[8];
	if (pc && gt_sym_stack(sym, &pc, 1, frames, 8) > 0) {
		const struct gt_frame f = frames[0];
		const char *slash = strrchr(f.file, '/');
		const char *file = slash ? slash + 1 : f.file;
		if (f.line)
			snprintf(buf, size, "first used at %s (%s:%" PRIu32 ")", f.func, file, f.line);
		else
			snprintf(buf, size, "first used at %s (%s)", f.func, file);
		return buf;
	}
	snprintf(buf, size, "%#" PRIx64, addr);
	return NULL;
}
