/* A sink for HAProxy's completion lines: accepts ring connections on a
 * listener set and takes datagrams on UDP sockets, and reads and forgets
 * what comes, so that an HAProxy in front of dbucket-null-agent does the
 * logging work it would do in front of dbucket-spoa. */
#ifndef DBK_SPB_SINK_H
#define DBK_SPB_SINK_H

#include <ev.h>
#include <stdint.h>

#include "lib/dgram.h"
#include "lib/list.h"
#include "lib/listener.h"

struct dbk_sink {
	struct ev_loop *loop;
	struct dbk_listener_set ls;
	struct dbk_list links;
	struct dbk_dgram_set dgrams;
	uint64_t accepted;  /* connections */
	uint64_t bytes;     /* read and dropped, ring and datagrams */
	uint64_t datagrams; /* read and dropped */
};

/* Returns -1 when out of memory. */
int dbk_sink_init(struct dbk_sink *s, struct ev_loop *loop);
/* Takes over a bound UDP socket. Returns -1 when there are too many. */
int dbk_sink_add_datagram(struct dbk_sink *s, int fd);
/* Closes the listeners, the UDP sockets and every connection. */
void dbk_sink_close(struct dbk_sink *s);

#endif
