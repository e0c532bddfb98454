/* The trace's slice as simulator requests; see workload.h. */
#include "workload.h"

#include <stdlib.h>
#include <string.h>

#include "classes.h"
#include "lib/fileio.h"
#include "lib/log.h"

static int parse(struct dbk_sim_workload *w, const struct dbk_sim_opts *o, char *err, size_t errlen)
{
	char *buf, perr[256];
	size_t len = 0;
	int rc;

	buf = dbk_read_file(o->slice.path, DBK_SIM_TRACE_MAX, &len, err, errlen);
	if (!buf)
		return -1;
	w->fmt = o->slice.format != DBK_TRACE_UNKNOWN ? o->slice.format
	                                              : dbk_trace_detect(o->slice.path, buf, len);
	rc = dbk_trace_parse(w->fmt, buf, len, &w->trace, perr, sizeof(perr));
	free(buf);
	if (rc != 0)
		dbk_errf(err, errlen, "%s: %s", o->slice.path, perr);
	return rc;
}

/* --classes over the slice's input lengths, once: the rate factor
 * changes no class. */
static int assign_classes(struct dbk_sim_workload *w, const struct dbk_sim_opts *o)
{
	uint32_t *in = malloc(w->n * sizeof(*in));
	int rc;

	w->cls = malloc(w->n);
	if (!in || !w->cls) {
		free(in);
		return -1;
	}
	for (size_t k = 0; k < w->n; k++)
		in[k] = w->trace.req[w->first + k].input;
	rc = dbk_sim_classes_assign(in, w->n, o->class_share, !o->classes_drawn, DBK_SIM_CLASS_SEED,
	                            w->cls);
	free(in);
	return rc;
}

int dbk_sim_workload_load(struct dbk_sim_workload *w, const struct dbk_sim_opts *o, char *err,
                          size_t errlen)
{
	struct dbk_select sel;
	struct dbk_select_stats sst;
	size_t k, last;

	memset(w, 0, sizeof(*w));
	if (parse(w, o, err, errlen) != 0)
		return -1;
	w->parsed = w->trace.n;
	if (o->slice.spread_ticks)
		w->spread = dbk_trace_spread(&w->trace, DBK_TRACE_SPREAD_SEED);
	/* The time window; no max-model-len here: a request too long for
	 * the instance it is sent to fails there, as vLLM's 400 does. */
	memset(&sel, 0, sizeof(sel));
	sel.start_s = o->slice.start_s;
	sel.duration_s = o->slice.duration_s;
	dbk_trace_select(&w->trace, &sel, &sst);
	w->window = w->trace.n;
	w->raised = w->trace.n_raised > 0;
	w->first = o->skip < w->trace.n ? o->skip : w->trace.n;
	last = w->trace.n;
	if (o->slice.max_requests && last - w->first > o->slice.max_requests)
		last = w->first + o->slice.max_requests;
	w->n = last - w->first;
	if (w->n == 0) {
		dbk_errf(err, errlen, "no request left in the slice");
		return -1;
	}
	w->reqs = calloc(w->n, sizeof(*w->reqs));
	if (!w->reqs) {
		dbk_errf(err, errlen, "out of memory");
		return -1;
	}
	if (o->nclasses && assign_classes(w, o) != 0) {
		dbk_errf(err, errlen, "out of memory");
		return -1;
	}
	w->ramp = o->ramp;
	w->nramp = o->nramp;
	dbk_sim_workload_rate(w, o->slice.rate_factor);
	/* The rate changes no model or adapter: drawn once, by conversation. */
	dbk_sim_models_assign(&o->models, w->reqs, w->n);
	for (k = 0; k < w->n; k++)
		w->in_tok += w->reqs[k].input_tokens;
	w->span_s = w->reqs[w->n - 1].arrival_s;
	return 0;
}

void dbk_sim_workload_rate(struct dbk_sim_workload *w, double rate_factor)
{
	const struct dbk_trace *tr = &w->trace;
	size_t k;

	for (k = 0; k < w->n; k++) {
		const struct dbk_trace_req *r = &tr->req[w->first + k];
		struct dbk_sim_req *q = &w->reqs[k];

		q->id = (uint32_t)k;
		q->arrival_s = dbk_sim_ramp_time(w->ramp, w->nramp,
		                                 (r->t - tr->req[w->first].t) / rate_factor);
		q->input_tokens = r->input;
		q->output_tokens = r->output;
		q->hash_ids = r->n_hash ? tr->hash + r->hash_off : NULL;
		q->n_hash_ids = r->n_hash;
		q->session = r->session;
		q->has_session = r->has_session;
		q->cls = w->cls ? w->cls[k] : DBK_CLASS_DEFAULT;
	}
}

void dbk_sim_workload_free(struct dbk_sim_workload *w)
{
	free(w->reqs);
	w->reqs = NULL;
	free(w->cls);
	w->cls = NULL;
	dbk_trace_free(&w->trace);
}
