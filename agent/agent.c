#include "agent.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/fileio.h"
#include "lib/listener.h"
#include "lib/log.h"
#include "lib/net.h"
#include "policy_feed.h"
#include "settings.h"
#include "status_page.h"

#define TTL_TICK 1.0
/* How long start-up waits for HAProxy's runtime API to name the servers. */
#define DISCOVERY_TIMEOUT_MS 30000
#define MAX_CONFIG_FILE 65536

/* The completion receiver's callback: the books do the work, this logs.
 * Only a line that released a lease is work a link is kept open for (a
 * stranger can send well-formed lines, not the ids of live leases), and
 * only such a line tells of a server: each line comes twice (its copy
 * counts once), and a forged line cannot eject a server. */
static bool on_completion(void *arg, const struct dbk_completion *c)
{
	struct dbk_agent *a = arg;
	enum dbk_acct_outcome o = dbk_acct_complete(&a->acct, c, dbk_mono_ms(),
	                                            (int64_t)dbk_wall_ms(), NULL);

	if (o == DBK_ACCT_UNKNOWN) {
		char q[DBK_BAL_MAX_ID_LEN + 1];

		dbk_log(DBK_LOG_DEBUG, "completion-unknown", "id=\"%s\"",
		        dbk_log_quote(q, sizeof(q), c->id, c->id_len));
	}
	if (o != DBK_ACCT_RELEASED)
		return false;
	dbk_server_watch_completion(&a->watch, c);
	return true;
}

/* A held-back charge made whole: the policy's books follow. */
static void on_whole(void *arg, const char *id, size_t id_len)
{
	struct dbk_agent *a = arg;

	dbk_route_whole(&a->route, id, id_len, dbk_mono_ms());
}

/* Every finished scrape: a sleeping engine is left out under every
 * policy; the policy reads the numbers if it routes on them. */
static void on_scraped(void *arg, unsigned server, const struct dbk_scrape_view *v, bool metrics)
{
	struct dbk_agent *a = arg;

	dbk_server_watch_scraped(&a->watch, server, v, metrics);
	if (metrics) {
		unsigned both = DBK_VM_WAITING | DBK_VM_KV_USAGE;

		dbk_sat_scraped(&a->sat, server, v->up && (v->m.have & both) == both, v->m.waiting,
		                v->m.kv_usage, v->ok_ms);
		unsigned ttft = DBK_VM_TTFT_SUM | DBK_VM_TTFT_COUNT;

		dbk_sat_first_tokens(&a->sat, server, v->up && (v->m.have & ttft) == ttft,
		                     v->m.ttft_sum, v->m.ttft_count, v->ok_ms);
		unsigned counts = DBK_VM_RUNNING | DBK_VM_WAITING;

		dbk_hold_scraped(&a->hold, a->bal, server, v->up && (v->m.have & counts) == counts,
		                 v->m.running + v->m.waiting);
	}
	if (a->cfg.policy->scraped)
		dbk_policy_scrape_done(&a->policy, server, v, metrics);
	if (!metrics && v->models && a->models && dbk_models_set(a->models, server, v->models) < 0)
		dbk_log(DBK_LOG_WARN, "models-full",
		        "server=%s reason=\"more distinct model ids than the agent keeps "
		        "(%d): the server stays a candidate for every model\"",
		        a->cfg.servers[server], DBK_MODELS_MAX);
}

static void on_expired(void *arg, const char *id, size_t id_len, const struct dbk_bal_lease *l)
{
	struct dbk_agent *a = arg;
	char q[DBK_BAL_MAX_ID_LEN + 1];

	dbk_log(DBK_LOG_WARN, "lease-expired", "id=\"%s\" server=%s score=%.10g",
	        dbk_log_quote(q, sizeof(q), id, id_len), a->cfg.servers[l->server], l->score);
}

static void on_ttl_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct dbk_agent *a = (struct dbk_agent *)((char *)w -
	                                           offsetof(struct dbk_agent, ttl_timer));

	(void)loop;
	(void)revents;
	dbk_acct_expire(&a->acct, dbk_mono_ms(), (uint64_t)a->cfg.lease_ttl_s * 1000, on_expired,
	                a);
}

/* The settings --config gives over the command line's (base_config):
 * read, parsed and checked here only, at start and on every reload.
 * Returns 0, or -1 with "FILE: reason" in err. */
static int read_config(const struct dbk_agent *a, struct dbk_bal_config *c, char *err,
                       size_t errlen)
{
	char why[256];
	size_t len;
	char *text = dbk_read_file(a->cfg.config_file, MAX_CONFIG_FILE, &len, err, errlen);

	*c = a->base_config;
	if (!text)
		return -1;
	int rc = dbk_settings_parse(c, text, len, why, sizeof(why));
	free(text);
	if (rc == 0)
		rc = dbk_bal_config_check(c, why, sizeof(why));
	if (rc < 0)
		dbk_errf(err, errlen, "%s: %s", a->cfg.config_file, why);
	return rc;
}

/* Applies c live and logs what it is now. */
static int apply_config(struct dbk_agent *a, const struct dbk_bal_config *c, const char *how,
                        char *err, size_t errlen)
{
	struct dbk_buf d;

	if (dbk_bal_reconfigure(a->bal, c, err, errlen) < 0)
		return -1;
	a->config_changes++;
	dbk_buf_init(&d);
	dbk_settings_describe(c, true, &d);
	dbk_log(DBK_LOG_INFO, "config-applied", "by=%s %s", how, d.p ? d.p : "");
	dbk_buf_free(&d);
	return 0;
}

int dbk_agent_reload(struct dbk_agent *a, char *err, size_t errlen)
{
	struct dbk_bal_config c;

	/* The admin token first: it needs no --config. */
	if (dbk_admin_reload(a->admin, err, errlen) < 0)
		return -1;
	if (!a->cfg.config_file) {
		if (a->cfg.admin_token_file)
			return 0;
		dbk_errf(err, errlen, "no --config file to reread");
		return -1;
	}
	if (read_config(a, &c, err, errlen) < 0)
		return -1;
	return apply_config(a, &c, "file", err, errlen);
}

static void on_admin(void *arg, const char *method, const char *path, struct dbk_admin_response *r)
{
	struct dbk_agent *a = arg;
	const char *query = strchr(path, '?');
	size_t plen = query ? (size_t)(query - path) : strlen(path);

	if (plen == 7 && strncmp(path, "/config", 7) == 0) {
		struct dbk_bal_config c = *dbk_bal_config(a->bal);
		char err[256];

		if (strcmp(method, "POST") == 0 &&
		    (dbk_settings_query(&c, query ? query + 1 : "", err, sizeof(err)) < 0 ||
		     apply_config(a, &c, "admin", err, sizeof(err)) < 0)) {
			r->status = 400;
			dbk_buf_printf(&r->body, "%s\n", err);
		} else if (strcmp(method, "POST") != 0 && strcmp(method, "GET") != 0) {
			r->status = 405;
			dbk_buf_printf(&r->body, "GET or POST /config?key=value&...\n");
		} else {
			dbk_settings_describe(dbk_bal_config(a->bal), false, &r->body);
		}
	} else if (strcmp(method, "GET") != 0) {
		r->status = 405;
		dbk_buf_printf(&r->body, "only GET here\n");
	} else if (plen == 1 && path[0] == '/') {
		r->content_type = "text/html; charset=utf-8";
		dbk_status_page_write(&r->body);
	} else if (strcmp(path, "/metrics") == 0) {
		r->content_type = "text/plain; version=0.0.4";
		dbk_report_metrics(a, &r->body);
	} else if (strcmp(path, "/state") == 0) {
		r->content_type = "application/json";
		dbk_report_state(a, &r->body);
	} else {
		r->status = 404;
		dbk_buf_printf(&r->body, "try / (the status page), /metrics, /state or /config\n");
	}
}

/* Opens every address in specs and hands each fd to add, or a datagram
 * one (udp@...) to add_udp (NULL: not a UDP service). */
static int listen_all(struct dbk_agent *a, const char *const *specs, unsigned n, const char *what,
                      int (*add)(void *, int), int (*add_udp)(void *, int), void *obj, char *err,
                      size_t errlen)
{
	for (unsigned i = 0; i < n; i++) {
		char why[256];
		bool udp;
		int fd;

		fd = dbk_net_open(specs[i], &udp, why, sizeof(why));
		if (fd < 0) {
			dbk_errf(err, errlen, "cannot listen for %s on %s", what, why);
			return -1;
		}
		/* config.c refuses it first; this is for any other caller. */
		if (udp && !add_udp) {
			dbk_errf(err, errlen,
			         "cannot listen for %s on %s: udp@ is for completions only", what,
			         specs[i]);
			close(fd);
			return -1;
		}
		if ((udp ? add_udp : add)(obj, fd) < 0) {
			dbk_errf(err, errlen, "cannot listen for %s on %s: too many addresses",
			         what, specs[i]);
			close(fd);
			return -1;
		}
		if (dbk_net_unix_path(specs[i]))
			a->unix_specs[a->nunix++] = specs[i];
		dbk_log(DBK_LOG_INFO, "listening", "for=%s addr=%s", what, specs[i]);
		/* Allowed, since the operator asked; but nothing here is
		 * authenticated, so say it loudly. */
		if (!dbk_net_is_local(fd))
			dbk_log(DBK_LOG_WARN, "listening-beyond-this-host",
			        "for=%s addr=%s reason=\"no authentication: firewall it\"", what,
			        specs[i]);
	}
	return 0;
}

static int add_spop(void *o, int fd) { return dbk_spop_server_add_listener(o, fd); }
static int add_events(void *o, int fd) { return dbk_completion_rx_add_listener(o, fd); }
static int add_events_udp(void *o, int fd) { return dbk_completion_rx_add_datagram(o, fd); }
static int add_admin(void *o, int fd) { return dbk_admin_add_listener(o, fd); }

/* Connections the completion and admin listeners take at most, and the
 * descriptors the agent needs besides its listeners' connections
 * (standard streams, listening sockets, the event loop, the runtime API,
 * the listeners' spare descriptors, a config file being read). */
#define COMPLETION_CONNS 64
#define ADMIN_CONNS 64
#define FD_OVERHEAD 48

/* Sizes the connection limits to the descriptor limit, as robust servers
 * do: raise the soft limit if the hard one allows, else lower the limits
 * so that accept() never meets EMFILE in normal operation (the listener
 * copes if it still does). */
static void fit_fd_limit(struct dbk_agent *a, unsigned *completion, unsigned *admin)
{
	unsigned long want = (unsigned long)a->cfg.max_connections + COMPLETION_CONNS +
	                     ADMIN_CONNS + FD_OVERHEAD;
	unsigned long have = dbk_listener_fd_limit(want);

	*completion = COMPLETION_CONNS;
	*admin = ADMIN_CONNS;
	if (have >= want)
		return;
	/* What is left after the fixed needs (about half FD_OVERHEAD, which
	 * keeps a margin): a quarter each for completions and admin
	 * (HAProxy's ring needs one), the rest for SPOP. */
	unsigned long room = have > FD_OVERHEAD / 2 + 8 ? have - FD_OVERHEAD / 2 : 8;
	*completion = *admin = (unsigned)(room / 4 < COMPLETION_CONNS ? room / 4
	                                                              : COMPLETION_CONNS);
	if (*completion < 1)
		*completion = *admin = 1;
	unsigned long spop = room - 2 * *completion;
	dbk_log(DBK_LOG_WARN, "fd-limit",
	        "limit=%lu wanted=%lu max_connections=%lu completion_connections=%u "
	        "admin_connections=%u hint=\"raise LimitNOFILE or ulimit -n\"",
	        have, want, spop, *completion, *admin);
	a->cfg.max_connections = (unsigned)spop;
}

/* The base URL server name is scraped at: --scrape's, else (a policy
 * that reads scrapes, with the runtime API) where HAProxy reaches it,
 * per where (NULL: not known); NULL for none. */
static const char *scrape_url(const struct dbk_agent *a, const char *name,
                              const struct dbk_rt_server *where, char *buf, size_t size)
{
	const char *u = dbk_config_scrape_url(&a->cfg, name);

	if (u || !a->cfg.policy->scraped || !a->cfg.haproxy_socket || !where || !where->port)
		return u;
	snprintf(buf, size, strchr(where->addr, ':') ? "http://[%s]:%d" : "http://%s:%d",
	         where->addr, where->port);
	return buf;
}

/* Where HAProxy reaches server i at start-up, if discovery said. */
static const struct dbk_rt_server *discovered(const struct dbk_agent *a, unsigned i)
{
	const char *name = a->cfg.servers[i];
	int k = a->discovered ? dbk_rt_find(a->discovered, a->ndiscovered, name, strlen(name)) : -1;

	return k < 0 ? NULL : &a->discovered[k];
}

/* Model routing follows what the scrapes learn of /v1/models: every
 * server a candidate until its list is read, free slots absent. */
static int start_models(struct dbk_agent *a, char *err, size_t errlen)
{
	a->models = dbk_models_new(a->cfg.nservers);
	a->route.eligible = a->models ? calloc(dbk_models_words(a->models), sizeof(uint64_t))
	                              : NULL;
	if (!a->route.eligible) {
		dbk_errf(err, errlen, "out of memory");
		return -1;
	}
	for (unsigned i = 0; i < a->cfg.nservers; i++)
		if (!a->cfg.servers[i][0])
			dbk_models_absent(a->models, i);
	a->route.models = a->models;
	return 0;
}

static int start_scrape(struct dbk_agent *a, char *err, size_t errlen)
{
	unsigned n = a->cfg.nservers, scraped = 0;
	bool from_haproxy = a->cfg.policy->scraped && a->cfg.haproxy_socket;

	if (a->cfg.nscrape == 0 && !from_haproxy)
		return 0;
	bool all_named = true;
	for (unsigned i = 0; i < a->nstart && all_named; i++)
		all_named = dbk_config_scrape_url(&a->cfg, a->cfg.servers[i]) != NULL;
	/* Servers named on the command line: HAProxy still knows where. */
	if (from_haproxy && !all_named && !a->discovered &&
	    dbk_runtime_sync_discover(a->cfg.haproxy_socket, a->cfg.backend, DISCOVERY_TIMEOUT_MS,
	                              &a->discovered, &a->ndiscovered, err, errlen))
		return -1;
	/* Following HAProxy's backend, a server that comes later is scraped
	 * too: the scraper has a target for every slot. */
	bool follow = a->sync && (a->cfg.nscrape || from_haproxy);
	const char **urls = calloc(n, sizeof(*urls));
	char(*bufs)[DBK_MAX_SCRAPE_URL + 1] = calloc(n, sizeof(*bufs));
	if (!urls || !bufs) {
		free(urls);
		free(bufs);
		dbk_errf(err, errlen, "out of memory");
		return -1;
	}
	for (unsigned i = 0; i < n; i++)
		if (a->cfg.servers[i][0] &&
		    (urls[i] = scrape_url(a, a->cfg.servers[i], discovered(a, i), bufs[i],
		                          sizeof(bufs[i]))))
			scraped++;
	struct dbk_scrape_config sc = {
		.interval_ms = a->cfg.scrape_interval_ms,
		.timeout_ms = a->cfg.scrape_timeout_ms,
		.models_every_ms = DBK_SCRAPE_MODELS_EVERY_MS,
		.scraped = on_scraped,
		.arg = a,
		.names = a->cfg.scrape_names_set ? &a->cfg.scrape_names : NULL,
		.tls = { a->cfg.scrape_ca, a->cfg.scrape_cert, a->cfg.scrape_key,
		         a->cfg.scrape_insecure },
	};
	if (scraped || follow)
		a->scrape = dbk_scrape_new(a->loop, &sc, a->cfg.servers, urls, n);
	free(urls);
	free(bufs);
	if ((scraped || follow) && !a->scrape) {
		dbk_errf(err, errlen,
		         "cannot start the scraper (out of memory, or a URL it cannot scrape: "
		         "logged above)");
		return -1;
	}
	dbk_log(DBK_LOG_INFO, "scrape-configured",
	        "servers=%u of=%u interval_ms=%lld timeout_ms=%lld", scraped, a->nstart,
	        a->cfg.scrape_interval_ms, a->cfg.scrape_timeout_ms);
	return a->scrape ? start_models(a, err, errlen) : 0;
}

/* No SERVER names: HAProxy's runtime API says them, in order. */
static int discover_servers(struct dbk_agent *a, char *err, size_t errlen)
{
	unsigned n;

	if (dbk_runtime_sync_discover(a->cfg.haproxy_socket, a->cfg.backend, DISCOVERY_TIMEOUT_MS,
	                              &a->discovered, &n, err, errlen))
		return -1;
	a->ndiscovered = n;
	for (unsigned i = 0; i < n; i++)
		a->cfg.servers[i] = a->discovered[i].name;
	a->cfg.nservers = n;
	dbk_log(DBK_LOG_INFO, "servers-discovered", "backend=%s servers=%u first=%s",
	        a->cfg.backend, n, a->cfg.servers[0]);
	return dbk_config_check_servers(&a->cfg, err, errlen);
}

/* The balancer under the command line's settings and --config's, its
 * books, the policy and the route that asks them. */
static int start_balancer(struct dbk_agent *a, char *err, size_t errlen)
{
	struct dbk_bal_config bc;

	dbk_config_balancer(&a->cfg, &bc);
	a->base_config = bc;
	if (a->cfg.config_file && read_config(a, &bc, err, errlen) < 0)
		return -1;
	a->bal = dbk_bal_new(&bc);
	if (!a->bal) {
		dbk_errf(err, errlen, "cannot create the balancer");
		return -1;
	}
	/* Slots for servers HAProxy's backend may gain later are held out
	 * until one comes (runtime_sync.h). */
	for (unsigned i = a->nstart; i < a->cfg.nservers; i++)
		dbk_bal_set_out(a->bal, i, DBK_BAL_OUT_ABSENT, true);
	dbk_acct_init(&a->acct, a->bal, a->cfg.servers);
	struct dbk_policy_env env = {
		.nservers = a->cfg.nservers,
		.engine_speed = a->cfg.engine_speed,
		.stall_weight = -1,
		.seed = DBK_POLICY_SEED,
	};
	if (dbk_policy_start(&a->policy, a->cfg.policy, &env, err, errlen) < 0)
		return -1;
	if (dbk_server_watch_start(&a->watch, a->loop, a->bal, a->cfg.servers, a->cfg.nservers,
	                           &a->cfg.outlier) < 0) {
		dbk_errf(err, errlen, "out of memory");
		return -1;
	}
	dbk_policy_attach(&a->policy, a->bal);
	a->route.policy = &a->policy;
	dbk_log(DBK_LOG_INFO, "policy", "name=%s", a->cfg.policy->name);
	a->route.bal = a->bal;
	a->route.names = a->cfg.servers;
	a->route.nnames = a->cfg.nservers;
	a->route.admit = &a->cfg.admit;
	a->route.sat = &a->sat;
	if (a->cfg.admit.enabled)
		dbk_log(DBK_LOG_INFO, "admission",
		        "ttft_ms=%lld headroom_standard=%g headroom_sheddable=%g "
		        "saturation_queue=%g saturation_kv=%g",
		        a->cfg.admit.ttft_ms, a->cfg.admit.headroom[DBK_CLASS_STANDARD],
		        a->cfg.admit.headroom[DBK_CLASS_SHEDDABLE], a->cfg.sat_queue,
		        a->cfg.sat_kv);
	a->route.by_server = calloc(a->cfg.nservers, sizeof(*a->route.by_server));
	struct dbk_sat_config satc = {
		.queue = a->cfg.sat_queue,
		.kv = a->cfg.sat_kv,
		.stale_ms = (uint64_t)a->cfg.scrape_interval_ms * DBK_SAT_STALE_INTERVALS,
	};
	if (!a->route.by_server || dbk_sat_init(&a->sat, &satc, a->cfg.nservers) < 0 ||
	    dbk_hold_init(&a->hold, a->cfg.nservers) < 0) {
		dbk_errf(err, errlen, "out of memory");
		return -1;
	}
	a->route.hold = &a->hold;
	a->hold.whole = on_whole;
	a->hold.whole_arg = a;
	return 0;
}

/* The SPOP, completion and admin servers, on every address given. */
static int start_listeners(struct dbk_agent *a, char *err, size_t errlen)
{
	unsigned completion_conns, admin_conns;

	fit_fd_limit(a, &completion_conns, &admin_conns);
	/* By default two HAProxy instances (or one and a stranger) both fit. */
	if (!a->cfg.max_connections_per_peer)
		a->cfg.max_connections_per_peer = (a->cfg.max_connections + 1) / 2;
	else if (a->cfg.max_connections_per_peer > a->cfg.max_connections)
		a->cfg.max_connections_per_peer = a->cfg.max_connections;
	struct dbk_spop_server_config sc = {
		.max_frame_size = a->cfg.max_frame_size,
		.max_connections = a->cfg.max_connections,
		.max_connections_per_peer = a->cfg.max_connections_per_peer,
		.idle_timeout = (double)a->cfg.idle_timeout_s,
		.allow = a->cfg.allow,
		.nallow = a->cfg.nallow,
	};
	struct dbk_admin_config ac = {
		.max_conns = admin_conns,
		.token_file = a->cfg.admin_token_file,
		.read_only = a->cfg.admin_read_only,
		.public_mask = a->cfg.admin_public,
		.hosts = a->cfg.admin_hosts,
		.nhosts = a->cfg.nadmin_hosts,
	};
	struct dbk_spop_handler h = dbk_route_handler_init(&a->route_handler, &a->route);
	a->admin = dbk_admin_new(a->loop, &ac, on_admin, a, err, errlen);
	if (!a->admin)
		return -1;
	a->spop = dbk_spop_server_new(a->loop, &sc, &h);
	a->events = dbk_completion_rx_new(a->loop, completion_conns, a->cfg.allow, a->cfg.nallow,
	                                  on_completion, a);
	if (!a->spop || !a->events) {
		dbk_errf(err, errlen, "out of memory");
		return -1;
	}
	if (listen_all(a, a->cfg.listen, a->cfg.nlisten, "spop", add_spop, NULL, a->spop, err,
	               errlen) ||
	    listen_all(a, a->cfg.completion_listen, a->cfg.ncompletion_listen, "completions",
	               add_events, add_events_udp, a->events, err, errlen) ||
	    listen_all(a, a->cfg.admin_listen, a->cfg.nadmin_listen, "admin", add_admin, NULL,
	               a->admin, err, errlen))
		return -1;
	return 0;
}

/* A server came into slot k, left it, or moved to a new address: what
 * the policy learnt of the old one and the scrape target follow. */
static void on_member(void *arg, unsigned k, enum dbk_rt_change c, const struct dbk_rt_server *srv)
{
	struct dbk_agent *a = arg;
	char buf[DBK_MAX_SCRAPE_URL + 1];
	const char *name = a->cfg.servers[k];

	if (a->policy.ops->reset)
		a->policy.ops->reset(a->policy.st, k);
	dbk_server_watch_reset(&a->watch, k);
	dbk_sat_forget(&a->sat, k);
	if (c != DBK_RT_SLOT_MOVED)
		a->route.by_server[k] = 0;
	if (a->models && c == DBK_RT_SLOT_GONE)
		dbk_models_absent(a->models, k);
	else if (a->models)
		dbk_models_forget(a->models, k);
	/* A gone server's slot is free: no name, nothing to scrape. */
	if (a->scrape && c == DBK_RT_SLOT_GONE)
		dbk_scrape_set(a->scrape, k, "", NULL);
	else if (a->scrape)
		dbk_scrape_set(a->scrape, k, name, scrape_url(a, name, srv, buf, sizeof(buf)));
}

static void on_weight(void *arg, unsigned k, long weight)
{
	struct dbk_agent *a = arg;

	if (a->policy.ops->weight)
		a->policy.ops->weight(a->policy.st, k, (double)weight);
}

static int start_sync(struct dbk_agent *a, char *err, size_t errlen)
{
	struct dbk_rt_addr addr;
	struct dbk_runtime_sync_hooks h = { on_member, on_weight, a };

	if (dbk_rt_addr_parse(a->cfg.haproxy_socket, &addr, err, errlen))
		return -1;
	a->sync = dbk_runtime_sync_new(a->loop, &addr, a->cfg.backend,
	                               (double)a->cfg.poll_ms / 1000.0,
	                               (double)a->cfg.reclaim_after_s, a->bal, a->cfg.servers,
	                               a->nstart, a->cfg.nservers, &h);
	if (!a->sync) {
		dbk_errf(err, errlen, "out of memory");
		return -1;
	}
	/* The names follow the backend from now on. */
	for (unsigned i = 0; i < a->cfg.nservers; i++)
		a->cfg.servers[i] = dbk_runtime_sync_name(a->sync, i);
	return 0;
}

/* With the runtime API the agent follows HAProxy's backend: slots beyond
 * the servers at start, up to --max-servers, for those added later. */
static void add_slots(struct dbk_agent *a)
{
	a->nstart = a->cfg.nservers;
	if (!a->cfg.haproxy_socket)
		return;
	while (a->cfg.nservers < (unsigned)a->cfg.max_servers)
		a->cfg.servers[a->cfg.nservers++] = "";
}

int dbk_agent_start(struct dbk_agent *a, struct ev_loop *loop, char *err, size_t errlen)
{
	a->loop = loop;
	if (a->cfg.haproxy_socket && a->cfg.nservers == 0 && discover_servers(a, err, errlen))
		return -1;
	add_slots(a);
	if (start_balancer(a, err, errlen) || start_listeners(a, err, errlen) ||
	    (a->cfg.haproxy_socket && start_sync(a, err, errlen)))
		return -1;
	if (a->cfg.share_books &&
	    !(a->share = dbk_share_loop_for(loop, &a->policy, &a->cfg, err, errlen)))
		return -1;
	ev_timer_init(&a->ttl_timer, on_ttl_tick, TTL_TICK, TTL_TICK);
	ev_timer_start(loop, &a->ttl_timer);
	return start_scrape(a, err, errlen);
}

int dbk_agent_drop_privileges(struct dbk_agent *a, char *err, size_t errlen)
{
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (!a->cfg.user && !a->cfg.group)
		return 0;
	/* getpwnam and getgrnam return static storage of their own. */
	const struct passwd *pw = a->cfg.user ? getpwnam(a->cfg.user) : NULL;
	const struct group *gr = a->cfg.group ? getgrnam(a->cfg.group) : NULL;

	if (a->cfg.user && !pw) {
		dbk_errf(err, errlen, "--user: no user '%s'", a->cfg.user);
		return -1;
	}
	if (a->cfg.group && !gr) {
		dbk_errf(err, errlen, "--group: no group '%s'", a->cfg.group);
		return -1;
	}
	if (pw) {
		uid = pw->pw_uid;
		gid = pw->pw_gid;
	}
	if (gr)
		gid = gr->gr_gid;
	for (unsigned i = 0; i < a->nunix; i++)
		if (chown(dbk_net_unix_path(a->unix_specs[i]), uid, gid) < 0) {
			dbk_errf(err, errlen, "chown %s: %s", dbk_net_unix_path(a->unix_specs[i]),
			         strerror(errno));
			return -1;
		}
	/* Group first: once the uid is dropped, the gid can no longer change. */
	if (setgroups(0, NULL) < 0 || setgid(gid) < 0 || setuid(uid) < 0) {
		dbk_errf(err, errlen, "dropping privileges: %s", strerror(errno));
		return -1;
	}
	if (uid != 0 && setuid(0) == 0) {
		dbk_errf(err, errlen, "dropping privileges: root could be regained");
		return -1;
	}
	dbk_log(DBK_LOG_INFO, "privileges-dropped", "uid=%u gid=%u", (unsigned)uid, (unsigned)gid);
	return 0;
}

void dbk_agent_stop(struct dbk_agent *a)
{
	if (a->loop)
		ev_timer_stop(a->loop, &a->ttl_timer);
	dbk_scrape_free(a->scrape);
	a->scrape = NULL;
	a->route.models = NULL;
	dbk_models_free(a->models);
	a->models = NULL;
	free(a->route.eligible);
	a->route.eligible = NULL;
	dbk_server_watch_stop(&a->watch);
	dbk_runtime_sync_free(a->sync);
	dbk_admin_free(a->admin);
	dbk_completion_rx_free(a->events);
	dbk_spop_server_free(a->spop);
	dbk_share_loop_stop(a->share);
	a->share = NULL;
	dbk_policy_detach(a->bal);
	dbk_policy_stop(&a->policy);
	a->route.policy = NULL;
	dbk_bal_free(a->bal);
	for (unsigned i = 0; i < a->nunix; i++)
		if (dbk_net_unlink(a->unix_specs[i]) < 0)
			dbk_log(DBK_LOG_WARN, "socket-left-behind", "path=%s error=\"%s\"",
			        dbk_net_unix_path(a->unix_specs[i]), strerror(errno));
	a->nunix = 0;
	free(a->route.by_server);
	a->route.by_server = NULL;
	a->route.hold = NULL;
	dbk_hold_fini(&a->hold);
	a->route.sat = NULL;
	dbk_sat_free(&a->sat);
	free(a->discovered);
	a->discovered = NULL;
	a->sync = NULL;
	a->admin = NULL;
	a->events = NULL;
	a->spop = NULL;
	a->bal = NULL;
}
