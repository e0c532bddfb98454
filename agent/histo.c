#include "histo.h"

#include <string.h>

void dbk_histo_init(struct dbk_histo *h, const double *bounds, unsigned nbounds)
{
	memset(h, 0, sizeof(*h));
	h->bounds = bounds;
	h->nbounds = nbounds > DBK_HISTO_MAX_BOUNDS ? DBK_HISTO_MAX_BOUNDS : nbounds;
}

void dbk_histo_add(struct dbk_histo *h, double v)
{
	unsigned i = 0;

	/* Few buckets: a linear scan beats a binary search here. */
	while (i < h->nbounds && v > h->bounds[i])
		i++;
	h->counts[i]++;
	h->count++;
	h->sum += v;
}

double dbk_histo_quantile(const struct dbk_histo *h, double q)
{
	if (h->count == 0 || h->nbounds == 0)
		return 0;
	if (q < 0)
		q = 0;
	if (q > 1)
		q = 1;
	double rank = q * (double)h->count;
	uint64_t below = 0;

	for (unsigned i = 0; i < h->nbounds; i++) {
		if ((double)(below + h->counts[i]) >= rank && h->counts[i]) {
			double lo = i ? h->bounds[i - 1] : 0;
			double frac = (rank - (double)below) / (double)h->counts[i];
			return lo + (h->bounds[i] - lo) * frac;
		}
		below += h->counts[i];
	}
	return h->bounds[h->nbounds - 1];
}
