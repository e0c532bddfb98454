/* What the engine model's tests share (tests/unit/test_engine*.c,
 * contrib/sim/test_replica.c): an engine from a profile with a few
 * settings changed, and a step on a model clock. */
#ifndef DBK_ENGINE_TEST_H
#define DBK_ENGINE_TEST_H

#include <stdbool.h>
#include <stdint.h>

#include "model/engine.h"

/* The profile's defaults but for the non-zero arguments, in *c. */
static inline void engine_test_config(struct dbk_engine_config *c, const char *gpu, bool caching,
                                      uint32_t budget, uint32_t seqs, uint64_t kv, uint32_t max_len)
{
	dbk_engine_config_default(c, dbk_engine_profile_find(gpu));
	c->enable_prefix_caching = caching;
	if (budget)
		c->max_num_batched_tokens = budget;
	if (seqs)
		c->max_num_seqs = seqs;
	if (kv)
		c->kv_capacity_tokens = kv;
	if (max_len)
		c->max_model_len = max_len;
}

/* An engine of engine_test_config's. */
static inline struct dbk_engine *engine_test_new(const char *gpu, bool caching, uint32_t budget,
                                                 uint32_t seqs, uint64_t kv, uint32_t max_len)
{
	struct dbk_engine_config c;

	engine_test_config(&c, gpu, caching, budget, seqs, kv, max_len);
	return dbk_engine_new(&c);
}

/* One step, *now advanced by its duration before its events are
 * reported, so that a callback reads the step's end. */
static inline double engine_test_step(struct dbk_engine *e, double *now, dbk_engine_event_fn cb,
                                      void *ctx)
{
	double d = dbk_engine_begin_step(e);

	*now += d;
	if (d > 0)
		dbk_engine_end_step(e, cb, ctx);
	return d;
}

#endif
