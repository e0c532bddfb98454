/* Unit tests of --lb-share-ms (policy_agent.c): K balancers told of each
 * other's requests after a delay. Delivered at once, they are one
 * balancer decision for decision; never delivered, they are K balancers
 * that share nothing. */
#include "policy.h"
#include "sim.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

enum { N = 600, TURNS = 6, BLOCKS = 8 };

static uint32_t lcg(uint32_t *s)
{
	*s = *s * 1664525u + 1013904223u;
	return *s >> 8;
}

/* Conversations of up to TURNS turns, each turn's prompt the previous
 * one's blocks and more, arriving about every 40 ms: enough for a scrape
 * period to hide several of another balancer's requests. */
static uint64_t ids[N][TURNS * BLOCKS];

static struct dbk_sim_req *conversations(void)
{
	struct dbk_sim_req *r = calloc(N, sizeof(*r));
	uint32_t seed = 7;
	double t = 0;

	for (size_t i = 0; r && i < N; i++) {
		size_t conv = i / TURNS, turn = i % TURNS;
		uint32_t n = (uint32_t)((turn + 1) * BLOCKS);

		for (uint32_t b = 0; b < n; b++)
			ids[i][b] = (uint64_t)conv * 1000 + b + 1;
		t += 0.04 * (double)(lcg(&seed) % 2000) / 1000.0;
		r[i].id = (uint32_t)i;
		r[i].arrival_s = t;
		r[i].input_tokens = n * 512 - lcg(&seed) % 256;
		r[i].output_tokens = 20 + lcg(&seed) % 300;
		r[i].hash_ids = ids[i];
		r[i].n_hash_ids = n;
		r[i].session = conv + 1;
		r[i].has_session = true;
	}
	return r;
}

static void fleet(struct dbk_sim_config *c, struct dbk_engine_config *e, unsigned n)
{
	for (unsigned i = 0; i < n; i++)
		dbk_engine_config_default(&e[i], dbk_engine_profile_find("h100"));
	dbk_sim_config_default(c);
	c->ninstances = n;
	c->engines = e;
	c->slo.ttft_s = 2;
	c->slo.tpot_s = 0.1;
}

/* Each request's instance and first token under c, or false. */
static bool run(const struct dbk_sim_config *c, const struct dbk_sim_req *r, uint32_t *inst,
                double *first)
{
	char err[256];
	struct dbk_sim *s = dbk_sim_new(c, r, N, dbk_sim_policy_find("ttft"), err, sizeof(err));
	bool ok = s && dbk_sim_run(s, err, sizeof(err)) == 0;

	CHECK(ok);
	if (!ok)
		fprintf(stderr, "  %s\n", err);
	for (size_t i = 0; ok && i < N; i++) {
		const struct dbk_sim_outcome *o = dbk_sim_outcome(s, (uint32_t)i);
		CHECK_EQ_U(o->ends, 1);
		inst[i] = o->instance;
		first[i] = o->first_token_s;
	}
	dbk_sim_free(s);
	return ok;
}

static size_t differ(const uint32_t *a, const double *fa, const uint32_t *b, const double *fb)
{
	size_t d = 0;

	for (size_t i = 0; i < N; i++)
		d += a[i] != b[i] || fa[i] != fb[i];
	return d;
}

/* Turns sent where their conversation's previous turn went. */
static size_t followed(const uint32_t *inst)
{
	size_t n = 0;

	for (size_t i = 1; i < N; i++)
		n += i % TURNS != 0 && inst[i] == inst[i - 1];
	return n;
}

static void test_share(void)
{
	struct dbk_engine_config e[4];
	struct dbk_sim_config c;
	struct dbk_sim_req *r = conversations();
	static uint32_t one[N], apart[N], x[N];
	static double f1[N], fa[N], fx[N];

	CHECK(r != NULL);
	if (!r)
		return;
	fleet(&c, e, 4);
	if (!run(&c, r, one, f1))
		goto out;
	c.lb_nodes = 2;
	if (!run(&c, r, apart, fa))
		goto out;
	/* Not vacuous: two balancers that share nothing decide otherwise. */
	CHECK(differ(one, f1, apart, fa) > N / 10);

	/* Told at once: one balancer, to the instance and the first token. */
	c.lb_share = true;
	c.lb_share_s = 0;
	if (run(&c, r, x, fx))
		CHECK_EQ_U(differ(one, f1, x, fx), 0);
	c.lb_nodes = 4;
	if (run(&c, r, x, fx))
		CHECK_EQ_U(differ(one, f1, x, fx), 0);

	/* Told after the run: two balancers that share nothing. */
	c.lb_nodes = 2;
	c.lb_share_s = 1e6;
	if (run(&c, r, x, fx))
		CHECK_EQ_U(differ(apart, fa, x, fx), 0);

	/* The load without the prefixes: neither of the two. */
	c.lb_share_s = 0;
	c.lb_share_books = true;
	if (run(&c, r, x, fx)) {
		CHECK(differ(one, f1, x, fx) > 0);
		CHECK(differ(apart, fa, x, fx) > 0);
	}

	/* The session table alone (--lb-share-sessions without
	 * --lb-share-books: HAProxy nodes that replicate where each session
	 * last went, and no books), four balancers. Never told, they share
	 * nothing; told at once, each follows a conversation's turns nearly
	 * as one balancer does, yet knows only its own load, so they are not
	 * one balancer (as books told at once are). */
	c.lb_nodes = 4;
	c.lb_share_books = false;
	c.lb_share_sessions = true;
	c.lb_share_s = 1e6;
	if (!run(&c, r, apart, fa))
		goto out;
	c.lb_share_s = 0;
	if (run(&c, r, x, fx)) {
		CHECK(differ(one, f1, x, fx) > 0);
		CHECK(followed(x) > followed(apart) + N / 20);
		CHECK(followed(x) * 10 >= followed(one) * 9);
	}
out:
	free(r);
}

/* The session table (--lb-share-sessions): the load shared, and each
 * balancer told where the session's last turn went before it routes the
 * next; a table never delivered is the load alone.
 *
 * With the books as agent/books_share.h's rows carry them (the load
 * only, each request at the KV its sender priced, net of its cached
 * prefix), K balancers keep a conversation's turns where its previous
 * one went about as often as one balancer does. Charged its whole
 * prompt instead, as if nothing of it were cached, another node's turn
 * made its conversation's server look many times as loaded as it is,
 * and turns left their cache: 272 (K = 4) and 34 (K = 2) of one
 * balancer's 431 here. */
static void test_sessions(void)
{
	struct dbk_engine_config e[4];
	struct dbk_sim_config c;
	struct dbk_sim_req *r = conversations();
	static uint32_t one[N], books[N], late[N], x[N];
	static double f1[N], fb[N], fl[N], fx[N];

	CHECK(r != NULL);
	if (!r)
		return;
	fleet(&c, e, 4);
	if (!run(&c, r, one, f1))
		goto out;
	c.lb_nodes = 4;
	c.lb_share = true;
	c.lb_share_books = true;
	c.lb_share_s = 0.010;
	if (!run(&c, r, books, fb))
		goto out;
	c.lb_share_sessions = true;
	if (!run(&c, r, x, fx))
		goto out;
	/* Each balancer sees a quarter of a conversation's turns: told the
	 * others', it keeps more of them where the previous one went. */
	CHECK(followed(x) > followed(books) + N / 20);
	CHECK(followed(x) * 10 >= followed(one) * 9);
	c.lb_nodes = 2;
	if (run(&c, r, x, fx))
		CHECK(followed(x) * 10 >= followed(one) * 9);

	c.lb_nodes = 4;

	c.lb_share_s = 1e6;
	if (!run(&c, r, x, fx))
		goto out;
	c.lb_share_sessions = false;
	if (run(&c, r, late, fl))
		CHECK_EQ_U(differ(late, fl, x, fx), 0);
out:
	free(r);
}

int main(void)
{
	RUN(test_share);
	RUN(test_sessions);
	return CHECK_DONE();
}
