/* symbolizer: captured PCs -> frames (function, file, line), through elfutils.
 *
 * The one interface the encoder uses.  Modules come from the capture's module map, never
 * from the live process, so a capture converts long after its process is gone (only
 * gt_sym_live_threads, for `gotrace stacks`, reads a live process's own).  Knows
 * nothing about traces.  One thread at a time per symbolizer.
 *
 * Conventions for callers:
 * - every PC of a stack is a return address: looked up and written as PC - 1; inlined
 *   frames of it carry PC - 1 with the inline level in bits 48..55 (the concrete function
 *   has level 0), so one written PC always means one frame;
 * - a problem with a module (missing, changed build-id, truncated, corrupt, a directory)
 *   gives one warning per module path, and its frames read "module+0xoff" (the offset is
 *   PC - 1 - bias, what addr2line takes); PCs outside every module read "0x<pc - 1>";
 * - code without symbols in a usable module reads "module+0x<start>": the start of its
 *   function by the unwind tables (.eh_frame), so that one function is one name (the
 *   frame's pc stays exact); the exact offset when no unwind entry covers it;
 * - debug info is searched by build-id and .gnu_debuglink in the option's directories,
 *   then beside the file and in /usr/lib/debug; never on the network: gt_sym_new unsets
 *   DEBUGINFOD_URLS for the process.
 */
#ifndef GOTRACE_SYMBOLIZER_H
#define GOTRACE_SYMBOLIZER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gt_symbolizer;

struct gt_sym_options {
	/* Extra directories searched for separate debug info, before the system ones
	 * (/usr/lib/debug, .build-id/xx/yyyy.debug, .gnu_debuglink).  NULL-terminated,
	 * may be NULL. */
	const char *const *debug_dirs;
	/* Called once per module problem (missing file, build-id mismatch, corrupt DWARF),
	 * with one line of text.  NULL: warnings go to stderr prefixed "gotrace: ". */
	void (*warn)(void *ctx, const char *line);
	void *warn_ctx;
};

/* One frame.  Strings are owned by the symbolizer and live until gt_sym_free. */
struct gt_frame {
	uint64_t pc;      /* PC to write into the trace: return address - 1 for callers,
			   * the exact PC for the innermost frame when it is not a return
			   * address; inlined frames get distinct synthetic PCs (inline depth
			   * in bits 48..55) so that PC -> frame is a function */
	const char *func; /* demangled, at most 1024 bytes (the last ones), never NULL */
	const char *file; /* source path, or the module path when unknown, never NULL */
	uint32_t line;    /* 0 when unknown */
};

struct gt_symbolizer *gt_sym_new(const struct gt_sym_options *opt);
void gt_sym_free(struct gt_symbolizer *sym);

/* A module from the capture: load bias, mapped range, build-id as recorded.  flags:
 * GT_SYM_MAIN_EXE, GT_SYM_VDSO.  Returns 0, or -1 when the arguments are unusable
 * (the module is then simply unknown: its PCs read "module+0xoff" or "0x...").  A module
 * added over the range of an earlier one replaces it (dlclose then dlopen). */
#define GT_SYM_MAIN_EXE 1u
#define GT_SYM_VDSO 2u
int gt_sym_add_module(struct gt_symbolizer *sym, const char *path, const uint8_t *build_id,
		      size_t build_id_len, uint64_t bias, uint64_t lo, uint64_t hi,
		      uint32_t flags);

/* Several processes in one symbolizer: selects the address space (one per process, 0 at the
 * start) that the following gt_sym_add_module, gt_sym_stack and gt_sym_function calls are
 * about.  Object files are shared between spaces: one with a build-id is opened and indexed
 * once, wherever each process mapped it.  Returns -1 when memory runs out (the space is
 * then unchanged). */
int gt_sym_use_space(struct gt_symbolizer *sym, uint32_t space);

/* Symbolize one captured stack: pcs[0] is the innermost return address (as captured).
 * Writes at most max frames into out, innermost first: inline frames expanded, the
 * tracer's own frames (libgotrace.so) left out wherever they are, thread start-up frames
 * (start_thread, clone, clone3, __libc_start_call_main, __libc_start_main, _start) cut at
 * the outer end; when more than max remain, the innermost max-1 and the outermost one are
 * kept.  Returns the number of frames written (0 when nothing is left). */
size_t gt_sym_stack(struct gt_symbolizer *sym, const uint64_t *pcs, size_t n,
		    struct gt_frame *out, size_t max);

/* Of a CPU sample's stack (pcs as for gt_sym_stack): how many of its innermost addresses
 * are the tracer's own work, 0 when none are.  They are code of libgotrace.so, or libunwind
 * (with the libc and ld.so code it calls) called from it, and the tracer's frames around
 * that, so that pcs + the count starts at the program's call into the tracer. */
size_t gt_sym_tracer_work(struct gt_symbolizer *sym, const uint64_t *pcs, size_t n);

/* Symbolize one function entry address (a thread's start routine): one frame, the PC
 * itself (not - 1), no inline expansion. */
struct gt_frame gt_sym_function(struct gt_symbolizer *sym, uint64_t entry);

/* A name for the object (a lock) at data address addr, the same in every run of the same
 * binary (docs/usage.md, "Lock names"):
 * - inside a module's image (a global, a static, a function's static, a C++ class's static
 *   member): the variable by DWARF and the member or element inside it ("accounts_lock",
 *   "work_queue.lock", "Registry::mu_", "fn::lock", "slots[2]"); without DWARF the symbol
 *   table's object and an offset ("table+0x40"); else "module+0xoff";
 * - elsewhere (the heap, a thread's stack): "first used at func (file:line)" by the
 *   first frame of first_pcs (the stack of its first fact, as captured for gt_sym_stack; may
 *   be NULL) outside libc, libstdc++, libgcc_s, ld.so and the tracer, and in a module;
 * - else "0x<addr>".
 * Written into buf, which is returned; NULL when only the address names it. */
const char *gt_sym_object_name(struct gt_symbolizer *sym, uint64_t addr,
			       const uint64_t *first_pcs, size_t n, char *buf, size_t size);

/* The first address of pcs (return addresses, innermost first) in a module and outside
 * libc, libstdc++, libgcc_s, ld.so and the tracer: the program's own call; 0 when none is.
 * gt_sym_object_name names an object first used there. */
uint64_t gt_sym_program_pc(struct gt_symbolizer *sym, const uint64_t *pcs, size_t n);

/* Of frames (gt_sym_stack's, innermost first), the one where the program's own source called
 * into a library: the first whose file is not a system header (under /usr/include: the
 * inlined or instantiated code of std::mutex::lock, __gthread_mutex_lock); 0 when all are.
 * Where a lock was taken, in one frame. */
size_t gt_sym_own_frame(const struct gt_frame *frames, size_t n);

/* A sampled thread's registers, in the DWARF numbering of its arch (a capture's GT_ARCH_*
 * values): x86-64: AX DX CX BX SI DI BP SP R8..R15, then the return address column (the
 * IP), 17 in all; aarch64: X0..X30, SP, 32 in all.  pc and sp are said apart too. */
#define GT_SYM_ARCH_X86_64 1u
#define GT_SYM_ARCH_AARCH64 2u
#define GT_SYM_UNWIND_REGS 32
struct gt_sym_regs {
	uint32_t arch;                     /* GT_SYM_ARCH_* */
	uint32_t n;                        /* registers in dwarf[]: 17 or 32 */
	uint64_t dwarf[GT_SYM_UNWIND_REGS];
	uint64_t pc, sp;
};

/* Unwinds a copied user stack (a perf sample of thread tid in the current space) with DWARF
 * CFI, from the space's modules, whatever the converter's own arch: regs as above, stack
 * the stack_size bytes copied from SP on.  Writes at most max addresses into pcs, innermost
 * first, in gt_sym_stack's convention (return addresses; the interrupted instruction as the
 * address after it), ready for it.  *complete: the unwinding reached the outermost frame
 * (or max); false when it stopped early (the copy was too short, a module without CFI, the
 * space's modules of another arch than regs).  Returns the number written. */
size_t gt_sym_unwind(struct gt_symbolizer *sym, uint32_t tid, const struct gt_sym_regs *regs,
		     const uint8_t *stack, size_t stack_size, uint64_t *pcs, size_t max,
		     bool *complete);

/* Every thread of live process pid, unwound (eu-stack's way, through /proc and ptrace).
 * gt_sym_live_open reads the process's modules (from /proc/PID/maps, into a Dwfl and into
 * the current space, for gt_sym_stack and gt_sym_object_name), NULL when it cannot; then the
 * caller stops each thread with ptrace, calls gt_sym_live_threads, and resumes them.  For
 * each thread fn gets its tid and its return addresses (gt_sym_stack's convention, in pcs,
 * which holds max), and whether the unwinding reached the outermost frame.  Returns 0, -1
 * when the threads could not be read. */
struct gt_sym_live;
typedef void (*gt_sym_thread_fn)(void *ctx, uint32_t tid, const uint64_t *pcs, size_t n,
				 bool complete);
struct gt_sym_live *gt_sym_live_open(struct gt_symbolizer *sym, int pid);
int gt_sym_live_threads(struct gt_sym_live *live, int pid, uint64_t *pcs, size_t max,
			gt_sym_thread_fn fn, void *ctx);
void gt_sym_live_close(struct gt_sym_live *live);

/* The lock a live thread's futex wait is for (sym_live_locks.c), from glibc's layouts
 * (common/glibc_layout.h) read in process pid: its kind by the innermost glibc function of
 * frames (n of them, gt_sym_stack's) that tells one, the object by where that kind keeps the
 * futex word it sleeps on (word, while it holds expected: the futex call's value), and what
 * the lock's words tell of its holders. */
struct gt_live_lock {
	uint8_t kind;        /* enum gt_block_kind (capture.h): GT_BK_MUTEX, GT_BK_COND,
			      * GT_BK_RWLOCK_RD or _WR (the wait's mode), GT_BK_SEM, GT_BK_JOIN;
			      * GT_BK_FUTEX: another futex (object: the word) */
	uint64_t object;     /* the lock's address; a join's: the joined thread's tid word */
	int holder;          /* a mutex's __owner, a rwlock's __cur_writer, the joined thread's
			      * tid; 0: none or not known */
	int readers;         /* a rwlock: the readers holding it (glibc counts them, it does
			      * not say which; 0 in a write phase); -1: not a rwlock, or not read */
};
void gt_sym_live_lock(int pid, uint64_t word, uint32_t expected, const struct gt_frame *frames,
		      size_t n, struct gt_live_lock *out);
/* The word for kind in gotrace stacks' output: "mutex", "condvar", "rwlock", "semaphore",
 * "join", "futex". */
const char *gt_sym_live_lock_kind(uint8_t kind);

/* Counters for reports and benchmarks. */
struct gt_sym_stats {
	uint64_t pcs_looked_up;
	uint64_t pcs_unresolved;   /* no function name found */
	uint64_t modules_failed;   /* modules that could not be opened or did not match */
};
void gt_sym_stats(const struct gt_symbolizer *sym, struct gt_sym_stats *out);

#ifdef __cplusplus
}
#endif

#endif
