/* Priority classes of the workload; see classes.h. */
#include "classes.h"

#include <math.h>
#include <stdlib.h>

#include "lib/hash.h"

struct rank {
	uint64_t key;
	uint32_t id;
};

static int by_key_desc(const void *a, const void *b)
{
	const struct rank *x = a, *y = b;

	if (x->key != y->key)
		return x->key < y->key ? 1 : -1;
	return x->id < y->id ? 1 : -1; /* the later first: ids are unique */
}

int dbk_sim_classes_assign(const uint32_t *input, size_t n, const double *weight, bool by_length,
                           uint64_t seed, uint8_t *out)
{
	double sum = weight[DBK_CLASS_CRITICAL] + weight[DBK_CLASS_STANDARD] +
	             weight[DBK_CLASS_SHEDDABLE];
	struct rank *r = malloc((n ? n : 1) * sizeof(*r));
	size_t k, shed, crit;

	if (!r)
		return -1;
	shed = (size_t)llround((double)n * weight[DBK_CLASS_SHEDDABLE] / sum);
	crit = (size_t)llround((double)n * weight[DBK_CLASS_CRITICAL] / sum);
	if (crit > n - shed)
		crit = n - shed;
	for (k = 0; k < n; k++)
		r[k] = (struct rank){ input[k], (uint32_t)k };
	if (by_length) {
		qsort(r, n, sizeof(*r), by_key_desc);
		for (k = 0; k < shed; k++)
			out[r[k].id] = DBK_CLASS_SHEDDABLE;
	}
	/* The rest (all, when not by length), reordered by the seeded hash:
	 * the first crit critical, then standard, sheddable the last. */
	size_t from = by_length ? shed : 0;

	for (k = from; k < n; k++)
		r[k].key = dbk_hash_fmix64(seed ^ ((uint64_t)r[k].id * DBK_HASH_GOLDEN));
	qsort(r + from, n - from, sizeof(*r), by_key_desc);
	for (k = from; k < n; k++)
		out[r[k].id] = k < from + crit             ? DBK_CLASS_CRITICAL
		               : by_length || k < n - shed ? DBK_CLASS_STANDARD
		                                           : DBK_CLASS_SHEDDABLE;
	free(r);
	return 0;
}
