/* The balancer's settings (balancer_config.h). */
#include "balancer_config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "lib/log.h"
#include "lib/bounds.h"

void dbk_bal_config_default(struct dbk_bal_config *c, unsigned nservers, bool dynamic,
                            double threshold, double max_tokens)
{
	memset(c, 0, sizeof(*c));
	c->nservers = nservers;
	c->dynamic = dynamic;
	c->bounds[0] = 0.0;
	if (dynamic) {
		c->nbuckets = 2;
		c->bounds[1] = threshold;
		c->bounds[2] = max_tokens;
	} else {
		c->nbuckets = 1;
		c->bounds[1] = max_tokens;
	}
	c->sensitivity = 1.0;
	c->affinity_strength = 0.1;
	c->redirect_threshold = 0.12;
	c->max_leases = 0;
}

unsigned dbk_bal_group_size(const struct dbk_bal_config *c, unsigned g)
{
	if (c->group_sizes[g])
		return c->group_sizes[g];
	return c->nservers / c->nbuckets + (g < c->nservers % c->nbuckets ? 1 : 0);
}

/* Names bounds after the command-line options that set them in the
 * reference's two-bucket shape, so that errors point at the fix. */
static void bound_name(const struct dbk_bal_config *c, unsigned i, char *buf, size_t n)
{
	if (i == c->nbuckets)
		snprintf(buf, n, "--max-request-tokens");
	else if (c->nbuckets == 2 && i == 1)
		snprintf(buf, n, "--server-group-threshold");
	else
		snprintf(buf, n, "bucket bound %u", i);
}

static int check_bounds(const struct dbk_bal_config *c, char *err, size_t errlen)
{
	char a[48], b[48];

	if (!(isfinite(c->bounds[0]) && c->bounds[0] >= 0)) {
		dbk_errf(err, errlen, "bucket bound 0 (%g) must be a finite number >= 0",
		         c->bounds[0]);
		return -1;
	}
	for (unsigned i = 1; i <= c->nbuckets; i++) {
		bound_name(c, i, b, sizeof(b));
		if (!isfinite(c->bounds[i])) {
			dbk_errf(err, errlen, "%s (%g) must be a finite number", b, c->bounds[i]);
			return -1;
		}
		if (c->bounds[i] > c->bounds[i - 1])
			continue;
		if (i == 1)
			dbk_errf(err, errlen, "%s (%g) must be above %g", b, c->bounds[i],
			         c->bounds[0]);
		else {
			/* Named from the lower bound's side: the usual mistake is a
			 * threshold set at or above the maximum. */
			bound_name(c, i - 1, a, sizeof(a));
			dbk_errf(err, errlen, "%s (%g) must be below %s (%g)", a, c->bounds[i - 1],
			         b, c->bounds[i]);
		}
		return -1;
	}
	return 0;
}

int dbk_bal_config_check(const struct dbk_bal_config *c, char *err, size_t errlen)
{
	char dummy[1];

	if (!err || !errlen) {
		err = dummy;
		errlen = sizeof(dummy);
	}
	err[0] = '\0';
	if (c->nservers < 1 || c->nservers > DBK_MAX_SERVERS) {
		dbk_errf(err, errlen, "need between 1 and %u servers, got %u", DBK_MAX_SERVERS,
		         c->nservers);
		return -1;
	}
	if (c->nbuckets < 1 || c->nbuckets > DBK_BAL_MAX_BUCKETS) {
		dbk_errf(err, errlen, "need between 1 and %u buckets, got %u", DBK_BAL_MAX_BUCKETS,
		         c->nbuckets);
		return -1;
	}
	if (!c->dynamic && c->nbuckets != 1) {
		dbk_errf(err, errlen, "plain mode uses 1 bucket, got %u", c->nbuckets);
		return -1;
	}
	if (c->dynamic && c->nservers < 2) {
		dbk_errf(err, errlen, "dynamic bucket mode needs at least 2 servers, got %u",
		         c->nservers);
		return -1;
	}
	if (c->nservers < c->nbuckets) {
		dbk_errf(err, errlen, "%u buckets need at least %u servers, got %u", c->nbuckets,
		         c->nbuckets, c->nservers);
		return -1;
	}
	/* With one bucket the bounds decide nothing, and the reference does
	 * not check them either. */
	if (c->nbuckets > 1 && check_bounds(c, err, errlen) < 0)
		return -1;
	if (!(isfinite(c->sensitivity) && c->sensitivity > 0)) {
		dbk_errf(err, errlen, "sensitivity (%g) must be a finite number above 0",
		         c->sensitivity);
		return -1;
	}
	if (!(isfinite(c->affinity_strength) && c->affinity_strength >= 0)) {
		dbk_errf(err, errlen, "affinity strength (%g) must be a finite number >= 0",
		         c->affinity_strength);
		return -1;
	}
	if (!(c->redirect_threshold >= 0 && c->redirect_threshold <= 1)) {
		dbk_errf(err, errlen, "redirect threshold (%g) must be between 0 and 1",
		         c->redirect_threshold);
		return -1;
	}
	unsigned sum = 0, set = 0;
	for (unsigned g = 0; g < DBK_BAL_MAX_BUCKETS; g++) {
		sum += c->group_sizes[g];
		set += c->group_sizes[g] != 0;
	}
	if (set) {
		for (unsigned g = 0; g < c->nbuckets; g++)
			if (c->group_sizes[g] == 0) {
				dbk_errf(err, errlen, "group %u has no server", g);
				return -1;
			}
		if (set != c->nbuckets || sum > c->nservers ||
		    (sum != c->nservers && !c->follows)) {
			dbk_errf(err, errlen,
			         "group sizes must be %u numbers adding up to %u servers",
			         c->nbuckets, c->nservers);
			return -1;
		}
	}
	return 0;
}
