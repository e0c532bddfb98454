#include "report.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static const char *const CLASS_KEY[DBK_REPORT_COLUMNS] = { "total", "short", "long" };

/* ---- Failures. ---- */

static void failure_kind(const char *e, char *kind, size_t kn)
{
	size_t len;

	/* "HTTP 400: message" -> "HTTP 400"; "connect: Connection refused"
	 * -> "connect: Connection refused" (the errno text is the kind);
	 * otherwise the text up to its first ':'. */
	if (strncmp(e, "HTTP ", 5) == 0) {
		len = strcspn(e, ":");
	} else {
		const char *colon = strchr(e, ':');

		len = colon && (strncmp(e, "connect", 7) == 0 || strncmp(e, "read", 4) == 0 ||
		                strncmp(e, "write", 5) == 0 || strncmp(e, "socket", 6) == 0)
		              ? strlen(e)
		              : strcspn(e, ":");
	}
	if (len >= kn)
		len = kn - 1;
	memcpy(kind, e, len);
	kind[len] = 0;
}

static int cmp_group(const void *a, const void *b)
{
	const struct dbk_failure_group *x = a, *y = b;

	if (x->count != y->count)
		return x->count > y->count ? -1 : 1;
	return strcmp(x->kind, y->kind);
}

size_t dbk_report_failures(const struct dbk_result *r, size_t n, struct dbk_failure_group *g,
                           size_t max)
{
	struct dbk_failure_group all[64];
	size_t i, j, ng = 0;
	bool other = false;

	for (i = 0; i < n; i++) {
		char kind[48];

		if (!r[i].done || r[i].ok)
			continue;
		failure_kind(r[i].error[0] ? r[i].error : "failed", kind, sizeof(kind));
		for (j = 0; j < ng; j++)
			if (strcmp(all[j].kind, kind) == 0)
				break;
		if (j == ng) {
			if (ng == sizeof(all) / sizeof(all[0])) {
				/* The last slot collects the rest. */
				j = ng - 1;
				if (!other) {
					snprintf(all[j].kind, sizeof(all[j].kind), "other");
					other = true;
				}
			} else {
				snprintf(all[j].kind, sizeof(all[j].kind), "%s", kind);
				all[j].count = 0;
				all[j].example = r[i].error;
				ng++;
			}
		}
		all[j].count++;
	}
	qsort(all, ng, sizeof(all[0]), cmp_group);
	if (ng > max)
		ng = max;
	memcpy(g, all, ng * sizeof(*g));
	return ng;
}

/* ---- Table. ---- */

static void cell(FILE *f, double v, const char *fmt)
{
	char tmp[32];

	if (isnan(v))
		fprintf(f, " %12s", "-");
	else {
		snprintf(tmp, sizeof(tmp), fmt, v);
		fprintf(f, " %12s", tmp);
	}
}

static void row(FILE *f, const char *label, const double v[3], const char *fmt)
{
	fprintf(f, "%-28s", label);
	cell(f, v[0], fmt);
	cell(f, v[1], fmt);
	cell(f, v[2], fmt);
	fputc('\n', f);
}

static void dist_rows(FILE *f, const char *name, const struct dbk_summary s[DBK_REPORT_COLUMNS],
                      size_t off)
{
	static const char *const stat[] = { "mean", "median", "p90", "p99" };
	size_t k, c;

	for (k = 0; k < 4; k++) {
		double v[3];
		char label[40];

		for (c = 0; c < 3; c++) {
			const struct dbk_dist *d = (const struct dbk_dist *)((const char *)&s[c] +
			                                                     off);
			const double x[] = { d->mean, d->median, d->p90, d->p99 };

			v[c] = x[k] * 1e3;
		}
		snprintf(label, sizeof(label), "%s %s (ms)", name, stat[k]);
		row(f, label, v, "%.2f");
	}
}

/* What was run, above the table. */
static void table_head(FILE *f, const struct dbk_run_info *info, size_t requests)
{
	if (info->trace_path)
		fprintf(f, "dbucket-bench %s: %zu requests from %s (%s)\n", info->version, requests,
		        info->trace_path, info->format);
	else
		fprintf(f,
		        "dbucket-bench %s: %zu requests from the synthetic "
		        "mix %s at %g req/s (seed %llu)\n",
		        info->version, requests, info->synthetic, info->rate,
		        (unsigned long long)info->seed);
	fprintf(f,
	        "time scale %g: latencies, durations and rates in model "
	        "time; rate factor %g\n",
	        info->time_scale, info->rate_factor);
	fprintf(f, "target %s (%s), model %s\n", info->url, info->endpoint, info->model);
	if (info->spread_ticks)
		fprintf(f, "ticks spread: %zu of the trace's arrivals moved\n", info->spread);
	if (info->max_model_len)
		fprintf(f, "max-model-len %u: %zu clipped, %zu skipped\n", info->max_model_len,
		        info->clipped, info->skipped);
	if (dbk_stats_slo_any(&info->slo)) {
		fprintf(f, "goodput SLOs:");
		if (info->slo.ttft > 0)
			fprintf(f, " ttft <= %g ms", info->slo.ttft * 1e3);
		if (info->slo.tpot > 0)
			fprintf(f, " tpot <= %g ms", info->slo.tpot * 1e3);
		if (info->slo.e2e > 0)
			fprintf(f, " e2e <= %g ms", info->slo.e2e * 1e3);
		fputc('\n', f);
	}
	if (info->interrupted)
		fprintf(f, "INTERRUPTED: partial results\n");
}

void dbk_report_table(FILE *f, const struct dbk_run_info *info,
                      const struct dbk_summary s[DBK_REPORT_COLUMNS], const struct dbk_result *r,
                      size_t n)
{
	struct dbk_failure_group g[5];
	char h1[32], h2[32];
	double v[3];
	size_t c, ng, i;

	table_head(f, info, s[0].requests);
	snprintf(h1, sizeof(h1), "< %u", info->threshold);
	snprintf(h2, sizeof(h2), ">= %u", info->threshold);
	/* Both classes always, empty or not: one shape for every run. */
	fprintf(f, "\n%-28s %12s %12s %12s\n", "", "total", h1, h2);
	for (c = 0; c < 3; c++)
		v[c] = (double)s[c].requests;
	row(f, "requests", v, "%.0f");
	for (c = 0; c < 3; c++)
		v[c] = (double)s[c].completed;
	row(f, "completed", v, "%.0f");
	for (c = 0; c < 3; c++)
		v[c] = (double)s[c].failed;
	row(f, "failed", v, "%.0f");
	v[0] = s[0].duration;
	v[1] = v[2] = NAN;
	row(f, "duration (s)", v, "%.2f");
	for (c = 0; c < 3; c++)
		v[c] = s[c].req_throughput;
	row(f, "request throughput (req/s)", v, "%.3f");
	for (c = 0; c < 3; c++)
		v[c] = s[c].out_throughput;
	row(f, "output throughput (tok/s)", v, "%.1f");
	for (c = 0; c < 3; c++)
		v[c] = s[c].goodput;
	row(f, "goodput (req/s)", v, "%.3f");
	dist_rows(f, "TTFT", s, offsetof(struct dbk_summary, ttft));
	dist_rows(f, "TPOT", s, offsetof(struct dbk_summary, tpot));
	dist_rows(f, "ITL", s, offsetof(struct dbk_summary, itl));
	dist_rows(f, "E2E", s, offsetof(struct dbk_summary, e2e));
	ng = dbk_report_failures(r, n, g, sizeof(g) / sizeof(g[0]));
	if (ng) {
		fprintf(f, "\nfailures:\n");
		for (i = 0; i < ng; i++) {
			fprintf(f, "  %6zu  %s", g[i].count, g[i].kind);
			if (strcmp(g[i].kind, g[i].example) != 0)
				fprintf(f, " (e.g. %s)", g[i].example);
			fputc('\n', f);
		}
	}
}

/* ---- JSON. ---- */

static cJSON *num_or_null(double v)
{
	return isfinite(v) ? cJSON_CreateNumber(v) : cJSON_CreateNull();
}

cJSON *dbk_report_dist_json(const struct dbk_dist *d)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddNumberToObject(o, "n", (double)d->n);
	cJSON_AddItemToObject(o, "mean", num_or_null(d->mean * 1e3));
	cJSON_AddItemToObject(o, "median", num_or_null(d->median * 1e3));
	cJSON_AddItemToObject(o, "p90", num_or_null(d->p90 * 1e3));
	cJSON_AddItemToObject(o, "p99", num_or_null(d->p99 * 1e3));
	cJSON_AddItemToObject(o, "max", num_or_null(d->max * 1e3));
	return o;
}

static cJSON *summary_json(const struct dbk_summary *s, const char *label)
{
	cJSON *o = cJSON_CreateObject();

	cJSON_AddStringToObject(o, "label", label);
	cJSON_AddNumberToObject(o, "requests", (double)s->requests);
	cJSON_AddNumberToObject(o, "completed", (double)s->completed);
	cJSON_AddNumberToObject(o, "failed", (double)s->failed);
	cJSON_AddNumberToObject(o, "duration_s", s->duration);
	cJSON_AddNumberToObject(o, "input_tokens", (double)s->input_tokens);
	cJSON_AddNumberToObject(o, "output_tokens", (double)s->output_tokens);
	cJSON_AddNumberToObject(o, "request_throughput", s->req_throughput);
	cJSON_AddNumberToObject(o, "output_throughput", s->out_throughput);
	cJSON_AddNumberToObject(o, "input_throughput", s->in_throughput);
	cJSON_AddItemToObject(o, "goodput", num_or_null(s->goodput));
	cJSON_AddNumberToObject(o, "good", (double)s->good);
	cJSON_AddItemToObject(o, "ttft_ms", dbk_report_dist_json(&s->ttft));
	cJSON_AddItemToObject(o, "tpot_ms", dbk_report_dist_json(&s->tpot));
	cJSON_AddItemToObject(o, "itl_ms", dbk_report_dist_json(&s->itl));
	cJSON_AddItemToObject(o, "e2e_ms", dbk_report_dist_json(&s->e2e));
	return o;
}

static void add_str_or_null(cJSON *o, const char *k, const char *v)
{
	if (v)
		cJSON_AddStringToObject(o, k, v);
	else
		cJSON_AddNullToObject(o, k);
}

static void add_pos_or_null(cJSON *o, const char *k, double v)
{
	cJSON_AddItemToObject(o, k, v > 0 ? cJSON_CreateNumber(v) : cJSON_CreateNull());
}

/* The run's settings, so the results can be reproduced. */
static cJSON *config_json(const struct dbk_run_info *info)
{
	cJSON *cfg = cJSON_CreateObject();

	add_str_or_null(cfg, "trace", info->trace_path);
	cJSON_AddStringToObject(cfg, "format", info->format);
	add_str_or_null(cfg, "synthetic", info->synthetic);
	add_pos_or_null(cfg, "rate", info->synthetic ? info->rate : 0);
	if (info->synthetic)
		cJSON_AddNumberToObject(cfg, "seed", (double)info->seed);
	cJSON_AddNumberToObject(cfg, "rate_factor", info->rate_factor);
	cJSON_AddBoolToObject(cfg, "spread_ticks", info->spread_ticks);
	cJSON_AddNumberToObject(cfg, "time_scale", info->time_scale);
	cJSON_AddStringToObject(cfg, "url", info->url);
	cJSON_AddStringToObject(cfg, "endpoint", info->endpoint);
	cJSON_AddStringToObject(cfg, "model", info->model);
	cJSON_AddNumberToObject(cfg, "threshold", info->threshold);
	add_pos_or_null(cfg, "max_model_len", info->max_model_len);
	cJSON_AddStringToObject(cfg, "overlong", info->skip_overlong ? "skip" : "clip");
	cJSON_AddNumberToObject(cfg, "start_offset_s", info->start_offset);
	add_pos_or_null(cfg, "duration_s", info->duration_limit);
	add_pos_or_null(cfg, "max_requests", (double)info->max_requests);
	add_pos_or_null(cfg, "concurrency_limit", (double)info->concurrency_limit);
	cJSON_AddNumberToObject(cfg, "timeout_s", info->timeout);
	add_pos_or_null(cfg, "slo_ttft_ms", info->slo.ttft * 1e3);
	add_pos_or_null(cfg, "slo_tpot_ms", info->slo.tpot * 1e3);
	add_pos_or_null(cfg, "slo_e2e_ms", info->slo.e2e * 1e3);
	return cfg;
}

int dbk_report_json(FILE *f, const struct dbk_run_info *info,
                    const struct dbk_summary s[DBK_REPORT_COLUMNS], const struct dbk_result *r,
                    size_t n)
{
	struct dbk_failure_group g[16];
	cJSON *root = cJSON_CreateObject(), *sel, *res, *fl;
	char label[3][32];
	size_t c, ng, i;
	char *text;
	int rc;

	cJSON_AddStringToObject(root, "tool", "dbucket-bench");
	cJSON_AddStringToObject(root, "version", info->version);
	cJSON_AddStringToObject(root, "time", "model");
	cJSON_AddBoolToObject(root, "interrupted", info->interrupted);
	cJSON_AddItemToObject(root, "config", config_json(info));
	sel = cJSON_AddObjectToObject(root, "selection");
	cJSON_AddNumberToObject(sel, "requests", (double)s[0].requests);
	cJSON_AddNumberToObject(sel, "clipped", (double)info->clipped);
	cJSON_AddNumberToObject(sel, "skipped", (double)info->skipped);
	cJSON_AddNumberToObject(sel, "raised_from_zero", (double)info->raised);
	if (info->spread_ticks)
		cJSON_AddNumberToObject(sel, "spread", (double)info->spread);
	snprintf(label[0], sizeof(label[0]), "all");
	snprintf(label[1], sizeof(label[1]), "< %u", info->threshold);
	snprintf(label[2], sizeof(label[2]), ">= %u", info->threshold);
	res = cJSON_AddObjectToObject(root, "results");
	for (c = 0; c < DBK_REPORT_COLUMNS; c++)
		cJSON_AddItemToObject(res, CLASS_KEY[c], summary_json(&s[c], label[c]));
	fl = cJSON_AddArrayToObject(root, "failures");
	ng = dbk_report_failures(r, n, g, sizeof(g) / sizeof(g[0]));
	for (i = 0; i < ng; i++) {
		cJSON *o = cJSON_CreateObject();

		cJSON_AddStringToObject(o, "kind", g[i].kind);
		cJSON_AddNumberToObject(o, "count", (double)g[i].count);
		cJSON_AddStringToObject(o, "example", g[i].example);
		cJSON_AddItemToArray(fl, o);
	}
	text = cJSON_Print(root);
	cJSON_Delete(root);
	if (!text)
		return -1;
	rc = fprintf(f, "%s\n", text) < 0 ? -1 : 0;
	free(text);
	return rc;
}

/* ---- CSV. ---- */

static void csv_text(FILE *f, const char *s)
{
	/* RFC 4180 quoting, only when needed. */
	if (!strpbrk(s, ",\"\r\n")) {
		fputs(s, f);
		return;
	}
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"')
			fputc('"', f);
		fputc(*s, f);
	}
	fputc('"', f);
}

static void csv_ms(FILE *f, bool have, double v)
{
	if (have)
		fprintf(f, ",%.3f", v * 1e3);
	else
		fputs(",", f);
}

int dbk_report_csv(FILE *f, const struct dbk_result *r, size_t n)
{
	size_t i;

	fprintf(f, "index,arrival_s,sent_s,class,prompt_tokens,max_tokens,"
	           "output_tokens,ttft_ms,tpot_ms,e2e_ms,status,ok,served_by,"
	           "error\n");
	for (i = 0; i < n; i++) {
		const struct dbk_result *x = &r[i];
		double tpot = 0;
		bool have_tpot = x->ok && dbk_stats_tpot(x->ttft, x->e2e, x->output_tokens, &tpot);

		fprintf(f, "%zu,%.6f,", i, x->arrival);
		if (x->started)
			fprintf(f, "%.6f", x->sent);
		fprintf(f, ",%s,%u,%u,", CLASS_KEY[1 + x->cls], x->prompt_tokens, x->max_tokens);
		if (x->ok)
			fprintf(f, "%u", x->output_tokens);
		csv_ms(f, x->ok, x->ttft);
		csv_ms(f, have_tpot, tpot);
		csv_ms(f, x->ok, x->e2e);
		fprintf(f, ",%d,%d,", x->status, x->ok ? 1 : 0);
		csv_text(f, x->served_by);
		fputc(',', f);
		csv_text(f, x->done ? x->error : "not finished");
		fputc('\n', f);
	}
	return ferror(f) ? -1 : 0;
}
