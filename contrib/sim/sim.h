/* The cluster simulator: N vLLM instances (agent/model/engine.c, one
 * engine each), a routing policy (policy.h), a request trace, and a
 * discrete-event loop in model time. No sockets, no clock, no globals:
 * the same inputs give the same outputs, bit for bit.
 *
 * A request's life: it arrives at its trace time (the client sends it);
 * the policy picks an instance at once; after the optional constant
 * overhead it reaches that instance's engine, which either refuses it
 * (too long for max-model-len: vLLM's HTTP 400, a failure) or queues it.
 * An idle engine starts a step at once; each step's tokens are reported
 * when it ends, and the next step begins at that moment, as vLLM's busy
 * loop does. The policy hears of every request's end (finish or failure)
 * exactly once. */
#ifndef DBK_SIM_SIM_H
#define DBK_SIM_SIM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "admission.h"
#include "model/engine.h"
#include "metrics.h"
#include "schedule.h"
#include "snapshot.h"

#define DBK_SIM_NONE UINT32_MAX

struct dbk_sim_req {
	uint32_t id;      /* index in the request array */
	double arrival_s; /* model time it is sent */
	uint32_t input_tokens;
	/* max_tokens with ignore_eos: the engine generates exactly this
	 * many, so it is also the output length (only the clairvoyant
	 * policy may use it as such). */
	uint32_t output_tokens;
	/* The prompt's identity: the trace's hash ids (512-token blocks),
	 * NULL when it has none (Azure: such prompts share nothing). The
	 * simulator keys the bench's prompt text of these ids
	 * (dbk_prompt_write) as the stub keys what it receives, so cache
	 * hits agree with a live run. Not copied: must outlive the run. */
	const uint64_t *hash_ids;
	uint32_t n_hash_ids;
	/* Conversation key (dbk_trace_sessions), what the bench sends as
	 * the OpenAI "user" field and X-Session-Id "conv-<session>". */
	uint64_t session;
	bool has_session;
	/* Its priority class (enum dbk_class, agent/admission.h): the
	 * workload's --classes, standard without (the agent's default). */
	uint8_t cls;
	/* Its base model (index into the config's models, 0 with one) and
	 * LoRA adapter (vLLM's lora_int_id; 0: the base model): the
	 * workload's --models and --adapters (multimodel.h). */
	uint8_t model;
	uint32_t lora;
};

/* Base models on one fleet at most. */
#define DBK_SIM_MAX_MODELS 16

struct dbk_sim_config {
	unsigned ninstances;
	/* One engine configuration per instance (copied). */
	const struct dbk_engine_config *engines;
	/* What reading a LoRA adapter costs the engines (with adapters; 0:
	 * none), which the agent's policies are told as its operator would
	 * tell it. */
	double lora_load_s;
	/* Model seconds between the decision and the engine's queue: a
	 * constant stand-in for the live path (HAProxy, agent, network). */
	double overhead_s;
	/* Model seconds a scrape's answer takes to come back (policies that
	 * scrape: ops->scrape; 0: none, below tick_s): the numbers are the
	 * engines' when the scrape went out, read this much later, and the
	 * tick runs then. vLLM renders /metrics on its API server, which
	 * takes time under load. */
	double scrape_flight_s;
	/* Length classes for the metrics, and the balancer's buckets. */
	double threshold_tokens;
	double max_request_tokens;
	/* Request body = input_tokens * 4 + this many bytes of JSON around
	 * the prompt, the size the agent sees as Content-Length. */
	double json_overhead_bytes;
	struct dbk_slo slo;
	/* Load balancers in front (the ttft policy): each gets a random
	 * 1/lb_nodes of the arrivals and keeps its own books; 0 or 1: one. */
	unsigned lb_nodes;
	/* A conversation's requests all reach one balancer (by its session),
	 * as behind an L4 balancer that hashes the client. */
	bool lb_sticky;
	/* Each balancer is charged with the others' requests this long after
	 * they are sent, and released as long after they end (books shared
	 * through a replicated table) when lb_share, unless it shares the
	 * session table alone (lb_share_sessions without lb_share_books). */
	bool lb_share;
	double lb_share_s;
	/* Shared: the load only, not where each prompt went (a per-server
	 * table cannot carry the prefix index). */
	bool lb_share_books;
	/* With lb_share: where each session's last request went and its
	 * prompt length, learnt lb_share_s later (HAProxy's session table,
	 * agent/session_hint.h); without lb_share_books no books are shared,
	 * as HAProxy nodes that replicate the session table alone share. */
	bool lb_share_sessions;
	/* The ttft policy's stall weight; < 0: the predictor's default. */
	double stall_weight;
	/* The predictor policies' --engine-speed (0 taken as 1). */
	double engine_speed;
	/* The step token budget the ttft policy is told, as an operator
	 * gives the agent the --max-num-batched-tokens given to vllm serve;
	 * 0 (the flag not given): the engine model's default. */
	double ttft_budget_tokens;
	/* ---- A fleet that changes (all off by default: every instance
	 * present throughout, none failing, equal weights). ---- */
	/* Instances present from each step's time on (nscale 0: all): the
	 * slots 0..V-1, as a server-template's slots fill and empty. A slot
	 * leaving stops taking requests and drains; one joining empty gets
	 * a new engine (a new pod: cold prefix cache, vLLM counters at 0). */
	const struct dbk_sim_step *scale;
	size_t nscale;
	/* A new instance's steps take warmup_factor times as long for its
	 * first warmup_s seconds (0: no penalty). */
	double warmup_s, warmup_factor;
	/* From fail_from_s on, instance fail_inst answers fail_share of the
	 * requests it is sent at once with HTTP 500 and no token (a seeded
	 * draw per request); its /metrics and health check stay fine.
	 * fail_share 0: none fails. */
	unsigned fail_inst;
	double fail_from_s, fail_share;
	/* A server that fails slow (a throttled GPU, a noisy neighbour):
	 * from slow_from_s until slow_until_s (HUGE_VAL: for ever),
	 * instance slow_inst's steps take slow_factor times as long; it
	 * keeps answering. slow_factor 0: none is slow. */
	unsigned slow_inst;
	double slow_from_s, slow_until_s, slow_factor;
	/* HAProxy's "observe layer7" with "error-limit error_limit" and
	 * "on-error mark-down" (0: off): after that many 5xx in a row an
	 * instance is left out for down_s seconds (the health check's
	 * rise x inter bringing it back), for every policy alike. */
	unsigned error_limit;
	double down_s;
	/* The operator's weight of each instance (NULL: all 1), for the
	 * policies that read weights (wlc). */
	const double *weights;
	/* ---- Overload (issue 28; all off by default). ---- */
	/* The agent's admission (agent/admission.c) at the moment the
	 * balancer decides (admit.h); admit.enabled false: none. */
	struct dbk_admit_config admit;
	/* A shed request's client sends it again once, Retry-After seconds
	 * later (its TTFT still counts from the first send). */
	bool shed_retry;
	/* A shed request's client retries as the openai SDKs do
	 * (sim_retry.c): up to twice, after the Retry-After when it is 1 to
	 * 60 s, else after an exponential backoff. Overrides shed_retry. */
	bool shed_retry_sdk;
	/* > 0: a request admission would shed is held at the balancer
	 * instead (holdq.h), decided again each time a request ends and
	 * every DBK_SIM_HOLD_TICK_S, for at most this many seconds; then
	 * shed as without it. Its wait counts in its TTFT. 0: off. */
	double admit_queue_s;
	/* With admit_queue_s: a held request is let in only while it is
	 * predicted to start within the TTFT objective counting the time
	 * it has waited (admit.h); false: whenever the rule admits it. */
	bool admit_queue_in_time;
	/* ---- Several models (issue 27; off by default). ---- */
	/* nmodels > 0: instance i serves base model inst_model[i] only, and
	 * a request goes only to an instance of its model: every policy
	 * chooses among them (dbk_sim_usable while it chooses, the agent's
	 * policies through dbk_sim_eligible). 0: one model, no filter. */
	unsigned nmodels;
	const uint8_t *inst_model;
};

/* Fills c with: no instances, overhead 0, threshold 32768, max request
 * tokens 131072, JSON overhead DBK_SIM_JSON_OVERHEAD_BYTES, no SLO. */
void dbk_sim_config_default(struct dbk_sim_config *c);

/* A completions request with a token-id-free text prompt, streaming,
 * max_tokens and ignore_eos: about this many bytes besides the prompt. */
#define DBK_SIM_JSON_OVERHEAD_BYTES 120.0

/* How many of n instances form the short group: the agent's split of n
 * servers into 2 groups (the first gets the extra one). */
unsigned dbk_sim_short_count(unsigned n);

struct dbk_sim_policy_ops;
struct dbk_sim;

/* reqs must be in non-decreasing arrival order, ids 0..n-1 in order; the
 * array is copied. ops is the policy (policy.h). NULL with a sentence in
 * err when something is unusable. */
struct dbk_sim *dbk_sim_new(const struct dbk_sim_config *c, const struct dbk_sim_req *reqs,
                            size_t n, const struct dbk_sim_policy_ops *ops, char *err,
                            size_t errlen);
void dbk_sim_free(struct dbk_sim *s);

/* Runs every request to its end. Returns 0, or -1 (err) when memory ran
 * short or the policy failed. */
int dbk_sim_run(struct dbk_sim *s, char *err, size_t errlen);

/* ---- Results. ---- */

enum dbk_sim_status {
	DBK_SIM_PENDING = 0, /* not arrived yet */
	DBK_SIM_ROUTED,      /* chosen, not yet at the engine */
	DBK_SIM_QUEUED,      /* in an engine */
	DBK_SIM_DONE,
	DBK_SIM_FAILED,
};

enum dbk_sim_fail {
	DBK_SIM_FAIL_NONE = 0,
	DBK_SIM_FAIL_REFUSED,  /* the policy chose no instance */
	DBK_SIM_FAIL_TOO_LONG, /* prompt + max_tokens > max-model-len: 400 */
	DBK_SIM_FAIL_ENGINE,   /* other engine refusal */
	DBK_SIM_FAIL_SERVER,   /* a failing instance's HTTP 500 */
	DBK_SIM_FAIL_ABSENT,   /* the policy chose an instance left out */
	DBK_SIM_FAIL_SHED,     /* refused by admission (a 429), never sent */
};

struct dbk_sim_outcome {
	enum dbk_sim_status status;
	enum dbk_sim_fail fail;
	uint32_t instance; /* DBK_SIM_NONE when refused */
	uint32_t tokens;   /* TOKEN events seen */
	uint32_t preemptions;
	uint32_t ends;        /* finish + failure records: must be 1 */
	double first_token_s; /* model time; valid when tokens > 0 */
	double last_token_s;
};

const struct dbk_sim_outcome *dbk_sim_outcome(const struct dbk_sim *s, uint32_t id);
/* The slow instance's share of one window of arrivals: requests and
 * their prompt tokens, arrived and sent to it. */
struct dbk_sim_slow_window {
	uint64_t offered, sent, offered_tokens, sent_tokens;
};
/* The slow instance's share per window_s of arrivals from the first,
 * into w[0..max). Returns how many windows (after dbk_sim_run). */
size_t dbk_sim_slow_windows(const struct dbk_sim *s, double window_s, struct dbk_sim_slow_window *w,
                            size_t max);
/* Whether request id is held (admit_queue_s) and being decided again. */
bool dbk_sim_holding(const struct dbk_sim *s, uint32_t id);

/* What one priority class got: requests offered, completed within
 * every objective (good), sent to a server (admitted), refused in the
 * end (shed: counted against attainment), refused once and sent again
 * (retried; then admitted or shed), held instead of shed
 * (admit_queue_s; then admitted or shed). offered = admitted + shed +
 * those the fleet refused (no instance). */
struct dbk_sim_prio {
	uint64_t offered, good, admitted, shed, retried, held;
	/* Clients that retry (shed_retry, shed_retry_sdk): requests shed at
	 * their first send, admitted at a retry, and done within every
	 * objective counted from their last send (good counts from the
	 * first). */
	uint64_t first_shed, retry_admitted, good_last;
};

/* How long the openai SDKs' client waits after a 429 with a Retry-After
 * of retry_s (0: none) before its retry number n + 1 of request id
 * (sim_retry.c). */
double dbk_sim_sdk_wait(int retry_s, uint32_t id, unsigned n);

struct dbk_sim_result {
	struct dbk_class_summary cls[DBK_NCLASSES];
	struct dbk_sim_prio prio[DBK_CLASS_N]; /* by enum dbk_class */
	bool retry_sdk;                        /* its clients retried as the SDKs do */
	double duration_s;                     /* first arrival to the last request's end */
	uint64_t preemptions;
	uint64_t steps;
	uint64_t events; /* processed by the loop */
	uint64_t refused, too_long;
	uint64_t redirects;   /* from the policy, if it counts them */
	size_t policy_leases; /* live leases at the end: must be 0 */
	double busy_s;        /* sum of all instances' step time */
	/* Summed over instances, as vllm:prefix_cache_queries_total and
	 * _hits_total (tokens; hit rate = hits / queries). */
	uint64_t prefix_cache_queries, prefix_cache_hits;
	/* The changing fleet: requests answered 500 by a failing instance,
	 * requests the policy sent to an instance left out (must be 0),
	 * times an instance was marked down (error_limit), instances that
	 * joined with a new engine. */
	uint64_t server_errors, misrouted, marked_down, new_engines;
	/* Several models: requests sent to an instance of another model
	 * (must be 0; counted in misrouted too), and per model requests
	 * offered and completed within every objective. LoRA: adapters
	 * loaded into the engines' CPU caches and copied into GPU slots
	 * (the engine's lora_loads and lora_activations, summed). */
	uint64_t wrong_model;
	uint64_t model_offered[DBK_SIM_MAX_MODELS], model_good[DBK_SIM_MAX_MODELS];
	uint64_t lora_loads, lora_activations;
};

/* Valid after dbk_sim_run; the first call summarizes. */
int dbk_sim_result(struct dbk_sim *s, struct dbk_sim_result *out);
/* The prefix caches' hit rate: hit tokens over looked-up tokens, as
 * vllm:prefix_cache_hits_total / vllm:prefix_cache_queries_total; 0
 * when nothing was looked up. */
double dbk_sim_result_hit_rate(const struct dbk_sim_result *r);

/* ---- What a policy may look at while choosing. ---- */

unsigned dbk_sim_ninstances(const struct dbk_sim *s);
/* Requests in the run. */
size_t dbk_sim_nrequests(const struct dbk_sim *s);
/* Requests not yet ended (pending, routed or in an engine). */
size_t dbk_sim_unfinished(const struct dbk_sim *s);
double dbk_sim_now(const struct dbk_sim *s);
const struct dbk_sim_config *dbk_sim_config(const struct dbk_sim *s);
const struct dbk_engine *dbk_sim_engine(const struct dbk_sim *s, unsigned i);
const struct dbk_engine_config *dbk_sim_engine_config(const struct dbk_sim *s, unsigned i);
/* Requests chosen for instance i and not ended (HAProxy's connection
 * count, what least-connections balances). */
unsigned dbk_sim_inflight(const struct dbk_sim *s, unsigned i);
/* Model time when instance i's step in flight ends; now when idle. */
double dbk_sim_step_end(const struct dbk_sim *s, unsigned i);
/* Instance i's live requests in the order they were routed:
 * for (id = first(s, i); id != DBK_SIM_NONE; id = next(s, id)). */
uint32_t dbk_sim_live_first(const struct dbk_sim *s, unsigned i);
uint32_t dbk_sim_live_next(const struct dbk_sim *s, uint32_t id);
const struct dbk_sim_req *dbk_sim_req(const struct dbk_sim *s, uint32_t id);
/* The engine handle once the request is in an engine. */
bool dbk_sim_req_handle(const struct dbk_sim *s, uint32_t id, uint64_t *h);
/* 0 if never preempted; otherwise larger for a later preemption (the
 * engine puts a preempted request at the front of its waiting queue). */
uint64_t dbk_sim_req_preempt_seq(const struct dbk_sim *s, uint32_t id);
/* The chained keys of the request's full 16-token prompt blocks, as the
 * engine holds them (model/prefix_cache.h); valid from its arrival (before the
 * policy chooses) to its end; NULL and *n = 0 without hash ids. */
const uint64_t *dbk_sim_req_keys(const struct dbk_sim *s, uint32_t id, uint32_t *n);
/* Prompt tokens of request id that instance i would find in its prefix
 * cache if the request were admitted there now (whole blocks, at most
 * prompt - 1 tokens, as vLLM): the clairvoyant view of the cache. 0 when
 * caching is off or the request has no identity. */
uint32_t dbk_sim_cached_tokens(const struct dbk_sim *s, unsigned i, uint32_t id);
/* Instance i's first tokens so far: the sum of their TTFTs (from the
 * request reaching the engine, as vLLM times it) and their count, what
 * vllm:time_to_first_token_seconds' _sum and _count expose. */
void dbk_sim_first_tokens(const struct dbk_sim *s, unsigned i, double *sum_s, uint64_t *count);
/* Instance i's gaps between a request's tokens after its first so far:
 * their sum and count, what vllm:inter_token_latency_seconds' _sum and
 * _count expose. */
void dbk_sim_token_gaps(const struct dbk_sim *s, unsigned i, double *sum_s, uint64_t *count);
/* Instance i's gauges as the policy's last scrape saw them (policy.h:
 * scrape), up to tick_s old; only for policies that scrape. */
const struct dbk_sim_scrape *dbk_sim_scraped(const struct dbk_sim *s, unsigned i);
/* Whether instance i may be sent requests now: present (not scaled
 * in, not yet to join) and not marked down. Policies never choose an
 * instance that is not; they are told of every change (policy.h:
 * member). */
bool dbk_sim_usable(const struct dbk_sim *s, unsigned i);
/* While a request is being routed, dbk_sim_usable and dbk_sim_nusable
 * also leave out the instances of other models: each peer's candidate
 * list is its model's servers, as each filters its endpoints by the
 * request's model before it applies its policy (multimodel.h). Outside
 * routing (scrapes, membership) they see the whole fleet. */
/* The servers of request r's model as the agent's bitset
 * (dbk_bal_eligible); NULL with one model. */
const uint64_t *dbk_sim_eligible(const struct dbk_sim *s, const struct dbk_sim_req *r);
unsigned dbk_sim_nusable(const struct dbk_sim *s);
/* The operator's weight of instance i (1 without weights). */
double dbk_sim_weight(const struct dbk_sim *s, unsigned i);
/* True when the request is long by the configured threshold. */
bool dbk_sim_req_is_long(const struct dbk_sim *s, const struct dbk_sim_req *r);

#endif
