/* Command-line parsing: defaults, the reference's flags, and clear errors
 * for every setup the agent must refuse at start. */
#include "check.h"
#include "config.h"

#define ARGV(...) ((char *[]){ "dbucket-spoa", __VA_ARGS__, NULL })
#define ARGC(...) ((int)(sizeof((char *[]){ "dbucket-spoa", __VA_ARGS__ }) / sizeof(char *)))
#define PARSE(c, err, ...) \
	dbk_config_parse(c, ARGC(__VA_ARGS__), ARGV(__VA_ARGS__), err, sizeof(err))

static struct dbk_config c;
static char err[256];

static void test_defaults(void)
{
	CHECK_EQ_U(PARSE(&c, err, "a", "b"), DBK_CONFIG_OK);
	CHECK_EQ_U(c.nservers, 2);
	CHECK(strcmp(c.servers[1], "b") == 0);
	CHECK(!c.dynamic);
	CHECK_EQ_U(c.threshold, 32768);
	CHECK_EQ_U(c.max_request_tokens, 131072);
	CHECK_EQ_U(c.nlisten, 1);
	CHECK(strcmp(c.listen[0], "127.0.0.1:12345") == 0);
	CHECK_EQ_U(c.max_frame_size, 16380);
}

static void test_reference_flags(void)
{
	CHECK_EQ_U(PARSE(&c, err, "--enable-dynamic-bucket", "--server-group-threshold", "8192",
	                 "--max-request-tokens", "65536", "--listen", "unix:/tmp/x.sock",
	                 "--listen", "[::1]:9", "s0", "s1", "s2"),
	           DBK_CONFIG_OK);
	CHECK(c.dynamic);
	CHECK_EQ_U(c.threshold, 8192);
	CHECK_EQ_U(c.max_request_tokens, 65536);
	CHECK_EQ_U(c.nlisten, 2);
	CHECK_EQ_U(c.nservers, 3);
	struct dbk_bal_config bc;
	dbk_config_balancer(&c, &bc);
	CHECK_EQ_U(bc.nbuckets, 2);
	CHECK_NEAR(bc.bounds[1], 8192, 0);
	CHECK_NEAR(bc.bounds[2], 65536, 0);
}

static void test_help_and_version(void)
{
	CHECK_EQ_U(PARSE(&c, err, "--help"), DBK_CONFIG_HELP);
	CHECK_EQ_U(PARSE(&c, err, "-V"), DBK_CONFIG_VERSION);
}

static void test_errors(void)
{
	CHECK_EQ_U(PARSE(&c, err, "--enable-dynamic-bucket", "only"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "at least 2 servers") != NULL);
	CHECK_EQ_U(PARSE(&c, err, "--server-group-threshold", "131072", "a", "b"),
	           DBK_CONFIG_ERROR);
	CHECK(strstr(err, "must be below") != NULL);
	CHECK_EQ_U(PARSE(&c, err, "a", "b", "a"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "named twice") != NULL);
	CHECK_EQ_U(PARSE(&c, err, "--frobnicate", "a"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "unknown option") != NULL);
	CHECK_EQ_U(PARSE(&c, err, "--server-group-threshold", "12x", "a"), DBK_CONFIG_ERROR);
	CHECK_EQ_U(PARSE(&c, err, "--server-group-threshold", "-5", "a"), DBK_CONFIG_ERROR);
	CHECK_EQ_U(PARSE(&c, err, "--max-request-tokens"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "needs a value") != NULL);
	CHECK_EQ_U(PARSE(&c, err, "--log-level", "loud", "a"), DBK_CONFIG_ERROR);
	CHECK_EQ_U(PARSE(&c, err, "--max-frame-size", "100", "a"), DBK_CONFIG_ERROR);
	CHECK_EQ_U(PARSE(&c, err, "bad name", "a"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "invalid server name") != NULL);
	CHECK_EQ_U(PARSE(&c, err, "a", "--enable-dynamic-bucket"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "after the server names") != NULL);
	CHECK_EQ_U(PARSE(&c, err, "--listen", "x:1"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "no servers") != NULL);
	/* Addresses are checked as they are parsed, HAProxy's spellings
	 * taken. */
	CHECK_EQ_U(PARSE(&c, err, "--listen", "x"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "--listen: bad address 'x'") != NULL);
	CHECK_EQ_U(PARSE(&c, err, "--admin-listen", "udp@127.0.0.1:1", "a"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "udp@ is for --completion-listen only") != NULL);
	CHECK_EQ_U(PARSE(&c, err, "--completion-listen", "127.0.0.1:70000", "a"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "bad port") != NULL);
	CHECK_EQ_U(PARSE(&c, err, "--listen", "unix@/run/a.sock", "--listen", "ipv6@[::1]:1",
	                 "--completion-listen", "udp@[::1]:2", "--admin-listen", "ipv4@127.0.0.1:3",
	                 "a"),
	           DBK_CONFIG_OK);
}

/* --admit-tpot: admission's TPOT objective, 100 ms unless given, a
 * duration as --admit-ttft takes, refused out of range. */
static void test_admit_tpot(void)
{
	CHECK_EQ_U(PARSE(&c, err, "a", "b"), DBK_CONFIG_OK);
	CHECK_EQ_U(c.admit.tpot_ms, 100);
	CHECK_EQ_U(PARSE(&c, err, "--admission", "--admit-tpot", "250ms", "a", "b"), DBK_CONFIG_OK);
	CHECK_EQ_U(c.admit.tpot_ms, 250);
	CHECK_EQ_U(PARSE(&c, err, "--admit-tpot", "0", "a"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "--admit-tpot wants a duration") != NULL);
	CHECK_EQ_U(PARSE(&c, err, "--admit-tpot", "fast", "a"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "--admit-tpot") != NULL);
}

/* The command line takes numbers in the same strict grammar as --config
 * and /config: plain digits, nothing around them. */
static void test_strict_numbers(void)
{
	static const char *const bad[] = { "+1",     " 8192", "8192 ", "0x8000",
		                           "8192.0", "1e4",   "08192", "-0" };
	static const char *const opts[] = { "--server-group-threshold",   "--max-leases",
		                            "--max-connections",          "--lease-ttl",
		                            "--max-connections-per-peer", "--idle-timeout" };

	for (size_t o = 0; o < sizeof(opts) / sizeof(opts[0]); o++)
		for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
			char *argv[] = {
				"dbucket-spoa", (char *)opts[o], (char *)bad[i], "a", "b", NULL
			};
			bool taken = dbk_config_parse(&c, 5, argv, err, sizeof(err)) ==
			             DBK_CONFIG_OK;
			if (taken)
				fprintf(stderr, "  %s '%s' was taken\n", opts[o], bad[i]);
			CHECK(!taken);
		}
	CHECK_EQ_U(PARSE(&c, err, "--max-connections-per-peer", "8", "--idle-timeout", "30", "a",
	                 "b"),
	           DBK_CONFIG_OK);
	CHECK_EQ_U(c.max_connections_per_peer, 8);
	CHECK_EQ_U(c.idle_timeout_s, 30);
}

static void test_policy_and_scrape(void)
{
	CHECK_EQ_U(PARSE(&c, err, "a", "b"), DBK_CONFIG_OK);
	CHECK_EQ_U(c.policy, dbk_policy_find("reference"));
	CHECK_EQ_U(c.nscrape, 0);
	CHECK_EQ_U(c.scrape_interval_ms, 100);
	CHECK_EQ_U(c.scrape_timeout_ms, 1000);
	CHECK_EQ_U(PARSE(&c, err, "--policy", "ttft", "--scrape", "b=http://10.0.0.2:8000/",
	                 "--scrape", "a=http://[::1]:8443", "--scrape-interval", "250",
	                 "--scrape-timeout", "50", "a", "b"),
	           DBK_CONFIG_OK);
	CHECK_EQ_U(c.policy, dbk_policy_find("ttft"));
	CHECK(strcmp(c.policy->name, "ttft") == 0);
	CHECK(strcmp(dbk_config_scrape_url(&c, "b"), "http://10.0.0.2:8000/") == 0);
	CHECK(strcmp(dbk_config_scrape_url(&c, "a"), "http://[::1]:8443") == 0);
	CHECK(dbk_config_scrape_url(&c, "c") == NULL);
	CHECK_EQ_U(c.scrape_interval_ms, 250);
	CHECK_EQ_U(c.scrape_timeout_ms, 50);

	CHECK_EQ_U(PARSE(&c, err, "--policy", "fastest", "a"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "one of reference, ttft, p2ttft, got 'fastest'") != NULL);
	CHECK_EQ_U(PARSE(&c, err, "--policy", "p2ttft", "a"), DBK_CONFIG_OK);
	CHECK(strcmp(c.policy->name, "p2ttft") == 0);
	static const char *const bad[] = {
		"a",         "a=",           "=http://x",    "a=ftp://x",
		"a=http://", "a=http://x y", "a=http://x\"", "bad name=http://x",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = { "dbucket-spoa", "--scrape", (char *)bad[i], "a", NULL };
		CHECK_EQ_U(dbk_config_parse(&c, 4, argv, err, sizeof(err)), DBK_CONFIG_ERROR);
	}
	CHECK_EQ_U(PARSE(&c, err, "--scrape", "a=http://x", "--scrape", "a=http://y", "a"),
	           DBK_CONFIG_ERROR);
	CHECK(strstr(err, "twice") != NULL);
	CHECK_EQ_U(PARSE(&c, err, "--scrape", "z=http://x", "a", "b"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "'z', which is not a server") != NULL);
	/* https is scraped (through libcurl); its TLS options are checked. */
	CHECK_EQ_U(PARSE(&c, err, "--scrape", "a=https://x:8443", "a"), DBK_CONFIG_OK);
	CHECK(strcmp(dbk_config_scrape_url(&c, "a"), "https://x:8443") == 0);
	CHECK_EQ_U(PARSE(&c, err, "--scrape", "a=https://", "a"), DBK_CONFIG_ERROR);
	CHECK_EQ_U(PARSE(&c, err, "--scrape-insecure", "--scrape-ca", "/dev/null", "a"),
	           DBK_CONFIG_OK);
	CHECK(c.scrape_insecure && strcmp(c.scrape_ca, "/dev/null") == 0);
	CHECK_EQ_U(PARSE(&c, err, "--scrape-cert", "/nonexistent/cert.pem", "a"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "--scrape-cert /nonexistent/cert.pem: No such file") != NULL);
	CHECK_EQ_U(PARSE(&c, err, "--scrape-key", "/dev/null", "a"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "--scrape-key needs --scrape-cert") != NULL);
	CHECK_EQ_U(PARSE(&c, err, "--scrape-interval", "5", "a"), DBK_CONFIG_ERROR);
	CHECK_EQ_U(PARSE(&c, err, "--engine-speed", "2.5", "a"), DBK_CONFIG_OK);
	CHECK_NEAR(c.engine_speed, 2.5, 0);
	CHECK_EQ_U(PARSE(&c, err, "--engine-speed", "0", "a"), DBK_CONFIG_ERROR);
	CHECK(c.max_num_batched_tokens == 0);
	CHECK_EQ_U(PARSE(&c, err, "--max-num-batched-tokens", "16384", "a"), DBK_CONFIG_OK);
	CHECK(c.max_num_batched_tokens == 16384);
	CHECK_EQ_U(PARSE(&c, err, "--max-num-batched-tokens", "0", "a"), DBK_CONFIG_ERROR);
	/* Following HAProxy's backend, the server may come later: not an
	 * error at start. */
	CHECK_EQ_U(PARSE(&c, err, "--haproxy-socket", "/x", "--scrape", "z=http://x"),
	           DBK_CONFIG_OK);
	c.servers[0] = "a";
	c.nservers = 1;
	CHECK(dbk_config_check_servers(&c, err, sizeof(err)) == 0);
	CHECK_EQ_U(PARSE(&c, err, "--haproxy-socket", "/x", "--max-servers", "0"),
	           DBK_CONFIG_ERROR);
	CHECK_EQ_U(PARSE(&c, err, "--haproxy-socket", "/x", "--max-servers", "8"), DBK_CONFIG_OK);
	CHECK_EQ_U(c.max_servers, 8);
}

static void test_outlier_flags(void)
{
	CHECK_EQ_U(PARSE(&c, err, "a", "b"), DBK_CONFIG_OK);
	CHECK(c.outlier.enabled);
	CHECK_EQ_U(c.outlier.consecutive, 5);
	CHECK_EQ_U(c.outlier.max_percent, 50);
	CHECK_EQ_U(PARSE(&c, err, "--outlier", "none", "--outlier-consecutive", "0",
	                 "--outlier-ratio", "0.5", "--outlier-base-ejection", "2000",
	                 "--outlier-max-ejected-percent", "10", "a"),
	           DBK_CONFIG_OK);
	CHECK(!c.outlier.enabled);
	CHECK_EQ_U(c.outlier.consecutive, 0);
	CHECK_NEAR(c.outlier.ratio, 0.5, 0);
	CHECK_EQ_U(c.outlier.base_ms, 2000);
	CHECK_EQ_U(c.outlier.max_percent, 10);
	CHECK_EQ_U(PARSE(&c, err, "--outlier", "off", "a"), DBK_CONFIG_ERROR);
	CHECK(strstr(err, "--outlier wants on or none") != NULL);
	CHECK_EQ_U(PARSE(&c, err, "--outlier-ratio", "1.5", "a"), DBK_CONFIG_ERROR);
	CHECK_EQ_U(PARSE(&c, err, "--outlier-max-ejected-percent", "101", "a"), DBK_CONFIG_ERROR);
}

int main(void)
{
	RUN(test_defaults);
	RUN(test_reference_flags);
	RUN(test_help_and_version);
	RUN(test_errors);
	RUN(test_admit_tpot);
	RUN(test_strict_numbers);
	RUN(test_policy_and_scrape);
	RUN(test_outlier_flags);
	return CHECK_DONE();
}
