/* haproxy.cfg's backends (render_parts.h): HAProxy's own metrics and
 * stats, the vLLM servers (the shared backend, and one per model in
 * --layout per-model, as haproxy/models-per-backend.cfg), the agents.
 * Keep in step with haproxy/haproxy.cfg. */
#include "render_parts.h"

#include <string.h>

/* What every backend of vLLM servers says before its servers. */
static void servers_head(FILE *out, const struct dbk_launch_flags *f)
{
	fputs("    # The agent's choice wins when it names a usable server; otherwise\n"
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
	        f->max_retries, f->retry_delay, dbk_flags_haproxy_retries(f));
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
}

/* Server i's line; model: only the servers of that model, NULL: all. */
static void server_lines(FILE *out, const struct dbk_launch_flags *f,
                         const struct dbk_render_addrs *a, const char *model)
{
	if (a->production)
		fputs("    # DBK_SERVER_MAXCONN in HAProxy's environment caps each server's\n"
		      "    # requests; the rest wait in HAProxy's queue, critical first.\n",
		      out);
	for (unsigned i = 0; i < f->nhosts; i++) {
		if (model && strcmp(f->server_models[i], model) != 0)
			continue;
		fprintf(out, "    server vllm%u \"", i);
		dbk_render_haproxy_addr(out, f->server_hosts[i], f->server_ports[i]);
		fprintf(out,
		        "\"%s check inter 2s observe layer7 error-limit 10 on-error mark-down\n",
		        a->production ? " maxconn \"${DBK_SERVER_MAXCONN-0}\"" : "");
	}
}

void dbk_render_cfg_backends(FILE *out, const struct dbk_launch_flags *f,
                             const struct dbk_render_addrs *a)
{
	const char *models[DBK_LAUNCH_MAX_MODELS];
	unsigned nmodels = dbk_flags_models(f, models);
	char name[DBK_LAUNCH_MODEL_MAX + 1];

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
	      "\n",
	      out);
	if (nmodels)
		fputs("# Every server, for what no model rule sends elsewhere (and the\n"
		      "# /healthcheck count), as haproxy.cfg beside models-per-backend.cfg.\n",
		      out);
	fputs("backend vllm\n", out);
	servers_head(out, f);
	server_lines(out, f, a, NULL);
	for (unsigned m = 0; m < nmodels; m++) {
		dbk_flags_backend_name(models[m], name, sizeof(name));
		fprintf(out, "\n# Model %s's servers: the agent's pool %s.\nbackend %s\n",
		        models[m], name, name);
		servers_head(out, f);
		fputs("    http-request return status 503 content-type application/json hdr "
		      "Cache-Control no-cache string " DBK_RENDER_MODEL_503 " if { nbsrv eq 0 }\n",
		      out);
		server_lines(out, f, a, models[m]);
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
