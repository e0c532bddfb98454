/* consistent_hash: the vLLM Router's session-affinity policy,
 *   vllm-project/router, src/policies/consistent_hash.rs at commit
 *     080589a0b729acb003907a0bdd53809b229dc805: a hash ring with 160
 *     virtual nodes per worker (VIRTUAL_NODES_PER_WORKER), the key hashed
 *     onto the ring, the first virtual node at or after it (wrapping);
 *   the key, by src/policies/hash_key.rs at commit
 *     335c57e2ee621d7984ed645c9d23e871cd34331a: a session header
 *     (X-Session-Id first) or the body's "user" field, else a hash of the
 *     request body.
 *
 * Here the key is the request's session (sim.h: the bench sends it as
 * X-Session-Id and the OpenAI "user" field); a request without one (Azure)
 * is keyed by its own body, i.e. lands anywhere, once. The ring's
 * points and the key are hashed with splitmix64 rather than the peer's
 * FurcHash + MurmurHash64A: what matters, a uniform ring that never moves
 * while the fleet does not, is the same. No load is consulted.
 *
 * Where the points fall depends on the workers' URLs, so one layout is
 * one fleet's luck: with 160 points each, the instances' shares of the
 * ring differ by about 8%. consistent_hash_seed1..3 are the same policy
 * on three other layouts (as if the pods had other addresses); they are
 * not in "all" (policy.h: extra) and are run by name where a table gives
 * the mean and spread over the four layouts. */
#include "policy.h"

#include <stdlib.h>

#include "u64map.h"

#define CH_VIRTUAL_NODES 160u

struct point {
	uint64_t h;
	unsigned inst;
};

struct chash {
	size_t npoints;
	struct point *ring;
};

/* The layouts: seed 0 is the one every earlier run used. */
static const uint64_t ch_seeds[] = { 0, 1, 2, 3 };

static int point_cmp(const void *a, const void *b)
{
	const struct point *x = a, *y = b;

	if (x->h != y->h)
		return x->h < y->h ? -1 : 1;
	return x->inst < y->inst ? -1 : x->inst > y->inst;
}

static void ch_fini(void *st) { free(((struct chash *)st)->ring); }

static int ch_init(void *st, const struct dbk_sim_policy_env *env)
{
	struct chash *p = st;
	uint64_t seed = *(const uint64_t *)env->arg;
	uint64_t salt = seed ? dbk_u64map_mix64(seed) : 0;
	unsigned i, v;

	p->ring = malloc((size_t)env->cfg->ninstances * CH_VIRTUAL_NODES * sizeof(*p->ring));
	if (!p->ring)
		return -1;
	for (i = 0; i < env->cfg->ninstances; i++)
		for (v = 0; v < CH_VIRTUAL_NODES; v++) {
			struct point *pt = &p->ring[p->npoints++];

			/* "url:v" in the peer: instance (its address,
			 * salted by the layout) and replica. */
			pt->h = dbk_u64map_mix64_pair(dbk_u64map_mix64(i) ^ salt, v);
			pt->inst = i;
		}
	qsort(p->ring, p->npoints, sizeof(*p->ring), point_cmp);
	return 0;
}

static int ch_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	const struct chash *p = st;
	uint64_t key = r->has_session ? r->session
	                              : dbk_u64map_mix64_pair((uint64_t)1 << 63, r->id);
	uint64_t h = dbk_u64map_mix64(key ^ 0xc0ffeeULL);
	size_t lo = 0, hi = p->npoints;

	while (lo < hi) { /* first point with hash >= h */
		size_t mid = lo + (hi - lo) / 2;

		if (p->ring[mid].h < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* A worker that left has no points on the peer's ring (it is
	 * rebuilt from the worker list, which service discovery keeps:
	 * vllm-project/router, src/service_discovery.rs at commit
	 * 3abdc67744cb291c72e2179631ab2b7e33b68355): the next usable point
	 * clockwise. */
	for (size_t k = 0; k < p->npoints; k++) {
		const struct point *pt = &p->ring[(lo + k) % p->npoints];

		if (dbk_sim_usable(s, pt->inst))
			return (int)pt->inst;
	}
	return DBK_SIM_REFUSE;
}

DBK_SIM_POLICY_OPS(consistent_hash, struct chash, ch, .arg = &ch_seeds[0]);
DBK_SIM_POLICY_OPS(consistent_hash_seed1, struct chash, ch, .arg = &ch_seeds[1], .extra = true);
DBK_SIM_POLICY_OPS(consistent_hash_seed2, struct chash, ch, .arg = &ch_seeds[2], .extra = true);
DBK_SIM_POLICY_OPS(consistent_hash_seed3, struct chash, ch, .arg = &ch_seeds[3], .extra = true);
