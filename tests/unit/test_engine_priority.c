/* Unit tests of the engine model's --scheduling-policy priority
 * (engine.c, after vLLM's scheduler.py and request_queue.py): the
 * waiting queue in (priority, arrival) order, the preemption victim, and
 * FCFS left as it was. Model time only: nothing sleeps. */
#include "model/engine.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "engine_test.h"

#define MAXR 64

struct rec {
	uint64_t handle[MAXR];
	uint32_t tokens[MAXR];
	int preempted[MAXR];
	int order[MAXR]; /* cookies in first-token order */
	int n_order;
	int first_victim; /* cookie of the first request preempted, or -1 */
	int bad_sequence;
	uint32_t last_n[MAXR];
};

static void on_event(void *ctx, const struct dbk_engine_event *ev)
{
	struct rec *rc = ctx;
	int i = (int)(intptr_t)ev->cookie;

	switch (ev->type) {
	case DBK_ENGINE_EV_TOKEN:
		if (ev->n_output != rc->last_n[i] + 1)
			rc->bad_sequence++;
		rc->last_n[i] = ev->n_output;
		if (rc->tokens[i]++ == 0)
			rc->order[rc->n_order++] = i;
		break;
	case DBK_ENGINE_EV_PREEMPTED:
		if (rc->first_victim < 0)
			rc->first_victim = i;
		rc->preempted[i]++;
		break;
	case DBK_ENGINE_EV_FINISHED: break;
	}
}

static struct dbk_engine *mk(enum dbk_engine_policy policy, uint32_t budget, uint32_t seqs,
                             uint64_t kv)
{
	struct dbk_engine_config c;

	engine_test_config(&c, "h100", false, budget, seqs, kv, 2048);
	c.policy = policy;
	return dbk_engine_new(&c);
}

static void submit(struct dbk_engine *e, struct rec *rc, int i, uint32_t p, uint32_t out,
                   int32_t prio)
{
	const struct dbk_engine_submission sub = {
		.prompt_tokens = p,
		.max_output_tokens = out,
		.priority = prio,
		.cookie = (void *)(intptr_t)i,
	};

	CHECK_EQ_U(dbk_engine_submit_req(e, &sub, &rc->handle[i]), DBK_ENGINE_OK);
}

static void step(struct dbk_engine *e, struct rec *rc)
{
	double now = 0;

	engine_test_step(e, &now, on_event, rc);
}

static void drain(struct dbk_engine *e, struct rec *rc)
{
	for (int n = 0; dbk_engine_has_work(e) && n < 100000; n++)
		step(e, rc);
	CHECK(!dbk_engine_has_work(e));
}

/* Steps from a high-priority request's submission to its first token,
 * behind a flood of 40 low-priority 1000-token prompts on a 2048-token
 * budget (two prompts a step). */
static int steps_to_first_token(enum dbk_engine_policy policy)
{
	struct dbk_engine *e = mk(policy, 2048, 0, 0);
	struct rec rc = { .first_victim = -1 };
	int i, n = 0;

	for (i = 0; i < 40; i++)
		submit(e, &rc, i, 1000, 50, 10);
	step(e, &rc);
	submit(e, &rc, 40, 100, 5, 0);
	while (rc.tokens[40] == 0 && n < 1000) {
		step(e, &rc);
		n++;
	}
	drain(e, &rc);
	for (i = 0; i <= 40; i++)
		CHECK_EQ_U(rc.tokens[i], i == 40 ? 5 : 50);
	dbk_engine_free(e);
	return n;
}

/* Under priority the high request is admitted in the first step after
 * it arrives (running requests are still served first, and leave budget
 * to spare), and its prefill ends in that step; under FCFS it waits for
 * the 37 low-priority prompts queued before it, two a step. */
static void test_flood_first_token(void)
{
	int prio = steps_to_first_token(DBK_ENGINE_PRIORITY);
	int fcfs = steps_to_first_token(DBK_ENGINE_FCFS);

	CHECK_EQ_U(prio, 1);
	CHECK(fcfs >= 18);
}

/* The waiting queue: lower priority value first, then arrival; under
 * FCFS arrival alone, the priority ignored. One seat: one at a time. */
static void test_waiting_order(void)
{
	static const int32_t prio[] = { 5, 1, 5, -3 };
	static const int want_prio[] = { 3, 1, 0, 2 }, want_fcfs[] = { 0, 1, 2, 3 };

	for (int pass = 0; pass < 2; pass++) {
		struct dbk_engine *e = mk(pass ? DBK_ENGINE_FCFS : DBK_ENGINE_PRIORITY, 0, 1, 0);
		struct rec rc = { .first_victim = -1 };
		const int *want = pass ? want_fcfs : want_prio;

		for (int i = 0; i < 4; i++)
			submit(e, &rc, i, 100, 3, prio[i]);
		drain(e, &rc);
		CHECK_EQ_U(rc.n_order, 4);
		for (int i = 0; i < 4; i++)
			CHECK_EQ_U(rc.order[i], want[i]);
		dbk_engine_free(e);
	}
}

/* KV runs out: 128 blocks for three requests of 400 output tokens
 * each, A (400 prompt tokens, priority 0) and B (400, priority 9)
 * admitted in one step, C (392, priority 0, the newest) in the next, so
 * the running order is A, B, C under either policy. A and B take a new
 * block every 16 steps, C 9 steps after them, so the pool empties on A
 * and B and C is the first to find no block; runs until that first
 * preemption. */
static void collide(struct dbk_engine *e, struct rec *rc, bool then_d)
{
	submit(e, rc, 0, 400, 400, 0);
	submit(e, rc, 1, 400, 400, 9);
	step(e, rc);
	submit(e, rc, 2, 392, 400, 0);
	step(e, rc);
	if (then_d) /* D: 100 + 2 tokens, priority 0, waits for a seat */
		submit(e, rc, 3, 100, 2, 0);
	for (int n = 0; rc->first_victim < 0 && n < 10000; n++)
		step(e, rc);
}

/* FCFS evicts the newest: C itself. Priority evicts the worst
 * (priority, arrival): B, which was scheduled earlier in that very step
 * and gives its token back, so that step decodes A and C only. Every
 * request still ends with its 400 tokens. */
static void test_preemption_victim(void)
{
	for (int pass = 0; pass < 2; pass++) {
		enum dbk_engine_policy policy = pass ? DBK_ENGINE_FCFS : DBK_ENGINE_PRIORITY;
		struct dbk_engine *e = mk(policy, 8192, 0, 2048);
		struct rec rc = { .first_victim = -1 };
		struct dbk_engine_step_info si = { 0 };

		collide(e, &rc, false);
		dbk_engine_last_step(e, &si);
		CHECK_EQ_U(si.num_preempted, 1);
		if (policy == DBK_ENGINE_PRIORITY) {
			CHECK_EQ_U(rc.first_victim, 1);
			CHECK_EQ_U(si.num_decode_reqs, 2);
			CHECK_EQ_U(si.num_scheduled_tokens, 2);
		} else {
			CHECK_EQ_U(rc.first_victim, 2);
			/* C ended the running pass: nothing admitted. */
			CHECK_EQ_U(si.num_decode_reqs, 2);
			CHECK_EQ_U(si.num_new_admitted, 0);
		}
		drain(e, &rc);
		for (int i = 0; i < 3; i++)
			CHECK_EQ_U(rc.tokens[i], 400);
		CHECK_EQ_U(rc.bad_sequence, 0);
		dbk_engine_free(e);
	}
}

/* A preempted request goes back to its place in (priority, arrival),
 * not to the front: with three seats, D (priority 0) waits behind A, B
 * and C; B's preemption frees a seat, and D, not B, takes it (at the
 * front, FCFS's place, B would not fit the blocks it gave back and
 * would hold D behind it). */
static void test_preempted_keeps_its_place(void)
{
	struct dbk_engine *e = mk(DBK_ENGINE_PRIORITY, 8192, 3, 2048);
	struct rec rc = { .first_victim = -1 };

	collide(e, &rc, true);
	CHECK_EQ_U(rc.first_victim, 1);
	CHECK_EQ_U(rc.tokens[3], 0);
	step(e, &rc);
	CHECK_EQ_U(rc.tokens[3], 1);
	CHECK_EQ_U(dbk_engine_req_get(e, rc.handle[1], NULL), DBK_REQ_WAITING);
	drain(e, &rc);
	CHECK_EQ_U(rc.tokens[3], 2);
	CHECK_EQ_U(rc.tokens[1], 400);
	CHECK_EQ_U(rc.bad_sequence, 0);
	dbk_engine_free(e);
}

static void test_config(void)
{
	struct dbk_engine_config c;
	char err[160];

	dbk_engine_config_default(&c, NULL);
	CHECK_EQ_U(c.policy, DBK_ENGINE_FCFS);
	CHECK_EQ_U(dbk_engine_config_check(&c, err, sizeof(err)), 0);
	c.policy = (enum dbk_engine_policy)7;
	CHECK(dbk_engine_config_check(&c, err, sizeof(err)) < 0);
	CHECK(strstr(err, "scheduling policy") != NULL);
}

int main(void)
{
	RUN(test_flood_first_token);
	RUN(test_waiting_order);
	RUN(test_preemption_victim);
	RUN(test_preempted_keeps_its_place);
	RUN(test_config);
	return CHECK_DONE();
}
