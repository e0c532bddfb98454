/* Unit tests of the balancer (agent/balancer.c, balancer_config.c): its
 * configuration, groups and buckets, the reference's redirect, the choice
 * within a group, usability, a randomized cross-check against a linear
 * scan, and another policy's choice with the observer. */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "balancer_test.h"
#include "lib/bounds.h"

/* ---- configuration ---- */

static void config_default_is_reference(void)
{
	struct dbk_bal_config c;
	char err[200];

	dbk_bal_config_default(&c, 4, true, 32768, 131072);
	CHECK_EQ_U(c.nbuckets, 2);
	CHECK_NEAR(c.bounds[0], 0, 0);
	CHECK_NEAR(c.bounds[1], 32768, 0);
	CHECK_NEAR(c.bounds[2], 131072, 0);
	CHECK_NEAR(c.sensitivity, 1.0, 0);
	CHECK_NEAR(c.affinity_strength, 0.1, 0);
	CHECK_NEAR(c.redirect_threshold, 0.12, 0);
	CHECK_EQ_U(dbk_bal_config_check(&c, err, sizeof(err)), 0);
	dbk_bal_config_default(&c, 1, false, 32768, 131072);
	CHECK_EQ_U(c.nbuckets, 1);
	CHECK_EQ_U(dbk_bal_config_check(&c, err, sizeof(err)), 0);
	/* Plain mode does not care about the threshold. */
	dbk_bal_config_default(&c, 1, false, 500000, 131072);
	CHECK_EQ_U(dbk_bal_config_check(&c, err, sizeof(err)), 0);
	CHECK_EQ_U(dbk_bal_config_check(&c, NULL, 0), 0);
}

static bool check_fails_with(const struct dbk_bal_config *c, const char *want)
{
	char err[200];
	struct dbk_balancer *b;

	if (dbk_bal_config_check(c, err, sizeof(err)) == 0)
		return false;
	b = dbk_bal_new(c);
	if (b) {
		dbk_bal_free(b);
		return false;
	}
	if (!strstr(err, want)) {
		fprintf(stderr, "  error \"%s\" lacks \"%s\"\n", err, want);
		return false;
	}
	return true;
}

static void config_errors(void)
{
	struct dbk_bal_config c;
	char tiny[8];

	dbk_bal_config_default(&c, 1, true, 32768, 131072);
	CHECK(check_fails_with(&c, "dynamic bucket mode needs at least 2 servers, got 1"));
	dbk_bal_config_default(&c, 0, false, 32768, 131072);
	CHECK(check_fails_with(&c, "got 0"));
	dbk_bal_config_default(&c, DBK_MAX_SERVERS + 1, false, 32768, 131072);
	CHECK(check_fails_with(&c, "servers"));
	dbk_bal_config_default(&c, 4, true, 131072, 131072);
	CHECK(check_fails_with(&c, "--server-group-threshold (131072) must be below "
	                           "--max-request-tokens (131072)"));
	dbk_bal_config_default(&c, 4, true, 200000, 131072);
	CHECK(check_fails_with(&c, "--server-group-threshold (200000) must be below"));
	dbk_bal_config_default(&c, 4, true, 0, 131072);
	CHECK(check_fails_with(&c, "--server-group-threshold (0) must be above 0"));
	dbk_bal_config_default(&c, 4, true, NAN, 131072);
	CHECK(check_fails_with(&c, "--server-group-threshold"));
	dbk_bal_config_default(&c, 4, true, 100, INFINITY);
	CHECK(check_fails_with(&c, "--max-request-tokens"));

	dbk_bal_config_default(&c, 4, true, 32768, 131072);
	c.sensitivity = 0;
	CHECK(check_fails_with(&c, "sensitivity"));
	c.sensitivity = NAN;
	CHECK(check_fails_with(&c, "sensitivity"));
	c.sensitivity = 1;
	c.affinity_strength = -1;
	CHECK(check_fails_with(&c, "affinity"));
	c.affinity_strength = 0.1;
	c.redirect_threshold = 1.5;
	CHECK(check_fails_with(&c, "redirect threshold"));
	c.redirect_threshold = NAN;
	CHECK(check_fails_with(&c, "redirect threshold"));
	c.redirect_threshold = 1;
	CHECK_EQ_U(dbk_bal_config_check(&c, NULL, 0), 0);

	const double b3[] = { 0, 10, 20, 30 };
	config_buckets(&c, 2, 3, b3);
	CHECK(check_fails_with(&c, "3 buckets need at least 3 servers, got 2"));
	const double bad[] = { 0, 20, 10, 30 };
	config_buckets(&c, 3, 3, bad);
	CHECK(check_fails_with(&c, "bucket bound 1 (20) must be below bucket bound 2 (10)"));
	const double neg[] = { -1, 10, 20 };
	config_buckets(&c, 3, 2, neg);
	CHECK(check_fails_with(&c, "bucket bound 0"));
	dbk_bal_config_default(&c, 3, false, 1, 2);
	c.nbuckets = 2;
	CHECK(check_fails_with(&c, "plain mode"));
	c.nbuckets = DBK_BAL_MAX_BUCKETS + 1;
	c.dynamic = true;
	CHECK(check_fails_with(&c, "buckets"));

	/* A short buffer gets a truncated, terminated message. */
	dbk_bal_config_default(&c, 1, true, 32768, 131072);
	CHECK(dbk_bal_config_check(&c, tiny, sizeof(tiny)) < 0);
	CHECK_EQ_U(strlen(tiny), sizeof(tiny) - 1);
}

/* ---- groups and buckets ---- */

static void groups_split(void)
{
	for (unsigned nb = 1; nb <= 3; nb++) {
		for (unsigned n = nb; n <= 9; n++) {
			struct dbk_bal_config c;
			struct dbk_balancer *b;
			const double bounds[] = { 0, 100, 200, 300 };
			unsigned size[3] = { 0 }, prev = 0;

			if (nb == 1)
				dbk_bal_config_default(&c, n, false, 100, 200);
			else
				config_buckets(&c, n, nb, bounds);
			b = dbk_bal_new(&c);
			CHECK(b);
			if (!b)
				continue;
			for (unsigned s = 0; s < n; s++) {
				unsigned g = dbk_bal_group_of(b, s);

				CHECK(g < nb);
				CHECK(g >= prev); /* in list order */
				prev = g;
				if (g < nb)
					size[g]++;
			}
			for (unsigned g = 0; g < nb; g++)
				CHECK_EQ_U(size[g], n / nb + (g < n % nb ? 1 : 0));
			CHECK_EQ_U(dbk_bal_group_of(b, n), UINT_MAX);
			dbk_bal_free(b);
		}
	}
	/* Spelled out: 5 servers in 2 groups are 3 + 2, 7 in 3 are 3 + 2 + 2. */
	struct dbk_balancer *b = reference_balancer(5);

	CHECK_EQ_U(dbk_bal_group_of(b, 2), 0);
	CHECK_EQ_U(dbk_bal_group_of(b, 3), 1);
	dbk_bal_free(b);
}

static void standard_bucket_edges(void)
{
	struct dbk_balancer *b = reference_balancer(4);
	struct dbk_bal_decision d;
	struct dbk_bal_request r;
	const struct {
		double bytes;
		unsigned bucket;
	} cases[] = {
		{ 0, 0 },
		{ 4, 0 },
		{ 4.0 * 32768 - 1, 0 },
		{ 4.0 * 32768, 1 },
		{ 4.0 * 32768 + 1, 1 },
		{ 4.0 * 131072 - 1, 1 },
		{ 4.0 * 131072, 1 },
		{ 1e12, 1 },
		{ -5, 0 },
		{ NAN, 0 },
		{ INFINITY, 1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		r = req(cases[i].bytes);
		CHECK_EQ_U(dbk_bal_decide(b, &r, &d), DBK_BAL_OK);
		CHECK_EQ_U(d.std_bucket, cases[i].bucket);
		/* Nothing is loaded, so nothing is redirected. */
		CHECK_EQ_U(d.group, cases[i].bucket);
		CHECK(!d.redirected);
		CHECK_NEAR(d.p, 0, 0);
	}
	dbk_bal_free(b);

	/* Three buckets: at or above the top bound is the last bucket. */
	const double bounds[] = { 0, 100, 200, 300 };
	struct dbk_bal_config c;

	config_buckets(&c, 3, 3, bounds);
	b = dbk_bal_new(&c);
	const struct {
		double tokens;
		unsigned bucket;
	} c3[] = { { 0, 0 },   { 99.75, 0 }, { 100, 1 }, { 199.75, 1 },
		   { 200, 2 }, { 300, 2 },   { 1e9, 2 } };
	for (size_t i = 0; i < sizeof(c3) / sizeof(c3[0]); i++) {
		r = req(c3[i].tokens * 4);
		dbk_bal_decide(b, &r, &d);
		CHECK_EQ_U(d.std_bucket, c3[i].bucket);
	}
	dbk_bal_free(b);
}

/* ---- the reference's worked example and the redirect ---- */

static void worked_example(void)
{
	struct dbk_balancer *b = reference_balancer(4);
	struct dbk_bal_decision d;
	double nd, want_p;

	CHECK_EQ_U(disp(b, "r0", 3656, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.group, 0);
	CHECK_EQ_U(d.server, 0);
	CHECK_NEAR(d.score, 914, 0);
	CHECK(!d.redirected);

	/* 3775.5 tokens belong to bucket 0, but bucket 1 is empty. */
	CHECK_EQ_U(disp(b, "r1", 15102, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.std_bucket, 0);
	CHECK_EQ_U(d.group, 1);
	CHECK_EQ_U(d.server, 2);
	CHECK_NEAR(d.score, 3775.5, 0);
	CHECK(d.redirected);
	nd = (fabs(3775.5 - 81920.0) - 49152.0) / 49152.0;
	want_p = 1.0 * exp(-0.1 * nd);
	CHECK_NEAR(d.p, want_p, 0);
	CHECK_NEAR(d.p, 0.9427, 1e-4);

	CHECK_NEAR(dbk_bal_server_load(b, 0), 914, 0);
	CHECK_NEAR(dbk_bal_server_load(b, 2), 3775.5, 0);
	CHECK_NEAR(dbk_bal_bucket_load(b, 0), 914, 0);
	CHECK_NEAR(dbk_bal_bucket_load(b, 1), 3775.5, 0);
	CHECK_EQ_U(dbk_bal_stats(b)->decisions, 2);
	CHECK_EQ_U(dbk_bal_stats(b)->redirects, 1);
	CHECK_EQ_U(rel(b, "r0"), DBK_BAL_OK);
	CHECK_EQ_U(rel(b, "r1"), DBK_BAL_OK);
	CHECK_NEAR(dbk_bal_bucket_load(b, 0), 0, 0);
	CHECK_NEAR(dbk_bal_bucket_load(b, 1), 0, 0);
	dbk_bal_free(b);
}

/* Buckets [0,100) [100,1000) with bucket 1 at load 100 and bucket 0 at
 * load l0; a request of exactly 100 tokens then sits on the edge of
 * bucket 0, where the affinity is exactly 1 and p = 1 - l0/100. */
static struct dbk_balancer *edge_scenario(double l0, double threshold)
{
	const double bounds[] = { 0, 100, 1000 };
	struct dbk_bal_config c;
	struct dbk_balancer *b;
	struct dbk_bal_decision d;

	config_buckets(&c, 2, 2, bounds);
	c.redirect_threshold = threshold;
	b = dbk_bal_new(&c);
	CHECK_EQ_U(disp(b, "long", 400, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.group, 1);
	CHECK_EQ_U(disp(b, "short", 4 * l0, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.group, 0);
	return b;
}

static void redirect_threshold_strict(void)
{
	struct dbk_bal_request r = req(400);
	struct dbk_bal_decision d;
	struct dbk_balancer *b;
	double p = 1.0 - 88.0 / 100.0;

	/* Around the default 0.12. */
	b = edge_scenario(87, 0.12);
	dbk_bal_decide(b, &r, &d);
	CHECK_NEAR(d.p, 1.0 - 0.87, 0);
	CHECK_EQ_U(d.group, 0);
	CHECK(d.redirected);
	dbk_bal_free(b);
	b = edge_scenario(89, 0.12);
	dbk_bal_decide(b, &r, &d);
	CHECK_NEAR(d.p, 1.0 - 0.89, 0);
	CHECK_EQ_U(d.group, 1);
	CHECK(!d.redirected);
	dbk_bal_free(b);

	/* p equal to the threshold stays; one ulp less redirects. */
	b = edge_scenario(88, p);
	dbk_bal_decide(b, &r, &d);
	CHECK_NEAR(d.p, p, 0);
	CHECK_EQ_U(d.group, 1);
	dbk_bal_free(b);
	b = edge_scenario(88, nextafter(p, 0));
	dbk_bal_decide(b, &r, &d);
	CHECK_EQ_U(d.group, 0);
	dbk_bal_free(b);

	/* Equal loads: the neighbour must be strictly lighter, even with a
	 * threshold of 0. Bucket 0 reaches 100 in two requests, the second
	 * not redirected since bucket 1 (100) is not lighter than 99. */
	b = edge_scenario(99, 0);
	CHECK_EQ_U(disp(b, "one", 4, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.group, 0);
	CHECK_NEAR(dbk_bal_bucket_load(b, 0), 100, 0);
	dbk_bal_decide(b, &r, &d);
	CHECK_EQ_U(d.group, 1);
	CHECK_NEAR(d.p, 0, 0);
	dbk_bal_free(b);
}

static void redirect_three_buckets(void)
{
	const double bounds[] = { 0, 100, 200, 300 };
	struct dbk_bal_config c;
	struct dbk_balancer *b;
	struct dbk_bal_decision d;
	struct dbk_bal_request r;

	config_buckets(&c, 3, 3, bounds);
	b = dbk_bal_new(&c);
	CHECK_EQ_U(disp(b, "mid", 600, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.group, 1);

	/* Centre of bucket 1: both neighbours equally near and empty; the
	 * lower one wins the tie. */
	r = req(600);
	dbk_bal_decide(b, &r, &d);
	CHECK_EQ_U(d.std_bucket, 1);
	CHECK_EQ_U(d.group, 0);
	CHECK_NEAR(d.p, exp(-0.1 * 1.0), 0);
	/* Nearer bucket 2: it wins. */
	r = req(640);
	dbk_bal_decide(b, &r, &d);
	CHECK_EQ_U(d.group, 2);
	CHECK_NEAR(d.p, exp(-0.1 * ((fabs(160.0 - 250.0) - 50.0) / 50.0)), 0);
	/* Nearer bucket 0. */
	r = req(560);
	dbk_bal_decide(b, &r, &d);
	CHECK_EQ_U(d.group, 0);

	/* Load bucket 0 a little: bucket 2 is then lighter and wins the centre. */
	CHECK_EQ_U(disp(b, "low", 40, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.group, 0);
	r = req(600);
	dbk_bal_decide(b, &r, &d);
	CHECK_EQ_U(d.group, 2);
	/* From bucket 0, only bucket 1 is a neighbour, and it is heavier. */
	r = req(40);
	dbk_bal_decide(b, &r, &d);
	CHECK_EQ_U(d.group, 0);
	CHECK_NEAR(d.p, 0, 0);
	dbk_bal_free(b);
}

/* ---- within a group ---- */

static void least_loaded_tie_by_index(void)
{
	struct dbk_bal_config c;
	struct dbk_balancer *b;
	struct dbk_bal_decision d;

	dbk_bal_config_default(&c, 3, false, 32768, 131072);
	b = dbk_bal_new(&c);
	CHECK_EQ_U(disp(b, "a", 100, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 0);
	CHECK_EQ_U(disp(b, "b", 100, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 1);
	CHECK_EQ_U(disp(b, "c", 100, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 2);
	CHECK_EQ_U(disp(b, "d", 100, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 0);
	CHECK_EQ_U(rel(b, "c"), DBK_BAL_OK);
	CHECK_EQ_U(disp(b, "e", 50, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 2);
	/* Loads now 216, 108, 58: the lightest wins whatever its index. */
	CHECK_EQ_U(disp(b, "f", 1, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 2);
	CHECK_NEAR(dbk_bal_server_load(b, 2), 67, 0);
	CHECK_EQ_U(disp(b, "g", 1, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 2);
	CHECK_EQ_U(dbk_bal_server_inflight(b, 0), 2);
	CHECK_EQ_U(dbk_bal_server_inflight(b, 1), 1);
	CHECK_EQ_U(dbk_bal_server_inflight(b, 2), 3);
	CHECK_EQ_U(dbk_bal_server_inflight(b, 3), 0);
	dbk_bal_free(b);
}

static void plain_scores(void)
{
	struct dbk_bal_config c;
	struct dbk_balancer *b;
	struct dbk_bal_decision d;
	struct dbk_bal_request r = { .body_bytes = 1000, .max_tokens = 100 };

	dbk_bal_config_default(&c, 2, false, 32768, 131072);
	b = dbk_bal_new(&c);
	dbk_bal_decide(b, &r, &d);
	CHECK_NEAR(d.score, 1050, 0);
	CHECK_NEAR(d.request_tokens, 250, 0);
	r.ignore_eos = true;
	dbk_bal_decide(b, &r, &d);
	CHECK_NEAR(d.score, 1100, 0);
	r.max_tokens = 16;
	r.ignore_eos = false;
	dbk_bal_decide(b, &r, &d);
	CHECK_NEAR(d.score, 1008, 0);

	/* Out-of-range inputs are clamped, never NaN or infinite. */
	r.max_tokens = INFINITY;
	dbk_bal_decide(b, &r, &d);
	CHECK_NEAR(d.score, 1008, 0);
	r.max_tokens = NAN;
	dbk_bal_decide(b, &r, &d);
	CHECK_NEAR(d.score, 1008, 0);
	r.max_tokens = -50;
	dbk_bal_decide(b, &r, &d);
	CHECK_NEAR(d.score, 1000, 0);
	r.max_tokens = 1e308;
	dbk_bal_decide(b, &r, &d);
	CHECK_NEAR(d.score, 1000 + 0.5 * DBK_BAL_MAX_MAX_TOKENS, 0);
	r.body_bytes = NAN;
	r.max_tokens = 16;
	dbk_bal_decide(b, &r, &d);
	CHECK_NEAR(d.score, 8, 0);
	r.body_bytes = 1e300;
	dbk_bal_decide(b, &r, &d);
	CHECK_NEAR(d.score, DBK_BAL_MAX_BODY_BYTES + 8, 0);
	dbk_bal_free(b);

	/* Dynamic mode scores in tokens whatever max_tokens says. */
	b = reference_balancer(2);
	r.body_bytes = 1000;
	r.max_tokens = 5000;
	r.ignore_eos = true;
	dbk_bal_decide(b, &r, &d);
	CHECK_NEAR(d.score, 250, 0);
	dbk_bal_free(b);
}

/* ---- usability ---- */

static void unusable_servers(void)
{
	struct dbk_balancer *b = reference_balancer(4);
	struct dbk_bal_decision d;
	struct dbk_bal_request r = req(400);

	CHECK(dbk_bal_usable(b, 0));
	CHECK(!dbk_bal_usable(b, 4));
	CHECK_EQ_U(disp(b, "on0", 400, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 0);
	dbk_bal_set_usable(b, 0, false);
	dbk_bal_set_usable(b, 0, false); /* idempotent */
	CHECK(!dbk_bal_usable(b, 0));
	/* Release the lease on the unusable server: no cross-talk. */
	CHECK_EQ_U(rel(b, "on0"), DBK_BAL_OK);
	CHECK_NEAR(dbk_bal_server_load(b, 0), 0, 0);
	/* Server 0 is now the lightest, but not usable. */
	dbk_bal_decide(b, &r, &d);
	CHECK_EQ_U(d.group, 0);
	CHECK_EQ_U(d.server, 1);
	CHECK(!d.redirected);

	/* The whole short group down: its requests go to the long group. */
	dbk_bal_set_usable(b, 1, false);
	CHECK_EQ_U(disp(b, "s1", 400, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.std_bucket, 0);
	CHECK_EQ_U(d.group, 1);
	CHECK_EQ_U(d.server, 2);
	CHECK(d.redirected);
	CHECK_NEAR(dbk_bal_bucket_load(b, 1), 100, 0);
	CHECK_EQ_U(disp(b, "s2", 400, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 3);

	/* Nothing usable. */
	dbk_bal_set_usable(b, 2, false);
	dbk_bal_set_usable(b, 3, false);
	CHECK_EQ_U(disp(b, "none", 400, &d), DBK_BAL_NO_SERVER);
	CHECK_EQ_U(d.server, UINT_MAX);
	CHECK_EQ_U(dbk_bal_stats(b)->refused, 1);
	CHECK_EQ_U(dbk_bal_decide(b, &r, &d), DBK_BAL_NO_SERVER);

	/* Back up: server 0 (load 0) is chosen again. */
	dbk_bal_set_usable(b, 0, true);
	CHECK_EQ_U(disp(b, "back", 400, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 0);
	CHECK_EQ_U(d.group, 0);
	dbk_bal_set_usable(b, 7, false); /* out of range: ignored */
	dbk_bal_free(b);
}

/* Each part of the agent holds its own reason: clearing one does not
 * bring back a server another holds out, and the observer hears only
 * whole transitions. */
static unsigned out_changes;
static void count_usable(void *arg, unsigned server, bool usable)
{
	(void)arg;
	(void)server;
	(void)usable;
	out_changes++;
}

static void out_reasons(void)
{
	struct dbk_balancer *b = reference_balancer(4);
	struct dbk_bal_observer o = { .usable = count_usable };
	struct dbk_bal_decision d;

	dbk_bal_observe(b, &o);
	out_changes = 0;
	dbk_bal_set_out(b, 0, DBK_BAL_OUT_EJECTED, true);
	CHECK(!dbk_bal_usable(b, 0));
	CHECK_EQ_U(out_changes, 1);
	dbk_bal_set_usable(b, 0, false); /* HAProxy says DOWN too */
	CHECK_EQ_U(dbk_bal_out_reasons(b, 0), DBK_BAL_OUT_EJECTED | DBK_BAL_OUT_STATE);
	CHECK_EQ_U(out_changes, 1);
	dbk_bal_set_usable(b, 0, true); /* HAProxy: UP again, still ejected */
	CHECK(!dbk_bal_usable(b, 0));
	CHECK_EQ_U(disp(b, "a", 400, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 1);
	dbk_bal_set_out(b, 0, DBK_BAL_OUT_EJECTED, false);
	CHECK(dbk_bal_usable(b, 0));
	CHECK_EQ_U(dbk_bal_out_reasons(b, 0), 0);
	CHECK_EQ_U(out_changes, 2);
	CHECK_EQ_U(rel(b, "a"), DBK_BAL_OK);
	CHECK_EQ_U(disp(b, "b", 400, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 0);
	CHECK_EQ_U(dbk_bal_out_reasons(b, 9), 0); /* out of range */
	dbk_bal_set_out(b, 9, DBK_BAL_OUT_ASLEEP, true);
	dbk_bal_free(b);
}

static void unusable_group_nearest(void)
{
	const double bounds[] = { 0, 100, 200, 300 };
	struct dbk_bal_config c;
	struct dbk_balancer *b;
	struct dbk_bal_decision d;
	struct dbk_bal_request r = req(600); /* bucket 1 */

	config_buckets(&c, 3, 3, bounds);
	b = dbk_bal_new(&c);
	dbk_bal_set_usable(b, 1, false);
	/* Groups 0 and 2 are as near: the lower wins. */
	dbk_bal_decide(b, &r, &d);
	CHECK_EQ_U(d.group, 0);
	dbk_bal_set_usable(b, 0, false);
	dbk_bal_decide(b, &r, &d);
	CHECK_EQ_U(d.group, 2);
	/* From bucket 0, group 2 is two away but the only one. */
	r = req(4);
	dbk_bal_decide(b, &r, &d);
	CHECK_EQ_U(d.std_bucket, 0);
	CHECK_EQ_U(d.group, 2);
	CHECK(d.redirected);
	dbk_bal_free(b);
}

/* ---- randomized cross-check against a linear scan ---- */

struct model {
	unsigned n, nb;
	bool dynamic;
	double bounds[DBK_BAL_MAX_BUCKETS + 1];
	double load[64], bload[DBK_BAL_MAX_BUCKETS];
	unsigned inflight[64], group[64];
	bool usable[64];
};

/* The whole decision, the slow and obvious way. */
static bool model_decide(const struct model *m, double tokens, unsigned *group, unsigned *server)
{
	unsigned b = 0, g;
	double best_p = -1;
	int best = -1;

	while (b + 1 < m->nb && tokens >= m->bounds[b + 1])
		b++;
	g = b;
	for (int k = (int)b - 1; k <= (int)b + 1; k += 2) {
		if (k < 0 || k >= (int)m->nb || !(m->bload[k] < m->bload[b]))
			continue;
		double lp = m->bload[b] <= 0 ? 0 : fmin(1, fmax(0, 1 - m->bload[k] / m->bload[b]));
		double center = (m->bounds[k] + m->bounds[k + 1]) / 2;
		double half = (m->bounds[k + 1] - m->bounds[k]) / 2;
		double aff = fmin(1, fmax(0, exp(-0.1 * ((fabs(tokens - center) - half) / half))));
		if (lp * aff > best_p) {
			best_p = lp * aff;
			best = k;
		}
	}
	if (best >= 0 && best_p > 0.12)
		g = (unsigned)best;
	for (unsigned dist = 0; dist < m->nb; dist++) {
		int cand[2] = { (int)g - (int)dist, (int)g + (int)dist };

		for (int j = 0; j < 2; j++) {
			int s_best = -1;

			if (cand[j] < 0 || cand[j] >= (int)m->nb)
				continue;
			for (unsigned s = 0; s < m->n; s++)
				if (m->group[s] == (unsigned)cand[j] && m->usable[s] &&
				    (s_best < 0 || m->load[s] < m->load[s_best]))
					s_best = (int)s;
			if (s_best >= 0) {
				*group = (unsigned)cand[j];
				*server = (unsigned)s_best;
				return true;
			}
		}
	}
	return false;
}

struct live {
	char id[16];
	unsigned server, group;
	double score;
};

static void randomized_against_scan(void)
{
	uint64_t seed = UINT64_C(0x9e3779b97f4a7c15);
	unsigned mism_server = 0, mism_load = 0, dispatched = 0;

	for (unsigned round = 0; round < 40; round++) {
		struct model m = { 0 };
		struct dbk_bal_config c;
		struct dbk_balancer *b;
		struct live live[256];
		unsigned nlive = 0, counter = 0;

		m.nb = 1 + rnd_below(&seed, 4);
		m.n = m.nb + rnd_below(&seed, 40);
		m.dynamic = m.nb > 1;
		for (unsigned i = 0; i <= m.nb; i++)
			m.bounds[i] = 50.0 * i;
		if (m.dynamic)
			config_buckets(&c, m.n, m.nb, m.bounds);
		else
			dbk_bal_config_default(&c, m.n, false, 1, 2);
		b = dbk_bal_new(&c);
		for (unsigned s = 0; s < m.n; s++) {
			m.group[s] = dbk_bal_group_of(b, s);
			m.usable[s] = true;
		}

		for (unsigned op = 0; op < 1500; op++) {
			unsigned what = rnd_below(&seed, 100);

			if (what < 5) {
				unsigned s = rnd_below(&seed, m.n);

				/* Mostly usable, so that heaps stay populated. */
				m.usable[s] = rnd_below(&seed, 4) != 0;
				dbk_bal_set_usable(b, s, m.usable[s]);
			} else if (what < 55 && nlive < 256) {
				/* Small multiples of 4 bytes: many exact load ties. */
				struct dbk_bal_request r = req(4.0 * rnd_below(&seed, 60));
				struct dbk_bal_decision d;
				struct live *l = &live[nlive];
				unsigned wg = 0, ws = 0;
				bool ok = model_decide(&m, r.body_bytes / 4, &wg, &ws);
				enum dbk_bal_result res;

				r.ignore_eos = rnd_below(&seed, 2);
				snprintf(l->id, sizeof(l->id), "id%u", counter++);
				res = dbk_bal_dispatch(b, l->id, strlen(l->id), &r, op, &d);
				if (!ok) {
					CHECK_EQ_U(res, DBK_BAL_NO_SERVER);
					continue;
				}
				CHECK_EQ_U(res, DBK_BAL_OK);
				if (res != DBK_BAL_OK)
					continue;
				if (d.group != wg || d.server != ws)
					mism_server++;
				l->server = d.server;
				l->group = d.group;
				l->score = d.score;
				m.load[d.server] += d.score;
				m.bload[d.group] += d.score;
				m.inflight[d.server]++;
				nlive++;
				dispatched++;
			} else if (nlive) {
				unsigned i = rnd_below(&seed, nlive);
				struct live l = live[i];

				live[i] = live[--nlive];
				CHECK_EQ_U(rel(b, l.id), DBK_BAL_OK);
				m.load[l.server] -= l.score;
				m.bload[l.group] -= l.score;
				m.inflight[l.server]--;
			}
			for (unsigned s = 0; s < m.n; s++)
				if (dbk_bal_server_load(b, s) != m.load[s] ||
				    dbk_bal_server_inflight(b, s) != m.inflight[s])
					mism_load++;
			for (unsigned g = 0; g < m.nb; g++)
				if (dbk_bal_bucket_load(b, g) != m.bload[g])
					mism_load++;
		}
		CHECK_EQ_U(dbk_bal_stats(b)->leases, nlive);
		dbk_bal_free(b);
	}
	CHECK_EQ_U(mism_server, 0);
	CHECK_EQ_U(mism_load, 0);
	CHECK(dispatched > 10000);
}

/* ---- another policy's choice, its slot, and the observer ---- */

struct seen {
	unsigned ended, moved, usable_changes;
	struct dbk_bal_lease last;
	unsigned moved_to;
};

static void seen_ended(void *arg, const struct dbk_bal_lease *l)
{
	struct seen *s = arg;

	s->ended++;
	s->last = *l;
}

static void seen_moved(void *arg, const struct dbk_bal_lease *before, unsigned server)
{
	struct seen *s = arg;

	s->moved++;
	s->last = *before;
	s->moved_to = server;
}

static void seen_usable(void *arg, unsigned server, bool usable)
{
	struct seen *s = arg;

	(void)server;
	(void)usable;
	s->usable_changes++;
}

static void dispatch_to_slot_and_observer(void)
{
	struct dbk_bal_config c;
	struct dbk_balancer *b;
	struct dbk_bal_decision d;
	struct dbk_bal_request r = req(400);
	struct dbk_bal_lease l;
	struct seen s = { 0 };
	struct dbk_bal_observer o = { seen_ended, seen_moved, seen_usable, &s };
	const uint32_t slot[DBK_BAL_SLOT_WORDS] = { 7, 8, 9 };

	dbk_bal_config_default(&c, 4, true, 32768, 131072);
	b = dbk_bal_new(&c);
	CHECK(b != NULL);
	if (!b)
		return;
	dbk_bal_observe(b, &o);
	/* Server 3 is in the long group: taken anyway, since another policy
	 * chose it; the charge is the reference's score for the request. */
	CHECK(dbk_bal_dispatch_to(b, "a", 1, &r, 3, 10, &d) == DBK_BAL_OK);
	CHECK_EQ_U(d.server, 3);
	CHECK_EQ_U(d.group, 1);
	CHECK(d.redirected);
	CHECK_EQ_U(dbk_bal_server_inflight(b, 3), 1);
	CHECK_NEAR(dbk_bal_server_load(b, 3), d.score, 0);
	CHECK(dbk_bal_dispatch_to(b, "a", 1, &r, 0, 10, &d) == DBK_BAL_DUPLICATE);
	CHECK(dbk_bal_dispatch_to(b, "b", 1, &r, 4, 10, &d) == DBK_BAL_NO_SERVER);
	CHECK(dbk_bal_dispatch_to(b, "", 0, &r, 0, 10, &d) == DBK_BAL_BAD_ID);
	dbk_bal_set_usable(b, 2, false);
	dbk_bal_set_usable(b, 2, false); /* no change, not told */
	CHECK_EQ_U(s.usable_changes, 1);
	CHECK(dbk_bal_dispatch_to(b, "b", 1, &r, 2, 10, &d) == DBK_BAL_NO_SERVER);
	CHECK(dbk_bal_set_slot(b, "a", 1, slot));
	CHECK(!dbk_bal_set_slot(b, "zz", 2, slot));
	/* A move and a release carry the slot to the observer. */
	CHECK(dbk_bal_move(b, "a", 1, 1, NULL) == DBK_BAL_OK);
	CHECK_EQ_U(s.moved, 1);
	CHECK_EQ_U(s.last.server, 3);
	CHECK_EQ_U(s.moved_to, 1);
	CHECK_EQ_U(s.last.slot[2], 9);
	CHECK(dbk_bal_release(b, "a", 1, &l) == DBK_BAL_OK);
	CHECK_EQ_U(s.ended, 1);
	CHECK_EQ_U(s.last.server, 1);
	CHECK_EQ_U(s.last.slot[0], 7);
	CHECK_EQ_U(l.slot[1], 8);
	/* Expiry and reclaim tell it too; a plain dispatch's slot is zero. */
	CHECK(dbk_bal_dispatch_to(b, "c", 1, &r, 0, 20, NULL) == DBK_BAL_OK);
	CHECK(disp(b, "d", 100, &d) == DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_expire(b, 1000, 100, NULL, NULL), 2);
	CHECK_EQ_U(s.ended, 3);
	CHECK_EQ_U(s.last.slot[0], 0);
	CHECK(dbk_bal_dispatch_to(b, "e", 1, &r, 1, 2000, NULL) == DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_reclaim(b, 1, 1, 2000, NULL, NULL), 1);
	CHECK_EQ_U(s.ended, 4);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 0);
	dbk_bal_free(b);
}

/* ---- a changing server list ---- */

/* A balancer of n slots of which the last n - present are absent
 * decides exactly as one of the present servers alone: the slots the
 * agent keeps for servers HAProxy may add change no decision. */
static void absent_slots_change_nothing(void)
{
	uint64_t seed = UINT64_C(0x51075107);
	unsigned mism = 0;

	for (unsigned round = 0; round < 20; round++) {
		unsigned present = 2 + rnd_below(&seed, 12), extra = 1 + rnd_below(&seed, 8);
		struct dbk_balancer *a = reference_balancer(present);
		struct dbk_balancer *b = reference_balancer(present + extra);
		char id[32];

		for (unsigned s = present; s < present + extra; s++)
			dbk_bal_set_out(b, s, DBK_BAL_OUT_ABSENT, true);
		for (unsigned s = 0; s < present; s++)
			mism += dbk_bal_group_of(a, s) != dbk_bal_group_of(b, s);
		for (unsigned op = 0; op < 400; op++) {
			struct dbk_bal_decision da, db;
			double bytes = 4.0 * rnd_below(&seed, 60000);

			snprintf(id, sizeof(id), "r%u", op);
			if (rnd_below(&seed, 3) == 0 && op > 0) {
				snprintf(id, sizeof(id), "r%u", rnd_below(&seed, op));
				mism += rel(a, id) != rel(b, id);
				continue;
			}
			mism += disp(a, id, bytes, &da) != disp(b, id, bytes, &db);
			mism += da.server != db.server || da.group != db.group;
		}
		dbk_bal_free(a);
		dbk_bal_free(b);
	}
	CHECK_EQ_U(mism, 0);
}

static unsigned ended_on[8];
static void count_ended(void *arg, const struct dbk_bal_lease *l)
{
	(void)arg;
	ended_on[l->server]++;
}

/* Servers come and go: the groups are the reference's split of those
 * present, loads follow their servers, a gone server's leases end once
 * each through the observer, and its late completion finds none. */
static void servers_come_and_go(void)
{
	struct dbk_balancer *b = reference_balancer(6);
	struct dbk_bal_observer o = { .ended = count_ended };
	struct dbk_bal_decision d;
	struct dbk_bal_request r = req(400);

	dbk_bal_observe(b, &o);
	memset(ended_on, 0, sizeof(ended_on));
	dbk_bal_set_out(b, 4, DBK_BAL_OUT_ABSENT, true);
	dbk_bal_set_out(b, 5, DBK_BAL_OUT_ABSENT, true);
	/* Four present: 2 and 2. */
	CHECK_EQ_U(dbk_bal_group_of(b, 1), 0);
	CHECK_EQ_U(dbk_bal_group_of(b, 2), 1);
	CHECK_EQ_U(dbk_bal_dispatch_to(b, "x", 1, &r, 2, 0, &d), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_dispatch_to(b, "y", 1, &r, 2, 0, &d), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_dispatch_to(b, "z", 1, &r, 3, 0, &d), DBK_BAL_OK);
	CHECK_NEAR(dbk_bal_bucket_load(b, 1), 300, 0);
	/* An absent slot is never taken, nor moved to. */
	CHECK_EQ_U(dbk_bal_dispatch_to(b, "w", 1, &r, 4, 0, &d), DBK_BAL_NO_SERVER);
	CHECK_EQ_U(dbk_bal_move(b, "x", 1, 5, NULL), DBK_BAL_NO_SERVER);
	/* A fifth server: 3 and 2, and server 2 takes its load along. */
	dbk_bal_set_out(b, 4, DBK_BAL_OUT_ABSENT, false);
	CHECK(dbk_bal_usable(b, 4));
	CHECK_EQ_U(dbk_bal_group_of(b, 2), 0);
	CHECK_EQ_U(dbk_bal_group_of(b, 4), 1);
	CHECK_NEAR(dbk_bal_bucket_load(b, 0), 200, 0);
	CHECK_NEAR(dbk_bal_bucket_load(b, 1), 100, 0);
	/* Server 2 leaves: its two leases end, once each. */
	CHECK_EQ_U(dbk_bal_release_server(b, 2, NULL, NULL), 2);
	dbk_bal_set_out(b, 2, DBK_BAL_OUT_ABSENT, true);
	CHECK_EQ_U(ended_on[2], 2);
	CHECK_EQ_U(dbk_bal_stats(b)->dropped, 2);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 1);
	CHECK_NEAR(dbk_bal_server_load(b, 2), 0, 0);
	CHECK_NEAR(dbk_bal_bucket_load(b, 0) + dbk_bal_bucket_load(b, 1), 100, 0);
	CHECK_EQ_U(rel(b, "x"), DBK_BAL_UNKNOWN);
	CHECK_EQ_U(ended_on[2], 2);
	/* Four present again (0, 1, 3, 4): 2 and 2. */
	CHECK_EQ_U(dbk_bal_group_of(b, 1), 0);
	CHECK_EQ_U(dbk_bal_group_of(b, 3), 1);
	CHECK_EQ_U(rel(b, "z"), DBK_BAL_OK);
	CHECK_NEAR(dbk_bal_bucket_load(b, 1), 0, 0);
	dbk_bal_free(b);
}

/* Weights: least load per unit of weight when they differ; equal
 * weights (whatever their value) choose as the reference. */
/* Following HAProxy's backend, group sizes count the servers present:
 * they hold while they add up to them, else the reference's split. */
static void group_sizes_of_a_changing_list(void)
{
	struct dbk_bal_config c;
	struct dbk_balancer *b;

	config_buckets(&c, 8, 2, (const double[]){ 0, 100, 200 });
	c.group_sizes[0] = 3;
	c.group_sizes[1] = 1;
	CHECK(dbk_bal_config_check(&c, NULL, 0) == -1); /* a fixed list: 8 */
	c.follows = true;
	CHECK(dbk_bal_config_check(&c, NULL, 0) == 0);
	c.group_sizes[1] = 6;
	CHECK(dbk_bal_config_check(&c, NULL, 0) == -1); /* 9 > 8 slots */
	c.group_sizes[1] = 1;
	b = dbk_bal_new(&c);
	for (unsigned s = 4; s < 8; s++)
		dbk_bal_set_out(b, s, DBK_BAL_OUT_ABSENT, true);
	CHECK_EQ_U(dbk_bal_group_of(b, 2), 0);
	CHECK_EQ_U(dbk_bal_group_of(b, 3), 1);
	/* A fifth server: 3 + 1 no longer adds up, the split is 3 and 2. */
	dbk_bal_set_out(b, 4, DBK_BAL_OUT_ABSENT, false);
	CHECK_EQ_U(dbk_bal_group_of(b, 2), 0);
	CHECK_EQ_U(dbk_bal_group_of(b, 3), 1);
	CHECK_EQ_U(dbk_bal_group_of(b, 4), 1);
	dbk_bal_set_out(b, 4, DBK_BAL_OUT_ABSENT, true);
	dbk_bal_set_out(b, 0, DBK_BAL_OUT_ABSENT, true);
	/* Three present (1, 2, 3): 2 and 1 by the split. */
	CHECK_EQ_U(dbk_bal_group_of(b, 2), 0);
	CHECK_EQ_U(dbk_bal_group_of(b, 3), 1);
	dbk_bal_free(b);
}

static void weighted_least_load(void)
{
	struct dbk_bal_config c;
	struct dbk_balancer *b;
	struct dbk_bal_decision d;
	unsigned count[2] = { 0, 0 };
	char id[16];

	dbk_bal_config_default(&c, 2, false, 1, 2);
	b = dbk_bal_new(&c);
	dbk_bal_set_weight(b, 0, 10);
	dbk_bal_set_weight(b, 1, 3);
	CHECK_NEAR(dbk_bal_weight(b, 0), 10, 0);
	for (unsigned i = 0; i < 130; i++) {
		snprintf(id, sizeof(id), "w%u", i);
		CHECK_EQ_U(disp(b, id, 400, &d), DBK_BAL_OK);
		count[d.server]++;
	}
	CHECK_EQ_U(count[0], 100);
	CHECK_EQ_U(count[1], 30);
	/* 0 and negative weights are ignored (0 is a drain: the state's). */
	dbk_bal_set_weight(b, 1, 0);
	CHECK_NEAR(dbk_bal_weight(b, 1), 3, 0);
	/* Equal again: the lighter (server 1) first, as the reference. */
	dbk_bal_set_weight(b, 0, 3);
	CHECK_EQ_U(disp(b, "eq", 400, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 1);
	/* An absent server's weight does not count. */
	dbk_bal_set_weight(b, 1, 7);
	dbk_bal_set_out(b, 1, DBK_BAL_OUT_ABSENT, true);
	CHECK_EQ_U(disp(b, "only", 400, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 0);
	dbk_bal_free(b);
}

int main(void)
{
	RUN(config_default_is_reference);
	RUN(config_errors);
	RUN(groups_split);
	RUN(standard_bucket_edges);
	RUN(worked_example);
	RUN(redirect_threshold_strict);
	RUN(redirect_three_buckets);
	RUN(least_loaded_tie_by_index);
	RUN(plain_scores);
	RUN(unusable_servers);
	RUN(out_reasons);
	RUN(unusable_group_nearest);
	RUN(randomized_against_scan);
	RUN(dispatch_to_slot_and_observer);
	RUN(absent_slots_change_nothing);
	RUN(servers_come_and_go);
	RUN(weighted_least_load);
	RUN(group_sizes_of_a_changing_list);
	return CHECK_DONE();
}
