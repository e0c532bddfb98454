/* A server's connections: its listener set (accepting, limits, the
 * allow-list) and every connection it accepted, in the order of their
 * last useful work. The agent's three servers (SPOP, completions, admin)
 * each own one, so who gets in when they are full, and how they all
 * close at shutdown, is decided here once.
 *
 * When a new connection is over a limit, the set closes the connection
 * that has waited longest without doing useful work (what that is, each
 * server says with dbk_connset_useful: a NOTIFY answered, a completion
 * line that released a lease, a whole admin request) and lets the new
 * one in, rather than refusing it: a peer that only holds connections
 * open cannot keep one that works out. A connection doing useful work
 * is never closed for a newcomer. Per-peer limits still hold (an
 * eviction for a peer at its own limit takes one of that peer's). */
#ifndef DBK_CONNSET_H
#define DBK_CONNSET_H

#include <ev.h>
#include <stdint.h>

#include "lib/conn.h"
#include "lib/list.h"
#include "lib/listener.h"
#include "lib/log.h"

struct dbk_connset_limits {
	unsigned max_conns;    /* 0: none, and no eviction */
	unsigned max_per_peer; /* 0: none but max_conns */
	uint64_t *refused;     /* the owner's counter, may be NULL */
	uint64_t *evicted;     /* the owner's counter, may be NULL */
	/* Useful work longer ago than this no longer protects a conn from
	 * eviction (0: it always does). */
	double stale_s;
	/* Who may connect over TCP (the caller keeps it); nallow 0: anyone. */
	const struct dbk_net_cidr *allow;
	unsigned nallow;
};

struct dbk_connset {
	struct dbk_listener_set ls;
	struct dbk_list conns; /* struct dbk_conn.set_link, least recently useful first */
	uint64_t *evicted;
	double stale_s;
	struct dbk_log_limit evict_log;
};

/* Accepted fds go to cb(arg, fd), which hands them to dbk_conn_accept
 * with this set (or closes them after dbk_listener_release). Returns -1
 * when out of memory, the set then closed. */
int dbk_connset_open(struct dbk_connset *s, struct ev_loop *loop, const char *what,
                     dbk_accept_cb cb, void *arg, const struct dbk_connset_limits *lim);
/* Starts accepting on an already listening fd. Returns -1 when full. */
int dbk_connset_add_listener(struct dbk_connset *s, int fd);
/* Connection c did useful work now: it is the last to be evicted. */
void dbk_connset_useful(struct dbk_conn *c);
/* Called by the conn as it ends: gives back its place. */
void dbk_connset_forget(struct dbk_conn *c);
/* Stops accepting and ends every connection: bye(c) when not NULL (it
 * must close c: a last word, then dbk_conn_flush_close), else
 * dbk_conn_close(DBK_CONN_LOCAL). Closing again is harmless. */
void dbk_connset_close(struct dbk_connset *s, void (*bye)(struct dbk_conn *c));

#endif
