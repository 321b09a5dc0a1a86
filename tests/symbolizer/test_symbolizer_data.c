/* Data addresses to names (gt_sym_object_name): the variable and the member or element
 * inside it by DWARF, the symbol table and an offset without DWARF, the module and an
 * offset without symbols, and an address outside every module by the program frame that
 * first used it.  The fixture (fixtures/data.c) prints each address with the name it must
 * get by DWARF as its label. */
#include <criterion/criterion.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#include "checks.h"

static const char *name_of(struct gt_symbolizer *sym, struct fixture *fx, const char *label,
			   char *buf, size_t size)
{
	uint64_t addr = fx_find_func(fx, label);
	cr_assert_neq(addr, 0, "the fixture printed no %s", label);
	return gt_sym_object_name(sym, addr, NULL, 0, buf, size);
}

Test(data, variables_members_and_elements_by_dwarf)
{
	static const char *const labels[] = { "slots[2].lock", "grid[1][2]", "holder.inner",
					      "gap+0x3", "table[64]", "ready::cond" };
	struct fixture fx;
	struct gt_symbolizer *sym = load(&fx, FX_DATA, NULL);
	char buf[512];
	for (size_t i = 0; i < sizeof labels / sizeof *labels; i++) {
		const char *name = name_of(sym, &fx, labels[i], buf, sizeof buf);
		cr_assert(name != NULL && strcmp(name, labels[i]) == 0, "%s named \"%s\"",
			  labels[i], buf);
	}
	gt_sym_free(sym);
}

Test(data, symbol_and_offset_without_dwarf)
{
	struct fixture fx;
	struct gt_symbolizer *sym = load(&fx, FX_DATA_NODWARF, NULL);
	char buf[512], want[64];
	/* slots[2].lock: two slots of an id and a mutex (40 bytes on x86-64, 48 on aarch64),
	 * then the id */
	snprintf(want, sizeof want, "slots+%#zx", 2 * (sizeof(long) + sizeof(pthread_mutex_t)) + sizeof(long));
	cr_assert_str_eq(name_of(sym, &fx, "slots[2].lock", buf, sizeof buf), want);
	cr_assert_str_eq(name_of(sym, &fx, "table[64]", buf, sizeof buf), "table+0x40");
	/* grid[1][2]: five mutexes in */
	snprintf(want, sizeof want, "grid+%#zx", 5 * sizeof(pthread_mutex_t));
	cr_assert_str_eq(name_of(sym, &fx, "grid[1][2]", buf, sizeof buf), want);
	gt_sym_free(sym);
}

Test(data, module_and_offset_without_symbols)
{
	struct fixture fx;
	struct gt_symbolizer *sym = load(&fx, FX_DATA_NOSYM, NULL);
	const struct fx_module *main_module = fx_find_main(&fx);
	uint64_t addr = fx_find_func(&fx, "table[64]");
	char buf[512], want[600];
	snprintf(want, sizeof want, "%s+%#llx", fx_basename(main_module->path),
		 (unsigned long long)(addr - main_module->bias));
	cr_assert_str_eq(name_of(sym, &fx, "table[64]", buf, sizeof buf), want);
	gt_sym_free(sym);
}

Test(data, outside_the_modules_by_the_program_frame_that_first_used_it)
{
	struct fixture fx;
	struct gt_symbolizer *sym = load(&fx, FX_INLINE, NULL);
	const struct fx_stack *st = fx_find_stack(&fx, "inline");
	cr_assert_not_null(st);
	char buf[512], frame[512], want[600];
	struct gt_frame frames[64];
	cr_assert_gt(gt_sym_stack(sym, st->pcs, st->n, frames, 64), 1);
	const struct gt_frame f = frames[0];   /* leaf, inlined: the fixture's capturing line */
	const char *slash = strrchr(f.file, '/');
	snprintf(frame, sizeof frame, "%s (%s:%u)", f.func, slash ? slash + 1 : f.file, f.line);
	snprintf(want, sizeof want, "first used at %s", frame);
	/* an address in no module (a heap lock) */
	const char *name = gt_sym_object_name(sym, 0x10, st->pcs, st->n, buf, sizeof buf);
	cr_assert(name != NULL && strcmp(name, want) == 0, "named \"%s\", not \"%s\"", buf, want);
	/* no stack: only the address, and NULL says so */
	cr_assert_null(gt_sym_object_name(sym, 0x10, NULL, 0, buf, sizeof buf));
	cr_assert_str_eq(buf, "0x10");
	gt_sym_free(sym);
}
