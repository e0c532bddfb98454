/* dbucket-sim's command line: the options, their defaults and --help. */
#ifndef DBK_SIM_OPTS_H
#define DBK_SIM_OPTS_H

#include <stdbool.h>
#include <stdio.h>

#include "bench/trace.h"
#include "slo.h"

#define DBK_SIM_VERSION "0.2"

struct opts {
	const char *trace;
	enum dbk_trace_format format;       /* UNKNOWN: detect */
	double start_s, duration_s;         /* duration 0: to the end */
	unsigned long skip, max_requests;   /* max 0: all */
	double rate_factor;
	unsigned instances;
	const char *gpu;
	/* 0: the GPU profile's default. */
	unsigned long max_model_len, batched, seqs, kv;
	unsigned long short_max_model_len, short_kv;
	double threshold, max_request_tokens, json_overhead;
	double overhead_ms;
	unsigned long lb_nodes;             /* 0: 1 */
	bool no_prefix_caching;
	double slo_ttft_ms, slo_tpot_ms, slo_e2e_ms;
	const char *policies;
	const char *json;
	/* --slo-capacity: search each policy's capacity instead. */
	bool slo_capacity;
	struct dbk_slo_search search;
};

void dbk_sim_usage(FILE *f);
/* 0, or the exit status (2: usage error, printed). --help and --version
 * print and exit. */
int dbk_sim_parse_opts(int argc, char **argv, struct opts *o);

#endif
