/* Unit tests of the metrics (metrics.c): numpy's percentile, vLLM's
 * TPOT and goodput rules, classes and rates. */
#include "metrics.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* numpy.percentile(v, 100q), method "linear", on a sorted copy. */
static double ref_quantile(const double *sorted, size_t n, double q)
{
	double pos = q * (double)(n - 1);
	size_t k = (size_t)floor(pos);

	if (k + 1 >= n)
		return sorted[n - 1];
	return sorted[k] + (sorted[k + 1] - sorted[k]) * (pos - (double)k);
}

static void test_quantile_small(void)
{
	double v[] = { 4, 1, 3, 2 };
	double one[] = { 7 };

	CHECK_NEAR(dbk_metrics_quantile(v, 4, 0.5), 2.5, 1e-12);
	CHECK_NEAR(dbk_metrics_quantile(v, 4, 0.99), 3.97, 1e-12);
	CHECK_NEAR(dbk_metrics_quantile(v, 4, 0.0), 1, 0);
	CHECK_NEAR(dbk_metrics_quantile(v, 4, 1.0), 4, 0);
	CHECK_NEAR(dbk_metrics_quantile(one, 1, 0.5), 7, 0);
	CHECK_NEAR(dbk_metrics_quantile(NULL, 0, 0.5), 0, 0);
}

/* Against sorting, on random data with many duplicates (ITLs are step
 * durations: few distinct values), sorted and reversed data. */
static void test_quantile_random(void)
{
	static const double qs[] = { 0, 0.01, 0.5, 0.9, 0.99, 0.999, 1 };
	uint32_t seed = 42;
	int bad = 0, shape;
	size_t n, i, j;

	for (shape = 0; shape < 4; shape++) {
		for (n = 1; n < 3000; n = n * 3 + 1) {
			double *v = malloc(n * sizeof(*v));
			double *s = malloc(n * sizeof(*s));
			double *w = malloc(n * sizeof(*w));

			for (i = 0; i < n; i++) {
				if (shape == 0)
					v[i] = (double)(lcg(&seed) % 100000) / 7.0;
				else if (shape == 1)
					v[i] = (double)(lcg(&seed) % 5);
				else if (shape == 2)
					v[i] = (double)i;
				else
					v[i] = (double)(n - i);
			}
			memcpy(s, v, n * sizeof(*s));
			qsort(s, n, sizeof(*s), cmp_d);
			for (j = 0; j < sizeof(qs) / sizeof(qs[0]); j++) {
				double want = ref_quantile(s, n, qs[j]), got;

				memcpy(w, v, n * sizeof(*w));
				got = dbk_metrics_quantile(w, n, qs[j]);
				if (fabs(got - want) > 1e-9 * fmax(1, fabs(want)))
					bad++;
			}
			free(v);
			free(s);
			free(w);
		}
	}
	CHECK_EQ_U(bad, 0);
}

static void test_tpot_goodput_classes(void)
{
	struct dbk_metrics m;
	struct dbk_slo slo = { .ttft_s = 1.0, .tpot_s = 0.05, .e2e_s = 0 };
	struct dbk_class_summary s[DBK_NCLASSES];

	dbk_metrics_init(&m, &slo);
	/* Short, 11 tokens, TPOT (1.5 - 0.5) / 10 = 0.1 > 0.05: not good. */
	dbk_metrics_completed(&m, false, 0.5, 1.5, 100, 11);
	/* Short, good: tpot (0.9 - 0.4) / 10 = 0.05, at the limit. */
	dbk_metrics_completed(&m, false, 0.4, 0.9, 200, 11);
	/* Short, one token: no TPOT sample, meets the TPOT objective. */
	dbk_metrics_completed(&m, false, 0.2, 0.2, 300, 1);
	/* Long, TTFT above the objective. */
	dbk_metrics_completed(&m, true, 3.0, 4.0, 40000, 21);
	dbk_metrics_failed(&m, true);
	dbk_metrics_failed(&m, false);
	dbk_metrics_itl(&m, false, 0.01);
	dbk_metrics_itl(&m, true, 0.03);
	CHECK_EQ_U(dbk_metrics_summarize(&m, 10.0, s), 0);

	CHECK_EQ_U(s[DBK_CLASS_SHORT].completed, 3);
	CHECK_EQ_U(s[DBK_CLASS_SHORT].failed, 1);
	CHECK_EQ_U(s[DBK_CLASS_SHORT].requests, 4);
	CHECK_EQ_U(s[DBK_CLASS_SHORT].good, 2);
	CHECK_EQ_U(s[DBK_CLASS_SHORT].tpot.n, 2);
	CHECK_EQ_U(s[DBK_CLASS_LONG].completed, 1);
	CHECK_EQ_U(s[DBK_CLASS_LONG].good, 0);
	CHECK_EQ_U(s[DBK_CLASS_ALL].completed, 4);
	CHECK_EQ_U(s[DBK_CLASS_ALL].failed, 2);
	CHECK_EQ_U(s[DBK_CLASS_ALL].good, 2);
	CHECK_EQ_U(s[DBK_CLASS_ALL].output_tokens, 44);
	CHECK_EQ_U(s[DBK_CLASS_ALL].input_tokens, 40600);
	CHECK_NEAR(s[DBK_CLASS_ALL].req_per_s, 0.4, 1e-12);
	CHECK_NEAR(s[DBK_CLASS_ALL].tok_per_s, 4.4, 1e-12);
	CHECK_NEAR(s[DBK_CLASS_ALL].goodput, 0.2, 1e-12);
	CHECK_NEAR(s[DBK_CLASS_SHORT].ttft.p50, 0.4, 1e-12);
	CHECK_NEAR(s[DBK_CLASS_SHORT].ttft.max, 0.5, 0);
	CHECK_NEAR(s[DBK_CLASS_ALL].ttft.mean, (0.5 + 0.4 + 0.2 + 3.0) / 4, 1e-12);
	CHECK_NEAR(s[DBK_CLASS_ALL].tpot.p50, 0.05, 1e-12);
	CHECK_EQ_U(s[DBK_CLASS_ALL].itl.n, 2);
	CHECK_NEAR(s[DBK_CLASS_ALL].itl.p50, 0.02, 1e-12);
	CHECK_NEAR(s[DBK_CLASS_LONG].e2e.p99, 4.0, 0);
	dbk_metrics_free(&m);

	/* Without objectives every completed request is good. */
	dbk_metrics_init(&m, NULL);
	dbk_metrics_completed(&m, false, 100, 200, 1, 5);
	CHECK_EQ_U(dbk_metrics_summarize(&m, 0, s), 0);
	CHECK_EQ_U(s[DBK_CLASS_ALL].good, 1);
	CHECK_NEAR(s[DBK_CLASS_ALL].req_per_s, 0, 0);
	dbk_metrics_free(&m);
}

int main(void)
{
	RUN(test_quantile_small);
	RUN(test_quantile_random);
	RUN(test_tpot_goodput_classes);
	return CHECK_DONE();
}
