/* Accepting connections on a libev loop: every server in the agent (SPOP,
 * completion events, admin) hands its listening sockets to a listener set
 * and gets each accepted, non-blocking fd through a callback.
 *
 * The set also keeps one peer from taking every connection: it counts
 * open connections in all and per peer (an IP address; the process for a
 * unix socket) and closes at once what is over either limit. And it
 * survives running out of descriptors: on EMFILE it sheds the pending
 * connection with a spare descriptor kept for that, or pauses accepting
 * for a moment, rather than spinning on a backlog it cannot drain. Logs
 * of refusals are rate-limited. */
#ifndef DBK_LISTENER_H
#define DBK_LISTENER_H

#include <ev.h>
#include <stdint.h>

#include "lib/log.h"
#include "lib/net.h"

#define DBK_LISTENER_MAX 8

/* Takes ownership of fd: keep it or close it. A set with limits needs
 * dbk_listener_release(fd) before the owner closes it. */
typedef void (*dbk_accept_cb)(void *arg, int fd);

struct dbk_peer_slot;

struct dbk_listener_set {
	struct ev_loop *loop;
	dbk_accept_cb cb;
	void *arg;
	const char *what; /* for logs */
	unsigned n;
	/* Limits (0: none, and no accounting) and their counters. */
	unsigned max_conns, max_per_peer, open;
	uint64_t *refused; /* the owner's counter, may be NULL */
	/* Called when a new connection is over a limit: the owner may close
	 * one of its connections for which dbk_listener_may_evict(s, fd,
	 * peer) holds (releasing it) and return nonzero to have the new one
	 * admitted if it fits now. */
	int (*make_room)(void *room_arg, const void *peer);
	void *room_arg;
	/* Who may connect over TCP (nallow 0: anyone); a unix socket's
	 * permissions decide who reaches it, so it is never filtered. */
	const struct dbk_net_cidr *allow;
	unsigned nallow;
	struct dbk_peer_slot *slots; /* max_conns of them */
	unsigned *buckets, nbuckets, free_slot;
	unsigned *slot_of_fd; /* slot + 1 by fd; 0: not counted */
	unsigned fd_cap;
	struct dbk_log_limit refuse_log, emfile_log;
	int reserve_fd;  /* spare descriptor for EMFILE */
	ev_timer resume; /* accepting paused until it fires */
	struct dbk_listener {
		ev_io io;
		struct dbk_listener_set *set;
	} ls[DBK_LISTENER_MAX];
};

void dbk_listener_init(struct dbk_listener_set *s, struct ev_loop *loop, const char *what,
                       dbk_accept_cb cb, void *arg);
/* Caps the open connections in all and from one peer (0: no cap for
 * that one); refusals are counted in *refused if not NULL. Call before
 * the first accept. Returns -1 when out of memory. */
int dbk_listener_limit(struct dbk_listener_set *s, unsigned max_conns, unsigned max_per_peer,
                       uint64_t *refused);

/* dbk_listener_init and dbk_listener_limit, what every server of the
 * agent does first: -1 when out of memory, the set then closed (closing
 * it again is harmless). */
int dbk_listener_open(struct dbk_listener_set *s, struct ev_loop *loop, const char *what,
                      dbk_accept_cb cb, void *arg, unsigned max_conns, unsigned max_per_peer,
                      uint64_t *refused);
/* Whether closing fd would make room for a connection from peer (the
 * argument of make_room): any fd when the set is full, else one of the
 * same peer's. */
int dbk_listener_may_evict(const struct dbk_listener_set *s, int fd, const void *peer);
/* Gives back fd's place in the limits; call before closing it. */
void dbk_listener_release(struct dbk_listener_set *s, int fd);
/* Starts accepting on an already listening fd. Returns -1 when full. */
int dbk_listener_add(struct dbk_listener_set *s, int fd);
/* Stops and closes every listening fd, frees what the limits use. */
void dbk_listener_close(struct dbk_listener_set *s);

/* Raises the soft descriptor limit towards want (never above the hard
 * limit) and returns the soft limit in force. */
unsigned long dbk_listener_fd_limit(unsigned long want);

#endif
