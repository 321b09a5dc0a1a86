/* The facts each hook family writes, read back from the capture of a traced gt-target run,
 * and the program behaving exactly as untraced. */
#include <criterion/criterion.h>
#include <criterion/parameterized.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include "../../preload/libc_syscalls.h"
#include "../support/emulation.h"
#include "traced_run.h"

static struct run run;
static struct capture cap;

static void trace(const char *scenario)
{
	memset(&run, 0, sizeof run);
	cr_assert_eq(run_target(&run, 1, scenario, NULL), 0);
	cr_assert(WIFEXITED(run.status) && WEXITSTATUS(run.status) == 0, "%s failed: %s", scenario, run.err);
	cr_assert_eq(run_capture(&run, run.pid, 0, &cap), 0, "no capture for pid %d", run.pid);
	cr_assert_eq(cap.bad_bytes, 0u);
	cr_assert(cap.hdr->flags & GT_FILE_FINALIZED);
	cr_assert_eq(capture_count(&cap, GT_CAPTURE_END, -1), 1u);
}

static void teardown(void)
{
	capture_close(&cap);
	run_cleanup(&run);
}

static const uint64_t *P(const struct cap_rec *r) { return r->payload; }

/* Every BLOCK_BEGIN of this kind is closed by a BLOCK_END of the same object on the same
 * thread, later; returns how many blocks there were. */
static size_t check_blocks_closed(int kind)
{
	size_t blocks = 0;
	for (size_t i = 0; i < cap.n; i++) {
		const struct cap_rec *b = &cap.recs[i];
		if (b->h->type != GT_BLOCK_BEGIN || b->h->aux != kind)
			continue;
		blocks++;
		int closed = 0;
		for (size_t j = i + 1; j < cap.n && !closed; j++) {
			const struct cap_rec *e = &cap.recs[j];
			if (e->h->thread == b->h->thread && e->h->type == GT_BLOCK_END) {
				cr_assert_eq(e->h->aux, kind);
				cr_assert_eq(P(e)[0], P(b)[0]);
				closed = 1;
			}
		}
		cr_assert(closed, "block of kind %d on thread %u never ended", kind, b->h->thread);
	}
	return blocks;
}

/* A block on obj by thread T that ended OK was released by a WAKE of wake_kind on obj from
 * another thread between the block's begin and end. */
static size_t count_woken_by_other(int kind, int wake_kind)
{
	size_t woken = 0;
	for (size_t i = 0; i < cap.n; i++) {
		const struct cap_rec *b = &cap.recs[i];
		if (b->h->type != GT_BLOCK_BEGIN || b->h->aux != kind)
			continue;
		uint64_t end_tsc = 0;
		for (size_t j = i + 1; j < cap.n; j++)
			if (cap.recs[j].h->thread == b->h->thread && cap.recs[j].h->type == GT_BLOCK_END) {
				end_tsc = cap.recs[j].h->tsc;
				break;
			}
		for (size_t j = i + 1; j < cap.n && cap.recs[j].h->tsc <= end_tsc; j++) {
			const struct cap_rec *w = &cap.recs[j];
			if (w->h->type == GT_WAKE && w->h->aux == wake_kind && P(w)[0] == P(b)[0] &&
			    w->h->thread != b->h->thread) {
				woken++;
				break;
			}
		}
	}
	return woken;
}

Test(hooks, threads, .fini = teardown, .timeout = 30)
{
	trace("threads");
	cr_assert_eq(capture_count_thread(&cap, GT_THREAD_NEW, -1, 1), 4u);
	cr_assert_eq(capture_count(&cap, GT_THREAD_START, -1), 4u);
	cr_assert_eq(capture_count(&cap, GT_THREAD_END, GT_END_RETURN), 2u);
	cr_assert_eq(capture_count(&cap, GT_THREAD_END, GT_END_EXIT), 1u);
	cr_assert_eq(capture_count(&cap, GT_THREAD_END, GT_END_CANCEL), 1u);
	cr_assert_eq(capture_count_thread(&cap, GT_THREAD_END, GT_END_PROCESS, 1), 1u);
	cr_assert_eq(capture_count_thread(&cap, GT_THREAD_EXISTING, -1, 1), 1u);
	/* each exiting thread wakes its joiners on its own serial, before its end */
	cr_assert_eq(capture_count(&cap, GT_WAKE, GT_BK_JOIN), 4u);
	for (size_t i = 0; i < 4; i++) {
		const struct cap_rec *n = capture_find(&cap, GT_THREAD_NEW, -1, i);
		uint32_t child = (uint32_t)P(n)[0];
		const struct cap_rec *s = NULL;
		for (size_t k = 0; (s = capture_find(&cap, GT_THREAD_START, -1, k)); k++)
			if (s->h->thread == child)
				break;
		cr_assert_not_null(s, "child %u never started", child);
		cr_assert_lt(n->h->tsc, s->h->tsc, "GT_THREAD_NEW is stamped before the child starts");
		cr_assert_eq(P(n)[1], P(s)[1], "same start routine");
	}
	/* names: inherited at start, set by pthread_setname_np (other thread) and prctl; only
	 * prctl's is written by the named thread itself */
	int set_name = 0, prctl_name = 0, inherited = 0;
	for (size_t k = 0; k < cap.n; k++) {
		if (cap.recs[k].h->type != GT_THREAD_NAME)
			continue;
		const char *name = cap.recs[k].payload;
		set_name += !strcmp(name, "set-name");
		prctl_name += !strcmp(name, "prctl-name");
		inherited += !strcmp(name, "gt-target");
		cr_assert_eq(cap.recs[k].h->aux, strcmp(name, "prctl-name") ? 0 : GT_NAME_BY_ITSELF,
			     "%s", name);
	}
	/* the named thread may read "set-name" already at its start (it is set from main) */
	cr_assert(set_name == 1 || set_name == 2);
	cr_assert_eq(prctl_name, 1);
	cr_assert_eq(inherited + set_name, 6);
	/* the cancelled thread's pause() ends with ECANCELED, then the thread ends */
	int cancelled_syscall = 0;
	for (size_t k = 0; k < cap.n; k++)
		if (cap.recs[k].h->type == GT_SYSCALL_END && (uint32_t)(P(&cap.recs[k])[0] >> 32) == ECANCELED)
			cancelled_syscall++;
	cr_assert_eq(cancelled_syscall, 1);
	/* the last join blocks on a live thread: closed by that thread's wake */
	cr_assert_geq(check_blocks_closed(GT_BK_JOIN), 1u);
	cr_assert_eq(count_woken_by_other(GT_BK_JOIN, GT_BK_JOIN), check_blocks_closed(GT_BK_JOIN));
}

Test(hooks, mutexes, .fini = teardown, .timeout = 30)
{
	trace("mutex");
	/* qemu-user does not emulate set_robust_list: there the target leaves the robust
	 * mutex out (an owner's death never reaches its waiter) */
	char expected[512];
	snprintf(expected, sizeof expected,
		 "normal contended 0\n"
		 "errorcheck lock 0 relock %d unlock 0 unlock-again %d\n"
		 "recursive 0 0 0 0\n"
		 "recursive contended 0\n"
		 "adaptive contended 0\n"
		 "pi contended 0\n"
		 "%s"
		 "timedlock self-held 1\n",
		 EDEADLK, EPERM,
		 gt_emulated_on() ? "robust owner died: not emulated\n"
				  : "robust owner died EOWNERDEAD\n");
	cr_assert_str_eq(run.out, expected);
	size_t blocks = check_blocks_closed(GT_BK_MUTEX);
	/* normal, recursive, adaptive, PI contended; errorcheck relock; timedlock: 6 */
	cr_assert_eq(blocks, 6u);
	cr_assert_eq(count_woken_by_other(GT_BK_MUTEX, GT_BK_MUTEX), 4u,
		     "each contended lock is released by the holder's unlock");
	int deadlk = 0, timeout = 0;
	for (size_t k = 0; k < cap.n; k++) {
		if (cap.recs[k].h->type != GT_BLOCK_END)
			continue;
		uint64_t w = P(&cap.recs[k])[1];
		deadlk += (uint32_t)w == GT_BR_ERROR && (int32_t)(w >> 32) == EDEADLK;
		timeout += (uint32_t)w == GT_BR_TIMEOUT;
	}
	cr_assert_eq(deadlk, 1);
	cr_assert_eq(timeout, 1);
}

Test(hooks, sync_objects, .fini = teardown, .timeout = 30)
{
	trace("sync");
	cr_assert_eq(check_blocks_closed(GT_BK_COND), 1u);
	cr_assert_eq(count_woken_by_other(GT_BK_COND, GT_BK_COND), 1u, "signaller wakes the waiter");
	/* signalled, the waiter slept on its mutex inside glibc: the signaller's unlock says it
	 * woke a sleeper no hook saw block, on the mutex the condition wait's block names */
	size_t unseen = 0;
	for (size_t k = 0; k < cap.n; k++) {
		const struct cap_rec *b = &cap.recs[k];
		if (b->h->type != GT_BLOCK_BEGIN || b->h->aux != GT_BK_COND)
			continue;
		cr_assert_geq(b->h->nwords * 8u, sizeof(struct gt_rec) + 24u, "no mutex in the block");
		for (size_t j = k + 1; j < cap.n; j++) {
			const struct cap_rec *w = &cap.recs[j];
			if (w->h->type == GT_WAKE && w->h->aux == GT_BK_MUTEX && P(w)[0] == P(b)[2] &&
			    w->h->thread != b->h->thread)
				unseen += (uint32_t)(P(w)[1] >> 32) == GT_WAKE_UNSEEN;
		}
	}
	cr_assert_eq(unseen, 1u);
	cr_assert_eq(check_blocks_closed(GT_BK_RWLOCK_RD), 1u);
	cr_assert_eq(count_woken_by_other(GT_BK_RWLOCK_RD, GT_BK_RWLOCK_WR), 1u);
	cr_assert_eq(check_blocks_closed(GT_BK_SEM), 1u);
	cr_assert_eq(count_woken_by_other(GT_BK_SEM, GT_BK_SEM), 1u);
	cr_assert_eq(check_blocks_closed(GT_BK_BARRIER), 2u);
	cr_assert_eq(count_woken_by_other(GT_BK_BARRIER, GT_BK_BARRIER), 1u, "the last arriver releases");
	cr_assert_eq(capture_count(&cap, GT_YIELD, -1), 1u);
	/* usleep(1000) and sleep(0) on main: the helpers wait for main's blocks, not a time */
	int usleep_seen = 0;
	for (size_t k = 0; k < cap.n; k++)
		if (cap.recs[k].h->type == GT_BLOCK_BEGIN && cap.recs[k].h->aux == GT_BK_SLEEP &&
		    P(&cap.recs[k])[0] == 1000000u)
			usleep_seen++;
	cr_assert_eq(usleep_seen, 1);
	cr_assert_eq(check_blocks_closed(GT_BK_SLEEP), 2u);
	cr_assert(strstr(run.out, "sem_trywait -1 errno 11\n"), "errno as untraced: %s", run.out);
}

static const struct cap_rec *syscall_begin(uint32_t nr, int kind, size_t nth)
{
	for (size_t k = 0; k < cap.n; k++) {
		const struct cap_rec *r = &cap.recs[k];
		if (r->h->type == GT_SYSCALL_BEGIN && (uint32_t)P(r)[0] == nr && (kind < 0 || r->h->aux == kind) &&
		    nth-- == 0)
			return r;
	}
	return NULL;
}

Test(hooks, syscalls, .fini = teardown, .timeout = 30)
{
	trace("syscalls");
	cr_assert_not_null(syscall_begin(SYS_read, GT_FD_PIPE, 0), "blocking read on a pipe");
	cr_assert_not_null(syscall_begin(SYS_recvfrom, GT_FD_SOCKET, 0), "recv on a socket");
	cr_assert_not_null(syscall_begin(SYS_sendto, GT_FD_SOCKET, 0), "send on a socket");
	cr_assert_not_null(syscall_begin(GT_NR_POLL, GT_FD_POLL, 0));
	cr_assert_not_null(syscall_begin(GT_NR_SELECT, GT_FD_POLL, 0));
	cr_assert_not_null(syscall_begin(GT_NR_EPOLL_WAIT, GT_FD_POLL, 0));
	cr_assert_not_null(syscall_begin(SYS_write, GT_FD_FILE, 0));
	cr_assert_not_null(syscall_begin(SYS_fsync, GT_FD_FILE, 0));
	cr_assert_not_null(syscall_begin(SYS_pread64, GT_FD_FILE, 0));
	cr_assert_not_null(syscall_begin(SYS_flock, GT_FD_FILE, 0));
	cr_assert_not_null(syscall_begin(SYS_fcntl, GT_FD_FILE, 0), "fcntl F_SETLKW");
	cr_assert_not_null(syscall_begin(SYS_read, GT_FD_ANON, 0), "read of an eventfd");
	cr_assert_not_null(syscall_begin(SYS_fsync, GT_FD_DIR, 0), "fsync of a directory");
	cr_assert_not_null(syscall_begin(SYS_openat, -1, 0));
	cr_assert_not_null(syscall_begin(SYS_wait4, GT_FD_NONE, 0));
	cr_assert_eq(capture_count(&cap, GT_PROCESS, GT_PROC_FORK), 1u);
	/* every syscall begin is closed on its thread, by an end of the same call */
	size_t begins = 0;
	for (size_t i = 0; i < cap.n; i++) {
		const struct cap_rec *b = &cap.recs[i];
		if (b->h->type != GT_SYSCALL_BEGIN)
			continue;
		begins++;
		const struct cap_rec *e = NULL;
		for (size_t j = i + 1; j < cap.n && !e; j++)
			if (cap.recs[j].h->thread == b->h->thread &&
			    (cap.recs[j].h->type == GT_SYSCALL_END || cap.recs[j].h->type == GT_SYSCALL_BEGIN))
				e = &cap.recs[j];
		cr_assert(e && e->h->type == GT_SYSCALL_END, "syscall begin without end");
		cr_assert_eq((uint32_t)P(e)[0], (uint32_t)P(b)[0]);
	}
	cr_assert_geq(begins, 14u);
	/* read(-1): EBADF reported, result -1 */
	int ebadf = 0;
	for (size_t k = 0; k < cap.n; k++)
		if (cap.recs[k].h->type == GT_SYSCALL_END && (uint32_t)(P(&cap.recs[k])[0] >> 32) == EBADF &&
		    (int64_t)P(&cap.recs[k])[1] == -1)
			ebadf++;
	cr_assert_eq(ebadf, 1);
	/* syscall(SYS_futex): the wait is a block on the word, ended by the waker's wake */
	cr_assert_geq(check_blocks_closed(GT_BK_FUTEX), 1u);
	cr_assert_geq(count_woken_by_other(GT_BK_FUTEX, GT_BK_FUTEX), 1u);
}

Test(hooks, modules_clock_and_header, .fini = teardown, .timeout = 30)
{
	trace("threads");
	cr_assert_eq(cap.hdr->pid, (uint32_t)run.pid);
	cr_assert_geq(cap.hdr->n_cpus, 1u);
	cr_assert_gt(cap.hdr->tsc_hz, 1000000u);
	cr_assert(strstr(cap.hdr->exe_path, "gt-target"));
	cr_assert(strstr(cap.hdr->cmdline, "gt-target threads"));
	cr_assert_eq(cap.hdr->stack_mode, GT_STACKS_UNWIND);
	cr_assert_eq(cap.hdr->stack_depth, 32u);
	int main_exe = 0, vdso = 0, libc = 0, with_build_id = 0;
	for (size_t k = 0; k < cap.n; k++) {
		if (cap.recs[k].h->type != GT_MODULE)
			continue;
		const struct gt_p_module *m = cap.recs[k].payload;
		const char *path = (const char *)(m + 1) + m->build_id_len;
		main_exe += (m->flags & 1) && !strncmp(path + m->path_len - 9, "gt-target", 9);
		vdso += (m->flags & 2) != 0;
		libc += m->path_len > 9 && strstr(path, "libc.so.6") != NULL;
		with_build_id += m->build_id_len == 20;
		cr_assert_lt(m->lo, m->hi);
	}
	cr_assert_eq(main_exe, 1);
	/* qemu-user 7.2 maps no vDSO into an aarch64 program */
	cr_assert_eq(vdso, gt_emulated_on() ? 0 : 1);
	cr_assert_eq(libc, 1);
	cr_assert_geq(with_build_id, 3);
	/* clock pairs at start and end, increasing */
	cr_assert_geq(capture_count(&cap, GT_CLOCK, -1), 2u);
	const struct cap_rec *c0 = capture_find(&cap, GT_CLOCK, -1, 0);
	const struct cap_rec *c1 = capture_find(&cap, GT_CLOCK, -1, capture_count(&cap, GT_CLOCK, -1) - 1);
	cr_assert_lt(c0->h->tsc, c1->h->tsc);
	cr_assert_lt(P(c0)[0], P(c1)[0]);
	/* stacks: each id defined once; every fact's stack id is defined */
	size_t nstacks = capture_count(&cap, GT_STACK, -1);
	cr_assert_gt(nstacks, 3u);
	for (size_t i = 0; i < nstacks; i++) {
		const struct cap_rec *s = capture_find(&cap, GT_STACK, -1, i);
		uint32_t id = (uint32_t)P(s)[0], nf = (uint32_t)(P(s)[0] >> 32);
		cr_assert(nf >= 1 && nf <= 32);
		for (size_t j = i + 1; j < nstacks; j++)
			cr_assert_neq((uint32_t)P(capture_find(&cap, GT_STACK, -1, j))[0], id, "stack %u twice", id);
	}
}

/* Output and exit status identical to an untraced run.  (Parameters hold the names inline:
 * Criterion's workers are separate processes, pointers would not survive.) */
struct scenario {
	char name[16];
};
static struct scenario scenarios[] = {{"threads"}, {"mutex"}, {"sync"}, {"syscalls"}, {"fork"}, {"exec"},
				      {"system"}, {"signal"}, {"exit42"}, {"_exit9"}};

ParameterizedTestParameters(hooks, same_behaviour)
{
	return cr_make_param_array(struct scenario, scenarios, sizeof scenarios / sizeof scenarios[0]);
}

ParameterizedTest(struct scenario *sc, hooks, same_behaviour, .timeout = 60)
{
	const char *const *scenario = (const char *const[]){sc->name};
	if (!strcmp(sc->name, "system"))
		gt_skip_if_emulated(GT_NOT_EMULATED_HOST_PROGRAMS);
	static struct run plain, traced;
	memset(&plain, 0, sizeof plain);
	memset(&traced, 0, sizeof traced);
	cr_assert_eq(run_target(&plain, 0, *scenario, NULL), 0);
	cr_assert_eq(run_target(&traced, 1, *scenario, NULL), 0);
	cr_assert_eq(traced.status, plain.status, "%s: status %#x traced, %#x untraced", *scenario,
		     traced.status, plain.status);
	cr_assert_str_eq(traced.out, plain.out);
	cr_assert_str_eq(traced.err, plain.err);
	cr_assert_geq(run_count_captures(&traced), 1, "%s: no capture (status %#x, stderr %s)", *scenario, traced.status, traced.err);
	cr_assert_eq(run_count_captures(&plain), 0);
	run_cleanup(&plain);
	run_cleanup(&traced);
}

/* The default stacks, libunwind's, reach the program's own frames, on aarch64 under emulation
 * too (where libunwind tests addresses through write(): hooks_io.c): the converted trace
 * names the callers of s_callers' read. */
Test(hooks, unwound_stacks_name_the_programs_functions, .fini = teardown, .timeout = 300)
{
	trace("callers");
	cr_assert_eq(cap.hdr->stack_mode, GT_STACKS_UNWIND);
	cr_assert_gt(capture_count(&cap, GT_STACK, -1), 0u, "no stack recorded");
	char why[4096] = "", path[PATH_MAX + 64];
	cr_assert_eq(run_convert_all(&run, why, sizeof why), 1, "%s", why);
	snprintf(path, sizeof path, "%s/gotrace-%d.gtcap.trace", run.dir, (int)run.pid);
	FILE *f = fopen(path, "rb");
	cr_assert_not_null(f, "%s", path);
	static char bytes[4 << 20];
	size_t len = fread(bytes, 1, sizeof bytes, f);
	fclose(f);
	const char *names[] = {"leaf_call", "middle", "via_a", "via_b", "s_callers"};
	for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
		cr_assert_not_null(memmem(bytes, len, names[i], strlen(names[i])),
				   "no frame of %s in %s", names[i], path);
}
