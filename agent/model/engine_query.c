/* The engine model's queries (engine.h): what a caller may read of its
 * state between steps, apart from the scheduler (engine.c). Pure. */
#include "model/engine_state.h"

#include <string.h>

bool dbk_engine_has_work(const struct dbk_engine *e)
{
	return e->running.n > 0 || e->waiting.n > 0;
}

bool dbk_engine_in_step(const struct dbk_engine *e) { return e->in_step; }

uint32_t dbk_engine_num_running(const struct dbk_engine *e) { return e->running.n; }

uint32_t dbk_engine_num_waiting(const struct dbk_engine *e) { return e->waiting.n; }

double dbk_engine_kv_usage(const struct dbk_engine *e)
{
	if (e->blocks_total == 0)
		return 0;
	return (double)(e->blocks_total - dbk_prefix_cache_num_free(e->pool)) /
	       (double)e->blocks_total;
}

void dbk_engine_get_stats(const struct dbk_engine *e, struct dbk_engine_stats *st)
{
	*st = e->st;
	st->running = e->running.n;
	st->waiting = e->waiting.n;
	st->kv_blocks_total = e->blocks_total;
	st->kv_blocks_used = e->blocks_total - dbk_prefix_cache_num_free(e->pool);
	st->kv_blocks_cached = dbk_prefix_cache_num_cached(e->pool);
	st->kv_evictions = dbk_prefix_cache_evictions(e->pool);
}

void dbk_engine_last_step(const struct dbk_engine *e, struct dbk_engine_step_info *info)
{
	*info = e->last;
}

enum dbk_engine_req_state dbk_engine_req_get(const struct dbk_engine *e, uint64_t handle,
                                             struct dbk_engine_req_info *info)
{
	const struct req *r = dbk_engine_lookup(e, handle);
	enum dbk_engine_req_state s = DBK_REQ_UNKNOWN;

	if (r && !r->gone)
		s = r->where == Q_RUNNING ? DBK_REQ_RUNNING : DBK_REQ_WAITING;
	if (info) {
		memset(info, 0, sizeof(*info));
		info->state = s;
		if (r && !r->gone) {
			info->prompt_tokens = r->prompt;
			info->max_output_tokens = r->max_out;
			info->n_output = r->out;
			info->num_computed_tokens = r->computed;
			info->kv_blocks = r->blocks;
			info->num_preemptions = r->preemptions;
			info->num_cached_tokens = r->cached_tokens;
		}
	}
	return s;
}

bool dbk_engine_prefix_caching(const struct dbk_engine *e) { return e->cfg.enable_prefix_caching; }

uint32_t dbk_engine_cached_blocks(const struct dbk_engine *e, const uint64_t *keys, uint32_t n)
{
	return dbk_prefix_cache_match(e->pool, keys, n, NULL);
}

uint32_t dbk_engine_hit_tokens(const struct dbk_engine *e, uint32_t prompt_tokens,
                               const uint64_t *keys, uint32_t n)
{
	uint32_t max_blocks = prompt_tokens ? (prompt_tokens - 1) / DBK_KV_BLOCK_TOKENS : 0;

	if (n > max_blocks)
		n = max_blocks;
	return dbk_engine_cached_blocks(e, keys, n) * DBK_KV_BLOCK_TOKENS;
}
