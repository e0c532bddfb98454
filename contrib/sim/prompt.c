/* Prompt identity for routers; see prompt.h. */
#include "prompt.h"

#include "u64map.h"

uint32_t dbk_sim_prompt_nseg(const struct dbk_sim_req *r)
{
	uint32_t n = (r->input_tokens + DBK_TRACE_BLOCK_TOKENS - 1) / DBK_TRACE_BLOCK_TOKENS;

	if (n == 0)
		n = 1;
	if (r->n_hash_ids && r->n_hash_ids < n)
		n = r->n_hash_ids; /* fewer ids than text: the last id runs on */
	return n;
}

uint32_t dbk_sim_prompt_seg_tokens(const struct dbk_sim_req *r, uint32_t i)
{
	uint32_t n = dbk_sim_prompt_nseg(r), start = i * DBK_TRACE_BLOCK_TOKENS;

	if (i + 1 < n)
		return DBK_TRACE_BLOCK_TOKENS;
	return r->input_tokens > start ? r->input_tokens - start : 0;
}

uint64_t dbk_sim_prompt_chain(const struct dbk_sim_req *r, uint32_t i, uint64_t prev)
{
	/* Ids of a request without hash ids: its index, in a space the
	 * trace's ids (small integers) never reach. */
	uint64_t id = i < r->n_hash_ids ? r->hash_ids[i]
	                                : dbk_u64map_mix64_pair((uint64_t)1 << 63 | r->id, i);

	return dbk_u64map_mix64_pair(prev ^ 0x5eedULL, id);
}
