/* The running agent: every piece of mutable state, owned by the event
 * loop. main builds it; agent.c holds the callbacks that tie the pieces
 * together; report.c renders it for the admin endpoint. */
#ifndef DBK_AGENT_H
#define DBK_AGENT_H

#include <ev.h>

#include "admin.h"
#include "config.h"
#include "completion_rx.h"
#include "pool.h"
#include "report.h"
#include "route.h"
#include "route_handler.h"

struct dbk_agent {
	/* The pools, by --pool's order (one without --pool). What the
	 * agent as a whole is told (listeners, limits, who may talk to it)
	 * is read from pools[0].cfg: the options before the first --pool,
	 * the same in every pool's. */
	struct dbk_pool pools[DBK_MAX_POOLS];
	unsigned npools;
	struct ev_loop *loop;
	/* With --pool: the route HAProxy's messages come to, which hands
	 * each to its pool's (dbk_pool_pick); without, pools[0].route. */
	struct dbk_route front;
	struct dbk_route_handler route_handler; /* route as the SPOP handler */
	struct dbk_spop_server *spop;
	struct dbk_completion_rx *events;
	struct dbk_admin *admin;
	ev_timer ttl_timer;
	/* Unix sockets we created, removed again at stop. */
	const char *unix_specs[3 * DBK_MAX_LISTEN];
	unsigned nunix;
};

/* The agent-wide settings: the options before the first --pool. */
static inline const struct dbk_config *dbk_agent_cfg(const struct dbk_agent *a)
{
	return &a->pools[0].cfg;
}

/* Starts every pool and every listener the configuration names.
 * Returns 0, or -1 with the reason in err. */
int dbk_agent_start(struct dbk_agent *a, struct ev_loop *loop, char *err, size_t errlen);
void dbk_agent_stop(struct dbk_agent *a);

/* Drops to --user/--group, if given, handing them the unix sockets
 * first. Returns 0, or -1 with err. */
int dbk_agent_drop_privileges(struct dbk_agent *a, char *err, size_t errlen);

/* Rereads each pool's --config over its command line's settings and
 * applies them live. Returns 0, or -1 with err (the pools before the
 * one that failed are changed). */
int dbk_agent_reload(struct dbk_agent *a, char *err, size_t errlen);

#endif
