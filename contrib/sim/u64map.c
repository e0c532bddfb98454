/* Open-addressing map from 64-bit keys; see u64map.h. */
#include "u64map.h"

#include <stdlib.h>

#include "lib/hash.h"

uint64_t dbk_u64map_mix64(uint64_t x) { return dbk_hash_fmix64(x + DBK_HASH_GOLDEN); }

uint64_t dbk_u64map_mix64_pair(uint64_t a, uint64_t b)
{
	return dbk_u64map_mix64(dbk_u64map_mix64(a) ^ b);
}

void dbk_u64map_init(struct dbk_u64map *m)
{
	m->keys = NULL;
	m->vals = NULL;
	m->used = NULL;
	m->cap = m->n = 0;
}

void dbk_u64map_free(struct dbk_u64map *m)
{
	free(m->keys);
	free(m->vals);
	free(m->used);
	dbk_u64map_init(m);
}

static size_t slot_of(const struct dbk_u64map *m, uint64_t key)
{
	return (size_t)dbk_u64map_mix64(key) & (m->cap - 1);
}

uint32_t *dbk_u64map_get(const struct dbk_u64map *m, uint64_t key)
{
	size_t i;

	if (m->cap == 0)
		return NULL;
	for (i = slot_of(m, key); m->used[i]; i = (i + 1) & (m->cap - 1))
		if (m->keys[i] == key)
			return &m->vals[i];
	return NULL;
}

static void place(struct dbk_u64map *m, uint64_t key, uint32_t val)
{
	size_t i = slot_of(m, key);

	while (m->used[i])
		i = (i + 1) & (m->cap - 1);
	m->used[i] = 1;
	m->keys[i] = key;
	m->vals[i] = val;
	m->n++;
}

static int grow(struct dbk_u64map *m)
{
	struct dbk_u64map old = *m;
	size_t cap = old.cap ? old.cap * 2 : 64, i;

	m->keys = malloc(cap * sizeof(*m->keys));
	m->vals = malloc(cap * sizeof(*m->vals));
	m->used = calloc(cap, 1);
	if (!m->keys || !m->vals || !m->used) {
		free(m->keys);
		free(m->vals);
		free(m->used);
		*m = old;
		return -1;
	}
	m->cap = cap;
	m->n = 0;
	for (i = 0; i < old.cap; i++)
		if (old.used[i])
			place(m, old.keys[i], old.vals[i]);
	free(old.keys);
	free(old.vals);
	free(old.used);
	return 0;
}

int dbk_u64map_put(struct dbk_u64map *m, uint64_t key, uint32_t val)
{
	uint32_t *v = dbk_u64map_get(m, key);

	if (v) {
		*v = val;
		return 0;
	}
	if ((m->n + 1) * 2 > m->cap && grow(m) != 0)
		return -1;
	place(m, key, val);
	return 0;
}

bool dbk_u64map_del(struct dbk_u64map *m, uint64_t key)
{
	size_t i, j, mask = m->cap - 1;

	if (m->cap == 0)
		return false;
	for (i = slot_of(m, key); m->used[i]; i = (i + 1) & mask)
		if (m->keys[i] == key)
			break;
	if (!m->used[i])
		return false;
	/* Backward shift: pull later members of the probe run into the
	 * hole when their home slot does not lie strictly after it. */
	for (j = (i + 1) & mask; m->used[j]; j = (j + 1) & mask) {
		size_t home = slot_of(m, m->keys[j]);

		if (((j - home) & mask) >= ((j - i) & mask)) {
			m->keys[i] = m->keys[j];
			m->vals[i] = m->vals[j];
			i = j;
		}
	}
	m->used[i] = 0;
	m->n--;
	return true;
}
