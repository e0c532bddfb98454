/* dbucket-sim: replays a request trace against a simulated vLLM fleet
 * under several routing policies and prints one table. Model time only:
 * a whole trace takes seconds of wall time. The jobs: the command line
 * (opts.c), the workload (workload.c), the fleet (fleet.c), the runs and
 * their report (runs.c, capacity.c, setup.c, report.c). */
#include <stdio.h>
#include <string.h>

#include "modes.h"

static int fail(const char *what)
{
	fprintf(stderr, "dbucket-sim: %s\n", what);
	return 1;
}

int main(int argc, char **argv)
{
	struct dbk_sim_opts o;
	struct dbk_sim_setup u;
	char err[512];
	int status, ret;

	if (dbk_sim_opts_parse(argc, argv, &o, &status) != 0)
		return status;
	memset(&u, 0, sizeof(u));
	u.o = &o;
	if (dbk_sim_policy_pick(o.policies, o.nweights > 0, u.pol, DBK_SIM_MAX_POLICIES, &u.npol,
	                        err, sizeof(err)) != 0) {
		fail(err);
		return 2;
	}
	if (dbk_sim_workload_load(&u.w, &o, err, sizeof(err)) != 0)
		ret = fail(err);
	else if (dbk_sim_fleet_build(&u.f, &o) != 0)
		ret = fail("out of memory");
	else {
		u.changing = o.nscale || o.nramp || o.fail_instance >= 0 || o.observe_l7 ||
		             o.nweights || o.warmup_s > 0 || o.slow_instance >= 0;
		u.nbounds = dbk_sim_phase_bounds(&u.f.sc, o.ramp, o.nramp, u.bounds,
		                                 DBK_SIM_MAX_PHASES);
		dbk_sim_setup_print(stdout, &u);
		ret = o.slo_capacity ? dbk_sim_capacity(&u) : dbk_sim_runs(&u);
	}
	dbk_sim_workload_free(&u.w);
	dbk_sim_fleet_free(&u.f);
	return ret;
}
