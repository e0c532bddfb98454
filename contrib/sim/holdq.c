/* The requests held instead of shed; see holdq.h. */
#include "holdq.h"

#include <math.h>
#include <stdbool.h>
#include <stdlib.h>

#include "lib/array.h"

void dbk_sim_holdq_free(struct dbk_sim_holdq *q)
{
	for (int c = 0; c < DBK_CLASS_N; c++) {
		free(q->v[c]);
		q->v[c] = NULL;
		q->n[c] = q->cap[c] = 0;
	}
}

int dbk_sim_holdq_push(struct dbk_sim_holdq *q, unsigned cls, uint32_t id, double until_s)
{
	unsigned c = cls < DBK_CLASS_N ? cls : DBK_CLASS_N - 1;
	struct dbk_sim_held *v = dbk_array_room(q->v[c], &q->cap[c], q->n[c], sizeof(*v), 16);

	if (!v)
		return -1;
	q->v[c] = v;
	v[q->n[c]++] = (struct dbk_sim_held){ .id = id, .until_s = until_s };
	return 0;
}

size_t dbk_sim_holdq_count(const struct dbk_sim_holdq *q)
{
	size_t n = 0;

	for (int c = 0; c < DBK_CLASS_N; c++)
		n += q->n[c];
	return n;
}

double dbk_sim_holdq_first_until(const struct dbk_sim_holdq *q)
{
	double t = HUGE_VAL;

	/* Each class's oldest is held the shortest time: the same bound
	 * for all, given in the order they came. */
	for (int c = 0; c < DBK_CLASS_N; c++)
		if (q->n[c] && q->v[c][0].until_s < t)
			t = q->v[c][0].until_s;
	return t;
}

int dbk_sim_holdq_walk(struct dbk_sim_holdq *q, int (*decide)(void *ctx, uint32_t id), void *ctx)
{
	for (int c = 0; c < DBK_CLASS_N; c++) {
		size_t w = 0, k;

		for (k = 0; k < q->n[c]; k++) {
			int d = decide(ctx, q->v[c][k].id);

			if (d == DBK_SIM_HOLD_ERROR)
				break;
			if (d == DBK_SIM_HOLD_KEEP)
				q->v[c][w++] = q->v[c][k];
		}
		bool failed = k < q->n[c];
		for (; k < q->n[c]; k++) /* after an error: the rest as they were */
			q->v[c][w++] = q->v[c][k];
		q->n[c] = w;
		if (failed)
			return -1;
	}
	return 0;
}
