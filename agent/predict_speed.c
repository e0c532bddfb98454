/* The predictor's engine (predict_int.h): its default step-time shape
 * and checks, and how much slower or faster than the fleet each server
 * is, learnt from its scrapes. */
#include "predict_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/engine_profile.h"
#include "lib/log.h"
#include "lib/bounds.h"

/* Slowness (dbk_pred_learn_speed): first tokens observed and predicted a
 * sample needs of each, the weight of a new sample, a factor within which
 * a server counts as the fleet's own speed (an equal fleet's samples
 * differ by their mix of requests: at 64 servers on Azure's slice,
 * acting on that noise doubled the TPOT p99), and how far from the
 * fleet's a server's may be (either way). */
#define PRED_SPEED_MIN_N 64.0
#define PRED_SPEED_ALPHA 0.1
#define PRED_SPEED_BAND 1.2
#define PRED_SPEED_MAX 8.0

void dbk_pred_config_default(struct dbk_pred_config *c, unsigned nservers)
{
	/* The engine the stub simulates by default; a faster or slower one
	 * is --engine-speed's job (policy_ttft.c: dbk_policy_ttft_create). */
	const struct dbk_engine_profile *g = dbk_engine_profile_find("h100");

	*c = (struct dbk_pred_config){
		.nservers = nservers,
		.budget_tokens = g->default_max_num_batched_tokens,
		.t_cpu_s = g->t_cpu_s,
		.t_weights_s = g->t_weights_s,
		.lin_tokens_per_s = g->r_lin_tok_s,
		.attn_flop_per_pair = DBK_MODEL_ATTN_FLOPS_PER_PAIR,
		.attn_flops = g->f_attn_flops,
		.kv_bytes_per_token = DBK_MODEL_KV_BYTES_PER_TOKEN,
		.kv_read_bw = g->kv_read_bw,
		.kv_tokens = (double)g->default_kv_capacity_tokens,
		.output_tokens = 256,
		.stall_weight = DBK_PRED_STALL_WEIGHT,
		.ttft_slo_s = DBK_PRED_TTFT_SLO_S,
		.tpot_slo_s = DBK_PRED_TPOT_SLO_S,
		.scrape_stale_ms = 1000,
		.index_entries = DBK_PIDX_DEFAULT_ENTRIES,
	};
}

int dbk_pred_config_check(const struct dbk_pred_config *c, char *err, size_t errlen)
{
	const char *bad = NULL;

	if (c->nservers == 0 || c->nservers > DBK_MAX_SERVERS)
		bad = "server count out of range";
	else if (!pos(c->budget_tokens) || !pos(c->lin_tokens_per_s) || !pos(c->attn_flops) ||
	         !pos(c->kv_read_bw) || !pos(c->kv_tokens))
		bad = "engine rates and capacities must be positive";
	else if (!(c->t_cpu_s >= 0) || !(c->t_weights_s >= 0) || !(c->attn_flop_per_pair >= 0) ||
	         !(c->kv_bytes_per_token >= 0) || !(c->output_tokens >= 0) ||
	         !(c->stall_weight >= 0) ||
	         !isfinite(c->t_cpu_s + c->t_weights_s + c->attn_flop_per_pair +
	                   c->kv_bytes_per_token + c->output_tokens + c->stall_weight))
		bad = "engine costs must be finite and not negative";
	else if (!pos(c->ttft_slo_s) || !pos(c->tpot_slo_s))
		bad = "the TTFT and TPOT objectives must be positive and finite";
	if (bad && err && errlen)
		dbk_errf(err, errlen, "%s", bad);
	return bad ? -1 : 0;
}

/* A server's slowness against the fleet's: on a fleet of mixed GPUs one
 * step-time shape fits none. The scraped TTFT histogram's sum and count
 * give the mean first token the server served since the last sample;
 * the books give the mean predicted for the requests sent there at the
 * fleet's speed. Their ratio, smoothed in log space, is the server's
 * slowness; what every server shares (a model off for all, other
 * balancers' queues) cancels in the ratio to the fleet's geometric mean,
 * so an equal fleet stays near 1 and a wrong --engine-speed changes
 * nothing. A server that does not export the histogram keeps 1. */
void dbk_pred_learn_speed(struct dbk_pred *p, struct pred_srv *s, const struct dbk_pred_scrape *sc)
{
	if (!(sc->ttft_count >= 0 && sc->ttft_sum_s >= 0 && isfinite(sc->ttft_count) &&
	      isfinite(sc->ttft_sum_s))) {
		s->ttft_n_then = -1;
		return;
	}
	double dn = sc->ttft_count - s->ttft_n_then, ds = sc->ttft_sum_s - s->ttft_sum_then;
	bool first = s->ttft_n_then < 0;
	s->ttft_n_then = sc->ttft_count;
	s->ttft_sum_then = sc->ttft_sum_s;
	if (first || dn < 0 || ds < 0) {
		/* A first look, or the server restarted: a new sample. */
		s->obs_sum = s->obs_n = s->pred_sum = s->pred_n = 0;
		return;
	}
	s->obs_sum += ds;
	s->obs_n += dn;
	if (s->obs_n < PRED_SPEED_MIN_N || s->pred_n < PRED_SPEED_MIN_N || !(s->pred_sum > 0) ||
	    !(s->obs_sum > 0))
		return;
	double v = log((s->obs_sum / s->obs_n) / (s->pred_sum / s->pred_n));
	v = fmax(-log(PRED_SPEED_MAX * PRED_SPEED_MAX),
	         fmin(log(PRED_SPEED_MAX * PRED_SPEED_MAX), v));
	s->log_slow = s->learnt ? s->log_slow + PRED_SPEED_ALPHA * (v - s->log_slow) : v;
	s->learnt = true;
	s->obs_sum = s->obs_n = s->pred_sum = s->pred_n = 0;
	dbk_pred_update_slow(p);
}

/* Every server's factor: a learnt one's against the fleet's learnt mean;
 * one not learnt yet takes its operator weight as the prior (a weight
 * w against the fleet's geometric mean weight W: W / w, so a server of
 * weight 10 beside one of 3 is priced 3.3 times as fast), or 1 without
 * weights. Within PRED_SPEED_BAND of the fleet's is the fleet's. */
void dbk_pred_update_slow(struct dbk_pred *p)
{
	double mean = 0, n = 0, wmean = 0, wn = 0;

	for (unsigned i = 0; i < p->c.nservers; i++) {
		if (p->s[i].learnt) {
			mean += p->s[i].log_slow;
			n++;
		}
		if (p->s[i].weight > 0) {
			wmean += log(p->s[i].weight);
			wn++;
		}
	}
	if (n > 0)
		mean /= n;
	if (wn > 0)
		wmean /= wn;
	for (unsigned i = 0; i < p->c.nservers; i++) {
		struct pred_srv *x = &p->s[i];
		double d = x->learnt       ? x->log_slow - mean
		           : x->weight > 0 ? wmean - log(x->weight)
		                           : 0;
		if (fabs(d) < log(PRED_SPEED_BAND))
			d = 0;
		x->slow = exp(fmax(-log(PRED_SPEED_MAX), fmin(log(PRED_SPEED_MAX), d)));
	}
}
