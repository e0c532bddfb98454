/* vLLM's /metrics and /v1/models parsers: the stub's fixture (the shape
 * of vLLM's own output), several engines, the older family names, what
 * the exposition format allows (comments, escapes, NaN, timestamps) and
 * what it does not (every malformed line fails the whole body), and the
 * well-formed numbers no engine reports. */
#include <stdlib.h>

#include "fixture.h"
#include "lib/buf.h"
#include "vllm_metrics.h"

static int parse(const char *s, struct dbk_vllm_metrics *m, char *err)
{
	return dbk_vllm_parse_metrics(s, strlen(s), m, err, 128);
}

static void test_stub_fixture(void)
{
	struct text f = repo_file("contrib/stub/fixtures/vllm-metrics.prom");
	struct dbk_vllm_metrics m;
	char err[128] = "";

	CHECK(dbk_vllm_parse_metrics(f.s, f.len, &m, err, sizeof(err)) == 0);
	text_free(&f);
	CHECK_EQ_U(m.have, 0x3e7ff);
	CHECK_EQ_U(m.asleep, 0);
	CHECK_NEAR(m.running, 3, 0);
	CHECK_NEAR(m.waiting, 4, 0);
	CHECK_NEAR(m.kv_usage, 0.25, 0);
	CHECK_NEAR(m.pc_queries, 1000, 0);
	CHECK_NEAR(m.pc_hits, 250, 0);
	CHECK_NEAR(m.preemptions, 2, 0);
	CHECK_NEAR(m.ttft_sum, 3.75, 0);
	CHECK_NEAR(m.ttft_count, 3, 0);
	CHECK_NEAR(m.gpu_blocks, 26875, 0);
	CHECK_NEAR(m.block_size, 16, 0);
	CHECK_NEAR(m.prompt_tokens, 1234567, 0);
	CHECK_NEAR(m.gen_tokens, 12000, 0);
	CHECK_NEAR(m.steps, 3, 0); /* the per-step histogram's count */
	CHECK_NEAR(m.itl_sum, 0.272, 0);
	CHECK_NEAR(m.itl_count, 3, 0);
	CHECK(m.samples > 40);
}

static void test_engines_sum_and_kv_is_the_mean(void)
{
	struct dbk_vllm_metrics m;
	char err[128];

	CHECK(parse("vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 2\n"
	            "vllm:num_requests_running{engine=\"1\",model_name=\"m\"} 5\n"
	            "vllm:kv_cache_usage_perc{engine=\"0\"} 0.2\n"
	            "vllm:kv_cache_usage_perc{engine=\"1\"} 0.6\n"
	            "vllm:cache_config_info{block_size=\"16\",engine=\"0\",num_gpu_blocks=\"100\"} "
	            "1\n"
	            "vllm:cache_config_info{block_size=\"32\",engine=\"1\",num_gpu_blocks=\"300\"} "
	            "1\n",
	            &m, err) == 0);
	CHECK_NEAR(m.running, 7, 0);
	CHECK_NEAR(m.kv_usage, 0.4, 1e-12);
	CHECK_NEAR(m.gpu_blocks, 400, 0);
	CHECK_NEAR(m.block_size, 32, 0);
	CHECK_EQ_U(m.have,
	           DBK_VM_RUNNING | DBK_VM_KV_USAGE | DBK_VM_GPU_BLOCKS | DBK_VM_BLOCK_SIZE);
}

/* The first-token histogram: its sum and count, summed over engines (a
 * mean over the server), its buckets not read. */
static void test_first_token_totals(void)
{
	struct dbk_vllm_metrics m;
	char err[128];

	CHECK(parse("vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.5\"} 9\n"
	            "vllm:time_to_first_token_seconds_sum{engine=\"0\"} 2.5\n"
	            "vllm:time_to_first_token_seconds_count{engine=\"0\"} 10\n"
	            "vllm:time_to_first_token_seconds_sum{engine=\"1\"} 7.5\n"
	            "vllm:time_to_first_token_seconds_count{engine=\"1\"} 10\n"
	            "vllm:time_to_first_token_seconds_created{engine=\"1\"} 1.7e9\n",
	            &m, err) == 0);
	CHECK_NEAR(m.ttft_sum, 10, 0);
	CHECK_NEAR(m.ttft_count, 20, 0);
	CHECK_EQ_U(m.have, DBK_VM_TTFT_SUM | DBK_VM_TTFT_COUNT);
}

/* The inter-token histogram's totals, summed over engines; the name
 * before it (time_per_output_token_seconds, fed the same in v0.11)
 * only where the new one is not exported. */
static void test_token_gap_totals(void)
{
	struct dbk_vllm_metrics m;
	char err[128];

	CHECK(parse("vllm:inter_token_latency_seconds_bucket{engine=\"0\",le=\"0.05\"} 90\n"
	            "vllm:inter_token_latency_seconds_sum{engine=\"0\"} 3.5\n"
	            "vllm:inter_token_latency_seconds_count{engine=\"0\"} 100\n"
	            "vllm:inter_token_latency_seconds_sum{engine=\"1\"} 4.5\n"
	            "vllm:inter_token_latency_seconds_count{engine=\"1\"} 60\n"
	            "vllm:time_per_output_token_seconds_sum{engine=\"0\"} 3.5\n"
	            "vllm:time_per_output_token_seconds_count{engine=\"0\"} 100\n",
	            &m, err) == 0);
	CHECK_NEAR(m.itl_sum, 8, 0);
	CHECK_NEAR(m.itl_count, 160, 0);
	CHECK_EQ_U(m.have, DBK_VM_ITL_SUM | DBK_VM_ITL_COUNT);
	CHECK(parse("vllm:time_per_output_token_seconds_sum 2\n"
	            "vllm:time_per_output_token_seconds_count 40\n",
	            &m, err) == 0);
	CHECK_NEAR(m.itl_sum, 2, 0);
	CHECK_NEAR(m.itl_count, 40, 0);
}

static void test_old_names_count_only_without_new_ones(void)
{
	struct dbk_vllm_metrics m;
	char err[128];

	CHECK(parse("vllm:gpu_cache_usage_perc 0.5\n"
	            "vllm:gpu_prefix_cache_queries_total 10\n"
	            "vllm:gpu_prefix_cache_hits_total 4\n",
	            &m, err) == 0);
	CHECK_NEAR(m.kv_usage, 0.5, 0);
	CHECK_NEAR(m.pc_queries, 10, 0);
	CHECK_NEAR(m.pc_hits, 4, 0);
	/* Both spellings exported at once: the current one, not their sum. */
	CHECK(parse("vllm:prefix_cache_queries_total 10\n"
	            "vllm:gpu_prefix_cache_queries_total 10\n"
	            "vllm:gpu_cache_usage_perc 0.9\n"
	            "vllm:kv_cache_usage_perc 0.3\n",
	            &m, err) == 0);
	CHECK_NEAR(m.pc_queries, 10, 0);
	CHECK_NEAR(m.kv_usage, 0.3, 0);
}

static void test_what_the_format_allows(void)
{
	struct dbk_vllm_metrics m;
	char err[128] = "";

	CHECK(parse("# a comment\n"
	            "  # indented comment\n"
	            "\n"
	            "# TYPE other gauge\n"
	            "other_family{a=\"x\\\"}y\\\\\\n\",b=\"\"} NaN\n"
	            "other_family2 +Inf 1700000000000\n"
	            "other_family3{} -Inf\n"
	            "vllm:num_requests_waiting{engine=\"0\",} 1.5e1 -12\r\n"
	            "vllm:num_requests_running NaN\n"
	            "vllm:cache_config_info{num_gpu_blocks=\"None\",block_size=\"16\"} 1\n"
	            "vllm:num_preemptions_total\t3",
	            &m, err) == 0);
	CHECK(err[0] == '\0');
	CHECK_NEAR(m.waiting, 15, 0);
	/* NaN is not a number reported; None is not a block count. */
	CHECK(!(m.have & DBK_VM_RUNNING));
	CHECK(!(m.have & DBK_VM_GPU_BLOCKS));
	CHECK(m.have & DBK_VM_BLOCK_SIZE);
	CHECK_NEAR(m.preemptions, 3, 0);
	CHECK_EQ_U(m.samples, 7);
	CHECK(parse("", &m, err) == 0 && m.have == 0);
}

static void test_malformed_lines_fail_the_body(void)
{
	static const char *const bad[] = {
		"vllm:num_requests_running\n",       /* no value */
		"vllm:num_requests_running 1 2 3\n", /* trailing text */
		"vllm:num_requests_running 0x10\n",  /* hex */
		"vllm:num_requests_running nan(1)\n",
		"vllm:num_requests_running one\n",
		"vllm:num_requests_running 1 1.5.2\n",       /* bad timestamp */
		"vllm:num_requests_running 1 # 2\n",         /* exemplar without labels */
		"vllm:num_requests_running 1 # {a=\"b\"}\n", /* ... without a value */
		"vllm:num_requests_running 1 # {a=\"b\"} x\n",
		"vllm:num_requests_running 1 # {a=\"b\"} 1 2 3\n",
		"9metric 1\n",
		"vllm:num_requests_running{a=\"x} 1\n",     /* unterminated */
		"vllm:num_requests_running{a=\"\\t\"} 1\n", /* bad escape */
		"vllm:num_requests_running{a=x} 1\n",
		"vllm:num_requests_running{=\"x\"} 1\n",
		"vllm:num_requests_running{a=\"x\" b=\"y\"} 1\n",
		"vllm:num_requests_running{a=\"x\"\n",
		"{a=\"x\"} 1\n",
		"<html>\n",
		"ok 1\nvllm:num_requests_running{a=\"x\n\"} 1\n", /* newline inside a value */
	};
	struct dbk_vllm_metrics m;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char err[128] = "";
		int rc = parse(bad[i], &m, err);

		if (rc == 0)
			fprintf(stderr, "  accepted: %s", bad[i]);
		CHECK(rc == -1 && strncmp(err, "line ", 5) == 0);
		CHECK_EQ_U(m.have, 0);
	}
	char err[128];
	CHECK(parse("a 1\nb 2\nvllm:num_requests_waiting{x=\"1\"} oops\n", &m, err) == -1);
	CHECK(strncmp(err, "line 3:", 7) == 0);
}

static const char *implausible(const struct dbk_vllm_metrics *m)
{
	static char why[96];

	return dbk_vllm_metrics_implausible(m, why, sizeof(why));
}

static void test_long_line_is_refused(void)
{
	static char buf[DBK_VM_MAX_LINE + 64];
	struct dbk_vllm_metrics m;
	char err[128];

	memset(buf, 'a', sizeof(buf) - 3);
	memcpy(buf + sizeof(buf) - 3, " 1", 2);
	CHECK(dbk_vllm_parse_metrics(buf, sizeof(buf) - 1, &m, err, sizeof(err)) == -1);
}

static void test_models(void)
{
	struct text f = fixture("vllm-models.json");
	static struct dbk_vm_models ms;
	char err[128];

	CHECK(dbk_vllm_parse_models(f.s, f.len, &ms, err, sizeof(err)) == 0);
	text_free(&f);
	CHECK_EQ_U(ms.max_len, 32768);
	CHECK_EQ_U(ms.n, 1);
	CHECK(strcmp(ms.m[0].id, "stub-model") == 0);
	CHECK(strcmp(ms.m[0].parent, "") == 0);
	const char *two = "{\"data\":[{\"id\":\"a\",\"max_model_len\":8192},"
	                  "{\"id\":\"b\",\"max_model_len\":4096},{\"id\":\"c\"}]}";
	CHECK(dbk_vllm_parse_models(two, strlen(two), &ms, err, sizeof(err)) == 0);
	CHECK_EQ_U(ms.max_len, 4096);
	CHECK_EQ_U(ms.n, 3);
	CHECK(strcmp(ms.m[2].id, "c") == 0);
	const char *none = "{\"object\":\"list\",\"data\":[{\"id\":\"a\",\"max_model_len\":null}]}";
	CHECK(dbk_vllm_parse_models(none, strlen(none), &ms, err, sizeof(err)) == 0);
	CHECK_EQ_U(ms.max_len, 0);
	static const char *const bad[] = {
		"",
		"[]",
		"{\"data\":{}}",
		"{\"data\":[1]}",
		"{\"data\":[{\"id\":\"a\",\"max_model_len\":-5}]}",
		"{\"data\":[{\"id\":\"a\",\"max_model_len\":1.5}]}",
		"{\"data\":[{\"id\":\"a\",\"max_model_len\":\"4096\"}]}",
		"{\"data\":[{\"id\":\"a\",\"max_model_len\":4096}]",
		"{\"detail\":\"Not Found\"}",
		/* an id is a non-empty string; a parent an id or null */
		"{\"data\":[{\"max_model_len\":4096}]}",
		"{\"data\":[{\"id\":\"\"}]}",
		"{\"data\":[{\"id\":7}]}",
		"{\"data\":[{\"id\":\"a\",\"parent\":3}]}",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		ms.max_len = 7;
		CHECK(dbk_vllm_parse_models(bad[i], strlen(bad[i]), &ms, err, sizeof(err)) == -1);
		CHECK_EQ_U(ms.max_len, 0);
		CHECK_EQ_U(ms.n, 0);
	}
}

/* LoRA adapters as vLLM lists them (serving_models.py): their own id,
 * the base model's in parent, no max_model_len. */
static void test_models_adapters(void)
{
	struct text f = fixture("vllm-models-lora.json");
	static struct dbk_vm_models ms;
	char err[128];

	CHECK(dbk_vllm_parse_models(f.s, f.len, &ms, err, sizeof(err)) == 0);
	text_free(&f);
	CHECK_EQ_U(ms.n, 3);
	CHECK_EQ_U(ms.max_len, 8192);
	CHECK(strcmp(ms.m[0].id, "meta-llama/Llama-3.1-8B-Instruct") == 0);
	CHECK(strcmp(ms.m[0].parent, "") == 0);
	CHECK(strcmp(ms.m[1].id, "sql-lora") == 0);
	CHECK(strcmp(ms.m[1].parent, "meta-llama/Llama-3.1-8B-Instruct") == 0);
	CHECK(strcmp(ms.m[2].id, "chat-lora") == 0);

	/* Bounds: 64 models and 255-byte ids are kept, one more is refused. */
	struct dbk_buf b;
	dbk_buf_init(&b);
	dbk_buf_printf(&b, "{\"data\":[");
	for (unsigned i = 0; i < DBK_VM_MAX_MODELS; i++)
		dbk_buf_printf(&b, "%s{\"id\":\"m%u\"}", i ? "," : "", i);
	dbk_buf_printf(&b, "]}");
	CHECK(dbk_vllm_parse_models(b.p, b.len, &ms, err, sizeof(err)) == 0);
	CHECK_EQ_U(ms.n, DBK_VM_MAX_MODELS);
	b.len -= 2;
	dbk_buf_printf(&b, ",{\"id\":\"one-more\"}]}");
	CHECK(dbk_vllm_parse_models(b.p, b.len, &ms, err, sizeof(err)) == -1);
	b.len = 0;
	dbk_buf_printf(&b, "{\"data\":[{\"id\":\"%0*d\"}]}", DBK_VM_MODEL_ID_MAX, 0);
	CHECK(dbk_vllm_parse_models(b.p, b.len, &ms, err, sizeof(err)) == 0);
	CHECK_EQ_U(strlen(ms.m[0].id), DBK_VM_MODEL_ID_MAX);
	b.len = 0;
	dbk_buf_printf(&b, "{\"data\":[{\"id\":\"%0*d\"}]}", DBK_VM_MODEL_ID_MAX + 1, 0);
	CHECK(dbk_vllm_parse_models(b.p, b.len, &ms, err, sizeof(err)) == -1);
	dbk_buf_free(&b);
}

/* Numbers the format allows but no engine reports fail the scrape: they
 * would make the policy's sums infinite (a NaN first token, once). */
static void test_implausible_numbers(void)
{
	struct dbk_vllm_metrics m;
	char err[128];
	struct text f = repo_file("contrib/stub/fixtures/vllm-metrics.prom");

	CHECK(dbk_vllm_parse_metrics(f.s, f.len, &m, err, sizeof(err)) == 0);
	text_free(&f);
	CHECK(implausible(&m) == NULL);
	CHECK(parse("vllm:num_requests_running 1e308\n", &m, err) == 0);
	CHECK(implausible(&m) != NULL);
	CHECK(parse("vllm:num_requests_waiting -1\n", &m, err) == 0);
	CHECK(implausible(&m) != NULL);
	CHECK(parse("vllm:num_requests_running 10000000\nvllm:num_requests_waiting 0\n", &m, err) ==
	      0);
	CHECK(implausible(&m) == NULL);
	CHECK(parse("vllm:num_requests_running 10000001\n", &m, err) == 0);
	CHECK(implausible(&m) != NULL);
	CHECK(parse("vllm:num_requests_running 1\n"
	            "vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"1e300\"} 1\n",
	            &m, err) == 0);
	CHECK(implausible(&m) != NULL);
	/* Families not reported are not judged, but a page with neither
	 * request count is not vLLM's. */
	CHECK(parse("vllm:num_requests_waiting 3\n", &m, err) == 0);
	CHECK(implausible(&m) == NULL);
	CHECK(parse("", &m, err) == 0);
	CHECK(implausible(&m) != NULL);
	CHECK(parse("process_cpu_seconds_total 1\n", &m, err) == 0);
	CHECK(implausible(&m) != NULL);
}

/* Issue 29 item 4: every number read is judged against its documented
 * range, not only the request counts (main took a KV use of 85 or 1e308
 * as fine). */
static void test_every_number_has_a_range(void)
{
	static const char *const bad[] = {
		"vllm:kv_cache_usage_perc 85\n", /* a 0-100 scale: vLLM's is 0..1 */
		"vllm:kv_cache_usage_perc 1e308\n",
		"vllm:kv_cache_usage_perc -0.1\n",
		"vllm:gpu_cache_usage_perc 1.5\n", /* V0's name, the same range */
		"vllm:gpu_prefix_cache_hit_rate 2\n",
		"vllm:kv_cache_usage_perc +Inf\n",
		"vllm:num_preemptions_total -1\n",
		"vllm:num_preemptions_total 1e300\n",
		"vllm:prefix_cache_queries_total +Inf\n",
		"vllm:prefix_cache_hits_total -5\n",
		"vllm:time_to_first_token_seconds_sum -1\n",
		"vllm:time_to_first_token_seconds_count 1e20\n",
		"vllm:cache_config_info{block_size=\"0\",num_gpu_blocks=\"100\"} 1\n",
		"vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"-3\"} 1\n",
		"vllm:cache_config_info{block_size=\"16\",num_gpu_blocks=\"Inf\"} 1\n",
	};
	struct dbk_vllm_metrics m;
	char err[128], body[256];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		snprintf(body, sizeof(body), "vllm:num_requests_running 1\n%s", bad[i]);
		CHECK(parse(body, &m, err) == 0);
		if (!implausible(&m))
			fprintf(stderr, "  believed: %s", bad[i]);
		CHECK(implausible(&m) != NULL);
	}
	CHECK(parse("vllm:num_requests_running 1\nvllm:kv_cache_usage_perc 85\n", &m, err) == 0);
	CHECK(strstr(implausible(&m), "KV-cache use") != NULL);
	/* The edges are fine; NaN is "no value yet", not a wrong one. */
	CHECK(parse("vllm:num_requests_running 0\nvllm:kv_cache_usage_perc 1\n"
	            "vllm:gpu_prefix_cache_hit_rate 0\nvllm:num_preemptions_total NaN\n",
	            &m, err) == 0);
	CHECK(implausible(&m) == NULL);
	CHECK(!(m.have & DBK_VM_PREEMPTIONS));
}

/* vLLM V0's prefix-cache gauge is read (a 0..1 ratio, averaged over
 * engines). */
static void test_v0_hit_rate(void)
{
	struct dbk_vllm_metrics m;
	char err[128];

	CHECK(parse("vllm:num_requests_running{model_name=\"m\"} 2.0\n"
	            "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.5\n"
	            "vllm:gpu_prefix_cache_hit_rate{engine=\"0\"} 0.25\n"
	            "vllm:gpu_prefix_cache_hit_rate{engine=\"1\"} 0.75\n",
	            &m, err) == 0);
	CHECK(m.have & DBK_VM_PC_HIT_RATE);
	CHECK_NEAR(m.pc_hit_rate, 0.5, 1e-12);
	CHECK_NEAR(m.kv_usage, 0.5, 0);
}

/* What prometheus_client serves as application/openmetrics-text (a vLLM
 * with exemplars on): float timestamps, exemplars, _created, # UNIT and
 * # EOF. main refused it: "bad timestamp or trailing text". */
static void test_openmetrics(void)
{
	struct dbk_vllm_metrics m;
	char err[128] = "";
	const char *om =
	        "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
	        "# TYPE vllm:num_requests_running gauge\n"
	        "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 3.0\n"
	        "vllm:num_requests_waiting{engine=\"0\",model_name=\"m\"} 1.0 1700000000.123\n"
	        "# TYPE vllm:time_to_first_token_seconds histogram\n"
	        "# UNIT vllm:time_to_first_token_seconds seconds\n"
	        "vllm:time_to_first_token_seconds_bucket{engine=\"0\",le=\"0.1\"} 2.0 # "
	        "{trace_id=\"4bf92f3577b34da6\"} 0.05 1700000000.5\n"
	        "vllm:time_to_first_token_seconds_count{engine=\"0\"} 4.0\n"
	        "vllm:time_to_first_token_seconds_sum{engine=\"0\"} 1.5 # {trace_id=\"ab\"} 0.7\n"
	        "vllm:time_to_first_token_seconds_created{engine=\"0\"} 1.7e+09\n"
	        "vllm:num_preemptions_total{engine=\"0\"} 2.0\n"
	        "vllm:num_preemptions_created{engine=\"0\"} 1.7e+09\n"
	        "# EOF\n";

	CHECK(parse(om, &m, err) == 0);
	if (err[0])
		fprintf(stderr, "  %s\n", err);
	CHECK_NEAR(m.running, 3, 0);
	CHECK_NEAR(m.waiting, 1, 0);
	CHECK_NEAR(m.ttft_sum, 1.5, 0);
	CHECK_NEAR(m.ttft_count, 4, 0);
	CHECK_NEAR(m.preemptions, 2, 0);
}

/* Issue 29 item 3: a hostile body costs little. Families not read are
 * skipped at their name, however malformed the rest of their line; more
 * than DBK_VM_MAX_SERIES samples of the families read fail with -2. */
static void test_hostile_bodies(void)
{
	struct dbk_vllm_metrics m;
	char err[128];
	struct dbk_buf b;

	dbk_buf_init(&b);
	dbk_buf_printf(&b, "vllm:num_requests_running 1\n");
	for (unsigned i = 0; i < 20000; i++)
		dbk_buf_printf(&b, "junk_family_%u{a=\"x} not a number at all\n", i);
	CHECK(!b.oom && dbk_vllm_parse_metrics(b.p, b.len, &m, err, sizeof(err)) == 0);
	CHECK_NEAR(m.running, 1, 0);
	b.len = 0;
	for (unsigned i = 0; i <= DBK_VM_MAX_SERIES; i++)
		dbk_buf_printf(&b, "vllm:num_requests_running{engine=\"%u\"} 0\n", i);
	CHECK(!b.oom && dbk_vllm_parse_metrics(b.p, b.len, &m, err, sizeof(err)) == -2);
	CHECK(strstr(err, "too many series") != NULL);
	CHECK_EQ_U(m.have, 0);
	/* One fewer is a (very) data-parallel server. */
	CHECK(dbk_vllm_parse_metrics(b.p, b.len - strlen(strrchr(b.p, 'v')), &m, err,
	                             sizeof(err)) == 0);
	dbk_buf_free(&b);
}

/* SGLang's names (metric_names.h): read by default (auto) and with
 * --engine sglang, not with --engine vllm; the pool in tokens is blocks
 * of one. */
static void test_sglang_names(void)
{
	const char *body = "# HELP sglang:num_running_reqs The number of running requests.\n"
	                   "# TYPE sglang:num_running_reqs gauge\n"
	                   "sglang:num_running_reqs{model_name=\"m\",tp_rank=\"0\"} 5.0\n"
	                   "sglang:num_queue_reqs{model_name=\"m\",tp_rank=\"0\"} 2.0\n"
	                   "sglang:token_usage{model_name=\"m\",tp_rank=\"0\"} 0.4\n"
	                   "sglang:cache_hit_rate{model_name=\"m\",tp_rank=\"0\"} 0.25\n"
	                   "sglang:max_total_num_tokens{model_name=\"m\",tp_rank=\"0\"} 430000.0\n"
	                   "sglang:prompt_tokens_total{model_name=\"m\"} 1000.0\n"
	                   "sglang:cached_tokens_total{model_name=\"m\"} 250.0\n"
	                   "sglang:num_retracted_requests_total{model_name=\"m\"} 1.0\n"
	                   "sglang:time_to_first_token_seconds_sum{model_name=\"m\"} 3.0\n"
	                   "sglang:time_to_first_token_seconds_count{model_name=\"m\"} 6.0\n";
	struct dbk_vllm_metrics m;
	struct dbk_vm_names n;
	char err[128] = "";

	CHECK(parse(body, &m, err) == 0);
	CHECK(m.engine == DBK_ENGINE_SGLANG);
	CHECK_NEAR(m.running, 5, 0);
	CHECK_NEAR(m.waiting, 2, 0);
	CHECK_NEAR(m.kv_usage, 0.4, 0);
	CHECK_NEAR(m.pc_hit_rate, 0.25, 0);
	CHECK_NEAR(m.pc_queries, 1000, 0);
	CHECK_NEAR(m.pc_hits, 250, 0);
	CHECK_NEAR(m.preemptions, 1, 0);
	CHECK_NEAR(m.ttft_sum, 3, 0);
	CHECK_NEAR(m.ttft_count, 6, 0);
	CHECK_NEAR(m.gpu_blocks * m.block_size, 430000, 0);
	CHECK(implausible(&m) == NULL);
	dbk_vm_names_init(&n, DBK_ENGINE_SGLANG);
	CHECK(dbk_vm_parse_metrics(&n, body, strlen(body), &m, err, sizeof(err)) == 0);
	CHECK_NEAR(m.running, 5, 0);
	dbk_vm_names_init(&n, DBK_ENGINE_VLLM);
	CHECK(dbk_vm_parse_metrics(&n, body, strlen(body), &m, err, sizeof(err)) == 0);
	CHECK_EQ_U(m.have, 0);
	/* A vLLM's body under auto: vLLM's. */
	CHECK(parse("vllm:num_requests_running 1\n", &m, err) == 0);
	CHECK(m.engine == DBK_ENGINE_VLLM);
	/* SGLang's ratios are judged too. */
	CHECK(parse("sglang:num_running_reqs 1\nsglang:token_usage 40\n", &m, err) == 0);
	CHECK(implausible(&m) != NULL);
	/* SGLang's pool is a sample, not a label: 0 or less parses, and the
	 * scrape refuses it as implausible (the fuzzer found the pool of 0). */
	CHECK(parse("sglang:num_running_reqs 1\nsglang:max_total_num_tokens 0\n", &m, err) == 0);
	CHECK(m.have & DBK_VM_GPU_BLOCKS);
	CHECK(implausible(&m) != NULL);
	CHECK(parse("sglang:num_running_reqs 1\nsglang:max_total_num_tokens -5\n", &m, err) == 0);
	CHECK(implausible(&m) != NULL);
}

/* --metric KEY=NAME: the name replaces every engine's for the key. */
static void test_metric_override(void)
{
	struct dbk_vm_names n;
	struct dbk_vllm_metrics m;
	char err[160], q[2048];
	const char *body = "my_running{a=\"1\"} 3\nvllm:num_requests_running 7\n"
	                   "vllm:num_requests_waiting 1\n";

	dbk_vm_names_init(&n, DBK_ENGINE_AUTO);
	CHECK(dbk_vm_names_override(&n, "running=my_running", err, sizeof(err)) == 0);
	CHECK(dbk_vm_parse_metrics(&n, body, strlen(body), &m, err, sizeof(err)) == 0);
	CHECK_NEAR(m.running, 3, 0);
	CHECK_NEAR(m.waiting, 1, 0);
	CHECK(dbk_vm_names_query(&n, q, sizeof(q)) > 0);
	CHECK(strstr(q, "=my_running") != NULL);
	CHECK(strstr(q, "=vllm:num_requests_running") == NULL);
	CHECK(dbk_vm_names_override(&n, "nope=x", err, sizeof(err)) == -1);
	CHECK(dbk_vm_names_override(&n, "running", err, sizeof(err)) == -1);
	CHECK(dbk_vm_names_override(&n, "running=9bad", err, sizeof(err)) == -1);
	CHECK(dbk_vm_names_override(&n, "running=", err, sizeof(err)) == -1);
	CHECK(dbk_vm_names_override(&n, "kv_usage=a b", err, sizeof(err)) == -1);
	enum dbk_vm_engine e;
	CHECK(dbk_vm_engine_parse("sglang", &e) == 0 && e == DBK_ENGINE_SGLANG);
	CHECK(dbk_vm_engine_parse("trtllm", &e) == -1);
}

/* vLLM's sleep mode: the "awake" sample of each engine says; the level
 * samples do not count. */
static void test_sleep_state(void)
{
	struct dbk_vllm_metrics m;
	char err[128] = "";
	const char *asleep =
	        "vllm:num_requests_running{engine=\"0\",model_name=\"m\"} 0.0\n"
	        "vllm:engine_sleep_state{engine=\"0\",model_name=\"m\",sleep_state=\"awake\"} 0.0\n"
	        "vllm:engine_sleep_state{engine=\"0\",model_name=\"m\","
	        "sleep_state=\"weights_offloaded\"} 1.0\n"
	        "vllm:engine_sleep_state{engine=\"0\",model_name=\"m\",sleep_state=\"discard_all\"}"
	        " 0.0\n";
	const char *two = "vllm:engine_sleep_state{engine=\"0\",sleep_state=\"awake\"} 1\n"
	                  "vllm:engine_sleep_state{sleep_state=\"awake\",engine=\"1\"} 0\n";

	CHECK(parse(asleep, &m, err) == 0);
	CHECK(m.have & DBK_VM_SLEEP);
	CHECK_EQ_U(m.asleep, 1);
	CHECK(parse(two, &m, err) == 0);
	CHECK_EQ_U(m.asleep, 1);
	/* No family, or no "awake" sample: nothing known. */
	CHECK(parse("vllm:engine_sleep_state{sleep_state=\"discard_all\"} 1\n", &m, err) == 0);
	CHECK(!(m.have & DBK_VM_SLEEP));
	CHECK(parse("vllm:num_requests_running 1\n", &m, err) == 0);
	CHECK(!(m.have & DBK_VM_SLEEP));
}

static void test_query_names_every_family(void)
{
	char q[2048];
	size_t n = dbk_vm_names_query(dbk_vm_names_default(), q, sizeof(q));

	CHECK(n > 0 && n == strlen(q));
	CHECK(strncmp(q, "name%5B%5D=vllm:num_requests_running&", 37) == 0);
	CHECK(strstr(q, "&name%5B%5D=vllm:prefix_cache_hits_total&") != NULL);
	CHECK(strstr(q, "&name%5B%5D=vllm:cache_config_info") != NULL);
	CHECK(strstr(q, "&name%5B%5D=vllm:gpu_cache_usage_perc&") != NULL);
	CHECK(strstr(q, "&name%5B%5D=vllm:time_to_first_token_seconds_sum&") != NULL);
	CHECK_EQ_U(dbk_vm_names_query(dbk_vm_names_default(), q, 40), 0);
}

/* vllm:lora_requests_info as vLLM serves it (loggers.py at 005a810):
 * every label set it ever set, valued by when; the latest is the state. */
static void test_lora_requests_info(void)
{
	struct dbk_vllm_metrics m;
	char err[128] = "", buf[96];
	const char *head = "vllm:num_requests_running 1\n"
	                   "# TYPE vllm:lora_requests_info gauge\n";
	struct dbk_buf b = { 0 };
	size_t len;

	dbk_buf_printf(&b, "%s%s", head,
	               "vllm:lora_requests_info{max_lora=\"4\",running_lora_adapters=\"a,b\","
	               "waiting_lora_adapters=\"\"} 1.7e9\n"
	               "vllm:lora_requests_info{max_lora=\"4\",running_lora_adapters=\"sql\","
	               "waiting_lora_adapters=\"chat,a\"} 1.7000000025e9\n"
	               "vllm:lora_requests_info{max_lora=\"4\",running_lora_adapters=\"\","
	               "waiting_lora_adapters=\"\"} 1.70000000125e9\n");
	CHECK(dbk_vllm_parse_metrics(b.p, b.len, &m, err, sizeof(err)) == 0);
	CHECK(m.have & DBK_VM_LORA);
	CHECK_NEAR(m.lora.max_lora, 4, 0);
	CHECK(strcmp(m.lora.running, "sql") == 0);
	CHECK(strcmp(m.lora.waiting, "chat,a") == 0);
	CHECK_EQ_U(m.lora.nrunning, 1);
	CHECK_EQ_U(m.lora.nwaiting, 2);
	CHECK(dbk_vllm_metrics_implausible(&m, buf, sizeof(buf)) == NULL);
	const char *n = dbk_vm_lora_name(m.lora.waiting, 1, &len);
	CHECK(n && len == 1 && n[0] == 'a');
	CHECK(dbk_vm_lora_name(m.lora.waiting, 2, &len) == NULL);
	CHECK(dbk_vm_lora_name(m.lora.running, 0, &len) && len == 3);
	CHECK(dbk_vm_lora_name("", 0, &len) == NULL);
	CHECK(dbk_vm_adapter_key("sql", 3) != 0);
	CHECK(dbk_vm_adapter_key("sql", 3) != dbk_vm_adapter_key("sq", 2));
	dbk_buf_free(&b);

	/* Without the family: not reported, nothing else changes. */
	CHECK(parse("vllm:num_requests_running 1\n", &m, err) == 0);
	CHECK(!(m.have & DBK_VM_LORA));
	/* A NaN sample is one not set yet. */
	CHECK(parse("vllm:num_requests_running 1\n"
	            "vllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"x\","
	            "waiting_lora_adapters=\"\"} NaN\n",
	            &m, err) == 0);
	CHECK(!(m.have & DBK_VM_LORA));

	/* Out of bounds: the scrape is implausible. */
	const char *bad[] = {
		"max_lora=\"0\",running_lora_adapters=\"x\",waiting_lora_adapters=\"\"} 1",
		"max_lora=\"2.5\",running_lora_adapters=\"x\",waiting_lora_adapters=\"\"} 1",
		"max_lora=\"None\",running_lora_adapters=\"x\",waiting_lora_adapters=\"\"} 1",
		"running_lora_adapters=\"x\",waiting_lora_adapters=\"\"} 1",
		"max_lora=\"2\",running_lora_adapters=\"x,,y\",waiting_lora_adapters=\"\"} 1",
		"max_lora=\"2\",running_lora_adapters=\",x\",waiting_lora_adapters=\"\"} 1",
		"max_lora=\"2\",running_lora_adapters=\"x\",waiting_lora_adapters=\"y,\"} 1",
		"max_lora=\"2\",running_lora_adapters=\"x\",waiting_lora_adapters=\"\"} +Inf",
		"max_lora=\"99999\",running_lora_adapters=\"x\",waiting_lora_adapters=\"\"} 1",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		struct dbk_buf c = { 0 };

		dbk_buf_printf(&c, "%svllm:lora_requests_info{%s\n", head, bad[i]);
		CHECK(dbk_vllm_parse_metrics(c.p, c.len, &m, err, sizeof(err)) == 0);
		CHECK(!(m.have & DBK_VM_LORA));
		CHECK(dbk_vllm_metrics_implausible(&m, buf, sizeof(buf)) != NULL);
		dbk_buf_free(&c);
	}

	/* Bounded: 32 names pass, 33 do not; a list of DBK_VM_LORA_TEXT
	 * bytes does not. */
	for (unsigned names = 32; names <= 33; names++) {
		struct dbk_buf c = { 0 };

		dbk_buf_printf(&c,
		               "%svllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"",
		               head);
		for (unsigned k = 0; k < names; k++)
			dbk_buf_printf(&c, "%sa%u", k ? "," : "", k);
		dbk_buf_printf(&c, "\",waiting_lora_adapters=\"\"} 5\n");
		CHECK(dbk_vllm_parse_metrics(c.p, c.len, &m, err, sizeof(err)) == 0);
		CHECK_EQ_U(!!(m.have & DBK_VM_LORA), names == 32);
		dbk_buf_free(&c);
	}
	struct dbk_buf c = { 0 };
	dbk_buf_printf(&c, "%svllm:lora_requests_info{max_lora=\"2\",running_lora_adapters=\"",
	               head);
	for (unsigned k = 0; k < DBK_VM_LORA_TEXT; k++)
		dbk_buf_adds(&c, "x");
	dbk_buf_printf(&c, "\",waiting_lora_adapters=\"\"} 5\n");
	CHECK(dbk_vllm_parse_metrics(c.p, c.len, &m, err, sizeof(err)) == 0);
	CHECK(!(m.have & DBK_VM_LORA));
	CHECK(m.bad & DBK_VM_LORA);
	dbk_buf_free(&c);
}

int main(void)
{
	RUN(test_stub_fixture);
	RUN(test_engines_sum_and_kv_is_the_mean);
	RUN(test_first_token_totals);
	RUN(test_token_gap_totals);
	RUN(test_old_names_count_only_without_new_ones);
	RUN(test_what_the_format_allows);
	RUN(test_malformed_lines_fail_the_body);
	RUN(test_long_line_is_refused);
	RUN(test_models);
	RUN(test_models_adapters);
	RUN(test_implausible_numbers);
	RUN(test_every_number_has_a_range);
	RUN(test_v0_hit_rate);
	RUN(test_openmetrics);
	RUN(test_hostile_bodies);
	RUN(test_sglang_names);
	RUN(test_metric_override);
	RUN(test_sleep_state);
	RUN(test_query_names_every_family);
	RUN(test_lora_requests_info);
	return CHECK_DONE();
}
