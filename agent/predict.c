/* The ttft policy's predictor (predict.h). */
#include "predict.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "engine_profile.h"
#include "lib/hash.h"
#include "prefix_index.h"
#include "prefix_key.h"

/* Pending prefills remembered per server; beyond, the newest absorbs. */
#define PRED_RING 256u
/* Servers a prefix match reports at most. */
#define PRED_MAX_HITS (DBK_PIDX_WAYS * 2u)
/* Our sending rate is averaged over about this many seconds: a herd
 * builds within a few scrape periods, and a longer average misses one
 * that lasts less (10 s: Azure's slice at 64 instances, all of it
 * within half a second, loses the spread's gain). */
#define PRED_RATE_S 1.0
/* Slowness (pred_learn_speed): first tokens observed and predicted a
 * sample needs of each, the weight of a new sample, a factor within which
 * a server counts as the fleet's own speed (an equal fleet's samples
 * differ by their mix of requests: at 64 servers on Azure's slice,
 * acting on that noise doubled the TPOT p99), and how far from the
 * fleet's a server's may be (either way). */
#define PRED_SPEED_MIN_N 64.0
#define PRED_SPEED_ALPHA 0.1
#define PRED_SPEED_BAND 1.2
#define PRED_SPEED_MAX 8.0

struct pred_pending {
	double end_s;  /* predicted end of this prefill */
	uint32_t n;    /* requests it stands for */
	uint32_t upto; /* the server's pushed count once this one was in */
};

struct pred_srv {
	enum dbk_pred_state state;
	uint32_t max_model_len;
	unsigned inflight;
	double prompt_tokens, kv_tokens, ctx_tokens; /* sums in flight */
	uint32_t sent_units; /* new KV tokens sent, in key blocks: cache turnover */
	struct pred_pending ring[PRED_RING];
	unsigned head, count;
	uint32_t pushed; /* requests ever pushed (wraps; only differences count) */
	double last_end_s;
	/* Last good scrape, and the books at that moment. */
	bool have_scrape;
	uint64_t scrape_ms;
	struct dbk_pred_scrape sc;
	unsigned inflight_then, pending_then;
	double kv_then;
	uint64_t failures;
	/* Predicted end of the prefill other balancers are expected to have
	 * sent it since that scrape (pred_expect_others). */
	double unseen_end_s;
	/* Slowness: the sample being gathered (TTFTs the scrapes showed,
	 * TTFTs predicted for ours, at the fleet's speed), the scraped
	 * totals it started from, the learnt log-ratio (valid when learnt)
	 * and the factor in use. */
	double obs_sum, obs_n, pred_sum, pred_n;
	double ttft_sum_then, ttft_n_then;
	double log_slow;
	bool learnt;
	double slow;
};

/* A server's prediction for the request being chosen. */
struct pred_eval {
	double ttft_s, wait_s, hit;
	double stall_s; /* decoders' seconds lost to this prefill (pred_eval) */
	bool fits;
	bool ok; /* a candidate: usable, holds the request */
};

struct dbk_pred {
	struct dbk_pred_config c;
	struct pred_srv *s;
	struct dbk_pidx *idx;
	double mean_work_s; /* EWMA of a request's prefill on an idle server */
	unsigned next;      /* varies the ties of requests without identity */
	/* Other balancers (pred_unseen_share > 0): what our requests teach
	 * of theirs. */
	double rate; /* our requests in the last second or so (decays by e each s) */
	uint64_t rate_ms;
	uint64_t scrape_ms, scrape_period_ms; /* newest scrape, spacing of the last two */
	/* dbk_pred_choose's scratch, not state: each server's evaluation,
	 * the candidates' sorted scores, the water level (pred_spread). */
	struct pred_scratch {
		struct pred_eval *ev;
		double *sorted;
		double level;
	} * x;
};

void dbk_pred_config_default(struct dbk_pred_config *c, unsigned nservers)
{
	/* The engine the stub simulates by default; a faster or slower one
	 * is --engine-speed's job (policy_ttft.c). */
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
		.scrape_stale_ms = 1000,
		.index_entries = DBK_PIDX_DEFAULT_ENTRIES,
	};
}

static bool pos(double v) { return isfinite(v) && v > 0; }

int dbk_pred_config_check(const struct dbk_pred_config *c, char *err, size_t errlen)
{
	const char *bad = NULL;

	if (c->nservers == 0 || c->nservers > DBK_PRED_MAX_SERVERS)
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
	if (bad && err && errlen)
		snprintf(err, errlen, "%s", bad);
	return bad ? -1 : 0;
}

struct dbk_pred *dbk_pred_new(const struct dbk_pred_config *c)
{
	if (dbk_pred_config_check(c, NULL, 0) != 0)
		return NULL;
	struct dbk_pred *p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	p->c = *c;
	p->s = calloc(c->nservers, sizeof(*p->s));
	p->idx = dbk_pidx_new(c->nservers, c->index_entries);
	p->x = calloc(1, sizeof(*p->x));
	if (p->x) {
		p->x->ev = calloc(c->nservers, sizeof(*p->x->ev));
		p->x->sorted = calloc(c->nservers, sizeof(*p->x->sorted));
	}
	if (!p->s || !p->idx || !p->x || !p->x->ev || !p->x->sorted) {
		dbk_pred_free(p);
		return NULL;
	}
	p->mean_work_s = 0.025;
	for (unsigned i = 0; i < c->nservers; i++) {
		p->s[i].slow = 1;
		p->s[i].ttft_n_then = -1;
	}
	return p;
}

void dbk_pred_free(struct dbk_pred *p)
{
	if (!p)
		return;
	dbk_pidx_free(p->idx);
	if (p->x) {
		free(p->x->ev);
		free(p->x->sorted);
		free(p->x);
	}
	free(p->s);
	free(p);
}

const struct dbk_pred_config *dbk_pred_config(const struct dbk_pred *p) { return &p->c; }

const char *dbk_pred_reason_str(enum dbk_pred_reason r)
{
	switch (r) {
	case DBK_PRED_FASTEST: return "fastest";
	case DBK_PRED_TOO_LONG: return "too-long";
	case DBK_PRED_NO_SERVER: return "no-server";
	}
	return "?";
}

void dbk_pred_set_state(struct dbk_pred *p, unsigned server, enum dbk_pred_state st)
{
	if (server < p->c.nservers)
		p->s[server].state = st;
}

void dbk_pred_set_max_model_len(struct dbk_pred *p, unsigned server, uint32_t len)
{
	if (server < p->c.nservers)
		p->s[server].max_model_len = len;
}

static double sec(uint64_t ms) { return (double)ms / 1000.0; }

/* Requests still prefilling on s at t: the FIFO's entries ending later.
 * Ends only grow from head to tail (each is pushed at or after the last
 * one's end), so the entries still running are a tail found by binary
 * search, and their count is a difference of running totals: O(log ring)
 * instead of a walk over up to PRED_RING entries per server and
 * decision, which a busy server keeps full. */
static unsigned pred_pending(const struct pred_srv *s, double t)
{
	unsigned lo = 0, hi = s->count; /* the first entry ending after t */

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		if (s->ring[(s->head + mid) % PRED_RING].end_s <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == s->count)
		return 0;
	const struct pred_pending *e = &s->ring[(s->head + lo) % PRED_RING];
	return s->pushed - (e->upto - e->n);
}

static bool pred_fresh(const struct dbk_pred *p, const struct pred_srv *s, uint64_t now_ms)
{
	return s->have_scrape && now_ms >= s->scrape_ms &&
	       now_ms - s->scrape_ms <= p->c.scrape_stale_ms;
}

static double pred_capacity(const struct dbk_pred *p, const struct pred_srv *s)
{
	return s->have_scrape && pos(s->sc.kv_capacity_tokens) ? s->sc.kv_capacity_tokens
	                                                       : p->c.kv_tokens;
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
static void pred_learn_speed(struct dbk_pred *p, struct pred_srv *s,
                             const struct dbk_pred_scrape *sc)
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

	double mean = 0, n = 0;
	for (unsigned i = 0; i < p->c.nservers; i++)
		if (p->s[i].learnt) {
			mean += p->s[i].log_slow;
			n++;
		}
	mean /= n;
	for (unsigned i = 0; i < p->c.nservers; i++) {
		struct pred_srv *x = &p->s[i];
		double d = x->learnt ? x->log_slow - mean : 0;
		if (fabs(d) < log(PRED_SPEED_BAND))
			d = 0;
		x->slow = exp(fmax(-log(PRED_SPEED_MAX), fmin(log(PRED_SPEED_MAX), d)));
	}
}

void dbk_pred_scraped(struct dbk_pred *p, unsigned server, const struct dbk_pred_scrape *sc,
                      uint64_t now_ms)
{
	if (server >= p->c.nservers)
		return;
	struct pred_srv *s = &p->s[server];
	if (!sc->ok) {
		s->failures++;
		return;
	}
	s->have_scrape = true;
	s->scrape_ms = now_ms;
	s->sc = *sc;
	s->inflight_then = s->inflight;
	s->pending_then = pred_pending(s, sec(now_ms));
	s->kv_then = s->kv_tokens;
	s->unseen_end_s = 0; /* the scrape shows them now */
	pred_learn_speed(p, s, sc);
	if (now_ms > p->scrape_ms) {
		p->scrape_period_ms = p->scrape_ms ? now_ms - p->scrape_ms : 0;
		p->scrape_ms = now_ms;
	}
}

void dbk_pred_forget_cache(struct dbk_pred *p, unsigned server)
{
	if (server >= p->c.nservers)
		return;
	struct pred_srv *s = &p->s[server];
	/* Every stamp on it now looks a whole cache old. */
	s->sent_units += (uint32_t)(pred_capacity(p, s) / DBK_PKEY_BLOCK_TOKENS) + 1;
}

/* What the scrape says beyond the books: other agents' requests. */
struct pred_others {
	double requests, waiting, running, kv, work_s;
};

static void pred_others(const struct dbk_pred *p, const struct pred_srv *s, uint64_t now_ms,
                        struct pred_others *o)
{
	memset(o, 0, sizeof(*o));
	if (!pred_fresh(p, s, now_ms))
		return;
	double r = s->sc.running >= 0 ? s->sc.running : 0;
	double w = s->sc.waiting >= 0 ? s->sc.waiting : 0;
	o->requests = fmax(0, r + w - s->inflight_then);
	o->waiting = fmax(0, w - s->pending_then);
	o->running = fmax(0, o->requests - o->waiting);
	if (s->sc.kv_usage >= 0)
		o->kv = fmax(0, s->sc.kv_usage * pred_capacity(p, s) - s->kv_then);
	/* Their queued prefills, like ours on average, drained since. */
	o->work_s = fmax(0, o->waiting * p->mean_work_s * s->slow - sec(now_ms - s->scrape_ms));
}

/* Steps a prefill of fresh tokens takes beside decoders, each of which
 * takes one token of every step's budget. */
static double pred_steps(const struct dbk_pred_config *c, double fresh, double decoders)
{
	double room = fmax(c->budget_tokens - decoders, c->budget_tokens / 8);
	return fmax(1, ceil(fresh / room));
}

/* Seconds to prefill fresh tokens after hit cached ones, with decoders
 * decoding over ctx tokens each sharing every step (ENGINE-MODEL.md). */
static double pred_prefill_s(const struct dbk_pred_config *c, double fresh, double hit,
                             double decoders, double ctx)
{
	double steps = pred_steps(c, fresh, decoders);
	double total = hit + fresh;
	double step_fixed = c->t_cpu_s + decoders * ctx * c->kv_bytes_per_token / c->kv_read_bw;

	return steps * step_fixed +
	       fmax(steps * c->t_weights_s, (steps * decoders + fresh) / c->lin_tokens_per_s) +
	       c->attn_flop_per_pair * (total * total - hit * hit) / 2 / c->attn_flops;
}

/* The same on server s, at its learnt speed (pred_learn_speed): every
 * prefill priced for a server goes through here; only the fleet-wide
 * mean (mean_work_s) is priced at the fleet's speed. */
static double pred_srv_prefill_s(const struct dbk_pred *p, const struct pred_srv *s, double fresh,
                                 double hit, double decoders, double ctx)
{
	return s->slow * pred_prefill_s(&p->c, fresh, hit, decoders, ctx);
}

static double pred_output(const struct dbk_pred *p, const struct dbk_pred_request *r)
{
	double m = isfinite(r->max_tokens) && r->max_tokens > 0 ? r->max_tokens : 0;
	return r->ignore_eos ? m : fmin(m, p->c.output_tokens);
}

static double pred_prompt(const struct dbk_pred_request *r)
{
	return isfinite(r->prompt_tokens) && r->prompt_tokens > 0 ? fmin(r->prompt_tokens, 1e9) : 0;
}

/* The expected hit of a match on its server: what was matched (all of
 * the earlier prompt when the whole sample matched and both go on past
 * it, as a conversation's next turn does), times the chance that the
 * server still holds it: 1 while less than half a cache of new tokens was
 * sent there since, falling to 0 at a whole cache (LRU turnover). */
static double pred_hit(const struct dbk_pred *p, const struct dbk_pred_request *r,
                       const struct dbk_pidx_hit *h, size_t nkeys)
{
	const struct pred_srv *s = &p->s[h->server];
	double prompt = pred_prompt(r);
	double tokens = (double)h->blocks * DBK_PKEY_BLOCK_TOKENS;

	if (h->blocks >= nkeys && (r->keys_cut || nkeys == 0))
		tokens = fmax(tokens, (double)h->prompt_tokens);
	double cap = pred_capacity(p, s) / DBK_PKEY_BLOCK_TOKENS;
	double age = (double)(uint32_t)(s->sent_units - h->stamp);
	double keep = age <= cap / 2 ? 1 : age >= cap ? 0 : 2 * (1 - age / cap);
	return fmax(0, fmin(tokens, prompt - 1) * keep);
}

/* Ties (an idle fleet, equal servers) go by a hash of the request and
 * the server: different requests spread, and balancers that share the
 * fleet break the same request's ties alike instead of all taking the
 * first server. */
static uint64_t pred_tie_key(const struct dbk_pred *p, const struct dbk_pred_request *r)
{
	if (r->session)
		return r->session;
	if (r->keys && r->nkeys)
		return r->keys[r->nkeys - 1];
	return (uint64_t)pred_prompt(r) * DBK_HASH_GOLDEN + p->next;
}

static uint64_t pred_tie(uint64_t key, unsigned server)
{
	return dbk_hash_fmix_light(key ^ ((uint64_t)(server + 1) * UINT64_C(0xc2b2ae3d27d4eb4f)));
}

/* The predicted first token, and what a choice weighs: that plus what
 * the prefill costs the requests already decoding there. */
static double pred_ttft(const struct pred_eval *e) { return e->ttft_s + e->wait_s; }
static double pred_score(const struct dbk_pred *p, const struct pred_eval *e)
{
	return pred_ttft(e) + p->c.stall_weight * e->stall_s;
}

static void pred_eval(const struct dbk_pred *p, unsigned i, const struct dbk_pred_request *r,
                      double hit, uint64_t now_ms, struct pred_eval *e)
{
	const struct pred_srv *s = &p->s[i];
	double now = sec(now_ms), prompt = pred_prompt(r), out = pred_output(p, r);
	struct pred_others o;

	pred_others(p, s, now_ms, &o);
	double decoders = fmax(0, (double)s->inflight - pred_pending(s, now)) + o.running;
	double ctx = s->inflight ? s->ctx_tokens / s->inflight : 0;
	double queue = fmax(0, s->last_end_s - now) + o.work_s + fmax(0, s->unseen_end_s - now);
	double own = pred_srv_prefill_s(p, s, fmax(prompt - hit, 1), hit, decoders, ctx);

	double cap = pred_capacity(p, s);
	double need = prompt - hit + out;
	double over = s->kv_tokens + o.kv + need - cap;
	e->fits = over <= 0;
	e->wait_s = 0;
	if (!e->fits) {
		/* Until enough decodes end: what is left of the outputs in
		 * flight ((kv - ctx) is half of them) at one token a step. */
		double left = s->inflight ? (s->kv_tokens - s->ctx_tokens) / s->inflight : out;
		double step = pred_srv_prefill_s(p, s, 1, 0, decoders, ctx);
		e->wait_s = fmin(over / fmax(cap, 1), 1) * left * step;
	}
	e->ttft_s = queue + own;
	e->hit = hit;

	/* Every request in flight there, those still queued included (ours
	 * goes after them), decodes through this prefill's steps, each longer
	 * than a decode step by what the prefill adds. Only the steps beyond
	 * the first count: a prefill that fits one step costs some server's
	 * decoders one step wherever it goes, while a long one stalls a whole
	 * batch for seconds, and where it lands decides whose. */
	double steps = pred_steps(&p->c, fmax(prompt - hit, 1), decoders);
	e->stall_s = 0;
	if (steps > 1) {
		double extra = own - steps * pred_srv_prefill_s(p, s, 1, 0, decoders, ctx);
		e->stall_s = ((double)s->inflight + o.requests) * fmax(0, extra) * (steps - 1) /
		             steps;
	}
}

static bool pred_holds(const struct pred_srv *s, double need);

/* The share of the scraped load that the books do not hold: other
 * balancers'. 0 when the agent is alone, and then every decision is the
 * greedy one. */
static double pred_unseen_share(const struct dbk_pred *p, uint64_t now_ms)
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
 * Candidates: usable, holding it, fitting as the greedy choice bi does.
 * Sets p->x->level (-INFINITY: greedy). */
static int pred_spread(struct dbk_pred *p, int bi, double share, uint64_t tie, uint64_t now_ms)
{
	unsigned n = p->c.nservers, m = 0;
	bool fits = p->x->ev[bi].fits;
	double others = pred_others_per_ours(share);
	double rate = p->rate * exp(-sec(now_ms - p->rate_ms) / PRED_RATE_S);

	p->x->level = -INFINITY;
	for (unsigned i = 0; i < n; i++)
		if (p->x->ev[i].ok && p->x->ev[i].fits == fits)
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
		double w = e->ok && e->fits == fits ? level - pred_score(p, e) : 0;
		if (!(w > 0))
			continue;
		double u = ((double)(pred_tie(tie, i) >> 11) + 0.5) * 0x1p-53;
		double v = -w / log(u);
		if (v > top) {
			top = v;
			pick = (int)i;
		}
	}
	return pick;
}

static bool pred_holds(const struct pred_srv *s, double need)
{
	return s->max_model_len == 0 || need <= (double)s->max_model_len;
}

int dbk_pred_choose(struct dbk_pred *p, const struct dbk_pred_request *r, uint64_t now_ms,
                    struct dbk_pred_choice *c)
{
	unsigned n = p->c.nservers;
	double need = pred_prompt(r) +
	              (isfinite(r->max_tokens) && r->max_tokens > 0 ? r->max_tokens : 0);
	bool any_holds = false;
	int largest = -1;

	*c = (struct dbk_pred_choice){ .server = -1, .reason = DBK_PRED_NO_SERVER };
	for (unsigned i = 0; i < n; i++) {
		const struct pred_srv *s = &p->s[i];
		if (s->state != DBK_PRED_UP)
			continue;
		if (pred_holds(s, need))
			any_holds = true;
		if (largest < 0 ||
		    (p->s[largest].max_model_len != 0 &&
		     (s->max_model_len == 0 || s->max_model_len > p->s[largest].max_model_len)))
			largest = (int)i;
	}
	if (largest < 0)
		return -1;
	if (!any_holds) {
		struct pred_eval e;
		pred_eval(p, (unsigned)largest, r, 0, now_ms, &e);
		*c = (struct dbk_pred_choice){ .server = largest,
			                       .reason = DBK_PRED_TOO_LONG,
			                       .ttft_s = e.ttft_s,
			                       .kv_fits = e.fits };
		return largest;
	}

	struct dbk_pidx_hit hits[PRED_MAX_HITS];
	size_t nhits = 0, nkeys = r->nkeys;
	uint64_t skey;
	if (r->keys && r->nkeys > 0) {
		nhits = dbk_pidx_match(p->idx, r->keys, r->nkeys, hits, PRED_MAX_HITS);
	} else if (r->session) {
		skey = r->session;
		nkeys = 0;
		nhits = dbk_pidx_match(p->idx, &skey, 1, hits, PRED_MAX_HITS);
	}

	struct pred_eval best = { 0 };
	int bi = -1;
	uint64_t tie = pred_tie_key(p, r);
	double share = pred_unseen_share(p, now_ms);
	for (unsigned i = 0; i < n; i++) {
		const struct pred_srv *s = &p->s[i];
		struct pred_eval e;
		p->x->ev[i].ok = false;
		if (s->state != DBK_PRED_UP || !pred_holds(s, need))
			continue;
		double hit = 0;
		for (size_t h = 0; h < nhits; h++)
			if (hits[h].server == i)
				hit = pred_hit(p, r, &hits[h], nkeys);
		pred_eval(p, i, r, hit, now_ms, &e);
		e.ok = true;
		p->x->ev[i] = e;
		/* Fitting servers first (a request that does not fit beside
		 * what is committed queues or preempts), then the earliest. */
		bool better = bi < 0 || (e.fits && !best.fits) ||
		              (e.fits == best.fits &&
		               pred_score(p, &e) < pred_score(p, &best) - 1e-9) ||
		              (e.fits == best.fits &&
		               fabs(pred_score(p, &e) - pred_score(p, &best)) <= 1e-9 &&
		               (s->inflight < p->s[bi].inflight ||
		                (s->inflight == p->s[bi].inflight &&
		                 pred_tie(tie, i) > pred_tie(tie, (unsigned)bi))));
		if (better) {
			best = e;
			bi = (int)i;
		}
	}
	p->x->level = -INFINITY;
	if (share > 0) {
		bi = pred_spread(p, bi, share, tie, now_ms);
		best = p->x->ev[bi];
	}
	*c = (struct dbk_pred_choice){ .server = bi,
		                       .reason = DBK_PRED_FASTEST,
		                       .ttft_s = pred_ttft(&best),
		                       .hit_tokens = best.hit,
		                       .kv_fits = best.fits };
	return bi;
}

static double pred_commit_hit(const struct dbk_pred *p, const struct dbk_pred_request *r,
                              unsigned server);

int dbk_pred_evaluate(struct dbk_pred *p, const struct dbk_pred_request *r, unsigned server,
                      uint64_t now_ms, struct dbk_pred_choice *c)
{
	double need = pred_prompt(r) +
	              (isfinite(r->max_tokens) && r->max_tokens > 0 ? r->max_tokens : 0);
	struct pred_eval e;

	if (server >= p->c.nservers || p->s[server].state != DBK_PRED_UP ||
	    !pred_holds(&p->s[server], need))
		return -1;
	pred_eval(p, server, r, pred_commit_hit(p, r, server), now_ms, &e);
	*c = (struct dbk_pred_choice){ .server = (int)server,
		                       .reason = DBK_PRED_FASTEST,
		                       .ttft_s = pred_ttft(&e),
		                       .hit_tokens = e.hit,
		                       .kv_fits = e.fits };
	return (int)server;
}

static void pred_charge(struct pred_srv *s, const struct dbk_pred_ticket *t, int sign)
{
	s->inflight = sign > 0 ? s->inflight + 1 : s->inflight ? s->inflight - 1 : 0;
	s->prompt_tokens = fmax(0, s->prompt_tokens + sign * (double)t->prompt_tokens);
	s->kv_tokens = fmax(0, s->kv_tokens + sign * (double)t->kv_tokens);
	s->ctx_tokens = fmax(0, s->ctx_tokens + sign * (double)t->ctx_tokens);
	if (s->inflight == 0) {
		s->prompt_tokens = s->kv_tokens = s->ctx_tokens = 0;
		s->count = 0;
	}
}

static void pred_push(struct pred_srv *s, double now, double end)
{
	while (s->count > 0 && s->ring[s->head].end_s <= now) {
		s->head = (s->head + 1) % PRED_RING;
		s->count--;
	}
	if (s->count == PRED_RING) {
		struct pred_pending *last = &s->ring[(s->head + s->count - 1) % PRED_RING];
		last->end_s = end;
		last->n++;
		last->upto = ++s->pushed;
		return;
	}
	s->ring[(s->head + s->count) % PRED_RING] = (struct pred_pending){ end, 1, ++s->pushed };
	s->count++;
}

static uint32_t u32_of(double v)
{
	return v <= 0 || !isfinite(v) ? 0 : v >= 4294967295.0 ? UINT32_MAX : (uint32_t)v;
}

/* Our request stands for others_per_ours of the other balancers', sent
 * unseen until the next scrape: charge each server under the water of
 * pred_spread with its share of their prefill. Nothing to do (and no
 * second choice to make) while the agent is alone. */
static void pred_expect_others(struct dbk_pred *p, const struct dbk_pred_request *r,
                               uint64_t now_ms)
{
	struct dbk_pred_choice ch;
	double now = sec(now_ms);

	if (!(pred_unseen_share(p, now_ms) > 0))
		return;
	if (dbk_pred_choose(p, r, now_ms, &ch) < 0 || !isfinite(p->x->level))
		return;
	for (unsigned i = 0; i < p->c.nservers; i++) {
		const struct pred_eval *e = &p->x->ev[i];
		double w = e->ok && e->fits == ch.kv_fits ? p->x->level - pred_score(p, e) : 0;
		if (w > 0)
			p->s[i].unseen_end_s = fmax(now, p->s[i].unseen_end_s) + w;
	}
}

/* The hit server is expected to give r, as choose saw it. */
static double pred_commit_hit(const struct dbk_pred *p, const struct dbk_pred_request *r,
                              unsigned server)
{
	struct dbk_pidx_hit hits[PRED_MAX_HITS];
	double hit = 0;
	size_t nkeys = r->keys ? r->nkeys : 0;
	uint64_t skey = r->session;
	size_t nh = nkeys  ? dbk_pidx_match(p->idx, r->keys, nkeys, hits, PRED_MAX_HITS)
	            : skey ? dbk_pidx_match(p->idx, &skey, 1, hits, PRED_MAX_HITS)
	                   : 0;

	for (size_t h = 0; h < nh; h++)
		if (hits[h].server == server)
			hit = pred_hit(p, r, &hits[h], nkeys);
	return hit;
}

static void pred_commit(struct dbk_pred *p, const struct dbk_pred_request *r, unsigned server,
                        double hit, uint64_t now_ms, struct dbk_pred_ticket *t)
{
	struct pred_srv *s = &p->s[server];
	double now = sec(now_ms), prompt = pred_prompt(r), out = pred_output(p, r);
	size_t nkeys = r->keys ? r->nkeys : 0;
	uint64_t skey = r->session;

	pred_expect_others(p, r, now_ms);
	p->rate = p->rate * exp(-sec(now_ms - p->rate_ms) / PRED_RATE_S) + 1 / PRED_RATE_S;
	p->rate_ms = now_ms;

	double decoders = fmax(0, (double)s->inflight - pred_pending(s, now));
	double ctx = s->inflight ? s->ctx_tokens / s->inflight : 0;
	double fresh = fmax(prompt - hit, 1);
	double own = pred_srv_prefill_s(p, s, fresh, hit, decoders, ctx);
	double start = fmax(now, s->last_end_s);
	pred_push(s, now, start + own);
	s->last_end_s = start + own;
	/* Its first token at the fleet's speed, for pred_learn_speed. */
	s->pred_sum += (start + own - now) / s->slow;
	s->pred_n++;
	p->mean_work_s += (pred_prefill_s(&p->c, fresh, hit, 0, 0) - p->mean_work_s) / 64;

	t->server = server;
	t->prompt_tokens = u32_of(prompt);
	t->kv_tokens = u32_of(prompt - hit + out);
	t->ctx_tokens = u32_of(prompt + out / 2);
	t->sent_ms = now_ms;
	pred_charge(s, t, +1);

	s->sent_units += u32_of((fresh + out) / DBK_PKEY_BLOCK_TOKENS);
	if (nkeys)
		dbk_pidx_insert(p->idx, server, r->keys, nkeys, s->sent_units, t->prompt_tokens);
	if (skey)
		dbk_pidx_insert(p->idx, server, &skey, 1, s->sent_units, t->prompt_tokens);
	p->next = (p->next + 1) % p->c.nservers;
}

void dbk_pred_commit(struct dbk_pred *p, const struct dbk_pred_request *r, unsigned server,
                     uint64_t now_ms, struct dbk_pred_ticket *t)
{
	memset(t, 0, sizeof(*t));
	if (server >= p->c.nservers)
		return;
	pred_commit(p, r, server, pred_commit_hit(p, r, server), now_ms, t);
}

void dbk_pred_commit_chosen(struct dbk_pred *p, const struct dbk_pred_request *r,
                            const struct dbk_pred_choice *c, uint64_t now_ms,
                            struct dbk_pred_ticket *t)
{
	memset(t, 0, sizeof(*t));
	if (c->server < 0 || (unsigned)c->server >= p->c.nservers)
		return;
	/* A too-long choice was priced without its hit. */
	double hit = c->reason == DBK_PRED_FASTEST ? c->hit_tokens
	                                           : pred_commit_hit(p, r, (unsigned)c->server);
	pred_commit(p, r, (unsigned)c->server, hit, now_ms, t);
}

void dbk_pred_release(struct dbk_pred *p, const struct dbk_pred_ticket *t, uint64_t now_ms)
{
	(void)now_ms;
	if (t->server >= p->c.nservers)
		return;
	pred_charge(&p->s[t->server], t, -1);
	if (p->s[t->server].inflight == 0)
		p->s[t->server].last_end_s = 0;
}

void dbk_pred_move(struct dbk_pred *p, struct dbk_pred_ticket *t, unsigned server, uint64_t now_ms)
{
	(void)now_ms;
	if (t->server >= p->c.nservers || server >= p->c.nservers || server == t->server)
		return;
	pred_charge(&p->s[t->server], t, -1);
	t->server = server;
	pred_charge(&p->s[server], t, +1);
}

void dbk_pred_view(const struct dbk_pred *p, unsigned server, uint64_t now_ms,
                   struct dbk_pred_view *v)
{
	memset(v, 0, sizeof(*v));
	if (server >= p->c.nservers)
		return;
	const struct pred_srv *s = &p->s[server];
	struct pred_others o;

	pred_others(p, s, now_ms, &o);
	v->state = s->state;
	v->max_model_len = s->max_model_len;
	v->inflight = s->inflight;
	v->prompt_tokens = s->prompt_tokens;
	v->kv_committed = s->kv_tokens + o.kv;
	v->kv_capacity = pred_capacity(p, s);
	v->queue_s = fmax(0, s->last_end_s - sec(now_ms)) + o.work_s;
	v->prefilling = pred_pending(s, sec(now_ms));
	v->others = o.requests;
	v->scraped = pred_fresh(p, s, now_ms);
	v->scrape_age_ms = s->have_scrape ? now_ms - s->scrape_ms : UINT64_MAX;
	v->scrape_failures = s->failures;
	v->hit_ratio = s->have_scrape && s->sc.prefix_queries > 0 && s->sc.prefix_hits >= 0
	                       ? s->sc.prefix_hits / s->sc.prefix_queries
	                       : -1;
	v->slowness = s->slow;
}
