/* Unit tests of the KV block pool with prefix caching (prefix_cache.c)
 * and of the chained block keys. */
#include "model/prefix_cache.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void keys_of(const char *text, uint64_t *k, uint32_t *n)
{
	struct dbk_prefix_cache_hasher h;
	uint64_t *got;

	dbk_prefix_cache_hasher_init(&h, DBK_BLOCK_ROOT_TEXT, 1024);
	dbk_prefix_cache_hasher_feed(&h, text, strlen(text));
	got = dbk_prefix_cache_hasher_take(&h, n);
	if (*n)
		memcpy(k, got, *n * sizeof(*k));
	free(got);
}

static void test_keys_chain_over_prefix(void)
{
	char a[64 * 3 + 10], b[sizeof(a)];
	uint64_t ka[8], kb[8];
	uint32_t na, nb;

	memset(a, 'x', sizeof(a) - 1);
	a[sizeof(a) - 1] = 0;
	memcpy(b, a, sizeof(a));
	/* 3 full blocks; the 10 trailing bytes make no key. */
	keys_of(a, ka, &na);
	CHECK_EQ_U(na, 3);
	/* Same bytes: same keys. Equal blocks at different depths differ,
	 * since a key covers the whole prefix. */
	keys_of(b, kb, &nb);
	CHECK_EQ_U(nb, 3);
	CHECK(memcmp(ka, kb, sizeof(uint64_t) * 3) == 0);
	CHECK(ka[0] != ka[1] && ka[1] != ka[2]);
	/* A change in block 1 changes keys 1 and 2, not key 0. */
	b[64 + 5] = 'y';
	keys_of(b, kb, &nb);
	CHECK(ka[0] == kb[0]);
	CHECK(ka[1] != kb[1] && ka[2] != kb[2]);
	/* A change in the partial tail changes nothing. */
	memcpy(b, a, sizeof(a));
	b[64 * 3 + 2] = 'z';
	keys_of(b, kb, &nb);
	CHECK(memcmp(ka, kb, sizeof(uint64_t) * 3) == 0);
}

static void test_hasher_feeds_split_anywhere(void)
{
	char t[64 * 5 + 7];
	uint64_t whole[8], *split;
	uint32_t nw, ns, i;
	struct dbk_prefix_cache_hasher h;
	size_t cut[] = { 1, 63, 64, 65, 130, 200 };

	for (i = 0; i < sizeof(t) - 1; i++)
		t[i] = (char)('a' + i % 23);
	t[sizeof(t) - 1] = 0;
	keys_of(t, whole, &nw);
	CHECK_EQ_U(nw, 5);
	/* Chat messages are fed one after another: any cut gives the
	 * same keys as the concatenated text. */
	for (i = 0; i < sizeof(cut) / sizeof(cut[0]); i++) {
		dbk_prefix_cache_hasher_init(&h, DBK_BLOCK_ROOT_TEXT, 1024);
		dbk_prefix_cache_hasher_feed(&h, t, cut[i]);
		dbk_prefix_cache_hasher_feed(&h, t + cut[i], strlen(t) - cut[i]);
		split = dbk_prefix_cache_hasher_take(&h, &ns);
		CHECK_EQ_U(ns, nw);
		CHECK(split && memcmp(split, whole, nw * sizeof(*split)) == 0);
		free(split);
	}
	/* max_keys bounds what is kept. */
	dbk_prefix_cache_hasher_init(&h, DBK_BLOCK_ROOT_TEXT, 2);
	dbk_prefix_cache_hasher_feed(&h, t, strlen(t));
	split = dbk_prefix_cache_hasher_take(&h, &ns);
	CHECK_EQ_U(ns, 2);
	CHECK(split && split[1] == whole[1]);
	free(split);
	/* Text and token-id roots never share. */
	CHECK(dbk_prefix_cache_hash(DBK_BLOCK_ROOT_TEXT, t, 64) !=
	      dbk_prefix_cache_hash(DBK_BLOCK_ROOT_IDS, t, 64));
}

static void test_lru_eviction_order(void)
{
	struct dbk_prefix_cache *pc = dbk_prefix_cache_new(4, true);
	uint32_t a[2], b[2], c[2], ev;
	uint64_t ka[2] = { 11, 12 }, kb[2] = { 21, 22 };

	CHECK(pc != NULL);
	CHECK_EQ_U(dbk_prefix_cache_num_free(pc), 4);
	CHECK_EQ_U(dbk_prefix_cache_alloc(pc, 2, a), 0);
	CHECK_EQ_U(dbk_prefix_cache_alloc(pc, 2, b), 0);
	CHECK(dbk_prefix_cache_alloc(pc, 1, c) == -1);
	dbk_prefix_cache_insert(pc, a[0], ka[0]);
	dbk_prefix_cache_insert(pc, a[1], ka[1]);
	dbk_prefix_cache_insert(pc, b[0], kb[0]);
	dbk_prefix_cache_insert(pc, b[1], kb[1]);
	CHECK_EQ_U(dbk_prefix_cache_num_cached(pc), 4);
	/* Held blocks hit but are not evictable. */
	CHECK_EQ_U(dbk_prefix_cache_match(pc, ka, 2, &ev), 2);
	CHECK_EQ_U(ev, 0);
	/* Freed: a first, then b; each request's tail goes first. */
	dbk_prefix_cache_release(pc, a, 2);
	dbk_prefix_cache_release(pc, b, 2);
	CHECK_EQ_U(dbk_prefix_cache_num_free(pc), 4);
	CHECK_EQ_U(dbk_prefix_cache_match(pc, kb, 2, &ev), 2);
	CHECK_EQ_U(ev, 2);
	/* One new block evicts a's tail (freed first, last block first). */
	CHECK_EQ_U(dbk_prefix_cache_alloc(pc, 1, c), 0);
	CHECK_EQ_U(c[0], a[1]);
	CHECK_EQ_U(dbk_prefix_cache_evictions(pc), 1);
	CHECK_EQ_U(dbk_prefix_cache_match(pc, ka, 2, NULL), 1);
	/* Taking b's blocks puts them out of reach of eviction: the next
	 * allocation takes a's head, not b. */
	dbk_prefix_cache_take(pc, kb, 2, b);
	CHECK_EQ_U(dbk_prefix_cache_num_free(pc), 1);
	CHECK_EQ_U(dbk_prefix_cache_alloc(pc, 1, c + 1), 0);
	CHECK_EQ_U(c[1], a[0]);
	CHECK_EQ_U(dbk_prefix_cache_match(pc, ka, 2, NULL), 0);
	CHECK_EQ_U(dbk_prefix_cache_match(pc, kb, 2, NULL), 2);
	CHECK(dbk_prefix_cache_alloc(pc, 1, c) == -1);
	dbk_prefix_cache_free(pc);
}

static void test_shared_blocks_refcount(void)
{
	struct dbk_prefix_cache *pc = dbk_prefix_cache_new(3, true);
	uint32_t a[1], b[1], c[3];
	uint64_t k = 99;

	CHECK_EQ_U(dbk_prefix_cache_alloc(pc, 1, a), 0);
	dbk_prefix_cache_insert(pc, a[0], k);
	dbk_prefix_cache_take(pc, &k, 1, b);
	CHECK_EQ_U(b[0], a[0]);
	dbk_prefix_cache_release(pc, a, 1);
	/* Still held by the second request. */
	CHECK_EQ_U(dbk_prefix_cache_num_free(pc), 2);
	dbk_prefix_cache_release(pc, b, 1);
	CHECK_EQ_U(dbk_prefix_cache_num_free(pc), 3);
	/* A key held twice (two requests computed it at once): either
	 * block serves, and the other still does after one is evicted. */
	CHECK_EQ_U(dbk_prefix_cache_alloc(pc, 3, c), 0);
	dbk_prefix_cache_insert(pc, c[1], 7);
	dbk_prefix_cache_insert(pc, c[2], 7);
	CHECK_EQ_U(dbk_prefix_cache_num_cached(pc), 2);
	/* Freed in reverse: c[2], c[1], c[0] join the queue in that order. */
	dbk_prefix_cache_release(pc, c, 3);
	CHECK_EQ_U(dbk_prefix_cache_alloc(pc, 1, a), 0);
	CHECK_EQ_U(a[0], c[2]);
	CHECK_EQ_U(dbk_prefix_cache_match(pc, (uint64_t[]){ 7 }, 1, NULL), 1);
	dbk_prefix_cache_take(pc, (uint64_t[]){ 7 }, 1, b);
	CHECK_EQ_U(b[0], c[1]);
	dbk_prefix_cache_release(pc, b, 1);
	dbk_prefix_cache_release(pc, a, 1);
	dbk_prefix_cache_free(pc);
}

static void test_without_caching(void)
{
	struct dbk_prefix_cache *pc = dbk_prefix_cache_new(2, false);
	uint32_t a[2];
	uint64_t k = 5;

	CHECK_EQ_U(dbk_prefix_cache_alloc(pc, 2, a), 0);
	dbk_prefix_cache_insert(pc, a[0], k);
	CHECK_EQ_U(dbk_prefix_cache_num_cached(pc), 0);
	CHECK_EQ_U(dbk_prefix_cache_match(pc, &k, 1, NULL), 0);
	dbk_prefix_cache_release(pc, a, 2);
	CHECK_EQ_U(dbk_prefix_cache_num_free(pc), 2);
	dbk_prefix_cache_free(pc);
	CHECK(dbk_prefix_cache_new(0, true) == NULL);
}

int main(void)
{
	RUN(test_keys_chain_over_prefix);
	RUN(test_hasher_feeds_split_anywhere);
	RUN(test_lru_eviction_order);
	RUN(test_shared_blocks_refcount);
	RUN(test_without_caching);
	return CHECK_DONE();
}
