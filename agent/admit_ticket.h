/* Admission's tickets (issue 28): a Retry-After that is honoured by
 * construction. A request shed with a Retry-After gets a ticket: its
 * identity and the moment it was told to come back. Its retry, come
 * back at or after that moment and within DBK_TICKET_GRACE_MS, is let
 * in even where admission's rule would shed it again, unless critical
 * is at risk or it would be late for its own objective anyway. The
 * moments told are spaced per class no closer than the class has been
 * admitted lately: a take-a-number queue whose waiting is done by the
 * client, not by HAProxy.
 *
 * Why: with the openai SDKs' clients (two retries, each after the
 * Retry-After) only 8-53% of retries were admitted (BENCHMARKS.md,
 * "Stop 40"): admission holds the fleet at its own threshold, each
 * admission refills the queue, and a retry finds the fleet admissible
 * about as often as a fresh request. A ticket turns the Retry-After
 * into a reservation.
 *
 * The identity: the agent's is a hash of the class and a sample of the
 * body (a retry sends the same body); the simulator's the request id.
 * Bounded: DBK_TICKETS_N slots, direct-mapped by the identity, a
 * collision replaces the older ticket (its retry is then decided as a
 * fresh request). Single use; expired past the grace.
 *
 * Pure: no I/O, no clock of its own (the caller gives now_ms). */
#ifndef DBK_ADMIT_TICKET_H
#define DBK_ADMIT_TICKET_H

#include <stdbool.h>
#include <stdint.h>

#include "admission.h"

#define DBK_TICKETS_N 4096 /* a power of two */
/* A retry up to this long after the moment it was told holds its
 * ticket: a client's clock, its queueing and the network in between. */
#define DBK_TICKET_GRACE_MS 5000
/* ... and up to this long before it: the client's clock, and ours
 * rounded to the millisecond. */
#define DBK_TICKET_EARLY_MS 50
/* The weight of each new gap between a class's admissions in their
 * running mean. */
#define DBK_TICKET_GAP_ALPHA 0.125

struct dbk_ticket {
	uint64_t key; /* the request's identity; 0: an empty slot */
	uint64_t told_ms;
};

/* Zeroed: no ticket, nothing admitted yet. */
struct dbk_admit_tickets {
	struct dbk_ticket slot[DBK_TICKETS_N];
	uint64_t next_ms[DBK_CLASS_N];  /* no ticket of the class told before */
	uint64_t last_ms[DBK_CLASS_N];  /* the class's latest admission; 0: none */
	double gap_ms[DBK_CLASS_N];     /* running mean of its admissions' gaps */
	uint64_t issued, honoured, early; /* counters, for the logs and the sim */
};

/* A request of cls admitted at now_ms: its class's pace. */
void dbk_tickets_admitted(struct dbk_admit_tickets *t, enum dbk_class cls, uint64_t now_ms);

/* A request of cls, identity key (non-zero), shed at now_ms with a
 * Retry-After of retry_after_s: the Retry-After to tell, no shorter,
 * at a moment no sooner than the class's last ticket's plus its
 * admissions' mean gap, and its ticket recorded. Past max_s: max_s,
 * and no ticket (a client is not told to wait longer). */
int dbk_tickets_issue(struct dbk_admit_tickets *t, uint64_t key, enum dbk_class cls,
                      uint64_t now_ms, int retry_after_s, int max_s);

/* Whether key holds a ticket for now_ms: told at or before it, and not
 * more than DBK_TICKET_GRACE_MS before (DBK_TICKET_EARLY_MS early still counts). Taken (single use) when it
 * does, and when it has expired; kept when the retry is early. */
bool dbk_tickets_redeem(struct dbk_admit_tickets *t, uint64_t key, uint64_t now_ms);

/* Admission (dbk_admit) with tickets t (NULL: none) for the request's
 * identity key (0: none known): a shed retry that holds its ticket is
 * let in when its prediction is within its objective and no class
 * above has been at risk for the last DBK_TICKET_RISK_RECENT_MS; any
 * other shed gets a ticket and its Retry-After from it. */
#define DBK_TICKET_RISK_RECENT_MS 1000
struct dbk_admit_result dbk_admit_ticketed(const struct dbk_admit_config *c,
                                           struct dbk_admit_state *st, struct dbk_admit_tickets *t,
                                           uint64_t key, const struct dbk_admit_input *in);

#endif
