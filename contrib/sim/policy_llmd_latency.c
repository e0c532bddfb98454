/* llm_d_latency: llm-d's endpoint picker with its predicted-latency
 * profile, what the chart configures when latencyPredictor.enabled is
 * set (off by default). Modelled from llm-d/llm-d-router at commit
 * ebab687927f5331c1b39defcb579a07951bce56c and its predictor sidecars,
 * llm-d/llm-d-latency-predictor at commit
 * 04e44cd801d5d79a215d99109081b6afb870b87e (latpred.h):
 *   the profile, config/charts/routerlib/templates/_config.yaml and
 *     values.yaml: predicted-latency-producer, a strict
 *     prefix-cache-affinity-filter (affinityThreshold 0.99), the
 *     slo-headroom-tier-filter, a loose one (0.80), the latency-scorer
 *     and the weighted-random-picker, every plugin at its defaults but
 *     the filters' ttftSource latencyPredictor and maxTTFTPenaltyMs
 *     5000; the sidecars retrain every 10 s
 *     (LATENCY_RETRAINING_INTERVAL_SEC), the prediction server syncs
 *     every 30 s (MODEL_SYNC_INTERVAL_SEC), objective mean;
 *   the producer, pkg/epp/framework/plugins/requestcontrol/dataproducer/
 *     predictedlatency/ (dataproducer_hooks.go: Produce;
 *     prediction.go: generatePredictions, validatePrediction;
 *     training.go; requestcontrol_hooks.go: PreRequest, ResponseBody);
 *   the in-flight load it reads, .../dataproducer/inflightload/producer.go
 *     (requests dispatched and not ended; uncached prompt tokens,
 *     released at the first chunk);
 *   the prefix match, .../dataproducer/approximateprefix/plugin.go and
 *     types.go (the block index of blockindex.h: blocks of 64 tokens,
 *     the floor GetBlockSize puts on vLLM's 16; at most 131072 tokens
 *     matched; AutoTune's LRU capacity, the pod's vLLM cache blocks);
 *   the filters, pkg/epp/framework/plugins/scheduling/filter/
 *     prefixcacheaffinity/plugin.go and sloheadroomtier/plugin.go
 *     (epsilonExploreNeg 0.01);
 *   the scorer, .../scheduling/scorer/latency/plugin.go (least, TTFT 0.8
 *     and TPOT 0.2, min-max normalised |headroom|, weights 1..101 / 100;
 *     with no pod within both SLOs: the idle pods, else the pods missing
 *     TPOT only, then TTFT only, then both);
 *   the picker, .../scheduling/picker/weightedrandom/picker.go (A-Res:
 *     the largest u^(1/score)).
 *
 * What a request carries: the simulator's objectives as its SLO headers
 * (--slo-ttft-ms, --slo-tpot-ms), as a user who sets them to their SLO.
 * Streaming mode (the producer's streamingMode: true; the chart leaves
 * it false, which trains end-to-end latency as "TTFT" and neutralises
 * TPOT): the simulator's clients stream, and the peer is run as such a
 * user would configure it, real TTFT and TPOT trained.
 *
 * Per pod, what the producer sends the prediction server: KV use and
 * waiting requests from the pod's last scrape (every 50 ms, each pod at
 * its own phase, as policy_llmd.c), the input length, the requests it
 * dispatched there and not ended (InFlightLoad.Requests, which the
 * producer sends as num_request_running), the uncached prompt tokens of
 * those not yet at their first token, the prefix score (matched over
 * total blocks), one token generated. Training samples as the producer
 * records them: TTFT at the first chunk (dispatch to first token, whole
 * ms) with the dispatch-time features; TPOT at the end ((end-to-end -
 * TTFT) / (tokens - 1), a chunk a token) with the same features but the
 * prefix, recorded as 0 (the metrics the producer refreshes per chunk
 * are the scheduling cycle's copy: pkg/epp/requestcontrol/director.go,
 * toSchedulerEndpoints). The client flushes samples every second; the
 * training server retrains every 10 s from the first arrival on, the
 * prediction server serves what it downloads 15 s into each 30 s (their
 * phases are not specified; this one is a choice).
 *
 * The model: Bayesian ridge (bayesridge.h), the predictor's documented
 * fallback when XGBoost is missing, run as the training server runs it.
 * The chart's model is XGBoost (200 trees of depth 6, learning rate
 * 0.05, subsample 0.8, hist, squared error with the mean objective):
 * not modelled here.
 * Adding it as a variant would take libxgboost-dev (Debian has 1.7.4),
 * a DMatrix built from the same rows with the prefix bucket as a
 * categorical, XGBoosterUpdateOneIter 200 times per retrain, and the
 * prediction server's copy swapped at each sync; its cost per retrain
 * is far above the ridge's, so a run would take minutes, not seconds.
 *
 * Before the first retrain the sidecars serve their default model, 10 ms
 * for every pod (latpred.h): every pod is within both SLOs with equal
 * headroom, so each scores 0.51 and the draw is uniform among the pods
 * the affinity filters keep. The scorer's composite fallback (KV,
 * queue, prefix) runs only when the prediction call fails (sidecar down
 * or timed out), which does not happen here; it is not modelled. The
 * chart's readiness probes keep the pod out of the pool until the
 * prediction server has a model, so the fallback is not the cold start.
 *
 * Left out: the latency-slo-admitter (it sheds sheddable requests only,
 * priority < 0, which the simulator's requests are not), the pod's TPOT
 * SLO queue (every request carries the same TPOT SLO, so the tightest of
 * a pod's running requests is the request's own), and the coalescing of
 * prediction calls (a 1 ms window: predictions are made at the
 * decision).
 *
 * llm_d_latency_most (by name only): the same with the scorer's other
 * strategy, headroomSelectionStrategy "most" (the most headroom first),
 * which a user may configure; not the chart's. */
#include "policy.h"

#include <math.h>
#include <stdlib.h>

#include "blockindex.h"
#include "latpred.h"
#include "lib/array.h"
#include "prompt.h"
#include "snapshot.h"
#include "u64map.h"

#define LL_REFRESH_S 0.050
#define LL_PHASES 8u
#define LL_TICKS_PER_S 160u /* ticks of LL_REFRESH_S / LL_PHASES */
#define LL_FLUSH_TICKS LL_TICKS_PER_S
#define LL_RETRAIN_TICKS (10u * LL_TICKS_PER_S)
#define LL_SYNC_TICKS (30u * LL_TICKS_PER_S)
#define LL_SYNC_PHASE_TICKS (15u * LL_TICKS_PER_S)
#define LL_BLOCK_TOKENS 64u
#define LL_MAX_BLOCKS (131072u / LL_BLOCK_TOKENS)
#define LL_VLLM_BLOCK_TOKENS 16u
#define LL_MODEL_HASH 0x11dULL
#define LL_SEED 0x1a7e5eedULL
#define LL_STRICT_AFFINITY 0.99
#define LL_LOOSE_AFFINITY 0.80
#define LL_MAX_TTFT_PENALTY_MS 5000.0
#define LL_EPSILON_EXPLORE_NEG 0.01
#define LL_W_TTFT 0.8
#define LL_W_TPOT 0.2
#define LL_W_MAX 100
#define LL_EPS 1e-9

/* A pod the pipeline is choosing among. */
struct ll_cand {
	unsigned inst;
	unsigned dispatched; /* LatencyPredictionInfo.DispatchedRequestCount */
	struct dbk_latpred_row row;
	double ttft_h, tpot_h, ttft_ms;
	double score;
};

/* A request the picker dispatched: the producer's context. */
struct ll_req {
	double dispatch_s;
	struct dbk_latpred_row row; /* the TTFT sample's features */
	double uncached;            /* its prefill tokens in flight */
	bool live, ttft_sent;
};

struct ll_sample {
	enum dbk_latpred_target t;
	struct dbk_latpred_row row;
	double ms;
	uint64_t key;
};

struct llmd_lat {
	uint64_t rng;
	bool most; /* headroomSelectionStrategy "most" */
	double first_tick;
	double slo_ttft_ms, slo_tpot_ms;
	struct dbk_sim_snapshot snap;
	unsigned char *phase;
	struct dbk_blockindex index;
	bool indexed;
	uint64_t hashes[LL_MAX_BLOCKS];
	uint32_t *match;
	struct ll_cand *cand;
	struct ll_req *req;
	size_t nreq, live;
	struct ll_sample *pend; /* the client's buffer, flushed each second */
	size_t npend, cappend;
	struct dbk_latpred pred;
};

static void ll_fini(void *st)
{
	struct llmd_lat *p = st;

	if (p->indexed)
		dbk_blockindex_free(&p->index);
	dbk_sim_snapshot_free(&p->snap);
	dbk_latpred_free(&p->pred);
	free(p->phase);
	free(p->match);
	free(p->cand);
	free(p->req);
	free(p->pend);
}

static int ll_init(void *st, const struct dbk_sim_policy_env *env)
{
	struct llmd_lat *p = st;
	const struct dbk_sim_config *c = env->cfg;
	unsigned n = c->ninstances;

	p->rng = LL_SEED;
	p->most = *(const bool *)env->arg;
	p->first_tick = -1;
	p->slo_ttft_ms = c->slo.ttft_s * 1000;
	p->slo_tpot_ms = c->slo.tpot_s * 1000;
	dbk_latpred_init(&p->pred);
	p->phase = calloc(n, 1);
	p->match = calloc(n, sizeof(*p->match));
	p->cand = calloc(n, sizeof(*p->cand));
	if (!p->phase || !p->match || !p->cand || dbk_sim_snapshot_init(&p->snap, n) != 0)
		return -1;
	for (unsigned i = 0; i < n; i++)
		p->phase[i] = (unsigned char)dbk_sim_snapshot_phase(i, LL_PHASES);
	return 0;
}

/* What the first decision sets up: the producer's contexts and the
 * indexer, AutoTune sizing its LRU by the pods' vLLM cache blocks (the
 * first pod's: the indexer here has one size for all). */
static int ll_first(struct llmd_lat *p, const struct dbk_sim *s)
{
	uint64_t blocks = dbk_sim_engine_config(s, 0)->kv_capacity_tokens / LL_VLLM_BLOCK_TOKENS;

	p->nreq = dbk_sim_nrequests(s);
	if (!(p->req = calloc(p->nreq ? p->nreq : 1, sizeof(*p->req))) ||
	    dbk_blockindex_init(&p->index, dbk_sim_ninstances(s),
	                        (uint32_t)(blocks > UINT32_MAX ? UINT32_MAX
	                                   : blocks            ? blocks
	                                                       : 1)) != 0)
		return -1;
	p->indexed = true;
	return 0;
}

static double uniform(struct llmd_lat *p)
{
	return (double)(dbk_u64map_mix64(p->rng++) >> 11) * 0x1.0p-53;
}

/* The approximate prefix producer's hashes of r's prompt: one per whole
 * block of 64 tokens, at most 131072 tokens' worth, chained from a seed
 * standing for the model name. */
static size_t hash_prompt(const struct dbk_sim_req *r, uint64_t *out)
{
	size_t nb = r->input_tokens / LL_BLOCK_TOKENS, j;
	uint64_t chain = 0;
	uint32_t seg = UINT32_MAX;
	const uint32_t per_seg = DBK_TRACE_BLOCK_TOKENS / LL_BLOCK_TOKENS;

	if (nb > LL_MAX_BLOCKS)
		nb = LL_MAX_BLOCKS;
	for (j = 0; j < nb; j++) {
		uint32_t sj = (uint32_t)(j / per_seg);

		while (seg == UINT32_MAX || seg < sj) {
			seg = seg == UINT32_MAX ? 0 : seg + 1;
			chain = dbk_sim_prompt_chain(r, seg, chain);
		}
		out[j] = dbk_u64map_mix64_pair(dbk_u64map_mix64_pair(LL_MODEL_HASH, chain),
		                               j % per_seg);
	}
	return nb;
}

/* The in-flight load producer's tokens for pod i: the uncached prompt
 * tokens of the requests sent there that have had no token yet. */
static double prefill_in_flight(const struct llmd_lat *p, const struct dbk_sim *s, unsigned i)
{
	double tokens = 0;

	for (uint32_t id = dbk_sim_live_first(s, i); id != DBK_SIM_NONE;
	     id = dbk_sim_live_next(s, id))
		if (id < p->nreq && p->req[id].live && dbk_sim_outcome(s, id)->tokens == 0)
			tokens += p->req[id].uncached;
	return tokens;
}

/* ---- The filters, each keeping its survivors in order. ---- */

static size_t keep(struct ll_cand *c, size_t n, bool (*want)(const struct ll_cand *, double),
                   double arg)
{
	size_t k = 0;

	for (size_t j = 0; j < n; j++)
		if (want(&c[j], arg))
			c[k++] = c[j];
	return k;
}

static bool sticky(const struct ll_cand *c, double threshold) { return c->row.prefix >= threshold; }

static bool positive(const struct ll_cand *c, double unused)
{
	(void)unused;
	return c->ttft_h >= 0 && c->tpot_h >= 0;
}

static bool negative(const struct ll_cand *c, double unused) { return !positive(c, unused); }

/* prefix-cache-affinity-filter: the pods whose prefix score reaches the
 * threshold, unless none does or the best of them is predicted more
 * than 5 s slower to a first token than the best of the others. */
static size_t affinity(struct ll_cand *c, size_t n, double threshold)
{
	double best_in = HUGE_VAL, best_out = HUGE_VAL;
	size_t nin = 0;

	if (n <= 1)
		return n;
	for (size_t j = 0; j < n; j++) {
		if (sticky(&c[j], threshold)) {
			nin++;
			best_in = fmin(best_in, c[j].ttft_ms);
		} else
			best_out = fmin(best_out, c[j].ttft_ms);
	}
	if (nin == 0 || (nin < n && best_in - best_out > LL_MAX_TTFT_PENALTY_MS))
		return n;
	return keep(c, n, sticky, threshold);
}

/* slo-headroom-tier-filter: the pods within both SLOs, but 1% of the
 * time (when both tiers have pods) the others. */
static size_t tier(struct llmd_lat *p, struct ll_cand *c, size_t n)
{
	size_t npos = 0;

	if (n <= 1)
		return n;
	for (size_t j = 0; j < n; j++)
		npos += positive(&c[j], 0);
	if (npos == 0 || npos == n)
		return n;
	if (uniform(p) < LL_EPSILON_EXPLORE_NEG)
		return keep(c, n, negative, 0);
	return keep(c, n, positive, 0);
}

/* ---- The latency scorer. ---- */

/* scoreBucket over the pods of c for which in(c) holds: "least", or
 * "most" when most is set. */
static void score_bucket(struct ll_cand *c, size_t n, bool (*in)(const struct ll_cand *, double),
                         double arg, bool most)
{
	double lo_t = HUGE_VAL, hi_t = -HUGE_VAL, lo_p = HUGE_VAL, hi_p = -HUGE_VAL;
	double a = LL_W_TTFT / (LL_W_TTFT + LL_W_TPOT), b = LL_W_TPOT / (LL_W_TTFT + LL_W_TPOT);
	double range_t, range_p;

	for (size_t j = 0; j < n; j++)
		if (in(&c[j], arg)) {
			lo_t = fmin(lo_t, fabs(c[j].ttft_h));
			hi_t = fmax(hi_t, fabs(c[j].ttft_h));
			lo_p = fmin(lo_p, fabs(c[j].tpot_h));
			hi_p = fmax(hi_p, fabs(c[j].tpot_h));
		}
	range_t = hi_t - lo_t;
	range_p = hi_p - lo_p;
	if (range_t <= LL_EPS && range_p > LL_EPS) {
		a = 0;
		b = 1;
	} else if (range_p <= LL_EPS && range_t > LL_EPS) {
		a = 1;
		b = 0;
	}
	for (size_t j = 0; j < n; j++) {
		double nt, np, combined;

		if (!in(&c[j], arg))
			continue;
		nt = range_t > LL_EPS ? (fabs(c[j].ttft_h) - lo_t) / range_t : 0.5;
		np = range_p > LL_EPS ? (fabs(c[j].tpot_h) - lo_p) / range_p : 0.5;
		combined = a * nt + b * np;
		c[j].score = (double)((int)((most ? combined : 1.0 - combined) * LL_W_MAX) + 1) /
		             LL_W_MAX;
	}
}

static bool idle(const struct ll_cand *c, double unused)
{
	(void)unused;
	return c->dispatched == 0;
}

/* Which SLOs a pod misses: 1 TPOT only, 2 TTFT only, 3 both. */
static bool misses(const struct ll_cand *c, double which)
{
	bool t = c->ttft_h < 0, q = c->tpot_h < 0;

	return (t ? 2 : 0) + (q ? 1 : 0) == (int)which;
}

/* With no pod within both SLOs, "least" whatever the strategy: the
 * smallest deficit. */
static void score(struct ll_cand *c, size_t n, bool most)
{
	size_t npos = 0, nidle = 0;

	for (size_t j = 0; j < n; j++) {
		c[j].score = 0;
		npos += positive(&c[j], 0);
		nidle += idle(&c[j], 0);
	}
	if (npos > 0) {
		score_bucket(c, n, positive, 0, most);
		return;
	}
	if (nidle > 0) {
		score_bucket(c, n, idle, 0, false);
		return;
	}
	for (int which = 1; which <= 3; which++)
		for (size_t j = 0; j < n; j++)
			if (misses(&c[j], which)) {
				score_bucket(c, n, misses, which, false);
				return;
			}
}

/* weighted-random-picker: A-Res, the largest u^(1/score); a uniform
 * draw when every score is 0. */
static size_t pick(struct llmd_lat *p, const struct ll_cand *c, size_t n)
{
	double best = -1;
	size_t at = 0;

	for (size_t j = 0; j < n; j++) {
		double u, key;

		if (c[j].score <= 0)
			continue;
		u = uniform(p);
		key = pow(u > 0 ? u : 1e-10, 1.0 / c[j].score);
		if (key > best) {
			best = key;
			at = j;
		}
	}
	return best >= 0 ? at : (size_t)(uniform(p) * (double)n) % n;
}

/* ---- Samples. ---- */

static int push(struct llmd_lat *p, enum dbk_latpred_target t, const struct dbk_latpred_row *row,
                double ms, uint32_t id)
{
	struct ll_sample *a = dbk_array_room(p->pend, &p->cappend, p->npend, sizeof(*a), 256);

	if (!a)
		return -1;
	p->pend = a;
	a[p->npend++] = (struct ll_sample){ t, *row, ms, (uint64_t)id * 2 + t };
	return 0;
}

static double whole_ms(double s) { return floor(s * 1000); }

/* The producer's TTFT sample of request id, once its first token came. */
static int ttft_sample(struct llmd_lat *p, const struct dbk_sim *s, uint32_t id)
{
	struct ll_req *q = &p->req[id];
	const struct dbk_sim_outcome *o = dbk_sim_outcome(s, id);

	if (q->ttft_sent || o->tokens == 0)
		return 0;
	q->ttft_sent = true;
	return push(p, DBK_LATPRED_TTFT, &q->row, whole_ms(o->first_token_s - q->dispatch_s), id);
}

/* The client's flush: the first tokens seen since the last one, then
 * everything buffered to the training server. */
static int flush(struct llmd_lat *p, const struct dbk_sim *s)
{
	for (unsigned i = 0; i < dbk_sim_ninstances(s); i++)
		for (uint32_t id = dbk_sim_live_first(s, i); id != DBK_SIM_NONE;
		     id = dbk_sim_live_next(s, id))
			if (id < p->nreq && p->req[id].live && ttft_sample(p, s, id) != 0)
				return -1;
	for (size_t k = 0; k < p->npend; k++)
		if (dbk_latpred_add(&p->pred, p->pend[k].t, &p->pend[k].row, p->pend[k].ms,
		                    p->pend[k].key) != 0)
			return -1;
	p->npend = 0;
	return 0;
}

/* ---- The policy. ---- */

static int ll_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	struct llmd_lat *p = st;
	size_t nh = hash_prompt(r, p->hashes), n = 0, at;
	struct ll_cand *c = p->cand;
	struct ll_req *q;

	if (!p->indexed && ll_first(p, s) != 0)
		return DBK_SIM_POLICY_ERROR;
	dbk_blockindex_match(&p->index, p->hashes, nh, p->match);
	for (unsigned i = 0; i < dbk_sim_ninstances(s); i++) {
		const struct dbk_sim_scrape *x = dbk_sim_snapshot_get(&p->snap, i);
		struct ll_cand *k = &c[n];
		double ttft, tpot;

		if (!dbk_sim_usable(s, i))
			continue;
		k->inst = i;
		k->dispatched = dbk_sim_inflight(s, i);
		k->row = (struct dbk_latpred_row){
			.kv = x->kv_usage,
			.input = r->input_tokens,
			.waiting = x->waiting,
			.running = k->dispatched,
			.prefill_tif = prefill_in_flight(p, s, i),
			.prefix = nh ? (double)p->match[i] / (double)nh : 0.0,
		};
		dbk_latpred_predict(&p->pred, &k->row, &ttft, &tpot);
		k->ttft_ms = ttft;
		k->ttft_h = p->slo_ttft_ms - ttft;
		k->tpot_h = p->slo_tpot_ms - tpot;
		n++;
	}
	if (n == 0)
		return DBK_SIM_REFUSE;
	n = affinity(c, n, LL_STRICT_AFFINITY);
	n = tier(p, c, n);
	n = affinity(c, n, LL_LOOSE_AFFINITY);
	score(c, n, p->most);
	at = pick(p, c, n);
	if (r->id >= p->nreq)
		return DBK_SIM_POLICY_ERROR;
	q = &p->req[r->id];
	p->live += !q->live;
	*q = (struct ll_req){ .dispatch_s = dbk_sim_now(s), .row = c[at].row, .live = true };
	/* uncachedInputTokens: the blocks not matched, and the tail past
	 * the last whole block. */
	q->uncached = (double)r->input_tokens - (double)(p->match[c[at].inst] * LL_BLOCK_TOKENS);
	if (dbk_blockindex_add(&p->index, p->hashes, nh, c[at].inst) != 0)
		return DBK_SIM_POLICY_ERROR;
	return (int)c[at].inst;
}

/* The producer at the end of the stream: the TTFT sample if the flush
 * has not taken it yet, and the TPOT sample. */
static void ll_release(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r,
                       unsigned inst)
{
	struct llmd_lat *p = st;
	const struct dbk_sim_outcome *o = dbk_sim_outcome(s, r->id);
	struct ll_req *q;
	double ttft, e2e;

	(void)inst;
	if (r->id >= p->nreq || !p->req[r->id].live)
		return;
	q = &p->req[r->id];
	q->live = false;
	p->live--;
	if (o->tokens == 0)
		return;
	/* Memory short for a sample: the sample is lost, as the client's
	 * buffer drops samples; the run goes on. */
	(void)ttft_sample(p, s, r->id);
	ttft = whole_ms(o->first_token_s - q->dispatch_s);
	e2e = whole_ms(o->last_token_s - q->dispatch_s);
	if (ttft > 0 && o->tokens > 1) {
		struct dbk_latpred_row row = q->row;

		row.prefix = 0;
		(void)push(p, DBK_LATPRED_TPOT, &row, (e2e - ttft) / (double)(o->tokens - 1),
		           r->id);
	}
}

static void ll_tick(void *st, const struct dbk_sim *s)
{
	struct llmd_lat *p = st;
	double now = dbk_sim_now(s);
	uint64_t k;

	if (p->first_tick < 0)
		p->first_tick = now;
	k = (uint64_t)llround((now - p->first_tick) / (LL_REFRESH_S / LL_PHASES));
	for (unsigned i = 0; i < p->snap.n; i++)
		if (p->phase[i] == k % LL_PHASES)
			dbk_sim_snapshot_scrape_one(&p->snap, s, i);
	/* A flush or a retrain short of memory leaves the predictor as it
	 * was; the next one tries again. */
	if (k % LL_FLUSH_TICKS == 0)
		(void)flush(p, s);
	if (k > 0 && k % LL_RETRAIN_TICKS == 0)
		(void)dbk_latpred_train(&p->pred);
	if (k % LL_SYNC_TICKS == LL_SYNC_PHASE_TICKS)
		dbk_latpred_sync(&p->pred);
}

/* As llm_d: a new pod's name has no blocks in the indexer. */
static void ll_member(void *st, const struct dbk_sim *s, unsigned i, bool usable, bool fresh)
{
	(void)s;
	(void)usable;
	if (fresh && ((struct llmd_lat *)st)->indexed)
		dbk_blockindex_clear(&((struct llmd_lat *)st)->index, i);
}

static void ll_stats(const void *st, struct dbk_sim_policy_stats *out)
{
	out->leases = ((const struct llmd_lat *)st)->live;
}

static const bool ll_least = false, ll_most = true;

DBK_SIM_POLICY_OPS(llm_d_latency, struct llmd_lat, ll, .arg = &ll_least, .release = ll_release,
                   .tick = ll_tick, .tick_s = LL_REFRESH_S / LL_PHASES, .member = ll_member,
                   .stats = ll_stats);
/* By name only: the scorer's other strategy (headroomSelectionStrategy
 * "most"), the most headroom first; not the chart's. */
DBK_SIM_POLICY_OPS(llm_d_latency_most, struct llmd_lat, ll, .arg = &ll_most, .release = ll_release,
                   .tick = ll_tick, .tick_s = LL_REFRESH_S / LL_PHASES, .member = ll_member,
                   .stats = ll_stats, .extra = true);
