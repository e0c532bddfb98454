/* One pool's books and what feeds them (pool.h): what the agent did for
 * its one backend before it ran several, moved here unchanged but for
 * the struct it works on. */
#include "pool.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/clock.h"
#include "lib/fileio.h"
#include "lib/log.h"
#include "policy_feed.h"
#include "settings.h"

/* How long start-up waits for HAProxy's runtime API to name the servers. */
#define DISCOVERY_TIMEOUT_MS 30000
#define MAX_CONFIG_FILE 65536

/* A held-back or taken-back charge made whole: the policy's books follow. */
static void on_whole(void *arg, const char *id, size_t id_len)
{
	struct dbk_pool *p = arg;

	dbk_route_whole(&p->route, id, id_len, dbk_mono_ms());
}

/* A prefill charge taken back: the policy's books follow. */
static void on_taken(void *arg, const char *id, size_t id_len)
{
	dbk_route_taken(&((struct dbk_pool *)arg)->route, id, id_len);
}

/* Every finished scrape: a sleeping engine is left out under every
 * policy; the policy reads the numbers if it routes on them. */
static void on_scraped(void *arg, unsigned server, const struct dbk_scrape_view *v, bool metrics)
{
	struct dbk_pool *p = arg;

	dbk_server_watch_scraped(&p->watch, server, v, metrics);
	if (metrics) {
		unsigned both = DBK_VM_WAITING | DBK_VM_KV_USAGE;

		dbk_sat_scraped(&p->sat, server, v->up && (v->m.have & both) == both, v->m.waiting,
		                v->m.kv_usage, v->ok_ms);
		unsigned ttft = DBK_VM_TTFT_SUM | DBK_VM_TTFT_COUNT;

		dbk_sat_first_tokens(&p->sat, server, v->up && (v->m.have & ttft) == ttft,
		                     v->m.ttft_sum, v->m.ttft_count, v->ok_ms);
		unsigned counts = DBK_VM_RUNNING | DBK_VM_WAITING;

		dbk_hold_scraped(&p->hold, p->bal, server, v->up && (v->m.have & counts) == counts,
		                 v->m.running + v->m.waiting, dbk_mono_ms());
	}
	if (p->cfg.policy->scraped)
		dbk_policy_scrape_done(&p->policy, server, v, metrics);
	if (!metrics && v->models && p->models && dbk_models_set(p->models, server, v->models) < 0)
		dbk_log(DBK_LOG_WARN, "models-full",
		        "server=%s reason=\"more distinct model ids than the agent keeps "
		        "(%d): the server stays a candidate for every model\"",
		        p->cfg.servers[server], DBK_MODELS_MAX);
}

static void on_scrape_sent(void *arg, unsigned server)
{
	struct dbk_pool *p = arg;

	dbk_hold_scrape_sent(&p->hold, p->bal, server);
}

static void on_expired(void *arg, const char *id, size_t id_len, const struct dbk_bal_lease *l)
{
	struct dbk_pool *p = arg;
	char q[DBK_BAL_MAX_ID_LEN + 1];

	dbk_log(DBK_LOG_WARN, "lease-expired", "id=\"%s\" server=%s score=%.10g",
	        dbk_log_quote(q, sizeof(q), id, id_len), p->cfg.servers[l->server], l->score);
}

int dbk_pool_read_config(const struct dbk_pool *p, struct dbk_bal_config *c, char *err,
                         size_t errlen)
{
	char why[256];
	size_t len;
	char *text = dbk_read_file(p->cfg.config_file, MAX_CONFIG_FILE, &len, err, errlen);

	*c = p->base_config;
	if (!text)
		return -1;
	int rc = dbk_settings_parse(c, text, len, why, sizeof(why));
	free(text);
	if (rc == 0)
		rc = dbk_bal_config_check(c, why, sizeof(why));
	if (rc < 0)
		dbk_errf(err, errlen, "%s: %s", p->cfg.config_file, why);
	return rc;
}

int dbk_pool_apply_config(struct dbk_pool *p, const struct dbk_bal_config *c, const char *how,
                          char *err, size_t errlen)
{
	struct dbk_buf d;

	if (dbk_bal_reconfigure(p->bal, c, err, errlen) < 0)
		return -1;
	p->config_changes++;
	dbk_buf_init(&d);
	dbk_settings_describe(c, true, &d);
	if (p->cfg.pool)
		dbk_log(DBK_LOG_INFO, "config-applied", "pool=%s by=%s %s", p->cfg.pool, how,
		        d.p ? d.p : "");
	else
		dbk_log(DBK_LOG_INFO, "config-applied", "by=%s %s", how, d.p ? d.p : "");
	dbk_buf_free(&d);
	return 0;
}

/* The base URL server name is scraped at: --scrape's, else (a policy
 * that reads scrapes, with the runtime API) where HAProxy reaches it,
 * per where (NULL: not known); NULL for none. */
static const char *scrape_url(const struct dbk_pool *p, const char *name,
                              const struct dbk_rt_server *where, char *buf, size_t size)
{
	const char *u = dbk_config_scrape_url(&p->cfg, name);

	if (u || !p->cfg.policy->scraped || !p->cfg.haproxy_socket || !where || !where->port)
		return u;
	snprintf(buf, size, strchr(where->addr, ':') ? "http://[%s]:%d" : "http://%s:%d",
	         where->addr, where->port);
	return buf;
}

/* Where HAProxy reaches server i at start-up, if discovery said. */
static const struct dbk_rt_server *discovered(const struct dbk_pool *p, unsigned i)
{
	const char *name = p->cfg.servers[i];
	int k = p->discovered ? dbk_rt_find(p->discovered, p->ndiscovered, name, strlen(name)) : -1;

	return k < 0 ? NULL : &p->discovered[k];
}

/* Model routing follows what the scrapes learn of /v1/models: every
 * server a candidate until its list is read, free slots absent. */
static int start_models(struct dbk_pool *p, char *err, size_t errlen)
{
	p->models = dbk_models_new(p->cfg.nservers);
	p->route.eligible = p->models ? calloc(dbk_models_words(p->models), sizeof(uint64_t))
	                              : NULL;
	if (!p->route.eligible) {
		dbk_errf(err, errlen, "out of memory");
		return -1;
	}
	for (unsigned i = 0; i < p->cfg.nservers; i++)
		if (!p->cfg.servers[i][0])
			dbk_models_absent(p->models, i);
	p->route.models = p->models;
	return 0;
}

static int start_scrape(struct dbk_pool *p, char *err, size_t errlen)
{
	unsigned n = p->cfg.nservers, scraped = 0;
	bool from_haproxy = p->cfg.policy->scraped && p->cfg.haproxy_socket;

	if (p->cfg.nscrape == 0 && !from_haproxy)
		return 0;
	bool all_named = true;
	for (unsigned i = 0; i < p->nstart && all_named; i++)
		all_named = dbk_config_scrape_url(&p->cfg, p->cfg.servers[i]) != NULL;
	/* Servers named on the command line: HAProxy still knows where. */
	if (from_haproxy && !all_named && !p->discovered &&
	    dbk_runtime_sync_discover(p->cfg.haproxy_socket, p->cfg.backend, DISCOVERY_TIMEOUT_MS,
	                              &p->discovered, &p->ndiscovered, err, errlen))
		return -1;
	/* Following HAProxy's backend, a server that comes later is scraped
	 * too: the scraper has a target for every slot. */
	bool follow = p->sync && (p->cfg.nscrape || from_haproxy);
	const char **urls = calloc(n, sizeof(*urls));
	char(*bufs)[DBK_MAX_SCRAPE_URL + 1] = calloc(n, sizeof(*bufs));
	if (!urls || !bufs) {
		free(urls);
		free(bufs);
		dbk_errf(err, errlen, "out of memory");
		return -1;
	}
	for (unsigned i = 0; i < n; i++)
		if (p->cfg.servers[i][0] &&
		    (urls[i] = scrape_url(p, p->cfg.servers[i], discovered(p, i), bufs[i],
		                          sizeof(bufs[i]))))
			scraped++;
	struct dbk_scrape_config sc = {
		.interval_ms = p->cfg.scrape_interval_ms,
		.timeout_ms = p->cfg.scrape_timeout_ms,
		.models_every_ms = DBK_SCRAPE_MODELS_EVERY_MS,
		.scraped = on_scraped,
		.sent = on_scrape_sent,
		.arg = p,
		.names = p->cfg.scrape_names_set ? &p->cfg.scrape_names : NULL,
		.tls = { p->cfg.scrape_ca, p->cfg.scrape_cert, p->cfg.scrape_key,
		         p->cfg.scrape_insecure },
	};
	if (scraped || follow)
		p->scrape = dbk_scrape_new(p->loop, &sc, p->cfg.servers, urls, n);
	free(urls);
	free(bufs);
	if ((scraped || follow) && !p->scrape) {
		dbk_errf(err, errlen,
		         "cannot start the scraper (out of memory, or a URL it cannot scrape: "
		         "logged above)");
		return -1;
	}
	dbk_log(DBK_LOG_INFO, "scrape-configured",
	        "servers=%u of=%u interval_ms=%lld timeout_ms=%lld", scraped, p->nstart,
	        p->cfg.scrape_interval_ms, p->cfg.scrape_timeout_ms);
	return p->scrape ? start_models(p, err, errlen) : 0;
}

/* No SERVER names: HAProxy's runtime API says them, in order. */
static int discover_servers(struct dbk_pool *p, char *err, size_t errlen)
{
	unsigned n;

	if (dbk_runtime_sync_discover(p->cfg.haproxy_socket, p->cfg.backend, DISCOVERY_TIMEOUT_MS,
	                              &p->discovered, &n, err, errlen))
		return -1;
	p->ndiscovered = n;
	for (unsigned i = 0; i < n; i++)
		p->cfg.servers[i] = p->discovered[i].name;
	p->cfg.nservers = n;
	dbk_log(DBK_LOG_INFO, "servers-discovered", "backend=%s servers=%u first=%s",
	        p->cfg.backend, n, p->cfg.servers[0]);
	return dbk_config_check_servers(&p->cfg, err, errlen);
}

/* The balancer under the command line's settings and --config's, its
 * books, the policy and the route that asks them. */
static int start_balancer(struct dbk_pool *p, char *err, size_t errlen)
{
	struct dbk_bal_config bc;

	dbk_config_balancer(&p->cfg, &bc);
	p->base_config = bc;
	if (p->cfg.config_file && dbk_pool_read_config(p, &bc, err, errlen) < 0)
		return -1;
	p->bal = dbk_bal_new(&bc);
	if (!p->bal) {
		dbk_errf(err, errlen, "cannot create the balancer");
		return -1;
	}
	/* Slots for servers HAProxy's backend may gain later are held out
	 * until one comes (runtime_sync.h). */
	for (unsigned i = p->nstart; i < p->cfg.nservers; i++)
		dbk_bal_set_out(p->bal, i, DBK_BAL_OUT_ABSENT, true);
	dbk_acct_init(&p->acct, p->bal, p->cfg.servers);
	struct dbk_policy_env env = {
		.nservers = p->cfg.nservers,
		.engine_speed = p->cfg.engine_speed,
		.stall_weight = -1,
		.lora_load_s = dbk_config_lora_load_env_s(&p->cfg),
		.budget_tokens = (double)p->cfg.max_num_batched_tokens,
		.serial_queue = p->cfg.admit.enabled,
		.seed = DBK_POLICY_SEED,
	};
	if (dbk_policy_start(&p->policy, p->cfg.policy, &env, err, errlen) < 0)
		return -1;
	if (dbk_server_watch_start(&p->watch, p->loop, p->bal, p->cfg.servers, p->cfg.nservers,
	                           &p->cfg.outlier) < 0) {
		dbk_errf(err, errlen, "out of memory");
		return -1;
	}
	dbk_policy_attach(&p->policy, p->bal);
	p->route.policy = &p->policy;
	if (p->cfg.pool)
		dbk_log(DBK_LOG_INFO, "policy", "pool=%s name=%s", p->cfg.pool,
		        p->cfg.policy->name);
	else
		dbk_log(DBK_LOG_INFO, "policy", "name=%s", p->cfg.policy->name);
	p->route.bal = p->bal;
	p->route.names = p->cfg.servers;
	p->route.nnames = p->cfg.nservers;
	p->route.admit = &p->cfg.admit;
	p->route.sat = &p->sat;
	if (p->cfg.admit.enabled)
		dbk_log(DBK_LOG_INFO, "admission",
		        "ttft_ms=%lld tpot_ms=%lld headroom_standard=%g headroom_sheddable=%g "
		        "saturation_queue=%g saturation_kv=%g",
		        p->cfg.admit.ttft_ms, p->cfg.admit.tpot_ms,
		        p->cfg.admit.headroom[DBK_CLASS_STANDARD],
		        p->cfg.admit.headroom[DBK_CLASS_SHEDDABLE], p->cfg.sat_queue,
		        p->cfg.sat_kv);
	p->route.by_server = calloc(p->cfg.nservers, sizeof(*p->route.by_server));
	struct dbk_sat_config satc = {
		.queue = p->cfg.sat_queue,
		.kv = p->cfg.sat_kv,
		.stale_ms = (uint64_t)p->cfg.scrape_interval_ms * DBK_SAT_STALE_INTERVALS,
	};
	if (!p->route.by_server || dbk_sat_init(&p->sat, &satc, p->cfg.nservers) < 0 ||
	    dbk_hold_init(&p->hold, p->cfg.nservers) < 0) {
		dbk_errf(err, errlen, "out of memory");
		return -1;
	}
	p->route.hold = &p->hold;
	p->hold.strict = p->cfg.hold_partial;
	p->hold.scrape_ms = (uint64_t)p->cfg.scrape_interval_ms;
	p->hold.whole = on_whole;
	p->hold.taken = on_taken;
	p->hold.whole_arg = p;
	return 0;
}

/* A server came into slot k, left it, or moved to a new address: what
 * the policy learnt of the old one and the scrape target follow. */
static void on_member(void *arg, unsigned k, enum dbk_rt_change c, const struct dbk_rt_server *srv)
{
	struct dbk_pool *p = arg;
	char buf[DBK_MAX_SCRAPE_URL + 1];
	const char *name = p->cfg.servers[k];

	if (p->policy.ops->reset)
		p->policy.ops->reset(p->policy.st, k);
	dbk_server_watch_reset(&p->watch, k);
	dbk_sat_forget(&p->sat, k);
	if (c != DBK_RT_SLOT_MOVED)
		p->route.by_server[k] = 0;
	if (p->models && c == DBK_RT_SLOT_GONE)
		dbk_models_absent(p->models, k);
	else if (p->models)
		dbk_models_forget(p->models, k);
	/* A gone server's slot is free: no name, nothing to scrape. */
	if (p->scrape && c == DBK_RT_SLOT_GONE)
		dbk_scrape_set(p->scrape, k, "", NULL);
	else if (p->scrape)
		dbk_scrape_set(p->scrape, k, name, scrape_url(p, name, srv, buf, sizeof(buf)));
}

static void on_weight(void *arg, unsigned k, long weight)
{
	struct dbk_pool *p = arg;

	if (p->policy.ops->weight)
		p->policy.ops->weight(p->policy.st, k, (double)weight);
}

static int start_sync(struct dbk_pool *p, char *err, size_t errlen)
{
	struct dbk_rt_addr addr;
	struct dbk_runtime_sync_hooks h = { on_member, on_weight, p };

	if (dbk_rt_addr_parse(p->cfg.haproxy_socket, &addr, err, errlen))
		return -1;
	p->sync = dbk_runtime_sync_new(p->loop, &addr, p->cfg.backend,
	                               (double)p->cfg.poll_ms / 1000.0,
	                               (double)p->cfg.reclaim_after_s, p->bal, p->cfg.servers,
	                               p->nstart, p->cfg.nservers, &h);
	if (!p->sync) {
		dbk_errf(err, errlen, "out of memory");
		return -1;
	}
	/* The names follow the backend from now on. */
	for (unsigned i = 0; i < p->cfg.nservers; i++)
		p->cfg.servers[i] = dbk_runtime_sync_name(p->sync, i);
	return 0;
}

/* With the runtime API the agent follows HAProxy's backend: slots beyond
 * the servers at start, up to --max-servers, for those added later. */
static void add_slots(struct dbk_pool *p)
{
	p->nstart = p->cfg.nservers;
	if (!p->cfg.haproxy_socket)
		return;
	while (p->cfg.nservers < (unsigned)p->cfg.max_servers)
		p->cfg.servers[p->cfg.nservers++] = "";
}

int dbk_pool_start(struct dbk_pool *p, struct ev_loop *loop, char *err, size_t errlen)
{
	p->loop = loop;
	if (p->cfg.haproxy_socket && p->cfg.nservers == 0 && discover_servers(p, err, errlen))
		return -1;
	add_slots(p);
	if (start_balancer(p, err, errlen) || (p->cfg.haproxy_socket && start_sync(p, err, errlen)))
		return -1;
	if (p->cfg.share_books &&
	    !(p->share = dbk_share_loop_for(loop, &p->policy, &p->cfg, err, errlen)))
		return -1;
	return start_scrape(p, err, errlen);
}

void dbk_pool_expire(struct dbk_pool *p, uint64_t now_ms)
{
	dbk_acct_expire(&p->acct, now_ms, (uint64_t)p->cfg.lease_ttl_s * 1000, on_expired, p);
}

void dbk_pool_stop(struct dbk_pool *p)
{
	dbk_scrape_free(p->scrape);
	p->scrape = NULL;
	dbk_share_loop_stop(p->share);
	p->share = NULL;
	p->route.models = NULL;
	dbk_models_free(p->models);
	p->models = NULL;
	free(p->route.eligible);
	p->route.eligible = NULL;
	dbk_server_watch_stop(&p->watch);
	dbk_runtime_sync_free(p->sync);
	p->sync = NULL;
	dbk_policy_detach(p->bal);
	dbk_policy_stop(&p->policy);
	p->route.policy = NULL;
	dbk_bal_free(p->bal);
	p->bal = NULL;
	free(p->route.by_server);
	p->route.by_server = NULL;
	p->route.hold = NULL;
	dbk_hold_fini(&p->hold);
	p->route.sat = NULL;
	dbk_sat_free(&p->sat);
	free(p->discovered);
	p->discovered = NULL;
}
