/* Tests of a cross build run under qemu-user, on another arch's kernel (tests/meson.build
 * sets GT_EMULATED_ON to that arch, scripts/test --aarch64 runs them).  What the emulator
 * does not provide is skipped with the reason, said once here:
 *   perf_event_open  ENOSYS: no kernel records, no CPU samples
 *   ptrace           not emulated: gotrace stacks cannot stop the threads
 *   rseq             ENOSYS: the CPU comes from getcpu
 *   set_robust_list  ENOSYS: a robust mutex's owner death never reaches its waiter
 *   the system's programs (/bin/sh, taskset) are the host's: no aarch64 preload there
 * A CPU sample taken of an emulated process from outside it holds the emulator's registers. */
#ifndef GT_TEST_EMULATION_H
#define GT_TEST_EMULATION_H

#include <stdlib.h>

/* The arch of the kernel under the emulator ("x86_64"), NULL when the tests run natively */
static inline const char *gt_emulated_on(void)
{
	const char *on = getenv("GT_EMULATED_ON");
	return on && *on ? on : NULL;
}

#define GT_NOT_EMULATED_PERF "under qemu-user, perf_event_open is not emulated (ENOSYS)"
#define GT_NOT_EMULATED_PTRACE "under qemu-user, ptrace is not emulated"
#define GT_NOT_EMULATED_HOST_PROGRAMS \
	"under qemu-user, /bin/sh and taskset are the host's programs, which the aarch64 " \
	"preload library cannot enter"

/* Skips the calling test when it runs emulated; why: one of GT_NOT_EMULATED_* */
#define gt_skip_if_emulated(why) \
	do { \
		if (gt_emulated_on()) \
			cr_skip_test("%s (on %s)", why, gt_emulated_on()); \
	} while (0)

#endif
