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

int gt_snapshot_write(const char *output, unsigned n, const char *const *captures, size_t n_captures,
		      const char *tmp_beside)
{
	char dir[PATH_MAX], name[PATH_MAX];
	int rc = -1;
	if (snprintf(dir, sizeof dir, "%s.snapshot-XXXXXX", tmp_beside) >= (int)sizeof dir ||
	    snprintf(name, sizeof name, "%s.snapshot-%u", output, n) >= (int)sizeof name) {
		fail("snapshot %u: name too long", n);
		return -1;
	}
	if (!mkdtemp(dir)) {
		fail("snapshot %u: cannot create %s: %s", n, dir, strerror(errno));
		return -1;
	}
	char **copies = calloc(n_captures ? n_captures : 1, sizeof *copies);
	size_t done = 0;
	for (size_t i = 0; copies && i < n_captures; i++) {
		const char *base = strrchr(captures[i], '/');
		char path[PATH_MAX + NAME_MAX + 2];
		snprintf(path, sizeof path, "%s/%s", dir, base ? base + 1 : captures[i]);
		if (gt_snapshot_copy(captures[i], path) == 0)
			copies[done++] = strdup(path);
		else if (errno != ENOENT) /* a process that ended meanwhile took its capture along */
			fail("snapshot %u: cannot copy %s: %s", n, captures[i], strerror(errno));
	}
	if (!done) {
		fail("snapshot %u: no capture to copy", n);
	} else {
		struct gt_convert_options copt = { 0 };
		rc = gt_one_trace("run", name, (const char *const *)copies, done, &copt, GT_SUMMARY_RUN) < 0 ? -1 : 0;
	}
	for (size_t i = 0; i < done; i++) {
		unlink(copies[i]);
		free(copies[i]);
	}
	free(copies);
	rmdir(dir);
	return rc;
}
