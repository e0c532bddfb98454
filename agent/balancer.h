/* The length-aware balancer: the reference algorithm of
 * agent/ALGORITHM.md, generalised to N buckets/groups.
 *
 * Pure: no I/O, no clock, no globals. The caller (the agent's event loop,
 * the parity tool, the simulator) owns the balancer and passes time in.
 * Every dispatch takes a lease keyed by the request's id; a lease is
 * released exactly once, by completion, expiry or an explicit release.
 */
#ifndef DBK_BALANCER_H
#define DBK_BALANCER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "balancer_config.h"
#include "balancer_types.h"

#define DBK_BAL_MAX_ID_LEN 255
/* Ended ids remembered by dbk_bal_bury at most (the oldest are
 * forgotten first). */
#define DBK_BAL_MAX_BURIED 65536

/* Inputs are clamped before use, so that no request can push a load to
 * infinity or NaN, or swamp the others' precision: body_bytes to
 * [0, DBK_BAL_MAX_BODY_BYTES] (NaN: 0), max_tokens to
 * [0, DBK_BAL_MAX_MAX_TOKENS] (NaN or infinite: 16). Within these ranges
 * the arithmetic is the reference's. */
#define DBK_BAL_MAX_BODY_BYTES 1099511627776.0 /* 2^40 */
#define DBK_BAL_MAX_MAX_TOKENS 4294967296.0    /* 2^32 */

struct dbk_bal_decision {
	double request_tokens; /* body_bytes / 4 */
	double score;          /* the load this request adds */
	unsigned std_bucket;   /* bucket by length alone */
	unsigned group;        /* bucket/group actually chosen */
	unsigned server;       /* index in the full server list */
	bool redirected;       /* group != std_bucket */
	double p;              /* best neighbour's redirect probability, 0 if none */
};

enum dbk_bal_result {
	DBK_BAL_OK = 0,
	DBK_BAL_DUPLICATE, /* a lease with this id exists */
	DBK_BAL_FULL,      /* max_leases reached or out of memory */
	DBK_BAL_NO_SERVER, /* no usable server in any group */
	DBK_BAL_UNKNOWN,   /* release of an id with no lease */
	DBK_BAL_BAD_ID,    /* empty or longer than DBK_BAL_MAX_ID_LEN */
	DBK_BAL_ENDED,     /* the request ended before it was routed */
};

const char *dbk_bal_result_str(enum dbk_bal_result r);

struct dbk_bal_stats {
	uint64_t decisions; /* leases taken */
	uint64_t redirects;
	uint64_t releases;  /* leases given back by dbk_bal_release */
	uint64_t expired;   /* leases given back by dbk_bal_expire */
	uint64_t reclaimed; /* leases given back by dbk_bal_reclaim */
	uint64_t moved;     /* leases moved by dbk_bal_move */
	uint64_t dropped;   /* leases given back by dbk_bal_release_server */
	uint64_t ended;     /* dispatches refused: the request had ended */
	uint64_t unknown_releases;
	uint64_t duplicates;
	uint64_t refused; /* FULL or NO_SERVER */
	size_t leases;    /* live leases */
	uint64_t bad_ids; /* dispatch or release with a BAD_ID */
};

struct dbk_balancer;

/* Returns NULL if the config does not pass dbk_bal_config_check or memory
 * runs out. */
struct dbk_balancer *dbk_bal_new(const struct dbk_bal_config *c);
void dbk_bal_free(struct dbk_balancer *b);

/* Applies a new configuration live: bounds, sensitivity, affinity,
 * redirect threshold, group sizes, max_leases. The server count, the mode
 * and the number of buckets cannot change (-1 with a reason). Every lease
 * survives; a server that changes group takes its load with it, so each
 * group's load stays the sum of its servers'. */
int dbk_bal_reconfigure(struct dbk_balancer *b, const struct dbk_bal_config *c, char *err,
                        size_t errlen);

/* Decides without taking a lease (what dispatch would do now). */
enum dbk_bal_result dbk_bal_decide(const struct dbk_balancer *b, const struct dbk_bal_request *r,
                                   struct dbk_bal_decision *d);

/* Decides, charges the score to the chosen server and group, and records
 * a lease under id. On any result but DBK_BAL_OK nothing is charged and
 * only d's request_tokens, score and std_bucket are meaningful (group and
 * server are UINT_MAX). d may be NULL. Checks in this order: BAD_ID,
 * DUPLICATE, FULL, NO_SERVER. */
enum dbk_bal_result dbk_bal_dispatch(struct dbk_balancer *b, const char *id, size_t id_len,
                                     const struct dbk_bal_request *r, uint64_t now_ms,
                                     struct dbk_bal_decision *d);
/* The same among the eligible servers only (dbk_bal_eligible; NULL: all,
 * exactly dispatch): the same bucket and group order, the least loaded
 * eligible usable server of the nearest group that has one. */
enum dbk_bal_result dbk_bal_dispatch_among(struct dbk_balancer *b, const char *id, size_t id_len,
                                           const struct dbk_bal_request *r,
                                           const uint64_t *eligible, uint64_t now_ms,
                                           struct dbk_bal_decision *d);

/* Takes a lease under id on a server the caller chose (another policy
 * decided), charging score to it and its group; d gets request_tokens
 * and score from r, the server, its group and std_bucket as dispatch
 * would. The same checks as dispatch, in the same order; NO_SERVER when
 * server is out of range or not usable. */
enum dbk_bal_result dbk_bal_dispatch_to(struct dbk_balancer *b, const char *id, size_t id_len,
                                        const struct dbk_bal_request *r, unsigned server,
                                        uint64_t now_ms, struct dbk_bal_decision *d);

/* Sets the slot of id's live lease. Returns false without one. */
bool dbk_bal_set_slot(struct dbk_balancer *b, const char *id, size_t id_len,
                      const uint32_t slot[DBK_BAL_SLOT_WORDS]);

/* Told of every lease that ends (release, expiry, reclaim), every move
 * and every change of a server's usable flag, after the balancer's own
 * books changed: how a policy that keeps its own books stays in step.
 * Any hook may be NULL. The lease is valid only during the call. */
struct dbk_bal_observer {
	void (*ended)(void *arg, const struct dbk_bal_lease *l);
	void (*moved)(void *arg, const struct dbk_bal_lease *before, unsigned server);
	void (*usable)(void *arg, unsigned server, bool usable);
	void *arg;
};
void dbk_bal_observe(struct dbk_balancer *b, const struct dbk_bal_observer *o);

/* Gives back the lease of id, exactly once, served (its lease's
 * unserved flag, which the observer's ended hook sees, false) or not.
 * Returns DBK_BAL_UNKNOWN (and counts it) when there is no such lease,
 * DBK_BAL_BAD_ID for an id that no lease can have. out may be NULL. */
enum dbk_bal_result dbk_bal_end(struct dbk_balancer *b, const char *id, size_t id_len, bool served,
                                struct dbk_bal_lease *out);
/* dbk_bal_end, served. */
enum dbk_bal_result dbk_bal_release(struct dbk_balancer *b, const char *id, size_t id_len,
                                    struct dbk_bal_lease *out);

/* Remembers that request id has ended (its completion arrived), until
 * dbk_bal_expire_buried forgets it. Two uses:
 * - a completion can overtake its decision (the client leaves while the
 *   agent decides, and the two travel on different connections): a
 *   dispatch of a buried id is refused with DBK_BAL_ENDED instead of
 *   taking a lease that nothing would ever release;
 * - a completion can arrive twice (HAProxy sends each line by two paths):
 *   dbk_bal_ended tells the second copy from a completion never seen.
 * Burying an id already buried changes nothing. */
void dbk_bal_bury(struct dbk_balancer *b, const char *id, size_t id_len, uint64_t now_ms);
/* Whether id is buried. Counts nothing. */
bool dbk_bal_ended(const struct dbk_balancer *b, const char *id, size_t id_len);
/* Forgets ids buried at or before now_ms - ttl_ms. */
void dbk_bal_expire_buried(struct dbk_balancer *b, uint64_t now_ms, uint64_t ttl_ms);

/* Whether a lease with this id is live. Counts nothing. */
bool dbk_bal_holds(const struct dbk_balancer *b, const char *id, size_t id_len);

/* Whether a lease with this id is live, and (out, may be NULL) the
 * lease as it is. Counts nothing. */
bool dbk_bal_lease_get(const struct dbk_balancer *b, const char *id, size_t id_len,
                       struct dbk_bal_lease *out);

/* Told of a lease that the balancer gave back on its own (expiry,
 * reclaim): the id is valid only during the call. */
typedef void dbk_bal_lease_cb(void *arg, const char *id, size_t id_len,
                              const struct dbk_bal_lease *l);

/* Releases every lease started at or before now_ms - ttl_ms, oldest
 * first, calling cb (if not NULL) for each. Returns how many. The walk
 * stops at the first lease that is too young, so dispatch times must not
 * go backwards (a monotonic clock). cb sees the lease already released;
 * the id is valid only during the call. cb may dispatch and release. */
size_t dbk_bal_expire(struct dbk_balancer *b, uint64_t now_ms, uint64_t ttl_ms,
                      dbk_bal_lease_cb *cb, void *arg);

/* Moves the lease of id, and its load, to server (and that server's
 * group): HAProxy retried or redispatched the request elsewhere. A move
 * to the server it is on is a no-op. Returns DBK_BAL_UNKNOWN (not
 * counted) without such a lease. out may be NULL. */
enum dbk_bal_result dbk_bal_move(struct dbk_balancer *b, const char *id, size_t id_len,
                                 unsigned server, struct dbk_bal_lease *out);

/* Sets the score charged for id's live lease (its server and group
 * keep it): a charge held back while the request's body was still on
 * its way, and given in full once it has reached the server
 * (estimate_hold.h). Returns false without such a lease; out (may be
 * NULL) gets the lease as it now is. The policy is not told here (a
 * policy that holds its own books is told by dbk_route_whole). */
bool dbk_bal_recharge(struct dbk_balancer *b, const char *id, size_t id_len, double score,
                      struct dbk_bal_lease *out);

/* Releases the n oldest leases on server started at or before
 * started_by_ms (fewer if it has fewer): the repair for leases whose
 * completion was lost, which are old. cb as for dbk_bal_expire. Returns
 * how many. O(live leases). */
size_t dbk_bal_reclaim(struct dbk_balancer *b, unsigned server, size_t n, uint64_t started_by_ms,
                       dbk_bal_lease_cb *cb, void *arg);

/* Releases every lease on server (it left HAProxy's backend), oldest
 * first, through the observer's ended hook as any release; cb as for
 * dbk_bal_expire. A completion that comes later for one of them finds
 * no lease (DBK_BAL_UNKNOWN). Returns how many. O(live leases). */
size_t dbk_bal_release_server(struct dbk_balancer *b, unsigned server, dbk_bal_lease_cb *cb,
                              void *arg);

/* A server's weight: HAProxy's effective weight (it ramps during
 * slowstart). While the weights of the present servers are all equal
 * (the default: 1), every choice is the reference's exactly; when they
 * differ, a group's least-loaded server is the one with the least load
 * per unit of weight (agent/ALGORITHM.md, "Weights"). A weight that is
 * not > 0 is ignored: weight 0 is HAProxy's drain, which the caller
 * marks with DBK_BAL_OUT_STATE. */
void dbk_bal_set_weight(struct dbk_balancer *b, unsigned server, double weight);
double dbk_bal_weight(const struct dbk_balancer *b, unsigned server);

/* A server that is not usable is never chosen; its group's other servers
 * are. A request whose chosen group has no usable server goes to the
 * nearest group that has one. Servers start usable.
 *
 * Several parts of the agent know a reason to leave a server out, each
 * on its own clock (HAProxy's state every poll, outlier detection on
 * completions, the engine's own sleep flag on scrapes): each sets and
 * clears its own bit, and no part can bring back a server another still
 * holds out. The observer's usable hook fires only when the server
 * turns usable or unusable as a whole. */
enum dbk_bal_out {
	DBK_BAL_OUT_STATE = 1u << 0,   /* HAProxy: DOWN, MAINT or DRAIN */
	DBK_BAL_OUT_EJECTED = 1u << 1, /* outlier detection: failing */
	DBK_BAL_OUT_ASLEEP = 1u << 2,  /* the engine sleeps (vLLM /sleep) */
	DBK_BAL_OUT_ABSENT = 1u << 3,  /* not (or no longer) in HAProxy's backend */
};
/* A change of DBK_BAL_OUT_ABSENT changes the present servers, over which
 * the groups are laid out (agent/ALGORITHM.md, "A changing server
 * list"): the groups are laid out again, leases keep their load and
 * take their server's new group. */
void dbk_bal_set_out(struct dbk_balancer *b, unsigned server, unsigned reason, bool out);
/* The reasons held, 0 when usable (or out of range). */
unsigned dbk_bal_out_reasons(const struct dbk_balancer *b, unsigned server);
/* dbk_bal_set_out with DBK_BAL_OUT_STATE. */
void dbk_bal_set_usable(struct dbk_balancer *b, unsigned server, bool usable);
bool dbk_bal_usable(const struct dbk_balancer *b, unsigned server);

const struct dbk_bal_config *dbk_bal_config(const struct dbk_balancer *b);
double dbk_bal_server_load(const struct dbk_balancer *b, unsigned server);
unsigned dbk_bal_server_inflight(const struct dbk_balancer *b, unsigned server);
/* Leases that have left server since the start (ended there or moved
 * away): the difference of two readings is how many left in between. */
uint64_t dbk_bal_server_ended(const struct dbk_balancer *b, unsigned server);
double dbk_bal_bucket_load(const struct dbk_balancer *b, unsigned bucket);
unsigned dbk_bal_group_of(const struct dbk_balancer *b, unsigned server);
const struct dbk_bal_stats *dbk_bal_stats(const struct dbk_balancer *b);

#endif
