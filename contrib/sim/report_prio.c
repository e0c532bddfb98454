/* The report per priority class (issue 28): what each class got under
 * each policy, in the text and the JSON; see report.h. */
#include "report.h"

#include "modes.h"

static double frac(uint64_t a, uint64_t b) { return b ? (double)a / (double)b : 0; }

/* Whether any request of the run was held (--admit-queue-s): only then
 * do the reports speak of it. */
static bool any_held(const struct dbk_sim_result *r)
{
	for (int c = 0; c < DBK_CLASS_N; c++)
		if (r->prio[c].held)
			return true;
	return false;
}

/* With clients that retry as the SDKs do: what their retries came to,
 * per class. "within-last%" is within every objective counted from
 * the last send, as the client that retried sees it. */
static void report_retries(FILE *f, const struct dbk_sim_run_report *runs, size_t n)
{
	fprintf(f, "\nRetries (clients as the openai SDKs): first-shed = shed at the first send; "
	           "gave-up = shed at the last\n");
	fprintf(f, "%-16s %-9s %10s %8s %9s %8s %8s %8s %12s\n", "policy", "class", "first-shed",
	        "retries", "retry-adm", "adm%", "served", "gave-up", "within-last%");
	for (size_t k = 0; k < n; k++) {
		const struct dbk_sim_result *r = &runs[k].res;

		if (!r->retry_sdk)
			continue;
		for (int c = 0; c < DBK_CLASS_N; c++) {
			const struct dbk_sim_prio *p = &r->prio[c];

			fprintf(f, "%-16s %-9s %10llu %8llu %9llu %8.1f %8llu %8llu %12.1f\n",
			        runs[k].policy, dbk_class_name((enum dbk_class)c),
			        (unsigned long long)p->first_shed, (unsigned long long)p->retried,
			        (unsigned long long)p->retry_admitted,
			        100 * frac(p->retry_admitted, p->retried),
			        (unsigned long long)p->admitted, (unsigned long long)p->shed,
			        100 * frac(p->good_last, p->offered));
		}
	}
}

void dbk_sim_report_prio(FILE *f, const struct dbk_sim_run_report *runs, size_t n)
{
	fprintf(f, "\nPriority classes: within = done within every objective, over offered; "
	           "shed = refused in the end\n");
	fprintf(f, "%-16s %-9s %8s %8s %7s %7s %8s %9s\n", "policy", "class", "offered", "admitted",
	        "shed", "retried", "within%", "goodput/s");
	for (size_t k = 0; k < n; k++) {
		const struct dbk_sim_result *r = &runs[k].res;
		struct dbk_sim_prio all = { 0 };

		for (int c = 0; c < DBK_CLASS_N; c++) {
			const struct dbk_sim_prio *p = &r->prio[c];

			all.offered += p->offered;
			all.admitted += p->admitted;
			all.shed += p->shed;
			all.retried += p->retried;
			all.good += p->good;
			fprintf(f, "%-16s %-9s %8llu %8llu %7llu %7llu %8.1f %9.3f\n",
			        runs[k].policy, dbk_class_name((enum dbk_class)c),
			        (unsigned long long)p->offered, (unsigned long long)p->admitted,
			        (unsigned long long)p->shed, (unsigned long long)p->retried,
			        100 * frac(p->good, p->offered),
			        r->duration_s > 0 ? (double)p->good / r->duration_s : 0);
		}
		fprintf(f, "%-16s %-9s %8llu %8llu %7llu %7llu %8.1f %9.3f\n", runs[k].policy,
		        "all", (unsigned long long)all.offered, (unsigned long long)all.admitted,
		        (unsigned long long)all.shed, (unsigned long long)all.retried,
		        100 * frac(all.good, all.offered), r->cls[DBK_CLASS_ALL].goodput);
		if (any_held(r))
			fprintf(f, "%-16s held before a shed: %llu standard, %llu sheddable\n",
			        runs[k].policy,
			        (unsigned long long)r->prio[DBK_CLASS_STANDARD].held,
			        (unsigned long long)r->prio[DBK_CLASS_SHEDDABLE].held);
	}
	if (n && runs[0].res.retry_sdk)
		report_retries(f, runs, n);
}

void dbk_sim_report_prio_json(cJSON *root, const struct dbk_sim_run_report *runs, size_t n)
{
	cJSON *arr = cJSON_GetObjectItem(root, "policies");

	for (size_t k = 0; k < n; k++) {
		cJSON *o = cJSON_GetArrayItem(arr, (int)k);
		cJSON *pc = o ? cJSON_AddObjectToObject(o, "priority_classes") : NULL;
		const struct dbk_sim_result *r = &runs[k].res;

		for (int c = 0; pc && c < DBK_CLASS_N; c++) {
			const struct dbk_sim_prio *p = &r->prio[c];
			cJSON *e = cJSON_AddObjectToObject(pc, dbk_class_name((enum dbk_class)c));
			const struct dbk_sim_member m[] = {
				{ "offered", 'n', (double)p->offered, NULL },
				{ "admitted", 'n', (double)p->admitted, NULL },
				{ "shed", 'n', (double)p->shed, NULL },
				{ "retried", 'n', (double)p->retried, NULL },
				{ "held", any_held(r) ? 'n' : 0, (double)p->held, NULL },
				{ "first_shed", r->retry_sdk ? 'n' : 0, (double)p->first_shed,
				  NULL },
				{ "retry_admitted", r->retry_sdk ? 'n' : 0,
				  (double)p->retry_admitted, NULL },
				{ "good_from_last_send", r->retry_sdk ? 'n' : 0,
				  (double)p->good_last, NULL },
				{ "good", 'n', (double)p->good, NULL },
				{ "attainment", 'n', frac(p->good, p->offered), NULL },
				{ "goodput", 'n',
				  r->duration_s > 0 ? (double)p->good / r->duration_s : 0, NULL },
			};

			if (e)
				dbk_sim_json_add(e, m, sizeof(m) / sizeof(m[0]));
		}
	}
}
