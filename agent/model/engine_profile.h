/* The engine model's numbers: GPU profiles and model constants for a
 * vLLM V1 engine serving Llama-3.1-8B in bf16. The ttft policy predicts
 * with them (predict.c's defaults: the H100 profile) and the stub
 * simulates with them (agent/model/engine_config.c), so the agent's
 * prediction and the stub it is tested against cannot drift apart: this
 * header is the one place the numbers live, next to their sources.
 *
 * Header-only (the table sits in an inline function), so a program that
 * does not link the agent's library can include it. */
#ifndef DBK_ENGINE_PROFILE_H
#define DBK_ENGINE_PROFILE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* Llama-3.1-8B attention work per (query, key) token pair:
 * 4 FLOPs (QK^T and PV, multiply-add) x 32 layers x 4096 hidden. */
#define DBK_MODEL_ATTN_FLOPS_PER_PAIR 524288.0
/* KV bytes per token: 2 (K and V) x 32 layers x 8 KV heads x 128 dims x
 * 2 bytes (bf16). */
#define DBK_MODEL_KV_BYTES_PER_TOKEN 131072.0
/* Its context length (max_position_embeddings). */
#define DBK_MODEL_MAX_MODEL_LEN 131072u

struct dbk_engine_profile {
	const char *name;
	double t_cpu_s;      /* scheduler + server overhead per step */
	double t_weights_s;  /* weight-read floor of a forward pass */
	double r_lin_tok_s;  /* linear layers, tokens per second */
	double f_attn_flops; /* attention FLOP/s */
	double kv_read_bw;   /* KV read bytes per second */
	uint32_t default_max_num_batched_tokens;
	uint32_t default_max_num_seqs;
	uint64_t default_kv_capacity_tokens;
};

/* The profile called name ("h100", "a100"), or NULL. */
static inline const struct dbk_engine_profile *dbk_engine_profile_find(const char *name)
{
	static const struct dbk_engine_profile profiles[] = {
		{
		        .name = "h100",
		        /* vLLM v0.6.0 performance blog: scheduler + API server
			 * overhead per step after the v0.6 rewrite. */
		        .t_cpu_s = 1.5e-3,
		        /* Vidur's measured MLP profiles (microsoft/vidur
			 * data/profiling), H100: weight-read floor and
			 * linear-layer throughput. */
		        .t_weights_s = 6.0e-3,
		        .r_lin_tok_s = 46000.0,
		        /* FlashAttention-class sustained attention throughput. */
		        .f_attn_flops = 400e12,
		        /* About 80% of H100 SXM HBM3 peak (3.35 TB/s). */
		        .kv_read_bw = 2.7e12,
		        /* vLLM V1's API-server defaults on cards of >= 70 GiB
			 * other than A100 (EngineArgs default args,
			 * OPENAI_API_SERVER). */
		        .default_max_num_batched_tokens = 8192,
		        .default_max_num_seqs = 1024,
		        /* 8B bf16 weights (~16 GB) + activations out of 0.9 x
			 * 80 GB leaves ~56 GB of KV = ~430k tokens at 131072
			 * B/token. */
		        .default_kv_capacity_tokens = 430000,
		},
		{
		        .name = "a100",
		        /* Same sources as above, A100-80GB. */
		        .t_cpu_s = 2.0e-3,
		        .t_weights_s = 10.2e-3,
		        .r_lin_tok_s = 15000.0,
		        .f_attn_flops = 180e12,
		        /* About 80% of A100 80GB HBM2e peak (2.0 TB/s). */
		        .kv_read_bw = 1.6e12,
		        /* vLLM singles A100 out into its smaller-default branch. */
		        .default_max_num_batched_tokens = 2048,
		        .default_max_num_seqs = 256,
		        .default_kv_capacity_tokens = 430000,
		},
	};

	for (size_t i = 0; name && i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if (strcmp(profiles[i].name, name) == 0)
			return &profiles[i];
	return NULL;
}

#endif
