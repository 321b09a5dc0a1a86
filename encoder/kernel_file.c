/* Reading the kernel scheduling file (kernel_file.h). */
#include "kernel_file.h"

#include "grow.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define TRAILER_TYPE (PERF_SAMPLE_IDENTIFIER | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_CPU)

/* { u32 pid, tid; u64 time; u32 cpu, res; u64 id } at the record's end */
struct trailer {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
	uint64_t id;
};

static void walk(const unsigned char *p, size_t len,
		 void (*fn)(uint32_t, uint16_t, const struct gt_kernel_id *, void *), void *ctx,
		 struct gt_kernel_counts *c)
{
	size_t off = 0;
	while (off < len) {
		struct perf_event_header h;
		if (len - off < sizeof h) {
			c->truncated = true;
			return;
		}
		memcpy(&h, p + off, sizeof h);
		if (h.size < sizeof h || h.size > len - off) {
			c->truncated = true;
			return;
		}
		c->records++;
		if (h.type == PERF_RECORD_LOST && h.size >= sizeof h + 16) {
			uint64_t lost;
			memcpy(&lost, p + off + sizeof h + 8, sizeof lost);
			c->lost += lost;
		} else if (h.type == PERF_RECORD_SWITCH) {
			c->switches++;
			if (h.misc & PERF_RECORD_MISC_SWITCH_OUT)
				c->switches_out++;
			if (h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT)
				c->preempted++;
		}
		if (fn != NULL && h.size >= sizeof h + sizeof(struct trailer)) {
			struct trailer t;
			memcpy(&t, p + off + h.size - sizeof t, sizeof t);
			struct gt_kernel_id id = { t.pid, t.tid, t.time, t.cpu };
			fn(h.type, h.misc, &id, ctx);
		}
		off += h.size;
	}
}

int gt_kernel_read(const char *path,
		   void (*fn)(uint32_t type, uint16_t misc, const struct gt_kernel_id *id, void *ctx),
		   void *ctx, struct gt_kernel_counts *c, char *err, size_t err_size)
{
	*c = (struct gt_kernel_counts){ 0 };
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0) {
		snprintf(err, err_size, "%s: %s", path, strerror(errno));
		if (fd >= 0)
			close(fd);
		return -1;
	}
	struct gt_kernel_header h;
	if ((size_t)st.st_size < sizeof h || pread(fd, &h, sizeof h, 0) != (ssize_t)sizeof h ||
	    memcmp(h.magic, GT_KERNEL_MAGIC, sizeof h.magic) != 0) {
		snprintf(err, err_size, "%s: not a gotrace kernel scheduling file", path);
		close(fd);
		return -1;
	}
	if (h.version != GT_KERNEL_VERSION || h.header_size < sizeof h ||
	    h.header_size > (uint64_t)st.st_size || h.sample_type != TRAILER_TYPE) {
		snprintf(err, err_size, "%s: kernel scheduling file version %u (sample type %#" PRIx64
			 "), this gotrace reads version %u", path, h.version, h.sample_type,
			 GT_KERNEL_VERSION);
		close(fd);
		return -1;
	}
	c->n_cpus = h.n_cpus;
	c->buffer_bytes = h.buffer_bytes;
	c->unfinished = h.launcher_lost == GT_KERNEL_UNFINISHED;
	c->launcher_lost = c->unfinished ? 0 : h.launcher_lost;
	size_t len = (size_t)st.st_size;
	if (len > h.header_size) {
		void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
		if (m == MAP_FAILED) {
			snprintf(err, err_size, "%s: %s", path, strerror(errno));
			close(fd);
			return -1;
		}
		walk((const unsigned char *)m + h.header_size, len - h.header_size, fn, ctx, c);
		munmap(m, len);
	}
	close(fd);
	return 0;
}

struct switch_list {
	struct gt_kernel_switch *v;
	size_t n, cap;
	bool failed;     /* out of memory */
};

static void collect_switch(uint32_t type, uint16_t misc, const struct gt_kernel_id *id, void *ctx)
{
	struct switch_list *l = ctx;
	uint8_t what;
	if (type == PERF_RECORD_EXIT)
		what = GT_KSW_EXIT;
	else if (type != PERF_RECORD_SWITCH)
		return;
	else if (!(misc & PERF_RECORD_MISC_SWITCH_OUT))
		what = GT_KSW_IN;
	else
		what = misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT ? GT_KSW_PREEMPTED : GT_KSW_OUT;
	if (l->failed || !gt_grow(&l->v, &l->cap, l->n + 1, sizeof *l->v)) {
		l->failed = true;
		return;
	}
	l->v[l->n] = (struct gt_kernel_switch){id->time, id->tid, id->cpu, (uint32_t)l->n, what};
	l->n++;
}

static int by_time(const void *a, const void *b)
{
	const struct gt_kernel_switch *x = a, *y = b;
	if (x->time != y->time)
		return x->time < y->time ? -1 : 1;
	return x->order < y->order ? -1 : x->order > y->order;
}

int gt_kernel_switches(const char *path, struct gt_kernel_switch **out, size_t *n,
		       struct gt_kernel_counts *c, char *err, size_t err_size)
{
	struct switch_list l = { 0 };
	*out = NULL;
	*n = 0;
	if (gt_kernel_read(path, collect_switch, &l, c, err, err_size) != 0 || l.failed) {
		if (l.failed)
			snprintf(err, err_size, "%s: out of memory", path);
		free(l.v);
		return -1;
	}
	qsort(l.v, l.n, sizeof *l.v, by_time);
	*out = l.v;
	*n = l.n;
	return 0;
}

void gt_kernel_describe(const struct gt_kernel_counts *c, char *buf, size_t size)
{
	int n = snprintf(buf, size, "kernel: %" PRIu64 " context switches recorded (%" PRIu64
			 " preempted), %" PRIu64 " lost", c->switches, c->preempted,
			 c->lost + c->launcher_lost);
	if (n > 0 && (size_t)n < size && c->lost > 0)
		n += snprintf(buf + n, size - (size_t)n, " (buffers %u KiB per CPU were full)",
			      c->buffer_bytes >> 10);
	if (n > 0 && (size_t)n < size && (c->unfinished || c->truncated))
		snprintf(buf + n, size - (size_t)n, "; the file was not finished: it ends early");
}
