/* The seats learnt from the scrapes (agent/predict_seats.c): prompts
 * waiting while the running count stays at its most, the KV cache with
 * room and the steps far from full, three scrapes in a row at one
 * count; then a newcomer beyond them waits for running requests to
 * end. Not learnt where the queue waits for the budget or for KV, or
 * the count moves; forgotten when more run, when the counters go back
 * and on a reset. */
#include <math.h>

#include "check.h"
#include "predict.h"

static struct dbk_pred *two(void)
{
	struct dbk_pred_config c;

	dbk_pred_config_default(&c, 2);
	c.index_entries = 4096;
	struct dbk_pred *p = dbk_pred_new(&c);
	CHECK(p != NULL);
	return p;
}

/* The engine's counters, kept across scrapes as vLLM's are. */
struct engine {
	double tokens, steps;
};

/* Server 0 scraped at t_ms: running, waiting, KV use, and since the
 * scrape before, 4 steps of per_step tokens. */
static void scrape(struct dbk_pred *p, struct engine *g, uint64_t t_ms, double running,
                   double waiting, double kv, double per_step)
{
	g->steps += 4;
	g->tokens += 4 * per_step;
	struct dbk_pred_scrape sc = { .ok = true,
		                      .running = running,
		                      .waiting = waiting,
		                      .kv_usage = kv,
		                      .prefix_queries = -1,
		                      .prefix_hits = -1,
		                      .ttft_sum_s = -1,
		                      .ttft_count = -1,
		                      .step_tokens = g->tokens,
		                      .steps = g->steps };
	dbk_pred_scraped(p, 0, &sc, t_ms);
}

/* n scrapes 100 ms apart from from_ms, each as scrape() says. */
static void scrapes(struct dbk_pred *p, struct engine *g, uint64_t from_ms, int n, double running,
                    double waiting, double kv, double per_step)
{
	for (int k = 0; k < n; k++)
		scrape(p, g, from_ms + 100 * (uint64_t)k, running, waiting, kv, per_step);
}

static double seats_of(const struct dbk_pred *p)
{
	struct dbk_pred_view v;

	dbk_pred_view(p, 0, 0, &v);
	return v.seats;
}

/* The first token predicted at 60 s on server 0 for a short prompt
 * where 64 requests of 500 tokens, 200 out, were sent at 0 s (the
 * scrapes long stale then: the books alone). */
static double ttft_beside_64(struct dbk_pred *p)
{
	struct dbk_pred_request q = { .prompt_tokens = 500, .max_tokens = 200, .ignore_eos = true };
	struct dbk_pred_ticket t;
	struct dbk_pred_choice c;

	for (int i = 0; i < 64; i++)
		dbk_pred_commit(p, &q, 0, 0, &t);
	CHECK_EQ_U(dbk_pred_evaluate(p, &q, 0, 60000, &c), 0);
	return c.ttft_s;
}

/* Three scrapes at 64 running, ten waiting, KV at 30%, 400-token steps:
 * 64 seats; a newcomer there then waits about a sixty-fourth of an
 * output's decode (200 steps of 64 decoders) more than where none were
 * learnt. */
static void test_learnt_out_of_seats(void)
{
	struct dbk_pred *p = two(), *q = two();
	struct engine g = { 0, 0 }, h = { 0, 0 };

	if (p && q) {
		scrapes(p, &g, 1000, 2, 64, 10, 0.3, 400);
		CHECK_NEAR(seats_of(p), 0, 0);
		scrape(p, &g, 1200, 64, 10, 0.3, 400);
		CHECK_NEAR(seats_of(p), 64, 0);
		scrapes(q, &h, 1000, 3, 50, 0, 0.3, 400);
		CHECK_NEAR(seats_of(q), 0, 0);
		double learnt = ttft_beside_64(p), not_learnt = ttft_beside_64(q);
		/* 2 x 100 tokens left x a step of 64 decoders (> 6 ms) / 64. */
		CHECK(learnt - not_learnt > 2 * 100 * 0.006 / 64);
		CHECK(learnt - not_learnt < 2 * 100 * 0.05 / 64);
	}
	dbk_pred_free(p);
	dbk_pred_free(q);
}

/* A queue waiting for the budget (full steps: a long prompt's chunks),
 * for KV (the cache nearly full), a count that moves, a count below the
 * most seen running, one span, or a span whose tokens fell (a cached
 * prompt scheduled): none shows the seats. */
static void test_not_learnt_where_not_shown(void)
{
	struct dbk_pred *p;

	for (int c = 0; c < 6; c++) {
		struct engine g = { 0, 0 };

		if (!(p = two()))
			continue;
		switch (c) {
		case 0: scrapes(p, &g, 1000, 6, 64, 10, 0.3, 8000); break;
		case 1: scrapes(p, &g, 1000, 6, 64, 10, 0.95, 400); break;
		case 2:
			for (int k = 0; k < 6; k++)
				scrape(p, &g, 1000 + 100 * (uint64_t)k, 62 + k % 2, 10, 0.3, 400);
			break;
		case 3:
			scrape(p, &g, 900, 80, 0, 0.3, 400);
			scrapes(p, &g, 1000, 6, 64, 10, 0.3, 400);
			break;
		case 4:
			scrapes(p, &g, 1000, 2, 64, 10, 0.3, 400);
			scrape(p, &g, 1200, 64, 0, 0.3, 400);
			scrapes(p, &g, 1300, 2, 64, 10, 0.3, 400);
			break;
		case 5:
			scrapes(p, &g, 1000, 2, 64, 10, 0.3, 400);
			scrape(p, &g, 1200, 64, 10, 0.3, -300);
			scrape(p, &g, 1300, 64, 10, 0.3, 400);
			break;
		}
		CHECK_NEAR(seats_of(p), 0, 0);
		dbk_pred_free(p);
	}
}

/* More running than the seats learnt: they were not its seats. Counters
 * that go back are another engine; HAProxy's new server in the slot
 * (dbk_pred_reset) is another too. */
static void test_forgotten(void)
{
	struct dbk_pred *p = two();
	struct engine g = { 0, 0 };

	if (p) {
		scrapes(p, &g, 1000, 3, 64, 10, 0.3, 400);
		CHECK_NEAR(seats_of(p), 64, 0);
		scrape(p, &g, 1300, 70, 0, 0.3, 400);
		CHECK_NEAR(seats_of(p), 0, 0);
		scrapes(p, &g, 1400, 3, 70, 10, 0.3, 400);
		CHECK_NEAR(seats_of(p), 70, 0);
		g.tokens = g.steps = 0;
		scrape(p, &g, 1700, 70, 10, 0.3, 400);
		CHECK_NEAR(seats_of(p), 0, 0);
		scrapes(p, &g, 1800, 2, 70, 10, 0.3, 400);
		CHECK_NEAR(seats_of(p), 70, 0);
		dbk_pred_reset(p, 0);
		CHECK_NEAR(seats_of(p), 0, 0);
	}
	dbk_pred_free(p);
}

int main(void)
{
	RUN(test_learnt_out_of_seats);
	RUN(test_not_learnt_where_not_shown);
	RUN(test_forgotten);
	return CHECK_DONE();
}
