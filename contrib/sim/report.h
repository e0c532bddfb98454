/* The simulator's report: one table of policies, their ratios to a
 * baseline (least connections), and the same as JSON. */
#ifndef DBK_SIM_REPORT_H
#define DBK_SIM_REPORT_H

#include <stddef.h>
#include <stdio.h>

#include <cjson/cJSON.h>

#include "phases.h"
#include "sim.h"

struct dbk_sim_run_report {
	const char *policy;
	struct dbk_sim_result res;
	double wall_s; /* < 0: not measured (left out) */
	/* A fleet that changes: its phases (0: none, and neither the
	 * tables nor the JSON speak of them). */
	struct dbk_sim_phase phases[DBK_SIM_MAX_PHASES];
	size_t nphases;
};

/* Index of the run named name, or -1. */
int dbk_sim_report_find(const struct dbk_sim_run_report *runs, size_t n, const char *name);

/* The table; then, when baseline >= 0, each metric as a ratio to that
 * run's. */
void dbk_sim_report_table(FILE *f, const struct dbk_sim_run_report *runs, size_t n, int baseline);

/* The fleet's counts per policy (server errors, marks down, new
 * engines, misrouted requests), each phase's SLO attainment side by
 * side, then each phase's table. */
void dbk_sim_report_phases(FILE *f, const struct dbk_sim_run_report *runs, size_t n);

/* {"policies": [...]} with every class's full distributions (ms) and,
 * when baseline >= 0, "ratio_to_<name>" per run. NULL on memory
 * shortage. */
cJSON *dbk_sim_report_json(const struct dbk_sim_run_report *runs, size_t n, int baseline);

/* Per priority class (--classes, --admission; report_prio.c): each
 * policy's requests offered, admitted, shed, retried, the share within
 * every objective and goodput, then all classes; and the same as a
 * "priority_classes" object in each of root's "policies". */
void dbk_sim_report_prio(FILE *f, const struct dbk_sim_run_report *runs, size_t n);
void dbk_sim_report_prio_json(cJSON *root, const struct dbk_sim_run_report *runs, size_t n);

/* Per base model (--models; report_models.c): each policy's share of
 * each model's requests within every objective, of all, the adapters
 * read into an engine (lora_loads) and copied to a GPU slot per 1,000
 * requests, and requests sent to another model's instance (must be 0);
 * and the same as "models" in each of root's "policies". */
void dbk_sim_report_models(FILE *f, const struct dbk_sim_run_report *runs, size_t n,
                           unsigned nmodels);
void dbk_sim_report_models_json(cJSON *root, const struct dbk_sim_run_report *runs, size_t n,
                                unsigned nmodels);
/* The run's lora_loads per 1,000 requests offered. */
double dbk_sim_lora_loads_per_1000(const struct dbk_sim_result *r, unsigned nmodels);

#endif
