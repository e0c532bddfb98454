/* dbucket-sim's two modes over one setup: one run per policy with the
 * tables (runs.c), or each policy's SLO capacity (capacity.c); and the
 * setup's description at the top of either (setup.c). */
#ifndef DBK_SIM_MODES_H
#define DBK_SIM_MODES_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "fleet.h"
#include "opts.h"
#include "phases.h"
#include "policy.h"
#include "workload.h"

#define DBK_SIM_MAX_POLICIES 24

/* What one invocation simulates. */
struct dbk_sim_setup {
	const struct dbk_sim_opts *o;
	struct dbk_sim_workload w;
	struct dbk_sim_fleet f;
	const struct dbk_sim_policy_ops *pol[DBK_SIM_MAX_POLICIES];
	size_t npol;
	/* A fleet that changes (--scale, --ramp, a failing or a slow
	 * instance, --observe-l7, --weights, --warm-up): the report adds its phases
	 * (starting at bounds) and the fleet's counts. */
	bool changing;
	double bounds[DBK_SIM_MAX_PHASES];
	size_t nbounds;
};

/* One member of a JSON object: kind 's' is the string str, 'b' the
 * boolean num != 0, 'n' the number num; any other kind is left out. */
struct dbk_sim_member {
	const char *key;
	char kind;
	double num;
	const char *str;
};

/* Adds the n members to o, in order, so that a table says what a JSON
 * object holds. */
void dbk_sim_json_add(cJSON *o, const struct dbk_sim_member *m, size_t n);

/* The lines at the top of the output. */
void dbk_sim_setup_print(FILE *f, const struct dbk_sim_setup *u);
/* The same as the JSON's "setup" members. */
void dbk_sim_setup_json(cJSON *setup, const struct dbk_sim_setup *u);

/* One run per policy, the tables, the JSON. 0, or 1 with the reason on
 * stderr. */
int dbk_sim_runs(const struct dbk_sim_setup *u);
/* --slo-capacity: one search per policy, the table, the JSON. 0 or 1. */
int dbk_sim_capacity(struct dbk_sim_setup *u);

/* One simulation of reqs under pol; with nb > 0 its phases from
 * bounds[0..nb) into phases. 0, or -1 with the reason on stderr. */
int dbk_sim_run_one(const struct dbk_sim_config *sc, const struct dbk_sim_req *reqs, size_t n,
                    const struct dbk_sim_policy_ops *pol, struct dbk_sim_result *res,
                    const double *bounds, size_t nb, struct dbk_sim_phase *phases);
/* Writes root to path, pretty-printed, and deletes it (NULL: memory ran
 * short building it). 0, or -1 with the reason on stderr. */
int dbk_sim_write_json(const char *path, cJSON *root);

#endif
