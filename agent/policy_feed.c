#include "policy_feed.h"

#include <stdint.h>

#include "lib/clock.h"

static void on_ended(void *arg, const struct dbk_bal_lease *l)
{
	const struct dbk_policy *p = arg;

	p->ops->release(p->st, l, dbk_mono_ms());
}

static void on_moved(void *arg, const struct dbk_bal_lease *before, unsigned server)
{
	const struct dbk_policy *p = arg;

	p->ops->move(p->st, before, server, dbk_mono_ms());
}

static void on_usable(void *arg, unsigned server, bool usable)
{
	const struct dbk_policy *p = arg;

	p->ops->usable(p->st, server, usable);
}

void dbk_policy_attach(struct dbk_policy *p, struct dbk_balancer *bal)
{
	const struct dbk_policy_ops *ops = p->ops;

	if (ops->usable)
		for (unsigned i = 0; i < dbk_bal_config(bal)->nservers; i++)
			if (!dbk_bal_usable(bal, i))
				ops->usable(p->st, i, false);
	struct dbk_bal_observer o = { ops->release ? on_ended : NULL, ops->move ? on_moved : NULL,
		                      ops->usable ? on_usable : NULL, p };
	dbk_bal_observe(bal, &o);
}

void dbk_policy_detach(struct dbk_balancer *bal)
{
	if (bal)
		dbk_bal_observe(bal, NULL);
}

static double have(const struct dbk_vllm_metrics *m, unsigned bit, double v)
{
	return (m->have & bit) ? v : -1.0;
}

void dbk_policy_scrape_done(void *policy, unsigned server, const struct dbk_scrape_view *v,
                            bool metrics)
{
	const struct dbk_policy *p = policy;
	const struct dbk_vllm_metrics *m = &v->m;

	if (!metrics) {
		if (p->ops->max_model_len)
			p->ops->max_model_len(p->st, server,
			                      v->max_model_len > 0 && v->max_model_len <= UINT32_MAX
			                              ? (uint32_t)v->max_model_len
			                              : 0);
		return;
	}
	struct dbk_pred_scrape s = {
		.ok = v->up,
		.running = have(m, DBK_VM_RUNNING, m->running),
		.waiting = have(m, DBK_VM_WAITING, m->waiting),
		.kv_usage = have(m, DBK_VM_KV_USAGE, m->kv_usage),
		.kv_capacity_tokens = (m->have & DBK_VM_GPU_BLOCKS) && (m->have & DBK_VM_BLOCK_SIZE)
		                              ? m->gpu_blocks * m->block_size
		                              : -1.0,
		.prefix_queries = have(m, DBK_VM_PC_QUERIES, m->pc_queries),
		.prefix_hits = have(m, DBK_VM_PC_HITS, m->pc_hits),
		.ttft_sum_s = have(m, DBK_VM_TTFT_SUM, m->ttft_sum),
		.ttft_count = have(m, DBK_VM_TTFT_COUNT, m->ttft_count),
	};
	p->ops->scraped(p->st, server, &s, dbk_mono_ms());
}
