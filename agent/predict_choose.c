/* The predictor's choice (predict.h, predict_int.h): each usable
 * server's predicted first token and what it costs the requests there,
 * the best of them, or one server's alone. */
#include "predict_int.h"
#include "balancer_types.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/hash.h"
#include "prefix_key.h"

/* The chance that s still holds what was sent there at stamp: 1 while
 * less than half a cache of new tokens was sent there since, falling to
 * 0 at a whole cache (LRU turnover). */
static double pred_keep(const struct dbk_pred *p, const struct pred_srv *s, uint32_t stamp)
{
	double cap = pred_capacity(p, s) / DBK_PKEY_BLOCK_TOKENS;
	double age = (double)(uint32_t)(s->sent_units - stamp);
	return age <= cap / 2 ? 1 : age >= cap ? 0 : 2 * (1 - age / cap);
}

/* The prefix matches of r: by its keys, and by its session's key (where
 * its conversation's earlier turns went, and how long they were). */
struct pred_match {
	struct dbk_pidx_hit k[PRED_MAX_HITS], s[PRED_MAX_HITS];
	size_t nk, ns, nkeys;
};

static void pred_match(const struct dbk_pred *p, const struct dbk_pred_request *r,
                       struct pred_match *m)
{
	uint64_t skey = r->session;

	m->nkeys = r->keys ? r->nkeys : 0;
	m->nk = m->nkeys ? dbk_pidx_match(p->idx, r->keys, m->nkeys, m->k, PRED_MAX_HITS) : 0;
	m->ns = skey ? dbk_pidx_match(p->idx, &skey, 1, m->s, PRED_MAX_HITS) : 0;
}

static const struct dbk_pidx_hit *pred_hit_on(const struct dbk_pidx_hit *h, size_t n,
                                              unsigned server)
{
	for (size_t i = 0; i < n; i++)
		if (h[i].server == server)
			return &h[i];
	return NULL;
}

/* The expected hit of r on server: what its keys matched there, and
 * when the whole sample matched and the prompt goes on past it (a
 * conversation's next turn), all of the earlier prompt sent there, each
 * part times the chance that the server still holds it. The earlier
 * prompt is its own session's where r has one: a whole-sample match
 * says the sample's text was sent there, not that this conversation
 * was, and every conversation behind a system prompt longer than the
 * sample matches it whole (agentic.py's sessions: 3 of 4 prompts past
 * the simulator's 3,840-token sample; ttft took one conversation's
 * history for another's and sent turns where theirs was not). */
static double pred_hit(const struct dbk_pred *p, const struct dbk_pred_request *r,
                       const struct pred_match *m, unsigned server)
{
	const struct pred_srv *s = &p->s[server];
	const struct dbk_pidx_hit *h = pred_hit_on(m->k, m->nk, server);
	const struct dbk_pidx_hit *sh = pred_hit_on(m->s, m->ns, server);
	double prompt = pred_prompt(r), hit = 0;

	if (!m->nkeys)
		h = sh; /* no sample: the session alone says */
	if (h) {
		double tokens = (double)h->blocks * DBK_PKEY_BLOCK_TOKENS;
		bool whole = h->blocks >= m->nkeys && (r->keys_cut || m->nkeys == 0);
		if (whole && (!r->session || h == sh))
			tokens = fmax(tokens, (double)h->prompt_tokens);
		hit = fmin(tokens, prompt - 1) * pred_keep(p, s, h->stamp);
		if (whole && r->session && sh && sh != h)
			hit = fmax(hit, fmin((double)sh->prompt_tokens, prompt - 1) *
			                        pred_keep(p, s, sh->stamp));
	}
	return fmax(0, hit);
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

uint64_t dbk_pred_tie(uint64_t key, unsigned server)
{
	return dbk_hash_fmix_light(key ^ ((uint64_t)(server + 1) * UINT64_C(0xc2b2ae3d27d4eb4f)));
}

/* Its TPOT on s: a decode step of the batch it joins (every request in
 * flight there, queued ones included since they decode after their
 * prefill, and the others the scrape shows, each over the books' mean
 * context), itself in. And the TPOT it adds to theirs: each of their
 * steps longer by the difference while both decode, which is its whole
 * output or, on average, the half of theirs still to come, over their
 * whole output. At the server's learnt decode speed (predict.h). Other
 * requests' prefill chunks sharing its steps are left out. Those queued
 * there now end before it decodes (the engine serves its queue in
 * order); those sharing its steps come after it. Priced from the
 * prefill sent there lately, they made the prediction truer but gained
 * no capacity (BENCHMARKS.md, "Stop 43: the TPOT ttft predicts beside
 * long prefills").
 * Both weigh in the cost (pred_score), its own TPOT as its first token
 * does, each against its objective: a first token 50 ms later is a
 * fortieth of 2 s, a decode 5 ms a token slower a twentieth of 100 ms.
 * Left out, the first token decided where the harm was alike, and a
 * short prompt went where its first token came a few milliseconds
 * sooner though its every token came slower there (on a mixed fleet:
 * TPOT p50 1.09x leastconn's on Azure's conversations, BENCHMARKS.md,
 * "The decode side on mixed fleets"). */
static void pred_eval_tpot(const struct dbk_pred *p, const struct pred_srv *s,
                           const struct pred_others *o, double prompt, double out, double chunk_s,
                           struct pred_eval *e)
{
	double batch = (double)s->inflight + o->requests;
	double mctx = pred_srv_mean_ctx(s, prompt, out), mout = pred_srv_mean_out(s, out);

	/* Its prefill's first step, longer than a decode step by chunk_s,
	 * is one of the steps each decoder there makes one token in: their
	 * TPOT grows by chunk_s over their output's gaps, summed one by one
	 * (over the mean output, a long one beside short ones would hide
	 * them). A short prompt fits one step wherever it goes, but how many
	 * decode through that step, and how short, depends on where. Others'
	 * requests are taken as ours there. */
	double inv = s->inflight ? s->inv_out / s->inflight : (out > 1 ? 1 / (out - 1) : 0);
	e->harm_s = chunk_s * (s->inv_out + o->requests * inv);
	e->tpot_s = 0;
	if (out <= 1)
		return; /* no time per output token: vLLM's TPOT needs two */
	double before = pred_srv_decode_step_s(p, s, batch, batch * mctx);
	double after = pred_srv_decode_step_s(p, s, batch + 1, batch * mctx + prompt + out / 2);

	e->tpot_s = after;
	e->harm_s += batch * (after - before) * fmin(0.5, out / fmax(1, mout));
}

/* Out of seats (predict_seats.c), it waits for as many running
 * requests to end as are there beyond them, itself included: with
 * their outputs' ends spread evenly over one output's decode, the k-th
 * of seats running ends after k / seats of it, at the full batch's
 * step. Beside a wait for KV room (the same ends) the longer counts.
 * Unpriced, ttft's first tokens on 16 servers of 64 seats came from a
 * prefill queue the books showed short while prompts waited seconds
 * for a seat: 2% below llm_d_active's capacity there (BENCHMARKS.md,
 * "Stop 54: the seats learnt"). */
static double pred_seat_wait_s(const struct dbk_pred *p, const struct pred_srv *s,
                               const struct pred_others *o, double prompt, double out)
{
	double seats = s->seats, ahead = (double)s->inflight + o->requests;

	if (!(seats > 0) || ahead < seats)
		return 0;
	return (ahead - seats + 1) / seats * pred_srv_mean_out(s, out) *
	       pred_srv_decode_step_s(p, s, seats, seats * pred_srv_mean_ctx(s, prompt, out));
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

	/* Beside what those in flight pin (whole prompts, a shared prefix
	 * once: pred_ticket_kv), the room of its new tokens and output: its
	 * hit is resident there. Where the room is short it waits for
	 * decodes to end (wait_s), and still ranks as fitting where it is
	 * mostly cached and its new tokens are few (PRED_FIT_FRESH): vLLM
	 * admits it with its hit and first chunk at once or not at all, so
	 * it waits for its own cache rather than preempts. A longer fresh
	 * prefill is admitted by its first chunk and takes the rest step by
	 * step, preempting the newest running requests: the fit is there to
	 * keep those off a full server; and an uncached short one gains
	 * nothing by waiting there. Counted whole at its cache too, or not
	 * fitting there, a session left its cache for a cold server, where
	 * the long fresh prefill preempted instead (BENCHMARKS.md, "Long
	 * agentic sessions: KV pressure"). */
	double cap = pred_capacity(p, s);
	double over = s->kv_tokens + o.kv + prompt - hit + out - cap;
	e->fits = over <= 0 || (prompt - hit <= PRED_FIT_FRESH && hit >= prompt - hit);
	e->wait_s = 0;
	if (over > 0) {
		/* Until enough decodes end: what is left of the outputs in
		 * flight ((ctx - prompt) is half of them) at one token a step,
		 * over the share of the cache to be freed. Past a whole cache
		 * (the books hold more queued there than fits beside those
		 * running), the rest frees as the queued ones in turn decode
		 * their whole outputs, twice what is left of those in flight.
		 * Capped at one cache, the wait behind a queue of long prompts
		 * came out short: actual / predicted TTFT p50 1.22 where the
		 * queue ahead passed 10 s (BENCHMARKS.md, "Stop 44: the wait
		 * predicted behind queued long prompts"). */
		double left = s->inflight ? (s->ctx_tokens - s->prompt_tokens) / s->inflight : out;
		double step = pred_srv_prefill_s(p, s, 1, 0, decoders, ctx);
		double share = over / fmax(cap, 1);
		e->wait_s = (fmin(share, 1) + 2 * fmax(0, share - 1)) * left * step;
	}
	e->wait_s = fmax(e->wait_s, pred_seat_wait_s(p, s, &o, prompt, out));
	e->ttft_s = queue + own;
	e->own_s = own;
	e->paced_s = fmin(pred_pending_paced(s, now), fmax(0, s->last_end_s - now));
	e->tpot_seen_s = dbk_pred_gap_seen(s, now_ms);
	e->lost = false;
	e->hit = hit;
	struct pred_lora_price lp;
	dbk_pred_lora_price(p, s, r->adapter, now_ms, &lp);
	if (lp.turns > 0) {
		/* Until the requests of an adapter there end, as for KV. */
		double left = s->inflight
		                      ? fmax(1, (s->ctx_tokens - s->prompt_tokens) / s->inflight)
		                      : out;
		e->ttft_s += lp.turns * left * pred_srv_prefill_s(p, s, 1, 0, decoders, ctx);
	}
	e->ttft_s += lp.load_s;

	/* Every request in flight there, those still queued included (ours
	 * goes after them), decodes through this prefill's steps, each longer
	 * than a decode step by what the prefill adds. The first step is one
	 * token's step of each of them, priced in TPOT (pred_eval_tpot); the
	 * steps beyond it stall a whole batch for seconds, priced here. */
	double steps = pred_steps(&p->c, fmax(prompt - hit, 1), decoders);
	double extra = fmax(0, own - steps * pred_srv_prefill_s(p, s, 1, 0, decoders, ctx));
	e->stall_s = ((double)s->inflight + o.requests) * extra * (steps - 1) / steps;
	/* A load holds the step every request there is in. */
	e->stall_s += ((double)s->inflight + o.requests) * lp.load_s;
	pred_eval_tpot(p, s, &o, prompt, out, extra / steps, e);
	e->within = pred_ttft(e) <= p->c.ttft_slo_s && e->tpot_s <= p->c.tpot_slo_s;
}

static void pred_choice_of(const struct dbk_pred *p, int server, const struct pred_eval *e,
                           struct dbk_pred_choice *c)
{
	*c = (struct dbk_pred_choice){ .server = server,
		                       .reason = DBK_PRED_FASTEST,
		                       .ttft_s = pred_ttft(e),
		                       .own_s = e->own_s,
		                       .paced_s = e->paced_s,
		                       .tpot_seen_s = e->tpot_seen_s,
		                       .kv_wait_s = e->wait_s,
		                       .hit_tokens = e->hit,
		                       .kv_fits = e->fits,
		                       .tpot_s = e->tpot_s,
		                       .within = e->within,
		                       .cost_s = pred_score(p, e) };
}

/* The usable server r may go to with the longest context (an unknown
 * max_model_len, 0, counts as the longest); -1: none usable. */
static int pred_largest(const struct dbk_pred *p, const struct dbk_pred_request *r)
{
	int largest = -1;

	for (unsigned i = 0; i < p->c.nservers; i++) {
		const struct pred_srv *s = &p->s[i];
		if (s->state != DBK_PRED_UP || !dbk_bal_eligible(r->eligible, i))
			continue;
		if (largest < 0 ||
		    (p->s[largest].max_model_len != 0 &&
		     (s->max_model_len == 0 || s->max_model_len > p->s[largest].max_model_len)))
			largest = (int)i;
	}
	return largest;
}

/* Whether s's context may take r, needing need tokens: it holds them,
 * and when r's length is only a floor its context is the longest
 * (longest: pred_largest's max_model_len). A long prompt sent chunked
 * would otherwise be taken for its first buffer and go where vLLM
 * refuses it (400: longer than max_model_len). */
static bool pred_takes(const struct pred_srv *s, const struct dbk_pred_request *r, double need,
                       uint32_t longest)
{
	return pred_holds(s, need) && (!r->unsized || s->max_model_len == longest);
}

int dbk_pred_choose(struct dbk_pred *p, const struct dbk_pred_request *r, uint64_t now_ms,
                    struct dbk_pred_choice *c)
{
	unsigned n = p->c.nservers;
	double need = pred_prompt(r) +
	              (isfinite(r->max_tokens) && r->max_tokens > 0 ? r->max_tokens : 0);
	int largest = pred_largest(p, r);

	*c = (struct dbk_pred_choice){ .server = -1, .reason = DBK_PRED_NO_SERVER };
	pred_slow_fresh(p);
	if (largest < 0)
		return -1;
	uint32_t longest = p->s[largest].max_model_len;
	/* The longest context holds r if any usable one does. */
	if (!pred_holds(&p->s[largest], need)) {
		struct pred_eval e;
		pred_eval(p, (unsigned)largest, r, 0, now_ms, &e);
		*c = (struct dbk_pred_choice){ .server = largest,
			                       .reason = DBK_PRED_TOO_LONG,
			                       .ttft_s = e.ttft_s,
			                       .own_s = e.own_s,
			                       .kv_fits = e.fits };
		return largest;
	}

	struct pred_match m;
	pred_match(p, r, &m);

	struct pred_eval best = { 0 };
	int bi = -1;
	uint64_t tie = pred_tie_key(p, r);
	double share = dbk_pred_unseen_share(p, now_ms);
	bool any_within = false;
	for (unsigned i = 0; i < n; i++) {
		const struct pred_srv *s = &p->s[i];
		struct pred_eval *e = &p->x->ev[i];
		e->ok = false;
		if (s->state != DBK_PRED_UP || !pred_takes(s, r, need, longest) ||
		    !dbk_bal_eligible(r->eligible, i))
			continue;
		pred_eval(p, i, r, pred_hit(p, r, &m, i), now_ms, e);
		e->ok = true;
		/* Without its wait for KV room, which the books overstate
		 * where running requests share blocks (each counted whole):
		 * taken as lost on that wait, agentic sessions' turns went to
		 * servers already slow (agentic 201 with admission at 2x:
		 * -4.4% goodput). */
		any_within = any_within || e->within ||
		             (e->ttft_s <= p->c.ttft_slo_s && e->tpot_s <= p->c.tpot_slo_s);
	}
	for (unsigned i = 0; i < n; i++) {
		const struct pred_srv *s = &p->s[i];
		struct pred_eval *e = &p->x->ev[i];
		/* Within the objectives nowhere: weighed first by what it
		 * costs the others (pred_score, here and in the spread). */
		e->lost = !any_within;
		if (!e->ok)
			continue;
		/* Fitting servers first (a request that does not fit beside
		 * what is committed queues or preempts), then those within
		 * the objectives, then the least cost. */
		int ce = pred_class(e), cb = pred_class(&best);
		bool better = bi < 0 || ce > cb ||
		              (ce == cb && pred_score(p, e) < pred_score(p, &best) - 1e-9) ||
		              (ce == cb && fabs(pred_score(p, e) - pred_score(p, &best)) <= 1e-9 &&
		               (s->inflight < p->s[bi].inflight ||
		                (s->inflight == p->s[bi].inflight &&
		                 dbk_pred_tie(tie, i) > dbk_pred_tie(tie, (unsigned)bi))));
		if (better) {
			best = *e;
			bi = (int)i;
		}
	}
	p->x->level = -INFINITY;
	if (share > 0) {
		bi = dbk_pred_spread(p, bi, share, tie, now_ms);
		best = p->x->ev[bi];
	}
	pred_choice_of(p, bi, &best, c);
	return bi;
}

int dbk_pred_evaluate(struct dbk_pred *p, const struct dbk_pred_request *r, unsigned server,
                      uint64_t now_ms, struct dbk_pred_choice *c)
{
	double need = pred_prompt(r) +
	              (isfinite(r->max_tokens) && r->max_tokens > 0 ? r->max_tokens : 0);
	struct pred_eval e;
	/* The longest context, looked for only where it matters (a usable,
	 * eligible server makes one). */
	int largest = r->unsized ? pred_largest(p, r) : -1;
	uint32_t longest = largest >= 0 ? p->s[largest].max_model_len : 0;

	if (server >= p->c.nservers || p->s[server].state != DBK_PRED_UP ||
	    !pred_takes(&p->s[server], r, need, longest) || !dbk_bal_eligible(r->eligible, server))
		return -1;
	pred_slow_fresh(p);
	pred_eval(p, server, r, dbk_pred_commit_hit(p, r, server), now_ms, &e);
	pred_choice_of(p, (int)server, &e, c);
	return (int)server;
}

bool dbk_pred_better(const struct dbk_pred_choice *a, const struct dbk_pred_choice *b)
{
	int ca = 2 * a->kv_fits + a->within, cb = 2 * b->kv_fits + b->within;
	return ca > cb || (ca == cb && a->cost_s < b->cost_s);
}

/* The hit server is expected to give r, as choose saw it. */
double dbk_pred_commit_hit(const struct dbk_pred *p, const struct dbk_pred_request *r,
                           unsigned server)
{
	struct pred_match m;

	pred_match(p, r, &m);
	return pred_hit(p, r, &m, server);
}

bool dbk_pred_hit_shared(const struct dbk_pred *p, const struct dbk_pred_request *r,
                         unsigned server)
{
	struct dbk_pidx_hit k[PRED_MAX_HITS];
	size_t nkeys = r->keys ? r->nkeys : 0;
	size_t n = nkeys ? dbk_pidx_match(p->idx, r->keys, nkeys, k, PRED_MAX_HITS) : 0;
	const struct dbk_pidx_hit *h = pred_hit_on(k, n, server);

	return h && h->blocks < nkeys;
}
