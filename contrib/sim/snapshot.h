/* What a router knows of each vLLM instance from scraping its /metrics:
 * the gauges as they were at the last scrape, not as they are now.
 *
 * Routers that read backend numbers (llm-d's endpoint picker every 50 ms,
 * the vLLM Router's load monitor every 5 s) see values up to one scrape
 * interval old. A policy owning a snapshot scrapes it from its tick
 * (policy.h: tick, tick_s), which the simulator runs as events in model
 * time, so the staleness is the real one: between two ticks the engines
 * move on and the snapshot does not. The values scraped are those the
 * stub's /metrics exposes under vLLM's names (in parentheses below), read
 * through the engine's public statistics, never its internals. */
#ifndef DBK_SIM_SNAPSHOT_H
#define DBK_SIM_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>

struct dbk_sim;

struct dbk_sim_scrape {
	double at_s;      /* model time of the scrape; -1: never */
	uint32_t running; /* vllm:num_requests_running */
	uint32_t waiting; /* vllm:num_requests_waiting */
	double kv_usage;  /* vllm:kv_cache_usage_perc, 0..1 */
	/* vllm:time_to_first_token_seconds' _sum and _count */
	double ttft_sum_s;
	uint64_t ttft_count;
	/* vllm:inter_token_latency_seconds' _sum and _count */
	double itl_sum_s;
	uint64_t itl_count;
	/* The work its steps did: tokens computed (vllm:prompt_tokens_total
	 * + generation_tokens_total - prefix_cache_hits_total) and steps
	 * (vllm:iteration_tokens_total_count). */
	double step_tokens, steps;
};

struct dbk_sim_snapshot {
	unsigned n;
	struct dbk_sim_scrape *inst;
	uint64_t scrapes;
};

/* Every instance "never scraped": zero gauges. 0, or -1 (memory). */
int dbk_sim_snapshot_init(struct dbk_sim_snapshot *sn, unsigned n);
void dbk_sim_snapshot_free(struct dbk_sim_snapshot *sn);
/* Records one instance's gauges as scraped at time at_s. */
void dbk_sim_snapshot_set(struct dbk_sim_snapshot *sn, unsigned i, double at_s, uint32_t running,
                          uint32_t waiting, double kv_usage);
/* Scrapes instance i of s now (a router that polls each instance on its
 * own timer). */
void dbk_sim_snapshot_scrape_one(struct dbk_sim_snapshot *sn, const struct dbk_sim *s, unsigned i);
/* Scrapes every instance of s now (what a tick does). */
void dbk_sim_snapshot_scrape(struct dbk_sim_snapshot *sn, const struct dbk_sim *s);
/* Which of phases equal parts of its interval a router that polls each
 * pod on its own timer (llm-d: one collector per pod, started when the
 * pod joins) scrapes pod i in: frac(i x the golden ratio), so the pods
 * spread over the interval. */
unsigned dbk_sim_snapshot_phase(unsigned i, unsigned phases);
const struct dbk_sim_scrape *dbk_sim_snapshot_get(const struct dbk_sim_snapshot *sn, unsigned i);

#endif
