/* The ttft predictor's view of a server's cache (agent/predict.h): a
 * conversation's next turn is expected to hit its own session's earlier
 * prompt, not another's behind the same long system prompt; a request
 * in flight pins its whole prompt, the part its prefix hit included,
 * while a newcomer's cached prefix is already where it hits, and only a
 * long fresh prefill must find room (a short one waits, never
 * preempts); a prefix that requests in flight share is pinned once. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "predict.h"
#include "prefix_key.h"

/* Two servers of kv tokens each, as their scrapes say, told a step
 * budget of budget tokens (0: the default). */
static struct dbk_pred *fleet_told(double kv, double budget)
{
	struct dbk_pred_config c;
	struct dbk_pred_scrape sc = { .ok = true,
		                      .running = 0,
		                      .waiting = 0,
		                      .kv_usage = 0,
		                      .kv_capacity_tokens = kv,
		                      .prefix_queries = -1,
		                      .prefix_hits = -1 };

	dbk_pred_config_default(&c, 2);
	c.index_entries = 4096;
	if (budget > 0)
		c.budget_tokens = budget;
	struct dbk_pred *p = dbk_pred_new(&c);
	if (p) {
		dbk_pred_scraped(p, 0, &sc, 0);
		dbk_pred_scraped(p, 1, &sc, 0);
	}
	return p;
}

static struct dbk_pred *fleet(double kv) { return fleet_told(kv, 0); }

static struct dbk_pred_request req(double prompt, double out)
{
	return (struct dbk_pred_request){ .prompt_tokens = prompt,
		                          .max_tokens = out,
		                          .ignore_eos = true };
}

/* A prompt of prompt tokens whose sample is blocks key blocks, the
 * first common of them the same text in every such prompt (a system
 * prompt), the rest own's: the prompt goes on past the sample. */
static struct dbk_pred_request sample_of(uint64_t *keys, size_t blocks, size_t common, unsigned own,
                                         double prompt)
{
	char body[64 * DBK_PKEY_BLOCK_BYTES + 64];
	size_t n = (size_t)snprintf(body, sizeof(body), "{\"prompt\":\"");
	struct dbk_pred_request r = req(prompt, 100);
	struct dbk_pkey pk;

	for (size_t b = 0; b < blocks; b++)
		for (size_t i = 0; i < DBK_PKEY_BLOCK_BYTES; i++)
			body[n++] = (char)(b < common ? 'a' + (7 + b) % 26 : 'a' + (own + i) % 26);
	r.keys = keys;
	r.nkeys = dbk_pkey_derive((const uint8_t *)body, n, keys, DBK_PKEY_MAX_KEYS, &pk);
	r.keys_cut = true;
	return r;
}

/* A turn of a conversation of session (0: none) behind a system prompt
 * longer than the sample: every such turn's sample is the same text,
 * cut. */
static struct dbk_pred_request turn_of(uint64_t *keys, uint64_t session, double prompt)
{
	struct dbk_pred_request r = sample_of(keys, 50, 50, 0, prompt);

	r.session = session;
	return r;
}

static struct dbk_pred_request turn(uint64_t *keys, double prompt)
{
	return turn_of(keys, 0, prompt);
}

/* Past the sample, a conversation's earlier prompt is its own
 * session's. */
static void test_a_turn_hits_its_own_history(void)
{
	struct dbk_pred *p = fleet(430000);
	uint64_t ka[DBK_PKEY_MAX_KEYS], kb[DBK_PKEY_MAX_KEYS], kn[DBK_PKEY_MAX_KEYS];
	struct dbk_pred_request a1 = turn_of(ka, 11, 30000), b1 = turn_of(kb, 22, 40000);
	struct dbk_pred_request a2 = turn_of(kn, 11, 31000);
	struct dbk_pred_ticket t;
	struct dbk_pred_choice c;
	double sample = (double)a1.nkeys * DBK_PKEY_BLOCK_TOKENS;

	CHECK(p);
	if (!p)
		return;
	/* Conversation 11 on server 0, then conversation 22, longer, on
	 * server 1: both sent the same sample. */
	dbk_pred_commit(p, &a1, 0, 1000, &t);
	dbk_pred_release(p, &t, 5000);
	dbk_pred_commit(p, &b1, 1, 6000, &t);
	dbk_pred_release(p, &t, 9000);
	/* 11's next turn: its history is on server 0; on server 1 only the
	 * sample's text (the system prompt) is. */
	CHECK(dbk_pred_evaluate(p, &a2, 1, 60000, &c) == 1);
	CHECK(c.hit_tokens <= sample);
	CHECK(dbk_pred_evaluate(p, &a2, 0, 60000, &c) == 0);
	CHECK(c.hit_tokens > 29000);
	CHECK(dbk_pred_choose(p, &a2, 60000, &c) == 0);
	CHECK(c.hit_tokens > 29000);
	/* Without a session the sample is all there is to go by: the
	 * latest prompt that sent it, as before. */
	a2.session = 0;
	CHECK(dbk_pred_evaluate(p, &a2, 1, 60000, &c) == 1);
	CHECK(c.hit_tokens > 30000);
	dbk_pred_free(p);
}

/* A session's first turn of first tokens ended on server 0; its next
 * turn, prompt tokens and nearly all of them a hit, sent there at 60 s. */
static void second_turn_on_0(struct dbk_pred *p, double first, double prompt,
                             struct dbk_pred_ticket *t)
{
	uint64_t k1[DBK_PKEY_MAX_KEYS], k2[DBK_PKEY_MAX_KEYS];
	struct dbk_pred_request r1 = turn(k1, first), r2 = turn(k2, prompt);
	struct dbk_pred_choice c;

	dbk_pred_commit(p, &r1, 0, 1000, t);
	dbk_pred_release(p, t, 5000);
	CHECK(dbk_pred_evaluate(p, &r2, 0, 60000, &c) == 0);
	CHECK(c.hit_tokens > first - 1000);
	dbk_pred_commit_chosen(p, &r2, &c, 60000, t);
}

/* Its hit is no less KV while it runs: counted as its new tokens only,
 * a server holding long sessions' turns looked nearly empty, took a long
 * fresh prompt beside them, and preempted. */
static void test_a_hit_pins_its_whole_prompt(void)
{
	struct dbk_pred *p = fleet(100000);
	struct dbk_pred_ticket t, q;
	struct dbk_pred_choice c;
	struct dbk_pred_view v;

	CHECK(p);
	if (!p)
		return;
	second_turn_on_0(p, 40000, 41000, &t);
	dbk_pred_view(p, 0, 60000, &v);
	CHECK(v.kv_committed >= 41000 && v.kv_committed <= 41200);
	/* Server 1 has a prefill queued, room beside it; on server 0 the
	 * fresh prompt would not fit beside the turn's 41,100 tokens. */
	struct dbk_pred_request queued = req(20000, 10), fresh = req(60000, 100);
	dbk_pred_commit(p, &queued, 1, 60000, &q);
	CHECK(dbk_pred_evaluate(p, &fresh, 0, 60100, &c) == 0);
	CHECK(!c.kv_fits);
	CHECK(dbk_pred_choose(p, &fresh, 60100, &c) == 1);
	CHECK(c.kv_fits);
	/* Its release gives back what its commit took. */
	dbk_pred_release(p, &t, 70000);
	dbk_pred_view(p, 0, 70000, &v);
	CHECK(v.kv_committed == 0);
	dbk_pred_free(p);
}

/* A request of pinned tokens decoding on server 0 since before a
 * session's first turn (its tokens do not age the session's prefix
 * there), the session's second turn of 41,000 tokens ended there: its
 * third turn, of prompt tokens, evaluated on server 0 into c. */
static void third_turn_of(struct dbk_pred *p, double pinned, double prompt,
                          struct dbk_pred_choice *c)
{
	struct dbk_pred_ticket t, b;
	uint64_t k[DBK_PKEY_MAX_KEYS];
	struct dbk_pred_request big = req(pinned, 100), next = turn(k, prompt);

	dbk_pred_commit(p, &big, 0, 500, &b);
	second_turn_on_0(p, 40000, 41000, &t);
	dbk_pred_release(p, &t, 61000);
	CHECK(dbk_pred_evaluate(p, &next, 0, 62000, c) == 0);
	CHECK(c->hit_tokens > 40000);
}

static void third_turn_beside(struct dbk_pred *p, double pinned, struct dbk_pred_choice *c)
{
	third_turn_of(p, pinned, 42000, c);
}

/* A turn whose context is cached where it goes takes only its new
 * tokens' room there: vLLM admits it with its hit blocks at once, and it
 * waits rather than preempts. Counted whole there too, a session left
 * its cache for a cold server, whose long fresh prefill, chunk by
 * chunk, preempted there instead (Mooncake at 16 instances). */
static void test_a_cached_turn_needs_its_new_tokens(void)
{
	struct dbk_pred *p = fleet(100000);
	struct dbk_pred_choice c;

	CHECK(p);
	if (!p)
		return;
	/* 55,100 pinned and 42,100 whole would pass 100,000; its 2,000 new
	 * tokens and output do not. */
	third_turn_beside(p, 55000, &c);
	CHECK(c.kv_fits);
	dbk_pred_free(p);
}

/* Where even its new tokens lack room, a turn mostly cached there whose
 * new tokens fit one step still ranks as fitting (it waits there for its
 * cache, admitted whole or not at all), while a long fresh prompt,
 * admitted by its first chunk and preempting for the rest, does not, nor
 * a short one with nothing cached there to wait for. */
static void test_only_a_long_fresh_prefill_needs_room(void)
{
	struct dbk_pred *p = fleet(100000);
	struct dbk_pred_choice c;
	struct dbk_pred_request fresh = req(20000, 100), short_fresh = req(2000, 100);

	CHECK(p);
	if (!p)
		return;
	third_turn_beside(p, 99000, &c);
	CHECK(c.kv_fits);
	CHECK(c.ttft_s > c.own_s); /* it waits for room */
	CHECK(dbk_pred_evaluate(p, &fresh, 0, 62000, &c) == 0);
	CHECK(!c.kv_fits);
	CHECK(dbk_pred_evaluate(p, &short_fresh, 0, 62000, &c) == 0);
	CHECK(!c.kv_fits);
	dbk_pred_free(p);
}

/* Request i behind a system prompt of 30 key blocks, its own text
 * after it within the sample. */
static struct dbk_pred_request behind(uint64_t *keys, unsigned i, double prompt)
{
	return sample_of(keys, 40, 30, i, prompt);
}

/* Short prompts behind one system prompt, in flight together: vLLM
 * holds the prefix they share once (ref-counted blocks), each one's own
 * tokens beside it. Counted per request, eight of them filled a server
 * of 20,000 tokens that holds them with room to spare. What it shares is
 * what its sample matched short of the whole sample. */
static void test_a_shared_prefix_is_pinned_once(void)
{
	struct dbk_pred *p = fleet(20000);
	uint64_t k[DBK_PKEY_MAX_KEYS];
	struct dbk_pred_request r = behind(k, 0, 3000), fresh = req(6000, 100);
	struct dbk_pred_ticket t[8];
	struct dbk_pred_choice c;
	struct dbk_pred_view v;
	double shared = 30.0 * DBK_PKEY_BLOCK_TOKENS, own = 3000 - shared + 100;

	CHECK(p);
	if (!p)
		return;
	/* The system prompt sent there once, ended. */
	dbk_pred_commit(p, &r, 0, 1000, &t[0]);
	dbk_pred_release(p, &t[0], 2000);
	for (unsigned i = 0; i < 8; i++) {
		r = behind(k, i + 1, 3000);
		dbk_pred_commit(p, &r, 0, 3000 + i, &t[i]);
	}
	dbk_pred_view(p, 0, 4000, &v);
	CHECK(fabs(v.kv_committed - (shared + 8 * own)) <= 8);
	CHECK(dbk_pred_evaluate(p, &fresh, 0, 4000, &c) == 0);
	CHECK(c.kv_fits);
	/* Released in any order, what each commit took comes back. */
	for (unsigned i = 0; i < 7; i++)
		dbk_pred_release(p, &t[i], 5000);
	dbk_pred_view(p, 0, 5000, &v);
	CHECK(fabs(v.kv_committed - (shared + own)) <= 2);
	dbk_pred_release(p, &t[7], 5000);
	dbk_pred_view(p, 0, 5000, &v);
	CHECK(v.kv_committed == 0);
	/* A whole sample matched may be each one's own history (Mooncake's
	 * turns): pinned whole by each. */
	r = turn(k, 3000);
	dbk_pred_commit(p, &r, 1, 6000, &t[0]);
	dbk_pred_release(p, &t[0], 7000);
	dbk_pred_commit(p, &r, 1, 8000, &t[0]);
	dbk_pred_commit(p, &r, 1, 8000, &t[1]);
	dbk_pred_view(p, 1, 8000, &v);
	CHECK(v.kv_committed >= 2 * 3100 - 2);
	dbk_pred_free(p);
}

/* How few new tokens a mostly cached turn must have to wait there is a
 * trait of the request, not of the server's step budget: told the
 * servers run 2,048-token steps, a turn with 6,000 new tokens after a
 * 40,000-token hit still waits for its own cache. Judged by the told
 * budget, such turns left their caches and agentic sessions lost 6-10%
 * of their SLO capacity (BENCHMARKS.md, "Stop 45: short prompts packed
 * into one step"). */
static void test_the_fit_is_not_the_told_budget(void)
{
	struct dbk_pred *p = fleet_told(100000, 2048), *q = fleet(100000);
	struct dbk_pred_choice cp, cq;

	CHECK(p && q);
	if (p && q) {
		third_turn_of(p, 99000, 47000, &cp);
		third_turn_of(q, 99000, 47000, &cq);
		CHECK(cp.hit_tokens + 2048 < 47000);
		CHECK(cp.kv_fits && cq.kv_fits);
		CHECK(cp.own_s > cq.own_s); /* the budget prices its steps */
	}
	dbk_pred_free(p);
	dbk_pred_free(q);
}

int main(void)
{
	RUN(test_a_turn_hits_its_own_history);
	RUN(test_a_hit_pins_its_whole_prompt);
	RUN(test_a_cached_turn_needs_its_new_tokens);
	RUN(test_only_a_long_fresh_prefill_needs_room);
	RUN(test_the_fit_is_not_the_told_budget);
	RUN(test_a_shared_prefix_is_pinned_once);
	return CHECK_DONE();
}
