/* A server's speed learnt from its requests' whole durations
 * (agent/predict_learn.h, and the predictor's use of it): the fit, its
 * prior, and a slow server learnt
 * within 100 requests with no scraped histogram at all. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "lib/hash.h"
#include "predict.h"
#include "predict_learn.h"

/* Rows of y = 2 x1 + 1.5 x2 over varied mixes of first token and
 * decode: the fit finds both, the prior (1, 1) worth 4 rows fading. */
static void test_fit_recovers_both_speeds(void)
{
	struct dbk_plearn l = { 0 };
	double a, b;

	dbk_plearn_solve(&l, 1.2, 0.8, &a, &b);
	CHECK_NEAR(a, 1.2, 0); /* nothing seen: the prior */
	CHECK_NEAR(b, 0.8, 0);
	for (unsigned k = 0; k < 100; k++) {
		double x1 = 0.05 + 0.1 * (k % 7), x2 = 0.02 + 0.3 * (k % 5);
		dbk_plearn_add(&l, x1, x2, 2 * x1 + 1.5 * x2, 1);
	}
	dbk_plearn_solve(&l, 1, 1, &a, &b);
	CHECK_NEAR(a, 2, 0.1);
	CHECK_NEAR(b, 1.5, 0.075);
	/* Exact rows: no scatter, errors near 0; the same with noise
	 * (every other duration 40% off), clearly not. */
	double ea, eb;
	dbk_plearn_errors(&l, a, b, &ea, &eb);
	CHECK(ea < 0.05 && eb < 0.05);
	struct dbk_plearn noisy = { 0 };
	for (unsigned k = 0; k < 100; k++) {
		double x1 = 0.05 + 0.1 * (k % 7), x2 = 0.02 + 0.3 * (k % 5);
		dbk_plearn_add(&noisy, x1, x2, (2 * x1 + 1.5 * x2) * (k % 2 ? 1.4 : 0.6), 1);
	}
	double na, nb, nea, neb;
	dbk_plearn_solve(&noisy, 1, 1, &na, &nb);
	dbk_plearn_errors(&noisy, na, nb, &nea, &neb);
	CHECK(nea > 4 * ea && neb > 4 * eb && nea < 1 && neb < 1);
	struct dbk_plearn two = { 0 };
	dbk_plearn_add(&two, 0.1, 0.1, 0.2, 1);
	dbk_plearn_errors(&two, 1, 1, &ea, &eb);
	CHECK(isinf(ea) && isinf(eb)); /* too few rows to say */
	/* Rows that are not observations are ignored. */
	struct dbk_plearn before = l;
	dbk_plearn_add(&l, 0, 0, 1, 1);
	dbk_plearn_add(&l, 0.1, 0.1, -1, 1);
	dbk_plearn_add(&l, NAN, 0.1, 1, 1);
	dbk_plearn_add(&l, 0.1, 0.1, INFINITY, 1);
	CHECK(memcmp(&l, &before, sizeof(l)) == 0);
}

/* One duration a thousand times the prediction (a lease that expired)
 * counts as 16 times (PRED_LEARN_CLAMP): among 100 ordinary ones it
 * moves the fit by 30% at most (26% of a: the split's prior is worth
 * one request, dbk_plearn_solve), where unclamped it would make the
 * server look hundreds of times slower. */
static void test_a_wild_duration_moves_little(void)
{
	struct dbk_plearn l = { 0 };
	double a, b;

	for (unsigned k = 0; k < 100; k++) {
		double x1 = 0.05 + 0.1 * (k % 7), x2 = 0.02 + 0.3 * (k % 5);
		dbk_plearn_add(&l, x1, x2, x1 + x2, 1);
	}
	dbk_plearn_add(&l, 0.3, 0.3, 600, 1);
	dbk_plearn_solve(&l, 1, 1, &a, &b);
	CHECK(a > 1 && a < 1.3);
	CHECK(b > 1 && b < 1.3);
}

/* Rows all alike (every request 30% first token, 70% decode at the
 * fleet's speed) cannot tell a from b: the fit scales both in the
 * prior's ratio. A ridge towards the prior itself moved them along the
 * rows' mix instead, b more than a (a prefill 3x slow read as 1.31 and
 * 1.72 on main's build). */
static void test_alike_rows_scale_both(void)
{
	struct dbk_plearn l = { 0 };
	double a, b;

	for (unsigned k = 0; k < 200; k++)
		dbk_plearn_add(&l, 0.03, 0.07, 3 * 0.03 + 0.07, 1);
	dbk_plearn_solve(&l, 1, 1, &a, &b);
	CHECK_NEAR(a / b, 1, 0.02);
	CHECK_NEAR(0.3 * a + 0.7 * b, 1.6, 0.05);
	dbk_plearn_solve(&l, 1, 2, &a, &b); /* the prior's ratio, whatever it is */
	CHECK_NEAR(b / a, 2, 0.04);
	CHECK_NEAR(0.3 * a + 0.7 * b, 1.6, 0.05);
}

static struct dbk_pred *fleet(unsigned n)
{
	struct dbk_pred_config c;

	dbk_pred_config_default(&c, n);
	return dbk_pred_new(&c);
}

static void view(const struct dbk_pred *p, unsigned i, double *prefill, double *decode)
{
	struct dbk_pred_view v;

	dbk_pred_view(p, i, 0, &v);
	*prefill = v.slowness;
	*decode = v.decode_slowness;
}

/* Server 3's factors over server 0's. */
static void ratios(const struct dbk_pred *p, double *rp, double *rd)
{
	double pre, dec, pre0, dec0;

	view(p, 3, &pre, &dec);
	view(p, 0, &pre0, &dec0);
	*rp = pre / pre0;
	*rd = dec / dec0;
}

/* n rounds of one request to each of the first m of 4 servers, every
 * 100 ms, each alone on its server (released before the next is sent),
 * of varied prompt and output; server 3 prefills pre times and decodes
 * dec times as slowly as the engine model, which the others match (0:
 * it answers at once), and its requests end unserved when refused3
 * (dbk_pred_release_unserved). Its duration is what the completion
 * line gives (commit to end, 1 ms at least); no scrape at all. */
static void serve_ends(struct dbk_pred *p, struct dbk_pred *truth, unsigned n, unsigned m,
                       double pre, double dec, bool refused3, uint64_t *now)
{
	for (unsigned k = 0; k < n; k++)
		for (unsigned i = 0; i < m; i++, *now += 100) {
			struct dbk_pred_request r = { .prompt_tokens = 300 + 700 * (k % 9),
				                      .max_tokens = 8 + 37 * (k % 8),
				                      .ignore_eos = true };
			struct dbk_pred_choice c;
			struct dbk_pred_ticket t;

			CHECK(dbk_pred_evaluate(truth, &r, i, *now, &c) == (int)i);
			double y = (i == 3 ? pre : 1) * c.ttft_s +
			           (i == 3 ? dec : 1) * (r.max_tokens - 1) * c.tpot_s;
			uint64_t end = *now + (uint64_t)fmax(1, (double)llround(y * 1000));
			dbk_pred_commit(p, &r, i, *now, &t);
			if (i == 3 && refused3)
				dbk_pred_release_unserved(p, &t, end);
			else
				dbk_pred_release(p, &t, end);
		}
}

static void serve_some(struct dbk_pred *p, struct dbk_pred *truth, unsigned n, unsigned m,
                       double pre, double dec, uint64_t *now)
{
	serve_ends(p, truth, n, m, pre, dec, false, now);
}

static void serve_rounds(struct dbk_pred *p, struct dbk_pred *truth, unsigned n, double pre,
                         double dec, uint64_t *now)
{
	serve_some(p, truth, n, 4, pre, dec, now);
}

/* A fleet of 4 after 100 rounds with server 3 pre and dec times slower
 * (serve_rounds); its factors over server 0's in rp and rd. */
static struct dbk_pred *learnt(double pre, double dec, double *rp, double *rd)
{
	struct dbk_pred *p = fleet(4), *truth = fleet(4);
	uint64_t now = 1000;

	serve_rounds(p, truth, 100, pre, dec, &now);
	dbk_pred_free(truth);
	ratios(p, rp, rd);
	return p;
}

/* The goal: a server 2x slower (prefill and decode) learnt
 * within 100 requests to it, to within 10% of 2x its peers (CHECK_NEAR
 * is relative). Before the durations, only the scraped first-token
 * histogram taught a speed, so without one nothing was learnt; with
 * them but a ridge towards the unscaled prior, its prefill, a small
 * share of these requests' time, was 1.53 after 100 (decode 1.99). */
static void test_a_2x_slower_server_learnt_within_100(void)
{
	double rp, rd, pre0, dec0;
	struct dbk_pred *p = learnt(2, 2, &rp, &rd);

	CHECK_NEAR(rp, 2, 0.05);
	CHECK_NEAR(rd, 2, 0.05);
	view(p, 0, &pre0, &dec0);
	CHECK_NEAR(pre0, 1, 0); /* the others, the fleet's median */
	/* And the choice follows: idle, the request goes elsewhere. */
	struct dbk_pred_request r = { .prompt_tokens = 2000,
		                      .max_tokens = 100,
		                      .ignore_eos = true };
	struct dbk_pred_choice c;
	dbk_pred_set_state(p, 0, DBK_PRED_DOWN);
	dbk_pred_set_state(p, 1, DBK_PRED_DOWN);
	CHECK(dbk_pred_choose(p, &r, 1000, &c) == 2);
	dbk_pred_free(p);
}

/* A server that fails slow and recovers: priced 3x slow, it is sent
 * little, so its own requests would keep its old rows for good (before
 * the fade by age: still 3x after 300 s sent nothing). What it taught
 * fades with its age (PRED_SPEED_FADE_S), so after 300 s of requests to
 * the others alone it is priced as its peers again, and sent its share
 * to learn anew; the others, taught all along, keep their speed. */
static void test_a_recovered_server_is_not_sealed(void)
{
	struct dbk_pred *p = fleet(4), *truth = fleet(4);
	uint64_t now = 1000;
	double rp, rd, pre, dec;

	serve_rounds(p, truth, 100, 3, 3, &now);
	ratios(p, &rp, &rd);
	CHECK_NEAR(rp, 3, 0.1);
	CHECK_NEAR(rd, 3, 0.1);
	for (unsigned k = 0; k < 300; k++) /* one request a second to 0..2 */
		serve_some(p, truth, 1, 3, 1, 1, &now), now += 700;
	view(p, 3, &pre, &dec);
	CHECK_NEAR(pre, 1, 0);
	CHECK_NEAR(dec, 1, 0);
	/* Sent its share again while still slow, it is priced slow again
	 * within 100 requests. */
	serve_rounds(p, truth, 100, 3, 3, &now);
	ratios(p, &rp, &rd);
	CHECK_NEAR(rp, 3, 0.1);
	CHECK_NEAR(rd, 3, 0.1);
	dbk_pred_free(p);
	dbk_pred_free(truth);
}

/* A lull, the fleet sent nothing, tells nothing new of anyone: the
 * fits fade no faster than the fleet ends PRED_SPEED_FADE_REQS
 * requests per server. Faded by the clock alone, 300 s without a
 * request left the slow server under PRED_SPEED_SEEN rows, priced as
 * its peers until taught again (Mooncake on 4 H100/A100 servers: the
 * A100s forgotten in every lull). */
static void test_a_lull_forgets_nothing(void)
{
	struct dbk_pred *p = fleet(4), *truth = fleet(4);
	uint64_t now = 1000;
	double rp, rd;

	serve_rounds(p, truth, 100, 3, 3, &now);
	now += 300000;
	serve_some(p, truth, 1, 1, 1, 1, &now); /* one request ends, to server 0 */
	ratios(p, &rp, &rd);
	CHECK_NEAR(rp, 3, 0.1);
	CHECK_NEAR(rd, 3, 0.1);
	dbk_pred_free(p);
	dbk_pred_free(truth);
}

/* A fit faded loses its weight: under a row's worth, the prior pulls
 * it back most of the way. */
static void test_fade_weighs_less(void)
{
	struct dbk_plearn l = { 0 };
	double a, b;

	for (unsigned k = 0; k < 100; k++) {
		double x1 = 0.05 + 0.1 * (k % 7), x2 = 0.02 + 0.3 * (k % 5);
		dbk_plearn_add(&l, x1, x2, 2 * (x1 + x2), 1);
	}
	dbk_plearn_solve(&l, 1, 1, &a, &b);
	CHECK_NEAR(a, 2, 0.05);
	dbk_plearn_fade(&l, 0.01);
	CHECK_NEAR(l.n, 256 * (1 - pow(1 - 1 / 256.0, 100)) * 0.01, 1e-9);
	dbk_plearn_solve(&l, 1, 1, &a, &b);
	CHECK(a > 1 && a < 1.5 && b > 1 && b < 1.5);
	double n = l.n;
	dbk_plearn_fade(&l, 1.5); /* not a fade: ignored */
	dbk_plearn_fade(&l, 0);
	CHECK_NEAR(l.n, n, 0);
}

/* A server that prefills as fast as the others but decodes 2x slower
 * (memory bandwidth, not compute) is learnt as such: the two speeds
 * are told apart by the mix of its requests. */
static void test_decode_told_from_prefill(void)
{
	double pre, dec, rp, rd;
	struct dbk_pred *p = learnt(1, 2, &rp, &rd);

	CHECK_NEAR(rp, 1, 0.2);
	CHECK_NEAR(rd, 2, 0.4);
	/* A reset slot (a new pod) forgets it. */
	dbk_pred_reset(p, 3);
	view(p, 3, &pre, &dec);
	CHECK_NEAR(pre, 1, 0);
	CHECK_NEAR(dec, 1, 0);
	dbk_pred_free(p);
}

/* An equal fleet stays at 1 everywhere; a weight is the prior until
 * requests say otherwise. */
static void test_equal_fleet_and_weight_prior(void)
{
	struct dbk_pred *p = fleet(4), *truth = fleet(4);
	uint64_t now = 1000;
	double pre, dec;

	serve_rounds(p, truth, 50, 1, 1, &now);
	for (unsigned i = 0; i < 4; i++) {
		view(p, i, &pre, &dec);
		CHECK_NEAR(pre, 1, 0);
		CHECK_NEAR(dec, 1, 0);
	}
	dbk_pred_free(p);
	p = fleet(4);
	dbk_pred_set_weight(p, 0, 1);
	dbk_pred_set_weight(p, 1, 1);
	dbk_pred_set_weight(p, 2, 1);
	dbk_pred_set_weight(p, 3, 1.0 / 4); /* the operator says 4x slower */
	view(p, 3, &pre, &dec);
	CHECK(pre > 2.5 && dec > 2.5);           /* the prior: 4 over the fleet's geometric mean */
	serve_rounds(p, truth, 100, 2, 2, &now); /* it is 2x */
	double rp, rd;
	ratios(p, &rp, &rd);
	CHECK_NEAR(rp, 2, 0.4);
	CHECK_NEAR(rd, 2, 0.4);
	dbk_pred_free(p);
	dbk_pred_free(truth);
}

/* The weights' priors are kept between requests, and every change of a
 * weight, a reset included, moves them at once: a server's prior is its
 * weight against the fleet's geometric mean (4^(3/4) for a quarter of
 * three others' 1). */
static void test_priors_follow_the_weights(void)
{
	struct dbk_pred *p = fleet(4);
	double pre, dec, q = pow(4, 0.75);

	for (unsigned i = 0; i < 4; i++)
		dbk_pred_set_weight(p, i, i == 3 ? 0.25 : 1);
	view(p, 3, &pre, &dec);
	CHECK_NEAR(pre, q, 1e-9);
	CHECK_NEAR(dec, q, 1e-9);
	view(p, 0, &pre, &dec);
	CHECK_NEAR(pre, q / 4, 1e-9); /* 4^(-1/4) */
	dbk_pred_set_weight(p, 3, 1);
	view(p, 3, &pre, &dec);
	CHECK_NEAR(pre, 1, 0);
	dbk_pred_set_weight(p, 0, 0.25);
	view(p, 0, &pre, &dec);
	CHECK_NEAR(pre, q, 1e-9);
	dbk_pred_reset(p, 0); /* its weight no longer known: the others' mean is 1 */
	for (unsigned i = 0; i < 4; i++) {
		view(p, i, &pre, &dec);
		CHECK_NEAR(pre, 1, 0);
	}
	dbk_pred_free(p);
}

/* Four servers, every request alike (2,000-token prompts, 8 tokens out,
 * as policy.bats's slower-GPU test sends), server 3 three times slower
 * to prefill and as fast to decode; their durations on a clock five
 * times faster than the histograms' (a stub's model time: the two
 * signals disagree for every server alike). Servers 0-2 export their
 * first tokens from the start, server 3 only after 100 rounds. Before
 * its samples, its alike durations cannot tell prefill from decode: both
 * factors rise together (2x, the durations' mean), the prefill past
 * 1.2 and the decode far from its bound; after, its first tokens tell
 * the prefill (3x) and its durations, with that prefill, the decode
 * (1). On main's build one fit of both signals explained the durations'
 * shortfall by a decode near 0 for the fleet, and server 3 stayed
 * priced as the fleet until its samples (in policy.bats, where the
 * stub's decode is slower too, 1 to prefill and 8x, the bound, to
 * decode). */
static void test_alike_requests_and_first_tokens(void)
{
	struct dbk_pred *p = fleet(4), *truth = fleet(4);
	double sum[4] = { 0 }, count[4] = { 0 }, pre, dec, pre0, dec0;
	uint64_t now = 1000;

	for (unsigned k = 0; k <= 200; k++) {
		for (unsigned i = 0; k > 0 && i < 4; i++, now += 1000) {
			struct dbk_pred_request r = { .prompt_tokens = 2000 + 10 * (k % 3),
				                      .max_tokens = 8,
				                      .ignore_eos = true };
			struct dbk_pred_choice c;
			struct dbk_pred_ticket t;

			CHECK(dbk_pred_evaluate(truth, &r, i, now, &c) == (int)i);
			double first = (i == 3 ? 3 : 1) * c.ttft_s;
			dbk_pred_commit(p, &r, i, now, &t);
			dbk_pred_release(p, &t,
			                 now + (uint64_t)llround((first + 7 * c.tpot_s) * 200));
			sum[i] += first;
			count[i]++;
		}
		for (unsigned i = 0; k % 10 == 0 && i < 4; i++) {
			bool exports = i < 3 || k > 100;
			struct dbk_pred_scrape sc = { .ok = true,
				                      .kv_capacity_tokens = -1,
				                      .prefix_queries = -1,
				                      .prefix_hits = -1,
				                      .ttft_sum_s = exports ? sum[i] : -1,
				                      .ttft_count = exports ? count[i] : -1 };
			dbk_pred_scraped(p, i, &sc, now);
		}
		if (k == 100) {
			view(p, 3, &pre, &dec);
			view(p, 0, &pre0, &dec0);
			CHECK(pre / pre0 > 1.5 && dec / dec0 < 4);
			CHECK_NEAR(pre / dec, 1, 0.2);
		}
	}
	view(p, 3, &pre, &dec);
	view(p, 0, &pre0, &dec0);
	CHECK(pre / pre0 > 2.5 && pre / pre0 < 3.5);
	CHECK_NEAR(dec / dec0, 1, 0.25);
	dbk_pred_free(p);
	dbk_pred_free(truth);
}

/* The matcher pairs a server's first tokens with our requests in the
 * order sent: those pending at the sync are skipped, a count between
 * two snapshots is priced at that span's mean, and a count beyond what
 * we sent (another balancer's first tokens) is no row and starts again,
 * its matches not trusted for a while. */
/* A scrape of m with our totals (sent, sum, pending), own prefills a
 * tenth of each prediction: its match's prediction in x, 1 if matched. */
static int scrape(struct dbk_plearn_match *m, double count, double sent, double sum, double pending,
                  double *x)
{
	const struct dbk_plearn_sent t = { sent, sum, sum / 10, pending };
	double own;
	int r = dbk_plearn_match_scrape(m, count, &t, x, &own);

	CHECK_NEAR(own, *x / 10, 1e-9);
	return r;
}

static void test_first_tokens_matched_in_order(void)
{
	struct dbk_plearn_match m;
	double x;

	/* The server has served 10; of our 5 sent, 2 wait for theirs. */
	dbk_plearn_match_sync(&m, 10, &(struct dbk_plearn_sent){ 5, 5, 0.5, 2 });
	CHECK(scrape(&m, 12, 8, 11, 3, &x) == 0); /* those 2 */
	CHECK(scrape(&m, 14, 8, 11, 1, &x) == 1); /* ours 6 and 7 */
	CHECK_NEAR(x, 4, 1e-12);                  /* 2 of the 3 sent between 5 (5 s) and 8 (11 s) */
	CHECK(scrape(&m, 14, 9, 20, 2, &x) == 0); /* none new */
	CHECK(scrape(&m, 16, 9, 20, 0, &x) == 1); /* 8 and 9 */
	CHECK_NEAR(x, 2 + 9, 1e-12);
	CHECK(scrape(&m, 30, 10, 21, 0, &x) == -1); /* 23 > 10 */
	/* From there, matched but not trusted for 64 first tokens: the
	 * others' may overtake again. */
	CHECK(scrape(&m, 31, 11, 23, 0, &x) == -1);
	CHECK(scrape(&m, 31, 11, 23, 0, &x) == -1);
	CHECK(scrape(&m, 94, 74, 149, 0, &x) == -1);
	CHECK(scrape(&m, 95, 75, 151, 0, &x) == 1);
	CHECK_NEAR(x, 2, 1e-12);
}

/* A snapshot at each request sent prices each first token at its own
 * prediction, not at the mean of those sent between two scrapes (main's
 * build: the first 10 of a burst of 100 predicted 1, 2, ... 100 s were
 * priced 505 s, not 55); past the snapshots' room the shortest spans
 * merge and the oldest stays, so a long queue still matches. */
static void test_each_request_priced_as_its_own(void)
{
	struct dbk_plearn_match m;
	struct dbk_plearn_sent t = { 0, 0, 0, 0 };
	double x, own;

	dbk_plearn_match_sync(&m, 0, &t);
	for (unsigned k = 1; k <= 100; k++) {
		t.sent = k;
		t.sum += k;
		t.own += 1;
		dbk_plearn_match_note(&m, &t);
	}
	CHECK(dbk_plearn_match_scrape(&m, 10, &t, &x, &own) == 1);
	CHECK_NEAR(x, 55, 1e-9);
	CHECK_NEAR(own, 10, 1e-9);
	CHECK(dbk_plearn_match_scrape(&m, 100, &t, &x, &own) == 1);
	CHECK_NEAR(x, 5050 - 55, 1e-9);
	CHECK_NEAR(own, 90, 1e-9);
}

/* The snapshots' rule, written out plainly: the shortest span of two
 * merges first (the oldest on a tie), a scrape prices its count between
 * the snapshots around it and forgets the older ones. */
struct ref_snaps {
	double n[DBK_PLEARN_MATCH_SNAPS], sum[DBK_PLEARN_MATCH_SNAPS], done_sum;
	unsigned count;
};

static void ref_drop(struct ref_snaps *r, unsigned at)
{
	for (unsigned j = at; j + 1 < r->count; j++) {
		r->n[j] = r->n[j + 1];
		r->sum[j] = r->sum[j + 1];
	}
	r->count--;
}

static void ref_push(struct ref_snaps *r, double sent, double sum)
{
	if (r->count && r->n[r->count - 1] >= sent)
		return;
	if (r->count == DBK_PLEARN_MATCH_SNAPS) {
		unsigned best = 1;
		for (unsigned j = 2; j + 1 < r->count; j++)
			if (r->n[j + 1] - r->n[j - 1] < r->n[best + 1] - r->n[best - 1])
				best = j;
		ref_drop(r, best);
	}
	r->n[r->count] = sent;
	r->sum[r->count++] = sum;
}

static double ref_scrape(struct ref_snaps *r, double idx, double sent, double sum)
{
	unsigned j = 0;

	ref_push(r, sent, sum);
	while (j + 1 < r->count && r->n[j + 1] <= idx)
		j++;
	double at = r->sum[j];
	if (r->n[j] < idx)
		at += (idx - r->n[j]) / (r->n[j + 1] - r->n[j]) * (r->sum[j + 1] - r->sum[j]);
	while (j--)
		ref_drop(r, 0);
	double x = at - r->done_sum;
	r->done_sum = at;
	return x;
}

/* Bursts of uneven requests (1 to 3 sent between two notes, predictions
 * of 0.01 to 10 s) many times the snapshots' room between two scrapes,
 * each scrape short of what was sent: every match is the rule's to the
 * bit, whatever order the snapshots are kept in. */
static void test_snapshots_follow_the_rule(void)
{
	struct dbk_plearn_match m;
	struct dbk_plearn_sent t = { 0, 0, 0, 0 };
	struct ref_snaps r = { .count = 0 };
	uint64_t draw = 7;
	double count = 0, x, own;

	dbk_plearn_match_sync(&m, 0, &t);
	ref_push(&r, 0, 0);
	for (unsigned round = 0; round < 40; round++) {
		unsigned notes = 10 + (unsigned)(dbk_hash_next(&draw) % 300);
		for (unsigned k = 0; k < notes; k++) {
			t.sent += 1 + (double)(dbk_hash_next(&draw) % 3);
			t.sum += 0.01 + (double)(dbk_hash_next(&draw) % 1000) / 100;
			t.own = t.sum / 10;
			dbk_plearn_match_note(&m, &t);
			ref_push(&r, t.sent, t.sum);
		}
		count += 1 + (double)(dbk_hash_next(&draw) % (uint64_t)(t.sent - count));
		CHECK(dbk_plearn_match_scrape(&m, count, &t, &x, &own) == 1);
		CHECK(x == ref_scrape(&r, count, t.sent, t.sum));
	}
}

/* An equal fleet of two: server 0 sent a burst of 100 requests (prompts
 * of `base` tokens and up, each queued behind the others) serving each
 * first token at `served` times its prediction, scraped every `tick`
 * ms as its queue drains; server 1 sent the same one at a time, each
 * served as predicted. Their prefill factors in pre0 and pre1. */
static void burst_beside_singles(unsigned base, double served, unsigned tick, double *pre0,
                                 double *pre1)
{
	struct dbk_pred *p = fleet(2);
	struct dbk_pred_ticket t[100];
	struct dbk_pred_scrape sc = {
		.ok = true, .kv_capacity_tokens = -1, .prefix_queries = -1, .prefix_hits = -1
	};
	uint64_t now = 1000;
	double sum = 0, dec;

	dbk_pred_scraped(p, 0, &sc, now);
	dbk_pred_scraped(p, 1, &sc, now);
	for (unsigned k = 0; k < 100; k++) {
		struct dbk_pred_request r = { .prompt_tokens = base + base * 3 / 5 * (k % 5),
			                      .max_tokens = 20,
			                      .ignore_eos = true };
		dbk_pred_commit(p, &r, 0, now, &t[k]);
	}
	for (unsigned ms = tick, done = 0; done < 100; ms += tick) {
		while (done < 100 && t[done].x1 * served * 1000 <= ms)
			sum += t[done++].x1 * served;
		sc.ttft_count = done;
		sc.ttft_sum_s = sum;
		dbk_pred_scraped(p, 0, &sc, now + ms);
	}
	for (unsigned k = 0; k < 100; k++)
		dbk_pred_release(p, &t[k], now); /* no duration: the first tokens alone */
	sum = 0;
	for (unsigned k = 0; k < 100; k++) {
		struct dbk_pred_request r = { .prompt_tokens = base + base * 3 / 5 * (k % 5),
			                      .max_tokens = 20,
			                      .ignore_eos = true };
		struct dbk_pred_ticket one;
		now += 1000;
		dbk_pred_commit(p, &r, 1, now, &one);
		dbk_pred_release(p, &one, now);
		sum += one.x1;
		sc.ttft_count = k + 1;
		sc.ttft_sum_s = sum;
		dbk_pred_scraped(p, 1, &sc, now + 500);
	}
	view(p, 0, pre0, &dec);
	view(p, 1, pre1, &dec);
	dbk_pred_free(p);
}

/* An equal fleet of two: server 0 is sent a burst (each request queued
 * behind the others), server 1 the same requests one at a time, and
 * both serve each first token exactly when predicted; server 0's
 * scrapes come every 100 ms as its queue drains. Both stay at 1. A
 * sample of 64 first tokens against the requests sent meanwhile (main's
 * build) compared the first 64 first tokens, queued behind few, with
 * all 100 requests' predictions, and priced server 0 about 0.6 of
 * server 1: the more a server was sent, the faster it looked. */
static void test_a_queue_is_not_speed(void)
{
	double pre, pre1;

	burst_beside_singles(500, 1, 100, &pre, &pre1);
	CHECK_NEAR(pre, 1, 0);
	CHECK_NEAR(pre1, 1, 0);
}

/* An equal fleet of two, as in test_a_queue_is_not_speed, but server 0
 * serves its burst as vLLM serves short prompts, many to a step: every
 * first token comes at a tenth of the books' serial queue. Server 1 is
 * sent the same one at a time and serves each as predicted. The burst's
 * first tokens waited behind a queue the books mispriced, which is not
 * speed: both stay at 1. Main's build priced server 0 at 0.1 (on a
 * short-prompt trace at twice the capacity of 4 equal servers, one
 * 0.31 and another 2.2, and lost 40% of the goodput). */
static void test_a_mispriced_queue_is_not_speed(void)
{
	double pre, pre1;

	burst_beside_singles(200, 0.1, 10, &pre, &pre1);
	CHECK_NEAR(pre, 1, 0);
	CHECK_NEAR(pre1, 1, 0);
}

/* rounds of one request to each of p's 4 servers, each alone on an
 * idle server and released when sent (its duration teaches nothing),
 * the k-th round's prompt and output r(k); every server serves its
 * first token as predicted but those from index slow on, at first3(k,
 * predicted). A scrape of each after every round. Returns the clock
 * after the last. */
static uint64_t teach_first_tokens(struct dbk_pred *p, unsigned rounds,
                                   struct dbk_pred_request (*r)(unsigned k),
                                   double (*first3)(unsigned k, double x1), unsigned slow)
{
	double sum[4] = { 0 };
	uint64_t now = 1000;

	for (unsigned k = 0; k <= rounds; k++) {
		for (unsigned i = 0; k > 0 && i < 4; i++, now += 1000) {
			struct dbk_pred_request req = r(k);
			struct dbk_pred_ticket t;
			dbk_pred_commit(p, &req, i, now, &t);
			dbk_pred_release(p, &t, now);
			sum[i] += i >= slow ? first3(k, t.x1) : t.x1;
		}
		for (unsigned i = 0; i < 4; i++) {
			struct dbk_pred_scrape sc = { .ok = true,
				                      .kv_capacity_tokens = -1,
				                      .prefix_queries = -1,
				                      .prefix_hits = -1,
				                      .ttft_sum_s = sum[i],
				                      .ttft_count = k };
			dbk_pred_scraped(p, i, &sc, now);
		}
	}
	return now;
}

/* The same on a fresh fleet: server 3's factors over server 0's in rp
 * and rd; the fleet's slowness in *fleet_slow if not NULL. */
static void first_token_rounds_from(unsigned rounds, struct dbk_pred_request (*r)(unsigned k),
                                    double (*first3)(unsigned k, double x1), unsigned slow,
                                    double *rp, double *rd, double *fleet_slow)
{
	struct dbk_pred *p = fleet(4);

	teach_first_tokens(p, rounds, r, first3, slow);
	ratios(p, rp, rd);
	if (fleet_slow)
		*fleet_slow = dbk_pred_fleet_slowness(p);
	dbk_pred_free(p);
}

static void first_token_rounds(unsigned rounds, struct dbk_pred_request (*r)(unsigned k),
                               double (*first3)(unsigned k, double x1), double *rp, double *rd)
{
	first_token_rounds_from(rounds, r, first3, 3, rp, rd, NULL);
}

static struct dbk_pred_request varied(unsigned k)
{
	return (struct dbk_pred_request){ .prompt_tokens = 300 + 700 * (k % 9),
		                          .max_tokens = 8 + 37 * (k % 8),
		                          .ignore_eos = true };
}

static double thrice(unsigned k, double x1)
{
	(void)k;
	return 3 * x1;
}

/* Scrapes of one first token each teach the prefill: four servers,
 * requests each alone on an idle server whose durations teach nothing
 * (released when sent), server 3 three times slower to its first
 * token; a scrape after each round. Within 10% of 3x its peers after
 * 16 requests to it; main's build waited for a sample of 64 first
 * tokens and still priced it 1. */
static void test_few_first_tokens_teach(void)
{
	double rp, rd;

	first_token_rounds(16, varied, thrice, &rp, &rd);
	CHECK_NEAR(rp, 3, 0.1);
	CHECK_NEAR(rd, 1, 0);
}

static double a_tenth_late(unsigned k, double x1)
{
	(void)k;
	return 1.1 * x1;
}

static double twice_as_soon(unsigned k, double x1)
{
	(void)k;
	return 0.5 * x1;
}

/* A fleet slower than the engine model, every server 3x to its first
 * token: each priced as the fleet (the ratios are 1), the fleet itself
 * 3x, within 10%, which admission's pools price their first tokens at
 * (policy_ttft.c). A tenth late is the band's, and twice as soon is
 * never read as faster: 1 both. */
static void test_a_slow_fleet_is_read_whole(void)
{
	double rp, rd, fs;

	first_token_rounds_from(16, varied, thrice, 0, &rp, &rd, &fs);
	CHECK_NEAR(rp, 1, 0);
	CHECK_NEAR(rd, 1, 0);
	CHECK_NEAR(fs, 3, 0.1);
	first_token_rounds_from(16, varied, a_tenth_late, 0, &rp, &rd, &fs);
	CHECK_NEAR(fs, 1, 0);
	first_token_rounds_from(16, varied, twice_as_soon, 0, &rp, &rd, &fs);
	CHECK_NEAR(fs, 1, 0);
	/* One slow server of four: the median is the fleet's own. */
	first_token_rounds_from(16, varied, thrice, 3, &rp, &rd, &fs);
	CHECK_NEAR(fs, 1, 0);
}

/* A first token predicted tiny teaches little: four equal servers, each
 * sent prompts of 2,000 tokens and of 16 in turn, alone, served as
 * predicted but for server 3's short ones, which come 0.2 s late (a
 * cache hit predicted that the server did not have, a step in progress:
 * an error of the prediction, not of the speed). Each row is the ratio
 * of the first token to its prediction, so such a row read 16x slow
 * (the clamp) beside rows of 1, and priced server 3 slow; counted by
 * its prediction's size against the fleet's mean prefill, server 3
 * stays at 1. On Mooncake's first 300 s at 4 equal servers, rows of
 * 0.01-0.06 s predicted and 0.23 s served priced one server 2x slow
 * for 30 s. */
static struct dbk_pred_request long_or_tiny(unsigned k)
{
	return (struct dbk_pred_request){ .prompt_tokens = k % 4 ? 8000 : 16,
		                          .max_tokens = 8,
		                          .ignore_eos = true };
}

static double tiny_late(unsigned k, double x1) { return x1 + (k % 4 ? 0 : 0.2); }

static void test_a_tiny_prediction_teaches_little(void)
{
	double rp, rd;

	first_token_rounds(40, long_or_tiny, tiny_late, &rp, &rd);
	CHECK_NEAR(rp, 1, 0);
	CHECK_NEAR(rd, 1, 0);
}

/* Server 3 answers every request at once, with an error (a failing
 * server's 500, vLLM's 400 for a prompt it will not take): released as
 * served, 100 rounds price it many times faster than its peers; as
 * unserved (the completion line's status, dbk_pred_release_unserved)
 * they teach nothing. And a refused request's prefill, queued behind
 * another's, leaves the queue with it: a newcomer's first token comes
 * that much sooner. */
static void test_refused_requests_teach_nothing(void)
{
	for (int refused = 0; refused <= 1; refused++) {
		struct dbk_pred *p = fleet(4), *truth = fleet(4);
		uint64_t now = 1000;
		double rp, rd;

		serve_ends(p, truth, 100, 4, 0, 0, refused, &now);
		ratios(p, &rp, &rd);
		if (refused)
			CHECK(rp == 1 && rd == 1);
		else
			CHECK(rp < 0.5);
		dbk_pred_free(truth);
		dbk_pred_free(p);
	}

	struct dbk_pred *p = fleet(1);
	struct dbk_pred_request big = { .prompt_tokens = 30000,
		                        .max_tokens = 100,
		                        .ignore_eos = true };
	struct dbk_pred_request other = { .prompt_tokens = 20000,
		                          .max_tokens = 100,
		                          .ignore_eos = true };
	struct dbk_pred_request r = { .prompt_tokens = 500, .max_tokens = 100, .ignore_eos = true };
	struct dbk_pred_ticket tb, to;
	struct dbk_pred_choice alone, behind, after;

	dbk_pred_commit(p, &big, 0, 1000, &tb);
	CHECK(dbk_pred_evaluate(p, &r, 0, 1010, &alone) == 0);
	dbk_pred_commit(p, &other, 0, 1010, &to);
	CHECK(dbk_pred_evaluate(p, &r, 0, 1020, &behind) == 0);
	CHECK(behind.ttft_s > alone.ttft_s + 0.5);
	dbk_pred_release_unserved(p, &to, 1020);
	CHECK(dbk_pred_evaluate(p, &r, 0, 1020, &after) == 0);
	CHECK_NEAR(after.ttft_s, alone.ttft_s - 0.01, 0.05);
	dbk_pred_free(p);
}

/* Admission's books (pace_chunks) on a fleet read 3x slower than the
 * model: a 40k-token prompt's steps beyond its first hold the queue
 * behind it at 3x, and the choice says which seconds those are
 * (paced_s), so that admission does not multiply them again; a prompt
 * of one step adds none; the request behind it teaches the fit the
 * model's wait (its x1 as without pacing), not the pace the fit set;
 * and the long one released unserved takes its paced hold off the
 * books' queue.
 * Without pacing, an all-A100 fleet's books counted such a prefill done
 * while it held the budget, and critical prompts behind it waited 14-17
 * s where under 4 s was predicted. */
static void test_a_long_prefill_holds_at_the_fleets_pace(void)
{
	struct dbk_pred_request big = { .prompt_tokens = 40000,
		                        .max_tokens = 8,
		                        .ignore_eos = true };
	struct dbk_pred_request r = { .prompt_tokens = 500, .max_tokens = 100, .ignore_eos = true };
	double wait[2], paced[2], x1[2], behind_paced[2], after_wait[2];

	for (int pace = 0; pace < 2; pace++) {
		struct dbk_pred_config c;
		dbk_pred_config_default(&c, 4);
		c.pack_tokens = 0, c.learn_pack = false, c.late_weight = 0;
		c.pace_chunks = pace;
		struct dbk_pred *p = dbk_pred_new(&c);
		uint64_t now = teach_first_tokens(p, 16, varied, thrice, 0) + 10000;
		CHECK_NEAR(dbk_pred_fleet_slowness(p), 3, 0.1);

		struct dbk_pred_ticket tb, tr;
		struct dbk_pred_choice alone, ch, behind, after;
		CHECK(dbk_pred_evaluate(p, &r, 0, now, &alone) == 0);
		dbk_pred_commit(p, &big, 0, now, &tb);
		CHECK(dbk_pred_evaluate(p, &r, 0, now, &ch) == 0);
		wait[pace] = ch.ttft_s - alone.ttft_s;
		paced[pace] = ch.paced_s;
		dbk_pred_commit(p, &r, 0, now, &tr);
		x1[pace] = tr.x1;
		CHECK(dbk_pred_evaluate(p, &r, 0, now, &behind) == 0);
		behind_paced[pace] = behind.paced_s;
		dbk_pred_release_unserved(p, &tb, now + 1);
		CHECK(dbk_pred_evaluate(p, &r, 0, now + 1, &after) == 0);
		after_wait[pace] = after.ttft_s - alone.ttft_s;
		dbk_pred_free(p);
	}
	CHECK(paced[0] == 0);
	CHECK(paced[1] > 0.5 * wait[1]);
	/* Its later steps at 3x, its first as priced: the model's wait
	 * comes back from the paced seconds taken back to the model. */
	CHECK(wait[1] > 2 * wait[0]);
	CHECK_NEAR(wait[1] - paced[1] + paced[1] / 3, wait[0], 0.01);
	CHECK_NEAR(behind_paced[1], paced[1], 1e-6);
	CHECK_NEAR(x1[1], x1[0], 1e-4);
	/* Released, what is left is the short one's own. */
	CHECK_NEAR(after_wait[1], after_wait[0], 0.01);
	CHECK(after_wait[1] < 0.1 * wait[1]);
}

int main(void)
{
	RUN(test_fit_recovers_both_speeds);
	RUN(test_a_wild_duration_moves_little);
	RUN(test_alike_rows_scale_both);
	RUN(test_a_2x_slower_server_learnt_within_100);
	RUN(test_refused_requests_teach_nothing);
	RUN(test_decode_told_from_prefill);
	RUN(test_a_recovered_server_is_not_sealed);
	RUN(test_a_lull_forgets_nothing);
	RUN(test_fade_weighs_less);
	RUN(test_equal_fleet_and_weight_prior);
	RUN(test_priors_follow_the_weights);
	RUN(test_alike_requests_and_first_tokens);
	RUN(test_first_tokens_matched_in_order);
	RUN(test_each_request_priced_as_its_own);
	RUN(test_snapshots_follow_the_rule);
	RUN(test_a_queue_is_not_speed);
	RUN(test_a_mispriced_queue_is_not_speed);
	RUN(test_few_first_tokens_teach);
	RUN(test_a_tiny_prediction_teaches_little);
	RUN(test_a_slow_fleet_is_read_whole);
	RUN(test_a_long_prefill_holds_at_the_fleets_pace);
	return CHECK_DONE();
}
