/* --slo-capacity: each policy's SLO capacity (slo.h), a search of
 * simulations at rising and falling rate factors; see modes.h. */
#include "modes.h"
#include "report.h"

#include <string.h>

#include "multimodel.h"

struct cap_ctx {
	struct dbk_sim_setup *u;
	const struct dbk_sim_policy_ops *pol;
	struct dbk_sim_result last;
	double hit_at_capacity; /* prefix-cache hit rate at the capacity */
	double best_rate;
	/* --models: the requests judged (-1: all; else that model's) and the
	 * adapters' loads per 1,000 requests at the capacity. */
	int scope;
	double loads_at_capacity;
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
	if (c->scope >= 0) {
		uint64_t n = c->last.model_offered[c->scope];
		*attain = n ? (double)c->last.model_good[c->scope] / (double)n : 0;
	}
	if (*attain >= c->u->o->search.target && rate > c->best_rate) {
		c->best_rate = rate;
		c->hit_at_capacity = dbk_sim_result_hit_rate(&c->last);
		c->loads_at_capacity = dbk_sim_lora_loads_per_1000(&c->last,
		                                                   c->u->o->models.nmodels);
	}
	return 0;
}

struct cap_row {
	const char *policy;
	struct dbk_slo_result res;
	double hit;
	/* --models: each model's capacity, the loads at the overall one. */
	double model_rate[DBK_SIM_MAX_MODELS];
	double loads;
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

/* v as a ratio to base, "-" without a base. */
static void ratio_text(char *buf, size_t len, double v, double base)
{
	if (base > 0)
		snprintf(buf, len, "%.2f", v / base);
	else
		snprintf(buf, len, "-");
}

static void print_rows(const struct cap_row *rows, size_t n, size_t lc)
{
	size_t k;

	for (k = 0; k < n; k++) {
		const struct dbk_slo_result *r = &rows[k].res;
		char ratio[16], met[40];

		ratio_text(ratio, sizeof(ratio), r->rate, lc < n ? rows[lc].res.rate : 0);
		if (r->rate > 0)
			snprintf(met, sizeof(met), "%.1f%%", 100 * r->attain);
		else /* how close it came, and where */
			snprintf(met, sizeof(met), "max %.1f%% at %.3g", 100 * r->best_attain,
			         r->best_attain_rate);
		printf("%-16s %10.4g %8s %18s %7.1f %6u %6s\n", rows[k].policy, r->rate, ratio, met,
		       100 * rows[k].hit, r->evals, r->closed ? "yes" : "no");
	}
}

/* --models: a model's capacity in its own terms. A rate factor
 * scales every model's arrivals alike, so a model's factor alone says
 * how far its pool's share of the trace can be pushed; its requests per
 * second at that factor (its count over the trace's span at factor 1),
 * per instance of its pool, compare models of different sizes. */
struct model_scale {
	unsigned nmodels;
	unsigned inst[DBK_SIM_MAX_MODELS];
	double req_s[DBK_SIM_MAX_MODELS]; /* at rate factor 1 */
};

static void model_scale(const struct dbk_sim_setup *u, struct model_scale *ms)
{
	unsigned off[DBK_SIM_MAX_MODELS];
	double span1 = u->w.span_s * u->o->slice.rate_factor;

	ms->nmodels = u->o->models.nmodels;
	dbk_sim_models_count(ms->nmodels, u->f.inst_model, u->f.sc.ninstances, u->w.reqs, u->w.n,
	                     ms->inst, off);
	for (unsigned m = 0; m < ms->nmodels; m++)
		ms->req_s[m] = span1 > 0 ? off[m] / span1 : 0;
}

/* Model m's requests per second per instance of its pool at rate. */
static double per_instance(const struct model_scale *ms, unsigned m, double rate)
{
	return ms->inst[m] ? rate * ms->req_s[m] / ms->inst[m] : 0;
}

static cJSON *model_json(const struct cap_row *row, const struct cap_row *lc,
                         const struct model_scale *ms, unsigned m)
{
	double r = row->model_rate[m], b = lc ? lc->model_rate[m] : 0;
	const struct dbk_sim_member mm[] = {
		{ "model", 'n', m, NULL },
		{ "instances", 'n', ms->inst[m], NULL },
		{ "rate_factor", 'n', r, NULL },
		{ "req_per_s", 'n', r * ms->req_s[m], NULL },
		{ "req_per_s_per_instance", 'n', per_instance(ms, m, r), NULL },
		{ "ratio_to_lc", b > 0 ? 'n' : '-', b > 0 ? r / b : 0, NULL },
	};
	cJSON *e = cJSON_CreateObject();

	if (e)
		dbk_sim_json_add(e, mm, sizeof(mm) / sizeof(mm[0]));
	return e;
}

static void models_json(cJSON *e, const struct cap_row *row, const struct cap_row *lc,
                        const struct model_scale *ms)
{
	cJSON *a = cJSON_AddArrayToObject(e, "model_rate_factor");
	cJSON *per = cJSON_AddArrayToObject(e, "model_capacity");

	for (unsigned k = 0; a && k < ms->nmodels; k++)
		cJSON_AddItemToArray(a, cJSON_CreateNumber(row->model_rate[k]));
	for (unsigned k = 0; per && k < ms->nmodels; k++) {
		cJSON *o = model_json(row, lc, ms, k);

		if (!o || !cJSON_AddItemToArray(per, o)) {
			cJSON_Delete(o);
			break;
		}
	}
	cJSON_AddNumberToObject(e, "every_model_rate_factor",
	                        dbk_sim_models_every(row->model_rate, ms->nmodels));
	cJSON_AddNumberToObject(e, "lora_loads_per_1000", row->loads);
}

static cJSON *row_json(const struct cap_row *row, const struct cap_row *lc,
                       const struct model_scale *ms)
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
	if (e && ms->nmodels)
		models_json(e, row, lc, ms);
	return e;
}

static int write_json(const struct dbk_sim_opts *o, const struct cap_row *rows, size_t n, size_t lc,
                      const struct model_scale *ms)
{
	cJSON *root = cJSON_CreateObject();
	cJSON *arr = root ? cJSON_AddArrayToObject(root, "capacity") : NULL;
	size_t k;

	for (k = 0; arr && k < n; k++) {
		cJSON *e = row_json(&rows[k], lc < n ? &rows[lc] : NULL, ms);

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

/* --models: each model's capacity (its own requests' attainment): the
 * rate factor, its requests per second per instance there, the ratio
 * to lc's for that model; every model's (the least), the loads. */
static void print_models(const struct cap_row *rows, size_t n, size_t lc,
                         const struct model_scale *ms)
{
	char ratio[16];

	printf("\nPer model: capacity judged on that model's requests alone: the rate factor, "
	       "that model's requests per second per instance of its pool there, and the ratio "
	       "to lc's for the same model; every: the highest factor at which every model "
	       "meets the target (the least of the models'); loads/1k: adapters read into an "
	       "engine per 1,000 requests at the overall capacity; /s: the model's requests per "
	       "second at factor 1\n%-16s",
	       "");
	for (unsigned m = 0; m < ms->nmodels; m++) {
		char h[48];

		snprintf(h, sizeof(h), "model %u, %u inst., %.3g/s", m, ms->inst[m], ms->req_s[m]);
		printf("  %-24s", h);
	}
	printf("\n%-16s", "policy");
	for (unsigned m = 0; m < ms->nmodels; m++)
		printf("  %8s %8s %6s", "factor", "r/s/inst", "vs lc");
	printf(" %8s %6s %9s\n", "every", "vs lc", "loads/1k");
	for (size_t k = 0; k < n; k++) {
		const struct cap_row *b = lc < n ? &rows[lc] : NULL;
		double every = dbk_sim_models_every(rows[k].model_rate, ms->nmodels);

		printf("%-16s", rows[k].policy);
		for (unsigned m = 0; m < ms->nmodels; m++) {
			double r = rows[k].model_rate[m];

			ratio_text(ratio, sizeof(ratio), r, b ? b->model_rate[m] : 0);
			printf("  %8.4g %8.3g %6s", r, per_instance(ms, m, r), ratio);
		}
		ratio_text(ratio, sizeof(ratio), every,
		           b ? dbk_sim_models_every(b->model_rate, ms->nmodels) : 0);
		printf(" %8.4g %6s %9.1f\n", every, ratio, rows[k].loads);
	}
}

/* The capacity of policy k judged on scope's requests (-1: all). */
static int search(struct dbk_sim_setup *u, size_t k, int scope, struct cap_ctx *c,
                  struct dbk_slo_result *res)
{
	memset(c, 0, sizeof(*c));
	c->u = u;
	c->pol = u->pol[k];
	c->scope = scope;
	return dbk_slo_capacity(&u->o->search, cap_eval, c, res);
}

int dbk_sim_capacity(struct dbk_sim_setup *u)
{
	struct cap_row rows[DBK_SIM_MAX_POLICIES];
	struct model_scale ms;
	size_t k, lc = u->npol;

	model_scale(u, &ms);
	print_head(u->o);
	for (k = 0; k < u->npol; k++) {
		struct cap_ctx c;
		struct dbk_slo_result mr;

		if (search(u, k, -1, &c, &rows[k].res) != 0)
			return 1;
		rows[k].policy = u->pol[k]->name;
		rows[k].hit = c.hit_at_capacity;
		rows[k].loads = c.loads_at_capacity;
		for (unsigned m = 0; m < u->o->models.nmodels; m++) {
			if (search(u, k, (int)m, &c, &mr) != 0)
				return 1;
			rows[k].model_rate[m] = mr.rate;
		}
		if (strcmp(u->pol[k]->name, "lc") == 0)
			lc = k;
	}
	print_rows(rows, u->npol, lc);
	if (u->o->models.nmodels)
		print_models(rows, u->npol, lc, &ms);
	if (u->o->json && write_json(u->o, rows, u->npol, lc, &ms) != 0)
		return 1;
	return 0;
}
