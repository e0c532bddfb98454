/* Live settings: the key = value format, the query form, and the
 * balancer's live reconfiguration with leases in flight. */
#include "check.h"
#include "settings.h"

static void defaults(struct dbk_bal_config *c)
{
	dbk_bal_config_default(c, 4, true, 32768, 131072);
}

static void test_file_format(void)
{
	struct dbk_bal_config c;
	char err[256];
	static const char text[] = "# tuned for the long tail\n"
	                           "server-group-threshold = 8192\n"
	                           "  sensitivity=1.5   # steeper\n"
	                           "\n"
	                           "affinity-strength = 2\r\n"
	                           "redirect-threshold = 0.3\n"
	                           "group-sizes = 1,3\n"
	                           "max-leases = 500";

	defaults(&c);
	CHECK_EQ_U(dbk_settings_parse(&c, text, sizeof(text) - 1, err, sizeof(err)), 0);
	CHECK_NEAR(c.bounds[1], 8192, 0);
	CHECK_NEAR(c.bounds[2], 131072, 0);
	CHECK_NEAR(c.sensitivity, 1.5, 0);
	CHECK_NEAR(c.affinity_strength, 2, 0);
	CHECK_NEAR(c.redirect_threshold, 0.3, 0);
	CHECK_EQ_U(c.group_sizes[0], 1);
	CHECK_EQ_U(c.group_sizes[1], 3);
	CHECK_EQ_U(c.max_leases, 500);
	CHECK_EQ_U(dbk_bal_config_check(&c, err, sizeof(err)), 0);

	/* What describe writes parses back to the same thing. */
	struct dbk_buf sb;
	struct dbk_bal_config d;
	dbk_buf_init(&sb);
	dbk_settings_describe(&c, false, &sb);
	defaults(&d);
	CHECK_EQ_U(dbk_settings_parse(&d, sb.p, sb.len, err, sizeof(err)), 0);
	CHECK(memcmp(&c, &d, sizeof(c)) == 0);
	dbk_buf_free(&sb);
}

static void test_file_errors_name_the_line(void)
{
	struct dbk_bal_config c;
	char err[256];

	defaults(&c);
	CHECK(dbk_settings_parse(&c, "sensitivity = 1\nbogus = 2\n", 26, err, sizeof(err)) < 0);
	CHECK(strstr(err, "line 2") && strstr(err, "unknown setting 'bogus'"));
	CHECK(dbk_settings_parse(&c, "sensitivity 1\n", 14, err, sizeof(err)) < 0);
	CHECK(strstr(err, "line 1") != NULL);
	CHECK(dbk_settings_parse(&c, "sensitivity = fast\n", 19, err, sizeof(err)) < 0);
	CHECK(dbk_settings_parse(&c, "group-sizes = 2,,2\n", 19, err, sizeof(err)) < 0);
	CHECK(dbk_settings_parse(&c, "group-sizes = 0,4\n", 18, err, sizeof(err)) < 0);
	CHECK(dbk_settings_parse(&c, "max-leases = 1.5\n", 17, err, sizeof(err)) < 0);
	/* Values the parser takes but the balancer refuses. */
	defaults(&c);
	CHECK_EQ_U(dbk_settings_parse(&c, "group-sizes = 1,1\n", 18, err, sizeof(err)), 0);
	CHECK(dbk_bal_config_check(&c, err, sizeof(err)) < 0);
	CHECK(strstr(err, "adding up to 4") != NULL);
}

static void test_query(void)
{
	struct dbk_bal_config c;
	char err[256];

	defaults(&c);
	CHECK_EQ_U(dbk_settings_query(&c, "server-group-threshold=100&group-sizes=3%2C1", err,
	                              sizeof(err)),
	           0);
	CHECK_NEAR(c.bounds[1], 100, 0);
	CHECK_EQ_U(c.group_sizes[0], 3);
	CHECK_EQ_U(c.group_sizes[1], 1);
	CHECK(dbk_settings_query(&c, "sensitivity=%zz", err, sizeof(err)) < 0);
	CHECK(dbk_settings_query(&c, "sensitivity", err, sizeof(err)) < 0);
	CHECK(dbk_settings_query(&c, "nope=1", err, sizeof(err)) < 0);
	CHECK_EQ_U(dbk_settings_query(&c, "", err, sizeof(err)), 0);
}

static void test_live_reconfigure_keeps_leases(void)
{
	struct dbk_bal_config c;
	struct dbk_bal_request r = { .body_bytes = 4000, .max_tokens = 16 };
	struct dbk_bal_decision d;
	char err[256];

	defaults(&c);
	struct dbk_balancer *b = dbk_bal_new(&c);
	CHECK_EQ_U(dbk_bal_dispatch(b, "a", 1, &r, 0, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.server, 0);
	r.body_bytes = 200000;
	CHECK_EQ_U(dbk_bal_dispatch(b, "b", 1, &r, 0, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.group, 1);
	CHECK_EQ_U(d.server, 2);

	/* Threshold below 1000 tokens: a 4000-byte body is long now. */
	c.bounds[1] = 500;
	CHECK_EQ_U(dbk_bal_reconfigure(b, &c, err, sizeof(err)), 0);
	r.body_bytes = 4000;
	CHECK_EQ_U(dbk_bal_decide(b, &r, &d), DBK_BAL_OK);
	CHECK_EQ_U(d.std_bucket, 1);

	/* Regroup 3+1: server 2 joins group 0 with its load. */
	c.group_sizes[0] = 3;
	c.group_sizes[1] = 1;
	CHECK_EQ_U(dbk_bal_reconfigure(b, &c, err, sizeof(err)), 0);
	CHECK_EQ_U(dbk_bal_group_of(b, 2), 0);
	CHECK_NEAR(dbk_bal_bucket_load(b, 0), 1000 + 50000, 0);
	CHECK_NEAR(dbk_bal_bucket_load(b, 1), 0, 0);
	CHECK_EQ_U(dbk_bal_stats(b)->leases, 2);
	/* Releases give back from the groups the servers are in now. */
	CHECK_EQ_U(dbk_bal_release(b, "b", 1, NULL), DBK_BAL_OK);
	CHECK_EQ_U(dbk_bal_release(b, "a", 1, NULL), DBK_BAL_OK);
	for (unsigned i = 0; i < 4; i++)
		CHECK_NEAR(dbk_bal_server_load(b, i), 0, 0);
	CHECK_NEAR(dbk_bal_bucket_load(b, 0), 0, 0);
	CHECK_NEAR(dbk_bal_bucket_load(b, 1), 0, 0);

	/* What cannot change live is refused, and nothing changes. */
	struct dbk_bal_config bad = c;
	bad.dynamic = false;
	bad.nbuckets = 1;
	memset(bad.group_sizes, 0, sizeof(bad.group_sizes));
	CHECK(dbk_bal_reconfigure(b, &bad, err, sizeof(err)) < 0);
	CHECK(strstr(err, "restart") != NULL);
	bad = c;
	bad.bounds[1] = 200000;
	CHECK(dbk_bal_reconfigure(b, &bad, err, sizeof(err)) < 0);
	CHECK_NEAR(dbk_bal_config(b)->bounds[1], 500, 0);
	dbk_bal_free(b);
}

/* One grammar for every door (--config, /config, the command line):
 * what the command line refuses is refused here too, and a rejected
 * value changes nothing. */
static void test_strict_numbers(void)
{
	static const char *const bad[] = {
		"max-request-tokens=1e308",
		"server-group-threshold=32768.5",
		"server-group-threshold=0x8000",
		"group-sizes=%2B1,3",
		"group-sizes=+1,3",
		"affinity-strength=-0",
		"max-leases=2%00junk",
		"sensitivity=%201",
		"sensitivity=1%20",
		"redirect-threshold=.5",
		"redirect-threshold=1.",
		"max-leases=0500",
		"sensitivity=nan",
		"sensitivity=1e1",
		"group-sizes=2,2%00",
		"max-request-tokens=99999999999999999999999",
	};
	struct dbk_bal_config c, before;
	char err[256];

	defaults(&c);
	before = c;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		bool taken = dbk_settings_query(&c, bad[i], err, sizeof(err)) == 0;
		if (taken)
			fprintf(stderr, "  query '%s' was taken\n", bad[i]);
		CHECK(!taken);
	}
	CHECK(memcmp(&c, &before, sizeof(c)) == 0);
	CHECK(dbk_settings_parse(&c, "max-request-tokens = 1e308\n", 26, err, sizeof(err)) < 0);
	CHECK(dbk_settings_parse(&c, "affinity-strength = -0\n", 23, err, sizeof(err)) < 0);
	CHECK(memcmp(&c, &before, sizeof(c)) == 0);
	/* What it does take. */
	CHECK_EQ_U(dbk_settings_query(&c, "sensitivity=0.5&affinity-strength=0&max-leases=500000",
	                              err, sizeof(err)),
	           0);
	CHECK_NEAR(c.sensitivity, 0.5, 0);
	CHECK_NEAR(c.affinity_strength, 0, 0);
	CHECK_EQ_U(c.max_leases, 500000);
}

int main(void)
{
	RUN(test_file_format);
	RUN(test_file_errors_name_the_line);
	RUN(test_query);
	RUN(test_live_reconfigure_keeps_leases);
	RUN(test_strict_numbers);
	return CHECK_DONE();
}
