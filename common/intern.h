/* intern: byte strings kept once (names, file paths, a stack's PC list), each with an id and
 * a stable copy: the Go wire writers number their strings and stacks with it, the symbolizer
 * keeps its names in it.  Open addressing on the strings' hash; the copies live in chunks
 * that never move, freed together. */
#ifndef GOTRACE_COMMON_INTERN_H
#define GOTRACE_COMMON_INTERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gt_intern_entry {
	uint64_t hash;            /* 0: an empty slot (a hash of 0 is stored as 1) */
	uint64_t id;
	const char *bytes;        /* len bytes, then a NUL; stable until gt_intern_free */
	size_t len;
};

struct gt_intern_chunk;

struct gt_intern {
	struct gt_intern_entry *slots;
	size_t n, cap;            /* cap: a power of two, at most 3/4 full */
	struct gt_intern_chunk *chunks;
};

/* The entry of key; when absent and id != 0, a copy of it inserted with that id (*inserted
 * then true).  NULL when absent and id is 0, or when memory runs out. */
const struct gt_intern_entry *gt_intern(struct gt_intern *t, const void *key, size_t len,
					uint64_t id, bool *inserted);
/* key's id, inserted as *next_id (then incremented, *fresh true) when absent; 0 when memory
 * runs out (then *fresh is false). */
uint64_t gt_intern_id(struct gt_intern *t, uint64_t *next_id, const void *key, size_t len,
		      bool *fresh);
void gt_intern_free(struct gt_intern *t);

#endif
