/* Which metric names the scraper reads, per engine: vLLM's (current and
 * older releases'), SGLang's, or both (auto: whichever a server
 * exports), each name overridable (--metric KEY=NAME, as llm-d's
 * endpoint picker takes its names). Pure: tables and string compares.
 *
 * SGLang's names are those of python/sglang/srt/metrics/collector.py
 * (sgl-project/sglang at 00ae9c1): SchedulerMetricsCollector's gauges
 * sglang:num_running_reqs, num_queue_reqs, token_usage (0..1),
 * cache_hit_rate (0..1), max_total_num_tokens (the KV pool, in tokens)
 * and counter num_retracted_requests_total (its preemptions);
 * TokenizerMetricsCollector's counters prompt_tokens_total and
 * cached_tokens_total (read as prefix-cache queries and hits, in
 * tokens) and histogram time_to_first_token_seconds. TensorRT-LLM's
 * trtllm-serve has no comparable Prometheus names (its /metrics is JSON
 * iteration statistics), so it is not among the engines. */
#ifndef DBK_METRIC_NAMES_H
#define DBK_METRIC_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* What a family is read as. */
enum dbk_vm_slot {
	DBK_VMS_RUNNING,
	DBK_VMS_WAITING,
	DBK_VMS_KV,
	DBK_VMS_QUERIES,
	DBK_VMS_HITS,
	DBK_VMS_PREEMPT,
	DBK_VMS_TTFT_SUM,
	DBK_VMS_TTFT_COUNT,
	DBK_VMS_HIT_RATE,
	DBK_VMS_CAPACITY, /* KV capacity in tokens (SGLang) */
	/* The engine's work, counters: prompt tokens (counted whole at a
	 * request's first token), tokens generated, and its steps (the
	 * count of vLLM's per-step histogram vllm:iteration_tokens_total,
	 * whose observations are those two tokens' per step). */
	DBK_VMS_PROMPT_TOKENS,
	DBK_VMS_GEN_TOKENS,
	DBK_VMS_STEPS,
	/* The inter-token latency histogram's totals: seconds between a
	 * request's tokens after its first, summed, and their count. */
	DBK_VMS_ITL_SUM,
	DBK_VMS_ITL_COUNT,
	DBK_VMS_INFO,  /* vllm:cache_config_info's labels */
	DBK_VMS_SLEEP, /* vllm:engine_sleep_state */
	DBK_VMS_LORA,  /* vllm:lora_requests_info's labels (vllm_metrics.h) */
	DBK_VMS_N
};

enum dbk_vm_engine { DBK_ENGINE_AUTO, DBK_ENGINE_VLLM, DBK_ENGINE_SGLANG };

/* Ranks of a name within its slot: a slot takes the samples of its best
 * ranked name present, so a vLLM exporting a name and its older one is
 * not counted twice, and a slot is never a sum of two engines. */
enum { DBK_VMR_VLLM, DBK_VMR_VLLM_OLD, DBK_VMR_SGLANG, DBK_VMR_N };

#define DBK_VM_NAME_MAX 120
#define DBK_VM_MAX_FAMILIES 32

struct dbk_vm_family {
	char name[DBK_VM_NAME_MAX + 1];
	size_t len;
	enum dbk_vm_slot slot;
	unsigned rank; /* DBK_VMR_* */
};

struct dbk_vm_names {
	struct dbk_vm_family fam[DBK_VM_MAX_FAMILIES];
	unsigned n;
	/* Names of each length: most lines of a body are of families not
	 * read, and are told apart by their length alone. */
	unsigned char of_len[DBK_VM_NAME_MAX + 1];
};

/* The names of engine e (AUTO: vLLM's and SGLang's). */
void dbk_vm_names_init(struct dbk_vm_names *n, enum dbk_vm_engine e);
/* The default: vLLM's and SGLang's (auto). */
const struct dbk_vm_names *dbk_vm_names_default(void);

/* Applies KEY=NAME: NAME is read as KEY (running, waiting, kv_usage,
 * prefix_queries, prefix_hits, prefix_hit_rate, preemptions, ttft_sum,
 * ttft_count, kv_capacity_tokens, prompt_tokens, generation_tokens,
 * steps, itl_sum, itl_count) instead of every engine's name for it.
 * Returns 0, or -1 with err (unknown key, a NAME not a metric name). */
int dbk_vm_names_override(struct dbk_vm_names *n, const char *spec, char *err, size_t errlen);

/* "vllm", "sglang" or "auto" into *e; -1 when none. */
int dbk_vm_engine_parse(const char *s, enum dbk_vm_engine *e);
const char *dbk_vm_engine_name(enum dbk_vm_engine e);

/* The family a sample's name is, or NULL. */
const struct dbk_vm_family *dbk_vm_family_of(const struct dbk_vm_names *n, const char *name,
                                             size_t len);

/* Writes into buf (cap bytes, NUL-terminated) the query that asks a
 * server for only these families: name[]=...&name[]=..., percent-encoded.
 * prometheus_client (vLLM's and SGLang's /metrics) serves just those
 * when it understands the parameter, and the whole body otherwise, which
 * parses the same. Returns the length, or 0 when cap is too small. */
size_t dbk_vm_names_query(const struct dbk_vm_names *n, char *buf, size_t cap);

#endif
