/* Fixed-bucket histograms, shaped like Prometheus's: cumulative counts
 * per upper bound, a sum and a count. Quantiles are estimated by linear
 * interpolation inside the bucket, as histogram_quantile() does. */
#ifndef DBK_HISTO_H
#define DBK_HISTO_H

#include <stdint.h>

#define DBK_HISTO_MAX_BOUNDS 24

struct dbk_histo {
	const double *bounds; /* ascending upper bounds; +Inf implied */
	unsigned nbounds;
	uint64_t counts[DBK_HISTO_MAX_BOUNDS + 1]; /* per bucket, last = +Inf */
	uint64_t count;
	double sum;
};

void dbk_histo_init(struct dbk_histo *h, const double *bounds, unsigned nbounds);
void dbk_histo_add(struct dbk_histo *h, double v);
/* q in [0,1]; 0 when empty. Values in the +Inf bucket report the last
 * finite bound. */
double dbk_histo_quantile(const struct dbk_histo *h, double q);

#endif
