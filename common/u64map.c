/* u64map: see u64map.h. */
#include "u64map.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"

static size_t home(uint64_t key, size_t cap)
{
	return (size_t)(gt_hash_mix(key) >> 7) & (cap - 1);
}

static bool grow(struct gt_u64map *m)
{
	size_t cap = m->cap ? m->cap * 2 : 256;
	uint64_t *k = calloc(cap, sizeof *k), *v = calloc(cap, sizeof *v);
	if (!k || !v) {
		free(k);
		free(v);
		return false;
	}
	for (size_t i = 0; i < m->cap; i++) {
		if (!m->keys[i])
			continue;
		size_t j = home(m->keys[i], cap);
		while (k[j])
			j = (j + 1) & (cap - 1);
		k[j] = m->keys[i];
		v[j] = m->vals[i];
	}
	free(m->keys);
	free(m->vals);
	m->keys = k;
	m->vals = v;
	m->cap = cap;
	return true;
}

uint64_t *gt_u64map_slot(struct gt_u64map *m, uint64_t key, bool *found)
{
	if (!key) {
		*found = m->has_zero;
		if (!m->has_zero) {
			m->has_zero = true;
			m->zero_val = 0;
		}
		return &m->zero_val;
	}
	*found = false;
	if ((m->n + 1) * 2 > m->cap && !grow(m))
		return NULL;
	size_t j = home(key, m->cap);
	while (m->keys[j] && m->keys[j] != key)
		j = (j + 1) & (m->cap - 1);
	if (m->keys[j]) {
		*found = true;
	} else {
		m->keys[j] = key;
		m->vals[j] = 0;
		m->n++;
	}
	return &m->vals[j];
}

uint64_t *gt_u64map_find(const struct gt_u64map *m, uint64_t key)
{
	if (!key)
		return m->has_zero ? (uint64_t *)&m->zero_val : NULL;
	if (!m->cap)
		return NULL;
	size_t j = home(key, m->cap);
	while (m->keys[j]) {
		if (m->keys[j] == key)
			return &m->vals[j];
		j = (j + 1) & (m->cap - 1);
	}
	return NULL;
}

bool gt_u64map_remove(struct gt_u64map *m, uint64_t key)
{
	if (!key) {
		bool had = m->has_zero;
		m->has_zero = false;
		m->zero_val = 0;
		return had;
	}
	if (!m->cap)
		return false;
	size_t mask = m->cap - 1, hole = home(key, m->cap);
	while (m->keys[hole] && m->keys[hole] != key)
		hole = (hole + 1) & mask;
	if (!m->keys[hole])
		return false;
	/* linear probing: a later key of the run moves into the hole unless its home lies
	 * cyclically after the hole, where a search for it would never pass the hole */
	for (size_t j = (hole + 1) & mask; m->keys[j]; j = (j + 1) & mask) {
		size_t h = home(m->keys[j], m->cap);
		bool reachable = hole <= j ? hole < h && h <= j : hole < h || h <= j;
		if (reachable)
			continue;
		m->keys[hole] = m->keys[j];
		m->vals[hole] = m->vals[j];
		hole = j;
	}
	m->keys[hole] = 0;
	m->vals[hole] = 0;
	m->n--;
	return true;
}

void gt_u64map_free(struct gt_u64map *m)
{
	free(m->keys);
	free(m->vals);
	*m = (struct gt_u64map){0};
}

void gt_u64map_clear(struct gt_u64map *m)
{
	if (m->cap)
		memset(m->keys, 0, m->cap * sizeof *m->keys);
	m->n = 0;
	m->has_zero = false;
}
