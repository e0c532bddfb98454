/* prefixaware: vLLM production-stack's prefix-aware routing logic,
 *   vllm-project/production-stack,
 *   src/vllm_router/routers/routing_logic.py (PrefixAwareRouter) at commit
 *     5ae0b10828491c579173ae41a17a33901c3dd7b4 and
 *   src/vllm_router/prefix/hashtrie.py (HashTrie, chunk_size 128) at commit
 *     35e4ad377d6e8f2153af888a6968c5bdf3d00399.
 *
 * A trie of the prompt's 128-character chunks (32 tokens here, the last
 * one shorter), each node holding the set of endpoints that were sent
 * that prefix. The match walks the chunks while some endpoint of the
 * current set holds the next one, narrowing the set to those that do;
 * the request goes to an endpoint of the final set at random (every
 * endpoint when nothing matched), and its chunks are then recorded for
 * it. No load is read and nothing is ever evicted, as in the peer ("we
 * assume that there is no eviction of prefix cache"). The random choice
 * comes from a fixed seed.
 *
 * kvaware, production-stack's other cache policy, asks an LMCache
 * controller where each token's KV lives; there is no LMCache here, so it
 * is not modelled. */
#include "policy.h"

#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "prompt.h"
#include "u64map.h"

#define PA_CHUNK_TOKENS 32u /* 128 characters at 4 a token */
#define PA_SEED 0x9a5eedULL

struct prefixaware {
	unsigned n, words;
	uint64_t rng;
	struct dbk_u64map nodes; /* chunk chain key -> set index */
	uint64_t *sets;          /* nsets x words */
	size_t nsets, capsets;
	uint64_t *sel; /* words */
	unsigned *cand;
	unsigned pick; /* the choice being recorded */
	bool oom;
};

static void pa_fini(void *st)
{
	struct prefixaware *p = st;

	dbk_u64map_free(&p->nodes);
	free(p->sets);
	free(p->sel);
	free(p->cand);
}

static int pa_init(void *st, const struct dbk_sim_policy_env *env)
{
	struct prefixaware *p = st;

	p->n = env->cfg->ninstances;
	p->words = (env->cfg->ninstances + 63) / 64;
	p->rng = PA_SEED;
	dbk_u64map_init(&p->nodes);
	p->sel = calloc(p->words, sizeof(*p->sel));
	p->cand = calloc(p->n, sizeof(*p->cand));
	return p->sel && p->cand ? 0 : -1;
}

/* Calls fn for each chunk key of r's prompt, in order, until it returns
 * false. A chunk's key names the whole text up to its end. */
static void chunks(const struct dbk_sim_req *r, bool (*fn)(struct prefixaware *, uint64_t),
                   struct prefixaware *p)
{
	uint32_t s, j, nseg = dbk_sim_prompt_nseg(r);
	uint64_t chain = 0;

	for (s = 0; s < nseg; s++) {
		uint32_t tok = dbk_sim_prompt_seg_tokens(r, s);

		chain = dbk_sim_prompt_chain(r, s, chain);
		for (j = 0; j * PA_CHUNK_TOKENS < tok; j++) {
			uint32_t len = tok - j * PA_CHUNK_TOKENS;

			if (len > PA_CHUNK_TOKENS)
				len = PA_CHUNK_TOKENS;
			if (!fn(p, dbk_u64map_mix64_pair(chain, (uint64_t)j << 32 | len)))
				return;
		}
	}
}

static bool narrow(struct prefixaware *p, uint64_t key)
{
	const uint32_t *v = dbk_u64map_get(&p->nodes, key);
	const uint64_t *set;
	unsigned w;
	bool any = false;

	if (!v)
		return false;
	set = &p->sets[(size_t)*v * p->words];
	for (w = 0; w < p->words; w++)
		any |= (set[w] & p->sel[w]) != 0;
	if (!any)
		return false;
	for (w = 0; w < p->words; w++)
		p->sel[w] &= set[w];
	return true;
}

static bool record(struct prefixaware *p, uint64_t key)
{
	uint32_t *v = dbk_u64map_get(&p->nodes, key);

	if (!v) {
		uint64_t *ns = dbk_array_room(p->sets, &p->capsets, p->nsets,
		                              p->words * sizeof(*ns), 4096);

		if (ns)
			p->sets = ns;
		if (!ns || dbk_u64map_put(&p->nodes, key, (uint32_t)p->nsets) != 0) {
			p->oom = true;
			return false;
		}
		memset(&p->sets[p->nsets * p->words], 0, p->words * sizeof(uint64_t));
		v = dbk_u64map_get(&p->nodes, key);
		p->nsets++;
	}
	p->sets[(size_t)*v * p->words + p->pick / 64] |= (uint64_t)1 << (p->pick % 64);
	return true;
}

static int pa_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	struct prefixaware *p = st;
	unsigned i, nc = 0;

	memset(p->sel, 0, p->words * sizeof(*p->sel));
	/* The endpoints service discovery lists now: route_request matches
	 * within available_endpoints = the endpoints' URLs. */
	for (i = 0; i < p->n; i++)
		if (dbk_sim_usable(s, i))
			p->sel[i / 64] |= (uint64_t)1 << (i % 64);
	chunks(r, narrow, p);
	for (i = 0; i < p->n; i++)
		if (p->sel[i / 64] >> (i % 64) & 1)
			p->cand[nc++] = i;
	p->pick = p->cand[dbk_u64map_mix64(p->rng++) % nc];
	p->oom = false;
	chunks(r, record, p);
	return p->oom ? DBK_SIM_POLICY_ERROR : (int)p->pick;
}

/* The trie names endpoints by URL: a new pod in the slot holds nothing. */
static void pa_member(void *st, const struct dbk_sim *s, unsigned i, bool usable, bool fresh)
{
	struct prefixaware *p = st;

	(void)s;
	(void)usable;
	for (size_t k = 0; fresh && k < p->nsets; k++)
		p->sets[k * p->words + i / 64] &= ~((uint64_t)1 << (i % 64));
}

DBK_SIM_POLICY_OPS(prefixaware, struct prefixaware, pa, .member = pa_member);
