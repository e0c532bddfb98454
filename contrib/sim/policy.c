/* The policy table and the two length-blind baselines (round robin and
 * least connections); see policy.h. */
#include "policy.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hash.h"
#include "lib/log.h"

/* ---- What every policy shares. ---- */

void *dbk_sim_policy_new(const struct dbk_sim_policy_ops *ops, const struct dbk_sim_config *c,
                         char *err, size_t errlen)
{
	void *st = calloc(1, ops->size ? ops->size : 1);
	const struct dbk_sim_policy_env env = { ops->arg, c, err, errlen };

	if (errlen)
		err[0] = '\0';
	if (st && (!ops->init || ops->init(st, &env) == 0))
		return st;
	dbk_sim_policy_free(ops, st);
	if (!errlen || !err[0])
		dbk_errf(err, errlen, "out of memory");
	return NULL;
}

void dbk_sim_policy_free(const struct dbk_sim_policy_ops *ops, void *st)
{
	if (st && ops->fini)
		ops->fini(st);
	free(st);
}

unsigned dbk_sim_least(const struct dbk_sim *s, unsigned from, dbk_sim_key_fn key, const void *ctx)
{
	unsigned n = dbk_sim_ninstances(s), k, best = n;
	double best_key = 0;

	for (k = 0; k < n; k++) {
		unsigned i = (from + k) % n;
		double v;

		if (!dbk_sim_usable(s, i))
			continue;
		v = key(ctx, s, i);
		if (best == n || v < best_key) {
			best = i;
			best_key = v;
		}
	}
	return best < n ? best : from % n;
}

double dbk_sim_key_inflight(const void *ctx, const struct dbk_sim *s, unsigned i)
{
	(void)ctx;
	return dbk_sim_inflight(s, i);
}

double dbk_sim_key_neg_inflight(const void *ctx, const struct dbk_sim *s, unsigned i)
{
	return -dbk_sim_key_inflight(ctx, s, i);
}

/* ---- Round robin. ---- */

static int rr_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	unsigned *next = st, n = dbk_sim_ninstances(s), i;

	(void)r;
	/* HAProxy's roundrobin passes over the servers that are down. */
	for (unsigned k = 0; k < n; k++) {
		i = *next;
		*next = (i + 1) % n;
		if (dbk_sim_usable(s, i))
			return (int)i;
	}
	return DBK_SIM_REFUSE;
}

const struct dbk_sim_policy_ops dbk_sim_policy_rr = {
	.name = "rr",
	.size = sizeof(unsigned),
	.choose = rr_choose,
};

/* ---- Least connections. ---- */

/* Fewest in flight; among equals the first after the previous choice,
 * because HAProxy's leastconn rotates among servers with equal counts
 * instead of always favouring the first one. The state: the previous
 * choice, the last instance before the first. */
static int lc_init(void *st, const struct dbk_sim_policy_env *env)
{
	*(unsigned *)st = env->cfg->ninstances - 1;
	return 0;
}

static int lc_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	unsigned *last = st;

	(void)r;
	*last = dbk_sim_least(s, *last + 1, dbk_sim_key_inflight, NULL);
	return (int)*last;
}

const struct dbk_sim_policy_ops dbk_sim_policy_lc = {
	.name = "lc",
	.size = sizeof(unsigned),
	.init = lc_init,
	.choose = lc_choose,
};

unsigned dbk_sim_lb_node(const struct dbk_sim_config *cfg, const struct dbk_sim_req *r)
{
	uint64_t who = cfg->lb_sticky && r->has_session ? r->session * DBK_HASH_GOLDEN : r->id;

	return cfg->lb_nodes > 1
	               ? (unsigned)(dbk_hash_fmix_light(UINT64_C(0x7474667453454544) ^ who) %
	                            cfg->lb_nodes)
	               : 0;
}

/* Least connections as K HAProxy nodes run it (--lb-nodes K): each node
 * counts its own connections only and rotates among its own equals. lc
 * above is one node that sees every connection, which no K-node fleet
 * has; beside the agent's policies split K ways it flattered leastconn
 * by up to a tenth of its capacity (ttft.md, "Stop 50: leastconn on K
 * nodes"). With one node it is lc, decision for decision. */
struct lc_nodes {
	const struct dbk_sim_config *cfg;
	unsigned n;
	unsigned *last;  /* per node: its previous choice */
	unsigned *count; /* per node and instance: its connections there */
};

static int lcn_init(void *st, const struct dbk_sim_policy_env *env)
{
	struct lc_nodes *p = st;
	unsigned k = env->cfg->lb_nodes > 1 ? env->cfg->lb_nodes : 1;

	p->cfg = env->cfg;
	p->n = env->cfg->ninstances;
	p->last = calloc(k, sizeof(*p->last));
	p->count = calloc((size_t)k * p->n, sizeof(*p->count));
	if (!p->last || !p->count)
		return -1;
	for (unsigned j = 0; j < k; j++)
		p->last[j] = p->n - 1;
	return 0;
}

static double lcn_key(const void *ctx, const struct dbk_sim *s, unsigned i)
{
	(void)s;
	return ((const unsigned *)ctx)[i];
}

static int lcn_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	struct lc_nodes *p = st;
	unsigned j = dbk_sim_lb_node(p->cfg, r), *count = p->count + (size_t)j * p->n;

	p->last[j] = dbk_sim_least(s, p->last[j] + 1, lcn_key, count);
	count[p->last[j]]++;
	return (int)p->last[j];
}

static void lcn_release(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r,
                        unsigned inst)
{
	struct lc_nodes *p = st;
	unsigned *count = p->count + (size_t)dbk_sim_lb_node(p->cfg, r) * p->n;

	(void)s;
	if (count[inst] > 0)
		count[inst]--;
}

static void lcn_fini(void *st)
{
	struct lc_nodes *p = st;

	free(p->last);
	free(p->count);
}

const struct dbk_sim_policy_ops dbk_sim_policy_lc_per_node = {
	.name = "lc_per_node",
	.size = sizeof(struct lc_nodes),
	.init = lcn_init,
	.choose = lcn_choose,
	.release = lcn_release,
	.fini = lcn_fini,
	.extra = true,
};

/* ---- The table. ---- */

/* The agent's policies that choose (policy_agent.c) come between the
 * agent's balancer and the oracle. */
static const struct dbk_sim_policy_ops *const head[] = {
	&dbk_sim_policy_rr,    &dbk_sim_policy_lc,      &dbk_sim_policy_lc_per_node,
	&dbk_sim_policy_plain, &dbk_sim_policy_dynamic,
};
/* The peers' routers, after the oracle: each is policy_NAME.c, ending in
 * its DBK_SIM_POLICY_OPS lines (the peer, then its labelled variants),
 * and their lines here. */
#define PEERS(X)                 \
	X(cache_aware)           \
	X(cache_aware_legacy)    \
	X(power_of_two)          \
	X(power_of_two_informed) \
	X(consistent_hash)       \
	X(consistent_hash_seed1) \
	X(consistent_hash_seed2) \
	X(consistent_hash_seed3) \
	X(llm_d)                 \
	X(llm_d_active)          \
	X(llm_d_lora)            \
	X(llm_d_shed)            \
	X(llm_d_latency)         \
	X(llm_d_latency_most)    \
	X(prefixaware)           \
	X(wlc)

#define DECLARE(name) extern const struct dbk_sim_policy_ops dbk_sim_policy_##name;
#define ENTRY(name) &dbk_sim_policy_##name,
PEERS(DECLARE)
static const struct dbk_sim_policy_ops *const tail[] = { &dbk_sim_policy_clairvoyant,
	                                                 PEERS(ENTRY) };

const struct dbk_sim_policy_ops *dbk_sim_policy_at(size_t i)
{
	const struct dbk_sim_policy_ops *p;
	size_t k;

	if (i < sizeof(head) / sizeof(head[0]))
		return head[i];
	i -= sizeof(head) / sizeof(head[0]);
	for (k = 0; (p = dbk_sim_policy_agent(k)) != NULL; k++)
		if (k == i)
			return p;
	i -= k;
	return i < sizeof(tail) / sizeof(tail[0]) ? tail[i] : NULL;
}

const struct dbk_sim_policy_ops *dbk_sim_policy_find(const char *name)
{
	const struct dbk_sim_policy_ops *p;
	size_t i;

	for (i = 0; (p = dbk_sim_policy_at(i)) != NULL; i++)
		if (strcmp(p->name, name) == 0)
			return p;
	return NULL;
}

int dbk_sim_policy_pick(const char *list, bool weighted, const struct dbk_sim_policy_ops **out,
                        size_t max, size_t *n, char *err, size_t errlen)
{
	char buf[256], *tok, *save = NULL;
	const struct dbk_sim_policy_ops *p;

	*n = 0;
	if (strcmp(list, "all") == 0) {
		for (size_t i = 0; *n < max && (p = dbk_sim_policy_at(i)) != NULL; i++)
			if ((weighted || !p->weighted) && !p->extra)
				out[(*n)++] = p;
		return 0;
	}
	if (strlen(list) >= sizeof(buf)) {
		dbk_errf(err, errlen, "policy list too long");
		return -1;
	}
	strcpy(buf, list);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		p = dbk_sim_policy_find(tok);
		if (!p || *n == max) {
			dbk_errf(err, errlen, "unknown policy '%s' (see --help)", tok);
			return -1;
		}
		out[(*n)++] = p;
	}
	if (*n == 0) {
		dbk_errf(err, errlen, "no policy in '%s'", list);
		return -1;
	}
	return 0;
}
