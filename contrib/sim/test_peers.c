/* Unit tests of the peers' policies in the simulator (policy_cache_aware.c,
 * policy_p2.c, policy_chash.c, policy_llmd.c) and of the scrape snapshot
 * their backend numbers come from (snapshot.c): conservation, affinity
 * where the peer promises it, and staleness bounded by the interval. */
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

static struct dbk_sim *run(unsigned n, const struct dbk_sim_req *r, size_t nr,
                           const struct dbk_sim_policy_ops *ops)
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
	s = dbk_sim_new(&c, r, nr, ops, err, sizeof(err));
	CHECK(s != NULL);
	if (s && dbk_sim_run(s, err, sizeof(err)) != 0) {
		fprintf(stderr, "  run: %s\n", err);
		CHECK(0);
	}
	return s;
}

/* Every request ends exactly once under every peer, busy or not. */
static void test_conservation(void)
{
	const char *names[] = { "cache_aware", "power_of_two", "consistent_hash", "llm_d",
		                "prefixaware" };
	struct dbk_sim_req *r = conversations(5, 0.05);
	unsigned p, k;

	for (p = 0; p < 5; p++) {
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
 * conversation where its first turn went. consistent_hash and cache_aware
 * (smallest tree for a first turn) spread conversations; prefixaware and
 * llm_d on an idle fleet do not: the shared block 0 narrows prefixaware's
 * match to the instance that got it first, and gives that instance
 * llm_d's best prefix score while queue and KV scores are equal. */
static void test_affinity(void)
{
	const char *names[] = { "consistent_hash", "cache_aware", "prefixaware", "llm_d" };
	struct dbk_sim_req *r = conversations(9, 100.0);
	unsigned p, k;

	for (p = 0; p < 4; p++) {
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

/* llm_d between two scrapes: a burst of distinct prompts sees the same
 * queue and KV scores for every instance, and the prefix scorer's
 * model-name block (held by any instance that was sent anything) breaks
 * the tie towards the first instance chosen: the burst lands there. (The
 * first scrape runs at the first arrival, after it is routed, so the
 * first request's instance already shows its KV use and the herd goes to
 * another one.) A burst 0.2 s later, after scrapes, is spread. */
static void test_llmd_herd(void)
{
	struct dbk_sim_req r[16];
	struct dbk_sim *s;
	unsigned k, used = 0, in;
	bool seen[4] = { false };

	memset(r, 0, sizeof(r));
	for (k = 0; k < 16; k++) {
		r[k].id = k;
		r[k].arrival_s = k < 8 ? 0 : 0.2;
		r[k].input_tokens = 20000; /* prefill outlasts 0.2 s */
		r[k].output_tokens = 10;
	}
	s = run(4, r, 16, dbk_sim_policy_find("llm_d"));
	if (!s)
		return;
	for (k = 2; k < 8; k++)
		CHECK_EQ_U(dbk_sim_outcome(s, k)->instance, dbk_sim_outcome(s, 1)->instance);
	for (k = 8; k < 16; k++) {
		in = dbk_sim_outcome(s, k)->instance;
		if (!seen[in])
			used++;
		seen[in] = true;
	}
	CHECK(used >= 2);
	dbk_sim_free(s);
}

/* A probe policy: scrapes every 0.5 s and, at each decision, checks that
 * what it reads is at most one interval old. */
struct probe {
	unsigned decisions, stale_ok, lagging, ticks;
};

static struct probe last_probe; /* the last run's, read by the test */

static int probe_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	struct probe *p = st;
	const struct dbk_sim_scrape *x = dbk_sim_scraped(s, 0);
	double age = dbk_sim_now(s) - x->at_s;

	(void)r;
	p->decisions++;
	if (x->at_s < 0 || (age >= 0 && age <= 0.5 + 1e-9))
		p->stale_ok++;
	if (x->at_s >= 0 && x->waiting != dbk_engine_num_waiting(dbk_sim_engine(s, 0)))
		p->lagging++;
	return 0;
}

static void probe_tick(void *st, const struct dbk_sim *s)
{
	struct probe *p = st;

	/* The simulator scraped just before. */
	if (dbk_sim_scraped(s, 0)->at_s == dbk_sim_now(s))
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

int main(void)
{
	RUN(test_conservation);
	RUN(test_affinity);
	RUN(test_cache_aware_thresholds);
	RUN(test_llmd_herd);
	RUN(test_staleness);
	return CHECK_DONE();
}
