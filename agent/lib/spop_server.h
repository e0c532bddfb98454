/* The SPOP server: listeners and HAProxy connections on a libev loop.
 * It frames bytes, runs each connection's HELLO/NOTIFY/DISCONNECT state
 * machine, enforces the limits and timeouts, and hands every NOTIFY to a
 * handler that writes the ACK's actions. It knows nothing of what the
 * messages mean: dbucket-spoa's handler routes (agent/route_handler.h),
 * dbucket-null-agent's names a fixed server. */
#ifndef DBK_SPOP_SERVER_H
#define DBK_SPOP_SERVER_H

#include <ev.h>
#include <stdint.h>

#include "net.h"
#include "spop_codec.h"

/* What a server's user supplies. */
struct dbk_spop_handler {
	/* One NOTIFY frame, whole (FIN set, not aborted). The server has
	 * begun the ACK in w (stream and frame ids echoed) and ends it
	 * after the call; w's room is the negotiated max frame, so a write
	 * that does not fit marks w overflowed. Returns DBK_SPOP_OK, or the
	 * status to DISCONNECT with (the ACK is then dropped). */
	enum dbk_spop_status (*notify)(void *arg, const struct dbk_spop_frame *f,
	                               struct dbk_spop_writer *w);
	void *arg;
};

struct dbk_spop_server_stats {
	uint64_t accepted;
	uint64_t closed;
	uint64_t hellos;
	uint64_t healthchecks;
	uint64_t frames_in;
	uint64_t frames_out;
	uint64_t notifies;            /* NOTIFY frames handed to the handler */
	uint64_t acks;                /* ACKs sent for them */
	uint64_t haproxy_disconnects; /* HAPROXY-DISCONNECTs received */
	uint64_t refused_conns;       /* over max_connections, in all or per peer */
	uint64_t evicted_conns;       /* closed, never useful, to make way for a new one */
	/* AGENT-DISCONNECTs we sent, by SPOP status code (99 and others
	 * land in the last slot). */
	uint64_t disconnects[DBK_SPOP_ERR_RES + 2];
	unsigned open;
};

struct dbk_spop_server_config {
	uint32_t max_frame_size;
	unsigned max_connections;          /* 0: no limit */
	unsigned max_connections_per_peer; /* 0: no limit but the above */
	/* Who may connect over TCP (kept by the caller); nallow 0: anyone. */
	const struct dbk_net_cidr *allow;
	unsigned nallow;
	/* Seconds; 0 takes the default. A peer that sends no HELLO in
	 * hello_timeout, takes longer than frame_timeout from a frame's
	 * first byte to its last (slowloris), or after HELLO sends nothing
	 * for idle_timeout, is disconnected. */
	double hello_timeout;
	double frame_timeout;
	double idle_timeout;
};

struct dbk_spop_server;

/* Returns NULL when out of memory. The handler is copied. */
struct dbk_spop_server *dbk_spop_server_new(struct ev_loop *loop,
                                            const struct dbk_spop_server_config *c,
                                            const struct dbk_spop_handler *h);

/* Starts accepting on an already listening fd (see net.h). */
int dbk_spop_server_add_listener(struct dbk_spop_server *s, int fd);

/* Stops accepting and closes every connection, telling each peer with
 * a DISCONNECT "normal" where the socket takes it at once. */
void dbk_spop_server_shutdown(struct dbk_spop_server *s);

void dbk_spop_server_free(struct dbk_spop_server *s);

const struct dbk_spop_server_stats *dbk_spop_server_stats(const struct dbk_spop_server *s);

#endif
