/* cpu_samples: the kernel's CPU samples of a run (kernel/samples.h: cpu-clock samples with a
 * copy of the user stack) written into the trace as Go CPU samples (gt_wire_cpu_sample), in
 * time order among the model's events: each unwound with DWARF CFI (gt_sym_unwind) from the
 * process's modules as the capture recorded them, symbolized like every other stack, on the
 * goroutine of the thread the kernel names and the P of the CPU it ran on (issue 15, item 3).
 * Off-CPU samples (--offcpu-stacks) are counted here, and give the model's untraced waits
 * their stacks (gt_cpu_samples_offcpu_stack); gt_offcpu_* reads them for the report. */
#ifndef GOTRACE_CPU_SAMPLES_H
#define GOTRACE_CPU_SAMPLES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "model.h"

struct gt_cpu_samples;

/* Opens the kernel file at path.  NULL with a message in err. */
struct gt_cpu_samples *gt_cpu_samples_open(const char *path, char *err, size_t err_size);
/* Writes the samples stamped at or before ticks (the next fact's) into m's trace. */
void gt_cpu_samples_until(struct gt_cpu_samples *s, struct gt_model *m, uint64_t ticks);
/* The ticks of a capture timestamp on m's clock (what gt_cpu_samples_until takes). */
uint64_t gt_cpu_samples_ticks(const struct gt_model *m, uint64_t tsc);
struct mthread;
/* The stack of the off-CPU sample of t's switch-out at mono_ns (CLOCK_MONOTONIC), written
 * into m's trace; 0 when s is NULL or it has none. */
uint64_t gt_cpu_samples_offcpu_stack(struct gt_cpu_samples *s, struct gt_model *m,
				     const struct mthread *t, uint64_t mono_ns);
/* After the last fact: the samples up to it; the rest are outside. */
void gt_cpu_samples_finish(struct gt_cpu_samples *s, struct gt_model *m);
void gt_cpu_samples_counts(const struct gt_cpu_samples *s, struct gt_cpu_sample_counts *out);
void gt_cpu_samples_close(struct gt_cpu_samples *s);
#endif
