/* The prefix index: a set-associative table of chained prefix keys, each
 * with the few servers most recently sent that prefix (prefix_index.h). */
#include "prefix_index.h"

#include <stdbool.h>
#include <stdlib.h>

#include "lib/hash.h"

struct pidx_way {
	uint32_t server;
	uint32_t stamp;
	uint32_t prompt_tokens;
};

struct pidx_entry {
	uint64_t key;     /* 0: free */
	uint32_t touched; /* the index's clock when last inserted */
	uint32_t nways;
	struct pidx_way w[DBK_PIDX_WAYS]; /* most recent first */
};

struct dbk_pidx {
	unsigned nservers;
	size_t nsets; /* power of two */
	size_t used;
	uint32_t clock;
	struct pidx_entry *e; /* nsets * DBK_PIDX_ASSOC */
};

static uint64_t pidx_mix(uint64_t h)
{
	h ^= h >> 31;
	h *= DBK_HASH_GOLDEN;
	h ^= h >> 29;
	return h;
}

struct dbk_pidx *dbk_pidx_new(unsigned nservers, size_t entries)
{
	if (nservers == 0)
		return NULL;
	if (entries == 0)
		entries = DBK_PIDX_DEFAULT_ENTRIES;
	size_t nsets = 1;
	while (nsets * DBK_PIDX_ASSOC < entries && nsets < ((size_t)1 << 40))
		nsets <<= 1;
	struct dbk_pidx *x = calloc(1, sizeof(*x));
	if (!x)
		return NULL;
	x->e = calloc(nsets * DBK_PIDX_ASSOC, sizeof(*x->e));
	if (!x->e) {
		free(x);
		return NULL;
	}
	x->nservers = nservers;
	x->nsets = nsets;
	return x;
}

void dbk_pidx_free(struct dbk_pidx *x)
{
	if (!x)
		return;
	free(x->e);
	free(x);
}

static struct pidx_entry *pidx_set(const struct dbk_pidx *x, uint64_t key)
{
	return &x->e[(pidx_mix(key) & (x->nsets - 1)) * DBK_PIDX_ASSOC];
}

static const struct pidx_entry *pidx_find(const struct dbk_pidx *x, uint64_t key)
{
	const struct pidx_entry *set = pidx_set(x, key);

	if (key == 0)
		return NULL;
	for (unsigned i = 0; i < DBK_PIDX_ASSOC; i++)
		if (set[i].key == key)
			return &set[i];
	return NULL;
}

static bool pidx_reported(const struct dbk_pidx_hit *hits, size_t n, uint32_t server)
{
	for (size_t i = 0; i < n; i++)
		if (hits[i].server == server)
			return true;
	return false;
}

/* The first way of keys[i]'s entry whose server is not reported yet. */
static const struct pidx_way *pidx_new_way(const struct dbk_pidx *x, uint64_t key,
                                           const struct dbk_pidx_hit *hits, size_t n)
{
	const struct pidx_entry *e = pidx_find(x, key);

	if (!e)
		return NULL;
	for (uint32_t w = 0; w < e->nways; w++)
		if (!pidx_reported(hits, n, e->w[w].server))
			return &e->w[w];
	return NULL;
}

size_t dbk_pidx_match(const struct dbk_pidx *x, const uint64_t *keys, size_t nkeys,
                      struct dbk_pidx_hit *hits, size_t max_hits)
{
	size_t n = 0;

	if (!x || !keys)
		return 0;
	while (n < max_hits && nkeys > 0 && pidx_new_way(x, keys[0], hits, n)) {
		/* Deepest i with an unreported server: true at lo, false past hi. */
		size_t lo = 0, hi = nkeys;
		while (hi - lo > 1) {
			size_t mid = lo + (hi - lo) / 2;
			if (pidx_new_way(x, keys[mid], hits, n))
				lo = mid;
			else
				hi = mid;
		}
		const struct pidx_entry *e = pidx_find(x, keys[lo]);
		for (uint32_t w = 0; w < e->nways && n < max_hits; w++) {
			if (pidx_reported(hits, n, e->w[w].server))
				continue;
			hits[n].server = e->w[w].server;
			hits[n].blocks = (uint32_t)(lo + 1);
			hits[n].stamp = e->w[w].stamp;
			hits[n].prompt_tokens = e->w[w].prompt_tokens;
			n++;
		}
	}
	return n;
}

static struct pidx_entry *pidx_slot(struct dbk_pidx *x, uint64_t key)
{
	struct pidx_entry *set = pidx_set(x, key), *victim = &set[0];

	for (unsigned i = 0; i < DBK_PIDX_ASSOC; i++) {
		if (set[i].key == key)
			return &set[i];
		/* Free first, then the least recently touched (clock wraps). */
		if (victim->key != 0 &&
		    (set[i].key == 0 || (int32_t)(set[i].touched - victim->touched) < 0))
			victim = &set[i];
	}
	if (victim->key == 0)
		x->used++;
	victim->key = key;
	victim->nways = 0;
	return victim;
}

void dbk_pidx_insert(struct dbk_pidx *x, unsigned server, const uint64_t *keys, size_t nkeys,
                     uint32_t stamp, uint32_t prompt_tokens)
{
	if (!x || !keys || server >= x->nservers)
		return;
	x->clock++;
	for (size_t i = 0; i < nkeys; i++) {
		if (keys[i] == 0)
			continue;
		struct pidx_entry *e = pidx_slot(x, keys[i]);
		uint32_t at = e->nways < DBK_PIDX_WAYS ? e->nways : DBK_PIDX_WAYS - 1;
		for (uint32_t w = 0; w < e->nways; w++)
			if (e->w[w].server == server) {
				at = w;
				break;
			}
		if (at == e->nways)
			e->nways++;
		/* Move to the front, shifting the more recent ones down. */
		for (uint32_t w = at; w > 0; w--)
			e->w[w] = e->w[w - 1];
		e->w[0] = (struct pidx_way){ server, stamp, prompt_tokens };
		e->touched = x->clock;
	}
}

size_t dbk_pidx_used(const struct dbk_pidx *x) { return x->used; }

size_t dbk_pidx_capacity(const struct dbk_pidx *x) { return x->nsets * DBK_PIDX_ASSOC; }
