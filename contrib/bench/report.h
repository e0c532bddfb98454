/* Results out: the table on the terminal, the same numbers as JSON, and
 * one CSV row per request. Times come in seconds of model time and are
 * printed in ms (latencies) or s (durations). */
#ifndef DBK_BENCH_REPORT_H
#define DBK_BENCH_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "stats.h"

/* What was run, echoed with the results so they can be reproduced. */
struct dbk_run_info {
	const char *version;
	const char *trace_path; /* NULL for a synthetic run */
	const char *format;     /* "mooncake", "azure", "synthetic" */
	const char *synthetic;  /* the mix, or NULL */
	double rate;            /* synthetic requests/s */
	uint64_t seed;
	double rate_factor, time_scale;
	const char *url, *endpoint, *model;
	uint32_t threshold;
	uint32_t max_model_len; /* 0: none */
	bool skip_overlong;
	double start_offset, duration_limit;
	size_t max_requests, concurrency_limit;
	double timeout;     /* model seconds */
	struct dbk_slo slo; /* seconds */
	size_t clipped, skipped, raised;
	bool spread_ticks;
	size_t spread; /* arrivals moved by --spread-ticks */
	bool interrupted;
};

/* [0] total, [1] short (< threshold), [2] long (>= threshold). */
#define DBK_REPORT_COLUMNS 3

void dbk_report_table(FILE *f, const struct dbk_run_info *info,
                      const struct dbk_summary s[DBK_REPORT_COLUMNS], const struct dbk_result *r,
                      size_t n);
/* 0, or -1 if writing failed. */
int dbk_report_json(FILE *f, const struct dbk_run_info *info,
                    const struct dbk_summary s[DBK_REPORT_COLUMNS], const struct dbk_result *r,
                    size_t n);
int dbk_report_csv(FILE *f, const struct dbk_result *r, size_t n);

/* One latency distribution as the JSON object both dbucket-bench and a
 * consumer of the same numbers (the simulator) write: {"n", "mean",
 * "median", "p90", "p99", "max"}, in ms, null for an empty one. NULL when
 * out of memory. */
cJSON *dbk_report_dist_json(const struct dbk_dist *d);

/* Failures grouped by kind ("HTTP 400", "connect", "timeout after ..."),
 * most frequent first; returns the number of groups written (<= max). */
struct dbk_failure_group {
	char kind[48];
	size_t count;
	const char *example; /* points into the results */
};
size_t dbk_report_failures(const struct dbk_result *r, size_t n, struct dbk_failure_group *g,
                           size_t max);

#endif
