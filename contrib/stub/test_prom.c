/* Unit tests of the /metrics text (prom.c). fixtures/vllm-metrics.prom is
 * what vLLM's PrometheusStatLogger (vllm/v1/metrics/loggers.py at
 * 005a810; the inter-token family and the deprecated help of the
 * time-per-output-token one as of v0.11) exposes for one engine through
 * prometheus_client's generate_latest, written out from those two
 * sources for the values below: the stub must match it byte for byte. */
#include "prom.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"

static char *read_fixture(const char *name, size_t *n)
{
	const char *slash = strrchr(__FILE__, '/');
	size_t dl = slash ? (size_t)(slash - __FILE__) + 1 : 0;
	char path[512];
	char *buf = malloc(1 << 16);
	FILE *f;

	snprintf(path, sizeof(path), "%.*sfixtures/%s", (int)dl, __FILE__, name);
	f = fopen(path, "rb");
	if (!f || !buf) {
		fprintf(stderr, "  cannot open %s: %s\n", path, strerror(errno));
		if (f)
			fclose(f);
		free(buf);
		return NULL;
	}
	*n = fread(buf, 1, (1 << 16) - 1, f);
	buf[*n] = 0;
	fclose(f);
	return buf;
}

static void test_float_format(void)
{
	static const struct {
		double v;
		const char *s;
	} cases[] = {
		{ 0, "0.0" },
		{ 3, "3.0" },
		{ 0.25, "0.25" },
		{ 0.1, "0.1" },
		{ 1e-05, "1e-05" },
		{ 0.0001, "0.0001" },
		{ 123456, "123456.0" },
		{ 1234567, "1.234567e+06" },
		{ 10000000, "1e+07" },
		{ 1764547200.5, "1.7645472005e+09" },
		{ 2560, "2560.0" },
		{ 1e16, "1e+16" },
		{ 1.5e300, "1.5e+300" },
		{ -2.5, "-2.5" },
		{ 1.0 / 0.0, "+Inf" },
		{ 1.0 / 3, "0.3333333333333333" },
	};
	char out[40];
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		dbk_prom_float(out, sizeof(out), cases[i].v);
		if (strcmp(out, cases[i].s) != 0) {
			fprintf(stderr, "  %.17g printed %s, want %s\n", cases[i].v, out,
			        cases[i].s);
			dbk_check_cur_failed++;
		}
	}
}

static void test_histogram_le_inclusive(void)
{
	struct dbk_prom_outcomes o;
	struct dbk_prom_histogram *h = &o.ttft;

	dbk_prom_outcomes_init(&o, 131072);
	dbk_prom_observe(h, 0.001);
	dbk_prom_observe(h, 0.0011);
	dbk_prom_observe(h, 5000);
	CHECK_EQ_U(h->counts[0], 1);
	CHECK_EQ_U(h->counts[1], 1);
	CHECK_EQ_U(h->count, 3);
	CHECK(h->sum > 5000.002 && h->sum < 5000.0022);
}

/* The buckets of loggers.py: 22 first-token bounds, 19 inter-token, 21
 * end-to-end; the token counts' build_1_2_5_buckets(max_model_len). */
static void test_outcome_buckets(void)
{
	struct dbk_prom_outcomes o;

	dbk_prom_outcomes_init(&o, 131072);
	CHECK_EQ_U(o.ttft.n_bounds, 22);
	CHECK(o.ttft.bounds[0] == 0.001 && o.ttft.bounds[21] == 2560.0);
	CHECK_EQ_U(o.itl.n_bounds, 19);
	CHECK(o.itl.bounds[0] == 0.01 && o.itl.bounds[18] == 80.0);
	CHECK_EQ_U(o.e2e.n_bounds, 21);
	CHECK(o.e2e.bounds[0] == 0.3 && o.e2e.bounds[20] == 7680.0);
	/* 1, 2, 5, ..., 50000, 100000: 16 bounds up to 131072. */
	CHECK_EQ_U(o.prompt_tokens.n_bounds, 16);
	CHECK(o.prompt_tokens.bounds[2] == 5 && o.prompt_tokens.bounds[15] == 100000);
	CHECK_EQ_U(o.generation_tokens.n_bounds, 16);
	/* build_1_2_5_buckets(100) is [1, 2, 5, 10, 20, 50, 100] (its
	 * docstring); the stub's smallest context is 2. */
	dbk_prom_outcomes_init(&o, 100);
	CHECK_EQ_U(o.prompt_tokens.n_bounds, 7);
	CHECK(o.prompt_tokens.bounds[6] == 100);
	dbk_prom_outcomes_init(&o, 2);
	CHECK_EQ_U(o.prompt_tokens.n_bounds, 2);
	dbk_prom_outcomes_init(&o, 1u << 24);
	CHECK_EQ_U(o.prompt_tokens.n_bounds, 22);
	CHECK(o.prompt_tokens.bounds[21] == 1e7);
}

static void test_matches_vllm_fixture(void)
{
	struct dbk_prom_outcomes o;
	struct dbk_prom_stats m;
	struct dbk_buf b = { 0 };
	size_t n = 0, i;
	char *want = read_fixture("vllm-metrics.prom", &n);

	/* Three requests: first tokens at 0.25, 0.5 and 3 s; gaps of 10 ms
	 * (the first bound, le inclusive), 12 ms and 0.25 s; whole
	 * requests of 0.3, 2 and 9000 s (past the last bound); prompts of
	 * 1, 1000 and 131072 tokens (past 100000), outputs of 16 twice and
	 * 2. */
	dbk_prom_outcomes_init(&o, 131072);
	dbk_prom_observe(&o.ttft, 0.25);
	dbk_prom_observe(&o.ttft, 0.5);
	dbk_prom_observe(&o.ttft, 3.0);
	dbk_prom_observe(&o.itl, 0.01);
	dbk_prom_observe(&o.itl, 0.012);
	dbk_prom_observe(&o.itl, 0.25);
	dbk_prom_observe(&o.e2e, 0.3);
	dbk_prom_observe(&o.e2e, 2.0);
	dbk_prom_observe(&o.e2e, 9000.0);
	dbk_prom_observe(&o.prompt_tokens, 1);
	dbk_prom_observe(&o.prompt_tokens, 1000);
	dbk_prom_observe(&o.prompt_tokens, 131072);
	dbk_prom_observe(&o.generation_tokens, 16);
	dbk_prom_observe(&o.generation_tokens, 16);
	dbk_prom_observe(&o.generation_tokens, 2);
	/* Three steps: decodes alone, a full 8192-token step, and one that
	 * gave a long prompt its first token (counted whole, past the last
	 * bound). */
	dbk_prom_observe(&o.iteration_tokens, 3);
	dbk_prom_observe(&o.iteration_tokens, 8192);
	dbk_prom_observe(&o.iteration_tokens, 20000);
	memset(&m, 0, sizeof(m));
	m.model = "stub-model";
	m.created = 1764547200.5;
	m.running = 3;
	m.waiting = 4;
	m.kv_usage = 0.25;
	m.prefix_cache_queries = 1000;
	m.prefix_cache_hits = 250;
	m.preemptions = 2;
	m.prompt_tokens = 1234567;
	m.generation_tokens = 12000;
	m.success_length = 40;
	m.success_abort = 1;
	m.out = &o;
	m.block_size = 16;
	m.num_gpu_blocks = 26875;
	m.enable_prefix_caching = true;
	dbk_prom_render(&b, &m);
	CHECK(want != NULL && !b.oom);
	if (want && b.p) {
		CHECK_EQ_U(b.len, n);
		for (i = 0; i < n && i < b.len && want[i] == b.p[i]; i++)
			;
		if (i < n || i < b.len) {
			fprintf(stderr, "  differs at byte %zu: got \"%.60s\"\n", i,
			        b.p + (i < b.len ? i : b.len));
			dbk_check_cur_failed++;
		}
	}
	/* Label values are escaped. */
	m.model = "a\"b\\c";
	dbk_buf_reset(&b);
	dbk_prom_render(&b, &m);
	CHECK(strstr(b.p, "model_name=\"a\\\"b\\\\c\"}") != NULL);
	free(want);
	dbk_buf_free(&b);
}

/* --engine-names sglang: SGLang's names for the same numbers, each
 * family once, the pool in tokens and the hit rate hits / prompt tokens. */
static void test_sglang_names(void)
{
	static const char *const lines[] = {
		"sglang:num_running_reqs{engine=\"0\",model_name=\"m\"} 3.0\n",
		"sglang:num_queue_reqs{engine=\"0\",model_name=\"m\"} 4.0\n",
		"sglang:token_usage{engine=\"0\",model_name=\"m\"} 0.25\n",
		"sglang:cache_hit_rate{engine=\"0\",model_name=\"m\"} 0.25\n",
		"sglang:max_total_num_tokens{engine=\"0\",model_name=\"m\"} 430000.0\n",
		"sglang:num_retracted_requests_total{engine=\"0\",model_name=\"m\"} 2.0\n",
		"sglang:prompt_tokens_total{engine=\"0\",model_name=\"m\"} 1000.0\n",
		"sglang:cached_tokens_total{engine=\"0\",model_name=\"m\"} 250.0\n",
		"sglang:time_to_first_token_seconds_count{engine=\"0\",model_name=\"m\"} 0.0\n",
	};
	struct dbk_prom_outcomes o;
	struct dbk_prom_stats m;
	struct dbk_buf b = { 0 };

	dbk_prom_outcomes_init(&o, 131072);
	memset(&m, 0, sizeof(m));
	m.out = &o;
	m.model = "m";
	m.running = 3;
	m.waiting = 4;
	m.kv_usage = 0.25;
	m.prompt_tokens = 1000;
	m.prefix_cache_hits = 250;
	m.preemptions = 2;
	m.block_size = 16;
	m.num_gpu_blocks = 26875;
	dbk_prom_render_sglang(&b, &m);
	CHECK(!b.oom && b.p);
	for (size_t i = 0; b.p && i < sizeof(lines) / sizeof(lines[0]); i++) {
		const char *at = strstr(b.p, lines[i]);

		if (!at || strstr(at + 1, lines[i]))
			fprintf(stderr, "  not once: %s", lines[i]);
		CHECK(at && !strstr(at + 1, lines[i]));
	}
	CHECK(b.p && strstr(b.p, "vllm:") == NULL);
	dbk_buf_free(&b);
}

int main(void)
{
	RUN(test_float_format);
	RUN(test_histogram_le_inclusive);
	RUN(test_outcome_buckets);
	RUN(test_matches_vllm_fixture);
	RUN(test_sglang_names);
	return CHECK_DONE();
}
