/* Requests routed per model: the ids model routing read (route.h's
 * event), counted. Bounded: the first DBK_MODEL_COUNTS_MAX distinct ids
 * have a counter each, any later one counts as "other" (a client may
 * name any model while the servers' lists are not known). Pure. */
#ifndef DBK_MODEL_COUNTS_H
#define DBK_MODEL_COUNTS_H

#include <stddef.h>
#include <stdint.h>

#include "vllm_metrics.h"

#define DBK_MODEL_COUNTS_MAX 64

struct dbk_model_counts {
	unsigned n;
	char id[DBK_MODEL_COUNTS_MAX][DBK_VM_MODEL_ID_MAX + 1];
	uint64_t routed[DBK_MODEL_COUNTS_MAX];
	uint64_t other; /* ids past the table, or too long to keep */
};

/* One more request routed for model id[0..len). */
void dbk_model_counts_add(struct dbk_model_counts *c, const uint8_t *id, size_t len);

#endif
