/* The capture file: its state (gt_cap), creation, the mapping, growth a chunk at a time
 * (for chunk_refill.c, which takes and installs the chunks) and the final trim. */
#include "capture_file.h"
#include "capture_budget.h"
#include "clock.h"
#include "config.h"
#include "fastpath.h"
#include "files_apart.h"
#include "ring.h"
#include "stacks.h"

#include <fcntl.h>
#include <linux/falloc.h>
#include <linux/magic.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/uio.h>

/* Zero until gt_capture_setup and gt_capture_create: every reservation meets the full chunk
 * (below) first, whatever chunk_limit says. */
struct gt_capture gt_cap __attribute__((aligned(64)));
union gt_header_page gt_header_page __attribute__((aligned(4096)));
/* Before initialisation and after the end every CPU points here: "used" is far beyond any
 * chunk size, so every reservation fails into the slow path. */
struct gt_chunk_header gt_full_chunk = {.used = 1ull << 62};
/* zero: every slot at the full chunk; pages of its own, for MADV_WIPEONFORK (fastpath.h) */
struct gt_slot gt_slots[GT_MAX_CPUS] __attribute__((aligned(4096)));

/* The program never sees a descriptor of ours: the capture is opened by its absolute path
 * only while it grows (or is trimmed), under the growth lock, and closed again, so the
 * program's descriptor numbers, RLIMIT_NOFILE, /proc/self/fd, close/dup2/closefrom and exec'd
 * children are as untraced.  fstat identity proves each reopened descriptor is the capture.
 * When it cannot be opened again (the process dropped privileges, or holds RLIMIT_NOFILE
 * descriptors), the file's reserved length backs the growth through the mapping alone
 * (back_unopened).  That length is sparse but shows in ls -l, and cp, tar or rsync without
 * sparse handling copy it: it is a headroom of two windows beyond what is allocated, renewed
 * at each growth through a descriptor, and GT_DROP_RESERVE right before a change of
 * credentials (reserve_for_drop). */

/* Chunks are mapped a window at a time as the file grows: the address space reserved beyond
 * what is written stays within a window (a program under RLIMIT_AS keeps its budget), and a
 * chunk never moves while a CPU slot points into it.  32 MiB, or 64 small chunks (tests see
 * windows turn over); at most GT_MAX_WINDOWS (capture_file.h). */
#define GT_WINDOW_BYTES (32u << 20)
#define GT_WINDOW_MAX_CHUNKS 64u

void gt_capture_setup(uint32_t chunk_size)
{
	gt_cap.chunk_size = chunk_size;
	gt_cap.fd = -1;
}

/* 1 with the growth lock held; 0 when this thread holds it already: a signal handler
 * interrupted it (signals are held back while it grows the file: only a handler's change of
 * credentials, reserve_for_drop, finds it so) */
static int take_growth(void) { return gt_lock(&gt_cap.growth_lock); }

void gt_growth_lock(void) { take_growth(); }

void gt_growth_unlock(void) { gt_unlock(&gt_cap.growth_lock); }

/* Only the machine's CPUs can have a chunk, and only a slot that has one is written: storing
 * into all 4096 faulted in the table's 64 untouched pages at every process's end. */
void gt_slots_full(void)
{
	unsigned n = gt_cap.header && gt_cap.header->n_cpus ? gt_cap.header->n_cpus : GT_MAX_CPUS;
	for (unsigned i = 0; i < n; i++)
		if (gt_load(&gt_slots[i].off))
			gt_store(&gt_slots[i].off, 0);
}

/* nr(capture, a, b, c): RLIMIT_FSIZE raises SIGXFSZ, held back so that the program is not
 * killed for our file (and a SIGXFSZ we caused does not stay pending for it). */
static long file_call(long nr, long a, long b, long c)
{
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGXFSZ);
	gt_sys4(SYS_rt_sigprocmask, SIG_BLOCK, &block, &old, sizeof(long));
	long r = gt_sys4(nr, gt_cap.fd, a, b, c);
	if (r < 0) {
		siginfo_t si;
		struct timespec zero = {0, 0};
		gt_sys4(SYS_rt_sigtimedwait, &block, &si, &zero, sizeof(long));
	}
	gt_sys4(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(long));
	return r;
}

/* Within the reserved length the kernel checks no RLIMIT_FSIZE: the program's limit holds
 * for our file as it did when every growth extended it. */
static uint64_t fsize_limit(void)
{
	struct rlimit fsize;
	return gt_sys4(SYS_prlimit64, 0, RLIMIT_FSIZE, NULL, &fsize) == 0 ? fsize.rlim_cur : ~0ull;
}

static int over_fsize(uint64_t len) { return len > fsize_limit(); }

/* The file's length extended to len (within gt_cap.map_bytes and RLIMIT_FSIZE) while gt_cap.fd is
 * open, on a file system where that allocates nothing */
static void reserve_to(uint64_t len)
{
	uint64_t limit = fsize_limit();
	len = len < gt_cap.map_bytes ? len : gt_cap.map_bytes;
	len = len < limit ? len : limit;
	if (gt_cap.sparse && len > gt_cap.reserved && len > gt_cap.file_bytes &&
	    file_call(SYS_ftruncate, (long)len, 0, 0) == 0)
		gt_cap.reserved = len;
}

/* two windows: the next one and the one after can be mapped without a descriptor */
static uint64_t headroom(void) { return 2 * gt_cap.window_chunks * gt_cap.chunk_size; }

/* fd is the capture (its identity taken at creation) */
static int is_capture_file(long fd)
{
	return gt_sys2(SYS_fstat, fd, &gt_cap.stat) == 0 && gt_cap.stat.st_dev == gt_cap.file_dev &&
	       gt_cap.stat.st_ino == gt_cap.file_ino;
}

/* Zeros written over [from, to) of the file, 1 MiB a call: the pages of the new chunks are
 * then in the page cache, and the chunk's MADV_POPULATE_WRITE (or its first stores) maps
 * them, where it would otherwise bring each one in through the file system (on ext4 here
 * 1 ms for a 1 MiB chunk against 0.2 ms: 10 of the 17 ns a 16-byte fact added).  A failure
 * costs only that: the pages fault in as they did.  Not on a tmpfs, whose pages cost the same
 * either way (the copy made a fact 1.7 ns dearer there). */
static void zero_fill(uint64_t from, uint64_t to)
{
	static char zeros[64 << 10] __attribute__((aligned(4096))); /* never written */
	struct iovec iov[16];
	for (unsigned i = 0; i < 16; i++)
		iov[i] = (struct iovec){zeros, sizeof zeros};
	/* each call's descriptor proven ours again: one the program closed and reused
	 * meanwhile (a thread's closefrom, then an open) is not written */
	while (from < to && is_capture_file(gt_cap.fd)) {
		uint64_t n = (to - from + sizeof zeros - 1) / sizeof zeros;
		n = n < 16 ? n : 16;
		uint64_t last = to - from - (n - 1) * sizeof zeros;
		iov[n - 1].iov_len = last < sizeof zeros ? last : sizeof zeros;
		long r = file_call(SYS_pwritev, (long)iov, (long)n, (long)from);
		iov[n - 1].iov_len = sizeof zeros;
		if (r <= 0)
			return;
		from += (uint64_t)r;
	}
}

/* The file allocated up to len bytes (from gt_cap.file_bytes): 0 or -errno.  fallocate reserves
 * the blocks, so a full disk is an error here rather than a SIGBUS on a later store into the
 * mapping. */
static long allocate_to(uint64_t len)
{
	if (over_fsize(len))
		return -EFBIG;
	long r = file_call(SYS_fallocate, 0, (long)gt_cap.file_bytes, (long)(len - gt_cap.file_bytes));
	if (r == -EOPNOTSUPP || r == -ENOSYS) /* blocks at the first store, as sparse files do */
		r = len <= gt_cap.reserved ? 0 : file_call(SYS_ftruncate, (long)len, 0, 0);
	if (r >= 0) {
		if (gt_cap.zero_filled)
			zero_fill(gt_cap.file_bytes, len);
		gt_cap.file_bytes = len;
	}
	return r;
}

/* Grow the file so that `need` bytes are backed, and up to 7 chunks more (as many as it
 * has: a process that needs a second chunk is not given 8; and no more than the
 * GOTRACE_MAX_CAPTURE bound leaves: the disk holds no more than it): when the disk or
 * RLIMIT_FSIZE refuses that, ask for fewer, down to exactly `need`, so recording goes on
 * until not one more chunk fits. */
static int grow_file(uint64_t need)
{
	if (need <= gt_cap.file_bytes)
		return 0;
	uint64_t have = gt_cap.file_bytes > GT_FILE_HEADER_SIZE
				? (gt_cap.file_bytes - GT_FILE_HEADER_SIZE) / gt_cap.chunk_size : 0;
	uint64_t ahead = have < 7 ? have : 7, left = gt_budget_left() / gt_cap.chunk_size;
	for (ahead = ahead < left ? ahead : left;; ahead /= 2) {
		uint64_t target = need + ahead * gt_cap.chunk_size;
		long r = allocate_to(target < gt_cap.map_bytes ? target : gt_cap.map_bytes);
		if (r >= 0) {
			reserve_to(gt_cap.file_bytes + headroom());
			return 0;
		}
		if (!ahead || (r != -ENOSPC && r != -EFBIG && r != -EDQUOT))
			return (int)-r;
	}
}

/* The capture again, by path: 0 with gt_cap.fd set when it is provably our file. */
static int capture_fd_open(struct gt_file_error *e)
{
	long fd = gt_sys4(SYS_openat, AT_FDCWD, gt_cap.path, O_RDWR | O_CLOEXEC | O_NOFOLLOW, 0);
	if (fd < 0) {
		*e = (struct gt_file_error){"the capture file cannot be opened again: ", (int)-fd};
		return -1;
	}
	if (!is_capture_file(fd)) {
		gt_sys1(SYS_close, fd);
		*e = (struct gt_file_error){"the capture file cannot grow: ", ESTALE};
		return -1;
	}
	gt_cap.fd = (int)fd;
	return 0;
}

static void capture_fd_close(void)
{
	gt_sys1(SYS_close, gt_cap.fd);
	gt_cap.fd = -1;
}

/* A fault in the capture reads only its page: the kernel's readahead would read (zero-fill)
 * up to megabytes of the file beyond it, most of it in the reserved length that the final
 * trim drops again (half the CPU time of a short process on ext4). */
static void no_readahead(long addr, uint64_t bytes)
{
	gt_sys3(SYS_madvise, addr, bytes, MADV_RANDOM);
}

static int map_window(uint64_t w)
{
	if (w && gt_load(&gt_memlock_future))
		return ENOMEM;
	uint64_t bytes = gt_cap.window_chunks * gt_cap.chunk_size;
	long r = gt_sys((long)SYS_mmap, 0, (long)bytes, PROT_READ | PROT_WRITE, MAP_SHARED, gt_cap.fd,
			(long)(GT_FILE_HEADER_SIZE + w * bytes));
	if (r < 0 && r > -4096)
		return (int)-r;
	no_readahead(r, bytes);
	gt_cap.windows[w] = (char *)r;
	gt_cap.n_windows = w + 1;
	return 0;
}

/* Window w mapped without a descriptor: a length-0 mremap of a shared mapping maps the same
 * file pages again, here window w-1 and w, of which w is kept. */
static int dup_window(uint64_t w)
{
	if (gt_load(&gt_memlock_future))
		return ENOMEM;
	uint64_t bytes = gt_cap.window_chunks * gt_cap.chunk_size;
	long r = gt_sys((long)SYS_mremap, (long)gt_cap.windows[w - 1], 0, (long)(2 * bytes),
			MREMAP_MAYMOVE, 0, 0);
	if (r < 0 && r > -4096)
		return (int)-r;
	gt_sys2(SYS_munmap, r, bytes);
	gt_cap.windows[w] = (char *)r + bytes;
	gt_cap.n_windows = w + 1;
	return 0;
}

/* The capture is there but this process may not open it: it changed its credentials, or
 * holds every descriptor RLIMIT_NOFILE allows (another file at its path, or none, stops the
 * recording as before). */
static int unopenable(int err)
{
	return err == EACCES || err == EPERM || err == EMFILE || err == ENFILE;
}

/* The file backed up to len bytes and mapped up to window w when the capture cannot be opened
 * again (e says why): within the reserved length, less `keep` bytes (a page a chunk leaves
 * to the stop notice, last_page_chunk), the windows are duplicated
 * from the last one and MADV_POPULATE_WRITE gives the new pages their blocks, failing
 * (EFAULT) where a store would raise SIGBUS: a full disk or quota stops the recording
 * instead.  Kernels before 5.14 lack it (EINVAL): recording stops as it did without. */
static int back_unopened(uint64_t len, uint64_t keep, uint64_t w, struct gt_file_error *e)
{
	if (len > gt_cap.file_bytes && len + keep > gt_cap.reserved)
		return -1; /* the headroom is used up (the error says why no descriptor renewed it) */
	if (len > gt_cap.file_bytes && over_fsize(len)) {
		*e = (struct gt_file_error){"the capture file could not grow: ", EFBIG};
		return -1;
	}
	int err = 0;
	while (!err && gt_cap.n_windows <= w)
		err = dup_window(gt_cap.n_windows);
	if (err) {
		*e = (struct gt_file_error){"cannot map the capture: ", err};
		return -1;
	}
	uint64_t bytes = gt_cap.window_chunks * gt_cap.chunk_size;
	for (uint64_t at = gt_cap.file_bytes; at < len && !err;) {
		uint64_t k = (at - GT_FILE_HEADER_SIZE) / bytes;
		uint64_t end = GT_FILE_HEADER_SIZE + (k + 1) * bytes;
		end = end < len ? end : len;
		long r = gt_sys3(SYS_madvise, gt_cap.windows[k] + (at - GT_FILE_HEADER_SIZE) % bytes,
				 end - at, 23 /* MADV_POPULATE_WRITE */);
		if (r == -EFAULT)
			*e = (struct gt_file_error){"the capture file could not grow: ", ENOSPC};
		if (r < 0)
			return -1;
		gt_cap.file_bytes = at = end;
	}
	return 0;
}

/* What a growth or trim does with the capture's descriptor, in a thread whose descriptor
 * table is not the program's (files_apart.h): its arguments and result. */
struct file_job {
	uint64_t n, last;
	struct gt_file_error *e;
};

static long back_chunks(void *job);
static long back_page(void *job);
static long reserve_for_drop_apart(void *job);
static long trim_apart(void *job);

/* Chunks 0..n-1 backed by the file and mapped (under the growth lock), the last one up to
 * `last` bytes.  The descriptor is needed once per growth step or window, not per chunk. */
int gt_capture_back_chunks(uint64_t n, uint64_t last, struct gt_file_error *e)
{
	uint64_t need = GT_FILE_HEADER_SIZE + (n - 1) * (uint64_t)gt_cap.chunk_size + last;
	if (need <= gt_cap.file_bytes && (n - 1) / gt_cap.window_chunks < gt_cap.n_windows)
		return 0;
	struct file_job job = {n, last, e};
	return (int)gt_files_apart(back_chunks, &job);
}

static long back_chunks(void *job)
{
	struct file_job *j = job;
	struct gt_file_error *e = j->e;
	uint64_t need = GT_FILE_HEADER_SIZE + (j->n - 1) * (uint64_t)gt_cap.chunk_size + j->last;
	uint64_t w = (j->n - 1) / gt_cap.window_chunks;
	int err = EBADF;
	/* EBADF: a thread of the program closed every descriptor meanwhile; open it once more */
	for (int attempt = 0; attempt < 2 && err == EBADF; attempt++) {
		if (capture_fd_open(e) < 0)
			return unopenable(e->err) ? back_unopened(need, 4096, w, e) : -1;
		err = grow_file(need);
		while (!err && gt_cap.n_windows <= w)
			err = map_window(gt_cap.n_windows);
		capture_fd_close();
	}
	if (err == ENOMEM && gt_load(&gt_memlock_future))
		*e = (struct gt_file_error){"the program locked its memory (mlockall): a new window of "
					    "the capture would count against its RLIMIT_MEMLOCK: ", err};
	else if (err)
		*e = (struct gt_file_error){"the capture file could not grow: ", err};
	return err ? -1 : 0;
}

/* Chunk k, the next of the file, backed and mapped for its first page only (growth lock
 * held): 1, else 0 (not even a page fits, or no chunk may be opened). */
int gt_capture_back_page(uint64_t k)
{
	struct file_job job = {k, 0, NULL};
	return (int)gt_files_apart(back_page, &job);
}

static long back_page(void *job)
{
	uint64_t k = ((struct file_job *)job)->n;
	uint64_t at = GT_FILE_HEADER_SIZE + k * (uint64_t)gt_cap.chunk_size;
	struct gt_file_error e;
	int ok = !gt_cap.truncated && k < gt_cap.max_chunks && at == gt_cap.file_bytes;
	if (ok && capture_fd_open(&e) == 0) {
		ok = allocate_to(at + 4096) >= 0;
		while (ok && gt_cap.n_windows <= k / gt_cap.window_chunks)
			ok = !map_window(gt_cap.n_windows);
		capture_fd_close();
	} else if (ok) {
		ok = unopenable(e.err) && back_unopened(at + 4096, 0, k / gt_cap.window_chunks, &e) == 0;
	}
	return ok;
}

/* ---- creation ----------------------------------------------------------------------- */

/* <capture dir>/uid-<uid> into buf: its length */
static size_t user_dir(char *buf, size_t cap, uint64_t uid)
{
	char num[24];
	size_t n = 0;
	buf[0] = 0;
	if (gt_cfg.capture_dir[0]) {
		n = gt_append(buf, n, cap, gt_cfg.capture_dir);
		n = gt_append(buf, n, cap, "/");
	}
	num[gt_fmt_u64(num, uid)] = 0;
	n = gt_append(buf, n, cap, "uid-");
	return gt_append(buf, n, cap, num);
}

/* path[dir_len..] = gotrace-<pid>[-<n>].gtcap (n 0: no suffix) */
static void capture_name(char *path, size_t dir_len, size_t cap, uint64_t pid, uint64_t n)
{
	char num[24];
	size_t at = dir_len;
	path[at] = 0;
	at = gt_append(path, at, cap, "gotrace-");
	num[gt_fmt_u64(num, pid)] = 0;
	at = gt_append(path, at, cap, num);
	if (n) {
		at = gt_append(path, at, cap, "-");
		num[gt_fmt_u64(num, n)] = 0;
		at = gt_append(path, at, cap, num);
	}
	gt_append(path, at, cap, ".gtcap");
}

static int name_taken(char *path, size_t dir_len, size_t cap, uint64_t pid, uint64_t n)
{
	static struct stat st; /* creation runs once at a time, off the program's stack */
	capture_name(path, dir_len, cap, pid, n);
	return gt_sys4(SYS_newfstatat, AT_FDCWD, path, &st, AT_SYMLINK_NOFOLLOW) != -ENOENT;
}

/* The first n whose name is free, as the images of one pid take them in turn (0, 1, 2, ...):
 * doubling, then halving, so that the 1000th exec'd image looks at 20 names, not 1000. */
static uint64_t first_free_name(char *path, size_t dir_len, size_t cap, uint64_t pid)
{
	if (!name_taken(path, dir_len, cap, pid, 0))
		return 0;
	uint64_t taken = 0, free = 1;
	while (free < (1ull << 40) && name_taken(path, dir_len, cap, pid, free)) {
		taken = free;
		free *= 2;
	}
	while (free - taken > 1) {
		uint64_t mid = taken + (free - taken) / 2;
		if (name_taken(path, dir_len, cap, pid, mid))
			taken = mid;
		else
			free = mid;
	}
	return free;
}

/* gotrace-<pid>[-<n>].gtcap created in the directory path[0..n): the descriptor or -errno
 * (-EEXIST: every name tried was taken meanwhile) */
static long create_in(char *path, size_t dir_len, size_t cap, uint64_t pid)
{
	uint64_t n = first_free_name(path, dir_len, cap, pid);
	for (unsigned attempt = 0; attempt < 100; attempt++, n++) {
		/* the same pid after exec, or a stale file: never overwrite */
		capture_name(path, dir_len, cap, pid, n);
		long fd = gt_sys4(SYS_openat, AT_FDCWD, path,
				  O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd != -EEXIST)
			return fd;
	}
	return -EEXIST;
}

static int open_capture(void)
{
	static char in_user_dir[GT_PATH_MAX];
	char *path = gt_cap.path;
	size_t cap = sizeof gt_cap.path, n = 0;
	uint64_t pid = (uint64_t)gt_sys0(SYS_getpid);
	path[0] = 0;
	if (gt_cfg.capture_dir[0]) {
		n = gt_append(path, n, cap, gt_cfg.capture_dir);
		n = gt_append(path, n, cap, "/");
	}
	long fd = create_in(path, n, cap, pid);
	if (fd == -EACCES || fd == -EPERM) {
		/* a program run by a process that became this user (exec or fork after a
		 * privilege drop): the directory made for the user then (gt_capture_user_dir) */
		n = user_dir(in_user_dir, sizeof in_user_dir, (uint64_t)gt_sys0(SYS_geteuid));
		n = gt_append(in_user_dir, n, sizeof in_user_dir, "/");
		long fd2 = create_in(in_user_dir, n, sizeof in_user_dir, pid);
		if (fd2 >= 0 || fd2 == -EEXIST) {
			fd = fd2;
			memcpy(path, in_user_dir, sizeof in_user_dir);
		}
	}
	if (fd >= 0)
		return (int)fd;
	/* a traced process's child after its run ended (gotrace removed the directory, having
	 * stopped recording in the daemons it left running): untraced, silently */
	if (fd == -ENOENT && !gt_cfg.is_root)
		return -1;
	if (fd == -EEXIST)
		gt_warn("cannot create the capture: too many files named ", path, "; tracing disabled");
	else
		gt_warn_err("cannot create the capture ", path, (int)-fd,
			    "; tracing disabled, the program continues");
	return -1;
}

/* Right before a change of credentials, after which the capture may never be opened again
 * (nor trimmed: a dropped worker's capture keeps its length), the length it may grow to
 * through the mapping alone: GT_DROP_RESERVE beyond what is allocated, not the whole
 * gt_cap.map_bytes, so that such a capture shows at most that much more than it holds.  A
 * signal handler that interrupted this thread's growth passes (the headroom stays); while the
 * lock is held here, a handler's hooks pass straight through (busy), as during a growth. */
#define GT_DROP_RESERVE (4ull << 30)

static void reserve_for_drop(void)
{
	uint8_t was_busy = gt_busy_nest(&gt_tls, 1);
	if (gt_cap.sparse && take_growth()) {
		if (gt_cap.header && !gt_cap.truncated)
			gt_files_apart(reserve_for_drop_apart, NULL);
		gt_growth_unlock();
	}
	gt_tls.busy = was_busy;
}

static long reserve_for_drop_apart(void *job)
{
	struct gt_file_error e;
	(void)job;
	if (capture_fd_open(&e) == 0) {
		reserve_to(gt_cap.file_bytes + GT_DROP_RESERVE);
		capture_fd_close();
	}
	return 0;
}

int64_t gt_capture_user_dir(uint32_t uid)
{
	static char path[GT_PATH_MAX];
	static struct stat st;
	static _Atomic int busy; /* the buffers above: a second caller meanwhile passes (no lock a
				  * signal handler could wait on) */
	if (uid == (uint32_t)-1 || uid == (uint32_t)gt_sys0(SYS_geteuid))
		return uid;
	reserve_for_drop();
	if (atomic_exchange(&busy, 1))
		return uid;
	const char *dir = gt_cfg.capture_dir[0] ? gt_cfg.capture_dir : ".";
	/* others may enter but not create (gotrace run's 0711): else the user can create there
	 * already, or nothing of that user's could reach a directory inside */
	if (gt_sys4(SYS_newfstatat, AT_FDCWD, dir, &st, 0) == 0 && (st.st_mode & S_IXOTH) &&
	    !(st.st_mode & S_IWOTH)) {
		user_dir(path, sizeof path, uid);
		if (gt_sys3(SYS_mkdirat, AT_FDCWD, path, 0700) == 0 &&
		    gt_sys(SYS_fchownat, AT_FDCWD, (long)path, uid, -1, AT_SYMLINK_NOFOLLOW, 0) < 0)
			gt_sys3(SYS_unlinkat, AT_FDCWD, path, AT_REMOVEDIR); /* not ours to give */
	}
	atomic_store_explicit(&busy, 0, memory_order_release);
	return uid;
}

static void read_small_file(const char *path, char *buf, size_t cap, int nul_to_space)
{
	long fd = gt_sys4(SYS_openat, AT_FDCWD, path, O_RDONLY | O_CLOEXEC, 0);
	buf[0] = 0;
	if (fd < 0)
		return;
	long n = gt_sys3(SYS_read, fd, buf, cap - 1);
	gt_sys1(SYS_close, fd);
	if (n <= 0)
		return;
	buf[n] = 0;
	if (nul_to_space) {
		for (long i = 0; i < n - 1; i++)
			if (!buf[i])
				buf[i] = ' ';
	}
}

/* Field 22 of /proc/self/stat, after the command in parentheses (which may hold spaces). */
static uint64_t proc_start_ticks(void)
{
	char stat[1024];
	read_small_file("/proc/self/stat", stat, sizeof stat, 0);
	const char *p = stat;
	for (const char *q = stat; *q; q++)
		if (*q == ')')
			p = q + 1;
	for (int spaces = 0; *p && spaces < 20;) /* field 3 follows the first space */
		spaces += *p++ == ' ';
	uint64_t v = 0;
	while (*p >= '0' && *p <= '9')
		v = v * 10 + (uint64_t)(*p++ - '0');
	return v;
}

static void fill_header(void)
{
	struct gt_file_header *h = gt_cap.header;
	memcpy(h->magic, GT_CAPTURE_MAGIC, 8);
	h->version = GT_CAPTURE_VERSION;
	h->byte_order = GT_BYTE_ORDER_MARK;
	h->header_size = GT_FILE_HEADER_SIZE;
	h->chunk_size = gt_cap.chunk_size;
	h->pid = (uint32_t)gt_sys0(SYS_getpid);
	h->ppid = (uint32_t)gt_sys0(SYS_getppid);
	long ncpu = 0;
	char possible[64];
	read_small_file("/sys/devices/system/cpu/possible", possible, sizeof possible, 0);
	/* "0-7" or "0,2-5": the highest id + 1 */
	for (char *p = possible; *p; p++) {
		if (*p >= '0' && *p <= '9') {
			long v = 0;
			while (*p >= '0' && *p <= '9')
				v = v * 10 + (*p++ - '0');
			if (v + 1 > ncpu)
				ncpu = v + 1;
			if (!*p)
				break;
		}
	}
	h->n_cpus = (uint32_t)(ncpu > 0 && ncpu <= (long)GT_MAX_CPUS ? ncpu : GT_MAX_CPUS);
	h->clock_source = gt_clock.tsc ? GT_CLOCK_TSC : GT_CLOCK_MONOTONIC;
	h->tsc_hz = gt_clock.tsc_hz;
	gt_clock_pair(&h->start_tsc, &h->start_mono_ns);
	h->start_real_ns = gt_real_ns();
	h->stack_mode = gt_stack_mode;
	h->stack_depth = gt_cfg.stack_depth;
	h->flags = (gt_clock.tsc ? 0 : GT_FILE_TSC_UNRELIABLE) |
		   (h == &gt_header_page.h ? GT_FILE_STOP_WORD : 0);
	h->arch = GT_ARCH_NATIVE;
	h->start_delay_ns = gt_cfg.start_delay_ns;
	h->duration_ns = gt_cfg.duration_ns;
	long n = gt_sys4(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", h->exe_path, GT_PATH_MAX - 1);
	h->exe_path[n > 0 ? n : 0] = 0;
	read_small_file("/proc/self/cmdline", h->cmdline, sizeof h->cmdline, 1);
	h->proc_start_ticks = proc_start_ticks();
	gt_store(&gt_cap.last_clock_tsc, h->start_tsc);
	gt_ring_setup(h);
}

/* The header over gt_header_page (fastpath.h); elsewhere when the fixed mapping is refused
 * (pages larger than 4 KiB): recording works, gotrace cannot stop the process. */
static long map_header(int fd)
{
	long r = gt_sys((long)SYS_mmap, (long)&gt_header_page, GT_FILE_HEADER_SIZE,
			PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
	if (r < 0 && r > -4096)
		r = gt_sys((long)SYS_mmap, 0, GT_FILE_HEADER_SIZE, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (r >= 0 || r <= -4096)
		no_readahead(r, GT_FILE_HEADER_SIZE);
	return r;
}

/* gt_header_page is read by every reservation: it becomes zeroed memory again, never a hole */
static void unmap_header(void *hdr)
{
	if (hdr == &gt_header_page)
		gt_sys((long)SYS_mmap, (long)hdr, GT_FILE_HEADER_SIZE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
	else
		gt_sys2(SYS_munmap, hdr, GT_FILE_HEADER_SIZE);
}

/* File systems known to extend a file without writing zeros (vfat, exfat and some FUSE file
 * systems would write the whole reserved length): the others get no reserved length. */
static int sparse_files(unsigned long fs_type)
{
	switch (fs_type) {
	case EXT4_SUPER_MAGIC: case XFS_SUPER_MAGIC: case BTRFS_SUPER_MAGIC: case TMPFS_MAGIC:
	case F2FS_SUPER_MAGIC: case OVERLAYFS_SUPER_MAGIC: case NFS_SUPER_MAGIC:
	case 0x2FC12FC1 /* zfs */: case 0xCA451A4E /* bcachefs */:
		return 1;
	default:
		return 0;
	}
}

int gt_capture_create(struct gt_file_error *e)
{
	int fd = open_capture();
	if (fd < 0) {
		*e = (struct gt_file_error){NULL, 0};
		return -1;
	}
	gt_cap.fd = fd;
	long hdr = gt_sys2(SYS_fstat, fd, &gt_cap.stat);
	gt_cap.file_dev = gt_cap.stat.st_dev;
	gt_cap.file_ino = gt_cap.stat.st_ino;
	gt_cap.file_bytes = 0;
	gt_cap.n_windows = 0;
	gt_cap.window_chunks = GT_WINDOW_BYTES / gt_cap.chunk_size;
	if (gt_cap.window_chunks > GT_WINDOW_MAX_CHUNKS)
		gt_cap.window_chunks = GT_WINDOW_MAX_CHUNKS;
	if (!gt_cap.window_chunks)
		gt_cap.window_chunks = 1;
	gt_cap.max_chunks = ((64ull << 30) - GT_FILE_HEADER_SIZE) / gt_cap.chunk_size;
	if (gt_cap.max_chunks > GT_MAX_WINDOWS * gt_cap.window_chunks)
		gt_cap.max_chunks = GT_MAX_WINDOWS * gt_cap.window_chunks;
	gt_cap.map_bytes = GT_FILE_HEADER_SIZE + gt_cap.max_chunks * gt_cap.chunk_size;
	if (hdr == 0)
		hdr = map_header(fd);
	if (hdr < 0 && hdr > -4096) {
		capture_fd_close();
		*e = (struct gt_file_error){"cannot map the capture: ", (int)-hdr};
		return -1;
	}
	/* just the first chunk (and the headroom: a length without blocks, what it grows into
	 * when it cannot be opened again, cut by the final trim): page faults read ahead up to
	 * the end of the file, and every page read ahead past the used chunks is zero-filled now
	 * and dropped again by the final truncation */
	gt_cap.reserved = 0;
	struct statfs fs;
	unsigned long fs_type = gt_sys2(SYS_fstatfs, fd, &fs) < 0 ? 0 : (unsigned long)fs.f_type;
	gt_cap.sparse = sparse_files(fs_type);
	gt_cap.zero_filled = fs_type != TMPFS_MAGIC;
	gt_cap.chunk_limit = GT_FIRST_CHUNK < gt_cap.chunk_size ? GT_FIRST_CHUNK : gt_cap.chunk_size;
	int err = grow_file(GT_FILE_HEADER_SIZE + (uint64_t)gt_cap.chunk_limit);
	if (err)
		*e = (struct gt_file_error){"the capture file could not grow: ", err};
	else if ((err = map_window(0)))
		*e = (struct gt_file_error){"cannot map the capture: ", err};
	capture_fd_close();
	if (err) {
		unmap_header((void *)hdr);
		return -1;
	}
	gt_cap.header = (struct gt_file_header *)hdr;
	gt_cap.truncated = 0;
	fill_header();
	gt_budget_attach(gt_cap.header);
	return 0;
}

/* ---- the end ------------------------------------------------------------------------ */

/* Chunk 0's reserved bytes cut to `bytes`: the failed reservations past its limit counted
 * beyond what the file holds, which the reader would take for a chunk cut short. */
static void end_first_chunk(uint64_t bytes)
{
	_Atomic uint64_t *used =
		(_Atomic uint64_t *)(gt_chunk_addr(0) + offsetof(struct gt_chunk_header, used));
	uint64_t u = gt_load(used);
	while (u > bytes && !atomic_compare_exchange_weak(used, &u, bytes))
		;
}

/* The file cut to the chunks in use (growth lock held): at the end, and before an exec, which
 * may fail (final 0: the file may grow again, from that length). */
static void cut_to_chunks(int final)
{
	if (final)
		gt_cap.truncated = 1;
	uint64_t len = GT_FILE_HEADER_SIZE +
		       gt_load((_Atomic uint64_t *)&gt_cap.header->n_chunks) * gt_cap.chunk_size;
	/* a last chunk of one page (last_page_chunk); chunk 0 alone at GT_FIRST_CHUNK keeps its
	 * stride, the rest a hole, so that the reader never takes it for a truncated chunk */
	if (len > gt_cap.file_bytes && gt_cap.chunk_limit == gt_cap.chunk_size)
		len = gt_cap.file_bytes;
	/* RLIMIT_FSIZE refuses that stride (it is why chunk 0 never widened): the file ends with
	 * chunk 0's pages, and its count of reserved bytes with them */
	if (len > gt_cap.file_bytes && over_fsize(len)) {
		len = gt_cap.file_bytes;
		end_first_chunk(len - GT_FILE_HEADER_SIZE);
	}
	uint64_t now_len = gt_cap.reserved > gt_cap.file_bytes ? gt_cap.reserved : gt_cap.file_bytes;
	struct file_job job = {len, 0, NULL};
	long cut = len == now_len || gt_files_apart(trim_apart, &job);
	if (!final && cut) { /* the chunks allocated ahead and the reserved length are gone */
		gt_cap.file_bytes = len < gt_cap.file_bytes ? len : gt_cap.file_bytes;
		gt_cap.reserved = len;
	}
}

void gt_capture_trim(void)
{
	gt_growth_lock();
	cut_to_chunks(1);
	gt_growth_unlock();
}

void gt_capture_trim_for_exec(void)
{
	gt_growth_lock();
	if (gt_cap.header && !gt_cap.truncated)
		cut_to_chunks(0);
	gt_growth_unlock();
}

static long trim_apart(void *job)
{
	struct gt_file_error e;
	long r = -1;
	if (capture_fd_open(&e) == 0) {
		r = file_call(SYS_ftruncate, (long)((struct file_job *)job)->n, 0, 0);
		capture_fd_close();
	}
	return r == 0;
}

void gt_capture_forget(void)
{
	gt_slots_full();
	if (gt_cap.header) {
		unmap_header(gt_cap.header);
		gt_cap.header = NULL;
	}
	for (uint64_t w = 0; w < gt_cap.n_windows; w++)
		gt_sys2(SYS_munmap, gt_cap.windows[w], gt_cap.window_chunks * gt_cap.chunk_size);
	gt_cap.n_windows = 0;
	/* forked while another thread of the parent was growing the file */
	if (gt_cap.fd >= 0)
		capture_fd_close();
	gt_cap.path[0] = 0;
	gt_store(&gt_memlock_future, 0); /* a fork child inherits no memory lock */
	gt_store(&gt_cap.dropped, 0);
	gt_store(&gt_cap.dropped_reported, 0);
	gt_store(&gt_cap.growth_lock, 0);
	gt_cap.n_spares = 0;
	gt_store(&gt_cap.install_seq, 0);
	gt_ring_forget();
}
