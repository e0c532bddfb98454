/* A fleet that changes over a run, as the command line gives it: step
 * functions of model time ("T:V,T:V,...", seconds from the first
 * arrival : a value from then on) for the number of instances
 * (--scale) and the load (--ramp), and the operator's weights (--weights
 * 10,3: given to the instances in turn). Pure. */
#ifndef DBK_SIM_SCHEDULE_H
#define DBK_SIM_SCHEDULE_H

#include <stddef.h>

#define DBK_SIM_MAX_STEPS 32

struct dbk_sim_step {
	double t_s; /* model seconds from the first arrival */
	double v;
};

/* "T:V,..." into out[0..*n): the first T is 0, the Ts strictly rise,
 * each V is in [lo, hi] (and whole when whole is set). 0, or -1 with
 * the reason in err. */
int dbk_sim_steps_parse(const char *text, double lo, double hi, int whole, struct dbk_sim_step *out,
                        size_t max, size_t *n, char *err, size_t errlen);

/* The value in force at t: the last step at or before t (the first
 * before it). n >= 1. */
double dbk_sim_steps_at(const struct dbk_sim_step *st, size_t n, double t);

/* The ramp: arrivals that come u seconds after the first at the base
 * rate come at the returned model time when from each step's T the rate
 * is V times the base (V 2: twice as many arrivals a second). n == 0:
 * u itself. Monotone in u. */
double dbk_sim_ramp_time(const struct dbk_sim_step *ramp, size_t n, double u);

/* "W,W,..." (whole numbers 1..256, HAProxy's weights) into
 * out[0..*n). 0, or -1 with the reason in err. */
int dbk_sim_weights_parse(const char *text, double *out, size_t max, size_t *n, char *err,
                          size_t errlen);

#endif
