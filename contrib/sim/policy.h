/* Routing policies for the simulator: the slot a new policy plugs into,
 * and the ones that come with it.
 *
 *   rr           round robin over the usable instances (HAProxy "balance
 *                roundrobin" with equal weights)
 *   lc           least connections: fewest requests in flight
 *                (HAProxy "balance leastconn", the agent's fallback)
 *   plain        the agent without dynamic buckets: agent/balancer.c, one
 *                group, score body_bytes + max_tokens
 *   dynamic      the agent with --enable-dynamic-bucket: agent/balancer.c,
 *                short and long groups
 *   ttft         dbucket's predicted-first-token policy (agent/predict.h),
 *   p2ttft       and every other policy of the agent's table that chooses
 *                (agent/policy_ops.h), K load balancers with --lb-nodes
 *                (policy_agent.c)
 *   clairvoyant  knows every request's output length and every engine's
 *                queue; picks the earliest predicted first token (predict.h)
 *
 * and the routers users pick instead, each modelled from its source (the
 * file names repository, path and commit):
 *   cache_aware      SGLang model gateway / vLLM Router (policy_cache_aware.c);
 *                    cache_aware_legacy, its fallback before SGLang PR #14650
 *   power_of_two     vLLM Router against vLLM: a random choice (policy_p2.c);
 *                    power_of_two_informed, with the loads it means to read
 *   wlc              HAProxy "balance leastconn" with the servers' weights
 *                    (policy_wlc.c)
 *   consistent_hash  vLLM Router, on the session key (policy_chash.c);
 *                    consistent_hash_seed1..3, other ring layouts (by name)
 *   llm_d            llm-d's default scheduling profile (policy_llmd.c);
 *                    llm_d_active, with its active-request scorer
 *   llm_d_latency    llm-d's predicted-latency profile, opt-in there
 *                    (policy_llmd_latency.c); llm_d_latency_most, its
 *                    scorer's other strategy (by name)
 *   prefixaware      vLLM production-stack (policy_prefixaware.c)
 * Those that read backend numbers read them from a scraped snapshot
 * (snapshot.h) refreshed on the peer's interval, never from the engine.
 *
 * A new policy is a struct dbk_sim_policy_ops: the size of its state,
 * choose, and what it needs of init, release, tick, stats and fini. It
 * may look at the cluster through sim.h's query functions while
 * choosing, and must not change anything there. A peer's file ends in
 * its DBK_SIM_POLICY_OPS line (below), one per labelled variant (the
 * same functions, told apart by .arg); one X(NAME) line each in
 * policy.c's PEERS makes it selectable by name. */
#ifndef DBK_SIM_POLICY_H
#define DBK_SIM_POLICY_H

#include <stddef.h>
#include <stdint.h>

#include "balancer.h"
#include "sim.h"

/* choose()'s answers besides an instance index. */
#define DBK_SIM_REFUSE (-1)       /* no instance: the request fails */
#define DBK_SIM_POLICY_ERROR (-2) /* the run cannot go on (memory) */
/* Refused by admission (a 429 with Retry-After retry_s seconds, 0..
 * DBK_SIM_SHED_MAX_S): the request never reaches an instance. */
#define DBK_SIM_SHED_MAX_S 3600
#define DBK_SIM_SHED(retry_s) (-1000 - (retry_s))
#define DBK_SIM_IS_SHED(c) ((c) <= -1000 && (c) >= -1000 - DBK_SIM_SHED_MAX_S)
#define DBK_SIM_SHED_RETRY_S(c) (-1000 - (c))

struct dbk_sim_policy_stats {
	size_t leases;      /* live leases (0 once every request ended) */
	uint64_t redirects; /* requests sent outside their length group */
	uint64_t unknown_releases;
};

/* What a policy's init is given. */
struct dbk_sim_policy_env {
	const void *arg;                  /* the ops' arg */
	const struct dbk_sim_config *cfg; /* outlives the state */
	char *err;                        /* for a sentence on failure */
	size_t errlen;
};

struct dbk_sim_policy_ops {
	const char *name;
	/* Passed to init (env->arg): lets one set of functions serve several
	 * policies, or a wrapper find what it wraps. */
	const void *arg;
	/* Bytes of the policy's state for one run, handed to init zeroed. */
	size_t size;
	/* May be NULL. Sets the zeroed state up for one run: 0, or -1 with
	 * a sentence in env->err (left empty: out of memory); fini runs
	 * after a failure too. */
	int (*init)(void *st, const struct dbk_sim_policy_env *env);
	/* An instance index, DBK_SIM_REFUSE, DBK_SIM_POLICY_ERROR or
	 * DBK_SIM_SHED(retry_s). */
	int (*choose)(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r);
	/* May be NULL (the policy keeps nothing per request). The request
	 * chosen for inst ended (finished or failed): called exactly once
	 * per chosen request. */
	void (*release)(void *st, const struct dbk_sim *s, const struct dbk_sim_req *r,
	                unsigned inst);
	/* The router's timed work, every tick_s seconds of model time from
	 * the first arrival until the last request ends: with scrape set,
	 * the simulator first scrapes every instance's /metrics for it
	 * (dbk_sim_scraped); then tick, when set, runs (evicting a tree,
	 * passing the scrape on). */
	bool scrape;
	void (*tick)(void *st, const struct dbk_sim *s);
	double tick_s;
	/* May be NULL. Instance i turned usable or not (scaled out or in,
	 * marked down or up), or a new instance took its slot (fresh: what
	 * was learnt of the old one is stale, as a router that keys its
	 * state by the pod's address finds). Every policy is told at the
	 * same model time; while i is not usable (dbk_sim_usable) choose
	 * must not return it. Slots absent from the start are told before
	 * the first arrival. */
	void (*member)(void *st, const struct dbk_sim *s, unsigned i, bool usable, bool fresh);
	/* In "all" only when the run has weights (wlc: without them it is
	 * lc). */
	bool weighted;
	/* Never in "all", selectable by name only (consistent_hash's other
	 * ring layouts). */
	bool extra;
	/* The policy applies admission itself, in choose (the agent's
	 * policies, with their prediction; a peer's own shedding): the
	 * simulator does not apply the saturation rule before it. */
	bool admits;
	/* May be NULL. */
	void (*stats)(const void *st, struct dbk_sim_policy_stats *out);
	/* May be NULL: frees what init allocated, not the state itself. */
	void (*fini)(void *st);
};

/* A peer's ops, dbk_sim_policy_NAME named "NAME": its state STATE and
 * its functions PFX_init, PFX_fini and PFX_choose; what else it sets
 * (tick, scrape...) follows as designated initialisers. */
#define DBK_SIM_POLICY_OPS(NAME, STATE, PFX, ...)                                         \
	const struct dbk_sim_policy_ops dbk_sim_policy_##NAME = { .name = #NAME,          \
		                                                  .size = sizeof(STATE),  \
		                                                  .init = PFX##_init,     \
		                                                  .fini = PFX##_fini,     \
		                                                  .choose = PFX##_choose, \
		                                                  __VA_ARGS__ }

extern const struct dbk_sim_policy_ops dbk_sim_policy_rr;
extern const struct dbk_sim_policy_ops dbk_sim_policy_lc;
extern const struct dbk_sim_policy_ops dbk_sim_policy_lc_per_node;
extern const struct dbk_sim_policy_ops dbk_sim_policy_plain;
extern const struct dbk_sim_policy_ops dbk_sim_policy_dynamic;
extern const struct dbk_sim_policy_ops dbk_sim_policy_clairvoyant;
/* llm_d's state's pod metrics, as its datastore holds them: what the
 * GIE's saturation detector reads in llm_d_shed (policy_llmd_shed.c). */
extern const struct dbk_sim_policy_ops dbk_sim_policy_llm_d;
const struct dbk_sim_snapshot *dbk_sim_llmd_snapshot(const void *st);
/* The agent's i-th policy that chooses (agent/policy_ops.h: ttft,
 * p2ttft, ...), run as the agent runs it (policy_agent.c); NULL past
 * the last. */
const struct dbk_sim_policy_ops *dbk_sim_policy_agent(size_t i);

/* A policy's state for one run: allocated and set up (ops->init); NULL
 * with a sentence in err. */
void *dbk_sim_policy_new(const struct dbk_sim_policy_ops *ops, const struct dbk_sim_config *c,
                         char *err, size_t errlen);
void dbk_sim_policy_free(const struct dbk_sim_policy_ops *ops, void *st);

/* The usable instance with the least key(ctx, s, i), looked at from
 * instance from on, wrapping around: the first of equals in that order
 * (from % n when none is usable). */
typedef double (*dbk_sim_key_fn)(const void *ctx, const struct dbk_sim *s, unsigned i);
unsigned dbk_sim_least(const struct dbk_sim *s, unsigned from, dbk_sim_key_fn key, const void *ctx);
/* Keys for it: requests in flight (HAProxy's connection count), and
 * its negation (for the most loaded). */
double dbk_sim_key_inflight(const void *ctx, const struct dbk_sim *s, unsigned i);
double dbk_sim_key_neg_inflight(const void *ctx, const struct dbk_sim *s, unsigned i);

/* Which of --lb-nodes K balancers receives r: one at random by a fixed
 * hash of the request, or of its conversation with --lb-sticky (an L4
 * balancer hashing the client); 0 with one. Every policy that models
 * several balancers splits the arrivals alike. */
unsigned dbk_sim_lb_node(const struct dbk_sim_config *cfg, const struct dbk_sim_req *r);

/* The built-in policies in report order; NULL past the end. */
const struct dbk_sim_policy_ops *dbk_sim_policy_at(size_t i);
/* By name; NULL when unknown. */
const struct dbk_sim_policy_ops *dbk_sim_policy_find(const char *name);
/* The policies of a comma-separated list of names ("all": every
 * built-in one but the extra ones, those that read weights only when
 * weighted), at most
 * max of them, in out[0..*n). 0, or -1 with the
 * reason in err (an unknown name, an empty list). */
int dbk_sim_policy_pick(const char *list, bool weighted, const struct dbk_sim_policy_ops **out,
                        size_t max, size_t *n, char *err, size_t errlen);

/* ---- The balancer policies' view of a request, exposed for tests. ---- */

/* What the agent would hand dbk_bal_dispatch for this request: body
 * bytes = input_tokens * 4 + c->json_overhead_bytes, max_tokens = the
 * output length, ignore_eos true. */
void dbk_sim_bal_request(const struct dbk_sim_config *c, const struct dbk_sim_req *r,
                         struct dbk_bal_request *out);
/* The lease id of a request: its index in decimal. Returns the length;
 * buf needs 11 bytes. */
size_t dbk_sim_lease_id(uint32_t id, char *buf);
/* The balancer inside a plain or dynamic policy state. */
const struct dbk_balancer *dbk_sim_bal_policy_balancer(const void *st);

#endif
