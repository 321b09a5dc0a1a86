/* The capture file: creation, per-CPU chunks, growth, the slow path, start/stop, the end of
 * the process, fork children, and running the converter at exit. */
#include "gt_internal.h"
#include "hooks.def"

#include <fcntl.h>
#include <linux/falloc.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

_Atomic int gt_enabled = 1;
_Atomic int gt_state = GT_ST_UNINIT;
_Atomic uint32_t gt_epoch = 1;
_Atomic uint32_t gt_next_serial = 2;
_Atomic uint64_t gt_n_blocked[GT_BK_COUNT];
_Atomic uint64_t gt_dropped;
uint32_t gt_chunk_size = 1u << 20;
uint64_t gt_stop_tsc = UINT64_MAX;
struct gt_file_header *gt_header;
__thread struct gt_tls gt_tls __attribute__((tls_model("initial-exec")));

/* Before initialisation and after the end every CPU points here: "used" is far beyond any
 * chunk size, so every reservation fails into the slow path. */
static struct gt_chunk_header gt_full_chunk = {.used = 1ull << 62};
struct gt_slot gt_slots[GT_MAX_CPUS] = {[0 ... GT_MAX_CPUS - 1] = {.chunk = (char *)&gt_full_chunk}};

static int gt_fd = -1;
static char *gt_map;
static uint64_t gt_map_bytes;
static uint64_t gt_file_bytes;       /* allocated length of the file */
static uint64_t gt_max_chunks;
static uint64_t gt_start_deadline;   /* DELAYED -> RECORDING at this timestamp */
static int gt_truncated;             /* the file was trimmed: no chunk may be opened */
static _Atomic uint64_t gt_last_clock_tsc;
static _Atomic uint64_t gt_dropped_reported;
static _Atomic int gt_growth_lock;
static int gt_image_ready;           /* config, clock and self range set for this image */
static char gt_path[GT_PATH_MAX];

void gt_lock_growth(void)
{
	int expected = 0;
	while (!atomic_compare_exchange_weak_explicit(&gt_growth_lock, &expected, 1,
						      memory_order_acquire, memory_order_relaxed)) {
		expected = 0;
		gt_sys0(SYS_sched_yield);
	}
}

void gt_unlock_growth(void) { atomic_store_explicit(&gt_growth_lock, 0, memory_order_release); }

int gt_capture_path(char *buf, size_t n)
{
	if (!gt_path[0] || strlen(gt_path) >= n)
		return 0;
	strcpy(buf, gt_path);
	return 1;
}

static const char *errno_text(int err, char *buf)
{
	switch (err) {
	case ENOSPC: return "no space left on device";
	case EFBIG: return "file size limit exceeded";
	case EDQUOT: return "disk quota exceeded";
	case EACCES: return "permission denied";
	case EEXIST: return "file exists";
	case ENOENT: return "no such directory";
	case EROFS: return "read-only file system";
	case ENOMEM: return "out of memory";
	default:
		memcpy(buf, "errno ", 6);
		buf[6 + gt_fmt_u64(buf + 6, (uint64_t)err)] = 0;
		return buf;
	}
}

static void set_all_slots_full(void)
{
	for (unsigned i = 0; i < GT_MAX_CPUS; i++)
		gt_store(&gt_slots[i].chunk, (char *)&gt_full_chunk);
}

/* Recording cannot go on: say so once, keep every committed fact, let the program run. */
static void gt_fail(const char *what, int err)
{
	char eb[32];
	int st = gt_load(&gt_state);
	if (st == GT_ST_FAILED)
		return;
	gt_store(&gt_state, GT_ST_FAILED);
	gt_store(&gt_enabled, 0);
	set_all_slots_full();
	if (gt_header)
		atomic_fetch_or((_Atomic uint32_t *)&gt_header->flags, GT_FILE_WRITE_FAILED);
	gt_warn(what, errno_text(err, eb), "; recording stopped, the program continues");
}

/* Grow the file so that `need` bytes are backed.  fallocate reserves the blocks, so a full
 * disk is an error here rather than a SIGBUS on a later store into the mapping. */
static int grow_file(uint64_t need)
{
	if (need <= gt_file_bytes)
		return 0;
	uint64_t step = (uint64_t)gt_chunk_size * 8;
	uint64_t target = gt_file_bytes ? gt_file_bytes : need;
	while (target < need)
		target += step;
	if (target > gt_map_bytes)
		target = gt_map_bytes;
	/* RLIMIT_FSIZE raises SIGXFSZ: block it so the program is not killed for our file. */
	sigset_t block, old;
	sigemptyset(&block);
	sigaddset(&block, SIGXFSZ);
	gt_sys4(SYS_rt_sigprocmask, SIG_BLOCK, &block, &old, sizeof(long));
	long r = gt_sys4(SYS_fallocate, gt_fd, 0, (long)gt_file_bytes, (long)(target - gt_file_bytes));
	if (r == -EOPNOTSUPP || r == -ENOSYS)
		r = gt_sys2(SYS_ftruncate, gt_fd, (long)target);
	if (r < 0) {
		/* A SIGXFSZ we caused must not stay pending for the program. */
		siginfo_t si;
		struct timespec zero = {0, 0};
		gt_sys4(SYS_rt_sigtimedwait, &block, &si, &zero, sizeof(long));
	}
	gt_sys4(SYS_rt_sigprocmask, SIG_SETMASK, &old, NULL, sizeof(long));
	if (r < 0)
		return (int)-r;
	gt_file_bytes = target;
	return 0;
}

/* A clock pair and a dropped-facts notice ride along in a new chunk when due. */
static uint32_t chunk_extras(uint64_t tsc, int *want_clock, uint64_t *dropped)
{
	uint32_t extra = 0;
	uint64_t last = gt_load(&gt_last_clock_tsc);
	uint64_t period = gt_clock_tsc ? gt_tsc_hz / 10 : 100000000ull;
	*want_clock = 0;
	if (tsc - last >= period &&
	    atomic_compare_exchange_strong(&gt_last_clock_tsc, &last, tsc)) {
		*want_clock = 1;
		extra += 32;
	}
	uint64_t d = gt_load(&gt_dropped), rep = gt_load(&gt_dropped_reported);
	*dropped = 0;
	if (d > rep && atomic_compare_exchange_strong(&gt_dropped_reported, &rep, d)) {
		*dropped = d - rep;
		extra += 24;
	}
	return extra;
}

static void write_clock_at(uint64_t *r)
{
	unsigned cpu;
	uint64_t tsc = gt_now(&cpu);
	r[1] = tsc;
	r[2] = gt_mono_ns();
	r[3] = gt_real_ns();
	gt_commit(r, gt_rec_word(GT_CLOCK, 0, 32, 0));
}

static void write_notice_at(uint64_t *r, uint8_t kind, uint64_t value, uint64_t tsc)
{
	r[1] = tsc;
	r[2] = value;
	gt_commit(r, gt_rec_word(GT_NOTICE, kind, 24, 0));
}

/* Hand out a new chunk to `cpu` with `nbytes` reserved at its end for the caller. */
static uint64_t *open_chunk(unsigned cpu, uint32_t nbytes, uint64_t tsc, int final)
{
	int want_clock;
	uint64_t dropped;
	gt_lock_growth();
	int st = gt_load(&gt_state);
	if (gt_truncated || !gt_map || (st != GT_ST_RECORDING && !(final && st == GT_ST_STOPPED))) {
		gt_unlock_growth();
		return NULL;
	}
	uint64_t k = gt_load((_Atomic uint64_t *)&gt_header->n_chunks);
	if (k >= gt_max_chunks) {
		gt_unlock_growth();
		gt_fail("capture reached its size limit: ", ENOSPC);
		return NULL;
	}
	int err = grow_file(GT_FILE_HEADER_SIZE + (k + 1) * (uint64_t)gt_chunk_size);
	if (err) {
		gt_unlock_growth();
		gt_fail("the capture file could not grow: ", err);
		return NULL;
	}
	gt_store((_Atomic uint64_t *)&gt_header->n_chunks, k + 1);
	gt_unlock_growth();

	char *c = gt_map + GT_FILE_HEADER_SIZE + k * (uint64_t)gt_chunk_size;
	/* one system call maps the whole chunk instead of a page fault per 4 KiB on the fast
	 * path (kernels before 5.14 refuse it: the faults then happen as before) */
	gt_sys3(SYS_madvise, c, gt_chunk_size, 23 /* MADV_POPULATE_WRITE */);
	struct gt_chunk_header *h = (struct gt_chunk_header *)c;
	uint32_t extra = chunk_extras(tsc, &want_clock, &dropped);
	h->cpu = cpu;
	h->seq = k;
	h->first_tsc = tsc;
	gt_store((_Atomic uint64_t *)&h->used, (uint64_t)GT_CHUNK_HEADER_SIZE + extra + nbytes);
	atomic_store_explicit((_Atomic uint32_t *)&h->magic, GT_CHUNK_MAGIC, memory_order_release);
	uint64_t *p = (uint64_t *)(c + GT_CHUNK_HEADER_SIZE);
	if (want_clock) {
		write_clock_at(p);
		p += 4;
	}
	if (dropped) {
		write_notice_at(p, GT_NOTICE_DROPPED, dropped, tsc);
		p += 3;
	}

	char *old = gt_load(&gt_slots[cpu].chunk);
	if (atomic_compare_exchange_strong(&gt_slots[cpu].chunk, &old, c) &&
	    old != (char *)&gt_full_chunk) {
		/* The old chunk is full: drop its pages from our mapping (they stay in the file;
		 * a late writer refaults them), so memory stays bounded by CPUs x chunk size. */
		gt_sys3(SYS_madvise, old, gt_chunk_size, MADV_DONTNEED);
	}
	return p;
}

static void start_recording(void)
{
	int expected = GT_ST_DELAYED;
	if (atomic_compare_exchange_strong(&gt_state, &expected, GT_ST_RECORDING))
		atomic_fetch_add(&gt_epoch, 1);
}

static void stop_recording(int process_end);

uint64_t *gt_reserve_slow(unsigned cpu, uint32_t nbytes, uint64_t tsc)
{
	int saved_errno = errno;
	struct gt_tls *t = &gt_tls;
	uint8_t was_busy = t->busy;
	uint64_t *r = NULL;
	t->busy = 1;
	switch (gt_load(&gt_state)) {
	case GT_ST_UNINIT:
		gt_init();
		break;
	case GT_ST_DELAYED:
		if (tsc >= gt_start_deadline)
			start_recording();
		break;
	case GT_ST_RECORDING:
		if (tsc >= gt_stop_tsc) {
			stop_recording(0);
			break;
		}
		r = open_chunk(cpu, nbytes, tsc, 0);
		if (!r)
			gt_add(&gt_dropped, 1);
		break;
	default:
		break;
	}
	t->busy = was_busy;
	errno = saved_errno;
	return r;
}

uint64_t *gt_reserve_final(unsigned cpu, uint32_t nbytes)
{
	char *chunk = gt_load(&gt_slots[cpu].chunk);
	_Atomic uint64_t *used = (_Atomic uint64_t *)(chunk + offsetof(struct gt_chunk_header, used));
	uint64_t off = gt_add(used, nbytes);
	if (off + nbytes <= gt_chunk_size)
		return (uint64_t *)(chunk + off);
	unsigned c2;
	return open_chunk(cpu, nbytes, gt_now(&c2), 1);
}

static void write_end_records(int process_end)
{
	unsigned cpu;
	uint64_t *r;
	struct gt_tls *t = &gt_tls;
	if (process_end && t->serial && !t->ended && t->epoch == gt_load(&gt_epoch)) {
		uint64_t tsc = gt_now(&cpu);
		if ((r = gt_reserve_final(cpu, 16))) {
			r[1] = tsc;
			gt_commit(r, gt_rec_word(GT_THREAD_END, GT_END_PROCESS, 16, t->serial));
		}
	}
	uint64_t d = gt_load(&gt_dropped) - gt_load(&gt_dropped_reported);
	gt_now(&cpu);
	if (d && (r = gt_reserve_final(cpu, 24))) {
		unsigned c2;
		write_notice_at(r, GT_NOTICE_DROPPED, d, gt_now(&c2));
		gt_store(&gt_dropped_reported, gt_load(&gt_dropped));
	}
	if ((r = gt_reserve_final(cpu, 32)))
		write_clock_at(r);
	uint64_t tsc = gt_now(&cpu);
	if ((r = gt_reserve_final(cpu, 16))) {
		r[1] = tsc;
		gt_commit(r, gt_rec_word(GT_CAPTURE_END, 0, 16, 0));
	}
}

static void stop_recording(int process_end)
{
	int expected = GT_ST_RECORDING;
	if (!atomic_compare_exchange_strong(&gt_state, &expected, GT_ST_STOPPED))
		return;
	gt_store(&gt_enabled, 0);
	write_end_records(process_end);
	set_all_slots_full();
}

/* ---- creation ----------------------------------------------------------------------- */

static size_t append(char *dst, size_t at, size_t cap, const char *s)
{
	while (*s && at + 1 < cap)
		dst[at++] = *s++;
	dst[at] = 0;
	return at;
}

static int open_capture(void)
{
	char num[24];
	uint64_t pid = (uint64_t)gt_sys0(SYS_getpid);
	for (unsigned attempt = 0; attempt < 100; attempt++) {
		size_t n = 0;
		gt_path[0] = 0;
		if (gt_cfg.capture_dir[0]) {
			n = append(gt_path, n, sizeof gt_path, gt_cfg.capture_dir);
			n = append(gt_path, n, sizeof gt_path, "/");
		}
		n = append(gt_path, n, sizeof gt_path, "gotrace-");
		num[gt_fmt_u64(num, pid)] = 0;
		n = append(gt_path, n, sizeof gt_path, num);
		if (attempt) {
			/* the same pid after exec, or a stale file: never overwrite */
			n = append(gt_path, n, sizeof gt_path, "-");
			num[gt_fmt_u64(num, attempt)] = 0;
			n = append(gt_path, n, sizeof gt_path, num);
		}
		append(gt_path, n, sizeof gt_path, ".gtcap");
		long fd = gt_sys4(SYS_openat, AT_FDCWD, gt_path,
				  O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0)
			return (int)fd;
		if (fd != -EEXIST) {
			char eb[32], tail[160];
			size_t n2 = append(tail, 0, sizeof tail, ": ");
			n2 = append(tail, n2, sizeof tail, errno_text((int)-fd, eb));
			append(tail, n2, sizeof tail, "; tracing disabled, the program continues");
			gt_warn("cannot create the capture ", gt_path, tail);
			return -1;
		}
	}
	gt_warn("cannot create the capture: too many files named ", gt_path, "; tracing disabled");
	return -1;
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

static void fill_header(void)
{
	struct gt_file_header *h = gt_header;
	memcpy(h->magic, GT_CAPTURE_MAGIC, 8);
	h->version = GT_CAPTURE_VERSION;
	h->byte_order = GT_BYTE_ORDER_MARK;
	h->header_size = GT_FILE_HEADER_SIZE;
	h->chunk_size = gt_chunk_size;
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
	h->clock_source = gt_clock_tsc ? GT_CLOCK_TSC : GT_CLOCK_MONOTONIC;
	h->tsc_hz = gt_tsc_hz;
	unsigned cpu;
	h->start_tsc = gt_now(&cpu);
	h->start_mono_ns = gt_mono_ns();
	h->start_real_ns = gt_real_ns();
	h->stack_mode = gt_stack_mode;
	h->stack_depth = gt_cfg.stack_depth;
	h->flags = gt_clock_tsc ? 0 : GT_FILE_TSC_UNRELIABLE;
#if defined(__x86_64__)
	h->arch = GT_ARCH_X86_64;
#else
	h->arch = GT_ARCH_AARCH64;
#endif
	h->start_delay_ns = gt_cfg.start_delay_ns;
	h->duration_ns = gt_cfg.duration_ns;
	long n = gt_sys4(SYS_readlinkat, AT_FDCWD, "/proc/self/exe", h->exe_path, GT_PATH_MAX - 1);
	h->exe_path[n > 0 ? n : 0] = 0;
	read_small_file("/proc/self/cmdline", h->cmdline, sizeof h->cmdline, 1);
	gt_store(&gt_last_clock_tsc, h->start_tsc);
}

static uint64_t ns_to_ticks(uint64_t ns)
{
	return gt_clock_tsc ? (uint64_t)((double)ns * (double)gt_tsc_hz / 1e9) : ns;
}

static void gt_after_fork_child_hook(void) { gt_after_fork_child(); }

int gt_init(void)
{
	int expected = GT_ST_UNINIT;
	if (!atomic_compare_exchange_strong(&gt_state, &expected, GT_ST_INITIALIZING))
		return expected == GT_ST_RECORDING || expected == GT_ST_DELAYED;
	struct gt_tls *t = &gt_tls;
	uint8_t was_busy = t->busy;
	t->busy = 1;
	gt_resolve_all();
	if (!gt_image_ready) {
		gt_config_load();
		gt_clock_setup();
		gt_self_range();
		gt_stack_mode = gt_cfg.stack_mode;
		gt_stacks_setup();
		pthread_atfork(NULL, NULL, gt_after_fork_child_hook);
		if (!gt_cfg.follow)
			gt_env_strip_self(); /* children (system, popen, exec with environ) start untraced */
		gt_image_ready = 1;
	}
	gt_chunk_size = gt_cfg.chunk_size;

	int fd = open_capture();
	if (fd < 0) {
		gt_store(&gt_state, GT_ST_FAILED);
		gt_store(&gt_enabled, 0);
		t->busy = was_busy;
		return 0;
	}
	gt_fd = fd;
	void *m = MAP_FAILED;
	for (uint64_t size = 64ull << 30; size >= (256ull << 20); size >>= 2) {
		long r = gt_sys((long)SYS_mmap, 0, (long)size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
		if (r > -4096 && r < 0)
			continue;
		m = (void *)r;
		gt_map_bytes = size;
		break;
	}
	gt_file_bytes = 0;
	if (m == MAP_FAILED) {
		gt_store(&gt_state, GT_ST_UNINIT);
		gt_fail("cannot map the capture: ", ENOMEM);
		t->busy = was_busy;
		return 0;
	}
	gt_map = m;
	gt_header = (struct gt_file_header *)gt_map;
	gt_max_chunks = (gt_map_bytes - GT_FILE_HEADER_SIZE) / gt_chunk_size;
	/* just the first chunk: page faults read ahead up to the end of the file, and every
	 * page read ahead past the used chunks is zero-filled now and dropped again by the
	 * final truncation */
	int err = grow_file(GT_FILE_HEADER_SIZE + (uint64_t)gt_chunk_size);
	if (err) {
		gt_store(&gt_state, GT_ST_UNINIT);
		gt_header = NULL;
		gt_fail("the capture file could not grow: ", err);
		t->busy = was_busy;
		return 0;
	}
	gt_truncated = 0;
	fill_header();
	uint64_t start = gt_header->start_tsc;
	gt_start_deadline = start + ns_to_ticks(gt_cfg.start_delay_ns);
	gt_stop_tsc = gt_cfg.duration_ns ? gt_start_deadline + ns_to_ticks(gt_cfg.duration_ns) : UINT64_MAX;

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
	uint64_t *r = open_chunk(cpu, 32, start, 0);
	if (r)
		write_clock_at(r);
	gt_modules_emit_all();
	gt_store(&gt_state, st);
	t->busy = was_busy;
	return 1;
}

/* ---- the end -------------------------------------------------------------------------- */

static void build_out_path(char *out, size_t cap)
{
	char num[24];
	size_t n = 0;
	int had_pid = 0;
	uint64_t pid = (uint64_t)gt_sys0(SYS_getpid);
	num[gt_fmt_u64(num, pid)] = 0;
	for (const char *p = gt_cfg.out; *p && n + 24 < cap; p++) {
		if (p[0] == '%' && p[1] == 'p') {
			n = append(out, n, cap, num);
			had_pid = 1;
			p++;
		} else {
			out[n++] = *p;
		}
	}
	out[n] = 0;
	if (!had_pid && !gt_cfg.is_root) {
		n = append(out, n, cap, ".");
		append(out, n, cap, num);
	}
}

static void run_converter(void)
{
	char out[GT_PATH_MAX], bin[GT_PATH_MAX];
	build_out_path(out, sizeof out);
	/* build tree: <build>/preload/libgotrace.so -> <build>/cli/gotrace */
	size_t n = strlen(gt_self_path);
	while (n && gt_self_path[n - 1] != '/')
		n--;
	bin[0] = 0;
	if (n && n + sizeof GT_GOTRACE_BUILD_RELPATH < sizeof bin) {
		memcpy(bin, gt_self_path, n);
		strcpy(bin + n, GT_GOTRACE_BUILD_RELPATH);
		if (access(bin, X_OK) != 0)
			bin[0] = 0;
	}
	if (!bin[0])
		strcpy(bin, GT_INSTALLED_GOTRACE);
	char *argv[] = {bin, (char *)"convert", (char *)"-q", gt_path, (char *)"-o", out, NULL};
	char *envbuf[512];
	char scratch[8192];
	extern char **environ;
	char **env = gt_child_env(environ, 0, envbuf, 512, scratch, sizeof scratch);
	pid_t pid;
	int rc = GT_REAL(posix_spawn)(&pid, bin, NULL, NULL, argv, env);
	if (rc) {
		char eb[32], tail[160];
		size_t n2 = append(tail, 0, sizeof tail, ": ");
		n2 = append(tail, n2, sizeof tail, errno_text(rc, eb));
		append(tail, n2, sizeof tail, "; the capture is kept");
		gt_warn("cannot run the converter ", bin, tail);
		return;
	}
	int status = 0;
	long w;
	do
		w = gt_sys4(SYS_wait4, pid, &status, 0, NULL);
	while (w == -EINTR);
	if (w < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
		gt_warn("converting ", gt_path, " failed; the capture is kept");
}

void gt_finalize(int convert)
{
	struct gt_tls *t = &gt_tls;
	int st = gt_load(&gt_state);
	if (st != GT_ST_RECORDING && st != GT_ST_STOPPED && st != GT_ST_DELAYED)
		return;
	t->busy = 1;
	if (st == GT_ST_DELAYED)
		gt_store(&gt_state, GT_ST_RECORDING); /* the end records still describe the process */
	stop_recording(1);
	if (!gt_header)
		return;
	atomic_fetch_or((_Atomic uint32_t *)&gt_header->flags, GT_FILE_FINALIZED);
	gt_lock_growth();
	gt_truncated = 1;
	uint64_t len = GT_FILE_HEADER_SIZE + gt_load((_Atomic uint64_t *)&gt_header->n_chunks) * gt_chunk_size;
	if (len != gt_file_bytes)
		gt_sys2(SYS_ftruncate, gt_fd, (long)len);
	gt_unlock_growth();
	if (convert && gt_cfg.out)
		run_converter();
}

void gt_after_fork_child(void)
{
	int st = gt_load(&gt_state);
	set_all_slots_full();
	if (gt_map) {
		gt_sys2(SYS_munmap, gt_map, (long)gt_map_bytes);
		gt_map = NULL;
		gt_header = NULL;
	}
	if (gt_fd >= 0) {
		gt_sys1(SYS_close, gt_fd);
		gt_fd = -1;
	}
	gt_path[0] = 0;
	gt_cfg.is_root = 0;
	gt_store(&gt_dropped, 0);
	gt_store(&gt_dropped_reported, 0);
	gt_store(&gt_next_serial, 2);
	gt_store(&gt_growth_lock, 0);
	gt_stop_tsc = UINT64_MAX;
	gt_waiters_reset();
	gt_threads_reset();
	gt_stacks_reset();
	gt_modules_reset();
	struct gt_tls *t = &gt_tls;
	t->serial = 0;
	t->epoch = 0;
	t->pending = GT_PENDING_NONE;
	atomic_fetch_add(&gt_epoch, 1);
	/* A child of a process whose recording ended or failed stays untraced. */
	if (st == GT_ST_STOPPED || st == GT_ST_FAILED || st == GT_ST_UNINIT) {
		gt_store(&gt_state, st == GT_ST_UNINIT ? GT_ST_UNINIT : GT_ST_FAILED);
		return;
	}
	gt_store(&gt_state, GT_ST_UNINIT);
}

__attribute__((constructor)) static void gt_constructor(void)
{
	gt_resolve_all();
	if (gt_load(&gt_state) == GT_ST_UNINIT)
		gt_init();
	struct gt_tls *t = gt_enter(); /* announces the main thread */
	(void)t;
}

__attribute__((destructor)) static void gt_destructor(void) { gt_finalize(1); }
