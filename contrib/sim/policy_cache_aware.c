/* cache_aware: the default policy of SGLang's model gateway and of the
 * vLLM Router, modelled from their source:
 *   vllm-project/router, src/policies/cache_aware.rs at commit
 *     16917f49522f1ef27770cd7994626eaed8b9f793 (select_worker_cache_aware:
 *     the balance check, the tree match, and below the threshold
 *     healthy_indices.min_by_key(load), the least loaded; the tree insert
 *     on every path; the session-id map for chat requests that carry a
 *     session header is left out: the bench's requests are completions);
 *   SGLang falls back the same way since PR #14650;
 *   cache_aware_legacy: the rule before that, sgl-project/sglang,
 *     sgl-router/src/policies/cache_aware.rs at commit
 *     026f853ba7ae08a457a2e127b85a26256a29e300: below the threshold, the
 *     tenant whose tree is smallest;
 *   defaults as the command lines set them (sglang sgl-router main.rs /
 *     vllm-project/router src/main.rs): cache_threshold 0.3,
 *     balance_abs_threshold 64, balance_rel_threshold 1.5,
 *     eviction_interval 120 s, max_tree_size 67108864 characters.
 *
 * Per request: the load of an instance is the router's own count of
 * requests it sent there and that have not finished (worker.load(), no
 * scraping). If max - min load > 64 and max > 1.5 x min, the request goes
 * to the least loaded instance (the first among equals). Otherwise its
 * text is matched in the approximate radix tree (radix.h): when the
 * matched fraction exceeds 0.3 it goes to the tenant holding the deepest
 * match, else to the least loaded instance (the first among equals;
 * legacy: the tenant whose tree is smallest). Either way the text is
 * then inserted for the chosen instance. Every 120 s of model time each
 * tenant above 67108864 characters loses its least recently used leaves.
 *
 * What the peers' tree sees as text is modelled by prompt.h: Mooncake
 * prompts share text segment by segment as their hash ids do; Azure
 * prompts share nothing. */
#include "policy.h"

#include "radix.h"

#define CA_CACHE_THRESHOLD 0.3
#define CA_BALANCE_ABS 64u
#define CA_BALANCE_REL 1.5
#define CA_EVICTION_INTERVAL_S 120.0
#define CA_MAX_TREE_CHARS 67108864ULL

struct cache_aware {
	struct dbk_radix tree;
	bool legacy; /* below the threshold: the smallest tree */
	uint64_t evicted, balanced, affinity;
};

static const bool ca_current = false, ca_legacy = true;

static int ca_init(void *st, const struct dbk_sim_policy_env *env)
{
	struct cache_aware *p = st;

	p->legacy = *(const bool *)env->arg;
	return dbk_radix_init(&p->tree, env->cfg->ninstances);
}

static void ca_fini(void *st) { dbk_radix_free(&((struct cache_aware *)st)->tree); }

/* The healthy worker whose tree holds the fewest characters (the first
 * among equals). */
static unsigned smallest_usable(const struct dbk_radix *t, const struct dbk_sim *s)
{
	unsigned best = dbk_radix_smallest_tenant(t);

	if (dbk_sim_usable(s, best))
		return best;
	best = t->ntenants;
	for (unsigned i = 0; i < t->ntenants; i++)
		if (dbk_sim_usable(s, i) &&
		    (best == t->ntenants || t->tenant_chars[i] < t->tenant_chars[best]))
			best = i;
	return best < t->ntenants ? best : 0;
}

static int ca_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	struct cache_aware *p = st;
	unsigned lo = dbk_sim_least(s, 0, dbk_sim_key_inflight, NULL);
	unsigned hi = dbk_sim_least(s, 0, dbk_sim_key_neg_inflight, NULL);
	unsigned pick;

	if (dbk_sim_inflight(s, hi) - dbk_sim_inflight(s, lo) > CA_BALANCE_ABS &&
	    (double)dbk_sim_inflight(s, hi) > (double)dbk_sim_inflight(s, lo) * CA_BALANCE_REL) {
		pick = lo;
		p->balanced++;
	} else {
		struct dbk_radix_match m;

		dbk_radix_match(&p->tree, r, &m);
		if (m.input_chars > 0 && m.tenant >= 0 && dbk_sim_usable(s, (unsigned)m.tenant) &&
		    (double)m.matched_chars / (double)m.input_chars > CA_CACHE_THRESHOLD) {
			pick = (unsigned)m.tenant;
			p->affinity++;
		} else {
			pick = p->legacy ? smallest_usable(&p->tree, s) : lo;
		}
	}
	if (dbk_radix_insert(&p->tree, r, pick, dbk_sim_now(s)) != 0)
		return DBK_SIM_POLICY_ERROR;
	return (int)pick;
}

static void ca_tick(void *st, const struct dbk_sim *s)
{
	struct cache_aware *p = st;
	long d = dbk_radix_evict(&p->tree, CA_MAX_TREE_CHARS);

	(void)s;
	if (d > 0)
		p->evicted += (uint64_t)d;
}

/* A worker that leaves is removed from the tree (the peer's
 * remove_worker: tree.remove_tenant(url), vllm-project/router,
 * src/policies/cache_aware.rs at commit
 * 16917f49522f1ef27770cd7994626eaed8b9f793); one that is unhealthy is
 * only passed over. The simulator says "fresh" when a new pod takes the
 * slot, which is when the old pod's prefixes matter: forgotten then. */
static void ca_member(void *st, const struct dbk_sim *s, unsigned i, bool usable, bool fresh)
{
	(void)s;
	(void)usable;
	if (fresh)
		dbk_radix_remove_tenant(&((struct cache_aware *)st)->tree, i);
}

DBK_SIM_POLICY_OPS(cache_aware, struct cache_aware, ca, .arg = &ca_current, .tick = ca_tick,
                   .tick_s = CA_EVICTION_INTERVAL_S, .member = ca_member);
DBK_SIM_POLICY_OPS(cache_aware_legacy, struct cache_aware, ca, .arg = &ca_legacy, .tick = ca_tick,
                   .tick_s = CA_EVICTION_INTERVAL_S, .member = ca_member);
