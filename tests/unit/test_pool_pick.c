/* Which pool an SPOP message is for (agent/pool_pick.h): the backend
 * argument first, then the request's model among the pools' servers'
 * lists, then the first pool; a move goes to the pool holding the lease. */
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "pool_pick.h"

static struct dbk_pool pools[3];

static struct dbk_vm_models one_model(const char *id)
{
	struct dbk_vm_models l = { 0 };

	snprintf(l.m[0].id, sizeof(l.m[0].id), "%s", id);
	l.n = 1;
	return l;
}

/* Three pools of two servers: a (model-a), b (model-b), c (not scraped). */
static void setup(void)
{
	const char *names[3] = { "a", "b", "c" };

	memset(pools, 0, sizeof(pools));
	for (unsigned i = 0; i < 3; i++) {
		struct dbk_bal_config bc;

		dbk_bal_config_default(&bc, 2, false, 32768, 131072);
		pools[i].cfg.backend = names[i];
		pools[i].cfg.nservers = 2;
		pools[i].bal = dbk_bal_new(&bc);
		if (i == 2)
			continue;
		pools[i].models = dbk_models_new(2);
		pools[i].route.eligible = calloc(1, sizeof(uint64_t));
		struct dbk_vm_models l = one_model(i ? "model-b" : "model-a");
		CHECK(dbk_models_set(pools[i].models, 0, &l) == 0);
		CHECK(dbk_models_set(pools[i].models, 1, &l) == 0);
	}
}

static void teardown(void)
{
	for (unsigned i = 0; i < 3; i++) {
		dbk_bal_free(pools[i].bal);
		dbk_models_free(pools[i].models);
		free(pools[i].route.eligible);
	}
}

/* A route message with a body naming model and, unless NULL, a backend. */
static int pick_route(const char *model, const char *backend)
{
	static char body[128];
	struct dbk_spop_message m = {
		(const uint8_t *)DBK_MSG_ROUTE, strlen(DBK_MSG_ROUTE), 0, { { 0 } }
	};

	snprintf(body, sizeof(body), "{\"model\":\"%s\",\"prompt\":\"hi\"}", model);
	m.args[m.nargs++] = (struct dbk_spop_arg){ (const uint8_t *)"body", 4, dbk_spop_str(body) };
	if (backend)
		m.args[m.nargs++] = (struct dbk_spop_arg){ (const uint8_t *)"backend", 7,
			                                   dbk_spop_str(backend) };
	return dbk_pool_pick(pools, 3, &m);
}

static void test_backend_argument_wins(void)
{
	setup();
	CHECK_EQ_U(pick_route("model-a", "b"), 1);
	CHECK_EQ_U(pick_route("model-b", "c"), 2);
	CHECK(pick_route("model-a", "nope") == -1);
	/* An empty backend (an unset variable) is none. */
	CHECK_EQ_U(pick_route("model-b", ""), 1);
	teardown();
}

static void test_model_chooses_without_backend(void)
{
	setup();
	CHECK_EQ_U(pick_route("model-a", NULL), 0);
	CHECK_EQ_U(pick_route("model-b", NULL), 1);
	/* Listed nowhere: the first pool that filters nothing (c, unscraped). */
	CHECK_EQ_U(pick_route("model-z", NULL), 2);
	teardown();
}

/* A pool whose servers all list the model (nothing to narrow) is chosen
 * over one whose lists are not read, wherever that one comes. */
static void test_listing_beats_unread(void)
{
	struct dbk_pool c;

	setup();
	c = pools[2];
	pools[2] = pools[0];
	pools[0] = c;
	CHECK_EQ_U(pick_route("model-a", NULL), 2);
	CHECK_EQ_U(pick_route("model-b", NULL), 1);
	CHECK_EQ_U(pick_route("model-z", NULL), 0);
	teardown();
}

static void test_unknown_model_goes_to_the_first_pool(void)
{
	setup();
	/* Without the unscraped pool, a model no list has is the first
	 * pool's to refuse (404). */
	CHECK_EQ_U(dbk_pool_pick(pools, 2,
	                         &(struct dbk_spop_message){ (const uint8_t *)DBK_MSG_ROUTE,
	                                                     strlen(DBK_MSG_ROUTE),
	                                                     0,
	                                                     { { 0 } } }),
	           0);
	CHECK(pick_route("model-b", NULL) == 1);
	teardown();
}

static void test_move_follows_the_lease(void)
{
	struct dbk_bal_request req = { .body_bytes = 100, .max_tokens = 16 };
	struct dbk_bal_decision d;
	struct dbk_spop_message m = {
		(const uint8_t *)DBK_MSG_MOVED, strlen(DBK_MSG_MOVED), 0, { { 0 } }
	};

	setup();
	CHECK(dbk_bal_dispatch(pools[1].bal, "id-1", 4, &req, 1, &d) == DBK_BAL_OK);
	m.args[m.nargs++] = (struct dbk_spop_arg){ (const uint8_t *)"id", 2, dbk_spop_str("id-1") };
	CHECK_EQ_U(dbk_pool_pick(pools, 3, &m), 1);
	m.args[0].value = dbk_spop_str("id-2");
	CHECK_EQ_U(dbk_pool_pick(pools, 3, &m), 0);
	teardown();
}

int main(void)
{
	RUN(test_backend_argument_wins);
	RUN(test_model_chooses_without_backend);
	RUN(test_listing_beats_unread);
	RUN(test_unknown_model_goes_to_the_first_pool);
	RUN(test_move_follows_the_lease);
	return CHECK_DONE();
}
