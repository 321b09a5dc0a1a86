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
