/* Bayesian ridge regression; see bayesridge.h. */
#include "bayesridge.h"

#include <float.h>
#include <stdbool.h>
#include <math.h>
#include <string.h>

#define BR_MAX_ITER 300
#define BR_TOL 1e-3
#define BR_PRIOR 1e-6 /* alpha_1 = alpha_2 = lambda_1 = lambda_2 */

#define P DBK_BR_MAX_FEATURES

void dbk_bayesridge_constant(struct dbk_bayesridge *m, unsigned p, double y0)
{
	memset(m, 0, sizeof(*m));
	m->p = p < P ? p : P;
	for (unsigned j = 0; j < m->p; j++)
		m->scale[j] = 1;
	m->intercept = y0;
}

/* L L' = a (p x p, row-major); 0, or -1 when a is not positive definite. */
static int cholesky(const double *a, unsigned p, double *l)
{
	memset(l, 0, sizeof(double) * p * p);
	for (unsigned i = 0; i < p; i++)
		for (unsigned j = 0; j <= i; j++) {
			double s = a[i * p + j];

			for (unsigned k = 0; k < j; k++)
				s -= l[i * p + k] * l[j * p + k];
			if (i == j) {
				if (!(s > 0))
					return -1;
				l[i * p + i] = sqrt(s);
			} else
				l[i * p + j] = s / l[j * p + j];
		}
	return 0;
}

/* x = (L L')^-1 b. */
static void chol_solve(const double *l, unsigned p, const double *b, double *x)
{
	double t[P];

	for (unsigned i = 0; i < p; i++) {
		double s = b[i];

		for (unsigned k = 0; k < i; k++)
			s -= l[i * p + k] * t[k];
		t[i] = s / l[i * p + i];
	}
	for (unsigned i = p; i-- > 0;) {
		double s = t[i];

		for (unsigned k = i + 1; k < p; k++)
			s -= l[k * p + i] * x[k];
		x[i] = s / l[i * p + i];
	}
}

/* trace((L L')^-1) = the squared entries of L^-1 summed. */
static double chol_trace_inv(const double *l, unsigned p)
{
	double tr = 0;

	for (unsigned c = 0; c < p; c++) {
		double col[P];

		for (unsigned i = c; i < p; i++) {
			double s = i == c ? 1.0 : 0.0;

			for (unsigned k = c; k < i; k++)
				s -= l[i * p + k] * col[k];
			col[i] = s / l[i * p + i];
			tr += col[i] * col[i];
		}
	}
	return tr;
}

/* w = (G + r I)^-1 b and, when gamma is given, the effective number of
 * parameters p - r trace((G + r I)^-1). */
static int solve(const double *g, const double *b, unsigned p, double r, double *w, double *gamma)
{
	double a[P * P], l[P * P];

	memcpy(a, g, sizeof(double) * p * p);
	for (unsigned j = 0; j < p; j++)
		a[j * p + j] += r;
	if (cholesky(a, p, l) != 0)
		return -1;
	chol_solve(l, p, b, w);
	if (gamma)
		*gamma = (double)p - r * chol_trace_inv(l, p);
	return 0;
}

/* StandardScaler's test (_is_constant_feature): a variance within
 * rounding of zero is no variance. */
static bool constant_feature(double var, double mean, size_t n)
{
	double nf = (double)n;

	return var <=
	       nf * DBL_EPSILON * var + (nf * mean * DBL_EPSILON) * (nf * mean * DBL_EPSILON);
}

int dbk_bayesridge_fit(struct dbk_bayesridge *m, const double *x, const double *y, size_t n,
                       unsigned p)
{
	struct dbk_bayesridge f;
	double g[P * P] = { 0 }, b[P] = { 0 }, zbar[P] = { 0 };
	double w[P] = { 0 }, w_old[P] = { 0 }, ym = 0, yy = 0, alpha, lambda;
	unsigned it;

	if (n == 0 || p == 0 || p > P)
		return -1;
	dbk_bayesridge_constant(&f, p, 0);
	for (size_t i = 0; i < n; i++) {
		ym += y[i];
		for (unsigned j = 0; j < p; j++)
			f.mean[j] += x[i * p + j];
	}
	ym /= (double)n;
	for (unsigned j = 0; j < p; j++)
		f.mean[j] /= (double)n;
	for (size_t i = 0; i < n; i++)
		for (unsigned j = 0; j < p; j++) {
			double d = x[i * p + j] - f.mean[j];

			f.scale[j] += d * d;
		}
	for (unsigned j = 0; j < p; j++) {
		double var = f.scale[j] / (double)n;

		f.scale[j] = constant_feature(var, f.mean[j], n) ? 1.0 : sqrt(var);
	}
	/* BayesianRidge centres the scaled features again (their mean is 0
	 * up to rounding) and y. */
	for (size_t i = 0; i < n; i++) {
		double z[P], yc = y[i] - ym;

		for (unsigned j = 0; j < p; j++) {
			z[j] = (x[i * p + j] - f.mean[j]) / f.scale[j];
			zbar[j] += z[j];
			b[j] += z[j] * yc;
			for (unsigned k = 0; k <= j; k++)
				g[j * p + k] += z[j] * z[k];
		}
		yy += yc * yc;
	}
	/* y is centred, so centring z leaves b as it is. */
	for (unsigned j = 0; j < p; j++)
		zbar[j] /= (double)n;
	for (unsigned j = 0; j < p; j++)
		for (unsigned k = 0; k <= j; k++) {
			g[j * p + k] -= (double)n * zbar[j] * zbar[k];
			g[k * p + j] = g[j * p + k];
		}
	alpha = 1.0 / (yy / (double)n + DBL_EPSILON);
	lambda = 1.0;
	for (it = 0; it < BR_MAX_ITER; it++) {
		double r = lambda / alpha, rmse, wgw = 0, wb = 0, ww = 0, gamma, moved = 0;

		if (solve(g, b, p, r, w, &gamma) != 0)
			return -1;
		for (unsigned j = 0; j < p; j++) {
			double gw = 0;

			for (unsigned k = 0; k < p; k++)
				gw += g[j * p + k] * w[k];
			wgw += w[j] * gw;
			wb += w[j] * b[j];
			ww += w[j] * w[j];
		}
		rmse = yy - 2 * wb + wgw;
		if (rmse < 0)
			rmse = 0; /* rounding of a near-exact fit */
		lambda = (gamma + 2 * BR_PRIOR) / (ww + 2 * BR_PRIOR);
		alpha = ((double)n - gamma + 2 * BR_PRIOR) / (rmse + 2 * BR_PRIOR);
		for (unsigned j = 0; j < p; j++)
			moved += fabs(w_old[j] - w[j]);
		if (it > 0 && moved < BR_TOL)
			break;
		memcpy(w_old, w, sizeof(w));
	}
	/* The weights at the last alpha and lambda. */
	if (solve(g, b, p, lambda / alpha, w, NULL) != 0)
		return -1;
	f.iters = it < BR_MAX_ITER ? it + 1 : it;
	memcpy(f.coef, w, sizeof(double) * p);
	f.intercept = ym;
	for (unsigned j = 0; j < p; j++)
		f.intercept -= zbar[j] * w[j];
	f.alpha = alpha;
	f.lambda = lambda;
	*m = f;
	return 0;
}

double dbk_bayesridge_predict(const struct dbk_bayesridge *m, const double *x)
{
	double v = m->intercept;

	for (unsigned j = 0; j < m->p; j++)
		v += m->coef[j] * (x[j] - m->mean[j]) / m->scale[j];
	return v;
}
