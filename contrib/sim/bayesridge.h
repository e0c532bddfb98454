/* Bayesian ridge regression as llm-d's latency predictor fits it when it
 * runs its Bayesian-ridge model (llm-d/llm-d-latency-predictor,
 * training/training_server.py at commit
 * 04e44cd801d5d79a215d99109081b6afb870b87e, _train_model_with_scaling):
 * scikit-learn's StandardScaler, then BayesianRidge with its defaults
 * (300 iterations at most, tolerance 1e-3, gamma priors 1e-6 on both
 * precisions, an intercept), predicting the posterior mean (the chart's
 * LATENCY_OBJECTIVE_TYPE=mean).
 *
 * BayesianRidge learns the noise precision alpha and the weight precision
 * lambda by MacKay's evidence updates, starting from alpha = 1 / var(y)
 * and lambda = 1:
 *   w      = (X'X + lambda/alpha I)^-1 X'y   (X, y centred)
 *   gamma  = sum_k alpha e_k / (lambda + alpha e_k), e_k eigenvalues of X'X
 *   lambda = (gamma + 2e-6) / (|w|^2 + 2e-6)
 *   alpha  = (n - gamma + 2e-6) / (|y - Xw|^2 + 2e-6)
 * until the weights move by less than the tolerance (L1), then w once more.
 * scikit-learn takes one SVD of X; this takes a Cholesky factor of
 * X'X + lambda/alpha I each iteration, which gives the same w, and gamma
 * as p - lambda/alpha trace((X'X + lambda/alpha I)^-1), the same sum: a
 * few features, so no linear-algebra library is linked for it (none in
 * Debian fits BayesianRidge's updates in a few lines; LAPACK would do the
 * factorisation only).
 *
 * A zero-variance column is scaled by 1, as StandardScaler does, so it
 * stays all zero and gets weight 0. On noisy rows it agrees with
 * scikit-learn 1.2.1 to six digits (test_bayesridge.c). Pure; no
 * allocation. */
#ifndef DBK_SIM_BAYESRIDGE_H
#define DBK_SIM_BAYESRIDGE_H

#include <stddef.h>

#define DBK_BR_MAX_FEATURES 12

struct dbk_bayesridge {
	unsigned p; /* features; 0: predicts the intercept alone */
	double mean[DBK_BR_MAX_FEATURES], scale[DBK_BR_MAX_FEATURES];
	double coef[DBK_BR_MAX_FEATURES]; /* on the scaled features */
	double intercept;
	double alpha, lambda;
	unsigned iters;
};

/* A model that predicts y0 whatever the features (p features). */
void dbk_bayesridge_constant(struct dbk_bayesridge *m, unsigned p, double y0);
/* Fits m to n rows x[i * p .. i * p + p) and y[i]. 0, or -1 when there is
 * no row, p is out of range or the factorisation fails (m unchanged). */
int dbk_bayesridge_fit(struct dbk_bayesridge *m, const double *x, const double *y, size_t n,
                       unsigned p);
/* The posterior mean at x[0..p). */
double dbk_bayesridge_predict(const struct dbk_bayesridge *m, const double *x);

#endif
