/* Runs a fixture program and holds what it printed (see fixtures/fixture_report.h). */
#ifndef GT_TEST_FIXTURE_H
#define GT_TEST_FIXTURE_H

#include <stddef.h>
#include <stdint.h>

#include "symbolizer.h"

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

/* Runs exe (with one optional argument) and parses its report; aborts the test on failure. */
void fx_run(struct fixture *fx, const char *exe, const char *arg);
const struct fx_stack *fx_stack(const struct fixture *fx, const char *label);
uint64_t fx_func(const struct fixture *fx, const char *label);
/* The module whose path ends with suffix. */
struct fx_module *fx_module(struct fixture *fx, const char *suffix);
struct fx_module *fx_main_module(struct fixture *fx);
/* Adds every module of the report to sym. */
void fx_add_modules(const struct fixture *fx, struct gt_symbolizer *sym);
/* The line of `source` holding the marker comment "LINE:<marker>". */
uint32_t fx_marker_line(const char *source, const char *marker);
/* The last path component. */
const char *fx_basename(const char *path);

/* A symbolizer whose warnings are collected for assertions. */
struct fx_warnings {
	char lines[16][1024];
	size_t n;
};
struct gt_symbolizer *fx_symbolizer(struct fx_warnings *w, const char *const *debug_dirs);

#endif
