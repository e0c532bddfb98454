#include "accounting.h"

#include <string.h>

/* Completion lag bounds, in milliseconds. */
static const double lag_bounds_ms[] = {
	1, 2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000, 30000, 60000,
};

void dbk_acct_init(struct dbk_acct *a, struct dbk_balancer *bal, const char *const *names)
{
	memset(a, 0, sizeof(*a));
	a->bal = bal;
	a->names = names;
	dbk_histo_init(&a->lag_ms, lag_bounds_ms, sizeof(lag_bounds_ms) / sizeof(lag_bounds_ms[0]));
}

enum dbk_acct_outcome dbk_acct_complete(struct dbk_acct *a, const struct dbk_completion *c,
                                        uint64_t mono_ms, int64_t wall_ms,
                                        struct dbk_bal_lease *lease)
{
	struct dbk_bal_lease l;

	/* The first copy to arrive does the work, the other is only
	 * counted. */
	if (dbk_bal_ended(a->bal, c->id, c->id_len)) {
		a->stats.duplicates++;
		return DBK_ACCT_DUPLICATE;
	}
	a->stats.completions++;
	if (c->id_len)
		dbk_bal_bury(a->bal, c->id, c->id_len, mono_ms);
	/* No decision variable: HAProxy balanced this one alone, unless the
	 * client left while the agent was deciding, in which case the lease
	 * was taken but the ACK found no stream to set the variable on. The
	 * id tells. */
	if (c->chosen_len == 0 && !dbk_bal_holds(a->bal, c->id, c->id_len)) {
		/* Its NOTIFY may still be on the way (another connection):
		 * the id, buried above, takes no lease when it comes. */
		a->stats.undecided++;
		return DBK_ACCT_UNDECIDED;
	}
	/* Served: vLLM answered it (a 2xx). An error status, or none (the
	 * client or the server left first), tells the policy that its time
	 * measured nothing of the server's (dbk_bal_lease.unserved). */
	bool served = c->status >= 200 && c->status < 300;
	if (dbk_bal_end(a->bal, c->id, c->id_len, served, &l) != DBK_BAL_OK)
		return DBK_ACCT_UNKNOWN;
	/* A lease follows a redispatch when HAProxy reports it at response
	 * time (the dbucket-moved message); one that did not (the request
	 * failed before any response) is still released where it was
	 * charged, so the books balance, and counted here. */
	const char *chosen = a->names[l.server];
	if (c->server_len != strlen(chosen) || memcmp(c->server, chosen, c->server_len) != 0)
		a->stats.elsewhere++;
	int64_t lag = wall_ms - c->log_ms;
	dbk_histo_add(&a->lag_ms, lag > 0 ? (double)lag : 0.0);
	if (lease)
		*lease = l;
	return DBK_ACCT_RELEASED;
}

size_t dbk_acct_expire(struct dbk_acct *a, uint64_t now_ms, uint64_t lease_ttl_ms,
                       dbk_bal_lease_cb *cb, void *arg)
{
	size_t n = dbk_bal_expire(a->bal, now_ms, lease_ttl_ms, cb, arg);

	dbk_bal_expire_buried(a->bal, now_ms, DBK_ACCT_BURIED_TTL_MS);
	return n;
}

void dbk_acct_reconcile_init(struct dbk_acct_reconcile *r)
{
	r->streak = 0;
	r->max_haproxy = 0;
	r->min_excess = 0;
}

unsigned dbk_acct_reconcile_step(struct dbk_acct_reconcile *r, unsigned k, unsigned ours,
                                 long haproxy)
{
	long long excess, by_max, take;

	if (k == 0)
		k = DBK_ACCT_RECONCILE_K;
	if (haproxy < 0 || (long long)ours <= (long long)haproxy) {
		dbk_acct_reconcile_init(r);
		return 0;
	}
	excess = (long long)ours - haproxy;
	if (r->streak == 0) {
		r->max_haproxy = haproxy;
		r->min_excess = excess;
	} else {
		if (haproxy > r->max_haproxy)
			r->max_haproxy = haproxy;
		if (excess < r->min_excess)
			r->min_excess = excess;
	}
	r->streak++;
	if (r->streak < k)
		return 0;

	by_max = (long long)ours - r->max_haproxy;
	take = by_max < r->min_excess ? by_max : r->min_excess;
	dbk_acct_reconcile_init(r);
	return take > 0 ? (unsigned)take : 0;
}

bool dbk_acct_reclaim_cutoff(uint64_t now_ms, uint64_t poll_ms, uint64_t min_age_ms,
                             uint64_t *started_by)
{
	uint64_t span = (uint64_t)DBK_ACCT_RECONCILE_K * poll_ms;

	if (span < min_age_ms)
		span = min_age_ms;
	if (now_ms <= span)
		return false;
	*started_by = now_ms - span;
	return true;
}

size_t dbk_acct_reconcile(struct dbk_balancer *bal, unsigned server, struct dbk_acct_reconcile *r,
                          long haproxy, uint64_t now_ms, uint64_t poll_ms, uint64_t min_age_ms,
                          dbk_bal_lease_cb *cb, void *arg)
{
	unsigned leak = dbk_acct_reconcile_step(r, 0, dbk_bal_server_inflight(bal, server),
	                                        haproxy);
	uint64_t started_by;

	if (!leak || !dbk_acct_reclaim_cutoff(now_ms, poll_ms, min_age_ms, &started_by))
		return 0;
	return dbk_bal_reclaim(bal, server, leak, started_by, cb, arg);
}
