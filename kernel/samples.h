/* samples: the perf samples of a kernel scheduling file (records.h, GT_KERNEL_SAMPLES_TYPE):
 * their layout decoded, and their user stacks unwound by the symbolizer.  What the trace makes
 * of them is the encoder's (encoder/cpu_samples.c); the report's off-CPU stacks use them too. */
#ifndef GOTRACE_KERNEL_SAMPLES_H
#define GOTRACE_KERNEL_SAMPLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader.h"

struct gt_symbolizer;

/* A sample (PERF_RECORD_SAMPLE of a sampling event), pointing into the file's mapping. */
struct gt_kernel_sample {
	uint32_t kind;            /* GT_KERNEL_EV_CPU or GT_KERNEL_EV_OFFCPU */
	uint32_t pid, tid, cpu;
	uint64_t time;            /* CLOCK_MONOTONIC ns */
	uint64_t ip;
	const uint64_t *regs;     /* n_regs, in the bit order of the header's sample_regs_user;
				   * NULL: no user registers (the sample hit no user code) */
	uint32_t n_regs;
	uint64_t regs_mask;
	uint32_t arch;            /* GT_ARCH_* whose perf registers they are (header.arch) */
	const uint8_t *stack;     /* the copy of the user stack from its SP on */
	uint64_t stack_size;      /* bytes of it that are valid */
};

/* The sample at offset (from gt_kernel_walk); false when it is not a whole sample. */
bool gt_kernel_sample_at(const struct gt_kernel_file *f, uint64_t offset,
			 struct gt_kernel_sample *out);

/* The sample record of size bytes at p (reader.c's walk counts them with it). */
bool gt_kernel_sample_parse(const struct gt_kernel_file *f, const unsigned char *p, size_t size,
			    struct gt_kernel_sample *out);

/* The return addresses of a sample (gt_sym_stack's convention), unwound with sym's current
 * space (NULL: the interrupted instruction alone).  0 when the sample has no user
 * registers; *complete as gt_sym_unwind says. */
size_t gt_kernel_sample_unwind(struct gt_symbolizer *sym, const struct gt_kernel_sample *k,
			       uint64_t *pcs, size_t max, bool *complete);

#endif
