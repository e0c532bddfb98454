/* --pool: one command line, several HAProxy backends. Without it the
 * command line is one pool exactly as before; with it each pool starts
 * from the options before the first --pool and takes its own after. */
#include "check.h"
#include "config.h"

#define ARGV(...) ((char *[]){ "dbucket-spoa", __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ "dbucket-spoa", __VA_ARGS__ }) / sizeof(char *)))
#define PARSE(n, err, ...) \
	dbk_config_parse_pools(cfgs, 3, n, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), err, sizeof(err))

static struct dbk_config c0, c1, c2;
static struct dbk_config *const cfgs[3] = { &c0, &c1, &c2 };
static char err[256];

static void test_without_pool(void)
{
	unsigned n = 0;

	CHECK_EQ_U(PARSE(&n, err, "--policy", "ttft", "a", "b"), DBK_CONFIG_OK);
	CHECK_EQ_U(n, 1);
	CHECK(c0.pool == NULL);
	CHECK(strcmp(c0.backend, "vllm") == 0);
	CHECK(strcmp(c0.policy->name, "ttft") == 0);
	CHECK_EQ_U(c0.nservers, 2);
}

static void test_pools_take_globals_then_their_own(void)
{
	unsigned n = 0;

	CHECK_EQ_U(PARSE(&n, err, "--listen", "127.0.0.1:9", "--policy", "ttft",
	                 "--server-group-threshold", "100", "--pool", "llama", "a0", "a1",
	                 "--pool=qwen", "--policy", "reference", "--enable-dynamic-bucket",
	                 "--scrape", "b0=http://127.0.0.1:1", "b0", "b1"),
	           DBK_CONFIG_OK);
	CHECK_EQ_U(n, 2);
	CHECK(strcmp(c0.pool, "llama") == 0 && strcmp(c0.backend, "llama") == 0);
	CHECK(strcmp(c1.pool, "qwen") == 0 && strcmp(c1.backend, "qwen") == 0);
	CHECK(strcmp(c0.policy->name, "ttft") == 0);
	CHECK(strcmp(c1.policy->name, "reference") == 0);
	CHECK(!c0.dynamic && c1.dynamic);
	CHECK_EQ_U(c0.threshold, 100);
	CHECK_EQ_U(c1.threshold, 100);
	CHECK_EQ_U(c0.nscrape, 0);
	CHECK_EQ_U(c1.nscrape, 1);
	CHECK_EQ_U(c0.nservers, 2);
	CHECK(strcmp(c0.servers[1], "a1") == 0);
	CHECK(strcmp(c1.servers[0], "b0") == 0);
	/* Agent-wide options are every pool's. */
	CHECK(strcmp(c1.listen[0], "127.0.0.1:9") == 0);
}

/* --lora-load is a pool's: one pool's servers load adapters at their
 * own speed, the other keeps the default (-1: the engine model's). */
static void test_pool_lora_load(void)
{
	unsigned n = 0;

	CHECK_EQ_U(PARSE(&n, err, "--policy", "ttft", "--pool", "big", "--lora-load", "2s", "a0",
	                 "--pool", "small", "b0"),
	           DBK_CONFIG_OK);
	CHECK_EQ_U(n, 2);
	CHECK_EQ_U(c0.lora_load_ms, 2000);
	CHECK(c1.lora_load_ms == -1);
	CHECK_NEAR(dbk_config_lora_load_env_s(&c0), 2.0, 1e-12);
	CHECK_NEAR(dbk_config_lora_load_env_s(&c1), 0, 0);
}

static void test_pool_errors(void)
{
	unsigned n = 0;

	CHECK_EQ_U(PARSE(&n, err, "--pool", "a", "x", "--listen", "127.0.0.1:9"), DBK_CONFIG_ERROR);
	CHECK_EQ_U(PARSE(&n, err, "--pool", "a", "--listen", "127.0.0.1:9", "x"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "--listen") && strstr(err, "before the first --pool"));
	CHECK_EQ_U(PARSE(&n, err, "--pool", "a", "--backend", "b", "x"), DBK_CONFIG_ERROR);
	CHECK_EQ_U(PARSE(&n, err, "--pool", "a", "x", "--pool", "a", "y"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "twice"));
	CHECK_EQ_U(PARSE(&n, err, "--pool", "a", "x", "--pool", "b"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "--pool b: no servers"));
	CHECK_EQ_U(PARSE(&n, err, "--pool", "bad name", "x"), DBK_CONFIG_ERROR);
	CHECK_EQ_U(PARSE(&n, err, "--pool", "a", "x", "--pool", "b", "y", "--pool", "c", "z",
	                 "--pool", "d", "w"),
	           DBK_CONFIG_ERROR);
	CHECK(strstr(err, "at most 3"));
	/* With the runtime API a pool's servers may come from HAProxy. */
	CHECK_EQ_U(PARSE(&n, err, "--haproxy-socket", "/x", "--pool", "a", "--pool", "b"),
	           DBK_CONFIG_OK);
	CHECK_EQ_U(n, 2);
	CHECK_EQ_U(PARSE(&n, err, "--pool", "a", "--help"), DBK_CONFIG_HELP);
}

/* The words before the first --pool are parsed in front of each pool's:
 * an option there left without its value takes the pool's "--pool" as
 * its value. A pool so swallowed must not become the default backend
 * beside the others: "--node --pool a --pool --pool b" was accepted as
 * the pools "vllm" and "b" (CI's fuzz_pools found a line of this shape). */
static void test_a_swallowed_pool_is_refused(void)
{
	unsigned n = 0;

	CHECK_EQ_U(PARSE(&n, err, "--haproxy-socket", "/x", "--node", "--pool", "a", "--pool",
	                 "--pool", "b"),
	           DBK_CONFIG_ERROR);
	CHECK(strstr(err, "--pool a was read as the value of the option before it"));
	/* A server name ends the options: the --pool after it is refused. */
	CHECK_EQ_U(PARSE(&n, err, "s0", "--pool", "a", "x", "--pool", "b", "y"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "option '--pool' after the server names"));
	/* "--pool --pool" names a pool "--pool" (HAProxy allows the name);
	 * read as such, it is no error. */
	CHECK_EQ_U(PARSE(&n, err, "--pool", "--pool", "x", "--pool", "b", "y"), DBK_CONFIG_OK);
	CHECK_EQ_U(n, 2);
	CHECK(strcmp(c0.pool, "--pool") == 0 && strcmp(c1.pool, "b") == 0);
}

int main(void)
{
	RUN(test_without_pool);
	RUN(test_pools_take_globals_then_their_own);
	RUN(test_pool_lora_load);
	RUN(test_pool_errors);
	RUN(test_a_swallowed_pool_is_refused);
	return CHECK_DONE();
}
