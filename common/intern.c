/* intern: see intern.h. */
#include "intern.h"

#include <stdlib.h>
#include <string.h>

#include "hash.h"

#define CHUNK_BYTES (64u * 1024u)

struct gt_intern_chunk {
	struct gt_intern_chunk *next;
	size_t used, size;
	char data[];
};

static char *chunk_alloc(struct gt_intern *t, size_t n)
{
	struct gt_intern_chunk *c = t->chunks;
	if (!c || c->size - c->used < n) {
		size_t size = n > CHUNK_BYTES ? n : CHUNK_BYTES;
		struct gt_intern_chunk *fresh = malloc(sizeof *fresh + size);
		if (!fresh)
			return NULL;
		fresh->used = 0;
		fresh->size = size;
		/* a big one-off key goes behind the current chunk, which keeps filling */
		if (c && size > CHUNK_BYTES) {
			fresh->next = c->next;
			c->next = fresh;
		} else {
			fresh->next = c;
			t->chunks = fresh;
		}
		c = fresh;
	}
	char *p = c->data + c->used;
	c->used += n;
	return p;
}

static size_t home(uint64_t hash, size_t cap)
{
	return (size_t)(gt_hash_mix(hash) >> 7) & (cap - 1);
}

static bool grow(struct gt_intern *t)
{
	size_t cap = t->cap ? t->cap * 2 : 1024;
	struct gt_intern_entry *e = calloc(cap, sizeof *e);
	if (!e)
		return false;
	for (size_t i = 0; i < t->cap; i++) {
		if (!t->slots[i].hash)
			continue;
		size_t j = home(t->slots[i].hash, cap);
		while (e[j].hash)
			j = (j + 1) & (cap - 1);
		e[j] = t->slots[i];
	}
	free(t->slots);
	t->slots = e;
	t->cap = cap;
	return true;
}

const struct gt_intern_entry *gt_intern(struct gt_intern *t, const void *key, size_t len,
					uint64_t id, bool *inserted)
{
	*inserted = false;
	if ((t->n + 1) * 4 > t->cap * 3 && !grow(t))
		return NULL;
	uint64_t h = gt_hash_bytes(key, len);
	h += !h;
	size_t j = home(h, t->cap);
	for (; t->slots[j].hash; j = (j + 1) & (t->cap - 1)) {
		const struct gt_intern_entry *e = &t->slots[j];
		if (e->hash == h && e->len == len && !memcmp(e->bytes, key, len))
			return e;
	}
	char *copy = id ? chunk_alloc(t, len + 1) : NULL;
	if (!copy)
		return NULL;
	memcpy(copy, key, len);
	copy[len] = '\0';
	t->slots[j] = (struct gt_intern_entry){h, id, copy, len};
	t->n++;
	*inserted = true;
	return &t->slots[j];
}

uint64_t gt_intern_id(struct gt_intern *t, uint64_t *next_id, const void *key, size_t len,
		      bool *fresh)
{
	const struct gt_intern_entry *e = gt_intern(t, key, len, *next_id, fresh);
	*next_id += *fresh;
	return e ? e->id : 0;
}

void gt_intern_free(struct gt_intern *t)
{
	struct gt_intern_chunk *c = t->chunks;
	while (c) {
		struct gt_intern_chunk *next = c->next;
		free(c);
		c = next;
	}
	free(t->slots);
	*t = (struct gt_intern){0};
}
