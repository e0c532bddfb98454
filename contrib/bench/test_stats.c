/* Unit tests of the metrics (stats.c) and of the reports (report.c). */
#include "report.h"
#include "stats.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>

#include "check.h"

static void test_percentile(void)
{
	double v[10], one = 7, odd[] = { 50, 15, 40, 35, 20 };
	struct dbk_dist d;
	size_t i;

	for (i = 0; i < 10; i++)
		v[i] = (double)(10 - i); /* unsorted on purpose */
	dbk_stats_dist(v, 10, &d);
	CHECK_EQ_U(d.n, 10);
	CHECK_NEAR(v[0], 1, 0); /* sorted in place */
	CHECK_NEAR(d.mean, 5.5, 1e-12);
	CHECK_NEAR(d.median, 5.5, 1e-12);
	/* numpy.percentile([1..10], 90) == 9.1, 99 -> 9.91 */
	CHECK_NEAR(d.p90, 9.1, 1e-12);
	CHECK_NEAR(d.p99, 9.91, 1e-12);
	CHECK_NEAR(d.max, 10, 0);
	CHECK_NEAR(dbk_stats_percentile(v, 10, 0), 1, 0);
	CHECK_NEAR(dbk_stats_percentile(v, 10, 100), 10, 0);
	CHECK_NEAR(dbk_stats_percentile(v, 10, 25), 3.25, 1e-12);

	/* numpy.percentile([15, 20, 35, 40, 50], 40) == 29 */
	dbk_stats_dist(odd, 5, &d);
	CHECK_NEAR(dbk_stats_percentile(odd, 5, 40), 29, 1e-12);
	CHECK_NEAR(d.median, 35, 0);
	CHECK_NEAR(d.p90, 46, 1e-12);

	dbk_stats_dist(&one, 1, &d);
	CHECK(d.mean == 7 && d.median == 7 && d.p90 == 7 && d.p99 == 7);
	dbk_stats_dist(NULL, 0, &d);
	CHECK_EQ_U(d.n, 0);
	CHECK(isnan(d.mean) && isnan(d.median) && isnan(d.p99) && isnan(d.max));
	CHECK(isnan(dbk_stats_percentile(NULL, 0, 50)));
}

static void test_tpot(void)
{
	double t = -1;

	CHECK(!dbk_stats_tpot(0.1, 0.5, 1, &t));
	CHECK(!dbk_stats_tpot(0.1, 0.5, 0, &t));
	CHECK_NEAR(t, -1, 0);
	CHECK(dbk_stats_tpot(0.1, 1.1, 11, &t));
	CHECK_NEAR(t, 0.1, 1e-12);
	CHECK(dbk_stats_tpot(0.2, 0.2, 2, &t));
	CHECK_NEAR(t, 0, 0);
}

static struct dbk_result ok_result(double ttft, double e2e, uint32_t out, uint8_t cls)
{
	struct dbk_result r;

	memset(&r, 0, sizeof(r));
	r.started = r.done = r.ok = true;
	r.status = 200;
	r.ttft = ttft;
	r.e2e = e2e;
	r.output_tokens = out;
	r.max_tokens = out;
	r.prompt_tokens = cls == DBK_CLASS_LONG ? 40000 : 1000;
	r.cls = cls;
	return r;
}

static void test_slo(void)
{
	struct dbk_slo none = { 0, 0, 0 }, ttft = { 0.5, 0, 0 }, tpot = { 0, 0.05, 0 },
	               all = { 0.5, 0.05, 2.0 };
	struct dbk_result r = ok_result(0.4, 1.4, 21, 0); /* tpot 0.05 */
	struct dbk_result one = ok_result(0.4, 0.4, 1, 0);

	CHECK(!dbk_stats_slo_any(&none));
	CHECK(dbk_stats_slo_any(&tpot));
	CHECK(dbk_stats_slo_met(&none, &r));
	CHECK(dbk_stats_slo_met(&ttft, &r));
	CHECK(dbk_stats_slo_met(&tpot, &r)); /* at the bound: met */
	CHECK(dbk_stats_slo_met(&all, &r));
	r.ttft = 0.6;
	CHECK(!dbk_stats_slo_met(&ttft, &r));
	CHECK(!dbk_stats_slo_met(&all, &r));
	r = ok_result(0.4, 2.4, 21, 0); /* tpot 0.1 */
	CHECK(!dbk_stats_slo_met(&tpot, &r));
	CHECK(dbk_stats_slo_met(&ttft, &r));
	r = ok_result(0.1, 2.1, 1001, 0); /* e2e above 2 */
	CHECK(!dbk_stats_slo_met(&all, &r));
	/* One output token: no TPOT, the TPOT SLO does not apply. */
	CHECK(dbk_stats_slo_met(&tpot, &one));
	/* Failed requests are never good. */
	one.ok = false;
	CHECK(!dbk_stats_slo_met(&none, &one));
}

/* Six requests: 3 short ok, 1 short failed, 1 long ok, 1 not finished. */
static void make_results(struct dbk_result r[6], double itl_store[8])
{
	r[0] = ok_result(0.1, 1.1, 11, DBK_CLASS_SHORT); /* tpot 0.1 */
	r[1] = ok_result(0.3, 0.3, 1, DBK_CLASS_SHORT);  /* no tpot */
	r[2] = ok_result(0.2, 0.6, 5, DBK_CLASS_SHORT);  /* tpot 0.1 */
	memset(&r[3], 0, sizeof(r[3]));
	r[3].started = r[3].done = true;
	r[3].status = 400;
	snprintf(r[3].error, sizeof(r[3].error), "HTTP 400: too long");
	r[4] = ok_result(5.0, 9.0, 3, DBK_CLASS_LONG); /* tpot 2 */
	memset(&r[5], 0, sizeof(r[5]));
	r[5].cls = DBK_CLASS_LONG;
	r[5].prompt_tokens = 50000;
	itl_store[0] = 0.1;
	itl_store[1] = 0.2;
	itl_store[2] = 0.3;
	itl_store[3] = 0.4;
	itl_store[4] = 2.0;
	itl_store[5] = 2.0;
	r[0].itl = itl_store;
	r[0].n_itl = 2;
	r[2].itl = itl_store + 2;
	r[2].n_itl = 2;
	r[4].itl = itl_store + 4;
	r[4].n_itl = 2;
}

static void test_summarize(void)
{
	struct dbk_result r[6];
	double itl[8];
	struct dbk_slo slo = { 0.25, 0.5, 0 }, none = { 0, 0, 0 };
	struct dbk_summary s;

	make_results(r, itl);
	CHECK_EQ_U(dbk_stats_summarize(r, 6, DBK_STATS_ALL, &slo, 10.0, &s), 0);
	CHECK_EQ_U(s.requests, 6);
	CHECK_EQ_U(s.completed, 4);
	CHECK_EQ_U(s.failed, 1);
	CHECK_EQ_U(s.output_tokens, 11 + 1 + 5 + 3);
	CHECK_EQ_U(s.input_tokens, 3 * 1000 + 40000);
	CHECK_NEAR(s.req_throughput, 0.4, 1e-12);
	CHECK_NEAR(s.out_throughput, 2.0, 1e-12);
	CHECK_NEAR(s.in_throughput, 4300, 1e-12);
	/* Good: r0 (ttft .1, tpot .1) and r2 (.2, .1); r1 has ttft .3,
	 * r4 ttft 5. */
	CHECK_EQ_U(s.good, 2);
	CHECK_NEAR(s.goodput, 0.2, 1e-12);
	CHECK_EQ_U(s.ttft.n, 4);
	CHECK_NEAR(s.ttft.mean, (0.1 + 0.3 + 0.2 + 5.0) / 4, 1e-12);
	CHECK_NEAR(s.ttft.median, 0.25, 1e-12);
	CHECK_EQ_U(s.tpot.n, 3);
	CHECK_NEAR(s.tpot.median, 0.1, 1e-12);
	CHECK_NEAR(s.tpot.mean, (0.1 + 0.1 + 2.0) / 3, 1e-12);
	CHECK_EQ_U(s.itl.n, 6);
	CHECK_NEAR(s.itl.mean, 5.0 / 6, 1e-12);
	CHECK_EQ_U(s.e2e.n, 4);
	CHECK_NEAR(s.e2e.p99, dbk_stats_percentile((double[]){ 0.3, 0.6, 1.1, 9.0 }, 4, 99), 1e-12);
	CHECK_NEAR(s.duration, 10, 0);

	CHECK_EQ_U(dbk_stats_summarize(r, 6, DBK_CLASS_SHORT, &slo, 10.0, &s), 0);
	CHECK_EQ_U(s.requests, 4);
	CHECK_EQ_U(s.completed, 3);
	CHECK_EQ_U(s.failed, 1);
	CHECK_EQ_U(s.itl.n, 4);
	CHECK_NEAR(s.itl.median, 0.25, 1e-12);
	CHECK_NEAR(s.req_throughput, 0.3, 1e-12);

	CHECK_EQ_U(dbk_stats_summarize(r, 6, DBK_CLASS_LONG, &none, 10.0, &s), 0);
	CHECK_EQ_U(s.requests, 2);
	CHECK_EQ_U(s.completed, 1);
	CHECK_EQ_U(s.failed, 0);
	CHECK_NEAR(s.tpot.mean, 2.0, 1e-12);
	CHECK(isnan(s.goodput));
	CHECK_EQ_U(s.good, 0);

	/* Nothing completed: distributions empty, rates zero. */
	CHECK_EQ_U(dbk_stats_summarize(r + 3, 1, DBK_STATS_ALL, &slo, 10.0, &s), 0);
	CHECK_EQ_U(s.completed, 0);
	CHECK_EQ_U(s.failed, 1);
	CHECK(isnan(s.ttft.mean) && isnan(s.itl.p99));
	CHECK_NEAR(s.req_throughput, 0, 0);
	CHECK_NEAR(s.goodput, 0, 0);
}

static void test_failure_groups(void)
{
	struct dbk_result r[6];
	struct dbk_failure_group g[4];
	size_t i, n;

	memset(r, 0, sizeof(r));
	for (i = 0; i < 6; i++)
		r[i].done = true;
	snprintf(r[0].error, sizeof(r[0].error), "HTTP 400: a");
	snprintf(r[1].error, sizeof(r[1].error), "HTTP 400: b");
	snprintf(r[2].error, sizeof(r[2].error), "connect: Connection refused");
	snprintf(r[3].error, sizeof(r[3].error), "stream ended without [DONE]");
	snprintf(r[4].error, sizeof(r[4].error), "error in stream: oops");
	r[5].ok = true;
	n = dbk_report_failures(r, 6, g, 4);
	CHECK_EQ_U(n, 4);
	CHECK(strcmp(g[0].kind, "HTTP 400") == 0);
	CHECK_EQ_U(g[0].count, 2);
	CHECK(strcmp(g[0].example, "HTTP 400: a") == 0);
	CHECK(strcmp(g[1].kind, "connect: Connection refused") == 0);
	CHECK(strcmp(g[2].kind, "error in stream") == 0);
	CHECK(strcmp(g[3].kind, "stream ended without [DONE]") == 0);
	CHECK_EQ_U(dbk_report_failures(r, 6, g, 1), 1);
}

static char *capture_csv(const struct dbk_result *r, size_t n)
{
	char *p = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&p, &len);

	if (!f)
		return NULL;
	CHECK_EQ_U(dbk_report_csv(f, r, n), 0);
	fclose(f);
	return p;
}

static void test_csv(void)
{
	static const char HEADER[] = "index,arrival_s,sent_s,class,prompt_tokens,max_tokens,"
	                             "output_tokens,ttft_ms,tpot_ms,e2e_ms,status,ok,served_by,"
	                             "error\n";
	struct dbk_result r[6];
	double itl[8];
	char *csv;

	make_results(r, itl);
	snprintf(r[3].served_by, sizeof(r[3].served_by), "vllm1");
	snprintf(r[3].error, sizeof(r[3].error), "HTTP 400: a, \"b\"");
	r[0].arrival = 1.5;
	r[0].sent = 1.5001;
	csv = capture_csv(r, 6);
	CHECK(csv != NULL);
	if (!csv)
		return;
	CHECK(strncmp(csv, HEADER, strlen(HEADER)) == 0);
	CHECK(strstr(csv, "\n0,1.500000,1.500100,short,1000,11,11,100.000,"
	                  "100.000,1100.000,200,1,,\n") != NULL);
	/* One output token: no TPOT. */
	CHECK(strstr(csv, "\n1,0.000000,0.000000,short,1000,1,1,300.000,,"
	                  "300.000,200,1,,\n") != NULL);
	/* A failure: no latencies, the error quoted. */
	CHECK(strstr(csv, "\n3,0.000000,0.000000,short,0,0,,,,,400,0,vllm1,"
	                  "\"HTTP 400: a, \"\"b\"\"\"\n") != NULL);
	/* Never sent. */
	CHECK(strstr(csv, "\n5,0.000000,,long,50000,0,,,,,0,0,,"
	                  "not finished\n") != NULL);
	free(csv);
}

/* The run the report tests describe: a trace run, or a synthetic one. */
static void fill_info(struct dbk_run_info *info, bool synthetic)
{
	memset(info, 0, sizeof(*info));
	info->version = "t";
	info->time_scale = 10;
	info->model = "m";
	info->threshold = 32768;
	if (synthetic) {
		info->synthetic = "a=1:5";
		info->format = "synthetic";
		info->rate = 3;
		info->rate_factor = 1;
		info->url = "u";
		info->endpoint = "chat";
	} else {
		info->trace_path = "x.jsonl";
		info->format = "mooncake";
		info->rate_factor = 2;
		info->url = "http://127.0.0.1:1/v1/completions";
		info->endpoint = "completions";
	}
}

static void summarize3(const struct dbk_result *r, size_t n, const struct dbk_slo *slo,
                       struct dbk_summary s[3])
{
	for (int c = 0; c < 3; c++)
		CHECK_EQ_U(dbk_stats_summarize(r, n, c == 0 ? DBK_STATS_ALL : c - 1, slo, 10.0,
		                               &s[c]),
		           0);
}

/* What dbk_report_json (table false) or dbk_report_table (true) wrote;
 * the caller frees it. NULL if it could not be captured. */
static char *capture(bool table, const struct dbk_run_info *info, const struct dbk_summary s[3],
                     const struct dbk_result *r, size_t n)
{
	char *p = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&p, &len);

	CHECK(f != NULL);
	if (!f)
		return NULL;
	if (table)
		dbk_report_table(f, info, s, r, n);
	else
		CHECK_EQ_U(dbk_report_json(f, info, s, r, n), 0);
	fclose(f);
	return p;
}

static void test_json(void)
{
	struct dbk_result r[6];
	struct dbk_summary s[3];
	struct dbk_run_info info;
	double itl[8];
	char *p;
	cJSON *root;
	const cJSON *res, *tot, *ttft, *cfg;

	make_results(r, itl);
	fill_info(&info, false);
	info.slo.ttft = 0.25;
	summarize3(r, 6, &info.slo, s);
	p = capture(false, &info, s, r, 6);
	root = cJSON_Parse(p ? p : "");
	CHECK(root != NULL);
	res = cJSON_GetObjectItem(root, "results");
	tot = cJSON_GetObjectItem(res, "total");
	ttft = cJSON_GetObjectItem(tot, "ttft_ms");
	cfg = cJSON_GetObjectItem(root, "config");
	CHECK_NEAR(cJSON_GetObjectItem(tot, "completed")->valuedouble, 4, 0);
	CHECK_NEAR(cJSON_GetObjectItem(tot, "goodput")->valuedouble, 0.2, 1e-12);
	CHECK_NEAR(cJSON_GetObjectItem(ttft, "median")->valuedouble, 250, 1e-9);
	CHECK(cJSON_GetObjectItem(ttft, "max")->valuedouble >=
	      cJSON_GetObjectItem(ttft, "p99")->valuedouble);
	CHECK_NEAR(cJSON_GetObjectItem(cfg, "time_scale")->valuedouble, 10, 0);
	CHECK_NEAR(cJSON_GetObjectItem(cfg, "slo_ttft_ms")->valuedouble, 250, 1e-9);
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(cfg, "slo_tpot_ms")));
	CHECK(cJSON_IsObject(cJSON_GetObjectItem(res, "short")));
	CHECK_NEAR(cJSON_GetObjectItem(cJSON_GetObjectItem(res, "long"), "requests")->valuedouble,
	           2, 0);
	cJSON_Delete(root);
	free(p);

	/* Empty series are null, not NaN (which is not JSON). */
	CHECK_EQ_U(dbk_stats_summarize(r + 5, 1, DBK_STATS_ALL, &info.slo, 10.0, &s[0]), 0);
	p = capture(false, &info, s, r, 6);
	root = cJSON_Parse(p ? p : "");
	CHECK(root != NULL);
	tot = cJSON_GetObjectItem(cJSON_GetObjectItem(root, "results"), "total");
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(tot, "ttft_ms"), "mean")));
	CHECK(cJSON_IsNull(cJSON_GetObjectItem(cJSON_GetObjectItem(tot, "ttft_ms"), "max")));
	cJSON_Delete(root);
	free(p);
}

static void test_table(void)
{
	struct dbk_result r[6];
	struct dbk_summary s[3];
	struct dbk_run_info info;
	double itl[8];
	char *p;

	make_results(r, itl);
	fill_info(&info, true);
	summarize3(r, 6, &info.slo, s);
	p = capture(true, &info, s, r, 6);
	if (!p)
		return;
	CHECK(strstr(p, "time scale 10") != NULL);
	CHECK(strstr(p, "total      < 32768     >= 32768\n") != NULL);
	CHECK(strstr(p, "\nrequests                                6"
	                "            4            2\n") != NULL);
	CHECK(strstr(p, "\ngoodput (req/s)                         -"
	                "            -            -\n") != NULL);
	CHECK(strstr(p, "\nTTFT median (ms)                   250.00"
	                "       200.00      5000.00\n") != NULL);
	CHECK(strstr(p, "HTTP 400 (e.g. HTTP 400: too long)") != NULL);
	free(p);
}

int main(void)
{
	RUN(test_percentile);
	RUN(test_tpot);
	RUN(test_slo);
	RUN(test_summarize);
	RUN(test_failure_groups);
	RUN(test_csv);
	RUN(test_json);
	RUN(test_table);
	return CHECK_DONE();
}
