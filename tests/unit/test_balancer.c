/* Unit tests of the balancer (agent/balancer.c) and its lease table
 * (agent/leases.c). */
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "balancer.h"
#include "check.h"
#include "leases.h"

/* ---- helpers ---- */

static uint64_t rnd(uint64_t *s)
{
	/* xorshift64*: a fixed seed keeps the randomized tests repeatable. */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

static unsigned rnd_below(uint64_t *s, unsigned n)
{
	return (unsigned)(rnd(s) % n);
}

static struct dbk_bal_request req(double body_bytes)
{
	struct dbk_bal_request r = { .body_bytes = body_bytes, .max_tokens = 16 };

	return r;
}

/* Dispatch by a C-string id. */
static enum dbk_bal_result disp(struct dbk_balancer *b, const char *id, double bytes,
                                struct dbk_bal_decision *d)
{
	struct dbk_bal_request r = req(bytes);

	return dbk_bal_dispatch(b, id, strlen(id), &r, 0, d);
}

static enum dbk_bal_result rel(struct dbk_balancer *b, const char *id)
{
	return dbk_bal_release(b, id, strlen(id), NULL);
}

/* Two or more buckets of the given bounds (nb + 1 values), dynamic. */
static void config_buckets(struct dbk_bal_config *c, unsigned nservers, unsigned nb,
                           const double *bounds)
{
	dbk_bal_config_default(c, nservers, true, 1, 2);
	c->nbuckets = nb;
	for (unsigned i = 0; i <= nb; i++)
		c->bounds[i] = bounds[i];
}

static struct dbk_balancer *reference_balancer(unsigned nservers)
{
	struct dbk_bal_config c;

	dbk_bal_config_default(&c, nservers, true, 32768, 131072);
	return dbk_bal_new(&c);
}

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
	dbk_bal_config_default(&c, DBK_BAL_MAX_SERVERS + 1, false, 32768, 131072);
	CHECK(check_fails_with(&c, "servers"));
	dbk_bal_config_default(&c, 4, true, 131072, 131072);
	CHECK(check_fails_with(&c,
	      "--server-group-threshold (131072) must be below --max-request-tokens (131072)"));
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
	const double neg[] = { -1, 10 , 20 };
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
				CHECK(g >= prev);   /* in list order */
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
		{ 0, 0 }, { 4, 0 }, { 4.0 * 32768 - 1, 0 }, { 4.0 * 32768, 1 },
		{ 4.0 * 32768 + 1, 1 }, { 4.0 * 131072 - 1, 1 }, { 4.0 * 131072, 1 },
		{ 1e12, 1 }, { -5, 0 }, { NAN, 0 }, { INFINITY, 1 },
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
	} c3[] = { { 0, 0 }, { 99.75, 0 }, { 100, 1 }, { 199.75, 1 }, { 200, 2 },
	           { 300, 2 }, { 1e9, 2 } };
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

/* ---- leases ---- */

static void release_exactly_once(void)
{
	struct dbk_balancer *b = reference_balancer(4);
	struct dbk_bal_decision d;
	struct dbk_bal_lease l;

	CHECK_EQ_U(disp(b, "x", 4000, &d), DBK_BAL_OK);
	/* Short too, but the long group is empty: redirected there. */
	CHECK_EQ_U(disp(b, "y", 2000, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 2);
	CHECK_EQ_U(dbk_bal_release(b, "x", 1, &l), DBK_BAL_OK);
	CHECK_EQ_U(l.server, 0);
	CHECK_EQ_U(l.group, 0);
	CHECK_NEAR(l.score, 1000, 0);
	CHECK_EQ_U(dbk_bal_server_inflight(b, 0), 0);
	CHECK_NEAR(dbk_bal_server_load(b, 0), 0, 0);
	CHECK_NEAR(dbk_bal_server_load(b, 2), 500, 0);
	CHECK_NEAR(dbk_bal_bucket_load(b, 0), 0, 0);
	CHECK_NEAR(dbk_bal_bucket_load(b, 1), 500, 0);
	CHECK_EQ_U(rel(b, "x"), DBK_BAL_UNKNOWN);
	CHECK_EQ_U(rel(b, "never"), DBK_BAL_UNKNOWN);
	CHECK_NEAR(dbk_bal_server_load(b, 0), 0, 0);
	CHECK_NEAR(dbk_bal_server_load(b, 2), 500, 0);
	CHECK_NEAR(dbk_bal_bucket_load(b, 0), 0, 0);
	CHECK_NEAR(dbk_bal_bucket_load(b, 1), 500, 0);
	CHECK_EQ_U(dbk_bal_server_inflight(b, 2), 1);
	CHECK_EQ_U(dbk_bal_stats(b)->unknown_releases, 2);
	CHECK_EQ_U(dbk_bal_stats(b)->releases, 1);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 1);
	/* The id is free again. */
	CHECK_EQ_U(disp(b, "x", 4000, &d), DBK_BAL_OK);
	dbk_bal_free(b);   /* with live leases: ASan checks nothing leaks */
}

static void duplicate_dispatch(void)
{
	struct dbk_balancer *b = reference_balancer(4);
	struct dbk_bal_decision d;

	CHECK_EQ_U(disp(b, "same", 4000, &d), DBK_BAL_OK);
	CHECK_EQ_U(disp(b, "same", 8000, &d), DBK_BAL_DUPLICATE);
	CHECK_EQ_U(d.server, UINT_MAX);
	CHECK_NEAR(d.score, 2000, 0);
	CHECK_NEAR(dbk_bal_server_load(b, 0), 1000, 0);
	CHECK_NEAR(dbk_bal_server_load(b, 1), 0, 0);
	CHECK_NEAR(dbk_bal_bucket_load(b, 0), 1000, 0);
	CHECK_EQ_U(dbk_bal_server_inflight(b, 0), 1);
	CHECK_EQ_U(dbk_bal_stats(b)->duplicates, 1);
	CHECK_EQ_U(dbk_bal_stats(b)->decisions, 1);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 1);
	/* Ids are byte strings: a prefix is another id. */
	CHECK_EQ_U(disp(b, "sam", 4000, &d), DBK_BAL_OK);
	struct dbk_bal_request r = req(4);

	CHECK_EQ_U(dbk_bal_dispatch(b, "same\0x", 6, &r, 0, NULL), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 3);
	dbk_bal_free(b);
}

static void bad_ids(void)
{
	struct dbk_balancer *b = reference_balancer(2);
	struct dbk_bal_request r = req(4);
	char id[DBK_BAL_MAX_ID_LEN + 1];

	memset(id, 'i', sizeof(id));
	CHECK_EQ_U(dbk_bal_dispatch(b, "", 0, &r, 0, NULL), DBK_BAL_BAD_ID);
	CHECK_EQ_U(dbk_bal_dispatch(b, NULL, 3, &r, 0, NULL), DBK_BAL_BAD_ID);
	CHECK_EQ_U(dbk_bal_dispatch(b, id, sizeof(id), &r, 0, NULL), DBK_BAL_BAD_ID);
	CHECK_EQ_U(dbk_bal_dispatch(b, id, sizeof(id) - 1, &r, 0, NULL), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_release(b, id, sizeof(id), NULL), DBK_BAL_BAD_ID);
	CHECK_EQ_U(dbk_bal_release(b, id, sizeof(id) - 1, NULL), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_stats(b)->bad_ids, 4);
	CHECK_NEAR(dbk_bal_server_load(b, 0), 0, 0);
	for (int i = DBK_BAL_OK; i <= DBK_BAL_BAD_ID; i++)
		CHECK(strcmp(dbk_bal_result_str((enum dbk_bal_result)i), "?") != 0);
	dbk_bal_free(b);
}

static void max_leases(void)
{
	struct dbk_bal_config c;
	struct dbk_balancer *b;
	struct dbk_bal_decision d;

	dbk_bal_config_default(&c, 2, false, 32768, 131072);
	c.max_leases = 2;
	b = dbk_bal_new(&c);
	CHECK_EQ_U(disp(b, "1", 10, &d), DBK_BAL_OK);
	CHECK_EQ_U(disp(b, "2", 10, &d), DBK_BAL_OK);
	CHECK_EQ_U(disp(b, "3", 10, &d), DBK_BAL_FULL);
	/* A duplicate is reported as such even when full. */
	CHECK_EQ_U(disp(b, "2", 10, &d), DBK_BAL_DUPLICATE);
	CHECK_EQ_U(dbk_bal_stats(b)->refused, 1);
	CHECK_NEAR(dbk_bal_server_load(b, 0) + dbk_bal_server_load(b, 1), 36, 0);
	CHECK_EQ_U(rel(b, "1"), DBK_BAL_OK);
	CHECK_EQ_U(disp(b, "3", 10, &d), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 2);
	dbk_bal_free(b);
}

struct expired_log {
	char ids[8][8];
	double scores[8];
	unsigned n;
	struct dbk_balancer *b;
	double load_seen;
};

static void on_expired(void *arg, const char *id, size_t id_len,
                       const struct dbk_bal_lease *l)
{
	struct expired_log *log = arg;

	if (log->n < 8 && id_len < 8) {
		memcpy(log->ids[log->n], id, id_len);
		log->ids[log->n][id_len] = '\0';
		log->scores[log->n] = l->score;
		/* The lease is already given back when the callback runs. */
		log->load_seen = dbk_bal_server_load(log->b, l->server);
	}
	log->n++;
}

static void expire_in_order(void)
{
	struct dbk_bal_config c;
	struct dbk_balancer *b;
	struct dbk_bal_request r = req(40);
	struct expired_log log = { .n = 0 };

	dbk_bal_config_default(&c, 1, false, 32768, 131072);
	b = dbk_bal_new(&c);
	log.b = b;
	CHECK_EQ_U(dbk_bal_dispatch(b, "a", 1, &r, 0, NULL), DBK_BAL_OK);
	r.body_bytes = 80;
	CHECK_EQ_U(dbk_bal_dispatch(b, "b", 1, &r, 10, NULL), DBK_BAL_OK);
	r.body_bytes = 120;
	CHECK_EQ_U(dbk_bal_dispatch(b, "c", 1, &r, 20, NULL), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_dispatch(b, "d", 1, &r, 30, NULL), DBK_BAL_OK);
	/* b is released early: expiry skips it. */
	CHECK_EQ_U(rel(b, "b"), DBK_BAL_OK);

	CHECK_EQ_U(dbk_bal_expire(b, 5, 10, on_expired, &log), 0);   /* now < ttl */
	CHECK_EQ_U(dbk_bal_expire(b, 9, 10, on_expired, &log), 0);
	CHECK_EQ_U(dbk_bal_expire(b, 30, 10, on_expired, &log), 2);  /* a@0, c@20 */
	CHECK_EQ_U(log.n, 2);
	CHECK(strcmp(log.ids[0], "a") == 0);
	CHECK(strcmp(log.ids[1], "c") == 0);
	CHECK_NEAR(log.scores[0], 48, 0);
	CHECK_NEAR(log.scores[1], 128, 0);
	CHECK_NEAR(log.load_seen, 128, 0);
	CHECK_NEAR(dbk_bal_server_load(b, 0), 128, 0);
	CHECK_EQ_U(dbk_bal_server_inflight(b, 0), 1);
	CHECK_EQ_U(dbk_bal_stats(b)->expired, 2);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 1);
	CHECK_EQ_U(rel(b, "a"), DBK_BAL_UNKNOWN);
	/* ttl 0 takes everything started up to now, without a callback. */
	CHECK_EQ_U(dbk_bal_expire(b, 30, 0, NULL, NULL), 1);
	CHECK_NEAR(dbk_bal_server_load(b, 0), 0, 0);
	CHECK_EQ_U(dbk_bal_expire(b, 1000, 0, NULL, NULL), 0);
	dbk_bal_free(b);
}

/* A completion that overtook its decision: the id is buried, its late
 * dispatch takes no lease, and burial is forgotten in time. */
static void buried_ids_take_no_lease(void)
{
	struct dbk_bal_config c;
	struct dbk_balancer *b;
	struct dbk_bal_decision d;
	struct dbk_bal_request r = req(100);

	dbk_bal_config_default(&c, 2, true, 32768, 131072);
	b = dbk_bal_new(&c);
	dbk_bal_bury(b, "late", 4, 1000);
	CHECK_EQ_U(dbk_bal_dispatch(b, "late", 4, &r, 1001, &d), DBK_BAL_ENDED);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 0);
	CHECK_EQ_U(dbk_bal_stats(b)->ended, 1);
	CHECK_NEAR(dbk_bal_server_load(b, 0), 0, 0);
	/* A burial lasts until it expires: a NOTIFY that came twice takes
	 * no lease either, and a second completion copy is told apart. */
	CHECK_EQ_U(dbk_bal_dispatch(b, "late", 4, &r, 1002, &d), DBK_BAL_ENDED);
	CHECK(!dbk_bal_holds(b, "late", 4));
	CHECK(dbk_bal_ended(b, "late", 4));
	CHECK(!dbk_bal_ended(b, "other", 5));
	CHECK(!dbk_bal_ended(b, "", 0));
	dbk_bal_bury(b, "late", 4, 1003);
	CHECK_EQ_U(dbk_bal_dispatch(b, "late", 4, &r, 1004, &d), DBK_BAL_ENDED);
	CHECK_EQ_U(dbk_bal_stats(b)->ended, 3);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 0);

	/* Expiry forgets old burials only. */
	dbk_bal_bury(b, "x", 1, 2000);
	dbk_bal_bury(b, "y", 1, 5000);
	dbk_bal_expire_buried(b, 12000, 10000);
	CHECK(!dbk_bal_ended(b, "late", 4));
	CHECK(!dbk_bal_ended(b, "x", 1));
	CHECK(dbk_bal_ended(b, "y", 1));
	CHECK_EQ_U(dbk_bal_dispatch(b, "x", 1, &r, 12000, &d), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_dispatch(b, "y", 1, &r, 12000, &d), DBK_BAL_ENDED);

	/* Bounded: the oldest burial goes first. */
	char id[16];
	for (unsigned i = 0; i <= DBK_BAL_MAX_BURIED; i++) {
		snprintf(id, sizeof(id), "b%u", i);
		dbk_bal_bury(b, id, strlen(id), 20000);
	}
	CHECK_EQ_U(dbk_bal_dispatch(b, "b0", 2, &r, 20000, &d), DBK_BAL_OK);
	snprintf(id, sizeof(id), "b%u", DBK_BAL_MAX_BURIED);
	CHECK_EQ_U(dbk_bal_dispatch(b, id, strlen(id), &r, 20000, &d), DBK_BAL_ENDED);
	dbk_bal_free(b);
}

/* Reclaim takes the oldest leases of one server only, and as many as asked. */
static void reclaim_oldest_of_server(void)
{
	struct dbk_bal_config c;
	struct dbk_balancer *b;
	struct dbk_bal_decision d;
	struct expired_log log = { .n = 0 };

	dbk_bal_config_default(&c, 2, false, 32768, 131072);
	b = dbk_bal_new(&c);
	log.b = b;
	/* Plain mode, least load: a,c,e land on server 0, b,d on server 1. */
	CHECK_EQ_U(disp(b, "a", 100, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 0);
	CHECK_EQ_U(disp(b, "b", 100, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 1);
	CHECK_EQ_U(disp(b, "c", 100, &d), DBK_BAL_OK);
	CHECK_EQ_U(disp(b, "d", 100, &d), DBK_BAL_OK);
	CHECK_EQ_U(disp(b, "e", 100, &d), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_server_inflight(b, 0), 3);

	/* disp() dates every lease 0: a cutoff of 0 admits them all. */
	CHECK_EQ_U(dbk_bal_reclaim(b, 0, 2, 0, on_expired, &log), 2);
	CHECK_EQ_U(log.n, 2);
	CHECK(strcmp(log.ids[0], "a") == 0);
	CHECK(strcmp(log.ids[1], "c") == 0);
	CHECK_EQ_U(dbk_bal_server_inflight(b, 0), 1);
	CHECK_EQ_U(dbk_bal_server_inflight(b, 1), 2);
	CHECK_NEAR(dbk_bal_server_load(b, 0), 108, 0);
	CHECK_EQ_U(dbk_bal_stats(b)->reclaimed, 2);
	/* Asking for more than there is takes what there is. */
	CHECK_EQ_U(dbk_bal_reclaim(b, 0, 10, 0, NULL, NULL), 1);
	CHECK_EQ_U(dbk_bal_reclaim(b, 0, 10, 0, NULL, NULL), 0);
	/* Too young to be a leak: kept. */
	struct dbk_bal_request r = req(100);
	CHECK_EQ_U(dbk_bal_dispatch(b, "young", 5, &r, 500, &d), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_reclaim(b, d.server, 10, 499, NULL, NULL), 0);
	CHECK_EQ_U(dbk_bal_reclaim(b, d.server, 10, 500, NULL, NULL), 1);
	CHECK_EQ_U(rel(b, "a"), DBK_BAL_UNKNOWN);
	CHECK_EQ_U(rel(b, "b"), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 1);
	dbk_bal_free(b);
}

/* A callback that dispatches an already-expired lease for each expiry:
 * the walk must still end. */
static void redispatch(void *arg, const char *id, size_t id_len,
                       const struct dbk_bal_lease *l)
{
	struct dbk_balancer *b = arg;
	struct dbk_bal_request r = req(4);

	(void)id;
	(void)id_len;
	(void)l;
	char nid[32];
	snprintf(nid, sizeof(nid), "re%zu", dbk_bal_stats(b)->leases + dbk_bal_stats(b)->expired);
	dbk_bal_dispatch(b, nid, strlen(nid), &r, 0, NULL);
}

static void expire_reentrant(void)
{
	struct dbk_balancer *b = reference_balancer(2);
	struct dbk_bal_request r = req(4);

	CHECK_EQ_U(dbk_bal_dispatch(b, "a", 1, &r, 0, NULL), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_dispatch(b, "b", 1, &r, 0, NULL), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_expire(b, 100, 10, redispatch, b), 2);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 2);
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
	dbk_bal_set_usable(b, 0, false);   /* idempotent */
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
	dbk_bal_set_usable(b, 7, false);   /* out of range: ignored */
	dbk_bal_free(b);
}

static void unusable_group_nearest(void)
{
	const double bounds[] = { 0, 100, 200, 300 };
	struct dbk_bal_config c;
	struct dbk_balancer *b;
	struct dbk_bal_decision d;
	struct dbk_bal_request r = req(600);   /* bucket 1 */

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
static bool model_decide(const struct model *m, double tokens, unsigned *group,
                         unsigned *server)
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

/* ---- the lease table on its own ---- */

static void lease_table_basics(void)
{
	struct dbk_lease_table t;
	struct dbk_bal_lease v = { .server = 1, .group = 0, .score = 2.5, .start_ms = 7 };
	struct dbk_lease *e, *e2;
	char id[32];
	enum { N = 20000 };

	CHECK_EQ_U(dbk_lease_init(&t, 42), 0);
	CHECK_EQ_U(dbk_lease_capacity(&t), 16);
	for (unsigned i = 0; i < N; i++) {
		snprintf(id, sizeof(id), "req-%u", i);
		v.server = i;
		CHECK_EQ_U(dbk_lease_insert(&t, id, strlen(id), &v, &e), DBK_LEASE_INSERTED);
	}
	CHECK_EQ_U(dbk_lease_count(&t), N);
	CHECK(dbk_lease_capacity(&t) >= N);
	/* Everything is found, with its value, after the rehashes. */
	unsigned found = 0;
	for (unsigned i = 0; i < N; i++) {
		snprintf(id, sizeof(id), "req-%u", i);
		e = dbk_lease_find(&t, id, strlen(id));
		if (e && e->val.server == i && e->id_len == strlen(id) &&
		    strcmp(e->id, id) == 0)
			found++;
	}
	CHECK_EQ_U(found, N);
	CHECK(!dbk_lease_find(&t, "req-", 4));
	CHECK(!dbk_lease_find(&t, "req-1x", 6));
	/* Insertion order survives the rehashes. */
	unsigned in_order = 0, i = 0;
	for (e = dbk_lease_oldest(&t); e; e = dbk_lease_newer(e), i++)
		if (e->val.server == i)
			in_order++;
	CHECK_EQ_U(in_order, N);
	/* An existing id hands back the entry. */
	CHECK_EQ_U(dbk_lease_insert(&t, "req-5", 5, &v, &e2), DBK_LEASE_EXISTS);
	CHECK_EQ_U(e2->val.server, 5);
	/* Delete the odd ones by id. */
	unsigned removed = 0;
	for (i = 1; i < N; i += 2) {
		struct dbk_bal_lease out;

		snprintf(id, sizeof(id), "req-%u", i);
		if (dbk_lease_remove(&t, id, strlen(id), &out) && out.server == i)
			removed++;
	}
	CHECK_EQ_U(removed, N / 2);
	CHECK(!dbk_lease_remove(&t, "req-1", 5, NULL));
	CHECK_EQ_U(dbk_lease_count(&t), N / 2);
	unsigned even = 0;
	i = 0;
	for (e = dbk_lease_oldest(&t); e; e = dbk_lease_newer(e), i += 2)
		if (e->val.server == i)
			even++;
	CHECK_EQ_U(even, N / 2);
	dbk_lease_fini(&t);
	CHECK_EQ_U(dbk_lease_count(&t), 0);
}

/* Ids as HAProxy's unique-id-format makes them differ in a few
 * characters; every length from 1 to 48 exercises each tail of the hash.
 * With about as many slots as entries, chains stay short (6 or 7 here,
 * as for entries thrown at random; a poor hash gives hundreds). */
static void lease_table_spread(void)
{
	struct dbk_lease_table t;
	struct dbk_bal_lease v = { .server = 0 };
	char id[64];
	enum { N = 100000 };
	size_t inserted = 0;

	CHECK_EQ_U(dbk_lease_init(&t, 7), 0);
	for (unsigned i = 0; i < N; i++) {
		int n = snprintf(id, sizeof(id), "7F000001%04X-%u-%08X", i % 7, i, i * 2654435761u);
		size_t len = 1 + i % 48;

		if (len > (size_t)n)
			len = (size_t)n;
		/* Short lengths repeat: count only what went in. */
		if (dbk_lease_insert(&t, id + (size_t)n - len, len, &v, NULL) == DBK_LEASE_INSERTED)
			inserted++;
	}
	CHECK_EQ_U(dbk_lease_count(&t), inserted);
	CHECK(inserted > N / 2);
	CHECK(dbk_lease_longest_chain(&t) <= 12);
	dbk_lease_fini(&t);
}

static void lease_table_delete_while_walking(void)
{
	struct dbk_lease_table t;
	struct dbk_bal_lease v = { 0 };
	struct dbk_lease *e;
	char id[16];

	CHECK_EQ_U(dbk_lease_init(&t, 1), 0);
	for (unsigned i = 0; i < 100; i++) {
		snprintf(id, sizeof(id), "%u", i);
		v.start_ms = i;
		dbk_lease_insert(&t, id, strlen(id), &v, NULL);
	}
	/* Walk oldest first, deleting every third entry as we go. */
	e = dbk_lease_oldest(&t);
	while (e) {
		struct dbk_lease *next = dbk_lease_newer(e);

		if (e->val.start_ms % 3 == 0)
			dbk_lease_delete(&t, e);
		e = next;
	}
	CHECK_EQ_U(dbk_lease_count(&t), 66);
	uint64_t prev = 0;
	unsigned seen = 0, bad = 0;
	for (e = dbk_lease_oldest(&t); e; e = dbk_lease_newer(e), seen++) {
		if (e->val.start_ms % 3 == 0 || (seen && e->val.start_ms <= prev))
			bad++;
		prev = e->val.start_ms;
	}
	CHECK_EQ_U(seen, 66);
	CHECK_EQ_U(bad, 0);
	/* Pop the oldest until empty, as expiry does. */
	unsigned popped = 0;
	while ((e = dbk_lease_oldest(&t))) {
		char copy[16];

		dbk_lease_unlink(&t, e);
		memcpy(copy, e->id, e->id_len + 1);   /* readable after unlink */
		dbk_lease_free(e);
		if (!dbk_lease_find(&t, copy, strlen(copy)))
			popped++;
	}
	CHECK_EQ_U(popped, 66);
	CHECK(!dbk_lease_oldest(&t));
	/* Reusable after emptying. */
	CHECK_EQ_U(dbk_lease_insert(&t, "z", 1, &v, NULL), DBK_LEASE_INSERTED);
	CHECK_EQ_U(dbk_lease_count(&t), 1);
	/* Ids are bytes: embedded NULs and prefixes are distinct. */
	CHECK_EQ_U(dbk_lease_insert(&t, "z\0", 2, &v, NULL), DBK_LEASE_INSERTED);
	CHECK_EQ_U(dbk_lease_insert(&t, "z\0a", 3, &v, NULL), DBK_LEASE_INSERTED);
	CHECK_EQ_U(dbk_lease_count(&t), 3);
	CHECK(dbk_lease_find(&t, "z\0", 2) != dbk_lease_find(&t, "z", 1));
	dbk_lease_fini(&t);
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
	RUN(release_exactly_once);
	RUN(duplicate_dispatch);
	RUN(bad_ids);
	RUN(max_leases);
	RUN(expire_in_order);
	RUN(expire_reentrant);
	RUN(reclaim_oldest_of_server);
	RUN(buried_ids_take_no_lease);
	RUN(unusable_servers);
	RUN(unusable_group_nearest);
	RUN(randomized_against_scan);
	RUN(lease_table_basics);
	RUN(lease_table_spread);
	RUN(lease_table_delete_while_walking);
	return CHECK_DONE();
}
