/* KV block pool with prefix caching; see prefix_cache.h. */
#include "model/prefix_cache.h"

#include <stdlib.h>
#include <string.h>

#include "lib/hash.h"
#include "lib/list.h"

/* ---- Keys. ---- */

static uint64_t load_le64(const unsigned char *p, size_t n)
{
	uint64_t w = 0;
	size_t i;

	for (i = 0; i < n; i++)
		w |= (uint64_t)p[i] << (8 * i);
	return w;
}

/* Hand-written rather than a library's: vLLM's own keys (sha256 of a
 * pickled tuple) are not reproducible here anyway, and 64 bytes a block
 * need nothing stronger than a 64-bit mix; collisions between distinct
 * prefixes are 2^-64 events. */
uint64_t dbk_prefix_cache_hash(uint64_t parent, const void *bytes, size_t n)
{
	const unsigned char *p = bytes;
	uint64_t h = dbk_hash_fmix64(parent ^ (DBK_HASH_GOLDEN * (n + 1)));
	size_t i;

	/* One multiply a word (the simulator keys every prompt of a trace),
	 * then the full finalizer. */
	for (i = 0; i + 8 <= n; i += 8) {
		h = (h ^ load_le64(p + i, 8)) * DBK_HASH_GOLDEN;
		h ^= h >> 29;
	}
	if (i < n)
		h = (h ^ load_le64(p + i, n - i) ^ 0xa5) * 0xff51afd7ed558ccdull;
	return dbk_hash_fmix64(h);
}

/* Doubles the key array, up to max; false (and oom) when memory is short. */
static bool grow(struct dbk_prefix_cache_hasher *h)
{
	uint32_t cap = h->cap ? h->cap * 2 : 64;
	uint64_t *nk;

	if (cap > h->max)
		cap = h->max;
	nk = realloc(h->keys, (size_t)cap * sizeof(*nk));
	if (!nk) {
		h->oom = true;
		return false;
	}
	h->keys = nk;
	h->cap = cap;
	return true;
}

/* One block's key; false once no more are kept. */
static bool emit(void *ctx, const uint8_t *block)
{
	struct dbk_prefix_cache_hasher *h = ctx;
	uint64_t k = dbk_prefix_cache_hash(h->parent, block, DBK_BLOCK_TEXT_BYTES);

	h->parent = k;
	if (!h->oom && h->n < h->max && (h->n < h->cap || grow(h)))
		h->keys[h->n++] = k;
	return h->n < h->max;
}

void dbk_prefix_cache_hasher_init(struct dbk_prefix_cache_hasher *h, uint64_t root,
                                  uint32_t max_keys)
{
	memset(h, 0, sizeof(*h));
	h->parent = root;
	h->max = max_keys;
	dbk_chunker_init(&h->chunks, h->buf, sizeof(h->buf), emit, h);
}

void dbk_prefix_cache_hasher_feed(struct dbk_prefix_cache_hasher *h, const void *p, size_t n)
{
	dbk_chunker_feed(&h->chunks, p, n);
}

uint64_t *dbk_prefix_cache_hasher_take(struct dbk_prefix_cache_hasher *h, uint32_t *n)
{
	uint64_t *k = h->keys;

	*n = h->oom ? 0 : h->n;
	if (h->oom) {
		free(k);
		k = NULL;
	}
	h->keys = NULL;
	h->n = h->cap = 0;
	dbk_chunker_reset(&h->chunks);
	h->oom = false;
	return k;
}

void dbk_prefix_cache_hasher_free(struct dbk_prefix_cache_hasher *h)
{
	free(h->keys);
	h->keys = NULL;
	h->n = h->cap = 0;
}

/* ---- Pool. ---- */

struct blk {
	uint64_t key;
	uint32_t ref;
	struct dbk_list free_link; /* in the free queue, LRU first */
	uint32_t hnext;            /* key chain of its bucket */
	bool in_free, keyed;
};

struct dbk_prefix_cache {
	struct blk *b;
	uint32_t n;
	struct dbk_list free_q;
	uint32_t nfree;
	uint32_t *bucket;
	uint32_t mask;
	uint32_t ncached;
	uint64_t evictions;
	bool caching;
};

static void fq_push_tail(struct dbk_prefix_cache *pc, uint32_t id)
{
	struct blk *b = &pc->b[id];

	dbk_list_append(&pc->free_q, &b->free_link);
	b->in_free = true;
	pc->nfree++;
}

static void fq_remove(struct dbk_prefix_cache *pc, uint32_t id)
{
	struct blk *b = &pc->b[id];

	dbk_list_del(&b->free_link);
	b->in_free = false;
	pc->nfree--;
}

/* The least recently freed block (the queue is not empty). */
static uint32_t fq_first(const struct dbk_prefix_cache *pc)
{
	return (uint32_t)(dbk_list_first(&pc->free_q, struct blk, free_link) - pc->b);
}

struct dbk_prefix_cache *dbk_prefix_cache_new(uint32_t nblocks, bool caching)
{
	struct dbk_prefix_cache *pc;
	uint32_t i, nb = 1;

	if (nblocks == 0 || nblocks >= DBK_PC_NONE / 2)
		return NULL;
	pc = calloc(1, sizeof(*pc));
	if (!pc)
		return NULL;
	pc->b = calloc(nblocks, sizeof(*pc->b));
	if (caching) {
		while (nb < nblocks)
			nb <<= 1;
		pc->bucket = malloc((size_t)nb * sizeof(*pc->bucket));
	}
	if (!pc->b || (caching && !pc->bucket)) {
		dbk_prefix_cache_free(pc);
		return NULL;
	}
	if (caching)
		for (i = 0; i < nb; i++)
			pc->bucket[i] = DBK_PC_NONE;
	pc->mask = nb - 1;
	pc->n = nblocks;
	pc->caching = caching;
	dbk_list_init(&pc->free_q);
	for (i = 0; i < nblocks; i++) {
		pc->b[i].hnext = DBK_PC_NONE;
		fq_push_tail(pc, i);
	}
	return pc;
}

void dbk_prefix_cache_free(struct dbk_prefix_cache *pc)
{
	if (!pc)
		return;
	free(pc->b);
	free(pc->bucket);
	free(pc);
}

uint32_t dbk_prefix_cache_num_free(const struct dbk_prefix_cache *pc) { return pc->nfree; }

uint32_t dbk_prefix_cache_num_cached(const struct dbk_prefix_cache *pc) { return pc->ncached; }

uint64_t dbk_prefix_cache_evictions(const struct dbk_prefix_cache *pc) { return pc->evictions; }

static uint32_t slot_of(const struct dbk_prefix_cache *pc, uint64_t key)
{
	return (uint32_t)dbk_hash_fmix64(key) & pc->mask;
}

static uint32_t find(const struct dbk_prefix_cache *pc, uint64_t key)
{
	uint32_t id = pc->bucket[slot_of(pc, key)];

	while (id != DBK_PC_NONE && pc->b[id].key != key)
		id = pc->b[id].hnext;
	return id;
}

static void unkey(struct dbk_prefix_cache *pc, uint32_t id)
{
	uint32_t *p = &pc->bucket[slot_of(pc, pc->b[id].key)];

	while (*p != id)
		p = &pc->b[*p].hnext;
	*p = pc->b[id].hnext;
	pc->b[id].hnext = DBK_PC_NONE;
	pc->b[id].keyed = false;
	pc->ncached--;
}

uint32_t dbk_prefix_cache_match(const struct dbk_prefix_cache *pc, const uint64_t *keys, uint32_t n,
                                uint32_t *evictable)
{
	uint32_t k, ev = 0;

	if (!pc->caching || !keys)
		n = 0;
	for (k = 0; k < n; k++) {
		uint32_t id = find(pc, keys[k]);

		if (id == DBK_PC_NONE)
			break;
		if (pc->b[id].ref == 0)
			ev++;
	}
	if (evictable)
		*evictable = ev;
	return k;
}

void dbk_prefix_cache_take(struct dbk_prefix_cache *pc, const uint64_t *keys, uint32_t n,
                           uint32_t *ids)
{
	uint32_t k;

	for (k = 0; k < n; k++) {
		uint32_t id = find(pc, keys[k]);

		if (pc->b[id].ref++ == 0)
			fq_remove(pc, id);
		ids[k] = id;
	}
}

int dbk_prefix_cache_alloc(struct dbk_prefix_cache *pc, uint32_t n, uint32_t *ids)
{
	uint32_t k;

	if (n > pc->nfree)
		return -1;
	for (k = 0; k < n; k++) {
		uint32_t id = fq_first(pc);

		fq_remove(pc, id);
		if (pc->b[id].keyed) {
			unkey(pc, id);
			pc->evictions++;
		}
		pc->b[id].ref = 1;
		ids[k] = id;
	}
	return 0;
}

void dbk_prefix_cache_insert(struct dbk_prefix_cache *pc, uint32_t id, uint64_t key)
{
	struct blk *b = &pc->b[id];
	uint32_t s;

	if (!pc->caching || b->keyed)
		return;
	s = slot_of(pc, key);
	b->key = key;
	b->keyed = true;
	/* At the head of its chain: of blocks holding one key, the one
	 * keyed last is found first (vLLM takes any of them). */
	b->hnext = pc->bucket[s];
	pc->bucket[s] = id;
	pc->ncached++;
}

void dbk_prefix_cache_release(struct dbk_prefix_cache *pc, const uint32_t *ids, uint32_t n)
{
	while (n-- > 0) {
		uint32_t id = ids[n];

		if (pc->b[id].ref == 0 || --pc->b[id].ref > 0)
			continue;
		fq_push_tail(pc, id);
	}
}
