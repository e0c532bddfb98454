/* The ttft predictor's choice (agent/predict_choose.c): what a request's
 * own time per output token weighs beside its first token. */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "predict.h"

static struct dbk_pred_request req(double prompt, double out)
{
	return (struct dbk_pred_request){ .prompt_tokens = prompt,
		                          .max_tokens = out,
		                          .ignore_eos = true };
}

/* Server 1 decodes four requests over 31k-token contexts, whose KV
 * reads make its decode step nearly twice server 0's; server 0 was just
 * sent a 3k-token prefill. A short request's first token comes about
 * 65 ms sooner on 1, both far within the 2 s objective; its decode there
 * is 13.5 ms a token against 7.7 ms: 5.8 ms more, a seventeenth of the
 * 100 ms objective, against a thirtieth of the 2 s one: server 0. Ranked
 * by the first token and the TPOT it adds to the others alone (four
 * decoders, little), it went to 1. */
static void test_its_own_tpot_weighs(void)
{
	struct dbk_pred_config c;

	dbk_pred_config_default(&c, 2);
	c.index_entries = 4096;
	struct dbk_pred *p = dbk_pred_new(&c);
	struct dbk_pred_request d = req(30000, 2000), q = req(3000, 400), r = req(500, 200);
	struct dbk_pred_ticket t;
	struct dbk_pred_choice c0, c1, ch;

	CHECK(p != NULL);
	if (!p)
		return;
	for (int i = 0; i < 4; i++)
		dbk_pred_commit(p, &d, 1, 0, &t);
	dbk_pred_commit(p, &q, 0, 60000, &t);
	CHECK_EQ_U(dbk_pred_evaluate(p, &r, 0, 60000, &c0), 0);
	CHECK_EQ_U(dbk_pred_evaluate(p, &r, 1, 60000, &c1), 1);
	CHECK(c0.within && c1.within);
	CHECK(c1.ttft_s + 0.04 < c0.ttft_s);
	CHECK(c1.tpot_s > 1.5 * c0.tpot_s);
	CHECK_EQ_U(dbk_pred_choose(p, &r, 60000, &ch), 0);
	/* A one-token request has no TPOT of its own: the first token. */
	struct dbk_pred_request one = req(500, 1);
	CHECK_EQ_U(dbk_pred_choose(p, &one, 60000, &ch), 1);
	dbk_pred_free(p);
}

int main(void)
{
	RUN(test_its_own_tpot_weighs);
	return CHECK_DONE();
}
