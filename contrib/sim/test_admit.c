/* Unit tests of the simulator's priority classes and admission
 * (classes.c, admit.c, sim.c's per-class books, policy_llmd_shed.c,
 * holdq.c): the class draw, what each class is counted, who is never
 * shed, the client's one retry, the requests held instead of shed. */
#include "admit.h"
#include "classes.h"
#include "fleet.h"
#include "holdq.h"
#include "opts.h"
#include "policy.h"
#include "sim.h"

#include <stdlib.h>
#include <string.h>

#include "check.h"

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

static const double shares[DBK_CLASS_N] = { 30, 50, 20 };

/* Exact counts; sheddable the longest prompts; the same draw twice;
 * another seed another split of the rest, not of the sheddable. */
static void test_assign(void)
{
	enum { N = 1000 };
	uint32_t in[N], seed = 7, cut = 0;
	uint8_t a[N], b[N], c[N];
	size_t count[DBK_CLASS_N] = { 0 }, differ = 0;

	for (size_t k = 0; k < N; k++)
		in[k] = 1 + lcg(&seed) % 100000;
	CHECK(dbk_sim_classes_assign(in, N, shares, true, DBK_SIM_CLASS_SEED, a) == 0);
	CHECK(dbk_sim_classes_assign(in, N, shares, true, DBK_SIM_CLASS_SEED, b) == 0);
	CHECK(dbk_sim_classes_assign(in, N, shares, true, DBK_SIM_CLASS_SEED + 1, c) == 0);
	CHECK(memcmp(a, b, N) == 0);
	for (size_t k = 0; k < N; k++) {
		CHECK(a[k] < DBK_CLASS_N);
		count[a[k]]++;
		if (a[k] == DBK_CLASS_SHEDDABLE && (cut == 0 || in[k] < cut))
			cut = in[k];
		CHECK((a[k] == DBK_CLASS_SHEDDABLE) == (c[k] == DBK_CLASS_SHEDDABLE));
		differ += a[k] != c[k];
	}
	CHECK_EQ_U(count[DBK_CLASS_CRITICAL], 300);
	CHECK_EQ_U(count[DBK_CLASS_STANDARD], 500);
	CHECK_EQ_U(count[DBK_CLASS_SHEDDABLE], 200);
	for (size_t k = 0; k < N; k++) /* none longer than a sheddable one is kept */
		CHECK(a[k] == DBK_CLASS_SHEDDABLE || in[k] <= cut);
	CHECK(differ > 100);
	/* Equal lengths: the later request is sheddable first. */
	uint32_t eq[4] = { 5, 5, 5, 5 };
	const double one_shed[DBK_CLASS_N] = { 1, 2, 1 };
	CHECK(dbk_sim_classes_assign(eq, 4, one_shed, true, 1, a) == 0);
	CHECK_EQ_U(a[3], DBK_CLASS_SHEDDABLE);
	CHECK(a[0] != DBK_CLASS_SHEDDABLE && a[1] != DBK_CLASS_SHEDDABLE);
}

/* Drawn (the live bench's workload): exact counts, and sheddable no
 * longer than the others: about its share of the longest prompts. */
static void test_assign_drawn(void)
{
	enum { N = 1000 };
	uint32_t in[N];
	uint8_t a[N];
	size_t count[DBK_CLASS_N] = { 0 }, long_shed = 0;

	for (size_t k = 0; k < N; k++)
		in[k] = (uint32_t)k + 1; /* the longest 200: k >= 800 */
	CHECK(dbk_sim_classes_assign(in, N, shares, false, DBK_SIM_CLASS_SEED, a) == 0);
	for (size_t k = 0; k < N; k++) {
		CHECK(a[k] < DBK_CLASS_N);
		count[a[k]]++;
		long_shed += k >= 800 && a[k] == DBK_CLASS_SHEDDABLE;
	}
	CHECK_EQ_U(count[DBK_CLASS_CRITICAL], 300);
	CHECK_EQ_U(count[DBK_CLASS_STANDARD], 500);
	CHECK_EQ_U(count[DBK_CLASS_SHEDDABLE], 200);
	/* By length all 200 would be; drawn about 40 (a fifth of 200). */
	CHECK(long_shed > 15 && long_shed < 80);
}

/* Four H100 instances, the objectives TTFT 2 s and TPOT 100 ms, the
 * agent's admission configured (off). */
static void fleet(struct dbk_engine_config *e, struct dbk_sim_config *c)
{
	for (unsigned i = 0; i < 4; i++)
		dbk_engine_config_default(&e[i], dbk_engine_profile_find("h100"));
	dbk_sim_config_default(c);
	c->ninstances = 4;
	c->engines = e;
	c->slo.ttft_s = 2;
	c->slo.tpot_s = 0.1;
	dbk_admit_config_default(&c->admit);
}

/* On that fleet, n requests well past what it serves: long prompts in
 * a burst, classes 30:50:20. */
static struct dbk_sim_req *overload(size_t n, struct dbk_engine_config *e, struct dbk_sim_config *c)
{
	struct dbk_sim_req *r = calloc(n, sizeof(*r));
	uint32_t *in = calloc(n, sizeof(*in)), seed = 3;
	uint8_t *cls = calloc(n, 1);

	fleet(e, c);
	for (size_t k = 0; r && in && k < n; k++) {
		r[k].id = (uint32_t)k;
		r[k].arrival_s = 0.02 * (double)k;
		r[k].input_tokens = in[k] = 2000 + lcg(&seed) % 20000;
		r[k].output_tokens = 50 + lcg(&seed) % 300;
	}
	if (r && in && cls &&
	    dbk_sim_classes_assign(in, n, shares, true, DBK_SIM_CLASS_SEED, cls) == 0)
		for (size_t k = 0; k < n; k++)
			r[k].cls = cls[k];
	free(in);
	free(cls);
	return r;
}

static bool run(const struct dbk_sim_config *c, const struct dbk_sim_req *r, size_t n,
                const char *policy, struct dbk_sim_result *res, struct dbk_sim **keep)
{
	char err[256];
	const struct dbk_sim_policy_ops *ops = dbk_sim_policy_find(policy);
	struct dbk_sim *s = ops ? dbk_sim_new(c, r, n, ops, err, sizeof(err)) : NULL;
	bool ok = s && dbk_sim_run(s, err, sizeof(err)) == 0 && dbk_sim_result(s, res) == 0;

	CHECK(ok);
	if (keep && ok)
		*keep = s;
	else
		dbk_sim_free(s);
	return ok;
}

/* Each class's books add up to the run's: offered n, good the run's
 * good, every request admitted or shed (no instance refused here). */
static void check_books(const struct dbk_sim_result *res, size_t n)
{
	uint64_t offered = 0, good = 0;

	for (int k = 0; k < DBK_CLASS_N; k++) {
		const struct dbk_sim_prio *p = &res->prio[k];

		offered += p->offered;
		good += p->good;
		CHECK_EQ_U(p->admitted + p->shed, p->offered);
		CHECK(p->good <= p->admitted);
	}
	CHECK_EQ_U(offered, n);
	CHECK_EQ_U(good, res->cls[DBK_CLASS_ALL].good);
	CHECK_EQ_U(res->prio[DBK_CLASS_CRITICAL].shed, 0);
	CHECK_EQ_U(res->prio[DBK_CLASS_CRITICAL].offered, 3 * n / 10);
}

static void test_books(void)
{
	enum { N = 600 };
	struct dbk_engine_config e[4];
	struct dbk_sim_config c;
	struct dbk_sim_req *r = overload(N, e, &c);
	struct dbk_sim_result off, lc, ttft, gie;

	CHECK(r != NULL);
	if (!r)
		return;
	/* Without admission nothing is shed, whatever the class. */
	if (run(&c, r, N, "ttft", &off, NULL)) {
		check_books(&off, N);
		for (int k = 0; k < DBK_CLASS_N; k++)
			CHECK_EQ_U(off.prio[k].shed, 0);
	}
	/* GIE's rule, with or without --admission: sheddable only. */
	if (run(&c, r, N, "llm_d_shed", &gie, NULL)) {
		check_books(&gie, N);
		CHECK_EQ_U(gie.prio[DBK_CLASS_STANDARD].shed, 0);
		CHECK(gie.prio[DBK_CLASS_SHEDDABLE].shed > 0);
	}
	c.admit.enabled = true;
	/* Without a prediction: sheddable on saturation, standard too once
	 * the fleet's first tokens take the whole objective; more of the
	 * sheddable ones. */
	if (run(&c, r, N, "lc", &lc, NULL)) {
		check_books(&lc, N);
		CHECK(lc.prio[DBK_CLASS_SHEDDABLE].shed > 0);
		CHECK(lc.prio[DBK_CLASS_SHEDDABLE].shed * 5 >
		      lc.prio[DBK_CLASS_STANDARD].shed * 2); /* 20% against 50% */
	}
	/* The prediction: standard too once past the whole objective, and
	 * the classes it keeps do better than without. */
	if (run(&c, r, N, "ttft", &ttft, NULL)) {
		check_books(&ttft, N);
		CHECK(ttft.prio[DBK_CLASS_SHEDDABLE].shed > 0);
		CHECK(ttft.prio[DBK_CLASS_CRITICAL].good > off.prio[DBK_CLASS_CRITICAL].good);
		CHECK_EQ_U(ttft.policy_leases, 0);
	}
	free(r);
}

/* --shed-retry: a shed request comes back once, after its Retry-After.
 * One instance busy with a long critical prefill: a sheddable request
 * behind it is predicted late, shed, and served when it comes back, its
 * first token counted from its first send; under lasting overload (the
 * saturation rule, lc) one shed twice ends shed. */
static void test_retry(void)
{
	struct dbk_engine_config e[4];
	struct dbk_sim_config c;
	struct dbk_sim_req two[2] = {
		{ .id = 0,
		  .arrival_s = 0,
		  .input_tokens = 120000,
		  .output_tokens = 10,
		  .cls = DBK_CLASS_CRITICAL },
		{ .id = 1,
		  .arrival_s = 0.1,
		  .input_tokens = 500,
		  .output_tokens = 10,
		  .cls = DBK_CLASS_SHEDDABLE },
	};
	struct dbk_sim_result res;
	struct dbk_sim *s = NULL;

	fleet(e, &c);
	c.ninstances = 1;
	c.admit.enabled = true;
	c.shed_retry = true;
	if (run(&c, two, 2, "ttft", &res, &s)) {
		const struct dbk_sim_outcome *o = dbk_sim_outcome(s, 1);

		CHECK_EQ_U(res.prio[DBK_CLASS_SHEDDABLE].retried, 1);
		CHECK_EQ_U(res.prio[DBK_CLASS_SHEDDABLE].shed, 0);
		CHECK_EQ_U(res.prio[DBK_CLASS_SHEDDABLE].admitted, 1);
		CHECK(o->status == DBK_SIM_DONE);
		CHECK(o->first_token_s - two[1].arrival_s >= DBK_ADMIT_DEFAULT_RETRY_MIN_S);
	}
	dbk_sim_free(s);
	/* Without the retry it ends shed, never sent. */
	c.shed_retry = false;
	if (run(&c, two, 2, "ttft", &res, &s)) {
		CHECK_EQ_U(res.prio[DBK_CLASS_SHEDDABLE].shed, 1);
		CHECK_EQ_U(res.prio[DBK_CLASS_SHEDDABLE].admitted, 0);
		CHECK(dbk_sim_outcome(s, 1)->fail == DBK_SIM_FAIL_SHED);
		CHECK(dbk_sim_outcome(s, 1)->instance == DBK_SIM_NONE);
	}
	dbk_sim_free(s);

	enum { N = 600 };
	struct dbk_sim_req *r = overload(N, e, &c);

	CHECK(r != NULL);
	c.admit.enabled = true;
	c.shed_retry = true;
	if (r && run(&c, r, N, "lc", &res, NULL)) {
		const struct dbk_sim_prio *p = &res.prio[DBK_CLASS_SHEDDABLE];

		check_books(&res, N);
		CHECK(p->shed > 0 && p->retried >= p->shed);
	}
	/* --shed-retry-sdk, the same overload: some sent three times, none
	 * more, some admitted at a retry, and those shed at the third give
	 * up. */
	c.shed_retry = false;
	c.shed_retry_sdk = true;
	if (r && run(&c, r, N, "ttft", &res, NULL)) {
		const struct dbk_sim_prio *p = &res.prio[DBK_CLASS_SHEDDABLE];

		check_books(&res, N);
		CHECK(p->first_shed >= p->shed && p->shed > 0);
		CHECK(p->retried > p->first_shed && p->retried <= 2 * p->first_shed);
		CHECK(p->retry_admitted <= p->admitted && p->retry_admitted > 0);
		CHECK(p->good_last >= p->good);
	}
	free(r);
}

/* --shed-retry-sdk: a shed request's client retries as the openai SDKs
 * do, twice at most, each after its Retry-After. The request behind a
 * long critical prefill is shed once and served at its first retry,
 * within its objective from that send (test_retry: under lasting
 * overload). */
static void test_retry_sdk(void)
{
	/* The wait: the Retry-After when 1-60 s, else 0.5 s doubling to
	 * 8 s, less up to a quarter, the same for the same request. */
	CHECK(dbk_sim_sdk_wait(7, 3, 0) == 7 && dbk_sim_sdk_wait(60, 3, 1) == 60);
	for (uint32_t id = 0; id < 50; id++) {
		double w0 = dbk_sim_sdk_wait(0, id, 0), w1 = dbk_sim_sdk_wait(61, id, 1);
		double w6 = dbk_sim_sdk_wait(-1, id, 6);

		CHECK(w0 > 0.375 && w0 <= 0.5);
		CHECK(w1 > 0.75 && w1 <= 1);
		CHECK(w6 > 6 && w6 <= 8);
		CHECK(dbk_sim_sdk_wait(0, id, 0) == w0);
	}

	struct dbk_engine_config e[4];
	struct dbk_sim_config c;
	struct dbk_sim_req two[2] = {
		{ .id = 0, .arrival_s = 0, .input_tokens = 120000, .output_tokens = 10, .cls = 0 },
		{ .id = 1, .arrival_s = 0.1, .input_tokens = 500, .output_tokens = 10, .cls = 2 },
	};
	struct dbk_sim_result res;

	fleet(e, &c);
	c.ninstances = 1;
	c.admit.enabled = true;
	c.shed_retry_sdk = true;
	if (run(&c, two, 2, "ttft", &res, NULL)) {
		const struct dbk_sim_prio *p = &res.prio[DBK_CLASS_SHEDDABLE];

		CHECK(res.retry_sdk);
		CHECK_EQ_U(p->first_shed, 1);
		CHECK(p->retried >= 1 && p->retried <= 2);
		CHECK_EQ_U(p->retry_admitted, 1);
		CHECK_EQ_U(p->admitted, 1);
		CHECK_EQ_U(p->good_last, 1);
	}
}

/* The hold queue walks critical's first, each class oldest first; a
 * kept request stays where it was, a dropped one leaves; an error
 * stops the walk with the rest held. */
struct walk {
	uint32_t seen[8];
	size_t n;
	uint32_t drop, fail; /* ids */
};

static int walk_decide(void *ctx, uint32_t id)
{
	struct walk *w = ctx;

	if (w->n < 8)
		w->seen[w->n++] = id;
	if (id == w->fail)
		return DBK_SIM_HOLD_ERROR;
	return id == w->drop ? DBK_SIM_HOLD_DROP : DBK_SIM_HOLD_KEEP;
}

static void test_holdq(void)
{
	struct dbk_sim_holdq q = { 0 };
	struct walk w = { .drop = 2, .fail = 99 };

	CHECK(dbk_sim_holdq_first_until(&q) > 1e300);
	CHECK(dbk_sim_holdq_push(&q, DBK_CLASS_SHEDDABLE, 1, 5.0) == 0);
	CHECK(dbk_sim_holdq_push(&q, DBK_CLASS_STANDARD, 2, 5.5) == 0);
	CHECK(dbk_sim_holdq_push(&q, DBK_CLASS_SHEDDABLE, 3, 6.0) == 0);
	CHECK(dbk_sim_holdq_push(&q, 7, 4, 4.5) == 0); /* unknown: the last class */
	CHECK(dbk_sim_holdq_push(&q, DBK_CLASS_STANDARD, 5, 7.0) == 0);
	CHECK_EQ_U(dbk_sim_holdq_count(&q), 5);
	CHECK(dbk_sim_holdq_first_until(&q) == 5.0); /* each class's oldest */
	CHECK(dbk_sim_holdq_walk(&q, walk_decide, &w) == 0);
	CHECK_EQ_U(w.n, 5);
	const uint32_t order[] = { 2, 5, 1, 3, 4 };
	for (size_t k = 0; k < 5; k++)
		CHECK_EQ_U(w.seen[k], order[k]);
	CHECK_EQ_U(dbk_sim_holdq_count(&q), 4);
	CHECK(dbk_sim_holdq_first_until(&q) == 5.0);
	w = (struct walk){ .drop = 99, .fail = 3 };
	CHECK(dbk_sim_holdq_walk(&q, walk_decide, &w) == -1);
	CHECK_EQ_U(w.n, 3); /* 5, 1, then 3 failed */
	CHECK_EQ_U(dbk_sim_holdq_count(&q), 4);
	w = (struct walk){ .drop = 99, .fail = 99 };
	CHECK(dbk_sim_holdq_walk(&q, walk_decide, &w) == 0);
	const uint32_t again[] = { 5, 1, 3, 4 };
	for (size_t k = 0; k < 4; k++)
		CHECK_EQ_U(w.seen[k], again[k]);
	dbk_sim_holdq_free(&q);
	CHECK_EQ_U(dbk_sim_holdq_count(&q), 0);
}

/* test_queue's four requests under c: each held, then shed, never
 * sent. */
static void queue_all_shed(const struct dbk_sim_config *c, const struct dbk_sim_req *four)
{
	struct dbk_sim_result res;
	struct dbk_sim *s = NULL;

	if (run(c, four, 4, "ttft", &res, &s)) {
		CHECK_EQ_U(res.prio[DBK_CLASS_SHEDDABLE].held, 2);
		CHECK_EQ_U(res.prio[DBK_CLASS_STANDARD].held, 1);
		CHECK_EQ_U(res.prio[DBK_CLASS_SHEDDABLE].shed, 2);
		CHECK_EQ_U(res.prio[DBK_CLASS_STANDARD].shed, 1);
		for (uint32_t k = 1; k < 4; k++)
			CHECK(dbk_sim_outcome(s, k)->instance == DBK_SIM_NONE);
	}
	dbk_sim_free(s);
}

/* admit_queue_s: what admission would shed waits at the balancer and
 * is decided again as requests end (or on its timer). One instance busy with a long
 * critical prefill; a sheddable request, then a standard one, then
 * another sheddable, each predicted late behind it. Held for long
 * enough, none is shed: they go as the critical prefill ends,
 * standard first, then the sheddable ones oldest first, their wait
 * counted in their first token; let in only in time, none goes. Held
 * for less than the prefill, they are shed at their bound, as without
 * the queue. */
static void test_queue(void)
{
	struct dbk_engine_config e[4];
	struct dbk_sim_config c;
	struct dbk_sim_req four[4] = {
		{ .id = 0, .arrival_s = 0, .input_tokens = 120000, .output_tokens = 10 },
		{ .id = 1, .arrival_s = 0.1, .input_tokens = 12000, .output_tokens = 10 },
		{ .id = 2, .arrival_s = 0.2, .input_tokens = 12000, .output_tokens = 10 },
		{ .id = 3, .arrival_s = 0.3, .input_tokens = 12000, .output_tokens = 10 },
	};
	struct dbk_sim_result res;
	struct dbk_sim *s = NULL;

	four[0].cls = DBK_CLASS_CRITICAL;
	four[1].cls = four[3].cls = DBK_CLASS_SHEDDABLE;
	four[2].cls = DBK_CLASS_STANDARD;
	fleet(e, &c);
	c.ninstances = 1;
	c.admit.enabled = true;
	/* Without the queue: both classes shed. */
	if (run(&c, four, 4, "ttft", &res, NULL)) {
		CHECK_EQ_U(res.prio[DBK_CLASS_SHEDDABLE].shed, 2);
		CHECK_EQ_U(res.prio[DBK_CLASS_STANDARD].shed, 1);
		CHECK_EQ_U(res.prio[DBK_CLASS_SHEDDABLE].held, 0);
	}
	c.admit_queue_s = 600;
	if (run(&c, four, 4, "ttft", &res, &s)) {
		const struct dbk_sim_outcome *o[4];

		for (uint32_t k = 0; k < 4; k++)
			o[k] = dbk_sim_outcome(s, k);
		CHECK_EQ_U(res.prio[DBK_CLASS_SHEDDABLE].held, 2);
		CHECK_EQ_U(res.prio[DBK_CLASS_STANDARD].held, 1);
		CHECK_EQ_U(res.prio[DBK_CLASS_SHEDDABLE].shed + res.prio[DBK_CLASS_STANDARD].shed,
		           0);
		for (uint32_t k = 1; k < 4; k++) {
			CHECK(o[k]->status == DBK_SIM_DONE);
			/* Sent once the prefill ahead is nearly done. */
			CHECK(o[k]->first_token_s >= o[0]->first_token_s);
			CHECK(o[k]->first_token_s - four[k].arrival_s > 3);
		}
		CHECK(o[2]->first_token_s < o[1]->first_token_s); /* standard first */
		CHECK(o[1]->first_token_s < o[3]->first_token_s); /* then the oldest */
	}
	dbk_sim_free(s);
	/* Let in only in time: after seconds behind the prefill none is,
	 * and each is shed at its bound, never sent. */
	c.admit_queue_in_time = true;
	queue_all_shed(&c, four);
	c.admit_queue_in_time = false;
	c.admit_queue_s = 1;
	queue_all_shed(&c, four);
}

/* --admit-tpot reaches admission's TPOT objective (the agent's 100 ms
 * unless given), checked as the agent checks it. */
static void test_admit_tpot(void)
{
	char *dflt[] = { "dbucket-sim", "--trace", "t.jsonl", "--admission", NULL };
	char *given[] = { "dbucket-sim",  "--trace", "t.jsonl", "--admission",
		          "--admit-tpot", "250ms",   NULL };
	char *bad[] = { "dbucket-sim", "--trace", "t.jsonl", "--admit-tpot", "0", NULL };
	struct dbk_sim_opts o;
	struct dbk_sim_fleet f;
	int status = -1;

	CHECK_EQ_U(dbk_sim_opts_parse(4, dflt, &o, &status), 0);
	CHECK_EQ_U(o.admit_tpot_ms, DBK_ADMIT_DEFAULT_TPOT_MS);
	CHECK_EQ_U(dbk_sim_opts_parse(6, given, &o, &status), 0);
	CHECK_EQ_U(dbk_sim_fleet_build(&f, &o), 0);
	CHECK(f.sc.admit.enabled);
	CHECK_EQ_U(f.sc.admit.tpot_ms, 250);
	dbk_sim_fleet_free(&f);
	CHECK_EQ_U(dbk_sim_opts_parse(5, bad, &o, &status), 1);
	CHECK_EQ_U(status, 2);
}

int main(void)
{
	RUN(test_assign);
	RUN(test_assign_drawn);
	RUN(test_books);
	RUN(test_retry);
	RUN(test_retry_sdk);
	RUN(test_holdq);
	RUN(test_queue);
	RUN(test_admit_tpot);
	return CHECK_DONE();
}
