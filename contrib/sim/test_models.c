/* Unit tests of several models and LoRA adapters on one fleet
 * (multimodel.c, and the routing filter in sim.c): the instances go to
 * the models in the documented proportion, the workload's models and
 * adapters are deterministic and in the documented proportions, and no
 * policy ever sends a request to an instance of another model. */
#include "multimodel.h"
#include "policy.h"
#include "sim.h"

#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static struct dbk_sim_models models(unsigned nm, const double *share, unsigned nadapters)
{
	struct dbk_sim_models m;

	memset(&m, 0, sizeof(m));
	m.nmodels = nm;
	for (unsigned k = 0; k < nm; k++)
		m.share[k] = share[k];
	m.nadapters = nadapters;
	m.adapter_share = 0.5;
	m.seed = DBK_SIM_MODELS_SEED;
	return m;
}

/* 16 instances at 50,30,20: 8, 5 and 3 (largest remainder), spread so
 * that the first four already hold every model; equal shares 6, 5, 5;
 * a model too many for the fleet is refused. */
static void test_instances(void)
{
	const double w[] = { 50, 30, 20 }, eq[] = { 1, 1, 1 };
	struct dbk_sim_models m = models(3, w, 0);
	uint8_t of[16];
	unsigned count[3] = { 0 }, seen = 0;

	CHECK_EQ_U(dbk_sim_models_instances(&m, 16, of), 0);
	for (unsigned i = 0; i < 16; i++)
		count[of[i]]++;
	CHECK_EQ_U(count[0], 8);
	CHECK_EQ_U(count[1], 5);
	CHECK_EQ_U(count[2], 3);
	for (unsigned i = 0; i < 4; i++)
		seen |= 1u << of[i];
	CHECK_EQ_U(seen, 7);
	m = models(3, eq, 0);
	memset(count, 0, sizeof(count));
	CHECK_EQ_U(dbk_sim_models_instances(&m, 16, of), 0);
	for (unsigned i = 0; i < 16; i++)
		count[of[i]]++;
	CHECK(count[0] == 6 && count[1] == 5 && count[2] == 5);
	CHECK(dbk_sim_models_instances(&m, 2, of) == -1);
}

/* The per-model counts capacity.c scales a model's capacity by, and
 * every model's capacity: the least, 0 when one model has none. */
static void test_counts_and_every(void)
{
	const double w[] = { 3, 2, 1 };
	struct dbk_sim_models m = models(3, w, 0);
	uint8_t of[16];
	struct dbk_sim_req reqs[5] = {
		{ .model = 2 }, { .model = 0 }, { .model = 2 }, { .model = 1 }, { .model = 2 }
	};
	unsigned inst[3], off[3];
	const double some[] = { 4.5, 3.25, 5 }, none[] = { 4.5, 0, 5 };

	CHECK_EQ_U(dbk_sim_models_instances(&m, 16, of), 0);
	dbk_sim_models_count(3, of, 16, reqs, 5, inst, off);
	CHECK(inst[0] == 8 && inst[1] == 5 && inst[2] == 3);
	CHECK(off[0] == 1 && off[1] == 1 && off[2] == 3);
	CHECK_NEAR(dbk_sim_models_every(some, 3), 3.25, 0);
	CHECK_NEAR(dbk_sim_models_every(none, 3), 0, 0);
	CHECK_NEAR(dbk_sim_models_every(some, 0), 0, 0);
	/* One model (no --models): no instance map, nothing counted (the
	 * capacity search of every single-model run asks). */
	dbk_sim_models_count(0, NULL, 16, reqs, 5, inst, off);
}

#define NW 30000

/* Conversations of three turns each: the models' shares within 1.5
 * points of 50/30/20, half the conversations on an adapter, each
 * adapter a child of the request's model, Zipf within a model (its
 * first adapter twice as popular as its second), a conversation's turns
 * on one model and adapter, and the same draws twice. */
static void test_workload(void)
{
	const double w[] = { 50, 30, 20 };
	struct dbk_sim_models m = models(3, w, 40);
	struct dbk_sim_req *a = calloc(NW, sizeof(*a)), *b = calloc(NW, sizeof(*b));
	unsigned per_model[3] = { 0 }, with = 0, first = 0, second = 0, bad_parent = 0,
	         bad_turn = 0;

	CHECK(a && b);
	if (!a || !b)
		goto out;
	for (uint32_t i = 0; i < NW; i++) {
		a[i].id = i;
		a[i].session = 7000000 + i / 3;
		a[i].has_session = true;
	}
	memcpy(b, a, NW * sizeof(*a));
	dbk_sim_models_assign(&m, a, NW);
	dbk_sim_models_assign(&m, b, NW);
	CHECK(memcmp(a, b, NW * sizeof(*a)) == 0);
	for (uint32_t i = 0; i < NW; i++) {
		per_model[a[i].model]++;
		with += a[i].lora != 0;
		bad_parent += a[i].lora && dbk_sim_models_parent(&m, a[i].lora) != a[i].model;
		first += a[i].lora == 1; /* model 0's adapters: 1, 4, 7, ... */
		second += a[i].lora == 4;
		if (i % 3)
			bad_turn += a[i].model != a[i - 1].model || a[i].lora != a[i - 1].lora;
	}
	CHECK(fabs((double)per_model[0] / NW - 0.5) < 0.015);
	CHECK(fabs((double)per_model[1] / NW - 0.3) < 0.015);
	CHECK(fabs((double)per_model[2] / NW - 0.2) < 0.015);
	CHECK(fabs((double)with / NW - 0.5) < 0.015);
	CHECK_EQ_U(bad_parent, 0);
	CHECK_EQ_U(bad_turn, 0);
	CHECK(second > 0 && (double)first / second > 1.6 && (double)first / second < 2.5);
	/* Another seed draws otherwise. */
	m.seed ^= 1;
	dbk_sim_models_assign(&m, b, NW);
	CHECK(memcmp(a, b, NW * sizeof(*a)) != 0);
out:
	free(a);
	free(b);
}

#define NR 600
#define NI 6

/* A busy fleet of six instances, two per model, serving nine adapters
 * with two GPU slots each. */
static struct dbk_sim *run(const struct dbk_sim_req *r, const uint8_t *of,
                           const struct dbk_sim_policy_ops *ops)
{
	struct dbk_engine_config e[NI];
	struct dbk_sim_config c;
	struct dbk_sim *s;
	char err[256];

	for (unsigned i = 0; i < NI; i++) {
		dbk_engine_config_default(&e[i], dbk_engine_profile_find("h100"));
		e[i].max_loras = 2;
	}
	dbk_sim_config_default(&c);
	c.ninstances = NI;
	c.engines = e;
	c.nmodels = 3;
	c.inst_model = of;
	s = dbk_sim_new(&c, r, NR, ops, err, sizeof(err));
	CHECK(s != NULL);
	if (s && dbk_sim_run(s, err, sizeof(err)) != 0) {
		fprintf(stderr, "  run %s: %s\n", ops->name, err);
		CHECK(0);
	}
	return s;
}

static struct dbk_sim_req *workload(void)
{
	static uint64_t ids[NR][4];
	const double eq[] = { 1, 1, 1 };
	struct dbk_sim_models m = models(3, eq, 9);
	struct dbk_sim_req *r = calloc(NR, sizeof(*r));

	for (uint32_t i = 0; r && i < NR; i++) {
		for (unsigned k = 0; k < 4; k++)
			ids[i][k] = 100u * (i % 50) + k;
		r[i].id = i;
		r[i].arrival_s = 0.01 * i;
		r[i].input_tokens = 1800 + 7 * (i % 13);
		r[i].output_tokens = 20 + i % 90;
		r[i].hash_ids = ids[i];
		r[i].n_hash_ids = 4;
		r[i].session = i % 50;
		r[i].has_session = true;
	}
	if (r)
		dbk_sim_models_assign(&m, r, NR);
	return r;
}

/* Every policy of the table, the extra ones too: each request is served
 * by an instance of its model, none is counted wrong, every one ends
 * once, and the adapters were loaded. */
static void test_no_cross_model(void)
{
	const double eq[] = { 1, 1, 1 };
	struct dbk_sim_models m = models(3, eq, 0);
	struct dbk_sim_req *r = workload();
	const struct dbk_sim_policy_ops *ops;
	uint8_t of[NI];

	CHECK(r != NULL);
	CHECK_EQ_U(dbk_sim_models_instances(&m, NI, of), 0);
	for (size_t p = 0; r && (ops = dbk_sim_policy_at(p)) != NULL; p++) {
		struct dbk_sim *s = run(r, of, ops);
		struct dbk_sim_result res;
		unsigned wrong = 0, unserved = 0, ends = 0;

		if (!s)
			continue;
		CHECK_EQ_U(dbk_sim_result(s, &res), 0);
		for (uint32_t i = 0; i < NR; i++) {
			const struct dbk_sim_outcome *o = dbk_sim_outcome(s, i);

			ends += o->ends != 1;
			if (o->instance == DBK_SIM_NONE)
				unserved++;
			else
				wrong += of[o->instance] != r[i].model;
		}
		if (wrong || res.wrong_model || res.misrouted || ends)
			fprintf(stderr, "  %s: %u to another model, %u ends\n", ops->name, wrong,
			        ends);
		CHECK_EQ_U(wrong, 0);
		CHECK_EQ_U(res.wrong_model, 0);
		CHECK_EQ_U(res.misrouted, 0);
		CHECK_EQ_U(ends, 0);
		CHECK_EQ_U(unserved, 0);
		CHECK(res.lora_loads > 0);
		dbk_sim_free(s);
	}
	free(r);
}

/* A policy that ignores the models: always instance 0. */
static int first_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	(void)st;
	(void)s;
	(void)r;
	return 0;
}

/* The check itself can fail: what a policy blind to models sends to
 * another model's instance is counted and fails there. */
static void test_wrong_model_counted(void)
{
	const double eq[] = { 1, 1, 1 };
	struct dbk_sim_models m = models(3, eq, 0);
	const struct dbk_sim_policy_ops blind = { .name = "blind", .choose = first_choose };
	struct dbk_sim_req *r = workload();
	struct dbk_sim_result res;
	uint8_t of[NI];
	unsigned others = 0;

	CHECK(r != NULL);
	if (!r)
		return;
	CHECK_EQ_U(dbk_sim_models_instances(&m, NI, of), 0);
	for (uint32_t i = 0; i < NR; i++)
		others += r[i].model != of[0];
	struct dbk_sim *s = run(r, of, &blind);
	if (s) {
		CHECK_EQ_U(dbk_sim_result(s, &res), 0);
		CHECK(others > 0);
		CHECK_EQ_U(res.wrong_model, others);
		CHECK_EQ_U(res.misrouted, others);
		dbk_sim_free(s);
	}
	free(r);
}

int main(void)
{
	RUN(test_instances);
	RUN(test_counts_and_every);
	RUN(test_workload);
	RUN(test_no_cross_model);
	RUN(test_wrong_model_counted);
	return CHECK_DONE();
}
