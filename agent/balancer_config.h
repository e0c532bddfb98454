/* The balancer's settings (balancer_config.c): the reference's
 * defaults, the group split, and the checks every configuration passes
 * before a balancer takes it (at start, and live through /config and
 * SIGHUP). Pure. */
#ifndef DBK_BALANCER_CONFIG_H
#define DBK_BALANCER_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define DBK_BAL_MAX_BUCKETS 16

struct dbk_bal_config {
	unsigned nservers;
	bool dynamic;      /* false: one group, plain scoring */
	unsigned nbuckets; /* groups; 2 in dynamic mode, 1 in plain */
	/* Bucket i is [bounds[i], bounds[i+1]) in request tokens. */
	double bounds[DBK_BAL_MAX_BUCKETS + 1];
	double sensitivity;        /* 1.0 */
	double affinity_strength;  /* 0.1 */
	double redirect_threshold; /* 0.12 */
	size_t max_leases;         /* 0: unbounded */
	/* Servers per group, in list order; all 0 = the reference's split
	 * (the first n % G groups get one more). */
	unsigned group_sizes[DBK_BAL_MAX_BUCKETS];
	/* The list follows HAProxy's backend: nservers counts slots, of
	 * which those present are laid out in groups; group sizes then
	 * add up to at most nservers, and hold while they add up to the
	 * servers present (balancer.h, DBK_BAL_OUT_ABSENT). */
	bool follows;
};

/* Fills c with the reference's setup: 2 buckets [0,T) [T,M) when dynamic,
 * one bucket otherwise, and the reference's constants. */
void dbk_bal_config_default(struct dbk_bal_config *c, unsigned nservers, bool dynamic,
                            double threshold, double max_tokens);

/* Servers in group g under c: group_sizes[g], or the reference's split. */
unsigned dbk_bal_group_size(const struct dbk_bal_config *c, unsigned g);

/* Returns 0 if c is usable, else -1 with a one-line reason in err. */
int dbk_bal_config_check(const struct dbk_bal_config *c, char *err, size_t errlen);

#endif
