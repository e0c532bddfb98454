/* SLO capacity: the highest rate factor at which a policy still serves a
 * target fraction of requests within the objectives (TTFT, TPOT), found
 * by bracketing and bisection over a function the caller supplies (one
 * simulation per evaluation).
 *
 * The search assumes attainment falls as the rate rises. It doubles (or
 * halves) the rate from start until the target is crossed, then bisects
 * geometrically until hi / lo - 1 <= rel_tol, within max_evals
 * evaluations in all. The answer is the highest rate evaluated that met
 * the target (0 when none did), so it errs low by at most rel_tol once
 * the bracket is closed. Pure. */
#ifndef DBK_SIM_SLO_H
#define DBK_SIM_SLO_H

#include <stdbool.h>

struct dbk_slo_search {
	double target;      /* fraction of requests meeting every objective */
	double start;       /* first rate factor evaluated, > 0 */
	double rel_tol;     /* bracket width to stop at, relative */
	unsigned max_evals; /* evaluations in all, >= 2 */
	/* Halving stops below start x min_frac: a policy that misses the
	 * target there misses it at any load (Mooncake's bursts of
	 * simultaneous arrivals do not thin out as the rate falls), and
	 * gets capacity 0. */
	double min_frac;
};

/* The defaults: target 0.9, start 1, rel_tol 0.02, max_evals 16,
 * min_frac 1/64. */
void dbk_slo_search_default(struct dbk_slo_search *p);

/* Attainment (0..1) at rate factor rate; 0, or -1 to stop the search. */
typedef int (*dbk_slo_eval_fn)(void *ctx, double rate, double *attain);

struct dbk_slo_result {
	double rate;   /* capacity: highest passing rate, 0 if none */
	double attain; /* attainment there */
	/* The best attainment seen and its rate: with capacity 0, how
	 * close the policy came (at the lowest load, typically). */
	double best_attain, best_attain_rate;
	double lo, hi; /* final bracket (hi 0: never failed) */
	unsigned evals;
	bool closed; /* the bracket reached rel_tol */
};

/* 0, or -1 when f failed or the parameters are unusable. */
int dbk_slo_capacity(const struct dbk_slo_search *p, dbk_slo_eval_fn f, void *ctx,
                     struct dbk_slo_result *out);

#endif
