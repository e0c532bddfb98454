/* ttft: dbucket's predicted-first-token policy (agent/predict.h), linked
 * from the agent's own modules, fed what the agent would be fed:
 *   - the request's length (Content-Length / 4), max_tokens, ignore_eos;
 *   - prefix keys derived by agent/prefix_key.c from the first
 *     TTFT_SAMPLE_BYTES of the very body dbucket-bench sends
 *     (dbk_prompt_body), the sample HAProxy hands the agent, and the
 *     session as the "user" field in it;
 *   - each instance's max_model_len (/v1/models) and, every scrape_s of
 *     model time, its scraped gauges, first-token totals and KV capacity
 *     (snapshot.h: stale between scrapes as a real scraper's are).
 * With lb_nodes K > 1 it models K load balancers, each with its own agent
 * (books, prefix index), each receiving a random 1/K of the arrivals
 * (fixed seed), or with lb_sticky each conversation's requests to one of
 * them, all reading the same scraped numbers: the servers' /metrics are
 * the only state they share. */
#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "array.h"
#include "lib/buf.h"
#include "lib/hash.h"
#include "model/prompt.h"
#include "predict.h"
#include "prefix_key.h"

/* What HAProxy's wait-for-body leaves the agent of a body: one 16 KB
 * buffer less the request's headers. */
#define TTFT_SAMPLE_BYTES 15360u
#define TTFT_SEED 0x7474667453454544ULL

struct ttft {
	unsigned n, k;
	bool sticky; /* --lb-sticky */
	struct dbk_pred **node;
	/* By request id: its lease in the node that routed it. */
	struct tt_req {
		struct dbk_pred_ticket ticket;
		uint8_t node;
	} * reqs;
	size_t cap;
	struct dbk_buf body;
	uint64_t keys[DBK_PKEY_MAX_KEYS];
	double *kv_cap;
	bool learnt;
};

static void tt_fini(void *st)
{
	struct ttft *p = st;

	for (unsigned i = 0; p->node && i < p->k; i++)
		dbk_pred_free(p->node[i]);
	free(p->node);
	free(p->reqs);
	free(p->kv_cap);
	dbk_buf_free(&p->body);
}

static int tt_init(void *st, const struct dbk_sim_policy_env *env)
{
	struct ttft *p = st;
	struct dbk_pred_config pc;

	p->n = env->cfg->ninstances;
	p->k = env->cfg->lb_nodes ? env->cfg->lb_nodes : 1;
	p->sticky = env->cfg->lb_sticky;
	if (p->k > 255) {
		snprintf(env->err, env->errlen, "at most 255 load-balancer nodes");
		return -1;
	}
	dbk_pred_config_default(&pc, p->n);
	if (env->cfg->stall_weight >= 0)
		pc.stall_weight = env->cfg->stall_weight;
	if (!(p->node = calloc(p->k, sizeof(*p->node))) ||
	    !(p->kv_cap = calloc(p->n, sizeof(*p->kv_cap))))
		return -1;
	for (unsigned j = 0; j < p->k; j++)
		if (!(p->node[j] = dbk_pred_new(&pc)))
			return -1;
	return 0;
}

/* What /v1/models and cache_config_info tell an agent at start. */
static void tt_learn(struct ttft *p, const struct dbk_sim *s)
{
	if (p->learnt)
		return;
	for (unsigned i = 0; i < p->n; i++) {
		const struct dbk_engine_config *e = dbk_sim_engine_config(s, i);
		p->kv_cap[i] = (double)e->kv_capacity_tokens;
		for (unsigned j = 0; j < p->k; j++)
			dbk_pred_set_max_model_len(p->node[j], i, e->max_model_len);
	}
	p->learnt = true;
}

static int tt_grow(struct ttft *p, uint32_t id)
{
	struct tt_req *q = dbk_sim_array_room(p->reqs, &p->cap, id, sizeof(*q), 1024);

	if (!q)
		return -1;
	p->reqs = q;
	return 0;
}

/* The agent's view of r: the estimate's numbers and the sample's keys. */
static void tt_request(struct ttft *p, const struct dbk_sim *s, const struct dbk_sim_req *r,
                       struct dbk_pred_request *out)
{
	const struct dbk_sim_config *c = dbk_sim_config(s);
	struct dbk_req_spec spec = {
		.ep = DBK_EP_COMPLETIONS,
		.model_json = "\"m\"",
		.input = r->input_tokens,
		.output = r->output_tokens,
		.hash = r->hash_ids,
		.n_hash = r->n_hash_ids,
		.index = r->id,
		.session = r->session,
		.has_session = r->has_session,
	};
	struct dbk_pkey pk;

	/* The prompt is written whole; only its head is keyed. Cap the
	 * text at what the sample can hold (the JSON head is < 200 bytes). */
	if (spec.input > TTFT_SAMPLE_BYTES / DBK_BYTES_PER_TOKEN)
		spec.input = TTFT_SAMPLE_BYTES / DBK_BYTES_PER_TOKEN;
	dbk_prompt_body(&p->body, &spec);
	size_t len = p->body.len < TTFT_SAMPLE_BYTES ? p->body.len : TTFT_SAMPLE_BYTES;
	dbk_pkey_derive((const uint8_t *)p->body.p, len, p->keys, DBK_PKEY_MAX_KEYS, &pk);

	*out = (struct dbk_pred_request){
		.prompt_tokens = ((double)r->input_tokens * DBK_BYTES_PER_TOKEN +
		                  c->json_overhead_bytes) /
		                 DBK_BYTES_PER_TOKEN,
		.max_tokens = r->output_tokens,
		.ignore_eos = true,
		.keys = p->keys,
		.nkeys = pk.nkeys,
		/* The sample held the whole prompt unless it was cut. */
		.keys_cut = pk.cut || r->input_tokens > spec.input,
		.session = pk.session,
	};
}

static uint64_t tt_ms(const struct dbk_sim *s) { return (uint64_t)(dbk_sim_now(s) * 1000.0 + 0.5); }

static int tt_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	struct ttft *p = st;
	struct dbk_pred_request q;
	struct dbk_pred_choice ch;

	if (tt_grow(p, r->id) != 0)
		return DBK_SIM_POLICY_ERROR;
	tt_learn(p, s);
	uint64_t who = p->sticky && r->has_session ? r->session * DBK_HASH_GOLDEN : r->id;
	unsigned j = p->k > 1 ? (unsigned)(dbk_hash_fmix_light(TTFT_SEED ^ who) % p->k) : 0;
	tt_request(p, s, r, &q);
	uint64_t now = tt_ms(s);
	if (dbk_pred_choose(p->node[j], &q, now, &ch) < 0)
		return DBK_SIM_REFUSE;
	dbk_pred_commit_chosen(p->node[j], &q, &ch, now, &p->reqs[r->id].ticket);
	p->reqs[r->id].node = (uint8_t)j;
	return ch.server;
}

static void tt_release(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r,
                       unsigned inst)
{
	struct ttft *p = st;

	(void)inst;
	if (r->id < p->cap)
		dbk_pred_release(p->node[p->reqs[r->id].node], &p->reqs[r->id].ticket, tt_ms(s));
}

/* Every node reads every instance's scrape: the shared state. */
static void tt_tick(void *st, const struct dbk_sim *s)
{
	struct ttft *p = st;
	uint64_t now = tt_ms(s);

	tt_learn(p, s);
	for (unsigned i = 0; i < p->n; i++) {
		const struct dbk_sim_scrape *x = dbk_sim_scraped(s, i);
		struct dbk_pred_scrape sc = {
			.ok = true,
			.running = x->running,
			.waiting = x->waiting,
			.kv_usage = x->kv_usage,
			.kv_capacity_tokens = p->kv_cap[i],
			.prefix_queries = -1,
			.prefix_hits = -1,
			.ttft_sum_s = x->ttft_sum_s,
			.ttft_count = (double)x->ttft_count,
		};
		for (unsigned j = 0; j < p->k; j++)
			dbk_pred_scraped(p->node[j], i, &sc, now);
	}
}

const struct dbk_sim_policy_ops dbk_sim_policy_ttft = {
	.name = "ttft",
	.size = sizeof(struct ttft),
	.init = tt_init,
	.fini = tt_fini,
	.choose = tt_choose,
	.release = tt_release,
	.scrape = true,
	.tick = tt_tick,
	.tick_s = 0.100,
};
