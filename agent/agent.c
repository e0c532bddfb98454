#include "agent.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/clock.h"
#include "lib/listener.h"
#include "lib/log.h"
#include "lib/net.h"
#include "pool_pick.h"
#include "settings.h"
#include "status_page.h"

#define TTL_TICK 1.0

/* The pool whose books a completion line is for: the one that holds
 * its lease, or saw a copy of it already. A line no pool knows is
 * pools[0]'s to count, and buried in the others too: its NOTIFY, if
 * still to come, takes no lease in whichever pool it is for. */
static struct dbk_pool *completion_pool(struct dbk_agent *a, const struct dbk_completion *c,
                                        uint64_t now_ms)
{
	if (a->npools == 1)
		return &a->pools[0];
	for (unsigned i = 0; i < a->npools; i++)
		if (dbk_bal_holds(a->pools[i].bal, c->id, c->id_len) ||
		    dbk_bal_ended(a->pools[i].bal, c->id, c->id_len))
			return &a->pools[i];
	for (unsigned i = 1; i < a->npools && c->id_len; i++)
		dbk_bal_bury(a->pools[i].bal, c->id, c->id_len, now_ms);
	return &a->pools[0];
}

/* The completion receiver's callback: the books do the work, this logs.
 * Only a line that released a lease is work a link is kept open for (a
 * stranger can send well-formed lines, not the ids of live leases), and
 * only such a line tells of a server: each line comes twice (its copy
 * counts once), and a forged line cannot eject a server. */
static bool on_completion(void *arg, const struct dbk_completion *c)
{
	struct dbk_agent *a = arg;
	uint64_t now_ms = dbk_mono_ms();
	struct dbk_pool *p = completion_pool(a, c, now_ms);
	enum dbk_acct_outcome o = dbk_acct_complete(&p->acct, c, now_ms, (int64_t)dbk_wall_ms(),
	                                            NULL);

	if (o == DBK_ACCT_UNKNOWN) {
		char q[DBK_BAL_MAX_ID_LEN + 1];

		dbk_log(DBK_LOG_DEBUG, "completion-unknown", "id=\"%s\"",
		        dbk_log_quote(q, sizeof(q), c->id, c->id_len));
	}
	if (o != DBK_ACCT_RELEASED)
		return false;
	dbk_server_watch_completion(&p->watch, c);
	return true;
}

static void on_ttl_tick(struct ev_loop *loop, ev_timer *w, int revents)
{
	struct dbk_agent *a = (struct dbk_agent *)((char *)w -
	                                           offsetof(struct dbk_agent, ttl_timer));

	(void)loop;
	(void)revents;
	for (unsigned i = 0; i < a->npools; i++)
		dbk_pool_expire(&a->pools[i], dbk_mono_ms());
}

int dbk_agent_reload(struct dbk_agent *a, char *err, size_t errlen)
{
	struct dbk_bal_config c[DBK_MAX_POOLS];
	bool any = false;

	/* The admin token first: it needs no --config. */
	if (dbk_admin_reload(a->admin, err, errlen) < 0)
		return -1;
	/* Every file read and checked before any is applied. */
	for (unsigned i = 0; i < a->npools; i++) {
		if (!a->pools[i].cfg.config_file)
			continue;
		any = true;
		if (dbk_pool_read_config(&a->pools[i], &c[i], err, errlen) < 0)
			return -1;
	}
	if (!any) {
		if (dbk_agent_cfg(a)->admin_token_file)
			return 0;
		dbk_errf(err, errlen, "no --config file to reread");
		return -1;
	}
	for (unsigned i = 0; i < a->npools; i++)
		if (a->pools[i].cfg.config_file &&
		    dbk_pool_apply_config(&a->pools[i], &c[i], "file", err, errlen) < 0)
			return -1;
	return 0;
}

/* The pool /config is about: pool=NAME first in the query (which is
 * then the rest), else the first; NULL when no pool has that name. */
static struct dbk_pool *config_pool(struct dbk_agent *a, const char **query)
{
	const char *q = *query;

	if (strncmp(q, "pool=", 5) != 0)
		return &a->pools[0];
	q += 5;
	size_t n = strcspn(q, "&");
	*query = q[n] ? q + n + 1 : q + n;
	for (unsigned i = 0; i < a->npools; i++)
		if (strlen(a->pools[i].cfg.backend) == n &&
		    strncmp(a->pools[i].cfg.backend, q, n) == 0)
			return &a->pools[i];
	return NULL;
}

static void on_admin(void *arg, const char *method, const char *path, struct dbk_admin_response *r)
{
	struct dbk_agent *a = arg;
	const char *query = strchr(path, '?');
	size_t plen = query ? (size_t)(query - path) : strlen(path);

	if (plen == 7 && strncmp(path, "/config", 7) == 0) {
		const char *keys = query ? query + 1 : "";
		struct dbk_pool *p = config_pool(a, &keys);
		char err[256];

		if (!p) {
			r->status = 404;
			dbk_buf_printf(&r->body, "no such pool\n");
			return;
		}
		struct dbk_bal_config c = *dbk_bal_config(p->bal);
		if (strcmp(method, "POST") == 0 &&
		    (dbk_settings_query(&c, keys, err, sizeof(err)) < 0 ||
		     dbk_pool_apply_config(p, &c, "admin", err, sizeof(err)) < 0)) {
			r->status = 400;
			dbk_buf_printf(&r->body, "%s\n", err);
		} else if (strcmp(method, "POST") != 0 && strcmp(method, "GET") != 0) {
			r->status = 405;
			dbk_buf_printf(&r->body, "GET or POST /config?key=value&...\n");
		} else {
			dbk_settings_describe(dbk_bal_config(p->bal), false, &r->body);
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
	struct dbk_config *c = &a->pools[0].cfg;
	unsigned long want = (unsigned long)c->max_connections + COMPLETION_CONNS + ADMIN_CONNS +
	                     FD_OVERHEAD;
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
	c->max_connections = (unsigned)spop;
}

/* A message's route: its pool's (pool_pick.h). */
static struct dbk_route *pick(void *arg, const struct dbk_spop_message *m, const char **backend)
{
	struct dbk_agent *a = arg;
	int k = dbk_pool_pick(a->pools, a->npools, m);

	if (k < 0)
		return NULL;
	*backend = a->pools[k].cfg.backend;
	return &a->pools[k].route;
}

/* The route HAProxy's messages come to: pools[0]'s alone, as before
 * pools were, without --pool; else the front, which hands each to its
 * pool's, and every pool's decisions are logged. */
static struct dbk_route *front_route(struct dbk_agent *a)
{
	if (!a->pools[0].cfg.pool)
		return &a->pools[0].route;
	a->front.pick = pick;
	a->front.pick_arg = a;
	return &a->front;
}

/* The SPOP, completion and admin servers, on every address given. */
static int start_listeners(struct dbk_agent *a, char *err, size_t errlen)
{
	struct dbk_config *c = &a->pools[0].cfg;
	unsigned completion_conns, admin_conns;

	fit_fd_limit(a, &completion_conns, &admin_conns);
	/* By default two HAProxy instances (or one and a stranger) both fit. */
	if (!c->max_connections_per_peer)
		c->max_connections_per_peer = (c->max_connections + 1) / 2;
	else if (c->max_connections_per_peer > c->max_connections)
		c->max_connections_per_peer = c->max_connections;
	struct dbk_spop_server_config sc = {
		.max_frame_size = c->max_frame_size,
		.max_connections = c->max_connections,
		.max_connections_per_peer = c->max_connections_per_peer,
		.idle_timeout = (double)c->idle_timeout_s,
		.allow = c->allow,
		.nallow = c->nallow,
	};
	struct dbk_admin_config ac = {
		.max_conns = admin_conns,
		.token_file = c->admin_token_file,
		.read_only = c->admin_read_only,
		.public_mask = c->admin_public,
		.hosts = c->admin_hosts,
		.nhosts = c->nadmin_hosts,
	};
	struct dbk_spop_handler h = dbk_route_handler_init(&a->route_handler, front_route(a));
	a->admin = dbk_admin_new(a->loop, &ac, on_admin, a, err, errlen);
	if (!a->admin)
		return -1;
	a->spop = dbk_spop_server_new(a->loop, &sc, &h);
	a->events = dbk_completion_rx_new(a->loop, completion_conns, c->allow, c->nallow,
	                                  on_completion, a);
	if (!a->spop || !a->events) {
		dbk_errf(err, errlen, "out of memory");
		return -1;
	}
	if (listen_all(a, c->listen, c->nlisten, "spop", add_spop, NULL, a->spop, err, errlen) ||
	    listen_all(a, c->completion_listen, c->ncompletion_listen, "completions", add_events,
	               add_events_udp, a->events, err, errlen) ||
	    listen_all(a, c->admin_listen, c->nadmin_listen, "admin", add_admin, NULL, a->admin,
	               err, errlen))
		return -1;
	return 0;
}

int dbk_agent_start(struct dbk_agent *a, struct ev_loop *loop, char *err, size_t errlen)
{
	a->loop = loop;
	for (unsigned i = 0; i < a->npools; i++)
		if (dbk_pool_start(&a->pools[i], loop, err, errlen) < 0)
			return -1;
	if (start_listeners(a, err, errlen) < 0)
		return -1;
	if (a->pools[0].cfg.pool)
		for (unsigned i = 0; i < a->npools; i++)
			dbk_route_handler_watch(&a->route_handler, &a->pools[i].route);
	ev_timer_init(&a->ttl_timer, on_ttl_tick, TTL_TICK, TTL_TICK);
	ev_timer_start(loop, &a->ttl_timer);
	return 0;
}

int dbk_agent_drop_privileges(struct dbk_agent *a, char *err, size_t errlen)
{
	const struct dbk_config *c = dbk_agent_cfg(a);
	uid_t uid = getuid();
	gid_t gid = getgid();

	if (!c->user && !c->group)
		return 0;
	/* getpwnam and getgrnam return static storage of their own. */
	const struct passwd *pw = c->user ? getpwnam(c->user) : NULL;
	const struct group *gr = c->group ? getgrnam(c->group) : NULL;

	if (c->user && !pw) {
		dbk_errf(err, errlen, "--user: no user '%s'", c->user);
		return -1;
	}
	if (c->group && !gr) {
		dbk_errf(err, errlen, "--group: no group '%s'", c->group);
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
	dbk_admin_free(a->admin);
	dbk_completion_rx_free(a->events);
	dbk_spop_server_free(a->spop);
	for (unsigned i = 0; i < a->npools; i++)
		dbk_pool_stop(&a->pools[i]);
	for (unsigned i = 0; i < a->nunix; i++)
		if (dbk_net_unlink(a->unix_specs[i]) < 0)
			dbk_log(DBK_LOG_WARN, "socket-left-behind", "path=%s error=\"%s\"",
			        dbk_net_unix_path(a->unix_specs[i]), strerror(errno));
	a->nunix = 0;
	a->admin = NULL;
	a->events = NULL;
	a->spop = NULL;
}
