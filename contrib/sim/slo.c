/* SLO-capacity search; see slo.h. */
#include "slo.h"

#include <math.h>
#include <string.h>

void dbk_slo_search_default(struct dbk_slo_search *p)
{
	p->target = 0.9;
	p->start = 1.0;
	p->rel_tol = 0.02;
	p->max_evals = 16;
	p->min_frac = 1.0 / 64;
}

static int eval(const struct dbk_slo_search *p, dbk_slo_eval_fn f, void *ctx, double rate,
                struct dbk_slo_result *out, bool *pass)
{
	double a;

	if (f(ctx, rate, &a) != 0)
		return -1;
	out->evals++;
	if (out->evals == 1 || a > out->best_attain) {
		out->best_attain = a;
		out->best_attain_rate = rate;
	}
	*pass = a >= p->target;
	if (*pass && rate > out->rate) {
		out->rate = rate;
		out->attain = a;
	}
	return 0;
}

int dbk_slo_capacity(const struct dbk_slo_search *p, dbk_slo_eval_fn f, void *ctx,
                     struct dbk_slo_result *out)
{
	double lo = 0, hi = 0, r = p->start;
	bool pass;

	memset(out, 0, sizeof(*out));
	if (!(p->start > 0) || !isfinite(p->start) || !(p->rel_tol > 0) || p->max_evals < 2 ||
	    !(p->target >= 0 && p->target <= 1) || !(p->min_frac > 0 && p->min_frac <= 1))
		return -1;
	if (eval(p, f, ctx, r, out, &pass) != 0)
		return -1;
	/* Bracket: double while passing, halve while failing. */
	while (out->evals < p->max_evals) {
		if (pass)
			lo = r;
		else
			hi = r;
		if (lo > 0 && hi > 0)
			break;
		if (!pass && r / 2 < p->start * p->min_frac)
			break;
		r = pass ? r * 2 : r / 2;
		if (eval(p, f, ctx, r, out, &pass) != 0)
			return -1;
	}
	if (pass && hi == 0)
		lo = r;
	else if (!pass && lo == 0)
		hi = r;
	/* Bisect, geometrically: rates span orders of magnitude. */
	while (lo > 0 && hi > 0 && hi / lo - 1 > p->rel_tol && out->evals < p->max_evals) {
		r = sqrt(lo * hi);
		if (eval(p, f, ctx, r, out, &pass) != 0)
			return -1;
		if (pass)
			lo = r;
		else
			hi = r;
	}
	out->lo = lo;
	out->hi = hi;
	out->closed = lo > 0 && hi > 0 && hi / lo - 1 <= p->rel_tol;
	return 0;
}
