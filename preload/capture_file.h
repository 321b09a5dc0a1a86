/* The capture file (capture_file.c): created, mapped, grown a chunk at a time, trimmed at the
 * end.  It reports failures to its caller, which decides what recording does about them. */
#ifndef GT_CAPTURE_FILE_H
#define GT_CAPTURE_FILE_H

#include "base.h"

#include "gotrace/capture.h"

#include <sys/stat.h>

#define GT_MAX_WINDOWS 2048u  /* mapped windows of chunks (capture_file.c: map_window) */
#define GT_SPARES 32u         /* chunks kept from lost races (chunk_refill.c: give_back) */

/* The capture file's state, one struct at a fixed address (gt_cap): a field is read as a
 * global is, by one PC-relative load, with no pointer to follow.  Its first cache line holds
 * what reservations read (fastpath.h: chunk_limit) and the slow path reads at every chunk;
 * the counters any thread writes at a turnover or a drop have a line of their own, so that
 * their stores do not evict the first; the rest is the growth's, under its lock. */
struct gt_capture {
	uint32_t chunk_limit;             /* bytes a chunk may hold now (GT_FIRST_CHUNK at first) */
	uint32_t chunk_size;              /* the chunks' stride in the file */
	struct gt_file_header *header;    /* NULL until mapped */
	uint64_t window_chunks;           /* chunks per mapped window */
	uint64_t max_chunks;              /* the most chunks the file may hold */
	int truncated;                    /* the file was trimmed: no chunk may be opened */

	/* facts dropped (no chunk to be had), and how many of them a notice has reported */
	_Alignas(64) _Atomic uint64_t dropped;
	_Atomic uint64_t dropped_reported;
	_Atomic uint64_t last_clock_tsc;  /* of the last clock pair written */
	_Atomic uint64_t install_seq;     /* seq of the next chunk installed */
	/* chunks taken but never installed (lost races), under the growth lock: the next ones
	 * taken (several threads may lose one turnover's race) */
	char *spares[GT_SPARES];
	unsigned n_spares;
	_Atomic int growth_lock;          /* 0, or the thread id of its holder (gt_lock) */

	_Alignas(64) int fd;              /* >= 0 from capture_fd_open to capture_fd_close */
	int sparse;                       /* its file system extends it without writing zeros */
	int zero_filled;                  /* new chunks are written with zeros first (zero_fill) */
	uint64_t file_dev, file_ino;      /* its identity, taken at creation */
	uint64_t map_bytes;               /* the most the file may grow to */
	uint64_t file_bytes;              /* allocated length of the file */
	uint64_t reserved;                /* its length: sparse beyond file_bytes */
	uint64_t n_windows;
	struct stat stat;                 /* used under the growth lock: off the program's stack */
	char *windows[GT_MAX_WINDOWS];
	char path[GT_PATH_MAX];           /* "" until created */
};
extern struct gt_capture gt_cap GT_HIDDEN;
/* the program's mlockall(MCL_FUTURE) was emulated (memlock.c): every new mapping would count
 * against its RLIMIT_MEMLOCK, so the capture maps no new window */
extern _Atomic int gt_memlock_future GT_HIDDEN;

/* why the file could not be created or grown: a message prefix and an errno */
struct gt_file_error {
	const char *what;
	int err;
};

/* Once per program image, before any capture: the stride of its chunks; no descriptor held. */
void gt_capture_setup(uint32_t chunk_size) GT_HIDDEN;
/* 0: created, mapped, one chunk long, header filled.  -1: e->what NULL when already
 * reported (the file could not be created), else the failure to report. */
int gt_capture_create(struct gt_file_error *e) GT_HIDDEN;
void gt_slots_full(void) GT_HIDDEN;          /* every reservation takes the slow path */
void gt_capture_trim(void) GT_HIDDEN;        /* no chunk opens again; cut to the chunks in use */
/* Before an exec: cut to the chunks in use as at the end, able to grow again if it fails */
void gt_capture_trim_for_exec(void) GT_HIDDEN;
void gt_capture_forget(void) GT_HIDDEN;      /* fork child: the parent's file is not its own */
/* Before a change of the effective uid to uid, while still privileged: the capture's length
 * reserved for growth without a descriptor, and <capture dir>/uid-<uid> (0700, the user's)
 * where the programs it runs as that user create their captures, when the capture directory
 * lets others in but not create (gotrace run's).  Returns uid. */
int64_t gt_capture_user_dir(uint32_t uid) GT_HIDDEN;

/* ---- growth, for chunk_refill.c ---------------------------------------------------------- */

/* A process starts with one chunk of GT_FIRST_CHUNK bytes, all that most short processes
 * write (a shell loop's /bin/true, 1 to 7 KiB): allocating and mapping a whole 1 MiB chunk
 * was a seventh of such a process's time, and its release as much again in gotrace.  The
 * first chunk of another CPU, or the first one filled, gives chunk 0 the rest of its stride
 * (allocated before the limit rises, so a store never reaches a page without blocks), and
 * every chunk then holds gt_cap.chunk_size bytes. */
#define GT_FIRST_CHUNK (64u << 10)

/* The growth lock: held while the file grows or is trimmed and while chunks are taken or
 * retired; a futex of the tracer's own (gt_lock), never a lock the program can hold. */
void gt_growth_lock(void) GT_HIDDEN;
void gt_growth_unlock(void) GT_HIDDEN;
/* Chunks 0..n-1 backed by the file and mapped (growth lock held), the last one up to `last`
 * bytes: 0, else -1 with e set. */
int gt_capture_back_chunks(uint64_t n, uint64_t last, struct gt_file_error *e) GT_HIDDEN;
/* Chunk k, the next of the file, backed and mapped for its first page only (growth lock
 * held): 1, else 0. */
int gt_capture_back_page(uint64_t k) GT_HIDDEN;
/* where chunk k is mapped (backed already) */
GT_INLINE char *gt_chunk_addr(uint64_t k)
{
	return gt_cap.windows[k / gt_cap.window_chunks] + (k % gt_cap.window_chunks) * gt_cap.chunk_size;
}

#endif
