/* snapshot: see snapshot.h. */
#include "snapshot.h"
#include "cli_common.h"
#include "one_trace.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gotrace/capture.h>

#define fail(...) gt_cli_fail("run", __VA_ARGS__)

static int copy_chunks(int in, int out, const struct gt_file_header *h, uint64_t from, uint64_t to,
		       uint32_t want_magic, void *buf)
{
	for (uint64_t k = from; k < to; k++) {
		off_t off = (off_t)(h->header_size + k * (uint64_t)h->chunk_size);
		struct gt_chunk_header before, after;
		if (pread(in, &before, sizeof before, off) != (ssize_t)sizeof before)
			break; /* the file ends here */
		if (before.magic != want_magic)
			continue;
		ssize_t got = pread(in, buf, h->chunk_size, off);
		if (got < (ssize_t)sizeof before || pread(in, &after, sizeof after, off) != (ssize_t)sizeof after)
			continue;
		/* reused meanwhile: what the copy holds of it may be of either use */
		if (after.magic != before.magic || after.seq != before.seq)
			continue;
		memcpy(buf, &before, sizeof before); /* its used as it was before the bytes */
		if (pwrite(out, buf, (size_t)got, off) != got)
			return -1;
	}
	return 0;
}

int gt_snapshot_copy(const char *src, const char *dst)
{
	int in = open(src, O_RDONLY | O_CLOEXEC), out = -1, rc = -1, saved;
	struct gt_file_header h;
	void *buf = NULL;
	if (in < 0)
		return -1;
	if (pread(in, &h, sizeof h, 0) != (ssize_t)sizeof h || memcmp(h.magic, GT_CAPTURE_MAGIC, 8) ||
	    h.chunk_size < 4096 || h.chunk_size > (1u << 30) || h.header_size < sizeof h) {
		errno = EINVAL;
		goto out;
	}
	out = open(dst, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	buf = malloc(h.chunk_size);
	if (out < 0 || !buf)
		goto out;
	uint64_t n = h.n_chunks;
	if (copy_chunks(in, out, &h, 0, n, GT_CHUNK_MAGIC, buf) < 0)
		goto out;
	/* the header after the CPU chunks: a chunk reused meanwhile raised ring_lost_tsc before
	 * its records were carried, and the keep chunks copied after this hold them */
	if (pread(in, &h, sizeof h, 0) != (ssize_t)sizeof h)
		goto out;
	if (copy_chunks(in, out, &h, 0, h.n_chunks, GT_KEEP_MAGIC, buf) < 0 ||
	    pwrite(out, &h, sizeof h, 0) != (ssize_t)sizeof h ||
	    ftruncate(out, (off_t)(h.header_size + h.n_chunks * (uint64_t)h.chunk_size)) < 0)
		goto out;
	rc = 0;
out:
	saved = errno;
	free(buf);
	close(in);
	if (out >= 0 && close(out) < 0 && !rc)
		rc = -1, saved = errno;
	errno = saved;
	return rc;
}

int gt_snapshot_begin(struct gt_snapshot *s, const char *label, const char *tmp_beside)
{
	*s = (struct gt_snapshot){ 0 };
	snprintf(s->label, sizeof s->label, "%s", label);
	if (snprintf(s->dir, sizeof s->dir, "%s.snapshot-XXXXXX", tmp_beside) >= (int)sizeof s->dir) {
		fail("%s: name too long", s->label);
		return -1;
	}
	if (!mkdtemp(s->dir)) {
		fail("%s: cannot create %s: %s", s->label, s->dir, strerror(errno));
		s->dir[0] = '\0';
		return -1;
	}
	return 0;
}

const char *gt_snapshot_add(struct gt_snapshot *s, const char *capture)
{
	const char *base = strrchr(capture, '/');
	char path[PATH_MAX + NAME_MAX + 2];
	snprintf(path, sizeof path, "%s/%s", s->dir, base ? base + 1 : capture);
	char **v = realloc(s->copies, (s->n + 1) * sizeof *v);
	if (!v)
		return NULL;
	s->copies = v;
	if (gt_snapshot_copy(capture, path) != 0) {
		if (errno != ENOENT) /* a process that ended meanwhile took its capture along */
			fail("%s: cannot copy %s: %s", s->label, capture, strerror(errno));
		return NULL;
	}
	if (!(v[s->n] = strdup(path))) {
		unlink(path);
		return NULL;
	}
	return v[s->n++];
}

int gt_snapshot_convert(const struct gt_snapshot *s, const char *name, enum gt_trace_format format,
			enum gt_one_trace_style style)
{
	if (!s->n) {
		fail("%s: no capture to copy", s->label);
		return -1;
	}
	struct gt_convert_options copt = { .format = format };
	return gt_one_trace("run", name, (const char *const *)s->copies, s->n, &copt, style) < 0 ? -1 : 0;
}

void gt_snapshot_end(struct gt_snapshot *s)
{
	for (size_t i = 0; i < s->n; i++) {
		unlink(s->copies[i]);
		free(s->copies[i]);
	}
	free(s->copies);
	if (s->dir[0])
		rmdir(s->dir);
	*s = (struct gt_snapshot){ 0 };
}

int gt_snapshot_write(const char *output, enum gt_trace_format format, unsigned n,
		      const char *const *captures, size_t n_captures, const char *tmp_beside)
{
	char name[PATH_MAX], label[32];
	struct gt_snapshot s;
	snprintf(label, sizeof label, "snapshot %u", n);
	if (snprintf(name, sizeof name, "%s.snapshot-%u", output, n) >= (int)sizeof name) {
		fail("%s: name too long", label);
		return -1;
	}
	if (gt_snapshot_begin(&s, label, tmp_beside) != 0)
		return -1;
	for (size_t i = 0; i < n_captures; i++)
		gt_snapshot_add(&s, captures[i]);
	int rc = gt_snapshot_convert(&s, name, format, GT_SUMMARY_RUN);
	gt_snapshot_end(&s);
	return rc;
}
