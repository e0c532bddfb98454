/* A shed request's client: whether and when it sends the request again
 * (--shed-retry, --shed-retry-sdk), and what its retries came to.
 *
 * The SDK's client is the openai SDKs' (openai-python
 * src/openai/_base_client.py, _calculate_retry_timeout, at commit
 * b0cc77fb48c9ae3c6d4d4d76d3d03c27713ff922, with DEFAULT_MAX_RETRIES,
 * INITIAL_RETRY_DELAY and MAX_RETRY_DELAY from src/openai/_constants.py
 * at 04448952820aa3029e61907c1785a7293c3ddbc2; openai-node's src/core.ts,
 * calculateDefaultRetryTimeoutMillis, the same but for versions that
 * take the header only below 60 s): a 429 is retried at most twice
 * (each send carries x-stainless-retry-count); after retry-after-ms or
 * Retry-After when it is above 0 and at most 60 s, else after
 * min(0.5 s * 2^n, 8 s) (n the retries so far) times a jitter in
 * (0.75, 1]. Admission's Retry-After
 * is 1 to 60 s (admission.h), so the backoff is for 429s without one
 * (the GIE's, policy_llmd_shed.c). The jitter is drawn from the
 * request's id and n: the runs stay reproducible. */
#include "sim_state.h"

#include <math.h>

#include "lib/hash.h"
#include "u64map.h"

#define SDK_MAX_RETRIES 2
#define SDK_RETRY_AFTER_MAX_S 60
#define SDK_INITIAL_DELAY_S 0.5
#define SDK_MAX_DELAY_S 8.0

double dbk_sim_sdk_wait(int retry_s, uint32_t id, unsigned n)
{
	uint64_t draw = dbk_u64map_mix64_pair(id, n);

	if (retry_s > 0 && retry_s <= SDK_RETRY_AFTER_MAX_S)
		return retry_s;
	/* dbk_hash_unit is in (0, 1]: the jitter in (0.75, 1], as the SDK's
	 * 1 - 0.25 x random() with random() in [0, 1). */
	return fmin(SDK_INITIAL_DELAY_S * pow(2.0, n), SDK_MAX_DELAY_S) *
	       (0.75 + 0.25 * dbk_hash_unit(&draw));
}

int dbk_sim_retry(struct dbk_sim *s, uint32_t id, int retry_s)
{
	struct dbk_sim_rstate *r = &s->rs[id];
	struct dbk_sim_prio *p = &s->prio[dbk_sim_req_class(&s->reqs[id])];
	unsigned most = s->cfg.shed_retry_sdk ? SDK_MAX_RETRIES : s->cfg.shed_retry;
	double wait;

	p->first_shed += r->retries == 0;
	if (r->retries >= most)
		return 0;
	wait = s->cfg.shed_retry_sdk ? dbk_sim_sdk_wait(retry_s, id, r->retries) : retry_s;
	r->retries++;
	p->retried++;
	r->sent_s = s->now + wait;
	return dbk_evq_push(&s->q, r->sent_s, EV_RETRY, id) == 0 ? 1 : -1;
}

void dbk_sim_retry_end(struct dbk_sim *s, uint32_t id, bool ok)
{
	const struct dbk_sim_rstate *r = &s->rs[id];
	const struct dbk_sim_req *q = &s->reqs[id];
	struct dbk_sim_prio *p = &s->prio[dbk_sim_req_class(q)];
	double sent = r->retries ? r->sent_s : q->arrival_s;

	p->retry_admitted += r->retries && r->o.instance != DBK_SIM_NONE;
	p->good_last += ok && dbk_metrics_meets(&s->m.slo, r->o.first_token_s - sent,
	                                        r->o.last_token_s - sent, r->o.tokens);
}
