/* The agent's own algorithm as a simulator policy: agent/balancer.c,
 * called as the agent calls it (route.c): one dispatch per request with
 * its body size, max_tokens and ignore_eos, one release when it ends.
 * Plain mode is one group scored by body_bytes + max_tokens; dynamic
 * mode is the short and long groups scored by request tokens. */
#include "policy.h"
#include "sim_eject.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "lib/log.h"

struct balp {
	struct dbk_balancer *b;
	const struct dbk_sim_config *cfg;
	struct dbk_outlier ej; /* the agent's outlier ejection */
};

void dbk_sim_bal_request(const struct dbk_sim_config *c, const struct dbk_sim_req *r,
                         struct dbk_bal_request *out)
{
	out->body_bytes = (double)r->input_tokens * DBK_BAL_BYTES_PER_TOKEN +
	                  c->json_overhead_bytes;
	/* The replayed client asks for exactly the trace's output length
	 * and sets ignore_eos, so the engine generates that many. */
	out->max_tokens = (double)r->output_tokens;
	out->ignore_eos = true;
}

size_t dbk_sim_lease_id(uint32_t id, char *buf)
{
	int n = snprintf(buf, 11, "%u", (unsigned)id);

	return n > 0 ? (size_t)n : 0;
}

static int bal_init(void *st, const struct dbk_sim_policy_env *env)
{
	const struct dbk_sim_config *c = env->cfg;
	struct balp *p = st;
	bool dynamic = env->arg != NULL;
	struct dbk_bal_config bc;

	if (dynamic && c->ninstances < 2) {
		dbk_errf(env->err, env->errlen, "dynamic mode needs at least 2 instances");
		return -1;
	}
	dbk_bal_config_default(&bc, c->ninstances, dynamic, c->threshold_tokens,
	                       c->max_request_tokens);
	if (dbk_bal_config_check(&bc, env->err, env->errlen) != 0)
		return -1;
	p->cfg = c;
	p->b = dbk_bal_new(&bc);
	if (!p->b || dbk_sim_eject_init(&p->ej, c->ninstances) < 0)
		return -1;
	/* The operator's weights, as the agent reads them from HAProxy. */
	for (unsigned i = 0; c->weights && i < c->ninstances; i++)
		dbk_bal_set_weight(p->b, i, c->weights[i]);
	return 0;
}

/* A back-off ended: the server takes traffic again (half-open). */
static void bal_returned(void *arg, unsigned server)
{
	dbk_bal_set_out(((struct balp *)arg)->b, server, DBK_BAL_OUT_EJECTED, false);
}

static int bal_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	struct balp *p = st;
	struct dbk_bal_request req;
	struct dbk_bal_decision d;
	char id[16];
	size_t len = dbk_sim_lease_id(r->id, id);
	enum dbk_bal_result res;

	uint64_t now = (uint64_t)llround(dbk_sim_now(s) * 1000.0);

	dbk_outlier_tick(&p->ej, now, bal_returned, p);
	dbk_sim_bal_request(p->cfg, r, &req);
	/* Among its model's servers (all with one model: exactly dispatch). */
	res = dbk_bal_dispatch_among(p->b, id, len, &req, dbk_sim_eligible(s, r), now, &d);
	if (res == DBK_BAL_OK)
		return (int)d.server;
	/* FULL is out of memory here (no lease limit is set); anything
	 * else is the agent's "no decision", which HAProxy would cover
	 * with leastconn: count it as refused so it shows. */
	return res == DBK_BAL_FULL ? DBK_SIM_POLICY_ERROR : DBK_SIM_REFUSE;
}

static void bal_release(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r,
                        unsigned inst)
{
	struct balp *p = st;
	char id[16];
	size_t len = dbk_sim_lease_id(r->id, id);

	dbk_bal_release(p->b, id, len, NULL);
	if (dbk_sim_eject_observe(&p->ej, s, r, inst))
		dbk_bal_set_out(p->b, inst, DBK_BAL_OUT_EJECTED, true);
}

static void bal_stats(const void *st, struct dbk_sim_policy_stats *out)
{
	const struct balp *p = st;
	const struct dbk_bal_stats *bs = dbk_bal_stats(p->b);

	out->leases = bs->leases;
	out->redirects = bs->redirects;
	out->unknown_releases = bs->unknown_releases;
}

/* HAProxy's state of the server, as the agent's runtime sync passes it
 * on; a new instance in the slot is not held to the old one's failures
 * (the balancer keeps nothing else per server to start afresh). */
static void bal_member(void *st, const struct dbk_sim *s, unsigned i, bool usable, bool fresh)
{
	struct balp *p = st;

	(void)s;
	if (fresh && dbk_outlier_reset(&p->ej, i))
		dbk_bal_set_out(p->b, i, DBK_BAL_OUT_EJECTED, false);
	dbk_bal_set_usable(p->b, i, usable);
}

static void bal_fini(void *st)
{
	struct balp *p = st;

	dbk_bal_free(p->b);
	dbk_outlier_free(&p->ej);
}

const struct dbk_balancer *dbk_sim_bal_policy_balancer(const void *st)
{
	return ((const struct balp *)st)->b;
}

/* plain: the agent without --enable-dynamic-bucket, one group; dynamic:
 * with it, the short and long groups. arg: NULL for plain, anything else
 * for dynamic. */
#define BAL_OPS(policy, dynamic)                                                               \
	{                                                                                      \
		.name = policy, .arg = dynamic, .size = sizeof(struct balp), .init = bal_init, \
		.choose = bal_choose, .release = bal_release, .stats = bal_stats,              \
		.fini = bal_fini, .member = bal_member                                         \
	}

const struct dbk_sim_policy_ops dbk_sim_policy_plain = BAL_OPS("plain", NULL);
const struct dbk_sim_policy_ops dbk_sim_policy_dynamic = BAL_OPS("dynamic",
                                                                 &dbk_sim_policy_dynamic);
