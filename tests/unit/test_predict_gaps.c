/* The time per output token each server's decoders were measured to
 * see (predict_gaps.c), as the choice reports it to admission. */
#include "check.h"
#include "predict.h"

static const struct dbk_pred_request req = { .prompt_tokens = 500, .max_tokens = 50 };

static void scrape(struct dbk_pred *p, unsigned i, double n, double sum, uint64_t now_ms)
{
	const struct dbk_pred_scrape sc = { .ok = true,
		                            .kv_capacity_tokens = -1,
		                            .prefix_queries = -1,
		                            .prefix_hits = -1,
		                            .ttft_sum_s = -1,
		                            .ttft_count = -1,
		                            .itl_sum_s = sum,
		                            .itl_count = n,
		                            .step_tokens = -1,
		                            .steps = -1 };

	dbk_pred_scraped(p, i, &sc, now_ms);
}

static double seen(struct dbk_pred *p, unsigned i, uint64_t now_ms)
{
	struct dbk_pred_choice c;

	CHECK(dbk_pred_evaluate(p, &req, i, now_ms, &c) == (int)i);
	return c.tpot_seen_s;
}

/* Read once 4,096 gaps have passed since the last reading, their mean;
 * fewer keep counting; a reading goes stale after 10 s; a counter that
 * goes back (the engine restarted) or a scrape without the histogram
 * forgets it; each server its own; a reset server has none. */
static void test_gaps_read_in_spans(void)
{
	struct dbk_pred_config cfg;
	dbk_pred_config_default(&cfg, 2);
	struct dbk_pred *p = dbk_pred_new(&cfg);

	scrape(p, 0, 100, 2, 1000);
	CHECK_NEAR(seen(p, 0, 1000), 0, 0);
	scrape(p, 0, 100 + 4000, 2 + 4000 * 0.02, 1100);
	CHECK_NEAR(seen(p, 0, 1100), 0, 0);
	/* 4,000 at 20 ms and 96 at 520 ms: their mean, counted together. */
	scrape(p, 0, 100 + 4096, 2 + 4000 * 0.02 + 96 * 0.52, 1200);
	CHECK_NEAR(seen(p, 0, 1200), (4000 * 0.02 + 96 * 0.52) / 4096, 1e-9);
	CHECK_NEAR(seen(p, 1, 1200), 0, 0);
	CHECK_NEAR(seen(p, 0, 11200), (4000 * 0.02 + 96 * 0.52) / 4096, 1e-9);
	CHECK_NEAR(seen(p, 0, 11201), 0, 0);
	/* Restarted: forgotten, then read again from the new counters. */
	scrape(p, 0, 50, 1, 1300);
	CHECK_NEAR(seen(p, 0, 1300), 0, 0);
	scrape(p, 0, 50 + 5000, 1 + 5000 * 0.11, 1400);
	CHECK_NEAR(seen(p, 0, 1400), 0.11, 1e-9);
	/* A scrape without the histogram: the next one is a first look. */
	scrape(p, 0, -1, -1, 1500);
	scrape(p, 0, 5050 + 4096, 551 + 4096 * 0.01, 1600);
	CHECK_NEAR(seen(p, 0, 1600), 0, 0);
	scrape(p, 0, 5050 + 2 * 4096, 551 + 2 * 4096 * 0.01, 1700);
	CHECK_NEAR(seen(p, 0, 1700), 0.01, 1e-9);
	dbk_pred_reset(p, 0);
	CHECK_NEAR(seen(p, 0, 1700), 0, 0);
	dbk_pred_free(p);
}

int main(void)
{
	RUN(test_gaps_read_in_spans);
	return CHECK_DONE();
}
