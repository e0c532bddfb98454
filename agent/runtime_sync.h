/* Keeps the agent in step with HAProxy through its runtime API: which
 * servers the backend has (servers added, deleted, re-addressed, a
 * reload's new list: runtime_members.h maps them onto the agent's slots,
 * and the leases of a server that left are released), which of them
 * HAProxy would use (the agent never picks a DOWN or MAINT one, nor
 * sends new work to a DRAIN one or one of weight 0), their effective
 * weights, and how many sessions each really holds (a persistent excess
 * of leases over that is a leak, reclaimed). Also discovers the
 * backend's servers at start-up. */
#ifndef DBK_RUNTIME_SYNC_H
#define DBK_RUNTIME_SYNC_H

#include <ev.h>
#include <stdbool.h>
#include <stdint.h>

#include "balancer.h"
#include "runtime.h"
#include "runtime_client.h"
#include "runtime_members.h"

struct dbk_runtime_sync_stats {
	uint64_t polls;         /* complete polls (both commands answered) */
	uint64_t failures;      /* polls that failed (unreachable, bad output) */
	uint64_t state_changes; /* servers that became usable or unusable */
	uint64_t added;         /* servers that came into a slot */
	uint64_t removed;       /* servers that left HAProxy's backend */
	uint64_t readdressed;   /* servers at a new address (a new incarnation) */
	unsigned present;       /* servers in a slot now */
	unsigned no_room;       /* HAProxy's servers without a slot at the last poll */
	bool up;                /* the last poll succeeded */
};

/* What the rest of the agent hears of a membership change, after the
 * balancer's books changed (leases of a gone server released, its slot
 * out with DBK_BAL_OUT_ABSENT) and before the slot's state is applied.
 * srv is HAProxy's view of the server (for GONE: the last one). */
struct dbk_runtime_sync_hooks {
	void (*member)(void *arg, unsigned slot, enum dbk_rt_change c,
	               const struct dbk_rt_server *srv);
	/* A present server's effective weight changed (or became known). */
	void (*weight)(void *arg, unsigned slot, long weight);
	void *arg;
};

struct dbk_runtime_sync;

/* Polls every interval_s. The balancer has nslots servers; names[0..n)
 * (n <= nslots) are those the agent starts with, in slots 0..n-1, the
 * other slots free (the caller holds them out with DBK_BAL_OUT_ABSENT).
 * Leak repair takes no lease younger than reclaim_after_s. hooks may be
 * NULL. */
struct dbk_runtime_sync *dbk_runtime_sync_new(struct ev_loop *loop, const struct dbk_rt_addr *addr,
                                              const char *backend, double interval_s,
                                              double reclaim_after_s, struct dbk_balancer *bal,
                                              const char *const *names, unsigned n, unsigned nslots,
                                              const struct dbk_runtime_sync_hooks *hooks);
void dbk_runtime_sync_free(struct dbk_runtime_sync *s);
const struct dbk_runtime_sync_stats *dbk_runtime_sync_stats(const struct dbk_runtime_sync *s);
/* HAProxy's view of the server in slot i as of the last poll (state
 * READY and scur -1 before the first). */
const struct dbk_rt_server *dbk_runtime_sync_server(const struct dbk_runtime_sync *s, unsigned i);
/* The name of the server in slot i, "" when the slot is free: storage
 * that lives as long as s and changes as the backend does, so the
 * agent's name tables point into it. */
const char *dbk_runtime_sync_name(const struct dbk_runtime_sync *s, unsigned i);

/* Reads the backend's servers, in order, blocking: for start-up, before
 * the loop runs. Retries (HAProxy may start after the agent) until
 * timeout_ms. On success *out is a malloc'd array of *n servers. */
int dbk_runtime_sync_discover(const char *addr, const char *backend, unsigned timeout_ms,
                              struct dbk_rt_server **out, unsigned *n, char *err, size_t errlen);

#endif
