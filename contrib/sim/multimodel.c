/* Models and adapters of a multi-model fleet; see multimodel.h. */
#include "multimodel.h"

#include <math.h>

#include "u64map.h"

int dbk_sim_models_instances(const struct dbk_sim_models *m, unsigned n, uint8_t *model_of)
{
	unsigned count[DBK_SIM_MAX_MODELS] = { 0 }, given[DBK_SIM_MAX_MODELS] = { 0 };
	double sum = 0, rem[DBK_SIM_MAX_MODELS];
	unsigned left = n, k, i;

	if (m->nmodels == 0) {
		for (i = 0; i < n; i++)
			model_of[i] = 0;
		return 0;
	}
	if (n < m->nmodels)
		return -1;
	for (k = 0; k < m->nmodels; k++)
		sum += m->share[k];
	/* One each first (a model with no server is a 503 for all its
	 * traffic), the rest by largest remainder of the shares. */
	for (k = 0; k < m->nmodels; k++) {
		double want = m->share[k] / sum * n;

		count[k] = want >= 1 ? (unsigned)want : 1;
		rem[k] = want - count[k];
		left -= count[k] <= left ? count[k] : left;
	}
	while (left > 0) {
		unsigned best = 0;

		for (k = 1; k < m->nmodels; k++)
			if (rem[k] > rem[best])
				best = k;
		count[best]++;
		rem[best] -= 1;
		left--;
	}
	/* Interleaved: instance i goes to the model furthest behind its
	 * proportional share of the first i + 1 (ties to the lower). */
	for (i = 0; i < n; i++) {
		unsigned best = m->nmodels;
		double lag = -1e300;

		for (k = 0; k < m->nmodels; k++) {
			double d = (double)count[k] * (i + 1) / n - given[k];

			if (given[k] < count[k] && d > lag) {
				lag = d;
				best = k;
			}
		}
		model_of[i] = (uint8_t)best;
		given[best]++;
	}
	return 0;
}

void dbk_sim_models_count(unsigned nmodels, const uint8_t *model_of, unsigned n,
                          const struct dbk_sim_req *reqs, size_t nreq, unsigned *inst,
                          unsigned *offered)
{
	for (unsigned k = 0; k < nmodels; k++)
		inst[k] = offered[k] = 0;
	if (!nmodels) /* one model: there is no model_of */
		return;
	for (unsigned i = 0; i < n; i++)
		if (model_of[i] < nmodels)
			inst[model_of[i]]++;
	for (size_t j = 0; j < nreq; j++)
		if (reqs[j].model < nmodels)
			offered[reqs[j].model]++;
}

double dbk_sim_models_every(const double *rate, unsigned nmodels)
{
	double least = nmodels ? rate[0] : 0;

	for (unsigned k = 1; k < nmodels; k++)
		if (rate[k] < least)
			least = rate[k];
	return least;
}

unsigned dbk_sim_models_parent(const struct dbk_sim_models *m, uint32_t lora)
{
	return m->nmodels ? (lora - 1) % m->nmodels : 0;
}

static double unit(uint64_t x) { return (double)(x >> 11) * 0x1p-53; }

/* Adapter of model k of Zipf rank drawn by u, or 0 when it has none. */
static uint32_t zipf_adapter(const struct dbk_sim_models *m, unsigned k, double u)
{
	unsigned na = m->nadapters > k ? (m->nadapters - 1 - k) / m->nmodels + 1 : 0;
	double total = 0, acc = 0;
	unsigned r;

	for (r = 0; r < na; r++)
		total += 1.0 / pow(r + 1, DBK_SIM_ZIPF_S);
	for (r = 0; r < na; r++) {
		acc += 1.0 / pow(r + 1, DBK_SIM_ZIPF_S);
		if (u * total < acc)
			break;
	}
	if (na == 0)
		return 0;
	if (r == na)
		r = na - 1;
	return k + 1 + r * m->nmodels;
}

void dbk_sim_models_assign(const struct dbk_sim_models *m, struct dbk_sim_req *reqs, size_t n)
{
	double sum = 0;
	unsigned k;

	if (m->nmodels == 0)
		return;
	for (k = 0; k < m->nmodels; k++)
		sum += m->share[k];
	for (size_t j = 0; j < n; j++) {
		struct dbk_sim_req *q = &reqs[j];
		/* A conversation keeps its model and adapter. */
		uint64_t key = q->has_session ? q->session : ~(uint64_t)q->id;
		double u = unit(dbk_u64map_mix64(m->seed ^ key)) * sum, acc = 0;

		for (k = 0; k + 1 < m->nmodels; k++) {
			acc += m->share[k];
			if (u < acc)
				break;
		}
		q->model = (uint8_t)k;
		q->lora = 0;
		if (m->nadapters && unit(dbk_u64map_mix64_pair(m->seed, key)) < m->adapter_share)
			q->lora = zipf_adapter(m, k, unit(dbk_u64map_mix64_pair(key, m->seed)));
	}
}
