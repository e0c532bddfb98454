/* Generation-checked handles: a table of pointers named by 64-bit
 * handles (slot index in the low half, generation in the high), so that a
 * handle kept after its object is gone finds nothing instead of a reused
 * slot. Pure. The engine names its requests with them. */
#ifndef DBK_HANDLES_H
#define DBK_HANDLES_H

#include <stdint.h>

struct dbk_handle_slot {
	void *p;
	uint32_t gen;
	uint32_t next_free;
};

struct dbk_handles {
	struct dbk_handle_slot *s;
	uint32_t n, cap, free_head;
};

void dbk_handles_init(struct dbk_handles *t);
void dbk_handles_free(struct dbk_handles *t);
/* p gets a slot; its index in *idx, its handle in *h. -1: no memory. */
int dbk_handles_add(struct dbk_handles *t, void *p, uint32_t *idx, uint64_t *h);
/* The pointer a live handle names, else NULL. */
void *dbk_handles_get(const struct dbk_handles *t, uint64_t h);
/* The current handle of slot idx. */
uint64_t dbk_handles_of(const struct dbk_handles *t, uint32_t idx);
/* Frees slot idx: every copy of its handle is dead from now on. */
void dbk_handles_remove(struct dbk_handles *t, uint32_t idx);

#endif
