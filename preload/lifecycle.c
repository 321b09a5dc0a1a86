/* The life of a capture: the states, initialisation (once per program image, again in a fork
 * child), the slow path of every reservation, start and stop, fork children, and the end of
 * the process. */
#include "lifecycle.h"
#include "capture_file.h"
#include "child_env.h"
#include "chunk_refill.h"
#include "clock.h"
#include "config.h"
#include "exit_convert.h"
#include "facts.h"
#include "glibc_locks.h"
#include "hooks.def"
#include "modules.h"
#include "proc_name.h"
#include "stacks.h"

_Atomic int gt_enabled = 1;
_Atomic int gt_state = GT_ST_UNINIT;
_Atomic uint32_t gt_epoch = 1;
int gt_fast_facts;
__thread struct gt_tls gt_tls __attribute__((tls_model("initial-exec")));

static uint64_t gt_start_deadline;   /* DELAYED -> RECORDING at this timestamp */
static int gt_image_ready;           /* config, clock and self range set for this image */
/* The pid whose capture this is, in a page of its own that MADV_WIPEONFORK zeroes (like the
 * CPU slots) in a child made without fork(): there it reads 0. */
static union {
	_Atomic pid_t pid;
	char page[4096]; /* the whole page: nothing else may share it */
} gt_owner __attribute__((aligned(4096)));

/* gotrace asked this process to stop recording and go on untraced (capture.h:
 * GT_FILE_DETACHED): the capture is gotrace's from now on, maybe already converted and
 * removed, so nothing more is written to it or said about it. */
static int detach_requested(void)
{
	return gt_cap.header && (gt_load((_Atomic uint32_t *)&gt_cap.header->flags) & GT_FILE_DETACHED);
}

void gt_disable(void)
{
	gt_store(&gt_enabled, 0);
	atomic_fetch_or(&gt_epoch, GT_EPOCH_OFF);
}

static void detach(void)
{
	gt_store(&gt_state, GT_ST_DETACHED);
	gt_disable();
	gt_slots_full();
}

/* The stop word (fastpath.h), written so that a stop gotrace wrote meanwhile is kept: with
 * its flag set first and these stores sequentially consistent, one of the two sees the other. */
static void set_stop_tsc(uint64_t tsc)
{
	atomic_store((_Atomic uint64_t *)&gt_header_page.h.stop_at_tsc, tsc);
	if (detach_requested())
		atomic_store((_Atomic uint64_t *)&gt_header_page.h.stop_at_tsc, 0);
}

/* Recording cannot go on: say so once, keep every committed fact, let the program run.  When
 * the capture exists (it could not grow), hooks keep entering without taking stacks, so that
 * the slow path counts every fact met after the stop into the header. */
static void gt_fail(const char *what, int err)
{
	char eb[32];
	if (detach_requested()) { /* the file is gotrace's now: it may be gone */
		detach();
		return;
	}
	int st = gt_load(&gt_state);
	do { /* once, whichever thread meets the full file first */
		if (st == GT_ST_FAILED)
			return;
	} while (!atomic_compare_exchange_weak(&gt_state, &st, GT_ST_FAILED));
	if (gt_cap.header) {
		unsigned cpu;
		gt_stack_mode = GT_STACKS_NONE;
		gt_capture_stopped(err, gt_now(&cpu));
	} else {
		gt_disable();
	}
	gt_slots_full();
	/* on the program's stderr, but not the bound when gotrace run's summary says it; the
	 * bound is no error of the file (its EFBIG is "file size limit exceeded") */
	int bound = gt_cap.header && (gt_cap.header->flags & GT_FILE_AT_BOUND);
	if (!(gt_cfg.under_run && bound))
		gt_warn(what, bound ? "" : gt_errno_text(err, eb),
			"; recording stopped, the program continues");
}

static uint64_t *open_chunk(unsigned cpu, uint32_t nbytes, uint64_t tsc, int final)
{
	struct gt_file_error e;
	uint64_t *r = gt_chunk_open(cpu, nbytes, tsc, final, &e);
	if (!r && e.err)
		gt_fail(e.what, e.err);
	return r;
}

static void start_recording(void)
{
	int expected = GT_ST_DELAYED;
	if (atomic_compare_exchange_strong(&gt_state, &expected, GT_ST_RECORDING))
		atomic_fetch_add(&gt_epoch, 1);
}

static void stop_recording(int process_end);

/* 1: this process owns the capture.  A copy of the owner's memory made without fork() reads
 * a wiped owner and stops tracing in that copy; a process sharing the owner's memory
 * (clone(CLONE_VM) without CLONE_THREAD) must change nothing: `exact` asks for our pid. */
static int owns_capture(int exact)
{
	pid_t owner = gt_load(&gt_owner.pid);
	if (!owner) {
		gt_disable();
		gt_store(&gt_state, GT_ST_FAILED);
		return 0;
	}
	return !exact || owner == (pid_t)gt_sys0(SYS_getpid);
}

/* The owner and the slots live in pages a child made without fork() gets zeroed (4.14+;
 * elsewhere such a child is caught only by the pid check before it opens a chunk or ends). */
static void wipe_on_fork(void)
{
	gt_sys3(SYS_madvise, gt_slots, sizeof gt_slots, 18 /* MADV_WIPEONFORK */);
	gt_sys3(SYS_madvise, &gt_owner, sizeof gt_owner, 18 /* MADV_WIPEONFORK */);
}

/* What MADV_WIPEONFORK makes of such a copy (its hooks pass through, it owns nothing), done
 * by the hooks that make one: qemu-user accepts the advice and ignores it, and kernels
 * before 4.14 have none.  The slots stay as they are: rewriting their 256 KiB would copy
 * 64 pages in every such child, and a disabled tracer never reads them. */
void gt_copy_forget(void)
{
	gt_disable();
	gt_store(&gt_owner.pid, 0);
}

uint64_t *gt_reserve_slow(unsigned cpu, uint32_t nbytes, uint64_t tsc)
{
	int saved_errno = errno;
	struct gt_tls *t = gt_self();
	uint8_t was_busy = gt_busy_nest(t, 1);
	uint64_t *r = NULL;
	switch (gt_load(&gt_state)) {
	case GT_ST_UNINIT:
		gt_init();
		break;
	case GT_ST_DELAYED:
		if (detach_requested() && owns_capture(1))
			detach();
		else if (tsc >= gt_start_deadline && owns_capture(0))
			start_recording();
		break;
	case GT_ST_RECORDING:
		if (!owns_capture(1))
			break;
		if (tsc >= gt_stop_tsc() && detach_requested()) {
			detach();
			break;
		}
		if (tsc >= gt_stop_tsc()) {
			stop_recording(0);
			break;
		}
		r = open_chunk(cpu, nbytes, tsc, 0);
		if (r || gt_load(&gt_state) != GT_ST_FAILED)
			gt_add(&gt_cap.dropped, !r);
		else
			gt_add((_Atomic uint64_t *)&gt_cap.header->facts_lost, 1);
		break;
	case GT_ST_FAILED:
		if (gt_cap.header) /* the file could not grow: every fact from then on is lost */
			gt_add((_Atomic uint64_t *)&gt_cap.header->facts_lost, 1);
		break;
	default:
		break;
	}
	t->busy = was_busy;
	errno = saved_errno;
	return r;
}

/* a reservation that bypasses the stop check (end-of-capture records) */
static uint64_t *reserve_final(unsigned cpu, uint32_t nbytes)
{
	char *chunk = gt_slot_chunk(gt_load(&gt_slots[cpu].off));
	_Atomic uint64_t *used = (_Atomic uint64_t *)(chunk + offsetof(struct gt_chunk_header, used));
	uint64_t off = gt_add(used, nbytes);
	unsigned c2;
	uint64_t *r = off + nbytes <= gt_cap.chunk_limit ? (uint64_t *)(chunk + off) :
							  open_chunk(cpu, nbytes, gt_now(&c2), 1);
	return r ? gt_writing_open(r, nbytes) : NULL;
}

static void write_end_records(int process_end)
{
	unsigned cpu;
	uint64_t *r;
	struct gt_tls *t = gt_self();
	if (process_end && t->serial && !(t->ended & GT_TLS_ENDED) && t->epoch == gt_epoch_now()) {
		gt_fd_exit_wakes(t->serial, reserve_final);
		uint64_t tsc = gt_now(&cpu);
		if ((r = reserve_final(cpu, 16)))
			gt_fill(r, t->serial, GT_THREAD_END, GT_END_PROCESS, tsc, NULL, 0);
	}
	struct gt_p_notice dropped = {.value = gt_load(&gt_cap.dropped) - gt_load(&gt_cap.dropped_reported)};
	gt_now(&cpu);
	if (dropped.value && (r = reserve_final(cpu, 16 + sizeof dropped))) {
		unsigned c2;
		gt_fill(r, 0, GT_NOTICE, GT_NOTICE_DROPPED, gt_now(&c2), &dropped, sizeof dropped);
		gt_store(&gt_cap.dropped_reported, gt_load(&gt_cap.dropped));
	}
	gt_losses_flush(reserve_final);
	if ((r = reserve_final(cpu, 16 + sizeof(struct gt_p_clock))))
		gt_write_clock(r);
	uint64_t tsc = gt_now(&cpu);
	if ((r = reserve_final(cpu, 16)))
		gt_fill(r, 0, GT_CAPTURE_END, 0, tsc, NULL, 0);
}

static void stop_recording(int process_end)
{
	int expected = GT_ST_RECORDING;
	if (!atomic_compare_exchange_strong(&gt_state, &expected, GT_ST_STOPPED))
		return;
	gt_disable();
	write_end_records(process_end);
	gt_slots_full();
}

/* As a capture that could not grow and a process that ends (gt_fail, gt_finalize), without
 * the notice on stderr: the stop said in the header, the file trimmed. */
static int end_for_sandbox(void)
{
	int st = gt_load(&gt_state);
	if (st == GT_ST_DETACHED || !gt_cap.header || !owns_capture(1)) {
		gt_store(&gt_state, GT_ST_DETACHED);
		gt_disable();
		return 0;
	}
	gt_self()->busy = 1;
	gt_store(&gt_state, GT_ST_DETACHED);
	gt_disable();
	gt_slots_full();
	if (st == GT_ST_RECORDING || st == GT_ST_DELAYED) {
		unsigned cpu;
		gt_cap.header->stop_tsc = gt_now(&cpu);
		atomic_fetch_or((_Atomic uint32_t *)&gt_cap.header->flags,
				GT_FILE_WRITE_FAILED | GT_FILE_SANDBOXED);
	}
	atomic_fetch_or((_Atomic uint32_t *)&gt_cap.header->flags, GT_FILE_FINALIZED);
	gt_capture_trim();
	gt_self()->busy = 0;
	return 1;
}

void gt_sandbox_enter(void)
{
	if (gt_detached())
		return;
	int saved = errno;
	gt_enter(); /* a fork child's capture is made by its first fact: it says the stop */
	gt_offstack(1, (void *)end_for_sandbox, 0, 0, 0);
	errno = saved;
}

/* ---- initialisation and fork children ------------------------------------------------ */

static uint64_t ns_to_ticks(uint64_t ns)
{
	return gt_clock.tsc ? (uint64_t)((double)ns * (double)gt_clock.tsc_hz / 1e9) : ns;
}

static void after_fork_child(void);

int gt_init(void)
{
	int expected = GT_ST_UNINIT;
	if (!atomic_compare_exchange_strong(&gt_state, &expected, GT_ST_INITIALIZING))
		return expected == GT_ST_RECORDING || expected == GT_ST_DELAYED;
	struct gt_tls *t = gt_self();
	/* the loader and libunwind's constructors call hooks */
	uint8_t was_busy = gt_busy_nest(t, 1 | GT_BUSY_CALLOUT);
	gt_resolve_all();
	if (!gt_image_ready) {
		gt_config_load();
		gt_capture_setup(gt_cfg.chunk_size); /* before a fork child may forget it */
		gt_clock_setup();
		gt_self_range();
		gt_stack_mode = gt_cfg.stack_mode;
		gt_lock_records = gt_cfg.locks_all;
		gt_stacks_setup();
		gt_fast_facts = gt_stack_mode != GT_STACKS_NONE ? 0 : gt_clock.use_rseq_tsc ? GT_FAST_RSEQ
				: gt_clock.use_rdtscp ? GT_FAST_RDTSCP : 0;
		/* registered first, its prepare handler runs last, just before glibc forks */
		pthread_atfork(gt_walks_settle, NULL, after_fork_child);
		wipe_on_fork();
		gt_image_ready = 1;
	}
	/* GOTRACE_FOLLOW=0: a child that got the program's environment as it was (popen) knows
	 * it is one from GOTRACE_ROOT_PID (gotrace run --no-follow sets it) and stays untraced */
	if (!gt_cfg.follow && !gt_cfg.is_root) {
		gt_store(&gt_state, GT_ST_FAILED);
		gt_disable();
		t->busy = was_busy;
		return 0;
	}

	struct gt_file_error e;
	if (gt_capture_create(&e) < 0) {
		if (!e.what) {
			gt_store(&gt_state, GT_ST_FAILED);
			gt_disable();
		} else {
			gt_store(&gt_state, GT_ST_UNINIT);
			gt_fail(e.what, e.err);
		}
		t->busy = was_busy;
		return 0;
	}
	gt_store(&gt_owner.pid, (pid_t)gt_cap.header->pid);
	uint64_t start = gt_cap.header->start_tsc;
	gt_start_deadline = start + ns_to_ticks(gt_cfg.start_delay_ns);
	set_stop_tsc(gt_cfg.duration_ns ? gt_start_deadline + ns_to_ticks(gt_cfg.duration_ns) : UINT64_MAX);

	if (gt_cfg.start_delay_ns) {
		gt_store(&gt_state, GT_ST_DELAYED);
	} else {
		gt_store(&gt_state, GT_ST_RECORDING);
		atomic_fetch_add(&gt_epoch, 1);
	}
	/* Facts that describe the process rather than a thread: written even while delayed. */
	unsigned cpu;
	gt_now(&cpu);
	int st = gt_load(&gt_state);
	gt_store(&gt_state, GT_ST_RECORDING);
	uint64_t *r = open_chunk(cpu, 16 + sizeof(struct gt_p_clock), start, 0);
	if (r)
		gt_write_clock(r);
	gt_modules_emit_all();
	gt_proc_name_emit(GT_NAME_START);
	/* back to delayed, unless the first chunk already failed (a bound or a disk without
	 * room for one chunk): that stop is said once and stays */
	int recording = GT_ST_RECORDING;
	atomic_compare_exchange_strong(&gt_state, &recording, st);
	t->busy = was_busy;
	return 1;
}

/* The child starts a capture of its own at its first fact. */
static void after_fork_child(void)
{
	int st = gt_load(&gt_state);
	gt_cfg.is_command = 0; /* gotrace's command is its parent */
	/* a record the parent's thread was writing (fork from a signal handler) is not ours */
	gt_tls.writing.rec = gt_tls.writing_outer.rec = NULL;
	if (st == GT_ST_DETACHED && !gt_load(&gt_enabled) && gt_cap.header &&
	    (gt_cap.header->flags & GT_FILE_SANDBOXED))
		return; /* in the parent's sandbox: no system call of ours */
	gt_capture_forget();
	gt_cfg.is_root = 0;
	gt_store(&gt_next_serial, 2);
	gt_waiters_reset();
	gt_threads_reset();
	gt_stacks_reset();
	gt_modules_reset();
	gt_losses_reset();
	gt_proc_name_reset();
	struct gt_tls *t = &gt_tls;
	/* the TLS is the forking thread's alone now, whichever thread of it forked (its stack
	 * bound unknown then) */
	if (t->ended & GT_TLS_SHARED)
		*t = (struct gt_tls){.trampoline = t->trampoline};
	gt_raw_reset();
	t->serial = 0;
	t->epoch = 0;
	t->pending = GT_PENDING_NONE;
	gt_outers_reset();
	atomic_fetch_add(&gt_epoch, 1);
	/* A child of a process gotrace detached stays untraced, and so do its programs. */
	if (st == GT_ST_DETACHED) {
		gt_store(&gt_state, GT_ST_DETACHED);
		return;
	}
	/* --no-follow: children are not traced (the program keeps its exec'd images). */
	if (!gt_cfg.follow && st != GT_ST_UNINIT) {
		gt_store(&gt_state, GT_ST_FAILED);
		gt_disable();
		return;
	}
	/* A child of a process whose recording ended or failed stays untraced. */
	if (st == GT_ST_STOPPED || st == GT_ST_FAILED || st == GT_ST_UNINIT) {
		gt_store(&gt_state, st == GT_ST_UNINIT ? GT_ST_UNINIT : GT_ST_FAILED);
		if (st != GT_ST_UNINIT)
			gt_disable(); /* a full parent kept its hooks entering */
		return;
	}
	gt_store(&gt_state, GT_ST_UNINIT);
}

/* ---- the end ------------------------------------------------------------------------ */

int gt_finalize(void)
{
	struct gt_tls *t = gt_self();
	int st = gt_load(&gt_state);
	/* a capture that stopped early (the file could not grow): the process still ends normally */
	int stopped_early = st == GT_ST_FAILED && gt_cap.header;
	if (st != GT_ST_RECORDING && st != GT_ST_STOPPED && st != GT_ST_DELAYED && !stopped_early)
		return 0;
	if (!owns_capture(1))
		return 0; /* never end, trim or convert another process's capture */
	gt_busy_on(t);
	if (stopped_early)
		gt_disable();
	if (st == GT_ST_DELAYED)
		gt_store(&gt_state, GT_ST_RECORDING); /* the end records still describe the process */
	if (gt_load(&gt_state) == GT_ST_RECORDING) /* its command line as the process leaves it */
		gt_proc_name_emit(GT_NAME_END);
	stop_recording(1);
	gt_stacks_check_say();
	if (!gt_cap.header)
		return 0;
	atomic_fetch_or((_Atomic uint32_t *)&gt_cap.header->flags, GT_FILE_FINALIZED);
	gt_capture_trim();
	return 1;
}

/* Before an exec, which ends this image's capture when it succeeds: the capture cut to the
 * chunks in use, as at the end, on a stack of the tracer's with signals held back. */
void gt_exec_trim(void)
{
	if (gt_cap.header && owns_capture(1))
		gt_offstack(1, (void *)gt_capture_trim_for_exec, 0, 0, 0);
}

__attribute__((constructor)) static void gt_constructor(void)
{
	gt_resolve_all();
	gt_glibc_locks_check();
	if (gt_load(&gt_state) == GT_ST_UNINIT)
		gt_init();
	gt_child_env_hide(); /* once the settings are read */
	struct gt_tls *t = gt_enter(); /* announces the main thread */
	(void)t;
}

/* The end records with signals held back (the tracer's locks), the converter without them
 * (it would inherit the mask), both on a stack of the tracer's. */
__attribute__((destructor)) static void gt_destructor(void)
{
	if (!gt_detached() && gt_offstack(1, (void *)gt_finalize, 0, 0, 0) && gt_cfg.out)
		gt_offstack(0, (void *)gt_exit_convert, (uintptr_t)gt_cap.path, 0, 0);
}
