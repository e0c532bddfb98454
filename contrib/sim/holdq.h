/* The requests admission would shed, held at the balancer instead
 * (--admit-queue-s, issue 28's "queue" verdict): one queue per class,
 * each in the order its requests were held, walked critical first and
 * oldest first when they are decided again.
 *
 * Pure: no clock (the caller gives the times), no I/O; bounded by the
 * requests held at once. Owns its arrays. */
#ifndef DBK_SIM_HOLDQ_H
#define DBK_SIM_HOLDQ_H

#include <stddef.h>
#include <stdint.h>

#include "admission.h"

struct dbk_sim_held {
	uint32_t id;
	double until_s; /* held no later than this: then shed as without the queue */
};

struct dbk_sim_holdq {
	struct dbk_sim_held *v[DBK_CLASS_N];
	size_t n[DBK_CLASS_N], cap[DBK_CLASS_N];
};

void dbk_sim_holdq_free(struct dbk_sim_holdq *q);

/* Holds request id of class cls (past the last class: the last) until
 * until_s, behind those of its class held before. 0, or -1 (memory). */
int dbk_sim_holdq_push(struct dbk_sim_holdq *q, unsigned cls, uint32_t id, double until_s);

size_t dbk_sim_holdq_count(const struct dbk_sim_holdq *q);

/* The earliest until_s of any held request; with none, HUGE_VAL. */
double dbk_sim_holdq_first_until(const struct dbk_sim_holdq *q);

/* What decide says of a held request. */
enum { DBK_SIM_HOLD_KEEP, DBK_SIM_HOLD_DROP, DBK_SIM_HOLD_ERROR = -1 };

/* Each held request in turn, critical's first and each class's oldest
 * first, given to decide: KEEP leaves it held where it was, DROP takes
 * it out (admitted or shed). decide must not push. 0, or -1 at the
 * first ERROR (the rest stay held). */
int dbk_sim_holdq_walk(struct dbk_sim_holdq *q, int (*decide)(void *ctx, uint32_t id), void *ctx);

#endif
