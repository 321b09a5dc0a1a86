/* mlockall(MCL_CURRENT) without CAP_IPC_LOCK succeeds only while the whole address space fits
 * RLIMIT_MEMLOCK (the kernel compares total_vm with it), and then counts every mapping as
 * locked: the tracer's (a 32 MiB capture window, its tables and stacks) would make the
 * program's call fail, or eat its budget.  Where the kernel refuses it, the program's own
 * mappings are locked one by one (mlock2 counts only what it locks, against the same limit),
 * as mlockall would have locked them untraced, and MCL_FUTURE is set alone (never refused);
 * where the kernel locked everything, the tracer's mappings are unlocked again.  Under MCL_FUTURE
 * and a finite limit every new mapping is locked and counted: the capture gets no new window
 * (recording stops when the mapped one is full, said in one line). */
#include "capture_file.h"
#include "files_apart.h"
#include "frame_rules.h"
#include "hooks.def"
#include "modules.h"
#include "shared_objs.h"
#include "stacks.h"

#include <sys/mman.h>
#include <sys/resource.h>

_Atomic int gt_memlock_future;

#define MAX_SPANS 8192u
static uint64_t spans[MAX_SPANS][2]; /* one call at a time: the kernel serialises none */
static _Atomic int spans_busy;

/* the tracer's memory: libgotrace.so, the capture's windows, its tables and stacks */
static int tracer_owns(uintptr_t lo, uintptr_t hi)
{
	if (lo < gt_self_hi && hi > gt_self_lo)
		return 1;
	uintptr_t bytes = gt_cap.window_chunks * gt_cap.chunk_size;
	for (uint64_t w = 0; w < gt_cap.n_windows; w++)
		if (lo < (uintptr_t)gt_cap.windows[w] + bytes && hi > (uintptr_t)gt_cap.windows[w])
			return 1;
	return gt_stacks_own(lo, hi) || gt_frame_rules_own(lo, hi);
}

/* The program's mappings locked (flags: MLOCK_ONFAULT or 0), all or none: 0 or -errno
 * (ENOMEM: they do not fit the limit, as mlockall says untraced). */
static long lock_program(void *arg)
{
	unsigned flags = (unsigned)(uintptr_t)arg;
	size_t n = gt_maps_read(spans, MAX_SPANS);
	struct rlimit lim;
	if (!n || n == MAX_SPANS || gt_sys4(SYS_prlimit64, 0, RLIMIT_MEMLOCK, NULL, &lim) < 0)
		return -ENOMEM;
	uint64_t theirs = 0;
	for (size_t i = 0; i < n; i++) {
		if (spans[i][0] >= (1ull << 47) || tracer_owns(spans[i][0], spans[i][1]))
			spans[i][1] = spans[i][0]; /* the kernel's or ours: left as it is */
		theirs += spans[i][1] - spans[i][0];
	}
	if (lim.rlim_cur != RLIM_INFINITY && theirs > lim.rlim_cur)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		if (spans[i][1] == spans[i][0])
			continue;
		long r = gt_sys3(SYS_mlock2, spans[i][0], spans[i][1] - spans[i][0], flags);
		if (r == -ENOMEM || r == -EAGAIN) { /* locked by the program meanwhile: undone */
			for (size_t k = 0; k < i; k++)
				gt_sys2(SYS_munlock, spans[k][0], spans[k][1] - spans[k][0]);
			return -ENOMEM;
		}
	}
	return 0;
}

/* The kernel locked every mapping: the tracer's are unlocked again (their pages no longer
 * count against the program's budget). */
static long unlock_tracer(void *arg)
{
	(void)arg;
	size_t n = gt_maps_read(spans, MAX_SPANS);
	for (size_t i = 0; i < n; i++)
		if (spans[i][0] < (1ull << 47) && tracer_owns(spans[i][0], spans[i][1]))
			gt_sys2(SYS_munlock, spans[i][0], spans[i][1] - spans[i][0]);
	return 0;
}

/* MCL_FUTURE under a finite limit: a new window of the capture would be locked and counted */
static void future_locked(int flags)
{
	struct rlimit lim;
	if ((flags & MCL_FUTURE) && gt_sys4(SYS_prlimit64, 0, RLIMIT_MEMLOCK, NULL, &lim) == 0 &&
	    lim.rlim_cur != RLIM_INFINITY)
		atomic_store(&gt_memlock_future, 1);
}

GT_EXPORT int mlockall(int flags)
{
	int r = GT_REAL(mlockall)(flags);
	int refused = r != 0 && errno == ENOMEM && (flags & MCL_CURRENT);
	if ((r != 0 && !refused) || !gt_cap.header || atomic_exchange(&spans_busy, 1))
		return r;
	int e = errno;
	long done = 0;
	if (refused)
		done = gt_files_apart(lock_program, (void *)(uintptr_t)(flags & MCL_ONFAULT ? MLOCK_ONFAULT : 0));
	else if (flags & MCL_CURRENT)
		gt_files_apart(unlock_tracer, NULL);
	atomic_store(&spans_busy, 0);
	if (done < 0) {
		errno = e;
		return -1;
	}
	future_locked(flags);
	if (refused && (flags & MCL_FUTURE))
		return GT_REAL(mlockall)(flags & ~MCL_CURRENT);
	errno = e;
	return 0;
}
