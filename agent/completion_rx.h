/* The completion-event receiver: accepts HAProxy's ring connections (TCP
 * or unix, octet-counted lines) and reads UDP datagrams (one line each,
 * from a plain `log HOST:PORT` target), and hands every parsed completion
 * line to a callback. Knows framing and sockets, nothing of leases. */
#ifndef DBK_COMPLETION_RX_H
#define DBK_COMPLETION_RX_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "completion.h"
#include "lib/net.h"

struct dbk_completion_rx_stats {
	uint64_t accepted;
	uint64_t lines;             /* well-formed completion lines */
	uint64_t bad_lines;         /* framed, but not a dbk1 line */
	uint64_t bad_frames;        /* connections dropped for broken framing */
	uint64_t datagrams;         /* UDP datagrams read, lines or not */
	uint64_t refused;           /* links not admitted: over a limit, or not allowed */
	uint64_t refused_datagrams; /* from a sender not allowed */
	uint64_t evicted;           /* links closed to make way: nothing useful lately */
	unsigned open;
};

/* Returns whether the line was one the agent waited for (it ended a
 * lease): the work that keeps a link open when the listener is full. */
typedef bool (*dbk_completion_rx_cb)(void *arg, const struct dbk_completion *c);

struct dbk_completion_rx;

/* At most max_conns links, half of them from one peer; over TCP and UDP
 * only from the nallow addresses of allow (kept by the caller) when
 * nallow. */
struct dbk_completion_rx *dbk_completion_rx_new(struct ev_loop *loop, unsigned max_conns,
                                                const struct dbk_net_cidr *allow, unsigned nallow,
                                                dbk_completion_rx_cb cb, void *arg);
int dbk_completion_rx_add_listener(struct dbk_completion_rx *e, int fd);
/* Reads completion lines from a bound UDP socket (dbk_net_bind_udp).
 * Returns 0, or -1 when DBK_LISTENER_MAX sockets are already in use. */
int dbk_completion_rx_add_datagram(struct dbk_completion_rx *e, int fd);
/* Closes listeners and connections. */
void dbk_completion_rx_free(struct dbk_completion_rx *e);
const struct dbk_completion_rx_stats *dbk_completion_rx_stats(const struct dbk_completion_rx *e);

#endif
