/* Admission in the simulator; see admit.h. */
#include "admit.h"

#include "model/engine.h"
#include "policy.h"

static double inst_score(double waiting, double kv)
{
	double q = waiting / DBK_SIM_SAT_QUEUE, k = kv / DBK_SIM_SAT_KV;

	return q > k ? q : k;
}

double dbk_sim_saturation(const struct dbk_sim *s, const struct dbk_sim_snapshot *sn)
{
	unsigned n = dbk_sim_ninstances(s), used = 0;
	double sum = 0, now = dbk_sim_now(s);

	for (unsigned i = 0; i < n; i++) {
		if (!dbk_sim_usable(s, i))
			continue;
		used++;
		if (!sn) {
			const struct dbk_engine *e = dbk_sim_engine(s, i);

			sum += inst_score(dbk_engine_num_waiting(e), dbk_engine_kv_usage(e));
			continue;
		}
		const struct dbk_sim_scrape *x = dbk_sim_snapshot_get(sn, i);

		if (x->at_s < 0 || now - x->at_s > DBK_SIM_SAT_STALE_S)
			sum += 1;
		else
			sum += inst_score(x->waiting, x->kv_usage);
	}
	return used ? sum / used : 1;
}

static void fleet_first_tokens(const struct dbk_sim *s, double *sum, uint64_t *count)
{
	*sum = 0;
	*count = 0;
	for (unsigned i = 0; i < dbk_sim_ninstances(s); i++) {
		double si;
		uint64_t ci;

		dbk_sim_first_tokens(s, i, &si, &ci);
		*sum += si;
		*count += ci;
	}
}

void dbk_sim_ttft_window_update(struct dbk_sim_ttft_window *w, const struct dbk_sim *s)
{
	double now = dbk_sim_now(s), sum;
	uint64_t count;

	if (w->start_s > 0 && now - w->start_s < DBK_SIM_TTFT_WINDOW_S)
		return;
	fleet_first_tokens(s, &sum, &count);
	/* A new engine starts its counters at 0: that window tells nothing. */
	if (w->start_s > 0 && count > w->count0 && sum >= w->sum0)
		w->mean_s = (sum - w->sum0) / (double)(count - w->count0);
	w->start_s = now > 0 ? now : 1e-9;
	w->sum0 = sum;
	w->count0 = count;
}

int dbk_sim_admit(const struct dbk_sim *s, struct dbk_admit_state *st, const struct dbk_sim_req *r,
                  const struct dbk_policy_choice *ch, const struct dbk_sim_ttft_window *w)
{
	const struct dbk_sim_config *c = dbk_sim_config(s);
	const struct dbk_policy_choice none = { 0 };
	const struct dbk_policy_choice *pc = ch ? ch : &none;
	int chosen = pc->server;
	bool predicted = pc->predicted;
	struct dbk_admit_input in = {
		.cls = (enum dbk_class)r->cls,
		.predicted = predicted,
		.ttft_ms = pc->ttft_s * 1e3,
		.own_ms = pc->own_s * 1e3,
		.tpot_ms = pc->tpot_s * 1e3,
		.tpot_seen_ms = pc->tpot_seen_s * 1e3,
		.kv_wait_ms = pc->kv_wait_s * 1e3,
		.now_ms = (uint64_t)(dbk_sim_now(s) * 1e3),
	};

	/* Critical is never refused; without a prediction (nothing learnt
	 * of its risk either) spare it the saturation's sum. */
	if (!c->admit.enabled || (r->cls == DBK_CLASS_CRITICAL && !predicted))
		return chosen;
	if (!predicted) {
		in.saturated = dbk_sim_saturation(s, NULL) >= 1.0;
		in.fleet_ttft_ms = w ? w->mean_s * 1e3 : 0;
	}
	/* A held request decided again is no new evidence of its class's
	 * risk: counted at each decision, a burst's held requests would
	 * renew it for as long as they are held, and a burst would pass for
	 * a sustained episode (BENCHMARKS.md, "Stop 39"). */
	struct dbk_admit_state again;

	if (st && dbk_sim_holding(s, r->id)) {
		again = *st;
		st = &again;
	}
	struct dbk_admit_result a = dbk_admit(&c->admit, st, &in);

	/* Let in once late counting its wait, a held request takes a
	 * server's time and still misses its objective (BENCHMARKS.md,
	 * "Stop 39"): it stays held, to be shed at its bound. */
	if (a.verdict == DBK_ADMIT_ROUTE && c->admit_queue_in_time && predicted &&
	    dbk_sim_holding(s, r->id) &&
	    (dbk_sim_now(s) - r->arrival_s + pc->ttft_s) * 1e3 > (double)c->admit.ttft_ms)
		return DBK_SIM_SHED(c->admit.retry_min_s);
	if (a.verdict == DBK_ADMIT_ROUTE)
		return chosen;
	return DBK_SIM_SHED(a.retry_after_s < DBK_SIM_SHED_MAX_S ? a.retry_after_s
	                                                         : DBK_SIM_SHED_MAX_S);
}
