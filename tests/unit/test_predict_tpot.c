/* The ttft predictor's time per output token (agent/predict.h): the
 * decode step of the batch a request joins, the TPOT it adds to those
 * decoding there, and a choice that keeps requests within both
 * objectives rather than the earliest first token alone. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "predict.h"

/* tpot_slo_s large: a TPOT second costs next to nothing, so the choice
 * is the one the first token (and the stall weight) make alone. */
static struct dbk_pred *fleet_kv(unsigned n, double ttft_slo_s, double tpot_slo_s, double kv)
{
	struct dbk_pred_config c;

	dbk_pred_config_default(&c, n);
	c.index_entries = 4096;
	c.ttft_slo_s = ttft_slo_s;
	c.tpot_slo_s = tpot_slo_s;
	if (kv > 0)
		c.kv_tokens = kv;
	return dbk_pred_new(&c);
}

static struct dbk_pred *fleet(unsigned n, double ttft_slo_s, double tpot_slo_s)
{
	return fleet_kv(n, ttft_slo_s, tpot_slo_s, 0);
}

static struct dbk_pred_request req(double prompt, double out)
{
	return (struct dbk_pred_request){ .prompt_tokens = prompt,
		                          .max_tokens = out,
		                          .ignore_eos = true };
}

/* n requests decoding on server, sent at 0 (their prefills long done
 * by the time the tests decide, at 60 s). */
static void decoding(struct dbk_pred *p, unsigned server, int n, double prompt, double out)
{
	struct dbk_pred_request r = req(prompt, out);
	struct dbk_pred_ticket t;

	for (int i = 0; i < n; i++)
		dbk_pred_commit(p, &r, server, 0, &t);
}

/* The same books on a and b: n requests decoding on server 0 (prompt,
 * out), a prefill of queued tokens just sent to server 1. */
static bool batch_or_queue(struct dbk_pred *a, struct dbk_pred *b, int n, double prompt, double out,
                           double queued)
{
	struct dbk_pred_request q = req(queued, 400);
	struct dbk_pred_ticket t;

	CHECK(a && b);
	if (!a || !b)
		return false;
	decoding(a, 0, n, prompt, out);
	decoding(b, 0, n, prompt, out);
	dbk_pred_commit(a, &q, 1, 60000, &t);
	dbk_pred_commit(b, &q, 1, 60000, &t);
	return true;
}

static void test_objectives_checked(void)
{
	struct dbk_pred_config c;
	char err[128];

	dbk_pred_config_default(&c, 2);
	CHECK(c.ttft_slo_s == DBK_PRED_TTFT_SLO_S && c.tpot_slo_s == DBK_PRED_TPOT_SLO_S);
	CHECK(DBK_PRED_TTFT_SLO_S == 2.0 && DBK_PRED_TPOT_SLO_S == 0.1); /* vLLM's bench */
	c.tpot_slo_s = 0;
	CHECK(dbk_pred_config_check(&c, err, sizeof(err)) != 0);
	c.tpot_slo_s = NAN;
	CHECK(dbk_pred_config_check(&c, err, sizeof(err)) != 0);
	dbk_pred_config_default(&c, 2);
	c.ttft_slo_s = INFINITY;
	CHECK(dbk_pred_config_check(&c, err, sizeof(err)) != 0);
}

/* ENGINE-MODEL.md: a decode step costs about 7.5 ms at batch 1 and
 * 14 ms at batch 64 with 2k contexts; a one-token output has no TPOT. */
static void test_tpot_priced_as_the_engine(void)
{
	struct dbk_pred *p = fleet(2, DBK_PRED_TTFT_SLO_S, DBK_PRED_TPOT_SLO_S);
	struct dbk_pred_request r = req(1800, 400), one = req(1800, 1);
	struct dbk_pred_choice c;

	CHECK(p != NULL);
	if (!p)
		return;
	decoding(p, 1, 63, 1800, 400);
	CHECK_EQ_U(dbk_pred_evaluate(p, &r, 0, 60000, &c), 0);
	CHECK(c.tpot_s > 0.006 && c.tpot_s < 0.009);
	CHECK(c.within);
	CHECK_EQ_U(dbk_pred_evaluate(p, &r, 1, 60000, &c), 1);
	CHECK(c.tpot_s > 0.012 && c.tpot_s < 0.017);
	CHECK_EQ_U(dbk_pred_evaluate(p, &one, 1, 60000, &c), 1);
	CHECK(c.tpot_s == 0);
	/* Requests the scrape shows beyond the books (another balancer's)
	 * decode in the same batch: 63 more make server 0's step server
	 * 1's. */
	dbk_pred_evaluate(p, &r, 0, 60000, &c);
	double alone = c.tpot_s;
	struct dbk_pred_scrape sc = { .ok = true,
		                      .running = 63,
		                      .waiting = 0,
		                      .kv_usage = -1,
		                      .kv_capacity_tokens = -1,
		                      .prefix_queries = -1,
		                      .prefix_hits = -1,
		                      .ttft_sum_s = -1,
		                      .ttft_count = -1 };
	dbk_pred_scraped(p, 0, &sc, 60000);
	dbk_pred_evaluate(p, &r, 0, 60000, &c);
	CHECK(c.tpot_s > alone + 0.004 && c.tpot_s < 0.017);
	dbk_pred_free(p);
}

/* Server 0 decodes a batch of 200 and has nothing queued; server 1
 * decodes nothing but has a prefill queued ahead. A short request's
 * first token comes sooner on 0, and on the first token alone it goes
 * there; its decode would slow each of the 200 (the batch's TPOT), more
 * than it gains: server 1. */
static void test_a_decode_batch_loses_a_short_request(void)
{
	struct dbk_pred *alone = fleet(2, DBK_PRED_TTFT_SLO_S, 1e9);
	struct dbk_pred *p = fleet(2, DBK_PRED_TTFT_SLO_S, DBK_PRED_TPOT_SLO_S);
	struct dbk_pred_request shortp = req(600, 200);
	struct dbk_pred_choice a, c;

	if (!batch_or_queue(alone, p, 200, 800, 400, 1500))
		goto out;
	CHECK_EQ_U(dbk_pred_choose(alone, &shortp, 60000, &a), 0);
	CHECK_EQ_U(dbk_pred_choose(p, &shortp, 60000, &c), 1);
	/* It is the first token it gives up, a little, not the objective. */
	CHECK(c.ttft_s > a.ttft_s);
	CHECK(c.within && a.within);
	CHECK(c.tpot_s < 0.1);
	/* A one-token request decodes nothing, but its prefill is a step
	 * longer than a decode step for each of the 200 there, and one of
	 * their tokens each: server 1 still, with no TPOT of its own; on the
	 * first token alone, 0. */
	struct dbk_pred_request probe = req(600, 1);
	CHECK_EQ_U(dbk_pred_choose(alone, &probe, 60000, &a), 0);
	CHECK_EQ_U(dbk_pred_choose(p, &probe, 60000, &c), 1);
	CHECK(c.tpot_s == 0 && c.within);
out:
	dbk_pred_free(alone);
	dbk_pred_free(p);
}

/* A batch so large that a newcomer's TPOT there is past the objective
 * (1000 decoders over 3k contexts: KV reads of ~0.15 s a step, on
 * servers with ten times the default KV cache) loses it
 * to a server whose first token comes half a second later, behind a
 * queued prefill, but within 2 s; on the first token alone it would go
 * to the batch. */
static void test_past_the_tpot_objective(void)
{
	struct dbk_pred *alone = fleet_kv(2, DBK_PRED_TTFT_SLO_S, 1e9, 4.3e6);
	struct dbk_pred *p = fleet_kv(2, DBK_PRED_TTFT_SLO_S, DBK_PRED_TPOT_SLO_S, 4.3e6);
	struct dbk_pred_request r = req(500, 100);
	struct dbk_pred_choice a, c;

	if (!batch_or_queue(alone, p, 1000, 2000, 2000, 20000))
		goto out;
	CHECK_EQ_U(dbk_pred_choose(alone, &r, 60000, &a), 0);
	CHECK_EQ_U(dbk_pred_evaluate(p, &r, 0, 60000, &c), 0);
	CHECK(c.tpot_s > 0.1 && !c.within);
	CHECK_EQ_U(dbk_pred_choose(p, &r, 60000, &c), 1);
	CHECK(c.within && c.ttft_s > a.ttft_s + 0.4 && c.ttft_s < 2.0);
out:
	dbk_pred_free(alone);
	dbk_pred_free(p);
}

/* Within the first-token objective comes before the cost: a 40k prompt
 * behind a queued 8k one would be past 2 s; beside a decoding batch it
 * is within, though it stalls the batch (which alone, with looser
 * objectives at the defaults' ratio, sends it behind the queue). */
static void test_within_the_ttft_objective_first(void)
{
	struct dbk_pred *p = fleet(2, DBK_PRED_TTFT_SLO_S, DBK_PRED_TPOT_SLO_S);
	struct dbk_pred *loose = fleet(2, 60, 60 * DBK_PRED_TPOT_SLO_S / DBK_PRED_TTFT_SLO_S);
	struct dbk_pred_request longp = req(40000, 100);
	struct dbk_pred_choice c;

	if (!batch_or_queue(p, loose, 40, 200, 2000, 8000))
		goto out;
	CHECK_EQ_U(dbk_pred_choose(p, &longp, 60000, &c), 0);
	CHECK(c.within && c.ttft_s <= 2.0);
	CHECK_EQ_U(dbk_pred_choose(loose, &longp, 60000, &c), 1);
	CHECK(c.ttft_s > 2.0);
out:
	dbk_pred_free(p);
	dbk_pred_free(loose);
}

/* Ten decoding on each server, the same contexts and the same mean
 * output (100): on 0 nine of 10 tokens and one of 910, on 1 ten of 100.
 * A prefill's step longer than a decode step stretches the nine short
 * ones' TPOT ten times what it does each of the ten on 1: it costs more
 * on 0, which the mean output alone does not tell. */
static void test_short_outputs_stalled_apart(void)
{
	struct dbk_pred *p = fleet(2, DBK_PRED_TTFT_SLO_S, DBK_PRED_TPOT_SLO_S);
	struct dbk_pred_request probe = req(4000, 1);
	struct dbk_pred_choice c0, c1;

	CHECK(p);
	if (!p)
		return;
	decoding(p, 0, 9, 1000, 10);
	decoding(p, 0, 1, 1000, 910);
	decoding(p, 1, 10, 1000, 100);
	CHECK_EQ_U(dbk_pred_evaluate(p, &probe, 0, 60000, &c0), 0);
	CHECK_EQ_U(dbk_pred_evaluate(p, &probe, 1, 60000, &c1), 1);
	CHECK(c0.cost_s > c1.cost_s * 2);
	CHECK_EQ_U(dbk_pred_choose(p, &probe, 60000, &c0), 1);
	dbk_pred_free(p);
}

/* The order p2ttft compares two predictions in: KV fit, then the
 * objectives, then the cost. */
static void test_better(void)
{
	struct dbk_pred_choice fit = { .kv_fits = true, .within = false, .cost_s = 9 };
	struct dbk_pred_choice unfit = { .kv_fits = false, .within = true, .cost_s = 1 };
	struct dbk_pred_choice in = { .kv_fits = true, .within = true, .cost_s = 5 };
	struct dbk_pred_choice cheap = { .kv_fits = true, .within = true, .cost_s = 4 };

	CHECK(dbk_pred_better(&fit, &unfit) && !dbk_pred_better(&unfit, &fit));
	CHECK(dbk_pred_better(&in, &fit) && !dbk_pred_better(&fit, &in));
	CHECK(dbk_pred_better(&cheap, &in) && !dbk_pred_better(&in, &cheap));
	CHECK(!dbk_pred_better(&in, &in));
}

int main(void)
{
	RUN(test_objectives_checked);
	RUN(test_tpot_priced_as_the_engine);
	RUN(test_a_decode_batch_loses_a_short_request);
	RUN(test_past_the_tpot_objective);
	RUN(test_within_the_ttft_objective_first);
	RUN(test_short_outputs_stalled_apart);
	RUN(test_better);
	return CHECK_DONE();
}
