#include "stats.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

double dbk_stats_percentile(const double *sorted, size_t n, double p)
{
	double rank, frac;
	size_t lo;

	if (n == 0)
		return NAN;
	if (p <= 0)
		return sorted[0];
	if (p >= 100)
		return sorted[n - 1];
	rank = p / 100.0 * (double)(n - 1);
	lo = (size_t)rank;
	frac = rank - (double)lo;
	if (lo + 1 >= n)
		return sorted[n - 1];
	return sorted[lo] + (sorted[lo + 1] - sorted[lo]) * frac;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

void dbk_stats_dist(double *v, size_t n, struct dbk_dist *d)
{
	double sum = 0;
	size_t i;

	d->n = n;
	if (n == 0) {
		d->mean = d->median = d->p90 = d->p99 = d->max = NAN;
		return;
	}
	qsort(v, n, sizeof(*v), cmp_double);
	for (i = 0; i < n; i++)
		sum += v[i];
	d->mean = sum / (double)n;
	d->median = dbk_stats_percentile(v, n, 50);
	d->p90 = dbk_stats_percentile(v, n, 90);
	d->p99 = dbk_stats_percentile(v, n, 99);
	d->max = v[n - 1];
}

bool dbk_stats_tpot(double ttft, double e2e, uint32_t output, double *tpot)
{
	if (output <= 1)
		return false;
	*tpot = (e2e - ttft) / (double)(output - 1);
	return true;
}

bool dbk_stats_slo_any(const struct dbk_slo *slo)
{
	return slo->ttft > 0 || slo->tpot > 0 || slo->e2e > 0;
}

bool dbk_stats_slo_met(const struct dbk_slo *slo, const struct dbk_result *r)
{
	double tpot;

	if (!r->ok)
		return false;
	if (slo->ttft > 0 && r->ttft > slo->ttft)
		return false;
	if (slo->e2e > 0 && r->e2e > slo->e2e)
		return false;
	if (slo->tpot > 0 && dbk_stats_tpot(r->ttft, r->e2e, r->output_tokens, &tpot) &&
	    tpot > slo->tpot)
		return false;
	return true;
}

int dbk_stats_summarize(const struct dbk_result *r, size_t n, int cls, const struct dbk_slo *slo,
                        double duration, struct dbk_summary *out)
{
	double *ttft, *tpot, *e2e, *itl;
	size_t i, n_ok = 0, n_tpot = 0, n_itl = 0, k = 0, m = 0;

	memset(out, 0, sizeof(*out));
	out->duration = duration;
	for (i = 0; i < n; i++) {
		if (cls != DBK_STATS_ALL && r[i].cls != cls)
			continue;
		out->requests++;
		if (!r[i].done)
			continue;
		if (!r[i].ok) {
			out->failed++;
			continue;
		}
		n_ok++;
		n_itl += r[i].n_itl;
	}
	out->completed = n_ok;
	/* One allocation for the four series; +1 keeps it non-zero. */
	ttft = malloc((3 * n_ok + n_itl + 1) * sizeof(double));
	if (!ttft)
		return -1;
	e2e = ttft + n_ok;
	tpot = e2e + n_ok;
	itl = tpot + n_ok;
	for (i = 0; i < n; i++) {
		const struct dbk_result *x = &r[i];

		if ((cls != DBK_STATS_ALL && x->cls != cls) || !x->done || !x->ok)
			continue;
		ttft[k] = x->ttft;
		e2e[k] = x->e2e;
		k++;
		if (dbk_stats_tpot(x->ttft, x->e2e, x->output_tokens, &tpot[n_tpot]))
			n_tpot++;
		if (x->n_itl) {
			memcpy(itl + m, x->itl, x->n_itl * sizeof(double));
			m += x->n_itl;
		}
		out->input_tokens += x->prompt_tokens;
		out->output_tokens += x->output_tokens;
		if (dbk_stats_slo_met(slo, x))
			out->good++;
	}
	dbk_stats_dist(ttft, n_ok, &out->ttft);
	dbk_stats_dist(e2e, n_ok, &out->e2e);
	dbk_stats_dist(tpot, n_tpot, &out->tpot);
	dbk_stats_dist(itl, n_itl, &out->itl);
	free(ttft);
	if (duration > 0) {
		out->req_throughput = (double)n_ok / duration;
		out->out_throughput = (double)out->output_tokens / duration;
		out->in_throughput = (double)out->input_tokens / duration;
	}
	if (!dbk_stats_slo_any(slo))
		out->good = 0;
	out->goodput = dbk_stats_slo_any(slo) && duration > 0 ? (double)out->good / duration : NAN;
	return 0;
}
