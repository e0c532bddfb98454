/* What a vLLM (or SGLang) server says about itself, the parsing half of
 * the scraper: its Prometheus text /metrics (exposition format 0.0.4, or
 * OpenMetrics) and its OpenAI /v1/models list (vllm_models.c). Pure:
 * (buffer, length) in, a filled struct or a one-line reason out; no
 * I/O, no globals, no NUL terminator needed, so each can be fed
 * arbitrary bytes (fuzzed).
 *
 * /metrics: only the families the routing policy reads (metric_names.h)
 * are kept; every other family, every comment and every HELP/TYPE line
 * is skipped, but every sample line of a family read must be well formed
 * (name, optional {labels} with quoted, escaped values, a value, an
 * optional timestamp, an optional exemplar): a malformed line fails the
 * whole scrape, since a body we misread is worse than one we do not use. Values may be NaN, +Inf or -Inf; a
 * family whose value is not finite counts as not reported.
 *
 * Only families read are judged: a sample line of any other family is
 * skipped once its name is read (it cannot reach into the next line),
 * which is what keeps a huge body of foreign families cheap; more than
 * DBK_VM_MAX_SERIES samples of the families read fail the scrape. The
 * OpenMetrics text (what a vLLM with exemplars on serves) is read too:
 * float timestamps, exemplars (# {labels} value [ts]), # EOF, # UNIT,
 * _created series.
 *
 * One vLLM process can run several engines (data parallel) of one
 * model, each sample labelled engine="N": counts (running, waiting,
 * prefix-cache queries and hits, preemptions, the first-token
 * histogram's sum and count, prompt and generated tokens, steps, GPU
 * blocks) are summed
 * over all label sets; the KV-cache use is the mean over the label sets
 * that report it (engines of one server are the same size); the block
 * size is the largest reported; an engine asleep (vLLM's sleep mode) is
 * counted. Older vLLM names (gpu_cache_usage_perc,
 * gpu_prefix_cache_queries/hits) are read as the current ones, and
 * SGLang's as vLLM's (metric_names.h). */
#ifndef DBK_VLLM_METRICS_H
#define DBK_VLLM_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include "metric_names.h"

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
	DBK_VM_SLEEP = 1u << 10,       /* vllm:engine_sleep_state{sleep_state="awake"} */
	DBK_VM_PC_HIT_RATE = 1u << 11, /* V0's vllm:gpu_prefix_cache_hit_rate */
	DBK_VM_LORA = 1u << 12,        /* vllm:lora_requests_info */
	DBK_VM_PROMPT_TOKENS = 1u << 13,
	DBK_VM_GEN_TOKENS = 1u << 14,
	DBK_VM_STEPS = 1u << 15,
	DBK_VM_ITL_SUM = 1u << 16,
	DBK_VM_ITL_COUNT = 1u << 17, /* the highest bit: keep it so */
};

/* vllm:lora_requests_info (vLLM's --enable-lora): a gauge whose labels
 * are the state and whose value is when it was set. vLLM's
 * PrometheusStatLogger (vllm-project/vllm, vllm/v1/metrics/loggers.py
 * at commit 005a810bc40faa25b8870fbc8559c3462581eee3: __init__ and
 * record) sets, after every engine step, the label set
 * {max_lora, waiting_lora_adapters, running_lora_adapters} (the names of
 * the adapters with waiting and with running requests, comma-joined) to
 * the current time; prometheus_client keeps every label set ever set,
 * so the page holds one sample per state seen, and the latest (largest
 * value) is the current one. Bounded: more than DBK_VM_LORA_MAX names in
 * a list, a list longer than DBK_VM_LORA_TEXT - 1 bytes, an empty name
 * or a max_lora that is not 1..DBK_VM_MAX_LORA make the family bad (the
 * scrape implausible). */
#define DBK_VM_LORA_MAX 32
#define DBK_VM_LORA_TEXT 1024
#define DBK_VM_MAX_LORA 4096

struct dbk_vm_lora {
	double max_lora;                /* GPU slots (vLLM's --max-loras) */
	double set_at;                  /* the latest sample's value (unix seconds) */
	char running[DBK_VM_LORA_TEXT]; /* comma-joined adapter names */
	char waiting[DBK_VM_LORA_TEXT]; /* comma-joined adapter names */
	unsigned nrunning, nwaiting;    /* names in each */
};

struct dbk_vllm_metrics {
	unsigned have;             /* DBK_VM_* bits */
	double running;            /* requests in the running batch */
	double waiting;            /* requests queued */
	double kv_usage;           /* KV-cache use, 0..1 */
	double pc_queries;         /* prefix-cache queries, in tokens (counter) */
	double pc_hits;            /* prefix-cache hits, in tokens (counter) */
	double preemptions;        /* counter */
	double ttft_sum;           /* seconds to first token, summed (counter) */
	double ttft_count;         /* first tokens served (counter) */
	double gpu_blocks;         /* KV-cache capacity, in blocks (SGLang: tokens) */
	double block_size;         /* tokens per block (SGLang: 1) */
	double pc_hit_rate;        /* prefix-cache hit rate, 0..1 (vLLM V0, SGLang) */
	double prompt_tokens;      /* prompt tokens, each request's at its first token (counter) */
	double gen_tokens;         /* tokens generated (counter) */
	double steps;              /* engine steps (counter) */
	double itl_sum;            /* seconds between tokens after the first, summed (counter) */
	double itl_count;          /* those gaps (counter) */
	enum dbk_vm_engine engine; /* whose names the request counts were */
	unsigned asleep;           /* engines whose sleep_state="awake" sample is 0 */
	unsigned bad;              /* DBK_VM_* bits: a sample no number of the family can
	                     * be (infinite; blocks not a positive count) */
	unsigned samples;          /* sample lines read, of any family */
	struct dbk_vm_lora lora;   /* with DBK_VM_LORA */
};

/* Longest sample line looked at. vLLM's are under 300 bytes. */
#define DBK_VM_MAX_LINE 8192

/* Samples of the families read, at most, in one body: one engine has
 * about 15, a server of 64 data-parallel engines about 1,000. More is a
 * hostile body (100k label sets), refused before it costs the loop. */
#define DBK_VM_MAX_SERIES 4096

/* Parses a whole /metrics body, reading the families names says.
 * Returns 0, -1 with "line N: why" in err, or -2 (the same) when over
 * DBK_VM_MAX_SERIES; out is then zeroed. An empty body is valid (have ==
 * 0). */
int dbk_vm_parse_metrics(const struct dbk_vm_names *names, const char *buf, size_t len,
                         struct dbk_vllm_metrics *out, char *err, size_t errlen);
/* The same with dbk_vm_names_default (vLLM's and SGLang's names). */
int dbk_vllm_parse_metrics(const char *buf, size_t len, struct dbk_vllm_metrics *out, char *err,
                           size_t errlen);

/* Requests, running or waiting, beyond any engine's: a server that
 * reports more is broken or hostile. */
#define DBK_VM_MAX_REQUESTS 1e7
/* Counters (tokens, seconds, preemptions) beyond any engine's life. */
#define DBK_VM_MAX_COUNTER 1e15
/* KV-cache blocks of a server, and tokens per block. */
#define DBK_VM_MAX_BLOCKS 1e9

/* Why parsed numbers cannot be a real engine's, or NULL: neither request
 * count (some other exporter's page), a number outside its documented
 * range (a ratio outside 0..1, such as a KV use of 85 on a 0-100 scale;
 * a negative or huge count; an infinity), an impossible KV capacity.
 * The format allows them, and the routing policy would believe them:
 * such a scrape counts as failed. The reason may be written into buf
 * (buflen bytes, 96 are enough). */
const char *dbk_vllm_metrics_implausible(const struct dbk_vllm_metrics *m, char *buf,
                                         size_t buflen);

/* The i-th name (i < count) of a comma-joined list of adapters: its
 * start, and its length in *len; NULL past the end. */
const char *dbk_vm_lora_name(const char *list, unsigned i, size_t *len);
/* The key an adapter's name is known by to the predictor (predict.h's
 * dbk_pred_request.adapter): never 0, which is no adapter. */
uint64_t dbk_vm_adapter_key(const void *name, size_t len);

/* What a server's /v1/models lists: its models, base models and LoRA
 * adapters (an adapter names its base model in "parent", as vLLM lists
 * them). Bounded: a list longer, or an id longer, is refused whole (the
 * server's models are then not known, and it stays a candidate for
 * every model: models.h). */
#define DBK_VM_MAX_MODELS 64
#define DBK_VM_MODEL_ID_MAX 255

struct dbk_vm_model {
	char id[DBK_VM_MODEL_ID_MAX + 1];
	char parent[DBK_VM_MODEL_ID_MAX + 1]; /* "": a base model */
};

struct dbk_vm_models {
	long max_len; /* the smallest max_model_len listed; 0: none states one */
	unsigned n;
	struct dbk_vm_model m[DBK_VM_MAX_MODELS];
};

/* Parses a /v1/models body ({"object":"list","data":[{"id":...,
 * "max_model_len":N, "parent":...},...]}): every model's id and parent,
 * and the smallest max_model_len of its models (a request must fit
 * whichever model it names). Returns 0 with out filled, or -1 with err
 * (out->n and out->max_len 0) when the body is not such a list, a model
 * has no string id (or an empty one), an id or parent
 * is longer than DBK_VM_MODEL_ID_MAX, there are more than
 * DBK_VM_MAX_MODELS, or a length is not a positive integer. */
int dbk_vllm_parse_models(const char *buf, size_t len, struct dbk_vm_models *out, char *err,
                          size_t errlen);

#endif
