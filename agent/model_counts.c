#include "model_counts.h"

#include <string.h>

void dbk_model_counts_add(struct dbk_model_counts *c, const uint8_t *id, size_t len)
{
	for (unsigned i = 0; i < c->n; i++)
		if (strlen(c->id[i]) == len && memcmp(c->id[i], id, len) == 0) {
			c->routed[i]++;
			return;
		}
	if (c->n == DBK_MODEL_COUNTS_MAX || len > DBK_VM_MODEL_ID_MAX || len == 0) {
		c->other++;
		return;
	}
	memcpy(c->id[c->n], id, len);
	c->id[c->n][len] = '\0';
	c->routed[c->n++] = 1;
}
