/* Symbolizer throughput on real modules: the module map of a running fixture (its libc
 * has DWARF here when libc6-dbg is installed), PCs in the middle of every function libc
 * exports.  Prints figures; never fails on slowness. */
#include <fcntl.h>
#include <gelf.h>
#include <libelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "fixture.h"
#include "symbolizer/symbolizer.h"

/* CPU time of this thread: the machine may be shared, and waiting is not the
 * symbolizer's cost. */
static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Return addresses inside each function symbol of the file (the middle of it, + 1 as a
 * return address would be). */
static size_t function_pcs(const char *path, uint64_t bias, uint64_t *out, size_t max)
{
	elf_version(EV_CURRENT);
	int fd = open(path, O_RDONLY);
	if (fd < 0)
		return 0;
	Elf *elf = elf_begin(fd, ELF_C_READ, NULL);
	size_t n = 0;
	for (Elf_Scn *scn = elf ? elf_nextscn(elf, NULL) : NULL; scn; scn = elf_nextscn(elf, scn)) {
		GElf_Shdr shdr;
		if (!gelf_getshdr(scn, &shdr) || shdr.sh_type != SHT_DYNSYM || !shdr.sh_entsize)
			continue;
		Elf_Data *data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && i < shdr.sh_size / shdr.sh_entsize && n < max; i++) {
			GElf_Sym s;
			if (gelf_getsym(data, (int)i, &s) && GELF_ST_TYPE(s.st_info) == STT_FUNC &&
			    s.st_value && s.st_size > 2)
				out[n++] = bias + s.st_value + s.st_size / 2 + 1;
		}
	}
	if (elf)
		elf_end(elf);
	close(fd);
	return n;
}

static void quiet(void *ctx, const char *line)
{
	(void)ctx, (void)line;
}

int main(int argc, char **argv)
{
	const char *fixture = argc > 1 ? argv[1] : FX_INLINE;
	static struct fixture fx;
	if (fx_load(&fx, fixture, NULL) != 0) {
		printf("bench-symbolizer: cannot run %s; no figures\n", fixture);
		return 0;
	}
	struct fx_module *libc = fx_find_module(&fx, "libc.so.6");
	if (!libc) {
		printf("bench-symbolizer: no libc in the fixture's modules; no figures\n");
		return 0;
	}
	enum { MAX_PCS = 1 << 16 };
	static uint64_t pcs[MAX_PCS];
	size_t n = function_pcs(libc->path, libc->bias, pcs, MAX_PCS);
	if (n < 100) {
		printf("bench-symbolizer: too few functions in %s; no figures\n", libc->path);
		return 0;
	}

	struct gt_sym_options opt = { .warn = quiet };
	struct gt_symbolizer *sym = gt_sym_new(&opt);
	fx_add_modules(&fx, sym);
	struct gt_frame frames[64];

	double t0 = now_s();
	gt_sym_stack(sym, &pcs[0], 1, frames, 64); /* opens libc and its debug info */
	double t_load = now_s() - t0;

	t0 = now_s();
	size_t n_frames = 0;
	for (size_t i = 1; i < n; i++)
		n_frames += gt_sym_stack(sym, &pcs[i], 1, frames, 64);
	double t_cold = now_s() - t0;

	/* Other PCs in the same functions: uncached, their compilation units already read. */
	enum { WARM_OFFSETS = 8 };
	t0 = now_s();
	for (uint64_t k = 1; k <= WARM_OFFSETS; k++)
		for (size_t i = 1; i < n; i++)
			gt_sym_stack(sym, (uint64_t[]){ pcs[i] + k }, 1, frames, 64);
	double t_warm = now_s() - t0;

	/* Stacks of 16 PCs from the same set: the PC -> frames cache at work. */
	enum { ROUNDS = 200000, DEPTH = 16 };
	uint64_t stack[DEPTH];
	uint32_t x = 1;
	t0 = now_s();
	for (size_t r = 0; r < ROUNDS; r++) {
		for (size_t d = 0; d < DEPTH; d++) {
			x = x * 1103515245u + 12345u;
			stack[d] = pcs[(x >> 8) % n];
		}
		gt_sym_stack(sym, stack, DEPTH, frames, 64);
	}
	double t_hot = now_s() - t0;

	struct gt_sym_stats st;
	gt_sym_stats(sym, &st);
	printf("bench-symbolizer: module %s (%zu function PCs), CPU time\n", libc->path, n);
	printf("  first lookup (opens module + debug info): %.1f ms\n", t_load * 1e3);
	printf("  distinct PCs, uncached: %.0f PCs/s (%.1f us/PC, %.2f frames/PC with inlines)\n",
	       (double)(n - 1) / t_cold, t_cold * 1e6 / (double)(n - 1),
	       (double)n_frames / (double)(n - 1));
	printf("  distinct PCs, uncached, their units read before: %.0f PCs/s\n",
	       (double)(n - 1) * WARM_OFFSETS / t_warm);
	printf("  cached stacks of %d PCs: %.0f PCs/s\n", DEPTH, (double)ROUNDS * DEPTH / t_hot);
	double loaded_rate = (double)(n - 1) * WARM_OFFSETS / t_warm;
	printf("  target >= 200000 PCs/s once a module is loaded: %.0f (%.1fx)%s\n", loaded_rate,
	       loaded_rate / 200000.0, loaded_rate >= 100000.0 ? "" : "  BELOW the 100000 floor");
	printf("  looked up %llu, unresolved %llu, modules failed %llu\n",
	       (unsigned long long)st.pcs_looked_up, (unsigned long long)st.pcs_unresolved,
	       (unsigned long long)st.modules_failed);
	gt_sym_free(sym);
	return 0;
}
