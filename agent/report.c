/* Renders the agent's state for people (/state, JSON) and for
 * Prometheus (/metrics, text format 0.0.4). Read-only.
 *
 * Every number is listed once, in a table that says what it is called
 * in each rendering, what it means and where it is read; both renderings
 * walk the same tables, so a counter cannot appear in one and be
 * forgotten in the other by accident (a NULL name says it is left out on
 * purpose). */
#include <inttypes.h>
#include <string.h>

#include "report.h"

#include "agent.h"
#include "lib/clock.h"
#include "policy_ttft.h"
#include "prom_merge.h"
#include "prom_text.h"
#include "scrape.h"

/* Where a number lives: one of the agent's stats blocks. A block that is
 * not running (no runtime API, not the ttft policy) leaves its rows out
 * of both renderings. */
enum src {
	SRC_BAL,    /* struct dbk_bal_stats */
	SRC_ACCT,   /* struct dbk_acct_stats */
	SRC_ROUTE,  /* struct dbk_route_stats */
	SRC_CHOOSE, /* struct dbk_route_stats, with a policy that chooses only */
	SRC_RX,     /* struct dbk_completion_rx_stats */
	SRC_SPOP,   /* struct dbk_spop_server_stats */
	SRC_SYNC,   /* struct dbk_runtime_sync_stats, with --haproxy-socket only */
	SRC_POOL,   /* struct dbk_pool */
	SRC_FRONT,  /* struct dbk_route_stats of the route NOTIFYs come to */
	NSRC
};

enum kind {
	COUNTER,
	GAUGE,
	FLAG, /* a gauge of 0 or 1; true or false in JSON */
};

struct row {
	const char *json;   /* /state key; NULL: /metrics only */
	const char *metric; /* /metrics name; NULL: /state only */
	const char *label;  /* its label within a family, or NULL */
	const char *help;   /* the family's, on its first row */
	enum kind kind;
	enum src src;
	size_t off, size; /* an unsigned integer or bool in src */
	/* When set, the value instead (a sum of fields). */
	uint64_t (*read)(const struct dbk_pool *p);
};

#define FIELD(src, type, f) src, offsetof(type, f), sizeof(((type *)0)->f)
#define BAL(f) FIELD(SRC_BAL, struct dbk_bal_stats, f)
#define ACCT(f) FIELD(SRC_ACCT, struct dbk_acct_stats, f)
#define ROUTE(f) FIELD(SRC_ROUTE, struct dbk_route_stats, f)
#define CHOOSE(f) FIELD(SRC_CHOOSE, struct dbk_route_stats, f)
#define RX(f) FIELD(SRC_RX, struct dbk_completion_rx_stats, f)
#define SPOP(f) FIELD(SRC_SPOP, struct dbk_spop_server_stats, f)
#define SYNC(f) FIELD(SRC_SYNC, struct dbk_runtime_sync_stats, f)
#define POOL(f) FIELD(SRC_POOL, struct dbk_pool, f)
#define FRONT(f) FIELD(SRC_FRONT, struct dbk_route_stats, f)

/* The sources every pool shares: rendered once, without a pool label. */
static bool shared(enum src s) { return s == SRC_RX || s == SRC_SPOP || s == SRC_FRONT; }

/* The route refuses for the balancer's reasons and for a missing id. */
static uint64_t route_refused(const struct dbk_pool *p)
{
	return p->route.stats.refused + p->route.stats.no_id;
}

static uint64_t fleet_saturated(const struct dbk_pool *p)
{
	return dbk_sat_fleet(&p->sat, p->bal, dbk_mono_ms());
}

/* Whole milliseconds; 0 when not known. */
static uint64_t fleet_first_token_ms(const struct dbk_pool *p)
{
	return (uint64_t)(dbk_sat_fleet_ttft_ms(&p->sat, dbk_mono_ms()) + 0.5);
}

static const struct row rows[] = {
	/* Decisions. "decisions" and "refused" count the balancer's own
	 * verdicts; /metrics breaks decisions down by bucket and group
	 * (below) and counts refusals as the route answered them. */
	{ "leases", "dbucket_inflight_leases", NULL, "Requests in flight (live leases).", GAUGE,
	  BAL(leases), NULL },
	{ "decisions", NULL, NULL, NULL, COUNTER, BAL(decisions), NULL },
	{ "redirects", "dbucket_redirects_total", NULL, "Requests sent to a neighbour group.",
	  COUNTER, BAL(redirects), NULL },
	{ "refused", NULL, NULL, NULL, COUNTER, BAL(refused), NULL },
	{ NULL, "dbucket_refused_total", NULL, "Route requests answered without a server.", COUNTER,
	  ROUTE(refused), route_refused },
	{ "ended_before_decision", "dbucket_ended_before_decision_total", NULL,
	  "Route requests for a request whose completion line came first.", COUNTER, BAL(ended),
	  NULL },
	{ "moved", "dbucket_moved_total", NULL,
	  "Leases moved to the server HAProxy retried or redispatched to.", COUNTER, ROUTE(moved),
	  NULL },
	/* Bodies not whole at the decision (estimate_hold.h): by default
	 * charged in full and watched, their prefill taken back while their
	 * server's counts miss them; strict, held back until counted. */
	{ "partial_bodies_watched", "dbucket_partial_bodies_watched_total", NULL,
	  "Requests whose body was not whole at the decision, charged in full and watched.",
	  COUNTER, POOL(hold.stats.watched), NULL },
	{ "charges_taken_back", "dbucket_charges_taken_back_total", NULL,
	  "Prefill charges taken back from partial bodies their server's counts kept missing.",
	  COUNTER, POOL(hold.stats.taken_back), NULL },
	{ "charges_recharged", "dbucket_charges_recharged_total", NULL,
	  "Prefill charges taken back, then given in full again (counted, or scrape failed).",
	  COUNTER, POOL(hold.stats.recharged), NULL },
	{ "charges_held", "dbucket_charges_held_total", NULL,
	  "Requests charged without their prefill (body not whole) until their server counted "
	  "them.",
	  COUNTER, POOL(hold.stats.held), NULL },
	{ "charges_confirmed", "dbucket_charges_completed_total", "cause=\"counted\"",
	  "Held-back charges made whole, by cause.", COUNTER, POOL(hold.stats.confirmed), NULL },
	{ "charges_unwatched", "dbucket_charges_completed_total", "cause=\"scrape_failed\"", NULL,
	  COUNTER, POOL(hold.stats.unwatched), NULL },
	/* Releases, by cause. */
	{ "released", "dbucket_releases_total", "cause=\"completion\"",
	  "Leases given back, by cause.", COUNTER, BAL(releases), NULL },
	{ "expired", "dbucket_releases_total", "cause=\"ttl\"", NULL, COUNTER, BAL(expired), NULL },
	{ "reclaimed", "dbucket_releases_total", "cause=\"reconcile\"", NULL, COUNTER,
	  BAL(reclaimed), NULL },
	{ "dropped", "dbucket_releases_total", "cause=\"server_gone\"", NULL, COUNTER, BAL(dropped),
	  NULL },
	{ "unknown_releases", "dbucket_unknown_releases_total", NULL,
	  "Completions for ids with no lease.", COUNTER, BAL(unknown_releases), NULL },
	/* Completion lines. */
	{ "completions", "dbucket_completions_total", NULL,
	  "Requests whose completion line arrived.", COUNTER, ACCT(completions), NULL },
	{ "completion_duplicates", "dbucket_completion_duplicates_total", NULL,
	  "Second copies of a completion line (each is sent by two paths).", COUNTER,
	  ACCT(duplicates), NULL },
	{ "undecided", NULL, NULL, NULL, COUNTER, ACCT(undecided), NULL },
	{ "served_elsewhere", "dbucket_completions_elsewhere_total", NULL,
	  "Completions from another server than their lease named.", COUNTER, ACCT(elsewhere),
	  NULL },
	{ "completion_links", "dbucket_completion_links", NULL,
	  "Open completion-event connections.", GAUGE, RX(open), NULL },
	{ "completion_datagrams", "dbucket_completion_datagrams_total", NULL,
	  "Completion datagrams received (udp@ listeners).", COUNTER, RX(datagrams), NULL },
	{ "bad_completion_lines", "dbucket_completion_bad_lines_total", NULL,
	  "Completion lines not understood.", COUNTER, RX(bad_lines), NULL },
	{ "completion_links_refused", "dbucket_completion_refused_links_total", NULL,
	  "Completion links closed at once: over a limit, or not --allow-from.", COUNTER,
	  RX(refused), NULL },
	{ "completion_datagrams_refused", "dbucket_completion_refused_datagrams_total", NULL,
	  "Completion datagrams dropped: their sender is not --allow-from.", COUNTER,
	  RX(refused_datagrams), NULL },
	{ "completion_links_evicted", "dbucket_completion_evicted_links_total", NULL,
	  "Completion links closed to make way: no lease ended for 60 s, or never.", COUNTER,
	  RX(evicted), NULL },
	/* SPOP. */
	{ NULL, "dbucket_spop_connections_total", NULL, "SPOP connections accepted.", COUNTER,
	  SPOP(accepted), NULL },
	{ NULL, "dbucket_spop_refused_connections_total", NULL,
	  "SPOP connections closed at once: over --max-connections.", COUNTER, SPOP(refused_conns),
	  NULL },
	{ NULL, "dbucket_spop_evicted_connections_total", NULL,
	  "SPOP connections that never sent a NOTIFY, closed to make way for a new one.", COUNTER,
	  SPOP(evicted_conns), NULL },
	{ NULL, "dbucket_spop_connections", NULL, "Open SPOP connections.", GAUGE, SPOP(open),
	  NULL },
	{ NULL, "dbucket_spop_notifies_total", NULL, "NOTIFY frames handled.", COUNTER,
	  FRONT(notifies), NULL },
	/* HAProxy's runtime API. */
	{ "runtime_api_up", "dbucket_runtime_api_up", NULL, "The last runtime API poll succeeded.",
	  FLAG, SYNC(up), NULL },
	{ "runtime_polls", NULL, NULL, NULL, COUNTER, SYNC(polls), NULL },
	{ "runtime_failures", "dbucket_runtime_api_failures_total", NULL,
	  "Runtime API polls that failed.", COUNTER, SYNC(failures), NULL },
	{ "backend_servers", "dbucket_backend_servers", NULL,
	  "Servers of HAProxy's backend the agent follows now.", GAUGE, SYNC(present), NULL },
	{ "backend_left_out", "dbucket_backend_servers_left_out", NULL,
	  "Servers of HAProxy's backend beyond --max-servers, not chosen.", GAUGE, SYNC(no_room),
	  NULL },
	{ "servers_added", "dbucket_backend_changes_total", "change=\"added\"",
	  "Changes to HAProxy's backend the agent followed.", COUNTER, SYNC(added), NULL },
	{ "servers_removed", "dbucket_backend_changes_total", "change=\"removed\"", NULL, COUNTER,
	  SYNC(removed), NULL },
	{ "servers_readdressed", "dbucket_backend_changes_total", "change=\"readdressed\"", NULL,
	  COUNTER, SYNC(readdressed), NULL },
	/* Settings and policies. */
	{ NULL, "dbucket_config_changes_total", NULL,
	  "Settings applied live (SIGHUP or POST /config).", COUNTER, POOL(config_changes), NULL },
	{ NULL, "dbucket_ttft_too_long_total", NULL,
	  "Requests no usable server's max_model_len could hold (sent to the largest).", COUNTER,
	  CHOOSE(too_long), NULL },
	{ "unsized_bodies", "dbucket_unsized_bodies_total", NULL,
	  "Requests whose body came without a Content-Length and went on past the sample: "
	  "routed as the longest (the longest context, or the longest bucket).",
	  COUNTER, ROUTE(unsized_bodies), NULL },
	/* Admission (issue 28): by the class haproxy.cfg gave the request.
	 * Critical is never shed, so it has no shed rows. */
	{ "admission", "dbucket_admission_enabled", NULL,
	  "Whether admission (--admission) may shed requests.", FLAG, POOL(cfg.admit.enabled),
	  NULL },
	{ "fleet_saturated", "dbucket_fleet_saturated", NULL,
	  "No usable server has room by its scraped queue and KV-cache use (--saturation-*).", FLAG,
	  POOL(sat.n), fleet_saturated },
	/* /state only: the rows carry whole numbers, and /metrics wants
	 * seconds; vLLM's own histogram is on the dashboard. */
	{ "fleet_first_token_ms", NULL, NULL, NULL, GAUGE, POOL(sat.n), fleet_first_token_ms },
	{ "admitted_critical", "dbucket_admission_admitted_total", "class=\"critical\"",
	  "Route requests given a server, by class.", COUNTER, ROUTE(admitted[DBK_CLASS_CRITICAL]),
	  NULL },
	{ "admitted_standard", "dbucket_admission_admitted_total", "class=\"standard\"", NULL,
	  COUNTER, ROUTE(admitted[DBK_CLASS_STANDARD]), NULL },
	{ "admitted_sheddable", "dbucket_admission_admitted_total", "class=\"sheddable\"", NULL,
	  COUNTER, ROUTE(admitted[DBK_CLASS_SHEDDABLE]), NULL },
	{ "shed_standard_predicted_late", "dbucket_admission_shed_total",
	  "class=\"standard\",reason=\"predicted_late\"",
	  "Route requests refused (HAProxy answers 429), by class and reason.", COUNTER,
	  ROUTE(shed[DBK_CLASS_STANDARD][DBK_SHED_PREDICTED_LATE]), NULL },
	{ "shed_standard_saturated", "dbucket_admission_shed_total",
	  "class=\"standard\",reason=\"saturated\"", NULL, COUNTER,
	  ROUTE(shed[DBK_CLASS_STANDARD][DBK_SHED_SATURATED]), NULL },
	{ "shed_standard_fleet_late", "dbucket_admission_shed_total",
	  "class=\"standard\",reason=\"fleet_late\"", NULL, COUNTER,
	  ROUTE(shed[DBK_CLASS_STANDARD][DBK_SHED_FLEET_LATE]), NULL },
	{ "shed_sheddable_predicted_late", "dbucket_admission_shed_total",
	  "class=\"sheddable\",reason=\"predicted_late\"", NULL, COUNTER,
	  ROUTE(shed[DBK_CLASS_SHEDDABLE][DBK_SHED_PREDICTED_LATE]), NULL },
	{ "shed_sheddable_saturated", "dbucket_admission_shed_total",
	  "class=\"sheddable\",reason=\"saturated\"", NULL, COUNTER,
	  ROUTE(shed[DBK_CLASS_SHEDDABLE][DBK_SHED_SATURATED]), NULL },
	{ "shed_sheddable_fleet_late", "dbucket_admission_shed_total",
	  "class=\"sheddable\",reason=\"fleet_late\"", NULL, COUNTER,
	  ROUTE(shed[DBK_CLASS_SHEDDABLE][DBK_SHED_FLEET_LATE]), NULL },
	{ "bad_class", "dbucket_admission_bad_class_total", NULL,
	  "Route requests whose class was not known (taken as standard).", COUNTER,
	  ROUTE(bad_class), NULL },
	/* Model routing (issue 27): from the servers' /v1/models. */
	{ "model_filtered", "dbucket_model_filtered_total", NULL,
	  "Route requests whose candidates were narrowed to the servers serving their model.",
	  COUNTER, ROUTE(model_filtered), NULL },
	{ "unknown_model", "dbucket_model_refused_total", "reason=\"unknown_model\"",
	  "Route requests answered without a server by their model: no server lists it (HAProxy "
	  "answers 404) or none that serves it is usable (503).",
	  COUNTER, ROUTE(unknown_model), NULL },
	{ "model_unavailable", "dbucket_model_refused_total", "reason=\"unavailable\"", NULL,
	  COUNTER, ROUTE(model_unavailable), NULL },
};

/* Per server: one element of /state's "servers" and one series of a
 * {server="..."} family each. */
struct column {
	const char *json, *metric, *help;
	enum kind kind;
	bool fractional; /* else a whole number */
	double (*read)(const struct dbk_pool *p, unsigned i);
};

static double col_group(const struct dbk_pool *p, unsigned i)
{
	return dbk_bal_group_of(p->bal, i);
}

static double col_usable(const struct dbk_pool *p, unsigned i) { return dbk_bal_usable(p->bal, i); }

static double col_inflight(const struct dbk_pool *p, unsigned i)
{
	return dbk_bal_server_inflight(p->bal, i);
}

static double col_load(const struct dbk_pool *p, unsigned i)
{
	return dbk_bal_server_load(p->bal, i);
}

static double col_weight(const struct dbk_pool *p, unsigned i) { return dbk_bal_weight(p->bal, i); }

static double col_decisions(const struct dbk_pool *p, unsigned i)
{
	return p->route.by_server ? (double)p->route.by_server[i] : 0;
}

static const struct column columns[] = {
	{ "group", NULL, NULL, GAUGE, false, col_group },
	{ "usable", "dbucket_server_usable",
	  "Whether the agent may choose the server (1), or not (0): HAProxy said DOWN, MAINT or "
	  "DRAIN, outlier detection ejected it, or its engine sleeps.",
	  FLAG, false, col_usable },
	{ "inflight", "dbucket_server_inflight", "Requests in flight per server.", GAUGE, false,
	  col_inflight },
	{ "load", "dbucket_server_load", "Load in flight per server (sum of scores).", GAUGE, true,
	  col_load },
	{ "weight", "dbucket_server_weight",
	  "The weight the agent balances by: HAProxy's effective weight (1 without the runtime "
	  "API).",
	  GAUGE, true, col_weight },
	{ NULL, "dbucket_server_decisions_total", "Requests routed, by server.", COUNTER, false,
	  col_decisions },
};

struct histogram {
	const char *json;   /* in ms, as count, p50 and p99 */
	const char *metric; /* in seconds */
	const char *help;
	double to_seconds;
	const struct dbk_histo *(*read)(const struct dbk_agent *a, const struct dbk_pool *p);
	bool shared; /* the agent's, not a pool's */
};

static const struct dbk_histo *notify_seconds(const struct dbk_agent *a, const struct dbk_pool *p)
{
	(void)p;
	return &a->route_handler.notify_seconds;
}

static const struct dbk_histo *completion_lag(const struct dbk_agent *a, const struct dbk_pool *p)
{
	(void)a;
	return &p->acct.lag_ms;
}

static const struct histogram histograms[] = {
	{ NULL, "dbucket_decision_seconds",
	  "Time to handle one NOTIFY: decode, decide, encode the ACK.", 1.0, notify_seconds, true },
	{ "completion_lag_ms", "dbucket_completion_lag_seconds",
	  "From a stream's end (HAProxy's log time) to the release of its load.", 0.001,
	  completion_lag, false },
};

#define COUNT(t) (sizeof(t) / sizeof((t)[0]))

static const char *const kind_names[] = { "counter", "gauge", "gauge" };

/* What a part of the report renders: one pool's numbers, the agent's
 * shared ones, or (one pool, no --pool) both, in the order they had
 * before pools were. */
enum part { PART_POOL = 1, PART_SHARED = 2, PART_ALL = 3 };

static bool in_part(bool is_shared, enum part part)
{
	return (part & (is_shared ? PART_SHARED : PART_POOL)) != 0;
}

static bool pooled(const struct dbk_agent *a) { return a->pools[0].cfg.pool != NULL; }

static void sources(const struct dbk_agent *a, const struct dbk_pool *p, const void *src[NSRC])
{
	src[SRC_BAL] = dbk_bal_stats(p->bal);
	src[SRC_ACCT] = &p->acct.stats;
	src[SRC_ROUTE] = &p->route.stats;
	src[SRC_CHOOSE] = p->cfg.policy->choose ? &p->route.stats : NULL;
	src[SRC_RX] = dbk_completion_rx_stats(a->events);
	src[SRC_SPOP] = dbk_spop_server_stats(a->spop);
	src[SRC_SYNC] = p->sync ? dbk_runtime_sync_stats(p->sync) : NULL;
	src[SRC_POOL] = p;
	src[SRC_FRONT] = pooled(a) ? &a->front.stats : &a->pools[0].route.stats;
}

static uint64_t value(const struct dbk_pool *p, const struct row *r, const void *base)
{
	const char *v = (const char *)base + r->off;

	if (r->read)
		return r->read(p);
	switch (r->size) {
	case 1: {
		uint8_t x;
		memcpy(&x, v, 1);
		return x;
	}
	case 2: {
		uint16_t x;
		memcpy(&x, v, 2);
		return x;
	}
	case 4: {
		uint32_t x;
		memcpy(&x, v, 4);
		return x;
	}
	default: {
		uint64_t x;
		memcpy(&x, v, 8);
		return x;
	}
	}
}

/* ---- /state ---- */

/* s as a JSON string's contents: a model id is the server's, any bytes. */
static void json_chars(struct dbk_buf *o, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\')
			dbk_buf_printf(o, "\\%c", c);
		else if (c < 0x20)
			dbk_buf_printf(o, "\\u%04x", c);
		else
			dbk_buf_printf(o, "%c", c);
	}
}

/* The server's models as /v1/models listed them (an adapter with its
 * parent), or null while they are not known. */
static void state_models(const struct dbk_pool *p, unsigned i, struct dbk_buf *o)
{
	const char *id, *parent;

	if (!p->models)
		return;
	if (dbk_models_state(p->models, i) != DBK_MODELS_KNOWN) {
		dbk_buf_printf(o, ", \"models\": null");
		return;
	}
	dbk_buf_printf(o, ", \"models\": [");
	for (unsigned k = 0; (id = dbk_models_id(p->models, i, k, &parent)) != NULL; k++) {
		dbk_buf_printf(o, "%s{\"id\": \"", k ? ", " : "");
		json_chars(o, id);
		if (parent[0]) {
			dbk_buf_printf(o, "\", \"parent\": \"");
			json_chars(o, parent);
		}
		dbk_buf_printf(o, "\"}");
	}
	dbk_buf_printf(o, "]");
}

/* The LoRA adapters with requests there and its slots, as its last
 * good scrape of vllm:lora_requests_info said (vllm_metrics.h; lists
 * comma-joined as vLLM's labels); nothing where none was read. */
static void state_lora(const struct dbk_pool *p, unsigned i, struct dbk_buf *o)
{
	const struct dbk_scrape_view *v = p->scrape ? dbk_scrape_view(p->scrape, i) : NULL;

	if (!v || !(v->m.have & DBK_VM_LORA))
		return;
	dbk_buf_printf(o, ", \"lora\": {\"max_lora\": %.0f, \"running\": \"", v->m.lora.max_lora);
	json_chars(o, v->m.lora.running);
	dbk_buf_printf(o, "\", \"waiting\": \"");
	json_chars(o, v->m.lora.waiting);
	dbk_buf_printf(o, "\"}");
}

static void state_servers(const struct dbk_pool *p, struct dbk_buf *o)
{
	const struct dbk_bal_config *c = dbk_bal_config(p->bal);

	const char *sep = "";

	/* HAProxy's servers only: a free slot (agent.h) is left out. */
	dbk_buf_printf(o, "  \"servers\": [\n");
	for (unsigned i = 0; i < p->cfg.nservers; i++) {
		if (!p->cfg.servers[i][0])
			continue;
		dbk_buf_printf(o, "%s    {\"name\": \"%s\"", sep, p->cfg.servers[i]);
		sep = ",\n";
		for (const struct column *k = columns; k < columns + COUNT(columns); k++) {
			double v = k->read(p, i);

			if (!k->json)
				continue;
			if (k->kind == FLAG)
				dbk_buf_printf(o, ", \"%s\": %s", k->json, v ? "true" : "false");
			else
				dbk_buf_printf(o,
				               k->fractional ? ", \"%s\": %.17g" : ", \"%s\": %.0f",
				               k->json, v);
		}
		dbk_buf_printf(o, ", \"slot\": %u", i);
		state_models(p, i, o);
		state_lora(p, i, o);
		if (p->sync) {
			const struct dbk_rt_server *r = dbk_runtime_sync_server(p->sync, i);
			dbk_buf_printf(o,
			               ", \"haproxy_state\": \"%s\", \"haproxy_sessions\": %ld, "
			               "\"haproxy_weight\": %ld",
			               dbk_rt_state_str(dbk_rt_server_state(r)),
			               dbk_rt_server_load(r), r->weight);
		}
		dbk_buf_printf(o, "}");
	}
	dbk_buf_printf(o, "%s  ],\n  \"buckets\": [\n", *sep ? "\n" : "");
	for (unsigned b = 0; b < c->nbuckets; b++)
		dbk_buf_printf(o, "    {\"min\": %.17g, \"max\": %.17g, \"load\": %.17g}%s\n",
		               c->bounds[b], c->bounds[b + 1], dbk_bal_bucket_load(p->bal, b),
		               b + 1 < c->nbuckets ? "," : "");
	dbk_buf_printf(o, "  ],\n");
}

/* One pool's document: what /state was before pools, with "pool" first
 * when --pool named it. One line a number, so that people and grep read
 * it alike. */
static void state_pool(const struct dbk_agent *a, const struct dbk_pool *p, struct dbk_buf *o)
{
	const void *src[NSRC];
	const char *sep = "";

	sources(a, p, src);
	dbk_buf_printf(o, "{\n");
	if (p->cfg.pool)
		dbk_buf_printf(o, "  \"pool\": \"%s\",\n", p->cfg.pool);
	dbk_buf_printf(o, "  \"mode\": \"%s\",\n  \"policy\": \"%s\",\n",
	               p->cfg.dynamic ? "dynamic" : "plain", p->cfg.policy->name);
	/* --engine-speed, for the status page's settings of ttft and p2ttft. */
	dbk_buf_printf(o, "  \"engine_speed\": %.17g,\n", p->cfg.engine_speed);
	/* --lora-load, or the default it stands for at that speed. */
	dbk_buf_printf(o, "  \"lora_load_s\": %.17g,\n",
	               dbk_policy_ttft_lora_load_s(dbk_config_lora_load_env_s(&p->cfg),
	                                           p->cfg.engine_speed));
	state_servers(p, o);
	if (p->scrape)
		dbk_scrape_report_state(p->scrape, dbk_mono_ms(), o);
	dbk_server_watch_report_state(&p->watch, dbk_mono_ms(), o);
	dbk_policy_report_state(&p->policy, p->cfg.servers, p->cfg.nservers, dbk_mono_ms(), o);
	for (const struct row *r = rows; r < rows + COUNT(rows); r++) {
		if (!r->json || !src[r->src])
			continue;
		uint64_t v = value(p, r, src[r->src]);
		if (r->kind == FLAG)
			dbk_buf_printf(o, "%s  \"%s\": %s", sep, r->json, v ? "true" : "false");
		else
			dbk_buf_printf(o, "%s  \"%s\": %" PRIu64, sep, r->json, v);
		sep = ",\n";
	}
	for (const struct histogram *h = histograms; h < histograms + COUNT(histograms); h++) {
		const struct dbk_histo *x = h->read(a, p);

		if (!h->json)
			continue;
		dbk_buf_printf(o,
		               "%s  \"%s\": {\"count\": %" PRIu64 ", \"p50\": %.3f, \"p99\": %.3f}",
		               sep, h->json, x->count, dbk_histo_quantile(x, 0.5),
		               dbk_histo_quantile(x, 0.99));
		sep = ",\n";
	}
	/* Requests routed per model: the agent's, every pool's. */
	const struct dbk_model_counts *mc = &a->route_handler.models;
	dbk_buf_printf(o, "%s  \"model_routed\": {", sep);
	for (unsigned i = 0; i < mc->n; i++) {
		dbk_buf_printf(o, "%s\"", i ? ", " : "");
		json_chars(o, mc->id[i]);
		dbk_buf_printf(o, "\": %" PRIu64, mc->routed[i]);
	}
	dbk_buf_printf(o, "},\n  \"model_routed_other\": %" PRIu64 "\n}", mc->other);
}

/* Without --pool, the one pool's document; with it, {"pools": [...]}
 * of every pool's (the agent-wide numbers are in each). */
void dbk_report_state(const struct dbk_agent *a, struct dbk_buf *o)
{
	if (!pooled(a)) {
		state_pool(a, &a->pools[0], o);
		dbk_buf_printf(o, "\n");
		return;
	}
	dbk_buf_printf(o, "{\"pools\": [\n");
	for (unsigned i = 0; i < a->npools; i++) {
		state_pool(a, &a->pools[i], o);
		dbk_buf_printf(o, "%s\n", i + 1 < a->npools ? "," : "");
	}
	dbk_buf_printf(o, "]}\n");
}

/* ---- /metrics ---- */

static const char *const status_names[] = {
	"normal",
	"io",
	"timeout",
	"too_big",
	"invalid",
	"no_version",
	"no_frame_size",
	"no_capabilities",
	"bad_version",
	"bad_frame_size",
	"fragmentation",
	"interlaced",
	"frame_id_not_found",
	"resource",
	"unknown",
};

static void metrics_rows(const struct dbk_agent *a, const struct dbk_pool *p, enum part part,
                         struct dbk_buf *o)
{
	const void *src[NSRC];
	const char *family = NULL;

	sources(a, p, src);
	for (const struct row *r = rows; r < rows + COUNT(rows); r++) {
		if (!r->metric || !src[r->src] || !in_part(shared(r->src), part))
			continue;
		/* A family's rows are adjacent; its header comes once. */
		if (!family || strcmp(family, r->metric) != 0)
			dbk_prom_head(o, r->metric, kind_names[r->kind], r->help);
		family = r->metric;
		uint64_t v = value(p, r, src[r->src]);
		dbk_buf_printf(o, "%s%s%s%s ", r->metric, r->label ? "{" : "",
		               r->label ? r->label : "", r->label ? "}" : "");
		if (r->kind == COUNTER)
			dbk_buf_printf(o, "%" PRIu64 "\n", v);
		else
			dbk_buf_printf(o, "%.17g\n", (double)v);
	}
}

static void metrics_histograms(const struct dbk_agent *a, const struct dbk_pool *p, enum part part,
                               struct dbk_buf *o)
{
	for (const struct histogram *h = histograms; h < histograms + COUNT(histograms); h++)
		if (in_part(h->shared, part))
			dbk_prom_histogram(o, h->metric, h->help, h->read(a, p), h->to_seconds);
}

static void metrics_servers(const struct dbk_pool *p, struct dbk_buf *o)
{
	for (const struct column *k = columns; k < columns + COUNT(columns); k++) {
		if (!k->metric)
			continue;
		dbk_prom_head(o, k->metric, kind_names[k->kind], k->help);
		for (unsigned i = 0; i < p->cfg.nservers; i++)
			if (p->cfg.servers[i][0])
				dbk_buf_printf(o, "%s{server=\"%s\"} %.17g\n", k->metric,
				               p->cfg.servers[i], k->read(p, i));
	}
}

/* The balancer's settings, as they are now (they change live). */
static void metrics_config(const struct dbk_bal_config *c, struct dbk_buf *o)
{
	const struct {
		const char *name, *help;
		double v;
	} gauges[] = {
		{ "dbucket_config_threshold_tokens",
		  "Where the long bucket starts (server-group-threshold).", c->bounds[1] },
		{ "dbucket_config_max_request_tokens", "Upper bound of the last bucket.",
		  c->bounds[c->nbuckets] },
		{ "dbucket_config_sensitivity", "Exponent on the load ratio.", c->sensitivity },
		{ "dbucket_config_affinity_strength", "Decay of length affinity.",
		  c->affinity_strength },
		{ "dbucket_config_redirect_threshold", "Redirect probability to move a request.",
		  c->redirect_threshold },
	};

	/* A threshold exists with two buckets only. */
	for (unsigned k = c->nbuckets == 2 ? 0 : 1; k < COUNT(gauges); k++) {
		dbk_prom_head(o, gauges[k].name, "gauge", gauges[k].help);
		dbk_buf_printf(o, "%s %.17g\n", gauges[k].name, gauges[k].v);
	}
	dbk_prom_head(o, "dbucket_config_group_servers", "gauge", "Servers per group.");
	for (unsigned g = 0; g < c->nbuckets; g++)
		dbk_buf_printf(o, "dbucket_config_group_servers{group=\"%u\"} %u\n", g,
		               dbk_bal_group_size(c, g));
}

/* A label value: backslash, quote and newline escaped. */
static void prom_label(struct dbk_buf *o, const char *s)
{
	for (; *s; s++)
		if (*s == '\\' || *s == '"')
			dbk_buf_printf(o, "\\%c", *s);
		else if (*s == '\n')
			dbk_buf_printf(o, "\\n");
		else
			dbk_buf_add(o, s, 1);
}

static void metrics_models(const struct dbk_model_counts *c, struct dbk_buf *o)
{
	dbk_prom_head(o, "dbucket_model_routed_total", "counter",
	              "Requests routed, by the model model routing read (the first 64 ids).");
	for (unsigned i = 0; i < c->n; i++) {
		dbk_buf_printf(o, "dbucket_model_routed_total{model=\"");
		prom_label(o, c->id[i]);
		dbk_buf_printf(o, "\"} %" PRIu64 "\n", c->routed[i]);
	}
	dbk_prom_head(o, "dbucket_model_routed_other_total", "counter",
	              "Requests routed for a model past the first 64 ids.");
	dbk_buf_printf(o, "dbucket_model_routed_other_total %" PRIu64 "\n", c->other);
}

static void metrics_shared(const struct dbk_agent *a, struct dbk_buf *o)
{
	const struct dbk_spop_server_stats *s = dbk_spop_server_stats(a->spop);

	dbk_prom_head(o, "dbucket_spop_disconnects_total", "counter",
	              "DISCONNECTs the agent sent, by status.");
	for (unsigned i = 0; i < COUNT(status_names); i++)
		dbk_buf_printf(o, "dbucket_spop_disconnects_total{status=\"%s\"} %" PRIu64 "\n",
		               status_names[i], s->disconnects[i]);
	metrics_models(&a->route_handler.models, o);
}

/* A pool's numbers (and the agent's, with PART_ALL). */
static void metrics_pool(const struct dbk_agent *a, const struct dbk_pool *p, enum part part,
                         struct dbk_buf *o)
{
	const struct dbk_bal_config *c = dbk_bal_config(p->bal);
	const struct dbk_route_stats *r = &p->route.stats;

	dbk_prom_head(o, "dbucket_decisions_total", "counter",
	              "Requests routed, by standard bucket (length) and chosen group.");
	for (unsigned i = 0; i < c->nbuckets; i++)
		for (unsigned g = 0; g < c->nbuckets; g++)
			dbk_buf_printf(o,
			               "dbucket_decisions_total{bucket=\"%u\",group=\"%u\"} "
			               "%" PRIu64 "\n",
			               i, g, r->by_bucket_group[i][g]);
	metrics_rows(a, p, part, o);
	if (part & PART_SHARED)
		metrics_shared(a, o);
	metrics_histograms(a, p, part, o);
	metrics_servers(p, o);
	dbk_prom_head(o, "dbucket_bucket_load", "gauge", "Load in flight per bucket.");
	for (unsigned i = 0; i < c->nbuckets; i++)
		dbk_buf_printf(o, "dbucket_bucket_load{bucket=\"%u\"} %.17g\n", i,
		               dbk_bal_bucket_load(p->bal, i));
	metrics_config(c, o);
	if (p->scrape)
		dbk_scrape_report_metrics(p->scrape, dbk_mono_ms(), o);
	dbk_server_watch_report_metrics(&p->watch, o);
	dbk_policy_report_metrics(&p->policy, p->cfg.servers, p->cfg.nservers, dbk_mono_ms(), o);
}

/* Without --pool, as before pools were. With it, the agent's numbers
 * once, then every pool's families with a pool="NAME" label on each
 * sample (prom_merge.h). */
void dbk_report_metrics(const struct dbk_agent *a, struct dbk_buf *o)
{
	struct dbk_buf texts[DBK_MAX_POOLS];
	const char *names[DBK_MAX_POOLS];

	if (!pooled(a)) {
		metrics_pool(a, &a->pools[0], PART_ALL, o);
		return;
	}
	metrics_rows(a, &a->pools[0], PART_SHARED, o);
	metrics_shared(a, o);
	metrics_histograms(a, &a->pools[0], PART_SHARED, o);
	for (unsigned i = 0; i < a->npools; i++) {
		dbk_buf_init(&texts[i]);
		metrics_pool(a, &a->pools[i], PART_POOL, &texts[i]);
		names[i] = a->pools[i].cfg.pool;
	}
	dbk_prom_merge(texts, names, a->npools, o);
	for (unsigned i = 0; i < a->npools; i++)
		dbk_buf_free(&texts[i]);
}
