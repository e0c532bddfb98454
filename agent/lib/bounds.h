/* The bounds every program agrees on, so that a setup one accepts the
 * others accept too (the launcher checks the agent's, the simulator runs
 * as many servers as the agent balances). Named bounds.h so that it
 * cannot be mistaken for <limits.h>. */
#ifndef DBK_BOUNDS_H
#define DBK_BOUNDS_H

/* Servers in one backend: the balancer's heaps, the predictor's books,
 * the runtime API's duplicate check (a bitmap on the stack) and the
 * simulator's fleet are sized by it. */
#define DBK_MAX_SERVERS 4096

/* Token counts (bucket bounds, a server's KV-cache capacity) beyond any
 * model's: a larger one is a typo or a hostile peer. 2^40. */
#define DBK_MAX_TOKENS (1LL << 40)

/* Leases in flight at most (--max-leases). */
#define DBK_MAX_LEASES 100000000

#endif
