/* Unit tests of the synthetic mixes (synth.c). */
#include "synth.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static void test_synth_parse(void)
{
	struct dbk_synth s;
	char err[256];

	CHECK_EQ_U(dbk_synth_parse("short=0.9:300-2000,long=0.1:33000-90000:"
	                           "200-400,fixed=2:50:10",
	                           &s, err, sizeof(err)),
	           0);
	CHECK_EQ_U(s.n, 3);
	CHECK(strcmp(s.c[0].name, "short") == 0);
	CHECK_NEAR(s.c[0].weight, 0.9, 1e-15);
	CHECK_EQ_U(s.c[0].in_lo, 300);
	CHECK_EQ_U(s.c[0].in_hi, 2000);
	CHECK_EQ_U(s.c[0].out_lo, DBK_SYNTH_DEFAULT_OUTPUT);
	CHECK_EQ_U(s.c[0].out_hi, DBK_SYNTH_DEFAULT_OUTPUT);
	CHECK_EQ_U(s.c[1].in_lo, 33000);
	CHECK_EQ_U(s.c[1].out_lo, 200);
	CHECK_EQ_U(s.c[1].out_hi, 400);
	CHECK_EQ_U(s.c[2].in_lo, 50);
	CHECK_EQ_U(s.c[2].in_hi, 50);
	CHECK_EQ_U(s.c[2].out_lo, 10);

	CHECK(dbk_synth_parse("", &s, err, sizeof(err)) != 0);
	CHECK(dbk_synth_parse("short:300", &s, err, sizeof(err)) != 0 &&
	      strstr(err, "NAME=WEIGHT"));
	CHECK(dbk_synth_parse("a=1", &s, err, sizeof(err)) != 0 &&
	      strstr(err, "prompt length range"));
	CHECK(dbk_synth_parse("a=0:5", &s, err, sizeof(err)) != 0 && strstr(err, "weight"));
	CHECK(dbk_synth_parse("a=x:5", &s, err, sizeof(err)) != 0 && strstr(err, "weight"));
	CHECK(dbk_synth_parse("a=1:2000-300", &s, err, sizeof(err)) != 0 &&
	      strstr(err, "prompt length"));
	CHECK(dbk_synth_parse("a=1:0-3", &s, err, sizeof(err)) != 0);
	CHECK(dbk_synth_parse("a=1:5-", &s, err, sizeof(err)) != 0);
	CHECK(dbk_synth_parse("a=1:99999999", &s, err, sizeof(err)) != 0);
	CHECK(dbk_synth_parse("a=1:5:x", &s, err, sizeof(err)) != 0 &&
	      strstr(err, "output length"));
	CHECK(dbk_synth_parse("a=1:5,a=2:6", &s, err, sizeof(err)) != 0 && strstr(err, "twice"));
	CHECK(dbk_synth_parse("a b=1:5", &s, err, sizeof(err)) != 0 && strstr(err, "name"));
	CHECK(dbk_synth_parse("a=1:5,", &s, err, sizeof(err)) != 0);
}

static void test_synth_generate(void)
{
	struct dbk_synth s;
	struct dbk_trace t, t2;
	char err[256];
	size_t i, n_long = 0;
	double sum_gap;

	CHECK_EQ_U(dbk_synth_parse("short=0.9:300-2000:10-20,"
	                           "long=0.1:33000-90000",
	                           &s, err, sizeof(err)),
	           0);
	memset(&t, 0, sizeof(t));
	CHECK_EQ_U(dbk_synth_generate(&s, 4.0, 20000, 0, 42, &t, err, sizeof(err)), 0);
	CHECK_EQ_U(t.n, 20000);
	CHECK_NEAR(t.req[0].t, 0, 0);
	for (i = 0; i < t.n; i++) {
		const struct dbk_trace_req *r = &t.req[i];

		if (r->input >= 33000) {
			n_long++;
			CHECK(r->input <= 90000);
			CHECK(r->output == DBK_SYNTH_DEFAULT_OUTPUT);
		} else {
			CHECK(r->input >= 300 && r->input <= 2000);
			CHECK(r->output >= 10 && r->output <= 20);
		}
		if (i)
			CHECK(r->t >= t.req[i - 1].t);
	}
	/* Mean gap 1/rate, long share 10%, within sampling noise. */
	sum_gap = t.req[t.n - 1].t;
	CHECK_NEAR(sum_gap / (double)(t.n - 1), 0.25, 0.03);
	CHECK(n_long > 1800 && n_long < 2200);

	/* Same seed, same trace. */
	memset(&t2, 0, sizeof(t2));
	CHECK_EQ_U(dbk_synth_generate(&s, 4.0, 20000, 0, 42, &t2, err, sizeof(err)), 0);
	CHECK(t2.n == t.n && memcmp(t.req, t2.req, t.n * sizeof(*t.req)) == 0);
	dbk_trace_free(&t2);
	dbk_trace_free(&t);

	/* Bounded by time. */
	memset(&t, 0, sizeof(t));
	CHECK_EQ_U(dbk_synth_generate(&s, 10.0, 0, 100.0, 1, &t, err, sizeof(err)), 0);
	CHECK(t.n > 850 && t.n < 1150);
	CHECK(t.req[t.n - 1].t < 100.0);
	dbk_trace_free(&t);

	/* Infinite rate: all at once. */
	CHECK_EQ_U(dbk_synth_generate(&s, INFINITY, 5, 0, 1, &t, err, sizeof(err)), 0);
	CHECK_EQ_U(t.n, 5);
	CHECK_NEAR(t.req[4].t, 0, 0);
	dbk_trace_free(&t);
	CHECK(dbk_synth_generate(&s, INFINITY, 0, 10, 1, &t, err, sizeof(err)) != 0);
	CHECK(dbk_synth_generate(&s, 1, 0, 0, 1, &t, err, sizeof(err)) != 0);
	CHECK(dbk_synth_generate(&s, 0, 5, 0, 1, &t, err, sizeof(err)) != 0);
	dbk_trace_free(&t);
}

int main(void)
{
	RUN(test_synth_parse);
	RUN(test_synth_generate);
	return CHECK_DONE();
}
