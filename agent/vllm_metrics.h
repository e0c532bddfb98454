/* What a vLLM server says about itself, the parsing half of the scraper:
 * its Prometheus text /metrics (exposition format 0.0.4) and its OpenAI
 * /v1/models list. Pure: (buffer, length) in, a filled struct or a
 * one-line reason out; no I/O, no globals, no NUL terminator needed, so
 * each can be fed arbitrary bytes (fuzzed).
 *
 * /metrics: only the families the routing policy reads are kept; every
 * other family, every comment and every HELP/TYPE line is skipped, but
 * every sample line must still be well formed (name, optional {labels}
 * with quoted, escaped values, a value, an optional integer timestamp):
 * a malformed line fails the whole scrape, since a body we misread is
 * worse than one we do not use. Values may be NaN, +Inf or -Inf; a
 * family whose value is not finite counts as not reported.
 *
 * One vLLM process can run several engines (data parallel) of one
 * model, each sample labelled engine="N": counts (running, waiting,
 * prefix-cache queries and hits, preemptions, the first-token
 * histogram's sum and count, GPU blocks) are summed
 * over all label sets; the KV-cache use is the mean over the label sets
 * that report it (engines of one server are the same size); the block
 * size is the largest reported; an engine asleep (vLLM's sleep mode) is
 * counted. Older vLLM names (gpu_cache_usage_perc,
 * gpu_prefix_cache_queries/hits) are read as the current ones. */
#ifndef DBK_VLLM_METRICS_H
#define DBK_VLLM_METRICS_H

#include <stddef.h>
#include <stdint.h>

/* Bits of dbk_vllm_metrics.have: the families seen with a finite value. */
enum {
	DBK_VM_RUNNING = 1u << 0,
	DBK_VM_WAITING = 1u << 1,
	DBK_VM_KV_USAGE = 1u << 2,
	DBK_VM_PC_QUERIES = 1u << 3,
	DBK_VM_PC_HITS = 1u << 4,
	DBK_VM_PREEMPTIONS = 1u << 5,
	DBK_VM_GPU_BLOCKS = 1u << 6,
	DBK_VM_BLOCK_SIZE = 1u << 7,
	DBK_VM_TTFT_SUM = 1u << 8,
	DBK_VM_TTFT_COUNT = 1u << 9,
	DBK_VM_SLEEP = 1u << 10, /* vllm:engine_sleep_state{sleep_state="awake"} */
};

struct dbk_vllm_metrics {
	unsigned have;      /* DBK_VM_* bits */
	double running;     /* requests in the running batch */
	double waiting;     /* requests queued */
	double kv_usage;    /* KV-cache use, 0..1 */
	double pc_queries;  /* prefix-cache queries, in tokens (counter) */
	double pc_hits;     /* prefix-cache hits, in tokens (counter) */
	double preemptions; /* counter */
	double ttft_sum;    /* seconds to first token, summed (counter) */
	double ttft_count;  /* first tokens served (counter) */
	double gpu_blocks;  /* KV-cache capacity, in blocks */
	double block_size;  /* tokens per block */
	unsigned asleep;    /* engines whose sleep_state="awake" sample is 0 */
	unsigned samples;   /* sample lines read, of any family */
};

/* Longest sample line looked at. vLLM's are under 300 bytes. */
#define DBK_VM_MAX_LINE 8192

/* Parses a whole /metrics body. Returns 0, or -1 with "line N: why" in
 * err (out is then zeroed). An empty body is valid (have == 0). */
int dbk_vllm_parse_metrics(const char *buf, size_t len, struct dbk_vllm_metrics *out, char *err,
                           size_t errlen);

/* Requests, running or waiting, beyond any engine's: a server that
 * reports more is broken or hostile. */
#define DBK_VM_MAX_REQUESTS 1e7

/* Why parsed numbers cannot be a real engine's, or NULL: neither request
 * count (some other exporter's page), a negative or huge one, an
 * impossible KV capacity. The format allows them, and they would turn
 * the routing policy's sums into infinities: such a scrape counts as
 * failed. */
const char *dbk_vllm_metrics_implausible(const struct dbk_vllm_metrics *m);

/* Writes into buf (cap bytes, NUL-terminated) the query that asks a
 * server for only the families read here: name[]=...&name[]=...,
 * percent-encoded. prometheus_client (vLLM's /metrics) serves just those
 * when it understands the parameter, and the whole body otherwise, which
 * parses the same. Returns the length, or 0 when cap is too small. */
size_t dbk_vllm_metrics_query(char *buf, size_t cap);

/* Parses a /v1/models body ({"object":"list","data":[{"id":...,
 * "max_model_len":N},...]}) and gives the smallest max_model_len of its
 * models (a request must fit whichever model it names; one server
 * usually serves one). Returns 0 with *max_len set, 0 with *max_len 0
 * when no model states a length, or -1 with err when the body is not
 * such a list or a length is not a positive integer. */
int dbk_vllm_parse_models(const char *buf, size_t len, long *max_len, char *err, size_t errlen);

#endif
