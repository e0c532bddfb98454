/* The launcher's command line against the reference's: every expected
 * message below is what Python 3.11's argparse printed for the same argv
 * with the reference's add_argument calls (prog "dbucket"). */
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flags.h"
#include "pyval.h"

#define MAXARGS 64

static struct dbk_launch_flags F;
static char ERR[512];

/* parse("--port", "1", NULL): argv[0] is "dbucket". */
static enum dbk_flags_result parse(const char *first, ...)
{
	static char *argv[MAXARGS];
	int argc = 0;
	va_list ap;

	dbk_flags_free(&F);
	argv[argc++] = "dbucket";
	va_start(ap, first);
	for (const char *a = first; a && argc < MAXARGS - 1; a = va_arg(ap, const char *))
		argv[argc++] = (char *)a;
	va_end(ap);
	argv[argc] = NULL;
	return dbk_flags_parse(&F, argc, argv, ERR, sizeof(ERR));
}

/* The parse fails with exactly this message. */
#define CHECK_ERR(msg, ...)                                                               \
	do {                                                                              \
		enum dbk_flags_result r_ = parse(__VA_ARGS__, NULL);                      \
		CHECK(r_ == DBK_FLAGS_ERROR);                                             \
		if (strcmp(ERR, msg) != 0) {                                              \
			dbk_check_cur_failed++;                                           \
			fprintf(stderr, "  %s:%d: error \"%s\", want \"%s\"\n", __FILE__, \
			        __LINE__, ERR, msg);                                      \
		}                                                                         \
	} while (0)

/* The parse fails with a message containing this. */
#define CHECK_ERR_HAS(part, ...)                                                          \
	do {                                                                              \
		enum dbk_flags_result r_ = parse(__VA_ARGS__, NULL);                      \
		CHECK(r_ == DBK_FLAGS_ERROR);                                             \
		if (!strstr(ERR, part)) {                                                 \
			dbk_check_cur_failed++;                                           \
			fprintf(stderr, "  %s:%d: error \"%s\" lacks \"%s\"\n", __FILE__, \
			        __LINE__, ERR, part);                                     \
		}                                                                         \
	} while (0)

static void test_defaults(void)
{
	CHECK(parse(NULL) == DBK_FLAGS_OK);
	CHECK(strcmp(F.host, "localhost") == 0);
	CHECK_EQ_U(F.port, 8000);
	CHECK_EQ_U(F.nhosts, 1);
	CHECK(strcmp(F.server_hosts[0], "localhost") == 0);
	CHECK_EQ_U(F.nports, 1);
	CHECK_EQ_U(F.server_ports[0], 8001);
	CHECK(!F.dynamic);
	CHECK_EQ_U(F.threshold, 32768);
	CHECK_EQ_U(F.max_request_tokens, 131072);
	CHECK_EQ_U(F.max_retries, 3);
	CHECK(F.retry_delay == 0.001);
	CHECK(!F.print_config && !F.runtime_dir && !F.agent && !F.haproxy);
	/* Ours: the better policy for a new user, scraping at the agent's
	 * pace. */
	CHECK(strcmp(F.policy, "ttft") == 0);
	CHECK(dbk_flags_scraped(&F));
	CHECK(!F.force);
	CHECK(F.scrape_interval_ms == 0 && F.scrape_timeout_ms == 0);
}

static void test_policy(void)
{
	CHECK(parse("--policy", "reference", NULL) == DBK_FLAGS_OK);
	CHECK(strcmp(F.policy, "reference") == 0);
	CHECK(!dbk_flags_scraped(&F));
	CHECK(parse("--pol=p2ttft", NULL) == DBK_FLAGS_OK);
	CHECK(strcmp(F.policy, "p2ttft") == 0);
	CHECK(dbk_flags_scraped(&F));
	CHECK(parse("--scrape-i", "250", "--scrape-t", "900", NULL) == DBK_FLAGS_OK);
	CHECK(F.scrape_interval_ms == 250 && F.scrape_timeout_ms == 900);
	/* Units, as the agent takes them. */
	CHECK(parse("--scrape-interval", "2s", "--scrape-timeout", "900ms", NULL) == DBK_FLAGS_OK);
	CHECK(F.scrape_interval_ms == 2000 && F.scrape_timeout_ms == 900);
	CHECK(parse("--scrape-interval", "1m", NULL) == DBK_FLAGS_OK);
	CHECK(F.scrape_interval_ms == 60000);
	CHECK(parse("--print-config", "/x", "--f", NULL) == DBK_FLAGS_OK);
	CHECK(F.force);
	/* argparse's words for a bad choice. */
	CHECK_ERR("argument --policy: invalid choice: 'lc' (choose from 'reference', 'ttft', "
	          "'p2ttft')",
	          "--policy", "lc");
	CHECK_ERR("ambiguous option: --scrape could match --scrape-interval, --scrape-timeout",
	          "--scrape", "1");
	CHECK_ERR("argument --scrape-interval: invalid duration value: '2h' (500ms, 2s, 1m; a bare "
	          "number is ms)",
	          "--scrape-interval", "2h");
	CHECK_ERR("argument --scrape-timeout: 601000 is not from 10 to 600000 (milliseconds)",
	          "--scrape-timeout", "601s");
	CHECK_ERR("argument --scrape-interval: 0 is not from 10 to 3600000 (milliseconds)",
	          "--scrape-interval", "0");
	CHECK_ERR("argument --scrape-timeout: 600001 is not from 10 to 600000 (milliseconds)",
	          "--scrape-timeout", "600001");
	CHECK_ERR("argument --scrape-interval/--scrape-timeout: --policy reference scrapes "
	          "nothing (ttft and p2ttft do)",
	          "--policy", "reference", "--scrape-interval", "100");
	CHECK_ERR("argument --force: only with --print-config", "--force");
}

/* The reference's README examples. */
static void test_reference_examples(void)
{
	CHECK(parse("--host", "0.0.0.0", "--port", "8000", "--server-hosts", "127.0.0.1",
	            "127.0.0.1", "--server-ports", "8100", "8101", NULL) == DBK_FLAGS_OK);
	CHECK(strcmp(F.host, "0.0.0.0") == 0);
	CHECK_EQ_U(F.nhosts, 2);
	CHECK_EQ_U(F.server_ports[1], 8101);
	CHECK(!F.dynamic);

	CHECK(parse("--host", "0.0.0.0", "--port", "8000", "--server-hosts", "127.0.0.1",
	            "127.0.0.1", "127.0.0.1", "127.0.0.1", "--server-ports", "8100", "8101", "8102",
	            "8103", "--enable-dynamic-bucket", "--server-group-threshold", "32768",
	            NULL) == DBK_FLAGS_OK);
	CHECK_EQ_U(F.nhosts, 4);
	CHECK_EQ_U(F.nports, 4);
	CHECK_EQ_U(F.server_ports[0], 8100);
	CHECK_EQ_U(F.server_ports[3], 8103);
	CHECK(F.dynamic);
	CHECK_EQ_U(F.threshold, 32768);
}

static void test_forms(void)
{
	CHECK(parse("--port=9000", NULL) == DBK_FLAGS_OK);
	CHECK_EQ_U(F.port, 9000);
	/* int(): whitespace, sign, underscores between digits, leading zeros. */
	CHECK(parse("--port", " 8_000 ", NULL) == DBK_FLAGS_OK);
	CHECK_EQ_U(F.port, 8000);
	CHECK(parse("--port", "+7", NULL) == DBK_FLAGS_OK);
	CHECK_EQ_U(F.port, 7);
	CHECK(parse("--port", "007", NULL) == DBK_FLAGS_OK);
	CHECK_EQ_U(F.port, 7);
	/* Abbreviations, as argparse takes them. */
	CHECK(parse("--ho", "a", "--po", "1", "--en", "--server-h", "x", "y", "--server-p", "1",
	            "2", NULL) == DBK_FLAGS_OK);
	CHECK(strcmp(F.host, "a") == 0);
	CHECK_EQ_U(F.port, 1);
	CHECK(F.dynamic);
	/* --p is --port in the reference; our --print-config does not
	 * change that. */
	CHECK(parse("--p", "2", NULL) == DBK_FLAGS_OK);
	CHECK_EQ_U(F.port, 2);
	CHECK(!F.print_config);
	CHECK(parse("--pr", "/x", "--ru", "/y", "--ag", "/a", "--hap", "/h", NULL) == DBK_FLAGS_OK);
	CHECK(strcmp(F.print_config, "/x") == 0);
	CHECK(strcmp(F.runtime_dir, "/y") == 0);
	CHECK(strcmp(F.agent, "/a") == 0);
	CHECK(strcmp(F.haproxy, "/h") == 0);
	/* Repeated lists: the last one wins. */
	CHECK(parse("--server-hosts", "a", "b", "--server-hosts", "c", NULL) == DBK_FLAGS_OK);
	CHECK_EQ_U(F.nhosts, 1);
	CHECK(strcmp(F.server_hosts[0], "c") == 0);
	/* A negative number is a value, not an option. */
	CHECK(parse("--max-retries", "-3", NULL) == DBK_FLAGS_OK);
	CHECK(F.max_retries == -3);
	CHECK(parse("--max-retries", "0", NULL) == DBK_FLAGS_OK);
	/* float(): exponents, inf, nan, underscores, bare dots. */
	CHECK(parse("--retry-delay", "1e-3", NULL) == DBK_FLAGS_OK);
	CHECK(F.retry_delay == 0.001);
	CHECK(parse("--retry-delay", "1_0.5", NULL) == DBK_FLAGS_OK);
	CHECK(F.retry_delay == 10.5);
	CHECK(parse("--retry-delay", "inf", NULL) == DBK_FLAGS_OK);
	CHECK(isinf(F.retry_delay));
	CHECK(parse("--retry-delay", "nan", NULL) == DBK_FLAGS_OK);
	CHECK(isnan(F.retry_delay));
	CHECK(parse("--retry-delay", "1.5e+3", NULL) == DBK_FLAGS_OK);
	CHECK(F.retry_delay == 1500.0);
	CHECK(parse("--retry-delay", ".5", NULL) == DBK_FLAGS_OK);
	CHECK(F.retry_delay == 0.5);
	CHECK(parse("--retry-delay", "5.", NULL) == DBK_FLAGS_OK);
	CHECK(F.retry_delay == 5.0);
	/* IPv6, zones, names; "" is every address for --host. */
	CHECK(parse("--host", "", "--server-hosts", "::1", "fe80::1%eth0", "[::1]",
	            "vllm-0.example.com", "--server-ports", "1", "2", "3", "4",
	            NULL) == DBK_FLAGS_OK);
	CHECK(F.host[0] == '\0');
}

static void test_help(void)
{
	CHECK(parse("-h", NULL) == DBK_FLAGS_HELP);
	CHECK(parse("--help", NULL) == DBK_FLAGS_HELP);
	CHECK(parse("--he", NULL) == DBK_FLAGS_HELP);
	CHECK(parse("-hh", NULL) == DBK_FLAGS_HELP);
	CHECK(parse("--port", "1", "-h", NULL) == DBK_FLAGS_HELP);
	/* Help is taken before a later bad value is converted... */
	CHECK(parse("-h", "--port", "x", NULL) == DBK_FLAGS_HELP);
	/* ... and unknown arguments are reported only at the end. */
	CHECK(parse("--zz", "-h", NULL) == DBK_FLAGS_HELP);
	CHECK_ERR("argument --port: invalid int value: 'x'", "--port", "x", "-h");
	/* --version is argparse's version action: at once, like -h. */
	CHECK(parse("--version", NULL) == DBK_FLAGS_VERSION);
	CHECK(parse("--vers", "--port", "x", NULL) == DBK_FLAGS_VERSION);
	CHECK(parse("--port", "1", "--version", "-h", NULL) == DBK_FLAGS_VERSION);
	CHECK(parse("-h", "--version", NULL) == DBK_FLAGS_HELP);
	CHECK_ERR("argument --version: ignored explicit argument 'x'", "--version=x");
}

/* Messages, word for word as argparse prints them after "dbucket: error: ". */
static void test_argparse_errors(void)
{
	CHECK_ERR("unrecognized arguments: --", "--");
	CHECK_ERR("unrecognized arguments: -- x", "--", "x");
	CHECK_ERR("unrecognized arguments: x y", "x", "y");
	CHECK_ERR("argument --port: expected one argument", "--port", "--", "8000");
	CHECK_ERR("argument --port: expected one argument", "--port");
	CHECK_ERR("argument --port: invalid int value: '8__000'", "--port", "8__000");
	CHECK_ERR("argument --port: invalid int value: '0x10'", "--port", "0x10");
	CHECK_ERR("argument --port: invalid int value: ''", "--port", "");
	CHECK_ERR("argument --port: invalid int value: 'a b'", "--port", "a b");
	CHECK_ERR("argument --port: invalid int value: \"a'b\"", "--port", "a'b");
	CHECK_ERR("argument --port: invalid int value: 'a\"b\\''", "--port", "a\"b'");
	CHECK_ERR("ambiguous option: --h could match --help, --host", "--h");
	CHECK_ERR("ambiguous option: --server could match --server-hosts, --server-ports, "
	          "--server-group-threshold",
	          "--server", "a");
	CHECK_ERR("ambiguous option: --max could match --max-retries, --max-request-tokens",
	          "--max", "1");
	CHECK_ERR("ambiguous option: --=5 could match --help, --port, --host, --server-hosts, "
	          "--server-ports, --max-retries, --retry-delay, --server-group-threshold, "
	          "--max-request-tokens, --enable-dynamic-bucket",
	          "--=5");
	/* Classification comes first: an ambiguous option after a bad value
	 * is what gets reported. */
	CHECK_ERR("ambiguous option: --h could match --help, --host", "--port", "x", "--h");
	CHECK_ERR("argument --enable-dynamic-bucket: ignored explicit argument '1'",
	          "--enable-dynamic-bucket=1");
	CHECK_ERR("argument --enable-dynamic-bucket: ignored explicit argument ''",
	          "--enable-dynamic-bucket=");
	CHECK_ERR("argument -h/--help: ignored explicit argument 'x'", "-hx");
	CHECK_ERR("unrecognized arguments: -x", "-x");
	CHECK_ERR("unrecognized arguments: -", "-");
	CHECK_ERR("unrecognized arguments: ---x", "---x");
	CHECK_ERR("unrecognized arguments: --foo 1", "--foo", "1");
	CHECK_ERR("unrecognized arguments: --foo=1", "--foo=1");
	CHECK_ERR("argument --server-hosts: expected at least one argument", "--server-hosts");
	CHECK_ERR("argument --server-hosts: expected at least one argument", "--server-hosts",
	          "--port", "1");
	CHECK_ERR("unrecognized arguments: b", "--server-hosts=a", "b");
	CHECK_ERR("argument --server-ports: invalid int value: 'x'", "--server-ports", "1", "x");
	CHECK_ERR("argument --retry-delay: invalid float value: '1_'", "--retry-delay", "1_");
	CHECK_ERR("argument --retry-delay: invalid float value: 'x'", "--retry-delay", "x");
	CHECK_ERR("argument --retry-delay: invalid float value: '1e'", "--retry-delay", "1e");
	/* "-Infinity" and "-1e3" look like options to argparse, not numbers. */
	CHECK_ERR("argument --retry-delay: expected one argument", "--retry-delay", "-Infinity");
	CHECK_ERR("argument --host: expected one argument", "--host", "-1e3");
	CHECK_ERR("argument --port: invalid int value: 'x'", "--port", "x", "--zz");
	CHECK_ERR("argument --port: invalid int value: 'x'", "--zz", "--port", "x");
	CHECK_ERR("argument --max-retries: invalid int value: '1.5'", "--max-retries", "1.5");
	CHECK_ERR("argument --server-group-threshold: invalid int value: '1e3'",
	          "--server-group-threshold", "1e3");
}

/* What argparse lets through and the reference refuses after it. */
static void test_reference_checks(void)
{
	CHECK_ERR("Number of dp hosts must match number of dp ports (2 --server-hosts, "
	          "1 --server-ports)",
	          "--server-hosts", "a", "b");
	CHECK_ERR("Number of dp hosts must match number of dp ports (1 --server-hosts, "
	          "3 --server-ports)",
	          "--server-ports", "1", "2", "3");
	CHECK_ERR_HAS("Number of dp hosts must match number of dp ports", "--server-hosts", "a",
	              "b", "c", "--server-ports", "1", "2");
	/* The count is checked before anything of ours. */
	CHECK_ERR_HAS("Number of dp hosts", "--server-hosts", "a b", "--server-ports", "0", "1");
	/* argparse takes these; the reference would fail at start-up. */
	CHECK(parse("--host", "-x y", NULL) == DBK_FLAGS_ERROR);
	CHECK(parse("--server-ports", "-1", NULL) == DBK_FLAGS_ERROR);
	CHECK_ERR("argument --enable-dynamic-bucket: the short and the long group need at "
	          "least 2 servers, got 1",
	          "--enable-dynamic-bucket");
}

/* What dbucket-spoa or HAProxy would refuse, refused here first. */
static void test_our_checks(void)
{
	CHECK_ERR("argument --port: 0 is not a TCP port (1 to 65535)", "--port", "0");
	CHECK_ERR("argument --port: 65536 is not a TCP port (1 to 65535)", "--port", "65536");
	CHECK_ERR_HAS("is not a TCP port", "--port", "99999999999999999999");
	CHECK_ERR_HAS("is not from 1 to", "--max-request-tokens", "99999999999999999999999");
	CHECK_ERR("argument --server-ports: -1 is not a TCP port (1 to 65535)", "--server-ports",
	          "-1");
	CHECK_ERR("argument --server-hosts: invalid host 'a b' (a name, an IPv4 or an IPv6 "
	          "address)",
	          "--server-hosts", "a b");
	CHECK_ERR_HAS("invalid host", "--server-hosts", "");
	CHECK_ERR_HAS("invalid host", "--server-hosts", "a\"b");
	CHECK_ERR_HAS("invalid host", "--server-hosts", "${HOME}");
	CHECK_ERR_HAS("invalid host", "--server-hosts", "a#b");
	CHECK_ERR_HAS("argument --host: invalid host '-x y'", "--host", "-x y");
	CHECK_ERR_HAS("invalid host", "--host", "a\nb");
	CHECK_ERR("argument --server-group-threshold: 0 is not from 1 to 1099511627776",
	          "--server-group-threshold", "0");
	CHECK_ERR("argument --max-request-tokens: -5 is not from 1 to 1099511627776",
	          "--max-request-tokens", "-5");
	CHECK_ERR("argument --server-group-threshold: 131072 must be below "
	          "--max-request-tokens (131072)",
	          "--server-group-threshold", "131072");
	CHECK_ERR("argument --max-retries: at most 1000, got 1001", "--max-retries", "1001");
	CHECK_ERR("argument --runtime-dir: expected a path, got ''", "--runtime-dir", "");
	CHECK_ERR("argument --print-config: expected a path, got ''", "--print-config=");
	/* Two servers are enough for two groups. */
	CHECK(parse("--enable-dynamic-bucket", "--server-hosts", "a", "b", "--server-ports", "1",
	            "2", NULL) == DBK_FLAGS_OK);
}

static void test_many_servers(void)
{
	static char *argv[2 * 4097 + 8];
	static char bufs[2 * 4097][16];
	int argc = 0;
	unsigned n = 4097;

	dbk_flags_free(&F);
	argv[argc++] = "dbucket";
	argv[argc++] = "--server-hosts";
	for (unsigned i = 0; i < n; i++)
		argv[argc++] = "h";
	argv[argc++] = "--server-ports";
	for (unsigned i = 0; i < n; i++) {
		snprintf(bufs[i], sizeof(bufs[i]), "%u", 1000 + i);
		argv[argc++] = bufs[i];
	}
	argv[argc] = NULL;
	CHECK(dbk_flags_parse(&F, argc, argv, ERR, sizeof(ERR)) == DBK_FLAGS_ERROR);
	CHECK(strstr(ERR, "at most 4096 servers") != NULL);
	/* 4096 is fine. */
	dbk_flags_free(&F);
	argv[2 + 4096] = "--server-ports";
	for (unsigned i = 0; i < 4096; i++)
		argv[2 + 4096 + 1 + i] = bufs[i];
	argc = 2 + 4096 + 1 + 4096;
	argv[argc] = NULL;
	CHECK(dbk_flags_parse(&F, argc, argv, ERR, sizeof(ERR)) == DBK_FLAGS_OK);
	CHECK_EQ_U(F.nhosts, 4096);
	CHECK_EQ_U(F.server_ports[4095], 1000 + 4095);
}

static void test_retries_mapping(void)
{
	struct {
		const char *arg;
		unsigned want;
	} cases[] = {
		{ "3", 2 }, { "1", 0 }, { "2", 1 }, { "0", 0 }, { "-4", 0 }, { "1000", 999 },
	};
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		CHECK(parse("--max-retries", cases[i].arg, NULL) == DBK_FLAGS_OK);
		CHECK_EQ_U(dbk_flags_haproxy_retries(&F), cases[i].want);
	}
}

static void test_py_numbers(void)
{
	long long v = 0;
	double d = 0;

	CHECK(dbk_py_int("12", &v) == 0 && v == 12);
	CHECK(dbk_py_int("\t-1_2\n", &v) == 0 && v == -12);
	CHECK(dbk_py_int("9223372036854775807", &v) == 0 && v == 9223372036854775807LL);
	CHECK(dbk_py_int("9223372036854775808", &v) == 0 && v == 9223372036854775807LL);
	CHECK(dbk_py_int("-99999999999999999999", &v) == 0 && v == -9223372036854775807LL - 1);
	CHECK(dbk_py_int("_1", &v) < 0);
	CHECK(dbk_py_int("1_", &v) < 0);
	CHECK(dbk_py_int("+", &v) < 0);
	CHECK(dbk_py_int("1 2", &v) < 0);
	CHECK(dbk_py_int("", &v) < 0);
	CHECK(dbk_py_int("  ", &v) < 0);
	CHECK(dbk_py_float("  -2.5e1 ", &d) == 0 && d == -25.0);
	CHECK(dbk_py_float("INFINITY", &d) == 0 && isinf(d));
	CHECK(dbk_py_float("-inf", &d) == 0 && isinf(d) && d < 0);
	CHECK(dbk_py_float("NaN", &d) == 0 && isnan(d));
	CHECK(dbk_py_float("1e400", &d) == 0 && isinf(d));
	CHECK(dbk_py_float(".", &d) < 0);
	CHECK(dbk_py_float("e5", &d) < 0);
	CHECK(dbk_py_float("1._5", &d) < 0);
	CHECK(dbk_py_float("0x1p3", &d) < 0);
	CHECK(dbk_py_float("infinit", &d) < 0);
	CHECK(dbk_py_float("1e+", &d) < 0);
}

static void test_py_repr(void)
{
	char r[64];

	dbk_py_repr("abc", r, sizeof(r));
	CHECK(strcmp(r, "'abc'") == 0);
	dbk_py_repr("it's", r, sizeof(r));
	CHECK(strcmp(r, "\"it's\"") == 0);
	dbk_py_repr("a\\b\n\x01", r, sizeof(r));
	CHECK(strcmp(r, "'a\\\\b\\n\\x01'") == 0);
	/* Long values are cut, never overflow. */
	char big[300];
	memset(big, 'x', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	dbk_py_repr(big, r, sizeof(r));
	CHECK(strlen(r) < sizeof(r));
	CHECK(strstr(r, "...") != NULL);
}

static void test_help_text(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *out = open_memstream(&buf, &len);

	dbk_flags_help(out);
	fclose(out);
	/* Every flag, and every default of the reference. */
	const char *want[] = { "--host HOST",
		               "--port PORT",
		               "--server-hosts",
		               "--server-ports",
		               "--enable-dynamic-bucket",
		               "--server-group-threshold",
		               "--max-request-tokens",
		               "--max-retries",
		               "--retry-delay",
		               "--print-config DIR",
		               "--runtime-dir DIR",
		               "--agent PATH",
		               "--haproxy PATH",
		               "--policy NAME",
		               "(ttft)",
		               "--force",
		               "--scrape-interval TIME",
		               "--scrape-timeout TIME",
		               "--trusted-class-src ADDR",
		               "a bare number is ms",
		               "(8000)",
		               "(localhost",
		               "(8001)",
		               "(32768)",
		               "(131072)",
		               "(3)",
		               "(0.001)" };
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!strstr(buf, want[i])) {
			dbk_check_cur_failed++;
			fprintf(stderr, "  help lacks %s\n", want[i]);
		}
	/* Lines fit a terminal. */
	for (char *line = buf, *nl; line && *line; line = nl ? nl + 1 : NULL) {
		nl = strchr(line, '\n');
		size_t n = nl ? (size_t)(nl - line) : strlen(line);
		CHECK(n <= 79);
	}
	free(buf);
}

/* --layout and --server-models: a model per server, checked before
 * anything starts; the models' backends as HAProxy and the agent take
 * them. */
static void test_layout(void)
{
	const char *models[DBK_LAUNCH_MAX_MODELS];
	char name[DBK_LAUNCH_MODEL_MAX + 1];

	CHECK(parse(NULL) == DBK_FLAGS_OK);
	CHECK(strcmp(F.layout, "shared") == 0 && !F.per_model);
	CHECK_EQ_U(dbk_flags_models(&F, models), 0);
	CHECK(parse("--server-hosts", "a", "b", "c", "--server-ports", "1", "2", "3", "--layout",
	            "per-model", "--server-models", "m/x", "n", "m/x", NULL) == DBK_FLAGS_OK);
	CHECK(F.per_model && F.nmodels == 3);
	CHECK(dbk_flags_scrapes(&F));
	CHECK_EQ_U(dbk_flags_models(&F, models), 2);
	CHECK(strcmp(models[0], "m/x") == 0 && strcmp(models[1], "n") == 0);
	dbk_flags_backend_name(models[0], name, sizeof(name));
	CHECK(strcmp(name, "m-x") == 0);
	/* --policy reference scrapes for the models' 404. */
	CHECK(parse("--layout", "per-model", "--server-models", "m", "--policy", "reference",
	            "--scrape-interval", "1s", NULL) == DBK_FLAGS_OK);

	CHECK_ERR("argument --layout: invalid choice: 'permodel' (choose from 'shared', "
	          "'per-model')",
	          "--layout", "permodel");
	CHECK_ERR("argument --layout: per-model needs each server's model: give --server-models, "
	          "one per --server-hosts, in order",
	          "--layout", "per-model");
	CHECK_ERR("argument --server-models: only with --layout per-model (the shared layout reads "
	          "each server's models from its /v1/models)",
	          "--server-models", "m");
	CHECK_ERR("argument --server-models: 1 model for 2 servers: one per --server-hosts, in "
	          "order (a server with no model would be in no backend)",
	          "--server-hosts", "a", "b", "--server-ports", "1", "2", "--layout", "per-model",
	          "--server-models", "m");
	CHECK_ERR_HAS("invalid model 'a#b'", "--layout", "per-model", "--server-models", "a#b");
	CHECK_ERR_HAS("model 'vllm' would be HAProxy backend 'vllm'", "--layout", "per-model",
	              "--server-models", "vllm");
	CHECK_ERR_HAS("models 'a/b' and 'a-b'", "--server-hosts", "a", "b", "--server-ports", "1",
	              "2", "--layout", "per-model", "--server-models", "a/b", "a-b");
	CHECK_ERR_HAS("model 'n' has 1 server", "--server-hosts", "a", "b", "c", "--server-ports",
	              "1", "2", "3", "--layout", "per-model", "--server-models", "m", "m", "n",
	              "--enable-dynamic-bucket");
}

/* --trusted-class-src: addresses and networks HAProxy's src matches,
 * checked before anything starts. */
static void test_trusted_class_src(void)
{
	CHECK(parse(NULL) == DBK_FLAGS_OK);
	CHECK(F.ntrusted == 0);
	CHECK(parse("--trusted-class-src", "127.0.0.2", "10.0.0.0/8", "fd00::/8", "::1", NULL) ==
	      DBK_FLAGS_OK);
	CHECK(F.ntrusted == 4 && strcmp(F.trusted_src[1], "10.0.0.0/8") == 0);
	CHECK(dbk_flags_network_ok("0.0.0.0/0") && dbk_flags_network_ok("::/128"));
	const char *bad[] = {
		"",   "gateway", "10.0.0.0/33", "10.0.0.0/",   "10.0.0.0/+8", "10.0.0.0/ 8",
		"/8", "::1/129", "10.0.0/8",    "1.2.3.4/0008"
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		if (dbk_flags_network_ok(bad[i])) {
			dbk_check_cur_failed++;
			fprintf(stderr, "  '%s' taken as a network\n", bad[i]);
		}
	CHECK_ERR("argument --trusted-class-src: invalid address 'gw' (an IPv4 or IPv6 address, "
	          "or a network such as 10.0.0.0/8)",
	          "--trusted-class-src", "127.0.0.1", "gw");
	CHECK_ERR("argument --trusted-class-src: expected at least one argument",
	          "--trusted-class-src");
}

int main(void)
{
	RUN(test_defaults);
	RUN(test_policy);
	RUN(test_reference_examples);
	RUN(test_forms);
	RUN(test_help);
	RUN(test_argparse_errors);
	RUN(test_reference_checks);
	RUN(test_our_checks);
	RUN(test_many_servers);
	RUN(test_retries_mapping);
	RUN(test_py_numbers);
	RUN(test_py_repr);
	RUN(test_help_text);
	RUN(test_layout);
	RUN(test_trusted_class_src);
	dbk_flags_free(&F);
	return CHECK_DONE();
}
