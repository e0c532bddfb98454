/* The balancer's plain types that its neighbours need without its
 * interface: a request as it is estimated, and a lease as it is kept
 * (leases.h stores them, policy_ops.h reads them). */
#ifndef DBK_BALANCER_TYPES_H
#define DBK_BALANCER_TYPES_H

#include <stdbool.h>
#include <stdint.h>

/* The reference's estimate of a request's tokens from its body: the
 * bytes over four. */
#define DBK_BAL_BYTES_PER_TOKEN 4.0

/* What the balancer needs to know of a request (see estimate.h). */
struct dbk_bal_request {
	double body_bytes;
	double max_tokens; /* 16 when absent */
	bool ignore_eos;
};

/* The servers a request may go to (models.h: those that serve its
 * model): bit s % 64 of word s / 64 for server s. NULL: every server. */
static inline bool dbk_bal_eligible(const uint64_t *set, unsigned s)
{
	return !set || ((set[s / 64] >> (s % 64)) & 1);
}

/* Words of a lease's slot: the routing policy's own data about the
 * lease (policy_ops.h), which the balancer carries and never reads.
 * The predictor's policies use all six (policy_ttft.c): the ticket's
 * sizes, and what the books predicted of the request and for which
 * server, which its end teaches (predict_learn.h). With the flag after
 * them the lease takes 56 bytes (leases.h counts a whole entry). */
#define DBK_BAL_SLOT_WORDS 6

struct dbk_bal_lease {
	unsigned server;
	unsigned group;
	double score;
	uint64_t start_ms;
	/* The policy's: 0 unless set by dbk_bal_set_slot. */
	uint32_t slot[DBK_BAL_SLOT_WORDS];
	/* Set as it ends: the request got no answer of the server's that
	 * its time measures (an error status, or no completion at all:
	 * expired, reclaimed, its server gone). Its prefill may never have
	 * run, and its duration says nothing of the server's speed. */
	bool unserved;
};

#endif
