/* The report per base model and the adapters' loads (issue 27), in the
 * text and the JSON; see report.h. */
#include "report.h"

#include "modes.h"

static double frac(uint64_t a, uint64_t b) { return b ? (double)a / (double)b : 0; }

static uint64_t offered(const struct dbk_sim_result *r, unsigned nmodels)
{
	uint64_t n = 0;

	for (unsigned m = 0; m < nmodels; m++)
		n += r->model_offered[m];
	return n;
}

double dbk_sim_lora_loads_per_1000(const struct dbk_sim_result *r, unsigned nmodels)
{
	return 1000 * frac(r->lora_loads, offered(r, nmodels));
}

void dbk_sim_report_models(FILE *f, const struct dbk_sim_run_report *runs, size_t n,
                           unsigned nmodels)
{
	fprintf(f, "\nModels: within = done within every objective, over offered; "
	           "loads = adapters read into an engine per 1,000 requests\n");
	fprintf(f, "%-16s", "policy");
	for (unsigned m = 0; m < nmodels; m++)
		fprintf(f, " %7s%-2u", "within%", m);
	fprintf(f, " %8s %8s %9s %6s\n", "within%", "loads/1k", "activ/1k", "wrong");
	for (size_t k = 0; k < n; k++) {
		const struct dbk_sim_result *r = &runs[k].res;
		uint64_t good = 0, all = offered(r, nmodels);

		fprintf(f, "%-16s", runs[k].policy);
		for (unsigned m = 0; m < nmodels; m++) {
			good += r->model_good[m];
			fprintf(f, " %9.1f", 100 * frac(r->model_good[m], r->model_offered[m]));
		}
		fprintf(f, " %8.1f %8.1f %9.1f %6llu\n", 100 * frac(good, all),
		        dbk_sim_lora_loads_per_1000(r, nmodels),
		        1000 * frac(r->lora_activations, all), (unsigned long long)r->wrong_model);
	}
}

void dbk_sim_report_models_json(cJSON *root, const struct dbk_sim_run_report *runs, size_t n,
                                unsigned nmodels)
{
	cJSON *arr = cJSON_GetObjectItem(root, "policies");

	for (size_t k = 0; k < n; k++) {
		cJSON *o = cJSON_GetArrayItem(arr, (int)k);
		cJSON *ms = o ? cJSON_AddArrayToObject(o, "models") : NULL;
		const struct dbk_sim_result *r = &runs[k].res;
		const struct dbk_sim_member top[] = {
			{ "lora_loads", 'n', (double)r->lora_loads, NULL },
			{ "lora_activations", 'n', (double)r->lora_activations, NULL },
			{ "lora_loads_per_1000", 'n', dbk_sim_lora_loads_per_1000(r, nmodels),
			  NULL },
			{ "wrong_model", 'n', (double)r->wrong_model, NULL },
		};

		if (!ms)
			continue;
		dbk_sim_json_add(o, top, sizeof(top) / sizeof(top[0]));
		for (unsigned m = 0; m < nmodels; m++) {
			cJSON *e = cJSON_CreateObject();
			const struct dbk_sim_member mm[] = {
				{ "model", 'n', m, NULL },
				{ "offered", 'n', (double)r->model_offered[m], NULL },
				{ "good", 'n', (double)r->model_good[m], NULL },
				{ "attainment", 'n', frac(r->model_good[m], r->model_offered[m]),
				  NULL },
			};

			if (!e)
				break;
			dbk_sim_json_add(e, mm, sizeof(mm) / sizeof(mm[0]));
			if (!cJSON_AddItemToArray(ms, e)) {
				cJSON_Delete(e);
				break;
			}
		}
	}
}
