/* The ttft predictor's expected hit of a conversation's next turn
 * (agent/predict.h): past the sample, the earlier prompt is its own
 * session's, not that of another conversation behind the same long
 * system prompt. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "predict.h"
#include "prefix_key.h"

static struct dbk_pred *fleet(unsigned n)
{
	struct dbk_pred_config c;

	dbk_pred_config_default(&c, n);
	c.index_entries = 4096;
	return dbk_pred_new(&c);
}

/* A turn of a conversation of session behind a system prompt longer
 * than the sample: every such turn's sample is the same text. */
static struct dbk_pred_request turn(uint64_t *keys, uint64_t session, double prompt)
{
	char body[64 * DBK_PKEY_BLOCK_BYTES + 64];
	size_t n = (size_t)snprintf(body, sizeof(body), "{\"prompt\":\"");
	struct dbk_pred_request r = {
		.prompt_tokens = prompt, .max_tokens = 100, .ignore_eos = true, .session = session
	};
	struct dbk_pkey pk;

	for (size_t b = 0; b < 50; b++)
		for (size_t i = 0; i < DBK_PKEY_BLOCK_BYTES; i++)
			body[n++] = (char)('a' + (5 + b) % 26);
	r.keys = keys;
	r.nkeys = dbk_pkey_derive((const uint8_t *)body, n, keys, DBK_PKEY_MAX_KEYS, &pk);
	r.keys_cut = true;
	return r;
}

static void test_a_turn_hits_its_own_history(void)
{
	struct dbk_pred *p = fleet(2);
	uint64_t ka[DBK_PKEY_MAX_KEYS], kb[DBK_PKEY_MAX_KEYS], kn[DBK_PKEY_MAX_KEYS];
	struct dbk_pred_request a1 = turn(ka, 11, 30000), b1 = turn(kb, 22, 40000);
	struct dbk_pred_request a2 = turn(kn, 11, 31000);
	struct dbk_pred_ticket t;
	struct dbk_pred_choice c;
	double sample = (double)a1.nkeys * DBK_PKEY_BLOCK_TOKENS;

	CHECK(p);
	if (!p)
		return;
	/* Conversation 11 on server 0, then conversation 22, longer, on
	 * server 1: both sent the same sample. */
	dbk_pred_commit(p, &a1, 0, 1000, &t);
	dbk_pred_release(p, &t, 5000);
	dbk_pred_commit(p, &b1, 1, 6000, &t);
	dbk_pred_release(p, &t, 9000);
	/* 11's next turn: its history is on server 0; on server 1 only the
	 * sample's text (the system prompt) is. */
	CHECK(dbk_pred_evaluate(p, &a2, 1, 60000, &c) == 1);
	CHECK(c.hit_tokens <= sample);
	CHECK(dbk_pred_evaluate(p, &a2, 0, 60000, &c) == 0);
	CHECK(c.hit_tokens > 29000);
	CHECK(dbk_pred_choose(p, &a2, 60000, &c) == 0);
	CHECK(c.hit_tokens > 29000);
	/* Without a session the sample is all there is to go by: the
	 * latest prompt that sent it, as before. */
	a2.session = 0;
	CHECK(dbk_pred_evaluate(p, &a2, 1, 60000, &c) == 1);
	CHECK(c.hit_tokens > 30000);
	dbk_pred_free(p);
}

int main(void)
{
	RUN(test_a_turn_hits_its_own_history);
	return CHECK_DONE();
}
