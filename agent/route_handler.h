/* The agent's SPOP handler: the glue between the generic SPOP server
 * (lib/spop_server.h) and the pure router (route.h). It reads the clock,
 * times each NOTIFY and logs the decisions the router reports, so that
 * route.c needs neither a clock nor a log. */
#ifndef DBK_ROUTE_HANDLER_H
#define DBK_ROUTE_HANDLER_H

#include <stdint.h>

#include "histo.h"
#include "model_counts.h"
#include "lib/spop_server.h"
#include "route.h"

struct dbk_route_handler {
	struct dbk_route *route;
	/* Time to handle one NOTIFY (decode, decide, encode), seconds. */
	struct dbk_histo notify_seconds;
	/* Refusals come in floods (a full lease table refuses everything):
	 * one log line a second, with the count of those not logged. */
	uint64_t refused_logged_ms;
	uint64_t refused_unlogged;
	/* Requests routed per model, every pool's (model routing on). */
	struct dbk_model_counts models;
};

/* Ties h to r (r reports its decisions to h from now on) and returns the
 * handler to give the SPOP server. h must outlive the server. */
struct dbk_spop_handler dbk_route_handler_init(struct dbk_route_handler *h, struct dbk_route *r);

/* Logs r's decisions too: a pool's route, which r hands messages to
 * (route.h's pick). */
void dbk_route_handler_watch(struct dbk_route_handler *h, struct dbk_route *r);

#endif
