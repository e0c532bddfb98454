/* A model of one vLLM instance (V1 scheduler, chunked prefill), as
 * agent/model/ENGINE-MODEL.md describes it.
 *
 * Pure: no sockets, no clock, no globals. Time only exists as the model
 * duration a step returns, so the same module drives the HTTP stub (an
 * ev_timer per step) and a discrete-event cluster simulator.
 *
 * A step is split in two halves so that a caller can let model time pass
 * between the scheduling decision and its outcome:
 *   d = dbk_engine_begin_step(e);      schedule the batch, allocate KV
 *   ... d seconds of model time ...    submits/aborts may happen here
 *   dbk_engine_end_step(e, cb, ctx);   sample tokens, report events
 * dbk_engine_step() does both at once. */
#ifndef DBK_ENGINE_H
#define DBK_ENGINE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/engine_profile.h"

/* vLLM's default block size on CUDA. */
#define DBK_KV_BLOCK_TOKENS 16u

/* Upper bounds accepted by dbk_engine_config_check: they keep every
 * per-step array small enough to preallocate. */
#define DBK_ENGINE_MAX_SEQS_LIMIT (1u << 20)
#define DBK_ENGINE_MAX_MODEL_LEN_LIMIT (1u << 24)

/* The GPU profiles and model constants are the agent's
 * (engine_profile.h): the ttft policy predicts with the very numbers the
 * stub simulates with. */

/* vLLM's --scheduling-policy (vllm/v1/core/sched/request_queue.py):
 * first come first served (the default), or by each request's priority,
 * lower value first, then arrival. */
enum dbk_engine_policy {
	DBK_ENGINE_FCFS = 0,
	DBK_ENGINE_PRIORITY,
};

struct dbk_engine_config {
	const struct dbk_engine_profile *gpu;
	uint32_t max_model_len;
	uint32_t max_num_batched_tokens;
	uint32_t max_num_seqs;
	uint64_t kv_capacity_tokens;
	/* vLLM V1's automatic prefix caching (on by default there, off
	 * with --no-prefix-caching): see prefix_cache.h. Off, the engine
	 * schedules exactly as it did before caching was modelled. */
	bool enable_prefix_caching;
	enum dbk_engine_policy policy;
	/* LoRA adapters (vLLM's --enable-lora; ENGINE-MODEL.md, "LoRA
	 * adapters"): max_loras GPU slots (--max-loras), 0 = LoRA off, and
	 * then nothing of it runs; an LRU CPU cache of max_cpu_loras
	 * adapters (--max-cpu-loras, at least max_loras; 0 = max_loras,
	 * vLLM's default). A step that needs
	 * an adapter outside the GPU slots is longer by lora_load_s when
	 * the adapter is not in the CPU cache either (read and copied),
	 * by lora_activate_s when it is (copied to the GPU only). */
	uint32_t max_loras;
	uint32_t max_cpu_loras;
	double lora_load_s;
	double lora_activate_s;
};

/* LoRA's bounds (dbk_engine_config_check) and default costs: an
 * estimate for a rank-16 adapter of Llama-3.1-8B on every projection
 * (about 84 MB in bf16), ENGINE-MODEL.md shows the arithmetic. */
#define DBK_ENGINE_MAX_LORAS_LIMIT 256u
#define DBK_ENGINE_MAX_CPU_LORAS_LIMIT 4096u
#define DBK_ENGINE_LORA_LOAD_S 0.050
#define DBK_ENGINE_LORA_ACTIVATE_S 0.004

/* Fills cfg with the profile's defaults, max_model_len 131072, prefix
 * caching on, FCFS and LoRA off (vLLM's defaults), LoRA's costs at
 * DBK_ENGINE_LORA_*_S for when max_loras is set. */
void dbk_engine_config_default(struct dbk_engine_config *cfg, const struct dbk_engine_profile *gpu);
/* 0 when usable; otherwise -1 and a sentence in err. */
int dbk_engine_config_check(const struct dbk_engine_config *cfg, char *err, size_t errlen);

struct dbk_engine;

/* NULL when the configuration is invalid or memory is short. */
struct dbk_engine *dbk_engine_new(const struct dbk_engine_config *cfg);
void dbk_engine_free(struct dbk_engine *e);

enum dbk_engine_err {
	DBK_ENGINE_OK = 0,
	DBK_ENGINE_E_TOO_LONG = -1, /* prompt + max output > max_model_len */
	DBK_ENGINE_E_INVAL = -2,    /* zero prompt or zero output tokens */
	DBK_ENGINE_E_NOMEM = -3,
	DBK_ENGINE_E_UNKNOWN = -4, /* abort: handle not live */
	DBK_ENGINE_E_NO_LORA = -5, /* an adapter named, LoRA off */
};

/* Queues a request at the back of the waiting queue. The handle names it
 * in events and in dbk_engine_abort; it is never reused while live.
 * Like vLLM's front end, the engine refuses a request whose prompt plus
 * requested output does not fit in max_model_len. */
int dbk_engine_submit(struct dbk_engine *e, uint32_t prompt_tokens, uint32_t max_output_tokens,
                      void *cookie, uint64_t *handle);

/* The same with the prompt's identity: keys[0..n_keys) are the chained
 * keys of its first full 16-token blocks (prefix_cache.h: the stub
 * hashes the prompt's bytes, the simulator the bench's prompt text of
 * the trace's hash ids), n_keys <= prompt_tokens / 16; blocks past them
 * are unique to the request. Copied. dbk_engine_submit is keys NULL:
 * a prompt that shares nothing. */
int dbk_engine_submit_keys(struct dbk_engine *e, uint32_t prompt_tokens, const uint64_t *keys,
                           uint32_t n_keys, uint32_t max_output_tokens, void *cookie,
                           uint64_t *handle);

/* A request with all it can carry: dbk_engine_submit_keys's arguments
 * and vLLM's per-request priority (the OpenAI body's `priority`, lower
 * first). Only DBK_ENGINE_PRIORITY reads the priority; under FCFS it is
 * ignored, as vLLM V1's FCFS queue ignores it. */
struct dbk_engine_submission {
	uint32_t prompt_tokens;
	const uint64_t *keys;
	uint32_t n_keys;
	uint32_t max_output_tokens;
	int32_t priority;
	/* The LoRA adapter (vLLM's lora_int_id, > 0), 0 for the base
	 * model; an adapter needs max_loras > 0. */
	uint32_t lora;
	void *cookie;
};
int dbk_engine_submit_req(struct dbk_engine *e, const struct dbk_engine_submission *sub,
                          uint64_t *handle);

/* Client went away: drop the request wherever it is and free its KV.
 * After it returns no further event is reported for the handle, even
 * one already produced by a step being delivered. */
int dbk_engine_abort(struct dbk_engine *e, uint64_t handle);

enum dbk_engine_event_type {
	/* One output token. n_output counts it; n_output == 1 is the first
	 * token (the TTFT moment). */
	DBK_ENGINE_EV_TOKEN,
	/* Reached max_output_tokens; follows its last TOKEN event. The
	 * handle is dead once the callback returns. */
	DBK_ENGINE_EV_FINISHED,
	/* Evicted to make room (recompute): reported at the end of the step
	 * that evicted it, before that step's tokens. */
	DBK_ENGINE_EV_PREEMPTED,
};

struct dbk_engine_event {
	enum dbk_engine_event_type type;
	uint64_t handle;
	void *cookie;
	uint32_t n_output; /* output tokens generated so far */
	uint32_t prompt_tokens;
	uint32_t max_output_tokens;
};

/* Events are reported after the step's state change is complete, so a
 * callback may call dbk_engine_submit, dbk_engine_abort and the queries,
 * but not begin/end/step. */
typedef void (*dbk_engine_event_fn)(void *ctx, const struct dbk_engine_event *ev);

/* Schedules the next batch and returns its model duration in seconds;
 * 0 when there is nothing to run (no step is then in flight). */
double dbk_engine_begin_step(struct dbk_engine *e);
/* Completes the step in flight (no-op without one). */
void dbk_engine_end_step(struct dbk_engine *e, dbk_engine_event_fn cb, void *ctx);
/* begin + end; returns the duration (0: idle, nothing happened). */
double dbk_engine_step(struct dbk_engine *e, dbk_engine_event_fn cb, void *ctx);

bool dbk_engine_has_work(const struct dbk_engine *e);
bool dbk_engine_in_step(const struct dbk_engine *e);
uint32_t dbk_engine_num_running(const struct dbk_engine *e);
uint32_t dbk_engine_num_waiting(const struct dbk_engine *e);
/* Fraction of KV blocks in use, 0..1 (vllm:kv_cache_usage_perc). */
double dbk_engine_kv_usage(const struct dbk_engine *e);

struct dbk_engine_stats {
	uint32_t running, waiting;
	uint64_t kv_blocks_used, kv_blocks_total;
	uint64_t prompt_tokens_total; /* counted at each first token */
	uint64_t generation_tokens_total;
	uint64_t requests_finished;
	uint64_t requests_aborted;
	uint64_t preemptions_total;
	uint64_t steps_total;
	double busy_time_s; /* sum of step durations */
	/* vllm:prefix_cache_queries / _hits: tokens of requests looked up
	 * on admission and tokens found cached, counted once per request
	 * when it is first admitted (a preempted request's re-admission is
	 * counted apart, as vLLM's PrefixCacheStats.preempted_* are). */
	uint64_t prefix_cache_requests;
	uint64_t prefix_cache_queries, prefix_cache_hits;
	uint64_t preempted_prefix_queries, preempted_prefix_hits;
	uint64_t kv_blocks_cached; /* blocks holding a key now */
	uint64_t kv_evictions;     /* cached blocks reused for data */
	/* LoRA: adapters read into the CPU cache (a step's or
	 * dbk_engine_lora_add's), adapters copied into a GPU slot (loads
	 * included), adapters evicted from a GPU slot or from the CPU
	 * cache, and the model seconds steps spent on them. */
	uint64_t lora_loads, lora_activations;
	uint64_t lora_slot_evictions, lora_cpu_evictions;
	double lora_load_time_s;
};
void dbk_engine_get_stats(const struct dbk_engine *e, struct dbk_engine_stats *st);

/* The step most recently begun. */
struct dbk_engine_step_info {
	uint32_t num_scheduled_tokens;
	uint32_t num_prefill_reqs; /* scheduled with a (re)prefill chunk */
	uint32_t num_decode_reqs;
	uint32_t num_new_admitted; /* taken from the waiting queue */
	uint32_t num_preempted;
	double duration_s;
	uint32_t num_loras; /* distinct adapters in the batch */
	double lora_load_s; /* of duration_s, loading adapters */
};
void dbk_engine_last_step(const struct dbk_engine *e, struct dbk_engine_step_info *info);

enum dbk_engine_req_state {
	DBK_REQ_UNKNOWN = 0,
	DBK_REQ_WAITING,
	DBK_REQ_RUNNING,
};
struct dbk_engine_req_info {
	enum dbk_engine_req_state state;
	uint32_t prompt_tokens, max_output_tokens;
	uint32_t n_output;
	uint32_t num_computed_tokens; /* tokens whose KV is (being) computed */
	uint32_t kv_blocks;
	uint32_t num_preemptions;
	/* Prompt tokens found cached at the last admission (0 if none). */
	uint32_t num_cached_tokens;
};
/* Returns the state; info may be NULL. */
enum dbk_engine_req_state dbk_engine_req_get(const struct dbk_engine *e, uint64_t handle,
                                             struct dbk_engine_req_info *info);

bool dbk_engine_prefix_caching(const struct dbk_engine *e);
/* How many of keys[0..n) (a prompt's chained block keys) the engine holds
 * cached now, as a leading run, in blocks: what a request with these keys
 * would hit if admitted now (before vLLM's cap of prompt - 1 tokens;
 * dbk_engine_hit_tokens applies it). 0 without caching. */
uint32_t dbk_engine_cached_blocks(const struct dbk_engine *e, const uint64_t *keys, uint32_t n);
/* Tokens a prompt of prompt_tokens with these keys would find cached. */
uint32_t dbk_engine_hit_tokens(const struct dbk_engine *e, uint32_t prompt_tokens,
                               const uint64_t *keys, uint32_t n);

/* ---- LoRA adapters (engine_lora.c), with max_loras > 0. ---- */

/* vLLM's add_lora (a /v1/load_lora_adapter, or --lora-modules at
 * start): the adapter is read into the CPU cache and copied into a GPU
 * slot, evicting as a step would. Counted in the stats, but costs no
 * model time: it happens between steps (the stub answers at once). -1
 * when LoRA is off or id is 0. */
int dbk_engine_lora_add(struct dbk_engine *e, uint32_t id);
/* Where an adapter is now. */
bool dbk_engine_lora_in_slot(const struct dbk_engine *e, uint32_t id);
bool dbk_engine_lora_in_cpu(const struct dbk_engine *e, uint32_t id);
uint32_t dbk_engine_max_loras(const struct dbk_engine *e);

/* vllm:lora_requests_info's counts: an adapter's requests that have not
 * been scheduled yet (waiting) and those that have and are not finished
 * (running, preempted ones included), as vLLM's LoRARequestStates keeps
 * them; adapters in the order their first live request came. */
struct dbk_engine_lora_count {
	uint32_t id;
	uint32_t waiting, running;
};
/* Copies up to cap adapters with live requests; returns how many there
 * are. */
size_t dbk_engine_lora_counts(const struct dbk_engine *e, struct dbk_engine_lora_count *out,
                              size_t cap);

/* Model duration of a step scheduling the given chunks: chunk i has
 * new[i] tokens after done[i] already computed; is_prefill[i] selects the
 * attention term (prefill: FLOP-bound; decode: KV-read-bound). Exposed
 * so simulators and tests can price a batch without an engine. */
double dbk_engine_step_time(const struct dbk_engine_profile *gpu, size_t n,
                            const uint32_t *new_tokens, const uint32_t *done,
                            const bool *is_prefill);

#endif
