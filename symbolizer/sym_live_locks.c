/* sym_live_locks: the lock a live thread's futex wait is for, read in its process (stopped
 * or not: each word is read once, with process_vm_readv) by glibc's layouts, which
 * common/glibc_layout.h knows for the recorder too.  The kind comes from the glibc function
 * waiting, as the stack shows it: a futex word alone does not say whose it is. */
#include "symbolizer.h"

#include "common/glibc_layout.h"

#include <gotrace/capture.h>
#include <string.h>
#include <sys/uio.h>

static bool read_words(int pid, uint64_t addr, void *out, size_t size)
{
	struct iovec local = {out, size}, remote = {(void *)(uintptr_t)addr, size};
	return process_vm_readv(pid, &local, 1, &remote, 1, 0) == (ssize_t)size;
}

/* A waiter sleeps on __g_signals[g]: the condvar is the one whose fields agree for g (its
 * waiters counted in __wrefs, and g the group new waiters join or one still holding
 * waiters). */
static uint64_t condvar_of(int pid, uint64_t word)
{
	for (unsigned g = 0; g < 2; g++) {
		uint64_t at = word - GT_GLIBC_COND_SIGNALS - 4 * g;
		pthread_cond_t c;
		if (!read_words(pid, at, &c, sizeof c))
			continue;
		uint64_t wseq;   /* a union in glibc 2.34 on, a plain 64-bit word before */
		memcpy(&wseq, (const char *)&c + GT_GLIBC_COND_WSEQ, sizeof wseq);
		if (c.__data.__wrefs >= GT_GLIBC_COND_WREF &&
		    ((wseq & 1) == g || c.__data.__g_size[g] > 0))
			return at;
	}
	return word - GT_GLIBC_COND_SIGNALS;
}

/* The kind glibc function fn waits for, 0 when it tells none. */
static uint8_t kind_of_function(const char *fn)
{
	if (strstr(fn, "cond_wait") || strstr(fn, "cond_timedwait") || strstr(fn, "cond_clockwait"))
		return GT_BK_COND;
	if (strstr(fn, "rwlock_") && strstr(fn, "rdlock"))
		return GT_BK_RWLOCK_RD;
	if (strstr(fn, "rwlock_") && strstr(fn, "wrlock"))
		return GT_BK_RWLOCK_WR;
	if (strstr(fn, "mutex_lock") || strstr(fn, "mutex_timedlock") ||
	    strstr(fn, "mutex_clocklock"))
		return GT_BK_MUTEX;
	if (strstr(fn, "pthread_join") || strstr(fn, "pthread_timedjoin") ||
	    strstr(fn, "pthread_clockjoin"))
		return GT_BK_JOIN;   /* the word is the joined thread's tid, 0 once it ended */
	if (!strncmp(fn, "sem_", 4) || strstr(fn, "_sem_wait") || strstr(fn, "sem_timedwait") ||
	    strstr(fn, "sem_clockwait"))
		return GT_BK_SEM;
	return 0;
}

/* The int32 at addr in pid, when it is a tid (positive); else 0. */
static int tid_at(int pid, uint64_t addr)
{
	int32_t tid = 0;
	return read_words(pid, addr, &tid, sizeof tid) && tid > 0 ? tid : 0;
}

void gt_sym_live_lock(int pid, uint64_t word, uint32_t expected, const struct gt_frame *frames,
		      size_t n, struct gt_live_lock *out)
{
	*out = (struct gt_live_lock){.kind = GT_BK_FUTEX, .object = word, .readers = -1};
	for (size_t i = 0; i < n && out->kind == GT_BK_FUTEX; i++) {
		uint8_t kind = kind_of_function(frames[i].func);
		if (kind)
			out->kind = kind;
	}
	switch (out->kind) {
	case GT_BK_COND:
		out->object = condvar_of(pid, word);
		break;
	case GT_BK_RWLOCK_RD:
	case GT_BK_RWLOCK_WR: {
		bool on_writers = out->kind == GT_BK_RWLOCK_WR && expected != GT_RWLOCK_FUTEX_USED;
		out->object = word - (on_writers ? GT_GLIBC_RWLOCK_WRITERS_FUTEX
						 : GT_GLIBC_RWLOCK_READERS_FUTEX);
		out->holder = tid_at(pid, out->object + GT_GLIBC_RWLOCK_WRITER);
		/* the readers glibc counts are registered ones: in a read phase they hold it, in
		 * a write phase they wait for it (the writer holds it) */
		uint32_t readers;
		if (read_words(pid, out->object + GT_GLIBC_RWLOCK_READERS, &readers, sizeof readers))
			out->readers = readers & GT_RWLOCK_WRPHASE ? 0
								   : (int)(readers / GT_RWLOCK_READER);
		break;
	}
	case GT_BK_MUTEX:
		out->holder = tid_at(pid, word + GT_GLIBC_MUTEX_OWNER);   /* __lock is its word */
		break;
	case GT_BK_JOIN:
		out->holder = tid_at(pid, word);
		break;
	default:
		break;
	}
}

const char *gt_sym_live_lock_kind(uint8_t kind)
{
	switch (kind) {
	case GT_BK_MUTEX: return "mutex";
	case GT_BK_COND: return "condvar";
	case GT_BK_RWLOCK_RD:
	case GT_BK_RWLOCK_WR: return "rwlock";
	case GT_BK_SEM: return "semaphore";
	case GT_BK_JOIN: return "join";
	default: return "futex";
	}
}
