/* The ttft predictor (agent/predict.h): hard rules, burst spreading,
 * prefix affinity and its limits, KV fit, scraped floors, the engine's
 * step-time shape, decoders stalled by long prefills, other balancers
 * (herds). */
#include <math.h>
#include <stdlib.h>

#include "check.h"
#include "model/engine_profile.h"
#include "predict.h"
#include "prefix_key.h"

static struct dbk_pred *fleet_weighing_stalls(unsigned n, double stall_weight)
{
	struct dbk_pred_config c;

	dbk_pred_config_default(&c, n);
	c.index_entries = 4096;
	c.stall_weight = stall_weight;
	return dbk_pred_new(&c);
}

static struct dbk_pred *fleet(unsigned n)
{
	struct dbk_pred_config c;

	dbk_pred_config_default(&c, n);
	return fleet_weighing_stalls(n, c.stall_weight);
}

static struct dbk_pred_request req(double prompt, double out)
{
	return (struct dbk_pred_request){ .prompt_tokens = prompt,
		                          .max_tokens = out,
		                          .ignore_eos = true };
}

/* choose + commit, as the agent does; returns the server. */
static int send(struct dbk_pred *p, const struct dbk_pred_request *r, uint64_t now,
                struct dbk_pred_ticket *t)
{
	struct dbk_pred_choice c;
	int s = dbk_pred_choose(p, r, now, &c);
	if (s >= 0)
		dbk_pred_commit(p, r, (unsigned)s, now, t);
	return s;
}

static void test_config_checked(void)
{
	struct dbk_pred_config c;
	char err[128];

	dbk_pred_config_default(&c, 4);
	CHECK(dbk_pred_config_check(&c, err, sizeof(err)) == 0);
	c.budget_tokens = 0;
	CHECK(dbk_pred_config_check(&c, err, sizeof(err)) != 0);
	CHECK(dbk_pred_new(&c) == NULL);
	dbk_pred_config_default(&c, 0);
	CHECK(dbk_pred_config_check(&c, err, sizeof(err)) != 0);
	dbk_pred_config_default(&c, 4);
	c.t_cpu_s = -1;
	CHECK(dbk_pred_config_check(&c, err, sizeof(err)) != 0);
	dbk_pred_config_default(&c, 4);
	c.stall_weight = -0.1;
	CHECK(dbk_pred_config_check(&c, err, sizeof(err)) != 0);
	c.stall_weight = INFINITY;
	CHECK(dbk_pred_config_check(&c, err, sizeof(err)) != 0);
	c.stall_weight = 0;
	CHECK(dbk_pred_config_check(&c, err, sizeof(err)) == 0);
	c.late_weight = -1;
	CHECK(dbk_pred_config_check(&c, err, sizeof(err)) != 0);
	c.late_weight = NAN;
	CHECK(dbk_pred_config_check(&c, err, sizeof(err)) != 0);
	c.late_weight = 0; /* admission's */
	CHECK(dbk_pred_config_check(&c, err, sizeof(err)) == 0);
}

/* The predictor's engine is the stub's default one: the same profile,
 * not a copy of its numbers. */
static void test_defaults_are_the_h100_profile(void)
{
	const struct dbk_engine_profile *h = dbk_engine_profile_find("h100");
	const struct dbk_engine_profile *a = dbk_engine_profile_find("a100");
	struct dbk_pred_config c;

	CHECK(h != NULL && a != NULL && h != a);
	CHECK(dbk_engine_profile_find("tpu") == NULL);
	CHECK(dbk_engine_profile_find(NULL) == NULL);
	if (!h)
		return;
	dbk_pred_config_default(&c, 4);
	CHECK_NEAR(c.budget_tokens, h->default_max_num_batched_tokens, 0);
	CHECK_NEAR(c.t_cpu_s, h->t_cpu_s, 0);
	CHECK_NEAR(c.t_weights_s, h->t_weights_s, 0);
	CHECK_NEAR(c.lin_tokens_per_s, h->r_lin_tok_s, 0);
	CHECK_NEAR(c.attn_flops, h->f_attn_flops, 0);
	CHECK_NEAR(c.kv_read_bw, h->kv_read_bw, 0);
	CHECK_NEAR(c.kv_tokens, (double)h->default_kv_capacity_tokens, 0);
	CHECK_NEAR(c.attn_flop_per_pair, DBK_MODEL_ATTN_FLOPS_PER_PAIR, 0);
	CHECK_NEAR(c.kv_bytes_per_token, DBK_MODEL_KV_BYTES_PER_TOKEN, 0);
	/* The numbers the predictor was tuned with. */
	CHECK_NEAR(c.budget_tokens, 8192, 0);
	CHECK_NEAR(c.kv_tokens, 430000, 0);
}

static void test_a_burst_spreads(void)
{
	struct dbk_pred *p = fleet(4);
	struct dbk_pred_request r = req(2000, 200);
	struct dbk_pred_ticket t[8];
	unsigned seen[4] = { 0 };

	/* Eight requests in the same millisecond: two each, never three. */
	for (int i = 0; i < 8; i++) {
		int s = send(p, &r, 1000, &t[i]);
		CHECK(s >= 0 && s < 4);
		if (s >= 0)
			seen[s]++;
	}
	for (int i = 0; i < 4; i++)
		CHECK_EQ_U(seen[i], 2);
	for (int i = 0; i < 8; i++)
		dbk_pred_release(p, &t[i], 2000);
	struct dbk_pred_view v;
	for (unsigned i = 0; i < 4; i++) {
		dbk_pred_view(p, i, 2000, &v);
		CHECK_EQ_U(v.inflight, 0);
		CHECK(v.kv_committed == 0);
	}
	dbk_pred_free(p);
}

/* The requests still prefilling, as the view reports them, against a
 * count of the predicted ends taken from the queue after each commit:
 * past the FIFO's 256 entries (the newest absorbs the rest), and after
 * later commits drop the ended ones from its head. */
static unsigned ends_after(const double *end, unsigned n, double t)
{
	unsigned c = 0;

	for (unsigned i = 0; i < n; i++)
		c += end[i] > t;
	return c;
}

static void test_prefilling_counted(void)
{
	enum { FIRST = 300, LATER = 40 };
	struct dbk_pred *p = fleet(1);
	struct dbk_pred_request r = req(3000, 10);
	struct dbk_pred_ticket t;
	struct dbk_pred_view v;
	static double end[FIRST + LATER];

	for (unsigned i = 0; i < FIRST; i++) {
		dbk_pred_commit(p, &r, 0, 0, &t);
		dbk_pred_view(p, 0, 0, &v);
		end[i] = v.queue_s;
	}
	/* Absorbed requests end with the newest entry. */
	for (unsigned i = 255; i < FIRST; i++)
		end[i] = end[FIRST - 1];
	CHECK_EQ_U(v.prefilling, FIRST);
	unsigned bad = 0;
	for (uint64_t ms = 0; ms <= (uint64_t)(end[FIRST - 1] * 1000) + 2; ms += 7) {
		dbk_pred_view(p, 0, ms, &v);
		bad += v.prefilling != ends_after(end, FIRST, (double)ms / 1000);
	}
	CHECK_EQ_U(bad, 0);
	/* Later commits pop the ended entries; the count goes on. */
	uint64_t later = (uint64_t)(end[100] * 1000);
	for (unsigned i = FIRST; i < FIRST + LATER; i++) {
		dbk_pred_commit(p, &r, 0, later, &t);
		dbk_pred_view(p, 0, later, &v);
		end[i] = v.queue_s + (double)later / 1000;
	}
	bad = 0;
	for (uint64_t ms = later; ms <= (uint64_t)(end[FIRST + LATER - 1] * 1000) + 2; ms += 7) {
		double at = (double)ms / 1000;
		int near = 0;
		for (unsigned i = 0; i < FIRST + LATER; i++)
			near |= end[i] > at - 1e-6 && end[i] < at + 1e-6;
		dbk_pred_view(p, 0, ms, &v);
		bad += !near && v.prefilling != ends_after(end, FIRST + LATER, at);
	}
	CHECK_EQ_U(bad, 0);
	dbk_pred_free(p);
}

static void test_hard_rules(void)
{
	struct dbk_pred *p = fleet(4);
	struct dbk_pred_choice c;
	struct dbk_pred_ticket t;
	struct dbk_pred_request longr = req(40000, 100), shortr = req(100, 10);

	dbk_pred_set_max_model_len(p, 0, 32768);
	dbk_pred_set_max_model_len(p, 1, 32768);
	dbk_pred_set_max_model_len(p, 2, 131072);
	dbk_pred_set_max_model_len(p, 3, 131072);
	/* Load the long servers heavily: a long prompt still goes there. */
	for (int i = 0; i < 6; i++) {
		struct dbk_pred_request big = req(100000, 1000);
		CHECK(send(p, &big, 10, &t) >= 2);
	}
	for (int i = 0; i < 20; i++)
		CHECK(send(p, &longr, 20, &t) >= 2);
	/* Held by max_model_len exactly: prompt + max_tokens. */
	struct dbk_pred_request edge = req(32768 - 10, 10);
	dbk_pred_set_state(p, 2, DBK_PRED_DOWN);
	dbk_pred_set_state(p, 3, DBK_PRED_DRAIN);
	CHECK(dbk_pred_choose(p, &edge, 30, &c) <= 1 && c.reason == DBK_PRED_FASTEST);
	/* Nothing usable holds it: the largest usable, said so. */
	CHECK(dbk_pred_choose(p, &longr, 30, &c) <= 1);
	CHECK(c.reason == DBK_PRED_TOO_LONG);
	CHECK(dbk_pred_choose(p, &shortr, 30, &c) <= 1);
	dbk_pred_set_state(p, 0, DBK_PRED_DOWN);
	dbk_pred_set_state(p, 1, DBK_PRED_DOWN);
	CHECK(dbk_pred_choose(p, &shortr, 30, &c) == -1);
	CHECK(c.reason == DBK_PRED_NO_SERVER);
	dbk_pred_set_state(p, 3, DBK_PRED_UP);
	CHECK(dbk_pred_choose(p, &longr, 30, &c) == 3);
	dbk_pred_free(p);
}

/* The sample's keys of a conversation's turn: a turn repeats the earlier
 * turns, so every turn's sample (its first nblocks) is the same text. */
static size_t turn_keys(uint64_t *keys, unsigned conv, size_t nblocks)
{
	char body[64 * DBK_PKEY_BLOCK_BYTES + 64];
	size_t n = (size_t)snprintf(body, sizeof(body), "{\"prompt\":\"");
	for (size_t b = 0; b < nblocks; b++)
		for (size_t i = 0; i < DBK_PKEY_BLOCK_BYTES; i++)
			body[n++] = (char)('a' + (conv + b) % 26);
	struct dbk_pkey pk;
	return dbk_pkey_derive((const uint8_t *)body, n, keys, DBK_PKEY_MAX_KEYS, &pk);
}

static void test_a_conversation_returns_unless_overloaded(void)
{
	struct dbk_pred *p = fleet(4);
	struct dbk_pred_ticket t, tb[8];
	struct dbk_pred_choice c;
	uint64_t k1[64], k2[64];
	struct dbk_pred_request r1 = req(20000, 100), r2 = req(24000, 100);

	r1.keys = k1;
	r1.nkeys = turn_keys(k1, 3, 50);
	r1.keys_cut = true;
	r2.keys = k2;
	r2.nkeys = turn_keys(k2, 3, 50);
	r2.keys_cut = true;
	int first = send(p, &r1, 1000, &t);
	CHECK(first >= 0);
	dbk_pred_release(p, &t, 5000);
	/* Next turn, fleet idle: back to the server holding its prefix, which
	 * is expected to hit the whole previous prompt. */
	CHECK(dbk_pred_choose(p, &r2, 60000, &c) == first);
	CHECK(c.hit_tokens > 19000 && c.hit_tokens <= 20000);
	/* That server is now buried under long prefills: elsewhere. */
	for (int i = 0; i < 4; i++) {
		struct dbk_pred_request big = req(60000, 10);
		dbk_pred_commit(p, &big, (unsigned)first, 60000, &tb[i]);
	}
	CHECK(dbk_pred_choose(p, &r2, 60000, &c) != first);
	for (int i = 0; i < 4; i++)
		dbk_pred_release(p, &tb[i], 60000);
	/* Or its cache has turned over since: no hit expected. */
	for (int i = 0; i < 10; i++) {
		struct dbk_pred_request big = req(60000, 10);
		dbk_pred_commit(p, &big, (unsigned)first, 60000, &tb[0]);
		dbk_pred_release(p, &tb[0], 60000);
	}
	dbk_pred_choose(p, &r2, 60000, &c);
	CHECK(c.hit_tokens == 0);
	dbk_pred_free(p);
}

static void test_kv_fit_comes_first(void)
{
	struct dbk_pred *p = fleet(2);
	struct dbk_pred_ticket t;
	struct dbk_pred_choice c;
	struct dbk_pred_scrape sc = { .ok = true,
		                      .running = 0,
		                      .waiting = 0,
		                      .kv_usage = 0,
		                      .kv_capacity_tokens = 100000,
		                      .prefix_queries = -1,
		                      .prefix_hits = -1 };

	dbk_pred_scraped(p, 0, &sc, 0);
	dbk_pred_scraped(p, 1, &sc, 0);
	/* Server 0: long outputs committed, nearly all its KV; its prefill
	 * queue empties long before they end. */
	struct dbk_pred_request fill = req(1000, 90000);
	dbk_pred_commit(p, &fill, 0, 0, &t);
	/* Server 1: a queue of prefills, KV free. */
	struct dbk_pred_request q = req(30000, 10);
	dbk_pred_commit(p, &q, 1, 500, &t);
	struct dbk_pred_request r = req(8000, 4000);
	CHECK(dbk_pred_choose(p, &r, 500, &c) == 1);
	CHECK(c.kv_fits);
	dbk_pred_free(p);
}

static void test_scrapes_show_other_balancers(void)
{
	struct dbk_pred *p = fleet(2);
	struct dbk_pred_choice c;
	struct dbk_pred_view v;
	struct dbk_pred_request r = req(1000, 100);
	struct dbk_pred_scrape busy = { .ok = true,
		                        .running = 30,
		                        .waiting = 12,
		                        .kv_usage = 0.5,
		                        .kv_capacity_tokens = 0,
		                        .prefix_queries = 100,
		                        .prefix_hits = 25 };
	struct dbk_pred_scrape idle = busy;

	idle.running = idle.waiting = 0;
	idle.kv_usage = 0;
	dbk_pred_scraped(p, 0, &busy, 10000);
	dbk_pred_scraped(p, 1, &idle, 10000);
	CHECK(dbk_pred_choose(p, &r, 10050, &c) == 1);
	dbk_pred_view(p, 0, 10050, &v);
	CHECK(v.scraped);
	CHECK_EQ_U(v.scrape_age_ms, 50);
	CHECK_NEAR(v.others, 42, 1e-9);
	CHECK(v.queue_s > 0);
	CHECK_NEAR(v.hit_ratio, 0.25, 1e-9);
	CHECK_NEAR(v.kv_capacity, 430000, 1e-9);
	/* A failed scrape keeps the numbers until they are stale; then the
	 * books alone decide, and say so. */
	struct dbk_pred_scrape bad = { .ok = false };
	dbk_pred_scraped(p, 0, &bad, 10100);
	dbk_pred_view(p, 0, 10100, &v);
	CHECK(v.scraped);
	CHECK_EQ_U(v.scrape_failures, 1);
	dbk_pred_view(p, 0, 12000, &v);
	CHECK(!v.scraped);
	CHECK(v.others == 0);
	dbk_pred_free(p);
}

/* The engine lets a request go before HAProxy's completion line ends
 * its lease: a scrape out at that moment counts one the books have
 * ended. It is ours, not another balancer's, and its KV is free. */
static void test_an_end_racing_the_scrape_is_ours(void)
{
	struct dbk_pred *p = fleet(1);
	struct dbk_pred_ticket a, b;
	struct dbk_pred_view v;
	struct dbk_pred_request r = req(4000, 2000);
	struct dbk_pred_scrape sc = { .ok = true,
		                      .running = 2,
		                      .waiting = 0,
		                      .kv_capacity_tokens = 100000,
		                      .prefix_queries = -1,
		                      .prefix_hits = -1,
		                      .ttft_sum_s = -1,
		                      .ttft_count = -1 };

	dbk_pred_commit(p, &r, 0, 1000, &a);
	dbk_pred_commit(p, &r, 0, 1000, &b);
	dbk_pred_view(p, 0, 1000, &v);
	double both_kv = v.kv_committed;
	CHECK(both_kv > 0);
	sc.kv_usage = both_kv / 100000;
	/* Sent at 2000, a's end at 2010, the answer at 2020. */
	sc.sent_ms = 2000;
	dbk_pred_release(p, &a, 2010);
	dbk_pred_scraped(p, 0, &sc, 2020);
	dbk_pred_view(p, 0, 2030, &v);
	CHECK(v.others == 0);
	CHECK(v.kv_committed < both_kv * 0.75);
	/* An end before the scrape went out: the engine had let it go, so
	 * a count of two is someone else's request. */
	dbk_pred_commit(p, &r, 0, 3000, &a);
	dbk_pred_release(p, &a, 3010);
	sc.sent_ms = 3020;
	dbk_pred_scraped(p, 0, &sc, 3030);
	dbk_pred_view(p, 0, 3030, &v);
	CHECK_NEAR(v.others, 1, 1e-9);
	/* Without a send time the scrape is taken as of its answer. */
	sc.sent_ms = 0;
	dbk_pred_commit(p, &r, 0, 4000, &a);
	dbk_pred_release(p, &a, 4010);
	dbk_pred_scraped(p, 0, &sc, 4020);
	dbk_pred_view(p, 0, 4020, &v);
	CHECK_NEAR(v.others, 1, 1e-9);
	dbk_pred_release(p, &b, 5000);
	dbk_pred_free(p);
}

static void test_prefill_priced_as_the_engine(void)
{
	struct dbk_pred *p = fleet(1);
	struct dbk_pred_choice c;
	struct dbk_pred_request r32 = req(32768, 1), r1 = req(1024, 1), r131 = req(131072, 1);

	/* ENGINE-MODEL.md: idle H100, ~24 ms for 1k, ~1.4 s for 32k, ~14 s
	 * for 131k. */
	dbk_pred_choose(p, &r1, 0, &c);
	CHECK(c.ttft_s > 0.015 && c.ttft_s < 0.035);
	dbk_pred_choose(p, &r32, 0, &c);
	CHECK(c.ttft_s > 1.1 && c.ttft_s < 1.7);
	dbk_pred_choose(p, &r131, 0, &c);
	CHECK(c.ttft_s > 12 && c.ttft_s < 16);
	/* Queued work ahead adds up, and drains with time. */
	struct dbk_pred_ticket t;
	dbk_pred_commit(p, &r32, 0, 0, &t);
	dbk_pred_choose(p, &r1, 0, &c);
	CHECK(c.ttft_s > 1.1 + 0.015);
	dbk_pred_choose(p, &r1, 1000, &c);
	CHECK(c.ttft_s < 1.1);
	dbk_pred_free(p);
}

/* Server 0 decodes a batch of 40 with nothing queued; server 1 decodes
 * nothing but has an 8k prefill queued. */
static void batch_or_queue(struct dbk_pred *p)
{
	struct dbk_pred_ticket t;
	struct dbk_pred_request small = req(200, 2000), queued = req(8000, 10);

	for (int i = 0; i < 40; i++)
		dbk_pred_commit(p, &small, 0, 0, &t);
	dbk_pred_commit(p, &queued, 1, 5000, &t);
}

static void test_a_long_prefill_spares_a_batch(void)
{
	struct dbk_pred *greedy = fleet_weighing_stalls(2, 0), *p = fleet(2);
	struct dbk_pred_request longp = req(30000, 100), shortp = req(2000, 100);
	struct dbk_pred_choice c, g;

	batch_or_queue(greedy);
	batch_or_queue(p);
	/* The first token alone: the batch's server, free to start now. */
	CHECK(dbk_pred_choose(greedy, &longp, 5000, &g) == 0);
	/* With the 40 decoders' stall (four steps of a whole budget each)
	 * weighed in: the queue, whose first token is not much later (both
	 * within the TTFT objective: a 40k prompt behind the queue would
	 * not be, and would go where it is). */
	CHECK(dbk_pred_choose(p, &longp, 5000, &c) == 1);
	CHECK(c.ttft_s > g.ttft_s);
	CHECK(c.ttft_s < g.ttft_s + 0.5);
	/* The reported first token is the prediction, not the weighed cost:
	 * the same server with or without the weight. */
	struct dbk_pred_choice c1, g1;
	CHECK(dbk_pred_choose(greedy, &shortp, 5000, &g1) == 0);
	/* A prefill of one step stalls nobody for long: greedy. */
	CHECK(dbk_pred_choose(p, &shortp, 5000, &c1) == 0);
	CHECK_NEAR(c1.ttft_s, g1.ttft_s, 1e-12);
	dbk_pred_free(greedy);
	dbk_pred_free(p);
}

/* Every server scraped at now: running = our books there + others. */
static void scrape_all(struct dbk_pred *p, unsigned n, const unsigned *own, double others,
                       uint64_t now)
{
	for (unsigned i = 0; i < n; i++) {
		struct dbk_pred_scrape sc = { .ok = true,
			                      .running = own[i] + others,
			                      .waiting = 0,
			                      .kv_usage = 0,
			                      .kv_capacity_tokens = 430000,
			                      .prefix_queries = -1,
			                      .prefix_hits = -1 };
		dbk_pred_scraped(p, i, &sc, now);
	}
}

/* Fills p's books as {12, 10, 10, 8} requests at t = 0 (40 in a burst:
 * our rate is high) and scrapes them with `others` more on each server
 * at 100 and 200 ms (a 100 ms period). */
static void herd_setup(struct dbk_pred *p, double others, uint64_t scrape_ms)
{
	static const unsigned own[4] = { 12, 10, 10, 8 };
	struct dbk_pred_ticket t;

	for (unsigned i = 0; i < 4; i++)
		for (unsigned k = 0; k < own[i]; k++) {
			struct dbk_pred_request r = req(1000, 1000);
			dbk_pred_commit(p, &r, i, 0, &t);
		}
	scrape_all(p, 4, own, others, scrape_ms - 100);
	scrape_all(p, 4, own, others, scrape_ms);
}

/* How many servers 20 different requests (sessions) would go to. */
static unsigned distinct_choices(struct dbk_pred *p, uint64_t now)
{
	bool used[4] = { false };
	unsigned n = 0;

	for (uint64_t k = 1; k <= 20; k++) {
		struct dbk_pred_request r = req(2000, 100);
		struct dbk_pred_choice c;
		r.session = k * 0x9e3779b97f4a7c15ULL;
		int s = dbk_pred_choose(p, &r, now, &c);
		CHECK(s >= 0 && s < 4);
		if (s >= 0 && s < 4 && !used[s]) {
			used[s] = true;
			n++;
		}
		/* The same request, the same server. */
		CHECK(dbk_pred_choose(p, &r, now, &c) == s);
	}
	return n;
}

static void test_a_herd_spreads_only_when_large(void)
{
	struct dbk_pred *alone = fleet(4), *herd = fleet(4), *trickle = fleet(4);

	/* Alone (the scrapes show our books only): greedy, the same least
	 * loaded server for all. */
	herd_setup(alone, 0, 200);
	CHECK_EQ_U(distinct_choices(alone, 250), 1);
	/* Three times our load from others, and our 40 requests of the last
	 * second: ~90 of theirs per scrape period against 4 servers. Spread,
	 * each request by its own hash. */
	herd_setup(herd, 30, 200);
	CHECK(distinct_choices(herd, 250) >= 3);
	/* The same others, but our requests long past: few of theirs per
	 * period, greedy again. */
	herd_setup(trickle, 30, 10000);
	CHECK_EQ_U(distinct_choices(trickle, 10050), 1);
	dbk_pred_free(alone);
	dbk_pred_free(herd);
	dbk_pred_free(trickle);
}

/* An idle server's scrape with these first-token totals (-1: not
 * exported). */
static struct dbk_pred_scrape idle_scrape(double ttft_sum_s, double ttft_count)
{
	return (struct dbk_pred_scrape){ .ok = true,
		                         .kv_capacity_tokens = -1,
		                         .prefix_queries = -1,
		                         .prefix_hits = -1,
		                         .ttft_sum_s = ttft_sum_s,
		                         .ttft_count = ttft_count };
}

/* Sends n lone requests to server i, one a second from *now (each on an
 * idle server, so each predicted alike), ending each the moment it was
 * sent (a duration of 0 teaches nothing: only the histogram speaks
 * here; test_predict_learn.c has the requests'); then a scrape whose
 * first-token totals grew by n TTFTs of mean_s each. */
static void served(struct dbk_pred *p, unsigned i, unsigned n, double mean_s, uint64_t *now,
                   double *sum, double *count)
{
	struct dbk_pred_request r = req(2000, 10);
	struct dbk_pred_ticket t;

	for (unsigned k = 0; k < n; k++, *now += 1000) {
		dbk_pred_commit(p, &r, i, *now, &t);
		dbk_pred_release(p, &t, *now);
	}
	*sum += n * mean_s;
	*count += n;
	struct dbk_pred_scrape sc = idle_scrape(*sum, *count);

	dbk_pred_scraped(p, i, &sc, *now);
}

static double slowness(const struct dbk_pred *p, unsigned i)
{
	struct dbk_pred_view v;

	dbk_pred_view(p, i, 0, &v);
	return v.slowness;
}

/* A fleet of mixed GPUs: a server whose first tokens come three times
 * later than those of another, for the same requests, is priced about
 * three times slower than it (each against the fleet's median; the
 * prior of 4 requests pulls a little towards it), from the first
 * scrape that shows them; the choice follows. */
static void test_a_slow_server_learnt(void)
{
	struct dbk_pred *p = fleet(2);
	double sum[2] = { 0, 0 }, count[2] = { 0, 0 };
	uint64_t now = 1000;
	struct dbk_pred_choice c;
	struct dbk_pred_request r = req(2000, 1000);

	/* A first scrape only sets where the totals start. */
	served(p, 0, 0, 0, &now, &sum[0], &count[0]);
	served(p, 1, 0, 0, &now, &sum[1], &count[1]);
	/* One scrape's first tokens teach, however few (40, where a sample
	 * needed 64 before each scrape's were matched to our requests). */
	served(p, 0, 40, 0.1, &now, &sum[0], &count[0]);
	served(p, 1, 40, 0.3, &now, &sum[1], &count[1]);
	CHECK(slowness(p, 1) / slowness(p, 0) > 2.5);
	served(p, 0, 40, 0.1, &now, &sum[0], &count[0]);
	served(p, 1, 40, 0.3, &now, &sum[1], &count[1]);
	double learnt = slowness(p, 1), apart = learnt / slowness(p, 0);
	CHECK_NEAR(slowness(p, 0) * learnt, 1, 0.05);
	CHECK(apart > 3 * 0.9 && apart < 3 * 1.1);
	/* Idle both, the fast one; with one request queued on it (its own
	 * prefill, a third of the slow one's) still the fast one; with
	 * three, the slow one. */
	CHECK(dbk_pred_choose(p, &r, now, &c) == 0);
	struct dbk_pred_ticket t[3];
	dbk_pred_commit(p, &r, 0, now, &t[0]);
	CHECK(dbk_pred_choose(p, &r, now, &c) == 0);
	dbk_pred_commit(p, &r, 0, now, &t[1]);
	dbk_pred_commit(p, &r, 0, now, &t[2]);
	CHECK(dbk_pred_choose(p, &r, now, &c) == 1);
	for (unsigned k = 0; k < 3; k++)
		dbk_pred_release(p, &t[k], now);
	now += 1000;

	/* The server restarted (its totals went back): that sample is
	 * dropped, what was learnt stays. */
	sum[1] = count[1] = 0;
	served(p, 1, 80, 0.1, &now, &sum[1], &count[1]);
	CHECK_NEAR(slowness(p, 1), learnt, 1e-9);
	/* Then equal first tokens bring the two closer: the older samples
	 * fade (PRED_LEARN_HORIZON), but count still. */
	served(p, 0, 80, 0.1, &now, &sum[0], &count[0]);
	served(p, 1, 80, 0.1, &now, &sum[1], &count[1]);
	double ratio = slowness(p, 1) / slowness(p, 0);
	CHECK(ratio > 1.5 && ratio < apart * 0.9);
	dbk_pred_free(p);
}

/* Servers within 20% of the fleet's speed (PRED_SPEED_BAND) are priced
 * as the fleet: an equal fleet's samples differ that much by their mix
 * of requests alone. Two servers 1.3 apart are each 1.14 from their
 * median, in the band; 1.7 apart, 1.3, out of it. */
static double slowness_of_pair(double ratio)
{
	struct dbk_pred *p = fleet(2);
	double sum[2] = { 0, 0 }, count[2] = { 0, 0 };
	uint64_t now = 1000;

	served(p, 0, 0, 0, &now, &sum[0], &count[0]);
	served(p, 1, 0, 0, &now, &sum[1], &count[1]);
	served(p, 0, 80, 0.1, &now, &sum[0], &count[0]);
	served(p, 1, 80, 0.1 * ratio, &now, &sum[1], &count[1]);
	double s1 = slowness(p, 1);
	CHECK(s1 == 1 || fabs(slowness(p, 0) * s1 - 1) < 0.05);
	dbk_pred_free(p);
	return s1;
}

static void test_near_equal_servers_stay_at_one(void)
{
	CHECK_NEAR(slowness_of_pair(1.3), 1, 1e-12);
	CHECK_NEAR(slowness_of_pair(1.7), sqrt(1.7), 0.05);
}

/* A server that does not export the histogram, or a fleet that serves
 * alike, is priced as the fleet. */
static void test_equal_or_silent_servers_stay_at_one(void)
{
	struct dbk_pred *p = fleet(3);
	double sum[3] = { 0 }, count[3] = { 0 };
	uint64_t now = 1000;

	for (unsigned round = 0; round < 3; round++)
		for (unsigned i = 0; i < 2; i++)
			served(p, i, 80, 0.2, &now, &sum[i], &count[i]);
	struct dbk_pred_scrape silent = idle_scrape(-1, -1);

	dbk_pred_scraped(p, 2, &silent, now);
	for (unsigned i = 0; i < 3; i++)
		CHECK_NEAR(slowness(p, i), 1, 1e-9);
	dbk_pred_free(p);
}

/* Operator weights are the speed prior until a speed is learnt; a
 * reset slot forgets its weight, its scrape and its speed. */
static void test_weight_prior_and_reset(void)
{
	struct dbk_pred *p = fleet(3);
	struct dbk_pred_view v;
	struct dbk_pred_scrape sc = { .ok = true,
		                      .running = 0,
		                      .waiting = 0,
		                      .kv_usage = 0,
		                      .kv_capacity_tokens = 1000,
		                      .prefix_queries = -1,
		                      .prefix_hits = -1,
		                      .ttft_sum_s = -1,
		                      .ttft_count = -1 };

	dbk_pred_set_weight(p, 0, 10);
	dbk_pred_set_weight(p, 1, 3);
	dbk_pred_view(p, 0, 0, &v);
	CHECK_NEAR(v.slowness, sqrt(30.0) / 10.0, 1e-12);
	dbk_pred_view(p, 1, 0, &v);
	CHECK_NEAR(v.slowness, sqrt(30.0) / 3.0, 1e-12);
	dbk_pred_view(p, 2, 0, &v);
	CHECK_NEAR(v.slowness, 1, 0); /* no weight: the fleet's */
	/* Fastest first on an idle fleet: the heaviest. */
	struct dbk_pred_request r = { .prompt_tokens = 4000, .max_tokens = 16 };
	struct dbk_pred_choice c;
	CHECK_EQ_U(dbk_pred_choose(p, &r, 0, &c), 0);
	dbk_pred_scraped(p, 1, &sc, 5);
	dbk_pred_view(p, 1, 5, &v);
	CHECK(v.scraped && v.kv_capacity == 1000);
	dbk_pred_reset(p, 1);
	dbk_pred_view(p, 1, 5, &v);
	CHECK(!v.scraped && v.kv_capacity != 1000);
	CHECK_NEAR(v.slowness, 1, 0);
	dbk_pred_view(p, 0, 5, &v);
	CHECK_NEAR(v.slowness, 1, 0); /* alone with a weight: the fleet */
	dbk_pred_free(p);
}

int main(void)
{
	RUN(test_weight_prior_and_reset);
	RUN(test_config_checked);
	RUN(test_defaults_are_the_h100_profile);
	RUN(test_a_burst_spreads);
	RUN(test_prefilling_counted);
	RUN(test_hard_rules);
	RUN(test_a_conversation_returns_unless_overloaded);
	RUN(test_kv_fit_comes_first);
	RUN(test_scrapes_show_other_balancers);
	RUN(test_an_end_racing_the_scrape_is_ours);
	RUN(test_prefill_priced_as_the_engine);
	RUN(test_a_long_prefill_spares_a_batch);
	RUN(test_a_herd_spreads_only_when_large);
	RUN(test_a_slow_server_learnt);
	RUN(test_near_equal_servers_stay_at_one);
	RUN(test_equal_or_silent_servers_stay_at_one);
	return CHECK_DONE();
}
