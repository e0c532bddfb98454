/* The policy table (agent/policy_ops.h) and the policies in it that the
 * other tests do not reach through the route: p2ttft's draw and choice
 * (ranked as ttft ranks),
 * and the one row table behind /state and /metrics. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "policy_ops.h"
#include "policy_ttft.h"

static void test_the_table(void)
{
	const struct dbk_policy_ops *p, *q;
	size_t n = 0;

	CHECK(dbk_policy_at(0) != NULL && strcmp(dbk_policy_at(0)->name, "reference") == 0);
	CHECK(dbk_policy_at(0)->choose == NULL);
	CHECK(dbk_policy_find("p2ttft") != NULL);
	CHECK(dbk_policy_find("fastest") == NULL);
	for (size_t i = 0; (p = dbk_policy_at(i)) != NULL; i++, n++) {
		CHECK(dbk_policy_find(p->name) == p);
		CHECK(p->help && p->help[0]);
		/* A policy that chooses commits, and keeps its books with
		 * release. */
		CHECK(!p->choose || (p->commit && p->release && p->create && p->destroy));
		CHECK(!p->report || p->report->nrows <= DBK_POLICY_MAX_ROWS);
		for (size_t j = 0; (q = dbk_policy_at(j)) != NULL; j++)
			CHECK(j == i || strcmp(p->name, q->name) != 0);
	}
	CHECK(n >= 3);
}

static const struct dbk_bal_request est = { 4000, 100, true }; /* 1000 tokens */

static void *start(const char *name, unsigned n, uint64_t seed)
{
	const struct dbk_policy_env env = {
		.nservers = n, .engine_speed = 1.0, .stall_weight = -1, .seed = seed
	};

	return dbk_policy_find(name)->create(&env);
}

/* --max-num-batched-tokens reaches the predictor as the pool passes it
 * (pool.c), and prices a long prefill in that many tokens a step: four
 * times the steps at a quarter of the default budget, each step's fixed
 * cost paid again. Not given: the engine model's 8192. The queue is
 * packed into the told budget, untold or with admission not at all. */
static void test_ttft_told_the_budget(void)
{
	char *told_argv[] = { "dbucket-spoa", "--policy", "ttft", "--max-num-batched-tokens",
		              "2048",         "a",        NULL };
	char *plain_argv[] = { "dbucket-spoa", "--policy", "ttft", "a", NULL };
	struct dbk_config told_cfg, plain_cfg;
	char err[256];

	CHECK_EQ_U(dbk_config_parse(&told_cfg, 6, told_argv, err, sizeof(err)), DBK_CONFIG_OK);
	CHECK_EQ_U(dbk_config_parse(&plain_cfg, 4, plain_argv, err, sizeof(err)), DBK_CONFIG_OK);
	const struct dbk_policy_env env[2] = {
		{ .nservers = 1,
		  .engine_speed = 1.0,
		  .stall_weight = -1,
		  .budget_tokens = (double)told_cfg.max_num_batched_tokens },
		{ .nservers = 1,
		  .engine_speed = 1.0,
		  .stall_weight = -1,
		  .budget_tokens = (double)plain_cfg.max_num_batched_tokens },
	};
	struct dbk_policy_ttft *told = dbk_policy_ttft_create(&env[0]);
	struct dbk_policy_ttft *plain = dbk_policy_ttft_create(&env[1]);
	const struct dbk_pred_request r = { .prompt_tokens = 32768, .max_tokens = 1 };
	struct dbk_pred_choice a, b;

	CHECK(told && plain);
	if (!told || !plain)
		return;
	CHECK_NEAR(dbk_pred_config(told->pred)->budget_tokens, 2048, 0);
	CHECK_NEAR(dbk_pred_config(plain->pred)->budget_tokens, 8192, 0);
	/* The queue is packed into the told budget; untold, not packed. */
	CHECK_NEAR(dbk_pred_config(told->pred)->pack_tokens, 2048, 0);
	CHECK_NEAR(dbk_pred_config(plain->pred)->pack_tokens, 0, 0);
	struct dbk_policy_env big = env[0];
	big.budget_tokens = 16384;
	struct dbk_policy_ttft *wide = dbk_policy_ttft_create(&big);
	CHECK(wide && dbk_pred_config(wide->pred)->pack_tokens == 16384);
	if (wide)
		dbk_policy_ttft_destroy(wide);
	/* With admission, not packed at all, told or not. */
	big.serial_queue = true;
	struct dbk_policy_ttft *serial = dbk_policy_ttft_create(&big);
	CHECK(serial && dbk_pred_config(serial->pred)->pack_tokens == 0);
	/* Nor a late first token weighed more: admission judges it. */
	CHECK(serial && dbk_pred_config(serial->pred)->late_weight == 0);
	CHECK_NEAR(dbk_pred_config(told->pred)->late_weight, DBK_PRED_LATE_WEIGHT, 0);
	if (serial)
		dbk_policy_ttft_destroy(serial);
	CHECK(dbk_pred_choose(told->pred, &r, 0, &a) == 0);
	CHECK(dbk_pred_choose(plain->pred, &r, 0, &b) == 0);
	/* 16 steps against 4: 12 more of the CPU's share of a step. */
	const struct dbk_pred_config *c = dbk_pred_config(plain->pred);
	CHECK_NEAR(a.ttft_s - b.ttft_s, 12 * c->t_cpu_s, 1e-9);
	dbk_policy_ttft_destroy(told);
	dbk_policy_ttft_destroy(plain);
}

/* Decides and commits one request; returns the server. */
static int route(const struct dbk_policy_ops *ops, void *st, uint64_t now_ms,
                 struct dbk_bal_lease *l)
{
	const struct dbk_policy_request r = { .est = &est };
	struct dbk_policy_choice c;

	if (ops->choose(st, &r, now_ms, &c) < 0)
		return -1;
	memset(l, 0, sizeof(*l));
	l->server = (unsigned)c.server;
	l->start_ms = now_ms;
	ops->commit(st, &c, now_ms, l->slot);
	return c.server;
}

/* With two servers both are always drawn: the one with the earlier
 * predicted first token, the idle one, takes every request; a random
 * pick would not. */
static void test_p2ttft_takes_the_earlier_of_two(void)
{
	const struct dbk_policy_ops *ops = dbk_policy_find("p2ttft");
	struct dbk_policy_ttft *t = start("p2ttft", 2, 1);
	struct dbk_pred_request big = { .prompt_tokens = 60000, .max_tokens = 10, .ignore_eos = 1 };
	struct dbk_pred_ticket k;
	struct dbk_bal_lease l;

	CHECK(t != NULL);
	if (!t)
		return;
	dbk_pred_commit(t->pred, &big, 0, 1000, &k);
	for (int i = 0; i < 20; i++)
		CHECK_EQ_U(route(ops, t, 1000, &l), 1);
	/* Its predictions are the ttft predictor's: the ACK carries them. */
	struct dbk_policy_choice c;
	const struct dbk_policy_request r = { .est = &est };
	CHECK_EQ_U(ops->choose(t, &r, 1000, &c), 1);
	CHECK(c.predicted && c.ttft_s > 0);
	ops->destroy(t);
}

/* Two servers again, both drawn: server 0 decodes a batch of 200 with
 * nothing queued, server 1 has a prefill queued. The first token comes
 * sooner on 0, but p2ttft ranks the pair as ttft does (the TPOT the
 * request would add to the batch in): server 1, where ttft sends it. */
static void test_p2ttft_ranks_as_ttft(void)
{
	const struct dbk_policy_ops *p2 = dbk_policy_find("p2ttft"), *tt = dbk_policy_find("ttft");
	struct dbk_policy_ttft *a = start("p2ttft", 2, 3), *b = start("ttft", 2, 3);
	struct dbk_pred_request dec = { .prompt_tokens = 800, .max_tokens = 400, .ignore_eos = 1 };
	struct dbk_pred_request queued = { .prompt_tokens = 1500,
		                           .max_tokens = 400,
		                           .ignore_eos = 1 };
	struct dbk_pred_ticket k;
	struct dbk_bal_lease l;

	CHECK(a && b);
	if (!a || !b)
		goto out;
	for (int i = 0; i < 200; i++) {
		dbk_pred_commit(a->pred, &dec, 0, 0, &k);
		dbk_pred_commit(b->pred, &dec, 0, 0, &k);
	}
	dbk_pred_commit(a->pred, &queued, 1, 60000, &k);
	dbk_pred_commit(b->pred, &queued, 1, 60000, &k);
	CHECK_EQ_U(route(tt, b, 60000, &l), 1);
	CHECK_EQ_U(route(p2, a, 60000, &l), 1);
	/* What p2ttft gave up: an earlier predicted first token on 0. */
	struct dbk_pred_choice c0;
	CHECK_EQ_U(dbk_pred_evaluate(a->pred, &a->req, 0, 60000, &c0), 0);
	CHECK(c0.ttft_s < a->ch.ttft_s && a->ch.within);
out:
	if (a)
		p2->destroy(a);
	if (b)
		tt->destroy(b);
}

/* Four servers: the draws are the seed's (the same seed, the same
 * servers), reach every server, and never one that is down. */
static void test_p2ttft_draws_from_its_seed(void)
{
	const struct dbk_policy_ops *ops = dbk_policy_find("p2ttft");
	void *a = start("p2ttft", 4, 7), *b = start("p2ttft", 4, 7), *c = start("p2ttft", 4, 8);
	unsigned seen[4] = { 0 }, differ = 0;
	struct dbk_bal_lease la, lb, lc;

	CHECK(a && b && c);
	if (!a || !b || !c)
		goto out;
	ops->usable(a, 2, false);
	ops->usable(b, 2, false);
	ops->usable(c, 2, false);
	for (uint64_t i = 0; i < 200; i++) {
		int sa = route(ops, a, 1000 + i, &la), sb = route(ops, b, 1000 + i, &lb);
		int sc = route(ops, c, 1000 + i, &lc);
		CHECK_EQ_U(sa, sb);
		CHECK(sa >= 0 && sa != 2);
		differ += sa != sc;
		seen[sa]++;
		/* Each ends before the next: the books stay light, so that
		 * the draw, not the load, is what differs. */
		ops->release(a, &la, 1000 + i);
		ops->release(b, &lb, 1000 + i);
		ops->release(c, &lc, 1000 + i);
	}
	CHECK(seen[0] > 0 && seen[1] > 0 && seen[3] > 0);
	CHECK_EQ_U(seen[2], 0);
	CHECK(differ > 0);
out:
	if (a)
		ops->destroy(a);
	if (b)
		ops->destroy(b);
	if (c)
		ops->destroy(c);
}

/* /state and /metrics walk one row table: every row is in /state but
 * those named NULL there, and /metrics has exactly the gauges named. */
static void test_one_table_for_both_reports(void)
{
	const struct dbk_policy_ops *ops = dbk_policy_find("ttft");
	struct dbk_policy p = { ops, start("ttft", 2, 0) };
	const char *const names[] = { "a", "b" };
	struct dbk_buf st = { 0 }, m = { 0 };

	CHECK(p.st != NULL);
	if (!p.st)
		return;
	dbk_policy_report_state(&p, names, 2, 1000, &st);
	dbk_policy_report_metrics(&p, names, 2, 1000, &m);
	CHECK(st.p &&
	      strncmp(st.p, "  \"ttft\": [\n    {\"name\": \"a\", \"inflight\": 0,", 43) == 0);
	for (unsigned k = 0; k < ops->report->nrows; k++) {
		const struct dbk_policy_row *r = &ops->report->rows[k];
		char key[64];

		if (r->json) {
			snprintf(key, sizeof(key), "\"%s\": ", r->json);
			CHECK(strstr(st.p, key) != NULL);
		}
		if (r->metric) {
			snprintf(key, sizeof(key), "%s{server=\"b\"} ", r->metric);
			CHECK(m.p && strstr(m.p, key) != NULL);
		}
	}
	/* The eight series operators' dashboards read, and no others. */
	CHECK(m.p && strstr(m.p, "dbucket_ttft_queue_seconds{server=\"a\"} 0\n"));
	CHECK(m.p && strstr(m.p, "dbucket_ttft_slowness{server=\"a\"} 1\n"));
	CHECK(m.p && strstr(m.p, "dbucket_ttft_decode_slowness{server=\"a\"} 1\n"));
	size_t gauges = 0;
	for (const char *s = m.p; s && (s = strstr(s, "# TYPE ")); s++)
		gauges++;
	CHECK(m.p && strstr(m.p, "dbucket_ttft_step_budget_tokens{server=\"a\"} 8192\n"));
	CHECK(m.p && strstr(m.p, "dbucket_ttft_seats{server=\"a\"} 0\n"));
	CHECK(m.p && strstr(m.p, "dbucket_ttft_model_slowness{server=\"a\"} 1\n"));
	CHECK_EQ_U(gauges, 8);
	/* The reference shows nothing of its own. */
	struct dbk_policy ref = { dbk_policy_find("reference"), NULL };
	size_t before = st.len;
	dbk_policy_report_state(&ref, names, 2, 1000, &st);
	CHECK_EQ_U(st.len, before);
	dbk_buf_free(&st);
	dbk_buf_free(&m);
	ops->destroy(p.st);
}

/* Requests alike, sent at the same moment, all ended: server 3 took
 * three times as long as the others. Each lease's slot carries what
 * was predicted of its request to its release, so every one teaches,
 * however many are in flight alike; a lease moved to 3 (HAProxy sent
 * it elsewhere) teaches 3 nothing, its prediction being its first
 * server's. Before, a side table keyed by the send time and sizes held
 * the predictions, four to a bucket: of 60 alike requests a server kept
 * 4, fewer than the 8 a speed needs, and server 3 stayed at 1. */
static void test_ttft_every_lease_teaches(void)
{
	const struct dbk_policy_ops *ops = dbk_policy_find("ttft");
	const struct dbk_policy_request r = { .est = &est };
	struct dbk_bal_lease l[4][60];
	double v[DBK_POLICY_MAX_ROWS];

	uint64_t end[4][60];

	for (int moved = 0; moved < 2; moved++) {
		/* twin: the same books, for the durations (as predicted, times
		 * the server's slowness). */
		struct dbk_policy_ttft *t = start("ttft", 4, 1), *twin = start("ttft", 4, 1);
		struct dbk_pred_request q = { .prompt_tokens = 1000,
			                      .max_tokens = 100,
			                      .ignore_eos = 1 };
		struct dbk_pred_choice c;
		struct dbk_pred_ticket k;
		CHECK(t && twin);
		if (!t || !twin) {
			ops->destroy(t);
			ops->destroy(twin);
			return;
		}
		for (unsigned i = 0; i < 4; i++)
			for (unsigned j = 0; j < 60; j++) {
				unsigned to = moved && i == 3 ? 0 : i;
				CHECK(dbk_pred_evaluate(twin->pred, &q, to, 1000, &c) == (int)to);
				dbk_pred_commit(twin->pred, &q, to, 1000, &k);
				end[i][j] = 1000 + (uint64_t)((i == 3 ? 3 : 1) * 1e3 *
				                              (c.ttft_s + 99 * c.tpot_s));
				memset(&l[i][j], 0, sizeof(l[i][j]));
				l[i][j].server = to;
				l[i][j].start_ms = 1000;
				ops->seen(t, &r, to, false, 1000, l[i][j].slot);
				if (to != i) {
					ops->move(t, &l[i][j], i, 1000);
					l[i][j].server = i;
				}
			}
		for (unsigned i = 0; i < 4; i++)
			for (unsigned j = 0; j < 60; j++)
				ops->release(t, &l[i][j], end[i][j]);
		ops->report->view(t, 3, 0, v);
		const double slow3 = v[9], dec3 = v[10];
		ops->report->view(t, 0, 0, v);
		if (moved) {
			CHECK_NEAR(slow3, 1, 0);
			CHECK_NEAR(dec3, 1, 0);
		} else {
			CHECK(slow3 / v[9] > 2.5 && slow3 / v[9] < 3.5);
			CHECK(dec3 / v[10] > 2.5 && dec3 / v[10] < 3.5);
		}
		ops->destroy(t);
		ops->destroy(twin);
	}
}

/* Admission weighs the first token in the fleet's seconds: four
 * servers that each serve their first tokens 3x later than the engine
 * model, scraped after each of 16 rounds of a request to each. A pool
 * with admission then reports every prediction at the fleet's speed
 * (dbk_pred_fleet_slowness, about 3), but for the wait its books
 * priced at that speed already (a long prompt's chunks); one without
 * keeps the model's, which its choices compare, the fleet's speed
 * cancelling. */
static void test_admission_prices_at_the_fleets_speed(void)
{
	for (int admission = 0; admission < 2; admission++) {
		const struct dbk_policy_env env = { .nservers = 4,
			                            .engine_speed = 1.0,
			                            .stall_weight = -1,
			                            .serial_queue = admission };
		const struct dbk_policy_ops *ops = dbk_policy_find("ttft");
		struct dbk_policy_ttft *t = dbk_policy_ttft_create(&env);
		const struct dbk_pred_request q = { .prompt_tokens = 2000, .max_tokens = 8 };
		const struct dbk_policy_request r = { .est = &est };
		double sum[4] = { 0 };
		struct dbk_policy_choice c;
		struct dbk_pred_choice raw;
		uint64_t now = 1000;

		CHECK(t && t->absolute == admission);
		if (!t)
			return;
		for (unsigned k = 0; k <= 16; k++) {
			for (unsigned i = 0; k > 0 && i < 4; i++, now += 1000) {
				struct dbk_pred_ticket tk;
				dbk_pred_commit(t->pred, &q, i, now, &tk);
				dbk_pred_release(t->pred, &tk, now);
				sum[i] += 3 * tk.x1;
			}
			for (unsigned i = 0; i < 4; i++) {
				const struct dbk_pred_scrape sc = { .ok = true,
					                            .kv_capacity_tokens = -1,
					                            .prefix_queries = -1,
					                            .prefix_hits = -1,
					                            .ttft_sum_s = sum[i],
					                            .ttft_count = k };
				ops->scraped(t, i, &sc, now);
			}
		}
		const double fs = dbk_pred_fleet_slowness(t->pred);
		double v[DBK_POLICY_MAX_ROWS];
		CHECK_NEAR(fs, 3, 0.1);
		/* /state and /metrics show it, as each server's against the
		 * model: with or without admission. */
		ops->report->view(t, 2, now, v);
		CHECK(strcmp(ops->report->rows[15].json, "model_slowness") == 0);
		CHECK_NEAR(v[15], fs, 1e-9);
		CHECK(ops->choose(t, &r, now, &c) >= 0);
		CHECK(dbk_pred_evaluate(t->pred, &t->req, (unsigned)c.server, now, &raw) ==
		      c.server);
		CHECK_NEAR(c.ttft_s, raw.ttft_s * (admission ? fs : 1), 1e-9);
		CHECK_NEAR(c.own_s, raw.own_s * (admission ? fs : 1), 1e-9);
		/* Behind a 40k-token prompt on every server, the seconds of
		 * its chunks the books paced already are not multiplied
		 * again; without admission nothing is paced. */
		const struct dbk_pred_request big = { .prompt_tokens = 40000, .max_tokens = 8 };
		for (unsigned i = 0; i < 4; i++) {
			struct dbk_pred_ticket tk;
			dbk_pred_commit(t->pred, &big, i, now, &tk);
		}
		CHECK(ops->choose(t, &r, now, &c) >= 0);
		CHECK(dbk_pred_evaluate(t->pred, &t->req, (unsigned)c.server, now, &raw) ==
		      c.server);
		CHECK(admission ? raw.paced_s > 0.5 * raw.ttft_s : raw.paced_s == 0);
		CHECK_NEAR(c.ttft_s,
		           (raw.ttft_s - raw.paced_s) * (admission ? fs : 1) + raw.paced_s, 1e-9);
		ops->destroy(t);
	}
}

/* The books a hold must leave alone and a release bring back: server
 * s's requests, their tokens and its prefill queue, at now_ms. */
static void books(struct dbk_policy_ttft *t, unsigned s, uint64_t now_ms, struct dbk_pred_view *v)
{
	dbk_pred_view(t->pred, s, now_ms, v);
}

static bool idle(struct dbk_policy_ttft *t, unsigned s, uint64_t now_ms)
{
	struct dbk_pred_view v;

	books(t, s, now_ms, &v);
	return v.inflight == 0 && v.prompt_tokens == 0 && v.kv_committed == 0 && v.queue_s == 0 &&
	       v.prefilling == 0;
}

/* A request whose body is still on its way (issue 29 item 5), under
 * name: held, it books no load on its server but records where its
 * session went (the next of the session expects its cache there);
 * completed, it is booked as a commit books it; released, held or
 * completed, and moved while held, the books come back to zero. */
static void hold_case(const char *name)
{
	const struct dbk_policy_ops *ops = dbk_policy_find(name);
	struct dbk_policy_ttft *t = start(name, 2, 5);
	const struct dbk_bal_request big = { 40000, 100, true }; /* 10k tokens */
	const struct dbk_policy_request r = { .est = &big, .has_session = true, .session = 42 };
	struct dbk_policy_choice c;
	struct dbk_pred_choice e;
	struct dbk_pred_view v;
	struct dbk_bal_lease l = { 0 }, w = { 0 };

	CHECK(t && ops->hold && ops->complete);
	if (!t || !ops->hold || !ops->complete)
		goto out;
	CHECK(ops->choose(t, &r, 1000, &c) >= 0);
	l.server = (unsigned)c.server;
	l.start_ms = 1000;
	ops->hold(t, &c, 1000, l.slot);
	CHECK(idle(t, 0, 1000) && idle(t, 1, 1000));
	/* Its affinity is kept: a hit expected there, none on the other. */
	CHECK_EQ_U(dbk_pred_evaluate(t->pred, &t->req, l.server, 1000, &e), l.server);
	CHECK(e.hit_tokens > 0);
	CHECK_EQ_U(dbk_pred_evaluate(t->pred, &t->req, 1 - l.server, 1000, &e), 1 - l.server);
	CHECK(e.hit_tokens == 0);
	/* A held lease released: nothing to give back, nothing drifts. */
	ops->release(t, &l, 1500);
	CHECK(idle(t, 0, 1500) && idle(t, 1, 1500));

	/* Held, moved (nothing moves), completed on its new server: booked
	 * there as a commit, a prefill queued; release brings it back. */
	CHECK(ops->choose(t, &r, 2000, &c) >= 0);
	l.server = (unsigned)c.server;
	l.start_ms = 2000;
	ops->hold(t, &c, 2000, l.slot);
	w = l;
	w.server = 1 - l.server;
	ops->move(t, &l, w.server, 2100);
	CHECK(idle(t, 0, 2100) && idle(t, 1, 2100));
	CHECK(ops->complete(t, &w, 2200, w.slot));
	CHECK(!ops->complete(t, &w, 2300, w.slot)); /* exactly once */
	books(t, w.server, 2200, &v);
	CHECK_EQ_U(v.inflight, 1);
	CHECK_EQ_U(v.prompt_tokens, 10000);
	CHECK(v.kv_committed >= 100 && v.queue_s > 0 && v.prefilling == 1);
	CHECK(idle(t, l.server, 2200));
	ops->release(t, &w, 2400);
	CHECK(idle(t, 0, 2400) && idle(t, 1, 2400));

	/* Committed whole, the same request books what the completed one
	 * did, on an idle server. */
	struct dbk_bal_lease k = { 0 };
	struct dbk_pred_view vc;
	CHECK(ops->choose(t, &r, 2200, &c) >= 0);
	k.server = (unsigned)c.server;
	k.start_ms = 2200;
	ops->commit(t, &c, 2200, k.slot);
	CHECK(!ops->complete(t, &k, 2300, k.slot)); /* not held */
	books(t, k.server, 2200, &vc);
	CHECK_EQ_U(vc.inflight, 1);
	CHECK(vc.prompt_tokens == v.prompt_tokens);
	ops->release(t, &k, 2400);
	CHECK(idle(t, 0, 2400) && idle(t, 1, 2400));
out:
	if (t)
		ops->destroy(t);
}

static void test_ttft_holds_a_body_on_its_way(void) { hold_case("ttft"); }
static void test_p2ttft_holds_a_body_on_its_way(void) { hold_case("p2ttft"); }

int main(void)
{
	RUN(test_the_table);
	RUN(test_ttft_told_the_budget);
	RUN(test_p2ttft_takes_the_earlier_of_two);
	RUN(test_p2ttft_draws_from_its_seed);
	RUN(test_p2ttft_ranks_as_ttft);
	RUN(test_one_table_for_both_reports);
	RUN(test_ttft_every_lease_teaches);
	RUN(test_admission_prices_at_the_fleets_speed);
	RUN(test_ttft_holds_a_body_on_its_way);
	RUN(test_p2ttft_holds_a_body_on_its_way);
	return CHECK_DONE();
}
