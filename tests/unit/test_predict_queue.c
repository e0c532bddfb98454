/* The ttft predictor's queue of prefills on a server (agent/predict.c):
 * vLLM packs the prefills waiting there into each step up to its token
 * budget, so short prefills queued together take one step, not one
 * step each. */
#include <math.h>
#include <stdio.h>

#include "check.h"
#include "predict.h"

static struct dbk_pred *one_server(void)
{
	struct dbk_pred_config c;

	dbk_pred_config_default(&c, 1);
	return dbk_pred_new(&c);
}

static struct dbk_pred_request req(double prompt)
{
	return (struct dbk_pred_request){ .prompt_tokens = prompt,
		                          .max_tokens = 100,
		                          .ignore_eos = true };
}

/* The queue a server shows after n prefills of prompt tokens sent at
 * once, each behind the one before, beside 30 requests of long contexts
 * decoding there (every step reads their KV). */
static double queue_after(unsigned n, double prompt)
{
	struct dbk_pred *p = one_server();
	struct dbk_pred_request r = req(prompt), ctx = req(20000);
	struct dbk_pred_ticket t;
	struct dbk_pred_view v = { 0 };

	if (!p)
		return NAN;
	for (unsigned i = 0; i < 30; i++)
		dbk_pred_commit(p, &ctx, 0, 0, &t);
	for (unsigned i = 0; i < n; i++)
		dbk_pred_commit(p, &r, 0, 100000, &t);
	dbk_pred_view(p, 0, 100000, &v);
	dbk_pred_free(p);
	return v.queue_s;
}

/* Ten prefills of 500 tokens fit one step of 8,192: queued one step each
 * (ten times one), a server of an agent's sessions (turns of a few new
 * tokens each, long contexts read every step) showed 14 s of queue where
 * its first tokens came in 0.3 s. Their linear and attention work still
 * adds up; a prefill past the step's room starts steps of its own. */
static void test_short_prefills_share_a_step(void)
{
	double one = queue_after(1, 500), ten = queue_after(10, 500);
	double big = queue_after(1, 9000), behind = queue_after(2, 9000);

	CHECK(one > 0 && ten > one);
	CHECK(ten < 5 * one);
	CHECK(behind > 1.9 * big);
}

int main(void)
{
	RUN(test_short_prefills_share_a_step);
	return CHECK_DONE();
}
