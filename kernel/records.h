/* records: the kernel scheduling file of a `gotrace run` (issue 15): the perf records the
 * launcher (recorder.c) drained from its per-CPU, inherited, enable_on_exec dummy events on
 * the command (context_switch, comm, task; use_clockid CLOCK_MONOTONIC), next to the
 * captures as gotrace-<pid>.gtkern, read by reader.c.  See docs/formats/kernel-records.md
 * for why these attributes.
 *
 * Samples (issue 15 items 3, 4): with --cpu-samples, a cpu-clock event per CPU, and with
 * --offcpu-stacks a context-switches event per CPU, both redirected into the switch event's
 * ring (PERF_EVENT_IOC_SET_OUTPUT): PERF_RECORD_SAMPLE records laid out by
 * header.sample_sample_type, their registers by header.sample_regs_user, each naming its
 * event by id (PERF_SAMPLE_IDENTIFIER, the record's first u64); the table of struct
 * gt_kernel_event after the header says which id is which.
 *
 * Layout: one struct gt_kernel_header, n_events struct gt_kernel_event (header_size covers
 * both), then the records as the kernel wrote them (each a
 * struct perf_event_header with its size), whole, in drain order: in time order within one
 * CPU's buffer, not across CPUs (the trailer's cpu says which).  The records' sample_id
 * trailer follows header.sample_type (PERF_SAMPLE_* bits, perf's field order).  A record
 * cut short by the end of the file is a launcher that died mid-write: readers stop there.
 *
 * Losses: PERF_RECORD_LOST records (the kernel dropped them, buffer full), and
 * header.launcher_lost, written when the launcher ends: records it drained but could not
 * store (a write error).  A header whose launcher_lost is GT_KERNEL_UNFINISHED is a file the
 * launcher did not finish. */
#ifndef GOTRACE_KERNEL_RECORDS_H
#define GOTRACE_KERNEL_RECORDS_H

#include <gotrace/capture.h>
#include <linux/perf_event.h>
#include <stdint.h>

#define GT_KERNEL_MAGIC "GTKERN\0\0"
#define GT_KERNEL_VERSION 2u
#define GT_KERNEL_SUFFIX ".gtkern"
#define GT_KERNEL_UNFINISHED UINT64_MAX

/* header.sample_type: every record's sample_id trailer, { u32 pid, tid; u64 time;
 * u32 cpu, res; u64 id } at its end. */
#define GT_KERNEL_TRAILER_TYPE \
	(PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)
/* header.sample_sample_type: a sample's own layout (samples.c decodes it). */
#define GT_KERNEL_SAMPLES_TYPE \
	(GT_KERNEL_TRAILER_TYPE | PERF_SAMPLE_IP | PERF_SAMPLE_REGS_USER | PERF_SAMPLE_STACK_USER)
/* header.sample_regs_user, in the numbering of the recording kernel's arch (header.arch):
 * x86-64: AX BX CX DX SI DI BP SP IP FLAGS CS SS R8..R15 (PERF_REG_X86_*);
 * aarch64: X0..X30, SP, PC (PERF_REG_ARM64_*, bits 0 to 32; the same numbers as their DWARF
 * registers, the PC apart).  Literal here: <asm/perf_regs.h> is the build host's arch's. */
#define GT_KERNEL_REGS_USER_X86_64 0xff0fffull
#define GT_KERNEL_REGS_USER_AARCH64 0x1ffffffffull
/* This build's: what recorder.c asks the kernel for and writes in header.arch. */
#define GT_KERNEL_ARCH GT_ARCH_NATIVE
#if defined(__aarch64__)
#define GT_KERNEL_REGS_USER GT_KERNEL_REGS_USER_AARCH64
#else
#define GT_KERNEL_REGS_USER GT_KERNEL_REGS_USER_X86_64
#endif

struct gt_kernel_header {
	char magic[8];          /* GT_KERNEL_MAGIC */
	uint32_t version;       /* GT_KERNEL_VERSION */
	uint32_t header_size;   /* sizeof this struct: records start here */
	uint64_t sample_type;   /* of every event: the trailer's fields */
	uint32_t clockid;       /* of the records' time: CLOCK_MONOTONIC */
	uint32_t n_cpus;        /* events opened, one per online CPU */
	uint32_t buffer_bytes;  /* data bytes of each CPU's ring buffer */
	uint32_t pid;           /* the command the events were opened on */
	uint64_t launcher_lost; /* records drained and not stored; GT_KERNEL_UNFINISHED */
	uint64_t sample_sample_type;  /* of the sampling events (0: none) */
	uint64_t sample_regs_user;    /* their PERF_SAMPLE_REGS_USER mask (numbered per arch) */
	uint32_t sample_stack_user;   /* bytes of user stack each sample copies */
	uint32_t sample_hz;           /* cpu-clock samples per second of a thread's CPU time */
	uint32_t n_events;            /* struct gt_kernel_event entries after this header */
	uint32_t arch;                /* GT_ARCH_* of <gotrace/capture.h>: whose perf registers the
				       * samples hold; 0 (files before it): x86-64 */
	uint64_t launcher_cpu_ns;     /* CPU time of the launcher's drain, written at its end */
};

/* Which event an id (PERF_EVENT_IOC_ID) is. */
enum gt_kernel_event_kind {
	GT_KERNEL_EV_SWITCH = 1,   /* the dummy event: switches, comm, fork, exit */
	GT_KERNEL_EV_CPU = 2,      /* cpu-clock samples: where a thread was running */
	GT_KERNEL_EV_OFFCPU = 3,   /* a sample at each switch-out: where a thread left the CPU */
};

struct gt_kernel_event {
	uint64_t id;
	uint32_t kind;           /* enum gt_kernel_event_kind */
	uint32_t cpu;
};

#endif
