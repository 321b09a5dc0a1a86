/* checks: fixture helpers for the symbolizer tests that fail the test (Criterion asserts)
 * when a fixture does not deliver. */
#ifndef GOTRACE_TEST_SYMBOLIZER_CHECKS_H
#define GOTRACE_TEST_SYMBOLIZER_CHECKS_H

#include <stddef.h>
#include <stdint.h>

#include "fixture.h"
#include "symbolizer/symbolizer.h"

#define SRC(name) FX_SRC_DIR "/" name
#define MAX_FRAMES 64

/* Warnings a symbolizer gave, for assertions. */
struct fx_warnings {
	char lines[16][1024];
	size_t n;
};

/* The warnings of the last symbolizer made by load() or fx_symbolizer(&warnings, ...). */
extern struct fx_warnings warnings;

void fx_run(struct fixture *fx, const char *exe, const char *arg);
const struct fx_stack *fx_stack(const struct fixture *fx, const char *label);
uint64_t fx_func(const struct fixture *fx, const char *label);
struct fx_module *fx_module(struct fixture *fx, const char *suffix);
struct fx_module *fx_main_module(struct fixture *fx);
/* The line of `source` holding the marker comment "LINE:<marker>". */
uint32_t fx_marker_line(const char *source, const char *marker);
/* A symbolizer whose warnings are collected into W for assertions. */
struct gt_symbolizer *fx_symbolizer(struct fx_warnings *w, const char *const *debug_dirs);
void add_modules(const struct fixture *fx, struct gt_symbolizer *sym);
/* All frames on one line, for assertion messages. */
const char *show(const struct gt_frame *f, size_t n);
void expect_frame(const struct gt_frame *f, size_t n, size_t i, const char *func,
		  const char *file_base, uint32_t line);
size_t symbolize(struct gt_symbolizer *sym, const struct fixture *fx, const char *label,
		 struct gt_frame *out, size_t max);
/* Runs a fixture and loads its module map into a fresh symbolizer. */
struct gt_symbolizer *load(struct fixture *fx, const char *exe, const char *arg);
void remove_tree(const char *dir);
/* A fresh directory under /tmp in tmp_dir (TestSuite .init), removed by remove_tmp_dir. */
extern char tmp_dir[256];
void make_tmp_dir(void);
void remove_tmp_dir(void);

#endif
