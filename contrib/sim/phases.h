/* A run cut in phases by model time: before, during and after a fleet's
 * changes (the scale's and the ramp's steps, the start of a failure),
 * each with its SLO attainment and latencies, so that a scale-out or a
 * failing server shows where it happens rather than averaged over the
 * whole run. A request belongs to the phase it arrived in. */
#ifndef DBK_SIM_PHASES_H
#define DBK_SIM_PHASES_H

#include <stddef.h>
#include <stdint.h>

#include "schedule.h"
#include "sim.h"

#define DBK_SIM_MAX_PHASES (2 * DBK_SIM_MAX_STEPS + 2)

struct dbk_sim_phase {
	double from_s, to_s; /* from the first arrival; the last ends at HUGE_VAL */
	unsigned instances;  /* present throughout (the scale's) */
	/* The highest instance a request of the phase was sent to, -1 for
	 * none: below instances, since phases start at the scale's steps
	 * and a request is routed as it arrives (with no overhead). */
	int top_instance;
	uint64_t offered, completed, failed;
	/* Completed within every applied objective (sim.h's slo), as
	 * goodput counts them; attainment = good / offered. */
	uint64_t good;
	/* Seconds; NAN without a sample. TPOT over outputs longer than one
	 * token, as vLLM's client. */
	double ttft_p50, ttft_p99, tpot_p50, tpot_p99;
};

/* The phases' starts: 0, every step's time of the scale and the ramp,
 * and the failure's start when one is set; sorted, without repeats, at
 * most max. Returns how many. */
size_t dbk_sim_phase_bounds(const struct dbk_sim_config *c, const struct dbk_sim_step *ramp,
                            size_t nramp, double *out, size_t max);

/* out[0..nb) from a run's outcomes (after dbk_sim_run). 0, or -1 when
 * memory ran short. */
int dbk_sim_phases(const struct dbk_sim *s, const double *bounds, size_t nb,
                   struct dbk_sim_phase *out);

#endif
