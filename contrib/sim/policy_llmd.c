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
 *     .../plugins/prefixcachescorer/plugin.go at commit
 *     a172f54a01a5d54ae4933897316a175f880c30ad (hash block 64 bytes, at
 *     most 256 blocks matched, 31250 blocks remembered per server; the
 *     model name seeds the first block's hash, hashPrompt);
 *   the metrics refresh interval, 50 ms (--refresh-metrics-interval),
 *     each pod on its own timer (one collector per pod, started when the
 *     pod joins the datastore), so the pods are scraped at different
 *     phases of the interval.
 *
 * Scores, each 0..1, from each pod's last scrape (snapshot.h) and the
 * indexer:
 *   queue   (max waiting - waiting) / (max - min) over the instances;
 *           1 for all when every queue is equal;
 *   kv      1 - vllm:kv_cache_usage_perc;
 *   prefix  the longest prefix match in blocks / the request's blocks,
 *           blocks of 64 bytes (16 tokens) chained over the prompt from
 *           a seed standing for the model name; prompts under 64 bytes
 *           have none and score 0 everywhere.
 * The request goes to the highest 2 x queue + 2 x kv + 3 x prefix, ties
 * broken at random (the picker shuffles; fixed seed here), and its block
 * hashes are then recorded for that instance (the plugin's PreRequest).
 *
 * Pod i's phase is frac(i x 0.618...) of the interval, rounded to an
 * eighth of it: the picker here ticks every 6.25 ms and scrapes the pods
 * whose eighth it is.
 *
 * llm_d_active: the same profile plus llm-d's active-request scorer,
 * the fix llm-d documents for a burst herding onto one pod between two
 * scrapes: llm-d/llm-d-inference-scheduler,
 * pkg/plugins/scorer/active_request.go at commit
 * d5cbb3224910773dfdc9ccd3976aa789990fe78f: the picker's own count of
 * requests it sent to a pod that have not completed, scored
 * (max - count) / max (1 when the pod has none), weight 2 here. The
 * count moves with every decision, so the requests of a burst spread. */
#include "policy.h"

#include <math.h>
#include <stdlib.h>

#include "blockindex.h"
#include "prompt.h"
#include "snapshot.h"
#include "u64map.h"

#define LD_REFRESH_S 0.050
#define LD_PHASES 8u
#define LD_GOLDEN 0.6180339887498949
#define LD_W_QUEUE 2.0
#define LD_W_KV 2.0
#define LD_W_PREFIX 3.0
#define LD_W_ACTIVE 2.0
#define LD_BLOCK_TOKENS 16u /* 64 bytes at 4 bytes a token */
#define LD_MAX_BLOCKS 256u
#define LD_LRU_PER_SERVER 31250u
#define LD_MODEL_HASH 0x11dULL
#define LD_SEED 0x11dd5eedULL

struct llmd {
	uint64_t rng;
	bool active; /* with the active-request scorer */
	double first_tick;
	struct dbk_sim_snapshot snap;
	unsigned char *phase; /* each pod's eighth of the interval */
	struct dbk_blockindex index;
	uint64_t hashes[LD_MAX_BLOCKS];
	uint32_t *match;
	unsigned *ties;
};

static const bool ld_default = false, ld_with_active = true;

static void ld_fini(void *st)
{
	struct llmd *p = st;

	dbk_blockindex_free(&p->index);
	dbk_sim_snapshot_free(&p->snap);
	free(p->phase);
	free(p->match);
	free(p->ties);
}

static int ld_init(void *st, const struct dbk_sim_policy_env *env)
{
	struct llmd *p = st;
	unsigned n = env->cfg->ninstances;

	p->rng = LD_SEED;
	p->active = *(const bool *)env->arg;
	p->first_tick = -1;
	p->phase = calloc(n, 1);
	p->match = calloc(n, sizeof(*p->match));
	p->ties = calloc(n, sizeof(*p->ties));
	if (!p->phase || !p->match || !p->ties || dbk_sim_snapshot_init(&p->snap, n) != 0)
		return -1;
	for (unsigned i = 0; i < n; i++) {
		double f = (double)i * LD_GOLDEN;

		p->phase[i] = (unsigned char)((f - (double)(uint64_t)f) * LD_PHASES);
	}
	return dbk_blockindex_init(&p->index, n, LD_LRU_PER_SERVER);
}

/* Every eighth of the interval: the pods whose phase it is. */
static void ld_tick(void *st, const struct dbk_sim *s)
{
	struct llmd *p = st;
	double now = dbk_sim_now(s);
	uint64_t k;

	if (p->first_tick < 0)
		p->first_tick = now;
	k = (uint64_t)llround((now - p->first_tick) / (LD_REFRESH_S / LD_PHASES));
	for (unsigned i = 0; i < p->snap.n; i++)
		if (p->phase[i] == k % LD_PHASES)
			dbk_sim_snapshot_scrape_one(&p->snap, s, i);
}

/* The peer's hashPrompt over r's text: one hash per whole 64-byte block
 * up to 256 blocks, chained from a seed standing for the model name. */
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
	for (j = 0; j < nb; j++) {
		uint32_t sj = (uint32_t)(j / per_seg);

		while (seg == UINT32_MAX || seg < sj) {
			seg = seg == UINT32_MAX ? 0 : seg + 1;
			chain = dbk_sim_prompt_chain(r, seg, chain);
		}
		out[n++] = dbk_u64map_mix64_pair(dbk_u64map_mix64_pair(LD_MODEL_HASH, chain),
		                                 j % per_seg);
	}
	return n;
}

static double key_waiting(const void *ctx, const struct dbk_sim *s, unsigned i)
{
	(void)s;
	return dbk_sim_snapshot_get(ctx, i)->waiting;
}

static double key_neg_waiting(const void *ctx, const struct dbk_sim *s, unsigned i)
{
	return -key_waiting(ctx, s, i);
}

/* The active-request scorer's count: the requests the picker sent to i
 * that have not completed, which one picker sees as i's in-flight count. */
static double key_neg_active(const void *ctx, const struct dbk_sim *s, unsigned i)
{
	(void)ctx;
	return -(double)dbk_sim_inflight(s, i);
}

static double score_active(unsigned count, unsigned max)
{
	return count == 0 || max == 0 ? 1.0 : (double)(max - count) / (double)max;
}

static int ld_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	struct llmd *p = st;
	const struct dbk_sim_snapshot *sn = &p->snap;
	size_t nh = hash_prompt(r, p->hashes);
	uint32_t qmin = dbk_sim_snapshot_get(sn, dbk_sim_least(s, 0, key_waiting, sn))->waiting;
	uint32_t qmax = dbk_sim_snapshot_get(sn, dbk_sim_least(s, 0, key_neg_waiting, sn))->waiting;
	unsigned amax = dbk_sim_inflight(s, dbk_sim_least(s, 0, key_neg_active, NULL));
	unsigned i, n = dbk_sim_ninstances(s), nties = 0, pick;
	double best = -1;

	dbk_blockindex_match(&p->index, p->hashes, nh, p->match);
	for (i = 0; i < n; i++) {
		if (!dbk_sim_usable(s, i)) /* not a pod of the pool now */
			continue;
		const struct dbk_sim_scrape *x = dbk_sim_snapshot_get(sn, i);
		double q = qmax == qmin ? 1.0 : (double)(qmax - x->waiting) / (double)(qmax - qmin);
		double pre = nh ? (double)p->match[i] / (double)nh : 0.0;
		double score = LD_W_QUEUE * q + LD_W_KV * (1.0 - x->kv_usage) + LD_W_PREFIX * pre;

		if (p->active)
			score += LD_W_ACTIVE * score_active(dbk_sim_inflight(s, i), amax);
		if (score > best) {
			best = score;
			nties = 0;
		}
		if (score == best)
			p->ties[nties++] = i;
	}
	if (nties == 0)
		return DBK_SIM_REFUSE;
	pick = p->ties[dbk_u64map_mix64(p->rng++) % nties];
	if (dbk_blockindex_add(&p->index, p->hashes, nh, pick) != 0)
		return DBK_SIM_POLICY_ERROR;
	return (int)pick;
}

/* The pods' metrics as the datastore holds them, which the GIE's
 * saturation detector reads too (policy_llmd_shed.c). */
const struct dbk_sim_snapshot *dbk_sim_llmd_snapshot(const void *st)
{
	return &((const struct llmd *)st)->snap;
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

DBK_SIM_POLICY_OPS(llm_d, struct llmd, ld, .arg = &ld_default, .tick = ld_tick,
                   .tick_s = LD_REFRESH_S / LD_PHASES, .member = ld_member);
DBK_SIM_POLICY_OPS(llm_d_active, struct llmd, ld, .arg = &ld_with_active, .tick = ld_tick,
                   .tick_s = LD_REFRESH_S / LD_PHASES, .member = ld_member);
