/* The simulated fleet dbucket-sim's command line describes: N engines,
 * the first ceil(N/2) the short group, and the simulator's
 * configuration around them. */
#ifndef DBK_SIM_FLEET_H
#define DBK_SIM_FLEET_H

#include "opts.h"
#include "sim.h"

struct dbk_sim_fleet {
	unsigned nshort; /* instances 0..nshort-1 */
	struct dbk_engine_config cshort, clong;
	struct dbk_engine_config *engines; /* one per instance */
	struct dbk_sim_config sc;          /* points at engines */
};

/* 0, or -1 when memory ran short. dbk_sim_fleet_free is due either way. */
int dbk_sim_fleet_build(struct dbk_sim_fleet *f, const struct dbk_sim_opts *o);
void dbk_sim_fleet_free(struct dbk_sim_fleet *f);

#endif
