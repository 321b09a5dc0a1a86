/* samples: see samples.h. */
#include "samples.h"

#include <string.h>

#include "symbolizer/symbolizer.h"

/* The kind of the event with id (GT_KERNEL_EV_*), 0 when the table does not have it. */
static uint32_t event_kind(const struct gt_kernel_file *f, uint64_t id)
{
	for (uint32_t i = 0; i < f->h.n_events; i++)
		if (f->events[i].id == id)
			return f->events[i].kind;
	return 0;
}

/* A SAMPLE record of the header's sample_sample_type: IDENTIFIER, IP, TID, TIME, CPU,
 * REGS_USER, STACK_USER in perf's field order. */
bool gt_kernel_sample_parse(const struct gt_kernel_file *f, const unsigned char *p, size_t size,
			    struct gt_kernel_sample *out)
{
	const unsigned char *q = p + sizeof(struct perf_event_header), *end = p + size;
	uint64_t v[5];
	if ((size_t)(end - q) < sizeof v)
		return false;
	memcpy(v, q, sizeof v);
	q += sizeof v;
	*out = (struct gt_kernel_sample){
		.kind = event_kind(f, v[0]),
		.ip = v[1],
		.pid = (uint32_t)v[2],
		.tid = (uint32_t)(v[2] >> 32),
		.time = v[3],
		.cpu = (uint32_t)v[4],
		.regs_mask = f->h.sample_regs_user,
		.arch = f->h.arch ? f->h.arch : GT_ARCH_X86_64,
	};
	uint64_t abi, n;
	if ((size_t)(end - q) < 8)
		return false;
	memcpy(&abi, q, 8);
	q += 8;
	if (abi != 0) {
		n = (uint64_t)__builtin_popcountll(f->h.sample_regs_user);
		if ((size_t)(end - q) < n * 8)
			return false;
		out->regs = (const uint64_t *)q;  /* records are 8-aligned in an 8-aligned file */
		out->n_regs = (uint32_t)n;
		q += n * 8;
	}
	if ((size_t)(end - q) < 8)
		return false;
	memcpy(&n, q, 8);
	q += 8;
	if (n != 0) {
		uint64_t dyn;
		if ((size_t)(end - q) < n + 8)
			return false;
		memcpy(&dyn, q + n, 8);
		out->stack = q;
		out->stack_size = dyn < n ? dyn : n;
	}
	return true;
}

bool gt_kernel_sample_at(const struct gt_kernel_file *f, uint64_t offset,
			 struct gt_kernel_sample *out)
{
	struct perf_event_header h;
	if (offset + sizeof h > f->records_len)
		return false;
	memcpy(&h, f->records + offset, sizeof h);
	return h.type == PERF_RECORD_SAMPLE && h.size <= f->records_len - offset &&
	       gt_kernel_sample_parse(f, f->records + offset, h.size, out);
}

/* The sample's registers in its arch's DWARF order (symbolizer.h), from perf's REGS_USER
 * order of the recording kernel (records.h: header.arch and its mask); false when they are
 * not the set the recorder asks for. */
static bool dwarf_regs(const struct gt_kernel_sample *k, struct gt_sym_regs *out)
{
	if (!k->regs)
		return false;
	if (k->arch == GT_ARCH_X86_64 && k->regs_mask == GT_KERNEL_REGS_USER_X86_64 &&
	    k->n_regs == 20) {
		static const uint8_t from[17] = { 0, 3, 2, 1, 4, 5, 6, 7, 12, 13, 14, 15, 16, 17,
						  18, 19, 8 };
		*out = (struct gt_sym_regs){ .arch = GT_SYM_ARCH_X86_64, .n = 17,
					     .pc = k->regs[8], .sp = k->regs[7] };
		for (int i = 0; i < 17; i++)
			out->dwarf[i] = k->regs[from[i]];
		return true;
	}
	if (k->arch == GT_ARCH_AARCH64 && k->regs_mask == GT_KERNEL_REGS_USER_AARCH64 &&
	    k->n_regs == 33) {
		/* X0..X30, SP are DWARF registers 0 to 31 in perf's order; the PC follows */
		*out = (struct gt_sym_regs){ .arch = GT_SYM_ARCH_AARCH64, .n = 32,
					     .pc = k->regs[32], .sp = k->regs[31] };
		memcpy(out->dwarf, k->regs, 32 * sizeof *k->regs);
		return true;
	}
	return false;
}

size_t gt_kernel_sample_unwind(struct gt_symbolizer *sym, const struct gt_kernel_sample *k,
			       uint64_t *pcs, size_t max, bool *complete)
{
	struct gt_sym_regs regs;
	*complete = false;
	if (!max || !dwarf_regs(k, &regs))
		return 0;
	size_t n = sym ? gt_sym_unwind(sym, k->tid, &regs, k->stack, k->stack_size, pcs, max,
				       complete) : 0;
	if (!n) {
		pcs[n++] = regs.pc + 1;   /* the interrupted instruction alone */
		*complete = false;
	}
	return n;
}
