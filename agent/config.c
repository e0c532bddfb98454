#include "config.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/numparse.h"
#include "settings.h"

enum {
	OPT_DYNAMIC = 256,
	OPT_THRESHOLD,
	OPT_MAX_TOKENS,
	OPT_LISTEN,
	OPT_MAX_FRAME,
	OPT_MAX_CONNS,
	OPT_MAX_LEASES,
	OPT_LOG_LEVEL,
	OPT_COMPLETION_LISTEN,
	OPT_ADMIN_LISTEN,
	OPT_LEASE_TTL,
	OPT_HAPROXY_SOCKET,
	OPT_BACKEND,
	OPT_POLL,
	OPT_USER,
	OPT_GROUP,
	OPT_CONFIG,
	OPT_RECLAIM_AFTER,
	OPT_MAX_CONNS_PER_PEER,
	OPT_IDLE_TIMEOUT,
	OPT_POLICY,
	OPT_SCRAPE,
	OPT_SCRAPE_INTERVAL,
	OPT_SCRAPE_TIMEOUT,
	OPT_ENGINE_SPEED,
};

static const struct option long_opts[] = {
	{ "enable-dynamic-bucket",  no_argument,       NULL, OPT_DYNAMIC },
	{ "server-group-threshold", required_argument, NULL, OPT_THRESHOLD },
	{ "max-request-tokens",     required_argument, NULL, OPT_MAX_TOKENS },
	{ "listen",                 required_argument, NULL, OPT_LISTEN },
	{ "max-frame-size",         required_argument, NULL, OPT_MAX_FRAME },
	{ "max-connections",        required_argument, NULL, OPT_MAX_CONNS },
	{ "max-connections-per-peer", required_argument, NULL, OPT_MAX_CONNS_PER_PEER },
	{ "idle-timeout",           required_argument, NULL, OPT_IDLE_TIMEOUT },
	{ "max-leases",             required_argument, NULL, OPT_MAX_LEASES },
	{ "log-level",              required_argument, NULL, OPT_LOG_LEVEL },
	{ "completion-listen",      required_argument, NULL, OPT_COMPLETION_LISTEN },
	{ "admin-listen",           required_argument, NULL, OPT_ADMIN_LISTEN },
	{ "lease-ttl",              required_argument, NULL, OPT_LEASE_TTL },
	{ "haproxy-socket",         required_argument, NULL, OPT_HAPROXY_SOCKET },
	{ "backend",                required_argument, NULL, OPT_BACKEND },
	{ "poll-interval",          required_argument, NULL, OPT_POLL },
	{ "reclaim-after",          required_argument, NULL, OPT_RECLAIM_AFTER },
	{ "config",                 required_argument, NULL, OPT_CONFIG },
	{ "user",                   required_argument, NULL, OPT_USER },
	{ "policy",                 required_argument, NULL, OPT_POLICY },
	{ "scrape",                 required_argument, NULL, OPT_SCRAPE },
	{ "scrape-interval",        required_argument, NULL, OPT_SCRAPE_INTERVAL },
	{ "scrape-timeout",         required_argument, NULL, OPT_SCRAPE_TIMEOUT },
	{ "engine-speed",           required_argument, NULL, OPT_ENGINE_SPEED },
	{ "group",                  required_argument, NULL, OPT_GROUP },
	{ "help",                   no_argument,       NULL, 'h' },
	{ "version",                no_argument,       NULL, 'V' },
	{ NULL, 0, NULL, 0 },
};

void dbk_config_usage(FILE *out, const char *prog)
{
	fprintf(out,
"Usage: %s [OPTIONS] SERVER...\n"
"       %s [OPTIONS] --haproxy-socket ADDR [--backend NAME]\n"
"\n"
"HAProxy SPOE agent that picks a vLLM server for each request by its length\n"
"and the load in flight. SERVER... are the backend's server names, in order,\n"
"exactly as haproxy.cfg spells them; with --haproxy-socket and no names the\n"
"agent reads them from HAProxy. It answers with the chosen name in\n"
"txn.<var-prefix>.server.\n"
"\n"
"Balancing (same meaning and defaults as the reference proxy):\n"
"  --enable-dynamic-bucket       split servers into a short and a long group\n"
"                                (needs at least 2 servers)\n"
"  --server-group-threshold N    tokens where the long bucket starts (%d)\n"
"  --max-request-tokens N        upper bound of the long bucket (%d)\n"
"  --config FILE                 live settings (key = value lines: see\n"
"                                dbucket-spoa(8)); reread on SIGHUP, and\n"
"                                also set through the admin endpoint's /config\n"
"  --policy NAME                 reference (default: the algorithm above,\n"
"                                decision for decision) or ttft: the server\n"
"                                with the earliest predicted first token, from\n"
"                                length, prefix, queue, KV use and context limit\n"
"  --engine-speed X              ttft: the servers run X times as fast as its\n"
"                                engine model (an 8B model on an H100; 1); for\n"
"                                other GPUs, and stubs run with --time-scale X\n"
"\n"
"Servers' own numbers (vLLM's /metrics and /v1/models; the ttft policy\n"
"routes on them, every policy reports them):\n"
"  --scrape NAME=URL             scrape server NAME at base URL\n"
"                                (http://HOST:PORT); repeatable. With --policy\n"
"                                ttft and --haproxy-socket, servers not named\n"
"                                are scraped where HAProxy reaches them\n"
"  --scrape-interval MS          /metrics every MS (%d); /v1/models every 10 s\n"
"  --scrape-timeout MS           a scrape not answered by then failed (%d)\n"
"\n"
"Agent:\n"
"  --listen ADDR                 where HAProxy connects; repeatable.\n"
"                                HOST:PORT, [IPV6]:PORT or unix:PATH\n"
"                                (default %s)\n"
"  --completion-listen ADDR      where HAProxy's completion ring connects\n"
"                                (same forms, repeatable), or udp@HOST:PORT\n"
"                                for lines sent by a plain UDP log target;\n"
"                                default %s and udp@ the same,\n"
"                                \"none\" to disable\n"
"  --admin-listen ADDR           HTTP endpoint with /metrics and /state\n"
"                                (default %s, \"none\" to disable)\n"
"  --lease-ttl SECONDS           a request whose completion never arrives\n"
"                                is released after this long (%d)\n"
"\n"
"HAProxy's runtime API (optional, recommended):\n"
"  --haproxy-socket ADDR         its stats socket: unix:PATH, /PATH or\n"
"                                HOST:PORT (needs 'level operator' or more)\n"
"  --backend NAME                the vLLM backend (%s)\n"
"  --poll-interval MS            how often to read server states and sessions:\n"
"                                DOWN, MAINT and DRAIN servers are not chosen,\n"
"                                leaked leases are reclaimed (%d)\n"
"  --reclaim-after SECONDS       a lease is taken for leaked only when older\n"
"                                than this, and in excess of HAProxy's\n"
"                                sessions for 3 polls (%d)\n"
"\n"
"Limits:\n"
"  --max-frame-size N            largest SPOP frame, at most what HAProxy\n"
"                                announces is used (%d)\n"
"  --max-connections N           concurrent HAProxy connections (%d; lowered\n"
"                                to what the descriptor limit allows)\n"
"  --max-connections-per-peer N  of which one peer address may hold at most\n"
"                                N (half of --max-connections)\n"
"  --idle-timeout SECONDS        an SPOP connection silent this long after\n"
"                                HELLO is closed; keep it above the SPOE\n"
"                                'timeout idle' (%d)\n"
"  --max-leases N                requests in flight before the agent stops\n"
"                                answering and HAProxy balances alone (%d)\n"
"  --log-level LEVEL             debug, info, warn or error (info)\n"
"  --user USER, --group GROUP    drop privileges to these once every socket\n"
"                                is bound (unix sockets are given to them)\n"
"  -h, --help                    this text\n"
"  -V, --version                 the version\n"
"\n"
"Logs go to stderr in logfmt. SIGTERM or SIGINT stops the agent cleanly.\n",
	        prog, prog, DBK_DEFAULT_THRESHOLD, DBK_DEFAULT_MAX_REQUEST_TOKENS,
	        DBK_DEFAULT_SCRAPE_INTERVAL_MS, DBK_DEFAULT_SCRAPE_TIMEOUT_MS,
	        DBK_DEFAULT_LISTEN, DBK_DEFAULT_COMPLETION_LISTEN, DBK_DEFAULT_ADMIN_LISTEN,
	        DBK_DEFAULT_LEASE_TTL_S, DBK_DEFAULT_BACKEND, DBK_DEFAULT_POLL_MS,
	        DBK_DEFAULT_RECLAIM_AFTER_S,
	        DBK_DEFAULT_MAX_FRAME, DBK_DEFAULT_MAX_CONNS, DBK_DEFAULT_IDLE_TIMEOUT_S,
	        DBK_DEFAULT_MAX_LEASES);
}

/* The settings are longs, in the grammar --config and /config share
 * (numparse.h). */
static int parse_long(const char *s, long min, long max, long *out)
{
	unsigned long long v;

	if (!dbk_parse_uint(s, (unsigned long long)min, (unsigned long long)max, &v))
		return -1;
	*out = (long)v;
	return 0;
}

/* HAProxy's rule for proxy and server names. */
static bool valid_server_name(const char *s)
{
	size_t n = strlen(s);

	if (n == 0 || n > DBK_MAX_SERVER_NAME)
		return false;
	for (size_t i = 0; i < n; i++) {
		char ch = s[i];
		if (!((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		      (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' ||
		      ch == '.' || ch == ':'))
			return false;
	}
	return true;
}

static const char *const policy_names[] = {
	[DBK_POLICY_REFERENCE] = "reference",
	[DBK_POLICY_TTFT] = "ttft",
};

const char *dbk_policy_name(enum dbk_policy_kind k)
{
	return (unsigned)k < sizeof(policy_names) / sizeof(policy_names[0]) ? policy_names[k] : "?";
}

/* NAME=URL with a server name and an http(s) URL of visible characters
 * that need no quoting in logs, JSON or Prometheus labels. */
static bool valid_scrape(const char *s)
{
	const char *eq = strchr(s, '=');
	char name[DBK_MAX_SERVER_NAME + 1];
	size_t nl = eq ? (size_t)(eq - s) : 0;

	if (!eq || nl == 0 || nl > DBK_MAX_SERVER_NAME)
		return false;
	memcpy(name, s, nl);
	name[nl] = '\0';
	if (!valid_server_name(name))
		return false;
	const char *u = eq + 1;
	size_t ul = strlen(u);
	if (ul > DBK_MAX_SCRAPE_URL ||
	    (strncmp(u, "http://", 7) != 0 && strncmp(u, "https://", 8) != 0) ||
	    ul == (u[4] == 's' ? 8u : 7u))
		return false;
	for (size_t i = 0; i < ul; i++)
		if (u[i] <= ' ' || u[i] > '~' || u[i] == '"' || u[i] == '\\')
			return false;
	return true;
}

const char *dbk_config_scrape_url(const struct dbk_config *c, const char *name)
{
	size_t nl = strlen(name);

	for (unsigned i = 0; i < c->nscrape; i++)
		if (strncmp(c->scrape[i], name, nl) == 0 && c->scrape[i][nl] == '=')
			return c->scrape[i] + nl + 1;
	return NULL;
}

#define FAIL(...) do { snprintf(err, errlen, __VA_ARGS__); return DBK_CONFIG_ERROR; } while (0)

enum dbk_config_result dbk_config_parse(struct dbk_config *c, int argc,
                                        char **argv, char *err, size_t errlen)
{
	long v;
	int opt;

	memset(c, 0, sizeof(*c));
	c->threshold = DBK_DEFAULT_THRESHOLD;
	c->max_request_tokens = DBK_DEFAULT_MAX_REQUEST_TOKENS;
	c->max_frame_size = DBK_DEFAULT_MAX_FRAME;
	c->max_connections = DBK_DEFAULT_MAX_CONNS;
	c->max_leases = DBK_DEFAULT_MAX_LEASES;
	c->idle_timeout_s = DBK_DEFAULT_IDLE_TIMEOUT_S;
	c->log_level = DBK_LOG_INFO;
	c->lease_ttl_s = DBK_DEFAULT_LEASE_TTL_S;
	c->backend = DBK_DEFAULT_BACKEND;
	c->poll_ms = DBK_DEFAULT_POLL_MS;
	c->reclaim_after_s = DBK_DEFAULT_RECLAIM_AFTER_S;
	c->scrape_interval_ms = DBK_DEFAULT_SCRAPE_INTERVAL_MS;
	c->scrape_timeout_ms = DBK_DEFAULT_SCRAPE_TIMEOUT_MS;
	c->engine_speed = 1.0;
	bool no_completions = false, no_admin = false;

	/* getopt keeps its cursor in globals; reset it so parsing can run
	 * more than once (unit tests). "+" stops at the first operand so
	 * that server names are never taken for options. */
	optind = 0;
	opterr = 0;
	while ((opt = getopt_long(argc, argv, "+:hV", long_opts, NULL)) != -1) {
		switch (opt) {
		case 'h':
			return DBK_CONFIG_HELP;
		case 'V':
			return DBK_CONFIG_VERSION;
		case OPT_DYNAMIC:
			c->dynamic = true;
			break;
		case OPT_THRESHOLD:
			if (parse_long(optarg, 1, (long)DBK_TUNE_MAX_TOKENS, &c->threshold))
				FAIL("--server-group-threshold wants a positive integer, got '%s'", optarg);
			break;
		case OPT_MAX_TOKENS:
			if (parse_long(optarg, 1, (long)DBK_TUNE_MAX_TOKENS, &c->max_request_tokens))
				FAIL("--max-request-tokens wants a positive integer, got '%s'", optarg);
			break;
		case OPT_LISTEN:
			if (c->nlisten == DBK_MAX_LISTEN)
				FAIL("at most %d --listen addresses", DBK_MAX_LISTEN);
			c->listen[c->nlisten++] = optarg;
			break;
		case OPT_COMPLETION_LISTEN:
			if (strcmp(optarg, "none") == 0) {
				no_completions = true;
				break;
			}
			if (c->ncompletion_listen == DBK_MAX_LISTEN)
				FAIL("at most %d --completion-listen addresses", DBK_MAX_LISTEN);
			c->completion_listen[c->ncompletion_listen++] = optarg;
			break;
		case OPT_ADMIN_LISTEN:
			if (strcmp(optarg, "none") == 0) {
				no_admin = true;
				break;
			}
			if (c->nadmin_listen == DBK_MAX_LISTEN)
				FAIL("at most %d --admin-listen addresses", DBK_MAX_LISTEN);
			c->admin_listen[c->nadmin_listen++] = optarg;
			break;
		case OPT_LEASE_TTL:
			if (parse_long(optarg, 1, 7 * 24 * 3600, &c->lease_ttl_s))
				FAIL("--lease-ttl wants seconds from 1 to 604800, got '%s'", optarg);
			break;
		case OPT_HAPROXY_SOCKET:
			c->haproxy_socket = optarg;
			break;
		case OPT_BACKEND:
			if (!valid_server_name(optarg))
				FAIL("invalid backend name '%s'", optarg);
			c->backend = optarg;
			break;
		case OPT_POLL:
			if (parse_long(optarg, 50, 3600 * 1000, &c->poll_ms))
				FAIL("--poll-interval wants milliseconds from 50 to 3600000, got '%s'", optarg);
			break;
		case OPT_RECLAIM_AFTER:
			if (parse_long(optarg, 0, 7 * 24 * 3600, &c->reclaim_after_s))
				FAIL("--reclaim-after wants seconds from 0 to 604800, got '%s'", optarg);
			break;
		case OPT_USER:
			c->user = optarg;
			break;
		case OPT_CONFIG:
			c->config_file = optarg;
			break;
		case OPT_GROUP:
			c->group = optarg;
			break;
		case OPT_MAX_FRAME:
			if (parse_long(optarg, DBK_MIN_FRAME, 16 * 1024 * 1024, &v))
				FAIL("--max-frame-size wants an integer from %d to %d, got '%s'",
				     DBK_MIN_FRAME, 16 * 1024 * 1024, optarg);
			c->max_frame_size = (uint32_t)v;
			break;
		case OPT_MAX_CONNS:
			if (parse_long(optarg, 1, 1000000, &v))
				FAIL("--max-connections wants an integer from 1 to 1000000, got '%s'", optarg);
			c->max_connections = (unsigned)v;
			break;
		case OPT_MAX_CONNS_PER_PEER:
			if (parse_long(optarg, 1, 1000000, &v))
				FAIL("--max-connections-per-peer wants an integer from 1 to 1000000, got '%s'",
				     optarg);
			c->max_connections_per_peer = (unsigned)v;
			break;
		case OPT_IDLE_TIMEOUT:
			if (parse_long(optarg, 1, 7 * 24 * 3600, &c->idle_timeout_s))
				FAIL("--idle-timeout wants seconds from 1 to 604800, got '%s'", optarg);
			break;
		case OPT_MAX_LEASES:
			if (parse_long(optarg, 1, (long)DBK_TUNE_MAX_LEASES, &v))
				FAIL("--max-leases wants an integer from 1 to 100000000, got '%s'", optarg);
			c->max_leases = (size_t)v;
			break;
		case OPT_POLICY:
			if (strcmp(optarg, "reference") == 0)
				c->policy = DBK_POLICY_REFERENCE;
			else if (strcmp(optarg, "ttft") == 0)
				c->policy = DBK_POLICY_TTFT;
			else
				FAIL("--policy wants reference or ttft, got '%s'", optarg);
			break;
		case OPT_SCRAPE:
			if (!valid_scrape(optarg))
				FAIL("--scrape wants NAME=http://HOST:PORT, got '%s'", optarg);
			if (c->nscrape == DBK_BAL_MAX_SERVERS)
				FAIL("at most %d --scrape", DBK_BAL_MAX_SERVERS);
			for (unsigned j = 0; j < c->nscrape; j++)
				if (strncmp(c->scrape[j], optarg,
				            (size_t)(strchr(optarg, '=') - optarg) + 1) == 0)
					FAIL("--scrape names '%.*s' twice",
					     (int)(strchr(optarg, '=') - optarg), optarg);
			c->scrape[c->nscrape++] = optarg;
			break;
		case OPT_SCRAPE_INTERVAL:
			if (parse_long(optarg, 10, 3600 * 1000, &c->scrape_interval_ms))
				FAIL("--scrape-interval wants milliseconds from 10 to 3600000, got '%s'",
				     optarg);
			break;
		case OPT_SCRAPE_TIMEOUT:
			if (parse_long(optarg, 10, 600 * 1000, &c->scrape_timeout_ms))
				FAIL("--scrape-timeout wants milliseconds from 10 to 600000, got '%s'",
				     optarg);
			break;
		case OPT_ENGINE_SPEED:
			if (!dbk_parse_decimal(optarg, 0.001, 1000, &c->engine_speed))
				FAIL("--engine-speed wants a number from 0.001 to 1000, got '%s'", optarg);
			break;
		case OPT_LOG_LEVEL:
			c->log_level = dbk_log_level_parse(optarg);
			if (c->log_level < 0)
				FAIL("--log-level wants debug, info, warn or error, got '%s'", optarg);
			break;
		case ':':
			FAIL("option '%s' needs a value", argv[optind - 1]);
		default:
			FAIL("unknown option '%s' (see --help)", argv[optind - 1]);
		}
	}

	for (int i = optind; i < argc; i++) {
		if (argv[i][0] == '-')
			FAIL("option '%s' after the server names; put options first", argv[i]);
		if (!valid_server_name(argv[i]))
			FAIL("invalid server name '%s' (1 to %d of A-Z a-z 0-9 - _ . :)",
			     argv[i], DBK_MAX_SERVER_NAME);
		if (c->nservers == DBK_BAL_MAX_SERVERS)
			FAIL("at most %d servers", DBK_BAL_MAX_SERVERS);
		for (unsigned j = 0; j < c->nservers; j++)
			if (strcmp(c->servers[j], argv[i]) == 0)
				FAIL("server '%s' named twice", argv[i]);
		c->servers[c->nservers++] = argv[i];
	}
	if (c->nservers == 0 && !c->haproxy_socket)
		FAIL("no servers: name the backend's servers, in order, or give "
		     "--haproxy-socket to read them from HAProxy (see --help)");
	if (c->nlisten == 0)
		c->listen[c->nlisten++] = DBK_DEFAULT_LISTEN;
	if (no_completions)
		c->ncompletion_listen = 0;
	else if (c->ncompletion_listen == 0) {
		/* Both of the sample's paths (haproxy/README.md). */
		c->completion_listen[c->ncompletion_listen++] = DBK_DEFAULT_COMPLETION_LISTEN;
		c->completion_listen[c->ncompletion_listen++] = "udp@" DBK_DEFAULT_COMPLETION_LISTEN;
	}
	if (no_admin)
		c->nadmin_listen = 0;
	else if (c->nadmin_listen == 0)
		c->admin_listen[c->nadmin_listen++] = DBK_DEFAULT_ADMIN_LISTEN;
	/* Checked in plain mode too, where the threshold is unused: such a
	 * command line is a mistake that would bite once dynamic mode is on. */
	if (c->threshold >= c->max_request_tokens)
		FAIL("--server-group-threshold (%ld) must be below --max-request-tokens (%ld)",
		     c->threshold, c->max_request_tokens);

	if (c->nservers && dbk_config_check_servers(c, err, errlen))
		return DBK_CONFIG_ERROR;
	return DBK_CONFIG_OK;
}

int dbk_config_check_servers(const struct dbk_config *c, char *err, size_t errlen)
{
	struct dbk_bal_config bc;

	for (unsigned i = 0; i < c->nscrape; i++) {
		unsigned j;
		int nl = (int)(strchr(c->scrape[i], '=') - c->scrape[i]);

		for (j = 0; j < c->nservers; j++)
			if (strlen(c->servers[j]) == (size_t)nl &&
			    strncmp(c->servers[j], c->scrape[i], (size_t)nl) == 0)
				break;
		if (j == c->nservers) {
			snprintf(err, errlen, "--scrape names '%.*s', which is not a server", nl,
			         c->scrape[i]);
			return -1;
		}
	}

	dbk_config_balancer(c, &bc);
	return dbk_bal_config_check(&bc, err, errlen);
}

void dbk_config_balancer(const struct dbk_config *c, struct dbk_bal_config *bc)
{
	dbk_bal_config_default(bc, c->nservers, c->dynamic, (double)c->threshold,
	                       (double)c->max_request_tokens);
	bc->max_leases = c->max_leases;
}
