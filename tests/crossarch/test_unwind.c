/* A CPU sample of each arch unwound and symbolized on this host, whatever its own arch:
 * fixtures/selfsample-<arch>.gtkern holds one sample that fixtures/selfsample (built for
 * that arch, committed beside it) took of itself in sample_here, called from main through
 * outer_call and middle_call (fixtures/README.md says how they were made).  The file is read
 * by the kernel reader, its registers mapped by the header's arch, the stack unwound by
 * libdwfl with that arch's unwinder and named from the arch's executable. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "kernel/reader.h"
#include "kernel/samples.h"
#include "symbolizer/symbolizer.h"

static void first_sample(uint64_t offset, uint64_t time, uint32_t kind, void *ctx)
{
	(void)time, (void)kind;
	uint64_t *at = ctx;
	if (*at == UINT64_MAX)
		*at = offset;
}

static void ignore_record(uint32_t type, uint16_t misc, const struct gt_kernel_id *id, void *ctx)
{
	(void)type, (void)misc, (void)id, (void)ctx;
}

/* The functions of the sample of fixtures/selfsample-<arch>.gtkern, innermost first, one a
 * line, into out; how many frames. */
static size_t sample_functions(const char *arch, char *out, size_t size, uint32_t *sample_arch)
{
	char path[512], module[512];
	const char *dir = getenv("GT_CROSSARCH_FIXTURES");
	cr_assert_not_null(dir, "GT_CROSSARCH_FIXTURES (set by meson) names tests/crossarch/fixtures");
	snprintf(path, sizeof path, "%s/selfsample-%s.gtkern", dir, arch);
	snprintf(module, sizeof module, "%s/selfsample-%s.module", dir, arch);
	FILE *mf = fopen(module, "r");
	cr_assert_not_null(mf, "%s", module);
	uint64_t bias, lo, hi;
	cr_assert_eq(fscanf(mf, "module %" SCNx64 " %" SCNx64 " %" SCNx64, &bias, &lo, &hi), 3);
	fclose(mf);

	struct gt_kernel_file f;
	char err[512];
	cr_assert_eq(gt_kernel_open(path, &f, err, sizeof err), 0, "%s", err);
	uint64_t at = UINT64_MAX;
	struct gt_kernel_counts c = {0};
	gt_kernel_walk(&f, ignore_record, first_sample, &at, &c);
	cr_assert_eq(c.samples_cpu, 1);
	struct gt_kernel_sample k;
	cr_assert(gt_kernel_sample_at(&f, at, &k));
	*sample_arch = k.arch;

	struct gt_symbolizer *sym = gt_sym_new(NULL);
	snprintf(path, sizeof path, "%s/selfsample-%s", dir, arch);
	cr_assert_eq(gt_sym_add_module(sym, path, NULL, 0, bias, lo, hi, GT_SYM_MAIN_EXE), 0);
	uint64_t pcs[32];
	bool complete;
	size_t n = gt_kernel_sample_unwind(sym, &k, pcs, 32, &complete);
	struct gt_frame frames[32];
	size_t nf = gt_sym_stack(sym, pcs, n, frames, 32), at_out = 0;
	out[0] = '\0';
	for (size_t i = 0; i < nf; i++)
		at_out += (size_t)snprintf(out + at_out, size - at_out, "%s\n", frames[i].func);
	gt_sym_free(sym);
	gt_kernel_close(&f);
	return nf;
}

/* Parameters are indices: Criterion may run a case in a process of its own, where the
 * parent's pointers mean nothing. */
static const struct { const char *name; uint32_t arch; } arches[] = {
	{"x86_64", GT_ARCH_X86_64}, {"aarch64", GT_ARCH_AARCH64},
};

ParameterizedTestParameters(unwind, a_sample_of_each_arch_names_its_callers)
{
	static int index[] = {0, 1};
	return cr_make_param_array(int, index, sizeof index / sizeof *index);
}

ParameterizedTest(int *index, unwind, a_sample_of_each_arch_names_its_callers)
{
	const char *const *arch = &arches[*index].name;
	char funcs[4096];
	uint32_t sample_arch;
	size_t n = sample_functions(*arch, funcs, sizeof funcs, &sample_arch);
	cr_assert_eq(sample_arch, arches[*index].arch, "the header says the arch");
	/* the sampled function, then its callers from the copied stack alone */
	cr_assert_geq(n, 4, "%s: %zu frames:\n%s", *arch, n, funcs);
	cr_assert(strncmp(funcs, "sample_here\nmiddle_call\nouter_call\nmain\n", 40) == 0,
		  "%s: frames:\n%s", *arch, funcs);
}
