/* Held-back charges: a request whose body was not whole when HAProxy
 * asked (the bytes it held, req.body_len, below the announced length,
 * req.body_size) is charged without its prefill (the router charges the
 * score of an empty body: vLLM does nothing with a body until it is
 * whole), and in full only once its server shows that it has the
 * request.
 *
 * HAProxy asks after one buffer of body (wait-for-body at-least 16k): an
 * honest long prompt still on its way and a client that announces
 * 900 KB, sends 20 KB and trickles the rest look the same then. Charged
 * the announced length at once, three such clients take three servers
 * out of rotation for as long as they trickle (issue 29 item 5).
 *
 * The evidence is the server's own count of requests (vLLM's
 * num_requests_running + num_requests_waiting, scraped): a request
 * reaches vLLM's engine only once its whole body has been read. On a
 * scrape of server s, the requests there beyond those the agent holds
 * whole (its leases on s less those held back) can only be held-back
 * ones: that many of them, the oldest first, are charged in full. So an
 * honest prompt is charged in full at the first scrape after its body
 * arrived (one scrape interval, 100 ms by default), a trickled one never
 * while it trickles. A count the engine cannot see past (other
 * balancers' requests on the same server) confirms too many, never too
 * few: the error is toward the old charge.
 *
 * Only where the evidence can come: a server whose last scrape read both
 * counts. A server not scraped, or whose scrape fails, is charged in
 * full at once, and its held-back charges are given in full (the rule
 * before this module). The held-back charge ends with the lease, however
 * it ends (an entry whose lease is gone is dropped at the next scrape).
 *
 * Pure: no clock, no I/O. Bounded: DBK_HOLD_MAX entries; past them a
 * request is charged in full. */
#ifndef DBK_ESTIMATE_HOLD_H
#define DBK_ESTIMATE_HOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "balancer.h"

#define DBK_HOLD_MAX 1024

struct dbk_hold_stats {
	uint64_t held;      /* requests charged for part of their body */
	uint64_t confirmed; /* then in full: their server had them */
	uint64_t unwatched; /* then in full: their server's scrape failed */
	uint64_t no_room;   /* charged in full at once: DBK_HOLD_MAX held */
};

struct dbk_hold_entry {
	double full; /* the score of the whole request */
	uint8_t id_len;
	char id[DBK_BAL_MAX_ID_LEN];
};

struct dbk_hold {
	struct dbk_hold_entry *e; /* oldest first */
	size_t n;
	bool *watched; /* by server: its last scrape read both counts */
	unsigned nservers;
	struct dbk_hold_stats stats;
	/* Told of each charge dbk_hold_scraped makes whole, after the
	 * balancer's (a policy's own books follow: dbk_route_whole); the id
	 * is valid during the call. NULL: nobody. Set after init. */
	void (*whole)(void *arg, const char *id, size_t id_len);
	void *whole_arg;
};

/* Returns 0, or -1 out of memory. Every server starts unwatched. */
int dbk_hold_init(struct dbk_hold *h, unsigned nservers);
void dbk_hold_fini(struct dbk_hold *h);

/* Whether a request dispatched to server now may be held back. */
bool dbk_hold_watching(const struct dbk_hold *h, unsigned server);

/* id's lease (just taken on a watched server at score full) is charged
 * provisional instead, until dbk_hold_scraped confirms it. Returns false,
 * the lease left at full, when the server is not watched, there is no
 * such lease, or no room (counted). */
bool dbk_hold_add(struct dbk_hold *h, struct dbk_balancer *bal, const char *id, size_t id_len,
                  double full, double provisional);

/* A scrape of server ended: ok when it read the running and waiting
 * counts, whose sum is engine. Returns how many held-back charges were
 * given in full. */
size_t dbk_hold_scraped(struct dbk_hold *h, struct dbk_balancer *bal, unsigned server, bool ok,
                        double engine);

/* Held-back charges live now (entries whose lease ended since the last
 * scrape included). */
static inline size_t dbk_hold_count(const struct dbk_hold *h) { return h->n; }

#endif
