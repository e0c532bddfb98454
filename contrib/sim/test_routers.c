/* Unit tests of the routers' pure building blocks: the u64 map, the
 * approximate radix tree, the block indexer and the SLO-capacity search. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "blockindex.h"
#include "prompt.h"
#include "radix.h"
#include "slo.h"
#include "u64map.h"

/* Insert, overwrite, delete thousands of keys; every answer matches a
 * plain array kept beside it (deletions shift probe runs back). */
static void test_u64map(void)
{
	struct dbk_u64map m;
	uint32_t want[4000], i, bad = 0;
	uint32_t *v;

	dbk_u64map_init(&m);
	CHECK(dbk_u64map_get(&m, 1) == NULL);
	CHECK(!dbk_u64map_del(&m, 1));
	for (i = 0; i < 4000; i++) {
		want[i] = i * 7 + 1;
		CHECK_EQ_U(dbk_u64map_put(&m, (uint64_t)i * 64, want[i]), 0);
	}
	for (i = 0; i < 4000; i += 3) {
		CHECK(dbk_u64map_del(&m, (uint64_t)i * 64));
		want[i] = 0;
	}
	for (i = 1; i < 4000; i += 3)
		CHECK_EQ_U(dbk_u64map_put(&m, (uint64_t)i * 64, want[i] = 5), 0);
	for (i = 0; i < 4000; i++) {
		v = dbk_u64map_get(&m, (uint64_t)i * 64);
		if (want[i] == 0 ? v != NULL : (!v || *v != want[i]))
			bad++;
	}
	CHECK_EQ_U(bad, 0);
	CHECK_EQ_U(m.n, 4000 - 1334);
	dbk_u64map_free(&m);
}

static struct dbk_sim_req req(uint32_t id, uint32_t input, const uint64_t *ids, uint32_t n)
{
	struct dbk_sim_req r = { 0 };

	r.id = id;
	r.input_tokens = input;
	r.output_tokens = 1;
	r.hash_ids = ids;
	r.n_hash_ids = n;
	return r;
}

/* Matches count shared segments' characters; the deepest holder is the
 * most recent one; requests without ids share nothing. */
static void test_radix_match(void)
{
	static const uint64_t a[] = { 0, 1, 2 }, b[] = { 0, 1, 9 }, c[] = { 0, 1 };
	struct dbk_radix t;
	struct dbk_radix_match m;
	struct dbk_sim_req ra = req(0, 1300, a, 3), rb = req(1, 1200, b, 3), rc = req(2, 700, c, 2),
	                   rx = req(3, 1300, NULL, 0), ry = req(4, 1300, NULL, 0);

	CHECK_EQ_U(dbk_radix_init(&t, 3), 0);
	dbk_radix_match(&t, &ra, &m);
	CHECK_EQ_U(m.matched_chars, 0);
	CHECK(m.tenant == -1);
	CHECK_EQ_U(dbk_radix_insert(&t, &ra, 2, 1.0), 0);
	CHECK_EQ_U(t.tenant_chars[2], 1300 * 4);
	CHECK_EQ_U(dbk_radix_smallest_tenant(&t), 0);
	dbk_radix_match(&t, &rb, &m);
	CHECK_EQ_U(m.matched_chars, 1024 * 4);
	CHECK_EQ_U(m.input_chars, 1200 * 4);
	CHECK(m.tenant == 2);
	/* A shorter last segment matches its own length. */
	dbk_radix_match(&t, &rc, &m);
	CHECK_EQ_U(m.matched_chars, 700 * 4);
	CHECK_EQ_U(dbk_radix_insert(&t, &rc, 1, 2.0), 0);
	dbk_radix_match(&t, &rb, &m);
	CHECK(m.tenant == 1); /* touched the deepest match last */
	CHECK_EQ_U(dbk_radix_insert(&t, &rx, 0, 3.0), 0);
	dbk_radix_match(&t, &ry, &m);
	CHECK_EQ_U(m.matched_chars, 0);
	dbk_radix_free(&t);
}

/* Eviction drops a tenant's least recently used leaves first and only
 * down to the limit; other tenants keep theirs. */
static void test_radix_evict(void)
{
	static const uint64_t a[] = { 0, 1, 2 }, b[] = { 0, 5, 6 };
	struct dbk_radix t;
	struct dbk_radix_match m;
	struct dbk_sim_req ra = req(0, 1536, a, 3), rb = req(1, 1536, b, 3);

	CHECK_EQ_U(dbk_radix_init(&t, 2), 0);
	CHECK_EQ_U(dbk_radix_insert(&t, &ra, 0, 1.0), 0);
	CHECK_EQ_U(dbk_radix_insert(&t, &rb, 0, 2.0), 0);
	CHECK_EQ_U(dbk_radix_insert(&t, &ra, 1, 3.0), 0);
	CHECK_EQ_U(t.tenant_chars[0], 5 * 2048);
	/* Limit 3 segments: tenant 0 loses a's two leaves (older), keeps
	 * the shared root segment and b. */
	CHECK(dbk_radix_evict(&t, 3 * 2048) == 2);
	CHECK_EQ_U(t.tenant_chars[0], 3 * 2048);
	CHECK_EQ_U(t.tenant_chars[1], 3 * 2048);
	dbk_radix_match(&t, &rb, &m);
	CHECK_EQ_U(m.matched_chars, 1536 * 4);
	CHECK(m.tenant == 0);
	dbk_radix_match(&t, &ra, &m);
	CHECK(m.tenant == 1);
	CHECK(dbk_radix_evict(&t, 0) == 6);
	dbk_radix_match(&t, &ra, &m);
	CHECK_EQ_U(m.matched_chars, 0);
	dbk_radix_free(&t);
}

/* The longest-prefix count stops at the first hash no server holds; a
 * server's LRU forgets its oldest block beyond capacity. */
static void test_blockindex(void)
{
	struct dbk_blockindex bi;
	uint64_t h[5] = { 10, 11, 12, 13, 14 }, g[2] = { 10, 99 };
	uint32_t match[70];

	CHECK_EQ_U(dbk_blockindex_init(&bi, 70, 4), 0);
	CHECK_EQ_U(dbk_blockindex_add(&bi, h, 3, 0), 0);
	CHECK_EQ_U(dbk_blockindex_add(&bi, h, 2, 65), 0);
	dbk_blockindex_match(&bi, h, 5, match);
	CHECK_EQ_U(match[0], 3);
	CHECK_EQ_U(match[65], 2);
	CHECK_EQ_U(match[1], 0);
	/* Server 0 holds 10, 11, 12 (10 oldest); adding 13 fills it, 99
	 * then evicts 10. */
	CHECK_EQ_U(dbk_blockindex_add(&bi, &h[3], 1, 0), 0);
	CHECK_EQ_U(dbk_blockindex_add(&bi, &g[1], 1, 0), 0);
	CHECK(!(dbk_blockindex_get(&bi, 10)[0] & 1));
	CHECK(dbk_blockindex_get(&bi, 10)[1] & 2);
	dbk_blockindex_match(&bi, h, 5, match);
	/* The peer's greedy count goes on past a server's own gap: 11, 12
	 * and 13, while server 65 still holds block 10. */
	CHECK_EQ_U(match[0], 3);
	CHECK_EQ_U(match[65], 2);
	CHECK(dbk_blockindex_get(&bi, 99) != NULL);
	/* Re-adding refreshes instead of duplicating. */
	CHECK_EQ_U(dbk_blockindex_add(&bi, &h[2], 1, 0), 0);
	CHECK_EQ_U(bi.count[0], 4);
	dbk_blockindex_free(&bi);
}

/* A monotone attainment curve with a known edge. */
struct curve {
	double edge;
	unsigned calls;
};

static int step_curve(void *ctx, double rate, double *attain)
{
	struct curve *c = ctx;

	c->calls++;
	*attain = rate <= c->edge ? 0.95 : 0.5;
	return 0;
}

static int failing(void *ctx, double rate, double *attain)
{
	(void)ctx;
	(void)rate;
	*attain = 0;
	return -1;
}

static void test_slo_search(void)
{
	struct dbk_slo_search p;
	struct dbk_slo_result r;
	struct curve c = { 3.3, 0 };

	dbk_slo_search_default(&p);
	CHECK_EQ_U(dbk_slo_capacity(&p, step_curve, &c, &r), 0);
	CHECK(r.closed);
	CHECK(r.rate <= 3.3 && r.rate >= 3.3 / (1 + p.rel_tol));
	CHECK_EQ_U(r.evals, c.calls);
	CHECK(r.evals <= p.max_evals);
	CHECK(r.attain == 0.95);
	/* Edge below the start: halves down first. */
	c.edge = 0.07;
	c.calls = 0;
	CHECK_EQ_U(dbk_slo_capacity(&p, step_curve, &c, &r), 0);
	CHECK(r.closed && r.rate <= 0.07 && r.rate >= 0.07 / 1.02);
	/* Never passes within the budget: capacity 0, bracket open. */
	c.edge = 1e-9;
	p.max_evals = 5;
	CHECK_EQ_U(dbk_slo_capacity(&p, step_curve, &c, &r), 0);
	CHECK(r.rate == 0 && !r.closed && r.evals == 5);
	CHECK(r.best_attain == 0.5 && r.best_attain_rate == 1.0);
	/* Or halving stops at the floor: 1, 1/2, 1/4, 1/8 (1/16 is below
	 * 1/10). */
	p.max_evals = 16;
	p.min_frac = 0.1;
	c.calls = 0;
	CHECK_EQ_U(dbk_slo_capacity(&p, step_curve, &c, &r), 0);
	CHECK(r.rate == 0 && !r.closed);
	CHECK_EQ_U(c.calls, 4);
	/* A failing evaluation stops the search; bad parameters refuse. */
	CHECK(dbk_slo_capacity(&p, failing, NULL, &r) == -1);
	p.start = 0;
	CHECK(dbk_slo_capacity(&p, step_curve, &c, &r) == -1);
}

int main(void)
{
	RUN(test_u64map);
	RUN(test_radix_match);
	RUN(test_radix_evict);
	RUN(test_blockindex);
	RUN(test_slo_search);
	return CHECK_DONE();
}
