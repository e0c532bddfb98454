/* Per-request speed learning (predict_learn.h). */
#include "predict_learn.h"

#include <math.h>
#include <string.h>

/* Requests after which an observation counts 1/e: long enough to average
 * a server's mix of requests, short enough to follow a server that
 * changes (a new pod in the slot is a reset, not this). */
#define PRED_LEARN_HORIZON 256.0
/* The prior's scale counts as this many requests, its split between
 * first token and decode as this many (dbk_plearn_solve). */
#define PRED_LEARN_PRIOR 4.0
#define PRED_LEARN_SPLIT 1.0
/* A duration more than this many times off the fleet-speed prediction,
 * either way, counts as this far: an expired lease or an error answered
 * at once is not a speed. */
#define PRED_LEARN_CLAMP 16.0

void dbk_plearn_add(struct dbk_plearn *l, double x1, double x2, double y, double w)
{
	double t = x1 + x2;

	if (!(x1 >= 0 && x2 >= 0 && t > 0 && y > 0 && w > 0) || !isfinite(t + y + w))
		return;
	double u = x1 / t, v = x2 / t;
	double z = fmax(1 / PRED_LEARN_CLAMP, fmin(PRED_LEARN_CLAMP, y / t));
	double keep = pow(1 - 1 / PRED_LEARN_HORIZON, w);

	l->uu = l->uu * keep + w * u * u;
	l->uv = l->uv * keep + w * u * v;
	l->vv = l->vv * keep + w * v * v;
	l->uz = l->uz * keep + w * u * z;
	l->vz = l->vz * keep + w * v * z;
	l->zz = l->zz * keep + w * z * z;
	l->n = l->n * keep + w;
}

void dbk_plearn_fade(struct dbk_plearn *l, double keep)
{
	if (!(keep > 0 && keep < 1))
		return;
	l->uu *= keep;
	l->uv *= keep;
	l->vv *= keep;
	l->uz *= keep;
	l->vz *= keep;
	l->zz *= keep;
	l->n *= keep;
}

/* Ridge towards the prior scaled as the rows say: (S + k2 I) theta =
 * S z + k2 c theta0, with c the prior's common scale fitted to the rows
 * (itself pulled towards 1 by k). Rows that all mix first token and
 * decode alike tell one sum u a + v b and nothing of the split: a
 * ridge towards theta0 itself moves theta only along (u, v), each
 * factor by its share of the rows (rows 30% first token read a prefill
 * 3x slow as a = 1.31, b = 1.72), where towards c theta0 it moves both
 * in the prior's ratio until rows that differ tell them apart. */
void dbk_plearn_solve(const struct dbk_plearn *l, double a0, double b0, double *a, double *b)
{
	double k = PRED_LEARN_PRIOR, k2 = PRED_LEARN_SPLIT;
	double m11 = l->uu + k2, m12 = l->uv, m22 = l->vv + k2;
	double mm = a0 * a0 * l->uu + 2 * a0 * b0 * l->uv + b0 * b0 * l->vv;
	double c = (a0 * l->uz + b0 * l->vz + k) / (mm + k);
	if (!(c > 0) || !isfinite(c))
		c = 1;
	double r1 = l->uz + k2 * c * a0, r2 = l->vz + k2 * c * b0;
	double det = m11 * m22 - m12 * m12;

	*a = a0;
	*b = b0;
	if (!(det > 0) || !isfinite(det))
		return;
	double x = (r1 * m22 - r2 * m12) / det, y = (r2 * m11 - r1 * m12) / det;
	if (isfinite(x) && isfinite(y)) {
		*a = x;
		*b = y;
	}
}

void dbk_plearn_errors(const struct dbk_plearn *l, double a, double b, double *se_a, double *se_b)
{
	double k = PRED_LEARN_SPLIT; /* as the fit holds the split */
	double m11 = l->uu + k, m12 = l->uv, m22 = l->vv + k, det = m11 * m22 - m12 * m12;
	double rss = l->zz - 2 * (a * l->uz + b * l->vz) + a * a * l->uu + 2 * a * b * l->uv +
	             b * b * l->vv;

	*se_a = *se_b = INFINITY;
	if (!(l->n >= 3) || !(det > 0))
		return;
	double var = fmax(0, rss) / (l->n - 2);
	*se_a = sqrt(var * m22 / det);
	*se_b = sqrt(var * m11 / det);
}

double dbk_plearn_solve_b(const struct dbk_plearn *l, double a, double b0)
{
	double k = PRED_LEARN_PRIOR, b = (l->vz - a * l->uv + k * b0) / (l->vv + k);

	return isfinite(b) ? b : b0;
}

/* Drops the snapshots [at, at + k) and moves the later ones down. */
static void match_drop(struct dbk_plearn_match *m, unsigned at, unsigned k)
{
	size_t later = (m->count - at - k) * sizeof(double);

	memmove(&m->snap_n[at], &m->snap_n[at + k], later);
	memmove(&m->snap_sum[at], &m->snap_sum[at + k], later);
	memmove(&m->snap_own[at], &m->snap_own[at + k], later);
	m->count -= k;
}

/* When the snapshots are full, the one inside the shortest span of two
 * goes (its neighbours' span then priced at their mean; the oldest such
 * on a tie): the oldest is kept, so first tokens queued behind many of
 * ours still match, and the resolution stays even. Once full, this runs
 * on every request sent: the scan reads the counts alone, in order (a
 * ring of whole snapshots read three times the memory with an index
 * wrapped at each, ~1,600 instructions a request). */
static void match_merge(struct dbk_plearn_match *m)
{
	const double *n = m->snap_n;
	unsigned best = 1;
	double shortest = n[2] - n[0];

	for (unsigned j = 2; j + 1 < m->count; j++)
		if (n[j + 1] - n[j - 1] < shortest) {
			best = j;
			shortest = n[j + 1] - n[j - 1];
		}
	match_drop(m, best, 1);
}

static void match_push(struct dbk_plearn_match *m, const struct dbk_plearn_sent *t)
{
	if (m->count && m->snap_n[m->count - 1] >= t->sent)
		return; /* nothing sent since */
	if (m->count == DBK_PLEARN_MATCH_SNAPS)
		match_merge(m);
	unsigned i = m->count++;
	m->snap_n[i] = t->sent;
	m->snap_sum[i] = t->sum;
	m->snap_own[i] = t->own;
}

static void match_restart(struct dbk_plearn_match *m, double count, const struct dbk_plearn_sent *t)
{
	double pending = fmax(0, fmin(t->pending, t->sent));
	m->off = count - (t->sent - pending);
	m->base = m->done = t->sent;
	m->done_sum = t->sum;
	m->done_own = t->own;
	m->last = count;
	m->count = 0;
	match_push(m, t);
}

void dbk_plearn_match_note(struct dbk_plearn_match *m, const struct dbk_plearn_sent *t)
{
	match_push(m, t);
}

void dbk_plearn_match_sync(struct dbk_plearn_match *m, double count,
                           const struct dbk_plearn_sent *t)
{
	match_restart(m, count, t);
	m->clean = DBK_PLEARN_MATCH_TRUST;
}

int dbk_plearn_match_scrape(struct dbk_plearn_match *m, double count,
                            const struct dbk_plearn_sent *t, double *pred, double *own)
{
	double idx = count - m->off, prev = m->last - m->off;

	*pred = *own = 0;
	m->last = count;
	match_push(m, t);
	if (idx <= m->done)
		return m->clean < DBK_PLEARN_MATCH_TRUST ? -1 : 0;
	/* The predictions' totals at idx: between the last snapshot at or
	 * below it and the next, at that span's mean. */
	unsigned j = 0;
	while (j + 1 < m->count && m->snap_n[j + 1] <= idx)
		j++;
	if (idx > t->sent || m->snap_n[j] > idx || (j + 1 == m->count && m->snap_n[j] < idx)) {
		match_restart(m, count, t);
		m->clean = 0;
		return -1;
	}
	double at = m->snap_sum[j], at_own = m->snap_own[j];
	if (m->snap_n[j] < idx) {
		double f = (idx - m->snap_n[j]) / (m->snap_n[j + 1] - m->snap_n[j]);
		at += f * (m->snap_sum[j + 1] - m->snap_sum[j]);
		at_own += f * (m->snap_own[j + 1] - m->snap_own[j]);
	}
	/* Older snapshots are of first tokens counted already. */
	match_drop(m, 0, j);
	bool whole = prev >= m->done; /* none of the growth is of the skipped */
	*pred = whole ? at - m->done_sum : 0;
	*own = whole ? at_own - m->done_own : 0;
	m->done = idx;
	m->done_sum = at;
	m->done_own = at_own;
	if (m->clean < DBK_PLEARN_MATCH_TRUST) {
		m->clean += idx - prev;
		return -1;
	}
	return whole ? 1 : 0;
}
