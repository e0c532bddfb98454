/* The ttft policy's predictor (predict.h): the object, its books and
 * what it is told (predict_int.h says where the rest is). */
#include "predict_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "prefix_key.h"

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
		p->x->sorted = calloc(3 * (size_t)c->nservers, sizeof(*p->x->sorted));
	}
	if (!p->s || !p->idx || !p->x || !p->x->ev || !p->x->sorted) {
		dbk_pred_free(p);
		return NULL;
	}
	p->mean_work_s = 0.025;
	p->fleet_a = p->fleet_b = p->fleet_h = 1;
	p->prior_stale = true;
	for (unsigned i = 0; i < c->nservers; i++) {
		p->s[i].slow = p->s[i].slow_dec = 1;
		p->s[i].ttft_n_then = -1;
		p->s[i].gap_n_then = -1;
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

/* The ends kept after since_ms, and the KV they freed. One in the
 * same millisecond as the send is taken as before it: the engine had let
 * it go before HAProxy's line came. */
static unsigned pred_ends_since(const struct pred_srv *s, uint64_t since_ms, double *kv)
{
	unsigned n = 0, kept = s->ends_n < PRED_ENDS ? s->ends_n : PRED_ENDS;

	*kv = 0;
	for (unsigned i = 0; i < kept; i++)
		if (s->ends[i].ms > since_ms) {
			n++;
			*kv += s->ends[i].kv;
		}
	return n;
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
	/* Against the scrape before. */
	dbk_pred_learn_seats(s, sc, s->bud_learnt > 0 ? s->bud_learnt : p->c.budget_tokens);
	dbk_pred_learn_budget(s, sc);
	dbk_pred_learn_gaps(s, sc, now_ms);
	s->have_scrape = true;
	s->scrape_ms = now_ms;
	s->sc = *sc;
	/* Ours as the engine may have counted them: those the books hold and
	 * those they ended while the scrape was out (the engine lets a
	 * request go before HAProxy's completion line reaches us). Taken as
	 * others, one lost race priced the server a request busier until the
	 * next scrape, and looked like another balancer (predict_herd.c). */
	double gone_kv = 0;
	unsigned gone = sc->sent_ms ? pred_ends_since(s, sc->sent_ms, &gone_kv) : 0;
	s->inflight_then = s->inflight + gone;
	s->pending_then = pred_pending(s, sec(now_ms));
	s->kv_then = s->kv_tokens + gone_kv;
	s->unseen_end_s = 0; /* the scrape shows them now */
	dbk_pred_learn_speed(p, s, sc);
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

void dbk_pred_set_weight(struct dbk_pred *p, unsigned server, double weight)
{
	if (server >= p->c.nservers || !(weight >= 0) || !isfinite(weight) ||
	    p->s[server].weight == weight)
		return;
	p->s[server].weight = weight;
	p->prior_stale = true;
	dbk_pred_update_slow(p);
}

void dbk_pred_reset(struct dbk_pred *p, unsigned server)
{
	if (server >= p->c.nservers)
		return;
	struct pred_srv *s = &p->s[server];

	dbk_pred_forget_cache(p, server);
	s->max_model_len = 0;
	s->have_scrape = false;
	memset(&s->sc, 0, sizeof(s->sc));
	s->failures = 0;
	s->unseen_end_s = 0;
	s->obs_sum = s->obs_n = s->pred_sum = s->pred_n = s->own_sum = 0;
	s->ttft_sum_then = 0;
	s->ttft_n_then = -1;
	memset(&s->lr, 0, sizeof(s->lr));
	memset(&s->hist, 0, sizeof(s->hist));
	s->weight = 0;
	p->prior_stale = true;
	memset(s->lora_sent, 0, sizeof(s->lora_sent));
	/* Another engine now: it never counted them. */
	memset(s->ends, 0, sizeof(s->ends));
	s->ends_n = 0;
	s->bud_tokens = s->bud_steps = s->bud_learnt = 0;
	s->gap_sum_then = s->gap_s = 0;
	s->gap_n_then = -1;
	s->gap_ms = 0;
	s->seats = s->run_max = s->seat_at = 0;
	s->seat_spans = 0;
	dbk_pred_update_slow(p);
}

/* t's shared prefix on s's table, one reference more or less; a length
 * the full table has no room for counts as t's own (released the same
 * way: a length not found there is taken off the own part). */
static void pred_charge_shared(struct pred_srv *s, uint32_t shared, int sign)
{
	struct pred_shared *free = NULL;

	if (!shared)
		return;
	for (unsigned i = 0; i < PRED_SHARED; i++) {
		struct pred_shared *e = &s->shared[i];
		if (e->refs && e->tokens == shared) {
			e->refs = sign > 0 ? e->refs + 1 : e->refs - 1;
			return;
		}
		if (!e->refs && !free)
			free = e;
	}
	if (sign > 0 && free)
		*free = (struct pred_shared){ shared, 1 };
	else
		s->kv_own = fmax(0, s->kv_own + sign * (double)shared);
}

static void pred_charge(struct pred_srv *s, const struct dbk_pred_ticket *t, int sign)
{
	s->inflight = sign > 0 ? s->inflight + 1 : s->inflight ? s->inflight - 1 : 0;
	s->prompt_tokens = fmax(0, s->prompt_tokens + sign * (double)t->prompt_tokens);
	s->kv_own = fmax(0, s->kv_own + sign * pred_ticket_kv(t));
	pred_charge_shared(s, pred_ticket_shared(t), sign);
	s->ctx_tokens = fmax(0, s->ctx_tokens + sign * (double)t->ctx_tokens);
	s->inv_out = fmax(0, s->inv_out + sign * pred_ticket_inv_out(t));
	if (s->inflight == 0) {
		s->prompt_tokens = s->kv_own = s->ctx_tokens = s->inv_out = 0;
		memset(s->shared, 0, sizeof(s->shared));
		s->count = 0;
	}
	s->kv_tokens = s->kv_own + pred_shared_kv(s);
}

static void pred_push(struct pred_srv *s, double now, double end, double paced)
{
	while (s->count > 0 && s->ring[s->head].end_s <= now) {
		s->head = (s->head + 1) % PRED_RING;
		s->count--;
	}
	if (s->count == 0)
		s->paced_total = 0;
	s->paced_total += paced;
	if (s->count == PRED_RING) {
		struct pred_pending *last = &s->ring[(s->head + s->count - 1) % PRED_RING];
		last->end_s = end;
		last->n++;
		last->upto = ++s->pushed;
		last->paced_s += paced;
		last->paced_upto = s->paced_total;
		return;
	}
	s->ring[(s->head + s->count) % PRED_RING] = (struct pred_pending){ end, 1, ++s->pushed,
		                                                           paced, s->paced_total };
	s->count++;
}

static uint32_t u32_of(double v)
{
	return v <= 0 || !isfinite(v) ? 0 : v >= 4294967295.0 ? UINT32_MAX : (uint32_t)v;
}

/* Its decode on s at the fleet's speed: its output's steps (vLLM's
 * decode is output - 1 steps after the first token) of the batch it
 * joins now, books and others, itself in. */
static double pred_decode_fleet_s(const struct dbk_pred *p, const struct pred_srv *s, double prompt,
                                  double out, uint64_t now_ms)
{
	struct pred_others o;

	if (out <= 1)
		return 0;
	pred_others(p, s, now_ms, &o);
	double mctx = pred_srv_mean_ctx(s, prompt, out);
	double batch = (double)s->inflight + o.requests + 1;
	return (out - 1) * pred_decode_step_s(&p->c, batch,
	                                      s->ctx_tokens + o.requests * mctx + prompt + out / 2);
}

/* What a decision tells at once, before its load is booked: our
 * sending rate, and what other balancers are expected to send after it
 * (weighed on the books as they were before it). */
static void pred_sent(struct dbk_pred *p, const struct dbk_pred_request *r, uint64_t now_ms)
{
	dbk_pred_expect_others(p, r, now_ms);
	p->rate = p->rate * exp(-sec(now_ms - p->rate_ms) / PRED_RATE_S) + 1 / PRED_RATE_S;
	p->rate_ms = now_ms;
}

/* Its prefix (and adapter) recorded on t's server, with the cache
 * turnover its new tokens make there. */
static void pred_record(struct dbk_pred *p, const struct dbk_pred_request *r,
                        const struct dbk_pred_ticket *t, double fresh, double out)
{
	struct pred_srv *s = &p->s[t->server];
	size_t nkeys = r->keys ? r->nkeys : 0;
	uint64_t skey = r->session;

	dbk_pred_lora_sent(s, r->adapter, t->sent_ms);
	s->sent_units += u32_of((fresh + out) / DBK_PKEY_BLOCK_TOKENS);
	if (nkeys)
		dbk_pidx_insert(p->idx, t->server, r->keys, nkeys, s->sent_units, t->prompt_tokens);
	if (skey)
		dbk_pidx_insert(p->idx, t->server, &skey, 1, s->sent_units, t->prompt_tokens);
	p->next = (p->next + 1) % p->c.nservers;
}

/* What a prefill of steps whole steps holds the queue behind it, held
 * at the model's pace: with pace_chunks, its steps beyond the first at
 * the fleet's. Admission's queue is unpacked, every short prompt priced
 * whole steps above the engine's packed wait, a margin kept on purpose
 * (stop 45) that the fleet's pace, applied to those steps too,
 * multiplied tenfold (Azure on 16 H100/A100 at 1.5x capacity: 69.1% of
 * requests within the objectives instead of 80.0%). A long prompt's
 * later chunks fill their steps alone, with no margin to multiply;
 * drained at the model's pace, the books counted a 76k-token prefill
 * done while it still held an A100's budget, and critical prompts
 * behind it waited 14-17 s where under 4 s was predicted (Mooncake on
 * 8 A100s: 92.7% of critical requests within at 1.5x capacity). Its
 * first step may be shared with the queue, so stays as priced
 * (BENCHMARKS.md, "Stop 58: a long prefill's steps at the fleet's
 * pace"). */
static double pred_paced(const struct dbk_pred *p, double held, double steps)
{
	if (!p->c.pace_chunks || steps <= 1)
		return 0;
	return (held - held / steps) * dbk_pred_fleet_slowness(p);
}

/* What a prefill of fresh tokens after hit cached ones holds the queue
 * behind it on s, pred_paced's seconds in *paced and what pacing added
 * to the model's in *added. */
static double pred_held_s(const struct dbk_pred *p, const struct pred_srv *s, double fresh,
                          double hit, double decoders, double ctx, double *paced, double *added)
{
	double model = pred_srv_prefill_packed_s(p, s, fresh, hit, decoders, ctx);
	double steps = pred_steps(&p->c, fresh, decoders);
	double held = model;

	*paced = pred_paced(p, model, steps);
	if (*paced > 0)
		held = model / steps + *paced;
	*added = held - model;
	return held;
}

/* The load's part: its prefill (and load_s, loading its adapter, which
 * holds the steps of those queued after it) queued behind the server's
 * at now_ms, the books charged with t; when learn, what is predicted of
 * it rides in t for its release to learn from (predict_learn.h). Its own
 * first token takes whole steps; those queued after it wait only its
 * share of the steps it packs them into (held). */
static void pred_book(struct dbk_pred *p, struct dbk_pred_ticket *t, double prompt, double out,
                      double hit, double load_s, bool learn, uint64_t now_ms)
{
	struct pred_srv *s = &p->s[t->server];
	double now = sec(now_ms);
	double decoders = fmax(0, (double)s->inflight - pred_pending(s, now));
	double ctx = s->inflight ? s->ctx_tokens / s->inflight : 0;
	double fresh = fmax(prompt - hit, 1);
	double own = pred_srv_prefill_s(p, s, fresh, hit, decoders, ctx) + load_s;
	double start = fmax(now, s->last_end_s);
	/* Its first token at the fleet's speed, for dbk_pred_learn_speed,
	 * and its decode there, for dbk_pred_learn_request: the wait ahead
	 * of it at the model's pace, what was booked at the fleet's taken
	 * back to it, so that the fit that sets the pace is not taught by
	 * the pace it set. */
	double ahead = fmin(pred_pending_paced(s, now), start - now);
	double x1 = (start + own - now) / s->slow;
	if (ahead > 0)
		x1 -= ahead * (1 - 1 / dbk_pred_fleet_slowness(p)) / s->slow;
	double paced, added;
	double held = pred_held_s(p, s, fresh, hit, decoders, ctx, &paced, &added) + load_s;
	pred_push(s, now, start + held, paced);
	s->last_end_s = start + held;
	s->pred_sum += x1;
	s->own_sum += own / s->slow;
	s->pred_n++;
	dbk_plearn_match_note(&s->match,
	                      &(struct dbk_plearn_sent){ s->pred_n, s->pred_sum, s->own_sum, 0 });
	p->mean_work_s += (pred_prefill_s(&p->c, fresh, hit, 0, 0) - p->mean_work_s) / 64;
	if (learn) {
		t->x1 = (float)x1;
		t->x2 = (float)pred_decode_fleet_s(p, s, prompt, out, now_ms);
	}
	pred_charge(s, t, +1);
}

static void pred_ticket(const struct dbk_pred *p, const struct dbk_pred_request *r, unsigned server,
                        double hit, uint64_t now_ms, struct dbk_pred_ticket *t)
{
	double prompt = pred_prompt(r), out = pred_output(p, r);

	t->server = server;
	t->prompt_tokens = u32_of(prompt);
	t->kv_tokens = u32_of(prompt - hit + out);
	t->shared_hit = hit > 0 && dbk_pred_hit_shared(p, r, server);
	t->ctx_tokens = u32_of(prompt + out / 2);
	t->sent_ms = now_ms;
}

static void pred_commit(struct dbk_pred *p, const struct dbk_pred_request *r, unsigned server,
                        double hit, uint64_t now_ms, struct dbk_pred_ticket *t)
{
	double prompt = pred_prompt(r), out = pred_output(p, r);

	struct pred_lora_price lp;

	pred_slow_fresh(p);
	pred_ticket(p, r, server, hit, now_ms, t);
	pred_sent(p, r, now_ms);
	dbk_pred_lora_price(p, &p->s[server], r->adapter, now_ms, &lp);
	pred_book(p, t, prompt, out, hit, lp.load_s, true, now_ms);
	pred_record(p, r, t, fmax(prompt - hit, 1), out);
}

void dbk_pred_commit(struct dbk_pred *p, const struct dbk_pred_request *r, unsigned server,
                     uint64_t now_ms, struct dbk_pred_ticket *t)
{
	memset(t, 0, sizeof(*t));
	if (server >= p->c.nservers)
		return;
	pred_commit(p, r, server, dbk_pred_commit_hit(p, r, server), now_ms, t);
}

/* The hit the choice c found, not looked up again; a too-long choice
 * was priced without its hit. */
static double chosen_hit(const struct dbk_pred *p, const struct dbk_pred_request *r,
                         const struct dbk_pred_choice *c)
{
	return c->reason == DBK_PRED_FASTEST ? c->hit_tokens
	                                     : dbk_pred_commit_hit(p, r, (unsigned)c->server);
}

void dbk_pred_commit_chosen(struct dbk_pred *p, const struct dbk_pred_request *r,
                            const struct dbk_pred_choice *c, uint64_t now_ms,
                            struct dbk_pred_ticket *t)
{
	memset(t, 0, sizeof(*t));
	if (c->server < 0 || (unsigned)c->server >= p->c.nservers)
		return;
	pred_commit(p, r, (unsigned)c->server, chosen_hit(p, r, c), now_ms, t);
}

void dbk_pred_hold(struct dbk_pred *p, const struct dbk_pred_request *r,
                   const struct dbk_pred_choice *c, uint64_t now_ms, struct dbk_pred_ticket *t)
{
	memset(t, 0, sizeof(*t));
	if (c->server < 0 || (unsigned)c->server >= p->c.nservers)
		return;
	double prompt = pred_prompt(r), out = pred_output(p, r), hit = chosen_hit(p, r, c);

	pred_slow_fresh(p);
	pred_ticket(p, r, (unsigned)c->server, hit, now_ms, t);
	pred_sent(p, r, now_ms);
	pred_record(p, r, t, fmax(prompt - hit, 1), out);
}

void dbk_pred_complete(struct dbk_pred *p, const struct dbk_pred_ticket *t, uint64_t now_ms)
{
	if (t->server >= p->c.nservers)
		return;
	/* The hit and output the ticket was filled with. No speed is learnt
	 * from its duration, which counts the body's way to the server. */
	struct dbk_pred_ticket booked = *t;

	pred_slow_fresh(p);
	pred_book(p, &booked, t->prompt_tokens, pred_ticket_out(t), pred_ticket_hit(t), 0, false,
	          now_ms);
}

void dbk_pred_hint(struct dbk_pred *p, const struct dbk_pred_request *r, unsigned server,
                   uint32_t tokens)
{
	if (server >= p->c.nservers || !tokens)
		return;
	const struct pred_srv *s = &p->s[server];
	size_t nkeys = r->keys ? r->nkeys : 0;
	uint64_t skey = r->session;

	if (nkeys > tokens / DBK_PKEY_BLOCK_TOKENS)
		nkeys = tokens / DBK_PKEY_BLOCK_TOKENS;
	if (nkeys)
		dbk_pidx_insert(p->idx, server, r->keys, nkeys, s->sent_units, tokens);
	if (skey)
		dbk_pidx_insert(p->idx, server, &skey, 1, s->sent_units, tokens);
}

/* The part of t's prefill that the books still queue on its server
 * after now: from its predicted first token (its commit's x1, at the
 * server's speed) back by its own prefill, recomputed from the
 * ticket's sizes (it keeps no time),
 * at most what is left of it. Left on the books, the prefill of a
 * request refused at once (vLLM's 400, a failing server's 500) stayed
 * queued ahead of every later one until the server was idle. */
static void pred_unqueue(struct dbk_pred *p, const struct dbk_pred_ticket *t, uint64_t now_ms)
{
	struct pred_srv *s = &p->s[t->server];
	double now = sec(now_ms);

	pred_slow_fresh(p);
	double first = sec(t->sent_ms) + (double)t->x1 * s->slow;
	if (!(t->x1 > 0) || s->last_end_s <= now)
		return;
	double prompt = t->prompt_tokens, hit = pred_ticket_hit(t);
	double decoders = fmax(0, (double)s->inflight - pred_pending(s, now));
	double ctx = s->inflight ? s->ctx_tokens / s->inflight : 0;
	double paced, added;
	double held = pred_held_s(p, s, fmax(prompt - hit, 1), hit, decoders, ctx, &paced, &added);
	/* Booked paced, its first token is later than x1 (the model's) says
	 * by what pacing added. */
	first += added;
	if (first <= now)
		return;
	s->last_end_s = fmax(now, s->last_end_s - fmin(held, first - now));
}

/* t's charge undone at now_ms, the end kept for the scrape out now; an
 * idle server has no queue. */
static void pred_uncharge(struct dbk_pred *p, const struct dbk_pred_ticket *t, uint64_t now_ms)
{
	struct pred_srv *s = &p->s[t->server];
	double kv = s->kv_tokens;

	pred_charge(s, t, -1);
	s->ends[s->ends_n++ % PRED_ENDS] = (struct pred_end){ now_ms, fmax(0, kv - s->kv_tokens) };
	if (s->inflight == 0)
		s->last_end_s = 0;
}

void dbk_pred_release_unserved(struct dbk_pred *p, const struct dbk_pred_ticket *t, uint64_t now_ms)
{
	if (t->server >= p->c.nservers)
		return;
	pred_unqueue(p, t, now_ms);
	pred_uncharge(p, t, now_ms);
}

void dbk_pred_release(struct dbk_pred *p, const struct dbk_pred_ticket *t, uint64_t now_ms)
{
	if (t->server >= p->c.nservers)
		return;
	/* What its whole time says of the server's speed (predict_learn.h). */
	if (t->x1 + t->x2 > 0 && now_ms > t->sent_ms)
		dbk_pred_learn_request(p, &p->s[t->server], t->x1, t->x2, sec(now_ms - t->sent_ms),
		                       now_ms);
	pred_uncharge(p, t, now_ms);
}

void dbk_pred_move(struct dbk_pred *p, struct dbk_pred_ticket *t, unsigned server, uint64_t now_ms)
{
	(void)now_ms;
	if (t->server >= p->c.nservers || server >= p->c.nservers || server == t->server)
		return;
	pred_charge(&p->s[t->server], t, -1);
	t->server = server;
	/* What was predicted was the other server's. */
	t->x1 = t->x2 = 0;
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

	/* The factors are a cache of the fits (pred_slow_fresh): p is
	 * changed in nothing it says. */
	pred_slow_fresh((struct dbk_pred *)p);
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
	v->decode_slowness = s->slow_dec;
	v->adapters = dbk_pred_lora_active(p, s, now_ms);
	v->max_lora = s->have_scrape ? s->sc.max_lora : 0;
	v->step_budget = pred_srv_pack(p, s);
	v->seats = s->seats;
	v->model_slowness = s->slow * dbk_pred_fleet_slowness(p);
}
