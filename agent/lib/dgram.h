/* Reading datagrams on a libev loop: a set of bound UDP sockets, each
 * datagram handed whole (or cut at the set's buffer) to one callback.
 * HAProxy's completion lines come this way, one line a datagram, to the
 * agent and to the benchmark's do-nothing agent alike. */
#ifndef DBK_DGRAM_H
#define DBK_DGRAM_H

#include <ev.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/listener.h"
#include "lib/log.h"
#include "lib/net.h"

typedef void (*dbk_dgram_cb)(void *arg, const char *buf, size_t len);

struct dbk_dgram_set {
	struct ev_loop *loop;
	dbk_dgram_cb cb;
	void *arg;
	char *buf; /* one datagram at a time */
	size_t cap;
	/* Who may send (the caller keeps it); nallow 0: anyone. A datagram
	 * from elsewhere is dropped and counted in *refused. */
	const struct dbk_net_cidr *allow;
	unsigned nallow;
	uint64_t *refused;
	struct dbk_log_limit refuse_log;
	unsigned n;
	ev_io io[DBK_LISTENER_MAX];
};

/* A longer datagram is cut to cap bytes: the callback sees its start.
 * Returns -1 when out of memory. */
int dbk_dgram_init(struct dbk_dgram_set *s, struct ev_loop *loop, size_t cap, dbk_dgram_cb cb,
                   void *arg);
/* Only datagrams from these senders reach the callback (a UDP source
 * can be forged, but not from an unprivileged local process: the same
 * trust as --allow-from's over TCP). */
void dbk_dgram_allow(struct dbk_dgram_set *s, const struct dbk_net_cidr *allow, unsigned nallow,
                     uint64_t *refused);
/* Takes over a bound, non-blocking UDP socket. Returns -1 when full. */
int dbk_dgram_add(struct dbk_dgram_set *s, int fd);
/* Stops and closes every socket and frees the buffer. */
void dbk_dgram_close(struct dbk_dgram_set *s);

#endif
