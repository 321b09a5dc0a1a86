/* Interned strings, address ranges, C++ demangling and the start-up function list. */
#include <dlfcn.h>
#include <stddef.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <libiberty/demangle.h>

#include "symbolizer_private.h"

/* ---- interned strings ---------------------------------------------------------------- */

const char *gt_sym_intern_n(struct gt_intern *s, const char *str, size_t len)
{
	bool inserted;
	const struct gt_intern_entry *e = gt_intern(s, str, len, 1, &inserted);
	return e ? e->bytes : "?";
}

const char *gt_sym_intern(struct gt_intern *s, const char *str)
{
	return gt_sym_intern_n(s, str, strlen(str));
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
