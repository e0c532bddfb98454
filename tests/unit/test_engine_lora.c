/* Unit tests of the engine model's LoRA adapters (engine_lora.c, after
 * vLLM's scheduler.py and worker_manager.py): the distinct-adapter cap
 * per batch, the GPU slots and the CPU cache with LRU eviction and what
 * a load costs, the metric's counts, and an engine without LoRA left as
 * it was. Model time only: nothing sleeps. */
#include "model/engine.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "engine_test.h"

#define MAXR 32

struct rec {
	uint64_t handle[MAXR];
	double first_token[MAXR]; /* model time of the first token, 0: none yet */
	double now;
};

static void on_event(void *ctx, const struct dbk_engine_event *ev)
{
	struct rec *rc = ctx;
	int i = (int)(intptr_t)ev->cookie;

	if (ev->type == DBK_ENGINE_EV_TOKEN && ev->n_output == 1)
		rc->first_token[i] = rc->now;
}

static struct dbk_engine *mk(uint32_t max_loras, uint32_t max_cpu_loras)
{
	struct dbk_engine_config c;

	engine_test_config(&c, "h100", false, 0, 0, 0, 4096);
	c.max_loras = max_loras;
	c.max_cpu_loras = max_cpu_loras;
	return dbk_engine_new(&c);
}

static int submit(struct dbk_engine *e, struct rec *rc, int i, uint32_t lora, uint32_t out)
{
	const struct dbk_engine_submission sub = {
		.prompt_tokens = 64,
		.max_output_tokens = out,
		.lora = lora,
		.cookie = (void *)(intptr_t)i,
	};

	return dbk_engine_submit_req(e, &sub, &rc->handle[i]);
}

static double step(struct dbk_engine *e, struct rec *rc)
{
	return engine_test_step(e, &rc->now, on_event, rc);
}

static void drain(struct dbk_engine *e, struct rec *rc)
{
	for (int n = 0; dbk_engine_has_work(e) && n < 100000; n++)
		step(e, rc);
	CHECK(!dbk_engine_has_work(e));
}

/* Two slots, requests for adapters 1, 2, 3, the base model, 1 again:
 * the first step takes 1 and 2, skips 3 (a third adapter) and still
 * takes the base request and the second 1 behind it; 3 runs once a
 * slot's requests are done. */
static void test_batch_cap(void)
{
	static const uint32_t lora[] = { 1, 2, 3, 0, 1 };
	struct dbk_engine *e = mk(2, 0);
	struct rec rc = { 0 };
	struct dbk_engine_step_info info;
	struct dbk_engine_stats st;

	for (int i = 0; i < 5; i++)
		CHECK_EQ_U(submit(e, &rc, i, lora[i], 4), DBK_ENGINE_OK);
	step(e, &rc);
	dbk_engine_last_step(e, &info);
	CHECK_EQ_U(info.num_new_admitted, 4);
	CHECK_EQ_U(info.num_loras, 2);
	CHECK_EQ_U(dbk_engine_req_get(e, rc.handle[2], NULL), DBK_REQ_WAITING);
	CHECK_EQ_U(dbk_engine_req_get(e, rc.handle[3], NULL), DBK_REQ_RUNNING);
	CHECK_EQ_U(dbk_engine_req_get(e, rc.handle[4], NULL), DBK_REQ_RUNNING);
	/* Never more than two adapters in a batch, and 3 only after 1 and
	 * 2 are done (both take as long). */
	while (dbk_engine_req_get(e, rc.handle[2], NULL) == DBK_REQ_WAITING && rc.now < 10) {
		step(e, &rc);
		dbk_engine_last_step(e, &info);
		CHECK(info.num_loras <= 2);
	}
	drain(e, &rc);
	CHECK(rc.first_token[2] > rc.first_token[0]);
	dbk_engine_get_stats(e, &st);
	CHECK_EQ_U(st.requests_finished, 5);
	/* 3 is read into a full CPU cache of two: its oldest (1, brought
	 * first, ascending) leaves it and frees 1's slot on the way. */
	CHECK_EQ_U(st.lora_loads, 3);
	CHECK_EQ_U(st.lora_cpu_evictions, 1);
	CHECK_EQ_U(st.lora_slot_evictions, 0);
	dbk_engine_free(e);
}

/* One slot, a CPU cache of two: 1 is read (load), 2 is read and takes
 * the slot (1 stays in the CPU cache), 1 again is only copied back
 * (activation), 3 is read, evicting the CPU cache's oldest (2) and the
 * slot's 1. Each step that brings an adapter in is longer by exactly
 * its cost. */
static void test_lru_and_cost(void)
{
	static const uint32_t seq[] = { 1, 2, 1, 3, 3 };
	static const double cost[] = { DBK_ENGINE_LORA_LOAD_S, DBK_ENGINE_LORA_LOAD_S,
		                       DBK_ENGINE_LORA_ACTIVATE_S, DBK_ENGINE_LORA_LOAD_S, 0 };
	struct dbk_engine *e = mk(1, 2), *base = mk(1, 2);
	struct rec rc = { 0 }, rb = { 0 };
	struct dbk_engine_step_info info;
	struct dbk_engine_stats st;

	for (int i = 0; i < 5; i++) {
		CHECK_EQ_U(submit(e, &rc, i, seq[i], 1), DBK_ENGINE_OK);
		CHECK_EQ_U(submit(base, &rb, i, 0, 1), DBK_ENGINE_OK);
		double d = step(e, &rc), db = step(base, &rb);

		dbk_engine_last_step(e, &info);
		CHECK_NEAR(info.lora_load_s, cost[i], 1e-12);
		CHECK_NEAR(d - db, cost[i], 1e-12);
		CHECK(dbk_engine_lora_in_slot(e, seq[i]));
	}
	CHECK(!dbk_engine_lora_in_cpu(e, 2));
	CHECK(dbk_engine_lora_in_cpu(e, 1) && dbk_engine_lora_in_cpu(e, 3));
	CHECK(!dbk_engine_lora_in_slot(e, 1));
	dbk_engine_get_stats(e, &st);
	CHECK_EQ_U(st.lora_loads, 3);
	CHECK_EQ_U(st.lora_activations, 4);
	CHECK_EQ_U(st.lora_slot_evictions, 3); /* 1 by 2, 2 by 1, 1 by 3 */
	CHECK_EQ_U(st.lora_cpu_evictions, 1);
	CHECK_NEAR(st.lora_load_time_s, 3 * DBK_ENGINE_LORA_LOAD_S + DBK_ENGINE_LORA_ACTIVATE_S,
	           1e-12);
	dbk_engine_free(e);
	dbk_engine_free(base);
}

/* dbk_engine_lora_add (vLLM's add_lora) puts the adapter in a slot
 * without model time: the first request for it then costs nothing. */
static void test_add(void)
{
	struct dbk_engine *e = mk(2, 0);
	struct rec rc = { 0 };
	struct dbk_engine_step_info info;

	CHECK_EQ_U(dbk_engine_lora_add(e, 7), 0);
	CHECK(dbk_engine_lora_add(e, 0) < 0);
	CHECK(dbk_engine_lora_in_slot(e, 7));
	CHECK_EQ_U(submit(e, &rc, 0, 7, 1), DBK_ENGINE_OK);
	step(e, &rc);
	dbk_engine_last_step(e, &info);
	CHECK_EQ_U(info.num_loras, 1);
	CHECK(info.lora_load_s == 0);
	dbk_engine_free(e);
}

/* The metric's counts: waiting until first scheduled, then running
 * until done; an aborted waiting request leaves the waiting count; an
 * adapter with nothing live leaves the list. */
static void test_counts(void)
{
	struct dbk_engine *e = mk(1, 0);
	struct rec rc = { 0 };
	struct dbk_engine_lora_count c[4];

	CHECK_EQ_U(submit(e, &rc, 0, 5, 3), DBK_ENGINE_OK);
	CHECK_EQ_U(submit(e, &rc, 1, 6, 3), DBK_ENGINE_OK);
	CHECK_EQ_U(submit(e, &rc, 2, 6, 3), DBK_ENGINE_OK);
	CHECK_EQ_U(dbk_engine_lora_counts(e, c, 4), 2);
	CHECK(c[0].id == 5 && c[0].waiting == 1 && c[0].running == 0);
	CHECK(c[1].id == 6 && c[1].waiting == 2 && c[1].running == 0);
	step(e, &rc);
	CHECK_EQ_U(dbk_engine_lora_counts(e, c, 4), 2);
	CHECK(c[0].id == 5 && c[0].waiting == 0 && c[0].running == 1);
	CHECK(c[1].waiting == 2 && c[1].running == 0);
	CHECK_EQ_U(dbk_engine_abort(e, rc.handle[2]), DBK_ENGINE_OK);
	CHECK_EQ_U(dbk_engine_lora_counts(e, c, 4), 2);
	CHECK(c[1].waiting == 1);
	drain(e, &rc);
	CHECK_EQ_U(dbk_engine_lora_counts(e, c, 4), 0);
	dbk_engine_free(e);
}

/* Without LoRA an adapter is refused, the base model's steps are the
 * same as an engine's with slots it never uses, and the configuration
 * rules hold. */
static void test_off(void)
{
	struct dbk_engine *off = mk(0, 0), *on = mk(4, 0);
	struct rec ro = { 0 }, rn = { 0 };
	struct dbk_engine_config c;
	char err[160];

	CHECK(submit(off, &ro, 0, 1, 1) == DBK_ENGINE_E_NO_LORA);
	for (int i = 0; i < 8; i++) {
		CHECK_EQ_U(submit(off, &ro, i, 0, 3), DBK_ENGINE_OK);
		CHECK_EQ_U(submit(on, &rn, i, 0, 3), DBK_ENGINE_OK);
	}
	while (dbk_engine_has_work(off) || dbk_engine_has_work(on))
		CHECK(step(off, &ro) == step(on, &rn));
	CHECK(!dbk_engine_lora_in_slot(off, 1));
	/* Nothing to count, and nothing read (UBSan: no memcpy from NULL). */
	struct dbk_engine_lora_count none[2];
	CHECK_EQ_U(dbk_engine_lora_counts(off, none, 2), 0);
	dbk_engine_free(off);
	dbk_engine_free(on);

	dbk_engine_config_default(&c, NULL);
	CHECK_EQ_U(c.max_loras, 0);
	c.max_loras = 4;
	c.max_cpu_loras = 2;
	CHECK(dbk_engine_config_check(&c, err, sizeof(err)) < 0);
	CHECK(strstr(err, "max-cpu-loras") != NULL);
	c.max_cpu_loras = 0;
	CHECK_EQ_U(dbk_engine_config_check(&c, err, sizeof(err)), 0);
	c.max_loras = DBK_ENGINE_MAX_LORAS_LIMIT + 1;
	CHECK(dbk_engine_config_check(&c, err, sizeof(err)) < 0);
	c.max_loras = 1;
	c.lora_load_s = -1;
	CHECK(dbk_engine_config_check(&c, err, sizeof(err)) < 0);
}

int main(void)
{
	RUN(test_batch_cap);
	RUN(test_lru_and_cost);
	RUN(test_add);
	RUN(test_counts);
	RUN(test_off);
	return CHECK_DONE();
}
