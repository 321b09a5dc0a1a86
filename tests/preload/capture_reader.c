#include "capture_reader.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

const char *capture_type_name(int type)
{
	return gt_fact_name((unsigned)type);
}

static int by_tsc(const void *a, const void *b)
{
	const struct cap_rec *x = a, *y = b;
	if (x->h->tsc != y->h->tsc)
		return x->h->tsc < y->h->tsc ? -1 : 1;
	return x->h < y->h ? -1 : (x->h > y->h);
}

/* Per thread serial, grown on demand: the chunk (its index + 1) and time of its latest record
 * there (a compact record's near, capture.h version 3), and its open waits' obj and nr. */
struct thread_state {
	uint64_t near_chunk, near, block_obj, call_nr;
	bool block, call, blocked; /* blocked: block_obj is its last block's, ended or not */
};

static struct thread_state *thread_state(struct thread_state **v, size_t *n, uint32_t serial)
{
	if (serial >= *n) {
		size_t m = serial + 64;
		*v = realloc(*v, m * sizeof **v);
		memset(*v + *n, 0, (m - *n) * sizeof **v);
		*n = m;
	}
	return &(*v)[serial];
}

int capture_open(struct capture *c, const char *path)
{
	struct thread_state *ts = NULL;
	size_t n_ts = 0;
	uint8_t *opens = NULL; /* per compact record: gt_compact_open */
	memset(c, 0, sizeof *c);
	int fd = open(path, O_RDONLY);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) < 0 || (size_t)st.st_size < GT_FILE_HEADER_SIZE) {
		fprintf(stderr, "capture_open: %s: cannot read\n", path);
		if (fd >= 0)
			close(fd);
		return -1;
	}
	c->size = (size_t)st.st_size;
	c->map = mmap(NULL, c->size, PROT_READ, MAP_SHARED, fd, 0);
	close(fd);
	if (c->map == MAP_FAILED)
		return -1;
	c->hdr = c->map;
	if (memcmp(c->hdr->magic, GT_CAPTURE_MAGIC, 8) || c->hdr->version != GT_CAPTURE_VERSION) {
		fprintf(stderr, "capture_open: %s: not a capture\n", path);
		return -1;
	}
	size_t cap = 1024, cap_exp = 0;
	c->recs = malloc(cap * sizeof *c->recs);
	uint64_t cs = c->hdr->chunk_size;
	for (uint64_t k = 0; k < c->hdr->n_chunks; k++) {
		size_t base = GT_FILE_HEADER_SIZE + k * cs;
		if (base + GT_CHUNK_HEADER_SIZE > c->size)
			break;
		const char *ch = (const char *)c->map + base;
		const struct gt_chunk_header *h = (const void *)ch;
		if (h->magic != GT_CHUNK_MAGIC)
			continue;
		uint64_t used = h->used < cs ? h->used : cs;
		if (used > c->size - base) /* a last chunk of one page (after a write failure) */
			used = c->size - base;
		uint64_t off = GT_CHUNK_HEADER_SIZE;
		while (off + 8 <= used) {
			const struct gt_rec *r = (const void *)(ch + off);
			if (r->type == 0) {
				off += 8;
				continue;
			}
			if (r->type & GT_COMPACT_BIT) {
				uint32_t len = gt_compact_words(*(const uint64_t *)r) * 8;
				if (off + len > used) {
					c->bad_bytes += 8;
					off += 8;
					continue;
				}
				if (c->compact == cap_exp)
					c->expanded = realloc(c->expanded, (cap_exp = 2 * cap_exp + 64) * 5 * 8);
				uint64_t *e = c->expanded + 5 * c->compact;
				gt_compact_expand((const uint64_t *)r, h->first_tsc, e);
				struct thread_state *t = thread_state(&ts, &n_ts, (uint32_t)(e[0] >> 32));
				e[1] = gt_compact_tsc(*(const uint64_t *)r, h->first_tsc,
						      t->near_chunk == k + 1 ? t->near : 0);
				if (c->compact % 64 == 0)
					opens = realloc(opens, c->compact + 64);
				opens[c->compact] = (uint8_t)gt_compact_open(*(const uint64_t *)r);
				if (t->near_chunk != k + 1 || e[1] > t->near)
					t->near_chunk = k + 1, t->near = e[1];
				c->compact_bytes += len;
				if (c->n == cap)
					c->recs = realloc(c->recs, (cap *= 2) * sizeof *c->recs);
				/* its expansion's index, a pointer once the expansions stop moving */
				c->recs[c->n++] = (struct cap_rec){NULL, (void *)(uintptr_t)c->compact++, h->cpu};
				off += len;
				continue;
			}
			/* Strict as the encoder's reader: known type, its payload at least the
			 * table's minimum, inside the chunk. */
			if (gt_fact_min_payload(r->type) < 0 || r->nwords < 2 ||
			    (r->nwords - 2) * 8 < gt_fact_min_payload(r->type) ||
			    off + r->nwords * 8u > used ||
			    (r->type == GT_PROCESS_NAME &&
			     ((const struct gt_p_process_name *)(r + 1))->cmdline_len >
				     (r->nwords - 2) * 8u - sizeof(struct gt_p_process_name))) {
				c->bad_bytes += 8;
				off += 8;
				continue;
			}
			if (c->n == cap)
				c->recs = realloc(c->recs, (cap *= 2) * sizeof *c->recs);
			c->recs[c->n++] = (struct cap_rec){r, r + 1, h->cpu};
			off += r->nwords * 8u;
			struct thread_state *t = thread_state(&ts, &n_ts, r->thread);
			if (t->near_chunk != k + 1 || r->tsc > t->near)
				t->near_chunk = k + 1, t->near = r->tsc;
		}
	}
	for (size_t i = 0; i < c->n; i++)
		if (!c->recs[i].h) {
			c->recs[i].h = (const struct gt_rec *)(c->expanded + 5 * (uintptr_t)c->recs[i].payload);
			c->recs[i].payload = c->recs[i].h + 1;
		}
	qsort(c->recs, c->n, sizeof *c->recs, by_tsc);
	/* one-word ends: the obj or nr of the wait their thread's last begin opened; begins by
	 * descriptor: the key of its last FD record */
	struct { int32_t fd; uint64_t obj; } *fds = NULL;
	size_t n_fds = 0;
	for (size_t i = 0; i < c->n; i++) {
		const struct gt_rec *r = c->recs[i].h;
		struct thread_state *t = thread_state(&ts, &n_ts, r->thread);
		uint64_t *p = (uint64_t *)(uintptr_t)(r + 1);
		bool expanded = (const uint64_t *)r >= c->expanded &&
				(const uint64_t *)r < c->expanded + 5 * c->compact;
		unsigned open = expanded ? opens[((const uint64_t *)r - c->expanded) / 5] : 0;
		if (r->type == GT_FD) {
			size_t j = 0;
			while (j < n_fds && fds[j].fd != (int32_t)p[0])
				j++;
			if (j == n_fds)
				fds = realloc(fds, ++n_fds * sizeof *fds);
			fds[j].fd = (int32_t)p[0], fds[j].obj = p[1];
		}
		if (open == GT_SYSCALL_BEGIN)
			for (size_t j = 0; j < n_fds; j++)
				if (fds[j].fd == (int32_t)p[1])
					p[2] = fds[j].obj;
		if (open == GT_WAKE && t->blocked)
			p[0] = t->block_obj;
		if (r->type == GT_BLOCK_BEGIN)
			t->block = t->blocked = true, t->block_obj = p[0];
		else if (r->type == GT_SYSCALL_BEGIN)
			t->call = true, t->call_nr = (uint32_t)p[0];
		else if (open == GT_BLOCK_END && t->block)
			p[0] = t->block_obj;
		else if (open == GT_SYSCALL_END && t->call)
			p[0] |= t->call_nr;
		if (r->type == GT_BLOCK_END)
			t->block = false;
		else if (r->type == GT_SYSCALL_END)
			t->call = false;
	}
	free(ts);
	free(opens);
	free(fds);
	return 0;
}

void capture_close(struct capture *c)
{
	if (c->map && c->map != MAP_FAILED)
		munmap(c->map, c->size);
	free(c->recs);
	free(c->expanded);
	memset(c, 0, sizeof *c);
}

size_t capture_count_thread(const struct capture *c, int type, int aux, uint32_t thread)
{
	size_t n = 0;
	for (size_t i = 0; i < c->n; i++)
		if (c->recs[i].h->type == type && (aux < 0 || c->recs[i].h->aux == aux) &&
		    (thread == UINT32_MAX || c->recs[i].h->thread == thread))
			n++;
	return n;
}

size_t capture_count(const struct capture *c, int type, int aux)
{
	return capture_count_thread(c, type, aux, UINT32_MAX);
}

const struct cap_rec *capture_find(const struct capture *c, int type, int aux, size_t idx)
{
	for (size_t i = 0; i < c->n; i++)
		if (c->recs[i].h->type == type && (aux < 0 || c->recs[i].h->aux == aux) && idx-- == 0)
			return &c->recs[i];
	return NULL;
}

/* A GT_PROCESS_NAME's payload, its command line into line with spaces between arguments. */
static const struct gt_p_process_name *process_name_at(const struct cap_rec *r, char *line,
						       size_t cap)
{
	const struct gt_p_process_name *n = r->payload;
	size_t len = n->cmdline_len < cap - 1 ? n->cmdline_len : cap - 1;
	memcpy(line, n + 1, len);
	while (len > 0 && line[len - 1] == '\0')
		len--;
	for (size_t k = 0; k < len; k++)
		if (line[k] == '\0')
			line[k] = ' ';
	line[len] = '\0';
	return n;
}

const struct gt_p_process_name *capture_process_name(const struct capture *c, char *cmdline,
						     size_t cap)
{
	for (size_t i = c->n; i-- > 0;)
		if (c->recs[i].h->type == GT_PROCESS_NAME)
			return process_name_at(&c->recs[i], cmdline, cap);
	return NULL;
}

void capture_dump(const struct capture *c, void *file)
{
	FILE *f = file;
	fprintf(f, "pid %u ppid %u cpus %u clock %u hz %llu chunks %llu flags %#x stack_mode %u exe %s\n",
		c->hdr->pid, c->hdr->ppid, c->hdr->n_cpus, c->hdr->clock_source,
		(unsigned long long)c->hdr->tsc_hz, (unsigned long long)c->hdr->n_chunks, c->hdr->flags,
		c->hdr->stack_mode, c->hdr->exe_path);
	for (size_t i = 0; i < c->n; i++) {
		const struct gt_rec *r = c->recs[i].h;
		const uint64_t *p = c->recs[i].payload;
		fprintf(f, "%llu cpu=%u t=%u %s aux=%u", (unsigned long long)r->tsc, c->recs[i].cpu,
			r->thread, capture_type_name(r->type), r->aux);
		if (r->type == GT_PROCESS_NAME) {
			char line[GT_CMDLINE_MAX + 1];
			const struct gt_p_process_name *n = process_name_at(&c->recs[i], line, sizeof line);
			fprintf(f, " comm=%.16s cmdline=%s", n->comm, line);
		} else if (r->type == GT_THREAD_NAME || r->type == GT_MODULE) {
			if (r->type == GT_THREAD_NAME)
				fprintf(f, " name=%.16s", (const char *)p);
			else {
				const struct gt_p_module *m = (const void *)p;
				fprintf(f, " base=%#llx flags=%u path=%.*s", (unsigned long long)m->base, m->flags,
					m->path_len, (const char *)(m + 1) + m->build_id_len);
			}
		} else {
			for (unsigned w = 0; w + 2 < r->nwords && w < 4; w++)
				fprintf(f, " %#llx", (unsigned long long)p[w]);
		}
		fputc('\n', f);
	}
}

int capture_find_file(const char *dir, unsigned pid, char *out, size_t cap)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	int found = -1;
	if (!d)
		return -1;
	while ((e = readdir(d))) {
		if (strncmp(e->d_name, "gotrace-", 8) || !strstr(e->d_name, ".gtcap"))
			continue;
		if (pid) {
			char want[32];
			snprintf(want, sizeof want, "gotrace-%u.gtcap", pid);
			char want2[32];
			snprintf(want2, sizeof want2, "gotrace-%u-", pid);
			if (strcmp(e->d_name, want) && strncmp(e->d_name, want2, strlen(want2)))
				continue;
		}
		snprintf(out, cap, "%s/%s", dir, e->d_name);
		found = 0;
		break;
	}
	closedir(d);
	return found;
}
