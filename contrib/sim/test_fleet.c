/* Unit tests of a fleet that changes (sim.c): the policies are told of
 * every change at its time, never route to an instance left out, a
 * leaving instance drains, a joining one is new (and warms up), a
 * failing one answers 500 at once, HAProxy's mark-down takes it out, and
 * wlc follows the weights. */
#include "policy.h"
#include "sim.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static struct dbk_engine_config eng[8];

static void mk(struct dbk_sim_config *c, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		dbk_engine_config_default(&eng[i], dbk_engine_profile_find("h100"));
	dbk_sim_config_default(c);
	c->ninstances = n;
	c->engines = eng;
}

/* n requests every gap_s from 0, prompt in tokens, output out. */
static struct dbk_sim_req *steady(size_t n, double gap_s, uint32_t in, uint32_t out)
{
	struct dbk_sim_req *r = calloc(n, sizeof(*r));

	for (size_t i = 0; r && i < n; i++) {
		r[i].id = (uint32_t)i;
		r[i].arrival_s = (double)i * gap_s;
		r[i].input_tokens = in;
		r[i].output_tokens = out;
	}
	return r;
}

static struct dbk_sim *run(const struct dbk_sim_config *c, const struct dbk_sim_req *r, size_t n,
                           const struct dbk_sim_policy_ops *ops)
{
	char err[256];
	struct dbk_sim *s = dbk_sim_new(c, r, n, ops, err, sizeof(err));

	if (s && dbk_sim_run(s, err, sizeof(err)) != 0) {
		dbk_sim_free(s);
		s = NULL;
	}
	if (!s)
		fprintf(stderr, "  %s: %s\n", ops->name, err);
	CHECK(s != NULL);
	return s;
}

/* ---- A policy that records what it is told: the highest usable
 * instance, and every member call. ---- */

struct told {
	double t;
	unsigned i;
	bool usable, fresh;
};
static struct told calls[64];
static size_t ncalls;

static int top_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	(void)st;
	(void)r;
	for (unsigned i = dbk_sim_ninstances(s); i-- > 0;)
		if (dbk_sim_usable(s, i))
			return (int)i;
	return DBK_SIM_REFUSE;
}

static void top_member(void *st, const struct dbk_sim *s, unsigned i, bool usable, bool fresh)
{
	(void)st;
	if (ncalls < sizeof(calls) / sizeof(calls[0]))
		calls[ncalls++] = (struct told){ dbk_sim_now(s), i, usable, fresh };
}

static const struct dbk_sim_policy_ops top = {
	.name = "top",
	.size = 1,
	.choose = top_choose,
	.member = top_member,
};

/* 2 -> 4 -> 2 -> 4 over 4 slots: the absent slots are told before the
 * first arrival, each change at its time, a slot refilled once drained
 * is fresh (a new engine: 4 joined in all). */
static void test_member_calls(void)
{
	const struct dbk_sim_step sc[] = { { 0, 2 }, { 10, 4 }, { 20, 2 }, { 30, 4 } };
	const struct told want[] = {
		{ 0, 2, false, false }, { 0, 3, false, false },  { 10, 2, true, true },
		{ 10, 3, true, true },  { 20, 2, false, false }, { 20, 3, false, false },
		{ 30, 2, true, true },  { 30, 3, true, true },
	};
	struct dbk_sim_config c;
	struct dbk_sim_req *r = steady(40, 1.0, 100, 4);
	struct dbk_sim_result res;

	mk(&c, 4);
	c.scale = sc;
	c.nscale = 4;
	ncalls = 0;
	struct dbk_sim *s = run(&c, r, 40, &top);
	CHECK_EQ_U(ncalls, sizeof(want) / sizeof(want[0]));
	for (size_t k = 0; k < ncalls && k < sizeof(want) / sizeof(want[0]); k++) {
		CHECK(calls[k].t == want[k].t && calls[k].i == want[k].i);
		CHECK(calls[k].usable == want[k].usable && calls[k].fresh == want[k].fresh);
	}
	CHECK(s && dbk_sim_result(s, &res) == 0);
	CHECK_EQ_U(res.new_engines, 4);
	CHECK_EQ_U(res.misrouted, 0);
	/* The highest usable slot took each request. */
	for (uint32_t id = 0; s && id < 40; id++) {
		unsigned want_i = (unsigned)dbk_sim_steps_at(sc, 4, r[id].arrival_s) - 1;
		CHECK_EQ_U(dbk_sim_outcome(s, id)->instance, want_i);
	}
	dbk_sim_free(s);
	free(r);
}

/* Every policy of the table, and wlc: no request reaches a slot while it
 * is out, every request ends once, no lease is left. */
static void test_no_route_to_absent(void)
{
	const struct dbk_sim_step sc[] = { { 0, 2 }, { 3, 4 }, { 7, 1 }, { 11, 3 } };
	struct dbk_sim_config c;
	struct dbk_sim_req *r = steady(300, 0.05, 2000, 40);
	const struct dbk_sim_policy_ops *p;

	mk(&c, 4);
	c.scale = sc;
	c.nscale = 4;
	for (size_t k = 0; (p = dbk_sim_policy_at(k)) != NULL; k++) {
		struct dbk_sim *s = run(&c, r, 300, p);
		struct dbk_sim_result res;
		unsigned bad = 0, ended = 0;

		if (!s)
			continue;
		CHECK(dbk_sim_result(s, &res) == 0);
		for (uint32_t id = 0; id < 300; id++) {
			const struct dbk_sim_outcome *o = dbk_sim_outcome(s, id);

			ended += o->status == DBK_SIM_DONE || o->status == DBK_SIM_FAILED;
			if (o->instance != DBK_SIM_NONE &&
			    o->instance >= (unsigned)dbk_sim_steps_at(sc, 4, r[id].arrival_s))
				bad++;
		}
		CHECK_EQ_U(bad, 0);
		CHECK_EQ_U(ended, 300);
		CHECK_EQ_U(res.misrouted, 0);
		CHECK_EQ_U(res.policy_leases, 0);
		CHECK_EQ_U(res.cls[DBK_CLASS_ALL].completed, 300);
		if (bad || res.misrouted || res.cls[DBK_CLASS_ALL].completed != 300)
			fprintf(stderr, "  policy %s\n", p->name);
		dbk_sim_free(s);
	}
	free(r);
}

/* A request in flight on a slot that leaves finishes there; the slot
 * takes nothing new. */
static void test_drain(void)
{
	const struct dbk_sim_step sc[] = { { 0, 2 }, { 1, 1 } };
	struct dbk_sim_config c;
	struct dbk_sim_req *r = steady(10, 0.5, 1000, 300);

	mk(&c, 2);
	c.scale = sc;
	c.nscale = 2;
	struct dbk_sim *s = run(&c, r, 10, &top);
	const struct dbk_sim_outcome *o = s ? dbk_sim_outcome(s, 1) : NULL;

	CHECK(o && o->instance == 1 && o->status == DBK_SIM_DONE && o->tokens == 300);
	CHECK(o && o->last_token_s > 1.0); /* it outlived the scale-in */
	for (uint32_t id = 2; s && id < 10; id++)
		CHECK_EQ_U(dbk_sim_outcome(s, id)->instance, 0);
	dbk_sim_free(s);
	free(r);
}

/* A new instance's steps take warmup_factor as long for warmup_s: the
 * same lone request's first token comes 3 x later on it. */
static double lone_ttft(double warmup_s)
{
	const struct dbk_sim_step sc[] = { { 0, 1 }, { 5, 2 } };
	struct dbk_sim_config c;
	/* Times are from the first arrival: one at 0 on slot 0, the one
	 * measured at 6 on slot 1. */
	struct dbk_sim_req r[2] = {
		{ .id = 0, .arrival_s = 0, .input_tokens = 10, .output_tokens = 1 },
		{ .id = 1, .arrival_s = 6, .input_tokens = 4000, .output_tokens = 2 },
	};
	double ttft = NAN;

	mk(&c, 2);
	c.scale = sc;
	c.nscale = 2;
	c.warmup_s = warmup_s;
	c.warmup_factor = 3;
	struct dbk_sim *s = run(&c, r, 2, &top);
	if (s && dbk_sim_outcome(s, 1)->instance == 1)
		ttft = dbk_sim_outcome(s, 1)->first_token_s - 6;
	dbk_sim_free(s);
	return ttft;
}

static void test_warmup(void)
{
	double cold = lone_ttft(10), warm = lone_ttft(0), past = lone_ttft(0.5);

	CHECK(warm > 0);
	CHECK_NEAR(cold, 3 * warm, 1e-9);
	CHECK_NEAR(past, warm, 1e-9); /* joined at 5, warm again by 6 */
}

/* A server that fails slow: from 5 s until 20 s instance 0's steps take
 * 3 x as long. Three lone requests alike (no hash ids: nothing cached),
 * at 0, 10 and 30: the one inside the slow phase gets
 * its first token 3 x later, the ones before and after as fast; the
 * report counts the slow instance's share per window. */
static void test_slow(void)
{
	struct dbk_sim_config c;
	struct dbk_sim_req r[3] = {
		{ .id = 0, .arrival_s = 0, .input_tokens = 4000, .output_tokens = 2 },
		{ .id = 1, .arrival_s = 10, .input_tokens = 4000, .output_tokens = 2 },
		{ .id = 2, .arrival_s = 30, .input_tokens = 4000, .output_tokens = 2 },
	};
	double ttft[3] = { NAN, NAN, NAN };
	struct dbk_sim_slow_window w[4] = { { 0 } };

	mk(&c, 1);
	c.slow_inst = 0;
	c.slow_from_s = 5;
	c.slow_until_s = 20;
	c.slow_factor = 3;
	struct dbk_sim *s = run(&c, r, 3, &top);
	for (uint32_t id = 0; s && id < 3; id++)
		ttft[id] = dbk_sim_outcome(s, id)->first_token_s - r[id].arrival_s;
	CHECK(ttft[0] > 0);
	CHECK_NEAR(ttft[1], 3 * ttft[0], 1e-9);
	CHECK_NEAR(ttft[2], ttft[0], 1e-9);
	CHECK_EQ_U(s ? dbk_sim_slow_windows(s, 20, w, 4) : 0, 2);
	CHECK_EQ_U(w[0].sent, 2);
	CHECK_EQ_U(w[0].sent_tokens, 8000);
	CHECK_EQ_U(w[1].offered, 1);
	dbk_sim_free(s);
	c.slow_factor = 0.5; /* a faster step is no failure */
	char err[128];
	CHECK(dbk_sim_new(&c, r, 3, &top, err, sizeof(err)) == NULL);
}

/* Instance 0 fails everything from 0: under round robin half the
 * requests fail at once with no token; with error_limit 3 it is marked
 * down after 3 and takes nothing until it is up again. */
static void test_failing(void)
{
	struct dbk_sim_config c;
	struct dbk_sim_req *r = steady(100, 0.1, 500, 5);
	struct dbk_sim_result res;

	mk(&c, 2);
	c.fail_inst = 0;
	c.fail_share = 1;
	struct dbk_sim *s = run(&c, r, 100, &dbk_sim_policy_rr);
	CHECK(s && dbk_sim_result(s, &res) == 0);
	CHECK_EQ_U(res.server_errors, 50);
	CHECK_EQ_U(res.cls[DBK_CLASS_ALL].failed, 50);
	CHECK_EQ_U(res.marked_down, 0);
	for (uint32_t id = 0; s && id < 100; id++) {
		const struct dbk_sim_outcome *o = dbk_sim_outcome(s, id);
		if (o->instance == 0)
			CHECK(o->fail == DBK_SIM_FAIL_SERVER && o->tokens == 0);
	}
	dbk_sim_free(s);

	c.error_limit = 3;
	c.down_s = 1000; /* longer than the run */
	s = run(&c, r, 100, &dbk_sim_policy_rr);
	CHECK(s && dbk_sim_result(s, &res) == 0);
	CHECK_EQ_U(res.server_errors, 3);
	CHECK_EQ_U(res.marked_down, 1);
	CHECK_EQ_U(res.misrouted, 0);
	CHECK_EQ_U(res.cls[DBK_CLASS_ALL].completed, 97);
	dbk_sim_free(s);

	/* Back after down_s: it fails again, and is marked down again
	 * after 3 more (the last round may end short). */
	c.down_s = 2;
	s = run(&c, r, 100, &dbk_sim_policy_rr);
	CHECK(s && dbk_sim_result(s, &res) == 0);
	CHECK(res.marked_down >= 3);
	CHECK(res.server_errors >= 3 * res.marked_down &&
	      res.server_errors < 3 * (res.marked_down + 1));
	dbk_sim_free(s);

	/* A share: about half of instance 0's requests. */
	c.error_limit = 0;
	c.fail_share = 0.5;
	s = run(&c, r, 100, &dbk_sim_policy_rr);
	CHECK(s && dbk_sim_result(s, &res) == 0);
	CHECK(res.server_errors >= 15 && res.server_errors <= 35);
	dbk_sim_free(s);
	free(r);
}

/* wlc with weights 3 and 1, every request still in flight: three on
 * the first for one on the second. */
static void test_wlc_weights(void)
{
	const struct dbk_sim_policy_ops *wlc = dbk_sim_policy_find("wlc");
	const double w[] = { 3, 1 };
	struct dbk_sim_config c;
	struct dbk_sim_req *r = steady(40, 0.001, 100, 3000);
	unsigned cnt[2] = { 0, 0 };

	CHECK(wlc != NULL);
	if (!wlc)
		return;
	mk(&c, 2);
	c.weights = w;
	struct dbk_sim *s = run(&c, r, 40, wlc);
	for (uint32_t id = 0; s && id < 40; id++)
		cnt[dbk_sim_outcome(s, id)->instance]++;
	CHECK(cnt[0] >= 29 && cnt[0] <= 31);
	dbk_sim_free(s);
	free(r);
}

/* "all" holds wlc only for a run with weights, and never the extra
 * policies (consistent_hash's other layouts), which are found by name. */
static void test_pick_weighted(void)
{
	const struct dbk_sim_policy_ops *p[32];
	size_t n, m;
	char err[128];
	bool has = false;

	CHECK(dbk_sim_policy_pick("all", false, p, 32, &n, err, sizeof(err)) == 0);
	for (size_t k = 0; k < n; k++)
		has |= strcmp(p[k]->name, "wlc") == 0;
	CHECK(!has);
	for (size_t k = 0; k < n; k++)
		CHECK(strncmp(p[k]->name, "consistent_hash_seed", 20) != 0);
	CHECK(dbk_sim_policy_pick("consistent_hash_seed2", false, p, 32, &m, err, sizeof(err)) ==
	      0);
	CHECK(dbk_sim_policy_pick("all", true, p, 32, &m, err, sizeof(err)) == 0);
	CHECK_EQ_U(m, n + 1);
	CHECK(dbk_sim_policy_pick("wlc", false, p, 32, &n, err, sizeof(err)) == 0);
}

static void test_bad_config(void)
{
	const struct dbk_sim_step too_many[] = { { 0, 5 } }, late[] = { { 1, 2 } };
	struct dbk_sim_config c;
	struct dbk_sim_req *r = steady(1, 1, 10, 1);
	char err[256];

	mk(&c, 4);
	c.scale = too_many;
	c.nscale = 1;
	CHECK(dbk_sim_new(&c, r, 1, &top, err, sizeof(err)) == NULL);
	c.scale = late;
	CHECK(dbk_sim_new(&c, r, 1, &top, err, sizeof(err)) == NULL);
	mk(&c, 4);
	c.fail_share = 1;
	c.fail_inst = 4;
	CHECK(dbk_sim_new(&c, r, 1, &top, err, sizeof(err)) == NULL);
	free(r);
}

int main(void)
{
	RUN(test_member_calls);
	RUN(test_slow);
	RUN(test_no_route_to_absent);
	RUN(test_drain);
	RUN(test_warmup);
	RUN(test_failing);
	RUN(test_wlc_weights);
	RUN(test_pick_weighted);
	RUN(test_bad_config);
	return CHECK_DONE();
}
