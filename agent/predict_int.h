/* The predictor's insides (predict.h), shared by its files, each one
 * job: predict.c the object and its books (commit, release, scrapes,
 * view); predict_speed.c the engine's defaults and each server's learnt
 * speed; predict_choose.c the choice; predict_herd.c what other
 * balancers reading the same scrapes are expected to do. Not for use
 * outside them. */
#ifndef DBK_PREDICT_INT_H
#define DBK_PREDICT_INT_H

#include <assert.h>
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "predict.h"
#include "predict_learn.h"
#include "prefix_key.h"
#include "prefix_index.h"

/* Pending prefills remembered per server; beyond, the newest absorbs. */
#define PRED_RING 256u
/* Servers a prefix match reports at most. */
#define PRED_MAX_HITS (DBK_PIDX_WAYS * 2u)
/* Our sending rate is averaged over about this many seconds: a herd
 * builds within a few scrape periods, and a longer average misses one
 * that lasts less (10 s: Azure's slice at 64 instances, all of it
 * within half a second, loses the spread's gain). */
#define PRED_RATE_S 1.0
/* Fresh tokens up to which a mostly cached request waits for its own
 * cache rather than leaves it (pred_eval's fit): one step of the engine
 * model's default budget, not the servers' told one
 * (--max-num-batched-tokens): told 2048 here too, agentic sessions lost
 * 6-10% of their SLO capacity to turns that left their caches
 * (BENCHMARKS.md, "Stop 45: short prompts packed into one step"). */
#define PRED_FIT_FRESH 8192.0

struct pred_pending {
	double end_s;  /* predicted end of this prefill */
	uint32_t n;    /* requests it stands for */
	uint32_t upto; /* the server's pushed count once this one was in */
	/* Of its seconds, those priced at the fleet's pace (pred_paced),
	 * and the server's paced total once this one was in. */
	double paced_s, paced_upto;
};

/* The last distinct adapters sent to a server, at most: the newest
 * replace the oldest. They stand for its GPU slots, which vLLM keeps as
 * an LRU of max_lora adapters, and for what its scrape may not show yet:
 * a request's trip into the server's scheduler is taken as
 * PRED_LORA_TRIP_MS (sent earlier than that before a scrape, the scrape
 * shows it). */
#define PRED_LORA_SENT 8u
#define PRED_LORA_TRIP_MS 50u

struct pred_lora_sent {
	uint64_t key; /* 0: free */
	uint64_t ms;
};

/* The distinct shared prefixes in flight on a server, by length, at
 * most: beyond, a request's shared part counts as its own. */
#define PRED_SHARED 16u

struct pred_shared {
	uint32_t tokens; /* 0: free */
	uint32_t refs;
};

/* A request's end as the books took it: when, and the KV it freed.
 * PRED_ENDS bounds how many ends one scrape's flight may race; past
 * it the scrape's excess shows as others (pred_others), as before. */
#define PRED_ENDS 8u

struct pred_end {
	uint64_t ms;
	double kv;
};

struct pred_srv {
	enum dbk_pred_state state;
	uint32_t max_model_len;
	unsigned inflight;
	/* Sums in flight: prompts, KV pinned, decode contexts. The KV
	 * pinned is each request's own (pred_ticket_kv) and the longest
	 * shared prefix in flight once (pred_shared_kv). */
	double prompt_tokens, kv_tokens, ctx_tokens;
	double kv_own;
	struct pred_shared shared[PRED_SHARED];
	double inv_out; /* sum in flight of 1 / (output - 1): TPOT per second a step is longer */
	uint32_t sent_units; /* new KV tokens sent, in key blocks: cache turnover */
	struct pred_pending ring[PRED_RING];
	unsigned head, count;
	uint32_t pushed;    /* requests ever pushed (wraps; only differences count) */
	double paced_total; /* paced seconds pushed since the ring was last empty */
	double last_end_s;
	/* The newest ends (pred_uncharge), for the scrape that was out as
	 * they came (dbk_pred_scraped); a ring, ends_n ever recorded. */
	struct pred_end ends[PRED_ENDS];
	uint32_t ends_n;
	/* Last good scrape, and the books at that moment. */
	bool have_scrape;
	uint64_t scrape_ms;
	struct dbk_pred_scrape sc;
	unsigned inflight_then, pending_then;
	double kv_then;
	uint64_t failures;
	/* Predicted end of the prefill other balancers are expected to have
	 * sent it since that scrape (dbk_pred_expect_others). */
	double unseen_end_s;
	/* Speed (predict_speed.c): the first tokens predicted for ours at
	 * the fleet's speed, totals since the server's first look (own_sum:
	 * of their own prefills, the rest being the queue ahead); their
	 * match to the scraped ones (predict_learn.h) and, where others'
	 * first tokens are counted too, the sample of spans being gathered
	 * (first tokens the scrapes showed, and our totals when it began);
	 * the scraped totals at the last scrape; the fit of every request's
	 * time, and of the first tokens apart (hist: prefill rows only); the
	 * factors in use on prefills and on decode steps. */
	double pred_sum, pred_n, own_sum;
	struct dbk_plearn_match match;
	double obs_sum, obs_n, win_sum, win_n, win_own;
	double ttft_sum_then, ttft_n_then;
	struct dbk_plearn lr, hist;
	double slow, slow_dec;
	double weight; /* HAProxy's effective weight; 0: not known */
	double prior;  /* the weight's prior of its speed (predict_speed.c: priors) */
	struct pred_lora_sent lora_sent[PRED_LORA_SENT];
	/* The step budget (predict_budget.c): tokens and steps the engine
	 * counted between two scrapes that both found prompts waiting,
	 * summed, and what they say (0: not learnt). */
	double bud_tokens, bud_steps, bud_learnt;
	/* The gaps between its tokens (predict_gaps.c): the scraped totals
	 * last read (gap_n_then -1: none), and their mean then. */
	double gap_sum_then, gap_n_then, gap_s;
	uint64_t gap_ms;
	/* Its seats (predict_seats.c; 0: not learnt), the most it was seen
	 * running, and the spans in a row it looked out of seats at seat_at. */
	double seats, run_max, seat_at;
	unsigned seat_spans;
};

/* A server's prediction for the request being chosen. */
struct pred_eval {
	double ttft_s, wait_s, hit;
	double own_s;       /* of ttft_s, its own prefill (the rest waits for others) */
	double paced_s;     /* of ttft_s, the wait priced at the fleet's pace (pred_paced) */
	double stall_s;     /* decoders' seconds lost to this prefill (pred_eval) */
	double tpot_s;      /* its own time per output token (0: one token) */
	double tpot_seen_s; /* the server's decoders' lately (dbk_pred_gap_seen; 0: not known) */
	double harm_s;      /* the TPOT it adds to those decoding there, summed */
	bool fits;
	bool within; /* predicted within both objectives */
	bool lost;   /* within the objectives on no server (dbk_pred_choose) */
	bool ok;     /* a candidate: usable, holds the request */
};

struct dbk_pred {
	struct dbk_pred_config c;
	struct pred_srv *s;
	struct dbk_pidx *idx;
	double mean_work_s;               /* EWMA of a request's prefill on an idle server */
	double fleet_a, fleet_b, fleet_h; /* the fleet's fits (dbk_pred_update_slow) */
	uint64_t fade_ms;                 /* the fits' last fade by age (predict_speed.c) */
	double taught, fade_taught;       /* requests that taught a fit, in all and at that fade */
	bool prior_stale;                 /* a weight changed since the servers' priors */
	bool slow_stale; /* the fleet's fits moved since the servers' slow (pred_slow_fresh) */
	unsigned next;   /* varies the ties of requests without identity */
	/* Other balancers (dbk_pred_unseen_share > 0): what our requests teach
	 * of theirs. */
	double rate; /* our requests in the last second or so (decays by e each s) */
	uint64_t rate_ms;
	uint64_t scrape_ms, scrape_period_ms; /* newest scrape, spacing of the last two */
	/* dbk_pred_choose's scratch, not state: each server's evaluation,
	 * the candidates' sorted scores, the water level (dbk_pred_spread);
	 * sorted has room for three per server (predict_speed.c's logs). */
	struct pred_scratch {
		struct pred_eval *ev;
		double *sorted;
		double level;
	} * x;
};

/* What the scrape says beyond the books: other agents' requests. */
struct pred_others {
	double requests, waiting, running, kv, work_s;
};

static inline bool pos(double v) { return isfinite(v) && v > 0; }

static inline double sec(uint64_t ms) { return (double)ms / 1000.0; }

/* Requests still prefilling on s at t: the FIFO's entries ending later.
 * Ends only grow from head to tail (each is pushed at or after the last
 * one's end), so the entries still running are a tail found by binary
 * search, and their count is a difference of running totals: O(log ring)
 * instead of a walk over up to PRED_RING entries per server and
 * decision, which a busy server keeps full. */
static inline const struct pred_pending *pred_first_pending(const struct pred_srv *s, double t)
{
	unsigned lo = 0, hi = s->count; /* the first entry ending after t */

	while (lo < hi) {
		unsigned mid = lo + (hi - lo) / 2;
		if (s->ring[(s->head + mid) % PRED_RING].end_s <= t)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo == s->count ? NULL : &s->ring[(s->head + lo) % PRED_RING];
}

static inline unsigned pred_pending(const struct pred_srv *s, double t)
{
	const struct pred_pending *e = pred_first_pending(s, t);

	return e ? s->pushed - (e->upto - e->n) : 0;
}

/* Of the queue still on s's books at t, the seconds paced (pred_paced),
 * which are seconds already, not the model's. */
static inline double pred_pending_paced(const struct pred_srv *s, double t)
{
	const struct pred_pending *e = pred_first_pending(s, t);

	if (!e)
		return 0;
	/* The first still running is paced last: its first step is done
	 * before its paced steps are. */
	return fmax(0, s->paced_total - e->paced_upto) + fmax(0, fmin(e->paced_s, e->end_s - t));
}

static inline bool pred_fresh(const struct dbk_pred *p, const struct pred_srv *s, uint64_t now_ms)
{
	return s->have_scrape && now_ms >= s->scrape_ms &&
	       now_ms - s->scrape_ms <= p->c.scrape_stale_ms;
}

static inline double pred_capacity(const struct dbk_pred *p, const struct pred_srv *s)
{
	return s->have_scrape && pos(s->sc.kv_capacity_tokens) ? s->sc.kv_capacity_tokens
	                                                       : p->c.kv_tokens;
}

static inline double pred_output(const struct dbk_pred *p, const struct dbk_pred_request *r)
{
	double m = isfinite(r->max_tokens) && r->max_tokens > 0 ? r->max_tokens : 0;
	return r->ignore_eos ? m : fmin(m, p->c.output_tokens);
}

static inline double pred_prompt(const struct dbk_pred_request *r)
{
	return isfinite(r->prompt_tokens) && r->prompt_tokens > 0 ? fmin(r->prompt_tokens, 1e9) : 0;
}

/* The predicted first token, and what a choice weighs, in first-token
 * seconds: that, what the prefill stalls of the requests already
 * decoding there, and the TPOT it gets there and adds to theirs, a TPOT
 * second worth the objectives' ratio of first-token seconds.
 * A request within the objectives on no server, its wait for KV room
 * aside (lost: dbk_pred_choose), weighs first what it costs the others:
 * the server time its own prefill takes from them, the stall and the
 * TPOT it adds; its own wait and TPOT, past the objectives anyway,
 * weigh as a stalled decoder's seconds do (stall_weight). So it goes to
 * a server already slow rather than one that requests within the
 * objectives still find fast. Ranked
 * by its own first token, the long prompts of Mooncake's 64 demo fleet
 * (over a 32,768-token model length: only the long group holds them;
 * seconds of prefill each) went each to the long server that would
 * start it soonest, every long server had them queued, and the short
 * requests sent there missed behind them (BENCHMARKS.md, "Stop 42:
 * Mooncake 64 demo against llm_d_active"). Its own wait left out
 * altogether, it went where the others waited longest: TTFT p99 1.8x
 * on Mooncake's 4 overloaded instances. */
static inline double pred_ttft(const struct pred_eval *e) { return e->ttft_s + e->wait_s; }

/* Past PRED_TTFT_RISK_FROM of the TTFT objective a predicted first
 * token's second weighs 1 + late_weight (predict.h): there, the error
 * the books make on a queue (a prompt's length guessed from its sample,
 * outputs from a mean) is what stands between the request and a miss,
 * while the TPOT that second bought the decoders lay far inside its own
 * objective. Weighed alike all the way, the harm a short prompt's
 * prefill does to short-output decoders (20 first-token seconds to a
 * TPOT second) outbid a queue of 1.5 s, long prompts gathered on the
 * servers with fewest decoders, and their queues made the tail: code
 * prompts on 16 servers with 2048-token steps at 75% of leastconn's
 * load, TTFT p99 2.3 s against its 1.2 s, 98.7% within the objectives
 * against its 100%; with it, 1.4 s and 99.9% (BENCHMARKS.md, "Stop 51:
 * a late first token costs more"). Not a fine tuning: weights 2 to
 * 20, or from a quarter of the objective, served alike within the
 * searches' 2% on the matrix, and within a point of each other at
 * fixed rates. Lost everywhere, a request misses whatever it waits:
 * no risk to weigh (pred_score's lost branch). */
#define PRED_TTFT_RISK_FROM 0.5

static inline double pred_score(const struct dbk_pred *p, const struct pred_eval *e)
{
	double others = p->c.stall_weight * e->stall_s +
	                p->c.ttft_slo_s / p->c.tpot_slo_s * e->harm_s;
	double own = pred_ttft(e) + p->c.ttft_slo_s / p->c.tpot_slo_s * e->tpot_s;

	if (e->lost)
		return e->own_s + others + p->c.stall_weight * (own - e->own_s);
	double late = fmax(0, pred_ttft(e) - PRED_TTFT_RISK_FROM * p->c.ttft_slo_s);
	return own + p->c.late_weight * late + others;
}

/* The class a choice ranks first: fitting, then within the objectives. */
static inline int pred_class(const struct pred_eval *e) { return 2 * e->fits + e->within; }

/* What one step longer by a second adds to t's TPOT, which spreads its
 * decode time over output - 1 gaps (0: no TPOT). From the ticket alone,
 * so that its release takes off what its commit added. */
static inline double pred_ticket_inv_out(const struct dbk_pred_ticket *t)
{
	double out = 2.0 * ((double)t->ctx_tokens - (double)t->prompt_tokens);
	return out > 1 ? 1 / (out - 1) : 0;
}

/* Its output, as its ticket says (ctx = prompt + out / 2). */
static inline double pred_ticket_out(const struct dbk_pred_ticket *t)
{
	return 2.0 * fmax(0, (double)t->ctx_tokens - t->prompt_tokens);
}

/* Its expected hit, as its ticket says (kv = prompt - hit + out), to a
 * token or two: the ticket's words are whole tokens. */
static inline double pred_ticket_hit(const struct dbk_pred_ticket *t)
{
	double prompt = t->prompt_tokens;
	return fmin(prompt, fmax(0, prompt + pred_ticket_out(t) - (double)t->kv_tokens));
}

/* The KV t pins on its server while it runs, its own part: its whole
 * prompt and its output, but a hit others share (shared_hit: prompt -
 * hit + output). The blocks its prefix hits are taken out of the free
 * pool as surely as fresh ones (vLLM counts them used while a request
 * holds them), so a long session's cached context is pinned whole by
 * each turn; counting its new tokens only saw room that was not there,
 * and long agentic sessions preempted (BENCHMARKS.md, "Long agentic
 * sessions: KV pressure"). But vLLM holds a prefix that several running
 * requests share once (its blocks are ref-counted): counted per
 * request, a short-prompt fleet's system prompt filled the books. From
 * the ticket alone, so that its release takes off what its commit
 * added. */
static inline double pred_ticket_kv(const struct dbk_pred_ticket *t)
{
	return t->shared_hit ? t->kv_tokens : (double)t->prompt_tokens + pred_ticket_out(t);
}

/* Its shared prefix, counted once per server (pred_shared_kv): its hit
 * when shared, less than a block (the ticket's whole tokens) none. */
static inline uint32_t pred_ticket_shared(const struct dbk_pred_ticket *t)
{
	double shared = (double)t->prompt_tokens + pred_ticket_out(t) - t->kv_tokens;
	return t->shared_hit && shared >= DBK_PKEY_BLOCK_TOKENS ? (uint32_t)shared : 0;
}

/* The shared prefixes in flight on s, each held once: the longest of
 * them, taken to contain the others (one system prompt and the longer
 * prefixes that begin with it; distinct system prompts side by side are
 * undercounted). */
static inline double pred_shared_kv(const struct pred_srv *s)
{
	uint32_t m = 0;

	for (unsigned i = 0; i < PRED_SHARED; i++)
		if (s->shared[i].refs && s->shared[i].tokens > m)
			m = s->shared[i].tokens;
	return m;
}

static inline bool pred_holds(const struct pred_srv *s, double need)
{
	return s->max_model_len == 0 || need <= (double)s->max_model_len;
}

/* The mean context of the requests in flight on s, which other
 * balancers' requests there are taken to share; with none, a request of
 * prompt tokens midway through its out tokens of output. */
static inline double pred_srv_mean_ctx(const struct pred_srv *s, double prompt, double out)
{
	return s->inflight ? s->ctx_tokens / s->inflight : prompt + out / 2;
}

/* The mean output of the requests in flight on s (the books charge half
 * of each as context, so twice that); with none, out. */
static inline double pred_srv_mean_out(const struct pred_srv *s, double out)
{
	return s->inflight ? 2 * (s->ctx_tokens - s->prompt_tokens) / s->inflight : out;
}

/* predict_budget.c: the step budget of s learnt from the scrape sc
 * (s->sc still the one before it). */
void dbk_pred_learn_budget(struct pred_srv *s, const struct dbk_pred_scrape *sc);
/* predict_gaps.c: a scrape's inter-token gaps, and the mean of those
 * last read on s if fresh at now_ms (0: none). */
void dbk_pred_learn_gaps(struct pred_srv *s, const struct dbk_pred_scrape *sc, uint64_t now_ms);
double dbk_pred_gap_seen(const struct pred_srv *s, uint64_t now_ms);

/* predict_seats.c: the seats of s learnt from the scrape sc (s->sc
 * still the one before it), its steps' budget being budget tokens. */
void dbk_pred_learn_seats(struct pred_srv *s, const struct dbk_pred_scrape *sc, double budget);

/* predict_speed.c: each server's speed learnt from its scrapes and its
 * requests. */
void dbk_pred_learn_speed(struct dbk_pred *p, struct pred_srv *s, const struct dbk_pred_scrape *sc);
/* A request of s ended y seconds after it was sent, predicted x1 (first
 * token) and x2 (decode) at the fleet's speed, at now_ms. */
void dbk_pred_learn_request(struct dbk_pred *p, struct pred_srv *s, double x1, double x2, double y,
                            uint64_t now_ms);
/* What is learnt (a request ended, a scrape's first tokens, a weight)
 * moves the fleet's fits at once, and every server's slow and slow_dec
 * from them and from weights where nothing is learnt, when next read:
 * a run of requests ending between two decisions sets them once. */
void dbk_pred_update_slow(struct dbk_pred *p);
void dbk_pred_slow_apply(struct dbk_pred *p);
/* Every reader of slow and slow_dec (a choice, a commit, a view) calls
 * this first; the pricing helpers below check that it was. */
static inline void pred_slow_fresh(struct dbk_pred *p)
{
	if (p->slow_stale)
		dbk_pred_slow_apply(p);
}

/* The engine's step-time shape (ENGINE-MODEL.md), and what the scrape
 * shows beyond the books: inline, since the choice prices every server
 * with them on every decision. */
/* Steps a prefill of fresh tokens takes beside decoders in steps of
 * budget tokens, each decoder taking one token of every step: fractional
 * where the prefill shares its steps with the prompts queued beside it
 * (packed, in pack_tokens), whole where it is the request's own first
 * token. */
static inline double pred_steps_of(double budget, double fresh, double decoders)
{
	return fresh / fmax(budget - decoders, budget / 8);
}

static inline double pred_steps(const struct dbk_pred_config *c, double fresh, double decoders)
{
	return fmax(1, ceil(pred_steps_of(c->budget_tokens, fresh, decoders)));
}

/* Seconds to prefill fresh tokens after hit cached ones in steps steps,
 * with decoders decoding over ctx tokens each sharing every step
 * (ENGINE-MODEL.md). */
static inline double pred_prefill_in_s(const struct dbk_pred_config *c, double steps, double fresh,
                                       double hit, double decoders, double ctx)
{
	double total = hit + fresh;
	double step_fixed = c->t_cpu_s + decoders * ctx * c->kv_bytes_per_token / c->kv_read_bw;

	return steps * step_fixed +
	       fmax(steps * c->t_weights_s, (steps * decoders + fresh) / c->lin_tokens_per_s) +
	       c->attn_flop_per_pair * (total * total - hit * hit) / 2 / c->attn_flops;
}

static inline double pred_prefill_s(const struct dbk_pred_config *c, double fresh, double hit,
                                    double decoders, double ctx)
{
	return pred_prefill_in_s(c, pred_steps(c, fresh, decoders), fresh, hit, decoders, ctx);
}

/* A step of decodes only: batch requests reading ctx_sum context
 * tokens' KV in all (ENGINE-MODEL.md's step without a prefill chunk). */
static inline double pred_decode_step_s(const struct dbk_pred_config *c, double batch,
                                        double ctx_sum)
{
	return c->t_cpu_s + fmax(c->t_weights_s, batch / c->lin_tokens_per_s) +
	       ctx_sum * c->kv_bytes_per_token / c->kv_read_bw;
}

/* The same on server s, at its learnt speed (dbk_pred_learn_speed): every
 * prefill priced for a server goes through here; only the fleet-wide
 * mean (mean_work_s) is priced at the fleet's speed. */
static inline double pred_srv_prefill_s(const struct dbk_pred *p, const struct pred_srv *s,
                                        double fresh, double hit, double decoders, double ctx)
{
	assert(!p->slow_stale);
	return s->slow * pred_prefill_s(&p->c, fresh, hit, decoders, ctx);
}

/* The budget server s's queue is packed into: the told one; untold,
 * the one learnt from its scrapes, else the default (learn_pack,
 * predict_budget.c); 0: not packed. */
static inline double pred_srv_pack(const struct dbk_pred *p, const struct pred_srv *s)
{
	if (p->c.pack_tokens > 0)
		return p->c.pack_tokens;
	if (!p->c.learn_pack)
		return 0;
	return s->bud_learnt > 0 ? s->bud_learnt : p->c.budget_tokens;
}

/* What its prefill holds those queued behind it on server s: the engine
 * packs queued prompts into one step up to its budget (pred_srv_pack),
 * so a short prompt holds the next one a fraction of a step, not a
 * whole one; not packed (admission), its own whole steps. */
static inline double pred_srv_prefill_packed_s(const struct dbk_pred *p, const struct pred_srv *s,
                                               double fresh, double hit, double decoders,
                                               double ctx)
{
	double pack = pred_srv_pack(p, s);

	if (!(pack > 0))
		return pred_srv_prefill_s(p, s, fresh, hit, decoders, ctx);
	assert(!p->slow_stale);
	return s->slow * pred_prefill_in_s(&p->c, pred_steps_of(pack, fresh, decoders), fresh, hit,
	                                   decoders, ctx);
}

/* A decode step on server s, at its learnt decode speed. */
static inline double pred_srv_decode_step_s(const struct dbk_pred *p, const struct pred_srv *s,
                                            double batch, double ctx_sum)
{
	assert(!p->slow_stale);
	return s->slow_dec * pred_decode_step_s(&p->c, batch, ctx_sum);
}

/* What the scrape shows beyond the books at now_ms: other agents' requests. */
static inline void pred_others(const struct dbk_pred *p, const struct pred_srv *s, uint64_t now_ms,
                               struct pred_others *o)
{
	assert(!p->slow_stale);
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

/* predict_lora.c: what a request's adapter costs on s at now_ms: the
 * load (seconds, the step every decoder there waits too) and the slots
 * it waits for, in turns of one adapter's requests ending (0: a slot is
 * free or its adapter is there). */
struct pred_lora_price {
	double load_s;
	double turns;
};
void dbk_pred_lora_price(const struct dbk_pred *p, const struct pred_srv *s, uint64_t adapter,
                         uint64_t now_ms, struct pred_lora_price *out);
/* The adapter was sent to s at now_ms. */
void dbk_pred_lora_sent(struct pred_srv *s, uint64_t adapter, uint64_t now_ms);
/* Adapters with requests on s: scraped, and sent by us since. */
unsigned dbk_pred_lora_active(const struct dbk_pred *p, const struct pred_srv *s, uint64_t now_ms);

/* predict_choose.c: the hit r is expected to find on server, and the
 * hash that breaks ties between servers. */
double dbk_pred_commit_hit(const struct dbk_pred *p, const struct dbk_pred_request *r,
                           unsigned server);
/* Whether r's hit on server is a prefix others share: its sample
 * matched there short of the whole sample, text another prompt sent
 * there too and this one leaves, which vLLM holds once for all that
 * share it. A whole sample matched may be the request's own history (a
 * conversation's earlier turn: Mooncake's, within 3,840 tokens), pinned
 * by it alone. */
bool dbk_pred_hit_shared(const struct dbk_pred *p, const struct dbk_pred_request *r,
                         unsigned server);
uint64_t dbk_pred_tie(uint64_t key, unsigned server);

/* predict_herd.c: other balancers reading the same scrapes. */
double dbk_pred_unseen_share(const struct dbk_pred *p, uint64_t now_ms);
int dbk_pred_spread(struct dbk_pred *p, int bi, double share, uint64_t tie, uint64_t now_ms);
void dbk_pred_expect_others(struct dbk_pred *p, const struct dbk_pred_request *r, uint64_t now_ms);

#endif
