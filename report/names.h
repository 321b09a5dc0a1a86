/* names: what the capture report calls a block kind, a descriptor kind and a syscall. */
#ifndef GOTRACE_REPORT_NAMES_H
#define GOTRACE_REPORT_NAMES_H

#include <stddef.h>
#include <stdint.h>

const char *gt_report_block_kind_name(uint8_t kind);
const char *gt_report_fd_kind_name(uint8_t kind);
/* The syscall's name, or "syscall_<nr>" written into buf. */
const char *gt_report_syscall_name(uint32_t nr, char *buf, size_t size);

#endif
