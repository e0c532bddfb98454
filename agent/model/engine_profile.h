/* The engine model's numbers: GPU profiles and model constants for a
 * vLLM V1 engine serving Llama-3.1-8B in bf16. The ttft policy predicts
 * with them (predict.c's defaults: the H100 profile) and the engine model
 * simulates with them (agent/model/engine_config.c), so the agent's
 * prediction and the stub it is tested against cannot drift apart: the
 * table in engine_profile.c is the one place the numbers live, next to
 * their sources. */
#ifndef DBK_ENGINE_PROFILE_H
#define DBK_ENGINE_PROFILE_H

#include <stdint.h>

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

/* The profile called name ("h100", "a100"), or NULL; a static entry. */
const struct dbk_engine_profile *dbk_engine_profile_find(const char *name);

#endif
