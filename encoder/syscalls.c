/* syscalls: see syscalls.h. */
#include "syscalls.h"

#include <gotrace/capture.h>
#include <stdio.h>

#include "encoder.h"

/* aarch64's numbers (the asm-generic ones, all below 512) to x86-64's + 1 (0: none); the
 * calls aarch64 lacks all land on the spare last entry */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Woverride-init"
static const int16_t from_aarch64[513] = {
#define GT_SYS_FROM_AARCH64(name, x86_64, aarch64) [(aarch64) < 0 ? 512 : (aarch64)] = (x86_64) + 1,
	GT_SYSCALLS(GT_SYS_FROM_AARCH64)
#undef GT_SYS_FROM_AARCH64
};
#pragma GCC diagnostic pop

uint32_t gt_syscall_canonical(uint32_t arch, uint32_t nr)
{
	if (arch != GT_ARCH_AARCH64)
		return nr;
	if (nr < 512 && from_aarch64[nr] > 0)
		return (uint32_t)from_aarch64[nr] - 1;
	return nr < GT_SYS_FOREIGN ? GT_SYS_FOREIGN + nr : nr;
}

static const struct { int16_t nr; const char *name; } names[] = {
#define GT_SYS_NAME(name, x86_64, aarch64) { x86_64, #name },
	GT_SYSCALLS(GT_SYS_NAME)
#undef GT_SYS_NAME
};

const char *gt_syscall_name(uint32_t nr, char *buf, size_t size)
{
	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (names[i].nr >= 0 && (uint32_t)names[i].nr == nr)
			return names[i].name;
	if (nr >= GT_SYS_FOREIGN && nr < 2 * GT_SYS_FOREIGN)
		snprintf(buf, size, "aarch64_syscall_%u", nr - GT_SYS_FOREIGN);
	else
		snprintf(buf, size, "syscall_%u", nr);
	return buf;
}
