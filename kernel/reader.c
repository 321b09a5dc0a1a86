/* reader: reading the kernel scheduling file (reader.h). */
#include "reader.h"

#include "common/grow.h"
#include "samples.h"

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

/* GT_KERNEL_TRAILER_TYPE's fields, at the record's end */
struct trailer {
	uint32_t pid, tid;
	uint64_t time;
	uint32_t cpu, res;
	uint64_t id;
};

/* The trailer of a record (not a sample) of size bytes at offset off, p: false when it has
 * none. */
static bool id_of(const unsigned char *p, size_t size, size_t off, struct gt_kernel_id *id)
{
	if (size < sizeof(struct perf_event_header) + sizeof(struct trailer))
		return false;
	struct trailer t;
	memcpy(&t, p + size - sizeof t, sizeof t);
	*id = (struct gt_kernel_id){t.pid, t.tid, t.time, t.cpu, off};
	return true;
}

bool gt_kernel_record_at(const struct gt_kernel_file *f, size_t off, struct perf_event_header *h,
			 struct gt_kernel_id *id, bool *has_id)
{
	if (off > f->records_len || f->records_len - off < sizeof *h)
		return false;
	memcpy(h, f->records + off, sizeof *h);
	if (h->size < sizeof *h || h->size > f->records_len - off)
		return false;
	*has_id = h->type != PERF_RECORD_SAMPLE && id_of(f->records + off, h->size, off, id);
	return true;
}

/* A walk gives back the pages it has read, every so many bytes: a reader keeps its file
 * mapped (CPU samples are read by offset later), and a file of millions of records would
 * otherwise stay resident through the conversion. */
#define DROP_BEHIND_BYTES (8u << 20)

void gt_kernel_give_back(const struct gt_kernel_file *f, size_t from, size_t to)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t a = ((uintptr_t)(f->records + from) + page - 1) & ~(page - 1);
	uintptr_t b = (uintptr_t)(f->records + to) & ~(page - 1);
	if (b > a)
		madvise((void *)a, b - a, MADV_DONTNEED);
}

void gt_kernel_walk(const struct gt_kernel_file *f,
		    void (*fn)(uint32_t, uint16_t, const struct gt_kernel_id *, void *),
		    void (*sample)(uint64_t, uint64_t, uint32_t, void *), void *ctx,
		    struct gt_kernel_counts *c)
{
	const unsigned char *p = f->records;
	size_t len = f->records_len, off = 0;
	c->n_cpus = f->h.n_cpus;
	c->buffer_bytes = f->h.buffer_bytes;
	c->sample_hz = f->h.sample_hz;
	c->unfinished = f->h.launcher_lost == GT_KERNEL_UNFINISHED;
	c->launcher_lost = c->unfinished ? 0 : f->h.launcher_lost;
	c->launcher_cpu_ns = f->h.launcher_cpu_ns;
	c->bytes = f->map_len;
	size_t given_back = 0;
	while (off < len) {
		if (off - given_back >= DROP_BEHIND_BYTES) {
			gt_kernel_give_back(f, given_back, off);
			given_back = off;
		}
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
		if (h.type == PERF_RECORD_SAMPLE) {
			/* no sample_id trailer: a sample is its own layout */
			struct gt_kernel_sample smp;
			if (gt_kernel_sample_parse(f, p + off, h.size, &smp)) {
				c->samples_cpu += smp.kind == GT_KERNEL_EV_CPU;
				c->samples_offcpu += smp.kind == GT_KERNEL_EV_OFFCPU;
				if (sample != NULL)
					sample(off, smp.time, smp.kind, ctx);
			}
			off += h.size;
			continue;
		}
		if (h.type == PERF_RECORD_LOST && h.size >= sizeof h + 16) {
			uint64_t lost;
			memcpy(&lost, p + off + sizeof h + 8, sizeof lost);
			c->lost += lost;
		} else if (h.type == PERF_RECORD_THROTTLE) {
			c->throttled++;
		} else if (h.type == PERF_RECORD_SWITCH) {
			c->switches++;
			if (h.misc & PERF_RECORD_MISC_SWITCH_OUT)
				c->switches_out++;
			if (h.misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT)
				c->preempted++;
		}
		struct gt_kernel_id id;
		if (fn != NULL && id_of(p + off, h.size, off, &id))
			fn(h.type, h.misc, &id, ctx);
		off += h.size;
	}
}

int gt_kernel_open(const char *path, struct gt_kernel_file *f, char *err, size_t err_size)
{
	*f = (struct gt_kernel_file){ 0 };
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
	    h.header_size > (uint64_t)st.st_size || h.sample_type != GT_KERNEL_TRAILER_TYPE ||
	    (uint64_t)h.n_events * sizeof *f->events > h.header_size - sizeof h ||
	    (h.sample_sample_type != 0 && h.sample_sample_type != GT_KERNEL_SAMPLES_TYPE)) {
		snprintf(err, err_size, "%s: kernel scheduling file version %u (sample type %#" PRIx64
			 "), this gotrace reads version %u", path, h.version, h.sample_type,
			 GT_KERNEL_VERSION);
		close(fd);
		return -1;
	}
	f->h = h;
	f->map_len = (size_t)st.st_size;
	f->map = mmap(NULL, f->map_len, PROT_READ, MAP_PRIVATE, fd, 0);
	close(fd);
	if (f->map == MAP_FAILED) {
		snprintf(err, err_size, "%s: %s", path, strerror(errno));
		f->map = NULL;
		return -1;
	}
	f->events = (const struct gt_kernel_event *)((const unsigned char *)f->map + sizeof h);
	f->records = (const unsigned char *)f->map + h.header_size;
	f->records_len = f->map_len - h.header_size;
	return 0;
}

struct switch_list {
	struct gt_kernel_switch *v;
	size_t n, cap;
	bool failed;     /* out of memory */
};

bool gt_kernel_switch_of(uint32_t type, uint16_t misc, const struct gt_kernel_id *id,
			 struct gt_kernel_switch *out)
{
	uint8_t what;
	if (type == PERF_RECORD_EXIT)
		what = GT_KSW_EXIT;
	else if (type != PERF_RECORD_SWITCH)
		return false;
	else if (!(misc & PERF_RECORD_MISC_SWITCH_OUT))
		what = GT_KSW_IN;
	else
		what = misc & PERF_RECORD_MISC_SWITCH_OUT_PREEMPT ? GT_KSW_PREEMPTED : GT_KSW_OUT;
	*out = (struct gt_kernel_switch){id->time, id->time, id->tid, id->cpu, 0, what};
	return true;
}

static void collect_switch(uint32_t type, uint16_t misc, const struct gt_kernel_id *id, void *ctx)
{
	struct switch_list *l = ctx;
	struct gt_kernel_switch s;
	if (!gt_kernel_switch_of(type, misc, id, &s))
		return;
	if (l->failed || !gt_grow(&l->v, &l->cap, l->n + 1, sizeof *l->v)) {
		l->failed = true;
		return;
	}
	s.order = (uint32_t)l->n;
	l->v[l->n++] = s;
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
	if (l.n)   /* none: l.v is NULL, which qsort may not be given */
		qsort(l.v, l.n, sizeof *l.v, by_time);
	*out = l.v;
	*n = l.n;
	return 0;
}

void gt_kernel_close(struct gt_kernel_file *f)
{
	if (f->map != NULL)
		munmap(f->map, f->map_len);
	f->map = NULL;
}

int gt_kernel_read(const char *path,
		   void (*fn)(uint32_t type, uint16_t misc, const struct gt_kernel_id *id, void *ctx),
		   void *ctx, struct gt_kernel_counts *c, char *err, size_t err_size)
{
	*c = (struct gt_kernel_counts){ 0 };
	struct gt_kernel_file f;
	if (gt_kernel_open(path, &f, err, err_size) != 0)
		return -1;
	gt_kernel_walk(&f, fn, NULL, ctx, c);
	gt_kernel_close(&f);
	return 0;
}

struct index_build {
	const struct gt_kernel_file *f;
	uint32_t kind;
	struct gt_kernel_index *ix;
	size_t cap;
	bool failed;
};

static void index_add(struct index_build *b, struct gt_kernel_at at)
{
	if (!gt_grow(&b->ix->v, &b->cap, b->ix->n + 1, sizeof *b->ix->v)) {
		b->failed = true;
		return;
	}
	b->ix->v[b->ix->n++] = at;
}

static void index_switch(uint32_t type, uint16_t misc, const struct gt_kernel_id *id, void *ctx)
{
	struct index_build *b = ctx;
	if (b->kind == GT_KERNEL_EV_SWITCH && type == PERF_RECORD_SWITCH &&
	    (misc & PERF_RECORD_MISC_SWITCH_OUT))
		index_add(b, (struct gt_kernel_at){ id->pid, id->tid, id->time, 0, misc });
}

static void index_sample(uint64_t offset, uint64_t time, uint32_t kind, void *ctx)
{
	struct index_build *b = ctx;
	struct gt_kernel_sample s;
	if (kind == b->kind && gt_kernel_sample_at(b->f, offset, &s))
		index_add(b, (struct gt_kernel_at){ s.pid, s.tid, time, offset, 0 });
}

static int by_thread_time(const void *a, const void *b)
{
	const struct gt_kernel_at *x = a, *y = b;
	if (x->pid != y->pid)
		return x->pid < y->pid ? -1 : 1;
	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	return (x->time > y->time) - (x->time < y->time);
}

bool gt_kernel_index_build(const struct gt_kernel_file *f, uint32_t kind,
			   struct gt_kernel_index *ix)
{
	*ix = (struct gt_kernel_index){ 0 };
	struct index_build b = { .f = f, .kind = kind, .ix = ix };
	struct gt_kernel_counts c = { 0 };
	gt_kernel_walk(f, index_switch, index_sample, &b, &c);
	if (b.failed) {
		gt_kernel_index_free(ix);
		return false;
	}
	if (ix->n > 1)
		qsort(ix->v, ix->n, sizeof *ix->v, by_thread_time);
	return true;
}

const struct gt_kernel_at *gt_kernel_index_find(const struct gt_kernel_index *ix, uint32_t pid,
						uint32_t tid, uint64_t time, uint64_t slack_ns)
{
	/* the first entry at or after (pid, tid, time), then its neighbour before it */
	struct gt_kernel_at key = { pid, tid, time, 0, 0 };
	size_t lo = 0, hi = ix->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (by_thread_time(&ix->v[mid], &key) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	const struct gt_kernel_at *best = NULL;
	uint64_t best_d = slack_ns + 1;
	for (size_t i = lo > 0 ? lo - 1 : 0; i < ix->n && i <= lo; i++) {
		const struct gt_kernel_at *a = &ix->v[i];
		uint64_t d = a->time > time ? a->time - time : time - a->time;
		if (a->pid == pid && a->tid == tid && d < best_d) {
			best = a;
			best_d = d;
		}
	}
	return best;
}

void gt_kernel_index_free(struct gt_kernel_index *ix)
{
	free(ix->v);
	*ix = (struct gt_kernel_index){ 0 };
}

void gt_kernel_describe(const struct gt_kernel_counts *c, char *buf, size_t size)
{
	int n = snprintf(buf, size, "kernel: %" PRIu64 " context switches recorded (%" PRIu64
			 " preempted), %" PRIu64 " lost", c->switches, c->preempted,
			 c->lost + c->launcher_lost);
	if (n > 0 && (size_t)n < size && c->lost > 0)
		n += snprintf(buf + n, size - (size_t)n, " (buffers %u KiB per CPU were full)",
			      c->buffer_bytes >> 10);
	if (n > 0 && (size_t)n < size && (c->sample_hz || c->samples_cpu))
		n += snprintf(buf + n, size - (size_t)n, "; %" PRIu64 " CPU samples at %u Hz",
			      c->samples_cpu, c->sample_hz);
	if (n > 0 && (size_t)n < size && c->samples_offcpu)
		n += snprintf(buf + n, size - (size_t)n, "; %" PRIu64 " off-CPU stacks",
			      c->samples_offcpu);
	if (n > 0 && (size_t)n < size && c->throttled)
		n += snprintf(buf + n, size - (size_t)n, "; sampling throttled %" PRIu64 " times",
			      c->throttled);
	if (n > 0 && (size_t)n < size && c->launcher_cpu_ns)
		n += snprintf(buf + n, size - (size_t)n, "; %" PRIu64 " records, %" PRIu64 " KiB, "
			      "drained in %.1f ms of CPU", c->records, c->bytes >> 10,
			      (double)c->launcher_cpu_ns / 1e6);
	if (n > 0 && (size_t)n < size && (c->unfinished || c->truncated))
		snprintf(buf + n, size - (size_t)n, "; the file was not finished: it ends early");
}
