/* gotrace capture format, version 3: the one contract between preload/ (writer) and
 * encoder/ (reader).  Everything about the bytes of a capture file is in this header.
 *
 * A capture is one file per traced process, written through a MAP_SHARED mapping so that
 * every committed record survives a crash or kill -9 of the process.
 *
 *   offset 0                  struct gt_file_header (GT_FILE_HEADER_SIZE bytes)
 *   GT_FILE_HEADER_SIZE       chunk 0 (header->chunk_size bytes)
 *   ... + k*chunk_size        chunk k
 *
 * Chunks are handed out in increasing k (header->n_chunks counts them, atomically); each
 * belongs to one CPU for its life (a ring capture's until it is reused: "Ring captures"
 * below), and a CPU's chunks hold its records in seq order (seq
 * follows the installs, which may differ from k).  A chunk starts with struct gt_chunk_header and holds
 * records back to back from GT_CHUNK_HEADER_SIZE up to chunk->used (reserved bytes; a
 * reservation that would not fit is abandoned and the writer moves to a new chunk, so
 * the tail of a chunk beyond the last record may be reserved but zero).
 *
 * Records are 8-byte aligned and start with struct gt_rec (a full record, 16 bytes or more)
 * or, from version 2, are compact (type byte >= GT_COMPACT_BIT: "Compact records" below, two
 * or three words; from version 3 some one word, committed by its one store).
 * The writer fills the payload and the timestamp first and stores the first word (type,
 * nwords, aux, thread) last with release semantics, so a record whose first word is zero was
 * never committed (a writer killed mid-record).  The reader skips zero words one at a time and
 * resynchronises on garbage (unknown type, impossible length, implausible timestamp),
 * counting every skipped byte.
 *
 * Multi-byte values are in the writer's native byte order (little-endian x86-64 and
 * aarch64; the header's byte_order field tells).  All structs below have explicit padding
 * and are checked by static asserts, so both sides agree on every offset.
 */
#ifndef GOTRACE_CAPTURE_H
#define GOTRACE_CAPTURE_H

#include <stdint.h>

#define GT_CAPTURE_MAGIC "GTCAPTR"      /* 8 bytes with its NUL */
#define GT_CAPTURE_VERSION 4u          /* 2: compact records; 3: one-word ones too; 4: lock
					* records (LOCK_ACQUIRE, LOCK_RELEASE); readers read 1 (full
					* records only, otherwise the same), 2 and 3 */
#define GT_BYTE_ORDER_MARK 0x01020304u  /* read back as 0x04030201 on the other byte order */
#define GT_FILE_HEADER_SIZE 8192u
#define GT_CHUNK_MAGIC 0x4b435447u      /* "GTCK" */
#define GT_KEEP_MAGIC 0x504b5447u       /* "GTKP": a ring capture's keep chunk (below) */
#define GT_CHUNK_HEADER_SIZE 64u
#define GT_PATH_MAX 4096u
#define GT_MAX_RECORD_WORDS 1024u       /* 8 KiB: the largest record a writer may produce */
#define GT_MAX_STACK_DEPTH 128u         /* Go 1.24 profiles crash above 128 frames */
#define GT_MAX_CPUS 4096u

/* How timestamps were taken (gt_file_header.clock_source). */
enum gt_clock_source {
	GT_CLOCK_TSC = 1,       /* rdtsc (x86-64) / cntvct_el0 (aarch64): ticks at tsc_hz */
	GT_CLOCK_MONOTONIC = 2, /* clock_gettime(CLOCK_MONOTONIC) in ns; tsc_hz = 1e9 */
};

/* Stack capture mode in force (gt_file_header.stack_mode). */
enum gt_stack_mode {
	GT_STACKS_NONE = 0,
	GT_STACKS_FP = 1,     /* frame-pointer walk */
	GT_STACKS_UNWIND = 2, /* libunwind */
};

/* gt_file_header.flags */
enum gt_file_flags {
	GT_FILE_FINALIZED = 1u << 0,     /* the process ended normally (and wrote its end records
					  * unless recording had stopped early) */
	GT_FILE_WRITE_FAILED = 1u << 1,  /* recording stopped early: the file could not grow
					  * (stop_errno, stop_tsc, facts_lost tell more) */
	GT_FILE_TSC_UNRELIABLE = 1u << 2,/* no invariant TSC: clock_source is MONOTONIC */
	GT_FILE_STOP_WORD = 1u << 3,     /* the writer reads stop_at_tsc from this mapping: a
					  * launcher may stop it (GT_FILE_DETACHED) */
	GT_FILE_DETACHED = 1u << 4,      /* set by the launcher (gotrace run) with stop_at_tsc:
					  * recording stopped while the process kept running
					  * untraced; what is committed below stop_at_tsc is all */
	GT_FILE_RING = 1u << 5,          /* flight recorder (GOTRACE_LAST): CPU chunks are reused
					  * oldest first, see "Ring captures" below */
	GT_FILE_AT_BOUND = 1u << 6,      /* with GT_FILE_WRITE_FAILED: recording stopped at the
					  * bound of max_capture_bytes (GOTRACE_MAX_CAPTURE), not
					  * because the file system refused (stop_errno EFBIG) */
	GT_FILE_SANDBOXED = 1u << 7,     /* with GT_FILE_WRITE_FAILED: recording stopped when the
					  * process entered a seccomp sandbox, which may refuse the
					  * writer's system calls; its later facts are not counted */
};

struct gt_file_header {
	char magic[8];              /* GT_CAPTURE_MAGIC */
	uint32_t version;           /* GT_CAPTURE_VERSION; readers refuse newer versions */
	uint32_t byte_order;        /* GT_BYTE_ORDER_MARK as written */
	uint32_t header_size;       /* GT_FILE_HEADER_SIZE: where chunk 0 starts */
	uint32_t chunk_size;        /* bytes per chunk, a multiple of 4096 */
	uint32_t pid, ppid;
	uint32_t n_cpus;            /* CPUs the writer may see (highest CPU id + 1) */
	uint32_t clock_source;      /* enum gt_clock_source */
	uint64_t tsc_hz;            /* ticks per second estimated at start; clock pairs refine it */
	uint64_t start_tsc;         /* clock pair taken when recording began ... */
	uint64_t start_mono_ns;     /* ... CLOCK_MONOTONIC at that instant */
	uint64_t start_real_ns;     /* ... CLOCK_REALTIME at that instant */
	uint32_t stack_mode;        /* enum gt_stack_mode */
	uint32_t stack_depth;       /* maximum frames captured per stack */
	uint64_t n_chunks;          /* chunks handed out so far (atomic, writer-side) */
	uint32_t flags;             /* enum gt_file_flags (atomic or) */
	uint32_t arch;              /* GT_ARCH_* */
	uint64_t start_delay_ns;    /* GOTRACE_START_DELAY in force (0 = none) */
	uint64_t duration_ns;       /* GOTRACE_DURATION in force (0 = until exit) */
	/* GT_FILE_WRITE_FAILED: when and why recording stopped, and the facts the writer met
	 * after that and could not record (atomic add: no record fits anymore) */
	uint64_t stop_tsc;
	uint64_t facts_lost;
	int32_t stop_errno;         /* ENOSPC, EFBIG (RLIMIT_FSIZE), EDQUOT, ... */
	uint32_t pad0;
	/* facts stamped at or after this are not recorded (the writer's fast path compares
	 * every fact with it, in this shared page): the end of GOTRACE_DURATION, UINT64_MAX,
	 * or a launcher's stop (GT_FILE_DETACHED); in clock_source units */
	uint64_t stop_at_tsc;
	/* the process's start time (/proc/PID/stat field 22, clock ticks since boot): pid and
	 * this name the process, so a reused pid is never taken for it (0: unknown) */
	uint64_t proc_start_ticks;
	/* GT_FILE_RING: the window kept (GOTRACE_LAST: bytes of CPU chunks, or ns), and the
	 * latest timestamp of a record in a reused chunk (atomic max, raised before the chunk's
	 * records are carried to the keep chunks): records at or before it may be missing */
	uint64_t ring_bytes;
	uint64_t ring_ns;
	uint64_t ring_lost_tsc;
	/* A process that recorded no end (killed by a signal it cannot handle), reaped by the
	 * launcher (gotrace run: the command, and the orphans it adopts): written by the
	 * launcher once the process is dead, before the capture is read.  A clock pair taken
	 * when the launcher learnt of the death (CLOCK_MONOTONIC, 0: not reaped so; and in
	 * clock_source units), and the wait status it got. */
	uint64_t reaped_mono_ns;
	uint64_t reaped_tsc;
	uint32_t reaped_status;
	uint32_t pad1;
	uint64_t reserved[4];
	/* GOTRACE_MAX_CAPTURE in force: the bytes the captures of the run may hold together
	 * (or this capture alone, when it could not join the run's count); 0 = no bound */
	uint64_t max_capture_bytes;
	char exe_path[GT_PATH_MAX]; /* /proc/self/exe at start, NUL-terminated */
	char cmdline[2048];         /* argv joined by spaces, truncated, NUL-terminated, at start
				     * (GT_PROCESS_NAME facts follow later rewrites) */
};

enum gt_arch { GT_ARCH_X86_64 = 1, GT_ARCH_AARCH64 = 2 };
/* This build's arch: what its writers put in the headers' arch fields. */
#if defined(__aarch64__)
#define GT_ARCH_NATIVE GT_ARCH_AARCH64
#else
#define GT_ARCH_NATIVE GT_ARCH_X86_64
#endif

struct gt_chunk_header {
	uint32_t magic;             /* GT_CHUNK_MAGIC; 0 = chunk never used */
	uint32_t cpu;               /* the CPU whose records it holds */
	uint64_t seq;               /* install order: read a CPU's chunks by increasing seq */
	uint64_t used;              /* bytes reserved from the chunk start (atomic) */
	uint64_t first_tsc;         /* timestamp when the chunk was opened: its compact records'
				     * base (set before the chunk is installed, never changed) */
	uint64_t reserved[4];
};

/* Ring captures (GT_FILE_RING).  The CPU chunks form a ring: when the window is full (ring_bytes
 * of chunks, or chunks whose replacement is older than ring_ns), the chunk replaced longest
 * ago is reused for the CPU that needs one: its magic is cleared, what outlives the window
 * is copied into keep chunks (magic GT_KEEP_MAGIC, cpu 0, records as in CPU chunks, never
 * reused), ring_lost_tsc is raised, the chunk is zeroed and installed again with a new seq.
 * What a keep chunk receives from a reused chunk: every THREAD_NEW, THREAD_START,
 * THREAD_EXISTING, THREAD_NAME, STACK, MODULE, MODULE_UNLOAD, CLOCK, NOTICE, PROCESS,
 * PROCESS_NAME and FD, and per thread the last of its BLOCK_BEGIN, BLOCK_END, SYSCALL_BEGIN,
 * SYSCALL_END and THREAD_END (a thread blocked since before the window: its BLOCK_BEGIN).
 * A reader rebuilds the state at ring_lost_tsc from the keep chunks and the records at or
 * before it that CPU chunks still hold, and reads CPU chunks' records after it as the window;
 * with ring_ns, the window starts no earlier than ring_ns before the last record (a quiet
 * phase reuses no chunk, so the chunks of a busy one before it outlive ring_ns);
 * a record may be in both places (a reuse cut short by a crash).  A reader that does not know
 * ring captures skips keep chunks as foreign and reads the window without what came before. */

/* The first 16 bytes of every record.  The first 8 bytes are one atomic word, written last. */
struct gt_rec {
	uint8_t type;               /* enum gt_fact; 0 = not committed */
	uint8_t aux;                /* per type, below */
	uint16_t nwords;            /* record length in 8-byte words, this header included */
	uint32_t thread;            /* capture-local thread serial: 1 = main thread, 0 = none */
	uint64_t tsc;               /* when the fact happened (see each type) */
};

/* Facts: the one table of record types, X(id, NAME, payload, aux).  It expands below to
 * enum gt_fact, gt_fact_name() and gt_fact_min_payload(); readers, reports and tests expand
 * it too, so a fact added here reaches all of them (tests/encoder/test_capture_format.c
 * checks the table).
 *   id       the type byte in the file: never renumbered (it is the format)
 *   payload  GT_PAYLOAD(tag): struct gt_p_<tag> follows the gt_rec header, and its size is
 *            the minimum payload (STACK, MODULE, USER and PROCESS_NAME carry a variable
 *            tail after it);
 *            GT_NO_PAYLOAD: nothing follows
 *   aux      what the header's aux byte means
 * The comment above each entry says when tsc is taken and what else the header means.
 * Timestamps: release facts (unlock, post, signal, broadcast, thread create, thread end) are
 * stamped before the real call, acquire/return facts after it returns, so that a waker's wake
 * always precedes its wakee's resume. */
#define GT_FACTS(X) \
	/* creator thread, stamped before the real pthread_create; written only on success */ \
	X(1, THREAD_NEW, GT_PAYLOAD(thread_new), "0") \
	/* the new thread's first fact, from inside it */ \
	X(2, THREAD_START, GT_PAYLOAD(thread_start), "0") \
	/* the thread ends */ \
	X(3, THREAD_END, GT_NO_PAYLOAD, "enum gt_end_how") \
	/* thread name set or already present; written by the named thread itself (prctl, \
	 * pthread_setname_np on itself): aux 1, a fact of its running */ \
	X(4, THREAD_NAME, GT_PAYLOAD(thread_name), "1 if the named thread wrote it (GT_NAME_BY_ITSELF)") \
	/* a thread that existed before recording began (main at start, or one first met by a \
	 * hook) */ \
	X(5, THREAD_EXISTING, GT_PAYLOAD(thread_start), "1 if it was blocked when first seen") \
	/* about to block; a condition wait's may carry a struct gt_p_block_mutex tail */ \
	X(6, BLOCK_BEGIN, GT_PAYLOAD(block), "enum gt_block_kind") \
	/* returned from the blocking call */ \
	X(7, BLOCK_END, GT_PAYLOAD(block_end), "enum gt_block_kind") \
	/* released an object others may wait on */ \
	X(8, WAKE, GT_PAYLOAD(wake), "enum gt_block_kind (of the waiters)") \
	/* entering a possibly blocking syscall; on a pipe, FIFO or socket a struct \
	 * gt_p_syscall_obj follows (the descriptor's kernel identity) */ \
	X(9, SYSCALL_BEGIN, GT_PAYLOAD(syscall), "enum gt_fd_kind") \
	/* returned from it */ \
	X(10, SYSCALL_END, GT_PAYLOAD(syscall_end), "0") \
	/* sched_yield called (stamped before); the thread's next fact marks its resumption */ \
	X(11, YIELD, GT_PAYLOAD(stackonly), "0") \
	/* a stack definition; thread = 0; nframes PCs follow the struct */ \
	X(12, STACK, GT_PAYLOAD(stack), "0") \
	/* a loaded object; thread = 0; build-id and path follow the struct */ \
	X(13, MODULE, GT_PAYLOAD(module), "0") \
	/* an object unloaded (dlclose) */ \
	X(14, MODULE_UNLOAD, GT_PAYLOAD(module_unload), "0") \
	/* a clock pair; tsc = counter */ \
	X(15, CLOCK, GT_PAYLOAD(clock), "0") \
	/* something the encoder must report */ \
	X(16, NOTICE, GT_PAYLOAD(notice), "enum gt_notice") \
	/* user annotation; name and message bytes follow the struct */ \
	X(17, USER, GT_PAYLOAD(user), "enum gt_user_kind") \
	/* fork/vfork/posix_spawn/exec/system: where a child capture comes from */ \
	X(18, PROCESS, GT_PAYLOAD(process), "enum gt_proc_kind") \
	/* recording ends (normal exit, duration elapsed); tsc = last instant covered */ \
	X(19, CAPTURE_END, GT_NO_PAYLOAD, "0") \
	/* the process's name as its user knows it (comm, command line after setproctitle-style \
	 * rewrites): at the capture's start, at a thread's creation when it changed, at the \
	 * end; thread = 0; the last one names the process.  The command line follows the struct */ \
	X(20, PROCESS_NAME, GT_PAYLOAD(process_name), "enum gt_name_when") \
	/* version 3: the kernel key of a pipe, FIFO or socket descriptor, before the first \
	 * compact SYSCALL_BEGIN that names it by its number (GT_C_FD_OBJ); thread = 0 */ \
	X(21, FD, GT_PAYLOAD(fd), "enum gt_fd_kind") \
	/* version 4, --locks=all only: a mutex or rwlock acquired, stamped after the lock (or \
	 * try-lock) returned it; a condition wait taking its mutex back, after the wait \
	 * (GT_LOCK_COND) */ \
	X(22, LOCK_ACQUIRE, GT_PAYLOAD(lock), "enum gt_block_kind: MUTEX, RWLOCK_RD, RWLOCK_WR") \
	/* version 4, --locks=all only: released, stamped before the real unlock and written \
	 * once it succeeded; a condition wait's release of its mutex, before its BLOCK_BEGIN; \
	 * stack 0, flags 0 */ \
	X(23, LOCK_RELEASE, GT_PAYLOAD(lock), "enum gt_block_kind: MUTEX, RWLOCK_WR (a rwlock, either mode)")

/* The payload column's values: minimum payload bytes. */
#define GT_PAYLOAD(tag) sizeof(struct gt_p_##tag)
#define GT_NO_PAYLOAD 0

enum gt_fact {
	GT_NONE = 0,            /* a word never committed */
#define GT_FACT_ENUM_(id, name, payload, aux) GT_##name = id,
	GT_FACTS(GT_FACT_ENUM_)
#undef GT_FACT_ENUM_
	GT_FACT_COUNT
};

enum gt_end_how { GT_END_RETURN = 0, GT_END_EXIT = 1, GT_END_CANCEL = 2, GT_END_PROCESS = 3 };

/* What a thread blocked on or released. */
enum gt_block_kind {
	GT_BK_MUTEX = 1,
	GT_BK_RWLOCK_RD = 2,
	GT_BK_RWLOCK_WR = 3,   /* also a rwlock unlock, whichever mode was held */
	GT_BK_COND = 4,        /* wait: obj = condvar; wake: signal (count 1) or broadcast */
	GT_BK_SEM = 5,
	GT_BK_BARRIER = 6,
	GT_BK_JOIN = 7,        /* wait: obj = joined thread's serial; wake: by the exiting thread */
	GT_BK_SLEEP = 8,       /* sleep family; obj = requested ns (0 = unknown) */
	GT_BK_FUTEX = 9,       /* syscall(SYS_futex) wait/wake; obj = futex word address */
	GT_BK_FD = 10,         /* wake only: a pipe/FIFO/socket descriptor closed (stamped before
				* the close, or at a normal process end for each one still open);
				* obj = its kernel key (GT_OBJ_KERNEL).  Readers see end of file
				* once the last one is closed */
	GT_BK_COUNT
};

/* gt_p_block_end.result: how the wait ended. */
enum gt_block_result {
	GT_BR_OK = 0,          /* acquired / woken */
	GT_BR_TIMEOUT = 1,
	GT_BR_SIGNAL = 2,      /* EINTR */
	GT_BR_ERROR = 3,       /* any other failure (errno in err) */
	GT_BR_OWNERDEAD = 4,   /* robust mutex acquired with EOWNERDEAD */
};

/* What a syscall's descriptor is, so the encoder can tell network waits from file I/O. */
enum gt_fd_kind {
	GT_FD_NONE = 0,        /* no descriptor (wait4, sigwait, futex, ...) */
	GT_FD_SOCKET = 1,
	GT_FD_PIPE = 2,        /* pipe or FIFO */
	GT_FD_FILE = 3,        /* regular file or block device */
	GT_FD_OTHER = 4,       /* char device (or anything not below) */
	GT_FD_POLL = 5,        /* readiness wait over several fds: poll, select, epoll_wait */
	GT_FD_DIR = 6,         /* directory (an fsync of it, say) */
	GT_FD_ANON = 7,        /* anonymous inode: eventfd, timerfd, signalfd, epoll, inotify */
};

enum gt_notice {
	GT_NOTICE_DROPPED = 1,      /* count facts dropped (no room, reentrancy cap, ...) */
	GT_NOTICE_WRITE_FAILED = 2, /* recording stopped: the file could not grow; value = errno,
				     * tsc = when (the header has both too) */
	GT_NOTICE_STACKS_LOST = 3,  /* count stacks not stored (table full) */
	GT_NOTICE_THREADS_LOST = 4, /* count threads the thread table could not hold (join
				     * and setname on them are not seen) */
	GT_NOTICE_WAITERS_LOST = 5, /* count waits the waiter table could not hold (their
				     * wakers are not seen) */
	GT_NOTICE_REENTRY_LOST = 6, /* count hooked calls made while the tracer worked on the
				     * same thread (a signal handler interrupting it): passed
				     * straight through, unrecorded */
	GT_NOTICE_WAITS_UNSHOWN = 7, /* count mutex waits not recorded: the holder was in a
				      * condition wait's hook (written by older recorders; such
				      * waits are now recorded, flagged GT_BLOCK_COND_HELD) */
	GT_NOTICE_KINDS
};

enum gt_user_kind { GT_USER_TASK_BEGIN = 1, GT_USER_TASK_END = 2, GT_USER_REGION_BEGIN = 3,
		    GT_USER_REGION_END = 4, GT_USER_LOG = 5 };

enum gt_proc_kind { GT_PROC_FORK = 1, GT_PROC_SPAWN = 2, GT_PROC_EXEC = 3 };

/* When a GT_PROCESS_NAME was read. */
enum gt_name_when { GT_NAME_START = 1, GT_NAME_THREAD = 2, GT_NAME_END = 3 };

#define GT_CMDLINE_MAX 2048u       /* command line bytes a GT_PROCESS_NAME carries at most */

struct gt_p_thread_new {
	uint32_t child;            /* the new thread's serial */
	uint32_t stack;            /* creator's stack id (0 = none) */
	uint64_t start_routine;    /* entry address of the start routine */
};

struct gt_p_thread_start {
	uint32_t tid;              /* kernel thread id (display only: ids are reused) */
	uint32_t stack;            /* for EXISTING: where it was first seen, else 0 */
	uint64_t start_routine;    /* 0 when unknown (pre-existing thread) */
};

#define GT_NAME_BY_ITSELF 1        /* THREAD_NAME's aux: the thread named itself, where it runs */
struct gt_p_thread_name {
	char name[16];             /* as pthread_setname_np, NUL-terminated */
};

struct gt_p_block {
	uint64_t obj;              /* object address (or per-kind value, see gt_block_kind) */
	uint32_t stack;            /* stack id where it blocks */
	uint32_t flags;            /* enum gt_block_flags (0 before they existed) */
};

enum gt_block_flags {
	/* a mutex wait (GT_BK_MUTEX) that began while the mutex's holder was inside a
	 * condition wait's hook: glibc releases the mutex inside the real wait, after the
	 * holder's condvar BLOCK_BEGIN (whose gt_p_block_mutex tail names this mutex) was
	 * stamped, so that release, which has no fact of its own, may be this wait's waker;
	 * bits GT_BLOCK_HOLDER_SHIFT.. hold that holder's thread serial */
	GT_BLOCK_COND_HELD = 1u << 0,
	/* a mutex or rwlock wait that found its lock held by the thread whose kernel id is in
	 * bits GT_BLOCK_HOLDER_SHIFT.. (glibc's __owner of a mutex, __cur_writer of a rwlock),
	 * read once its last try failed; never with GT_BLOCK_COND_HELD, whose serial names the
	 * holder already.  Readers that do not know it ignore it (they look at bit 0 first). */
	GT_BLOCK_HOLDER_TID = 1u << 1,
};
#define GT_BLOCK_HOLDER_SHIFT 8

/* The flags naming holder: none past 2^24 threads, whose serial does not fit beside the
 * flag (it would name the thread of its low 24 bits); a reader then goes without it. */
static inline uint32_t gt_block_cond_held(uint32_t holder)
{
	return holder < 1u << (32 - GT_BLOCK_HOLDER_SHIFT)
		       ? GT_BLOCK_COND_HELD | holder << GT_BLOCK_HOLDER_SHIFT : 0;
}

/* The flags naming holder tid: none past 2^24 (Linux's pid_max is at most 2^22). */
static inline uint32_t gt_block_holder_tid(int tid)
{
	return tid > 0 && tid < 1 << (32 - GT_BLOCK_HOLDER_SHIFT)
		       ? GT_BLOCK_HOLDER_TID | (uint32_t)tid << GT_BLOCK_HOLDER_SHIFT : 0;
}

/* LOCK_ACQUIRE and LOCK_RELEASE (--locks=all).  obj is the lock's address, a process-shared
 * one's too (a hold is its thread's; a wait names such a lock by its kernel identity).  A thread's acquisitions and releases of one lock
 * pair up in its own order: a recursive mutex's inner ones nest. */
struct gt_p_lock {
	uint64_t obj;
	uint32_t stack;            /* where it was acquired; 0 for a release */
	uint32_t flags;            /* enum gt_lock_flags */
};

enum gt_lock_flags {
	GT_LOCK_WAITED = 1u << 0,     /* it blocked first: its BLOCK_BEGIN and BLOCK_END precede */
	GT_LOCK_TRY = 1u << 1,        /* a try-lock took it (never blocks: no lock-order edge) */
	GT_LOCK_COND = 1u << 2,       /* a condition wait took its mutex back on return */
	GT_LOCK_OWNERDEAD = 1u << 3,  /* a robust mutex taken with EOWNERDEAD */
};

/* The tail of a condition wait's BLOCK_BEGIN (aux GT_BK_COND) whose look for the mutex's
 * waiters, just before it, found none (else a WAKE on the mutex precedes it): the mutex the
 * real wait releases, for a GT_BLOCK_COND_HELD waiter that arrives after that look.  Readers
 * that do not know it skip it (a record may be longer than its minimum payload). */
struct gt_p_block_mutex {
	uint64_t mutex;            /* the mutex's obj, as its waiters' BLOCK_BEGIN names it */
};

struct gt_p_block_end {
	uint64_t obj;
	uint32_t result;           /* enum gt_block_result */
	int32_t err;               /* errno / error code returned, 0 if none */
};

#define GT_WAKE_ALL 0xffffffffu
/* The count of a mutex release whose lock word said that a thread sleeps on it which no hook
 * saw block (a condition waiter taking its mutex back inside glibc): it may end such a sleep
 * that the kernel's records show (encoder/model_kernel.c), nothing else.  Before it existed,
 * no count was 0. */
#define GT_WAKE_UNSEEN 0u

struct gt_p_wake {
	uint64_t obj;
	uint32_t stack;            /* releaser's stack id */
	uint32_t count;            /* waiters it may release: 1, n, GT_WAKE_ALL, GT_WAKE_UNSEEN */
};

struct gt_p_syscall {
	uint32_t nr;               /* SYS_* number of the call (the libc function's syscall) */
	uint32_t stack;
	int64_t arg;               /* fd for descriptor calls, else the call's key argument */
};

/* The tail of a SYSCALL_BEGIN on a pipe, FIFO or socket (aux GT_FD_PIPE / GT_FD_SOCKET, arg
 * the descriptor): readers of version 1 that do not know it skip it (a record may be longer
 * than its minimum payload). */
struct gt_p_syscall_obj {
	uint64_t obj;              /* the descriptor's kernel key (GT_OBJ_KERNEL set), 0 = unknown */
};

struct gt_p_fd {
	int32_t fd;
	uint32_t pad;
	uint64_t obj;              /* its kernel key (GT_OBJ_KERNEL set) */
};

struct gt_p_syscall_end {
	uint32_t nr;
	int32_t err;               /* errno when it failed, else 0 */
	int64_t result;            /* waitid's: the pid of the child whose death it returned */
};

struct gt_p_stackonly {
	uint32_t stack;
	uint32_t pad;
};

/* Frames are return addresses as captured (the innermost one is the hook's caller's
 * call site); the symbolizer looks each up at pc - 1. */
struct gt_p_stack {
	uint32_t id;               /* 1 .. 2^24 */
	uint32_t nframes;          /* <= GT_MAX_STACK_DEPTH; innermost first */
	/* uint64_t pcs[nframes]; */
};

struct gt_p_module {
	uint64_t base;             /* load bias (l_addr) */
	uint64_t lo, hi;           /* lowest and highest mapped address of its PT_LOAD segments */
	uint16_t build_id_len;     /* bytes of build-id that follow (<= 64) */
	uint16_t path_len;         /* bytes of path that follow (no NUL), <= GT_PATH_MAX */
	uint32_t flags;            /* 1 = main executable, 2 = vdso */
	/* uint8_t build_id[build_id_len]; char path[path_len]; zero padding to 8 bytes */
};

struct gt_p_module_unload {
	uint64_t base;
	uint64_t lo;
};

struct gt_p_clock {
	uint64_t mono_ns;          /* CLOCK_MONOTONIC at tsc (the midpoint of two reads around it) */
	uint64_t real_ns;          /* CLOCK_REALTIME taken right after that */
};

struct gt_p_notice {
	uint64_t value;
};

struct gt_p_user {
	uint64_t id;               /* task id (regions/logs: the task they belong to, 0 = none) */
	uint64_t parent;           /* task begin: parent task id */
	uint32_t stack;
	uint16_t name_len;         /* bytes of name/category/key that follow */
	uint16_t msg_len;          /* bytes of log message that follow the name */
	/* char name[name_len]; char msg[msg_len]; zero padding to 8 bytes */
};

struct gt_p_process {
	uint32_t child_pid;        /* the child (fork/spawn) or 0 (exec: same pid) */
	int32_t err;               /* errno of a failed exec/spawn, else 0 */
};

/* ---- Kernel identities: objects shared between processes --------------------------------
 * An obj (BLOCK_BEGIN/BLOCK_END/WAKE obj, gt_p_syscall_obj) is private to its capture (an
 * address, a thread serial, a duration) unless GT_OBJ_KERNEL is set: then it names the object
 * by what the kernel identifies it by, the same in every process of a run, and a reader that
 * merges captures keys it as it is (other objs by capture and obj).  The low 61 bits are
 * gt_kobj_key()'s hash of (kind, dev, ino, off): a pipe or socket by its inode, a FIFO by its
 * file system and inode, process-shared memory by its mapping's identity (the file or shmem
 * object and the offset in it, as /proc/self/maps gives them), never by a virtual address
 * (which differs between processes).  Bit 63 stays clear: readers may use it internally.
 * Bit 61 (GT_OBJ_SOCKET) marks a socket, whose data may come from outside the run.
 * A socketpair's two ends are one object (keyed by the lower of their two inodes). */
#define GT_OBJ_KERNEL (1ull << 62)
#define GT_OBJ_SOCKET (1ull << 61)
#define GT_OBJ_KERNEL_MASK ((1ull << 61) - 1)

enum gt_kobj_kind {
	GT_KOBJ_FILE = 1,          /* pipe, FIFO, socket: dev = st_dev, ino = st_ino, off = 0 */
	GT_KOBJ_MEMORY = 2,        /* a word of shared memory: dev, ino of the mapped object,
				    * off = offset of the word in it */
	GT_KOBJ_CHILDREN = 3,      /* the children of process ino (= its pid): what wait4/waitid
				    * wait on (encoder-side only: no fact carries it) */
};

/* The one hash of kernel identities (writer and readers must agree): splitmix64 rounds. */
static inline uint64_t gt_kobj_mix_(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
	h ^= h >> 30;
	h *= 0xbf58476d1ce4e5b9ull;
	h ^= h >> 27;
	h *= 0x94d049bb133111ebull;
	return h ^ (h >> 31);
}

static inline uint64_t gt_kobj_key(unsigned kind, uint64_t dev, uint64_t ino, uint64_t off)
{
	uint64_t h = gt_kobj_mix_(gt_kobj_mix_(gt_kobj_mix_(kind, dev), ino), off);
	return GT_OBJ_KERNEL | (h & GT_OBJ_KERNEL_MASK);
}

struct gt_p_process_name {
	char comm[16];             /* /proc/self/comm (the main thread's name), NUL-padded */
	uint16_t cmdline_len;      /* bytes of command line that follow, <= GT_CMDLINE_MAX */
	uint16_t pad0;
	uint32_t pad1;
	/* char cmdline[cmdline_len]: /proc/self/cmdline as read (arguments NUL-separated, cut
	 * at GT_CMDLINE_MAX); zero padding to 8 bytes */
};

/* ---- Compact records (versions 2 and 3) -------------------------------------------------
 * The facts of a thread at work take two words (a SYSCALL_BEGIN with a descriptor's kernel key
 * and a condition wait naming its mutex three), stack reference included, and from version 3
 * the commonest ends one word; a reader expands each into the full record it stands for
 * (gt_compact_expand), so nothing past the reader knows them.  Word 0, stored last:
 *   bits 0-3    aux (as the full record's)
 *   bits 4-6    enum gt_compact
 *   bit 7       GT_COMPACT_BIT (full records' types are below it)
 *   bits 8-27   thread serial (< 2^20: from the 2^20th thread on, a thread's records are
 *               all full, its serial never taken for another's; tests/encoder/test_compact.c)
 *   bits 28-31  hi: per type
 *   bits 32-63  delta: tsc - first_tsc of the chunk it is in, modulo 2^32 (a CPU chunk's; keep
 *               chunks and a last page chunk hold full records only).  Version 2: tsc is
 *               first_tsc + delta.  Version 3: tsc is the one value congruent to first_tsc +
 *               delta modulo 2^32 in [near - 2^30, near + 3 * 2^30), where near is the latest
 *               tsc of the chunk's records before it of the same thread, or first_tsc when
 *               that is later or there is none (gt_compact_tsc): a writer keeps a chunk's
 *               records compact past 2^32 ticks by writing one of a thread's records there
 *               in full, then the next ones within 2^31 ticks of its last.
 * Word 1 per type (obj < 2^48, stack < 2^20, nr < 2^12; anything else, a timestamp the delta
 * cannot tell, or block flags or tails take a full record):
 *   BLOCK_BEGIN(_MUTEX), WAKE_ONE, WAKE_ALL
 *                                     obj (bits 0-47), stack (48-63, bits 16-19 in hi)
 *   BLOCK_END                         obj (0-47), err (48-63, 0..65535); hi = result
 *   SYSCALL_BEGIN                     arg (0-31, signed), nr (32-43), stack (44-63); hi =
 *                                     GT_C_HAS_OBJ, GT_C_FD_OBJ (version 3) or 0
 *   SYSCALL_END                       result (0-31, signed), nr (32-43), err (44-63, >= 0)
 *   YIELD                             stack (0-31), when hi is 0
 * Word 2: BLOCK_BEGIN_MUTEX's gt_p_block_mutex tail, or a SYSCALL_BEGIN's gt_p_syscall_obj
 * tail when hi is GT_C_HAS_OBJ (gt_compact_words tells from word 0).  From version 3 a
 * BLOCK_BEGIN_MUTEX whose mutex lies near its condvar (the two in one struct, or neighbouring
 * globals) takes two words: its aux is not GT_BK_COND (the kind it stands for); the mutex is
 * at the condvar plus 8 * (int8_t)(hi << 4 | aux) bytes, and the stack is below 2^16
 * (gt_compact_near_mutex).  And a SYSCALL_BEGIN on a pipe or socket whose hi is GT_C_FD_OBJ
 * takes two words: its gt_p_syscall_obj tail is the key that the latest FD record (in
 * timestamp order) of the capture gave its descriptor, arg (a ring capture, whose summary
 * carries a thread's last SYSCALL_BEGIN without them, has none).
 *
 * One-word records (version 3): ctype GT_C_YIELD with hi > 0, hi an enum gt_compact_one
 * (those named GT_C2_ take two words: a mutex release's wake of a sleeper no hook saw, and from
 * version 4 the lock records of --locks=all).
 * What they leave out is the usual case: no stack, no error, and for the ends the object or
 * call of the thread's open wait -- the one its last BLOCK_BEGIN (SYSCALL_BEGIN) before it in
 * timestamp order began, which its end closes.  A reader keeps that per thread in the merged
 * order (a thread's begin precedes its end in time; a ring capture's summary holds the begin
 * of a wait open across the window's start) and fills it in; an end with no open wait of its
 * kind keeps obj (nr) 0, a descriptor without an FD record key 0 (unknown), and a reader
 * counts both.  gt_compact_open tells which records need it.  A one-word WAKE takes the obj
 * of its thread's last BLOCK_BEGIN the same way (a lock released after waiting for it). */
#define GT_COMPACT_BIT 0x80u
enum gt_compact {
	GT_C_BLOCK_BEGIN = 0,
	GT_C_BLOCK_END = 1,
	GT_C_WAKE_ONE = 2,         /* WAKE with count 1 */
	GT_C_WAKE_ALL = 3,         /* WAKE with count GT_WAKE_ALL */
	GT_C_SYSCALL_BEGIN = 4,
	GT_C_SYSCALL_END = 5,
	GT_C_YIELD = 6,            /* hi 0: a YIELD of two words; else one word, hi below */
	GT_C_BLOCK_BEGIN_MUTEX = 7,  /* BLOCK_BEGIN with a gt_p_block_mutex tail */
};
/* One-word records (hi of a GT_C_YIELD word 0, version 3). */
enum gt_compact_one {
	GT_C1_YIELD = 1,           /* YIELD with stack 0 */
	GT_C1_THREAD_END = 2,      /* THREAD_END; aux = enum gt_end_how */
	GT_C1_BLOCK_END = 3,       /* BLOCK_END of the open wait (aux its kind): result GT_BR_OK,
				    * err 0 */
	GT_C1_SYSCALL_END = 4,     /* SYSCALL_END of the open call: err 0, result = aux (0..15) */
	GT_C1_WAKE = 5,            /* WAKE (aux its kind) with count 1 and stack 0 on the obj of
				    * the thread's last BLOCK_BEGIN, ended or not (not in ring
				    * captures, whose window may not hold it) */
	GT_C2_WAKE_UNSEEN = 6,     /* two words: WAKE (aux its kind) with count GT_WAKE_UNSEEN,
				    * word 1 obj (bits 0-47) and stack (48-63, below 2^16) */
	GT_C2_LOCK_ACQUIRE = 7,    /* version 4, two words: LOCK_ACQUIRE, aux its kind (bits 0-1)
				    * and flags GT_LOCK_WAITED, GT_LOCK_TRY (bits 2-3), word 1 obj
				    * (0-47) and stack (48-63, below 2^16) */
	GT_C2_LOCK_RELEASE = 8,    /* version 4, two words: LOCK_RELEASE, aux its kind, word 1
				    * obj (0-47) */
};
#define GT_C_HAS_OBJ 1u            /* a SYSCALL_BEGIN's hi: the gt_p_syscall_obj tail follows */
#define GT_C_FD_OBJ 2u             /* ... the tail is the descriptor's, from an FD record */
#define GT_C_OBJ_MAX (1ull << 48)
#define GT_C_STACK_MAX (1u << 20)
#define GT_C_THREAD_MAX (1u << 20)
#define GT_C_NR_MAX (1u << 12)
#define GT_C1_RESULT_MAX 16        /* a one-word SYSCALL_END's results: 0 .. 15 */
/* Version 3: hi << 4 | aux of a two-word BLOCK_BEGIN_MUTEX whose mutex is dist bytes from its
 * condvar and stack below 2^16, or -1 when it takes three words. */
static inline int gt_compact_near_mutex(int64_t dist, uint32_t stack)
{
	if (dist % 8 || dist < -128 * 8 || dist > 127 * 8 || stack >> 16 || ((dist / 8) & 15) == GT_BK_COND)
		return -1;
	return (int)((dist / 8) & 255);
}

/* Word 0 but the delta, which the writer adds once it knows the chunk. */
static inline uint64_t gt_compact_word(unsigned ctype, unsigned aux, uint32_t thread, unsigned hi)
{
	return (uint64_t)(GT_COMPACT_BIT | ctype << 4 | (aux & 15u)) | (uint64_t)thread << 8 |
	       (uint64_t)(hi & 15u) << 28;
}

/* Words of the compact record whose word 0 is w0. */
static inline unsigned gt_compact_words(uint64_t w0)
{
	unsigned ctype = (unsigned)(w0 >> 4 & 7u), hi = (unsigned)(w0 >> 28 & 15u);
	if (ctype == GT_C_YIELD && hi)
		return hi >= GT_C2_WAKE_UNSEEN ? 2u : 1u;
	return (ctype == GT_C_BLOCK_BEGIN_MUTEX && (w0 & 15u) == GT_BK_COND) ||
	       (ctype == GT_C_SYSCALL_BEGIN && hi == GT_C_HAS_OBJ) ? 3u : 2u;
}

/* GT_BLOCK_END or GT_SYSCALL_END when compact record w0's expansion leaves the open wait's obj
 * or call nr to the reader (0 in it), GT_WAKE the obj of the thread's last BLOCK_BEGIN,
 * GT_SYSCALL_BEGIN its descriptor's key (GT_C_FD_OBJ), else 0. */
static inline unsigned gt_compact_open(uint64_t w0)
{
	unsigned hi = (unsigned)(w0 >> 28 & 15u);
	if ((w0 >> 4 & 7u) == GT_C_SYSCALL_BEGIN && hi == GT_C_FD_OBJ)
		return GT_SYSCALL_BEGIN;
	if ((w0 >> 4 & 7u) != GT_C_YIELD)
		return 0;
	return hi == GT_C1_BLOCK_END ? GT_BLOCK_END : hi == GT_C1_SYSCALL_END ? GT_SYSCALL_END :
	       hi == GT_C1_WAKE ? GT_WAKE : 0;
}

/* Version 3: the timestamp of the compact record whose word 0 is w0 in a chunk whose first_tsc
 * is base, near as above (base, or the latest tsc of the thread's records before it there). */
static inline uint64_t gt_compact_tsc(uint64_t w0, uint64_t base, uint64_t near)
{
	uint64_t lo = (near > base ? near : base) - (1ull << 30);
	return lo + (uint32_t)(base + (w0 >> 32) - lo);
}

/* The full record (header and payload, up to 5 words) that compact record w (its
 * gt_compact_words words), found in a chunk whose first_tsc is base, stands for, into out: its
 * length in bytes.  Its tsc is version 2's (version 3: gt_compact_tsc). */
static inline unsigned gt_compact_expand(const uint64_t *w, uint64_t base, uint64_t *out)
{
	uint64_t w0 = w[0], w1 = gt_compact_words(w0) > 1 ? w[1] : 0;
	unsigned ctype = (unsigned)(w0 >> 4 & 7u), aux = (unsigned)(w0 & 15u);
	uint32_t hi = (uint32_t)(w0 >> 28 & 15u), len = 16;
	uint32_t thread = (uint32_t)(w0 >> 8 & (GT_C_THREAD_MAX - 1));
	uint64_t obj = w1 & (GT_C_OBJ_MAX - 1);
	uint32_t stack48 = (uint32_t)(w1 >> 48) | hi << 16;
	uint32_t nr = (uint32_t)(w1 >> 32 & (GT_C_NR_MAX - 1));
	int64_t low = (int32_t)(uint32_t)w1;
	uint8_t type;
	out[1] = base + (w0 >> 32);
	out[2] = out[3] = 0;
	switch (ctype) {
	case GT_C_BLOCK_BEGIN:
	case GT_C_BLOCK_BEGIN_MUTEX:
		type = GT_BLOCK_BEGIN;
		out[2] = obj, out[3] = stack48;                    /* gt_p_block, flags 0 */
		if (ctype == GT_C_BLOCK_BEGIN_MUTEX && aux == GT_BK_COND) {
			out[4] = w[2], len += 8;                   /* gt_p_block_mutex */
		} else if (ctype == GT_C_BLOCK_BEGIN_MUTEX) {      /* ... near the condvar */
			out[3] = w1 >> 48, aux = GT_BK_COND, len += 8;
			out[4] = obj + 8 * (int64_t)(int8_t)(uint8_t)(hi << 4 | (w0 & 15u));
		}
		break;
	case GT_C_BLOCK_END:
		type = GT_BLOCK_END;                               /* gt_p_block_end */
		out[2] = obj, out[3] = hi | (uint64_t)(w1 >> 48) << 32;
		break;
	case GT_C_WAKE_ONE:
	case GT_C_WAKE_ALL:
		type = GT_WAKE;                                    /* gt_p_wake */
		out[2] = obj;
		out[3] = stack48 | (uint64_t)(ctype == GT_C_WAKE_ONE ? 1u : GT_WAKE_ALL) << 32;
		break;
	case GT_C_SYSCALL_BEGIN:
		type = GT_SYSCALL_BEGIN;                           /* gt_p_syscall */
		out[2] = nr | (w1 >> 44) << 32, out[3] = (uint64_t)low;
		if (hi == GT_C_HAS_OBJ)
			out[4] = w[2], len += 8;                   /* gt_p_syscall_obj */
		else if (hi == GT_C_FD_OBJ)
			out[4] = 0, len += 8;                      /* ... the descriptor's */
		break;
	case GT_C_SYSCALL_END:
		type = GT_SYSCALL_END;                             /* gt_p_syscall_end */
		out[2] = nr | (w1 >> 44) << 32, out[3] = (uint64_t)low;
		break;
	default:
		switch (hi) {
		case 0:
		case GT_C1_YIELD:
			type = GT_YIELD;                           /* gt_p_stackonly */
			out[2] = (uint32_t)w1;
			len -= 8;
			break;
		case GT_C1_THREAD_END:
			type = GT_THREAD_END;                      /* no payload */
			len -= 16;
			break;
		case GT_C1_BLOCK_END:
			type = GT_BLOCK_END;                       /* obj: the open wait's */
			break;
		case GT_C1_SYSCALL_END:
			type = GT_SYSCALL_END;                     /* nr: the open call's */
			out[3] = aux, aux = 0;
			break;
		case GT_C1_WAKE:
			type = GT_WAKE;                            /* obj: the last block's */
			out[3] = 1ull << 32;                       /* stack 0, count 1 */
			break;
		case GT_C2_WAKE_UNSEEN:
			type = GT_WAKE;                            /* gt_p_wake */
			out[2] = obj;
			out[3] = w1 >> 48 | (uint64_t)GT_WAKE_UNSEEN << 32;
			break;
		case GT_C2_LOCK_ACQUIRE:
			type = GT_LOCK_ACQUIRE;                    /* gt_p_lock */
			out[2] = obj;
			out[3] = w1 >> 48 | (uint64_t)(aux >> 2) << 32;
			aux &= 3u;
			break;
		case GT_C2_LOCK_RELEASE:
			type = GT_LOCK_RELEASE;                    /* gt_p_lock, stack and flags 0 */
			out[2] = obj;
			break;
		default:
			type = GT_NONE;                            /* not a record: garbage */
			break;
		}
		break;
	}
	len += 16;
	out[0] = (uint64_t)type | (uint64_t)aux << 8 | (uint64_t)(len / 8) << 16 |
		 (uint64_t)thread << 32;
	return len;
}

#define GT_REC_WORDS(payload_bytes) ((uint16_t)((sizeof(struct gt_rec) + (payload_bytes) + 7) / 8))

#ifdef __cplusplus
#define GT_STATIC_ASSERT static_assert
#else
#define GT_STATIC_ASSERT _Static_assert
#endif
GT_STATIC_ASSERT(sizeof(struct gt_file_header) <= GT_FILE_HEADER_SIZE, "file header size");
GT_STATIC_ASSERT(sizeof(struct gt_chunk_header) == GT_CHUNK_HEADER_SIZE, "chunk header size");
GT_STATIC_ASSERT(sizeof(struct gt_rec) == 16, "record header size");
GT_STATIC_ASSERT(sizeof(struct gt_p_thread_new) == 16, "thread_new");
GT_STATIC_ASSERT(sizeof(struct gt_p_thread_start) == 16, "thread_start");
GT_STATIC_ASSERT(sizeof(struct gt_p_thread_name) == 16, "thread_name");
GT_STATIC_ASSERT(sizeof(struct gt_p_block) == 16, "block");
GT_STATIC_ASSERT(sizeof(struct gt_p_block_mutex) == 8, "block_mutex");
GT_STATIC_ASSERT(sizeof(struct gt_p_lock) == 16, "lock");
GT_STATIC_ASSERT(sizeof(struct gt_p_block_end) == 16, "block_end");
GT_STATIC_ASSERT(sizeof(struct gt_p_wake) == 16, "wake");
GT_STATIC_ASSERT(sizeof(struct gt_p_syscall) == 16, "syscall");
GT_STATIC_ASSERT(sizeof(struct gt_p_syscall_obj) == 8, "syscall_obj");
GT_STATIC_ASSERT(sizeof(struct gt_p_syscall_end) == 16, "syscall_end");
GT_STATIC_ASSERT(sizeof(struct gt_p_fd) == 16, "fd");
GT_STATIC_ASSERT(sizeof(struct gt_p_stackonly) == 8, "stackonly");
GT_STATIC_ASSERT(sizeof(struct gt_p_stack) == 8, "stack");
GT_STATIC_ASSERT(sizeof(struct gt_p_module) == 32, "module");
GT_STATIC_ASSERT(sizeof(struct gt_p_module_unload) == 16, "module_unload");
GT_STATIC_ASSERT(sizeof(struct gt_p_clock) == 16, "clock");
GT_STATIC_ASSERT(sizeof(struct gt_p_notice) == 8, "notice");
GT_STATIC_ASSERT(sizeof(struct gt_p_user) == 24, "user");
GT_STATIC_ASSERT(sizeof(struct gt_p_process) == 8, "process");
GT_STATIC_ASSERT(sizeof(struct gt_p_process_name) == 24, "process_name");

/* "THREAD_NEW" for GT_THREAD_NEW; "?" for GT_NONE and unknown types. */
static inline const char *gt_fact_name(unsigned type)
{
	switch (type) {
#define GT_FACT_NAME_(id, name, payload, aux) case id: return #name;
	GT_FACTS(GT_FACT_NAME_)
#undef GT_FACT_NAME_
	default: return "?";
	}
}

/* Minimum payload bytes of a record type (its fixed struct); -1 for GT_NONE and unknown
 * types, which a reader treats as garbage. */
static inline int gt_fact_min_payload(unsigned type)
{
	switch (type) {
#define GT_FACT_MIN_(id, name, payload, aux) case id: return (int)(payload);
	GT_FACTS(GT_FACT_MIN_)
#undef GT_FACT_MIN_
	default: return -1;
	}
}

#endif
