/* vLLM's GET /metrics, as the stub renders it: the names, help texts,
 * label sets and order of vllm/v1/metrics/loggers.py (vllm-project/vllm
 * at 005a810, PrometheusStatLogger) for one engine (engine="0"), in the
 * text format prometheus_client's generate_latest writes (labels sorted
 * by name, counters' HELP and TYPE under the _total name, a _created
 * gauge after each counter and histogram, floats as Go prints them), and
 * vllm:engine_sleep_state of a later loggers.py (vLLM's sleep mode), and
 * vllm:inter_token_latency_seconds of v0.11's (which kept
 * vllm:time_per_output_token_seconds beside it, deprecated, fed the same
 * gaps).
 * Pure: the caller passes every value, the clock included. */
#ifndef DBK_PROM_H
#define DBK_PROM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "lib/buf.h"

/* A histogram of prometheus_client's: upper bounds (le), +Inf apart. */
#define DBK_PROM_MAX_BUCKETS 32

struct dbk_prom_histogram {
	double bounds[DBK_PROM_MAX_BUCKETS];
	size_t n_bounds;
	uint64_t counts[DBK_PROM_MAX_BUCKETS]; /* not cumulative */
	uint64_t count;                        /* all, +Inf included */
	double sum;
};

void dbk_prom_observe(struct dbk_prom_histogram *h, double v);

/* What vLLM observes of each request it serves, in its buckets
 * (loggers.py): the first token (22 buckets, 1 ms to 2560 s), each gap
 * between two tokens of a request (19, 10 ms to 80 s), the whole request
 * (21, 0.3 s to 7680 s), and its prompt and generated tokens
 * (build_1_2_5_buckets(max_model_len): 1, 2, 5, 10, ... up to it). */
struct dbk_prom_outcomes {
	struct dbk_prom_histogram ttft, itl, e2e, prompt_tokens, generation_tokens;
	/* vllm:iteration_tokens_total: each step's tokens as vLLM counts
	 * them, the tokens it generated and the prompts whose first token
	 * it gave, whole (observed in pacer.c's step_cb). */
	struct dbk_prom_histogram iteration_tokens;
};

void dbk_prom_outcomes_init(struct dbk_prom_outcomes *o, uint32_t max_model_len);

/* One label set of vllm:lora_requests_info (loggers.py at 005a810):
 * the comma-joined adapters with running and with waiting requests,
 * and when it was last set (the gauge's value: set_to_current_time). */
struct dbk_prom_lora_set {
	char *running, *waiting;
	double ts;
};

struct dbk_prom_stats {
	const char *model;
	double created; /* unix seconds the counters were made */
	uint32_t running, waiting;
	double kv_usage; /* 0..1 */
	uint64_t prefix_cache_queries, prefix_cache_hits;
	uint64_t preemptions;
	uint64_t prompt_tokens, generation_tokens;
	uint64_t success_length, success_abort;
	const struct dbk_prom_outcomes *out; /* not NULL */
	/* vllm:cache_config_info */
	uint32_t block_size;
	uint64_t num_gpu_blocks;
	bool enable_prefix_caching;
	/* vllm:engine_sleep_state: 0 awake, 1 or 2 the sleep level. */
	int sleep_level;
	/* With --enable-lora: vllm:lora_requests_info's label sets, and the
	 * stub's own counters of the engine's adapter loads
	 * (vllm_stub_lora_*_total, not vLLM's: for tests to count loads). */
	bool lora;
	uint32_t max_lora;
	const struct dbk_prom_lora_set *lora_sets;
	size_t n_lora_sets;
	uint64_t lora_loads, lora_activations, lora_slot_evictions, lora_cpu_evictions;
};

void dbk_prom_render(struct dbk_buf *b, const struct dbk_prom_stats *m);
/* The same numbers under SGLang's names (python/sglang/srt/metrics/
 * collector.py, sgl-project/sglang at 00ae9c1): sglang:num_running_reqs,
 * num_queue_reqs, token_usage (0..1), cache_hit_rate, max_total_num_tokens,
 * num_retracted_requests_total, prompt_tokens_total, cached_tokens_total,
 * generation_tokens_total and time_to_first_token_seconds (vLLM's
 * buckets, not SGLang's). */
void dbk_prom_render_sglang(struct dbk_buf *b, const struct dbk_prom_stats *m);

/* A float as prometheus_client prints it (Python's repr, Go's exponent
 * rule for values of 7 digits or more before the point): 3.0, 0.25,
 * 1.7e+09, +Inf. Needs 32 bytes. */
void dbk_prom_float(char *out, size_t n, double v);

#endif
