/* The SPOP server: listeners and HAProxy connections on a libev loop.
 * It frames bytes, runs the HELLO/NOTIFY/DISCONNECT state machine and
 * hands NOTIFY frames to the router; it knows nothing of balancing. */
#ifndef DBK_SPOP_SERVER_H
#define DBK_SPOP_SERVER_H

#include <ev.h>
#include <stdint.h>

#include "histo.h"
#include "route.h"

struct dbk_spoa_stats {
	uint64_t accepted;
	uint64_t closed;
	uint64_t hellos;
	uint64_t healthchecks;
	uint64_t frames_in;
	uint64_t frames_out;
	uint64_t refused_conns;     /* over max_connections, in all or per peer */
	/* AGENT-DISCONNECTs we sent, by SPOP status code (99 and others
	 * land in the last slot). */
	uint64_t disconnects[DBK_SPOP_ERR_RES + 2];
	unsigned open;
	/* Time to handle one NOTIFY (decode, decide, encode), seconds. */
	struct dbk_histo notify_seconds;
};

struct dbk_spoa_config {
	uint32_t max_frame_size;
	unsigned max_connections;
	unsigned max_connections_per_peer;  /* 0: no limit but the above */
	/* Seconds; 0 takes the default. A peer that sends no HELLO in
	 * hello_timeout, takes longer than frame_timeout from a frame's
	 * first byte to its last (slowloris), or after HELLO sends nothing
	 * for idle_timeout, is disconnected. */
	double hello_timeout;
	double frame_timeout;
	double idle_timeout;
};

struct dbk_spoa;

struct dbk_spoa *dbk_spoa_new(struct ev_loop *loop, const struct dbk_spoa_config *c,
                              struct dbk_route *route);

/* Starts accepting on an already listening fd (see net.h). */
int dbk_spoa_add_listener(struct dbk_spoa *s, int fd);

/* Stops accepting and closes every connection, telling each peer with
 * a DISCONNECT "normal" where the socket takes it at once. */
void dbk_spoa_shutdown(struct dbk_spoa *s);

void dbk_spoa_free(struct dbk_spoa *s);

const struct dbk_spoa_stats *dbk_spoa_stats(const struct dbk_spoa *s);

#endif
