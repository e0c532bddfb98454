/* First-token prediction for the clairvoyant policy: when would a new
 * request get its first token on this instance?
 *
 * engine.h has no way to copy an engine, so instead of stepping a copy
 * this module steps a reduced replica of the same scheduler, built from
 * what dbk_engine_req_get reports for each live request plus the output
 * lengths the clairvoyant policy knows:
 *  - each step has the engine's token budget; decoding requests take one
 *    token each, then requests still in prefill take chunks in queue
 *    order, then waiting requests are admitted FCFS while budget, the
 *    max-num-seqs limit and free KV blocks allow;
 *  - step times come from dbk_engine_step_time, the engine's own formula;
 *  - decoding requests are aggregated (count, context sum, and how many
 *    finish at each future step), so a step costs O(prefill chunks), not
 *    O(batch).
 * Simplifications, each small where the estimate matters: decodes are
 * scheduled before running prefills (vLLM goes by admission order, which
 * puts older decodes first anyway); the order of running requests is the
 * routing order; nothing is preempted: a waiting request is admitted only
 * when its final KV (prompt + whole output) fits beside the final KV of
 * every running request, where vLLM admits on the first chunk's blocks
 * and preempts later. On an instance that is already over-committed the
 * replica is therefore optimistic (it does not see the recompute storm
 * to come); dbk_replica_fits tells the caller so.
 *
 * Pure: no I/O, no clock, no globals. */
#ifndef DBK_SIM_REPLICA_H
#define DBK_SIM_REPLICA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/engine.h"

struct dbk_replica_item {
	uint32_t computed;  /* tokens whose KV is computed when the next step starts */
	uint32_t lack;      /* tokens to compute before its next token (>= 1) */
	uint32_t remaining; /* tokens it still generates (>= 1) */
	uint32_t blocks;    /* KV blocks it holds */
	bool running;
};

/* The item for a live request, from the engine's report and the request's
 * output length. False when the request ends with the step in flight
 * (nothing left for the next step). */
bool dbk_replica_item_from_engine(const struct dbk_engine_req_info *info,
                                  struct dbk_replica_item *out);
/* A request routed to the instance but not yet admitted by its engine,
 * expected to find cached tokens of its prompt in the prefix cache (at
 * most prompt - 1 count, as in vLLM). */
void dbk_replica_item_pending(uint32_t prompt, uint32_t cached, uint32_t output,
                              struct dbk_replica_item *out);

struct dbk_replica;

struct dbk_replica *dbk_replica_new(void);
void dbk_replica_free(struct dbk_replica *p);

/* Starts a prediction for an instance with this configuration (forgets
 * every request added before). Returns 0 or -1 (memory). */
int dbk_replica_reset(struct dbk_replica *p, const struct dbk_engine_config *cfg);
/* Adds a live request; call in queue order: running requests first (in
 * admission order), then the waiting queue front to back. */
int dbk_replica_add(struct dbk_replica *p, const struct dbk_replica_item *it);

/* True when the final KV of every request added plus the new one fits
 * in the cache together: the instance can take it without preempting
 * anything, whatever order things finish in. */
bool dbk_replica_fits(const struct dbk_replica *p, uint32_t prompt, uint32_t output);

/* Model seconds from the start of the instance's next step until a new
 * request (queued now, behind everything added, cached tokens of its
 * prompt found in the prefix cache) gets its first token.
 * HUGE_VAL when the replica cannot make progress. Once per reset: it
 * consumes the state. */
double dbk_replica_first_token(struct dbk_replica *p, uint32_t prompt, uint32_t cached,
                               uint32_t output);

/* Steps the replica simulates at most; beyond it the rest is
 * extrapolated from the average step so far. */
#define DBK_PRED_HORIZON 16384u

#endif
