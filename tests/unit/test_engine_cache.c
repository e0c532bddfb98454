/* Unit tests of prefix caching inside the engine model (engine.c with
 * prefix_cache.c): hits skip prefill, the last token is always computed,
 * preempted requests find their own blocks, eviction is LRU, and with
 * caching off (or nothing shared) the schedule is the uncached one. */
#include "model/engine.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "engine_test.h"

static struct dbk_engine *mkc(bool caching, uint64_t kv, uint32_t max_len)
{
	return engine_test_new("h100", caching, 0, 0, kv, max_len);
}

/* Keys for nb blocks: equal (seed, i) give equal keys, as equal prompt
 * prefixes do. Any distinct 64-bit values serve: the engine only
 * compares them. */
static void keys(uint64_t *k, uint32_t nb, uint64_t seed)
{
	uint32_t i;

	for (i = 0; i < nb; i++)
		k[i] = seed * 1000003u + i + 1;
}

static int first_tokens;

static void on_ev(void *ctx, const struct dbk_engine_event *ev)
{
	(void)ctx;
	if (ev->type == DBK_ENGINE_EV_TOKEN && ev->n_output == 1)
		first_tokens++;
}

/* Runs to idle; returns the model time taken. */
static double drain(struct dbk_engine *e)
{
	double t = 0, d;
	int n = 0;

	while (dbk_engine_has_work(e) && n++ < 100000) {
		d = dbk_engine_step(e, on_ev, NULL);
		if (d <= 0)
			break;
		t += d;
	}
	return t;
}

/* Submits a keyed prompt and runs the engine to idle. */
static void run(struct dbk_engine *e, uint32_t prompt, const uint64_t *k, uint32_t nk, uint32_t out)
{
	CHECK_EQ_U(dbk_engine_submit_keys(e, prompt, k, nk, out, NULL, NULL), 0);
	drain(e);
}

static void test_hit_skips_prefill(void)
{
	struct dbk_engine *e = mkc(true, 0, 0);
	struct dbk_engine_step_info si;
	struct dbk_engine_stats st;
	struct dbk_engine_req_info ri;
	uint64_t k[64], h;
	double cold, warm;

	keys(k, 64, 7);
	/* 1000 tokens: 62 full blocks. */
	CHECK_EQ_U(dbk_engine_submit_keys(e, 1000, k, 62, 1, NULL, &h), 0);
	cold = drain(e);
	CHECK_EQ_U(dbk_engine_cached_blocks(e, k, 64), 62);
	CHECK_EQ_U(dbk_engine_hit_tokens(e, 1000, k, 62), 992);
	CHECK_EQ_U(dbk_engine_submit_keys(e, 1000, k, 62, 1, NULL, &h), 0);
	dbk_engine_begin_step(e);
	dbk_engine_last_step(e, &si);
	CHECK_EQ_U(si.num_scheduled_tokens, 1000 - 992);
	CHECK_EQ_U(dbk_engine_req_get(e, h, &ri), DBK_REQ_RUNNING);
	CHECK_EQ_U(ri.num_cached_tokens, 992);
	dbk_engine_end_step(e, on_ev, NULL);
	warm = si.duration_s;
	CHECK(warm < cold / 2);
	dbk_engine_get_stats(e, &st);
	CHECK_EQ_U(st.prefix_cache_requests, 2);
	CHECK_EQ_U(st.prefix_cache_queries, 2000);
	CHECK_EQ_U(st.prefix_cache_hits, 992);
	CHECK_EQ_U(st.prompt_tokens_total, 2000);
	dbk_engine_free(e);
}

/* A prompt entirely cached still computes its last block's worth: the
 * hit stops at prompt - 1 tokens, rounded down to a block. */
static void test_full_hit_recomputes_last_token(void)
{
	struct dbk_engine *e = mkc(true, 0, 0);
	struct dbk_engine_step_info si;
	uint64_t k[64];

	keys(k, 64, 3);
	run(e, 1024, k, 64, 1);
	CHECK_EQ_U(dbk_engine_cached_blocks(e, k, 64), 64);
	CHECK_EQ_U(dbk_engine_hit_tokens(e, 1024, k, 64), 1008);
	CHECK_EQ_U(dbk_engine_submit_keys(e, 1024, k, 64, 1, NULL, NULL), 0);
	dbk_engine_step(e, on_ev, NULL);
	dbk_engine_last_step(e, &si);
	CHECK_EQ_U(si.num_scheduled_tokens, 16);
	dbk_engine_free(e);
}

/* A shorter prompt sharing only a prefix hits that prefix; a different
 * first block hits nothing even if later blocks were equal. */
static void test_partial_and_no_hit(void)
{
	struct dbk_engine *e = mkc(true, 0, 0);
	struct dbk_engine_stats st;
	uint64_t a[40], b[40];

	keys(a, 40, 1);
	run(e, 640, a, 40, 2);
	keys(b, 40, 1);
	b[10] ^= 1ull << 40;
	CHECK_EQ_U(dbk_engine_cached_blocks(e, b, 40), 10);
	b[0] ^= 1ull << 40;
	CHECK_EQ_U(dbk_engine_cached_blocks(e, b, 40), 0);
	run(e, 640, b, 40, 2);
	dbk_engine_get_stats(e, &st);
	CHECK_EQ_U(st.prefix_cache_hits, 0);
	/* Without keys a prompt shares nothing. */
	CHECK_EQ_U(dbk_engine_submit(e, 640, 2, NULL, NULL), 0);
	drain(e);
	dbk_engine_get_stats(e, &st);
	CHECK_EQ_U(st.prefix_cache_hits, 0);
	CHECK_EQ_U(st.prefix_cache_queries, 3 * 640);
	dbk_engine_free(e);
}

/* Freed cached blocks are reused least recently freed first: after A
 * then B finish, a request needing fresh blocks evicts A's first (and
 * A's tail before its head). */
static void test_lru_eviction(void)
{
	/* 100 blocks of 16 tokens. */
	struct dbk_engine *e = mkc(true, 1600, 1600);
	struct dbk_engine_stats st;
	uint64_t a[30], b[30];

	keys(a, 30, 1);
	keys(b, 30, 2);
	run(e, 480, a, 30, 1);
	run(e, 480, b, 30, 1);
	dbk_engine_get_stats(e, &st);
	CHECK_EQ_U(st.kv_blocks_used, 0); /* cached blocks count free */
	/* 30 + 30: a request of max_tokens 1 finishes with its prefill,
	 * before its output token needs a block. */
	CHECK_EQ_U(st.kv_blocks_cached, 60);
	/* 60 fresh blocks: the 40 never used, then 20 of A's, tail first
	 * (blocks 29 down to 10). */
	CHECK_EQ_U(dbk_engine_submit(e, 960, 1, NULL, NULL), 0);
	drain(e);
	CHECK_EQ_U(dbk_engine_cached_blocks(e, a, 30), 10);
	CHECK_EQ_U(dbk_engine_cached_blocks(e, b, 30), 30);
	dbk_engine_get_stats(e, &st);
	CHECK_EQ_U(st.kv_evictions, 20);
	dbk_engine_free(e);
}

/* Preemption frees a request's blocks but they stay cached: re-admitted
 * before anyone evicts them, it re-prefills only past its cached blocks,
 * counted as a preempted lookup, not a new query. */
static void test_preempted_refinds_blocks(void)
{
	/* 64 blocks: A (500 + 300) and B (400 + 300) cannot both finish. */
	struct dbk_engine *e = mkc(true, 1024, 1024);
	struct dbk_engine_stats st;
	struct dbk_engine_req_info ri;
	uint64_t hb;
	int n = 0;

	CHECK_EQ_U(dbk_engine_submit(e, 500, 300, NULL, NULL), 0);
	CHECK_EQ_U(dbk_engine_submit(e, 400, 300, NULL, &hb), 0);
	while (n++ < 10000 && dbk_engine_has_work(e)) {
		dbk_engine_step(e, on_ev, NULL);
		dbk_engine_req_get(e, hb, &ri);
		if (ri.num_preemptions > 0 && ri.state == DBK_REQ_RUNNING)
			break;
	}
	CHECK_EQ_U(ri.num_preemptions, 1);
	CHECK(ri.num_cached_tokens > 0);
	CHECK_EQ_U(ri.num_cached_tokens % 16, 0);
	dbk_engine_get_stats(e, &st);
	CHECK_EQ_U(st.prefix_cache_queries, 900);
	CHECK_EQ_U(st.preempted_prefix_hits, ri.num_cached_tokens);
	drain(e);
	dbk_engine_free(e);
}

/* Nothing shared and nothing preempted: caching on schedules exactly as
 * caching off, step for step. */
static void test_unshared_same_schedule(void)
{
	struct dbk_engine *on = mkc(true, 0, 0), *off = mkc(false, 0, 0);
	uint32_t i;
	int n = 0;

	for (i = 0; i < 20; i++) {
		CHECK_EQ_U(dbk_engine_submit(on, 300 + 97 * i, 20 + i, NULL, NULL), 0);
		CHECK_EQ_U(dbk_engine_submit(off, 300 + 97 * i, 20 + i, NULL, NULL), 0);
	}
	while (n++ < 10000 && dbk_engine_has_work(off)) {
		double a = dbk_engine_step(on, on_ev, NULL);
		double b = dbk_engine_step(off, on_ev, NULL);

		CHECK(a == b);
		if (a != b)
			break;
	}
	CHECK(!dbk_engine_has_work(on));
	CHECK(!dbk_engine_prefix_caching(off));
	CHECK_EQ_U(dbk_engine_cached_blocks(off, NULL, 0), 0);
	dbk_engine_free(on);
	dbk_engine_free(off);
}

int main(void)
{
	RUN(test_hit_skips_prefill);
	RUN(test_full_hit_recomputes_last_token);
	RUN(test_partial_and_no_hit);
	RUN(test_lru_eviction);
	RUN(test_preempted_refinds_blocks);
	RUN(test_unshared_same_schedule);
	CHECK(first_tokens > 0);
	return CHECK_DONE();
}
