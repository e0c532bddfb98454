/* Metrics; see metrics.h. */
#include "metrics.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "lib/array.h"

const char *dbk_metrics_class_name(enum dbk_sim_class c)
{
	switch (c) {
	case DBK_CLASS_ALL: return "all";
	case DBK_CLASS_SHORT: return "short";
	case DBK_CLASS_LONG: return "long";
	case DBK_NCLASSES: break;
	}
	return "?";
}

void dbk_metrics_init(struct dbk_metrics *m, const struct dbk_slo *slo)
{
	memset(m, 0, sizeof(*m));
	if (slo)
		m->slo = *slo;
}

static void dvec_free(struct dbk_dvec *d)
{
	free(d->v);
	memset(d, 0, sizeof(*d));
}

void dbk_metrics_free(struct dbk_metrics *m)
{
	int i;

	for (i = 0; i < 2; i++) {
		dvec_free(&m->ttft[i]);
		dvec_free(&m->tpot[i]);
		dvec_free(&m->itl[i]);
		dvec_free(&m->e2e[i]);
	}
}

static void dvec_push(struct dbk_metrics *m, struct dbk_dvec *d, double x)
{
	double *nv = dbk_array_room(d->v, &d->cap, d->n, sizeof(*nv), 256);

	if (!nv) {
		m->oom = true;
		return;
	}
	d->v = nv;
	d->v[d->n++] = x;
}

void dbk_metrics_itl(struct dbk_metrics *m, bool is_long, double gap_s)
{
	dvec_push(m, &m->itl[is_long], gap_s);
}

static double tpot_of(double ttft_s, double e2e_s, uint32_t out_tokens)
{
	/* vLLM's client: TPOT only for outputs longer than one token, and
	 * a one-token output meets any TPOT objective (its TPOT is 0). */
	return out_tokens > 1 ? (e2e_s - ttft_s) / (double)(out_tokens - 1) : 0;
}

bool dbk_metrics_meets(const struct dbk_slo *slo, double ttft_s, double e2e_s, uint32_t out_tokens)
{
	double tpot = tpot_of(ttft_s, e2e_s, out_tokens);

	return !(slo->ttft_s > 0 && ttft_s > slo->ttft_s) &&
	       !(slo->tpot_s > 0 && tpot > slo->tpot_s) && !(slo->e2e_s > 0 && e2e_s > slo->e2e_s);
}

bool dbk_metrics_completed(struct dbk_metrics *m, bool is_long, double ttft_s, double e2e_s,
                           uint32_t in_tokens, uint32_t out_tokens)
{
	int c = is_long;
	bool good = dbk_metrics_meets(&m->slo, ttft_s, e2e_s, out_tokens);

	dvec_push(m, &m->ttft[c], ttft_s);
	dvec_push(m, &m->e2e[c], e2e_s);
	if (out_tokens > 1)
		dvec_push(m, &m->tpot[c], tpot_of(ttft_s, e2e_s, out_tokens));
	m->completed[c]++;
	m->good[c] += good;
	m->in_tok[c] += in_tokens;
	m->out_tok[c] += out_tokens;
	return good;
}

void dbk_metrics_failed(struct dbk_metrics *m, bool is_long) { m->failed[is_long]++; }

/* k-th smallest (0-based) of v[0..n), n > k; leaves v[k] in place with
 * smaller-or-equal values before it and greater-or-equal after (Hoare
 * partition, median-of-three pivot: deterministic). */
static double select_k(double *v, size_t n, size_t k)
{
	size_t lo = 0, hi = n - 1;

	while (hi > lo) {
		size_t mid = lo + (hi - lo) / 2, i = lo, j = hi;
		double a = v[lo], b = v[mid], c = v[hi], pivot, t;

		/* Median of three, so sorted or constant input stays O(n). */
		if ((a <= b && b <= c) || (c <= b && b <= a))
			pivot = b;
		else if ((b <= a && a <= c) || (c <= a && a <= b))
			pivot = a;
		else
			pivot = c;
		for (;;) {
			while (v[i] < pivot)
				i++;
			while (v[j] > pivot)
				j--;
			if (i >= j)
				break;
			t = v[i];
			v[i] = v[j];
			v[j] = t;
			i++;
			j--;
		}
		/* Now v[lo..j] <= pivot <= v[j+1..hi]. */
		if (k <= j)
			hi = j;
		else
			lo = j + 1;
	}
	return v[k];
}

double dbk_metrics_quantile(double *v, size_t n, double q)
{
	double pos, frac, a, b;
	size_t k, i;

	if (n == 0)
		return 0;
	if (q <= 0)
		q = 0;
	if (q >= 1)
		q = 1;
	pos = q * (double)(n - 1);
	k = (size_t)floor(pos);
	if (k >= n - 1)
		return select_k(v, n, n - 1);
	frac = pos - (double)k;
	a = select_k(v, n, k);
	if (frac == 0)
		return a;
	/* After the selection every later element is >= a: the next
	 * order statistic is their minimum. */
	b = v[k + 1];
	for (i = k + 2; i < n; i++)
		if (v[i] < b)
			b = v[i];
	return a + (b - a) * frac;
}

static void dist(struct dbk_dist *d, double *v, size_t n)
{
	double sum = 0, mx = 0;
	size_t i;

	memset(d, 0, sizeof(*d));
	d->n = n;
	if (n == 0)
		return;
	for (i = 0; i < n; i++) {
		sum += v[i];
		if (i == 0 || v[i] > mx)
			mx = v[i];
	}
	d->mean = sum / (double)n;
	d->max = mx;
	d->p50 = dbk_metrics_quantile(v, n, 0.50);
	d->p90 = dbk_metrics_quantile(v, n, 0.90);
	d->p99 = dbk_metrics_quantile(v, n, 0.99);
}

/* Both classes' samples in one array (for the "all" class). */
static int dist_both(struct dbk_dist *d, const struct dbk_dvec *pair)
{
	size_t n = pair[0].n + pair[1].n;
	double *v;

	if (n == 0) {
		dist(d, NULL, 0);
		return 0;
	}
	v = malloc(n * sizeof(*v));
	if (!v) {
		memset(d, 0, sizeof(*d));
		return -1;
	}
	if (pair[0].n)
		memcpy(v, pair[0].v, pair[0].n * sizeof(*v));
	if (pair[1].n)
		memcpy(v + pair[0].n, pair[1].v, pair[1].n * sizeof(*v));
	dist(d, v, n);
	free(v);
	return 0;
}

static void rates(struct dbk_class_summary *s, double duration_s)
{
	s->requests = s->completed + s->failed;
	if (duration_s > 0) {
		s->req_per_s = (double)s->completed / duration_s;
		s->tok_per_s = (double)s->output_tokens / duration_s;
		s->goodput = (double)s->good / duration_s;
	}
}

int dbk_metrics_summarize(struct dbk_metrics *m, double duration_s, struct dbk_class_summary *out)
{
	struct dbk_class_summary *all = &out[DBK_CLASS_ALL];
	int c, rc = 0;

	memset(out, 0, DBK_NCLASSES * sizeof(*out));
	/* "all" first: the per-class selections below reorder the arrays,
	 * which does not change a copy's quantiles but keeps it simple. */
	rc |= dist_both(&all->ttft, m->ttft);
	rc |= dist_both(&all->tpot, m->tpot);
	rc |= dist_both(&all->itl, m->itl);
	rc |= dist_both(&all->e2e, m->e2e);
	for (c = 0; c < 2; c++) {
		struct dbk_class_summary *s = &out[DBK_CLASS_SHORT + c];

		s->completed = m->completed[c];
		s->failed = m->failed[c];
		s->good = m->good[c];
		s->input_tokens = m->in_tok[c];
		s->output_tokens = m->out_tok[c];
		dist(&s->ttft, m->ttft[c].v, m->ttft[c].n);
		dist(&s->tpot, m->tpot[c].v, m->tpot[c].n);
		dist(&s->itl, m->itl[c].v, m->itl[c].n);
		dist(&s->e2e, m->e2e[c].v, m->e2e[c].n);
		all->completed += s->completed;
		all->failed += s->failed;
		all->good += s->good;
		all->input_tokens += s->input_tokens;
		all->output_tokens += s->output_tokens;
		rates(s, duration_s);
	}
	rates(all, duration_s);
	return rc || m->oom ? -1 : 0;
}
