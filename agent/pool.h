/* One pool: an HAProxy backend's books and what feeds them. The agent
 * (agent.h) runs one per --pool (one without it): each has its servers,
 * its balancer and leases, its policy, scrapes, model sets, runtime API
 * sync, outlier watch and saturation, under its own command line
 * (config.h's dbk_config_parse_pools). What pools share (the loop, the
 * SPOP, completion and admin listeners) is the agent's. */
#ifndef DBK_POOL_H
#define DBK_POOL_H

#include <ev.h>

#include "accounting.h"
#include "balancer.h"
#include "books_share_loop.h"
#include "config.h"
#include "estimate_hold.h"
#include "models.h"
#include "policy_ops.h"
#include "route.h"
#include "runtime_sync.h"
#include "saturation.h"
#include "scrape.h"
#include "server_watch.h"

struct dbk_pool {
	/* The options before the first --pool, then this pool's own. Its
	 * backend is cfg.backend (--pool's NAME, or --backend's). */
	struct dbk_config cfg;
	struct ev_loop *loop;
	struct dbk_balancer *bal;
	struct dbk_route route;
	struct dbk_hold hold;             /* held-back charges (estimate_hold.h) */
	struct dbk_runtime_sync *sync;    /* NULL without --haproxy-socket */
	struct dbk_rt_server *discovered; /* names read from HAProxy, if any */
	unsigned ndiscovered;
	/* Servers at start: cfg.servers[0..nstart). With --haproxy-socket,
	 * cfg.servers has a slot for each server the pool may follow (up to
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
	struct dbk_acct acct; /* what completions and the TTL did */
	/* Outlier ejection (completions) and sleeping engines (scrapes). */
	struct dbk_server_watch watch;
	/* The backend's saturation from scrapes, for admission under a
	 * policy that predicts nothing (route.sat points here). */
	struct dbk_saturation sat;
};

/* Starts p's books on loop: discovery and slots, balancer, policy,
 * runtime sync, scrapes. Returns 0, or -1 with the reason in err. */
int dbk_pool_start(struct dbk_pool *p, struct ev_loop *loop, char *err, size_t errlen);
void dbk_pool_stop(struct dbk_pool *p);

/* p's --config read over its command line's settings into c, checked.
 * Returns 0, or -1 with "FILE: reason" in err. */
int dbk_pool_read_config(const struct dbk_pool *p, struct dbk_bal_config *c, char *err,
                         size_t errlen);

/* Applies c to p's balancer live and logs it, by how ("file", "admin"). */
int dbk_pool_apply_config(struct dbk_pool *p, const struct dbk_bal_config *c, const char *how,
                          char *err, size_t errlen);

/* The TTL tick: leases older than --lease-ttl are released. */
void dbk_pool_expire(struct dbk_pool *p, uint64_t now_ms);

#endif
