/* Charges of requests whose body was not whole at the decision.
 *
 * HAProxy asks after one buffer of body (wait-for-body at-least 16k): an
 * honest long prompt still on its way and a client that announces
 * 900 KB, sends 20 KB and trickles the rest look the same then. Charged
 * the announced length for as long as they trickle, three such clients
 * take three servers out of rotation (issue 29 item 5).
 *
 * The evidence that a request has reached the server is the server's own
 * count of requests (vLLM's num_requests_running + num_requests_waiting,
 * scraped): a request reaches vLLM's engine only once its whole body has
 * been read. Only a server whose last scrape read both counts is
 * watched; a server not scraped, or whose scrape fails, has its partial
 * bodies charged in full. Two ways to use it:
 *
 * Take back (the default). Every request is charged in full at the
 * decision, so an honest decision is the one it always was. A
 * partial-body lease loses its prefill charge (the score of an empty
 * body: vLLM does nothing with a body until it is whole) only on
 * evidence that it has not reached the engine: once its grace is over
 * (dbk_hold_grace_ms: a few scrapes plus the time a slow honest link
 * needs for the bytes still missing), and only while the server counts
 * fewer requests than the agent's leases on it (the deficit) on every
 * scrape of DBK_HOLD_SCRAPES spans in a row. The deficit taken is the
 * smallest of those scrapes': a count that lags (vLLM finished a request whose
 * completion line has not released its lease yet, a small request on
 * its way) makes a deficit of a scrape or two, which the run does not
 * survive. Of the partial-body leases past their grace, the oldest lose
 * their charge first: the longer since the decision, the less an honest
 * body can still be on its way, and a trickler's lease is the one that
 * lasts. A taken-back charge is given in full again as soon as the
 * deficit shrinks below the number taken back (no run needed: the error
 * is toward the old charge), or the server's scrape fails. A lease that
 * left while the scrape was out (dbk_hold_scrape_sent) may be in its
 * count: it shrinks no deficit there, else every burst's end, its
 * completion lines racing a scrape, would give a trickler back. Requests of
 * other balancers on the same server raise the count, so hide a deficit,
 * never make one.
 *
 * Strict (--hold-partial-bodies): a partial-body lease is charged
 * without its prefill at once and in full only once the count shows it:
 * the requests a scrape counts beyond the leases charged in full can only
 * be held ones, that many of them (the oldest first) are made whole. A
 * lease that left the server between the scrape's request and its answer
 * (dbk_hold_scrape_sent) may be in the count though the agent holds it no
 * longer: they are taken off the excess, so that a completion line racing
 * the scrape makes no excess. The excess taken is still the smaller of
 * two scrapes in a row: a count that lags otherwise (a request in transit
 * the engine counted but whose lease is not taken yet, a release whose
 * line came late) makes an excess of one scrape, and the trickler it
 * would make whole stays whole until its lease ends. Every prompt past
 * 16 KB waits two scrapes for its charge, which live cost honest traffic
 * (README, Slow bodies).
 *
 * Either way a held or taken-back charge ends with the lease, however it
 * ends (an entry whose lease is gone is dropped at the next scrape).
 *
 * Pure: no clock (the caller passes the time), no I/O. Bounded:
 * DBK_HOLD_MAX entries; past them a request is charged in full and not
 * watched. */
#ifndef DBK_ESTIMATE_HOLD_H
#define DBK_ESTIMATE_HOLD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "balancer.h"

#define DBK_HOLD_MAX 1024
/* Spans in a row, each of one scrape interval but at least
 * DBK_HOLD_SPAN_MIN_MS, every scrape of which must show a deficit before
 * a charge is taken back (a span's deficit is its smallest): with the
 * default 100 ms interval, 3 scrapes, so a count lagging by up to 200 ms
 * is not a deficit; with faster scrapes, still 200 ms, so a loaded
 * machine whose completion lines or requests in transit lag a few fast
 * scrapes takes nothing back. */
#define DBK_HOLD_SCRAPES 3
#define DBK_HOLD_SPAN_MIN_MS 100
/* The link rate an honest client is granted for the bytes still missing
 * at the decision: 1 Mbit/s, a poor mobile uplink. */
#define DBK_HOLD_LINK_BYTES_PER_S 125000
/* The longest that grant lasts: past it the server's count is the better
 * witness, and a charge taken back from an honest body that was only
 * slow comes back at the first scrape that counts it. */
#define DBK_HOLD_TRANSFER_MAX_MS 5000

struct dbk_hold_stats {
	uint64_t held;       /* strict: charged for part of their body */
	uint64_t confirmed;  /* strict: then in full, their server had them */
	uint64_t unwatched;  /* strict: then in full, their server's scrape failed */
	uint64_t no_room;    /* not watched: DBK_HOLD_MAX entries live */
	uint64_t watched;    /* take back: partial-body leases watched */
	uint64_t taken_back; /* take back: prefill charge taken back */
	uint64_t recharged;  /* take back: then charged in full again */
};

struct dbk_hold_entry {
	double full;     /* the score of the whole request */
	double part;     /* without its prefill */
	uint64_t due_ms; /* take back: its grace ends */
	bool taken;      /* take back: charged part now */
	uint8_t id_len;
	char id[DBK_BAL_MAX_ID_LEN];
};

/* A server's last scrapes. */
struct dbk_hold_server {
	bool watched;                     /* its last scrape read both counts */
	double excess;                    /* strict: the last one's, less those made whole */
	unsigned run;                     /* spans in a row with a deficit */
	uint64_t span_ms;                 /* when the newest began */
	double deficit[DBK_HOLD_SCRAPES]; /* theirs, the newest at run - 1 */
	bool sent;                        /* a scrape's request is out */
	uint64_t ended_at_send;           /* the balancer's ended count then */
};

struct dbk_hold {
	struct dbk_hold_entry *e; /* oldest first */
	size_t n;
	struct dbk_hold_server *s;
	unsigned nservers;
	bool strict;        /* --hold-partial-bodies; set after init */
	uint64_t scrape_ms; /* the scrape interval; set after init */
	struct dbk_hold_stats stats;
	/* Told of each charge dbk_hold_scraped makes whole (strict) or
	 * gives back in full (take back), and of each it takes back, after
	 * the balancer's, so that a policy's own books follow
	 * (dbk_route_whole, dbk_route_taken); the id is valid during the
	 * call. NULL: nobody. Set after init; whole_arg is both's. */
	void (*whole)(void *arg, const char *id, size_t id_len);
	void (*taken)(void *arg, const char *id, size_t id_len);
	void *whole_arg;
};

/* Returns 0, or -1 out of memory. Every server starts unwatched; take
 * back, scrape_ms 0. */
int dbk_hold_init(struct dbk_hold *h, unsigned nservers);
void dbk_hold_fini(struct dbk_hold *h);

/* Whether a request dispatched to server now may be held back. */
bool dbk_hold_watching(const struct dbk_hold *h, unsigned server);

/* How long after the decision a body missing bytes is given to reach the
 * engine and be counted there, scrapes every scrape_ms: DBK_HOLD_SCRAPES
 * of them plus the bytes at DBK_HOLD_LINK_BYTES_PER_S, that part at most
 * DBK_HOLD_TRANSFER_MAX_MS. */
uint64_t dbk_hold_grace_ms(uint64_t missing, uint64_t scrape_ms);

/* id's lease was just taken on a watched server at score full, part
 * without its prefill, missing bytes of its body still to come at now_ms.
 * Strict: it is charged part until dbk_hold_scraped sees it. Take back:
 * it stays charged full, watched. Returns false, the lease left at full
 * and not watched, when the server is not watched, there is no such
 * lease, or no room (counted). */
bool dbk_hold_add(struct dbk_hold *h, struct dbk_balancer *bal, const char *id, size_t id_len,
                  double full, double part, uint64_t missing, uint64_t now_ms);

/* A scrape of server's counts was just sent: the leases that leave it
 * from now until its answer (dbk_hold_scraped) are taken off that
 * answer's excess (strict). Without it, nothing is. */
void dbk_hold_scrape_sent(struct dbk_hold *h, const struct dbk_balancer *bal, unsigned server);

/* A scrape of server ended at now_ms: ok when it read the running and
 * waiting counts, whose sum is engine. Returns how many charges it
 * changed. */
size_t dbk_hold_scraped(struct dbk_hold *h, struct dbk_balancer *bal, unsigned server, bool ok,
                        double engine, uint64_t now_ms);

/* Partial-body leases watched now (entries whose lease ended since the
 * last scrape included). */
static inline size_t dbk_hold_count(const struct dbk_hold *h) { return h->n; }

#endif
