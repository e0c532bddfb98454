/* The prefix index (agent/prefix_index.h): longest match per server,
 * recency, bounded memory. */
#include "check.h"
#include "prefix_index.h"

static void keys_of(uint64_t *k, size_t n, uint64_t conv)
{
	/* Chained-like keys: the first 3 shared by all, then per conv. */
	for (size_t i = 0; i < n; i++)
		k[i] = i < 3 ? 100 + i : conv * 1000 + i;
}

static void test_longest_match_per_server(void)
{
	struct dbk_pidx *x = dbk_pidx_new(8, 1024);
	uint64_t a[20], b[20];
	struct dbk_pidx_hit h[8];

	keys_of(a, 20, 1);
	keys_of(b, 20, 2);
	dbk_pidx_insert(x, 5, a, 12, 77, 3000);
	dbk_pidx_insert(x, 2, b, 20, 78, 5000);
	/* a's 20 keys: server 5 holds 12; server 2 only the shared 3. */
	size_t n = dbk_pidx_match(x, a, 20, h, 8);
	CHECK_EQ_U(n, 2);
	CHECK_EQ_U(h[0].server, 5);
	CHECK_EQ_U(h[0].blocks, 12);
	CHECK_EQ_U(h[0].stamp, 77);
	CHECK_EQ_U(h[0].prompt_tokens, 3000);
	CHECK_EQ_U(h[1].server, 2);
	CHECK_EQ_U(h[1].blocks, 3);
	/* A request shorter than what was sent matches all its keys. */
	n = dbk_pidx_match(x, a, 6, h, 8);
	CHECK(n >= 1 && h[0].server == 5 && h[0].blocks == 6);
	/* Nothing shared: nothing. */
	uint64_t c[4] = { 9, 8, 7, 6 };
	CHECK_EQ_U(dbk_pidx_match(x, c, 4, h, 8), 0);
	CHECK_EQ_U(dbk_pidx_match(x, a, 0, h, 8), 0);
	dbk_pidx_free(x);
}

static void test_recent_servers_win_the_ways(void)
{
	struct dbk_pidx *x = dbk_pidx_new(16, 1024);
	uint64_t a[5];
	struct dbk_pidx_hit h[16];

	keys_of(a, 5, 1);
	for (unsigned s = 0; s < 6; s++)
		dbk_pidx_insert(x, s, a, 5, s, 100);
	size_t n = dbk_pidx_match(x, a, 5, h, 16);
	CHECK_EQ_U(n, DBK_PIDX_WAYS);
	/* The most recent first: 5, 4, 3, 2. */
	for (size_t i = 0; i < n; i++)
		CHECK_EQ_U(h[i].server, 5 - i);
	/* Sent again to 3: it moves to the front with its new stamp. */
	dbk_pidx_insert(x, 3, a, 5, 42, 100);
	n = dbk_pidx_match(x, a, 5, h, 1);
	CHECK_EQ_U(n, 1);
	CHECK_EQ_U(h[0].server, 3);
	CHECK_EQ_U(h[0].stamp, 42);
	dbk_pidx_free(x);
}

static void test_memory_is_bounded(void)
{
	struct dbk_pidx *x = dbk_pidx_new(4, 100);
	uint64_t k[64];
	struct dbk_pidx_hit h[4];

	CHECK_EQ_U(dbk_pidx_capacity(x), 128);
	for (uint64_t conv = 1; conv <= 200; conv++) {
		keys_of(k, 64, conv);
		dbk_pidx_insert(x, (unsigned)(conv % 4), k, 64, (uint32_t)conv, 1);
		CHECK(dbk_pidx_used(x) <= dbk_pidx_capacity(x));
	}
	CHECK_EQ_U(dbk_pidx_used(x), 128);
	/* The last inserted is mostly still there: its deepest key at least. */
	size_t n = dbk_pidx_match(x, k, 64, h, 4);
	CHECK(n >= 1);
	CHECK_EQ_U(h[0].server, 0);
	/* Out-of-range server and no keys are ignored. */
	dbk_pidx_insert(x, 4, k, 64, 1, 1);
	dbk_pidx_insert(x, 0, NULL, 64, 1, 1);
	CHECK(dbk_pidx_new(0, 10) == NULL);
	dbk_pidx_free(x);
}

int main(void)
{
	RUN(test_longest_match_per_server);
	RUN(test_recent_servers_win_the_ways);
	RUN(test_memory_is_bounded);
	return CHECK_DONE();
}
