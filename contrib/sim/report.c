/* Tables and JSON; see report.h. */
#include "report.h"

#include <math.h>
#include <stddef.h>
#include <string.h>

int dbk_sim_report_find(const struct dbk_sim_run_report *runs, size_t n, const char *name)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(runs[i].policy, name) == 0)
			return (int)i;
	return -1;
}

/* The table's columns, each a number taken from a result: a count or a
 * rate (get), or a latency (get NULL): a quantile of one class's
 * distribution, in milliseconds. */
struct col {
	const char *head;
	const char *key; /* in JSON */
	const char *fmt;
	double (*get)(const struct dbk_sim_result *r);
	enum dbk_sim_class cls;
	size_t dist; /* struct dbk_dist in struct dbk_class_summary */
	size_t q;    /* double in struct dbk_dist */
};

#define CLS(r, c) (&(r)->cls[DBK_CLASS_##c])
static double c_done(const struct dbk_sim_result *r) { return (double)CLS(r, ALL)->completed; }
static double c_fail(const struct dbk_sim_result *r) { return (double)CLS(r, ALL)->failed; }
static double c_rps(const struct dbk_sim_result *r) { return CLS(r, ALL)->req_per_s; }
static double c_tps(const struct dbk_sim_result *r) { return CLS(r, ALL)->tok_per_s; }
static double c_good(const struct dbk_sim_result *r) { return CLS(r, ALL)->goodput; }

#define LATENCY(head, key, fmt, c, d, q)                                                    \
	{                                                                                   \
		head, key, fmt, NULL, DBK_CLASS_##c, offsetof(struct dbk_class_summary, d), \
		        offsetof(struct dbk_dist, q)                                        \
	}

static const struct col cols[] = {
	{ "done", "completed", "%7.0f", .get = c_done },
	{ "fail", "failed", "%6.0f", .get = c_fail },
	{ "req/s", "request_throughput", "%7.2f", .get = c_rps },
	{ "tok/s", "output_token_throughput", "%8.0f", .get = c_tps },
	{ "good/s", "goodput", "%7.2f", .get = c_good },
	LATENCY("TTFTs50", "ttft_short_p50", "%8.0f", SHORT, ttft, p50),
	LATENCY("TTFTs99", "ttft_short_p99", "%8.0f", SHORT, ttft, p99),
	LATENCY("TTFTl50", "ttft_long_p50", "%8.0f", LONG, ttft, p50),
	LATENCY("TTFTl99", "ttft_long_p99", "%8.0f", LONG, ttft, p99),
	LATENCY("TPOT50", "tpot_p50", "%7.1f", ALL, tpot, p50),
	LATENCY("TPOT99", "tpot_p99", "%7.1f", ALL, tpot, p99),
	LATENCY("E2E99", "e2e_p99", "%8.0f", ALL, e2e, p99),
};
#define NCOLS (sizeof(cols) / sizeof(cols[0]))

/* A quantile of no sample is not 0 ms: NAN, printed "-". */
static double col_value(const struct col *c, const struct dbk_sim_result *r)
{
	const struct dbk_dist *d;

	if (c->get)
		return c->get(r);
	d = (const struct dbk_dist *)((const char *)&r->cls[c->cls] + c->dist);
	return d->n ? 1e3 * *(const double *)((const char *)d + c->q) : NAN;
}

/* Width of a column: that of its format's numbers. */
static int col_width(const struct col *c)
{
	int w = 0;

	sscanf(c->fmt, "%%%d", &w);
	return w;
}

static void rule(FILE *f)
{
	size_t i;
	int w = 16;

	for (i = 0; i < NCOLS; i++)
		w += 1 + col_width(&cols[i]);
	w += 8;
	while (w-- > 0)
		fputc('-', f);
	fputc('\n', f);
}

static void heads(FILE *f, bool wall)
{
	size_t i;

	fprintf(f, "%-16s", "policy");
	for (i = 0; i < NCOLS; i++)
		fprintf(f, " %*s", col_width(&cols[i]), cols[i].head);
	if (wall)
		fprintf(f, " %7s", "wall s");
	fputc('\n', f);
}

/* One line a run: its numbers, or with base their ratios to base's ("-"
 * where a number or the ratio is not one). */
static void rows(FILE *f, const struct dbk_sim_run_report *runs, size_t n,
                 const struct dbk_sim_result *base)
{
	for (size_t r = 0; r < n; r++) {
		fprintf(f, "%-16s", runs[r].policy);
		for (size_t i = 0; i < NCOLS; i++) {
			int w = col_width(&cols[i]);
			double v = col_value(&cols[i], &runs[r].res);
			double b = base ? col_value(&cols[i], base) : NAN;

			fputc(' ', f);
			if (base && b != 0 && !isnan(b) && !isnan(v))
				fprintf(f, "%*.2f", w, v / b);
			else if (base || isnan(v))
				fprintf(f, "%*s", w, "-");
			else
				fprintf(f, cols[i].fmt, v);
		}
		if (!base && runs[r].wall_s >= 0)
			fprintf(f, " %7.2f", runs[r].wall_s);
		fputc('\n', f);
	}
}

void dbk_sim_report_table(FILE *f, const struct dbk_sim_run_report *runs, size_t n, int baseline)
{
	bool wall = false;
	size_t r;

	for (r = 0; r < n; r++)
		if (runs[r].wall_s >= 0)
			wall = true;
	fprintf(f, "latencies in ms of model time; s = short (< threshold), "
	           "l = long; TPOT and E2E over all\n");
	heads(f, wall);
	rule(f);
	rows(f, runs, n, NULL);
	if (baseline < 0 || (size_t)baseline >= n)
		return;
	fprintf(f,
	        "\nratio to %s (throughput and goodput: higher is better; "
	        "latencies: lower is better)\n",
	        runs[baseline].policy);
	heads(f, false);
	rule(f);
	rows(f, runs, n, &runs[baseline].res);
}

/* ---- A fleet that changes. ---- */

static double attain(const struct dbk_sim_phase *p)
{
	return p->offered ? 100.0 * (double)p->good / (double)p->offered : NAN;
}

/* A number, or "-" for none. */
static void num(FILE *f, int w, int prec, double v)
{
	if (isnan(v))
		fprintf(f, " %*s", w, "-");
	else
		fprintf(f, " %*.*f", w, prec, v);
}

static void phase_table(FILE *f, const struct dbk_sim_run_report *runs, size_t n, size_t k)
{
	const struct dbk_sim_phase *p0 = &runs[0].phases[k];

	fprintf(f, "\nphase %zu: arrivals from %g s", k + 1, p0->from_s);
	if (isfinite(p0->to_s))
		fprintf(f, " to %g s", p0->to_s);
	fprintf(f, ", %u instances at its start\n", p0->instances);
	fprintf(f, "%-16s %8s %8s %7s %8s %8s %8s %7s %7s\n", "policy", "offered", "done", "fail",
	        "attain%", "TTFT50", "TTFT99", "TPOT50", "TPOT99");
	for (size_t r = 0; r < n; r++) {
		const struct dbk_sim_phase *p = &runs[r].phases[k];

		fprintf(f, "%-16s %8llu %8llu %7llu", runs[r].policy,
		        (unsigned long long)p->offered, (unsigned long long)p->completed,
		        (unsigned long long)p->failed);
		num(f, 8, 1, attain(p));
		num(f, 8, 0, 1e3 * p->ttft_p50);
		num(f, 8, 0, 1e3 * p->ttft_p99);
		num(f, 7, 1, 1e3 * p->tpot_p50);
		num(f, 7, 1, 1e3 * p->tpot_p99);
		fputc('\n', f);
	}
}

void dbk_sim_report_phases(FILE *f, const struct dbk_sim_run_report *runs, size_t n)
{
	size_t np = n ? runs[0].nphases : 0;

	fprintf(f, "\nthe fleet: http500 = answered at once by the failing instance; "
	           "down = times marked down\n(--observe-l7); joined = instances that "
	           "joined with a new engine; misrouted = sent to\nan instance left out "
	           "(0 for every policy); attain%% = done within the SLOs / offered\n");
	fprintf(f, "%-16s %8s %6s %6s %9s", "policy", "http500", "down", "joined", "misrouted");
	for (size_t k = 0; k < np; k++)
		fprintf(f, "  ph%zu %%", k + 1);
	fputc('\n', f);
	for (size_t r = 0; r < n; r++) {
		const struct dbk_sim_result *s = &runs[r].res;

		fprintf(f, "%-16s %8llu %6llu %6llu %9llu", runs[r].policy,
		        (unsigned long long)s->server_errors, (unsigned long long)s->marked_down,
		        (unsigned long long)s->new_engines, (unsigned long long)s->misrouted);
		for (size_t k = 0; k < np; k++)
			num(f, 6, 1, attain(&runs[r].phases[k]));
		fputc('\n', f);
	}
	for (size_t k = 0; k < np; k++)
		phase_table(f, runs, n, k);
}

/* ---- JSON. ---- */

static cJSON *dist_json(const struct dbk_dist *d)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "n", (double)d->n);
	cJSON_AddNumberToObject(o, "mean", 1e3 * d->mean);
	cJSON_AddNumberToObject(o, "p50", 1e3 * d->p50);
	cJSON_AddNumberToObject(o, "p90", 1e3 * d->p90);
	cJSON_AddNumberToObject(o, "p99", 1e3 * d->p99);
	cJSON_AddNumberToObject(o, "max", 1e3 * d->max);
	return o;
}

static cJSON *class_json(const struct dbk_class_summary *c)
{
	cJSON *o = cJSON_CreateObject();

	if (!o)
		return NULL;
	cJSON_AddNumberToObject(o, "requests", (double)c->requests);
	cJSON_AddNumberToObject(o, "completed", (double)c->completed);
	cJSON_AddNumberToObject(o, "failed", (double)c->failed);
	cJSON_AddNumberToObject(o, "good", (double)c->good);
	cJSON_AddNumberToObject(o, "input_tokens", (double)c->input_tokens);
	cJSON_AddNumberToObject(o, "output_tokens", (double)c->output_tokens);
	cJSON_AddNumberToObject(o, "request_throughput", c->req_per_s);
	cJSON_AddNumberToObject(o, "output_token_throughput", c->tok_per_s);
	cJSON_AddNumberToObject(o, "goodput", c->goodput);
	cJSON_AddItemToObject(o, "ttft_ms", dist_json(&c->ttft));
	cJSON_AddItemToObject(o, "tpot_ms", dist_json(&c->tpot));
	cJSON_AddItemToObject(o, "itl_ms", dist_json(&c->itl));
	cJSON_AddItemToObject(o, "e2e_ms", dist_json(&c->e2e));
	return o;
}

static void ms_or_null(cJSON *o, const char *key, double s)
{
	if (isnan(s))
		cJSON_AddNullToObject(o, key);
	else
		cJSON_AddNumberToObject(o, key, 1e3 * s);
}

/* The fleet's counts and the phases, only when the fleet changes. */
static void fleet_json(cJSON *o, const struct dbk_sim_run_report *run)
{
	const struct dbk_sim_result *res = &run->res;
	cJSON *arr;

	cJSON_AddNumberToObject(o, "server_errors", (double)res->server_errors);
	cJSON_AddNumberToObject(o, "marked_down", (double)res->marked_down);
	cJSON_AddNumberToObject(o, "new_engines", (double)res->new_engines);
	cJSON_AddNumberToObject(o, "misrouted", (double)res->misrouted);
	arr = cJSON_AddArrayToObject(o, "phases");
	for (size_t k = 0; arr && k < run->nphases; k++) {
		const struct dbk_sim_phase *p = &run->phases[k];
		cJSON *ph = cJSON_CreateObject();

		if (!ph)
			return;
		cJSON_AddItemToArray(arr, ph);
		cJSON_AddNumberToObject(ph, "from_s", p->from_s);
		if (isfinite(p->to_s))
			cJSON_AddNumberToObject(ph, "to_s", p->to_s);
		else
			cJSON_AddNullToObject(ph, "to_s");
		cJSON_AddNumberToObject(ph, "instances", p->instances);
		cJSON_AddNumberToObject(ph, "top_instance", p->top_instance);
		cJSON_AddNumberToObject(ph, "offered", (double)p->offered);
		cJSON_AddNumberToObject(ph, "completed", (double)p->completed);
		cJSON_AddNumberToObject(ph, "failed", (double)p->failed);
		cJSON_AddNumberToObject(ph, "good", (double)p->good);
		if (p->offered)
			cJSON_AddNumberToObject(ph, "slo_attainment",
			                        (double)p->good / (double)p->offered);
		else
			cJSON_AddNullToObject(ph, "slo_attainment");
		ms_or_null(ph, "ttft_p50_ms", p->ttft_p50);
		ms_or_null(ph, "ttft_p99_ms", p->ttft_p99);
		ms_or_null(ph, "tpot_p50_ms", p->tpot_p50);
		ms_or_null(ph, "tpot_p99_ms", p->tpot_p99);
	}
}

cJSON *dbk_sim_report_json(const struct dbk_sim_run_report *runs, size_t n, int baseline)
{
	cJSON *root = cJSON_CreateObject(), *arr;
	size_t r, i;
	int c;

	if (!root)
		return NULL;
	arr = cJSON_AddArrayToObject(root, "policies");
	for (r = 0; arr && r < n; r++) {
		const struct dbk_sim_result *res = &runs[r].res;
		cJSON *o = cJSON_CreateObject(), *cl;

		if (!o)
			break;
		cJSON_AddItemToArray(arr, o);
		cJSON_AddStringToObject(o, "policy", runs[r].policy);
		if (runs[r].wall_s >= 0)
			cJSON_AddNumberToObject(o, "wall_s", runs[r].wall_s);
		cJSON_AddNumberToObject(o, "duration_s", res->duration_s);
		cJSON_AddNumberToObject(o, "preemptions", (double)res->preemptions);
		cJSON_AddNumberToObject(o, "steps", (double)res->steps);
		cJSON_AddNumberToObject(o, "busy_s", res->busy_s);
		cJSON_AddNumberToObject(o, "prefix_cache_queries",
		                        (double)res->prefix_cache_queries);
		cJSON_AddNumberToObject(o, "prefix_cache_hits", (double)res->prefix_cache_hits);
		cJSON_AddNumberToObject(o, "events", (double)res->events);
		cJSON_AddNumberToObject(o, "refused", (double)res->refused);
		cJSON_AddNumberToObject(o, "too_long", (double)res->too_long);
		cJSON_AddNumberToObject(o, "redirects", (double)res->redirects);
		cJSON_AddNumberToObject(o, "leases_left", (double)res->policy_leases);
		if (runs[r].nphases)
			fleet_json(o, &runs[r]);
		cl = cJSON_AddObjectToObject(o, "classes");
		for (c = 0; cl && c < DBK_NCLASSES; c++)
			cJSON_AddItemToObject(cl, dbk_metrics_class_name(c),
			                      class_json(&res->cls[c]));
		if (baseline >= 0 && (size_t)baseline < n) {
			char key[64];
			cJSON *ra;

			snprintf(key, sizeof(key), "ratio_to_%s", runs[baseline].policy);
			ra = cJSON_AddObjectToObject(o, key);
			for (i = 0; ra && i < NCOLS; i++) {
				double b = col_value(&cols[i], &runs[baseline].res);
				double v = col_value(&cols[i], res);

				if (b != 0 && !isnan(b) && !isnan(v))
					cJSON_AddNumberToObject(ra, cols[i].key, v / b);
				else
					cJSON_AddNullToObject(ra, cols[i].key);
			}
		}
	}
	return root;
}
