/* Keeps the agent in step with HAProxy through its runtime API: which
 * servers HAProxy would use (the agent never picks a DOWN or MAINT one,
 * nor sends new work to a DRAIN one), and how many sessions each really
 * holds (a persistent excess of leases over that is a leak, reclaimed).
 * Also discovers the backend's servers at start-up. */
#ifndef DBK_RUNTIME_SYNC_H
#define DBK_RUNTIME_SYNC_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "balancer.h"
#include "runtime.h"
#include "runtime_client.h"

struct dbk_runtime_sync_stats {
	uint64_t polls;         /* complete polls (both commands answered) */
	uint64_t failures;      /* polls that failed (unreachable, bad output) */
	uint64_t state_changes; /* servers that became usable or unusable */
	bool up;                /* the last poll succeeded */
};

struct dbk_runtime_sync;

/* Polls every interval_s. names[0..n) are the balancer's servers in
 * order; they must match the backend's. Leak repair takes no lease
 * younger than reclaim_after_s. */
struct dbk_runtime_sync *dbk_runtime_sync_new(struct ev_loop *loop, const struct dbk_rt_addr *addr,
                                              const char *backend, double interval_s,
                                              double reclaim_after_s, struct dbk_balancer *bal,
                                              const char *const *names, unsigned n);
void dbk_runtime_sync_free(struct dbk_runtime_sync *s);
const struct dbk_runtime_sync_stats *dbk_runtime_sync_stats(const struct dbk_runtime_sync *s);
/* HAProxy's view of server i as of the last poll (state READY and
 * scur -1 before the first). */
const struct dbk_rt_server *dbk_runtime_sync_server(const struct dbk_runtime_sync *s, unsigned i);

/* Reads the backend's servers, in order, blocking: for start-up, before
 * the loop runs. Retries (HAProxy may start after the agent) until
 * timeout_ms. On success *out is a malloc'd array of *n servers. */
int dbk_runtime_sync_discover(const char *addr, const char *backend, unsigned timeout_ms,
                              struct dbk_rt_server **out, unsigned *n, char *err, size_t errlen);

#endif
