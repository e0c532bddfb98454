/* Unit tests of the fleet's schedule (schedule.c): --scale and --ramp's
 * steps, the ramp's time warp, --weights. */
#include "schedule.h"

#include <math.h>
#include <string.h>

#include "check.h"

static int parse(const char *text, double lo, double hi, int whole, struct dbk_sim_step *st,
                 size_t *n)
{
	char err[200];

	return dbk_sim_steps_parse(text, lo, hi, whole, st, DBK_SIM_MAX_STEPS, n, err, sizeof(err));
}

static void test_steps_parse(void)
{
	struct dbk_sim_step st[DBK_SIM_MAX_STEPS];
	size_t n = 99;

	CHECK(parse("0:4,600:8,1200:4", 1, 64, 1, st, &n) == 0);
	CHECK_EQ_U(n, 3);
	CHECK(st[0].t_s == 0 && st[0].v == 4);
	CHECK(st[1].t_s == 600 && st[1].v == 8);
	CHECK(st[2].t_s == 1200 && st[2].v == 4);
	CHECK(parse("0:1.5", 1e-3, 1e3, 0, st, &n) == 0);
	CHECK_EQ_U(n, 1);
	CHECK(st[0].v == 1.5);
	CHECK(parse("0:0.5,30.25:2", 1e-3, 1e3, 0, st, &n) == 0);
	CHECK(st[1].t_s == 30.25 && st[1].v == 2);
}

/* Every malformed text is refused, with a reason. */
static void test_steps_refused(void)
{
	static const char *const bad[] = {
		"",        /* empty */
		"4",       /* no colon */
		"1:4",     /* not at 0 first */
		"0:4,0:8", /* times do not rise */
		"0:4,9:8,5:2",
		"0:4,",
		"0:4,,9:2",
		",0:4",
		"0:",
		":4",
		"0:x",
		"x:4",
		"0:4.5", /* not whole */
		"0:0",   /* below 1 */
		"0:65",  /* above 64 */
		"-1:4",
		"0:4,inf:2",
		"0:4,nan:2",
		"0:4 ",
		"0:4,1e13:2",
	};
	struct dbk_sim_step st[DBK_SIM_MAX_STEPS];
	char err[200], many[400] = "0:1";
	size_t n;

	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		err[0] = '\0';
		int rc = dbk_sim_steps_parse(bad[k], 1, 64, 1, st, DBK_SIM_MAX_STEPS, &n, err,
		                             sizeof(err));
		CHECK(rc == -1 && err[0] != '\0');
		if (rc != -1)
			fprintf(stderr, "  taken: '%s'\n", bad[k]);
	}
	for (int k = 1; k <= DBK_SIM_MAX_STEPS; k++) /* one step too many */
		snprintf(many + strlen(many), sizeof(many) - strlen(many), ",%d:1", k);
	CHECK(parse(many, 1, 64, 1, st, &n) == -1);
}

static void test_steps_at(void)
{
	const struct dbk_sim_step st[] = { { 0, 4 }, { 600, 8 }, { 1200, 4 } };

	CHECK(dbk_sim_steps_at(st, 3, 0) == 4);
	CHECK(dbk_sim_steps_at(st, 3, 599.9) == 4);
	CHECK(dbk_sim_steps_at(st, 3, 600) == 8); /* a step holds from its time */
	CHECK(dbk_sim_steps_at(st, 3, 1199) == 8);
	CHECK(dbk_sim_steps_at(st, 3, 1e9) == 4);
	CHECK(dbk_sim_steps_at(st, 3, -5) == 4);
}

/* Twice the rate from 100 s to 200 s: the base-rate seconds 100..300
 * arrive in 100..200, the rest shifted back by 100. */
static void test_ramp(void)
{
	const struct dbk_sim_step r[] = { { 0, 1 }, { 100, 2 }, { 200, 1 } };
	const struct dbk_sim_step half[] = { { 0, 0.5 } };

	CHECK(dbk_sim_ramp_time(NULL, 0, 123.5) == 123.5);
	CHECK_NEAR(dbk_sim_ramp_time(r, 3, 50), 50, 1e-12);
	CHECK_NEAR(dbk_sim_ramp_time(r, 3, 100), 100, 1e-12);
	CHECK_NEAR(dbk_sim_ramp_time(r, 3, 200), 150, 1e-12);
	CHECK_NEAR(dbk_sim_ramp_time(r, 3, 300), 200, 1e-12);
	CHECK_NEAR(dbk_sim_ramp_time(r, 3, 400), 300, 1e-12);
	CHECK_NEAR(dbk_sim_ramp_time(half, 1, 10), 20, 1e-12);
	/* Monotone. */
	double last = -1;
	int bad = 0;
	for (double u = 0; u < 500; u += 0.7) {
		double t = dbk_sim_ramp_time(r, 3, u);
		bad += t < last;
		last = t;
	}
	CHECK_EQ_U(bad, 0);
}

static void test_weights(void)
{
	double w[8];
	size_t n;
	char err[200];

	CHECK(dbk_sim_weights_parse("10,3", w, 8, &n, err, sizeof(err)) == 0);
	CHECK_EQ_U(n, 2);
	CHECK(w[0] == 10 && w[1] == 3);
	CHECK(dbk_sim_weights_parse("256", w, 8, &n, err, sizeof(err)) == 0);
	CHECK(dbk_sim_weights_parse("0", w, 8, &n, err, sizeof(err)) == -1);
	CHECK(dbk_sim_weights_parse("257", w, 8, &n, err, sizeof(err)) == -1);
	CHECK(dbk_sim_weights_parse("1.5", w, 8, &n, err, sizeof(err)) == -1);
	CHECK(dbk_sim_weights_parse("10,,3", w, 8, &n, err, sizeof(err)) == -1);
	CHECK(dbk_sim_weights_parse("", w, 8, &n, err, sizeof(err)) == -1);
	CHECK(dbk_sim_weights_parse("1,1,1", w, 2, &n, err, sizeof(err)) == -1);
}

int main(void)
{
	RUN(test_steps_parse);
	RUN(test_steps_refused);
	RUN(test_steps_at);
	RUN(test_ramp);
	RUN(test_weights);
	return CHECK_DONE();
}
