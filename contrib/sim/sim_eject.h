/* The agent's outlier ejection (agent/outlier.h) in the simulator: what
 * one agent learns from the completion lines of the requests it routed,
 * on model time, so that the agent's policies meet a failing instance
 * as they do live. Only the agent's policies (plain, dynamic and those
 * of policy_agent.c) run it, as only dbucket-spoa does; the peers keep
 * what their routers have (and --observe-l7, HAProxy's own, for all). */
#ifndef DBK_SIM_EJECT_H
#define DBK_SIM_EJECT_H

#include <stdbool.h>

#include "outlier.h"
#include "sim.h"

/* The agent's defaults, n instances. -1 when out of memory. */
int dbk_sim_eject_init(struct dbk_outlier *o, unsigned n);

/* Request r, routed by this agent, ended on inst: counts what its
 * completion line would say (a failing instance's 500 is the server's
 * failure, a 400 for a prompt too long the client's, the rest
 * successes). Returns true when inst is to be ejected now (the caller
 * leaves it out until dbk_outlier_tick ends the back-off). */
bool dbk_sim_eject_observe(struct dbk_outlier *o, const struct dbk_sim *s,
                           const struct dbk_sim_req *r, unsigned inst);

#endif
