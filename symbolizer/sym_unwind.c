/* sym_unwind: a copied user stack (a perf sample: registers and the bytes from SP on) ->
 * return addresses, with libdwfl's DWARF CFI unwinder, as linux tools/perf/util/
 * unwind-libdw.c does it: the process's modules reported into a Dwfl (here one per space,
 * kept and reused for every sample: a Dwfl per sample costs 40x), dwfl_attach_state with
 * callbacks that answer the registers and the stack copy, dwfl_getthread_frames.  The
 * modules are the capture's, as the symbolizer has them (gt_sym_add_module), the vDSO's
 * image this process's own when it is the recorded one.  libdw carries every arch's
 * unwinder: the modules' ELF machine picks it, so an aarch64 sample unwinds on x86-64. */
#include "symbolizer_private.h"

#include <dwarf.h>
#include <gelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The sample being unwound. */
struct unwind_sample {
	uint32_t tid;
	const struct gt_sym_regs *regs;
	const uint8_t *stack;
	uint64_t sp, size;
	uint64_t *pcs;
	size_t n, max;
};

/* One space's Dwfl; allocated once (the threads callbacks' argument, fixed at attach). */
struct gt_sym_unwind {
	Dwfl *dwfl;
	uint64_t maps_version;     /* of the modules reported */
	bool attached;
	uint32_t arch;             /* GT_SYM_ARCH_* of the modules it was attached with */
	struct unwind_sample *cur;
};

static pid_t next_thread(Dwfl *dwfl, void *arg, void **thread_arg)
{
	(void)dwfl;
	struct unwind_sample *s = ((struct gt_sym_unwind *)arg)->cur;
	if (*thread_arg != NULL)
		return 0;
	*thread_arg = s;
	return (pid_t)s->tid;
}

static bool get_thread(Dwfl *dwfl, pid_t tid, void *arg, void **thread_arg)
{
	(void)dwfl;
	(void)tid;
	*thread_arg = ((struct gt_sym_unwind *)arg)->cur;
	return true;
}

/* Only the copy: what the stack held when the sample was taken (CFI needs nothing else). */
static bool memory_read(Dwfl *dwfl, Dwarf_Addr addr, Dwarf_Word *result, void *arg)
{
	(void)dwfl;
	struct unwind_sample *s = ((struct gt_sym_unwind *)arg)->cur;
	if (addr < s->sp || addr - s->sp > s->size || s->size - (addr - s->sp) < sizeof *result)
		return false;
	memcpy(result, s->stack + (addr - s->sp), sizeof *result);
	return true;
}

static bool set_initial_registers(Dwfl_Thread *thread, void *arg)
{
	const struct gt_sym_regs *r = ((struct unwind_sample *)arg)->regs;
	if (!dwfl_thread_state_registers(thread, 0, r->n, r->dwarf))
		return false;
	/* aarch64's PC is no DWARF register (x86-64's is the return address column, set
	 * above): said apart, as elfutils' own aarch64 backend and perf do */
	dwfl_thread_state_register_pc(thread, r->pc);
	return true;
}

static const Dwfl_Thread_Callbacks thread_callbacks = {
	.next_thread = next_thread,
	.get_thread = get_thread,
	.memory_read = memory_read,
	.set_initial_registers = set_initial_registers,
};

static int frame(Dwfl_Frame *state, void *arg)
{
	struct unwind_sample *s = arg;
	Dwarf_Addr pc;
	bool activation;
	if (!dwfl_frame_pc(state, &pc, &activation) || pc == 0)
		return DWARF_CB_ABORT;
	/* the callers' convention is return addresses (gt_sym_stack looks up pc - 1): an
	 * interrupted instruction is said as the address after it */
	s->pcs[s->n++] = activation ? pc + 1 : pc;
	return s->n < s->max ? DWARF_CB_OK : DWARF_CB_ABORT;
}

/* The current space's modules into u->dwfl, those it does not have yet when they changed:
 * libdwfl refuses a file reported again at the same place ("address range overlaps") and
 * then drops the module it had, so a space's later reports only add. */
static bool report_modules(struct gt_symbolizer *sym, struct gt_sym_unwind *u)
{
	if (u->dwfl != NULL && u->maps_version == sym->maps_version)
		return true;
	bool first = u->dwfl == NULL;
	if (first && (u->dwfl = dwfl_begin(&sym->callbacks)) == NULL)
		return false;
	if (first)
		dwfl_report_begin(u->dwfl);
	else
		dwfl_report_begin_add(u->dwfl);
	for (size_t i = 0; i < sym->n_maps; i++) {
		const struct gt_sym_mapping *m = &sym->maps[i];
		bool seen = !first && dwfl_addrmodule(u->dwfl, m->lo) != NULL;
		for (size_t j = 0; j < i && !seen; j++)
			seen = sym->maps[j].img == m->img && sym->maps[j].delta == m->delta;
		if (seen || m->img->state == GT_IMG_FAILED)
			continue;
		int fd = -1;
		if (m->img->flags & GT_SYM_VDSO) {
			/* a sample in clock_gettime is in the vDSO: its CFI leads to the caller.  The
			 * image is this process's, when its build-id is the recorded one (opening
			 * it checks that) */
			if ((m->img->state == GT_IMG_UNOPENED && !gt_sym_image_open(sym, m->img)) ||
			    (fd = gt_sym_vdso_memfd()) < 0)
				continue;
		}
		/* a file that cannot be reported is simply a module the unwinding stops in */
		if (!dwfl_report_elf(u->dwfl, m->img->base_name, m->img->path, fd,
				     m->img->bias - m->delta, false) && fd >= 0)
			close(fd);   /* libdwfl owns it only when it reported the module */
	}
	dwfl_report_end(u->dwfl, NULL, NULL);
	u->maps_version = sym->maps_version;
	return true;
}

static int first_module(Dwfl_Module *mod, void **userdata, const char *name, Dwarf_Addr start,
			void *arg)
{
	(void)userdata, (void)name, (void)start;
	*(Dwfl_Module **)arg = mod;
	return DWARF_CB_ABORT;
}

/* Attaches u's Dwfl to the sample callbacks with the unwinder of its first module's ELF
 * machine (libdwfl's own choice), which it notes in u->arch; false without a module. */
static bool attach(struct gt_symbolizer *sym, struct gt_sym_unwind *u)
{
	Dwfl_Module *mod = NULL;
	Dwarf_Addr bias;
	dwfl_getmodules(u->dwfl, first_module, &mod, 0);
	Elf *elf = mod ? dwfl_module_getelf(mod, &bias) : NULL;
	GElf_Ehdr eh;
	if (elf == NULL || gelf_getehdr(elf, &eh) == NULL)
		return false;
	u->arch = eh.e_machine == EM_X86_64  ? GT_SYM_ARCH_X86_64
		  : eh.e_machine == EM_AARCH64 ? GT_SYM_ARCH_AARCH64 : 0;
	/* the pid is only a name here; the threads callbacks answer for every tid */
	if (!dwfl_attach_state(u->dwfl, elf, (pid_t)(sym->space + 1), &thread_callbacks, u))
		return false;
	u->attached = true;
	return true;
}

size_t gt_sym_unwind(struct gt_symbolizer *sym, uint32_t tid, const struct gt_sym_regs *regs,
		     const uint8_t *stack, size_t stack_size, uint64_t *pcs, size_t max,
		     bool *complete)
{
	*complete = false;
	if (!sym || max == 0 || regs->n > GT_SYM_UNWIND_REGS)
		return 0;
	if (sym->space >= sym->n_unwind) {
		size_t n = sym->space + 1;
		struct gt_sym_unwind **more = realloc(sym->unwind, n * sizeof(*more));
		if (!more)
			return 0;
		memset(more + sym->n_unwind, 0, (n - sym->n_unwind) * sizeof(*more));
		sym->unwind = more;
		sym->n_unwind = n;
	}
	if (!sym->unwind[sym->space] && !(sym->unwind[sym->space] = calloc(1, sizeof(**sym->unwind))))
		return 0;
	struct gt_sym_unwind *u = sym->unwind[sym->space];
	struct unwind_sample s = {
		.tid = tid ? tid : 1, .regs = regs, .stack = stack, .sp = regs->sp,
		.size = stack_size, .pcs = pcs, .max = max,
	};
	if (!report_modules(sym, u))
		return 0;
	/* registers of another arch than the modules' would be read as garbage */
	if ((!u->attached && !attach(sym, u)) || u->arch != regs->arch)
		return 0;
	u->cur = &s;
	int rc = dwfl_getthread_frames(u->dwfl, (pid_t)s.tid, frame, &s);
	u->cur = NULL;
	*complete = rc == 0 || s.n == max;
	return s.n;
}

void gt_sym_unwind_free(struct gt_symbolizer *sym)
{
	for (size_t i = 0; i < sym->n_unwind; i++) {
		if (sym->unwind[i] != NULL && sym->unwind[i]->dwfl != NULL)
			dwfl_end(sym->unwind[i]->dwfl);
		free(sym->unwind[i]);
	}
	free(sym->unwind);
	sym->unwind = NULL;
	sym->n_unwind = 0;
}

/* .eh_frame_hdr's binary search table (PT_GNU_EH_FRAME), read once: the sorted initial
 * locations of every FDE.  Only the layout linkers write (a 4-byte eh_frame_ptr, a udata4
 * count, datarel sdata4 pairs); anything else leaves the table empty. */
static void read_eh_table(struct gt_sym_image *img)
{
	img->eh.read = true;
	Dwarf_Addr bias;
	Elf *elf = dwfl_module_getelf(img->mod, &bias);
	size_t n_phdrs;
	if (elf == NULL || elf_getphdrnum(elf, &n_phdrs) != 0)
		return;
	for (size_t i = 0; i < n_phdrs; i++) {
		GElf_Phdr ph;
		if (gelf_getphdr(elf, (int)i, &ph) == NULL || ph.p_type != PT_GNU_EH_FRAME)
			continue;
		Elf_Data *d = elf_getdata_rawchunk(elf, (int64_t)ph.p_offset, ph.p_filesz, ELF_T_BYTE);
		const uint8_t *h = d ? d->d_buf : NULL;
		if (h == NULL || d->d_size < 12 || h[0] != 1 || (h[1] & 0x07) != 0x03 ||
		    h[2] != DW_EH_PE_udata4 || h[3] != (DW_EH_PE_datarel | DW_EH_PE_sdata4))
			return;
		uint32_t count;
		memcpy(&count, h + 8, 4);
		if (count > (d->d_size - 12) / 8)
			return;
		img->eh.table = h + 12;
		img->eh.count = count;
		img->eh.vaddr = ph.p_vaddr + bias;
		return;
	}
}

bool gt_sym_unwind_function_start(struct gt_sym_image *img, uint64_t addr, uint64_t *start)
{
	/* an FDE covers addr (none: code without unwind information, no function known) */
	Dwarf_Addr bias;
	Dwarf_CFI *cfi = dwfl_module_eh_cfi(img->mod, &bias);
	Dwarf_Frame *frame = NULL;
	if (cfi == NULL || addr < bias || dwarf_cfi_addrframe(cfi, addr - bias, &frame) != 0)
		return false;
	free(frame);
	if (!img->eh.read)
		read_eh_table(img);
	/* FDEs do not overlap: the one covering addr starts at the last start at or before it */
	size_t lo = 0, hi = img->eh.count;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int32_t rel;
		memcpy(&rel, img->eh.table + 8 * mid, 4);
		if (img->eh.vaddr + (uint64_t)(int64_t)rel <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0)
		return false;
	int32_t rel;
	memcpy(&rel, img->eh.table + 8 * (lo - 1), 4);
	*start = img->eh.vaddr + (uint64_t)(int64_t)rel;
	return true;
}
