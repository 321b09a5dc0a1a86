/* u64map: a u64 -> u64 hash map (open addressing, no deletion), for tables keyed by ids read
 * from a file (thread serials, stack ids, goroutine ids, P ids): its memory grows with the
 * ids present, never with their values.  Any key, 0 included. */
#ifndef GOTRACE_U64MAP_H
#define GOTRACE_U64MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gt_u64map {
	uint64_t *keys, *vals;   /* a key slot of 0 is empty; key 0 itself lives in zero_val */
	size_t n, cap;           /* cap: a power of two, at most half full */
	bool has_zero;
	uint64_t zero_val;
};

/* The value slot of key, inserted (value 0) when absent; *found tells which.  NULL when
 * memory runs out.  The slot stays valid until the next insertion. */
uint64_t *gt_u64map_slot(struct gt_u64map *m, uint64_t key, bool *found);
/* The value slot of key, or NULL when absent (never inserts). */
uint64_t *gt_u64map_find(const struct gt_u64map *m, uint64_t key);
void gt_u64map_free(struct gt_u64map *m);
/* A 64-bit hash of bytes (FNV-1a), to key a map by a string: equal hashes are to be checked. */
uint64_t gt_hash_bytes(const void *p, size_t n);

#endif
