/* The event-loop side of books_share.h: every interval, this node's
 * changed rows written to HAProxy's table with one batched runtime API
 * query (runtime_client.h) and the whole table read with `show table`,
 * its other nodes' rows charged to the policy. A query still running
 * when the next turn comes is left to finish (no second one of its
 * kind). Failures are logged when they start and when they stop. */
#ifndef DBK_BOOKS_SHARE_LOOP_H
#define DBK_BOOKS_SHARE_LOOP_H

#include <ev.h>

#include "books_share.h"
#include "runtime_client.h"

struct dbk_share_loop_config {
	const char *table;        /* the stick table (haproxy.cfg's backend name) */
	unsigned interval_ms;     /* write and read this often */
	unsigned refresh_ms;      /* rewrite an unchanged row this often */
	const char *const *names; /* server i's name (the agent's, which follow HAProxy) */
	unsigned nnames;
};

struct dbk_share_loop;

/* Starts the timer. s, cfg->names and addr's text must outlive it.
 * Returns NULL with err (out of memory). */
struct dbk_share_loop *dbk_share_loop_start(struct ev_loop *loop, const struct dbk_rt_addr *addr,
                                            struct dbk_share *s,
                                            const struct dbk_share_loop_config *cfg, char *err,
                                            size_t errlen);
/* What the agent calls: wraps p (books_share.h) as --share-books,
 * --node and --share-interval in cfg say, and starts the loop on
 * cfg->haproxy_socket, for the servers named in cfg->servers. */
struct dbk_config;
struct dbk_share_loop *dbk_share_loop_for(struct ev_loop *loop, struct dbk_policy *p,
                                          const struct dbk_config *cfg, char *err, size_t errlen);

/* Stops it and cancels its queries; before the policy it feeds stops. */
void dbk_share_loop_stop(struct dbk_share_loop *l);

#endif
