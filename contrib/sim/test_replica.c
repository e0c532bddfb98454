/* Unit tests of the first-token predictor (predict.c) against the engine
 * it stands in for (agent/model/engine.c). */
#include "replica.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "engine_test.h"

struct clock {
	double now;
	double first[64];
	int got[64];
};

static void on_ev(void *ctx, const struct dbk_engine_event *ev)
{
	struct clock *c = ctx;
	int i = (int)(intptr_t)ev->cookie;

	if (ev->type == DBK_ENGINE_EV_TOKEN && !c->got[i]) {
		c->got[i] = 1;
		c->first[i] = c->now;
	}
}

static double step(struct dbk_engine *e, struct clock *c)
{
	return engine_test_step(e, &c->now, on_ev, c);
}

/* Loads the predictor from the engine's live requests, in handle order
 * (their submission order here; none preempted). */
static void load(struct dbk_replica *p, const struct dbk_engine *e,
                 const struct dbk_engine_config *cfg, const uint64_t *h, int n)
{
	struct dbk_engine_req_info info;
	struct dbk_replica_item it;
	int i, pass;

	CHECK_EQ_U(dbk_replica_reset(p, cfg), 0);
	for (pass = 0; pass < 2; pass++)
		for (i = 0; i < n; i++) {
			enum dbk_engine_req_state st = dbk_engine_req_get(e, h[i], &info);

			if (st == DBK_REQ_UNKNOWN)
				continue;
			if ((pass == 0) != (st == DBK_REQ_RUNNING))
				continue;
			if (dbk_replica_item_from_engine(&info, &it))
				CHECK_EQ_U(dbk_replica_add(p, &it), 0);
		}
}

/* An idle instance: the prediction is the engine's own prefill time. */
static void test_idle_exact(void)
{
	static const uint32_t prompts[] = { 1, 100, 1000, 8192, 8193, 32768, 100000 };
	static const char *gpus[] = { "h100", "a100" };
	struct dbk_replica *p = dbk_replica_new();
	size_t g, k;

	CHECK(p != NULL);
	for (g = 0; g < 2; g++)
		for (k = 0; k < sizeof(prompts) / sizeof(prompts[0]); k++) {
			struct dbk_engine_config cfg;
			struct dbk_engine *e;
			struct clock c = { 0 };
			uint64_t h;
			double pred;
			int steps = 0;

			dbk_engine_config_default(&cfg, dbk_engine_profile_find(gpus[g]));
			e = dbk_engine_new(&cfg);
			CHECK_EQ_U(dbk_replica_reset(p, &cfg), 0);
			pred = dbk_replica_first_token(p, prompts[k], 0, 5);
			CHECK_EQ_U(dbk_engine_submit(e, prompts[k], 5, (void *)0, &h), 0);
			while (!c.got[0] && steps++ < 10000)
				step(e, &c);
			CHECK_NEAR(pred, c.first[0], 1e-12);
			dbk_engine_free(e);
		}
	dbk_replica_free(p);
}

/* The clairvoyant view of the cache: on an idle instance that served a
 * prompt before, a new prompt sharing its first 8000 tokens gets its
 * first token when the prediction with those tokens cached says, sooner
 * than without them. */
static void test_idle_cached(void)
{
	struct dbk_replica *p = dbk_replica_new();
	struct dbk_engine_config cfg;
	struct dbk_engine *e;
	struct clock c = { 0 };
	uint64_t keys[750], h;
	uint32_t i, hit;
	double pred, cold, start;
	int steps = 0;

	dbk_engine_config_default(&cfg, dbk_engine_profile_find("h100"));
	CHECK(cfg.enable_prefix_caching);
	e = dbk_engine_new(&cfg);
	for (i = 0; i < 750; i++)
		keys[i] = 0xabc000 + i;
	CHECK_EQ_U(dbk_engine_submit_keys(e, 12000, keys, 750, 2, (void *)0, &h), 0);
	while (dbk_engine_has_work(e) && steps++ < 10000)
		step(e, &c);
	for (i = 500; i < 750; i++)
		keys[i] = 0xdef000 + i; /* the new prompt diverges at 8000 */
	hit = dbk_engine_hit_tokens(e, 12000, keys, 750);
	CHECK_EQ_U(hit, 8000);
	CHECK_EQ_U(dbk_replica_reset(p, &cfg), 0);
	pred = dbk_replica_first_token(p, 12000, hit, 5);
	CHECK_EQ_U(dbk_replica_reset(p, &cfg), 0);
	cold = dbk_replica_first_token(p, 12000, 0, 5);
	start = c.now;
	CHECK_EQ_U(dbk_engine_submit_keys(e, 12000, keys, 750, 5, (void *)1, &h), 0);
	while (!c.got[1] && steps++ < 20000)
		step(e, &c);
	CHECK(c.got[1]);
	CHECK_NEAR(pred, c.first[1] - start, 1e-9);
	CHECK(pred < 0.6 * cold);
	dbk_engine_free(e);
	dbk_replica_free(p);
}

/* A busy instance: requests decoding, one mid-prefill, some waiting;
 * predicted against actual for a new request queued behind them. The
 * replica schedules like the engine here (no KV pressure, decodes ahead
 * of the prefill), so the two agree to rounding. */
static void test_busy_close(void)
{
	struct dbk_engine_config cfg;
	struct dbk_engine *e;
	struct dbk_replica *p = dbk_replica_new();
	struct clock c = { 0 };
	uint64_t h[64];
	double pred, start;
	int i, n = 0, steps = 0;

	dbk_engine_config_default(&cfg, dbk_engine_profile_find("h100"));
	e = dbk_engine_new(&cfg);
	for (i = 0; i < 12; i++, n++)
		CHECK_EQ_U(dbk_engine_submit(e, 1500 + 100 * (uint32_t)i, 20 + 30 * (uint32_t)i,
		                             (void *)(intptr_t)n, &h[n]),
		           0);
	for (i = 0; i < 4; i++)
		step(e, &c);
	/* A long one arrives and gets half-way through its prefill. */
	CHECK_EQ_U(dbk_engine_submit(e, 30000, 10, (void *)(intptr_t)n, &h[n]), 0);
	n++;
	for (i = 0; i < 2; i++)
		step(e, &c);
	for (i = 0; i < 3; i++, n++)
		CHECK_EQ_U(dbk_engine_submit(e, 5000, 40, (void *)(intptr_t)n, &h[n]), 0);

	load(p, e, &cfg, h, n);
	pred = dbk_replica_first_token(p, 12000, 0, 10);
	start = c.now;
	CHECK_EQ_U(dbk_engine_submit(e, 12000, 10, (void *)(intptr_t)n, &h[n]), 0);
	while (!c.got[n] && steps++ < 10000)
		step(e, &c);
	CHECK(c.got[n]);
	CHECK_NEAR(pred, c.first[n] - start, 1e-9);
	CHECK(pred > 0.5); /* behind 35k prompt tokens: not trivial */
	dbk_engine_free(e);
	dbk_replica_free(p);
}

/* The in-flight step's token is counted: a request whose last token is
 * being computed is gone for the next step. */
static void test_item_from_engine(void)
{
	struct dbk_engine_req_info info = { 0 };
	struct dbk_replica_item it;

	info.state = DBK_REQ_RUNNING;
	info.prompt_tokens = 100;
	info.max_output_tokens = 5;
	info.n_output = 2;
	info.num_computed_tokens = 101; /* decoding, idle engine */
	info.kv_blocks = 7;
	CHECK(dbk_replica_item_from_engine(&info, &it));
	CHECK_EQ_U(it.lack, 1);
	CHECK_EQ_U(it.remaining, 3);
	CHECK_EQ_U(it.blocks, 7);
	CHECK(it.running);

	info.num_computed_tokens = 102; /* its step is in flight */
	CHECK(dbk_replica_item_from_engine(&info, &it));
	CHECK_EQ_U(it.lack, 1);
	CHECK_EQ_U(it.remaining, 2);

	info.n_output = 4; /* in flight: the last token */
	info.num_computed_tokens = 104;
	CHECK(!dbk_replica_item_from_engine(&info, &it));

	info.state = DBK_REQ_WAITING; /* preempted: recompute it all */
	info.n_output = 2;
	info.num_computed_tokens = 0;
	info.kv_blocks = 0;
	CHECK(dbk_replica_item_from_engine(&info, &it));
	CHECK_EQ_U(it.lack, 102);
	CHECK_EQ_U(it.remaining, 3);
	CHECK(!it.running);

	dbk_replica_item_pending(0, 0, 0, &it);
	CHECK_EQ_U(it.lack, 1);
	CHECK_EQ_U(it.remaining, 1);
}

/* More work ahead, later first token; a full KV cache delays it. */
static void test_monotone(void)
{
	struct dbk_engine_config cfg;
	struct dbk_replica *p = dbk_replica_new();
	struct dbk_replica_item it;
	double t0, t1, t2;

	dbk_engine_config_default(&cfg, dbk_engine_profile_find("h100"));
	CHECK_EQ_U(dbk_replica_reset(p, &cfg), 0);
	t0 = dbk_replica_first_token(p, 4000, 0, 10);
	CHECK_EQ_U(dbk_replica_reset(p, &cfg), 0);
	dbk_replica_item_pending(50000, 0, 100, &it);
	CHECK_EQ_U(dbk_replica_add(p, &it), 0);
	t1 = dbk_replica_first_token(p, 4000, 0, 10);
	CHECK(t1 > t0 + 1.0);

	/* Decoders holding almost every block, finishing in 200 steps. */
	CHECK_EQ_U(dbk_replica_reset(p, &cfg), 0);
	it.computed = 26000;
	it.lack = 1;
	it.remaining = 200;
	it.blocks = 430000 / 16 / 16; /* 16 of them: all but 11 blocks */
	it.running = true;
	{
		int i;

		for (i = 0; i < 16; i++)
			CHECK_EQ_U(dbk_replica_add(p, &it), 0);
	}
	t2 = dbk_replica_first_token(p, 4000, 0, 10);
	/* It waits for the decoders to end: 200 steps of about 20 ms. */
	CHECK(t2 > 200 * 0.008);
	dbk_replica_free(p);
}

/* Whole-KV admission: what is committed (running and waiting requests'
 * final sizes) plus the newcomer against the cache. */
static void test_fits(void)
{
	struct dbk_engine_config cfg;
	struct dbk_replica *p = dbk_replica_new();
	struct dbk_replica_item it = {
		.computed = 100000, .lack = 1, .remaining = 1000, .blocks = 6250, .running = true
	};
	int i;

	/* 430000 tokens: 26875 blocks; each decoder ends at 6313. */
	dbk_engine_config_default(&cfg, dbk_engine_profile_find("h100"));
	CHECK_EQ_U(dbk_replica_reset(p, &cfg), 0);
	for (i = 0; i < 3; i++)
		CHECK_EQ_U(dbk_replica_add(p, &it), 0);
	CHECK(dbk_replica_fits(p, 100000, 1000));      /* 18939 + 6313 */
	dbk_replica_item_pending(30000, 0, 1000, &it); /* 1938 more */
	CHECK_EQ_U(dbk_replica_add(p, &it), 0);
	CHECK(!dbk_replica_fits(p, 100000, 1000)); /* 20877 + 6313 */
	CHECK(dbk_replica_fits(p, 4000, 10));      /* 20877 + 251 */
	/* And the replica keeps the newcomer waiting until the decoders
	 * end (1000 steps), though its first chunk's blocks are free. */
	CHECK(dbk_replica_first_token(p, 100000, 0, 1000) > 1000 * 0.0075);
	dbk_replica_free(p);
}

int main(void)
{
	RUN(test_idle_exact);
	RUN(test_idle_cached);
	RUN(test_busy_close);
	RUN(test_item_from_engine);
	RUN(test_monotone);
	RUN(test_fits);
	return CHECK_DONE();
}
