#include "fixture.h"

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

int fx_load(struct fixture *fx, const char *exe, const char *arg)
{
	memset(fx, 0, sizeof(*fx));
	char cmd[8192];
	snprintf(cmd, sizeof(cmd), "'%s' %s%s%s", exe, arg ? "'" : "", arg ? arg : "",
		 arg ? "'" : "");
	FILE *out = popen(cmd, "r");
	if (!out)
		return -1;
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
	return pclose(out) == 0 && fx->n_modules > 0 ? 0 : -1;
}

const struct fx_stack *fx_find_stack(const struct fixture *fx, const char *label)
{
	for (size_t i = 0; i < fx->n_stacks; i++)
		if (strcmp(fx->stacks[i].label, label) == 0)
			return &fx->stacks[i];
	return NULL;
}

uint64_t fx_find_func(const struct fixture *fx, const char *label)
{
	for (size_t i = 0; i < fx->n_funcs; i++)
		if (strcmp(fx->funcs[i].label, label) == 0)
			return fx->funcs[i].addr;
	return 0;
}

struct fx_module *fx_find_module(struct fixture *fx, const char *suffix)
{
	size_t n = strlen(suffix);
	for (size_t i = 0; i < fx->n_modules; i++) {
		size_t len = strlen(fx->modules[i].path);
		if (len >= n && strcmp(fx->modules[i].path + len - n, suffix) == 0)
			return &fx->modules[i];
	}
	return NULL;
}

struct fx_module *fx_find_main(struct fixture *fx)
{
	for (size_t i = 0; i < fx->n_modules; i++)
		if (fx->modules[i].flags & GT_SYM_MAIN_EXE)
			return &fx->modules[i];
	return NULL;
}

int fx_add_modules(const struct fixture *fx, struct gt_symbolizer *sym)
{
	int refused = 0;
	for (size_t i = 0; i < fx->n_modules; i++) {
		const struct fx_module *m = &fx->modules[i];
		if (gt_sym_add_module(sym, m->path, m->build_id, m->build_id_len, m->bias, m->lo,
				      m->hi, m->flags) != 0)
			refused++;
	}
	return refused;
}

const char *fx_basename(const char *path)
{
	const char *slash = strrchr(path, '/');
	return slash ? slash + 1 : path;
}

