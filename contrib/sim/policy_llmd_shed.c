/* llm_d_shed: llm-d's default scheduling profile (policy_llmd.c, the
 * llm_d peer, unchanged) behind the Gateway API Inference Extension's
 * saturation-based admission, as the EPP runs them in turn: the director
 * asks its admission controller first and schedules only what it admits.
 *
 * From kubernetes-sigs/gateway-api-inference-extension:
 *   pkg/epp/requestcontrol/admission.go at commit
 *     014fd184a61db5b8c3e3644d6ff5fac950036cd7: the LegacyAdmissionController
 *     (rejectIfSheddableAndSaturated) rejects a sheddable request (priority
 *     < 0; our class sheddable) with ResourceExhausted (HTTP 429, no
 *     Retry-After) when the detector's saturation over the candidate pods
 *     is >= 1.0; any other request bypasses the check;
 *   pkg/epp/saturationdetector/framework/plugins/utilizationdetector/
 *     detector.go at commit 275ac7609b1c32ce3768ad8b61b712d554b5ed3a:
 *     saturation is the mean over the pods of max(waiting / 5, KV use /
 *     0.8), a pod with metrics older than 200 ms counting 1 (the
 *     defaults, pkg/epp/saturationdetector/config.go); dbk_sim_saturation
 *     (admit.c) computes it, here over the metrics llm_d's datastore
 *     holds (each pod refreshed every 50 ms at its own phase).
 * Not modelled: the detector's Filter (a scheduling filter with a
 * headroom, not in the default profile) and the flow-control layer
 * (queues per priority; off by default).
 *
 * The GIE's 429 says no Retry-After: with --shed-retry its client comes
 * back after the agent's shortest, 1 s (admission.h's retry_min_s). */
#include "admit.h"
#include "policy.h"

#define GS_RETRY_S DBK_ADMIT_DEFAULT_RETRY_MIN_S

struct gshed {
	void *inner; /* llm_d's state */
};

static int gs_init(void *st, const struct dbk_sim_policy_env *env)
{
	struct gshed *p = st;

	p->inner = dbk_sim_policy_new(&dbk_sim_policy_llm_d, env->cfg, env->err, env->errlen);
	return p->inner ? 0 : -1;
}

static void gs_fini(void *st)
{
	struct gshed *p = st;

	dbk_sim_policy_free(&dbk_sim_policy_llm_d, p->inner);
}

static int gs_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	struct gshed *p = st;

	if (r->cls == DBK_CLASS_SHEDDABLE &&
	    dbk_sim_saturation(s, dbk_sim_llmd_snapshot(p->inner)) >= 1.0)
		return DBK_SIM_SHED(GS_RETRY_S);
	return dbk_sim_policy_llm_d.choose(p->inner, s, r);
}

static void gs_tick(void *st, const struct dbk_sim *s)
{
	dbk_sim_policy_llm_d.tick(((struct gshed *)st)->inner, s);
}

static void gs_member(void *st, const struct dbk_sim *s, unsigned i, bool usable, bool fresh)
{
	dbk_sim_policy_llm_d.member(((struct gshed *)st)->inner, s, i, usable, fresh);
}

/* By name only (extra): without --classes every request is standard and
 * it is llm_d. Its ticks are llm_d's (an eighth of 50 ms). */
DBK_SIM_POLICY_OPS(llm_d_shed, struct gshed, gs, .tick = gs_tick, .tick_s = 0.050 / 8,
                   .member = gs_member, .admits = true, .extra = true);
