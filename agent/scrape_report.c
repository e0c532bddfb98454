/* Renders what the scraper knows: per server, whether its scrapes work,
 * how old its numbers are, and the numbers themselves, for Prometheus
 * (/metrics) and people (/state). One table lists the scraped numbers,
 * so both renderings name the same ones. */
#include <inttypes.h>
#include <stddef.h>

#include "prom_text.h"
#include "scrape.h"

static const struct series {
	const char *prom; /* dbucket_vllm_<prom> */
	const char *json;
	const char *type;
	const char *help;
	unsigned bit; /* DBK_VM_*: present only when scraped */
	size_t off;   /* double in struct dbk_vllm_metrics */
} series[] = {
	{ "requests_running", "running", "gauge", "Requests in the server's running batch.",
	  DBK_VM_RUNNING, offsetof(struct dbk_vllm_metrics, running) },
	{ "requests_waiting", "waiting", "gauge", "Requests queued on the server.", DBK_VM_WAITING,
	  offsetof(struct dbk_vllm_metrics, waiting) },
	{ "kv_cache_usage_ratio", "kv_usage", "gauge", "The server's KV-cache use, 0 to 1.",
	  DBK_VM_KV_USAGE, offsetof(struct dbk_vllm_metrics, kv_usage) },
	{ "prefix_cache_queries_total", "prefix_queries", "counter",
	  "Prefix-cache queries on the server, in tokens.", DBK_VM_PC_QUERIES,
	  offsetof(struct dbk_vllm_metrics, pc_queries) },
	{ "prefix_cache_hits_total", "prefix_hits", "counter",
	  "Prefix-cache hits on the server, in tokens.", DBK_VM_PC_HITS,
	  offsetof(struct dbk_vllm_metrics, pc_hits) },
	{ "preemptions_total", "preemptions", "counter", "Preemptions on the server.",
	  DBK_VM_PREEMPTIONS, offsetof(struct dbk_vllm_metrics, preemptions) },
	{ "first_token_seconds_total", "ttft_sum", "counter",
	  "Seconds to first token on the server, summed over its requests.", DBK_VM_TTFT_SUM,
	  offsetof(struct dbk_vllm_metrics, ttft_sum) },
	{ "first_tokens_total", "ttft_count", "counter", "First tokens the server has sent.",
	  DBK_VM_TTFT_COUNT, offsetof(struct dbk_vllm_metrics, ttft_count) },
	{ "prefix_cache_hit_ratio", "prefix_hit_rate", "gauge",
	  "The server's prefix-cache hit rate, 0 to 1 (vLLM V0's gauge).", DBK_VM_PC_HIT_RATE,
	  offsetof(struct dbk_vllm_metrics, pc_hit_rate) },
	{ "gpu_blocks", "gpu_blocks", "gauge", "The server's KV-cache capacity, in blocks.",
	  DBK_VM_GPU_BLOCKS, offsetof(struct dbk_vllm_metrics, gpu_blocks) },
	{ "block_size", "block_size", "gauge", "Tokens per KV-cache block.", DBK_VM_BLOCK_SIZE,
	  offsetof(struct dbk_vllm_metrics, block_size) },
};
#define NSERIES (sizeof(series) / sizeof(series[0]))

static double field(const struct dbk_vllm_metrics *m, size_t off)
{
	return *(const double *)(const void *)((const char *)m + off);
}

static void per_server_u64(const struct dbk_scrape *s, struct dbk_buf *o, const char *name,
                           const char *type, const char *help, size_t off)
{
	dbk_prom_head(o, name, type, help);
	for (unsigned i = 0; i < dbk_scrape_count(s); i++) {
		const struct dbk_scrape_view *v = dbk_scrape_view(s, i);

		if (v->scraped)
			dbk_buf_printf(o, "%s{server=\"%s\"} %" PRIu64 "\n", name,
			               dbk_scrape_name(s, i),
			               *(const uint64_t *)(const void *)((const char *)v + off));
	}
}

void dbk_scrape_report_metrics(const struct dbk_scrape *s, uint64_t now_ms, struct dbk_buf *o)
{
	unsigned n = dbk_scrape_count(s);

	dbk_prom_head(o, "dbucket_scrape_up", "gauge",
	              "Whether the last scrape of the server's /metrics succeeded "
	              "(0: routing on the agent's books alone).");
	for (unsigned i = 0; i < n; i++)
		if (dbk_scrape_view(s, i)->scraped)
			dbk_buf_printf(o, "dbucket_scrape_up{server=\"%s\"} %d\n",
			               dbk_scrape_name(s, i), dbk_scrape_view(s, i)->up ? 1 : 0);
	dbk_prom_head(o, "dbucket_scrape_down", "gauge",
	              "1 for a server whose last scrape failed, labelled with why: transport, "
	              "status, body-too-large, too-many-series (both backed off), malformed, "
	              "implausible (a number outside its documented range), tls (https: "
	              "handshake or certificate; backed off).");
	for (unsigned i = 0; i < n; i++) {
		const struct dbk_scrape_view *v = dbk_scrape_view(s, i);

		if (v->scraped && !v->up && v->scrapes)
			dbk_buf_printf(o, "dbucket_scrape_down{server=\"%s\",reason=\"%s\"} 1\n",
			               dbk_scrape_name(s, i), dbk_scrape_cause_name(v->cause));
	}
	per_server_u64(s, o, "dbucket_scrapes_total", "counter",
	               "Scrapes of the server's /metrics finished.",
	               offsetof(struct dbk_scrape_view, scrapes));
	per_server_u64(s, o, "dbucket_scrape_failures_total", "counter",
	               "Scrapes of the server's /metrics that failed.",
	               offsetof(struct dbk_scrape_view, failures));
	per_server_u64(s, o, "dbucket_scrape_models_failures_total", "counter",
	               "Scrapes of the server's /v1/models that failed.",
	               offsetof(struct dbk_scrape_view, models_failures));
	dbk_prom_head(o, "dbucket_scrape_age_seconds", "gauge",
	              "Time since the server's last good scrape (absent before the first).");
	for (unsigned i = 0; i < n; i++) {
		const struct dbk_scrape_view *v = dbk_scrape_view(s, i);

		if (v->scraped && v->ok_ms)
			dbk_buf_printf(o, "dbucket_scrape_age_seconds{server=\"%s\"} %.3f\n",
			               dbk_scrape_name(s, i), (double)(now_ms - v->ok_ms) / 1000.0);
	}
	dbk_prom_head(o, "dbucket_vllm_max_model_len", "gauge",
	              "The server's context limit (/v1/models).");
	for (unsigned i = 0; i < n; i++)
		if (dbk_scrape_view(s, i)->max_model_len)
			dbk_buf_printf(o, "dbucket_vllm_max_model_len{server=\"%s\"} %ld\n",
			               dbk_scrape_name(s, i), dbk_scrape_view(s, i)->max_model_len);
	for (size_t k = 0; k < NSERIES; k++) {
		const struct series *x = &series[k];

		dbk_buf_printf(o, "# HELP dbucket_vllm_%s %s\n# TYPE dbucket_vllm_%s %s\n", x->prom,
		               x->help, x->prom, x->type);
		for (unsigned i = 0; i < n; i++) {
			const struct dbk_scrape_view *v = dbk_scrape_view(s, i);

			if (v->m.have & x->bit)
				dbk_buf_printf(o, "dbucket_vllm_%s{server=\"%s\"} %.17g\n", x->prom,
				               dbk_scrape_name(s, i), field(&v->m, x->off));
		}
	}
}

void dbk_scrape_report_state(const struct dbk_scrape *s, uint64_t now_ms, struct dbk_buf *o)
{
	unsigned n = dbk_scrape_count(s);

	dbk_buf_printf(o,
	               "  \"scrape\": {\"interval_ms\": %ld, \"timeout_ms\": %ld, \"servers\": [\n",
	               dbk_scrape_config(s)->interval_ms, dbk_scrape_config(s)->timeout_ms);
	const char *sep = "";

	for (unsigned i = 0; i < n; i++) {
		const struct dbk_scrape_view *v = dbk_scrape_view(s, i);

		if (!dbk_scrape_name(s, i)[0])
			continue; /* a free slot (agent.h) */
		dbk_buf_printf(
		        o,
		        "%s    {\"name\": \"%s\", \"url\": \"%s\", \"up\": %s, \"fresh\": %s, "
		        "\"scrapes\": %" PRIu64 ", \"failures\": %" PRIu64,
		        sep, dbk_scrape_name(s, i), dbk_scrape_url(s, i), v->up ? "true" : "false",
		        dbk_scrape_fresh(s, i, now_ms) ? "true" : "false", v->scrapes, v->failures);
		if (v->ok_ms)
			dbk_buf_printf(o, ", \"age_ms\": %" PRIu64, now_ms - v->ok_ms);
		if (!v->up && v->scrapes)
			dbk_buf_printf(o, ", \"down_reason\": \"%s\"",
			               dbk_scrape_cause_name(v->cause));
		if (v->backoff_ms)
			dbk_buf_printf(o, ", \"backoff_ms\": %" PRIu64, v->backoff_ms);
		if (v->m.engine)
			dbk_buf_printf(o, ", \"engine\": \"%s\"", dbk_vm_engine_name(v->m.engine));
		if (v->max_model_len)
			dbk_buf_printf(o, ", \"max_model_len\": %ld", v->max_model_len);
		for (size_t k = 0; k < NSERIES; k++)
			if (v->m.have & series[k].bit)
				dbk_buf_printf(o, ", \"%s\": %.17g", series[k].json,
				               field(&v->m, series[k].off));
		dbk_buf_printf(o, "}");
		sep = ",\n";
	}
	dbk_buf_printf(o, "%s  ]},\n", *sep ? "\n" : "");
}
