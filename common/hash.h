/* The one hash of the offline layers: FNV-1a over bytes (strings, PC lists), and the one mix
 * of a 64-bit key (Fibonacci hashing: the high bits of key * 2^64/phi are well spread) for
 * the open-addressing tables.  Equal hashes do not mean equal keys: a table checks. */
#ifndef GOTRACE_COMMON_HASH_H
#define GOTRACE_COMMON_HASH_H

#include <stddef.h>
#include <stdint.h>

static inline uint64_t gt_hash_bytes(const void *p, size_t n)
{
	const uint8_t *b = p;
	uint64_t h = 0xcbf29ce484222325ull;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* Take the high bits (>> some shift) for a table index: the low ones mix poorly. */
static inline uint64_t gt_hash_mix(uint64_t key)
{
	return key * 0x9e3779b97f4a7c15ull;
}

#endif
