/* u64map: the one u64 -> u64 hash map of the offline layers (open addressing),
 * for tables keyed by ids read from a file (thread serials, stack ids, goroutine ids, P ids)
 * or by addresses (the symbolizer's PC caches): its memory grows with the keys present, never
 * with their values.  Any key, 0 included.  A string key: common/hash.h's gt_hash_bytes. */
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
/* Removes key (false: it was absent); slots found before move.  The table keeps its size:
 * a map whose keys come and go holds as much as it held at most. */
bool gt_u64map_remove(struct gt_u64map *m, uint64_t key);
/* Empties the map, keeping its memory (a cache emptied when what it caches changes). */
void gt_u64map_clear(struct gt_u64map *m);
void gt_u64map_free(struct gt_u64map *m);

/* A set of numbers as bits, 64 to an entry (key n / 64): a dense set of ids in a few bytes
 * per 64.  gt_u64map_set_bit is false when memory runs out. */
static inline bool gt_u64map_bit(const struct gt_u64map *m, uint64_t n)
{
	const uint64_t *word = gt_u64map_find(m, n >> 6);
	return word && (*word >> (n & 63) & 1);
}
static inline bool gt_u64map_set_bit(struct gt_u64map *m, uint64_t n)
{
	bool found;
	uint64_t *word = gt_u64map_slot(m, n >> 6, &found);
	if (word)
		*word |= 1ull << (n & 63);
	return word != NULL;
}

#endif
