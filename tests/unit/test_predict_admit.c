/* What the predictor's policies tell admission (policy_ttft.c): the
 * later of the first token and the TPOT, each on its objective's scale.
 * Admission's rule is stated on the first token; past capacity on long
 * agentic sessions what goes late is the TPOT, which the first token
 * does not show (BENCHMARKS.md, "Stop 41: the KV books against the
 * scrape"). */
#include <math.h>

#include "check.h"
#include "policy_ttft.h"

static struct dbk_policy_ttft *start(void)
{
	const struct dbk_policy_env env = { .nservers = 2, .engine_speed = 1.0, .stall_weight = -1 };

	return dbk_policy_ttft_create(&env);
}

static void test_admission_sees_a_late_tpot(void)
{
	struct dbk_policy_ttft *t = start();
	struct dbk_policy_choice c;

	CHECK(t);
	if (!t)
		return;
	const struct dbk_pred_config *k = dbk_pred_config(t->pred);
	/* Its TPOT 1.5 times its objective: the first token's objective 1.5
	 * times, though its first token is soon. */
	struct dbk_pred_choice pc = { .server = 1,
		                      .reason = DBK_PRED_FASTEST,
		                      .ttft_s = 0.2,
		                      .own_s = 0.1,
		                      .tpot_s = 1.5 * k->tpot_slo_s };
	CHECK(dbk_policy_ttft_chose(t, &pc, &c) == 1);
	CHECK(fabs(c.admit_s - 1.5 * k->ttft_slo_s) < 1e-9);
	CHECK(c.ttft_s == 0.2); /* the first token told as predicted */
	/* A first token later than its TPOT, on the same scale: itself. */
	pc.ttft_s = 0.9 * k->ttft_slo_s;
	pc.tpot_s = 0.2 * k->tpot_slo_s;
	dbk_policy_ttft_chose(t, &pc, &c);
	CHECK(c.admit_s == pc.ttft_s);
	dbk_policy_ttft_destroy(t);
}

int main(void)
{
	RUN(test_admission_sees_a_late_tpot);
	return CHECK_DONE();
}
