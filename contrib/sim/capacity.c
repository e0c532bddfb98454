/* --slo-capacity: each policy's SLO capacity (slo.h), a search of
 * simulations at rising and falling rate factors; see modes.h. */
#include "modes.h"

#include <string.h>

struct cap_ctx {
	struct dbk_sim_setup *u;
	const struct dbk_sim_policy_ops *pol;
	struct dbk_sim_result last;
	double hit_at_capacity; /* prefix-cache hit rate at the capacity */
	double best_rate;
};

/* Attainment: requests that completed within every objective, over all
 * requests (failures count against it). */
static int cap_eval(void *ctx, double rate, double *attain)
{
	struct cap_ctx *c = ctx;
	struct dbk_sim_workload *w = &c->u->w;
	const struct dbk_class_summary *all;

	dbk_sim_workload_rate(w, rate);
	if (dbk_sim_run_one(&c->u->f.sc, w->reqs, w->n, c->pol, &c->last, NULL, 0, NULL) != 0)
		return -1;
	all = &c->last.cls[DBK_CLASS_ALL];
	*attain = all->requests ? (double)all->good / (double)all->requests : 0;
	if (*attain >= c->u->o->search.target && rate > c->best_rate) {
		c->best_rate = rate;
		c->hit_at_capacity = dbk_sim_result_hit_rate(&c->last);
	}
	return 0;
}

struct cap_row {
	const char *policy;
	struct dbk_slo_result res;
	double hit;
};

/* Printed before the searches, which take a while. */
static void print_head(const struct dbk_sim_opts *o)
{
	printf("SLO capacity: highest rate factor with >= %.0f%% of requests "
	       "within TTFT %g ms and TPOT %g ms; search from %g, tolerance "
	       "%g, at most %u runs\n\n",
	       o->search.target * 100, o->slo_ttft_ms, o->slo_tpot_ms, o->search.start,
	       o->search.rel_tol, o->search.max_evals);
	printf("%-16s %10s %8s %18s %7s %6s %6s\n", "policy", "capacity", "vs lc", "attained",
	       "hit %", "runs", "closed");
}

static void print_rows(const struct cap_row *rows, size_t n, size_t lc)
{
	size_t k;

	for (k = 0; k < n; k++) {
		const struct dbk_slo_result *r = &rows[k].res;
		char ratio[16] = "-", met[40];

		if (lc < n && rows[lc].res.rate > 0)
			snprintf(ratio, sizeof(ratio), "%.2f", r->rate / rows[lc].res.rate);
		if (r->rate > 0)
			snprintf(met, sizeof(met), "%.1f%%", 100 * r->attain);
		else /* how close it came, and where */
			snprintf(met, sizeof(met), "max %.1f%% at %.3g", 100 * r->best_attain,
			         r->best_attain_rate);
		printf("%-16s %10.4g %8s %18s %7.1f %6u %6s\n", rows[k].policy, r->rate, ratio, met,
		       100 * rows[k].hit, r->evals, r->closed ? "yes" : "no");
	}
}

static cJSON *row_json(const struct cap_row *row, const struct cap_row *lc)
{
	const struct dbk_slo_result *r = &row->res;
	bool ratio = lc && lc->res.rate > 0;
	const struct dbk_sim_member m[] = {
		{ "policy", 's', 0, row->policy },
		{ "rate_factor", 'n', r->rate, NULL },
		{ "ratio_to_lc", ratio ? 'n' : '-', ratio ? r->rate / lc->res.rate : 0, NULL },
		{ "attainment", 'n', r->attain, NULL },
		{ "best_attainment", 'n', r->best_attain, NULL },
		{ "best_attainment_rate_factor", 'n', r->best_attain_rate, NULL },
		{ "prefix_cache_hit_rate", 'n', row->hit, NULL },
		{ "runs", 'n', r->evals, NULL },
		{ "closed", 'b', r->closed, NULL },
	};
	cJSON *e = cJSON_CreateObject();

	if (e)
		dbk_sim_json_add(e, m, sizeof(m) / sizeof(m[0]));
	return e;
}

static int write_json(const struct dbk_sim_opts *o, const struct cap_row *rows, size_t n, size_t lc)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *arr = root ? cJSON_AddArrayToObject(root, "capacity") : NULL;
	size_t k;

	for (k = 0; arr && k < n; k++) {
		cJSON *e = row_json(&rows[k], lc < n ? &rows[lc] : NULL);

		if (!e || !cJSON_AddItemToArray(arr, e)) {
			cJSON_Delete(e);
			break;
		}
	}
	cJSON_AddNumberToObject(root, "target", o->search.target);
	cJSON_AddNumberToObject(root, "tolerance", o->search.rel_tol);
	cJSON_AddNumberToObject(root, "instances", o->instances);
	return dbk_sim_write_json(o->json, root);
}

int dbk_sim_capacity(struct dbk_sim_setup *u)
{
	struct cap_row rows[DBK_SIM_MAX_POLICIES];
	size_t k, lc = u->npol;

	print_head(u->o);
	for (k = 0; k < u->npol; k++) {
		struct cap_ctx c;

		memset(&c, 0, sizeof(c));
		c.u = u;
		c.pol = u->pol[k];
		if (dbk_slo_capacity(&u->o->search, cap_eval, &c, &rows[k].res) != 0)
			return 1;
		rows[k].policy = u->pol[k]->name;
		rows[k].hit = c.hit_at_capacity;
		if (strcmp(u->pol[k]->name, "lc") == 0)
			lc = k;
	}
	print_rows(rows, u->npol, lc);
	if (u->o->json && write_json(u->o, rows, u->npol, lc) != 0)
		return 1;
	return 0;
}
