/* Other balancers reading the same stale scrapes (predict_int.h): when
 * their herd is large, the choice is a draw under the water level, and
 * each of our requests stands for theirs until the next scrape. */
#include "predict_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The share of the scraped load that the books do not hold: other
 * balancers'. 0 when the agent is alone, and then every decision is the
 * greedy one. */
double dbk_pred_unseen_share(const struct dbk_pred *p, uint64_t now_ms)
{
	double others = 0, own = 0;

	for (unsigned i = 0; i < p->c.nservers; i++) {
		const struct pred_srv *s = &p->s[i];
		struct pred_others o;
		if (!pred_fresh(p, s, now_ms))
			continue;
		pred_others(p, s, now_ms, &o);
		others += o.requests;
		own += s->inflight_then;
	}
	return others > 0 ? others / (others + own) : 0;
}

/* Requests the others send for each of ours: share / (1 - share). */
static double pred_others_per_ours(double share)
{
	share = fmin(share, 0.95);
	return share / (1 - share);
}

static int pred_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/* With other balancers reading the same stale scrapes, a greedy choice
 * is theirs too: their requests sent before the next scrape pile onto
 * the server that looks fastest to all (the herd effect of old
 * information). Only when that herd is large, that is when their
 * requests per scrape period (ours times others_per_ours) reach the
 * number of candidates: below, the greedy choice on our fresh books
 * loses less than a random one (4 servers with bursts of requests of
 * very different sizes). Then pour the prefill they send for each of
 * ours (of the mean request) onto the candidates' predicted first
 * tokens, the lowest first (water-filling, as one balancer deciding
 * them all would), and draw ours among the servers under the water with
 * the probability of their share of it, by weighted rendezvous on the
 * request's tie key: the balancers together fill the servers as one
 * would, and a server far ahead (a cache hit) still takes nearly all.
 * Candidates: usable, holding it, fitting and within the objectives as
 * the greedy choice bi is.
 * Sets p->x->level (-INFINITY: greedy). */
int dbk_pred_spread(struct dbk_pred *p, int bi, double share, uint64_t tie, uint64_t now_ms)
{
	unsigned n = p->c.nservers, m = 0;
	int cls = pred_class(&p->x->ev[bi]);
	double others = pred_others_per_ours(share);
	double rate = p->rate * exp(-sec(now_ms - p->rate_ms) / PRED_RATE_S);

	p->x->level = -INFINITY;
	for (unsigned i = 0; i < n; i++)
		if (p->x->ev[i].ok && pred_class(&p->x->ev[i]) == cls)
			p->x->sorted[m++] = pred_score(p, &p->x->ev[i]);
	if (others * rate * sec(p->scrape_period_ms) < m)
		return bi;
	qsort(p->x->sorted, m, sizeof(*p->x->sorted), pred_cmp);
	double water = others * p->mean_work_s, sum = 0, level = p->x->sorted[0];
	for (unsigned k = 0; k < m; k++) {
		sum += p->x->sorted[k];
		level = (water + sum) / (k + 1);
		if (k + 1 == m || level <= p->x->sorted[k + 1])
			break;
	}
	p->x->level = level;
	double top = 0;
	int pick = bi;
	for (unsigned i = 0; i < n; i++) {
		const struct pred_eval *e = &p->x->ev[i];
		double w = e->ok && pred_class(e) == cls ? level - pred_score(p, e) : 0;
		if (!(w > 0))
			continue;
		double u = ((double)(dbk_pred_tie(tie, i) >> 11) + 0.5) * 0x1p-53;
		double v = -w / log(u);
		if (v > top) {
			top = v;
			pick = (int)i;
		}
	}
	return pick;
}

/* Our request stands for others_per_ours of the other balancers', sent
 * unseen until the next scrape: charge each server under the water of
 * dbk_pred_spread with its share of their prefill. Nothing to do (and no
 * second choice to make) while the agent is alone. */
void dbk_pred_expect_others(struct dbk_pred *p, const struct dbk_pred_request *r, uint64_t now_ms)
{
	struct dbk_pred_choice ch;
	double now = sec(now_ms);

	if (!(dbk_pred_unseen_share(p, now_ms) > 0))
		return;
	if (dbk_pred_choose(p, r, now_ms, &ch) < 0 || !isfinite(p->x->level))
		return;
	for (unsigned i = 0; i < p->c.nservers; i++) {
		const struct pred_eval *e = &p->x->ev[i];
		double w = e->ok && pred_class(e) == 2 * ch.kv_fits + ch.within
		                   ? p->x->level - pred_score(p, e)
		                   : 0;
		if (w > 0)
			p->s[i].unseen_end_s = fmax(now, p->s[i].unseen_end_s) + w;
	}
}
