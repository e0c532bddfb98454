/* Unit tests of the peers' policies in the simulator (policy_cache_aware.c,
 * policy_p2.c, policy_chash.c, policy_llmd.c, policy_llmd_latency.c) and
 * of the scrape snapshot their backend numbers come from (snapshot.c):
 * conservation, affinity where the peer promises it, each variant's
 * difference from its peer, what the predicted-latency pipeline does
 * with a loaded pod, and staleness bounded by the interval. */
#include "policy.h"
#include "snapshot.h"
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

#define NCONV 40
#define NREQ 400

/* Conversations: each turn repeats its conversation's earlier blocks and
 * adds one; every prompt starts with the shared block 0. */
static uint64_t ids[NREQ][40];

static struct dbk_sim_req *conversations(uint32_t seed, double gap_s)
{
	struct dbk_sim_req *r = calloc(NREQ, sizeof(*r));
	uint32_t turns[NCONV] = { 0 }, i, k;

	for (i = 0; r && i < NREQ; i++) {
		uint32_t c = lcg(&seed) % NCONV, n = 6 + turns[c]++;

		if (n > 40)
			n = 40;
		ids[i][0] = 0;
		for (k = 1; k < n; k++)
			ids[i][k] = 1000u * (c + 1) + k;
		r[i].id = i;
		r[i].arrival_s = gap_s * i;
		r[i].input_tokens = 512 * (n - 1) + 100;
		r[i].output_tokens = 1 + lcg(&seed) % 200;
		r[i].hash_ids = ids[i];
		r[i].n_hash_ids = n;
		r[i].session = ids[i][1]; /* the trace's session: the first turn */
		r[i].has_session = true;
	}
	return r;
}

/* run, with scrapes answered flight_s after they are taken. */
static struct dbk_sim *run_flight(unsigned n, const struct dbk_sim_req *r, size_t nr,
                                  const struct dbk_sim_policy_ops *ops, double flight_s)
{
	struct dbk_engine_config e[8];
	struct dbk_sim_config c;
	struct dbk_sim *s;
	char err[256];
	unsigned i;

	for (i = 0; i < n; i++)
		dbk_engine_config_default(&e[i], dbk_engine_profile_find("h100"));
	dbk_sim_config_default(&c);
	c.ninstances = n;
	c.engines = e;
	c.scrape_flight_s = flight_s;
	s = dbk_sim_new(&c, r, nr, ops, err, sizeof(err));
	CHECK(s != NULL);
	if (s && dbk_sim_run(s, err, sizeof(err)) != 0) {
		fprintf(stderr, "  run: %s\n", err);
		CHECK(0);
	}
	return s;
}

static struct dbk_sim *run(unsigned n, const struct dbk_sim_req *r, size_t nr,
                           const struct dbk_sim_policy_ops *ops)
{
	return run_flight(n, r, nr, ops, 0);
}

/* Every request ends exactly once under every peer, busy or not. */
static void test_conservation(void)
{
	const char *names[] = { "cache_aware",     "cache_aware_legacy",
		                "power_of_two",    "power_of_two_informed",
		                "consistent_hash", "consistent_hash_seed1",
		                "llm_d",           "llm_d_active",
		                "llm_d_latency",   "prefixaware" };
	struct dbk_sim_req *r = conversations(5, 0.05);
	unsigned p, k;

	for (p = 0; p < sizeof(names) / sizeof(names[0]); p++) {
		const struct dbk_sim_policy_ops *ops = dbk_sim_policy_find(names[p]);
		struct dbk_sim *s;
		struct dbk_sim_result res;
		unsigned bad = 0;

		CHECK(ops != NULL);
		if (!ops)
			continue;
		s = run(4, r, NREQ, ops);
		if (!s)
			continue;
		for (k = 0; k < NREQ; k++)
			if (dbk_sim_outcome(s, k)->ends != 1 ||
			    dbk_sim_outcome(s, k)->status != DBK_SIM_DONE)
				bad++;
		CHECK_EQ_U(bad, 0);
		CHECK_EQ_U(dbk_sim_result(s, &res), 0);
		CHECK_EQ_U(res.cls[DBK_CLASS_ALL].completed, NREQ);
		CHECK_EQ_U(dbk_sim_unfinished(s), 0);
		dbk_sim_free(s);
	}
	free(r);
}

/* consistent_hash keeps a session on one instance; and with requests
 * far apart (idle fleet), the prefix policies send every later turn of a
 * conversation where its first turn went. consistent_hash and
 * cache_aware_legacy (smallest tree for a first turn) spread
 * conversations; the others on an idle fleet do not: cache_aware sends a
 * first turn to the least loaded, the first of four idle instances; the
 * shared block 0 narrows prefixaware's match to the instance that got it
 * first, and gives that instance llm_d's best prefix score while queue
 * and KV scores are equal. */
static void test_affinity(void)
{
	const char *names[] = { "consistent_hash", "cache_aware_legacy", "cache_aware",
		                "prefixaware", "llm_d" };
	struct dbk_sim_req *r = conversations(9, 100.0);
	unsigned p, k;

	for (p = 0; p < sizeof(names) / sizeof(names[0]); p++) {
		struct dbk_sim *s = run(4, r, NREQ, dbk_sim_policy_find(names[p]));
		uint32_t where[NCONV * 1000 + 1000];
		unsigned bad = 0, used = 0;
		bool seen[4] = { false };

		if (!s)
			continue;
		memset(where, 0xff, sizeof(where));
		for (k = 0; k < NREQ; k++) {
			uint64_t key = r[k].hash_ids[1];
			uint32_t in = dbk_sim_outcome(s, k)->instance;

			if (where[key] == UINT32_MAX)
				where[key] = in;
			else if (where[key] != in)
				bad++;
			if (!seen[in])
				used++;
			seen[in] = true;
		}
		CHECK_EQ_U(bad, 0);
		if (p < 2)
			CHECK(used > 1);
		else
			CHECK_EQ_U(used, 1);
		dbk_sim_free(s);
	}
	free(r);
}

/* cache_aware's balance thresholds: 100 requests of one prompt at once
 * stick to the instance that holds it while the router's in-flight counts
 * stay within 64 of each other (or within 1.5x); the 66th, with 65 in
 * flight there and none elsewhere, goes to the least loaded. */
static void test_cache_aware_thresholds(void)
{
	static const uint64_t same[8] = { 0, 1, 2, 3, 4, 5, 6, 7 };
	struct dbk_sim_req r[100];
	struct dbk_sim *s;
	unsigned k, first_other = 0;

	memset(r, 0, sizeof(r));
	for (k = 0; k < 100; k++) {
		r[k].id = k;
		r[k].input_tokens = 4000;
		r[k].output_tokens = 50;
		r[k].hash_ids = same;
		r[k].n_hash_ids = 8;
	}
	s = run(4, r, 100, dbk_sim_policy_find("cache_aware"));
	if (!s)
		return;
	for (k = 1; k < 100 && !first_other; k++)
		if (dbk_sim_outcome(s, k)->instance != dbk_sim_outcome(s, 0)->instance)
			first_other = k;
	CHECK_EQ_U(first_other, 65);
	dbk_sim_free(s);
}

/* llm_d within one scrape interval: a burst of prompts that share their
 * first half sees the same (stale) queue and KV scores everywhere, and
 * the prefix scorer sends every request after the first where the first
 * went: the burst lands on one instance. llm_d_active counts its own
 * requests in flight (score 0 on the instance holding the burst, 1
 * elsewhere, weight 2 against 3 x 0.5 for the prefix) and spreads it. */
static void test_llmd_herd(void)
{
	static uint64_t h[8][8];
	const char *names[] = { "llm_d", "llm_d_active" };
	struct dbk_sim_req r[8];
	unsigned k, j, p;

	memset(r, 0, sizeof(r));
	for (k = 0; k < 8; k++) {
		for (j = 0; j < 8; j++)
			h[k][j] = j < 4 ? j : 100 * (k + 1) + j;
		r[k].id = k;
		r[k].input_tokens = 8 * 512;
		r[k].output_tokens = 10;
		r[k].hash_ids = h[k];
		r[k].n_hash_ids = 8;
	}
	for (p = 0; p < 2; p++) {
		struct dbk_sim *s = run(4, r, 8, dbk_sim_policy_find(names[p]));
		unsigned used = 0;
		bool seen[4] = { false };

		if (!s)
			continue;
		for (k = 0; k < 8; k++) {
			unsigned in = dbk_sim_outcome(s, k)->instance;

			used += !seen[in];
			seen[in] = true;
		}
		if (p == 0)
			CHECK_EQ_U(used, 1);
		else
			CHECK_EQ_U(used, 4);
		dbk_sim_free(s);
	}
}

/* llm_d_latency (policy_llmd_latency.c) on two pods: pod 0 alone until
 * t_join, pod 1 empty after. Before t_load, one burst every 2 s of four
 * 8192-token prompts at once on pod 0 (the k-th waits for the prefills
 * before it: the predictor learns what prefill tokens in flight cost) and
 * one 1024-token prompt a second later; at t_load twelve 32768-token
 * prompts land on pod 0; from t_probe, sixteen 200-token prompts 0.25 s
 * apart. No hash ids: no prefix is shared, the affinity filters keep
 * every pod. How many probes pod 0 got. */
#define LAT_PROBES 16

static unsigned lat_probes_on_0(const char *policy, double t_load, double t_join, double t_probe,
                                double slo_ttft_s)
{
	struct dbk_engine_config e[2];
	const struct dbk_sim_step sc[] = { { 0, 1 }, { t_join, 2 } };
	struct dbk_sim_req r[200];
	struct dbk_sim_config c;
	struct dbk_sim *s;
	char err[256];
	size_t n = 0;
	unsigned on0 = 0;

	memset(r, 0, sizeof(r));
	for (double t = 0; t + 2 <= t_load; t += 2) {
		for (int k = 0; k < 4; k++)
			r[n++] = (struct dbk_sim_req){ .arrival_s = t,
				                       .input_tokens = 8192,
				                       .output_tokens = 20 };
		r[n++] = (struct dbk_sim_req){ .arrival_s = t + 1,
			                       .input_tokens = 1024,
			                       .output_tokens = 20 };
	}
	for (int k = 0; k < 12; k++)
		r[n++] = (struct dbk_sim_req){ .arrival_s = t_load,
			                       .input_tokens = 32768,
			                       .output_tokens = 200 };
	for (int k = 0; k < LAT_PROBES; k++)
		r[n++] = (struct dbk_sim_req){ .arrival_s = t_probe + 0.25 * k,
			                       .input_tokens = 200,
			                       .output_tokens = 5 };
	for (size_t k = 0; k < n; k++)
		r[k].id = (uint32_t)k;
	for (int i = 0; i < 2; i++)
		dbk_engine_config_default(&e[i], dbk_engine_profile_find("h100"));
	dbk_sim_config_default(&c);
	c.ninstances = 2;
	c.engines = e;
	c.scale = sc;
	c.nscale = 2;
	c.slo.ttft_s = slo_ttft_s;
	c.slo.tpot_s = 0.1;
	s = dbk_sim_new(&c, r, n, dbk_sim_policy_find(policy), err, sizeof(err));
	CHECK(s != NULL);
	if (!s)
		return 0;
	CHECK(dbk_sim_run(s, err, sizeof(err)) == 0);
	for (size_t k = n - LAT_PROBES; k < n; k++)
		on0 += dbk_sim_outcome(s, (uint32_t)k)->instance == 0;
	dbk_sim_free(s);
	return on0;
}

/* Trained (the model retrained at 40 s is served from 45 s on), with a
 * TTFT objective of 2 s: pod 0, twelve long prompts deep, is predicted
 * past it and the tier filter keeps pod 1 alone (but for its 1% draw of
 * the other tier, which the seed does not make here). */
static void test_llmd_latency_tier(void)
{
	CHECK(lat_probes_on_0("llm_d_latency", 44, 45.5, 46, 2.0) <= 1);
}

/* The same with an objective of 10 minutes: both pods are within it and
 * the scorer's "least" prefers less headroom. Pod 0, the loaded one, has
 * the least TTFT headroom (weight 0.8) but, the TPOT model extrapolating
 * far past its training rows, the most TPOT headroom (0.2): it scores
 * 0.81 against pod 1's 0.20 and gets about four probes in five. */
static void test_llmd_latency_least(void)
{
	CHECK(lat_probes_on_0("llm_d_latency", 44, 45.5, 46, 600.0) >= LAT_PROBES * 5 / 8);
}

/* llm_d_latency_most, the scorer's other strategy: the pod with the most
 * headroom first, the idle pod 1 (0.20 against 0.81 the other way). */
static void test_llmd_latency_most(void)
{
	CHECK(lat_probes_on_0("llm_d_latency_most", 44, 45.5, 46, 600.0) <= LAT_PROBES * 3 / 8);
}

/* Before any retrain the sidecars serve their default model, 10 ms
 * everywhere: every pod has the same headroom, scores 0.51, and the
 * draw is even, the loaded pod 0 included. */
static void test_llmd_latency_cold(void)
{
	unsigned on0 = lat_probes_on_0("llm_d_latency", 1, 5, 6, 2.0);

	CHECK(on0 >= 3 && on0 <= LAT_PROBES - 3);
}

/* The same cold start with a TTFT objective of 1 ms, which the default
 * model's 10 ms misses everywhere: with no pod within it the scorer
 * takes the pods with no request in flight, and every probe (done well
 * before the next) goes to pod 1. */
static void test_llmd_latency_idle(void)
{
	CHECK_EQ_U(lat_probes_on_0("llm_d_latency", 1, 5, 6, 0.001), 0);
}

/* power_of_two as it runs against vLLM ignores load: a burst of 200
 * requests at once is placed at random (each instance near its 50, the
 * counts spread apart); power_of_two_informed, which counts its own
 * requests in flight, keeps the counts within a few of each other. */
static void test_p2_random(void)
{
	struct dbk_sim_req r[200];
	unsigned k, p, lo[2], hi[2];

	memset(r, 0, sizeof(r));
	for (k = 0; k < 200; k++) {
		r[k].id = k;
		r[k].input_tokens = 200;
		r[k].output_tokens = 400;
	}
	for (p = 0; p < 2; p++) {
		const char *name = p ? "power_of_two_informed" : "power_of_two";
		struct dbk_sim *s = run(4, r, 200, dbk_sim_policy_find(name));
		unsigned got[4] = { 0 };

		lo[p] = 200;
		hi[p] = 0;
		if (!s)
			return;
		for (k = 0; k < 200; k++)
			got[dbk_sim_outcome(s, k)->instance]++;
		for (k = 0; k < 4; k++) {
			lo[p] = got[k] < lo[p] ? got[k] : lo[p];
			hi[p] = got[k] > hi[p] ? got[k] : hi[p];
		}
		dbk_sim_free(s);
	}
	CHECK(lo[0] >= 30 && hi[0] <= 70 && hi[0] - lo[0] > 4);
	CHECK(hi[1] - lo[1] <= 2);
}

/* consistent_hash's layouts: each keeps a session on one instance, and
 * they place the sessions differently. */
static void test_chash_layouts(void)
{
	const char *names[] = { "consistent_hash", "consistent_hash_seed1", "consistent_hash_seed2",
		                "consistent_hash_seed3" };
	struct dbk_sim_req *r = conversations(11, 1.0);
	uint32_t first[4][NREQ];
	unsigned p, q, k;

	for (p = 0; p < 4; p++) {
		struct dbk_sim *s = run(4, r, NREQ, dbk_sim_policy_find(names[p]));

		if (!s)
			return;
		for (k = 0; k < NREQ; k++)
			first[p][k] = dbk_sim_outcome(s, k)->instance;
		dbk_sim_free(s);
	}
	for (p = 0; p < 4; p++)
		for (q = p + 1; q < 4; q++) {
			unsigned differ = 0;

			for (k = 0; k < NREQ; k++)
				differ += first[p][k] != first[q][k];
			CHECK(differ > NREQ / 4);
		}
	free(r);
}

/* A probe policy: scrapes every 0.5 s and, at each decision, checks that
 * what it reads is at most one interval (and the scrape's flight) old. */
struct probe {
	unsigned decisions, stale_ok, lagging, ticks;
};

static double probe_flight_s; /* the run's scrape_flight_s */

static struct probe last_probe; /* the last run's, read by the test */

static int probe_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	struct probe *p = st;
	const struct dbk_sim_scrape *x = dbk_sim_scraped(s, 0);
	double age = dbk_sim_now(s) - x->at_s;

	(void)r;
	p->decisions++;
	if (x->at_s < 0 || (age >= 0 && age <= 0.5 + probe_flight_s + 1e-9))
		p->stale_ok++;
	if (x->at_s >= 0 && x->waiting != dbk_engine_num_waiting(dbk_sim_engine(s, 0)))
		p->lagging++;
	return 0;
}

static void probe_tick(void *st, const struct dbk_sim *s)
{
	struct probe *p = st;

	/* The simulator scraped just before, or the scrape's flight ago. */
	if (fabs(dbk_sim_scraped(s, 0)->at_s + probe_flight_s - dbk_sim_now(s)) < 1e-9)
		p->ticks++;
}

static void probe_fini(void *st) { last_probe = *(struct probe *)st; }

static const struct dbk_sim_policy_ops probe_ops = {
	.name = "probe",
	.size = sizeof(struct probe),
	.choose = probe_choose,
	.scrape = true,
	.tick = probe_tick,
	.tick_s = 0.5,
	.fini = probe_fini,
};

static void test_staleness(void)
{
	struct dbk_sim_req *r = conversations(3, 0.01);
	struct dbk_sim *s = run(1, r, NREQ, &probe_ops);
	const struct probe *p = &last_probe;

	CHECK(s != NULL);
	dbk_sim_free(s);
	CHECK_EQ_U(p->decisions, NREQ);
	CHECK_EQ_U(p->stale_ok, NREQ);
	/* Arrivals 10 ms apart, scrapes 500 ms apart: the queue the
	 * probe reads is often not the queue there is. */
	CHECK(p->lagging > NREQ / 4);
	CHECK(p->ticks >= 8); /* 4 s of arrivals / 0.5 s */
	free(r);
}

/* A scrape answered later holds the numbers of when it was taken, and
 * the tick runs at the answer; a flight as long as the interval is
 * refused. */
static void test_scrape_flight(void)
{
	struct dbk_sim_req *r = conversations(3, 0.01);
	struct dbk_engine_config e;
	struct dbk_sim_config c;
	char err[256];

	probe_flight_s = 0.2;
	struct dbk_sim *s = run_flight(1, r, NREQ, &probe_ops, probe_flight_s);
	const struct probe *p = &last_probe;

	CHECK(s != NULL);
	dbk_sim_free(s);
	CHECK_EQ_U(p->stale_ok, NREQ);
	CHECK(p->ticks >= 8);
	probe_flight_s = 0;
	dbk_engine_config_default(&e, dbk_engine_profile_find("h100"));
	dbk_sim_config_default(&c);
	c.ninstances = 1;
	c.engines = &e;
	c.scrape_flight_s = probe_ops.tick_s;
	CHECK(dbk_sim_new(&c, r, NREQ, &probe_ops, err, sizeof(err)) == NULL);
	CHECK(strstr(err, "flight") != NULL);
	free(r);
}

int main(void)
{
	RUN(test_conservation);
	RUN(test_affinity);
	RUN(test_cache_aware_thresholds);
	RUN(test_llmd_herd);
	RUN(test_llmd_latency_tier);
	RUN(test_llmd_latency_least);
	RUN(test_llmd_latency_most);
	RUN(test_llmd_latency_cold);
	RUN(test_llmd_latency_idle);
	RUN(test_p2_random);
	RUN(test_chash_layouts);
	RUN(test_staleness);
	RUN(test_scrape_flight);
	return CHECK_DONE();
}
