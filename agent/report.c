/* Renders the agent's state for people (/state, JSON) and for
 * Prometheus (/metrics, text format 0.0.4). Read-only. */
#include <inttypes.h>

#include "agent.h"
#include "lib/clock.h"

static void state_servers(const struct dbk_agent *a, struct dbk_buf *o)
{
	const struct dbk_bal_config *c = dbk_bal_config(a->bal);

	dbk_buf_printf(o, "  \"servers\": [\n");
	for (unsigned i = 0; i < a->cfg.nservers; i++) {
		dbk_buf_printf(o, "    {\"name\": \"%s\", \"group\": %u, \"usable\": %s, "
		              "\"inflight\": %u, \"load\": %.17g",
		              a->cfg.servers[i], dbk_bal_group_of(a->bal, i),
		              dbk_bal_usable(a->bal, i) ? "true" : "false",
		              dbk_bal_server_inflight(a->bal, i), dbk_bal_server_load(a->bal, i));
		if (a->sync) {
			const struct dbk_rt_server *r = dbk_sync_server(a->sync, i);
			dbk_buf_printf(o, ", \"haproxy_state\": \"%s\", \"haproxy_sessions\": %ld",
			              dbk_rt_state_str(r->state), dbk_rt_server_load(r));
		}
		dbk_buf_printf(o, "}%s\n", i + 1 < a->cfg.nservers ? "," : "");
	}
	dbk_buf_printf(o, "  ],\n  \"buckets\": [\n");
	for (unsigned b = 0; b < c->nbuckets; b++)
		dbk_buf_printf(o, "    {\"min\": %.17g, \"max\": %.17g, \"load\": %.17g}%s\n",
		              c->bounds[b], c->bounds[b + 1], dbk_bal_bucket_load(a->bal, b),
		              b + 1 < c->nbuckets ? "," : "");
	dbk_buf_printf(o, "  ],\n");
}

/* One line a counter, so that people and grep read it alike. */
void dbk_report_state(const struct dbk_agent *a, struct dbk_buf *o)
{
	const struct dbk_bal_stats *b = dbk_bal_stats(a->bal);
	const struct dbk_events_stats *e = dbk_events_stats(a->events);
	const struct dbk_histo *h = &a->completion_lag_ms;

	dbk_buf_printf(o, "{\n  \"mode\": \"%s\",\n  \"policy\": \"%s\",\n",
	              a->cfg.dynamic ? "dynamic" : "plain", dbk_policy_name(a->cfg.policy));
	state_servers(a, o);
	if (a->scrape)
		dbk_scrape_report_state(a->scrape, dbk_mono_ms(), o);
	if (a->pred)
		dbk_policy_report_state(a->pred, a->cfg.servers, a->cfg.nservers, dbk_mono_ms(), o);
	if (a->sync) {
		const struct dbk_sync_stats *y = dbk_sync_stats(a->sync);
		dbk_buf_printf(o, "  \"runtime_api_up\": %s,\n  \"runtime_polls\": %" PRIu64
		              ",\n  \"runtime_failures\": %" PRIu64 ",\n",
		              y->up ? "true" : "false", y->polls, y->failures);
	}
	dbk_buf_printf(o,
	              "  \"leases\": %zu,\n  \"decisions\": %" PRIu64 ",\n"
	              "  \"reclaimed\": %" PRIu64 ",\n"
	              "  \"redirects\": %" PRIu64 ",\n  \"released\": %" PRIu64 ",\n"
	              "  \"expired\": %" PRIu64 ",\n  \"unknown_releases\": %" PRIu64 ",\n"
	              "  \"refused\": %" PRIu64 ",\n  \"completions\": %" PRIu64 ",\n"
	              "  \"completion_duplicates\": %" PRIu64 ",\n"
	              "  \"ended_before_decision\": %" PRIu64 ",\n"
	              "  \"undecided\": %" PRIu64 ",\n  \"moved\": %" PRIu64 ",\n"
	              "  \"served_elsewhere\": %" PRIu64 ",\n"
	              "  \"completion_links\": %u,\n  \"completion_datagrams\": %" PRIu64 ",\n"
	              "  \"bad_completion_lines\": %" PRIu64 ",\n"
	              "  \"completion_lag_ms\": {\"count\": %" PRIu64
	              ", \"p50\": %.3f, \"p99\": %.3f}\n}\n",
	              b->leases, b->decisions, b->reclaimed, b->redirects, a->stats.released,
	              a->stats.expired, b->unknown_releases, b->refused, a->stats.completions,
	              a->stats.duplicates, b->ended, a->stats.undecided, a->route.stats.moved, a->stats.elsewhere, e->open,
	              e->datagrams, e->bad_lines, h->count,
	              dbk_histo_quantile(h, 0.5), dbk_histo_quantile(h, 0.99));
}

static void counter(struct dbk_buf *o, const char *name, const char *help, uint64_t v)
{
	dbk_buf_printf(o, "# HELP %s %s\n# TYPE %s counter\n%s %" PRIu64 "\n", name, help,
	              name, name, v);
}

static void gauge(struct dbk_buf *o, const char *name, const char *help, double v)
{
	dbk_buf_printf(o, "# HELP %s %s\n# TYPE %s gauge\n%s %.17g\n", name, help, name,
	              name, v);
}

static void histogram(struct dbk_buf *o, const char *name, const char *help,
                      const struct dbk_histo *h, double scale)
{
	uint64_t cum = 0;

	dbk_buf_printf(o, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
	for (unsigned i = 0; i < h->nbounds; i++) {
		cum += h->counts[i];
		dbk_buf_printf(o, "%s_bucket{le=\"%.6g\"} %" PRIu64 "\n", name,
		              h->bounds[i] * scale, cum);
	}
	dbk_buf_printf(o, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n%s_sum %.17g\n%s_count %" PRIu64 "\n",
	              name, h->count, name, h->sum * scale, name, h->count);
}

static const char *const status_names[] = {
	"normal", "io", "timeout", "too_big", "invalid", "no_version", "no_frame_size",
	"no_capabilities", "bad_version", "bad_frame_size", "fragmentation", "interlaced",
	"frame_id_not_found", "resource", "unknown",
};

void dbk_report_metrics(const struct dbk_agent *a, struct dbk_buf *o)
{
	const struct dbk_bal_stats *b = dbk_bal_stats(a->bal);
	const struct dbk_spoa_stats *s = dbk_spoa_stats(a->spoa);
	const struct dbk_events_stats *e = dbk_events_stats(a->events);
	const struct dbk_bal_config *c = dbk_bal_config(a->bal);
	const struct dbk_route_stats *r = &a->route.stats;

	dbk_buf_printf(o, "# HELP dbucket_decisions_total Requests routed, by standard bucket "
	                 "(length) and chosen group.\n# TYPE dbucket_decisions_total counter\n");
	for (unsigned i = 0; i < c->nbuckets; i++)
		for (unsigned g = 0; g < c->nbuckets; g++)
			dbk_buf_printf(o, "dbucket_decisions_total{bucket=\"%u\",group=\"%u\"} %" PRIu64
			              "\n", i, g, r->by_bucket_group[i][g]);
	dbk_buf_printf(o, "# HELP dbucket_server_decisions_total Requests routed, by server.\n"
	                 "# TYPE dbucket_server_decisions_total counter\n");
	for (unsigned i = 0; i < a->cfg.nservers; i++)
		dbk_buf_printf(o, "dbucket_server_decisions_total{server=\"%s\"} %" PRIu64 "\n",
		              a->cfg.servers[i], a->route.by_server ? a->route.by_server[i] : 0);
	counter(o, "dbucket_redirects_total", "Requests sent to a neighbour group.", b->redirects);
	counter(o, "dbucket_refused_total", "Route requests answered without a server.",
	        r->refused + r->no_id);
	counter(o, "dbucket_unknown_releases_total", "Completions for ids with no lease.",
	        b->unknown_releases);
	dbk_buf_printf(o, "# HELP dbucket_releases_total Leases given back, by cause.\n"
	                 "# TYPE dbucket_releases_total counter\n"
	                 "dbucket_releases_total{cause=\"completion\"} %" PRIu64 "\n"
	                 "dbucket_releases_total{cause=\"ttl\"} %" PRIu64 "\n"
	                 "dbucket_releases_total{cause=\"reconcile\"} %" PRIu64 "\n",
	              a->stats.released, a->stats.expired, b->reclaimed);
	counter(o, "dbucket_completions_total", "Requests whose completion line arrived.",
	        a->stats.completions);
	counter(o, "dbucket_ended_before_decision_total",
	        "Route requests for a request whose completion line came first.", b->ended);
	counter(o, "dbucket_completion_duplicates_total",
	        "Second copies of a completion line (each is sent by two paths).",
	        a->stats.duplicates);
	counter(o, "dbucket_moved_total",
	        "Leases moved to the server HAProxy retried or redispatched to.", r->moved);
	counter(o, "dbucket_completions_elsewhere_total",
	        "Completions from another server than their lease named.", a->stats.elsewhere);
	counter(o, "dbucket_completion_bad_lines_total", "Completion lines not understood.",
	        e->bad_lines);
	gauge(o, "dbucket_completion_links", "Open completion-event connections.", e->open);
	counter(o, "dbucket_completion_datagrams_total",
	        "Completion datagrams received (udp@ listeners).", e->datagrams);
	gauge(o, "dbucket_inflight_leases", "Requests in flight (live leases).", (double)b->leases);
	counter(o, "dbucket_spop_connections_total", "SPOP connections accepted.", s->accepted);
	counter(o, "dbucket_spop_refused_connections_total",
	        "SPOP connections closed at once: over --max-connections.", s->refused_conns);
	gauge(o, "dbucket_spop_connections", "Open SPOP connections.", s->open);
	counter(o, "dbucket_spop_notifies_total", "NOTIFY frames handled.", r->notifies);
	dbk_buf_printf(o, "# HELP dbucket_spop_disconnects_total DISCONNECTs the agent sent, "
	                 "by status.\n# TYPE dbucket_spop_disconnects_total counter\n");
	for (unsigned i = 0; i < sizeof(status_names) / sizeof(status_names[0]); i++)
		dbk_buf_printf(o, "dbucket_spop_disconnects_total{status=\"%s\"} %" PRIu64 "\n",
		              status_names[i], s->disconnects[i]);
	histogram(o, "dbucket_decision_seconds",
	          "Time to handle one NOTIFY: decode, decide, encode the ACK.",
	          &s->notify_seconds, 1.0);

	dbk_buf_printf(o, "# HELP dbucket_server_inflight Requests in flight per server.\n"
	                 "# TYPE dbucket_server_inflight gauge\n");
	for (unsigned i = 0; i < a->cfg.nservers; i++)
		dbk_buf_printf(o, "dbucket_server_inflight{server=\"%s\"} %u\n", a->cfg.servers[i],
		              dbk_bal_server_inflight(a->bal, i));
	dbk_buf_printf(o, "# HELP dbucket_server_load Load in flight per server (sum of scores).\n"
	                 "# TYPE dbucket_server_load gauge\n");
	for (unsigned i = 0; i < a->cfg.nservers; i++)
		dbk_buf_printf(o, "dbucket_server_load{server=\"%s\"} %.17g\n", a->cfg.servers[i],
		              dbk_bal_server_load(a->bal, i));
	dbk_buf_printf(o, "# HELP dbucket_server_usable Whether the agent may choose the server "
	                 "(1) or HAProxy said DOWN, MAINT or DRAIN (0).\n"
	                 "# TYPE dbucket_server_usable gauge\n");
	for (unsigned i = 0; i < a->cfg.nservers; i++)
		dbk_buf_printf(o, "dbucket_server_usable{server=\"%s\"} %d\n", a->cfg.servers[i],
		              dbk_bal_usable(a->bal, i) ? 1 : 0);
	dbk_buf_printf(o, "# HELP dbucket_bucket_load Load in flight per bucket.\n"
	                 "# TYPE dbucket_bucket_load gauge\n");
	for (unsigned i = 0; i < c->nbuckets; i++)
		dbk_buf_printf(o, "dbucket_bucket_load{bucket=\"%u\"} %.17g\n", i,
		              dbk_bal_bucket_load(a->bal, i));
	histogram(o, "dbucket_completion_lag_seconds",
	          "From a stream's end (HAProxy's log time) to the release of its load.",
	          &a->completion_lag_ms, 0.001);
	counter(o, "dbucket_config_changes_total",
	        "Settings applied live (SIGHUP or POST /config).", a->config_changes);
	if (c->nbuckets == 2)
		gauge(o, "dbucket_config_threshold_tokens",
		      "Where the long bucket starts (server-group-threshold).", c->bounds[1]);
	gauge(o, "dbucket_config_max_request_tokens", "Upper bound of the last bucket.",
	      c->bounds[c->nbuckets]);
	gauge(o, "dbucket_config_sensitivity", "Exponent on the load ratio.", c->sensitivity);
	gauge(o, "dbucket_config_affinity_strength", "Decay of length affinity.",
	      c->affinity_strength);
	gauge(o, "dbucket_config_redirect_threshold", "Redirect probability to move a request.",
	      c->redirect_threshold);
	dbk_buf_printf(o, "# HELP dbucket_config_group_servers Servers per group.\n"
	                 "# TYPE dbucket_config_group_servers gauge\n");
	for (unsigned g = 0; g < c->nbuckets; g++)
		dbk_buf_printf(o, "dbucket_config_group_servers{group=\"%u\"} %u\n", g,
		              dbk_bal_group_size(c, g));
	if (a->sync) {
		const struct dbk_sync_stats *y = dbk_sync_stats(a->sync);
		gauge(o, "dbucket_runtime_api_up", "The last runtime API poll succeeded.", y->up);
		counter(o, "dbucket_runtime_api_failures_total", "Runtime API polls that failed.",
		        y->failures);
	}
	if (a->scrape)
		dbk_scrape_report_metrics(a->scrape, dbk_mono_ms(), o);
	if (a->pred) {
		counter(o, "dbucket_ttft_too_long_total",
		        "Requests no usable server's max_model_len could hold (sent to the largest).",
		        r->too_long);
		dbk_policy_report_metrics(a->pred, a->cfg.servers, a->cfg.nservers, dbk_mono_ms(), o);
	}
}
