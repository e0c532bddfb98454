/* Generation-checked handles; see handles.h. */
#include "model/handles.h"

#include <stdlib.h>

#define NO_SLOT UINT32_MAX

static uint64_t make_handle(uint32_t idx, uint32_t gen) { return ((uint64_t)gen << 32) | idx; }

void dbk_handles_init(struct dbk_handles *t)
{
	t->s = NULL;
	t->n = t->cap = 0;
	t->free_head = NO_SLOT;
}

void dbk_handles_free(struct dbk_handles *t)
{
	free(t->s);
	dbk_handles_init(t);
}

int dbk_handles_add(struct dbk_handles *t, void *p, uint32_t *idx, uint64_t *h)
{
	uint32_t i;

	if (t->free_head != NO_SLOT) {
		i = t->free_head;
		t->free_head = t->s[i].next_free;
	} else {
		if (t->n == t->cap) {
			uint32_t cap = t->cap ? t->cap * 2 : 64;
			struct dbk_handle_slot *ns;

			if (cap < t->cap || cap >= NO_SLOT)
				return -1;
			ns = realloc(t->s, (size_t)cap * sizeof(*ns));
			if (!ns)
				return -1;
			t->s = ns;
			t->cap = cap;
		}
		i = t->n++;
		t->s[i].gen = 0;
	}
	if (++t->s[i].gen == 0)
		t->s[i].gen = 1;
	t->s[i].p = p;
	t->s[i].next_free = NO_SLOT;
	*idx = i;
	*h = make_handle(i, t->s[i].gen);
	return 0;
}

void *dbk_handles_get(const struct dbk_handles *t, uint64_t h)
{
	uint32_t i = (uint32_t)h, gen = (uint32_t)(h >> 32);

	if (i >= t->n || t->s[i].gen != gen)
		return NULL;
	return t->s[i].p;
}

uint64_t dbk_handles_of(const struct dbk_handles *t, uint32_t idx)
{
	return make_handle(idx, t->s[idx].gen);
}

void dbk_handles_remove(struct dbk_handles *t, uint32_t idx)
{
	struct dbk_handle_slot *s = &t->s[idx];

	/* Bumping the generation kills every copy of the old handle. */
	if (++s->gen == 0)
		s->gen = 1;
	s->p = NULL;
	s->next_free = t->free_head;
	t->free_head = idx;
}
