/* libgotrace.so exports exactly the interposed functions of hooks.def, and its version script
 * lists exactly those. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hooks.def"

#define GT_NAME_X(ret, name, params, args, ver) #name,
#define GT_NAME_S(ret, name, params, args, nr, kind, arg) #name,
static const char *const table[] = {GT_HOOKS(GT_NAME_X) GT_SYSCALL_HOOKS(GT_NAME_S)};
#define N_TABLE (sizeof table / sizeof table[0])

static int in_table(const char *name)
{
	for (size_t i = 0; i < N_TABLE; i++)
		if (!strcmp(table[i], name))
			return 1;
	return 0;
}

Test(symbols, exported_equals_table)
{
	char cmd[4200], line[512];
	snprintf(cmd, sizeof cmd, "nm -D --defined-only '%s'", test_preload_path());
	FILE *p = popen(cmd, "r");
	cr_assert_not_null(p);
	size_t exported = 0;
	while (fgets(line, sizeof line, p)) {
		char addr[64], type[8], name[256];
		if (sscanf(line, "%63s %7s %255s", addr, type, name) != 3)
			continue;
		char *at = strchr(name, '@');
		if (at)
			*at = 0;
		cr_expect(in_table(name), "exported but not interposed: %s", name);
		cr_expect(type[0] == 'T' || type[0] == 'W', "%s is %s, not a function", name, type);
		exported++;
	}
	cr_assert_eq(pclose(p), 0);
	cr_assert_eq(exported, N_TABLE, "%zu exported, %zu in hooks.def", exported, N_TABLE);
}

Test(symbols, version_script_equals_table)
{
	FILE *f = fopen(GT_MAP_PATH, "r");
	cr_assert_not_null(f);
	char line[256];
	size_t listed = 0;
	int global = 0;
	while (fgets(line, sizeof line, f)) {
		char name[200];
		if (strstr(line, "global:"))
			global = 1;
		else if (strstr(line, "local:"))
			global = 0;
		else if (global && sscanf(line, " %199[A-Za-z0-9_];", name) == 1) {
			cr_expect(in_table(name), "version script lists %s", name);
			listed++;
		}
	}
	fclose(f);
	cr_assert_eq(listed, N_TABLE);
}

Test(symbols, table_has_no_duplicates)
{
	for (size_t i = 0; i < N_TABLE; i++)
		for (size_t j = i + 1; j < N_TABLE; j++)
			cr_assert_str_neq(table[i], table[j]);
}
