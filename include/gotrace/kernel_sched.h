/* The kernel scheduling file of a `gotrace run` (issue 15): the perf records the launcher
 * drained from its per-CPU, inherited, enable_on_exec dummy events on the command
 * (context_switch, comm, task; use_clockid CLOCK_MONOTONIC), next to the captures as
 * gotrace-<pid>.gtkern.  See ../shared/PERF-EVENTS.md for why these attributes.
 *
 * Layout: one struct gt_kernel_header, then the records as the kernel wrote them (each a
 * struct perf_event_header with its size), whole, in drain order: in time order within one
 * CPU's buffer, not across CPUs (the trailer's cpu says which).  The records' sample_id
 * trailer follows header.sample_type (PERF_SAMPLE_* bits, perf's field order).  A record
 * cut short by the end of the file is a launcher that died mid-write: readers stop there.
 *
 * Losses: PERF_RECORD_LOST records (the kernel dropped them, buffer full), and
 * header.launcher_lost, written when the launcher ends: records it drained but could not
 * store (a write error).  A header whose launcher_lost is GT_KERNEL_UNFINISHED is a file the
 * launcher did not finish. */
#ifndef GOTRACE_KERNEL_SCHED_H
#define GOTRACE_KERNEL_SCHED_H

#include <stdint.h>

#define GT_KERNEL_MAGIC "GTKERN\0\0"
#define GT_KERNEL_VERSION 1u
#define GT_KERNEL_SUFFIX ".gtkern"
#define GT_KERNEL_UNFINISHED UINT64_MAX

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
};

#endif
