/* The agent's command line, on lib/cli: each section of --help is a
 * table of options (name, where the value goes, bounds, help), so the
 * parser, its errors and the help text come from one place. Numbers take
 * the strict grammar --config and /config share (lib/numparse.h). */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "admin_guard.h"
#include "lib/cli.h"
#include "lib/log.h"
#include "lib/net.h"
#include "settings.h"
#include "lib/bounds.h"

/* What parsing needs beside the config: options that are not a plain
 * value. */
struct parse {
	struct dbk_config *c;
	bool help, version;
	bool no_completions, no_admin;
};

#define STR_(x) #x
#define STR(x) STR_(x)
#define COUNT(t) (sizeof(t) / sizeof((t)[0]))
#define WEEK_S (7 * 24 * 3600)
/* Options in all sections, at most. */
#define MAX_OPTIONS 63

static const char *const log_levels[] = { "debug", "info", "warn", "error", NULL };

/* Table rows by kind: a number in the strict grammar, within [lo, hi];
 * a string kept as given; a value a function checks and stores. */
#define NUM(name, kind, dst, lo, hi, meta, help)                                         \
	{                                                                                \
		name, 0, kind, dst, lo, hi, NULL, NULL, DBK_OPT_STRICT, meta, help, NULL \
	}
#define TEXT(name, dst, meta, help)                                              \
	{                                                                        \
		name, 0, DBK_OPT_STR, dst, 0, 0, NULL, NULL, 0, meta, help, NULL \
	}
#define CALL(name, fn, meta, help)                                               \
	{                                                                        \
		name, 0, DBK_OPT_CALL, NULL, 0, 0, NULL, fn, 0, meta, help, NULL \
	}
#define SECTION(title)                         \
	{                                      \
		.name = NULL, .section = title \
	}
#define FLAG(name, short_name, dst, help)                                                  \
	{                                                                                  \
		name, short_name, DBK_OPT_FLAG, dst, 0, 0, NULL, NULL, 0, NULL, help, NULL \
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
		      (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '.' || ch == ':'))
			return false;
	}
	return true;
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
	size_t sl = strncmp(u, "https://", 8) == 0 ? 8 : strncmp(u, "http://", 7) == 0 ? 7 : 0;
	if (ul > DBK_MAX_SCRAPE_URL || !sl || ul == sl)
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

/* A repeatable address option (what: "--NAME addresses"), at most
 * DBK_MAX_LISTEN; "none" (none != NULL) sets *none instead. */
/* One address of a listening option, checked now (lib/net's syntax,
 * HAProxy's spellings included) so that a typo is a start-up refusal
 * with exit 2, not a bind error later; datagrams only where dgram_ok. */
static int add_addr(const char *opt, const char *what, const char **list, unsigned *n, bool *none,
                    bool dgram_ok, const char *v, char *err, size_t errlen)
{
	struct dbk_net_spec spec;
	char why[200];

	if (none && strcmp(v, "none") == 0) {
		*none = true;
		return 0;
	}
	/* An inherited socket's kind is known only once it is open:
	 * listen_all refuses a datagram one where none is wanted. */
	if (dbk_net_fd_spec(v) >= 0)
		return dbk_cli_append(list, n, DBK_MAX_LISTEN, what, v, err, errlen);
	if (dbk_net_spec_parse(v, &spec, why, sizeof(why)) < 0) {
		dbk_errf(err, errlen, "%s: %s", opt, why);
		return -1;
	}
	if (spec.kind == DBK_NET_DGRAM && !dgram_ok) {
		dbk_errf(err, errlen, "%s %s: udp@ is for --completion-listen only", opt, v);
		return -1;
	}
	return dbk_cli_append(list, n, DBK_MAX_LISTEN, what, v, err, errlen);
}

static int opt_listen(void *ctx, const char *v, char *err, size_t errlen)
{
	struct dbk_config *c = ((struct parse *)ctx)->c;

	return add_addr("--listen", "--listen addresses", c->listen, &c->nlisten, NULL, false, v,
	                err, errlen);
}

static int opt_completion_listen(void *ctx, const char *v, char *err, size_t errlen)
{
	struct parse *p = ctx;

	return add_addr("--completion-listen", "--completion-listen addresses",
	                p->c->completion_listen, &p->c->ncompletion_listen, &p->no_completions,
	                true, v, err, errlen);
}

static int opt_admin_listen(void *ctx, const char *v, char *err, size_t errlen)
{
	struct parse *p = ctx;

	return add_addr("--admin-listen", "--admin-listen addresses", p->c->admin_listen,
	                &p->c->nadmin_listen, &p->no_admin, false, v, err, errlen);
}

static int opt_backend(void *ctx, const char *v, char *err, size_t errlen)
{
	if (!valid_server_name(v)) {
		dbk_errf(err, errlen, "invalid backend name '%s'", v);
		return -1;
	}
	((struct parse *)ctx)->c->backend = v;
	return 0;
}

static int opt_pool(void *ctx, const char *v, char *err, size_t errlen)
{
	struct dbk_config *c = ((struct parse *)ctx)->c;

	if (!valid_server_name(v)) {
		dbk_errf(err, errlen, "invalid --pool backend name '%s'", v);
		return -1;
	}
	c->pool = c->backend = v;
	return 0;
}

/* --- Who may talk to the agent: --allow-from, --admin-* --- */

/* CIDR,... (repeatable) for the SPOP and completion listeners. */
static int opt_allow_from(void *ctx, const char *v, char *err, size_t errlen)
{
	struct dbk_config *c = ((struct parse *)ctx)->c;

	for (const char *p = v;;) {
		char one[64];
		size_t n = strcspn(p, ",");

		if (n == 0 || n >= sizeof(one)) {
			dbk_errf(err, errlen, "--allow-from: '%s' is not a list of addresses", v);
			return -1;
		}
		if (c->nallow == DBK_MAX_ALLOW) {
			dbk_errf(err, errlen, "--allow-from: at most %d addresses", DBK_MAX_ALLOW);
			return -1;
		}
		char why[128];
		memcpy(one, p, n);
		one[n] = '\0';
		if (dbk_net_cidr_parse(one, &c->allow[c->nallow], why, sizeof(why)) < 0) {
			dbk_errf(err, errlen, "--allow-from: %s", why);
			return -1;
		}
		c->nallow++;
		if (p[n] == '\0')
			return 0;
		p += n + 1;
	}
}

static int opt_admin_public(void *ctx, const char *v, char *err, size_t errlen)
{
	return dbk_admin_public_parse(v, &((struct parse *)ctx)->c->admin_public, err, errlen);
}

static int opt_admin_host(void *ctx, const char *v, char *err, size_t errlen)
{
	struct dbk_config *c = ((struct parse *)ctx)->c;

	if (!*v || strpbrk(v, ":/[] ")) {
		dbk_errf(err, errlen, "--admin-host: '%s' is not a host name (no port)", v);
		return -1;
	}
	return dbk_cli_append(c->admin_hosts, &c->nadmin_hosts, DBK_MAX_LISTEN,
	                      "--admin-host names", v, err, errlen);
}

/* --- end of who may talk to the agent --- */

static int opt_scrape(void *ctx, const char *v, char *err, size_t errlen)
{
	struct dbk_config *c = ((struct parse *)ctx)->c;

	if (!valid_scrape(v)) {
		dbk_errf(err, errlen, "--scrape wants NAME=http[s]://HOST:PORT, got '%s'", v);
		return -1;
	}
	if (c->nscrape == DBK_MAX_SERVERS) {
		dbk_errf(err, errlen, "at most %d --scrape", DBK_MAX_SERVERS);
		return -1;
	}
	size_t nl = (size_t)(strchr(v, '=') - v);
	for (unsigned j = 0; j < c->nscrape; j++)
		if (strncmp(c->scrape[j], v, nl + 1) == 0) {
			dbk_errf(err, errlen, "--scrape names '%.*s' twice", (int)nl, v);
			return -1;
		}
	c->scrape[c->nscrape++] = v;
	return 0;
}

/* --- https scrapes: TLS files --- */

/* A file named now and read by libcurl at each new connection: one
 * misspelt is said at start, not as a failing scrape. */
static int tls_file(const char *flag, const char **dst, const char *v, char *err, size_t errlen)
{
	if (access(v, R_OK) < 0) {
		dbk_errf(err, errlen, "--%s %s: %s", flag, v, strerror(errno));
		return -1;
	}
	*dst = v;
	return 0;
}

static int opt_scrape_ca(void *ctx, const char *v, char *err, size_t errlen)
{
	return tls_file("scrape-ca", &((struct parse *)ctx)->c->scrape_ca, v, err, errlen);
}

static int opt_scrape_cert(void *ctx, const char *v, char *err, size_t errlen)
{
	return tls_file("scrape-cert", &((struct parse *)ctx)->c->scrape_cert, v, err, errlen);
}

static int opt_scrape_key(void *ctx, const char *v, char *err, size_t errlen)
{
	return tls_file("scrape-key", &((struct parse *)ctx)->c->scrape_key, v, err, errlen);
}

/* --- end of https scrapes --- */

/* --- engines' metric names (scrape) --- */

/* One set for all servers, made at the first --engine or --metric:
 * --engine starts it afresh from that engine's names, so it comes
 * before any --metric. */
static int opt_engine(void *ctx, const char *v, char *err, size_t errlen)
{
	struct dbk_config *c = ((struct parse *)ctx)->c;
	enum dbk_vm_engine e;

	if (dbk_vm_engine_parse(v, &e) < 0) {
		dbk_errf(err, errlen, "--engine wants vllm, sglang or auto, got '%s'", v);
		return -1;
	}
	if (c->scrape_metric_given) {
		dbk_errf(err, errlen, "--engine comes before any --metric");
		return -1;
	}
	dbk_vm_names_init(&c->scrape_names, e);
	c->scrape_names_set = true;
	return 0;
}

static int opt_metric(void *ctx, const char *v, char *err, size_t errlen)
{
	struct dbk_config *c = ((struct parse *)ctx)->c;

	if (!c->scrape_names_set) {
		dbk_vm_names_init(&c->scrape_names, DBK_ENGINE_AUTO);
		c->scrape_names_set = true;
	}
	c->scrape_metric_given = true;
	return dbk_vm_names_override(&c->scrape_names, v, err, errlen);
}

/* --- end of engines' metric names --- */

static int opt_policy(void *ctx, const char *v, char *err, size_t errlen)
{
	const struct dbk_policy_ops *ops = dbk_policy_find(v);
	char names[256];
	size_t n = 0;

	if (ops) {
		((struct parse *)ctx)->c->policy = ops;
		return 0;
	}
	names[0] = '\0';
	for (size_t k = 0; (ops = dbk_policy_at(k)) != NULL && n < sizeof(names); k++)
		n += (size_t)snprintf(names + n, sizeof(names) - n, "%s%s", k ? ", " : "",
		                      ops->name);
	dbk_errf(err, errlen, "--policy wants one of %s, got '%s'", names, v);
	return -1;
}

static int opt_outlier(void *ctx, const char *v, char *err, size_t errlen)
{
	struct dbk_config *c = ((struct parse *)ctx)->c;

	if (strcmp(v, "on") != 0 && strcmp(v, "none") != 0) {
		dbk_errf(err, errlen, "--outlier wants on or none, got '%s'", v);
		return -1;
	}
	c->outlier.enabled = strcmp(v, "on") == 0;
	return 0;
}

/* --policy's help: each policy's own words, from the table. */
static const char *policy_help(void)
{
	static char text[2048];
	const struct dbk_policy_ops *ops;
	size_t n = 0;

	if (text[0])
		return text;
	for (size_t k = 0; (ops = dbk_policy_at(k)) != NULL && n < sizeof(text); k++)
		n += (size_t)snprintf(text + n, sizeof(text) - n, "%s%s: %s", k ? "\n" : "",
		                      ops->name, ops->help);
	return text;
}

/* ---- the options, by section of --help ---- */

/* Every option, in --help's order; a SECTION row puts its heading on the
 * option after it. */
static void all_options(struct parse *p, struct dbk_opt *out)
{
	struct dbk_config *c = p->c;
	const struct dbk_opt t[] = {
		SECTION("\nBalancing (same meaning and defaults as the reference proxy):"),
		FLAG("enable-dynamic-bucket", 0, &c->dynamic,
		     "split servers into a short and a long group\n(needs at least 2 servers)"),
		NUM("server-group-threshold", DBK_OPT_LL, &c->threshold, 1, DBK_MAX_TOKENS, "N",
		    "tokens where the long bucket starts (" STR(DBK_DEFAULT_THRESHOLD) ")"),
		NUM("max-request-tokens", DBK_OPT_LL, &c->max_request_tokens, 1, DBK_MAX_TOKENS,
		    "N",
		    "upper bound of the long bucket (" STR(DBK_DEFAULT_MAX_REQUEST_TOKENS) ")"),
		TEXT("config", &c->config_file, "FILE",
		     "live settings (key = value lines: see\ndbucket-spoa(8)); reread on SIGHUP, "
		     "and\nalso set through the admin endpoint's /config"),
		CALL("policy", opt_policy, "NAME", policy_help()),
		NUM("engine-speed", DBK_OPT_DOUBLE, &c->engine_speed, 0.001, 1000, "X",
		    "ttft: the servers run X times as fast as its\nengine model (an 8B model on an "
		    "H100; 1); for\nother GPUs, and stubs run with --time-scale X\n"
		    "(differences between servers are learnt;\nwith --admission, a slower fleet's "
		    "pace too)"),
		NUM("lora-load", DBK_OPT_MS, &c->lora_load_ms, 1, 3600 * 1000, "TIME",
		    "ttft: what loading a LoRA adapter costs these\nservers (vLLM exports no load "
		    "time; 50 ms of\nits engine model over --engine-speed)"),
		NUM("max-num-batched-tokens", DBK_OPT_LL, &c->max_num_batched_tokens, 1,
		    DBK_MAX_TOKENS, "N",
		    "ttft: the servers' --max-num-batched-tokens,\nas given to vllm serve "
		    "(vLLM exports no\nscheduler settings; untold: 8192, vLLM's\ndefault on an "
		    "H100, and each server's\nqueue packed into the budget its /metrics\nshow "
		    "while prompts queue there)"),
		SECTION("\nServers' own numbers (vLLM's /metrics and /v1/models; the ttft policy\n"
		        "routes on them, every policy reports them):"),
		CALL("scrape", opt_scrape, "NAME=URL",
		     "scrape server NAME at base URL\n(http://HOST:PORT or https://...); "
		     "repeatable. With "
		     "--policy\n"
		     "ttft and --haproxy-socket, servers not named\nare scraped where HAProxy "
		     "reaches "
		     "them"),
		NUM("scrape-interval", DBK_OPT_MS, &c->scrape_interval_ms, 10, 3600 * 1000, "TIME",
		    "/metrics every TIME (" STR(
		            DBK_DEFAULT_SCRAPE_INTERVAL_MS) "); /v1/models every "
		                                            "10 s"),
		NUM("scrape-timeout", DBK_OPT_MS, &c->scrape_timeout_ms, 10, 600 * 1000, "TIME",
		    "a scrape not answered by then failed (" STR(
		            DBK_DEFAULT_SCRAPE_TIMEOUT_MS) ")"),
		CALL("scrape-ca", opt_scrape_ca, "FILE",
		     "https scrapes: trust the CAs in FILE (PEM)\ninstead of the system's"),
		CALL("scrape-cert", opt_scrape_cert, "FILE",
		     "https scrapes: present this client\ncertificate (PEM)"),
		CALL("scrape-key", opt_scrape_key, "FILE",
		     "... and its key (PEM; default: in the\n--scrape-cert file)"),
		FLAG("scrape-insecure", 0, &c->scrape_insecure,
		     "https scrapes: check neither the servers'\ncertificates nor their names "
		     "(self-signed\ntest setups only; logged)"),
		FLAG("hold-partial-bodies", 0, &c->hold_partial,
		     "a request whose body is not whole when\nHAProxy asks is charged its prefill "
		     "only\n"
		     "once its server's scrape counts it (a slow\nclient cannot hold a server "
		     "out); "
		     "costs\nbursts of long prompts between two scrapes\n(README \"Slow bodies\")"),
		CALL("engine", opt_engine, "vllm|sglang|auto",
		     "the servers' metric names: vLLM's (older\nreleases' too), SGLang's, or "
		     "either, as each\nserver exports them (auto)"),
		CALL("metric", opt_metric, "KEY=NAME",
		     "read metric NAME as KEY (running, waiting,\nkv_usage, prefix_queries, "
		     "prefix_hits,\nprefix_hit_rate, preemptions, ttft_sum,\nttft_count, "
		     "kv_capacity_tokens,\nprompt_tokens, generation_tokens, steps,\nitl_sum, "
		     "itl_count) instead of the engine's\nname; repeatable, after --engine"),
		SECTION("\nOutlier detection (servers whose requests fail, from HAProxy's\n"
		        "completion lines):"),
		CALL("outlier", opt_outlier, "on|none", "eject failing servers (on)"),
		NUM("outlier-consecutive", DBK_OPT_INT, &c->outlier.consecutive, 0, 1000000, "N",
		    "eject after N failures in a row: a 5xx, a\nrefused, reset or timed-out "
		    "connection\n(" STR(DBK_OUTLIER_DEFAULT_CONSECUTIVE) "; 0: rule off)"),
		NUM("outlier-ratio", DBK_OPT_DOUBLE, &c->outlier.ratio, 0, 1, "R",
		    "eject when failures are R of its requests over\nthe window (" STR(
		            DBK_OUTLIER_DEFAULT_RATIO) "; 0: rule off)"),
		NUM("outlier-min-requests", DBK_OPT_INT, &c->outlier.min_requests, 1, 1000000, "N",
		    "... counted over at least N requests (" STR(
		            DBK_OUTLIER_DEFAULT_MIN_REQUESTS) ")"),
		NUM("outlier-window", DBK_OPT_MS, &c->outlier.window_ms, 100, WEEK_S * 1000LL,
		    "TIME",
		    "... in the last TIME to 2xTIME (" STR(DBK_OUTLIER_DEFAULT_WINDOW_MS) ")"),
		NUM("outlier-base-ejection", DBK_OPT_MS, &c->outlier.base_ms, 1, WEEK_S * 1000LL,
		    "TIME",
		    "the first ejection lasts TIME, the n-th n x TIME\n(" STR(
		            DBK_OUTLIER_DEFAULT_BASE_MS) "); then half-open: one failure\n"
		                                         "ejects again"),
		NUM("outlier-max-ejection", DBK_OPT_MS, &c->outlier.max_ms, 1, WEEK_S * 1000LL,
		    "TIME", "longest ejection (" STR(DBK_OUTLIER_DEFAULT_MAX_MS) ")"),
		NUM("outlier-max-ejected-percent", DBK_OPT_INT, &c->outlier.max_percent, 0, 100,
		    "P",
		    "at most P% of the servers ejected at once,\nat least one, never the last "
		    "usable\none (" STR(DBK_OUTLIER_DEFAULT_MAX_PERCENT) ")"),
		/* ---- admission (issue 28): one block ---- */
		SECTION("\nAdmission (requests' classes from haproxy.cfg's class argument:\n"
		        "critical, standard, sheddable; none or unknown is standard):"),
		FLAG("admission", 0, &c->admit.enabled,
		     "refuse requests of a class predicted to miss\nits share of the objective "
		     "(HAProxy answers\n429 with Retry-After); critical never. Off:\nevery request "
		     "is routed as before"),
		NUM("admit-ttft", DBK_OPT_MS, &c->admit.ttft_ms, 1, 3600 * 1000, "TIME",
		    "the first-token objective (" STR(DBK_ADMIT_DEFAULT_TTFT_MS) ")"),
		NUM("admit-tpot", DBK_OPT_MS, &c->admit.tpot_ms, 1, 3600 * 1000, "TIME",
		    "the TPOT objective of admission's TPOT risk\n(" STR(
		            DBK_ADMIT_DEFAULT_TPOT_MS) "); routing's stays 100 ms"),
		NUM("admit-headroom-standard", DBK_OPT_DOUBLE,
		    &c->admit.headroom[DBK_CLASS_STANDARD], 0, 100, "R",
		    "standard's share R of the objective: refused\nwhen predicted late with more "
		    "than R x it\nspent waiting, or past R x it while a\nclass above is at risk "
		    "(" STR(DBK_ADMIT_DEFAULT_HEADROOM_STANDARD) ")"),
		NUM("admit-headroom-sheddable", DBK_OPT_DOUBLE,
		    &c->admit.headroom[DBK_CLASS_SHEDDABLE], 0, 100, "R",
		    "sheddable's share R of the objective: refused\nwhen predicted late with more "
		    "than R x it\nspent waiting, or past R x it while a\nclass above is at risk "
		    "(" STR(DBK_ADMIT_DEFAULT_HEADROOM_SHEDDABLE) ")"),
		NUM("saturation-queue", DBK_OPT_DOUBLE, &c->sat_queue, 0, 1e6, "N",
		    "policies that predict nothing shed sheddable\nrequests only when every usable "
		    "server's\nscraped waiting queue is above N (" STR(DBK_SAT_DEFAULT_QUEUE) ")"),
		NUM("saturation-kv", DBK_OPT_DOUBLE, &c->sat_kv, 0, 1, "R",
		    "... or its KV-cache use above R (" STR(
		            DBK_SAT_DEFAULT_KV) ");\nwithout fresh scrapes, never"),
		SECTION("\nAgent:"),
		CALL("listen", opt_listen, "ADDR",
		     "where HAProxy connects; repeatable.\nHOST:PORT, [IPV6]:PORT or unix:PATH,\n"
		     "or HAProxy's spellings (unix@PATH, ipv4@,\nipv6@), or fd@N "
		     "(a socket inherited\nfrom the parent, bound and listening) "
		     "(default " DBK_DEFAULT_LISTEN ")"),
		CALL("completion-listen", opt_completion_listen, "ADDR",
		     "where HAProxy's completion ring connects\n(same forms, repeatable), or "
		     "udp@HOST:PORT\nfor lines sent by a plain UDP log "
		     "target;\ndefault " DBK_DEFAULT_COMPLETION_LISTEN
		     " and udp@ the same,\n\"none\" to disable"),
		CALL("admin-listen", opt_admin_listen, "ADDR",
		     "HTTP endpoint with /metrics and /state\n(default " DBK_DEFAULT_ADMIN_LISTEN
		     ", \"none\" to disable)"),
		NUM("lease-ttl", DBK_OPT_SECONDS, &c->lease_ttl_s, 1, WEEK_S, "TIME",
		    "a request whose completion never arrives\nis released after this long (" STR(
		            DBK_DEFAULT_LEASE_TTL_S) ")"),
		SECTION("\nWho may talk to the agent (see \"Security model\" in the README):"),
		CALL("allow-from", opt_allow_from, "CIDR,...",
		     "only these addresses may connect to the SPOP\nand completion listeners over "
		     "TCP, or send\ncompletion datagrams (repeatable; default\nanyone); a unix "
		     "socket's permissions decide\nwho reaches it"),
		TEXT("admin-token-file", &c->admin_token_file, "FILE",
		     "the bearer token (one word) that changes\n(POST /config) and non-public "
		     "reads "
		     "need\nover TCP; reread on SIGHUP. Without it,\nonly the admin unix socket "
		     "may change\nsettings"),
		FLAG("admin-read-only", 0, &c->admin_read_only,
		     "the admin endpoint changes nothing, whoever\nasks"),
		CALL("admin-public", opt_admin_public, "LIST",
		     "reads open without the token: metrics (GET\n/metrics), status (the status "
		     "page, /state,\n/config), both (default) or none"),
		CALL("admin-host", opt_admin_host, "NAME",
		     "a name the admin endpoint answers to in\nHost besides localhost and the "
		     "addresses it\nlistens on (repeatable)"),
		SECTION("\nHAProxy's runtime API (optional, recommended):"),
		TEXT("haproxy-socket", &c->haproxy_socket, "ADDR",
		     "its stats socket: unix:PATH, /PATH or\nHOST:PORT (needs 'level operator' or "
		     "more)"),
		CALL("backend", opt_backend, "NAME", "the vLLM backend (" DBK_DEFAULT_BACKEND ")"),
		SECTION("\nPools (several HAProxy backends, one agent; see the README):"),
		CALL("pool", opt_pool, "NAME",
		     "serve HAProxy backend NAME too, as a pool of\nits own: the pool options "
		     "after it (balancing,\n--policy, scrapes, outliers, admission, runtime\n"
		     "API polling, --max-servers, server names)\nare its, those before the "
		     "first --pool\nevery pool's; repeatable (at most " STR(DBK_MAX_POOLS) ")"),
		NUM("poll-interval", DBK_OPT_MS, &c->poll_ms, 50, 3600 * 1000, "TIME",
		    "how often to read server states and sessions:\nDOWN, MAINT and DRAIN servers "
		    "are not chosen,\nleaked leases are reclaimed (" STR(DBK_DEFAULT_POLL_MS) ")"),
		NUM("reclaim-after", DBK_OPT_SECONDS, &c->reclaim_after_s, 0, WEEK_S, "TIME",
		    "a lease is taken for leaked only when older\nthan this, and in excess of "
		    "HAProxy's\nsessions for 3 polls (" STR(DBK_DEFAULT_RECLAIM_AFTER_S) ")"),
		NUM("max-servers", DBK_OPT_INT, &c->max_servers, 1, DBK_MAX_SERVERS, "N",
		    "servers of the backend followed at most\n(at least those at start): servers "
		    "added or\nDNS-resolved later take free slots (" STR(
		            DBK_DEFAULT_MAX_SERVERS) ")"),
		SECTION("\nSeveral HAProxy nodes sharing the books (see the README):"),
		TEXT("share-books", &c->share_books, "TABLE",
		     "share the policy's books with the other\nnodes' agents through this stick "
		     "table,\nreplicated by HAProxy's peers (needs\n--haproxy-socket, --node and a "
		     "policy of\nthe ttft family)"),
		TEXT("node", &c->node, "NAME", "this HAProxy node's name in the table"),
		NUM("share-interval", DBK_OPT_MS, &c->share_ms, 1, 10000, "TIME",
		    "write and read the table this often\n(" STR(DBK_DEFAULT_SHARE_MS) ")"),
		SECTION("\nLimits:"),
		NUM("max-frame-size", DBK_OPT_INT, &c->max_frame_size, DBK_MIN_FRAME,
		    16 * 1024 * 1024, "N",
		    "largest SPOP frame, at most what HAProxy\nannounces is used (" STR(
		            DBK_DEFAULT_MAX_FRAME) ")"),
		NUM("max-connections", DBK_OPT_INT, &c->max_connections, 1, 1000000, "N",
		    "concurrent HAProxy connections (" STR(
		            DBK_DEFAULT_MAX_CONNS) "; lowered\nto "
		                                   "what the descriptor limit allows)"),
		NUM("max-connections-per-peer", DBK_OPT_INT, &c->max_connections_per_peer, 1,
		    1000000, "N",
		    "of which one peer address may hold at most\nN (half of --max-connections)"),
		NUM("idle-timeout", DBK_OPT_SECONDS, &c->idle_timeout_s, 1, WEEK_S, "TIME",
		    "an SPOP connection silent this long after\nHELLO is closed; keep it above the "
		    "SPOE\n'timeout idle' (" STR(DBK_DEFAULT_IDLE_TIMEOUT_S) ")"),
		NUM("max-leases", DBK_OPT_SIZE, &c->max_leases, 1, DBK_MAX_LEASES, "N",
		    "requests in flight before the agent stops\nanswering and HAProxy balances "
		    "alone (" STR(DBK_DEFAULT_MAX_LEASES) ")"),
		{ "log-level", 0, DBK_OPT_CHOICE, &c->log_level, 0, 0, log_levels, NULL, 0, "LEVEL",
		  "debug, info, warn or error (info)", NULL },
		TEXT("user", &c->user, "USER",
		     "drop privileges to USER once every socket\nis bound (unix sockets are given "
		     "to it)"),
		TEXT("group", &c->group, "GROUP", "and to GROUP (default: USER's group)"),
		FLAG("help", 'h', &p->help, "this text"),
		FLAG("version", 'V', &p->version, "the version"),
	};
	const char *section = NULL;
	size_t n = 0;

	_Static_assert(COUNT(t) <= MAX_OPTIONS + 8 /* SECTION rows */, "MAX_OPTIONS is too small");
	for (size_t i = 0; i < COUNT(t); i++) {
		if (!t[i].name) {
			section = t[i].section;
			continue;
		}
		out[n] = t[i];
		out[n++].section = section;
		section = NULL;
	}
	out[n] = (struct dbk_opt){ .name = NULL };
}

void dbk_config_usage(FILE *out, const char *prog)
{
	struct dbk_config c;
	struct parse p = { .c = &c };
	struct dbk_opt t[MAX_OPTIONS + 1];

	fprintf(out,
	        "Usage: %s [OPTIONS] SERVER...\n"
	        "       %s [OPTIONS] --haproxy-socket ADDR [--backend NAME]\n"
	        "       %s [OPTIONS] --pool NAME [POOL OPTIONS] [SERVER...] --pool NAME ...\n"
	        "\n"
	        "HAProxy SPOE agent that picks a vLLM server for each request by its length\n"
	        "and the load in flight. SERVER... are the backend's server names, in order,\n"
	        "exactly as haproxy.cfg spells them; with --haproxy-socket and no names the\n"
	        "agent reads them from HAProxy. It answers with the chosen name in\n"
	        "txn.<var-prefix>.server. With --pool it serves several backends, each a\n"
	        "pool of its own (and answers the backend in txn.<var-prefix>.backend).\n",
	        prog, prog, prog);
	all_options(&p, t);
	dbk_cli_usage(out, t);
	fprintf(out, "\nLogs go to stderr in logfmt. SIGTERM or SIGINT stops the agent cleanly.\n");
}

static void set_defaults(struct dbk_config *c)
{
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
	c->share_ms = DBK_DEFAULT_SHARE_MS;
	c->reclaim_after_s = DBK_DEFAULT_RECLAIM_AFTER_S;
	c->max_servers = DBK_DEFAULT_MAX_SERVERS;
	c->scrape_interval_ms = DBK_DEFAULT_SCRAPE_INTERVAL_MS;
	c->scrape_timeout_ms = DBK_DEFAULT_SCRAPE_TIMEOUT_MS;
	c->engine_speed = 1.0;
	c->lora_load_ms = -1;
	c->policy = dbk_policy_at(0);
	c->admin_public = DBK_ADMIN_PUBLIC_DEFAULT;
	dbk_outlier_config_default(&c->outlier);
	dbk_admit_config_default(&c->admit);
	c->sat_queue = DBK_SAT_DEFAULT_QUEUE;
	c->sat_kv = DBK_SAT_DEFAULT_KV;
}

/* --lora-load is the servers' own seconds, taken as they are: only the
 * default follows --engine-speed (dbk_policy_ttft_lora_load_s). */
double dbk_config_lora_load_env_s(const struct dbk_config *c)
{
	return c->lora_load_ms > 0 ? (double)c->lora_load_ms / 1e3 : 0;
}

/* SERVER... after the options. */
static int take_servers(struct dbk_config *c, int first, int argc, char **argv, char *err,
                        size_t errlen)
{
	for (int i = first; i < argc; i++) {
		if (argv[i][0] == '-') {
			dbk_errf(err, errlen,
			         "option '%s' after the server names; put options first", argv[i]);
			return -1;
		}
		if (!valid_server_name(argv[i])) {
			dbk_errf(err, errlen,
			         "invalid server name '%s' (1 to %d of A-Z a-z 0-9 - _ . :)",
			         argv[i], DBK_MAX_SERVER_NAME);
			return -1;
		}
		if (c->nservers == DBK_MAX_SERVERS) {
			dbk_errf(err, errlen, "at most %d servers", DBK_MAX_SERVERS);
			return -1;
		}
		for (unsigned j = 0; j < c->nservers; j++)
			if (strcmp(c->servers[j], argv[i]) == 0) {
				dbk_errf(err, errlen, "server '%s' named twice", argv[i]);
				return -1;
			}
		c->servers[c->nservers++] = argv[i];
	}
	return 0;
}

/* The listeners not given: the defaults, unless "none". */
static void default_listeners(struct dbk_config *c, const struct parse *p)
{
	if (c->nlisten == 0)
		c->listen[c->nlisten++] = DBK_DEFAULT_LISTEN;
	if (p->no_completions) {
		c->ncompletion_listen = 0;
	} else if (c->ncompletion_listen == 0) {
		/* Both of the sample's paths (haproxy/README.md). */
		c->completion_listen[c->ncompletion_listen++] = DBK_DEFAULT_COMPLETION_LISTEN;
		c->completion_listen[c->ncompletion_listen++] =
		        "udp@" DBK_DEFAULT_COMPLETION_LISTEN;
	}
	if (p->no_admin)
		c->nadmin_listen = 0;
	else if (c->nadmin_listen == 0)
		c->admin_listen[c->nadmin_listen++] = DBK_DEFAULT_ADMIN_LISTEN;
}

enum dbk_config_result dbk_config_parse(struct dbk_config *c, int argc, char **argv, char *err,
                                        size_t errlen)
{
	struct parse p = { .c = c };
	struct dbk_opt t[MAX_OPTIONS + 1];
	int first = argc;

	set_defaults(c);
	all_options(&p, t);
	int rc = dbk_cli_parse(t, argc, argv, &p, &first, err, errlen);
	/* --help and --version win over what is wrong after them, and over
	 * what is missing (no servers). */
	if (p.help)
		return DBK_CONFIG_HELP;
	if (p.version)
		return DBK_CONFIG_VERSION;
	if (rc < 0)
		return DBK_CONFIG_ERROR;
	if (take_servers(c, first, argc, argv, err, errlen) < 0)
		return DBK_CONFIG_ERROR;
	if (c->nservers == 0 && !c->haproxy_socket) {
		dbk_errf(err, errlen,
		         "no servers: name the backend's servers, in order, or give "
		         "--haproxy-socket to read them from HAProxy (see --help)");
		return DBK_CONFIG_ERROR;
	}
	default_listeners(c, &p);
	/* Checked in plain mode too, where the threshold is unused: such a
	 * command line is a mistake that would bite once dynamic mode is on. */
	if (c->threshold >= c->max_request_tokens) {
		dbk_errf(err, errlen,
		         "--server-group-threshold (%lld) must be below "
		         "--max-request-tokens (%lld)",
		         c->threshold, c->max_request_tokens);
		return DBK_CONFIG_ERROR;
	}
	if (c->share_books && (!c->node || !c->haproxy_socket || !c->policy->seen)) {
		dbk_errf(err, errlen,
		         "--share-books needs --node, --haproxy-socket and a policy that "
		         "shares (ttft, p2ttft)");
		return DBK_CONFIG_ERROR;
	}
	if (c->scrape_key && !c->scrape_cert) {
		dbk_errf(err, errlen, "--scrape-key needs --scrape-cert");
		return DBK_CONFIG_ERROR;
	}
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
		/* Following HAProxy's backend, the server may come later. */
		if (j == c->nservers && !c->haproxy_socket) {
			dbk_errf(err, errlen, "--scrape names '%.*s', which is not a server", nl,
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
	bc->follows = c->haproxy_socket != NULL;
}
