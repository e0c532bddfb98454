#include "metric_names.h"

#include <stdio.h>
#include <string.h>

#include "lib/log.h"

static const struct {
	const char *name;
	enum dbk_vm_slot slot;
	unsigned rank;
} builtin[] = {
	{ "vllm:num_requests_running", DBK_VMS_RUNNING, DBK_VMR_VLLM },
	{ "vllm:num_requests_waiting", DBK_VMS_WAITING, DBK_VMR_VLLM },
	{ "vllm:kv_cache_usage_perc", DBK_VMS_KV, DBK_VMR_VLLM },
	/* vLLM V0's name for the same 0..1 fraction. */
	{ "vllm:gpu_cache_usage_perc", DBK_VMS_KV, DBK_VMR_VLLM_OLD },
	{ "vllm:prefix_cache_queries_total", DBK_VMS_QUERIES, DBK_VMR_VLLM },
	{ "vllm:gpu_prefix_cache_queries_total", DBK_VMS_QUERIES, DBK_VMR_VLLM_OLD },
	{ "vllm:prefix_cache_hits_total", DBK_VMS_HITS, DBK_VMR_VLLM },
	{ "vllm:gpu_prefix_cache_hits_total", DBK_VMS_HITS, DBK_VMR_VLLM_OLD },
	{ "vllm:num_preemptions_total", DBK_VMS_PREEMPT, DBK_VMR_VLLM },
	/* The histogram's totals only: its buckets are most of a body. */
	{ "vllm:time_to_first_token_seconds_sum", DBK_VMS_TTFT_SUM, DBK_VMR_VLLM },
	{ "vllm:time_to_first_token_seconds_count", DBK_VMS_TTFT_COUNT, DBK_VMR_VLLM },
	/* vLLM V0's prefix-cache hit rate, a 0..1 gauge (vllm/engine/metrics.py
	 * up to v0.10); V1 exports the counters above instead. */
	{ "vllm:gpu_prefix_cache_hit_rate", DBK_VMS_HIT_RATE, DBK_VMR_VLLM_OLD },
	{ "vllm:cache_config_info", DBK_VMS_INFO, DBK_VMR_VLLM },
	/* vLLM's sleep mode (vllm/v1/metrics/loggers.py, PrometheusStatLogger):
	 * one sample per engine and sleep_state label, "awake" 1 when awake
	 * and 0 asleep ("weights_offloaded" and "discard_all" say the level). */
	{ "vllm:engine_sleep_state", DBK_VMS_SLEEP, DBK_VMR_VLLM },
	/* LoRA adapters with requests, and max_lora (vllm_metrics.h). */
	{ "vllm:lora_requests_info", DBK_VMS_LORA, DBK_VMR_VLLM },
	/* The work its steps did, for the step budget (predict_budget.c). */
	{ "vllm:prompt_tokens_total", DBK_VMS_PROMPT_TOKENS, DBK_VMR_VLLM },
	{ "vllm:generation_tokens_total", DBK_VMS_GEN_TOKENS, DBK_VMR_VLLM },
	{ "vllm:iteration_tokens_total_count", DBK_VMS_STEPS, DBK_VMR_VLLM },
	/* The time per output token decoders see (vllm/v1/metrics/loggers.py:
	 * v0.11 exports both names, fed the same; older ones the second). */
	{ "vllm:inter_token_latency_seconds_sum", DBK_VMS_ITL_SUM, DBK_VMR_VLLM },
	{ "vllm:inter_token_latency_seconds_count", DBK_VMS_ITL_COUNT, DBK_VMR_VLLM },
	{ "vllm:time_per_output_token_seconds_sum", DBK_VMS_ITL_SUM, DBK_VMR_VLLM_OLD },
	{ "vllm:time_per_output_token_seconds_count", DBK_VMS_ITL_COUNT, DBK_VMR_VLLM_OLD },
	/* SGLang (metric_names.h). */
	{ "sglang:num_running_reqs", DBK_VMS_RUNNING, DBK_VMR_SGLANG },
	{ "sglang:num_queue_reqs", DBK_VMS_WAITING, DBK_VMR_SGLANG },
	{ "sglang:token_usage", DBK_VMS_KV, DBK_VMR_SGLANG },
	{ "sglang:prompt_tokens_total", DBK_VMS_QUERIES, DBK_VMR_SGLANG },
	{ "sglang:cached_tokens_total", DBK_VMS_HITS, DBK_VMR_SGLANG },
	{ "sglang:num_retracted_requests_total", DBK_VMS_PREEMPT, DBK_VMR_SGLANG },
	{ "sglang:time_to_first_token_seconds_sum", DBK_VMS_TTFT_SUM, DBK_VMR_SGLANG },
	{ "sglang:time_to_first_token_seconds_count", DBK_VMS_TTFT_COUNT, DBK_VMR_SGLANG },
	{ "sglang:cache_hit_rate", DBK_VMS_HIT_RATE, DBK_VMR_SGLANG },
	{ "sglang:max_total_num_tokens", DBK_VMS_CAPACITY, DBK_VMR_SGLANG },
};
#define NBUILTIN (sizeof(builtin) / sizeof(builtin[0]))

/* --metric keys, by slot. */
static const char *const keys[DBK_VMS_INFO] = {
	[DBK_VMS_RUNNING] = "running",
	[DBK_VMS_WAITING] = "waiting",
	[DBK_VMS_KV] = "kv_usage",
	[DBK_VMS_QUERIES] = "prefix_queries",
	[DBK_VMS_HITS] = "prefix_hits",
	[DBK_VMS_PREEMPT] = "preemptions",
	[DBK_VMS_TTFT_SUM] = "ttft_sum",
	[DBK_VMS_TTFT_COUNT] = "ttft_count",
	[DBK_VMS_HIT_RATE] = "prefix_hit_rate",
	[DBK_VMS_CAPACITY] = "kv_capacity_tokens",
	[DBK_VMS_PROMPT_TOKENS] = "prompt_tokens",
	[DBK_VMS_GEN_TOKENS] = "generation_tokens",
	[DBK_VMS_STEPS] = "steps",
	[DBK_VMS_ITL_SUM] = "itl_sum",
	[DBK_VMS_ITL_COUNT] = "itl_count",
};

static void add(struct dbk_vm_names *n, const char *name, size_t len, enum dbk_vm_slot slot,
                unsigned rank)
{
	struct dbk_vm_family *f = &n->fam[n->n++];

	memcpy(f->name, name, len);
	f->name[len] = '\0';
	f->len = len;
	f->slot = slot;
	f->rank = rank;
	n->of_len[len]++;
}

void dbk_vm_names_init(struct dbk_vm_names *n, enum dbk_vm_engine e)
{
	memset(n, 0, sizeof(*n));
	for (size_t i = 0; i < NBUILTIN; i++) {
		bool sglang = builtin[i].rank == DBK_VMR_SGLANG;

		if (e == DBK_ENGINE_AUTO || (e == DBK_ENGINE_SGLANG) == sglang)
			add(n, builtin[i].name, strlen(builtin[i].name), builtin[i].slot,
			    builtin[i].rank);
	}
}

const struct dbk_vm_names *dbk_vm_names_default(void)
{
	static struct dbk_vm_names n;

	if (!n.n)
		dbk_vm_names_init(&n, DBK_ENGINE_AUTO);
	return &n;
}

/* A Prometheus metric name: [a-zA-Z_:][a-zA-Z0-9_:]*. */
static bool metric_name(const char *s, size_t len)
{
	if (len == 0 || len > DBK_VM_NAME_MAX)
		return false;
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		bool alpha = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
		             c == ':';

		if (!alpha && !(i > 0 && c >= '0' && c <= '9'))
			return false;
	}
	return true;
}

int dbk_vm_names_override(struct dbk_vm_names *n, const char *spec, char *err, size_t errlen)
{
	const char *eq = strchr(spec, '=');
	unsigned slot = DBK_VMS_INFO;

	for (unsigned s = 0; eq && s < DBK_VMS_INFO; s++)
		if (strlen(keys[s]) == (size_t)(eq - spec) && memcmp(keys[s], spec, eq - spec) == 0)
			slot = s;
	if (slot == DBK_VMS_INFO) {
		dbk_errf(err, errlen,
		         "--metric wants KEY=NAME, KEY one of running, waiting, kv_usage, "
		         "prefix_queries, prefix_hits, prefix_hit_rate, preemptions, ttft_sum, "
		         "ttft_count, kv_capacity_tokens, prompt_tokens, generation_tokens, steps, "
		         "itl_sum, itl_count; "
		         "got '%s'",
		         spec);
		return -1;
	}
	if (!metric_name(eq + 1, strlen(eq + 1))) {
		dbk_errf(err, errlen, "--metric %s: '%s' is not a metric name", spec, eq + 1);
		return -1;
	}
	/* The name replaces every engine's for that key. */
	unsigned k = 0;
	for (unsigned i = 0; i < n->n; i++)
		if (n->fam[i].slot != slot)
			n->fam[k++] = n->fam[i];
		else
			n->of_len[n->fam[i].len]--;
	n->n = k;
	add(n, eq + 1, strlen(eq + 1), slot, DBK_VMR_VLLM);
	return 0;
}

int dbk_vm_engine_parse(const char *s, enum dbk_vm_engine *e)
{
	for (int i = DBK_ENGINE_AUTO; i <= DBK_ENGINE_SGLANG; i++)
		if (strcmp(s, dbk_vm_engine_name((enum dbk_vm_engine)i)) == 0) {
			*e = (enum dbk_vm_engine)i;
			return 0;
		}
	return -1;
}

const char *dbk_vm_engine_name(enum dbk_vm_engine e)
{
	return e == DBK_ENGINE_VLLM ? "vllm" : e == DBK_ENGINE_SGLANG ? "sglang" : "auto";
}

const struct dbk_vm_family *dbk_vm_family_of(const struct dbk_vm_names *n, const char *name,
                                             size_t len)
{
	/* Most lines are of families not read: told apart by length and
	 * last byte before any full compare. */
	if (len > DBK_VM_NAME_MAX || !n->of_len[len])
		return NULL;
	for (unsigned i = 0; i < n->n; i++)
		if (n->fam[i].len == len && n->fam[i].name[len - 1] == name[len - 1] &&
		    memcmp(n->fam[i].name, name, len) == 0)
			return &n->fam[i];
	return NULL;
}

size_t dbk_vm_names_query(const struct dbk_vm_names *n, char *buf, size_t cap)
{
	size_t w = 0;

	for (unsigned i = 0; i < n->n; i++) {
		int k = snprintf(buf + w, cap - w, "%sname%%5B%%5D=%s", i ? "&" : "",
		                 n->fam[i].name);
		if (k < 0 || (size_t)k >= cap - w)
			return 0;
		w += (size_t)k;
	}
	return w;
}
