/* What dbucket-sim replays: the slice of a trace its command line picks
 * (the time window, then the count), as simulator requests. */
#ifndef DBK_SIM_WORKLOAD_H
#define DBK_SIM_WORKLOAD_H

#include <stdbool.h>
#include <stddef.h>

#include "model/trace.h" /* dbucket-bench's reader too: one trace parser */
#include "opts.h"
#include "sim.h"

/* The largest trace file read: a wrong path (a device, a huge log)
 * fails instead of eating the heap. */
#define DBK_SIM_TRACE_MAX ((size_t)1 << 30)

struct dbk_sim_workload {
	struct dbk_trace trace;
	enum dbk_trace_format fmt;
	size_t parsed;   /* requests in the trace */
	size_t window;   /* in the time window */
	size_t first, n; /* the slice: the window's [first, first + n) */
	bool raised;     /* zero lengths were raised to 1 */
	size_t spread;   /* requests moved by --spread-ticks */
	/* --ramp's steps (not copied; nramp 0: none). */
	const struct dbk_sim_step *ramp;
	size_t nramp;
	/* The requests' classes (classes.h), by index in the slice; NULL:
	 * every one standard. */
	uint8_t *cls;
	/* n requests, at the rate factor last set (dbk_sim_workload_rate). */
	struct dbk_sim_req *reqs;
	/* At the command line's rate factor: the arrivals' span in model
	 * time and the slice's input tokens. */
	double span_s, in_tok;
};

/* Reads and parses o->slice.path and keeps its slice, at its rate factor. 0, or
 * -1 with the reason in err (unreadable, unparsable, empty slice,
 * memory). dbk_sim_workload_free is due either way. */
int dbk_sim_workload_load(struct dbk_sim_workload *w, const struct dbk_sim_opts *o, char *err,
                          size_t errlen);
/* Arrivals shifted to start at 0, compressed by rate_factor, then by
 * the ramp's factors (schedule.h). */
void dbk_sim_workload_rate(struct dbk_sim_workload *w, double rate_factor);
void dbk_sim_workload_free(struct dbk_sim_workload *w);

#endif
