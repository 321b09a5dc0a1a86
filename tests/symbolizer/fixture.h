/* Runs a fixture program and holds what it printed (see fixtures/fixture_report.h). */
#ifndef GT_TEST_FIXTURE_H
#define GT_TEST_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "symbolizer/symbolizer.h"

#define FX_MAX 64

struct fx_module {
	uint32_t flags;
	uint64_t bias, lo, hi;
	uint8_t build_id[64];
	size_t build_id_len;
	char path[4096];
};

struct fx_stack {
	char label[64];
	uint64_t pcs[128];
	size_t n;
};

struct fx_func {
	char label[64];
	uint64_t addr;
};

struct fixture {
	struct fx_module modules[FX_MAX];
	size_t n_modules;
	struct fx_stack stacks[FX_MAX];
	size_t n_stacks;
	struct fx_func funcs[FX_MAX];
	size_t n_funcs;
};

/* Runs exe (with one optional argument) and parses its report: 0, or -1 when it could not
 * run, failed or reported no modules. */
int fx_load(struct fixture *fx, const char *exe, const char *arg);
/* NULL (0) when the report has no such entry. */
const struct fx_stack *fx_find_stack(const struct fixture *fx, const char *label);
uint64_t fx_find_func(const struct fixture *fx, const char *label);
struct fx_module *fx_find_module(struct fixture *fx, const char *path_suffix);
struct fx_module *fx_find_main(struct fixture *fx);
/* Adds every module of the report to sym; returns how many it refused. */
int fx_add_modules(const struct fixture *fx, struct gt_symbolizer *sym);
/* The last path component. */
const char *fx_basename(const char *path);

#endif
