/* The running agent: every piece of mutable state, owned by the event
 * loop. main builds it; agent.c holds the callbacks that tie the pieces
 * together; report.c renders it for the admin endpoint. */
#ifndef DBK_AGENT_H
#define DBK_AGENT_H

#include <ev.h>

#include "accounting.h"
#include "admin.h"
#include "balancer.h"
#include "books_share_loop.h"
#include "config.h"
#include "completion_rx.h"
#include "policy_ops.h"
#include "report.h"
#include "route.h"
#include "route_handler.h"
#include "runtime_sync.h"
#include "saturation.h"
#include "server_watch.h"

struct dbk_agent {
	struct dbk_config cfg;
	struct ev_loop *loop;
	struct dbk_balancer *bal;
	struct dbk_route route;
	struct dbk_hold hold;                   /* held-back charges (estimate_hold.h) */
	struct dbk_route_handler route_handler; /* route as the SPOP handler */
	struct dbk_spop_server *spop;
	struct dbk_completion_rx *events;
	struct dbk_admin *admin;
	struct dbk_runtime_sync *sync;    /* NULL without --haproxy-socket */
	struct dbk_rt_server *discovered; /* names read from HAProxy, if any */
	unsigned ndiscovered;
	/* Servers at start: cfg.servers[0..nstart). With --haproxy-socket,
	 * cfg.servers has a slot for each server the agent may follow (up to
	 * --max-servers), "" for a free one, and points into the runtime
	 * sync's names once it runs (they change as the backend does). */
	unsigned nstart;
	struct dbk_policy policy;     /* --policy's, running */
	struct dbk_share_loop *share; /* --share-books; NULL: not shared */
	struct dbk_scrape *scrape;    /* NULL: no server is scraped */
	/* Which server serves which model, from the scrapes' /v1/models;
	 * NULL (and no model routing) when no server is scraped. */
	struct dbk_models *models;
	/* What the command line says; --config is applied on top of it at
	 * start and on every SIGHUP. */
	struct dbk_bal_config base_config;
	uint64_t config_changes;
	ev_timer ttl_timer;
	struct dbk_acct acct; /* what completions and the TTL did */
	/* Outlier ejection (completions) and sleeping engines (scrapes). */
	struct dbk_server_watch watch;
	/* The fleet's saturation from scrapes, for admission under a policy
	 * that predicts nothing (route.sat points here). */
	struct dbk_saturation sat;
	/* Unix sockets we created, removed again at stop. */
	const char *unix_specs[3 * DBK_MAX_LISTEN];
	unsigned nunix;
};

/* Creates the balancer and every listener the configuration names.
 * Returns 0, or -1 with the reason in err. */
int dbk_agent_start(struct dbk_agent *a, struct ev_loop *loop, char *err, size_t errlen);
void dbk_agent_stop(struct dbk_agent *a);

/* Drops to --user/--group, if given, handing them the unix sockets
 * first. Returns 0, or -1 with err. */
int dbk_agent_drop_privileges(struct dbk_agent *a, char *err, size_t errlen);

/* Rereads --config over the command line's settings and applies them
 * live. Returns 0, or -1 with err (nothing changed). */
int dbk_agent_reload(struct dbk_agent *a, char *err, size_t errlen);

#endif
