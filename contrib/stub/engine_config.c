/* The numbers of the engine model: GPU profiles, model constants, the
 * step-time formula and the configuration rules (engine.h). Kept apart
 * from the scheduler (engine.c) so that every constant lives in one
 * place, next to its source. Pure. */
#include "engine.h"

#include <stdio.h>
#include <string.h>

/* ---- Constants: the only place the model's numbers live. ---- */

/* Llama-3.1-8B attention work per (query, key) token pair:
 * 4 FLOPs (QK^T and PV, multiply-add) x 32 layers x 4096 hidden. */
#define ATTN_FLOPS_PER_PAIR 524288.0
/* KV bytes per token: 2 (K and V) x 32 layers x 8 KV heads x 128 dims x
 * 2 bytes (bf16). */
#define KV_BYTES_PER_TOKEN 131072.0
#define DEFAULT_MAX_MODEL_LEN 131072u

/* One row a GPU, Llama-3.1-8B bf16 on one card. Sources, by column:
 * - t_cpu_s: vLLM v0.6.0 performance blog, scheduler + API server
 *   overhead per step after the v0.6 rewrite;
 * - t_weights_s, r_lin_tok_s: Vidur's measured MLP profiles
 *   (microsoft/vidur data/profiling): weight-read floor of a forward pass
 *   and linear-layer throughput;
 * - f_attn_flops: FlashAttention-class sustained attention throughput;
 * - kv_read_bw: about 80% of HBM peak (H100 SXM HBM3 3.35 TB/s, A100
 *   80GB HBM2e 2.0 TB/s);
 * - max_num_batched_tokens, max_num_seqs: vLLM V1's API-server defaults
 *   (EngineArgs default args, OPENAI_API_SERVER): 8192/1024 on cards of
 *   >= 70 GiB, and A100 singled out into the smaller branch, 2048/256;
 * - kv_capacity_tokens: 8B bf16 weights (~16 GB) + activations out of
 *   0.9 x 80 GB leave ~56 GB of KV = ~430k tokens at 131072 B/token. */
static const struct dbk_gpu_profile gpu_profiles[] = {
	/* name   t_cpu_s  t_weights_s r_lin_tok_s f_attn_flops kv_read_bw
	 *        batched seqs  kv_capacity_tokens */
	{"h100", 1.5e-3, 6.0e-3, 46000.0, 400e12, 2.7e12, 8192, 1024, 430000},
	{"a100", 2.0e-3, 10.2e-3, 15000.0, 180e12, 1.6e12, 2048, 256, 430000},
};

const struct dbk_gpu_profile *dbk_gpu_profile_find(const char *name)
{
	size_t i;

	if (!name)
		return NULL;
	for (i = 0; i < sizeof(gpu_profiles) / sizeof(gpu_profiles[0]); i++)
		if (strcmp(gpu_profiles[i].name, name) == 0)
			return &gpu_profiles[i];
	return NULL;
}

double dbk_model_attn_flops_per_pair(void) { return ATTN_FLOPS_PER_PAIR; }
double dbk_model_kv_bytes_per_token(void) { return KV_BYTES_PER_TOKEN; }

/* ---- Step time. ---- */

static double prefill_attn_s(const struct dbk_gpu_profile *g, double c,
                             double k)
{
	/* Causal attention: c new queries against k cached keys plus, on
	 * average, half of the chunk itself. */
	return ATTN_FLOPS_PER_PAIR * c * (k + c / 2.0) / g->f_attn_flops;
}

static double decode_attn_s(const struct dbk_gpu_profile *g, double ctx)
{
	/* Decode attention is bound by reading the whole context's KV. */
	return ctx * KV_BYTES_PER_TOKEN / g->kv_read_bw;
}

static double base_step_s(const struct dbk_gpu_profile *g, double n_tokens)
{
	double lin = n_tokens / g->r_lin_tok_s;

	return g->t_cpu_s + (lin > g->t_weights_s ? lin : g->t_weights_s);
}

double dbk_step_time(const struct dbk_gpu_profile *gpu, size_t n,
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

void dbk_engine_config_default(struct dbk_engine_config *cfg,
                               const struct dbk_gpu_profile *gpu)
{
	if (!gpu)
		gpu = &gpu_profiles[0];
	cfg->gpu = gpu;
	cfg->max_model_len = DEFAULT_MAX_MODEL_LEN;
	cfg->max_num_batched_tokens = gpu->default_max_num_batched_tokens;
	cfg->max_num_seqs = gpu->default_max_num_seqs;
	cfg->kv_capacity_tokens = gpu->default_kv_capacity_tokens;
	cfg->enable_prefix_caching = true;
}

int dbk_engine_config_check(const struct dbk_engine_config *cfg, char *err,
                            size_t errlen)
{
	uint64_t usable;

	if (!cfg->gpu) {
		snprintf(err, errlen, "no GPU profile");
		return -1;
	}
	const struct {
		const char *flag;
		uint64_t v, lo, hi;
	} ranges[] = {
		{"max-model-len", cfg->max_model_len, 2, DBK_ENGINE_MAX_MODEL_LEN_LIMIT},
		{"max-num-batched-tokens", cfg->max_num_batched_tokens, 1,
		 DBK_ENGINE_MAX_MODEL_LEN_LIMIT},
		{"max-num-seqs", cfg->max_num_seqs, 1, DBK_ENGINE_MAX_SEQS_LIMIT},
		{"kv-capacity-tokens", cfg->kv_capacity_tokens, 0, (uint64_t)1 << 40},
	};

	for (size_t i = 0; i < sizeof(ranges) / sizeof(ranges[0]); i++) {
		if (ranges[i].v < ranges[i].lo || ranges[i].v > ranges[i].hi) {
			snprintf(err, errlen, "%s must be in %llu..%llu", ranges[i].flag,
			         (unsigned long long)ranges[i].lo, (unsigned long long)ranges[i].hi);
			return -1;
		}
	}
	/* vLLM refuses to start when one max-length sequence cannot fit in
	 * the KV cache; it also guarantees that a request running alone can
	 * always get its blocks, so preemption cannot livelock. */
	usable = cfg->kv_capacity_tokens / DBK_KV_BLOCK_TOKENS *
	         DBK_KV_BLOCK_TOKENS;
	if (cfg->max_model_len > usable) {
		snprintf(err, errlen,
		         "max-model-len (%u) is larger than the KV cache "
		         "(%llu tokens in blocks of %u); vLLM refuses to start",
		         cfg->max_model_len, (unsigned long long)usable,
		         DBK_KV_BLOCK_TOKENS);
		return -1;
	}
	return 0;
}

