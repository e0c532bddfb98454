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

#include <stdlib.h>

#include "blockindex.h"
#include "prompt.h"
#include "u64map.h"

#define LD_REFRESH_S 0.050
#define LD_W_QUEUE 2.0
#define LD_W_KV 2.0
#define LD_W_PREFIX 3.0
#define LD_BLOCK_TOKENS 16u /* 64 bytes at 4 bytes a token */
#define LD_MAX_BLOCKS 256u
#define LD_LRU_PER_SERVER 31250u
#define LD_MODEL_HASH 0x11dULL
#define LD_SEED 0x11dd5eedULL

struct llmd {
	uint64_t rng;
	struct dbk_blockindex index;
	uint64_t hashes[1 + LD_MAX_BLOCKS];
	uint32_t *match;
	unsigned *ties;
};

static void ld_fini(void *st)
{
	struct llmd *p = st;

	dbk_blockindex_free(&p->index);
	free(p->match);
	free(p->ties);
}

static int ld_init(void *st, const struct dbk_sim_policy_env *env)
{
	struct llmd *p = st;

	p->rng = LD_SEED;
	p->match = calloc(env->cfg->ninstances, sizeof(*p->match));
	p->ties = calloc(env->cfg->ninstances, sizeof(*p->ties));
	if (!p->match || !p->ties)
		return -1;
	return dbk_blockindex_init(&p->index, env->cfg->ninstances, LD_LRU_PER_SERVER);
}

/* The peer's hashPrompt over r's text: the model's hash, then one per
 * whole 64-byte block up to 256 blocks. */
static size_t hash_prompt(const struct dbk_sim_req *r, uint64_t *out)
{
	size_t nb = r->input_tokens / LD_BLOCK_TOKENS, j, n = 0;
	uint64_t chain = 0;
	uint32_t seg = UINT32_MAX;
	const uint32_t per_seg = DBK_TRACE_BLOCK_TOKENS / LD_BLOCK_TOKENS;

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
		out[n++] = dbk_u64map_mix64_pair(chain, j % per_seg);
	}
	return n;
}

static double key_waiting(const void *ctx, const struct dbk_sim *s, unsigned i)
{
	(void)ctx;
	return dbk_sim_scraped(s, i)->waiting;
}

static double key_neg_waiting(const void *ctx, const struct dbk_sim *s, unsigned i)
{
	return -key_waiting(ctx, s, i);
}

static int ld_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	struct llmd *p = st;
	size_t nh = hash_prompt(r, p->hashes);
	uint32_t qmin = dbk_sim_scraped(s, dbk_sim_least(s, 0, key_waiting, NULL))->waiting;
	uint32_t qmax = dbk_sim_scraped(s, dbk_sim_least(s, 0, key_neg_waiting, NULL))->waiting;
	unsigned i, n = dbk_sim_ninstances(s), nties = 0, pick;
	double best = -1;

	dbk_blockindex_match(&p->index, p->hashes, nh, p->match);
	for (i = 0; i < n; i++) {
		if (!dbk_sim_usable(s, i)) /* not a pod of the pool now */
			continue;
		const struct dbk_sim_scrape *x = dbk_sim_scraped(s, i);
		double q = qmax == qmin ? 1.0 : (double)(qmax - x->waiting) / (double)(qmax - qmin);
		double pre = nh ? (double)p->match[i] / (double)nh : 0.0;
		double score = LD_W_QUEUE * q + LD_W_KV * (1.0 - x->kv_usage) + LD_W_PREFIX * pre;

		if (score > best) {
			best = score;
			nties = 0;
		}
		if (score == best)
			p->ties[nties++] = i;
	}
	pick = p->ties[dbk_u64map_mix64(p->rng++) % nties];
	if (dbk_blockindex_add(&p->index, p->hashes, nh, pick) != 0)
		return DBK_SIM_POLICY_ERROR;
	return (int)pick;
}

/* The picker scores the pods of its datastore only, from which the pod
 * reconciler deletes a pod that is deleted, no longer matches the pool
 * or is not Ready (kubernetes-sigs/gateway-api-inference-extension,
 * pkg/epp/controller/pod_reconciler.go at commit
 * 60c5ab8f0950282fbfb6bdf1b5515740e3b441e9: PodDelete); its indexer keys
 * blocks by pod, so a new pod in the slot starts with none. */
static void ld_member(void *st, const struct dbk_sim *s, unsigned i, bool usable, bool fresh)
{
	(void)s;
	(void)usable;
	if (fresh)
		dbk_blockindex_clear(&((struct llmd *)st)->index, i);
}

DBK_SIM_POLICY_OPS(llm_d, struct llmd, ld, .scrape = true, .tick_s = LD_REFRESH_S,
                   .member = ld_member);
