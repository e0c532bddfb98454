/* llm_d: llm-d's endpoint picker with its default scheduling profile,
 * modelled from the Gateway API Inference Extension it builds on:
 *   the profile, kubernetes-sigs/gateway-api-inference-extension,
 *     config/charts/inferencepool/templates/epp-config.yaml at commit
 *     139eec852f4ab19fb9f246ee9abbdcca3d655d79 (default-plugins.yaml:
 *     queue-scorer weight 2, kv-cache-utilization-scorer weight 2,
 *     prefix-cache-scorer weight 3; max-score-picker);
 *   the scorers, pkg/epp/scheduling/framework/plugins/scorer/queue.go and
 *     kvcache_utilization.go at commit
 *     02308be307b248a4ce2e908d34945178468f3f39, and
 *     .../plugins/multi/prefix/plugin.go at commit
 *     00913f9205cd1d16fe03c0c25a83808dfebc2c89 (hash block 64 bytes,
 *     at most 256 blocks matched, 31250 blocks remembered per server);
 *   the metrics refresh interval, 50 ms (--refresh-metrics-interval).
 *
 * Scores, each 0..1, from the last scrape (snapshot.h) and the indexer:
 *   queue   (max waiting - waiting) / (max - min) over the instances;
 *           1 for all when every queue is equal;
 *   kv      1 - vllm:kv_cache_usage_perc;
 *   prefix  the longest prefix match in blocks / the request's blocks,
 *           blocks of 64 bytes (16 tokens) chained over the prompt, the
 *           first standing for the model name; prompts under 64 bytes
 *           have none and score 0 everywhere.
 * The request goes to the highest 2 x queue + 2 x kv + 3 x prefix, ties
 * broken at random (the picker shuffles; fixed seed here), and its block
 * hashes are then recorded for that instance (the plugin's PreRequest). */
#include "policy.h"

#include <stdio.h>
#include <stdlib.h>

#include "blockindex.h"
#include "prompt.h"
#include "snapshot.h"
#include "u64map.h"

#define LD_REFRESH_S 0.050
#define LD_W_QUEUE 2.0
#define LD_W_KV 2.0
#define LD_W_PREFIX 3.0
#define LD_BLOCK_TOKENS 16u   /* 64 bytes at 4 bytes a token */
#define LD_MAX_BLOCKS 256u
#define LD_LRU_PER_SERVER 31250u
#define LD_MODEL_HASH 0x11dULL
#define LD_SEED 0x11dd5eedULL

struct llmd {
	unsigned n;
	uint64_t rng;
	struct dbk_sim_snapshot snap;
	struct dbk_blockindex index;
	uint64_t hashes[1 + LD_MAX_BLOCKS];
	uint32_t *match;
	double *score;
	unsigned *ties;
};

static void ld_destroy(void *st)
{
	struct llmd *p = st;

	if (!p)
		return;
	dbk_sim_snapshot_free(&p->snap);
	dbk_blockindex_free(&p->index);
	free(p->match);
	free(p->score);
	free(p->ties);
	free(p);
}

static void *ld_create(const void *arg, const struct dbk_sim_config *c,
                       char *err, size_t errlen)
{
	struct llmd *p = calloc(1, sizeof(*p));

	(void)arg;
	if (!p || dbk_sim_snapshot_init(&p->snap, c->ninstances) != 0 ||
	    dbk_blockindex_init(&p->index, c->ninstances, LD_LRU_PER_SERVER) != 0 ||
	    !(p->match = calloc(c->ninstances, sizeof(*p->match))) ||
	    !(p->score = calloc(c->ninstances, sizeof(*p->score))) ||
	    !(p->ties = calloc(c->ninstances, sizeof(*p->ties)))) {
		ld_destroy(p);
		snprintf(err, errlen, "out of memory");
		return NULL;
	}
	p->n = c->ninstances;
	p->rng = LD_SEED;
	return p;
}

/* The peer's hashPrompt over r's text: the model's hash, then one per
 * whole 64-byte block up to 256 blocks. */
static size_t hash_prompt(const struct dbk_sim_req *r, uint64_t *out)
{
	size_t nb = r->input_tokens / LD_BLOCK_TOKENS, j, n = 0;
	uint64_t chain = 0;
	uint32_t seg = UINT32_MAX;
	const uint32_t per_seg = DBK_SIM_SEG_TOKENS / LD_BLOCK_TOKENS;

	if (nb == 0)
		return 0;
	if (nb > LD_MAX_BLOCKS)
		nb = LD_MAX_BLOCKS;
	out[n++] = LD_MODEL_HASH;
	for (j = 0; j < nb; j++) {
		uint32_t sj = (uint32_t)(j / per_seg);

		while (seg == UINT32_MAX || seg < sj) {
			seg = seg == UINT32_MAX ? 0 : seg + 1;
			chain = dbk_sim_prompt_chain(r, seg, chain);
		}
		out[n++] = dbk_mix64_pair(chain, j % per_seg);
	}
	return n;
}

static int ld_choose(void *st, const struct dbk_sim *s,
                     const struct dbk_sim_req *r)
{
	struct llmd *p = st;
	size_t nh = hash_prompt(r, p->hashes);
	uint32_t qmin = UINT32_MAX, qmax = 0;
	unsigned i, nties = 0, pick;
	double best = -1;

	dbk_blockindex_match(&p->index, p->hashes, nh, p->match);
	for (i = 0; i < p->n; i++) {
		uint32_t w = dbk_sim_snapshot_get(&p->snap, i)->waiting;

		qmin = w < qmin ? w : qmin;
		qmax = w > qmax ? w : qmax;
	}
	for (i = 0; i < p->n; i++) {
		const struct dbk_sim_scrape *x = dbk_sim_snapshot_get(&p->snap, i);
		double q = qmax == qmin ? 1.0
		                        : (double)(qmax - x->waiting) / (double)(qmax - qmin);
		double pre = nh ? (double)p->match[i] / (double)nh : 0.0;

		p->score[i] = LD_W_QUEUE * q + LD_W_KV * (1.0 - x->kv_usage) +
		              LD_W_PREFIX * pre;
		if (p->score[i] > best) {
			best = p->score[i];
			nties = 0;
		}
		if (p->score[i] == best)
			p->ties[nties++] = i;
	}
	pick = p->ties[dbk_mix64(p->rng++) % nties];
	if (dbk_blockindex_add(&p->index, p->hashes, nh, pick) != 0)
		return DBK_SIM_POLICY_ERROR;
	(void)s;
	return (int)pick;
}

static void ld_tick(void *st, const struct dbk_sim *s)
{
	struct llmd *p = st;

	dbk_sim_snapshot_scrape(&p->snap, s);
}

static const struct dbk_sim_policy_ops ld_ops = {
	.name = "llm_d",
	.summary = "llm-d default profile: 2 queue + 2 kv-utilisation + "
	           "3 prefix-cache, metrics every 50 ms",
	.create = ld_create,
	.choose = ld_choose,
	.release = dbk_sim_policy_no_release,
	.tick = ld_tick,
	.tick_s = LD_REFRESH_S,
	.destroy = ld_destroy,
};

const struct dbk_sim_policy_ops *dbk_sim_policy_llm_d(void)
{
	return &ld_ops;
}
