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
 * count moves with every decision, so the requests of a burst spread.
 *
 * llm_d_lora: the default profile plus the GIE's LoRA affinity scorer
 * (issue 27), kubernetes-sigs/gateway-api-inference-extension,
 * pkg/epp/scheduling/framework/plugins/loraaffinityscorer/lora_affinity.go
 * at commit a172f54a01a5d54ae4933897316a175f880c30ad, on each pod's
 * scraped vllm:lora_requests_info (running_lora_adapters: its
 * ActiveModels; waiting_lora_adapters: WaitingModels; max_lora:
 * MaxActiveModels): 1 when the request's adapter is running there, 0.8
 * when running and waiting adapters number fewer than max_lora (room to
 * load it), 0.6 when it is waiting there, else 0; a base-model request
 * is no adapter of any pod, so it scores 0.8 or 0 by room alone, as the
 * plugin scores TargetModel. Weight 2 here, as the queue and KV scorers
 * (the plugin sets none; a profile does). The pool's pods are the
 * model's servers: the GIE maps a model (InferenceModel/ -Objective) to
 * one pool, so the candidates are the request's model's instances
 * (dbk_sim_usable while routing). */
#include "policy.h"

#include <math.h>
#include <stdlib.h>

#include "blockindex.h"
#include "prompt.h"
#include "snapshot.h"
#include "u64map.h"

#define LD_REFRESH_S 0.050
#define LD_PHASES 8u
#define LD_W_QUEUE 2.0
#define LD_W_KV 2.0
#define LD_W_PREFIX 3.0
#define LD_W_ACTIVE 2.0
#define LD_W_LORA 2.0
#define LD_LORA_CAP 64u     /* adapters with live requests kept per pod */
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
	/* llm_d_lora: each pod's vllm:lora_requests_info at its last
	 * scrape (nlora[i] adapters at lora[i * LD_LORA_CAP]) and max_lora. */
	bool lora_aware;
	struct dbk_engine_lora_count *lora;
	uint32_t *nlora, *max_lora;
};

struct ld_variant {
	bool active, lora;
};
static const struct ld_variant ld_default = { false, false }, ld_with_active = { true, false },
                               ld_with_lora = { false, true };

static void ld_fini(void *st)
{
	struct llmd *p = st;

	dbk_blockindex_free(&p->index);
	dbk_sim_snapshot_free(&p->snap);
	free(p->phase);
	free(p->match);
	free(p->ties);
	free(p->lora);
	free(p->nlora);
	free(p->max_lora);
}

static int ld_init(void *st, const struct dbk_sim_policy_env *env)
{
	struct llmd *p = st;
	unsigned n = env->cfg->ninstances;

	p->rng = LD_SEED;
	p->active = ((const struct ld_variant *)env->arg)->active;
	p->lora_aware = ((const struct ld_variant *)env->arg)->lora;
	if (p->lora_aware && (!(p->lora = calloc((size_t)n * LD_LORA_CAP, sizeof(*p->lora))) ||
	                      !(p->nlora = calloc(n, sizeof(*p->nlora))) ||
	                      !(p->max_lora = calloc(n, sizeof(*p->max_lora)))))
		return -1;
	p->first_tick = -1;
	p->phase = calloc(n, 1);
	p->match = calloc(n, sizeof(*p->match));
	p->ties = calloc(n, sizeof(*p->ties));
	if (!p->phase || !p->match || !p->ties || dbk_sim_snapshot_init(&p->snap, n) != 0)
		return -1;
	for (unsigned i = 0; i < n; i++)
		p->phase[i] = (unsigned char)dbk_sim_snapshot_phase(i, LD_PHASES);
	return dbk_blockindex_init(&p->index, n, LD_LRU_PER_SERVER);
}

/* Pod i's vllm:lora_requests_info as the stub exposes it: the adapters
 * with live requests, running or waiting, and max_lora. */
static void scrape_lora(struct llmd *p, const struct dbk_sim *s, unsigned i)
{
	const struct dbk_engine *e = dbk_sim_engine(s, i);
	size_t n = dbk_engine_lora_counts(e, &p->lora[(size_t)i * LD_LORA_CAP], LD_LORA_CAP);

	p->nlora[i] = (uint32_t)(n < LD_LORA_CAP ? n : LD_LORA_CAP);
	p->max_lora[i] = dbk_engine_max_loras(e);
}

/* The LoRA affinity scorer on pod i's last scrape. */
static double score_lora(const struct llmd *p, unsigned i, uint32_t lora)
{
	const struct dbk_engine_lora_count *c = &p->lora[(size_t)i * LD_LORA_CAP];
	uint32_t listed = 0;
	bool running = false, waiting = false;

	for (uint32_t k = 0; k < p->nlora[i]; k++) {
		/* An adapter is in each list it has requests in. */
		listed += (c[k].running > 0) + (c[k].waiting > 0);
		running |= c[k].id == lora && c[k].running > 0;
		waiting |= c[k].id == lora && c[k].waiting > 0;
	}
	if (lora && running)
		return 1.0;
	if (listed < p->max_lora[i])
		return 0.8;
	return lora && waiting ? 0.6 : 0.0;
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
		if (p->phase[i] == k % LD_PHASES) {
			dbk_sim_snapshot_scrape_one(&p->snap, s, i);
			if (p->lora_aware)
				scrape_lora(p, s, i);
		}
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
		if (p->lora_aware)
			score += LD_W_LORA * score_lora(p, i, r->lora);
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
/* Only by name: without adapters it is llm_d with a constant added. */
DBK_SIM_POLICY_OPS(llm_d_lora, struct llmd, ld, .arg = &ld_with_lora, .tick = ld_tick,
                   .tick_s = LD_REFRESH_S / LD_PHASES, .member = ld_member, .extra = true);
