/* The step budget learnt from the scrapes (agent/predict_budget.c): the
 * tokens an engine computed over the steps it took while prompts waited
 * there, used to pack its queue when the operator told none (the
 * default budget until then); not learnt from spans without a queue of
 * four, from too few steps, or from steps that waited for seats;
 * forgotten when the steps go back, not when the tokens fall; a told
 * budget, and a pool that never packs (admission), win. */
#include <math.h>

#include "check.h"
#include "predict.h"

/* A predictor of two servers, told budget tokens (0: untold), learning
 * (learn) or not. NULL when out of memory. */
static struct dbk_pred *two(double budget, bool learn)
{
	struct dbk_pred_config c;

	dbk_pred_config_default(&c, 2);
	c.index_entries = 4096;
	if (budget > 0)
		c.budget_tokens = c.pack_tokens = budget;
	c.learn_pack = learn;
	struct dbk_pred *p = dbk_pred_new(&c);
	CHECK(p != NULL);
	return p;
}

/* Server 0 scraped n + 1 times, 100 ms apart from from_ms: waiting
 * prompts (0: none) and, each span, steps steps of per_step tokens,
 * the counters from 0. */
static void scrapes_from(struct dbk_pred *p, uint64_t from_ms, int n, double waiting, double steps,
                         double per_step)
{
	for (int k = 0; k <= n; k++) {
		struct dbk_pred_scrape sc = { .ok = true,
			                      .waiting = waiting,
			                      .kv_usage = 0.1,
			                      .prefix_queries = -1,
			                      .prefix_hits = -1,
			                      .ttft_sum_s = -1,
			                      .ttft_count = -1,
			                      .step_tokens = k * steps * per_step,
			                      .steps = k * steps };
		dbk_pred_scraped(p, 0, &sc, from_ms + 100 * (uint64_t)k);
	}
}

static void scrapes(struct dbk_pred *p, int n, double waiting, double steps, double per_step)
{
	scrapes_from(p, 1000, n, waiting, steps, per_step);
}

static double budget_of(const struct dbk_pred *p)
{
	struct dbk_pred_view v;

	dbk_pred_view(p, 0, 5000, &v);
	return v.step_budget;
}

/* What eight 500-token prompts queued at 60 s on server 0, where
 * sixteen requests decode over 8k-token prompts since 0 s (KV reads
 * make every step cost alike; the scrapes are long stale then), hold a
 * 500-token request evaluated there then. */
static double eight_ahead(struct dbk_pred *p)
{
	struct dbk_pred_request q = { .prompt_tokens = 500, .max_tokens = 100, .ignore_eos = true };
	struct dbk_pred_request d = { .prompt_tokens = 8000,
		                      .max_tokens = 4000,
		                      .ignore_eos = true };
	struct dbk_pred_ticket t;
	struct dbk_pred_choice c;

	for (int i = 0; i < 16; i++)
		dbk_pred_commit(p, &d, 0, 0, &t);
	for (int i = 0; i < 8; i++)
		dbk_pred_commit(p, &q, 0, 60000, &t);
	CHECK_EQ_U(dbk_pred_evaluate(p, &q, 0, 60000, &c), 0);
	return c.ttft_s - c.own_s;
}

/* Eight spans of two 2,048-token steps: the queue is packed as if told
 * 2048, which holds a newcomer longer than the default budget (8192)
 * did, and less than a whole step a prompt (never packed). */
static void test_learnt_while_prompts_wait(void)
{
	struct dbk_pred *learnt = two(0, true), *told = two(2048, true), *never = two(0, false),
	                *fresh = two(0, true);

	if (learnt && told && never && fresh) {
		CHECK_NEAR(budget_of(fresh), 8192, 0);
		scrapes(learnt, 8, 6, 2, 2048);
		scrapes(told, 8, 6, 2, 2048);
		scrapes(never, 8, 6, 2, 2048);
		CHECK_NEAR(budget_of(learnt), 2048, 1e-9);
		CHECK_NEAR(budget_of(never), 0, 0);
		double a = eight_ahead(learnt), b = eight_ahead(told), u = eight_ahead(never);
		CHECK(a > 0);
		CHECK_NEAR(a, b, 1e-9);
		CHECK(u > 1.4 * a);
		CHECK(eight_ahead(fresh) < a);
	}
	dbk_pred_free(learnt);
	dbk_pred_free(told);
	dbk_pred_free(never);
	dbk_pred_free(fresh);
}

/* Seven spans are fourteen steps: too few. Spans with fewer than four
 * prompts waiting at either end say nothing of the budget. Steps of 512
 * tokens waited for seats, not tokens. Each keeps the default. */
static void test_not_learnt_from_too_little(void)
{
	struct dbk_pred *few = two(0, true), *idle = two(0, true), *seats = two(0, true);

	if (few && idle && seats) {
		scrapes(few, 7, 6, 2, 2048);
		CHECK_NEAR(budget_of(few), 8192, 0);
		scrapes(idle, 20, 3, 2, 2048);
		CHECK_NEAR(budget_of(idle), 8192, 0);
		scrapes(seats, 20, 6, 2, 512);
		CHECK_NEAR(budget_of(seats), 8192, 0);
	}
	dbk_pred_free(few);
	dbk_pred_free(idle);
	dbk_pred_free(seats);
}

/* A span whose tokens fall (a long cached prompt scheduled: vLLM counts
 * its hits then, its prompt only at its first token) is no new engine:
 * the budget learnt stays, the fall summed in. */
static void test_tokens_falling_over_a_span(void)
{
	struct dbk_pred *p = two(0, true);

	if (p) {
		scrapes(p, 8, 6, 2, 2048);
		struct dbk_pred_scrape fall = { .ok = true,
			                        .waiting = 6,
			                        .prefix_queries = -1,
			                        .prefix_hits = -1,
			                        .ttft_sum_s = -1,
			                        .ttft_count = -1,
			                        .step_tokens = 16 * 2048 - 1000,
			                        .steps = 18 };
		dbk_pred_scraped(p, 0, &fall, 1900);
		CHECK_NEAR(budget_of(p), (16.0 * 2048 - 1000) / 18, 1e-9);
	}
	dbk_pred_free(p);
}

/* Counters that go back are a new engine, which may run another budget;
 * HAProxy's new server in the slot (dbk_pred_reset) is too. The told
 * budget wins over a learnt one. */
static void test_forgotten_and_overruled(void)
{
	struct dbk_pred *p = two(0, true), *told = two(4096, true);

	if (p && told) {
		scrapes(p, 8, 6, 2, 2048);
		CHECK_NEAR(budget_of(p), 2048, 1e-9);
		struct dbk_pred_scrape back = { .ok = true,
			                        .waiting = 6,
			                        .prefix_queries = -1,
			                        .prefix_hits = -1,
			                        .ttft_sum_s = -1,
			                        .ttft_count = -1,
			                        .step_tokens = 100,
			                        .steps = 1 };
		dbk_pred_scraped(p, 0, &back, 1900);
		CHECK_NEAR(budget_of(p), 8192, 0);
		scrapes_from(p, 2000, 8, 6, 2, 16384);
		CHECK_NEAR(budget_of(p), 16384, 1e-9);
		dbk_pred_reset(p, 0);
		CHECK_NEAR(budget_of(p), 8192, 0);
		scrapes(told, 8, 6, 2, 2048);
		CHECK_NEAR(budget_of(told), 4096, 0);
	}
	dbk_pred_free(p);
	dbk_pred_free(told);
}

int main(void)
{
	RUN(test_learnt_while_prompts_wait);
	RUN(test_not_learnt_from_too_little);
	RUN(test_tokens_falling_over_a_span);
	RUN(test_forgotten_and_overruled);
	return CHECK_DONE();
}
