/* Unit tests of the simulator's prefix-cache glue (sim.c): a request's
 * keys are the ones the stub computes from the bench's prompt for the
 * same hash ids (completions and chat alike), hits on one instance with
 * room for everything equal the trace's sharing, and a policy sees what
 * each instance holds. */
#include "model/prompt.h"
#include "sim/policy.h"
#include "sim/sim.h"
#include "stub/api.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

#define N 6

/* Ids: requests 0..5 are three conversations of two turns; every prompt
 * opens with the shared block 100; a turn repeats its conversation's
 * previous ids and adds new ones. Prompts are whole 512-token blocks plus
 * a tail of 100 tokens under an id of its own. */
static const uint64_t ids[N][6] = {
	{ 100, 1, 2, 901 }, { 100, 5, 902 }, { 100, 1, 2, 3, 4, 903 },
	{ 100, 5, 6, 904 }, { 100, 7, 905 }, { 100, 7, 8, 9, 906 },
};
static const uint32_t nids[N] = { 4, 3, 6, 4, 3, 5 };

struct seen {
	uint64_t *keys[N];
	uint32_t n_keys[N];
	uint32_t cached[N][2];
	int pick_most_cached;
};

/* The state is a pointer to the test's record. */
static int t_init(void *st, const struct dbk_sim_policy_env *env)
{
	*(const void **)st = env->arg;
	return 0;
}

static int t_choose(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r)
{
	struct seen *w = *(struct seen **)st;
	const uint64_t *k;
	uint32_t n, i;

	k = dbk_sim_req_keys(s, r->id, &n);
	w->n_keys[r->id] = n;
	w->keys[r->id] = n ? malloc(n * sizeof(*k)) : NULL;
	if (n && w->keys[r->id])
		memcpy(w->keys[r->id], k, n * sizeof(*k));
	for (i = 0; i < dbk_sim_ninstances(s) && i < 2; i++)
		w->cached[r->id][i] = dbk_sim_cached_tokens(s, i, r->id);
	/* Following the cache: the first two split, then the most cached. */
	if (!w->pick_most_cached)
		return 0;
	if (r->id < 2)
		return (int)r->id;
	return w->cached[r->id][1] > w->cached[r->id][0] ? 1 : 0;
}

static void run(struct seen *w, unsigned ninst, struct dbk_sim_result *res)
{
	struct dbk_sim_policy_ops ops = {
		.name = "t",
		.arg = w,
		.size = sizeof(w),
		.init = t_init,
		.choose = t_choose,
	};
	struct dbk_engine_config ec[2];
	struct dbk_sim_req rq[N];
	struct dbk_sim_config c;
	struct dbk_sim *s;
	char err[200];
	unsigned i;

	for (i = 0; i < ninst; i++)
		dbk_engine_config_default(&ec[i], NULL);
	dbk_sim_config_default(&c);
	c.ninstances = ninst;
	c.engines = ec;
	memset(rq, 0, sizeof(rq));
	for (i = 0; i < N; i++) {
		rq[i].id = i;
		/* One at a time: each ends long before the next. */
		rq[i].arrival_s = 100.0 * i;
		rq[i].input_tokens = (nids[i] - 1) * 512 + 100;
		rq[i].output_tokens = 3;
		rq[i].hash_ids = ids[i];
		rq[i].n_hash_ids = nids[i];
	}
	s = dbk_sim_new(&c, rq, N, &ops, err, sizeof(err));
	CHECK(s != NULL);
	if (!s)
		return;
	CHECK_EQ_U(dbk_sim_run(s, err, sizeof(err)), 0);
	dbk_sim_result(s, res);
	dbk_sim_free(s);
}

static void free_seen(struct seen *w)
{
	size_t i;

	for (i = 0; i < N; i++)
		free(w->keys[i]);
}

/* The keys the stub computes from what dbucket-bench sends. */
static void stub_keys(size_t i, enum dbk_endpoint ep, struct dbk_api_request *ar)
{
	static const struct dbk_api_config cfg = { .model = "m",
		                                   .max_model_len = 131072,
		                                   .keys = true };
	struct dbk_buf body = { 0 };
	struct dbk_req_spec spec;
	struct dbk_api_error e;

	memset(&spec, 0, sizeof(spec));
	spec.ep = ep;
	spec.model_json = "\"m\"";
	spec.input = (nids[i] - 1) * 512 + 100;
	spec.output = 3;
	spec.hash = ids[i];
	spec.n_hash = nids[i];
	spec.index = 1000 + i; /* the bench's own numbering: only the tail */
	dbk_prompt_body(&body, &spec);
	CHECK_EQ_U(dbk_api_parse_request(ep == DBK_EP_CHAT ? DBK_API_CHAT : DBK_API_COMPLETION,
	                                 body.p, body.len, &cfg, ar, &e),
	           0);
	dbk_buf_free(&body);
}

static void test_keys_are_the_stubs(void)
{
	struct seen w;
	struct dbk_sim_result res;
	struct dbk_api_request a, c;
	size_t i;
	uint32_t shared;

	memset(&w, 0, sizeof(w));
	run(&w, 1, &res);
	for (i = 0; i < N; i++) {
		stub_keys(i, DBK_EP_COMPLETIONS, &a);
		stub_keys(i, DBK_EP_CHAT, &c);
		CHECK_EQ_U(w.n_keys[i], ((nids[i] - 1) * 512 + 100) / 16);
		CHECK_EQ_U(a.n_keys[0], w.n_keys[i]);
		CHECK_EQ_U(c.n_keys[0], w.n_keys[i]);
		/* Every block of the hash-id part is the stub's; the tail
		 * (the request's own id) too, whatever its numbering. */
		shared = (nids[i] - 1) * 512 / 16;
		CHECK(w.keys[i] && a.keys && c.keys &&
		      memcmp(w.keys[i], a.keys, shared * sizeof(uint64_t)) == 0 &&
		      memcmp(a.keys, c.keys, w.n_keys[i] * sizeof(uint64_t)) == 0);
		dbk_api_request_free(&a);
		dbk_api_request_free(&c);
	}
	free_seen(&w);
}

/* One instance with room for everything: a request hits exactly the
 * 512-token blocks of its ids that an earlier request sent. */
static void test_hits_are_the_traces_sharing(void)
{
	struct seen w;
	struct dbk_sim_result res;
	uint64_t queries = 0, hits = 0;
	size_t i, j, k;

	memset(&w, 0, sizeof(w));
	run(&w, 1, &res);
	for (i = 0; i < N; i++) {
		uint32_t in = (nids[i] - 1) * 512 + 100, lead = 0;

		/* Leading ids (tail excluded) sent before, in full. */
		for (k = 0; k + 1 < nids[i]; k++) {
			bool before = false;

			for (j = 0; j < i; j++) {
				size_t q;

				for (q = 0; q + 1 < nids[j]; q++)
					if (ids[j][q] == ids[i][k] && q == k)
						before = true;
			}
			if (!before)
				break;
			lead++;
		}
		CHECK_EQ_U(w.cached[i][0], lead * 512);
		queries += in;
		hits += lead * 512;
	}
	CHECK_EQ_U(res.prefix_cache_queries, queries);
	CHECK_EQ_U(res.prefix_cache_hits, hits);
	CHECK(hits > 0);
	free_seen(&w);
}

/* Two instances: a policy that follows the cache keeps conversations
 * together; dbk_sim_cached_tokens tells the instances apart. */
static void test_policy_sees_each_instance(void)
{
	struct seen w;
	struct dbk_sim_result res;

	memset(&w, 0, sizeof(w));
	w.pick_most_cached = 1;
	run(&w, 2, &res);
	/* Request 1, sent to instance 1, found the shared first block on
	 * instance 0 only. */
	CHECK_EQ_U(w.cached[1][0], 512);
	CHECK_EQ_U(w.cached[1][1], 0);
	/* Request 2 continues request 0 (instance 0): its 3 blocks there,
	 * the shared one on instance 1; request 3 continues request 1. */
	CHECK_EQ_U(w.cached[2][0], 1536);
	CHECK_EQ_U(w.cached[2][1], 512);
	CHECK_EQ_U(w.cached[3][0], 512);
	CHECK_EQ_U(w.cached[3][1], 1024);
	/* So every turn found all its conversation had sent (requests 0
	 * and 1 found nothing where they went; 4 found the shared block). */
	CHECK_EQ_U(res.prefix_cache_hits, 1536 + 1024 + 512 + 1024);
	free_seen(&w);
}

int main(void)
{
	RUN(test_keys_are_the_stubs);
	RUN(test_hits_are_the_traces_sharing);
	RUN(test_policy_sees_each_instance);
	return CHECK_DONE();
}
