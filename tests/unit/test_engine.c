/* Unit tests of the vLLM engine model (engine.c). Model time only: the
 * engine never reads a clock, so nothing here sleeps. */
#include "model/engine.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>

#include "check.h"
#include "engine_test.h"

#define MAXR 64

/* Per-request observations, indexed by the cookie (an index). */
struct rec {
	double now; /* model time at the end of the step */
	uint64_t handle[MAXR];
	uint32_t tokens[MAXR];
	uint32_t last_n[MAXR];
	int finished[MAXR];
	int preempted[MAXR];
	double first_token_at[MAXR];
	double finished_at[MAXR];
	int order[MAXR]; /* cookies in first-token order */
	int n_order;
	int bad_sequence; /* n_output not +1 per token */
	int events_after_finish;
	struct dbk_engine *abort_on_token_engine;
	int abort_victim;   /* cookie to abort from a callback */
	int aborted_events; /* events seen for the victim after */
	int victim_aborted;
};

static int idx_of(const struct dbk_engine_event *ev) { return (int)(intptr_t)ev->cookie; }

static void on_event(void *ctx, const struct dbk_engine_event *ev)
{
	struct rec *rc = ctx;
	int i = idx_of(ev);

	if (rc->victim_aborted && i == rc->abort_victim)
		rc->aborted_events++;
	if (rc->finished[i])
		rc->events_after_finish++;
	switch (ev->type) {
	case DBK_ENGINE_EV_TOKEN:
		if (ev->n_output != rc->last_n[i] + 1)
			rc->bad_sequence++;
		rc->last_n[i] = ev->n_output;
		rc->tokens[i]++;
		if (ev->n_output == 1) {
			rc->first_token_at[i] = rc->now;
			rc->order[rc->n_order++] = i;
		}
		if (rc->abort_on_token_engine && i != rc->abort_victim && !rc->victim_aborted) {
			CHECK_EQ_U(dbk_engine_abort(rc->abort_on_token_engine,
			                            rc->handle[rc->abort_victim]),
			           DBK_ENGINE_OK);
			rc->victim_aborted = 1;
		}
		break;
	case DBK_ENGINE_EV_FINISHED:
		rc->finished[i] = 1;
		rc->finished_at[i] = rc->now;
		break;
	case DBK_ENGINE_EV_PREEMPTED: rc->preempted[i]++; break;
	}
}

/* The scheduler tests check vLLM's scheduling without the prefix cache
 * (--no-prefix-caching); the cache has its own tests, which use mkc. */
static bool mk_caching;

static struct dbk_engine *mk(const char *gpu, uint32_t budget, uint32_t seqs, uint64_t kv,
                             uint32_t max_len)
{
	return engine_test_new(gpu, mk_caching, budget, seqs, kv, max_len);
}

static void submit(struct dbk_engine *e, struct rec *rc, int i, uint32_t p, uint32_t out)
{
	CHECK_EQ_U(dbk_engine_submit(e, p, out, (void *)(intptr_t)i, &rc->handle[i]),
	           DBK_ENGINE_OK);
}

/* One step, advancing the recorder's clock by its duration. */
static double step(struct dbk_engine *e, struct rec *rc)
{
	return engine_test_step(e, &rc->now, on_event, rc);
}

/* Runs to idle (bounded); returns the number of steps. */
static int drain(struct dbk_engine *e, struct rec *rc, int max_steps)
{
	int n = 0;

	while (dbk_engine_has_work(e) && n < max_steps) {
		if (step(e, rc) <= 0)
			break;
		n++;
	}
	return n;
}

static double idle_prefill(uint32_t prompt)
{
	struct dbk_engine *e = mk("h100", 0, 0, 0, 140000);
	struct rec rc = { 0 };
	double t;

	submit(e, &rc, 0, prompt, 1);
	drain(e, &rc, 1000);
	CHECK(rc.finished[0]);
	t = rc.first_token_at[0];
	dbk_engine_free(e);
	return t;
}

static void test_profiles(void)
{
	const struct dbk_engine_profile *h = dbk_engine_profile_find("h100");
	const struct dbk_engine_profile *a = dbk_engine_profile_find("a100");
	struct dbk_engine_config c;
	char err[200];

	CHECK(h && a);
	CHECK(dbk_engine_profile_find("tpu") == NULL);
	CHECK_EQ_U(h->default_max_num_batched_tokens, 8192);
	CHECK_EQ_U(h->default_max_num_seqs, 1024);
	CHECK_EQ_U(a->default_max_num_batched_tokens, 2048);
	CHECK_EQ_U(a->default_max_num_seqs, 256);
	CHECK_NEAR(DBK_MODEL_ATTN_FLOPS_PER_PAIR, 524288.0, 0);
	CHECK_NEAR(DBK_MODEL_KV_BYTES_PER_TOKEN, 131072.0, 0);

	dbk_engine_config_default(&c, h);
	CHECK_EQ_U(c.max_model_len, 131072);
	CHECK_EQ_U(c.kv_capacity_tokens, 430000);
	CHECK_EQ_U(dbk_engine_config_check(&c, err, sizeof(err)), 0);
	/* A max-length sequence must fit in the KV cache, like vLLM's
	 * start-up check. */
	c.kv_capacity_tokens = 100000;
	CHECK(dbk_engine_config_check(&c, err, sizeof(err)) != 0);
	CHECK(dbk_engine_new(&c) == NULL);
	c.kv_capacity_tokens = 100010; /* whole blocks: 100000 tokens */
	c.max_model_len = 100001;
	CHECK(dbk_engine_config_check(&c, err, sizeof(err)) != 0);
	c.max_model_len = 100000;
	CHECK_EQ_U(dbk_engine_config_check(&c, err, sizeof(err)), 0);
	c.max_num_seqs = 0;
	CHECK(dbk_engine_config_check(&c, err, sizeof(err)) != 0);
}

/* ENGINE-MODEL.md's figures for an idle H100: prefill 1k ~24 ms, 32k
 * ~1.4 s, 131k ~14 s. */
static void test_idle_prefill_times(void)
{
	CHECK_NEAR(idle_prefill(1024), 0.024, 0.20 * 0.024);
	CHECK_NEAR(idle_prefill(32768), 1.4, 0.20 * 1.4);
	CHECK_NEAR(idle_prefill(131072), 14.0, 0.20 * 14.0);
}

/* Decode step at batch 1 ~7.5 ms; batch 64 at 2k context ~14 ms. */
static void test_decode_step_times(void)
{
	struct dbk_engine *e = mk("h100", 0, 0, 0, 0);
	struct rec rc = { 0 };
	struct dbk_engine_step_info si;
	int i;
	double d;

	submit(e, &rc, 0, 2048, 10);
	step(e, &rc); /* prefill, first token */
	d = step(e, &rc);
	dbk_engine_last_step(e, &si);
	CHECK_EQ_U(si.num_decode_reqs, 1);
	CHECK_EQ_U(si.num_prefill_reqs, 0);
	CHECK_EQ_U(si.num_scheduled_tokens, 1);
	CHECK_NEAR(d, 0.0075, 0.20 * 0.0075);
	drain(e, &rc, 100);
	dbk_engine_free(e);

	/* 64 requests of 2048 prompt: prefilled four per step (8192 budget),
	 * then all 64 decode together. */
	e = mk("h100", 0, 0, 0, 0);
	memset(&rc, 0, sizeof(rc));
	for (i = 0; i < 64; i++)
		submit(e, &rc, i, 2048, 100);
	for (i = 0; i < 17; i++)
		step(e, &rc);
	d = step(e, &rc);
	dbk_engine_last_step(e, &si);
	CHECK_EQ_U(si.num_decode_reqs, 64);
	CHECK_EQ_U(si.num_prefill_reqs, 0);
	CHECK_NEAR(d, 0.014, 0.20 * 0.014);
	drain(e, &rc, 1000);
	dbk_engine_free(e);

	/* The A100 profile is slower on both counts. */
	{
		const struct dbk_engine_profile *a = dbk_engine_profile_find("a100");
		const struct dbk_engine_profile *h = dbk_engine_profile_find("h100");
		uint32_t n1 = 1, k = 2048, nb = 2048, k0 = 0;
		bool dec = false, pre = true;

		CHECK(dbk_engine_step_time(a, 1, &n1, &k, &dec) >
		      dbk_engine_step_time(h, 1, &n1, &k, &dec));
		CHECK(dbk_engine_step_time(a, 1, &nb, &k0, &pre) >
		      dbk_engine_step_time(h, 1, &nb, &k0, &pre));
	}
}

/* The step-time formula term by term, for one hand-computed batch. */
static void test_step_time_formula(void)
{
	const struct dbk_engine_profile *h = dbk_engine_profile_find("h100");
	uint32_t nw[2] = { 4000, 1 }, dn[2] = { 1000, 3000 };
	bool pf[2] = { true, false };
	double want = 1.5e-3 + 4001.0 / 46000.0 + 524288.0 * 4000.0 * (1000.0 + 2000.0) / 400e12 +
	              3001.0 * 131072.0 / 2.7e12;

	CHECK_NEAR(dbk_engine_step_time(h, 2, nw, dn, pf), want, 1e-12);
	/* Below the weight-read floor the linear term is T_w. */
	CHECK_NEAR(dbk_engine_step_time(h, 1, &nw[1], &dn[1], &pf[1]),
	           1.5e-3 + 6.0e-3 + 3001.0 * 131072.0 / 2.7e12, 1e-12);
}

static uint32_t lcg(uint64_t *s)
{
	*s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(*s >> 33);
}

/* Random mixed load: the budget and max-num-seqs hold on every step, KV
 * never exceeds capacity, every request gets exactly its tokens. */
static void test_budget_and_seqs_every_step(void)
{
	const uint32_t budget = 2048, seqs = 16;
	struct dbk_engine *e = mk("h100", budget, seqs, 65536, 32768);
	struct rec rc = { 0 };
	struct dbk_engine_step_info si;
	struct dbk_engine_stats st;
	uint32_t want[MAXR];
	uint64_t seed = 42;
	int i, steps = 0, over = 0, seq_over = 0, kv_over = 0;

	for (i = 0; i < MAXR; i++) {
		uint32_t p = 1 + lcg(&seed) % 12000;
		uint32_t o = 1 + lcg(&seed) % 300;

		want[i] = o;
		submit(e, &rc, i, p, o);
	}
	while (dbk_engine_has_work(e) && steps < 100000) {
		if (step(e, &rc) <= 0)
			break;
		steps++;
		dbk_engine_last_step(e, &si);
		dbk_engine_get_stats(e, &st);
		if (si.num_scheduled_tokens > budget || si.num_scheduled_tokens == 0)
			over++;
		if (dbk_engine_num_running(e) > seqs ||
		    si.num_prefill_reqs + si.num_decode_reqs > seqs)
			seq_over++;
		if (st.kv_blocks_used > st.kv_blocks_total)
			kv_over++;
	}
	CHECK(!dbk_engine_has_work(e));
	CHECK_EQ_U(over, 0);
	CHECK_EQ_U(seq_over, 0);
	CHECK_EQ_U(kv_over, 0);
	for (i = 0; i < MAXR; i++) {
		CHECK_EQ_U(rc.tokens[i], want[i]);
		CHECK(rc.finished[i]);
	}
	CHECK_EQ_U(rc.bad_sequence, 0);
	CHECK_EQ_U(rc.events_after_finish, 0);
	dbk_engine_get_stats(e, &st);
	CHECK_EQ_U(st.kv_blocks_used, 0);
	CHECK_EQ_U(st.requests_finished, MAXR);
	dbk_engine_free(e);
}

/* Rule 1's consequence: a short request queued behind an admitted long
 * prompt gets its first token only after the long prefill. */
static void test_head_of_line(void)
{
	struct dbk_engine *e = mk("h100", 0, 0, 0, 0);
	struct rec rc = { 0 };
	struct dbk_engine_step_info si;

	submit(e, &rc, 0, 32768, 10);
	step(e, &rc); /* long takes the whole budget */
	dbk_engine_last_step(e, &si);
	CHECK_EQ_U(si.num_scheduled_tokens, 8192);
	submit(e, &rc, 1, 100, 10);
	drain(e, &rc, 1000);
	CHECK(rc.finished[0] && rc.finished[1]);
	CHECK(rc.first_token_at[1] > rc.first_token_at[0]);
	CHECK(rc.first_token_at[1] > 1.0); /* seconds behind a 32k prefill */
	CHECK_EQ_U(rc.order[0], 0);
	dbk_engine_free(e);

	/* The same short request alone: tens of milliseconds. */
	e = mk("h100", 0, 0, 0, 0);
	memset(&rc, 0, sizeof(rc));
	submit(e, &rc, 1, 100, 10);
	drain(e, &rc, 100);
	CHECK(rc.first_token_at[1] < 0.02);
	dbk_engine_free(e);
}

/* A short request submitted while a long prefill leaves budget in its
 * last chunk is admitted in that same step (chunks share the budget). */
static void test_budget_shared_in_last_chunk(void)
{
	struct dbk_engine *e = mk("h100", 0, 0, 0, 0);
	struct rec rc = { 0 };
	struct dbk_engine_step_info si;

	submit(e, &rc, 0, 8192 + 1000, 5);
	step(e, &rc);
	submit(e, &rc, 1, 500, 5);
	step(e, &rc);
	dbk_engine_last_step(e, &si);
	CHECK_EQ_U(si.num_scheduled_tokens, 1500);
	CHECK_EQ_U(si.num_prefill_reqs, 2);
	CHECK_EQ_U(si.num_new_admitted, 1);
	CHECK_EQ_U(rc.tokens[0], 1);
	CHECK_EQ_U(rc.tokens[1], 1);
	drain(e, &rc, 100);
	dbk_engine_free(e);
}

/* KV exhausted: the newest running request is preempted, goes to the
 * front of the waiting queue, later prefills prompt + its output, and
 * still ends with exactly max_output_tokens. */
static void test_preemption(void)
{
	/* 128 blocks of 16 = 2048 tokens; four requests of 400 + 400. */
	struct dbk_engine *e = mk("h100", 8192, 0, 2048, 1024);
	struct rec rc = { 0 };
	struct dbk_engine_stats st;
	struct dbk_engine_req_info ri;
	int i, steps = 0, seen = 0;

	for (i = 0; i < 4; i++)
		submit(e, &rc, i, 400, 400);
	while (dbk_engine_has_work(e) && steps < 10000) {
		int before = rc.preempted[3];

		step(e, &rc);
		steps++;
		if (!seen && rc.preempted[3] > before) {
			/* The newest (last admitted) went first. */
			seen = 1;
			CHECK_EQ_U(rc.preempted[0] + rc.preempted[1] + rc.preempted[2], 0);
			CHECK_EQ_U(dbk_engine_req_get(e, rc.handle[3], &ri), DBK_REQ_WAITING);
			CHECK_EQ_U(ri.num_computed_tokens, 0);
			CHECK_EQ_U(ri.kv_blocks, 0);
			CHECK(ri.n_output > 0);
			CHECK_EQ_U(ri.num_preemptions, 1);
		}
	}
	CHECK(seen);
	dbk_engine_get_stats(e, &st);
	CHECK(st.preemptions_total >= 1);
	for (i = 0; i < 4; i++) {
		CHECK(rc.finished[i]);
		CHECK_EQ_U(rc.tokens[i], 400);
	}
	CHECK_EQ_U(rc.bad_sequence, 0);
	CHECK_EQ_U(st.kv_blocks_used, 0);
	CHECK_EQ_U(st.generation_tokens_total, 1600);
	CHECK_EQ_U(st.prompt_tokens_total, 1600);
	dbk_engine_free(e);
}

/* After preemption the request re-prefills prompt + generated tokens in
 * one chunk and resumes its token count where it was. */
static void test_preempted_reprefill_size(void)
{
	/* 64 blocks = 1024 tokens: A (500+300) and B (400+300) collide. */
	struct dbk_engine *e = mk("h100", 8192, 0, 1024, 1024);
	struct rec rc = { 0 };
	struct dbk_engine_req_info ri;
	struct dbk_engine_step_info si;
	uint32_t gen = 0;
	int steps = 0;

	submit(e, &rc, 0, 500, 300);
	submit(e, &rc, 1, 400, 300);
	while (steps < 10000 && rc.preempted[1] == 0) {
		step(e, &rc);
		steps++;
	}
	CHECK_EQ_U(rc.preempted[1], 1);
	CHECK_EQ_U(rc.preempted[0], 0);
	CHECK_EQ_U(dbk_engine_req_get(e, rc.handle[1], &ri), DBK_REQ_WAITING);
	gen = ri.n_output;
	CHECK(gen > 0);
	/* B waits until A finishes and frees its blocks. */
	while (steps < 10000 && !rc.finished[0]) {
		step(e, &rc);
		steps++;
		CHECK_EQ_U(dbk_engine_req_get(e, rc.handle[1], NULL), DBK_REQ_WAITING);
	}
	step(e, &rc);
	dbk_engine_last_step(e, &si);
	CHECK_EQ_U(si.num_new_admitted, 1);
	CHECK_EQ_U(si.num_scheduled_tokens, 400 + gen);
	CHECK_EQ_U(rc.last_n[1], gen + 1); /* resumed, no token repeated */
	drain(e, &rc, 10000);
	CHECK_EQ_U(rc.tokens[1], 300);
	CHECK_EQ_U(rc.bad_sequence, 0);
	dbk_engine_free(e);
}

/* The preempted request goes to the FRONT of the waiting queue: a request
 * that was waiting before it does not overtake it, even when it would fit
 * (the FCFS pass stops at the first request that cannot be allocated). */
static void test_preempted_goes_to_front(void)
{
	/* 64 blocks; at most two running: A and B fill the cache, C waits. */
	struct dbk_engine *e = mk("h100", 8192, 2, 1024, 1024);
	struct rec rc = { 0 };
	int steps = 0, violations = 0;

	submit(e, &rc, 0, 500, 300);
	submit(e, &rc, 1, 400, 300);
	submit(e, &rc, 2, 10, 5);
	while (dbk_engine_has_work(e) && steps < 10000) {
		step(e, &rc);
		steps++;
		if (dbk_engine_req_get(e, rc.handle[2], NULL) == DBK_REQ_RUNNING ||
		    rc.tokens[2] > 0) {
			/* C runs only once A is done and B is back. */
			if (!rc.finished[0] || rc.preempted[1] == 0 ||
			    (dbk_engine_req_get(e, rc.handle[1], NULL) != DBK_REQ_RUNNING &&
			     !rc.finished[1]))
				violations++;
		}
	}
	CHECK_EQ_U(rc.preempted[1], 1);
	CHECK_EQ_U(violations, 0);
	CHECK_EQ_U(rc.tokens[0], 300);
	CHECK_EQ_U(rc.tokens[1], 300);
	CHECK_EQ_U(rc.tokens[2], 5);
	dbk_engine_free(e);
}

static void test_max_model_len(void)
{
	struct dbk_engine *e = mk("h100", 0, 0, 0, 4096);
	uint64_t h = 0;

	CHECK(dbk_engine_submit(e, 4096, 1, NULL, &h) == DBK_ENGINE_E_TOO_LONG);
	CHECK(dbk_engine_submit(e, 5000, 1, NULL, &h) == DBK_ENGINE_E_TOO_LONG);
	CHECK(dbk_engine_submit(e, 4000, 97, NULL, &h) == DBK_ENGINE_E_TOO_LONG);
	CHECK(dbk_engine_submit(e, 0, 1, NULL, &h) == DBK_ENGINE_E_INVAL);
	CHECK(dbk_engine_submit(e, 1, 0, NULL, &h) == DBK_ENGINE_E_INVAL);
	CHECK_EQ_U(dbk_engine_num_waiting(e), 0);
	CHECK_EQ_U(dbk_engine_submit(e, 4000, 96, NULL, &h), DBK_ENGINE_OK);
	CHECK_EQ_U(dbk_engine_num_waiting(e), 1);
	dbk_engine_free(e);
}

static void test_abort_frees_kv(void)
{
	struct dbk_engine *e = mk("h100", 0, 0, 0, 0);
	struct rec rc = { 0 };
	struct dbk_engine_stats st;

	submit(e, &rc, 0, 3000, 100);
	submit(e, &rc, 1, 10000, 100);
	step(e, &rc);
	step(e, &rc);
	CHECK(dbk_engine_kv_usage(e) > 0);
	CHECK_EQ_U(dbk_engine_num_running(e), 2);
	CHECK_EQ_U(dbk_engine_abort(e, rc.handle[1]), DBK_ENGINE_OK);
	CHECK(dbk_engine_abort(e, rc.handle[1]) == DBK_ENGINE_E_UNKNOWN);
	CHECK_EQ_U(dbk_engine_num_running(e), 1);
	/* Abort while the step is in flight: no event after it. */
	CHECK(dbk_engine_begin_step(e) > 0);
	CHECK_EQ_U(dbk_engine_abort(e, rc.handle[0]), DBK_ENGINE_OK);
	{
		uint32_t before = rc.tokens[0];

		dbk_engine_end_step(e, on_event, &rc);
		CHECK_EQ_U(rc.tokens[0], before);
	}
	CHECK(!dbk_engine_has_work(e));
	CHECK_NEAR(dbk_engine_kv_usage(e), 0.0, 0);
	dbk_engine_get_stats(e, &st);
	CHECK_EQ_U(st.kv_blocks_used, 0);
	CHECK_EQ_U(st.requests_aborted, 2);
	CHECK_EQ_U(dbk_engine_step(e, on_event, &rc) > 0, 0);
	/* A waiting request can be aborted too, and stale handles fail. */
	submit(e, &rc, 2, 100, 5);
	CHECK_EQ_U(dbk_engine_abort(e, rc.handle[2]), DBK_ENGINE_OK);
	CHECK_EQ_U(dbk_engine_num_waiting(e), 0);
	CHECK(dbk_engine_abort(e, rc.handle[0]) == DBK_ENGINE_E_UNKNOWN);
	CHECK(dbk_engine_abort(e, 0x12345678ULL) == DBK_ENGINE_E_UNKNOWN);
	dbk_engine_free(e);
}

/* A callback aborting another request whose token is in the same batch:
 * that request reports nothing more. */
static void test_abort_from_callback(void)
{
	struct dbk_engine *e = mk("h100", 0, 0, 0, 0);
	struct rec rc = { 0 };
	int i;

	for (i = 0; i < 4; i++)
		submit(e, &rc, i, 100, 20);
	rc.abort_on_token_engine = e;
	rc.abort_victim = 3;
	drain(e, &rc, 1000);
	CHECK(rc.victim_aborted);
	CHECK_EQ_U(rc.aborted_events, 0);
	CHECK(!rc.finished[3]);
	for (i = 0; i < 3; i++)
		CHECK_EQ_U(rc.tokens[i], 20);
	CHECK_NEAR(dbk_engine_kv_usage(e), 0.0, 0);
	dbk_engine_free(e);
}

/* First come first served: with one prefill per step, first tokens come
 * in submission order. */
static void test_fcfs(void)
{
	struct dbk_engine *e = mk("h100", 1000, 0, 0, 0);
	struct rec rc = { 0 };
	int i;

	for (i = 0; i < 10; i++)
		submit(e, &rc, i, 990, 3);
	drain(e, &rc, 1000);
	CHECK_EQ_U(rc.n_order, 10);
	for (i = 0; i < 10; i++)
		CHECK_EQ_U(rc.order[i], i);
	for (i = 1; i < 10; i++)
		CHECK(rc.first_token_at[i] > rc.first_token_at[i - 1]);
	dbk_engine_free(e);
}

static void test_max_num_seqs(void)
{
	struct dbk_engine *e = mk("h100", 0, 4, 0, 0);
	struct rec rc = { 0 };
	int i, steps = 0, max_running = 0;

	for (i = 0; i < 10; i++)
		submit(e, &rc, i, 50, 30);
	while (dbk_engine_has_work(e) && steps < 10000) {
		step(e, &rc);
		steps++;
		if ((int)dbk_engine_num_running(e) > max_running)
			max_running = (int)dbk_engine_num_running(e);
		if (steps == 1)
			CHECK_EQ_U(dbk_engine_num_waiting(e), 6);
	}
	CHECK_EQ_U(max_running, 4);
	for (i = 0; i < 10; i++)
		CHECK_EQ_U(rc.tokens[i], 30);
	/* The fifth request starts only when one of the first four ends. */
	CHECK(rc.first_token_at[4] >= rc.finished_at[0]);
	dbk_engine_free(e);
}

static void test_single_token_and_idle(void)
{
	struct dbk_engine *e = mk("a100", 0, 0, 0, 0);
	struct rec rc = { 0 };
	struct dbk_engine_stats st;

	CHECK_EQ_U(dbk_engine_begin_step(e) > 0, 0);
	CHECK(!dbk_engine_in_step(e));
	submit(e, &rc, 0, 1, 1);
	CHECK(step(e, &rc) > 0);
	CHECK(rc.finished[0]);
	CHECK_EQ_U(rc.tokens[0], 1);
	CHECK(!dbk_engine_has_work(e));
	dbk_engine_get_stats(e, &st);
	CHECK_EQ_U(st.steps_total, 1);
	CHECK_EQ_U(st.requests_finished, 1);
	CHECK_EQ_U(st.prompt_tokens_total, 1);
	/* A100 chunks with its smaller default budget. */
	submit(e, &rc, 1, 5000, 1);
	step(e, &rc);
	CHECK_EQ_U(rc.tokens[1], 0);
	drain(e, &rc, 10);
	CHECK_EQ_U(rc.tokens[1], 1);
	dbk_engine_get_stats(e, &st);
	CHECK_EQ_U(st.steps_total, 4); /* 1 + ceil(5000 / 2048) */
	dbk_engine_free(e);
}

int main(void)
{
	RUN(test_profiles);
	RUN(test_idle_prefill_times);
	RUN(test_decode_step_times);
	RUN(test_step_time_formula);
	RUN(test_budget_and_seqs_every_step);
	RUN(test_head_of_line);
	RUN(test_budget_shared_in_last_chunk);
	RUN(test_preemption);
	RUN(test_preempted_reprefill_size);
	RUN(test_preempted_goes_to_front);
	RUN(test_max_model_len);
	RUN(test_abort_frees_kv);
	RUN(test_abort_from_callback);
	RUN(test_fcfs);
	RUN(test_max_num_seqs);
	RUN(test_single_token_and_idle);
	return CHECK_DONE();
}
