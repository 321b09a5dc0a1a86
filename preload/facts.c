/* The fact shapes the hook families share: blocks, wakes, system calls, thread and process
 * facts.  The small lock-free tables behind them have files of their own: waiters.c,
 * thread_table.c, fd_kinds.c, losses.c. */
#include "facts.h"
#include "capture_file.h"
#include "lifecycle.h"
#include "ring.h"
#include "stacks.h"

#include <poll.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>

extern void *__libc_stack_end;

_Atomic uint32_t gt_next_serial = 2;

/* ---- calls nested in a pending call ----------------------------------------------------
 * A signal handler may make a hooked call while the thread's call is pending (a waitpid in
 * a SIGCHLD handler during a read).  The nested call's facts come between the outer call's
 * begin and end, and the outer call's state (what a jump out or the thread's end would end,
 * its waiter registration) is kept in a slot per thread until the nested call ends: pending
 * says GT_PENDING_OUTER meanwhile, and GT_PENDING_NESTED afterwards, so that the outer end
 * is written in full (the one-word forms name the thread's last wait, which was the nested
 * one).  One level is kept: a call nested deeper takes the outer call's place, as a call
 * whose end was lost (the encoder repairs it). */
struct gt_outer {
	_Atomic uint32_t serial;  /* 0: free */
	uint8_t pending, kind, waiter_registered;
	uint32_t nr;
	uint64_t registered_obj, obj;
	uintptr_t busy_sp;
};
#define GT_OUTERS 256u
static struct gt_outer gt_outers[GT_OUTERS];

/* A call begins while t's is pending: the pending one's state saved, when a slot is free */
static GT_NOINLINE void outer_save(struct gt_tls *t)
{
	struct gt_outer *o = &gt_outers[t->serial % GT_OUTERS];
	uint32_t free_slot = 0;
	if ((t->pending & GT_PENDING_OUTER) ||
	    !atomic_compare_exchange_strong(&o->serial, &free_slot, t->serial))
		return;
	o->pending = t->pending & GT_PENDING_CALL;
	o->kind = t->pending_kind;
	o->waiter_registered = t->waiter_registered;
	o->nr = t->pending_nr;
	o->registered_obj = t->registered_obj;
	o->obj = t->pending_obj;
	o->busy_sp = t->busy_sp;
	t->pending = GT_PENDING_OUTER;
	t->waiter_registered = 0;
}

GT_INLINE void outer_check(struct gt_tls *t)
{
	if (GT_UNLIKELY(t->pending & GT_PENDING_CALL))
		outer_save(t);
}

/* The nested call ended (written: it began; its block's obj stays in pending_obj, which the
 * one-word forms name): the outer one is pending again */
static GT_NOINLINE void outer_restore(struct gt_tls *t, int written)
{
	struct gt_outer *o = &gt_outers[t->serial % GT_OUTERS];
	t->pending = (uint8_t)(o->pending | (written ? GT_PENDING_NESTED : 0));
	t->pending_kind = o->kind;
	t->waiter_registered = o->waiter_registered;
	t->pending_nr = o->nr;
	t->registered_obj = o->registered_obj;
	t->busy_sp = o->busy_sp;
	atomic_store_explicit(&o->serial, 0, memory_order_release);
}

/* the pending call's obj (a nested block's took pending_obj's place) */
GT_INLINE uint64_t pending_call_obj(const struct gt_tls *t)
{
	if (!(t->pending & GT_PENDING_NESTED))
		return t->pending_obj;
	return t->waiter_registered ? t->registered_obj : GT_NO_OBJ;
}

GT_INLINE void pending_ended(struct gt_tls *t)
{
	if (GT_UNLIKELY(t->pending & GT_PENDING_OUTER))
		outer_restore(t, (t->pending & GT_PENDING_CALL) != 0);
	else
		t->pending = GT_PENDING_NONE;
}

void gt_outers_reset(void)
{
	for (unsigned i = 0; i < GT_OUTERS; i++)
		gt_store(&gt_outers[i].serial, 0);
}

int gt_block_result(int rc)
{
	switch (rc) {
	case 0: return GT_BR_OK;
	case ETIMEDOUT: return GT_BR_TIMEOUT;
	case EINTR: return GT_BR_SIGNAL;
	case EOWNERDEAD: return GT_BR_OWNERDEAD;
	default: return GT_BR_ERROR;
	}
}

void gt_emit_c_slow(struct gt_tls *t, int tried, uint32_t thread, uint8_t type, uint8_t aux,
		    uint64_t tsc, unsigned cpu, const void *payload, uint32_t size)
{
	uint64_t *r = tried ? gt_reserve_slow_offstack(cpu, 16 + size, tsc) : gt_reserve(cpu, 16 + size, tsc);
	if (!r)
		return;
	if (tried)
		gt_writing_open(r, 16 + size);
	gt_store((_Atomic uint64_t *)&r[1], tsc);
	for (uint32_t i = 0; i < size / 8; i++) { /* whole words (facts.h), no memcpy call */
		uint64_t w;
		__builtin_memcpy(&w, (const char *)payload + 8 * i, 8);
		gt_store((_Atomic uint64_t *)&r[2 + i], w);
	}
	gt_commit(r, gt_rec_word(type, aux, 16 + size, thread));
	t->last_tsc = tsc;
}

/* The registration after the timestamp, and the stack only once the block is certain: a
 * retry right after registering meets the lock as the first try did, not a stack capture
 * later; a releaser that sees the registration stamps its wake after the block began.
 * Inlined in the callers, so the stack is taken at the same depth from the hook. */
GT_INLINE void block_register(struct gt_tls *t, uint8_t kind, uint64_t obj, int register_waiter)
{
	gt_busy_on(t);
	outer_check(t);
	t->waiter_registered = 0;
	if (register_waiter) {
		t->registered_obj = obj;
		t->pending_kind = kind; /* read only with a pending block, or by jumps.c */
		/* in the table before its bucket counts it: a release that finds the count
		 * finds the waiter (GT_RELEASE_WAITED) */
		int slot = gt_waiters_add(obj);
		uint64_t seq = atomic_fetch_add_explicit(gt_blocked_word(kind, obj), GT_REGISTERED + 1,
							 memory_order_release) >> 32;
		t->waiter_registered = (uint8_t)(1 | (slot != 0) << 1);
		if (!slot)
			gt_lose(GT_NOTICE_WAITERS_LOST);
		gt_waiters_stamp(slot, obj, kind, seq);
		atomic_thread_fence(memory_order_seq_cst);
	}
}

GT_INLINE void block_prepare(struct gt_tls *t, uint8_t kind, uint64_t obj, int register_waiter,
			     struct gt_block *b)
{
	b->tsc = gt_now(&b->cpu);
	b->flags = 0;
	block_register(t, kind, obj, register_waiter);
}

void gt_fact_block_prepare(struct gt_tls *t, uint8_t kind, uint64_t obj, int register_waiter,
			   struct gt_block *b)
{
	block_prepare(t, kind, obj, register_waiter, b);
}

/* mutex: a condition wait's mutex, as the tail (capture.h gt_p_block_mutex), 0 = none */
GT_INLINE void block_commit(struct gt_tls *t, uint8_t kind, uint64_t obj, const struct gt_block *b,
			    uint32_t stack, uint64_t mutex)
{
	struct {
		struct gt_p_block b;
		struct gt_p_block_mutex m;
	} p = {{.obj = obj, .stack = stack, .flags = b->flags}, {.mutex = mutex}};
	uint32_t serial = t->serial;
	int compact = !b->flags && obj < GT_C_OBJ_MAX && (stack | serial) < GT_C_STACK_MAX;
	unsigned ctype = mutex ? GT_C_BLOCK_BEGIN_MUTEX : GT_C_BLOCK_BEGIN, aux = kind;
	unsigned hi = stack >> 16;
	/* a mutex near the condvar: two words (capture.h gt_compact_near_mutex) */
	int near = mutex ? gt_compact_near_mutex((int64_t)(mutex - obj), stack) : -1;
	if (near >= 0)
		aux = (unsigned)near & 15, hi = (unsigned)near >> 4;
	gt_emit_c(t, serial, GT_BLOCK_BEGIN, kind, b->tsc, b->cpu, &p, mutex ? sizeof p : sizeof p.b,
		  compact ? 2 + (mutex && near < 0) : 0, gt_compact_word(ctype, aux, serial, hi),
		  obj | (uint64_t)stack << 48, mutex);
	t->pending = GT_PENDING_BLOCK | (t->pending & GT_PENDING_OUTER);
	t->pending_kind = kind;
	t->pending_obj = obj;
	t->busy = 0;
}

void gt_fact_block_commit(struct gt_tls *t, uint8_t kind, uint64_t obj, const struct gt_block *b)
{
	block_commit(t, kind, obj, b, gt_stack_id(t, GT_OWN_FRAMES_FACT), 0);
}

/* The stack once, for both facts, then the look for mutex waiters: the mutex is released
 * inside the real wait, as close as possible after it.  The mutex wake comes before the
 * condvar block, whose timestamp precedes its registration as every block's does.  Without
 * a waiter, the block names the mutex: one that blocks after the look (GT_BLOCK_COND_HELD)
 * is let in by the release inside the real wait. */
void gt_fact_cond_wait_begin(struct gt_tls *t, uint64_t cond, uint64_t mutex)
{
	gt_busy_on(t);
	uint32_t stack = gt_stack_id(t, GT_OWN_FRAMES_FACT);
	unsigned cpu;
	uint64_t released = mutex;
	if (gt_blocked(GT_BK_MUTEX, mutex) && gt_waiters_has(mutex)) {
		uint64_t tsc = gt_now(&cpu);
		gt_fact_wake_emit(t, t->serial, GT_BK_MUTEX, mutex, stack, 1, tsc, cpu);
		released = 0;
	}
	struct gt_block b = {.flags = 0};
	b.tsc = gt_now(&b.cpu);
	block_register(t, GT_BK_COND, cond, 1);
	block_commit(t, GT_BK_COND, cond, &b, stack, released);
}

static void unregister_waiter(struct gt_tls *t, uint8_t kind, uint64_t obj)
{
	if (t->waiter_registered & 2)
		gt_waiters_remove(obj);
	if (t->waiter_registered & 1)
		atomic_fetch_sub_explicit(gt_blocked_word(kind, obj), 1, memory_order_relaxed);
	t->waiter_registered = 0;
}

void gt_fact_block_cancel(struct gt_tls *t, uint8_t kind, uint64_t obj)
{
	unregister_waiter(t, kind, obj);
	if (GT_UNLIKELY(t->pending & GT_PENDING_OUTER))
		outer_restore(t, 0);
	t->busy = 0;
}

void gt_fact_block_begin(struct gt_tls *t, uint8_t kind, uint64_t obj, int register_waiter)
{
	struct gt_block b;
	block_prepare(t, kind, obj, register_waiter, &b);
	block_commit(t, kind, obj, &b, gt_stack_id(t, GT_OWN_FRAMES_FACT), 0);
}

/* A join stamps its block before it reads the target's state: a target that ends in
 * between stamps its wake after this block. */
void gt_fact_block_begin_at(struct gt_tls *t, uint8_t kind, uint64_t obj, int register_waiter,
			    uint64_t tsc, unsigned cpu)
{
	struct gt_block b = {.tsc = tsc, .cpu = cpu};
	block_register(t, kind, obj, register_waiter);
	block_commit(t, kind, obj, &b, gt_stack_id(t, GT_OWN_FRAMES_FACT), 0);
}

void gt_fact_block_end_at(struct gt_tls *t, uint8_t kind, uint64_t obj, int rc, uint64_t tsc,
			  unsigned cpu)
{
	uint32_t serial = t->serial; /* loaded first, it costs GCC 12 no register moves */
	struct gt_p_block_end p = {.obj = obj, .result = (uint32_t)gt_block_result(rc), .err = rc};
	int compact = obj < GT_C_OBJ_MAX && (uint32_t)rc < 65536 && serial < GT_C_THREAD_MAX;
	/* the end of the wait the thread's last BLOCK_BEGIN began: one word */
	int one = !rc && t->pending == GT_PENDING_BLOCK && t->pending_kind == kind &&
		  t->pending_obj == obj && serial < GT_C_THREAD_MAX;
	if (one)
		gt_emit_c(t, serial, GT_BLOCK_END, kind, tsc, cpu, &p, sizeof p, 1,
			  gt_compact_word(GT_C_YIELD, kind, serial, GT_C1_BLOCK_END), 0, 0);
	else
		gt_emit_c(t, serial, GT_BLOCK_END, kind, tsc, cpu, &p, sizeof p, compact ? 2 : 0,
			  gt_compact_word(GT_C_BLOCK_END, kind, serial, p.result), obj | (uint64_t)rc << 48, 0);
	unregister_waiter(t, kind, obj);
	pending_ended(t);
}

void gt_fact_block_end(struct gt_tls *t, uint8_t kind, uint64_t obj, int rc)
{
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	gt_fact_block_end_at(t, kind, obj, rc, tsc, cpu);
}

void gt_fact_wake_at(struct gt_tls *t, uint8_t kind, uint64_t obj, uint32_t count, uint64_t tsc,
		     unsigned cpu)
{
	gt_busy_on(t);
	uint32_t stack = gt_stack_id(t, GT_OWN_FRAMES_FACT);
	gt_fact_wake_emit(t, t->serial, kind, obj, stack, count, tsc, cpu);
	t->busy = 0;
}

int gt_lock_records;

/* A lock record, two words when it fits (capture.h GT_C2_LOCK_ACQUIRE, GT_C2_LOCK_RELEASE). */
static void lock_emit(struct gt_tls *t, uint8_t type, uint8_t kind, uint64_t obj, uint32_t stack,
		      uint32_t flags, uint64_t tsc, unsigned cpu)
{
	struct gt_p_lock p = {.obj = obj, .stack = stack, .flags = flags};
	uint32_t serial = t->serial;
	int compact = obj < GT_C_OBJ_MAX && stack < (1u << 16) && serial < GT_C_THREAD_MAX &&
		      !(flags & ~(uint32_t)(GT_LOCK_WAITED | GT_LOCK_TRY));
	unsigned hi = type == GT_LOCK_ACQUIRE ? GT_C2_LOCK_ACQUIRE : GT_C2_LOCK_RELEASE;
	int e = errno;   /* a new chunk may take system calls */
	gt_emit_c(t, serial, type, kind, tsc, cpu, &p, sizeof p, compact ? 2 : 0,
		  gt_compact_word(GT_C_YIELD, kind | flags << 2, serial, hi),
		  obj | (uint64_t)stack << 48, 0);
	errno = e;
}

void gt_fact_lock_acquire(struct gt_tls *t, uint8_t kind, uint64_t obj, uint32_t flags)
{
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	gt_busy_on(t);
	int e = errno;   /* the stack walk may fail calls of its own */
	uint32_t stack = gt_stack_id(t, GT_OWN_FRAMES_FACT);
	errno = e;
	lock_emit(t, GT_LOCK_ACQUIRE, kind, obj, stack, flags, tsc, cpu);
	t->busy = 0;
}

void gt_fact_lock_release_at(struct gt_tls *t, uint8_t kind, uint64_t obj, uint64_t tsc,
			     unsigned cpu)
{
	lock_emit(t, GT_LOCK_RELEASE, kind, obj, 0, 0, tsc, cpu);
}

void gt_fact_wake(struct gt_tls *t, uint8_t kind, uint64_t obj, uint32_t count)
{
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	gt_fact_wake_at(t, kind, obj, count, tsc, cpu);
}

/* Whether descriptor fd's key obj (cached) is in an FD record of this capture, written now
 * if need be: its SYSCALL_BEGINs then name it by number.  Not in a ring capture, whose
 * summary carries a thread's last SYSCALL_BEGIN without the FD records before it. */
static int fd_defined(int fd, uint8_t kind, uint64_t obj)
{
	const struct gt_file_header *h = gt_cap.header;
	uint32_t capture = h ? (uint32_t)h->start_tsc | 1 : 0;
	if (gt_fd_defined[fd] == capture)
		return capture != 0;
	if (!capture || gt_ring_on())
		return 0;
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	struct gt_p_fd p = {.fd = fd, .obj = obj};
	uint64_t *r = gt_reserve(cpu, 16 + sizeof p, tsc);
	if (!r)
		return 0;
	gt_fill(r, 0, GT_FD, kind, tsc, &p, sizeof p);
	gt_fd_defined[fd] = capture;
	return 1;
}

/* tail: a gt_p_syscall_obj follows with obj (a kernel key); 2: it is arg's, defined (compact
 * records name it by number) */
GT_INLINE void syscall_begin(struct gt_tls *t, uint32_t nr, uint8_t fd_kind, int64_t arg, int tail,
			     uint64_t obj)
{
	gt_busy_on(t);
	outer_check(t);
	uint32_t stack = gt_stack_id(t, GT_OWN_FRAMES_FACT);
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	struct {
		struct gt_p_syscall s;
		struct gt_p_syscall_obj o;
	} q = {{.nr = nr, .stack = stack, .arg = arg}, {obj}};
	uint32_t serial = t->serial;
	int compact = arg == (int32_t)arg && nr < GT_C_NR_MAX && (stack | serial) < GT_C_STACK_MAX;
	uint64_t w1 = (uint32_t)arg | (uint64_t)nr << 32 | (uint64_t)stack << 44;
	if (GT_UNLIKELY(tail))
		gt_emit_c(t, serial, GT_SYSCALL_BEGIN, fd_kind, tsc, cpu, &q, sizeof q,
			  compact ? 4 - tail : 0,
			  gt_compact_word(GT_C_SYSCALL_BEGIN, fd_kind, serial,
					  tail == 2 ? GT_C_FD_OBJ : GT_C_HAS_OBJ), w1, obj);
	else
		gt_emit_c(t, serial, GT_SYSCALL_BEGIN, fd_kind, tsc, cpu, &q.s, sizeof q.s,
			  compact ? 2 : 0, gt_compact_word(GT_C_SYSCALL_BEGIN, fd_kind, serial, 0), w1, 0);
	t->pending = GT_PENDING_SYSCALL | (t->pending & GT_PENDING_OUTER);
	t->pending_nr = nr;
	t->busy = 0;
}

void gt_fact_syscall_begin(struct gt_tls *t, uint32_t nr, uint8_t fd_kind, int64_t arg)
{
	/* arg is the descriptor whenever the kind is one of these (hooks.def), and its kind was
	 * just looked up: the key is cached */
	if (GT_UNLIKELY(gt_fd_has_obj(fd_kind)) && (uint64_t)arg < GT_FD_CACHE)
		syscall_begin(t, nr, fd_kind, arg, 1 + fd_defined((int)arg, fd_kind, gt_fd_objs[arg]),
			      gt_fd_objs[arg]);
	else
		syscall_begin(t, nr, fd_kind, arg, 0, 0);
}

/* A poll for input on one pipe or socket is a wait on it: its key rides along.  fds is read
 * only when it can be (the kernel answers a bad one with EFAULT). */
void gt_fact_poll_begin(struct gt_tls *t, uint32_t nr, const struct pollfd *fds, unsigned long n)
{
	int fd = n == 1 && gt_readable(fds, sizeof *fds) && (fds[0].events & (POLLIN | POLLRDNORM)) ?
			 fds[0].fd : -1;
	int tail = fd >= 0 && fd < GT_FD_CACHE && gt_fd_has_obj(gt_fd_kind(fd));
	syscall_begin(t, nr, GT_FD_POLL, (int64_t)n, tail, tail ? gt_fd_objs[fd] : 0);
}

void gt_fact_syscall_end(struct gt_tls *t, uint32_t nr, long result, int err)
{
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	struct gt_p_syscall_end p = {.nr = nr, .err = err, .result = result};
	uint32_t serial = t->serial;
	int compact = result == (int32_t)result && nr < GT_C_NR_MAX && (uint32_t)err < (1u << 20) &&
		      serial < GT_C_THREAD_MAX;
	/* a small result of the call the thread's last SYSCALL_BEGIN began: one word */
	if (!err && (unsigned long)result < GT_C1_RESULT_MAX && t->pending == GT_PENDING_SYSCALL &&
	    t->pending_nr == nr && serial < GT_C_THREAD_MAX)
		gt_emit_c(t, serial, GT_SYSCALL_END, 0, tsc, cpu, &p, sizeof p, 1,
			  gt_compact_word(GT_C_YIELD, (unsigned)result, serial, GT_C1_SYSCALL_END), 0, 0);
	else
		gt_emit_c(t, serial, GT_SYSCALL_END, 0, tsc, cpu, &p, sizeof p, compact ? 2 : 0,
			  gt_compact_word(GT_C_SYSCALL_END, 0, serial, 0),
			  (uint32_t)result | (uint64_t)nr << 32 | (uint64_t)err << 44, 0);
	pending_ended(t);
}

void gt_fact_thread_name(uint32_t serial, const char *name, bool by_itself)
{
	struct gt_p_thread_name p = {{0}};
	strncpy(p.name, name, 15);
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	gt_emit(serial, GT_THREAD_NAME, by_itself ? GT_NAME_BY_ITSELF : 0, tsc, cpu, &p, sizeof p);
}

void gt_fact_process(struct gt_tls *t, uint8_t kind, uint64_t tsc, unsigned cpu, pid_t child, int err)
{
	struct gt_p_process p = {.child_pid = (uint32_t)child, .err = err};
	gt_emit(t->serial, GT_PROCESS, kind, tsc, cpu, &p, sizeof p);
}

static void emit_own_name(uint32_t serial)
{
	char name[17] = {0};
	if (gt_sys2(SYS_prctl, PR_GET_NAME, name) == 0 && name[0])
		gt_fact_thread_name(serial, name, false); /* follows its start: no fact of its own */
}

/* noinline: its frame is counted in own_frames */
static GT_NOINLINE void fact_thread_existing(struct gt_tls *t)
{
	/* reached from a hook through gt_thread_adopt_offstack, gt_call_on and gt_thread_adopt:
	 * three frames more than a fact */
	uint32_t stack = gt_stack_id(t, GT_OWN_FRAMES_FACT + 3);
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	struct gt_p_thread_start p = {.tid = (uint32_t)gt_sys0(SYS_gettid), .stack = stack};
	gt_emit(t->serial, GT_THREAD_EXISTING, 0, tsc, cpu, &p, sizeof p);
	emit_own_name(t->serial);
}

void gt_fact_thread_start(struct gt_tls *t, uint64_t start_routine)
{
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	struct gt_p_thread_start p = {.tid = (uint32_t)gt_sys0(SYS_gettid), .start_routine = start_routine};
	t->pending_obj = GT_NO_OBJ; /* no block yet (GT_C1_WAKE) */
	gt_emit(t->serial, GT_THREAD_START, 0, tsc, cpu, &p, sizeof p);
	emit_own_name(t->serial);
}

/* A thread the tracer has not announced in this recording: give it a serial (the main
 * thread is 1) and write GT_THREAD_EXISTING.  Also where a lazy start happens. */
struct gt_tls *gt_thread_adopt(struct gt_tls *t)
{
	int st = gt_load(&gt_state);
	uint8_t was_busy = gt_busy_nest(t, 1);
	if (st == GT_ST_UNINIT) {
		gt_init();
		st = gt_load(&gt_state);
	}
	if (st == GT_ST_DELAYED) {
		/* one reservation attempt in the slow path starts recording when it is due */
		unsigned cpu;
		uint64_t tsc = gt_now(&cpu);
		gt_reserve_slow(cpu, 16, tsc);
		st = gt_load(&gt_state);
	}
	if (st != GT_ST_RECORDING) {
		/* the capture filled up: a thread first met now loses its facts too (counted one
		 * per hook, as no record of it exists to say more) */
		if (st == GT_ST_FAILED && gt_cap.header)
			gt_add((_Atomic uint64_t *)&gt_cap.header->facts_lost, 1);
		t->busy = was_busy;
		return NULL;
	}
	pid_t tid = (pid_t)gt_sys0(SYS_gettid);
	if (!t->serial) {
		if (tid == (pid_t)gt_sys0(SYS_getpid)) {
			t->serial = 1;
			t->stack_hi = (uintptr_t)__libc_stack_end;
		} else {
			t->serial = atomic_fetch_add(&gt_next_serial, 1);
		}
		if (!t->raw) /* a raw clone's pthread_self() is its creator's */
			gt_threads_put(pthread_self(), t->serial, 1);
	}
	t->epoch = gt_epoch_now();
	/* a new capture holds no block of the thread: no wake names its obj by it (GT_C1_WAKE) */
	t->pending_obj = GT_NO_OBJ;
	fact_thread_existing(t);
	t->busy = was_busy;
	return t;
}

/* The pending call ends with err (and the one it was nested in, when all): the thread was
 * cancelled or exited inside it, or a signal handler's jump left it */
static void pending_end(struct gt_tls *t, int err, int all)
{
	do {
		unsigned call = t->pending & GT_PENDING_CALL;
		if (call == GT_PENDING_BLOCK)
			gt_fact_block_end(t, t->pending_kind, pending_call_obj(t), err);
		else if (call == GT_PENDING_SYSCALL)
			gt_fact_syscall_end(t, t->pending_nr, -1, err);
		else
			pending_ended(t);
	} while (all && t->pending != GT_PENDING_NONE);
}

/* A blocking call that never returned (the thread was cancelled or exited inside it). */
void gt_finish_pending(struct gt_tls *t)
{
	pending_end(t, ECANCELED, 1);
}

/* A signal handler's jump left the thread's pending call, or the tracer's work before the
 * call began: the call ends now, interrupted by the signal; a waiter registration is undone. */
void gt_fact_call_left(struct gt_tls *t)
{
	int recording = gt_load(&gt_enabled) && gt_load(&gt_state) == GT_ST_RECORDING && t->serial &&
			t->epoch == gt_load(&gt_epoch);
	if (recording && (t->pending & GT_PENDING_CALL)) {
		pending_end(t, EINTR, 0);
	} else {
		unregister_waiter(t, t->pending_kind, t->registered_obj);
		pending_ended(t);
	}
}

void gt_thread_end(struct gt_tls *t, uint8_t how)
{
	if (t->ended & GT_TLS_ENDED)
		return;
	gt_walks_give_left();
	if (gt_load(&gt_enabled) && gt_load(&gt_state) == GT_ST_RECORDING && t->serial &&
	    t->epoch == gt_load(&gt_epoch)) {
		gt_busy_on(t);
		gt_finish_pending(t);
		/* Marked ended before the wake is stamped, and a join stamps its block before it
		 * reads the mark: a join that saw us alive began before our wake. */
		if (!t->raw)
			gt_threads_mark_ended(pthread_self());
		atomic_thread_fence(memory_order_seq_cst);
		unsigned cpu;
		uint64_t tsc = gt_now(&cpu);
		/* joiners wait on our serial: the wake comes first, stamped before the end */
		gt_fact_wake_emit(t, t->serial, GT_BK_JOIN, t->serial, 0, GT_WAKE_ALL, tsc, cpu);
		tsc = gt_now(&cpu);
		gt_emit_c(t, t->serial, GT_THREAD_END, how, tsc, cpu, NULL, 0,
			  t->serial < GT_C_THREAD_MAX && how < 16,
			  gt_compact_word(GT_C_YIELD, how, t->serial, GT_C1_THREAD_END), 0, 0);
		t->busy = 0;
	}
	if (!t->raw)
		gt_threads_mark_ended(pthread_self());
	t->ended |= GT_TLS_ENDED;
}
