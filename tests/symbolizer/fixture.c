#include "fixture.h"

#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void parse_hex_bytes(const char *hex, uint8_t *out, size_t *len)
{
	*len = 0;
	if (strcmp(hex, "-") == 0)
		return;
	for (size_t i = 0; hex[2 * i] && hex[2 * i + 1] && i < 64; i++) {
		unsigned byte;
		sscanf(hex + 2 * i, "%2x", &byte);
		out[(*len)++] = (uint8_t)byte;
	}
}

void fx_run(struct fixture *fx, const char *exe, const char *arg)
{
	memset(fx, 0, sizeof(*fx));
	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "'%s' %s%s%s", exe, arg ? "'" : "", arg ? arg : "",
		 arg ? "'" : "");
	FILE *out = popen(cmd, "r");
	cr_assert_not_null(out, "cannot run %s", exe);
	static char line[16384];
	while (fgets(line, sizeof(line), out)) {
		line[strcspn(line, "\n")] = '\0';
		if (line[0] == 'M' && fx->n_modules < FX_MAX) {
			struct fx_module *m = &fx->modules[fx->n_modules];
			char build_id[160];
			int used = 0;
			if (sscanf(line, "M %u %lx %lx %lx %159s %n", &m->flags, &m->bias, &m->lo,
				   &m->hi, build_id, &used) >= 5 && used > 0) {
				parse_hex_bytes(build_id, m->build_id, &m->build_id_len);
				snprintf(m->path, sizeof(m->path), "%s", line + used);
				fx->n_modules++;
			}
		} else if (line[0] == 'S' && fx->n_stacks < FX_MAX) {
			struct fx_stack *s = &fx->stacks[fx->n_stacks];
			int used = 0, n = 0;
			if (sscanf(line, "S %63s %d%n", s->label, &n, &used) < 2)
				continue;
			const char *p = line + used;
			for (int i = 0; i < n && s->n < 128; i++) {
				char *end;
				s->pcs[s->n++] = strtoull(p, &end, 16);
				p = end;
			}
			fx->n_stacks++;
		} else if (line[0] == 'F' && fx->n_funcs < FX_MAX) {
			struct fx_func *f = &fx->funcs[fx->n_funcs];
			if (sscanf(line, "F %63s %lx", f->label, &f->addr) == 2)
				fx->n_funcs++;
		}
	}
	int status = pclose(out);
	cr_assert_eq(status, 0, "%s exited with status %d", exe, status);
	cr_assert_gt(fx->n_modules, 0, "%s reported no modules", exe);
}

const struct fx_stack *fx_stack(const struct fixture *fx, const char *label)
{
	for (size_t i = 0; i < fx->n_stacks; i++)
		if (strcmp(fx->stacks[i].label, label) == 0)
			return &fx->stacks[i];
	cr_assert_fail("fixture reported no stack %s", label);
	return NULL;
}

uint64_t fx_func(const struct fixture *fx, const char *label)
{
	for (size_t i = 0; i < fx->n_funcs; i++)
		if (strcmp(fx->funcs[i].label, label) == 0)
			return fx->funcs[i].addr;
	cr_assert_fail("fixture reported no function %s", label);
	return 0;
}

struct fx_module *fx_module(struct fixture *fx, const char *suffix)
{
	size_t n = strlen(suffix);
	for (size_t i = 0; i < fx->n_modules; i++) {
		size_t len = strlen(fx->modules[i].path);
		if (len >= n && strcmp(fx->modules[i].path + len - n, suffix) == 0)
			return &fx->modules[i];
	}
	cr_assert_fail("fixture reported no module *%s", suffix);
	return NULL;
}

struct fx_module *fx_main_module(struct fixture *fx)
{
	for (size_t i = 0; i < fx->n_modules; i++)
		if (fx->modules[i].flags & GT_SYM_MAIN_EXE)
			return &fx->modules[i];
	cr_assert_fail("fixture reported no main executable");
	return NULL;
}

void fx_add_modules(const struct fixture *fx, struct gt_symbolizer *sym)
{
	for (size_t i = 0; i < fx->n_modules; i++) {
		const struct fx_module *m = &fx->modules[i];
		cr_assert_eq(gt_sym_add_module(sym, m->path, m->build_id, m->build_id_len, m->bias,
					       m->lo, m->hi, m->flags),
			     0, "module %s refused", m->path);
	}
}

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

const char *fx_basename(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

static void collect_warning(void *ctx, const char *line)
{
	struct fx_warnings *w = ctx;
	if (w->n < 16)
		snprintf(w->lines[w->n], sizeof(w->lines[w->n]), "%s", line);
	w->n++;
}

struct gt_symbolizer *fx_symbolizer(struct fx_warnings *w, const char *const *debug_dirs)
{
	memset(w, 0, sizeof(*w));
	struct gt_sym_options opt = { .debug_dirs = debug_dirs, .warn = collect_warning,
				      .warn_ctx = w };
	struct gt_symbolizer *sym = gt_sym_new(&opt);
	cr_assert_not_null(sym);
	return sym;
}
