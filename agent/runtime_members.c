#include "runtime_members.h"

#include <string.h>

const char *dbk_rt_change_str(enum dbk_rt_change c)
{
	switch (c) {
	case DBK_RT_SLOT_FREE: return "free";
	case DBK_RT_SLOT_SAME: return "same";
	case DBK_RT_SLOT_ADDED: return "added";
	case DBK_RT_SLOT_MOVED: return "moved";
	case DBK_RT_SLOT_GONE: return "gone";
	}
	return "?";
}

static int slot_named(const struct dbk_rt_slot *slots, unsigned nslots, const char *name)
{
	for (unsigned k = 0; k < nslots; k++)
		if (slots[k].name[0] && strcmp(slots[k].name, name) == 0)
			return (int)k;
	return -1;
}

/* A known address that differs from the one the slot remembers. */
static bool readdressed(const struct dbk_rt_slot *s, const struct dbk_rt_server *f)
{
	if (!f->addr[0] || !f->port || !s->addr[0])
		return false;
	return s->port != f->port || strcmp(s->addr, f->addr) != 0;
}

void dbk_rt_plan(const struct dbk_rt_slot *slots, unsigned nslots,
                 const struct dbk_rt_server *fresh, unsigned n, int *slot_of,
                 enum dbk_rt_change *change, struct dbk_rt_plan_counts *counts)
{
	struct dbk_rt_plan_counts local;
	unsigned next_free = 0;

	if (!counts)
		counts = &local;
	memset(counts, 0, sizeof(*counts));
	/* Every occupied slot is gone until HAProxy names its server. */
	for (unsigned k = 0; k < nslots; k++)
		change[k] = slots[k].name[0] ? DBK_RT_SLOT_GONE : DBK_RT_SLOT_FREE;
	for (unsigned i = 0; i < n; i++) {
		int k = slot_named(slots, nslots, fresh[i].name);

		slot_of[i] = k;
		if (k < 0)
			continue;
		change[k] = readdressed(&slots[k], &fresh[i]) ? DBK_RT_SLOT_MOVED
		                                              : DBK_RT_SLOT_SAME;
		counts->moved += change[k] == DBK_RT_SLOT_MOVED;
	}
	/* New names into the slots free before this poll, lowest first, in
	 * HAProxy's order. */
	for (unsigned i = 0; i < n; i++) {
		if (slot_of[i] >= 0)
			continue;
		while (next_free < nslots &&
		       (slots[next_free].name[0] || change[next_free] != DBK_RT_SLOT_FREE))
			next_free++;
		if (next_free == nslots) {
			counts->no_room++;
			continue;
		}
		slot_of[i] = (int)next_free;
		change[next_free] = DBK_RT_SLOT_ADDED;
		counts->added++;
	}
	for (unsigned k = 0; k < nslots; k++)
		counts->gone += change[k] == DBK_RT_SLOT_GONE;
}

void dbk_rt_plan_apply(struct dbk_rt_slot *slots, unsigned nslots,
                       const struct dbk_rt_server *fresh, unsigned n, const int *slot_of,
                       const enum dbk_rt_change *change)
{
	for (unsigned k = 0; k < nslots; k++)
		if (change[k] == DBK_RT_SLOT_GONE)
			memset(&slots[k], 0, sizeof(slots[k]));
	for (unsigned i = 0; i < n; i++) {
		if (slot_of[i] < 0 || (unsigned)slot_of[i] >= nslots)
			continue;
		struct dbk_rt_slot *s = &slots[slot_of[i]];

		memcpy(s->name, fresh[i].name, sizeof(s->name));
		s->name[DBK_RT_NAME_MAX] = '\0';
		if (fresh[i].addr[0] && fresh[i].port) {
			memcpy(s->addr, fresh[i].addr, sizeof(s->addr));
			s->addr[DBK_RT_ADDR_MAX] = '\0';
			s->port = fresh[i].port;
		}
	}
}
