/* checks: the fixture helpers of the symbolizer tests, failing the test when a fixture does
 * not deliver what the test needs; see checks.h. */
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
#include "symbolizer/symbolizer.h"

struct fx_warnings warnings;

void fx_run(struct fixture *fx, const char *exe, const char *arg)
{
	cr_assert_eq(fx_load(fx, exe, arg), 0, "%s did not report its modules", exe);
}

const struct fx_stack *fx_stack(const struct fixture *fx, const char *label)
{
	const struct fx_stack *s = fx_find_stack(fx, label);
	cr_assert_not_null(s, "fixture reported no stack %s", label);
	return s;
}

uint64_t fx_func(const struct fixture *fx, const char *label)
{
	uint64_t addr = fx_find_func(fx, label);
	cr_assert_neq(addr, 0, "fixture reported no function %s", label);
	return addr;
}

struct fx_module *fx_module(struct fixture *fx, const char *suffix)
{
	struct fx_module *m = fx_find_module(fx, suffix);
	cr_assert_not_null(m, "fixture reported no module *%s", suffix);
	return m;
}

struct fx_module *fx_main_module(struct fixture *fx)
{
	struct fx_module *m = fx_find_main(fx);
	cr_assert_not_null(m, "fixture reported no main executable");
	return m;
}

/* The line of `source` holding the marker comment "LINE:<marker>". */
uint32_t fx_marker_line(const char *source, const char *marker)
{
	FILE *f = fopen(source, "r");
	cr_assert_not_null(f, "cannot read %s", source);
	char want[256], line[1024];
	snprintf(want, sizeof(want), "LINE:%s */", marker);
	uint32_t no = 0, found = 0;
	while (fgets(line, sizeof(line), f)) {
		no++;
		if (strstr(line, want)) {
			found = no;
			break;
		}
	}
	fclose(f);
	cr_assert_neq(found, 0, "no marker %s in %s", marker, source);
	return found;
}

void collect_warning(void *ctx, const char *line)
{
	struct fx_warnings *w = ctx;
	if (w->n < 16)
		snprintf(w->lines[w->n], sizeof(w->lines[w->n]), "%s", line);
	w->n++;
}

/* A symbolizer whose warnings are collected for assertions. */
struct gt_symbolizer *fx_symbolizer(struct fx_warnings *w, const char *const *debug_dirs)
{
	memset(w, 0, sizeof(*w));
	struct gt_sym_options opt = { .debug_dirs = debug_dirs, .warn = collect_warning,
				      .warn_ctx = w };
	struct gt_symbolizer *sym = gt_sym_new(&opt);
	cr_assert_not_null(sym);
	return sym;
}

void add_modules(const struct fixture *fx, struct gt_symbolizer *sym)
{
	cr_assert_eq(fx_add_modules(fx, sym), 0, "a fixture module was refused");
}


static char frames_text[8192];

/* All frames on one line, for assertion messages. */
const char *show(const struct gt_frame *f, size_t n)
{
	size_t at = 0;
	frames_text[0] = '\0';
	for (size_t i = 0; i < n && at < sizeof(frames_text); i++)
		at += (size_t)snprintf(frames_text + at, sizeof(frames_text) - at,
				       "[%zu] %s %s:%u pc=%llx; ", i, f[i].func,
				       fx_basename(f[i].file), f[i].line,
				       (unsigned long long)f[i].pc);
	return frames_text;
}

void expect_frame(const struct gt_frame *f, size_t n, size_t i, const char *func,
			 const char *file_base, uint32_t line)
{
	cr_assert_lt(i, n, "frame %zu missing: %s", i, show(f, n));
	cr_expect_str_eq(f[i].func, func, "frame %zu: %s", i, show(f, n));
	if (file_base)
		cr_expect_str_eq(fx_basename(f[i].file), file_base, "frame %zu: %s", i, show(f, n));
	if (line)
		cr_expect_eq(f[i].line, line, "frame %zu line: %s", i, show(f, n));
}

size_t symbolize(struct gt_symbolizer *sym, const struct fixture *fx, const char *label,
			struct gt_frame *out, size_t max)
{
	const struct fx_stack *s = fx_stack(fx, label);
	return gt_sym_stack(sym, s->pcs, s->n, out, max);
}

/* Runs a fixture and loads its module map into a fresh symbolizer. */
struct gt_symbolizer *load(struct fixture *fx, const char *exe, const char *arg)
{
	fx_run(fx, exe, arg);
	struct gt_symbolizer *sym = fx_symbolizer(&warnings, NULL);
	add_modules(fx, sym);
	return sym;
}

void remove_tree(const char *dir)
{
	char cmd[1024];
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	cr_expect_eq(system(cmd), 0);
}
char tmp_dir[256];

void make_tmp_dir(void)
{
	snprintf(tmp_dir, sizeof(tmp_dir), "/tmp/gt-sym-test-XXXXXX");
	cr_assert_not_null(mkdtemp(tmp_dir));
}

void remove_tmp_dir(void)
{
	if (tmp_dir[0])
		remove_tree(tmp_dir);
}

