/* The table-driven command line: values land where the table says,
 * every bad value is refused with the option's name, and the help lines
 * come from the same table. */
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "lib/cli.h"
#include "lib/log.h"

struct cfg {
	bool verbose;
	const char *url;
	int port;
	long long seed;
	size_t cap;
	double rate;
	int mode;
	int nlisten;
	const char *listen[4];
};

static int add_listen(void *ctx, const char *v, char *err, size_t errlen)
{
	struct cfg *c = ctx;

	if (c->nlisten == 4) {
		dbk_errf(err, errlen, "at most 4 --listen");
		return -1;
	}
	c->listen[c->nlisten++] = v;
	return 0;
}

static const char *const modes[] = { "fast", "slow", NULL };

static void table(struct cfg *c, struct dbk_opt *o)
{
	const struct dbk_opt t[] = {
		{ .name = "verbose",
		  .short_name = 'v',
		  .kind = DBK_OPT_FLAG,
		  .dst = &c->verbose,
		  .help = "say more" },
		{ .name = "url",
		  .kind = DBK_OPT_STR,
		  .dst = &c->url,
		  .metavar = "URL",
		  .help = "where\nsecond line" },
		{ .name = "port",
		  .short_name = 'p',
		  .kind = DBK_OPT_INT,
		  .dst = &c->port,
		  .lo = 1,
		  .hi = 65535,
		  .metavar = "N",
		  .section = "Network:" },
		{ .name = "seed",
		  .kind = DBK_OPT_LL,
		  .dst = &c->seed,
		  .lo = -5,
		  .hi = 1e15,
		  .metavar = "N" },
		{ .name = "cap",
		  .kind = DBK_OPT_SIZE,
		  .dst = &c->cap,
		  .lo = 0,
		  .hi = 1000,
		  .flags = DBK_OPT_STRICT | DBK_OPT_ONCE,
		  .metavar = "N" },
		{ .name = "rate",
		  .kind = DBK_OPT_DOUBLE,
		  .dst = &c->rate,
		  .lo = 0,
		  .hi = 10,
		  .metavar = "R" },
		{ .name = "mode",
		  .kind = DBK_OPT_CHOICE,
		  .dst = &c->mode,
		  .choices = modes,
		  .metavar = "M" },
		{ .name = "listen", .kind = DBK_OPT_CALL, .fn = add_listen, .metavar = "ADDR" },
		{ 0 },
	};
	memcpy(o, t, sizeof(t));
}

static int parse(struct cfg *c, char **argv, int *first, char *err, size_t errlen)
{
	struct dbk_opt o[9];
	int argc = 0;

	memset(c, 0, sizeof(*c));
	table(c, o);
	while (argv[argc])
		argc++;
	return dbk_cli_parse(o, argc, argv, c, first, err, errlen);
}

static void test_values_land_where_the_table_says(void)
{
	char *argv[] = { "prog",  "-v",       "--url",  "http://x", "-p",     "8080", "--seed=-5",
		         "--cap", "1000",     "--rate", "2.5",      "--mode", "slow", "--listen",
		         "a",     "--listen", "b",      "rest",     "--port", "1",    NULL };
	struct cfg c;
	char err[128] = "";
	int first = 0;

	CHECK(parse(&c, argv, &first, err, sizeof(err)) == 0);
	CHECK(c.verbose);
	CHECK(c.url && strcmp(c.url, "http://x") == 0);
	CHECK_EQ_U(c.port, 8080);
	CHECK(c.seed == -5);
	CHECK_EQ_U(c.cap, 1000);
	CHECK(c.rate == 2.5);
	CHECK_EQ_U(c.mode, 1);
	CHECK_EQ_U(c.nlisten, 2);
	CHECK(c.nlisten == 2 && strcmp(c.listen[1], "b") == 0);
	/* Options end at the first operand: "--port 1" after it is not read. */
	CHECK_EQ_U(first, 17);
}

static void test_every_bad_value_is_refused_by_name(void)
{
	static const struct {
		const char *opt, *val, *want;
	} bad[] = {
		{ "--port", "0", "--port wants an integer from 1 to 65535, got '0'" },
		{ "--port", "12abc", "--port wants an integer" },
		{ "--port", "", "--port wants an integer" },
		{ "--seed", "-6", "--seed wants an integer from -5" },
		{ "--cap", "+5",
		  "--cap wants an integer from 0 to 1000" }, /* strict grammar: no sign */
		{ "--cap", "1001", "--cap wants an integer from 0 to 1000" },
		{ "--rate", "nan", "--rate wants a number from 0 to 10, got 'nan'" },
		{ "--rate", "11", "--rate wants a number" },
		{ "--mode", "medium", "--mode wants one of fast, slow, got 'medium'" },
		/* A reason is one line, whatever the value holds (fuzz_cli). */
		{ "--mode", "a\nb\tc", "--mode wants one of fast, slow, got 'a?b?c'" },
		{ "--nope", "1", "unknown option '--nope'" },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *argv[] = { "prog", (char *)bad[i].opt, (char *)bad[i].val, NULL };
		struct cfg c;
		char err[128] = "";

		CHECK(parse(&c, argv, NULL, err, sizeof(err)) == -1);
		if (!strstr(err, bad[i].want))
			fprintf(stderr, "  %s %s: got \"%s\"\n", bad[i].opt, bad[i].val, err);
		CHECK(strstr(err, bad[i].want) != NULL);
	}
}

static void test_missing_value_repeats_and_callbacks(void)
{
	char *missing[] = { "prog", "--url", NULL };
	char *twice[] = { "prog", "--cap", "1", "--cap", "2", NULL };
	char *five[] = { "prog", "--listen", "1", "--listen", "2", "--listen",
		         "3",    "--listen", "4", "--listen", "5", NULL };
	char *unknown_short[] = { "prog", "-x", NULL };
	struct cfg c;
	char err[128] = "";

	CHECK(parse(&c, missing, NULL, err, sizeof(err)) == -1);
	CHECK(strstr(err, "--url needs a value") != NULL);
	CHECK(parse(&c, twice, NULL, err, sizeof(err)) == -1);
	CHECK(strstr(err, "--cap given twice") != NULL);
	CHECK(parse(&c, five, NULL, err, sizeof(err)) == -1);
	CHECK(strstr(err, "at most 4 --listen") != NULL);
	CHECK(parse(&c, unknown_short, NULL, err, sizeof(err)) == -1);
	CHECK(strstr(err, "unknown option '-x'") != NULL);
}

/* A parse that stopped inside a cluster of short options ("-vxv": -x is
 * unknown) leaves nothing behind for the next one, which must not read
 * on in the first argv (found by fuzz_cli: it had been freed). */
static void test_a_failed_cluster_leaves_no_state(void)
{
	char first[] = "-vxv";
	char *cluster[] = { "prog", first, NULL };
	char *next[] = { "prog", "--port", "80", NULL };
	struct cfg c;
	char err[128] = "";
	int at = 0;

	CHECK(parse(&c, cluster, NULL, err, sizeof(err)) == -1);
	CHECK(strstr(err, "unknown option '-x'") != NULL);
	memset(first, 'v', sizeof(first) - 1); /* what a stale pointer would read */
	CHECK(parse(&c, next, &at, err, sizeof(err)) == 0);
	CHECK_EQ_U(c.port, 80);
	CHECK(!c.verbose);
	CHECK_EQ_U(at, 3);
}

static void test_usage_lines_come_from_the_table(void)
{
	struct cfg c;
	struct dbk_opt o[9];
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	table(&c, o);
	CHECK(f != NULL);
	if (!f)
		return;
	dbk_cli_usage(f, o);
	fclose(f);
	CHECK(strstr(text, "  -v, --verbose      say more\n") != NULL);
	CHECK(strstr(text, "      --url URL      where\n                     second line\n") !=
	      NULL);
	CHECK(strstr(text, "second line\nNetwork:\n  -p, --port N\n") != NULL);
	free(text);
}

static void test_no_short_column_without_short_options(void)
{
	bool on = false;
	const struct dbk_opt o[] = {
		{ .name = "on", .kind = DBK_OPT_FLAG, .dst = &on, .help = "switch" },
		{ 0 },
	};
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	CHECK(f != NULL);
	if (!f)
		return;
	dbk_cli_usage(f, o);
	fclose(f);
	CHECK(text && strcmp(text, "  --on  switch\n") == 0);
	free(text);
}

/* Durations: units or a bare number in the option's unit, the error
 * naming both, and --help saying which unit a bare number is in. */
static void test_durations(void)
{
	long long every = 0, ttl = 0;
	const struct dbk_opt o[] = {
		{ .name = "every",
		  .kind = DBK_OPT_MS,
		  .dst = &every,
		  .lo = 10,
		  .hi = 60000,
		  .metavar = "TIME",
		  .help = "how often" },
		{ .name = "ttl",
		  .kind = DBK_OPT_SECONDS,
		  .dst = &ttl,
		  .lo = 1,
		  .hi = 3600,
		  .metavar = "TIME",
		  .help = "how long" },
		{ 0 },
	};
	char *argv[] = { "prog", "--every", "2s", "--ttl", "2m", NULL };
	char *bare[] = { "prog", "--every", "250", "--ttl", "30", NULL };
	char *bad[] = { "prog", "--ttl", "1500ms", NULL };
	char err[160] = "";
	char *text = NULL;
	size_t len = 0;
	FILE *f;

	CHECK(dbk_cli_parse(o, 5, argv, NULL, NULL, err, sizeof(err)) == 0);
	CHECK(every == 2000 && ttl == 120);
	CHECK(dbk_cli_parse(o, 5, bare, NULL, NULL, err, sizeof(err)) == 0);
	CHECK(every == 250 && ttl == 30);
	CHECK(dbk_cli_parse(o, 3, bad, NULL, NULL, err, sizeof(err)) < 0);
	CHECK(strcmp(err, "--ttl wants a duration from 1 to 3600 s (500ms, 2s, 1m), got "
	                  "'1500ms'") == 0);
	CHECK(ttl == 30);
	f = open_memstream(&text, &len);
	CHECK(f != NULL);
	if (!f)
		return;
	dbk_cli_usage(f, o);
	fclose(f);
	CHECK(text && strcmp(text, "  --every TIME  how often\n"
	                           "                (500ms, 2s, 1m; a bare number is ms)\n"
	                           "  --ttl TIME    how long\n"
	                           "                (500ms, 2s, 1m; a bare number is s)\n") == 0);
	free(text);
}

int main(void)
{
	RUN(test_values_land_where_the_table_says);
	RUN(test_every_bad_value_is_refused_by_name);
	RUN(test_missing_value_repeats_and_callbacks);
	RUN(test_a_failed_cluster_leaves_no_state);
	RUN(test_usage_lines_come_from_the_table);
	RUN(test_no_short_column_without_short_options);
	RUN(test_durations);
	return CHECK_DONE();
}
