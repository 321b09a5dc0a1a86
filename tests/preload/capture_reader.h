/* A minimal reader of gotrace captures for the preload tests: every committed record of
 * every chunk, sorted by timestamp.  (The encoder has the tolerant, complete reader.) */
#ifndef GT_TEST_CAPTURE_READER_H
#define GT_TEST_CAPTURE_READER_H

#include <stddef.h>
#include <stdint.h>

#include "gotrace/capture.h"

struct cap_rec {
	const struct gt_rec *h;   /* points into the mapping (a compact record: its expansion) */
	const void *payload;      /* right after the header */
	unsigned cpu;             /* the chunk's CPU */
};

struct capture {
	void *map;
	size_t size;
	const struct gt_file_header *hdr;
	struct cap_rec *recs;
	size_t n;
	size_t bad_bytes;         /* bytes that did not parse as records */
	size_t compact, compact_bytes; /* compact records (capture.h) and their bytes in the file */
	uint64_t *expanded;       /* the full records they stand for, 5 words each */
};

/* 0 on success; a message on stderr and -1 otherwise. */
int capture_open(struct capture *c, const char *path);
void capture_close(struct capture *c);

size_t capture_count(const struct capture *c, int type, int aux); /* aux < 0: any */
size_t capture_count_thread(const struct capture *c, int type, int aux, uint32_t thread);
/* the i-th record of a type (aux < 0: any), or NULL */
const struct cap_rec *capture_find(const struct capture *c, int type, int aux, size_t i);

/* The last GT_PROCESS_NAME (it names the process), its command line into cmdline with
 * spaces between the arguments; NULL when there is none. */
const struct gt_p_process_name *capture_process_name(const struct capture *c, char *cmdline,
						     size_t cap);

/* One line per record on the stream: "tsc cpu thread TYPE aux ...payload". */
void capture_dump(const struct capture *c, void *file);
const char *capture_type_name(int type);

/* Newest gotrace-*.gtcap in dir whose header pid equals pid (0: any). 0 on success. */
int capture_find_file(const char *dir, unsigned pid, char *out, size_t cap);

#endif
