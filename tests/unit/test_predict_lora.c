/* The ttft predictor's price of a LoRA adapter (agent/predict.h): nothing
 * where the adapter has requests, the load where a slot is free, a wait
 * beyond it where every slot is taken; the books of adapters sent since
 * the last scrape; nothing changes for a request without an adapter; and
 * vllm:lora_requests_info as the agent feeds it (policy_feed.h). */
#include <math.h>
#include <string.h>

#include "check.h"
#include "config.h"
#include "model/engine.h"
#include "policy_feed.h"
#include "policy_ttft.h"
#include "predict.h"

#define KEY_A 0xaaaa
#define KEY_B 0xbbbb

static struct dbk_pred *fleet(unsigned n)
{
	struct dbk_pred_config c;

	dbk_pred_config_default(&c, n);
	return dbk_pred_new(&c);
}

static struct dbk_pred_request req(uint64_t adapter)
{
	return (struct dbk_pred_request){
		.prompt_tokens = 1000, .max_tokens = 100, .ignore_eos = true, .adapter = adapter
	};
}

/* An idle server's scrape with max_lora slots and these adapters
 * running (their requests not counted: the servers' load alike). */
static void scrape(struct dbk_pred *p, unsigned server, double max_lora, const uint64_t *keys,
                   unsigned n, uint64_t now)
{
	struct dbk_pred_scrape s = { .ok = true,
		                     .running = 0,
		                     .waiting = 0,
		                     .kv_usage = 0,
		                     .kv_capacity_tokens = -1,
		                     .prefix_queries = -1,
		                     .prefix_hits = -1,
		                     .ttft_sum_s = -1,
		                     .ttft_count = -1,
		                     .max_lora = max_lora,
		                     .nlora = n,
		                     .nlora_running = n };

	if (n) /* memcpy from NULL is undefined even for no bytes */
		memcpy(s.lora, keys, n * sizeof(*keys));
	dbk_pred_scraped(p, server, &s, now);
}

static double ttft_on(struct dbk_pred *p, const struct dbk_pred_request *r, unsigned server,
                      uint64_t now)
{
	struct dbk_pred_choice c;

	CHECK(dbk_pred_evaluate(p, r, server, now, &c) == (int)server);
	return c.ttft_s;
}

static void test_loaded_free_and_full(void)
{
	struct dbk_pred *p = fleet(3);
	const uint64_t a[] = { KEY_A }, b[] = { KEY_B };
	struct dbk_pred_request ra = req(KEY_A), base = req(0);
	uint64_t now = 10000;

	scrape(p, 0, 2, a, 1, now); /* A there, a slot free */
	scrape(p, 1, 2, NULL, 0, now);
	scrape(p, 2, 1, b, 1, now); /* the one slot B's */
	double there = ttft_on(p, &ra, 0, now), load = ttft_on(p, &ra, 1, now);
	double full = ttft_on(p, &ra, 2, now);
	/* A base-model request: as the adapter's where it is. */
	CHECK_NEAR(ttft_on(p, &base, 1, now), there, 1e-9);
	CHECK_NEAR(load - there, dbk_pred_config(p)->lora_load_s, 1e-9);
	CHECK(full > load + 0.1);
	struct dbk_pred_choice c;
	CHECK(dbk_pred_choose(p, &ra, now, &c) == 0);
	/* A's requests stay where A is while its queue costs less than a
	 * load elsewhere, then spread. */
	unsigned on0 = 0, on1 = 0;
	for (unsigned k = 0; k < 40; k++) {
		struct dbk_pred_ticket t;
		int s = dbk_pred_choose(p, &ra, now, &c);
		CHECK(s >= 0);
		dbk_pred_commit(p, &ra, (unsigned)s, now, &t);
		on0 += s == 0;
		on1 += s == 1;
	}
	CHECK(on0 >= 2);
	CHECK(on1 >= 1);
	dbk_pred_free(p);
}

/* Between scrapes the books know where an adapter was just sent: the
 * second request of a burst pays no load where the first went. */
static void test_books_between_scrapes(void)
{
	struct dbk_pred *p = fleet(2);
	struct dbk_pred_request ra = req(KEY_A);
	struct dbk_pred_ticket t;
	struct dbk_pred_view v;
	uint64_t now = 10000;

	scrape(p, 0, 1, NULL, 0, now);
	scrape(p, 1, 1, NULL, 0, now);
	double before = ttft_on(p, &ra, 1, now + 10);
	dbk_pred_commit(p, &ra, 0, now + 10, &t);
	dbk_pred_view(p, 0, now + 10, &v);
	CHECK_EQ_U(v.adapters, 1);
	CHECK_NEAR(v.max_lora, 1, 0);
	/* On 0 the queue of the first request and no load; B there now
	 * waits for the one slot. */
	struct dbk_pred_request rb = req(KEY_B);
	double b0 = ttft_on(p, &rb, 0, now + 10), b1 = ttft_on(p, &rb, 1, now + 10);
	CHECK(b0 > b1 + 0.1);
	CHECK_NEAR(b1, before, 1e-9);
	/* A scrape well after it that no longer shows A: the send is
	 * history (its requests ended). */
	scrape(p, 0, 1, NULL, 0, now + 500);
	dbk_pred_view(p, 0, now + 500, &v);
	CHECK_EQ_U(v.adapters, 0);
	dbk_pred_release(p, &t, now + 500);
	/* A server whose scrape does not report LoRA: nothing priced. */
	scrape(p, 1, 0, NULL, 0, now + 500);
	CHECK_NEAR(ttft_on(p, &ra, 1, now + 500), ttft_on(p, &rb, 1, now + 500), 1e-12);
	dbk_pred_free(p);
}

/* The adapters vLLM's labels name, as the predictor reads them. */
static void test_feed(void)
{
	struct dbk_vm_lora l = { .max_lora = 2, .running = "a,b", .waiting = "b,c" };
	struct dbk_pred_scrape s = { .ok = true };

	dbk_policy_feed_lora(&l, &s);
	CHECK_NEAR(s.max_lora, 2, 0);
	CHECK_EQ_U(s.nlora, 3);
	CHECK_EQ_U(s.nlora_running, 2);
	CHECK(s.lora[0] == dbk_vm_adapter_key("a", 1));
	CHECK(s.lora[2] == dbk_vm_adapter_key("c", 1));
}

/* The ttft policy as a pool starts it from these options (pool.c). */
static struct dbk_policy_ttft *ttft_of(int argc, char **argv)
{
	static struct dbk_config c;
	char err[256];

	CHECK_EQ_U(dbk_config_parse(&c, argc, argv, err, sizeof(err)), DBK_CONFIG_OK);
	struct dbk_policy_env env = { .nservers = 2,
		                      .engine_speed = c.engine_speed,
		                      .stall_weight = -1,
		                      .lora_load_s = dbk_config_lora_load_env_s(&c) };
	return dbk_policy_ttft_create(&env);
}

/* --lora-load is the servers' own load, whatever --engine-speed says; the
 * price where a slot is free follows it. Without it, the engine model's
 * load sped up as every step. */
static void test_lora_load_flag(void)
{
	char *with[] = { "dbucket-spoa",
		         "--policy",
		         "ttft",
		         "--engine-speed",
		         "4",
		         "--lora-load",
		         "300ms",
		         "a",
		         "b",
		         NULL };
	char *without[] = {
		"dbucket-spoa", "--policy", "ttft", "--engine-speed", "4", "a", "b", NULL
	};
	struct dbk_policy_ttft *t = ttft_of(9, with), *d = ttft_of(7, without);
	const uint64_t a[] = { KEY_A };
	struct dbk_pred_request ra = req(KEY_A);
	uint64_t now = 10000;

	CHECK(t && d);
	CHECK_NEAR(dbk_pred_config(t->pred)->lora_load_s, 0.3, 1e-12);
	CHECK_NEAR(dbk_pred_config(d->pred)->lora_load_s, DBK_ENGINE_LORA_LOAD_S / 4, 1e-12);
	scrape(t->pred, 0, 2, a, 1, now);
	scrape(t->pred, 1, 2, NULL, 0, now);
	CHECK_NEAR(ttft_on(t->pred, &ra, 1, now) - ttft_on(t->pred, &ra, 0, now), 0.3, 1e-9);
	dbk_policy_ttft_destroy(t);
	dbk_policy_ttft_destroy(d);
}

int main(void)
{
	RUN(test_loaded_free_and_full);
	RUN(test_books_between_scrapes);
	RUN(test_feed);
	RUN(test_lora_load_flag);
	return CHECK_DONE();
}
