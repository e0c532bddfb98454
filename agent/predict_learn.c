/* Per-request speed learning (predict_learn.h). */
#include "predict_learn.h"

#include <math.h>

/* Requests after which an observation counts 1/e: long enough to average
 * a server's mix of requests, short enough to follow a server that
 * changes (a new pod in the slot is a reset, not this). */
#define PRED_LEARN_HORIZON 256.0
/* The prior counts as this many requests. */
#define PRED_LEARN_PRIOR 4.0
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

/* Ridge towards (a0, b0): (S + kI) theta = S z + k theta0. */
void dbk_plearn_solve(const struct dbk_plearn *l, double a0, double b0, double *a, double *b)
{
	double k = PRED_LEARN_PRIOR;
	double m11 = l->uu + k, m12 = l->uv, m22 = l->vv + k;
	double r1 = l->uz + k * a0, r2 = l->vz + k * b0;
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
	double k = PRED_LEARN_PRIOR;
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
