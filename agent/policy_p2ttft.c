/* --policy p2ttft: the power of two choices by the predictor's cost.
 * Two distinct servers drawn at random (from env's seed: the same seed,
 * the same draws), and the better one as ttft ranks them (fitting,
 * within the objectives, the least cost of first token and TPOT) taken, the predictor's books kept as ttft keeps them. What the peers'
 * "power of two" does by counting requests, with the ttft predictor's
 * numbers instead; cheaper than ttft at large fleets (two predictions a
 * decision instead of one a server), and a random pair does not herd
 * when several balancers read the same stale scrapes. A drawn server
 * that is not usable or cannot hold the request leaves the choice to
 * ttft's rules. With a model filter, the pair is drawn among the servers
 * of the request's model. */
#include "policy_ttft.h"

#include "lib/hash.h"

/* The k-th server (from 0) of the candidates among n; n when fewer. */
static unsigned nth(const uint64_t *eligible, unsigned n, unsigned k)
{
	for (unsigned s = 0; s < n; s++)
		if (dbk_bal_eligible(eligible, s) && k-- == 0)
			return s;
	return n;
}

static int p2_choose(void *st, const struct dbk_policy_request *r, uint64_t now_ms,
                     struct dbk_policy_choice *c)
{
	struct dbk_policy_ttft *t = st;
	unsigned n = dbk_pred_config(t->pred)->nservers, m = n;
	struct dbk_pred_choice a, b;

	dbk_policy_ttft_request(t, r);
	/* The pair is drawn among the request's candidates (its model's
	 * servers): all n without a filter. */
	if (r->eligible)
		for (unsigned s = m = 0; s < n; s++)
			m += dbk_bal_eligible(r->eligible, s);
	if (m < 2) {
		dbk_pred_choose(t->pred, &t->req, now_ms, &a);
		return dbk_policy_ttft_chose(t, &a, c);
	}
	unsigned i = (unsigned)(dbk_hash_next(&t->draws) % m);
	unsigned j = (unsigned)(dbk_hash_next(&t->draws) % (m - 1));
	j += j >= i;
	if (r->eligible) {
		i = nth(r->eligible, n, i);
		j = nth(r->eligible, n, j);
	}
	if (dbk_pred_evaluate(t->pred, &t->req, i, now_ms, &a) < 0 ||
	    dbk_pred_evaluate(t->pred, &t->req, j, now_ms, &b) < 0)
		dbk_pred_choose(t->pred, &t->req, now_ms, &a);
	else if (dbk_pred_better(&b, &a))
		a = b;
	return dbk_policy_ttft_chose(t, &a, c);
}

const struct dbk_policy_ops dbk_policy_p2ttft = DBK_POLICY_TTFT_OPS(
        "p2ttft",
        "two servers drawn at random, the\nbetter one by ttft's predicted first\n"
        "token and TPOT",
        p2_choose);
