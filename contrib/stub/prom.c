/* vLLM's /metrics text; see prom.h. Written by hand: no Debian C library
 * renders prometheus_client's exact text (its float format is Python's
 * repr), and the point is to match it byte for byte. */
#include "prom.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* vllm/v1/metrics/loggers.py (vllm-project/vllm at 005a810; the
 * inter-token buckets are v0.11's, the same as time_per_output_token's
 * at 005a810). */
static const double ttft_bounds[] = {
	0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1,  0.25,  0.5,   0.75,
	1.0,   2.5,   5.0,  7.5,  10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0,
};
static const double itl_bounds[] = {
	0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2,  0.3,  0.4,  0.5,
	0.75, 1.0,   2.5,  5.0,   7.5, 10.0, 20.0, 40.0, 80.0,
};
static const double e2e_bounds[] = {
	0.3,  0.5,  0.8,  1.0,  1.5,   2.0,   2.5,   5.0,   10.0,   15.0,   20.0,
	30.0, 40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0,
};

/* Its fixed buckets (loggers.py, PrometheusStatLogger.__init__). */
static const double iteration_bounds[] = {
	1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384,
};

static void set_bounds(struct dbk_prom_histogram *h, const double *b, size_t n)
{
	memset(h, 0, sizeof(*h));
	memcpy(h->bounds, b, n * sizeof(*b));
	h->n_bounds = n;
}

/* build_1_2_5_buckets(max): 1, 2, 5 times each power of ten, while at
 * most max. */
static void set_1_2_5(struct dbk_prom_histogram *h, double max)
{
	static const double m[] = { 1, 2, 5 };

	memset(h, 0, sizeof(*h));
	for (double p = 1; h->n_bounds < DBK_PROM_MAX_BUCKETS; p *= 10)
		for (size_t i = 0; i < 3; i++) {
			if (m[i] * p > max || h->n_bounds == DBK_PROM_MAX_BUCKETS)
				return;
			h->bounds[h->n_bounds++] = m[i] * p;
		}
}

void dbk_prom_outcomes_init(struct dbk_prom_outcomes *o, uint32_t max_model_len)
{
	set_bounds(&o->ttft, ttft_bounds, sizeof(ttft_bounds) / sizeof(ttft_bounds[0]));
	set_bounds(&o->itl, itl_bounds, sizeof(itl_bounds) / sizeof(itl_bounds[0]));
	set_bounds(&o->e2e, e2e_bounds, sizeof(e2e_bounds) / sizeof(e2e_bounds[0]));
	set_1_2_5(&o->prompt_tokens, max_model_len);
	set_1_2_5(&o->generation_tokens, max_model_len);
	set_bounds(&o->iteration_tokens, iteration_bounds,
	           sizeof(iteration_bounds) / sizeof(iteration_bounds[0]));
}

void dbk_prom_observe(struct dbk_prom_histogram *h, double v)
{
	for (size_t i = 0; i < h->n_bounds; i++)
		if (v <= h->bounds[i]) {
			h->counts[i]++;
			break;
		}
	h->count++;
	h->sum += v;
}

/* Shortest decimal digits that read back as v (v finite, > 0), and the
 * exponent x of the first digit: v = d.ddd x 10^x. */
static int shortest(double v, char *dig, int *x)
{
	char s[40];
	int p, n = 0;
	char *e;

	for (p = 0; p < 17; p++) {
		snprintf(s, sizeof(s), "%.*e", p, v);
		if (strtod(s, NULL) == v)
			break;
	}
	for (e = s; *e && *e != 'e'; e++)
		if (*e >= '0' && *e <= '9')
			dig[n++] = *e;
	while (n > 1 && dig[n - 1] == '0')
		n--;
	dig[n] = 0;
	*x = atoi(e + 1);
	return n;
}

/* Python's repr of a positive finite float. */
static void py_repr(char *out, size_t cap, double v)
{
	char dig[24], s[64];
	int x, n = shortest(v, dig, &x), i;
	size_t k = 0;

	if (x < -4 || x >= 16) {
		k += (size_t)snprintf(s + k, sizeof(s) - k, "%c", dig[0]);
		if (n > 1)
			k += (size_t)snprintf(s + k, sizeof(s) - k, ".%s", dig + 1);
		snprintf(s + k, sizeof(s) - k, "e%c%02d", x < 0 ? '-' : '+', abs(x));
	} else if (x < 0) {
		s[k++] = '0';
		s[k++] = '.';
		for (i = 0; i < -x - 1; i++)
			s[k++] = '0';
		snprintf(s + k, sizeof(s) - k, "%s", dig);
	} else {
		for (i = 0; i <= x; i++)
			s[k++] = i < n ? dig[i] : '0';
		s[k++] = '.';
		if (n > x + 1)
			k += (size_t)snprintf(s + k, sizeof(s) - k, "%s", dig + x + 1);
		else
			s[k++] = '0';
		s[k] = 0;
	}
	snprintf(out, cap, "%s", s);
}

void dbk_prom_float(char *out, size_t n, double v)
{
	char s[64], m[64];
	const char *dot;
	size_t k, d;

	if (isnan(v)) {
		snprintf(out, n, "NaN");
		return;
	}
	if (isinf(v)) {
		snprintf(out, n, v > 0 ? "+Inf" : "-Inf");
		return;
	}
	if (v == 0) {
		snprintf(out, n, "%s", signbit(v) ? "-0.0" : "0.0");
		return;
	}
	if (v < 0) {
		py_repr(s + 1, sizeof(s) - 1, -v);
		s[0] = '-';
		snprintf(out, n, "%s", s);
		return;
	}
	py_repr(s, sizeof(s), v);
	dot = strchr(s, '.');
	d = dot ? (size_t)(dot - s) : 0;
	if (!dot || d <= 6) {
		snprintf(out, n, "%s", s);
		return;
	}
	/* Go switches to an exponent sooner than Python: mantissa of all
	 * digits, trailing zeros and point dropped. */
	k = (size_t)snprintf(m, sizeof(m), "%c.%.*s%s", s[0], (int)(d - 1), s + 1, dot + 1);
	while (k > 0 && (m[k - 1] == '0' || m[k - 1] == '.'))
		m[--k] = 0;
	snprintf(out, n, "%se+0%zu", m, d - 1);
}

/* ---- Families. ---- */

static void label_value(struct dbk_buf *b, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			dbk_buf_printf(b, "\\%c", *s);
		else if (*s == '\n')
			dbk_buf_adds(b, "\\n");
		else
			dbk_buf_add(b, s, 1);
	}
}

/* {engine="0",[extra,]model_name="..."}: labels in name order; extra is
 * a pre-rendered label that sorts between the two (le, finished_reason). */
static void labels(struct dbk_buf *b, const char *model, const char *extra)
{
	dbk_buf_adds(b, "{engine=\"0\",");
	if (extra) {
		dbk_buf_adds(b, extra);
		dbk_buf_adds(b, ",");
	}
	dbk_buf_adds(b, "model_name=\"");
	label_value(b, model);
	dbk_buf_adds(b, "\"}");
}

static void sample(struct dbk_buf *b, const char *name, const char *model, const char *extra,
                   double v)
{
	char f[40];

	dbk_prom_float(f, sizeof(f), v);
	dbk_buf_adds(b, name);
	labels(b, model, extra);
	dbk_buf_printf(b, " %s\n", f);
}

static void head(struct dbk_buf *b, const char *name, const char *type, const char *help)
{
	dbk_buf_printf(b, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void gauge(struct dbk_buf *b, const struct dbk_prom_stats *m, const char *name,
                  const char *help, double v)
{
	head(b, name, "gauge", help);
	sample(b, name, m->model, NULL, v);
}

static void created(struct dbk_buf *b, const struct dbk_prom_stats *m, const char *base,
                    const char *help)
{
	char name[96];

	snprintf(name, sizeof(name), "%s_created", base);
	head(b, name, "gauge", help);
	sample(b, name, m->model, NULL, m->created);
}

static void counter(struct dbk_buf *b, const struct dbk_prom_stats *m, const char *base,
                    const char *help, double v)
{
	char name[96];

	snprintf(name, sizeof(name), "%s_total", base);
	head(b, name, "counter", help);
	sample(b, name, m->model, NULL, v);
	created(b, m, base, help);
}

static void request_success(struct dbk_buf *b, const struct dbk_prom_stats *m)
{
	static const char help[] = "Count of successfully processed requests.";
	static const char *reason[] = { "stop", "length", "abort" };
	double v[3] = { 0, (double)m->success_length, (double)m->success_abort };
	char extra[48];
	size_t i;

	head(b, "vllm:request_success_total", "counter", help);
	for (i = 0; i < 3; i++) {
		snprintf(extra, sizeof(extra), "finished_reason=\"%s\"", reason[i]);
		sample(b, "vllm:request_success_total", m->model, extra, v[i]);
	}
	head(b, "vllm:request_success_created", "gauge", help);
	for (i = 0; i < 3; i++) {
		snprintf(extra, sizeof(extra), "finished_reason=\"%s\"", reason[i]);
		sample(b, "vllm:request_success_created", m->model, extra, m->created);
	}
}

/* A histogram family: cumulative buckets, +Inf, count, sum, then its
 * _created gauge. */
static void histogram(struct dbk_buf *b, const struct dbk_prom_stats *m, const char *name,
                      const char *help, const struct dbk_prom_histogram *h)
{
	char extra[48], f[40], sname[96];
	uint64_t cum = 0;

	head(b, name, "histogram", help);
	snprintf(sname, sizeof(sname), "%s_bucket", name);
	for (size_t i = 0; i <= h->n_bounds; i++) {
		if (i < h->n_bounds) {
			cum += h->counts[i];
			dbk_prom_float(f, sizeof(f), h->bounds[i]);
		} else {
			cum = h->count;
			snprintf(f, sizeof(f), "+Inf");
		}
		snprintf(extra, sizeof(extra), "le=\"%s\"", f);
		sample(b, sname, m->model, extra, (double)cum);
	}
	snprintf(sname, sizeof(sname), "%s_count", name);
	sample(b, sname, m->model, NULL, (double)h->count);
	snprintf(sname, sizeof(sname), "%s_sum", name);
	sample(b, sname, m->model, NULL, h->sum);
	created(b, m, name, help);
}

static const char ttft_help[] = "Histogram of time to first token in seconds.";

/* The request histograms, in loggers.py's order of registration (the
 * order prometheus_client prints them in); the families vLLM has and the
 * stub does not (max tokens and n, queue, prefill, decode and inference
 * times) are left out. */
static void outcomes(struct dbk_buf *b, const struct dbk_prom_stats *m)
{
	const struct dbk_prom_outcomes *o = m->out;

	histogram(b, m, "vllm:request_prompt_tokens", "Number of prefill tokens processed.",
	          &o->prompt_tokens);
	histogram(b, m, "vllm:request_generation_tokens", "Number of generation tokens processed.",
	          &o->generation_tokens);
	histogram(b, m, "vllm:iteration_tokens_total",
	          "Histogram of number of tokens per engine_step.", &o->iteration_tokens);
	histogram(b, m, "vllm:time_to_first_token_seconds", ttft_help, &o->ttft);
	/* v0.11's help, its two literals joined without a space. */
	histogram(b, m, "vllm:time_per_output_token_seconds",
	          "Histogram of time per output token in seconds.DEPRECATED: Use "
	          "vllm:inter_token_latency_seconds instead.",
	          &o->itl);
	histogram(b, m, "vllm:inter_token_latency_seconds",
	          "Histogram of inter-token latency in seconds.", &o->itl);
	histogram(b, m, "vllm:e2e_request_latency_seconds",
	          "Histogram of e2e request latency in seconds.", &o->e2e);
}

static void cache_config_info(struct dbk_buf *b, const struct dbk_prom_stats *m)
{
	head(b, "vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig");
	/* A subset of CacheConfig's fields (all of them are labels in
	 * vLLM), in name order as prometheus_client sorts them. */
	dbk_buf_printf(b,
	               "vllm:cache_config_info{block_size=\"%u\","
	               "cache_dtype=\"auto\",enable_prefix_caching=\"%s\","
	               "engine=\"0\",gpu_memory_utilization=\"0.9\","
	               "num_gpu_blocks=\"%llu\"} 1.0\n",
	               m->block_size, m->enable_prefix_caching ? "True" : "False",
	               (unsigned long long)m->num_gpu_blocks);
}

/* vllm:engine_sleep_state (newer loggers.py than the rest: vLLM's sleep
 * mode): one sample per state, sleep_state last in label order. */
static void sleep_state(struct dbk_buf *b, const struct dbk_prom_stats *m)
{
	static const char *const state[] = { "awake", "weights_offloaded", "discard_all" };
	const bool on[] = { m->sleep_level == 0, m->sleep_level == 1, m->sleep_level == 2 };

	head(b, "vllm:engine_sleep_state", "gauge",
	     "Engine sleep state; awake = 0 means engine is sleeping; awake = 1 means engine is "
	     "awake; weights_offloaded = 1 means sleep level 1; discard_all = 1 means sleep "
	     "level 2.");
	for (size_t i = 0; i < 3; i++) {
		dbk_buf_adds(b, "vllm:engine_sleep_state{engine=\"0\",model_name=\"");
		label_value(b, m->model);
		dbk_buf_printf(b, "\",sleep_state=\"%s\"} %s\n", state[i], on[i] ? "1.0" : "0.0");
	}
}

/* vllm:lora_requests_info, registered last in PrometheusStatLogger's
 * __init__ (after the histograms): no engine or model_name label, every
 * label set it was ever given (prometheus_client keeps them), each with
 * the wall-clock time it was last set; a reader takes the latest. */
static void lora_info(struct dbk_buf *b, const struct dbk_prom_stats *m)
{
	char f[40];

	head(b, "vllm:lora_requests_info", "gauge", "Running stats on lora requests.");
	for (size_t i = 0; i < m->n_lora_sets; i++) {
		const struct dbk_prom_lora_set *s = &m->lora_sets[i];

		dbk_prom_float(f, sizeof(f), s->ts);
		dbk_buf_printf(b,
		               "vllm:lora_requests_info{max_lora=\"%u\",running_lora_adapters=\"",
		               m->max_lora);
		label_value(b, s->running);
		dbk_buf_adds(b, "\",waiting_lora_adapters=\"");
		label_value(b, s->waiting);
		dbk_buf_printf(b, "\"} %s\n", f);
	}
}

/* The stub's own counters (not vLLM's), after vLLM's families. */
static void lora_stub_counters(struct dbk_buf *b, const struct dbk_prom_stats *m)
{
	const struct {
		const char *name, *help;
		uint64_t v;
	} c[] = {
		{ "vllm_stub_lora_loads_total",
		  "The stub's own: LoRA adapters read into the CPU cache.", m->lora_loads },
		{ "vllm_stub_lora_activations_total",
		  "The stub's own: LoRA adapters copied into a GPU slot.", m->lora_activations },
		{ "vllm_stub_lora_slot_evictions_total",
		  "The stub's own: LoRA adapters evicted from a GPU slot.",
		  m->lora_slot_evictions },
		{ "vllm_stub_lora_cpu_evictions_total",
		  "The stub's own: LoRA adapters evicted from the CPU cache.",
		  m->lora_cpu_evictions },
	};
	char f[40];

	for (size_t i = 0; i < sizeof(c) / sizeof(c[0]); i++) {
		dbk_prom_float(f, sizeof(f), (double)c[i].v);
		head(b, c[i].name, "counter", c[i].help);
		dbk_buf_printf(b, "%s %s\n", c[i].name, f);
	}
}

void dbk_prom_render(struct dbk_buf *b, const struct dbk_prom_stats *m)
{
	/* The plain families, in the order prometheus_client prints them. */
	const struct {
		void (*emit)(struct dbk_buf *, const struct dbk_prom_stats *, const char *,
		             const char *, double);
		const char *name, *help;
		double v;
	} fams[] = {
		{ gauge, "vllm:num_requests_running",
		  "Number of requests in model execution batches.", m->running },
		{ gauge, "vllm:num_requests_waiting", "Number of requests waiting to be processed.",
		  m->waiting },
		{ gauge, "vllm:kv_cache_usage_perc", "KV-cache usage. 1 means 100 percent usage.",
		  m->kv_usage },
		{ counter, "vllm:prefix_cache_queries",
		  "Prefix cache queries, in terms of number of queried tokens.",
		  (double)m->prefix_cache_queries },
		{ counter, "vllm:prefix_cache_hits",
		  "Prefix cache hits, in terms of number of cached tokens.",
		  (double)m->prefix_cache_hits },
		{ counter, "vllm:num_preemptions",
		  "Cumulative number of preemption from the engine.", (double)m->preemptions },
		{ counter, "vllm:prompt_tokens", "Number of prefill tokens processed.",
		  (double)m->prompt_tokens },
		{ counter, "vllm:generation_tokens", "Number of generation tokens processed.",
		  (double)m->generation_tokens },
	};

	for (size_t i = 0; i < sizeof(fams) / sizeof(fams[0]); i++) {
		fams[i].emit(b, m, fams[i].name, fams[i].help, fams[i].v);
		if (i == 1) /* after the scheduler's two, as loggers.py */
			sleep_state(b, m);
	}
	request_success(b, m);
	outcomes(b, m);
	if (m->lora)
		lora_info(b, m);
	cache_config_info(b, m);
	if (m->lora)
		lora_stub_counters(b, m);
}

void dbk_prom_render_sglang(struct dbk_buf *b, const struct dbk_prom_stats *m)
{
	double queries = (double)m->prompt_tokens, hits = (double)m->prefix_cache_hits;

	gauge(b, m, "sglang:num_running_reqs", "The number of running requests.", m->running);
	gauge(b, m, "sglang:token_usage", "The token usage.", m->kv_usage);
	gauge(b, m, "sglang:num_queue_reqs", "The number of requests in the waiting queue.",
	      m->waiting);
	gauge(b, m, "sglang:cache_hit_rate", "The prefix cache hit rate.",
	      queries > 0 && hits <= queries ? hits / queries : 0);
	gauge(b, m, "sglang:max_total_num_tokens",
	      "Maximum total number of tokens in the KV cache pool.",
	      (double)m->num_gpu_blocks * m->block_size);
	counter(b, m, "sglang:num_retracted_requests", "Total number of retracted requests.",
	        (double)m->preemptions);
	counter(b, m, "sglang:prompt_tokens", "Number of prefill tokens processed.", queries);
	counter(b, m, "sglang:generation_tokens", "Number of generation tokens processed.",
	        (double)m->generation_tokens);
	counter(b, m, "sglang:cached_tokens", "Number of cached prompt tokens.", hits);
	histogram(b, m, "sglang:time_to_first_token_seconds", ttft_help, &m->out->ttft);
}
