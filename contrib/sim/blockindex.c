/* Block-hash indexer with per-server LRU; see blockindex.h. */
#include "blockindex.h"

#include <stdlib.h>
#include <string.h>

#include "lib/array.h"

struct dbk_bi_entry {
	uint64_t hash;
	uint32_t prev, next;
};

#define NIL UINT32_MAX

int dbk_blockindex_init(struct dbk_blockindex *bi, unsigned nservers, uint32_t capacity)
{
	memset(bi, 0, sizeof(*bi));
	dbk_u64map_init(&bi->where);
	dbk_u64map_init(&bi->sets);
	bi->nservers = nservers;
	bi->words = (nservers + 63) / 64;
	bi->capacity = capacity;
	bi->ent = malloc((size_t)nservers * capacity * sizeof(*bi->ent));
	bi->head = malloc(nservers * sizeof(*bi->head));
	bi->count = calloc(nservers, sizeof(*bi->count));
	if (!bi->ent || !bi->head || !bi->count) {
		dbk_blockindex_free(bi);
		return -1;
	}
	memset(bi->head, 0xff, nservers * sizeof(*bi->head));
	return 0;
}

void dbk_blockindex_free(struct dbk_blockindex *bi)
{
	free(bi->ent);
	free(bi->head);
	free(bi->count);
	free(bi->setbits);
	dbk_u64map_free(&bi->where);
	dbk_u64map_free(&bi->sets);
	memset(bi, 0, sizeof(*bi));
}

static uint64_t where_key(uint64_t hash, unsigned server)
{
	return dbk_u64map_mix64_pair(hash, server);
}

const uint64_t *dbk_blockindex_get(const struct dbk_blockindex *bi, uint64_t hash)
{
	const uint32_t *v = dbk_u64map_get(&bi->sets, hash);

	return v ? &bi->setbits[(size_t)*v * bi->words] : NULL;
}

static uint64_t *set_for(struct dbk_blockindex *bi, uint64_t hash)
{
	uint32_t *v = dbk_u64map_get(&bi->sets, hash);
	uint64_t *nb;

	if (v)
		return &bi->setbits[(size_t)*v * bi->words];
	nb = dbk_array_room(bi->setbits, &bi->capsets, bi->nsets, bi->words * sizeof(*nb), 4096);
	if (!nb)
		return NULL;
	bi->setbits = nb;
	if (dbk_u64map_put(&bi->sets, hash, (uint32_t)bi->nsets) != 0)
		return NULL;
	memset(&bi->setbits[bi->nsets * bi->words], 0, bi->words * sizeof(uint64_t));
	return &bi->setbits[bi->nsets++ * bi->words];
}

/* Entry slots of a server: base + 0..capacity-1, a circular list. */
static void unlink_entry(struct dbk_blockindex *bi, unsigned server, uint32_t e)
{
	struct dbk_bi_entry *ent = bi->ent + (size_t)server * bi->capacity;

	if (ent[e].next == e) {
		bi->head[server] = NIL;
		return;
	}
	ent[ent[e].prev].next = ent[e].next;
	ent[ent[e].next].prev = ent[e].prev;
	if (bi->head[server] == e)
		bi->head[server] = ent[e].next;
}

static void push_front(struct dbk_blockindex *bi, unsigned server, uint32_t e)
{
	struct dbk_bi_entry *ent = bi->ent + (size_t)server * bi->capacity;
	uint32_t h = bi->head[server];

	if (h == NIL) {
		ent[e].prev = ent[e].next = e;
	} else {
		ent[e].next = h;
		ent[e].prev = ent[h].prev;
		ent[ent[h].prev].next = e;
		ent[h].prev = e;
	}
	bi->head[server] = e;
}

static int add_one(struct dbk_blockindex *bi, uint64_t hash, unsigned server)
{
	struct dbk_bi_entry *ent = bi->ent + (size_t)server * bi->capacity;
	uint32_t *v = dbk_u64map_get(&bi->where, where_key(hash, server)), e;
	uint64_t *set;

	if (v) { /* already there: most recent now */
		e = *v;
		unlink_entry(bi, server, e);
		push_front(bi, server, e);
		return 0;
	}
	set = set_for(bi, hash);
	if (!set)
		return -1;
	if (bi->count[server] < bi->capacity) {
		e = bi->count[server]++;
	} else { /* evict the least recent: the head's predecessor */
		uint64_t *old;

		e = ent[bi->head[server]].prev;
		unlink_entry(bi, server, e);
		dbk_u64map_del(&bi->where, where_key(ent[e].hash, server));
		old = (uint64_t *)dbk_blockindex_get(bi, ent[e].hash);
		if (old)
			old[server / 64] &= ~((uint64_t)1 << (server % 64));
	}
	if (dbk_u64map_put(&bi->where, where_key(hash, server), e) != 0)
		return -1;
	ent[e].hash = hash;
	push_front(bi, server, e);
	set[server / 64] |= (uint64_t)1 << (server % 64);
	return 0;
}

int dbk_blockindex_add(struct dbk_blockindex *bi, const uint64_t *hashes, size_t n, unsigned server)
{
	size_t i;

	if (bi->capacity == 0)
		return 0;
	for (i = 0; i < n; i++)
		if (add_one(bi, hashes[i], server) != 0)
			return -1;
	return 0;
}

void dbk_blockindex_clear(struct dbk_blockindex *bi, unsigned server)
{
	const struct dbk_bi_entry *ent = bi->ent + (size_t)server * bi->capacity;

	/* A server's entries fill its slots 0..count-1 (eviction reuses). */
	for (uint32_t e = 0; e < bi->count[server]; e++) {
		uint64_t *set = (uint64_t *)dbk_blockindex_get(bi, ent[e].hash);

		dbk_u64map_del(&bi->where, where_key(ent[e].hash, server));
		if (set)
			set[server / 64] &= ~((uint64_t)1 << (server % 64));
	}
	bi->count[server] = 0;
	bi->head[server] = NIL;
}

void dbk_blockindex_match(const struct dbk_blockindex *bi, const uint64_t *hashes, size_t n,
                          uint32_t *match)
{
	size_t i;
	unsigned w, b;

	memset(match, 0, bi->nservers * sizeof(*match));
	for (i = 0; i < n; i++) {
		const uint64_t *set = dbk_blockindex_get(bi, hashes[i]);
		bool any = false;

		for (w = 0; set && w < bi->words; w++) {
			uint64_t bits = set[w];

			if (bits)
				any = true;
			while (bits) {
				b = (unsigned)__builtin_ctzll(bits);
				match[w * 64 + b]++;
				bits &= bits - 1;
			}
		}
		if (!any)
			break;
	}
}
