/* Generated configuration: the sections of haproxy/haproxy.cfg and
 * haproxy/dbucket.spoe.conf with the launcher's values in place of the
 * environment variables there. Keep the two in step: a change to the
 * sample's data path (log-format, SPOE messages, retries) belongs here
 * too. */
#include "render.h"

#include <stdlib.h>
#include <string.h>

#include "lib/log.h"
#include "lib/version.h"

bool dbk_render_path_ok(const char *path)
{
	size_t n = strlen(path);

	if (n < 2 || path[0] != '/' || n > DBK_RENDER_PATH - 64)
		return false;
	for (size_t i = 0; i < n; i++) {
		char c = path[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
		      c == '/' || c == '.' || c == '_' || c == '-' || c == '+' || c == ',' ||
		      c == '=' || c == '@' || c == '~'))
			return false;
	}
	return true;
}

static int bad_dir(const char *dir, char *err, size_t errlen)
{
	dbk_errf(err, errlen,
	         "'%s' cannot be used: want an absolute path of letters, digits and / . _ - + , = "
	         "@ ~ "
	         "(it goes into haproxy.cfg unquoted)",
	         dir);
	return -1;
}

int dbk_render_addrs_run(struct dbk_render_addrs *a, const char *dir, int completions_port,
                         char *err, size_t errlen)
{
	memset(a, 0, sizeof(*a));
	if (!dbk_render_path_ok(dir))
		return bad_dir(dir, err, errlen);
	/* The longest socket name decides. */
	static const char *const socks[] = { DBK_RENDER_SPOA_SOCK, DBK_RENDER_ADMIN_SOCK,
		                             DBK_RENDER_STATS_SOCK, DBK_RENDER_PROM_SOCK };
	size_t name = 0;
	for (size_t i = 0; i < sizeof(socks) / sizeof(socks[0]); i++)
		if (strlen(socks[i]) > name)
			name = strlen(socks[i]);
	if (strlen(dir) + 1 + name > DBK_RENDER_SUN_PATH) {
		dbk_errf(err, errlen,
		         "runtime directory '%s' is too long for unix sockets (%zu bytes, at most "
		         "%zu): "
		         "give a shorter --runtime-dir",
		         dir, strlen(dir), (size_t)DBK_RENDER_SUN_PATH - 1 - name);
		return -1;
	}
	a->production = false;
	snprintf(a->spoe_conf, sizeof(a->spoe_conf), "%s/%s", dir, DBK_RENDER_SPOE_CONF);
	snprintf(a->errors_dir, sizeof(a->errors_dir), "%s", dir);
	snprintf(a->stats_socket, sizeof(a->stats_socket), "%s/%s", dir, DBK_RENDER_STATS_SOCK);
	snprintf(a->agent, sizeof(a->agent), "unix@%s/%s", dir, DBK_RENDER_SPOA_SOCK);
	if (completions_port <= 0 || completions_port > 65535) {
		dbk_errf(err, errlen, "completion port %d out of range", completions_port);
		return -1;
	}
	snprintf(a->completions, sizeof(a->completions), "127.0.0.1:%d", completions_port);
	snprintf(a->prom, sizeof(a->prom), "unix@%s/%s", dir, DBK_RENDER_PROM_SOCK);
	snprintf(a->agent_listen, sizeof(a->agent_listen), "unix:%s/%s", dir, DBK_RENDER_SPOA_SOCK);
	snprintf(a->agent_completions, sizeof(a->agent_completions), "127.0.0.1:%d",
	         completions_port);
	snprintf(a->agent_completions_udp, sizeof(a->agent_completions_udp), "udp@127.0.0.1:%d",
	         completions_port);
	snprintf(a->agent_admin, sizeof(a->agent_admin), "unix:%s/%s", dir, DBK_RENDER_ADMIN_SOCK);
	snprintf(a->agent_haproxy_socket, sizeof(a->agent_haproxy_socket), "unix:%s/%s", dir,
	         DBK_RENDER_STATS_SOCK);
	return 0;
}

int dbk_render_addrs_production(struct dbk_render_addrs *a, const char *dir, char *err,
                                size_t errlen)
{
	memset(a, 0, sizeof(*a));
	if (!dbk_render_path_ok(dir))
		return bad_dir(dir, err, errlen);
	a->production = true;
	snprintf(a->spoe_conf, sizeof(a->spoe_conf), "%s/%s", dir, DBK_RENDER_SPOE_CONF);
	snprintf(a->errors_dir, sizeof(a->errors_dir), "%s", dir);
	snprintf(a->stats_socket, sizeof(a->stats_socket), "%s", DBK_RENDER_PROD_STATS_SOCKET);
	snprintf(a->agent, sizeof(a->agent), "%s", DBK_RENDER_PROD_AGENT);
	snprintf(a->completions, sizeof(a->completions), "%s", DBK_RENDER_PROD_COMPLETIONS);
	snprintf(a->prom, sizeof(a->prom), "%s", DBK_RENDER_PROD_PROM);
	snprintf(a->agent_listen, sizeof(a->agent_listen), "%s", DBK_RENDER_PROD_AGENT);
	snprintf(a->agent_completions, sizeof(a->agent_completions), "%s",
	         DBK_RENDER_PROD_COMPLETIONS);
	snprintf(a->agent_completions_udp, sizeof(a->agent_completions_udp), "udp@%s",
	         DBK_RENDER_PROD_COMPLETIONS);
	snprintf(a->agent_admin, sizeof(a->agent_admin), "%s", DBK_RENDER_PROD_ADMIN);
	snprintf(a->agent_haproxy_socket, sizeof(a->agent_haproxy_socket), "%s",
	         DBK_RENDER_PROD_STATS_SOCKET);
	return 0;
}

/* HOST:PORT as HAProxy reads it: IPv6 literals in brackets, "" (every
 * address) as ":PORT". */
static void haproxy_addr(FILE *out, const char *host, long port)
{
	if (strchr(host, ':') && host[0] != '[')
		fprintf(out, "[%s]:%ld", host, port);
	else
		fprintf(out, "%s:%ld", host, port);
}

/* Writes words separated by spaces, starting a new line (with the prefix
 * cont) before one that would pass column 76: long server lists stay
 * readable, and under HAProxy's line length in comments. */
struct wrap {
	FILE *out;
	size_t col;
	const char *cont;
	bool fresh; /* nothing written on this line after the prefix */
};

static void word(struct wrap *w, const char *s)
{
	size_t n = strlen(s);

	if (!w->fresh) {
		if (w->col + 1 + n > 76) {
			fprintf(w->out, "\n%s", w->cont);
			w->col = strlen(w->cont);
		} else {
			fputc(' ', w->out);
			w->col++;
		}
	}
	w->fresh = false;
	fputs(s, w->out);
	w->col += n;
}

/* A flag and its value, kept on one line. */
static void pair(struct wrap *w, const char *flag, const char *value)
{
	char buf[DBK_RENDER_PATH + 64];

	snprintf(buf, sizeof(buf), "%s %s", flag, value);
	word(w, buf);
}

static void pairf(struct wrap *w, const char *flag, long long v)
{
	char buf[32];

	snprintf(buf, sizeof(buf), "%lld", v);
	pair(w, flag, buf);
}

static void cmdline_words(struct wrap *w, const struct dbk_launch_flags *f)
{
	char buf[64];

	word(w, "dbucket");
	pair(w, "--host", f->host[0] ? f->host : "''");
	pairf(w, "--port", f->port);
	/* nargs "+": at least one value each. */
	pair(w, "--server-hosts", f->server_hosts[0]);
	for (unsigned i = 1; i < f->nhosts; i++)
		word(w, f->server_hosts[i]);
	pairf(w, "--server-ports", f->server_ports[0]);
	for (unsigned i = 1; i < f->nports; i++) {
		snprintf(buf, sizeof(buf), "%ld", f->server_ports[i]);
		word(w, buf);
	}
	if (f->dynamic)
		word(w, "--enable-dynamic-bucket");
	pairf(w, "--server-group-threshold", f->threshold);
	pairf(w, "--max-request-tokens", f->max_request_tokens);
	pairf(w, "--max-retries", f->max_retries);
	snprintf(buf, sizeof(buf), "%g", f->retry_delay);
	pair(w, "--retry-delay", buf);
	pair(w, "--policy", f->policy);
	if (f->scrape_interval_ms)
		pairf(w, "--scrape-interval", f->scrape_interval_ms);
	if (f->scrape_timeout_ms)
		pairf(w, "--scrape-timeout", f->scrape_timeout_ms);
}

void dbk_render_cmdline(FILE *out, const struct dbk_launch_flags *f, const char *prefix,
                        const char *cont)
{
	struct wrap w = { out, strlen(prefix), cont, true };

	fputs(prefix, out);
	cmdline_words(&w, f);
	fputc('\n', out);
}

/* The reference's grouping: the first (n + 1) / 2 servers are the short
 * group, the rest the long group; one group in plain mode. */
static void groups_comment(FILE *out, const struct dbk_launch_flags *f)
{
	unsigned n = f->nhosts;

	if (!f->dynamic) {
		fprintf(out, "# Plain mode: one group of %u server%s, the least loaded wins.\n", n,
		        n == 1 ? "" : "s");
		return;
	}
	unsigned s = (n + 1) / 2;
	fprintf(out, "# Dynamic buckets: short group vllm0");
	if (s > 1)
		fprintf(out, "..vllm%u", s - 1);
	fprintf(out, " (below %lld tokens),\n#   long group vllm%u", f->threshold, s);
	if (n - s > 1)
		fprintf(out, "..vllm%u", n - 1);
	fputs(".\n", out);
}

/* What the groups mean under the policy chosen. */
static void policy_comment(FILE *out, const struct dbk_launch_flags *f)
{
	if (!dbk_flags_scraped(f)) {
		fprintf(out,
		        "# --policy %s: the reference proxy's algorithm, decision for decision.\n",
		        f->policy);
		return;
	}
	fprintf(out,
	        "# --policy %s: by the first token predicted from each server's own\n"
	        "#   /metrics and /v1/models (max_model_len a hard limit); the groups\n"
	        "#   above only label the agent's reports.\n",
	        f->policy);
}

static void agent_cmd_comment(FILE *out, const struct dbk_launch_flags *f,
                              const struct dbk_render_addrs *a, const char *agent_path)
{
	char **argv = dbk_render_agent_argv(f, a, agent_path);
	struct wrap w = { out, 3, "#     ", true };

	if (!argv)
		return;
	fputs("#  ", out);
	/* Bounded: the argv ends with NULL after at most 20 + N entries.
	 * A flag and its value stay on one line. */
	for (size_t i = 0; argv[i]; i++) {
		if (strncmp(argv[i], "--", 2) == 0 && argv[i + 1] && argv[i + 1][0] != '-' &&
		    strcmp(argv[i], "--enable-dynamic-bucket") != 0) {
			pair(&w, argv[i], argv[i + 1]);
			i++;
		} else {
			word(&w, argv[i]);
		}
	}
	fputc('\n', out);
	dbk_render_argv_free(argv);
}

/* The header comment: how this file was made and what runs with it. */
static void cfg_head(FILE *out, const struct dbk_launch_flags *f, const struct dbk_render_addrs *a,
                     const char *agent_path)
{
	fprintf(out, "# Generated by dbucket %s%s for\n", DBK_VERSION,
	        a->production ? " --print-config" : "");
	dbk_render_cmdline(out, f, "#   ", "#     ");
	fputs("# HAProxy in front of the vLLM servers, dbucket-spoa choosing the server:\n"
	      "# the set-up of dbucket's haproxy/haproxy.cfg with concrete addresses.\n",
	      out);
	groups_comment(out, f);
	policy_comment(out, f);
	fputs("# The agent runs as\n", out);
	agent_cmd_comment(out, f, a, agent_path);
	fputs("# DBK_DEBUG_HEADERS=1 in HAProxy's environment adds X-Dbucket-* response\n"
	      "# headers with the decision.\n"
	      "\n",
	      out);
}

static void cfg_global(FILE *out, const struct dbk_launch_flags *f,
                       const struct dbk_render_addrs *a)
{
	fputs("global\n", out);
	/* HAProxy prints its warnings and alerts on stderr itself; a global
	 * log to stderr repeats each and adds a line per request. The
	 * launcher's own run logs requests only when asked to, and then only
	 * them (info and nothing above). */
	if (a->production)
		fputs("    log stderr format raw local0 info\n", out);
	else if (f->access_log)
		fputs("    log stderr format raw local0 info info\n", out);
	fputs("    # Raise with the file-descriptor limit (each connection takes two).\n"
	      "    maxconn 4096\n",
	      out);
	if (a->production)
		fputs("    user haproxy\n"
		      "    group haproxy\n",
		      out);
	fputs("    # The agent polls server states and sessions here.\n", out);
	fprintf(out, "    stats socket \"%s\" mode %s level admin%s\n", a->stats_socket,
	        a->production ? "660" : "600",
	        /* dbucket-spoa.service runs as haproxy: let that group in. */
	        a->production ? " group haproxy" : "");
}

/* Completion events: the ring the agent reads, and HAProxy's defaults. */
static void cfg_ring_defaults(FILE *out, const struct dbk_launch_flags *f,
                              const struct dbk_render_addrs *a)
{
	fputs("\n"
	      "# Completion events: one line per finished request (the frontend's\n"
	      "# log-format), which releases that request's load in the agent. Each\n"
	      "# line goes by this ring (TCP) and as a UDP datagram; the agent counts\n"
	      "# the second copy as a duplicate.\n"
	      "ring dbucket-completions\n"
	      "    description \"request completions for dbucket-spoa\"\n"
	      "    format raw\n"
	      "    maxlen 2048\n"
	      "    size 4194304\n"
	      "    timeout connect 1s\n"
	      "    timeout server 10s\n",
	      out);
	fprintf(out, "    server agent \"%s\" log-proto octet-count\n", a->completions);
	fputs("\n"
	      "defaults\n"
	      "    mode http\n",
	      out);
	/* Without a global log, a proxy with a log format and nowhere to log
	 * it is warned about: only frontend llm logs then (to the ring). */
	if (a->production || f->access_log)
		fputs("    log global\n"
		      "    option httplog\n",
		      out);
	fputs("    option dontlognull\n"
	      "    timeout connect 5s\n"
	      "    timeout client  600s\n"
	      "    # LLM responses stream for minutes.\n"
	      "    timeout server  600s\n"
	      "    timeout http-request 30s\n"
	      "    timeout queue 60s\n"
	      "    # OpenAI clients show the message of a JSON error, not HTML.\n"
	      "    errorfiles dbucket-json\n",
	      out);
	dbk_render_http_errors(out, a->errors_dir);
}

static void cfg_frontend(FILE *out, const struct dbk_launch_flags *f,
                         const struct dbk_render_addrs *a)
{
	fputs("\n"
	      "frontend llm\n"
	      "    bind \"",
	      out);
	haproxy_addr(out, f->host, f->port);
	fputs("\"\n"
	      "    # Tokens go out as they come (2.6 otherwise holds them ~200 ms).\n"
	      "    option http-no-delay\n"
	      "    log global\n"
	      "    log ring@dbucket-completions format raw local0 info\n",
	      out);
	fprintf(out, "    log \"%s\" format raw local0 info\n", a->completions);
	fputs("    # The first ten fields are the completion event dbucket-spoa reads\n"
	      "    # (keep them first and in this order); the rest is for people.\n"
	      "    # The id quoted and escaped: a client's header may give it spaces.\n"
	      "    log-format \"dbk1 %{+Q,+E}ID %[var(txn.dbucket.server)] %s %ST %tsc %Tt %B %rc "
	      "%[date(0,ms)] %ci:%cp [%tr] %ft %b %TR/%Tw/%Tc/%Tr/%Ta %{+Q}r "
	      "%[var(txn.dbk_class)]\"\n"
	      "    # The reference proxy's health endpoint: the servers HAProxy can use.\n"
	      "    http-request return status 200 content-type application/json lf-string "
	      "\"{\\\"status\\\": \\\"ok\\\", \\\"server_instances\\\": %[nbsrv(vllm)]}\" "
	      "if METH_GET { path /healthcheck }\n"
	      "    # The id the agent leases each request under.\n"
	      "    unique-id-format %{+X}o%pid-%Ts%ms-%rt\n",
	      out);
	fprintf(out, "    filter spoe engine dbucket config \"%s\"\n", a->spoe_conf);
	fputs("    # Let the body arrive (up to one buffer) so the agent sees max_tokens.\n"
	      "    http-request wait-for-body time 1s at-least 16k if METH_POST\n"
	      "    # The request's priority class (critical, standard, sheddable; none or\n"
	      "    # unknown: standard), for the agent's admission and HAProxy's queue.\n"
	      "    http-request set-var(txn.dbk_class) str(standard)\n"
	      "    http-request set-var(txn.dbk_class) req.hdr(x-request-class) "
	      "if { req.hdr(x-request-class) -m found }\n",
	      out);
	/* Production takes the sample's two knobs from HAProxy's environment
	 * (DBK_CLASSES_MAP here, DBK_SERVER_MAXCONN on the servers); a run
	 * is concrete: no map, no cap. */
	if (a->production)
		fputs("    # API keys to classes, when HAProxy's environment names a map file.\n"
		      ".if defined(DBK_CLASSES_MAP)\n"
		      "    http-request set-var(txn.dbk_class) req.hdr(authorization),word(2,' '),"
		      "map(\"${DBK_CLASSES_MAP}\") if { req.hdr(authorization),word(2,' '),"
		      "map(\"${DBK_CLASSES_MAP}\") -m found }\n"
		      ".endif\n",
		      out);
	fputs("    http-request set-priority-class int(1)\n"
	      "    http-request set-priority-class int(0) if { var(txn.dbk_class) -m str -i "
	      "critical 0 }\n"
	      "    http-request set-priority-class int(2) if { var(txn.dbk_class) -m str -i "
	      "sheddable 2 }\n",
	      out);
	/* ... and the model map and canary (one backend per model, a run
	 * has one backend). */
	if (a->production)
		fputs("    # One backend per model, a canary (haproxy.cfg): the maps named by\n"
		      "    # HAProxy's environment, as there.\n"
		      ".if defined(DBK_MODELS_MAP)\n"
		      "    http-request set-var(txn.dbk_backend) req.body,json_query('$.model'),"
		      "map(\"${DBK_MODELS_MAP}\") if METH_POST\n"
		      ".endif\n"
		      ".if defined(DBK_CANARY_MAP)\n"
		      "    http-request set-var(txn.dbk_backend) var(txn.dbk_backend),"
		      "map(\"${DBK_CANARY_MAP}\") if { "
		      "var(txn.dbk_backend),map(\"${DBK_CANARY_MAP}\") "
		      "-m found } { rand(100) lt \"${DBK_CANARY_PERCENT-5}\" }\n"
		      ".endif\n",
		      out);
	fputs("    http-request send-spoe-group dbucket dbucket-route-group if METH_POST\n"
	      "    # Shed by the agent's admission (--admission): 429, OpenAI's format.\n"
	      "    http-request return status 429 content-type application/json hdr Retry-After "
	      "\"%[var(txn.dbucket.retry_after)]\" hdr Cache-Control no-cache lf-string "
	      "\"{\\\"error\\\":{\\\"message\\\":\\\"the fleet is past capacity for this request's "
	      "class (%[var(txn.dbk_class)]); retry after %[var(txn.dbucket.retry_after)] "
	      "s\\\",\\\"type\\\":\\\"RateLimitError\\\",\\\"param\\\":null,\\\"code\\\":429}}\" "
	      "if { var(txn.dbucket.action) -m str shed }\n"
	      "    # Model routing: 404 for a model no server lists, 503 when every\n"
	      "    # server of it is down; neither touches a server.\n"
	      "    http-request return status 404 content-type application/json hdr Cache-Control "
	      "no-cache string \"{\\\"error\\\":{\\\"message\\\":\\\"The model in this request "
	      "does not exist: no server behind this endpoint serves it.\\\",\\\"type\\\":"
	      "\\\"NotFoundError\\\",\\\"param\\\":null,\\\"code\\\":404}}\" if "
	      "{ var(txn.dbucket.action) -m str unknown_model }\n"
	      "    http-request return status 503 content-type application/json hdr Cache-Control "
	      "no-cache string \"{\\\"error\\\":{\\\"message\\\":\\\"no server that serves "
	      "this request's model is available (every one is down or in maintenance)\\\",\\\""
	      "type\\\":\\\"ServiceUnavailableError\\\",\\\"param\\\":null,\\\"code\\\":"
	      "503}}\" if { var(txn.dbucket.action) -m str model_unavailable }\n"
	      "    # A retry may have redispatched the request: tell the agent where it runs.\n"
	      "    http-response send-spoe-group dbucket dbucket-moved-group if "
	      "{ var(txn.dbucket.server) -m found } !{ srv_name,strcmp(txn.dbucket.server) eq 0 "
	      "}\n",
	      out);
	static const char *const dbg[] = {
		"Server", "server",     "Bucket",     "bucket", "Group",
		"group",  "Redirected", "redirected", "Score",  "score"
	};
	for (size_t i = 0; i < sizeof(dbg) / sizeof(dbg[0]); i += 2)
		fprintf(out,
		        "    http-response set-header X-Dbucket-%s %%[var(txn.dbucket.%s)] "
		        "if { env(DBK_DEBUG_HEADERS) -m str 1 }\n",
		        dbg[i], dbg[i + 1]);
	/* Set only by some decisions: --policy ttft's prediction, errors. */
	static const char *const dbg_found[] = { "Ttft-Ms", "ttft_ms", "Hit-Tokens", "hit_tokens",
		                                 "Error",   "error",   "Backend",    "backend" };
	for (size_t i = 0; i < sizeof(dbg_found) / sizeof(dbg_found[0]); i += 2)
		fprintf(out,
		        "    http-response set-header X-Dbucket-%s %%[var(txn.dbucket.%s)] "
		        "if { env(DBK_DEBUG_HEADERS) -m str 1 } { var(txn.dbucket.%s) -m found }\n",
		        dbg_found[i], dbg_found[i + 1], dbg_found[i + 1]);
	fputs("    # The agent's backend (--pool), the model map's, the shared one.\n"
	      "    use_backend %[var(txn.dbucket.backend)] if { var(txn.dbucket.backend) -m found "
	      "}\n"
	      "    use_backend %[var(txn.dbk_backend)] if { var(txn.dbk_backend) -m found }\n"
	      "    default_backend vllm\n",
	      out);
}

/* HAProxy's metrics and stats, the vLLM servers, the agents. */
static void cfg_backends(FILE *out, const struct dbk_launch_flags *f,
                         const struct dbk_render_addrs *a)
{
	unsigned retries = dbk_flags_haproxy_retries(f);

	fputs("\n"
	      "# HAProxy's own metrics (/metrics, Prometheus) and stats page (/stats),\n"
	      "# beside the agent's (its admin listener's /metrics).\n"
	      "frontend stats\n",
	      out);
	fprintf(out, "    bind \"%s\"\n", a->prom);
	fputs("    http-request set-log-level silent\n"
	      "    http-request use-service prometheus-exporter if { path /metrics }\n"
	      "    stats enable\n"
	      "    stats uri /stats\n"
	      "    stats refresh 5s\n"
	      "\n"
	      "backend vllm\n"
	      "    # The agent's choice wins when it names a usable server; otherwise\n"
	      "    # (no answer, agent down, server DOWN or in MAINT) leastconn decides.\n"
	      "    balance leastconn\n"
	      "    use-server %[var(txn.dbucket.server)] if { var(txn.dbucket.server) -m found }\n",
	      out);
	fprintf(out,
	        "    # --max-retries %lld: the reference makes that many attempts in all;\n"
	        "    # HAProxy makes `retries` + 1. Only what failed before any byte of the\n"
	        "    # response is retried, on another server. --retry-delay %g has no\n"
	        "    # equivalent: a redispatched retry goes at once.\n"
	        "    retries %u\n",
	        f->max_retries, f->retry_delay, retries);
	fputs("    retry-on conn-failure empty-response 503\n"
	      "    option redispatch 1\n"
	      "    # A client that goes away reaches vLLM at once, not after the first token.\n"
	      "    option abortonclose\n"
	      "    # HAProxy 2.6.10 to 2.6.13 may crash at exit when it still keeps idle\n"
	      "    # server connections (haproxy/haproxy#2114, fixed in 2.6.14): keep none.\n"
	      ".if version_atleast(2.6.10) && version_before(2.6.14)\n"
	      "    http-reuse never\n"
	      ".endif\n"
	      "    option httpchk GET /health\n"
	      "    http-check expect status 200\n"
	      "    # Requests that fail while /health passes: DOWN after 10 errors in a\n"
	      "    # row (5xx, failed connections), until the checks pass again.\n",
	      out);
	if (a->production)
		fputs("    # DBK_SERVER_MAXCONN in HAProxy's environment caps each server's\n"
		      "    # requests; the rest wait in HAProxy's queue, critical first.\n",
		      out);
	for (unsigned i = 0; i < f->nhosts; i++) {
		fprintf(out, "    server vllm%u \"", i);
		haproxy_addr(out, f->server_hosts[i], f->server_ports[i]);
		fprintf(out,
		        "\"%s check inter 2s observe layer7 error-limit 10 on-error mark-down\n",
		        a->production ? " maxconn \"${DBK_SERVER_MAXCONN-0}\"" : "");
	}
	fputs("\n"
	      "backend dbucket-agents\n"
	      "    mode tcp\n"
	      "    balance roundrobin\n"
	      "    option spop-check\n"
	      "    timeout connect 1s\n"
	      "    timeout server  60s\n"
	      "    # A dead agent still marked UP would cost every request the whole\n"
	      "    # processing timeout: check it often.\n",
	      out);
	fprintf(out,
	        "    server agent1 \"%s\" check inter 1s downinter 250ms fall 2 rise 1"
	        " on-marked-down shutdown-sessions\n",
	        a->agent);
}

int dbk_render_haproxy_cfg(FILE *out, const struct dbk_launch_flags *f,
                           const struct dbk_render_addrs *a, const char *agent_path)
{
	cfg_head(out, f, a, agent_path);
	cfg_global(out, f, a);
	cfg_ring_defaults(out, f, a);
	cfg_frontend(out, f, a);
	cfg_backends(out, f, a);
	return ferror(out) ? -1 : 0;
}

int dbk_render_spoe_conf(FILE *out, const struct dbk_launch_flags *f)
{
	fprintf(out, "# Generated by dbucket %s for\n", DBK_VERSION);
	dbk_render_cmdline(out, f, "#   ", "#     ");
	fputs("# SPOE configuration for dbucket-spoa (HAProxy 2.6+), as dbucket's\n"
	      "# haproxy/dbucket.spoe.conf. DBK_SPOE_HELLO and DBK_SPOE_PROCESSING in\n"
	      "# HAProxy's environment override the two timeouts below.\n"
	      "\n"
	      "[dbucket]\n"
	      "spoe-agent dbucket-agent\n"
	      "    groups dbucket-route-group dbucket-moved-group\n"
	      "\n"
	      "    option var-prefix      dbucket\n"
	      "    # A failed exchange sets txn.dbucket.err; HAProxy's leastconn decides.\n"
	      "    option set-on-error    err\n"
	      "    option dontlog-normal\n"
	      "    # Essential on 2.6: with payload fragmentation an oversized message\n"
	      "    # makes HAProxy reconnect in a tight loop.\n"
	      "    no option send-frag-payload\n"
	      "\n"
	      "    timeout hello      \"${DBK_SPOE_HELLO-500ms}\"\n"
	      "    timeout idle       30s\n"
	      "    # A decision takes microseconds: a request waits this long at most.\n"
	      "    timeout processing \"${DBK_SPOE_PROCESSING-50ms}\"\n"
	      "\n"
	      "    use-backend dbucket-agents\n"
	      "    log global\n"
	      "\n"
	      "# One message per POST: the id, the whole Content-Length, the body bytes\n"
	      "# HAProxy holds (below it, the body is still on its way) and the first\n"
	      "# 15000 bytes of the body (one frame with the other arguments); with\n"
	      "# DBK_DEBUG_HEADERS=1, the decision's details too.\n"
	      "spoe-message dbucket-route\n"
	      "    args id=unique-id blen=req.body_size arrived=req.body_len "
	      "body=req.body,bytes(0,15000) "
	      "details=env(DBK_DEBUG_HEADERS) session=req.hdr(x-session-id) "
	      "class=var(txn.dbk_class)\n"
	      "    # The backend the model map chose (null without one).\n"
	      "    args backend=var(txn.dbk_backend)\n"
	      "\n"
	      "spoe-group dbucket-route-group\n"
	      "    messages dbucket-route\n"
	      "\n"
	      "# Sent only when HAProxy served a routed request elsewhere than the agent\n"
	      "# chose (a retry with redispatch): the lease and its load follow.\n"
	      "spoe-message dbucket-moved\n"
	      "    args id=unique-id server=srv_name\n"
	      "    args backend=be_name\n"
	      "\n"
	      "spoe-group dbucket-moved-group\n"
	      "    messages dbucket-moved\n",
	      out);
	return ferror(out) ? -1 : 0;
}

/* The agent's options other than --haproxy-socket (which the unit sets),
 * as one line. */
static void agent_opts(FILE *out, const struct dbk_launch_flags *f,
                       const struct dbk_render_addrs *a)
{
	/* Production scrapes where HAProxy reaches each server (the unit's
	 * --haproxy-socket): no --scrape to keep in step with haproxy.cfg. */
	fprintf(out, "--policy %s ", f->policy);
	if (f->admission)
		fputs("--admission ", out);
	if (f->scrape_interval_ms)
		fprintf(out, "--scrape-interval %lld ", f->scrape_interval_ms);
	if (f->scrape_timeout_ms)
		fprintf(out, "--scrape-timeout %lld ", f->scrape_timeout_ms);
	if (f->dynamic)
		fputs("--enable-dynamic-bucket ", out);
	fprintf(out,
	        "--server-group-threshold %lld --max-request-tokens %lld "
	        "--listen %s --completion-listen %s --completion-listen %s --admin-listen %s",
	        f->threshold, f->max_request_tokens, a->agent_listen, a->agent_completions,
	        a->agent_completions_udp, a->agent_admin);
}

int dbk_render_agent_env(FILE *out, const struct dbk_launch_flags *f,
                         const struct dbk_render_addrs *a, const char *agent_path)
{
	fprintf(out, "# Generated by dbucket %s --print-config for\n", DBK_VERSION);
	dbk_render_cmdline(out, f, "#   ", "#     ");
	fprintf(out,
	        "# dbucket-spoa's options for dbucket-spoa.service: install as\n"
	        "# /etc/default/dbucket-spoa. The unit runs\n"
	        "#   %s --haproxy-socket %s $DBUCKET_SPOA_OPTS\n"
	        "# and the agent reads the server names, in order, from HAProxy.\n"
	        "DBUCKET_SPOA_OPTS=\"",
	        agent_path, a->agent_haproxy_socket);
	agent_opts(out, f, a);
	fputs("\"\n", out);
	return ferror(out) ? -1 : 0;
}

int dbk_render_readme(FILE *out, const struct dbk_launch_flags *f, const struct dbk_render_addrs *a,
                      const char *dir, const char *agent_path)
{
	fprintf(out, "Written by dbucket %s --print-config for\n", DBK_VERSION);
	dbk_render_cmdline(out, f, "  ", "    ");
	fprintf(out,
	        "\n"
	        "%s/%s\n"
	        "    HAProxy's configuration: clients on ",
	        dir, DBK_RENDER_HAPROXY_CFG);
	haproxy_addr(out, f->host, f->port);
	fprintf(out,
	        ", %u vLLM server%s in backend vllm,\n"
	        "    the agent on %s, completions to %s, runtime API on\n"
	        "    %s. It loads the SPOE file from\n"
	        "    %s, and its error files from the same\n"
	        "    directory: move the files together and edit the `filter spoe` and\n"
	        "    `errorfile` lines, or print them into the directory they are to\n"
	        "    stay in, a new one (dbucket --print-config /etc/haproxy/dbucket ...),\n"
	        "    and copy only haproxy.cfg over HAProxy's after review.\n"
	        "%s/%s\n"
	        "    The SPOE configuration.\n"
	        "%s/%s\n"
	        "    The agent's options for dbucket-spoa.service.\n"
	        "%s/" DBK_RENDER_ERROR_PREFIX "NNN.http\n"
	        "    HAProxy's own answers (503 no server, 504 timeout, ...) as JSON\n"
	        "    errors; haproxy.cfg loads them from there.\n"
	        "\n"
	        "Install (as root, dbucket installed with `make install`):\n"
	        "\n"
	        "  haproxy -c -f %s/%s\n"
	        "  install -m 644 %s/%s /etc/default/dbucket-spoa\n"
	        "  cp --backup=numbered %s/%s /etc/haproxy/haproxy.cfg\n"
	        "      # or point CONFIG in /etc/default/haproxy at it\n"
	        "  systemctl enable --now dbucket-spoa.service\n"
	        "  systemctl restart haproxy.service\n"
	        "\n"
	        "The unit's drop-in for haproxy.service (share/dbucket/haproxy.service.d)\n"
	        "makes HAProxy want the agent. Under another supervisor, run the agent as\n"
	        "\n"
	        "  %s --haproxy-socket %s ",
	        f->nhosts, f->nhosts == 1 ? "" : "s", a->agent, a->completions, a->stats_socket,
	        a->spoe_conf, dir, DBK_RENDER_SPOE_CONF, dir, DBK_RENDER_AGENT_ENV, dir, dir,
	        DBK_RENDER_HAPROXY_CFG, dir, DBK_RENDER_AGENT_ENV, dir, DBK_RENDER_HAPROXY_CFG,
	        agent_path, a->agent_haproxy_socket);
	agent_opts(out, f, a);
	fputs("\n\n"
	      "with write access to HAProxy's runtime API socket (the configuration gives\n"
	      "it to group haproxy). Its /state and /metrics: curl http://",
	      out);
	fprintf(out, "%s/metrics\n", a->agent_admin);
	return ferror(out) ? -1 : 0;
}
