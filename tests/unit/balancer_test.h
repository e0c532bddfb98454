/* Helpers shared by the balancer's and the lease table's unit tests:
 * a seeded generator, requests by body size, dispatch and release in one
 * call, reference configurations. */
#ifndef DBK_BALANCER_TEST_H
#define DBK_BALANCER_TEST_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "balancer.h"
#include "check.h"
#include "leases.h"

static inline uint64_t rnd(uint64_t *s)
{
	/* xorshift64*: a fixed seed keeps the randomized tests repeatable. */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

static inline unsigned rnd_below(uint64_t *s, unsigned n) { return (unsigned)(rnd(s) % n); }

static inline struct dbk_bal_request req(double body_bytes)
{
	struct dbk_bal_request r = { .body_bytes = body_bytes, .max_tokens = 16 };

	return r;
}

/* Dispatch by a C-string id. */
static inline enum dbk_bal_result disp(struct dbk_balancer *b, const char *id, double bytes,
                                       struct dbk_bal_decision *d)
{
	struct dbk_bal_request r = req(bytes);

	return dbk_bal_dispatch(b, id, strlen(id), &r, 0, d);
}

static inline enum dbk_bal_result rel(struct dbk_balancer *b, const char *id)
{
	return dbk_bal_release(b, id, strlen(id), NULL);
}

/* Two or more buckets of the given bounds (nb + 1 values), dynamic. */
static inline void config_buckets(struct dbk_bal_config *c, unsigned nservers, unsigned nb,
                                  const double *bounds)
{
	dbk_bal_config_default(c, nservers, true, 1, 2);
	c->nbuckets = nb;
	for (unsigned i = 0; i <= nb; i++)
		c->bounds[i] = bounds[i];
}

static inline struct dbk_balancer *reference_balancer(unsigned nservers)
{
	struct dbk_bal_config c;

	dbk_bal_config_default(&c, nservers, true, 32768, 131072);
	return dbk_bal_new(&c);
}

#endif
