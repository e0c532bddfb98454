/* The GPU profiles' table; see engine_profile.h. */
#include "model/engine_profile.h"

#include <stddef.h>
#include <string.h>

/* One row a card, one column a field, each column's source here:
 * - t_cpu_s: vLLM v0.6.0 performance blog, scheduler + API server
 *   overhead per step after the v0.6 rewrite;
 * - t_weights_s, r_lin_tok_s: Vidur's measured MLP profiles
 *   (microsoft/vidur data/profiling): weight-read floor and linear-layer
 *   throughput;
 * - f_attn_flops: FlashAttention-class sustained attention throughput;
 * - kv_read_bw: about 80% of HBM peak (H100 SXM HBM3 3.35 TB/s, A100
 *   80GB HBM2e 2.0 TB/s);
 * - max_num_batched_tokens, max_num_seqs: vLLM V1's API-server defaults
 *   (EngineArgs default args, OPENAI_API_SERVER): 8192 and 1024 on cards
 *   of >= 70 GiB, but A100, which vLLM singles out into its
 *   smaller-default branch;
 * - kv_capacity_tokens: 8B bf16 weights (~16 GB) + activations out of
 *   0.9 x 80 GB leaves ~56 GB of KV = ~430k tokens at 131072 B/token. */
static const struct dbk_engine_profile profiles[] = {
	/* the struct's order: name, t_cpu_s, t_weights_s, r_lin_tok_s,
	 * f_attn_flops, kv_read_bw, and the three defaults */
	{ "h100", 1.5e-3, 6.0e-3, 46000.0, 400e12, 2.7e12, 8192, 1024, 430000 },
	{ "a100", 2.0e-3, 10.2e-3, 15000.0, 180e12, 1.6e12, 2048, 256, 430000 },
};

const struct dbk_engine_profile *dbk_engine_profile_find(const char *name)
{
	for (size_t i = 0; name && i < sizeof(profiles) / sizeof(profiles[0]); i++)
		if (strcmp(profiles[i].name, name) == 0)
			return &profiles[i];
	return NULL;
}
