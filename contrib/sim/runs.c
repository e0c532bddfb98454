/* The default mode: one run per policy, the tables, the JSON; and the
 * pieces the capacity search shares; see modes.h. */
#include "modes.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "report.h"
#include "lib/log.h"

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

int dbk_sim_write_json(const char *path, cJSON *root)
{
	char *text = root ? cJSON_Print(root) : NULL;
	FILE *f;
	int rc;

	cJSON_Delete(root);
	if (!text) {
		fprintf(stderr, "dbucket-sim: out of memory writing JSON\n");
		return -1;
	}
	f = fopen(path, "w");
	rc = f ? 0 : -1;
	if (f) {
		if (fputs(text, f) == EOF || fputc('\n', f) == EOF)
			rc = -1;
		if (fclose(f) != 0)
			rc = -1;
	}
	free(text);
	if (rc != 0)
		fprintf(stderr, "dbucket-sim: %s: %s\n", path, strerror(errno));
	return rc;
}

/* The slow instance's share of the requests arriving in each 30 s (a
 * 30th of the arrivals' span when shorter), on stderr: "slow-share
 * POLICY" then per window its requests and prompt tokens, sent to it /
 * arrived. */
static void slow_series(const struct dbk_sim *s, const char *name)
{
	struct dbk_sim_slow_window w[256];
	size_t nr = dbk_sim_nrequests(s);
	double span = nr ? dbk_sim_req(s, (uint32_t)(nr - 1))->arrival_s -
	                              dbk_sim_req(s, 0)->arrival_s
	                 : 0;
	double win = span > 0 && span < 900 ? span / 30 : 30;
	size_t n = dbk_sim_slow_windows(s, win, w, 256);

	fprintf(stderr, "slow-share %s (per %g s, requests/all:tokens/all):", name, win);
	for (size_t k = 0; k < n; k++)
		fprintf(stderr, " %llu/%llu:%llu/%llu", (unsigned long long)w[k].sent,
		        (unsigned long long)w[k].offered, (unsigned long long)w[k].sent_tokens,
		        (unsigned long long)w[k].offered_tokens);
	fputc('\n', stderr);
}

int dbk_sim_run_one(const struct dbk_sim_config *sc, const struct dbk_sim_req *reqs, size_t n,
                    const struct dbk_sim_policy_ops *pol, struct dbk_sim_result *res,
                    const double *bounds, size_t nb, struct dbk_sim_phase *phases)
{
	struct dbk_sim *s;
	char err[256];
	int rc;

	s = dbk_sim_new(sc, reqs, n, pol, err, sizeof(err));
	if (!s) {
		fprintf(stderr, "dbucket-sim: %s: %s\n", pol->name, err);
		return -1;
	}
	rc = dbk_sim_run(s, err, sizeof(err));
	if (rc == 0 && dbk_sim_result(s, res) != 0) {
		dbk_errf(err, sizeof(err), "out of memory in the metrics");
		rc = -1;
	}
	if (rc == 0 && sc->slow_factor > 0)
		slow_series(s, pol->name);
	if (rc == 0 && nb > 0 && dbk_sim_phases(s, bounds, nb, phases) != 0) {
		dbk_errf(err, sizeof(err), "out of memory in the phases");
		rc = -1;
	}
	dbk_sim_free(s);
	if (rc != 0)
		fprintf(stderr, "dbucket-sim: %s: %s\n", pol->name, err);
	return rc;
}

/* What the engines did besides serving: preemptions, refusals, how
 * busy, how much the prefix caches hit. */
static void engine_table(FILE *f, const struct dbk_sim_run_report *runs, size_t n,
                         unsigned instances)
{
	size_t k;

	fprintf(f, "\n%-16s %9s %9s %8s %9s %9s %9s\n", "policy", "preempt", "redirect", "too-long",
	        "refused", "busy %", "hit %");
	for (k = 0; k < n; k++) {
		const struct dbk_sim_result *r = &runs[k].res;

		fprintf(f, "%-16s %9llu %9llu %8llu %9llu %9.1f %9.1f\n", runs[k].policy,
		        (unsigned long long)r->preemptions, (unsigned long long)r->redirects,
		        (unsigned long long)r->too_long, (unsigned long long)r->refused,
		        r->duration_s > 0 ? 100.0 * r->busy_s / (r->duration_s * instances) : 0,
		        100 * dbk_sim_result_hit_rate(r));
	}
}

int dbk_sim_runs(const struct dbk_sim_setup *u)
{
	struct dbk_sim_run_report runs[DBK_SIM_MAX_POLICIES];
	size_t k;
	int baseline;

	memset(runs, 0, sizeof(runs));
	for (k = 0; k < u->npol; k++) {
		double t0 = wall_now();

		if (dbk_sim_run_one(&u->f.sc, u->w.reqs, u->w.n, u->pol[k], &runs[k].res, u->bounds,
		                    u->changing ? u->nbounds : 0, runs[k].phases) != 0)
			return 1;
		runs[k].nphases = u->changing ? u->nbounds : 0;
		runs[k].policy = u->pol[k]->name;
		runs[k].wall_s = wall_now() - t0;
	}
	baseline = dbk_sim_report_find(runs, u->npol, "lc");
	dbk_sim_report_table(stdout, runs, u->npol, baseline);
	engine_table(stdout, runs, u->npol, (unsigned)u->o->instances);
	if (u->changing)
		dbk_sim_report_phases(stdout, runs, u->npol);
	bool prio = u->o->nclasses || u->o->admission;
	if (prio)
		dbk_sim_report_prio(stdout, runs, u->npol);
	unsigned nm = u->o->models.nmodels;
	if (nm)
		dbk_sim_report_models(stdout, runs, u->npol, nm);
	if (u->o->json) {
		cJSON *root = dbk_sim_report_json(runs, u->npol, baseline);
		cJSON *setup = root ? cJSON_AddObjectToObject(root, "setup") : NULL;

		if (setup) {
			dbk_sim_setup_json(setup, u);
			if (prio)
				dbk_sim_report_prio_json(root, runs, u->npol);
			if (nm)
				dbk_sim_report_models_json(root, runs, u->npol, nm);
		} else {
			cJSON_Delete(root);
			root = NULL;
		}
		if (dbk_sim_write_json(u->o->json, root) != 0)
			return 1;
	}
	return 0;
}
