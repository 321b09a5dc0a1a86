/* recorder: the launcher's perf events on the traced tree (recorder.h). */
#include "recorder.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "reader.h"
#include "records.h"

#define DATA_PAGES_MIN 8u
/* 2 MiB per CPU first where the user may lock that much (root, CAP_IPC_LOCK, a large
 * ulimit -l), halved on EPERM down to 128 data pages + the header page, exactly the
 * unprivileged per-CPU allowance (perf_event_mlock_kb=516, kernel-records.md §1.2):
 * samples are 8.4 KB each (0.85 MB/s per busy CPU at 100 Hz), and on a loaded machine the
 * drain falls behind a ping-pong's 150 k switches/s (scripts/bench: 512 KiB lost 42 % of
 * them where 2 MiB lost none). */
#define DATA_PAGES_FIRST 512u
#define STACK_USER_BYTES 8192u     /* perf's default: complete stacks through libgomp (§6.1) */
#define STACK_OFFCPU_BYTES 2048u   /* 100 % complete off-CPU stacks with 2 KiB (§6.2) */
#define DRAIN_MS 100


struct gt_kernel_rec {
	int n;                      /* CPUs with an event */
	int *fd;
	int *fd_cpu, *fd_off;       /* the sampling events of each CPU, -1: none */
	struct gt_kernel_event *events;  /* every event's id */
	uint32_t n_events;
	void **ring;
	size_t map_bytes, data_bytes;
	int out;                    /* the .gtkern file */
	int stop[2];                /* a byte: drain once more and end */
	pthread_t thread;
	uint64_t write_lost;        /* records drained and not stored */
	uint64_t stored;            /* bytes of whole records in the file */
	int store_err;              /* the write that stopped the file (EFBIG: RLIMIT_FSIZE) */
	uint64_t drain_cpu_ns;      /* the drain thread's CPU time, when it ends */
	char path[PATH_MAX];
};

static void say_what(const char *what, const char *fmt, va_list ap)
{
	fprintf(stderr, "gotrace: %s", what);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say_what("no kernel scheduling data: ", fmt, ap);
	va_end(ap);
}

/* A sampling event refused: the switches are recorded all the same. */
static void say_samples(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say_samples(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	say_what("", fmt, ap);
	va_end(ap);
}

static int paranoid_level(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "re");
	int level = INT_MIN;
	if (f != NULL) {
		if (fscanf(f, "%d", &level) != 1)
			level = INT_MIN;
		fclose(f);
	}
	return level;
}

/* The one line for a refused perf_event_open (docs/formats/kernel-records.md §11). */
static void say_refused(int err)
{
	int level = paranoid_level();
	if (err == EACCES && level >= 3)
		say("kernel.perf_event_paranoid=%d forbids perf events for non-root; enable: sudo "
		    "sysctl -w kernel.perf_event_paranoid=2 (or run with CAP_PERFMON)", level);
	else if (err == EACCES)
		say("perf_event_open refused (EACCES)%s; run with CAP_PERFMON",
		    level > 2 ? "" : " by a security module");
	else if (err == EPERM)
		say("perf_event_open blocked (EPERM), likely a container seccomp profile; enable: "
		    "docker run --cap-add PERFMON (or a profile that allows perf_event_open)");
	else if (err == ENOSYS || err == ENOENT || err == ENODEV || err == EOPNOTSUPP)
		say("this kernel or sandbox has no perf events (%s)", strerror(err));
	else if (err == EINVAL || err == E2BIG)
		say("kernel too old for context-switch records with CLOCK_MONOTONIC times (needs "
		    "Linux 4.3+): %s", strerror(err));
	else
		say("perf_event_open: %s", strerror(err));
}

static int open_event(pid_t pid, int cpu)
{
	struct perf_event_attr a = {
		.size = sizeof a,
		.type = PERF_TYPE_SOFTWARE,
		.config = PERF_COUNT_SW_DUMMY,
		.sample_period = 1,
		.sample_type = GT_KERNEL_TRAILER_TYPE,
		.sample_id_all = 1,
		.context_switch = 1,
		.comm = 1,
		.comm_exec = 1,
		.task = 1,
		.inherit = 1,
		.disabled = 1,
		.enable_on_exec = 1,
		.exclude_kernel = 1,   /* required for non-root at paranoid 2 */
		.exclude_hv = 1,
		.use_clockid = 1,
		.clockid = CLOCK_MONOTONIC,
		.watermark = 1,
	};
	return (int)syscall(SYS_perf_event_open, &a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* A sampling event on pid's tree on cpu, written into the switch event's ring (ring_fd):
 * cpu-clock every 1/hz s of a thread's CPU time, or (hz 0) a sample at every switch-out,
 * which only fires with kernel events allowed (paranoid <= 1, CAP_PERFMON). */
static int open_sampler(pid_t pid, int cpu, unsigned hz, int ring_fd)
{
	struct perf_event_attr a = {
		.size = sizeof a,
		.type = PERF_TYPE_SOFTWARE,
		.config = hz ? PERF_COUNT_SW_CPU_CLOCK : PERF_COUNT_SW_CONTEXT_SWITCHES,
		.sample_period = hz ? 1000000000u / hz : 1,  /* cpu-clock counts ns */
		.sample_type = GT_KERNEL_SAMPLES_TYPE,
		.sample_regs_user = GT_KERNEL_REGS_USER,
		.sample_stack_user = hz ? STACK_USER_BYTES : STACK_OFFCPU_BYTES,
		.sample_id_all = 1,
		.exclude_callchain_kernel = 1,
		.inherit = 1,
		.disabled = 1,
		.enable_on_exec = 1,
		.exclude_kernel = hz ? 1 : 0,  /* a switch event fires in the kernel */
		.exclude_hv = 1,
		.use_clockid = 1,  /* SET_OUTPUT wants the ring owner's clock */
		.clockid = CLOCK_MONOTONIC,
	};
	int fd = (int)syscall(SYS_perf_event_open, &a, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
	if (fd >= 0 && ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT, ring_fd) != 0) {
		int err = errno;
		close(fd);
		errno = err;
		return -1;
	}
	return fd;
}

static int online_cpus(int **cpus)
{
	/* "0-3,5,7-8" */
	char buf[4096];
	int n = 0, fd = open("/sys/devices/system/cpu/online", O_RDONLY | O_CLOEXEC);
	ssize_t len = fd >= 0 ? read(fd, buf, sizeof buf - 1) : -1;
	if (fd >= 0)
		close(fd);
	if (len <= 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		*cpus = malloc(sizeof **cpus * (size_t)(c > 0 ? c : 1));
		for (n = 0; *cpus != NULL && n < (c > 0 ? c : 1); n++)
			(*cpus)[n] = n;
		return n;
	}
	buf[len] = '\0';
	*cpus = NULL;
	for (char *p = buf; *p >= '0' && *p <= '9';) {
		long lo = strtol(p, &p, 10), hi = lo;
		if (*p == '-')
			hi = strtol(p + 1, &p, 10);
		int *v = realloc(*cpus, sizeof *v * (size_t)(n + hi - lo + 1));
		if (v == NULL)
			break;
		*cpus = v;
		for (long c = lo; c <= hi; c++)
			v[n++] = (int)c;
		if (*p == ',')
			p++;
	}
	return n;
}

/* One record into the file.  The first write refused (a full disk, RLIMIT_FSIZE: gotrace
 * ignores SIGXFSZ) stops the file after its last whole record; the records after it are
 * counted, and gt_kernel_finish says why. */
static void store(struct gt_kernel_rec *k, const void *rec, size_t size)
{
	const char *p = rec;
	size_t left = size;
	while (left > 0 && !k->store_err) {
		ssize_t w = write(k->out, p, left);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			k->store_err = w < 0 ? errno : EIO;
			if (left < size && ftruncate(k->out, (off_t)k->stored) == 0)
				lseek(k->out, (off_t)k->stored, SEEK_SET);
			break;
		}
		p += w;
		left -= (size_t)w;
	}
	if (k->store_err)
		k->write_lost++;
	else
		k->stored += size;
}

/* The records of the ring between positions from and to (as data_head counts them) that
 * end after position written: those a failed write did not store whole. */
static uint64_t records_not_stored(const char *data, uint64_t size, uint64_t from,
				   uint64_t written, uint64_t to)
{
	uint64_t n = 0;
	while (from < to) {
		/* a header never wraps: records are 8-aligned */
		const struct perf_event_header *h = (const void *)(data + (from & (size - 1)));
		if (h->size == 0)
			break;  /* never seen; a bad ring must not loop forever */
		from += h->size;
		n += from > written;
	}
	return n;
}

/* The position (as data_head counts) where the last record that ends at or before pos ends,
 * walking the ring's records from position from. */
static uint64_t whole_records_end(const char *data, uint64_t size, uint64_t from, uint64_t pos)
{
	while (from < pos) {
		const struct perf_event_header *h = (const void *)(data + (from & (size - 1)));
		if (h->size == 0 || from + h->size > pos)
			break;
		from += h->size;
	}
	return from;
}

/* Copies CPU i's new records into the file (docs/formats/kernel-records.md §3) as they lie
 * in the ring, whole records up to data_head: at most two writes (the ring's end, then its
 * start), not one per record, so that the drain's cost stays small beside a program that
 * switches 100 k times a second. */
static void drain(struct gt_kernel_rec *k, int i)
{
	struct perf_event_mmap_page *pg = k->ring[i];
	char *data = (char *)pg + pg->data_offset;
	uint64_t size = pg->data_size;
	uint64_t head = __atomic_load_n(&pg->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = pg->data_tail;  /* only we write it */
	for (uint64_t from = tail; tail < head;) {
		uint64_t off = tail & (size - 1);
		uint64_t len = head - tail < size - off ? head - tail : size - off;
		ssize_t w = k->store_err ? 0 : write(k->out, data + off, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			/* as store(): the first refusal stops the file after its last whole record
			 * (a write cut at RLIMIT_FSIZE may end inside one) */
			uint64_t whole = whole_records_end(data, size, from, tail);
			if (!k->store_err) {
				k->store_err = w < 0 ? errno : EIO;
				if (whole < tail &&
				    ftruncate(k->out, (off_t)(k->stored - (tail - whole))) == 0) {
					k->stored -= tail - whole;
					lseek(k->out, (off_t)k->stored, SEEK_SET);
				}
			}
			k->write_lost += records_not_stored(data, size, from, whole, head);
			break;
		}
		tail += (uint64_t)w;
		k->stored += (uint64_t)w;
	}
	__atomic_store_n(&pg->data_tail, head, __ATOMIC_RELEASE);
}

static void *drain_loop(void *arg)
{
	struct gt_kernel_rec *k = arg;
	struct pollfd *p = calloc((size_t)k->n + 1, sizeof *p);
	if (p == NULL)
		return NULL;  /* the final drain in gt_kernel_finish still runs */
	for (int i = 0; i < k->n; i++)
		p[i] = (struct pollfd){ .fd = k->fd[i], .events = POLLIN };
	p[k->n] = (struct pollfd){ .fd = k->stop[0], .events = POLLIN };
	for (;;) {
		int r = poll(p, (nfds_t)k->n + 1, DRAIN_MS);
		if (r < 0 && errno != EINTR)
			break;
		for (int i = 0; i < k->n; i++) {
			/* POLLHUP stays once the command's first thread exits, while its other
			 * threads and children go on writing: drop it from poll, drain on timeout */
			if (p[i].revents & (POLLHUP | POLLERR))
				p[i].fd = -1;
			drain(k, i);
		}
		if (p[k->n].revents)
			break;
	}
	free(p);
	struct timespec ts;
	if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0)
		k->drain_cpu_ns = (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
	return NULL;
}

static void close_events(struct gt_kernel_rec *k)
{
	for (int i = 0; i < k->n; i++) {
		if (k->ring[i] != NULL && k->ring[i] != MAP_FAILED)
			munmap(k->ring[i], k->map_bytes);
		close(k->fd[i]);
		if (k->fd_cpu != NULL && k->fd_cpu[i] >= 0)
			close(k->fd_cpu[i]);
		if (k->fd_off != NULL && k->fd_off[i] >= 0)
			close(k->fd_off[i]);
	}
	free(k->fd);
	free(k->fd_cpu);
	free(k->fd_off);
	free(k->events);
	k->fd_cpu = k->fd_off = NULL;
	k->events = NULL;
	free(k->ring);
	k->fd = NULL;
	k->ring = NULL;
}

/* Maps every event's ring, halving the size on EPERM (the user's locked-memory budget,
 * shared with their other perf users).  0, or the errno. */
static int map_rings(struct gt_kernel_rec *k, unsigned max_pages)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	for (unsigned pages = max_pages; pages >= DATA_PAGES_MIN; pages /= 2) {
		k->data_bytes = pages * page;
		k->map_bytes = (1 + pages) * page;
		int i, err = 0;
		for (i = 0; i < k->n; i++) {
			k->ring[i] = mmap(NULL, k->map_bytes, PROT_READ | PROT_WRITE, MAP_SHARED,
					  k->fd[i], 0);
			if (k->ring[i] == MAP_FAILED) {
				err = errno;
				break;
			}
		}
		if (i == k->n)
			return 0;
		k->ring[i] = NULL;  /* the one that failed */
		while (i-- > 0) {
			munmap(k->ring[i], k->map_bytes);
			k->ring[i] = NULL;
		}
		if (err != EPERM && err != ENOMEM)
			return err;
		if (pages == DATA_PAGES_MIN)
			return err;
	}
	return EPERM;
}

/* Opens one sampling event per CPU (hz 0: the off-CPU one) into *fds.  false after one
 * line saying why not: the run goes on without them. */
static bool open_samplers(struct gt_kernel_rec *k, pid_t pid, const int *cpus, unsigned hz,
			  int **fds)
{
	*fds = malloc(sizeof **fds * (size_t)k->n);
	if (*fds == NULL) {
		say_samples("no %s: out of memory", hz ? "CPU samples" : "off-CPU stacks");
		return false;
	}
	for (int i = 0; i < k->n; i++)
		(*fds)[i] = -1;
	for (int i = 0; i < k->n; i++) {
		if (((*fds)[i] = open_sampler(pid, cpus[i], hz, k->fd[i])) >= 0)
			continue;
		int err = errno, level = paranoid_level();
		if (!hz && (err == EACCES || err == EPERM))
			say_samples("off-CPU stacks unavailable at kernel.perf_event_paranoid=%d (need "
				    "<= 1, or CAP_PERFMON); enable: sudo sysctl -w "
				    "kernel.perf_event_paranoid=1", level);
		else
			say_samples("no %s: perf_event_open refused them: %s",
				    hz ? "CPU samples" : "off-CPU stacks", strerror(err));
		for (int j = 0; j < i; j++)
			close((*fds)[j]);
		free(*fds);
		*fds = NULL;
		return false;
	}
	return true;
}

/* The ids of every open event, for the file's header. */
static bool list_events(struct gt_kernel_rec *k, const int *cpus)
{
	k->events = calloc((size_t)k->n * 3, sizeof *k->events);
	if (k->events == NULL)
		return false;
	for (int i = 0; i < k->n; i++) {
		int fds[3] = { k->fd[i], k->fd_cpu ? k->fd_cpu[i] : -1, k->fd_off ? k->fd_off[i] : -1 };
		uint32_t kinds[3] = { GT_KERNEL_EV_SWITCH, GT_KERNEL_EV_CPU, GT_KERNEL_EV_OFFCPU };
		for (int e = 0; e < 3; e++) {
			uint64_t id;
			if (fds[e] < 0)
				continue;
			if (ioctl(fds[e], PERF_EVENT_IOC_ID, &id) != 0)
				return false;
			k->events[k->n_events++] = (struct gt_kernel_event){ id, kinds[e],
									    (uint32_t)cpus[i] };
		}
	}
	return true;
}

struct gt_kernel_rec *gt_kernel_start(pid_t pid, const char *dir,
				      const struct gt_kernel_options *opt)
{
	int *cpus = NULL;
	int n = online_cpus(&cpus);
	if (n <= 0) {
		free(cpus);
		say("cannot read the online CPUs");
		return NULL;
	}
	struct gt_kernel_rec *k = calloc(1, sizeof *k);
	if (k == NULL || (k->fd = calloc((size_t)n, sizeof *k->fd)) == NULL ||
	    (k->ring = calloc((size_t)n, sizeof *k->ring)) == NULL) {
		say("out of memory");
		goto fail_alloc;
	}
	k->out = k->stop[0] = k->stop[1] = -1;
	for (; k->n < n; k->n++) {
		if ((k->fd[k->n] = open_event(pid, cpus[k->n])) < 0) {
			say_refused(errno);
			goto fail;
		}
	}
	int err = map_rings(k, DATA_PAGES_FIRST);
	if (err == EPERM || err == ENOMEM) {
		say("locked-memory limit reached (perf_event_mlock_kb x CPUs + ulimit -l, shared "
		    "by the user's perf users); raise ulimit -l");
		goto fail;
	} else if (err != 0) {
		say("mmap of the perf buffers: %s", strerror(err));
		goto fail;
	}
#if !defined(__x86_64__) && !defined(__aarch64__)
	if (opt->sample_hz || opt->offcpu_stacks)
		say_samples("no CPU samples or off-CPU stacks: their registers are read for x86-64 "
			    "and aarch64 only");
	struct gt_kernel_options none = { 0 };
	opt = &none;
#endif
	bool cpu = opt->sample_hz && open_samplers(k, pid, cpus, opt->sample_hz, &k->fd_cpu);
	bool off = opt->offcpu_stacks && open_samplers(k, pid, cpus, 0, &k->fd_off);
	if (!list_events(k, cpus)) {
		say("cannot read the events' ids: %s", strerror(errno));
		goto fail;
	}
	snprintf(k->path, sizeof k->path, "%s/gotrace-%d%s", dir, (int)pid, GT_KERNEL_SUFFIX);
	k->out = open(k->path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
	if (k->out < 0) {
		say("cannot write %s: %s", k->path, strerror(errno));
		goto fail;
	}
	struct gt_kernel_header h = {
		.magic = GT_KERNEL_MAGIC,
		.version = GT_KERNEL_VERSION,
		.header_size = (uint32_t)(sizeof h + k->n_events * sizeof *k->events),
		.sample_type = GT_KERNEL_TRAILER_TYPE,
		.clockid = CLOCK_MONOTONIC,
		.n_cpus = (uint32_t)n,
		.buffer_bytes = (uint32_t)k->data_bytes,
		.pid = (uint32_t)pid,
		.launcher_lost = GT_KERNEL_UNFINISHED,
		.sample_sample_type = cpu || off ? GT_KERNEL_SAMPLES_TYPE : 0,
		.sample_regs_user = cpu || off ? GT_KERNEL_REGS_USER : 0,
		.sample_stack_user = cpu ? STACK_USER_BYTES : off ? STACK_OFFCPU_BYTES : 0,
		.sample_hz = cpu ? opt->sample_hz : 0,
		.n_events = k->n_events,
		.arch = GT_KERNEL_ARCH,
	};
	store(k, &h, sizeof h);
	store(k, k->events, k->n_events * sizeof *k->events);
	if (k->write_lost != 0 || pipe2(k->stop, O_CLOEXEC) != 0 ||
	    (errno = pthread_create(&k->thread, NULL, drain_loop, k)) != 0) {
		say("cannot start recording: %s", strerror(errno));
		goto fail;
	}
	free(cpus);
	return k;
fail:
	if (k->out >= 0) {
		close(k->out);
		unlink(k->path);
	}
	if (k->stop[0] >= 0) {
		close(k->stop[0]);
		close(k->stop[1]);
	}
	close_events(k);
fail_alloc:
	if (k != NULL) {
		free(k->fd);
		free(k->ring);
	}
	free(k);
	free(cpus);
	return NULL;
}

void gt_kernel_finish(struct gt_kernel_rec *k)
{
	char one = 1;
	while (write(k->stop[1], &one, 1) < 0 && errno == EINTR)
		;
	pthread_join(k->thread, NULL);
	for (int i = 0; i < k->n; i++)
		drain(k, i);
	uint64_t lost = k->write_lost, cpu = k->drain_cpu_ns;
	if (k->store_err)
		fprintf(stderr, "gotrace: kernel records stopped at %.1f MiB: %s; %" PRIu64
			" records after that were not stored\n", (double)k->stored / 1048576,
			k->store_err == EFBIG ? "the file size limit (RLIMIT_FSIZE) was reached"
					      : strerror(k->store_err), lost);
	if (pwrite(k->out, &cpu, sizeof cpu, offsetof(struct gt_kernel_header, launcher_cpu_ns)) !=
	    (ssize_t)sizeof cpu ||
	    pwrite(k->out, &lost, sizeof lost, offsetof(struct gt_kernel_header, launcher_lost)) !=
	    (ssize_t)sizeof lost)
		fprintf(stderr, "gotrace: %s: %s\n", k->path, strerror(errno));
	close(k->out);
	close(k->stop[0]);
	close(k->stop[1]);
	close_events(k);
	free(k);
}

void gt_kernel_print_summary(const char *path)
{
	struct gt_kernel_counts c;
	char err[PATH_MAX + 128], line[512];
	if (gt_kernel_read(path, NULL, NULL, &c, err, sizeof err) != 0) {
		fprintf(stderr, "gotrace: %s\n", err);
		return;
	}
	gt_kernel_describe(&c, line, sizeof line);
	fprintf(stderr, "gotrace: %s\n", line);
}
