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

/* x86-64 DWARF register order from perf's REGS_USER order (GT_KERNEL_REGS_USER). */
static bool dwarf_regs(const struct gt_kernel_sample *k, uint64_t out[GT_SYM_UNWIND_REGS])
{
	if (!k->regs || k->regs_mask != GT_KERNEL_REGS_USER || k->n_regs != 20)
		return false;
	static const uint8_t from[GT_SYM_UNWIND_REGS] = { 0, 3, 2, 1, 4, 5, 6, 7, 12, 13, 14,
							   15, 16, 17, 18, 19, 8 };
	for (int i = 0; i < GT_SYM_UNWIND_REGS; i++)
		out[i] = k->regs[from[i]];
	return true;
}

size_t gt_kernel_sample_unwind(struct gt_symbolizer *sym, const struct gt_kernel_sample *k,
			       uint64_t *pcs, size_t max, bool *complete)
{
	uint64_t regs[GT_SYM_UNWIND_REGS];
	*complete = false;
	if (!max || !dwarf_regs(k, regs))
		return 0;
	size_t n = sym ? gt_sym_unwind(sym, k->tid, regs, k->stack, k->stack_size, pcs, max,
				       complete) : 0;
	if (!n) {
		pcs[n++] = regs[16] + 1;   /* the interrupted instruction alone */
		*complete = false;
	}
	return n;
}
