/* Per-phase attainment and latencies; see phases.h. */
#include "phases.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

size_t dbk_sim_phase_bounds(const struct dbk_sim_config *c, const struct dbk_sim_step *ramp,
                            size_t nramp, double *out, size_t max)
{
	size_t n = 0, k, u = 0;

	if (max == 0)
		return 0;
	out[n++] = 0;
	for (k = 0; k < c->nscale && n < max; k++)
		out[n++] = c->scale[k].t_s;
	for (k = 0; k < nramp && n < max; k++)
		out[n++] = ramp[k].t_s;
	if (c->fail_share > 0 && n < max)
		out[n++] = c->fail_from_s;
	if (c->slow_factor > 0 && n < max)
		out[n++] = c->slow_from_s;
	if (c->slow_factor > 0 && c->slow_until_s < HUGE_VAL && n < max)
		out[n++] = c->slow_until_s;
	qsort(out, n, sizeof(*out), cmp_double);
	for (k = 0; k < n; k++)
		if (u == 0 || out[k] != out[u - 1])
			out[u++] = out[k];
	return u;
}

/* Which phase a request that arrived at t (from the first) is in. */
static size_t phase_of(const double *bounds, size_t nb, double t)
{
	size_t k = 0;

	while (k + 1 < nb && bounds[k + 1] <= t)
		k++;
	return k;
}

struct samples {
	double *ttft, *tpot;
	size_t nttft, ntpot;
};

/* One phase's quantiles from its samples (reordered). */
static void quantiles(struct dbk_sim_phase *p, struct samples *x)
{
	p->ttft_p50 = x->nttft ? dbk_metrics_quantile(x->ttft, x->nttft, 0.50) : NAN;
	p->ttft_p99 = x->nttft ? dbk_metrics_quantile(x->ttft, x->nttft, 0.99) : NAN;
	p->tpot_p50 = x->ntpot ? dbk_metrics_quantile(x->tpot, x->ntpot, 0.50) : NAN;
	p->tpot_p99 = x->ntpot ? dbk_metrics_quantile(x->tpot, x->ntpot, 0.99) : NAN;
}

/* Request id's sample, and whether it meets the objectives. */
static bool sample(const struct dbk_sim *s, uint32_t id, double *ttft, double *tpot, bool *has_tpot)
{
	const struct dbk_sim_outcome *o = dbk_sim_outcome(s, id);
	const struct dbk_slo *slo = &dbk_sim_config(s)->slo;
	double arrival = dbk_sim_req(s, id)->arrival_s, e2e = o->last_token_s - arrival;

	*ttft = o->first_token_s - arrival;
	*has_tpot = o->tokens > 1;
	*tpot = *has_tpot ? (o->last_token_s - o->first_token_s) / (double)(o->tokens - 1) : 0;
	return !(slo->ttft_s > 0 && *ttft > slo->ttft_s) &&
	       !(slo->tpot_s > 0 && *tpot > slo->tpot_s) && !(slo->e2e_s > 0 && e2e > slo->e2e_s);
}

int dbk_sim_phases(const struct dbk_sim *s, const double *bounds, size_t nb,
                   struct dbk_sim_phase *out)
{
	const struct dbk_sim_config *c = dbk_sim_config(s);
	size_t n, k, first, end;
	const struct dbk_sim_req *r0 = dbk_sim_req(s, 0);
	double t0 = r0 ? r0->arrival_s : 0;
	struct samples x;
	int rc = 0;

	n = dbk_sim_nrequests(s);
	memset(&x, 0, sizeof(x));
	x.ttft = malloc((n ? n : 1) * sizeof(double));
	x.tpot = malloc((n ? n : 1) * sizeof(double));
	if (!x.ttft || !x.tpot)
		rc = -1;
	/* Requests are in arrival order: each phase is a run of them. */
	for (k = 0, first = 0; rc == 0 && k < nb; k++, first = end) {
		struct dbk_sim_phase *p = &out[k];

		memset(p, 0, sizeof(*p));
		p->from_s = bounds[k];
		p->to_s = k + 1 < nb ? bounds[k + 1] : HUGE_VAL;
		p->top_instance = -1;
		p->instances = c->nscale
		                       ? (unsigned)dbk_sim_steps_at(c->scale, c->nscale, p->from_s)
		                       : c->ninstances;
		x.nttft = x.ntpot = 0;
		for (end = first;
		     end < n &&
		     (k + 1 == nb ||
		      phase_of(bounds, nb, dbk_sim_req(s, (uint32_t)end)->arrival_s - t0) == k);
		     end++) {
			const struct dbk_sim_outcome *o = dbk_sim_outcome(s, (uint32_t)end);
			double ttft, tpot;
			bool has_tpot;

			p->offered++;
			if (o->instance != DBK_SIM_NONE && (int)o->instance > p->top_instance)
				p->top_instance = (int)o->instance;
			if (o->status != DBK_SIM_DONE) {
				p->failed++;
				continue;
			}
			p->completed++;
			p->good += sample(s, (uint32_t)end, &ttft, &tpot, &has_tpot);
			x.ttft[x.nttft++] = ttft;
			if (has_tpot)
				x.tpot[x.ntpot++] = tpot;
		}
		quantiles(p, &x);
	}
	free(x.ttft);
	free(x.tpot);
	return rc;
}
