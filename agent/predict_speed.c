/* The predictor's engine (predict_int.h): its default step-time shape
 * and checks, and how much slower or faster than the fleet each server
 * is, learnt from its requests and its scrapes. */
#include "predict_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/engine.h"
#include "model/engine_profile.h"
#include "lib/log.h"
#include "lib/bounds.h"

/* Slowness: first tokens observed and predicted a scraped sample needs
 * of each where they cannot be matched to ours (dbk_pred_learn_speed),
 * a factor within which a server counts as the fleet's own speed (an
 * equal fleet's samples differ by their mix of requests: at 64 servers
 * on Azure's slice, acting on that noise doubled the TPOT p99), and
 * the standard errors of its fit within which it does too, how far
 * from the fleet's a server's may be (either way), and the
 * observations, in requests, from which a server counts in the fleet's
 * median and has a speed of its own. */
#define PRED_SPEED_MIN_N 64.0
#define PRED_SPEED_BAND 1.2
#define PRED_SPEED_SE 2.0
#define PRED_SPEED_MAX 8.0
#define PRED_SPEED_SEEN 8.0
/* Seconds after which what a server taught counts 1/e, however few
 * requests it was sent since, and how often the fits fade. A server
 * priced slow is sent little, so its own requests alone kept its old
 * rows for minutes after it recovered (Mooncake 4, one server 3x slow
 * from 200 s to 500 s: still priced 2.4x slow at 610 s, 1.9x at 860 s,
 * sent half its share of prompt tokens to the end). Faded by age, its
 * fit goes back to the fleet's times its prior (under PRED_SPEED_SEEN
 * rows: the prior alone), it is sent its share again, and what those
 * requests say prices it anew, slow or well. 120 s, not 60: a server
 * sent a request every 4 s then holds 30 rows, which still tell its
 * decode from its prefill (test_predict_learn.c); at 60 s, 15 did not.
 * Nor faster than the fleet ends PRED_SPEED_FADE_REQS requests per
 * usable server: what fades a recovered server's old price is the
 * others' traffic, which it is not sent its share of; a lull, the
 * fleet sent nothing, tells nothing new of anyone. Faded by the clock
 * alone, a fleet sent a request every 7 s per server forgot its A100s
 * in each lull of Mooncake's arrivals (under 18 rows, the fits' errors
 * wider than the ratio they measured: their prefill priced 1.0 to 3.9
 * times the fleet's, against 3x the H100s', and back), and ttft never
 * had 85% of Mooncake's requests within the objectives on 4 H100/A100
 * servers; the clairvoyant reference did up to rate 0.351, ttft now to
 * 0.40 (BENCHMARKS.md, "Stop 47: the fade waits for traffic"). */
#define PRED_SPEED_FADE_S 120.0
#define PRED_SPEED_FADE_REQS 64.0
#define PRED_SPEED_FADE_EVERY_MS 1000

void dbk_pred_config_default(struct dbk_pred_config *c, unsigned nservers)
{
	/* The engine the stub simulates by default; a faster or slower one
	 * is --engine-speed's job (policy_ttft.c: dbk_policy_ttft_create). */
	const struct dbk_engine_profile *g = dbk_engine_profile_find("h100");

	*c = (struct dbk_pred_config){
		.nservers = nservers,
		.budget_tokens = g->default_max_num_batched_tokens,
		/* Told the servers' budget, the queue is packed into that.
		 * Untold, into each server's as its scrapes show it, and into
		 * budget_tokens until they do (predict_budget.c): one budget
		 * for all, 2048 or 8192, lost 6-24% on H100/A100 fleets under
		 * bursts of short prompts, whose A100s it priced as H100s
		 * (BENCHMARKS.md, "Stop 45: short prompts packed into one
		 * step"); learnt, the matrix's gained 7-20% ("Stop 53: the
		 * step budget learnt"). */
		.pack_tokens = 0,
		.learn_pack = true,
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
		.late_weight = DBK_PRED_LATE_WEIGHT,
		.ttft_slo_s = DBK_PRED_TTFT_SLO_S,
		.tpot_slo_s = DBK_PRED_TPOT_SLO_S,
		.scrape_stale_ms = 1000,
		.lora_load_s = DBK_ENGINE_LORA_LOAD_S,
		.index_entries = DBK_PIDX_DEFAULT_ENTRIES,
	};
}

int dbk_pred_config_check(const struct dbk_pred_config *c, char *err, size_t errlen)
{
	const char *bad = NULL;

	if (c->nservers == 0 || c->nservers > DBK_MAX_SERVERS)
		bad = "server count out of range";
	else if (!pos(c->budget_tokens) || !(c->pack_tokens >= 0) || !pos(c->lin_tokens_per_s) ||
	         !pos(c->attn_flops) || !pos(c->kv_read_bw) || !pos(c->kv_tokens))
		bad = "engine rates and capacities must be positive";
	else if (!(c->t_cpu_s >= 0) || !(c->t_weights_s >= 0) || !(c->attn_flop_per_pair >= 0) ||
	         !(c->kv_bytes_per_token >= 0) || !(c->output_tokens >= 0) ||
	         !(c->stall_weight >= 0) || !(c->late_weight >= 0) || !(c->lora_load_s >= 0) ||
	         !isfinite(c->t_cpu_s + c->t_weights_s + c->attn_flop_per_pair +
	                   c->kv_bytes_per_token + c->output_tokens + c->stall_weight +
	                   c->late_weight + c->lora_load_s))
		bad = "engine costs must be finite and not negative";
	else if (!pos(c->ttft_slo_s) || !pos(c->tpot_slo_s))
		bad = "the TTFT and TPOT objectives must be positive and finite";
	if (bad && err && errlen)
		dbk_errf(err, errlen, "%s", bad);
	return bad ? -1 : 0;
}

/* A server's slowness against the fleet's: on a fleet of mixed GPUs one
 * step-time shape fits none. Two signals feed one fit per server
 * (predict_learn.h): every request's whole duration, against the first
 * token and the decode the books predicted for it at the fleet's speed
 * (dbk_pred_learn_request), and, where the server exports vLLM's
 * first-token histogram, the mean first token of each scrape's new
 * first tokens against the mean predicted for the same requests of ours
 * (matched in order, dbk_plearn_match_scrape), a row of the prefill
 * alone counted as its number of first tokens (dbk_pred_learn_speed).
 * A row every scrape, not a sample of 64: a request's duration comes
 * only after its decode, and at 64 servers on Azure's slice the whole
 * load arrives before most durations end, and before most servers
 * have served 64 first tokens. Where the count is not ours alone
 * (another balancer's first tokens), spans of PRED_SPEED_MIN_N first
 * tokens against the mean of ours sent meanwhile. What every server
 * shares (a model off for all, other balancers' queues) cancels in the
 * ratio to the fleet's geometric mean, so an equal fleet stays near 1
 * and a wrong --engine-speed changes nothing. */
static void window_reset(struct pred_srv *s)
{
	s->obs_sum = s->obs_n = 0;
	s->win_sum = s->pred_sum;
	s->win_n = s->pred_n;
	s->win_own = s->own_sum;
}

/* A prefill row of n first tokens, observed mean y against predicted
 * x, of which own was their own prefills. The rest of x is the queue
 * ahead as the books price it, one prefill after another, where vLLM
 * packs many short prompts into a step: the books' queue of a server
 * runs many times its true one (4 equal servers on a short-prompt trace
 * at twice their capacity: first tokens of 0.1-1 s against 5-15 s
 * predicted), by how much it is sent, not how fast it is. Read as
 * speed, a server sent more looked faster (one priced 0.31, another
 * 2.2) and was sent more still. So first tokens sooner than predicted
 * count as own's share of x: those that waited behind little teach that
 * a server is fast, a long booked queue almost nothing. First tokens
 * later than predicted count whole: packing cannot make a queue slower
 * than the books', and on a mixed fleet under load they are how the
 * slower GPU shows (Azure at 64 instances: the A100's queue of prompts
 * two to a step of its 2048-token budget, against eight on an H100's).
 * And a row counts as its prediction's share of the fleet's mean
 * prefill, at most whole: the fit is of ratios, and a first token
 * predicted tiny (a cache hit the server did not have, a long chunk's
 * step in progress: Mooncake's rows of 0.01-0.06 s predicted, 0.23 s
 * served) is an error of the prediction, not of the speed, that read
 * 16x slow (the clamp) and priced one of 4 equal servers 2x slow. */
static void learn_prefill(struct dbk_pred *p, struct pred_srv *s, double x, double own, double y,
                          double n)
{
	double w = y >= x ? 1 : fmin(1, fmax(0, own / x));

	if (p->mean_work_s > 0)
		w *= fmin(1, x / n / p->mean_work_s);
	dbk_plearn_add(&s->hist, x / n, 0, y / n, n * w);
	dbk_pred_update_slow(p);
}

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
	const struct dbk_plearn_sent t = { s->pred_n, s->pred_sum, s->own_sum, s->pending_then };
	if (first || dn < 0 || ds < 0) {
		/* A first look, or the server restarted: match from now. */
		dbk_plearn_match_sync(&s->match, sc->ttft_count, &t);
		window_reset(s);
		return;
	}
	double x, own;
	int matched = dbk_plearn_match_scrape(&s->match, sc->ttft_count, &t, &x, &own);
	if (matched >= 0) {
		window_reset(s);
		if (matched > 0 && x > 0 && ds > 0)
			learn_prefill(p, s, x, own, ds, dn);
		return;
	}
	s->obs_sum += ds;
	s->obs_n += dn;
	double pn = s->pred_n - s->win_n, ps = s->pred_sum - s->win_sum;
	if (s->obs_n < PRED_SPEED_MIN_N || pn < PRED_SPEED_MIN_N || !(ps > 0) || !(s->obs_sum > 0))
		return;
	/* The spans' means, each counted as the fewer of its two counts. */
	double n = fmin(s->obs_n, pn);
	learn_prefill(p, s, ps / pn * n, (s->own_sum - s->win_own) / pn * n,
	              s->obs_sum / s->obs_n * n, n);
	window_reset(s);
}

/* Every server's fits fade by their age since the last fade or by the
 * requests that taught the fleet since, whichever fades them less, at
 * most once every PRED_SPEED_FADE_EVERY_MS (O(servers)). */
static void fade(struct dbk_pred *p, uint64_t now_ms)
{
	if (p->fade_ms == 0 || now_ms < p->fade_ms) {
		p->fade_ms = now_ms;
		p->fade_taught = p->taught;
		return;
	}
	if (now_ms - p->fade_ms < PRED_SPEED_FADE_EVERY_MS)
		return;
	unsigned up = 0;
	for (unsigned i = 0; i < p->c.nservers; i++)
		up += p->s[i].state == DBK_PRED_UP;
	double aged = sec(now_ms - p->fade_ms) / PRED_SPEED_FADE_S;
	double taught = (p->taught - p->fade_taught) / (PRED_SPEED_FADE_REQS * (up ? up : 1));
	double keep = exp(-fmin(aged, taught));
	p->fade_ms = now_ms;
	p->fade_taught = p->taught;
	for (unsigned i = 0; i < p->c.nservers; i++) {
		dbk_plearn_fade(&p->s[i].lr, keep);
		dbk_plearn_fade(&p->s[i].hist, keep);
	}
}

void dbk_pred_learn_request(struct dbk_pred *p, struct pred_srv *s, double x1, double x2, double y,
                            uint64_t now_ms)
{
	p->taught++;
	fade(p, now_ms);
	dbk_plearn_add(&s->lr, x1, x2, y, 1);
	dbk_pred_update_slow(p);
}

/* The operator's prior of a server: a weight w against the fleet's
 * geometric mean weight W makes it W / w as slow (a server of weight 10
 * beside one of 3 is priced 3.3 times as fast); 1 without weights. Kept
 * in each server (prior) until a weight changes (prior_stale): the
 * updates below read it for every server on every request ended. */
static void priors(struct dbk_pred *p)
{
	double wmean = 0, wn = 0;

	for (unsigned i = 0; i < p->c.nservers; i++)
		if (p->s[i].weight > 0) {
			wmean += log(p->s[i].weight);
			wn++;
		}
	if (wn > 0)
		wmean /= wn;
	for (unsigned i = 0; i < p->c.nservers; i++) {
		const struct pred_srv *x = &p->s[i];
		p->s[i].prior = x->weight > 0 ? exp(wmean - log(x->weight)) : 1;
	}
	p->prior_stale = false;
}

/* A ratio counts as the fleet's own (1) within band of 1, else as it is (at
 * most PRED_SPEED_MAX either way). Well inside the band, by far more
 * than log's rounding (under an ulp), the answer is 1 without the three
 * calls: most servers of a fleet most of the time. */
static double banded(double ratio, double band)
{
	if (ratio <= band * (1 - 0x1p-30) && ratio * band >= 1 + 0x1p-30)
		return 1;
	double d = log(ratio);

	if (!isfinite(d) || fabs(d) < log(band))
		d = 0;
	return exp(fmax(-log(PRED_SPEED_MAX), fmin(log(PRED_SPEED_MAX), d)));
}

/* The band of a fit of factor v with standard error se: the fleet's
 * PRED_SPEED_BAND, or PRED_SPEED_SE standard errors if wider. Where the
 * errors are well within the band, no exp (0.99 of its log: far more
 * than exp's rounding) tells it. */
static double band_of(double se, double v)
{
	double x = PRED_SPEED_SE * se / v;

	return x < 0.99 * log(PRED_SPEED_BAND) ? PRED_SPEED_BAND : fmax(PRED_SPEED_BAND, exp(x));
}

static void swap(double *v, long i, long j)
{
	double t = v[i];
	v[i] = v[j];
	v[j] = t;
}

/* The k-th smallest of v[0..n) (k < n), v reordered so that those
 * before it are no larger: a selection in three-way partitions
 * (values equal to the pivot in the middle), O(n) where the sort it
 * replaces was O(n log n) through a comparison call. */
static double select_kth(double *v, long n, long k)
{
	long lo = 0, hi = n - 1;

	while (lo < hi) {
		double pivot = v[lo + (hi - lo) / 2];
		long lt = lo, i = lo, gt = hi;
		while (i <= gt) {
			if (v[i] < pivot)
				swap(v, lt++, i++);
			else if (v[i] > pivot)
				swap(v, i, gt--);
			else
				i++;
		}
		if (k < lt)
			hi = lt - 1;
		else if (k > gt)
			lo = gt + 1;
		else
			return pivot;
	}
	return v[k];
}

/* The median of v[0..n) (reordered); 0 when n is 0. */
static double median(double *v, unsigned n)
{
	if (n == 0)
		return 0;
	double hi = select_kth(v, n, n / 2);
	if (n % 2)
		return hi;
	double lo = v[0];
	for (unsigned i = 1; i < n / 2; i++)
		lo = fmax(lo, v[i]);
	return (lo + hi) / 2;
}

/* The fleet's factors (fa, fb: the durations' a and b; fh: the first
 * tokens' a): the median, in log space, of the servers with
 * PRED_SPEED_SEEN rows of it or more (1 with none), each fit pulled
 * towards the fleet's last times the server's prior; a median, so that
 * one slow server among fast ones is priced as slow against them, not
 * against a mean it drags (with a mean and the band, three H100s and an
 * A100 3x slower were priced 1 and 2.3). One fit of the durations gives
 * a and b both. The choice's scratch holds the logs: this never runs
 * within a choice. */
static void fleet_factors(struct dbk_pred *p, double *fa, double *fb, double *fh)
{
	double *la = p->x->sorted, *lb = la + p->c.nservers, *lh = lb + p->c.nservers;
	unsigned n = 0, nh = 0;

	for (unsigned i = 0; i < p->c.nservers; i++) {
		const struct pred_srv *x = &p->s[i];
		double q = x->prior, a, b;
		if (x->lr.n >= PRED_SPEED_SEEN) {
			dbk_plearn_solve(&x->lr, p->fleet_a * q, p->fleet_b * q, &a, &b);
			la[n] = log(fmax(a, 1e-3) / q);
			lb[n++] = log(fmax(b, 1e-3) / q);
		}
		if (x->hist.n >= PRED_SPEED_SEEN) {
			dbk_plearn_solve(&x->hist, p->fleet_h * q, p->fleet_h * q, &a, &b);
			lh[nh++] = log(fmax(a, 1e-3) / q);
		}
	}
	*fa = n ? exp(median(la, n)) : 1;
	*fb = n ? exp(median(lb, n)) : 1;
	*fh = nh ? exp(median(lh, nh)) : 1;
}

/* Only slower than the band: a fleet read faster than the model would
 * undo admission's unpacked queue (stop 45), which prices short prompts'
 * queues above their true wait on purpose; nor within it, where an H100
 * fleet's fit reads 0.84-1.15 by its mix of requests (Azure, 16 H100s,
 * 0.8x to 1.5x capacity), and taken as it was, agentic 72 on 4 H100s
 * shed 104 requests at 0.8x capacity instead of 40. */
double dbk_pred_fleet_slowness(const struct dbk_pred *p)
{
	return p->fleet_h > PRED_SPEED_BAND ? p->fleet_h : 1;
}

/* Each server's two factors against the fleet's (fleet_factors), from
 * two signals fitted apart, each against the fleet's fit of the same
 * signal, so that what differs between them for every server (the
 * durations' clock against the histogram's: a stub's model time, a
 * proxy's own delays) cancels instead of being read as the split
 * between prefill and decode: its durations' fit (a, b), pulled towards
 * the fleet's times its prior; and where its scraped first tokens made
 * a sample, their fit, which then sets the prefill factor, the decode's
 * being the durations' b with a that prefill. A factor is the fleet's
 * own within PRED_SPEED_BAND of it or within PRED_SPEED_SE standard
 * errors of the server's fit (per-request rows scatter: a server's mix
 * of prefix hits and batches moves its fit more than the band early
 * on). The prior alone sets a server that has taught fewer than
 * PRED_SPEED_SEEN requests' worth. This runs on every request ended,
 * O(servers): its cost per decision, and how it grew, BENCHMARKS.md
 * "Stop 39: the agent's cost per decision". */
void dbk_pred_update_slow(struct dbk_pred *p)
{
	double fa, fb, fh;

	if (p->prior_stale)
		priors(p);
	fleet_factors(p, &fa, &fb, &fh);
	p->fleet_a = fa;
	p->fleet_b = fb;
	p->fleet_h = fh;
	p->slow_stale = true;
}

/* The fleet's fits feed the next update (each pulled towards the last),
 * so they move on every request ended; the servers' factors are read
 * from the last fits alone, and every input they read (the fits of the
 * server, its prior) changes only with an update: computed when read,
 * they are what an update would have left. */
void dbk_pred_slow_apply(struct dbk_pred *p)
{
	double fa = p->fleet_a, fb = p->fleet_b, fh = p->fleet_h;

	p->slow_stale = false;
	for (unsigned i = 0; i < p->c.nservers; i++) {
		struct pred_srv *x = &p->s[i];
		double q = x->prior, a = fa * q, b = fb * q, ea = INFINITY, eb = INFINITY;
		bool dur = x->lr.n >= PRED_SPEED_SEEN, hist = x->hist.n >= PRED_SPEED_SEEN;
		if (!dur && !hist) {
			x->slow = x->slow_dec = banded(q, PRED_SPEED_BAND);
			continue;
		}
		if (dur) {
			dbk_plearn_solve(&x->lr, a, b, &a, &b);
			dbk_plearn_errors(&x->lr, a, b, &ea, &eb);
		}
		a = fmax(a, 1e-3);
		x->slow = banded(a / fa, band_of(ea, a));
		if (hist) {
			double h, unused, eh, eu;
			dbk_plearn_solve(&x->hist, fh * q, fh * q, &h, &unused);
			dbk_plearn_errors(&x->hist, h, unused, &eh, &eu);
			h = fmax(h, 1e-3);
			x->slow = banded(h / fh, band_of(eh, h));
			if (dur)
				b = dbk_plearn_solve_b(&x->lr, x->slow * fa, fb * q);
		}
		b = fmax(b, 1e-3);
		x->slow_dec = banded(b / fb, band_of(eb, b));
	}
}
