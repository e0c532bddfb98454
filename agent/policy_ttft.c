#include "policy_ttft.h"

#include <inttypes.h>
#include <string.h>

#include "lib/clock.h"
#include "prom_text.h"

/* The ticket route.c committed, back from the lease that carried it. */
static struct dbk_pred_ticket ticket_of(const struct dbk_bal_lease *l)
{
	struct dbk_pred_ticket t = {
		.server = l->server,
		.prompt_tokens = l->tag[0],
		.kv_tokens = l->tag[1],
		.ctx_tokens = l->tag[2],
		.sent_ms = l->start_ms,
	};

	return t;
}

static void on_ended(void *arg, const struct dbk_bal_lease *l)
{
	struct dbk_pred_ticket t = ticket_of(l);

	dbk_pred_release(arg, &t, dbk_mono_ms());
}

static void on_moved(void *arg, const struct dbk_bal_lease *before, unsigned server)
{
	struct dbk_pred_ticket t = ticket_of(before);

	dbk_pred_move(arg, &t, server, dbk_mono_ms());
}

static void on_usable(void *arg, unsigned server, bool usable)
{
	dbk_pred_set_state(arg, server, usable ? DBK_PRED_UP : DBK_PRED_DOWN);
}

struct dbk_pred *dbk_policy_ttft_new(struct dbk_balancer *bal, double engine_speed)
{
	struct dbk_pred_config c;
	unsigned n = dbk_bal_config(bal)->nservers;
	struct dbk_pred *p;

	dbk_pred_config_default(&c, n);
	c.t_cpu_s /= engine_speed;
	c.t_weights_s /= engine_speed;
	c.lin_tokens_per_s *= engine_speed;
	c.attn_flops *= engine_speed;
	c.kv_read_bw *= engine_speed;
	p = dbk_pred_new(&c);
	if (!p)
		return NULL;
	for (unsigned i = 0; i < n; i++)
		if (!dbk_bal_usable(bal, i))
			dbk_pred_set_state(p, i, DBK_PRED_DOWN);
	struct dbk_bal_observer o = { on_ended, on_moved, on_usable, p };
	dbk_bal_observe(bal, &o);
	return p;
}

void dbk_policy_ttft_free(struct dbk_pred *p, struct dbk_balancer *bal)
{
	if (bal)
		dbk_bal_observe(bal, NULL);
	dbk_pred_free(p);
}

static double have(const struct dbk_vllm_metrics *m, unsigned bit, double v)
{
	return (m->have & bit) ? v : -1.0;
}

void dbk_policy_scraped(void *pred, unsigned server, const struct dbk_scrape_view *v, bool metrics)
{
	const struct dbk_vllm_metrics *m = &v->m;

	if (!metrics) {
		dbk_pred_set_max_model_len(pred, server,
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
	dbk_pred_scraped(pred, server, &s, dbk_mono_ms());
}

void dbk_policy_report_state(const struct dbk_pred *p, const char *const *srv, unsigned n,
                             uint64_t now_ms, struct dbk_buf *o)
{
	dbk_buf_printf(o, "  \"ttft\": [\n");
	for (unsigned i = 0; i < n; i++) {
		struct dbk_pred_view v;

		dbk_pred_view(p, i, now_ms, &v);
		dbk_buf_printf(o,
		               "    {\"name\": \"%s\", \"inflight\": %u, \"prefilling\": %u, "
		               "\"queue_s\": %.6g, \"kv_committed\": %.17g, \"kv_capacity\": "
		               "%.17g, "
		               "\"others\": %.17g, \"scraped\": %s, \"max_model_len\": %" PRIu32
		               ", \"hit_ratio\": %.6g, \"slowness\": %.6g}%s\n",
		               srv[i], v.inflight, v.prefilling, v.queue_s, v.kv_committed,
		               v.kv_capacity, v.others, v.scraped ? "true" : "false",
		               v.max_model_len, v.hit_ratio, v.slowness, i + 1 < n ? "," : "");
	}
	dbk_buf_printf(o, "  ],\n");
}

void dbk_policy_report_metrics(const struct dbk_pred *p, const char *const *srv, unsigned n,
                               uint64_t now_ms, struct dbk_buf *o)
{
	static const struct {
		const char *name, *help;
	} series[] = {
		{ "dbucket_ttft_queue_seconds", "Predicted prefill queued ahead of a newcomer." },
		{ "dbucket_ttft_kv_committed_tokens", "KV tokens committed (books and scraped)." },
		{ "dbucket_ttft_scraped",
		  "Whether fresh scraped numbers are in use (0: books only)." },
		{ "dbucket_ttft_slowness", "How much slower than the fleet the server serves first "
		                           "tokens (1: as the fleet)." },
	};

	for (unsigned k = 0; k < sizeof(series) / sizeof(series[0]); k++) {
		dbk_prom_head(o, series[k].name, "gauge", series[k].help);
		for (unsigned i = 0; i < n; i++) {
			struct dbk_pred_view v;

			dbk_pred_view(p, i, now_ms, &v);
			double x = k == 0   ? v.queue_s
			           : k == 1 ? v.kv_committed
			           : k == 2 ? (v.scraped ? 1 : 0)
			                    : v.slowness;
			dbk_buf_printf(o, "%s{server=\"%s\"} %.17g\n", series[k].name, srv[i], x);
		}
	}
}
