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
		.sent_ms = v->sent_ms,
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
		.itl_sum_s = have(m, DBK_VM_ITL_SUM, m->itl_sum),
		.itl_count = have(m, DBK_VM_ITL_COUNT, m->itl_count),
		.step_tokens = -1,
		.steps = -1,
	};
	/* A prefix cache that reports no hits holds none. */
	if ((m->have & DBK_VM_PROMPT_TOKENS) && (m->have & DBK_VM_GEN_TOKENS) &&
	    (m->have & DBK_VM_STEPS)) {
		s.step_tokens = m->prompt_tokens + m->gen_tokens -
		                ((m->have & DBK_VM_PC_HITS) ? m->pc_hits : 0);
		s.steps = m->steps;
	}
	if (m->have & DBK_VM_LORA)
		dbk_policy_feed_lora(&m->lora, &s);
	p->ops->scraped(p->st, server, &s, dbk_mono_ms());
}

_Static_assert(DBK_PRED_LORA_MAX >= DBK_VM_LORA_MAX, "a scrape's running adapters fit");

/* Adds key to s's adapters unless there; false when full. */
static bool add_key(struct dbk_pred_scrape *s, uint64_t key)
{
	for (unsigned i = 0; i < s->nlora; i++)
		if (s->lora[i] == key)
			return true;
	if (s->nlora == DBK_PRED_LORA_MAX)
		return false;
	s->lora[s->nlora++] = key;
	return true;
}

void dbk_policy_feed_lora(const struct dbk_vm_lora *l, struct dbk_pred_scrape *s)
{
	const char *lists[2] = { l->running, l->waiting };
	size_t len;
	const char *n;

	s->max_lora = l->max_lora;
	s->nlora = 0;
	/* Running ones first: an adapter running and waiting holds a slot. */
	for (unsigned k = 0; k < 2; k++) {
		for (unsigned i = 0; (n = dbk_vm_lora_name(lists[k], i, &len)) != NULL; i++)
			if (!add_key(s, dbk_vm_adapter_key(n, len)))
				break;
		if (k == 0)
			s->nlora_running = s->nlora;
	}
}
