/* syscalls: system call numbers as the conversion knows them, x86-64's whatever its own
 * arch.  A capture's SYSCALL records carry its writer's numbers (its header's arch says
 * whose); the reader turns an aarch64 capture's into these as it reads them
 * (gt_syscall_canonical), so that the model, the writers and the report see one numbering
 * and a capture converts the same on either arch.  The table: syscalls_table.h, generated
 * by gen_syscalls.py from both arches' <sys/syscall.h>. */
#ifndef GOTRACE_ENCODER_SYSCALLS_H
#define GOTRACE_ENCODER_SYSCALLS_H

#include <stdint.h>

#include "syscalls_table.h"

/* GT_SYS_read, GT_SYS_ppoll, ...: x86-64's numbers (-1 for none: aarch64 has no call x86-64
 * lacks) */
enum gt_sys {
#define GT_SYS_ENUM(name, x86_64, aarch64) GT_SYS_##name = x86_64,
	GT_SYSCALLS(GT_SYS_ENUM)
#undef GT_SYS_ENUM
};

/* The conversion's number of call nr of a capture written on arch (GT_ARCH_*; 0, as in
 * captures before the field, is x86-64); GT_SYS_FOREIGN + nr for an aarch64 call below
 * GT_SYS_FOREIGN the table does not know (named "aarch64_syscall_N"). */
#define GT_SYS_FOREIGN 0x800u
uint32_t gt_syscall_canonical(uint32_t arch, uint32_t nr);

#endif
