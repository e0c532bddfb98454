/* Scraped gauges of each instance; see snapshot.h. */
#include "snapshot.h"

#include <stdlib.h>

#include "sim.h"

int dbk_sim_snapshot_init(struct dbk_sim_snapshot *sn, unsigned n)
{
	unsigned i;

	sn->n = n;
	sn->scrapes = 0;
	sn->inst = calloc(n ? n : 1, sizeof(*sn->inst));
	if (!sn->inst)
		return -1;
	for (i = 0; i < n; i++)
		sn->inst[i].at_s = -1;
	return 0;
}

void dbk_sim_snapshot_free(struct dbk_sim_snapshot *sn)
{
	free(sn->inst);
	sn->inst = NULL;
	sn->n = 0;
}

void dbk_sim_snapshot_set(struct dbk_sim_snapshot *sn, unsigned i, double at_s, uint32_t running,
                          uint32_t waiting, double kv_usage)
{
	struct dbk_sim_scrape *x = &sn->inst[i];

	x->at_s = at_s;
	x->running = running;
	x->waiting = waiting;
	x->kv_usage = kv_usage;
}

void dbk_sim_snapshot_scrape_one(struct dbk_sim_snapshot *sn, const struct dbk_sim *s, unsigned i)
{
	const struct dbk_engine *e = dbk_sim_engine(s, i);

	dbk_sim_snapshot_set(sn, i, dbk_sim_now(s), dbk_engine_num_running(e),
	                     dbk_engine_num_waiting(e), dbk_engine_kv_usage(e));
	dbk_sim_first_tokens(s, i, &sn->inst[i].ttft_sum_s, &sn->inst[i].ttft_count);
	dbk_sim_token_gaps(s, i, &sn->inst[i].itl_sum_s, &sn->inst[i].itl_count);

	struct dbk_engine_stats st;

	dbk_engine_get_stats(e, &st);
	sn->inst[i].step_tokens = (double)st.prompt_tokens_total +
	                          (double)st.generation_tokens_total - (double)st.prefix_cache_hits;
	sn->inst[i].steps = (double)st.steps_total;
}

void dbk_sim_snapshot_scrape(struct dbk_sim_snapshot *sn, const struct dbk_sim *s)
{
	for (unsigned i = 0; i < sn->n; i++)
		dbk_sim_snapshot_scrape_one(sn, s, i);
	sn->scrapes++;
}

unsigned dbk_sim_snapshot_phase(unsigned i, unsigned phases)
{
	double f = (double)i * 0.6180339887498949;

	return (unsigned)((f - (double)(uint64_t)f) * phases);
}

const struct dbk_sim_scrape *dbk_sim_snapshot_get(const struct dbk_sim_snapshot *sn, unsigned i)
{
	return &sn->inst[i];
}
