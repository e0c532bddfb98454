/* wlc: HAProxy's "balance leastconn" with the servers' weights, what
 * every HAProxy user has without dbucket:
 *   haproxy/haproxy, src/lb_fwlc.c at commit
 *     cb33d3ac7f8dbc3f7323606a521d29dc100adbda (fwlc_queue_srv,
 *     fwlc_get_next_server).
 * A server's key is 0 when it has nothing in flight, else
 * (inflight + 1) x SRV_EWGHT_MAX / eweight, inflight = served + queued;
 * the server with the least key is taken. Among equal keys HAProxy's
 * tree keeps the order servers were queued in, and a server is requeued
 * each time it takes or drops a connection: modelled as lc's rotation
 * from the instance after the previous choice. The key here is the exact
 * ratio (HAProxy's integer division can tie two nearby ratios). Weights
 * are the operator's (--weights, 1..256); a server that is down or
 * scaled in is out of the tree (fwlc_set_server_status_down), as
 * dbk_sim_least leaves it out.
 *
 * With equal weights it chooses as lc does, so "all" runs it only when
 * the run has weights. */
#include "policy.h"

static int wlc_init(void *st, const struct dbk_sim_policy_env *env)
{
	*(unsigned *)st = env->cfg->ninstances - 1;
	return 0;
}

static void wlc_fini(void *st) { (void)st; }

static double wlc_key(const void *ctx, const struct dbk_sim *s, unsigned i)
{
	unsigned inflight = dbk_sim_inflight(s, i);

	(void)ctx;
	return inflight ? (double)(inflight + 1) / dbk_sim_weight(s, i) : 0;
}

static int wlc_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	unsigned *last = st;

	(void)r;
	*last = dbk_sim_least(s, *last + 1, wlc_key, NULL);
	return (int)*last;
}

DBK_SIM_POLICY_OPS(wlc, unsigned, wlc, .weighted = true);
