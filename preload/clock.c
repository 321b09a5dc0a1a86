/* Timestamps and CPU numbers.
 *
 * x86-64 with an invariant TSC: rdtsc, and the CPU from glibc's registered rseq area (one
 * load, half the cost of rdtscp); without rseq, rdtscp (the counter and, in TSC_AUX, the
 * CPU), else getcpu.  aarch64: the generic timer's cntvct_el0 at cntfrq_el0 Hz, the CPU from
 * rseq, else getcpu (gt_counter, fastpath.h).  Without such a counter (other architectures, a
 * TSC that is not invariant) timestamps are CLOCK_MONOTONIC nanoseconds and the header says
 * clock_source = GT_CLOCK_MONOTONIC.
 * clock_gettime is libc's vDSO-backed function, which gotrace does not interpose.
 */
#include "clock.h"
#include "config.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#if defined(__x86_64__)
#include <cpuid.h>
#endif

struct gt_clock gt_clock __attribute__((aligned(64))) = {
	.cpu_source = GT_CPU_GETCPU,
	.tsc_hz = 1000000000ull,
};

uint64_t gt_mono_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

uint64_t gt_real_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static unsigned gt_cpu_slow(void)
{
	if (gt_clock.cpu_source == GT_CPU_RSEQ) {
		char *tp = __builtin_thread_pointer();
		/* struct rseq { u32 cpu_id_start; u32 cpu_id; ... } */
		int32_t cpu = *(volatile int32_t *)(tp + gt_clock.rseq_offset + 4);
		if (cpu >= 0)
			return (unsigned)cpu & (GT_MAX_CPUS - 1);
	}
	unsigned cpu = 0;
	gt_sys3(SYS_getcpu, &cpu, NULL, NULL);
	return cpu & (GT_MAX_CPUS - 1);
}

uint64_t gt_now_slow(unsigned *cpu)
{
	*cpu = gt_cpu_slow();
	return gt_clock.tsc ? gt_counter() : gt_mono_ns();
}

/* A (CLOCK_MONOTONIC, counter) pair: the counter read between two clock reads, the closest
 * of 8 tries, at their midpoint.  Preempted between a counter read and a clock read, a pair
 * was once 4 ms off, which shifts every time of a capture that has no other pair (a process
 * killed while it waits); an interrupt there put 1.3 us into the 0.5 ms rate estimate. */
static void tight_pair(uint64_t *mono, uint64_t *counter)
{
	uint64_t best = UINT64_MAX;
	for (int i = 0; i < 8; i++) {
		uint64_t a = gt_mono_ns(), t = gt_counter(), b = gt_mono_ns();
		if (b - a < best) {
			best = b - a;
			*mono = a + (b - a) / 2;
			*counter = t;
		}
	}
}

void gt_clock_pair(uint64_t *tsc, uint64_t *mono_ns)
{
	if (gt_clock.tsc)
		tight_pair(mono_ns, tsc);
	else
		*tsc = *mono_ns = gt_mono_ns();   /* the capture's clock is CLOCK_MONOTONIC */
}

#if defined(__x86_64__)
/* /proc/cpuinfo flags, for hypervisors that hide the CPUID invariant-TSC bit. */
static int cpuinfo_has_flags(void)
{
	static char buf[8192];
	long fd = gt_sys4(SYS_openat, AT_FDCWD, "/proc/cpuinfo", O_RDONLY | O_CLOEXEC, 0);
	if (fd < 0)
		return 0;
	long n = gt_sys3(SYS_read, fd, buf, sizeof buf - 1);
	gt_sys1(SYS_close, fd);
	if (n <= 0)
		return 0;
	buf[n] = 0;
	char *flags = strstr(buf, "\nflags");
	if (!flags)
		return 0;
	char *eol = strchr(flags + 1, '\n');
	if (eol)
		*eol = 0;
	return strstr(flags, " constant_tsc") && strstr(flags, " nonstop_tsc");
}

/* The TSC's rate when it is invariant, else 0; rdtscp becomes the CPU's source without rseq. */
static uint64_t counter_hz(void)
{
	unsigned a, b, c, d;
	int invariant = 0, rdtscp = 0;
	/* A traced ancestor found the TSC invariant and measured its rate: CPUID, which traps
	 * to the hypervisor in a VM (20 us each here), is asked only for rdtscp, needed without
	 * rseq. */
	if (gt_cfg.tsc_hz && gt_clock.cpu_source == GT_CPU_RSEQ)
		invariant = 1;
	else if (__get_cpuid(0x80000000u, &a, &b, &c, &d) && a >= 0x80000007u) {
		__get_cpuid(0x80000007u, &a, &b, &c, &d);
		invariant = (d >> 8) & 1;
		__get_cpuid(0x80000001u, &a, &b, &c, &d);
		rdtscp = (d >> 27) & 1;
	}
	if (!invariant)
		invariant = cpuinfo_has_flags();
	if (!invariant)
		return 0;
	if (rdtscp && gt_clock.cpu_source != GT_CPU_RSEQ)
		gt_clock.cpu_source = GT_CPU_RDTSCP;
	if (gt_cfg.tsc_hz) /* measured by an ancestor of this run: one counter for the machine */
		return gt_cfg.tsc_hz;
	/* Estimate the rate over ~0.5 ms; the clock pairs in the capture refine it, but a
	 * capture with one pair (a process killed while it waits) has only this rate. */
	uint64_t m0, t0, m1, t1;
	tight_pair(&m0, &t0);
	while (gt_mono_ns() - m0 < 500000)
		;
	tight_pair(&m1, &t1);
	if (t1 <= t0 || m1 <= m0)
		return 0;
	return (uint64_t)((double)(t1 - t0) * 1e9 / (double)(m1 - m0));
}
#elif defined(__aarch64__)
/* The generic timer's rate, which the firmware sets in cntfrq_el0 (Linux requires it; 0
 * would be a broken firmware); the clock pairs in the capture refine it. */
static uint64_t counter_hz(void)
{
	uint64_t hz;
	__asm__ volatile("mrs %0, cntfrq_el0" : "=r"(hz));
	return hz;
}
#else
static uint64_t counter_hz(void) { return 0; }
#endif

void gt_clock_setup(void)
{
	void *off = dlsym(RTLD_DEFAULT, "__rseq_offset");
	void *size = dlsym(RTLD_DEFAULT, "__rseq_size");
	gt_clock.cpu_source = GT_CPU_GETCPU;
	if (off && size && *(const unsigned int *)size >= 8) {
		gt_clock.rseq_offset = *(const ptrdiff_t *)off;
		gt_clock.cpu_source = GT_CPU_RSEQ;
	}
	gt_clock.tsc = 0;
	gt_clock.use_rdtscp = 0;
	gt_clock.use_rseq_tsc = 0;
	gt_clock.tsc_hz = 1000000000ull;
	gt_clock.tsc_hz_text[0] = 0;
	uint64_t hz = counter_hz();
	if (!hz)
		return;
	gt_clock.tsc_hz = hz;
	gt_clock.tsc_hz_text[gt_fmt_u64(gt_clock.tsc_hz_text, gt_clock.tsc_hz)] = 0;
	gt_clock.tsc = 1;
	gt_clock.use_rdtscp = gt_clock.cpu_source == GT_CPU_RDTSCP;
	gt_clock.use_rseq_tsc = gt_clock.cpu_source == GT_CPU_RSEQ;
}
