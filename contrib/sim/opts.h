/* dbucket-sim's command line: the options, their defaults and --help,
 * from one table (lib/cli.h). */
#ifndef DBK_SIM_OPTS_H
#define DBK_SIM_OPTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

#include "lib/bounds.h"
#include "multimodel.h"
#include "model/trace.h"
#include "schedule.h"
#include "sim.h"
#include "slo.h"

struct dbk_sim_opts {
	/* --skip drops requests between the window and the count. */
	struct dbk_trace_slice slice;
	size_t skip;
	int instances;
	const char *gpu;
	/* 0: the GPU profile's default. */
	size_t max_model_len, batched, seqs, kv;
	/* 0: as every instance. */
	size_t short_max_model_len, short_kv;
	double threshold, max_request_tokens, json_overhead;
	double overhead_ms;
	double scrape_flight_ms;
	int lb_nodes; /* 0: 1 */
	bool lb_sticky;
	double lb_share_ms; /* < 0: the books are not shared */
	bool lb_share_books;
	bool lb_share_sessions;
	double stall_weight; /* < 0: the predictor's default */
	double engine_speed; /* the agent's --engine-speed */
	bool no_prefix_caching;
	double slo_ttft_ms, slo_tpot_ms, slo_e2e_ms;
	const char *policies;
	const char *json;
	/* A fleet that changes (schedule.h): the texts, then parsed. */
	const char *scale_text, *ramp_text, *weights_text;
	struct dbk_sim_step scale[DBK_SIM_MAX_STEPS], ramp[DBK_SIM_MAX_STEPS];
	size_t nscale, nramp, nweights;
	double weights[DBK_MAX_SERVERS];
	double warmup_s, warmup_factor;
	int fail_instance; /* -1: none */
	double fail_from_s, fail_share;
	int slow_instance; /* -1: none */
	double slow_from_s, slow_until_s, slow_factor;
	bool observe_l7;
	/* Overload (issue 28): --classes' text and its shares (classes.h;
	 * nclasses 0: every request standard), --admission, --shed-retry. */
	const char *classes_text;
	double class_share[DBK_CLASS_N];
	size_t nclasses;
	bool classes_drawn; /* --classes-drawn: sheddable not by length */
	bool admission, shed_retry, shed_retry_sdk;
	double admit_queue_s;            /* --admit-queue-s; 0: off */
	bool admit_queue_in_time;        /* --admit-queue-in-time */
	double admit_share[DBK_CLASS_N]; /* < 0: the agent's default */
	long long admit_tpot_ms;         /* admission's TPOT objective */
	/* Several models (issue 27): --models' text, then the models and
	 * adapters (multimodel.h; nmodels 0: one model), --max-loras. */
	const char *models_text;
	struct dbk_sim_models models;
	size_t nadapters, max_loras;
	double lora_load_ms; /* < 0: the engine's default */
	/* --slo-capacity: search each policy's capacity instead. */
	bool slo_capacity;
	struct dbk_slo_search search;
};

/* 0 to run; 1 when the program is to exit at once with *status: 0
 * after --help or --version (printed on stdout), 2 after a usage error
 * (printed on stderr). */
int dbk_sim_opts_parse(int argc, char **argv, struct dbk_sim_opts *o, int *status);

#endif
