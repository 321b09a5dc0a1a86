/* Interned strings, the PC maps, C++ demangling and the start-up function list. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "symbolizer_private.h"

/* ---- interned strings ---------------------------------------------------------------- */

#define ARENA_CHUNK_BYTES (64u * 1024u)

struct gt_sym_arena_chunk {
	struct gt_sym_arena_chunk *next;
	size_t used, size;
	char data[];
};

static uint64_t hash_bytes(const char *p, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ull; /* FNV-1a */
	for (size_t i = 0; i < n; i++) {
		h ^= (unsigned char)p[i];
		h *= 0x100000001b3ull;
	}
	return h;
}

void gt_sym_strings_init(struct gt_sym_strings *s)
{
	memset(s, 0, sizeof(*s));
}

void gt_sym_strings_fini(struct gt_sym_strings *s)
{
	struct gt_sym_arena_chunk *c = s->chunks;
	while (c) {
		struct gt_sym_arena_chunk *next = c->next;
		free(c);
		c = next;
	}
	free(s->slots);
	memset(s, 0, sizeof(*s));
}

static char *arena_alloc(struct gt_sym_strings *s, size_t n)
{
	struct gt_sym_arena_chunk *c = s->chunks;
	if (!c || c->size - c->used < n) {
		size_t size = n > ARENA_CHUNK_BYTES ? n : ARENA_CHUNK_BYTES;
		struct gt_sym_arena_chunk *fresh = malloc(sizeof(*fresh) + size);
		if (!fresh)
			return NULL;
		fresh->used = 0;
		fresh->size = size;
		/* A big one-off string goes behind the current chunk so the current one keeps
		 * filling. */
		if (c && size > ARENA_CHUNK_BYTES) {
			fresh->next = c->next;
			c->next = fresh;
		} else {
			fresh->next = c;
			s->chunks = fresh;
		}
		c = fresh;
	}
	char *p = c->data + c->used;
	c->used += n;
	return p;
}

static int strings_grow(struct gt_sym_strings *s)
{
	size_t n = s->n_slots ? s->n_slots * 2 : 1024;
	const char **slots = calloc(n, sizeof(*slots));
	if (!slots)
		return -1;
	for (size_t i = 0; i < s->n_slots; i++) {
		const char *str = s->slots[i];
		if (!str)
			continue;
		size_t j = hash_bytes(str, strlen(str)) & (n - 1);
		while (slots[j])
			j = (j + 1) & (n - 1);
		slots[j] = str;
	}
	free(s->slots);
	s->slots = slots;
	s->n_slots = n;
	return 0;
}

const char *gt_sym_intern_n(struct gt_sym_strings *s, const char *str, size_t len)
{
	if ((s->n_used + 1) * 2 > s->n_slots && strings_grow(s) < 0)
		return "?";
	size_t mask = s->n_slots - 1;
	size_t j = hash_bytes(str, len) & mask;
	for (; s->slots[j]; j = (j + 1) & mask) {
		const char *have = s->slots[j];
		if (strncmp(have, str, len) == 0 && have[len] == '\0')
			return have;
	}
	char *copy = arena_alloc(s, len + 1);
	if (!copy)
		return "?";
	memcpy(copy, str, len);
	copy[len] = '\0';
	s->slots[j] = copy;
	s->n_used++;
	return copy;
}

const char *gt_sym_intern(struct gt_sym_strings *s, const char *str)
{
	return gt_sym_intern_n(s, str, strlen(str));
}

int gt_sym_reserve(void **array, size_t count, size_t *cap, size_t elem_size, size_t first)
{
	if (count < *cap)
		return 0;
	size_t grown_cap = *cap ? *cap * 2 : first;
	void *grown = realloc(*array, grown_cap * elem_size);
	if (!grown)
		return -1;
	*array = grown;
	*cap = grown_cap;
	return 0;
}

ptrdiff_t gt_sym_find_range(const void *array, size_t n, size_t elem_size, uint64_t addr,
			    size_t tries)
{
	const char *base = array;
	size_t lo = 0, hi = n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const uint64_t *range = (const uint64_t *)(const void *)(base + mid * elem_size);
		if (range[0] <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo; i-- > 0 && tries-- > 0;) {
		const uint64_t *range = (const uint64_t *)(const void *)(base + i * elem_size);
		if (addr < range[1])
			return (ptrdiff_t)i;
	}
	return -1;
}

/* ---- u64 -> u32 map ------------------------------------------------------------------ */

static size_t map_index(uint64_t key, size_t mask)
{
	key ^= key >> 33;
	key *= 0xff51afd7ed558ccdull;
	key ^= key >> 33;
	return (size_t)key & mask;
}

bool gt_sym_map_get(const struct gt_sym_map *m, uint64_t key, uint32_t *value)
{
	if (!m->n_slots)
		return false;
	size_t mask = m->n_slots - 1;
	for (size_t j = map_index(key, mask);; j = (j + 1) & mask) {
		const struct gt_sym_map_slot *slot = &m->slots[j];
		if (slot->key == 0)
			return false;
		if (slot->key == key + 1) {
			*value = slot->value;
			return true;
		}
	}
}

static int map_grow(struct gt_sym_map *m)
{
	size_t n = m->n_slots ? m->n_slots * 2 : 4096;
	struct gt_sym_map_slot *slots = calloc(n, sizeof(*slots));
	if (!slots)
		return -1;
	for (size_t i = 0; i < m->n_slots; i++) {
		if (!m->slots[i].key)
			continue;
		size_t j = map_index(m->slots[i].key - 1, n - 1);
		while (slots[j].key)
			j = (j + 1) & (n - 1);
		slots[j] = m->slots[i];
	}
	free(m->slots);
	m->slots = slots;
	m->n_slots = n;
	return 0;
}

int gt_sym_map_put(struct gt_sym_map *m, uint64_t key, uint32_t value)
{
	if ((m->n_used + 1) * 2 > m->n_slots && map_grow(m) < 0)
		return -1;
	size_t mask = m->n_slots - 1;
	size_t j = map_index(key, mask);
	while (m->slots[j].key && m->slots[j].key != key + 1)
		j = (j + 1) & mask;
	if (!m->slots[j].key)
		m->n_used++;
	m->slots[j].key = key + 1;
	m->slots[j].value = value;
	return 0;
}

void gt_sym_map_clear(struct gt_sym_map *m)
{
	if (m->slots)
		memset(m->slots, 0, m->n_slots * sizeof(*m->slots));
	m->n_used = 0;
}

void gt_sym_map_fini(struct gt_sym_map *m)
{
	free(m->slots);
	memset(m, 0, sizeof(*m));
}

/* ---- names --------------------------------------------------------------------------- */

typedef char *(*cxa_demangle_fn)(const char *, char *, size_t *, int *);

/* __cxa_demangle comes from libstdc++ at run time, so the C build links no C++ runtime;
 * without it mangled names stay as they are. */
static cxa_demangle_fn find_cxa_demangle(void)
{
	void *fn = dlsym(RTLD_DEFAULT, "__cxa_demangle");
	if (!fn) {
		void *lib = dlopen("libstdc++.so.6", RTLD_LAZY | RTLD_LOCAL);
		if (lib)
			fn = dlsym(lib, "__cxa_demangle");
	}
	cxa_demangle_fn out;
	memcpy(&out, &fn, sizeof(out));
	return out;
}

/* Length of name without GCC's clone suffixes: " [clone .constprop.0]" after a demangled
 * name, ".constprop.0", ".isra.0", ".part.0", ".cold" after a plain one.  A clone is the
 * same source function, and a profile should count it as one. */
static size_t without_clone_suffix(const char *name, size_t len, bool demangled)
{
	if (demangled) {
		static const char clone[] = " [clone ";
		while (len > 0 && name[len - 1] == ']') {
			size_t at = len - 1;
			while (at > 0 && name[at] != '[')
				at--;
			if (at == 0 || at + 1 < sizeof(clone) - 1 ||
			    memcmp(name + at - 1, clone, sizeof(clone) - 1) != 0)
				break;
			len = at - 1;
		}
		return len;
	}
	static const char *const parts[] = { "constprop", "isra", "part", "cold", "lto_priv",
					     "localalias" };
	const char *dot = memchr(name, '.', len);
	if (!dot || dot == name)
		return len;
	for (const char *p = dot; p < name + len;) {
		const char *start = p + 1;
		const char *end = memchr(start, '.', (size_t)(name + len - start));
		if (!end)
			end = name + len;
		size_t n = (size_t)(end - start);
		bool known = n > 0 && strspn(start, "0123456789") >= n;
		for (size_t i = 0; !known && i < sizeof(parts) / sizeof(parts[0]); i++)
			known = strlen(parts[i]) == n && memcmp(start, parts[i], n) == 0;
		if (!known)
			return len;
		p = end;
	}
	return (size_t)(dot - name);
}

const char *gt_sym_function_name(struct gt_symbolizer *sym, const char *raw)
{
	char *demangled = NULL;
	const char *name = raw;
	/* Rust: v0 (_R...) and legacy (_ZN...17h<hash>E, which __cxa_demangle would show with
	 * its hash) through libiberty, which answers NULL for anything else */
	if (raw[0] == '_' && (raw[1] == 'R' || (raw[1] == 'Z' && raw[2] == 'N')) &&
	    (demangled = rust_demangle(raw, DMGL_PARAMS | DMGL_ANSI)) != NULL)
		name = demangled;
	else if (raw[0] == '_' && raw[1] == 'Z') {
		if (!sym->demangle_looked_up) {
			sym->cxa_demangle = find_cxa_demangle();
			sym->demangle_looked_up = true;
		}
		int status = -1;
		if (sym->cxa_demangle)
			demangled = sym->cxa_demangle(raw, NULL, NULL, &status);
		if (demangled && status == 0)
			name = demangled;
	}
	size_t len = without_clone_suffix(name, strlen(name), name != raw);
	if (len == 0)
		len = strlen(name);
	const char *kept = len > GT_SYM_NAME_MAX ? name + (len - GT_SYM_NAME_MAX) : name;
	const char *out = gt_sym_intern_n(&sym->strings, kept,
					  len > GT_SYM_NAME_MAX ? GT_SYM_NAME_MAX : len);
	free(demangled);
	return out;
}

bool gt_sym_is_startup_function(const char *name)
{
	static const char *const startup[] = {
		"start_thread", "clone", "clone3", "__clone", "__clone3",
		"__libc_start_call_main", "__libc_start_main", "__libc_start_main_impl", "_start",
	};
	for (size_t i = 0; i < sizeof(startup) / sizeof(startup[0]); i++)
		if (strcmp(name, startup[i]) == 0)
			return true;
	return false;
}
