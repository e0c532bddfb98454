/* Unit tests of the Bayesian ridge fit (bayesridge.c) and of llm-d's
 * latency predictor built on it (latpred.c): the fit recovers a linear
 * law, gives a constant column no weight, shrinks under noise and agrees
 * with scikit-learn's; the predictor keeps 500 samples a bucket,
 * retrains only with enough of them, serves a model only once synced,
 * and switches to its queue-gated pair once each split has 200. */
#include "bayesridge.h"
#include "latpred.h"

#include <math.h>
#include <stdint.h>
#include <string.h>

#include "check.h"

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

/* y = 3 + 2 a - 0.5 b exactly, a and b spread over thousands: with 400
 * rows the evidence puts almost no weight on the prior and the fit is
 * the law; the column c, always 7, gets weight 0. */
static void test_fit_recovers(void)
{
	static double x[400 * 3], y[400];
	struct dbk_bayesridge m;
	uint32_t seed = 1;
	double probe[3] = { 1000, 2000, 7 };

	for (int i = 0; i < 400; i++) {
		x[i * 3] = lcg(&seed) % 5000;
		x[i * 3 + 1] = lcg(&seed) % 9000;
		x[i * 3 + 2] = 7;
		y[i] = 3 + 2 * x[i * 3] - 0.5 * x[i * 3 + 1];
	}
	CHECK(dbk_bayesridge_fit(&m, x, y, 400, 3) == 0);
	CHECK_NEAR(dbk_bayesridge_predict(&m, probe), 3 + 2000 - 1000, 1e-6);
	CHECK(m.coef[2] == 0);
	CHECK_NEAR(m.coef[0] / m.scale[0], 2, 1e-6);
	CHECK(m.iters > 1 && m.iters < 300);
	/* No rows: the model is left as it was. */
	CHECK(dbk_bayesridge_fit(&m, x, y, 0, 3) != 0);
	CHECK_NEAR(dbk_bayesridge_predict(&m, probe), 1003, 1e-6);
}

/* Noise the features do not explain: the evidence shrinks the weights
 * towards 0 (lambda grows), so the prediction at an extreme row lies
 * between the mean and what least squares would say. Two rows per level
 * of a, the level's mean on the law y = a, and a +-50 spread. */
static void test_fit_shrinks(void)
{
	double x[8], y[8], probe = 3;
	struct dbk_bayesridge m;

	for (int i = 0; i < 8; i++) {
		x[i] = i / 2;
		y[i] = x[i] + (i % 2 ? 50 : -50);
	}
	CHECK(dbk_bayesridge_fit(&m, x, y, 8, 1) == 0);
	/* Least squares: 3 at a = 3; the mean: 1.5. */
	CHECK(dbk_bayesridge_predict(&m, &probe) < 3);
	CHECK(dbk_bayesridge_predict(&m, &probe) > 1.5);
}

/* Against scikit-learn 1.2.1 (Debian bookworm's python3-sklearn):
 * StandardScaler, then BayesianRidge() on these 60 noisy rows, printed
 * the predictions at three rows and the learnt precisions below (with
 * the rows written out by the same generator). */
static void test_fit_matches_sklearn(void)
{
	static double x[60 * 3], y[60];
	const double probes[3][3] = { { 0, 0, 0 }, { 500, 25, 3 }, { 1000, 49, 6 } };
	const double want[3] = { 11.64357191, 104.6383336, 199.7379717 };
	struct dbk_bayesridge m;
	uint32_t seed = 7;

	for (int i = 0; i < 60; i++) {
		x[i * 3] = lcg(&seed) % 1000;
		x[i * 3 + 1] = lcg(&seed) % 50;
		x[i * 3 + 2] = lcg(&seed) % 7;
		y[i] = 5 + 0.3 * x[i * 3] - 2 * x[i * 3 + 1] + (double)(lcg(&seed) % 4001) / 100.0 -
		       20;
	}
	CHECK(dbk_bayesridge_fit(&m, x, y, 60, 3) == 0);
	for (int k = 0; k < 3; k++)
		CHECK(fabs(dbk_bayesridge_predict(&m, probes[k]) - want[k]) < 1e-5 * want[k]);
	CHECK(fabs(m.alpha - 0.007425720031) < 1e-5 * 0.007425720031);
	CHECK(fabs(m.lambda - 0.0002914410268) < 1e-4 * 0.0002914410268);
	CHECK_EQ_U(m.iters, 6);
}

static struct dbk_latpred_row row(double waiting, double kv, double tif)
{
	return (struct dbk_latpred_row){ .kv = kv,
		                         .input = 1000,
		                         .waiting = waiting,
		                         .running = 1,
		                         .prefill_tif = tif,
		                         .prefix = 0 };
}

static void test_buckets(void)
{
	struct dbk_latpred p;
	struct dbk_latpred_row r = row(0, 0.1, 0);
	uint64_t kept = 0;

	dbk_latpred_init(&p);
	for (uint64_t k = 0; k < 700; k++) {
		uint64_t held = p.held_out;

		CHECK(dbk_latpred_add(&p, DBK_LATPRED_TTFT, &r, 100, k) == 0);
		kept += p.held_out == held;
	}
	/* One bucket: 500 kept, the test split's tenth (about) aside. */
	CHECK_EQ_U(dbk_latpred_samples(&p, DBK_LATPRED_TTFT), 500);
	CHECK(kept > 600 && kept < 660);
	CHECK_EQ_U(p.received, 700);
	/* No latency, no sample. */
	CHECK(dbk_latpred_add(&p, DBK_LATPRED_TPOT, &r, 0, 1) == 0);
	CHECK_EQ_U(dbk_latpred_samples(&p, DBK_LATPRED_TPOT), 0);
	dbk_latpred_free(&p);
}

/* TTFT = 20 + 0.01 x prefill tokens in flight, TPOT = 30 + 5 x waiting. */
static void feed(struct dbk_latpred *p, int n, double waiting, uint64_t *key)
{
	for (int i = 0; i < n; i++) {
		double tif = (double)(i % 50) * 1000;
		struct dbk_latpred_row r = row(waiting, 0.2, tif);

		CHECK(dbk_latpred_add(p, DBK_LATPRED_TTFT, &r, 20 + 0.01 * tif, (*key)++) == 0);
		CHECK(dbk_latpred_add(p, DBK_LATPRED_TPOT, &r, 30 + 5 * waiting, (*key)++) == 0);
	}
}

static void test_train_and_serve(void)
{
	struct dbk_latpred p;
	struct dbk_latpred_row probe = row(0, 0.2, 30000);
	double ttft, tpot;
	uint64_t key = 0;

	dbk_latpred_init(&p);
	dbk_latpred_predict(&p, &probe, &ttft, &tpot);
	CHECK(ttft == DBK_LATPRED_DEFAULT_MS && tpot == DBK_LATPRED_DEFAULT_MS);
	/* Two samples: fewer than the fresh server's 10, no retrain. */
	feed(&p, 1, 0, &key);
	CHECK(dbk_latpred_train(&p) == 0);
	CHECK_EQ_U(p.trained_gen, 0);
	feed(&p, 260, 0, &key);
	CHECK(dbk_latpred_train(&p) == 0);
	CHECK_EQ_U(p.trained_gen, 1);
	/* Trained, not yet downloaded by the prediction server. */
	dbk_latpred_predict(&p, &probe, &ttft, &tpot);
	CHECK(ttft == DBK_LATPRED_DEFAULT_MS);
	dbk_latpred_sync(&p);
	dbk_latpred_predict(&p, &probe, &ttft, &tpot);
	CHECK_NEAR(ttft, 20 + 300, 1e-3);
	CHECK_NEAR(tpot, 30, 1e-3);
	CHECK(!p.served_ensemble);
	/* Queued samples: with 200 in each split the gated pair serves, and
	 * the queued model has learnt what waiting costs TPOT. */
	feed(&p, 300, 4, &key);
	CHECK(dbk_latpred_train(&p) == 0);
	dbk_latpred_sync(&p);
	CHECK(p.served_ensemble);
	probe.waiting = 4;
	dbk_latpred_predict(&p, &probe, &ttft, &tpot);
	CHECK_NEAR(tpot, 50, 1e-3);
	probe.waiting = 0;
	dbk_latpred_predict(&p, &probe, &ttft, &tpot);
	CHECK_NEAR(tpot, 30, 1e-3);
	dbk_latpred_free(&p);
}

int main(void)
{
	RUN(test_fit_recovers);
	RUN(test_fit_shrinks);
	RUN(test_fit_matches_sklearn);
	RUN(test_buckets);
	RUN(test_train_and_serve);
	return CHECK_DONE();
}
