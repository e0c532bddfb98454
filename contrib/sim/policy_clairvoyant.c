/* The clairvoyant reference: it knows every request's output length and
 * sees inside every engine, and sends each request where its first token
 * is predicted to come soonest (predict.h), preferring instances whose KV
 * cache can hold it beside everything already committed there (it knows
 * the final sizes, so it can avoid preemption storms a length-blind
 * router walks into). Instances whose max-model-len cannot hold the
 * request are skipped, as a router that knows the fleet would. Greedy on
 * TTFT: an upper reference for what a router could see, not a proof of
 * optimality (it ignores the harm a request does to those already
 * queued). */
#include "policy.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"
#include "replica.h"

struct preempted {
	uint64_t seq;
	struct dbk_replica_item it;
};

struct clair {
	struct dbk_replica *pred;
	struct preempted *pre; /* scratch: preempted waiting requests */
	size_t npre, cappre;
	struct dbk_replica_item *wait; /* scratch: other waiting requests */
	size_t nwait, capwait;
};

static int clair_init(void *st, const struct dbk_sim_policy_env *env)
{
	struct clair *p = st;

	(void)env;
	p->pred = dbk_replica_new();
	return p->pred ? 0 : -1;
}

static void clair_fini(void *st)
{
	struct clair *p = st;

	dbk_replica_free(p->pred);
	free(p->pre);
	free(p->wait);
}

static int cmp_pre(const void *a, const void *b)
{
	const struct preempted *x = a, *y = b;

	/* Latest preemption first: each one went to the queue's front. */
	return x->seq < y->seq ? 1 : x->seq > y->seq ? -1 : 0;
}

static int push_pre(struct clair *p, uint64_t seq, const struct dbk_replica_item *it)
{
	struct preempted *n = dbk_array_room(p->pre, &p->cappre, p->npre, sizeof(*n), 64);

	if (!n)
		return -1;
	p->pre = n;
	p->pre[p->npre].seq = seq;
	p->pre[p->npre].it = *it;
	p->npre++;
	return 0;
}

static int push_wait(struct clair *p, const struct dbk_replica_item *it)
{
	struct dbk_replica_item *n = dbk_array_room(p->wait, &p->capwait, p->nwait, sizeof(*n), 64);

	if (!n)
		return -1;
	p->wait = n;
	p->wait[p->nwait++] = *it;
	return 0;
}

/* Loads instance i's queue into the predictor in the engine's order:
 * running requests, then the waiting queue (preempted ones at its front,
 * latest first; then the others by arrival; then those routed but not
 * yet submitted). */
static int load_instance(struct clair *p, const struct dbk_sim *s, unsigned i)
{
	const struct dbk_engine *e = dbk_sim_engine(s, i);
	struct dbk_engine_req_info info;
	struct dbk_replica_item it;
	uint32_t id;
	size_t k;
	int rc = 0;

	if (dbk_replica_reset(p->pred, dbk_sim_engine_config(s, i)) != 0)
		return -1;
	p->npre = p->nwait = 0;
	for (id = dbk_sim_live_first(s, i); id != DBK_SIM_NONE && rc == 0;
	     id = dbk_sim_live_next(s, id)) {
		const struct dbk_sim_req *r = dbk_sim_req(s, id);
		uint64_t h;

		if (!dbk_sim_req_handle(s, id, &h)) {
			dbk_replica_item_pending(r->input_tokens, dbk_sim_cached_tokens(s, i, id),
			                         r->output_tokens, &it);
			rc = push_wait(p, &it);
			continue;
		}
		if (dbk_engine_req_get(e, h, &info) == DBK_REQ_UNKNOWN ||
		    !dbk_replica_item_from_engine(&info, &it))
			continue;
		if (info.state == DBK_REQ_WAITING && info.num_preemptions == 0)
			/* Not admitted yet: what it will find cached. */
			dbk_replica_item_pending(r->input_tokens, dbk_sim_cached_tokens(s, i, id),
			                         r->output_tokens, &it);
		if (it.running)
			rc = dbk_replica_add(p->pred, &it);
		else if (info.num_preemptions > 0)
			rc = push_pre(p, dbk_sim_req_preempt_seq(s, id), &it);
		else
			rc = push_wait(p, &it);
	}
	if (rc != 0)
		return -1;
	/* Routed-but-not-submitted requests were pushed in routing order
	 * among the submitted ones; both are FCFS, so they keep it. */
	if (p->npre > 1)
		qsort(p->pre, p->npre, sizeof(*p->pre), cmp_pre);
	for (k = 0; k < p->npre && rc == 0; k++)
		rc = dbk_replica_add(p->pred, &p->pre[k].it);
	for (k = 0; k < p->nwait && rc == 0; k++)
		rc = dbk_replica_add(p->pred, &p->wait[k]);
	return rc;
}

static int clair_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	struct clair *p = st;
	unsigned i, n = dbk_sim_ninstances(s);
	double best = HUGE_VAL, now = dbk_sim_now(s);
	bool best_fits = false;
	int best_i = DBK_SIM_REFUSE;

	for (i = 0; i < n; i++) {
		const struct dbk_engine_config *ec = dbk_sim_engine_config(s, i);
		bool fits;
		double t;

		if (!dbk_sim_usable(s, i) ||
		    (uint64_t)r->input_tokens + r->output_tokens > ec->max_model_len)
			continue;
		if (load_instance(p, s, i) != 0)
			return DBK_SIM_POLICY_ERROR;
		fits = dbk_replica_fits(p->pred, r->input_tokens, r->output_tokens);
		t = (dbk_sim_step_end(s, i) - now) +
		    dbk_replica_first_token(p->pred, r->input_tokens,
		                            dbk_sim_cached_tokens(s, i, r->id), r->output_tokens);
		/* Instances where the request's whole KV fits beside all
		 * that is committed come first: elsewhere vLLM would preempt
		 * and recompute, which the prediction does not see. Then the
		 * earliest first token; ties go to the lowest index. A stuck
		 * replica (HUGE_VAL) still beats refusing. */
		if (best_i == DBK_SIM_REFUSE || (fits && !best_fits) ||
		    (fits == best_fits && t < best)) {
			best = t;
			best_fits = fits;
			best_i = (int)i;
		}
	}
	return best_i;
}

DBK_SIM_POLICY_OPS(clairvoyant, struct clair, clair);
