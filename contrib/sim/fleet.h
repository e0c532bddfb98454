/* The simulated fleet dbucket-sim's command line describes: N engines,
 * the first ceil(N/2) the short group, and the simulator's
 * configuration around them. */
#ifndef DBK_SIM_FLEET_H
#define DBK_SIM_FLEET_H

#include "opts.h"
#include "sim.h"

struct dbk_sim_fleet {
	unsigned nshort; /* instances 0..nshort-1 */
	/* Each group's first instance (on a mixed fleet, with its GPU) */
	struct dbk_engine_config cshort, clong;
	struct dbk_engine_config *engines; /* one per instance */
	double *weights;                   /* one per instance; NULL: none */
	uint8_t *inst_model;               /* --models: one per instance; NULL: none */
	struct dbk_sim_config sc;          /* points at engines, weights, o's scale */
};

/* The GPU profile of instance i from --gpu's list, given to the
 * instances in turn ("h100,a100": every other one an A100), or NULL when
 * that item names no profile. */
const struct dbk_engine_profile *dbk_sim_gpu_at(const char *list, unsigned i);
/* How many items the list has (1 + its commas). */
unsigned dbk_sim_gpu_count(const char *list);

/* 0, or -1 when memory ran short. dbk_sim_fleet_free is due either way. */
int dbk_sim_fleet_build(struct dbk_sim_fleet *f, const struct dbk_sim_opts *o);
void dbk_sim_fleet_free(struct dbk_sim_fleet *f);

#endif
