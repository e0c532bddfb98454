/* The engine model's formulas over its numbers: the step time from a GPU
 * profile and the model constants (both in engine_profile.h, shared with
 * the agent's ttft policy), and the configuration rules (engine.h).
 * Kept apart from the scheduler (engine.c). Pure. */
#include "model/engine.h"

#include <stdio.h>
#include <string.h>

#include "lib/log.h"

/* ---- Step time. ---- */

static double prefill_attn_s(const struct dbk_engine_profile *g, double c, double k)
{
	/* Causal attention: c new queries against k cached keys plus, on
	 * average, half of the chunk itself. */
	return DBK_MODEL_ATTN_FLOPS_PER_PAIR * c * (k + c / 2.0) / g->f_attn_flops;
}

static double decode_attn_s(const struct dbk_engine_profile *g, double ctx)
{
	/* Decode attention is bound by reading the whole context's KV. */
	return ctx * DBK_MODEL_KV_BYTES_PER_TOKEN / g->kv_read_bw;
}

static double base_step_s(const struct dbk_engine_profile *g, double n_tokens)
{
	double lin = n_tokens / g->r_lin_tok_s;

	return g->t_cpu_s + (lin > g->t_weights_s ? lin : g->t_weights_s);
}

double dbk_engine_step_time(const struct dbk_engine_profile *gpu, size_t n,
                            const uint32_t *new_tokens, const uint32_t *done,
                            const bool *is_prefill)
{
	double total = 0, attn = 0;
	size_t i;

	if (n == 0)
		return 0;
	for (i = 0; i < n; i++) {
		total += new_tokens[i];
		if (is_prefill[i])
			attn += prefill_attn_s(gpu, new_tokens[i], done[i]);
		else
			attn += decode_attn_s(gpu, (double)done[i] + new_tokens[i]);
	}
	return base_step_s(gpu, total) + attn;
}

void dbk_engine_config_default(struct dbk_engine_config *cfg, const struct dbk_engine_profile *gpu)
{
	if (!gpu)
		gpu = dbk_engine_profile_find("h100");
	cfg->gpu = gpu;
	cfg->max_model_len = DBK_MODEL_MAX_MODEL_LEN;
	cfg->max_num_batched_tokens = gpu->default_max_num_batched_tokens;
	cfg->max_num_seqs = gpu->default_max_num_seqs;
	cfg->kv_capacity_tokens = gpu->default_kv_capacity_tokens;
	cfg->enable_prefix_caching = true;
	cfg->policy = DBK_ENGINE_FCFS;
	cfg->max_loras = 0;
	cfg->max_cpu_loras = 0;
	cfg->lora_load_s = DBK_ENGINE_LORA_LOAD_S;
	cfg->lora_activate_s = DBK_ENGINE_LORA_ACTIVATE_S;
}

int dbk_engine_config_check(const struct dbk_engine_config *cfg, char *err, size_t errlen)
{
	uint64_t usable;

	if (!cfg->gpu) {
		dbk_errf(err, errlen, "no GPU profile");
		return -1;
	}
	const struct {
		const char *flag;
		uint64_t v, lo, hi;
	} ranges[] = {
		{ "max-model-len", cfg->max_model_len, 2, DBK_ENGINE_MAX_MODEL_LEN_LIMIT },
		{ "max-num-batched-tokens", cfg->max_num_batched_tokens, 1,
		  DBK_ENGINE_MAX_MODEL_LEN_LIMIT },
		{ "max-num-seqs", cfg->max_num_seqs, 1, DBK_ENGINE_MAX_SEQS_LIMIT },
		{ "kv-capacity-tokens", cfg->kv_capacity_tokens, 0, (uint64_t)1 << 40 },
		{ "max-loras", cfg->max_loras, 0, DBK_ENGINE_MAX_LORAS_LIMIT },
		{ "max-cpu-loras", cfg->max_cpu_loras, 0, DBK_ENGINE_MAX_CPU_LORAS_LIMIT },
	};

	if (cfg->policy != DBK_ENGINE_FCFS && cfg->policy != DBK_ENGINE_PRIORITY) {
		dbk_errf(err, errlen, "unknown scheduling policy %d", (int)cfg->policy);
		return -1;
	}
	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		if (ranges[i].v < ranges[i].lo || ranges[i].v > ranges[i].hi) {
			dbk_errf(err, errlen, "%s must be in %llu..%llu", ranges[i].flag,
			         (unsigned long long)ranges[i].lo,
			         (unsigned long long)ranges[i].hi);
			return -1;
		}
	}
	/* vLLM's LoRAConfig: the CPU cache holds at least the GPU slots. */
	if (cfg->max_cpu_loras && cfg->max_cpu_loras < cfg->max_loras) {
		dbk_errf(err, errlen, "max-cpu-loras (%u) must be >= max-loras (%u)",
		         cfg->max_cpu_loras, cfg->max_loras);
		return -1;
	}
	if (!(cfg->lora_load_s >= 0 && cfg->lora_load_s <= 3600) ||
	    !(cfg->lora_activate_s >= 0 && cfg->lora_activate_s <= 3600)) {
		dbk_errf(err, errlen, "LoRA load and activation times must be in 0..3600 s");
		return -1;
	}
	/* vLLM refuses to start when one max-length sequence cannot fit in
	 * the KV cache; it also guarantees that a request running alone can
	 * always get its blocks, so preemption cannot livelock. */
	usable = cfg->kv_capacity_tokens / DBK_KV_BLOCK_TOKENS * DBK_KV_BLOCK_TOKENS;
	if (cfg->max_model_len > usable) {
		dbk_errf(err, errlen,
		         "max-model-len (%u) is larger than the KV cache "
		         "(%llu tokens in blocks of %u); vLLM refuses to start",
		         cfg->max_model_len, (unsigned long long)usable, DBK_KV_BLOCK_TOKENS);
		return -1;
	}
	return 0;
}
