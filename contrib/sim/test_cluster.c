/* Unit tests of the cluster simulator (sim.c) and its policies: the
 * engine's figures through the whole loop, scripted round robin and
 * least connections, the balancer policies against dbk_bal_decide,
 * conservation and determinism. */
#include "policy.h"
#include "report.h"
#include "sim.h"

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

/* c over n instances e; the first ceil(n/2) get the short profile when
 * given. */
static void mk_fleet(struct dbk_sim_config *c, struct dbk_engine_config *e, unsigned n,
                     const char *gpu, uint32_t short_mml, uint64_t short_kv)
{
	unsigned i, ns = dbk_sim_short_count(n);

	for (i = 0; i < n; i++) {
		dbk_engine_config_default(&e[i], dbk_engine_profile_find(gpu));
		if (i < ns && short_mml)
			e[i].max_model_len = short_mml;
		if (i < ns && short_kv)
			e[i].kv_capacity_tokens = short_kv;
	}
	dbk_sim_config_default(c);
	c->ninstances = n;
	c->engines = e;
}

/* A Mooncake-like mix: bursts of arrivals at equal times, mostly short
 * prompts, some long ones (a few too long for a 32k short group),
 * outputs up to 600. */
static struct dbk_sim_req *synth(size_t n, uint32_t seed, double mean_gap_s)
{
	struct dbk_sim_req *r = calloc(n, sizeof(*r));
	double t = 0;
	size_t i;

	for (i = 0; r && i < n; i++) {
		uint32_t k = lcg(&seed) % 100;

		if (lcg(&seed) % 3 == 0)
			t += mean_gap_s * 3.0 * (double)(lcg(&seed) % 1000) / 1000.0;
		r[i].id = (uint32_t)i;
		r[i].arrival_s = t;
		if (k < 80)
			r[i].input_tokens = 50 + lcg(&seed) % 16000;
		else if (k < 90)
			r[i].input_tokens = 16000 + lcg(&seed) % 16000;
		else
			r[i].input_tokens = 32000 + lcg(&seed) % 90000;
		r[i].output_tokens = 1 + lcg(&seed) % 600;
	}
	return r;
}

static struct dbk_sim *run(const struct dbk_sim_config *c, const struct dbk_sim_req *r, size_t n,
                           const struct dbk_sim_policy_ops *ops)
{
	char err[256];
	struct dbk_sim *s = dbk_sim_new(c, r, n, ops, err, sizeof(err));

	CHECK(s != NULL);
	if (!s) {
		fprintf(stderr, "  %s\n", err);
		return NULL;
	}
	if (dbk_sim_run(s, err, sizeof(err)) != 0) {
		fprintf(stderr, "  %s: %s\n", ops->name, err);
		CHECK(0);
	}
	return s;
}

/* Runs and summarizes; false (checked) when either failed. */
static bool run_result(const struct dbk_sim_config *c, const struct dbk_sim_req *r, size_t n,
                       const struct dbk_sim_policy_ops *ops, struct dbk_sim_result *res)
{
	struct dbk_sim *s = run(c, r, n, ops);
	bool ok = s && dbk_sim_result(s, res) == 0;

	CHECK(ok);
	dbk_sim_free(s);
	return ok;
}

/* ---- The engine's figures through the simulator. ---- */

struct first_tok {
	double now, at;
	bool got;
};

static void on_first(void *ctx, const struct dbk_engine_event *ev)
{
	struct first_tok *f = ctx;

	if (ev->type == DBK_ENGINE_EV_TOKEN && !f->got) {
		f->got = true;
		f->at = f->now;
	}
}

/* The engine on its own, stepped back to back from time 0. */
static double engine_alone_ttft(uint32_t prompt)
{
	struct dbk_engine_config c;
	struct dbk_engine *e;
	struct first_tok f = { 0 };
	int steps = 0;

	dbk_engine_config_default(&c, dbk_engine_profile_find("h100"));
	e = dbk_engine_new(&c);
	dbk_engine_submit(e, prompt, 2, NULL, NULL);
	while (!f.got && steps++ < 1000) {
		double d = dbk_engine_begin_step(e);

		f.now += d;
		dbk_engine_end_step(e, on_first, &f);
	}
	dbk_engine_free(e);
	return f.at;
}

/* One instance, one request at a time: TTFT is the idle prefill of
 * ENGINE-MODEL.md (1k ~24 ms, 32k ~1.4 s) and the engine's own, TPOT the
 * batch-1 decode step (~7.5 ms). */
static void test_single_instance(void)
{
	static const uint32_t prompts[] = { 1024, 32768 };
	static const double want[] = { 0.024, 1.4 };
	struct dbk_engine_config e[1];
	struct dbk_sim_config c;
	size_t k;

	mk_fleet(&c, e, 1, "h100", 0, 0);
	for (k = 0; k < 2; k++) {
		struct dbk_sim_req r = {
			.id = 0, .arrival_s = 5.0, .input_tokens = prompts[k], .output_tokens = 101
		};
		struct dbk_sim *s = run(&c, &r, 1, &dbk_sim_policy_lc);
		const struct dbk_sim_outcome *o;
		struct dbk_sim_result res;
		double ttft, tpot;

		if (!s)
			return;
		o = dbk_sim_outcome(s, 0);
		CHECK_EQ_U(o->status, DBK_SIM_DONE);
		CHECK_EQ_U(o->tokens, 101);
		ttft = o->first_token_s - 5.0;
		tpot = (o->last_token_s - o->first_token_s) / 100.0;
		CHECK_NEAR(ttft, want[k], 0.20 * want[k]);
		CHECK_NEAR(ttft, engine_alone_ttft(prompts[k]), 1e-12);
		/* Batch 1: T_cpu + T_w + the context's KV read (ENGINE-MODEL.md
		 * quotes ~7.5 ms at a small context). */
		if (k == 0)
			CHECK_NEAR(tpot, 0.0075, 0.20 * 0.0075);
		CHECK_NEAR(tpot, 0.0015 + 0.006 + (prompts[k] + 51.0) * 131072.0 / 2.7e12,
		           0.01 * tpot);
		CHECK_EQ_U(dbk_sim_result(s, &res), 0);
		CHECK_NEAR(res.cls[DBK_CLASS_ALL].ttft.p50, ttft, 1e-12);
		CHECK_NEAR(res.cls[DBK_CLASS_ALL].tpot.p50, tpot, 1e-9);
		CHECK_NEAR(res.cls[DBK_CLASS_ALL].e2e.p99, o->last_token_s - 5.0, 1e-12);
		CHECK_NEAR(res.duration_s, o->last_token_s - 5.0, 1e-12);
		CHECK_EQ_U(res.cls[DBK_CLASS_ALL].itl.n, 100);
		CHECK_NEAR(res.cls[DBK_CLASS_ALL].itl.p50, tpot, 0.01 * tpot);
		CHECK_EQ_U(res.cls[k ? DBK_CLASS_LONG : DBK_CLASS_SHORT].completed, 1);
		dbk_sim_free(s);
	}
}

/* ---- Round robin and least connections on scripted traces. ---- */

static void test_rr(void)
{
	struct dbk_engine_config e[3];
	struct dbk_sim_config c;
	struct dbk_sim_req r[7];
	static const uint32_t want[7] = { 0, 1, 2, 0, 1, 2, 0 };
	struct dbk_sim *s;
	uint32_t i;

	mk_fleet(&c, e, 3, "h100", 0, 0);
	memset(r, 0, sizeof(r));
	for (i = 0; i < 7; i++) {
		r[i].id = i;
		r[i].arrival_s = i < 3 ? 0 : 0.5 * i; /* load does not matter */
		r[i].input_tokens = 100 + 1000 * i;
		r[i].output_tokens = 5;
	}
	s = run(&c, r, 7, &dbk_sim_policy_rr);
	if (!s)
		return;
	for (i = 0; i < 7; i++)
		CHECK_EQ_U(dbk_sim_outcome(s, i)->instance, want[i]);
	dbk_sim_free(s);
}

static void test_lc(void)
{
	struct dbk_engine_config e[2];
	struct dbk_sim_config c;
	struct dbk_sim_req r[5] = {
		/* A long-running one on instance 0, a one-token one on 1. */
		{ .id = 0, .arrival_s = 0, .input_tokens = 100, .output_tokens = 2000 },
		{ .id = 1, .arrival_s = 0, .input_tokens = 100, .output_tokens = 1 },
		/* At 5 s: 1 in flight on 0, none on 1: instance 1. */
		{ .id = 2, .arrival_s = 5, .input_tokens = 100, .output_tokens = 2000 },
		/* Then 1 and 1: a tie, the next after the last choice: 0. */
		{ .id = 3, .arrival_s = 5, .input_tokens = 100, .output_tokens = 2000 },
		/* 2 and 1: instance 1. */
		{ .id = 4, .arrival_s = 5, .input_tokens = 100, .output_tokens = 10 },
	};
	static const uint32_t want[5] = { 0, 1, 1, 0, 1 };
	struct dbk_sim *s;
	uint32_t i;

	mk_fleet(&c, e, 2, "h100", 0, 0);
	s = run(&c, r, 5, &dbk_sim_policy_lc);
	if (!s)
		return;
	for (i = 0; i < 5; i++)
		CHECK_EQ_U(dbk_sim_outcome(s, i)->instance, want[i]);
	dbk_sim_free(s);
}

/* ---- The balancer policies against dbk_bal_decide. ---- */

/* Wraps a balancer policy (the plug-in slot at work): before each choice
 * asks dbk_bal_decide, on the policy's own balancer and on a mirror fed
 * the same dispatches and releases, what it would do; after each release
 * compares every load. */
struct wrap_ctx {
	const struct dbk_sim_policy_ops *inner;
	bool dynamic;
	int checks, mismatches, load_mismatches, redirects;
};

struct wrap_st {
	struct wrap_ctx *ctx;
	void *inner;
	struct dbk_balancer *mirror;
	const struct dbk_sim_config *cfg;
};

static int wrap_init(void *st, const struct dbk_sim_policy_env *env)
{
	struct wrap_ctx *ctx = (struct wrap_ctx *)env->arg;
	struct wrap_st *w = st;
	struct dbk_bal_config bc;

	w->ctx = ctx;
	w->cfg = env->cfg;
	w->inner = dbk_sim_policy_new(ctx->inner, env->cfg, env->err, env->errlen);
	dbk_bal_config_default(&bc, env->cfg->ninstances, ctx->dynamic, env->cfg->threshold_tokens,
	                       env->cfg->max_request_tokens);
	w->mirror = dbk_bal_new(&bc);
	return w->inner && w->mirror ? 0 : -1;
}

static int wrap_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	struct wrap_st *w = st;
	const struct dbk_balancer *own = dbk_sim_bal_policy_balancer(w->inner);
	struct dbk_bal_request req;
	struct dbk_bal_decision d_own, d_mirror, d_disp;
	char id[16];
	size_t len = dbk_sim_lease_id(r->id, id);
	int got;

	dbk_sim_bal_request(w->cfg, r, &req);
	CHECK_EQ_U(dbk_bal_decide(own, &req, &d_own), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_decide(w->mirror, &req, &d_mirror), DBK_BAL_OK);
	got = w->ctx->inner->choose(w->inner, s, r);
	CHECK_EQ_U(dbk_bal_dispatch(w->mirror, id, len, &req, 0, &d_disp), DBK_BAL_OK);
	w->ctx->checks++;
	if (got != (int)d_own.server || got != (int)d_mirror.server || got != (int)d_disp.server)
		w->ctx->mismatches++;
	w->ctx->redirects += d_own.redirected;
	return got;
}

static void wrap_release(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r,
                         unsigned inst)
{
	struct wrap_st *w = st;
	const struct dbk_balancer *own;
	char id[16];
	size_t len = dbk_sim_lease_id(r->id, id);
	unsigned i;

	w->ctx->inner->release(w->inner, s, r, inst);
	CHECK_EQ_U(dbk_bal_release(w->mirror, id, len, NULL), DBK_BAL_OK);
	own = dbk_sim_bal_policy_balancer(w->inner);
	for (i = 0; i < w->cfg->ninstances; i++)
		if (dbk_bal_server_load(own, i) != dbk_bal_server_load(w->mirror, i))
			w->ctx->load_mismatches++;
	for (i = 0; i < dbk_bal_config(own)->nbuckets; i++)
		if (dbk_bal_bucket_load(own, i) != dbk_bal_bucket_load(w->mirror, i))
			w->ctx->load_mismatches++;
}

static void wrap_stats(const void *st, struct dbk_sim_policy_stats *out)
{
	const struct wrap_st *w = st;

	w->ctx->inner->stats(w->inner, out);
	CHECK_EQ_U(out->leases, dbk_bal_stats(w->mirror)->leases);
}

static void wrap_fini(void *st)
{
	struct wrap_st *w = st;

	if (w->inner)
		dbk_sim_policy_free(w->ctx->inner, w->inner);
	dbk_bal_free(w->mirror);
}

static void match_decide(const struct dbk_sim_policy_ops *inner, bool dynamic)
{
	struct wrap_ctx ctx = { .inner = inner, .dynamic = dynamic };
	struct dbk_sim_policy_ops ops = {
		.name = "wrapped",
		.arg = &ctx,
		.size = sizeof(struct wrap_st),
		.init = wrap_init,
		.choose = wrap_choose,
		.release = wrap_release,
		.stats = wrap_stats,
		.fini = wrap_fini,
	};
	struct dbk_engine_config e[6];
	struct dbk_sim_config c;
	struct dbk_sim_result res;
	size_t n = 600;
	struct dbk_sim_req *r = synth(n, 17, 0.05);

	mk_fleet(&c, e, 6, "h100", 0, 0);
	if (run_result(&c, r, n, &ops, &res)) {
		CHECK_EQ_U(res.policy_leases, 0);
		CHECK_EQ_U(res.cls[DBK_CLASS_ALL].completed, n);
	}
	CHECK_EQ_U(ctx.checks, n);
	CHECK_EQ_U(ctx.mismatches, 0);
	CHECK_EQ_U(ctx.load_mismatches, 0);
	/* The redirect path was taken (dynamic) or cannot be (plain). */
	if (dynamic)
		CHECK(ctx.redirects > 0);
	else
		CHECK_EQ_U(ctx.redirects, 0);
	free(r);
}

static void test_dynamic_matches_decide(void) { match_decide(&dbk_sim_policy_dynamic, true); }

static void test_plain_matches_decide(void) { match_decide(&dbk_sim_policy_plain, false); }

/* The request as the agent would see it. */
static void test_bal_request(void)
{
	struct dbk_sim_config c;
	struct dbk_sim_req r = { .id = 42, .input_tokens = 1000, .output_tokens = 77 };
	struct dbk_bal_request q;
	char id[16];

	dbk_sim_config_default(&c);
	dbk_sim_bal_request(&c, &r, &q);
	CHECK_NEAR(q.body_bytes, 4000 + DBK_SIM_JSON_OVERHEAD_BYTES, 0);
	CHECK_NEAR(q.max_tokens, 77, 0);
	CHECK(q.ignore_eos);
	CHECK_EQ_U(dbk_sim_lease_id(4294967294u, id), 10);
	CHECK(strcmp(id, "4294967294") == 0);
}

/* ---- Conservation and determinism, every policy. ---- */

static void check_conservation(const struct dbk_sim_policy_ops *ops, double overhead_s,
                               uint64_t *too_long, uint64_t *preempt)
{
	struct dbk_engine_config e[4];
	struct dbk_sim_config c;
	struct dbk_sim_result res;
	size_t n = 500, k, done = 0, failed = 0;
	/* Busy enough to preempt on the short group's small cache. */
	struct dbk_sim_req *r = synth(n, 3, 0.02);
	struct dbk_sim *s;
	int bad = 0;
	unsigned i;

	mk_fleet(&c, e, 4, "h100", 32768, 120000);
	c.overhead_s = overhead_s;
	s = run(&c, r, n, ops);
	if (!s) {
		free(r);
		return;
	}
	for (k = 0; k < n; k++) {
		const struct dbk_sim_outcome *o = dbk_sim_outcome(s, (uint32_t)k);

		if (o->ends != 1)
			bad++;
		if (o->status == DBK_SIM_DONE) {
			done++;
			if (o->tokens != r[k].output_tokens || o->fail)
				bad++;
			if (o->first_token_s < r[k].arrival_s + overhead_s)
				bad++;
		} else if (o->status == DBK_SIM_FAILED) {
			failed++;
			if (o->fail == DBK_SIM_FAIL_NONE || o->tokens != 0)
				bad++;
		} else {
			bad++;
		}
	}
	CHECK_EQ_U(bad, 0);
	CHECK_EQ_U(done + failed, n);
	for (i = 0; i < 4; i++) {
		CHECK_EQ_U(dbk_sim_inflight(s, i), 0);
		CHECK_EQ_U(dbk_sim_live_first(s, i), DBK_SIM_NONE);
		CHECK(!dbk_engine_has_work(dbk_sim_engine(s, i)));
	}
	CHECK_EQ_U(dbk_sim_result(s, &res), 0);
	CHECK_EQ_U(res.policy_leases, 0);
	CHECK_EQ_U(res.cls[DBK_CLASS_ALL].completed, done);
	CHECK_EQ_U(res.cls[DBK_CLASS_ALL].failed, failed);
	CHECK_EQ_U(res.cls[DBK_CLASS_SHORT].requests + res.cls[DBK_CLASS_LONG].requests, n);
	CHECK_EQ_U(res.too_long + res.refused, failed);
	*too_long += res.too_long;
	*preempt += res.preemptions;
	dbk_sim_free(s);
	free(r);
}

static void test_conservation(void)
{
	const struct dbk_sim_policy_ops *p;
	uint64_t too_long = 0, preempt = 0;
	size_t i;

	for (i = 0; (p = dbk_sim_policy_at(i)) != NULL; i++) {
		check_conservation(p, 0, &too_long, &preempt);
		check_conservation(p, 0.004, &too_long, &preempt);
	}
	/* Both failure and preemption paths were taken somewhere. */
	CHECK(too_long > 0);
	CHECK(preempt > 0);
}

/* The clairvoyant router never sends a request where it cannot fit; and
 * seeing final KV sizes, it preempts nothing while some instance has
 * room for each request's whole KV (under overload, as in the first run
 * here, nothing can avoid preemption). */
static void test_clairvoyant_fits(void)
{
	struct dbk_engine_config e[4];
	struct dbk_sim_config c;
	struct dbk_sim_result res;
	size_t n = 300;
	struct dbk_sim_req *r = synth(n, 5, 0.2);

	mk_fleet(&c, e, 4, "h100", 32768, 120000);
	if (run_result(&c, r, n, &dbk_sim_policy_clairvoyant, &res)) {
		CHECK_EQ_U(res.too_long, 0);
		CHECK_EQ_U(res.cls[DBK_CLASS_ALL].failed, 0);
	}
	if (run_result(&c, r, n, &dbk_sim_policy_rr, &res)) {
		CHECK(res.too_long > 0);
		CHECK(res.preemptions > 0);
	}
	free(r);
	/* Light load: room somewhere for everyone, so no preemption. */
	r = synth(n, 5, 2.0);
	CHECK(r != NULL);
	if (r && run_result(&c, r, n, &dbk_sim_policy_clairvoyant, &res))
		CHECK_EQ_U(res.preemptions, 0);
	free(r);
}

static char *run_json(const struct dbk_sim_policy_ops *ops, struct dbk_sim_outcome *out, size_t n,
                      const struct dbk_sim_req *r)
{
	struct dbk_engine_config e[5];
	struct dbk_sim_config c;
	struct dbk_sim_run_report rep = { 0 };
	struct dbk_sim *s;
	cJSON *j;
	char *text;
	size_t k;

	mk_fleet(&c, e, 5, "a100", 0, 0);
	c.slo.ttft_s = 1;
	s = run(&c, r, n, ops);
	if (!s)
		return NULL;
	rep.policy = ops->name;
	rep.wall_s = -1;
	CHECK_EQ_U(dbk_sim_result(s, &rep.res), 0);
	for (k = 0; k < n; k++)
		out[k] = *dbk_sim_outcome(s, (uint32_t)k);
	dbk_sim_free(s);
	j = dbk_sim_report_json(&rep, 1, -1);
	text = cJSON_PrintUnformatted(j);
	cJSON_Delete(j);
	return text;
}

static void test_determinism(void)
{
	const struct dbk_sim_policy_ops *p;
	size_t n = 300, i, k;
	struct dbk_sim_req *r = synth(n, 11, 0.03);
	struct dbk_sim_outcome *a = calloc(n, sizeof(*a));
	struct dbk_sim_outcome *b = calloc(n, sizeof(*b));

	for (i = 0; (p = dbk_sim_policy_at(i)) != NULL; i++) {
		char *ja = run_json(p, a, n, r), *jb = run_json(p, b, n, r);
		int diff = 0;

		CHECK(ja && jb && strcmp(ja, jb) == 0);
		for (k = 0; k < n; k++)
			if (a[k].status != b[k].status || a[k].instance != b[k].instance ||
			    a[k].tokens != b[k].tokens || a[k].preemptions != b[k].preemptions ||
			    a[k].first_token_s != b[k].first_token_s ||
			    a[k].last_token_s != b[k].last_token_s)
				diff++;
		CHECK_EQ_U(diff, 0);
		free(ja);
		free(jb);
	}
	free(a);
	free(b);
	free(r);
}

static void test_bad_input(void)
{
	struct dbk_engine_config e[2];
	struct dbk_sim_config c;
	struct dbk_sim_req r[2] = {
		{ .id = 0, .arrival_s = 1, .input_tokens = 1, .output_tokens = 1 },
		{ .id = 1, .arrival_s = 0, .input_tokens = 1, .output_tokens = 1 },
	};
	char err[256];

	mk_fleet(&c, e, 2, "h100", 0, 0);
	/* Arrivals out of order. */
	CHECK(dbk_sim_new(&c, r, 2, &dbk_sim_policy_rr, err, sizeof(err)) == NULL);
	/* Dynamic mode needs two instances. */
	c.ninstances = 1;
	CHECK(dbk_sim_new(&c, r, 1, &dbk_sim_policy_dynamic, err, sizeof(err)) == NULL);
	CHECK(strstr(err, "2 instances") != NULL);
	/* An engine vLLM would not start. */
	c.ninstances = 2;
	e[1].kv_capacity_tokens = 1000;
	CHECK(dbk_sim_new(&c, r, 1, &dbk_sim_policy_rr, err, sizeof(err)) == NULL);
	CHECK(strstr(err, "instance 1") != NULL);
	CHECK(dbk_sim_policy_find("dynamic") == &dbk_sim_policy_dynamic);
	CHECK(dbk_sim_policy_find("nope") == NULL);
	CHECK_EQ_U(dbk_sim_short_count(4), 2);
	CHECK_EQ_U(dbk_sim_short_count(5), 3);
	CHECK_EQ_U(dbk_sim_short_count(1), 1);
}

int main(void)
{
	RUN(test_single_instance);
	RUN(test_rr);
	RUN(test_lc);
	RUN(test_bal_request);
	RUN(test_dynamic_matches_decide);
	RUN(test_plain_matches_decide);
	RUN(test_conservation);
	RUN(test_clairvoyant_fits);
	RUN(test_determinism);
	RUN(test_bad_input);
	return CHECK_DONE();
}
