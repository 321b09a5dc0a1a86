/* A seccomp filter the program is about to install, run (classic BPF, as the kernel runs it)
 * for every system call the recorder may make: recording goes on under a filter that lets
 * them all through, and stops before one that may refuse any (lifecycle.c,
 * gt_sandbox_enter).  A filter is judged by the call number alone: one that reads the
 * arguments or the instruction pointer on the way to a call of ours counts as refusing it. */
#include "config.h"
#include "seccomp_filter.h"
#include "stacks.h"

#include <linux/audit.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <stddef.h>
#include <sys/syscall.h>

#if defined(__x86_64__)
#define GT_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define GT_AUDIT_ARCH AUDIT_ARCH_AARCH64
#endif

/* What the recorder calls (gt_sys in preload/, libunwind's memory checks, the loader's
 * clock fallback, the thread files_apart.c opens files in: clone, its exit, the caller's
 * yields and policy), and at exit under GOTRACE_OUT the converter's spawn and wait. */
static const int gt_tracer_calls[] = {
	SYS_clone, SYS_exit, SYS_sched_yield, SYS_sched_getscheduler,
	SYS_close, SYS_fallocate, SYS_fchownat, SYS_fcntl, SYS_fstat, SYS_fstatfs, SYS_ftruncate,
	SYS_futex, SYS_getcpu, SYS_getcwd, SYS_geteuid, SYS_getpid, SYS_gettid, SYS_kill,
	SYS_madvise, SYS_mincore, SYS_mkdirat, SYS_mmap, SYS_mprotect, SYS_mremap, SYS_msync,
	SYS_munmap, SYS_newfstatat, SYS_openat, SYS_prctl, SYS_prlimit64, SYS_pwritev, SYS_read,
	SYS_readlinkat, SYS_rt_sigprocmask, SYS_rt_sigtimedwait, SYS_sigaltstack, SYS_tgkill,
	SYS_unlinkat, SYS_wait4, SYS_write, SYS_clock_gettime,
};
static const int gt_converter_calls[] = {SYS_clone, SYS_clone3, SYS_execve,
#ifdef SYS_vfork /* aarch64 has none: glibc's vfork is a clone */
					 SYS_vfork,
#endif
					 SYS_exit_group};

#define GT_UNKNOWN 0xffffffffu /* the filter looked at more than the call number */

/* The filter's answer for call nr (its SECCOMP_RET_* value), or GT_UNKNOWN. */
static uint32_t run_filter(const struct sock_filter *f, unsigned len, int nr)
{
	uint32_t a = 0, x = 0, mem[BPF_MEMWORDS] = {0};
	for (unsigned pc = 0; pc < len; pc++) {
		const struct sock_filter *i = &f[pc];
		uint32_t src = BPF_SRC(i->code) == BPF_X ? x : i->k;
		switch (BPF_CLASS(i->code)) {
		case BPF_LD:
			if (i->code == (BPF_LD | BPF_W | BPF_ABS) && i->k == offsetof(struct seccomp_data, nr))
				a = (uint32_t)nr;
			else if (i->code == (BPF_LD | BPF_W | BPF_ABS) &&
				 i->k == offsetof(struct seccomp_data, arch))
				a = GT_AUDIT_ARCH;
			else if (i->code == (BPF_LD | BPF_IMM))
				a = i->k;
			else if (i->code == (BPF_LD | BPF_MEM) && i->k < BPF_MEMWORDS)
				a = mem[i->k];
			else
				return GT_UNKNOWN; /* the arguments, the instruction pointer */
			break;
		case BPF_LDX:
			if (i->code == (BPF_LDX | BPF_IMM))
				x = i->k;
			else if (i->code == (BPF_LDX | BPF_MEM) && i->k < BPF_MEMWORDS)
				x = mem[i->k];
			else
				return GT_UNKNOWN;
			break;
		case BPF_ST:
		case BPF_STX:
			if (i->k >= BPF_MEMWORDS)
				return GT_UNKNOWN;
			mem[i->k] = BPF_CLASS(i->code) == BPF_ST ? a : x;
			break;
		case BPF_ALU:
			switch (BPF_OP(i->code)) {
			case BPF_ADD: a += src; break;
			case BPF_SUB: a -= src; break;
			case BPF_MUL: a *= src; break;
			case BPF_DIV: if (!src) return GT_UNKNOWN; a /= src; break;
			case BPF_MOD: if (!src) return GT_UNKNOWN; a %= src; break;
			case BPF_AND: a &= src; break;
			case BPF_OR: a |= src; break;
			case BPF_XOR: a ^= src; break;
			case BPF_LSH: a = src < 32 ? a << src : 0; break;
			case BPF_RSH: a = src < 32 ? a >> src : 0; break;
			case BPF_NEG: a = -a; break;
			default: return GT_UNKNOWN;
			}
			break;
		case BPF_JMP: {
			int taken;
			switch (BPF_OP(i->code)) {
			case BPF_JA: pc += i->k; continue;
			case BPF_JEQ: taken = a == src; break;
			case BPF_JGT: taken = a > src; break;
			case BPF_JGE: taken = a >= src; break;
			case BPF_JSET: taken = (a & src) != 0; break;
			default: return GT_UNKNOWN;
			}
			pc += taken ? i->jt : i->jf;
			break;
		}
		case BPF_RET:
			return BPF_RVAL(i->code) == BPF_A ? a : i->k;
		case BPF_MISC:
			if (BPF_MISCOP(i->code) == BPF_TAX)
				x = a;
			else
				a = x;
			break;
		default:
			return GT_UNKNOWN;
		}
	}
	return GT_UNKNOWN; /* ran off the end: the kernel refuses such a filter */
}

static int allowed(uint32_t action)
{
	action &= SECCOMP_RET_ACTION_FULL;
	return action == SECCOMP_RET_ALLOW || action == SECCOMP_RET_LOG;
}

int gt_filter_lets_tracer_through(const void *fprog)
{
	const struct sock_fprog *p = fprog;
	if (!gt_readable(p, sizeof *p) || !p->len ||
	    !gt_readable(p->filter, p->len * sizeof *p->filter))
		return 1; /* the kernel refuses it (EFAULT, EINVAL): no sandbox */
	for (size_t i = 0; i < sizeof gt_tracer_calls / sizeof *gt_tracer_calls; i++)
		if (!allowed(run_filter(p->filter, p->len, gt_tracer_calls[i])))
			return 0;
	for (size_t i = 0; gt_cfg.out && i < sizeof gt_converter_calls / sizeof *gt_converter_calls; i++)
		if (!allowed(run_filter(p->filter, p->len, gt_converter_calls[i])))
			return 0;
	return 1;
}
